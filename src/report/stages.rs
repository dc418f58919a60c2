//! The stages of a staged query or request run or of a staged ingest, each reported on its own
//! (docs/report-format.md, "Stages"), and their tables in the terminal.

use serde::{Deserialize, Serialize};

use super::{Accounting, Latency};
use crate::plan::thousands;

/// One stage: where it sat in the run, the load it was asked for, and what it measured after
/// its warm-up. Its accounting holds on its own: scheduled = ok + failed + cut off + unsent.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StageReport {
    /// From 1, in the order the workload lists them.
    pub stage: u64,
    /// When the stage's schedule began, seconds after the first stage's began.
    pub start_s: f64,
    /// Between the previous stage's last send and this stage's start: the previous stage's
    /// answers drained there (its in-flight work belongs to it). 0 for the first stage.
    pub gap_before_s: f64,
    /// The stage's duration as written, and its first part not counted (`warmup`).
    pub duration_s: f64,
    pub warmup_s: f64,
    /// Measured span: from the end of the stage's warm-up until its last answer or cut-off.
    pub span_s: f64,
    /// `closed`, `open 200/s fixed`, `open 200/s to 1000/s fixed`.
    pub load: String,
    /// Open loop: the arrival rate at the stage's start and end (equal but for a ramp).
    pub rate_from: Option<f64>,
    pub rate_to: Option<f64>,
    pub workers: u64,
    pub ok: u64,
    pub failed: u64,
    #[serde(flatten)]
    pub accounting: Accounting,
    /// Successes per second over `span_s` (qps of a query run, rps of a request run); `None`
    /// when the span is too short to be a rate.
    pub ok_per_s: Option<f64>,
    pub error_rate: f64,
    pub latency: Latency,
    /// Open loop only.
    pub service: Option<Latency>,
    /// Units of the stage's warm-up: sent (open loop: scheduled) and not counted.
    pub warmup_excluded: u64,
    /// Open loop: whether the stage sent at least 95% of its schedule (without an `expect
    /// achieved_rate`, a stage below it fails the run); `None` in closed loop.
    pub kept_schedule: Option<bool>,
}

/// The stages' table under a run's figures, one row per stage (`unit`: `q` or `req`).
pub fn table(stages: &[StageReport], unit: &str) -> String {
    if stages.is_empty() {
        return String::new();
    }
    let header = [
        "stage",
        "start",
        "span",
        "load",
        "workers",
        "scheduled",
        "ok",
        "failed",
        "cut off",
        "unsent",
        "rate",
        "p50",
        "p99",
        "warm-up",
    ];
    let rows: Vec<Vec<String>> = stages
        .iter()
        .map(|s| {
            let load = match (s.rate_from, s.rate_to) {
                (Some(a), Some(b)) if (a - b).abs() > f64::EPSILON => {
                    format!("{}/s to {}/s", num(a), num(b))
                }
                (Some(a), _) => format!("{}/s", num(a)),
                _ => "closed".into(),
            };
            vec![
                s.stage.to_string(),
                format!("{:.1}s", s.start_s),
                format!("{:.1}s", s.span_s),
                load,
                s.workers.to_string(),
                thousands(s.accounting.scheduled),
                thousands(s.ok),
                thousands(s.failed),
                thousands(s.accounting.cut_off),
                thousands(s.accounting.unsent),
                super::render::fmt_rate(s.ok_per_s, unit),
                super::render::ms_text(s.latency.p50_us),
                super::render::ms_text(s.latency.p99_us),
                thousands(s.warmup_excluded),
            ]
        })
        .collect();
    framed(&header, &rows)
}

/// One stage of a staged ingest: where it sat in the send, the rate it was asked for, and what
/// its batches did, apart from its warm-up (`warmup`). A batch belongs to the stage its slot
/// falls in. `rows` and `warmup` each hold on their own (scheduled = sent + cut off + unsent),
/// and the stages' `rows` and `warmup` together are the phase's rows.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IngestStageReport {
    /// From 1, in the order the workload lists them.
    pub stage: u64,
    /// When the stage's slots begin, seconds after the phase's first (stages follow each
    /// other without a gap: the send is continuous).
    pub start_s: f64,
    pub duration_s: f64,
    /// The stage's first part, sent and not counted in its figures.
    pub warmup_s: f64,
    /// Measured span: from the end of the warm-up to the stage's end, or to the end of the
    /// sending if that came first.
    pub span_s: f64,
    /// `200/s`, or `200/s to 1000/s` for a ramp (rows per second, across all workers).
    pub load: String,
    pub rate_from: f64,
    pub rate_to: f64,
    /// Whether a batch of the stage went out: `false` when the send ended before it (its rows
    /// ran out, its group ended, or a failure stopped it).
    pub reached: bool,
    /// After the warm-up.
    pub rows: StageRows,
    /// The warm-up's rows: in the phase's totals, not in the stage's figures.
    pub warmup: StageRows,
    /// Batches taken after the warm-up.
    pub batches: u64,
    /// `rows.acked` (or `rows.sent` where the protocol has no acknowledgements, as the phase's
    /// `rate_counts` says) over `span_s`; `None` below the shortest span a rate is given for.
    pub rows_per_s: Option<f64>,
    /// (sent + cut off) over scheduled, a fraction; `None` when nothing was due.
    pub achieved_rate: Option<f64>,
    /// Whether the stage sent at least 95% of its rows due; a stage below it fails the phase.
    /// `None` when nothing was due.
    pub kept_schedule: Option<bool>,
    /// Batches sent more than 1 ms after their slot, and their share.
    pub late_batches: u64,
    pub late_share: Option<f64>,
    /// Per batch: actual minus intended send time; send -> answer (or written); intended send
    /// time -> answer.
    pub send_lag: Latency,
    pub batch_latency: Latency,
    pub batch_latency_intended: Latency,
}

/// Where the rows of a stage (or of its warm-up) went. `scheduled = sent + cut_off + unsent`;
/// `sent` counts `failed` too (sent whole, then rejected), and `dropped` rows are outside the
/// schedule as they are outside the phase's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageRows {
    pub scheduled: u64,
    pub sent: u64,
    /// `None` where the protocol has no acknowledgements.
    pub acked: Option<u64>,
    pub failed: u64,
    pub dropped: u64,
    pub cut_off: u64,
    pub unsent: u64,
}

/// The stages' table under an ingest's figures, one row per stage.
pub fn ingest_table(stages: &[IngestStageReport]) -> String {
    if stages.is_empty() {
        return String::new();
    }
    let header = [
        "stage",
        "start",
        "span",
        "asked",
        "scheduled",
        "sent",
        "acked",
        "cut off",
        "unsent",
        "rate",
        "lag p99",
        "p50",
        "p99",
        "warm-up",
    ];
    let rows: Vec<Vec<String>> = stages
        .iter()
        .map(|s| {
            let r = &s.rows;
            let reached = if s.reached { "" } else { " (not reached)" };
            vec![
                s.stage.to_string(),
                format!("{:.1}s", s.start_s),
                format!("{:.1}s", s.span_s),
                format!("{}{reached}", s.load),
                thousands(r.scheduled),
                thousands(r.sent),
                r.acked.map_or_else(|| "-".to_string(), thousands),
                thousands(r.cut_off),
                thousands(r.unsent),
                super::render::fmt_rate(s.rows_per_s, "rows"),
                super::render::ms_text(s.send_lag.p99_us),
                super::render::ms_text(s.batch_latency.p50_us),
                super::render::ms_text(s.batch_latency.p99_us),
                thousands(s.warmup.scheduled),
            ]
        })
        .collect();
    framed(&header, &rows)
}

/// A stages table under `  stages:`, indented; the fourth column (the load) is text, the
/// others figures.
fn framed(header: &[&str], rows: &[Vec<String>]) -> String {
    let figures: Vec<usize> = (0..header.len()).filter(|&i| i != 3).collect();
    let mut out = String::from("  stages:\n");
    for line in super::render::grid(header, rows, &figures).lines() {
        out += &format!("    {line}\n");
    }
    out
}

fn num(x: f64) -> String {
    if x >= 100.0 {
        thousands(x.round() as u64)
    } else {
        format!("{x:.1}")
    }
}
