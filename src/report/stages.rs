//! The stages of a staged query or request run, each reported on its own
//! (docs/report-format.md, "Stages"), and their table in the terminal.

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
    let figures: Vec<usize> = (0..header.len()).filter(|&i| i != 3).collect();
    let mut out = String::from("  stages:\n");
    for line in super::render::grid(&header, &rows, &figures).lines() {
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
