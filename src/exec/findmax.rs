//! `find max rate`: a query or request run made of fixed-rate steps, searching for the highest
//! rate that meets its SLA (docs/language.md, "find max rate"). `search` decides the rates from
//! the verdicts; this file measures each step as a run of its own (the phase's clauses at the
//! step's rate, for the step's span) and judges it, so a step's figures are exactly a run's.
//!
//! A step: its warm-up (the run's `warmup`, sent at the step's rate on the connections the step
//! then measures with, not measured), then the measured span, max(duration, samples / rate). The step
//! is judged on the SLA's terms (judged as `expect` judges them), on keeping its schedule
//! (sent ≥ 95% of scheduled), and on errors when no term allows them. Each step's requests come
//! from a seed derived from the run's seed and the step's rate (`step_seed`), so the same seed
//! and rate send the same requests whatever path led there.

mod search;

use std::future::Future;

use indexmap::IndexMap;

use super::series::Recorder;
use super::RunEnv;
use crate::plan::{FindMaxPlan, Load, QueryPhase, RequestPhase, RunClauses, Stop, KEPT_SCHEDULE};
use crate::report::findmax::{FindMaxReport, FindMaxStep};
use crate::report::{
    QueryReport, QuerySetup, RequestReport, RequestSetup, RunKind, RunReport, Status,
    ThresholdReport,
};
use crate::value::Value;
use search::{End, Params, Search, Verdict};

/// A kind of run the search can measure one step of.
pub(super) trait Steps {
    type Kind: RunKind;
    fn clauses(&self) -> &RunClauses;
    /// The phase run with `run` for its clauses.
    fn measure(
        &self,
        env: &RunEnv,
        label: &str,
        run: RunClauses,
        series: &Recorder,
    ) -> impl Future<Output = RunReport<Self::Kind>>;
    fn thresholds(r: &RunReport<Self::Kind>) -> &[ThresholdReport];
    fn empty(&self) -> RunReport<Self::Kind>;
}

pub(super) struct QuerySteps<'a>(pub &'a QueryPhase);

impl Steps for QuerySteps<'_> {
    type Kind = QuerySetup;
    fn clauses(&self) -> &RunClauses {
        &self.0.run
    }
    async fn measure(
        &self,
        env: &RunEnv,
        label: &str,
        run: RunClauses,
        series: &Recorder,
    ) -> QueryReport {
        let phase = QueryPhase {
            run,
            ..self.0.clone()
        };
        super::queries::run(env, label, &phase, series, super::end::Member::alone()).await
    }
    fn thresholds(r: &QueryReport) -> &[ThresholdReport] {
        &r.detail.thresholds
    }
    fn empty(&self) -> QueryReport {
        QueryReport::empty(self.0)
    }
}

pub(super) struct RequestSteps<'a>(pub &'a RequestPhase, pub &'a IndexMap<String, Value>);

impl Steps for RequestSteps<'_> {
    type Kind = RequestSetup;
    fn clauses(&self) -> &RunClauses {
        &self.0.run
    }
    async fn measure(
        &self,
        env: &RunEnv,
        label: &str,
        run: RunClauses,
        series: &Recorder,
    ) -> RequestReport {
        let phase = RequestPhase {
            run,
            ..self.0.clone()
        };
        super::requests::run(
            env,
            label,
            &phase,
            self.1,
            series,
            super::end::Member::alone(),
        )
        .await
    }
    fn thresholds(r: &RequestReport) -> &[ThresholdReport] {
        &r.detail.thresholds
    }
    fn empty(&self) -> RequestReport {
        RequestReport::empty(self.0)
    }
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

fn step_env(env: &RunEnv, seed: u64) -> RunEnv {
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

fn fixed(rate: f64) -> Load {
    Load::Open {
        rate: Value::Rate(rate),
        arrival: "fixed".into(),
    }
}

/// The clauses of a step: the run's warm-up at the step's rate, then its measured span; the
/// SLA's terms join the run's own thresholds (last, so they are the last judged); `require` is
/// checked by the first step only.
fn step_clauses(base: &RunClauses, fm: &FindMaxPlan, rate: f64, guards: bool) -> RunClauses {
    let mut expects = base.expects.clone();
    expects.extend(fm.sla.iter().cloned());
    RunClauses {
        workers: base.workers,
        load: fixed(rate),
        stop: Stop::Duration {
            duration: Value::Duration(step_span_ns(&base.stop, fm.samples, rate)),
        },
        warmup: base.warmup.clone(),
        repeat: 1,
        stop_after_errors: base.stop_after_errors,
        require: if guards { base.require.clone() } else { vec![] },
        expects,
        findmax: None,
        warmup_at_rate: true,
        stages: Vec::new(),
    }
}

/// What a step did and its verdict.
fn judge_step<K: RunKind>(
    r: &RunReport<K>,
    sla: &[ThresholdReport],
    base: &RunClauses,
    env: &RunEnv,
) -> (Vec<String>, Verdict) {
    let mut broke = Vec::new();
    if r.ok + r.failed == 0 {
        broke.push(match r.failures.first() {
            Some(f) => format!("nothing was measured: {f}"),
            None => "nothing was measured".into(),
        });
    }
    for t in sla {
        let overridden = env.max_error_rate.is_some() && t.metric == "error_rate";
        if !t.ok && !overridden {
            broke.push(format!("{} (measured {})", t.expect, t.actual));
        }
    }
    let error_terms = base
        .findmax
        .iter()
        .flat_map(|f| &f.sla)
        .chain(&base.expects);
    let allows_errors = error_terms
        .into_iter()
        .any(|t| t.metric == "error_rate" || t.metric == "errors");
    match env.max_error_rate {
        Some(max) if r.error_rate > max => broke.push(format!(
            "error rate {:.4}% over --max-error-rate {:.4}%",
            100.0 * r.error_rate,
            100.0 * max
        )),
        None if !allows_errors && r.failed > 0 => broke.push(format!(
            "{} errors (no error_rate term allows errors)",
            crate::plan::thousands(r.failed)
        )),
        _ => {}
    }
    if let Some(a) = r.accounting.achieved_rate {
        if a < KEPT_SCHEDULE {
            broke.push(format!(
                "sent {:.1}% of its schedule (needs {:.0}%): the client or the server could not keep the rate",
                100.0 * a,
                100.0 * KEPT_SCHEDULE
            ));
        }
    }
    let verdict = if r.status == Status::Interrupted {
        Verdict::Interrupted
    } else if broke.is_empty() {
        Verdict::Met
    } else {
        Verdict::Broke
    };
    (broke, verdict)
}

fn step_row<K: RunKind>(
    n: u64,
    phase: search::Phase,
    rate: f64,
    r: &RunReport<K>,
    broke: Vec<String>,
    v: Verdict,
) -> FindMaxStep {
    let a = &r.accounting;
    FindMaxStep {
        step: n,
        phase: phase.as_str().into(),
        rate_per_s: rate,
        elapsed_s: r.elapsed_s,
        scheduled: a.scheduled,
        ok: r.ok,
        failed: r.failed,
        cut_off: a.cut_off,
        unsent: a.unsent,
        achieved: a.achieved_rate,
        achieved_per_s: crate::report::rate(r.ok, r.elapsed_s),
        p50_us: r.latency.p50_us,
        p90_us: r.latency.p90_us,
        p99_us: r.latency.p99_us,
        p999_us: r.latency.p999_us,
        max_us: r.latency.max_us,
        error_rate: r.error_rate,
        verdict: match v {
            Verdict::Met => "met",
            Verdict::Broke => "broke",
            Verdict::Interrupted => "interrupted",
        }
        .into(),
        broke,
    }
}

/// Runs the search and reports it: the run's usual figures are its answer step's (without an
/// answer, its last step's), and `findmax` holds every step.
pub(super) async fn search<S: Steps>(
    env: &RunEnv,
    label: &str,
    steps: &S,
    fm: &FindMaxPlan,
    series: &Recorder,
) -> RunReport<S::Kind> {
    let base = steps.clauses();
    let mut s = Search::new(Params {
        from: fm.from_per_s,
        cap: fm.up_to_per_s,
        growth: fm.growth,
        resolution: fm.resolution,
        max_steps: fm.max_steps,
    });
    let mut rows = Vec::new();
    let mut best: Option<(f64, RunReport<S::Kind>)> = None;
    let mut last = None;
    while let Some((phase, rate)) = s.next() {
        let n = s.steps();
        let label = format!("{label} step {n} at {}", crate::value::fmt_rate(rate));
        let senv = step_env(env, step_seed(env.seed, rate));
        let run = step_clauses(base, fm, rate, n == 1);
        let r = steps.measure(&senv, &label, run, series).await;
        let judged = S::thresholds(&r);
        let sla = &judged[judged.len().saturating_sub(fm.sla.len())..];
        let (broke, v) = judge_step(&r, sla, base, env);
        rows.push(step_row(n, phase, rate, &r, broke, v));
        s.record(v);
        if v == Verdict::Met && best.as_ref().is_none_or(|(b, _)| rate > *b) {
            best = Some((rate, r));
        } else {
            last = Some(r);
        }
    }
    let end = s.end().unwrap_or(End::Interrupted);
    let answer = s.answer();
    let (why, status) = outcome(end, answer, s.bad(), fm, &rows);
    let mut report = match (best, last) {
        (Some((_, r)), _) if answer.is_some() => r,
        (_, Some(r)) => r,
        (Some((_, r)), None) => r,
        (None, None) => steps.empty(),
    };
    match status {
        Some(Status::Failed) => {
            report.status = Status::Failed;
            report.failures.insert(0, why.clone());
        }
        Some(Status::Interrupted) => report.status = Status::Interrupted,
        _ => {}
    }
    report.findmax = Some(FindMaxReport {
        sla: fm.sla_text.clone(),
        from_per_s: fm.from_per_s,
        up_to_per_s: fm.up_to_per_s,
        growth: fm.growth,
        resolution: fm.resolution,
        samples: fm.samples,
        samples_from: fm.samples_from.clone(),
        answer_per_s: answer,
        outcome: end.as_str().into(),
        why,
        steps: rows,
    });
    report
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
            (
                format!(
                    "the SLA ({}) is not met even at from {}: {terms}",
                    fm.sla_text,
                    r(fm.from_per_s)
                ),
                Some(Status::Failed),
            )
        }
    }
}
