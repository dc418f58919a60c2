//! The report of a run: plain data (serde), filled by `exec`, rendered by `render` and written
//! to disk by `files`. docs/report-format.md describes every field; `REPORT_FORMAT` changes
//! whenever a field changes meaning.

pub mod files;
pub mod render;

use std::collections::BTreeMap;

use serde::Serialize;

/// Bumped whenever a field changes meaning.
pub const REPORT_FORMAT: u32 = 1;

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub format: u32,
    pub workload: String,
    pub file: String,
    pub seed: u64,
    /// RFC 3339 UTC, when the run started.
    pub started: String,
    pub elapsed_s: f64,
    pub interrupted: bool,
    pub cells: Vec<CellReport>,
}

impl Report {
    pub fn ok(&self) -> bool {
        !self.interrupted && self.cells.iter().all(CellReport::ok)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct CellReport {
    pub index: usize,
    pub key: String,
    pub phases: Vec<PhaseReport>,
}

impl CellReport {
    pub fn ok(&self) -> bool {
        self.phases.iter().all(|p| p.status() == Status::Ok)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Failed,
    /// Stopped by Ctrl-C: what was measured is kept.
    Interrupted,
    /// This wlrun cannot run the phase (yet); nothing was measured.
    NotRun,
}

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum PhaseReport {
    Ingest(Box<IngestReport>),
    NotRun { name: String, reason: String },
}

impl PhaseReport {
    pub fn status(&self) -> Status {
        match self {
            PhaseReport::Ingest(r) => r.status,
            PhaseReport::NotRun { .. } => Status::NotRun,
        }
    }
}

/// Errors of one class: how many, and the first message (later ones usually repeat it).
#[derive(Clone, Debug, Default, Serialize)]
pub struct ErrorCount {
    pub count: u64,
    pub first: String,
}

/// Latency percentiles in microseconds, from an HDR histogram kept whole in `histogram`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Latency {
    pub count: u64,
    pub min_us: u64,
    pub mean_us: f64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p95_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
    pub stddev_us: f64,
    /// The whole histogram, V2-deflate serialized and base64-encoded, so that runs can be
    /// merged and compared later.
    pub histogram: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Calibration {
    /// Rows per second of the same cell sent to the `null` sink (generate + encode only).
    pub null_rows_per_s: f64,
    /// This cell's send rate over that ceiling: near 1.0 means the generator, not the server,
    /// set the figure.
    pub ratio: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct IngestReport {
    pub name: String,
    /// `target.endpoint (kind)`.
    pub endpoint: String,
    pub kind: String,
    pub table: String,
    pub workers: u64,
    pub batch_rows: u64,
    pub status: Status,
    /// Why the phase failed, one line each; empty when it passed.
    pub failures: Vec<String>,
    pub rows_expected: Option<u64>,
    pub rows_generated: u64,
    /// Rows the encoding could not carry (an ILP line needs at least one field).
    pub rows_dropped: u64,
    pub payload_bytes: u64,
    pub rows_sent: u64,
    /// `None` when the protocol has no acknowledgements (ILP over TCP, null).
    pub rows_acked: Option<u64>,
    /// `None` without `verify visible`.
    pub rows_visible: Option<u64>,
    /// What the table held before the phase (shared tables), subtracted from the count.
    pub visible_baseline: Option<u64>,
    /// Seconds from the end of sending until the count reached its target.
    pub visible_after_s: Option<f64>,
    pub socket_bytes: u64,
    pub payload_bytes_per_row: Option<f64>,
    pub socket_bytes_per_row: Option<f64>,
    /// From the first chunk sent to the last answer, seconds.
    pub elapsed_s: f64,
    pub send_rows_per_s: f64,
    pub ack_rows_per_s: Option<f64>,
    /// Batch send -> acknowledgement (or -> written, without acks).
    pub batch_latency: Latency,
    /// User + system CPU seconds of the wlrun process during the phase.
    pub client_cpu_s: Option<f64>,
    pub errors: BTreeMap<String, ErrorCount>,
    /// Rows sent per worker, so that a skewed routing shows.
    pub rows_per_worker: Vec<u64>,
    pub calibration: Option<Calibration>,
}
