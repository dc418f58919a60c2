//! `find max rate`: a query or request run, or an ingest, made of fixed-rate steps, searching
//! for the highest rate that meets its SLA (docs/language.md, "find max rate"). `search`
//! decides the rates from the verdicts; this file runs the search over a kind of phase that
//! measures one step as a phase of its own (`runs`: the run's clauses at the step's rate for
//! the step's span; `ingest`: the ingest at the step's row rate) and judges it, so a step's
//! figures are exactly a phase's.
//!
//! Each step's work comes from a seed derived from the run's seed and the step's rate
//! (`step_seed`), so the same seed and rate send the same requests (or rows) whatever path led
//! there.

mod ingest;
mod runs;
pub(super) mod search;

use std::future::Future;

pub(super) use ingest::IngestSteps;
pub(super) use runs::{QuerySteps, RequestSteps};

use super::series::Recorder;
use super::RunEnv;
use crate::plan::{FindMaxPlan, Stop};
use crate::report::findmax::{FindMaxReport, FindMaxStep};
use crate::report::Status;
use crate::value::Value;
use search::{End, Params, Phase, Search, Verdict};

/// Which step is measured: its number (from 1), why, and its rate per second.
#[derive(Clone, Copy, Debug)]
pub(super) struct At {
    pub n: u64,
    pub phase: Phase,
    pub rate: f64,
}

/// A kind of phase the search can measure one step of.
pub(super) trait Steps {
    type Report;
    /// Why a step at `rate` cannot be measured at all, if it cannot: the search ends there.
    fn refuse(&self, _fm: &FindMaxPlan, _rate: f64) -> Option<String> {
        None
    }
    /// The step measured and judged: its report, its row of the table and its verdict.
    fn step(
        &self,
        env: &RunEnv,
        label: &str,
        fm: &FindMaxPlan,
        at: At,
        series: &Recorder,
    ) -> impl Future<Output = (Self::Report, FindMaxStep, Verdict)>;
    /// A report for a search that measured nothing.
    fn empty(&self) -> Self::Report;
    /// The phase's report made of its answer step's (`r`): failed or interrupted as the search
    /// ended (`status`, `why`), and carrying the search's object.
    fn conclude(r: &mut Self::Report, status: Option<Status>, why: &str, f: FindMaxReport);
}

/// The seed of a step at `rate`: splitmix64 of the run's seed and the rate in thousandths per
/// second.
pub fn step_seed(seed: u64, rate: f64) -> u64 {
    let mut z = seed ^ ((rate * 1000.0).round() as u64).rotate_left(17);
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

pub(super) fn step_env(env: &RunEnv, seed: u64) -> RunEnv {
    RunEnv {
        seed,
        base_dir: env.base_dir.clone(),
        stop: env.stop.clone(),
        progress_every: env.progress_every,
        quiet: env.quiet,
        max_error_rate: env.max_error_rate,
        fail_fast: env.fail_fast,
        // The phase's recorder is handed to each step; nothing else reads this.
        series: None,
        live: None,
        // A search is refused under shards.
        shard: None,
    }
}

/// The measured span of a step at `rate`: the run's `duration`, or longer when the step's
/// samples need it (whole milliseconds, rounded up).
pub fn step_span_ns(stop: &Stop, samples: u64, rate: f64) -> i64 {
    let least = match stop {
        Stop::Duration {
            duration: Value::Duration(ns),
        } => *ns,
        _ => 0,
    };
    let need_ms = (samples as f64 / rate * 1000.0).ceil() as i64;
    least.max(need_ms * 1_000_000)
}

/// Runs the search and reports it: the phase's usual figures are its answer step's (without
/// an answer, its last step's), and `findmax` holds every step.
pub(super) async fn search<S: Steps>(
    env: &RunEnv,
    label: &str,
    steps: &S,
    fm: &FindMaxPlan,
    series: &Recorder,
) -> S::Report {
    let mut s = Search::new(Params {
        from: fm.from_per_s,
        cap: fm.up_to_per_s,
        growth: fm.growth,
        resolution: fm.resolution,
        max_steps: fm.max_steps,
        confirm: fm.confirm,
    });
    let mut rows = Vec::new();
    // Every step that met, by rate: the answer's report is its latest (its confirmation).
    let mut met: Vec<(f64, S::Report)> = Vec::new();
    let mut last = None;
    let mut refused = None;
    while let Some((phase, rate)) = s.next() {
        if let Some(why) = steps.refuse(fm, rate) {
            refused = Some(why);
            break;
        }
        let at = At {
            n: s.steps(),
            phase,
            rate,
        };
        let label = format!("{label} step {} at {}", at.n, crate::value::fmt_rate(rate));
        series.step(at.n);
        let (r, row, v) = steps.step(env, &label, fm, at, series).await;
        rows.push(row);
        s.record(v);
        if v == Verdict::Met {
            met.push((rate, r));
        } else {
            last = Some(r);
        }
    }
    let end = match refused {
        Some(_) => End::Refused,
        None => s.end().unwrap_or(End::Interrupted),
    };
    let answer = s.answer();
    let (why, status) = match refused {
        Some(why) => (why, Some(Status::Failed)),
        None => outcome(end, answer, s.bad(), fm, &rows),
    };
    let answered = answer
        .and_then(|a| met.iter().rposition(|(rate, _)| *rate == a))
        .map(|i| met.swap_remove(i).1);
    let mut report = match (answered, last) {
        (Some(r), _) if end != End::Refused => r,
        (_, Some(r)) => r,
        (Some(r), None) => r,
        (None, None) => met.pop().map_or_else(|| steps.empty(), |(_, r)| r),
    };
    let r = crate::value::fmt_rate;
    let non_monotonic: Vec<String> = s
        .non_monotonic()
        .iter()
        .map(|n| {
            format!(
                "{} broke below {}, which had met the SLA",
                r(n.broke),
                r(n.met)
            )
        })
        .collect();
    S::conclude(
        &mut report,
        status,
        &why,
        FindMaxReport {
            sla: fm.sla_text.clone(),
            from_per_s: fm.from_per_s,
            up_to_per_s: fm.up_to_per_s,
            growth: fm.growth,
            resolution: fm.resolution,
            samples: fm.samples,
            samples_from: fm.samples_from.clone(),
            probes: fm.probes,
            answer_per_s: answer,
            confirmed: s.confirmed(),
            non_monotonic,
            outcome: end.as_str().into(),
            why: why.clone(),
            steps: rows,
        },
    );
    report
}

/// A phase's status and failures as the search ended: `Failed` puts the outcome first among
/// the failures, `Interrupted` marks it so; `None` leaves the answer step's own.
fn settle((status, failures): (&mut Status, &mut Vec<String>), ended: Option<Status>, why: &str) {
    match ended {
        Some(Status::Failed) => {
            *status = Status::Failed;
            failures.insert(0, why.to_string());
        }
        Some(Status::Interrupted) => *status = Status::Interrupted,
        _ => {}
    }
}

/// The outcome in words, and the status it sets (`None`: the answer step's own).
fn outcome(
    end: End,
    answer: Option<f64>,
    bad: Option<f64>,
    fm: &FindMaxPlan,
    rows: &[FindMaxStep],
) -> (String, Option<Status>) {
    let r = crate::value::fmt_rate;
    match (end, answer) {
        (End::Bracketed, Some(a)) => (
            format!(
                "{} met the SLA and {} broke it: within the resolution",
                r(a),
                bad.map(r).unwrap_or_default()
            ),
            None,
        ),
        (End::Cap, Some(a)) => (format!("the cap `up to {}` met the SLA", r(a)), None),
        (End::StepBound, _) => (
            format!(
                "the search reached its bound of {} steps before its resolution{}",
                fm.max_steps,
                match (answer, bad) {
                    (Some(a), Some(b)) => format!(" (between {} and {})", r(a), r(b)),
                    (Some(a), None) => format!(" (still meeting the SLA at {})", r(a)),
                    _ => String::new(),
                }
            ),
            Some(Status::Failed),
        ),
        (End::Interrupted, _) => (
            format!(
                "interrupted after {} step{}",
                rows.len(),
                if rows.len() == 1 { "" } else { "s" }
            ),
            Some(Status::Interrupted),
        ),
        _ => {
            let terms = rows.first().map(|s| s.broke.join("; ")).unwrap_or_default();
            let lowest = rows.last().map_or(fm.from_per_s, |s| s.rate_per_s);
            (
                format!(
                    "the SLA ({}) is not met at from {} ({terms}), nor searching down to {}",
                    fm.sla_text,
                    r(fm.from_per_s),
                    r(lowest)
                ),
                Some(Status::Failed),
            )
        }
    }
}
