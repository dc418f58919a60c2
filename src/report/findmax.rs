//! The `findmax` object of a query or request run that searched for the highest rate meeting
//! its SLA (docs/report-format.md, "find max rate"), and its lines in the terminal.

use serde::{Deserialize, Serialize};

use super::render::fmt_latency;
use crate::plan::thousands;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FindMaxReport {
    /// As written: `p99 < 20ms and error_rate < 0.1%`.
    pub sla: String,
    pub from_per_s: f64,
    pub up_to_per_s: Option<f64>,
    pub growth: f64,
    /// A fraction: 0.05 for 5%.
    pub resolution: f64,
    /// The fewest measured samples of a step, and whether given or derived from the SLA.
    pub samples: u64,
    pub samples_from: String,
    /// An ingest's search: `samples` counts probes, rates are rows per second, and each step's
    /// row carries its visibility lag.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub probes: bool,
    /// The highest rate whose step met the SLA twice (its step and its confirmation), per
    /// second; `null` when none did.
    pub answer_per_s: Option<f64>,
    /// The answer was measured twice; `false` when the step bound or an interruption cut the
    /// search short of confirming its best rate (and in format 2 reports, which had no
    /// confirmation).
    #[serde(default)]
    pub confirmed: bool,
    /// Steps that broke below a rate that had met, each in words naming both.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub non_monotonic: Vec<String>,
    /// `bracketed`, `cap`, `not_met_at_from`, `step_bound` or `interrupted`.
    pub outcome: String,
    /// The outcome in words.
    pub why: String,
    /// Every step, in the order they ran.
    pub steps: Vec<FindMaxStep>,
}

/// One step: a fixed rate held for its span after its own warm-up.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FindMaxStep {
    /// 1-based.
    pub step: u64,
    /// `grow`, `down`, `bisect` or `confirm`.
    pub phase: String,
    pub rate_per_s: f64,
    /// The measured span, warm-up excluded.
    pub elapsed_s: f64,
    pub scheduled: u64,
    pub ok: u64,
    pub failed: u64,
    pub cut_off: u64,
    pub unsent: u64,
    /// Sent (ok + failed + cut off) over scheduled, a fraction.
    pub achieved: Option<f64>,
    /// `ok` per second of the step's span (an ingest's: its `rows_per_s`); `None` under 0.1 s.
    pub achieved_per_s: Option<f64>,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
    pub error_rate: f64,
    /// An ingest's step with `probe visible`: its visibility lag after the warm-up (none when
    /// no probe then saw a row), and the time from its end of sending until every row showed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag_p50_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag_p99_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag_max_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visible_after_s: Option<f64>,
    /// `met`, `broke` or `interrupted`.
    pub verdict: String,
    /// What broke: an SLA term with its measured value, a schedule not kept, errors.
    pub broke: Vec<String>,
}

fn rate(r: f64) -> String {
    if r >= 100.0 || r.fract() == 0.0 {
        format!("{}/s", thousands(r.round() as u64))
    } else {
        format!("{r:.2}/s")
    }
}

fn ms(us: u64) -> String {
    fmt_latency(us as f64, 1000.0, f64::INFINITY)
}

/// The answer line: `find max rate: 2,840/s meets p99 < 20ms (12 steps, resolution 5%)`.
pub fn answer_line(f: &FindMaxReport) -> String {
    let n = f.steps.len();
    let tail = format!(
        "({n} step{}, resolution {}%)",
        if n == 1 { "" } else { "s" },
        crate::plan::short(100.0 * f.resolution)
    );
    match (f.answer_per_s, f.outcome.as_str()) {
        (Some(a), "cap") => format!(
            "find max rate: {} meets {} at the cap `up to {}`: the server may do more {tail}",
            rate(a),
            f.sla,
            rate(a)
        ),
        (Some(a), "bracketed") => format!(
            "find max rate: {} meets {}{} {tail}",
            rate(a),
            f.sla,
            if f.confirmed {
                ", confirmed by a repeat"
            } else {
                ""
            }
        ),
        (Some(a), _) => format!(
            "find max rate: {} meets {}, the best so far: {} {tail}",
            rate(a),
            f.sla,
            f.why
        ),
        (None, _) => format!("find max rate: no answer: {} {tail}", f.why),
    }
}

/// The table of steps and the answer line, under a phase's own figures.
pub fn lines(f: &Option<FindMaxReport>) -> String {
    let Some(f) = f else {
        return String::new();
    };
    let mut out = format!(
        "  find max rate from {} where {}: steps of at least {} {} ({})\n",
        rate(f.from_per_s),
        f.sla,
        thousands(f.samples),
        if f.probes { "probes" } else { "samples" },
        f.samples_from
    );
    out += &format!(
        "  {:>4} {:<7} {:>10} {:>7} {:>9} {:>8} {:>6} {:>7} {:>6} {:>9} ",
        "step",
        "phase",
        "rate",
        "span",
        "scheduled",
        "ok",
        "failed",
        "cut off",
        "unsent",
        "achieved"
    );
    out += &if f.probes {
        format!(
            "{:>9} {:>9} {:>9} {:>9} {:>9}  verdict\n",
            "batch p99", "lag p50", "lag p99", "lag max", "all seen"
        )
    } else {
        format!(
            "{:>9} {:>9} {:>9} {:>9} {:>7}  verdict\n",
            "p50", "p90", "p99", "p99.9", "errors"
        )
    };
    let opt = |us: Option<u64>| us.map(ms).unwrap_or_else(|| "-".into());
    for s in &f.steps {
        out += &format!(
            "  {:>4} {:<7} {:>10} {:>6.1}s {:>9} {:>8} {:>6} {:>7} {:>6} {:>9} ",
            s.step,
            s.phase,
            rate(s.rate_per_s),
            s.elapsed_s,
            thousands(s.scheduled),
            thousands(s.ok),
            thousands(s.failed),
            thousands(s.cut_off),
            thousands(s.unsent),
            s.achieved_per_s.map(rate).unwrap_or_else(|| "-".into()),
        );
        out += &if f.probes {
            format!(
                "{:>9} {:>9} {:>9} {:>9} {:>9}  ",
                ms(s.p99_us),
                opt(s.lag_p50_us),
                opt(s.lag_p99_us),
                opt(s.lag_max_us),
                s.visible_after_s
                    .map(|v| format!("{v:.2}s"))
                    .unwrap_or_else(|| "-".into()),
            )
        } else {
            format!(
                "{:>9} {:>9} {:>9} {:>9} {:>6.2}%  ",
                ms(s.p50_us),
                ms(s.p90_us),
                ms(s.p99_us),
                ms(s.p999_us),
                100.0 * s.error_rate,
            )
        };
        out += &format!(
            "{}{}\n",
            s.verdict,
            if s.broke.is_empty() {
                String::new()
            } else {
                format!(": {}", s.broke.join("; "))
            }
        );
    }
    out += &format!("  {}\n", answer_line(f));
    for n in &f.non_monotonic {
        out += &format!("  non-monotonic: {n}\n");
    }
    out
}
