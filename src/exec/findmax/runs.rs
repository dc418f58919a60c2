//! The steps of a query or request run's search: each a run of its own at the step's rate for
//! the step's span, after its warm-up at that rate on the connections it then measures with
//! (not measured). The step is judged on the SLA's terms (judged as `expect` judges them), on
//! keeping its schedule (sent at least 95% of scheduled), and on errors when no term allows
//! them.

use std::future::Future;

use indexmap::IndexMap;

use super::search::{Phase, Verdict};
use super::{step_env, step_seed, step_span_ns, At, Steps};
use crate::exec::series::Recorder;
use crate::exec::RunEnv;
use crate::plan::{FindMaxPlan, Load, QueryPhase, RequestPhase, RunClauses, Stop, KEPT_SCHEDULE};
use crate::report::findmax::{FindMaxReport, FindMaxStep};
use crate::report::{
    QueryReport, QuerySetup, RequestReport, RequestSetup, RunKind, RunReport, Status,
    ThresholdReport,
};
use crate::value::Value;

/// A kind of run whose steps are runs of its own, judged as runs are.
pub(crate) trait RunSteps {
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

pub(crate) struct QuerySteps<'a>(pub &'a QueryPhase);

impl RunSteps for QuerySteps<'_> {
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
        crate::exec::queries::run(
            env,
            label,
            &phase,
            series,
            crate::exec::end::Member::alone(),
        )
        .await
    }
    fn thresholds(r: &QueryReport) -> &[ThresholdReport] {
        &r.detail.thresholds
    }
    fn empty(&self) -> QueryReport {
        QueryReport::empty(self.0)
    }
}

pub(crate) struct RequestSteps<'a>(pub &'a RequestPhase, pub &'a IndexMap<String, Value>);

impl RunSteps for RequestSteps<'_> {
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
        crate::exec::requests::run(
            env,
            label,
            &phase,
            self.1,
            series,
            crate::exec::end::Member::alone(),
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

impl<T: RunSteps> Steps for T {
    type Report = RunReport<T::Kind>;

    async fn step(
        &self,
        env: &RunEnv,
        label: &str,
        fm: &FindMaxPlan,
        at: At,
        series: &Recorder,
    ) -> (Self::Report, FindMaxStep, Verdict) {
        let base = self.clauses();
        let senv = step_env(env, step_seed(env.seed, at.rate));
        let run = step_clauses(base, fm, at.rate, at.n == 1);
        let r = self.measure(&senv, label, run, series).await;
        let judged = T::thresholds(&r);
        let sla = &judged[judged.len().saturating_sub(fm.sla.len())..];
        let (broke, v) = judge_step(&r, sla, base, env);
        let row = step_row(at.n, at.phase, at.rate, &r, broke, v);
        (r, row, v)
    }

    fn empty(&self) -> Self::Report {
        RunSteps::empty(self)
    }

    fn conclude(r: &mut Self::Report, status: Option<Status>, why: &str, f: FindMaxReport) {
        super::settle((&mut r.status, &mut r.failures), status, why);
        r.findmax = Some(f);
    }
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
    let verdict = Verdict::of(r.status, &broke);
    (broke, verdict)
}

fn step_row<K: RunKind>(
    n: u64,
    phase: Phase,
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
        lag_p50_us: None,
        lag_p99_us: None,
        lag_max_us: None,
        visible_after_s: None,
        verdict: v.as_str().into(),
        broke,
    }
}
