//! The steps of an ingest's search: each an ingest of its own at the step's row rate (`rate`'s
//! fixed schedule), for its warm-up and then its measured span, with its setup, probe and
//! verify as the phase declares them. A step is judged on its visibility lag after the
//! warm-up (the SLA's `lag_*` and `visible_after` terms), on keeping its schedule (sent at
//! least 95% of the rows due) and on errors when no `errors` term allows them.

use super::search::Verdict;
use super::{step_env, step_seed, At, Steps};
use crate::exec::end::Member;
use crate::exec::judge::compare;
use crate::exec::series::Recorder;
use crate::exec::RunEnv;
use crate::net::fmt::fmt_duration;
use crate::plan::{thousands, FindMaxPlan, IngestPhase, Threshold, KEPT_SCHEDULE};
use crate::report::findmax::{FindMaxReport, FindMaxStep};
use crate::report::{IngestReport, Latency, Status};
use crate::value::{fmt_rate, Value};
use std::time::Duration;

pub(crate) struct IngestSteps<'a>(pub &'a IngestPhase);

fn ns(v: &Option<Value>) -> i64 {
    match v {
        Some(Value::Duration(ns)) => *ns,
        _ => 0,
    }
}

impl IngestSteps<'_> {
    /// A step's measured span: the ingest's `duration`, or longer when its probes need it.
    fn span_ns(&self, fm: &FindMaxPlan) -> i64 {
        let every = self.0.probe.as_ref().map_or(0, |p| match p.every {
            Value::Duration(ns) => ns,
            _ => 0,
        });
        ns(&self.0.duration).max(every.saturating_mul(fm.samples as i64))
    }

    /// The warm-up and the measured span: what a step sends for.
    fn length(&self, fm: &FindMaxPlan) -> Duration {
        Duration::from_nanos((ns(&self.0.warmup) + self.span_ns(fm)).max(0) as u64)
    }
}

impl Steps for IngestSteps<'_> {
    type Report = IngestReport;

    /// A step needs `rate × length` rows from the ingest's source: one the source cannot fill
    /// would end early and measure a shorter span than the one it is judged on.
    fn refuse(&self, fm: &FindMaxPlan, rate: f64) -> Option<String> {
        let length = self.length(fm);
        let need = (rate * length.as_secs_f64()).ceil() as u64;
        match self.0.rows_expected {
            Some(have) if have < need => Some(format!(
                "a step at {} for {} needs {} rows, and the ingest's rows hold {}: give its schema more rows (a longer time range, more series) or shorter steps (`duration`, `samples`, `warmup`)",
                fmt_rate(rate),
                fmt_duration(length),
                thousands(need),
                thousands(have)
            )),
            _ => None,
        }
    }

    async fn step(
        &self,
        env: &RunEnv,
        label: &str,
        fm: &FindMaxPlan,
        at: At,
        series: &Recorder,
    ) -> (IngestReport, FindMaxStep, Verdict) {
        let phase = IngestPhase {
            rate: Some(Value::Rate(at.rate)),
            duration: Some(Value::Duration(self.length(fm).as_nanos() as i64)),
            findmax: None,
            ..self.0.clone()
        };
        let senv = step_env(env, step_seed(env.seed, at.rate));
        let r = crate::exec::ingest::run(&senv, label, &phase, series, Member::alone()).await;
        let (broke, v) = judge(&r, fm);
        let row = row(at, &r, broke, v);
        (r, row, v)
    }

    fn empty(&self) -> IngestReport {
        crate::exec::ingest::empty_report(self.0)
    }

    fn conclude(r: &mut IngestReport, status: Option<Status>, why: &str, f: FindMaxReport) {
        super::settle((&mut r.status, &mut r.failures), status, why);
        r.findmax = Some(f);
    }
}

/// Errors of the rows' sending (and setup): the count's own errors (`verify`) are not the
/// ingest's.
fn errors(r: &IngestReport) -> u64 {
    r.errors
        .iter()
        .filter(|(class, _)| class.as_str() != "verify")
        .map(|(_, e)| e.count)
        .sum()
}

fn judge(r: &IngestReport, fm: &FindMaxPlan) -> (Vec<String>, Verdict) {
    let mut broke = Vec::new();
    if r.rows_sent == 0 {
        broke.push(match r.failures.first() {
            Some(f) => format!("nothing was sent: {f}"),
            None => "nothing was sent".into(),
        });
    }
    let errors = errors(r);
    if errors > 0 && !fm.sla.iter().any(|t| t.metric == "errors") {
        broke.push(format!(
            "{} errors (no `errors` term allows errors)",
            thousands(errors)
        ));
    }
    if let Some(s) = &r.schedule {
        if s.achieved_rate < KEPT_SCHEDULE {
            broke.push(format!(
                "sent {:.1}% of its rows due (needs {:.0}%): the client or the server could not keep the rate",
                100.0 * s.achieved_rate,
                100.0 * KEPT_SCHEDULE
            ));
        }
    }
    if let Some(f) = &r.freshness {
        if 2 * f.probes_failed > f.probes_sent {
            broke.push(format!(
                "{} of {} probes failed: the lag was not measured",
                thousands(f.probes_failed),
                thousands(f.probes_sent)
            ));
        }
    }
    broke.extend(fm.sla.iter().filter_map(|t| term(t, r, errors)));
    let verdict = Verdict::of(r.status, &broke);
    (broke, verdict)
}

/// A term that does not hold, in words with its measured value; `None` when it holds.
fn term(t: &Threshold, r: &IngestReport, errors: u64) -> Option<String> {
    let written = format!("{} {} {}", t.metric, t.op, t.value);
    let want = match &t.value {
        Value::Duration(ns) => *ns as f64 / 1e9,
        Value::Int(n) => *n as f64,
        _ => f64::NAN,
    };
    if t.metric == "errors" {
        return (!compare(errors as f64, &t.op, want))
            .then(|| format!("{written} (measured {errors})"));
    }
    let Some(f) = &r.freshness else {
        return Some(format!("{written} (not measured: no probe ran)"));
    };
    let secs = |us: u64| us as f64 / 1e6;
    let measured = match t.metric.as_str() {
        "visible_after" => match f.all_visible_after_s {
            Some(s) => s,
            None => {
                return Some(format!(
                    "{written} (not every row showed within {:.1}s after sending ended)",
                    f.within_s
                ))
            }
        },
        lag => {
            if f.lag.count == 0 {
                return Some(format!(
                    "{written} (not measured: no probe after the warm-up saw a row)"
                ));
            }
            secs(lag_us(&f.lag, lag))
        }
    };
    (!compare(measured, &t.op, want)).then(|| {
        format!(
            "{written} (measured {})",
            fmt_duration(Duration::from_secs_f64(measured))
        )
    })
}

fn lag_us(l: &Latency, metric: &str) -> u64 {
    match metric {
        "lag_p50" => l.p50_us,
        "lag_p90" => l.p90_us,
        "lag_p95" => l.p95_us,
        "lag_p99" => l.p99_us,
        "lag_p999" => l.p999_us,
        _ => l.max_us,
    }
}

fn row(at: At, r: &IngestReport, broke: Vec<String>, v: Verdict) -> FindMaxStep {
    let s = r.schedule.as_ref();
    let ok = r.rows_acked.unwrap_or(r.rows_sent);
    let failed = r.rows_sent.saturating_sub(ok);
    let lag = r
        .freshness
        .as_ref()
        .filter(|f| f.lag.count > 0)
        .map(|f| &f.lag);
    FindMaxStep {
        step: at.n,
        phase: at.phase.as_str().into(),
        rate_per_s: at.rate,
        elapsed_s: r.elapsed_s,
        scheduled: s.map_or(0, |s| s.scheduled_rows),
        ok,
        failed,
        cut_off: r.rows_cut_off,
        unsent: s.map_or(0, |s| s.unsent_rows),
        achieved: s.map(|s| s.achieved_rate),
        achieved_per_s: r.rows_per_s,
        p50_us: r.batch_latency.p50_us,
        p90_us: r.batch_latency.p90_us,
        p99_us: r.batch_latency.p99_us,
        p999_us: r.batch_latency.p999_us,
        max_us: r.batch_latency.max_us,
        error_rate: if r.rows_sent > 0 {
            failed as f64 / r.rows_sent as f64
        } else {
            0.0
        },
        lag_p50_us: lag.map(|l| l.p50_us),
        lag_p99_us: lag.map(|l| l.p99_us),
        lag_max_us: lag.map(|l| l.max_us),
        visible_after_s: r.freshness.as_ref().and_then(|f| f.all_visible_after_s),
        verdict: v.as_str().into(),
        broke,
    }
}
