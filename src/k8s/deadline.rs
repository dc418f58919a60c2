//! The Job's `activeDeadlineSeconds`, read off the plan when every phase's schedule bounds its
//! time, and the `--deadline` that replaces it. A deadline only has to be late enough: where
//! the plan leaves room for doubt, the bound is taken the long way (warm-ups added to spans
//! they may be part of, a rate's span added to the visibility wait after it).
//!
//! The formula (docs/scale-out.md, "activeDeadlineSeconds"):
//!
//! ```text
//! deadline = STARTUP + Σ over cells and phases (PER_PHASE + ceil(SLACK × bound)) + linger
//! bound    = span + warm-up (× repeat for runs) + verify within + probe within
//! ```
//!
//! where a phase's span is its `duration` (stages: their sum), else rows / rate for an ingest,
//! else instances / rate for a counted open-loop run. A phase with none of these runs as fast
//! as the server answers, which no plan can bound: then `--deadline` is required.

use std::fmt;

use crate::plan::{Load, Phase, Plan, RowSource, RunClauses, Stop};
use crate::value::Value;

/// Before the first phase: scheduling, pulling the image, DNS records for the headless
/// Service (a few seconds after each pod starts), and every shard joining shard 0 (which
/// waits up to `--barrier-timeout`, 120 s by default).
pub const STARTUP_S: u64 = 300;

/// Per phase, besides its span: connecting, the setup's DDL on shard 0, the barriers at its
/// start and end, counting rows for the report, the teardown and writing the report.
pub const PER_PHASE_S: u64 = 60;

/// On a phase's bound: a paced schedule falls behind when the server or the client cannot
/// keep up, and a phase that is a quarter late has failed to hold its rate anyway.
pub const SLACK: f64 = 1.25;

/// The phase no plan can bound, and why, for the refusal.
#[derive(Debug, PartialEq)]
pub struct Unbounded {
    pub cell: String,
    pub phase: String,
    pub why: String,
}

impl fmt::Display for Unbounded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "phase `{}`", self.phase)?;
        if !self.cell.is_empty() {
            write!(f, " (cell {})", self.cell)?;
        }
        write!(f, " {}", self.why)
    }
}

/// The Job's deadline in seconds for a run of `plan`, lingering `linger` seconds after it.
pub fn derive(plan: &Plan, linger: u64) -> Result<u64, Unbounded> {
    let mut total = STARTUP_S + linger;
    for cell in &plan.cells {
        for phase in &cell.phases {
            let bound = phase_bound(phase).map_err(|why| Unbounded {
                cell: cell.key.clone(),
                phase: phase.name().to_string(),
                why,
            })?;
            total = total
                .saturating_add(PER_PHASE_S)
                .saturating_add((bound * SLACK).ceil() as u64);
        }
    }
    Ok(total)
}

/// A phase's longest time in seconds, or why it has none.
fn phase_bound(phase: &Phase) -> Result<f64, String> {
    match phase {
        Phase::Ingest(p) => {
            if p.findmax.is_some() {
                return Err(
                    "searches for the highest rate: its steps go on until one fails".into(),
                );
            }
            if p.calibrate {
                return Err(
                    "calibrates: every row first goes to a null sink as fast as the client can"
                        .into(),
                );
            }
            if p.replay_budget.is_some() {
                return Err(
                    "replays: every batch is encoded before the clock starts, as fast as the \
                     client can"
                        .into(),
                );
            }
            let duration = seconds(&p.duration);
            let paced = match (rate(&p.rate), p.rows_expected) {
                (Some(r), Some(rows)) => Some(rows as f64 / r),
                _ => None,
            };
            let span = match (duration, paced) {
                (Some(d), Some(p)) => d.min(p),
                (Some(d), None) => d,
                (None, Some(p)) => p,
                (None, None) => {
                    let rows = match &p.source {
                        RowSource::File { .. } if p.rows_expected.is_none() => {
                            "a row file whose rows are not counted"
                        }
                        _ => "its rows",
                    };
                    return Err(format!(
                        "sends {rows} as fast as the server takes them: it has no `duration`, \
                         and no `rate` over a known number of rows"
                    ));
                }
            };
            let verify = p.verify.as_ref().and_then(|v| seconds_of(&v.within));
            let probe = p.probe.as_ref().and_then(|v| seconds_of(&v.count.within));
            Ok(span
                + seconds(&p.warmup).unwrap_or(0.0)
                + verify.unwrap_or(0.0)
                + probe.unwrap_or(0.0))
        }
        Phase::Queries(p) => run_bound(&p.run, p.queries.len() as u64),
        Phase::Requests(p) => run_bound(&p.run, 1),
    }
}

/// A query or request run: its rounds (`repeat`), each a warm-up and a measured span.
fn run_bound(run: &RunClauses, queries: u64) -> Result<f64, String> {
    if run.findmax.is_some() {
        return Err("searches for the highest rate: its steps go on until one fails".into());
    }
    let rate = match &run.load {
        Load::Open { rate: r, .. } => rate(&Some(r.clone())),
        Load::Closed => None,
    };
    let measured = match &run.stop {
        Stop::Duration { duration } => seconds_of(duration)
            .ok_or_else(|| format!("has a duration wlrun k8s cannot read: {duration}"))?,
        Stop::Count { count, per_query } => {
            let instances = if *per_query { count * queries } else { *count };
            match rate {
                Some(r) => instances as f64 / r,
                None => {
                    return Err(format!(
                        "runs {instances} instances in a closed loop, as fast as the server \
                         answers: it has no `duration` and no `rate`"
                    ))
                }
            }
        }
    };
    let warmup = match &run.warmup {
        None => 0.0,
        Some(Value::Int(n)) if *n <= 0 => 0.0,
        Some(Value::Int(n)) => match (rate, run.warmup_at_rate) {
            (Some(r), true) => *n as f64 / r,
            _ => {
                return Err(format!(
                    "warms up with {n} instances as fast as the server answers"
                ))
            }
        },
        Some(v) => seconds_of(v).unwrap_or(0.0),
    };
    Ok((measured + warmup) * run.repeat.max(1) as f64)
}

fn seconds(v: &Option<Value>) -> Option<f64> {
    v.as_ref().and_then(seconds_of)
}

fn seconds_of(v: &Value) -> Option<f64> {
    match v {
        Value::Duration(ns) => Some((*ns).max(0) as f64 / 1e9),
        _ => None,
    }
}

fn rate(v: &Option<Value>) -> Option<f64> {
    match v {
        Some(Value::Rate(r)) if *r > 0.0 && r.is_finite() => Some(*r),
        _ => None,
    }
}

/// `--deadline` and other durations of the manifests: whole seconds, written `90s`, `45m`,
/// `2h`, `1d`, `1h30m` or a plain number of seconds.
pub fn parse_duration(flag: &str, text: &str) -> Result<u64, String> {
    let bad =
        || format!("{flag} `{text}` is not a duration: write e.g. `90m`, `2h`, `1h30m` or `5400s`");
    let t = text.trim();
    if t.is_empty() {
        return Err(bad());
    }
    if let Ok(n) = t.parse::<u64>() {
        return positive(flag, text, n);
    }
    let mut total: u64 = 0;
    let mut rest = t;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        if digits == 0 {
            return Err(bad());
        }
        let n: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "s" => 1,
            "m" => 60,
            "h" => 3600,
            "d" => 86_400,
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        total = n
            .checked_mul(scale)
            .and_then(|s| total.checked_add(s))
            .ok_or_else(bad)?;
    }
    positive(flag, text, total)
}

/// `4500 s (1h15m)`: the seconds the manifest holds, and what they come to.
pub fn shown(seconds: u64) -> String {
    let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    let mut parts = String::new();
    if h > 0 {
        parts += &format!("{h}h");
    }
    if m > 0 {
        parts += &format!("{m}m");
    }
    if s > 0 || parts.is_empty() {
        parts += &format!("{s}s");
    }
    format!("{seconds} s ({parts})")
}

fn positive(flag: &str, text: &str, n: u64) -> Result<u64, String> {
    // The API takes an int64; a year is past any benchmark and keeps the YAML readable.
    const MAX: u64 = 366 * 86_400;
    if n == 0 || n > MAX {
        return Err(format!(
            "{flag} `{text}` is out of range: more than zero and at most 366 days"
        ));
    }
    Ok(n)
}

#[cfg(test)]
mod tests;
