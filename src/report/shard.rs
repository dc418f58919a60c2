//! `wlrun run --shard I/N`: which shard wrote a report, the run's identity every shard shares,
//! and per phase what the barriers measured and what this shard and all of them sent
//! (docs/report-format.md, "Shards"). What `wlrun merge` needs to put the shards together and
//! to refuse a shard of another run.

use serde::{Deserialize, Serialize};

use crate::shard::Figures;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardReport {
    /// This shard, 0-based, of `count`.
    pub index: u64,
    pub count: u64,
    /// `sha256:` of the plan as JSON (every cell's params and phases, the seed; not the
    /// workload's path): equal on every shard of one run, which the barrier checks at join.
    pub plan: String,
    /// Where shard 0 listened (`HOST:PORT`, or `port N` where the host was not given).
    pub barrier: String,
    /// `--barrier-timeout`, seconds.
    pub timeout_s: f64,
    /// The phases in the order they ran, with what the barriers measured.
    pub phases: Vec<ShardPhase>,
    /// Why the run could not go on on every shard (a shard missing, late, dead, stopped or
    /// running another plan); absent when every barrier passed. A report with one fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardPhase {
    /// The cell's index (as in `cells[].index`) and the phase's name.
    pub cell: usize,
    pub phase: String,
    /// `ingest`, `queries` or `requests`.
    pub kind: String,
    /// The number of the barrier that started the phase (the same on every shard); absent
    /// when the phase never reached it.
    pub start_barrier: Option<u64>,
    /// How far apart the shards left the start barrier, on shard 0's clock, milliseconds:
    /// each shard's release estimated as shard 0's write plus half the round trip to the
    /// shard's immediate answer; the spread from the earliest to the latest (shard 0's own
    /// start included). Absent for a run of one shard, or when the run ended first.
    pub start_skew_ms: Option<f64>,
    /// How wrong `start_skew_ms` can be: half the longest round trip, milliseconds.
    pub skew_error_ms: Option<f64>,
    /// How long this shard waited at the start barrier for the others, milliseconds.
    pub waited_start_ms: Option<f64>,
    /// What this shard sent: rows (`acked`: acknowledged, where the protocol says), or
    /// queries and requests (`ok`: answered without error); `dropped`: rows not encodable.
    pub own: Figures,
    /// The same summed over every shard, from the end barrier; absent when the phase did not
    /// reach it.
    pub all: Option<Figures>,
}
