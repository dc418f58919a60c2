//! How a query or request run is judged once its workers' measurements are merged: the
//! figures every run reports (counts, latency, errors, accounting), its thresholds measured,
//! and the failures and warnings that decide its status. One place for both kinds, so that a
//! query run and a request run pass and fail by the same rules.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::account::{self, Sends};
use super::RunEnv;
use crate::plan::{Load, Stop, Threshold};
use crate::query::stats::TypeStats;
use crate::report::render::fmt_latency;
use crate::report::{
    ErrorCount, Latency, RepeatReport, RunKind, RunReport, Status, ThresholdReport,
};
use crate::value::Value;

/// What judging a run needs of its phase.
pub(super) struct Rules<'a> {
    expects: &'a [Threshold],
    load: &'a Load,
    stop: &'a Stop,
    units: Units,
}

/// What a run counts, in its failure lines: `queries`, and one of them: `query`.
pub(super) struct Units {
    pub many: &'static str,
    pub one: &'static str,
}

impl Units {
    pub const QUERIES: Units = Units {
        many: "queries",
        one: "query",
    };
    pub const REQUESTS: Units = Units {
        many: "requests",
        one: "request",
    };
}

impl<'a> Rules<'a> {
    pub fn new(expects: &'a [Threshold], load: &'a Load, stop: &'a Stop, units: Units) -> Self {
        Rules {
            expects,
            load,
            stop,
            units,
        }
    }

    pub fn open(&self) -> bool {
        matches!(self.load, Load::Open { .. })
    }
}

/// A measured round ended: its repetition (`answered` queries or requests over `elapsed`), and
/// the process's CPU since `cpu_before` added to the run's.
pub(super) fn repeat<K: RunKind>(
    report: &mut RunReport<K>,
    repeat: u64,
    answered: u64,
    elapsed: Duration,
    before: super::cpu::Mark,
) {
    let now = super::cpu::mark();
    if let (Some(a), Some(b)) = (before.cpu, now.cpu) {
        *report.client_cpu_s.get_or_insert(0.0) += b - a;
    }
    if let (Some(a), Some(b)) = (before.wait, now.wait) {
        *report.client_wait_s.get_or_insert(0.0) += (b - a).max(0.0);
    }
    let elapsed_s = elapsed.as_secs_f64();
    report.repeats.push(RepeatReport {
        repeat,
        elapsed_s,
        queries: answered,
        qps: crate::report::rate(answered, elapsed_s),
    });
}

/// `stop after N errors` (or `--fail-fast`) ended the run (`limited`): said among its
/// failures, before what judging finds.
pub(super) fn stopped<K: RunKind>(
    report: &mut RunReport<K>,
    limited: bool,
    max_errors: Option<u64>,
    units: Units,
) {
    if limited {
        report
            .failures
            .push(super::stopped_after(max_errors, units.many));
    }
}

/// The figures every run reports, from its merged measurements (`elapsed_s` is set already).
pub(super) fn figures<K: RunKind>(
    report: &mut RunReport<K>,
    rules: &Rules,
    all: &TypeStats,
    scheduled: u64,
    sends: &Sends,
) {
    let open = rules.open();
    report.ok = all.ok;
    report.failed = all.failed();
    report.sum_us = all.sum_us as u64;
    report.latency = Latency::of(&all.latency);
    report.service = open.then(|| Latency::of(&all.service));
    report.errors = errors(all);
    report.error_rate = all.error_rate();
    report.accounting = account::accounting(
        scheduled,
        (all.ok, all.not_found, all.failed()),
        sends,
        open,
    );
}

/// The run's own thresholds, measured: `achieved_rate` from the accounting, the others from
/// the figures. `expect status` is a request's test of each answer, not a threshold (query
/// runs have none).
pub(super) fn thresholds<K: RunKind>(
    report: &RunReport<K>,
    rules: &Rules,
    all: &TypeStats,
) -> Vec<ThresholdReport> {
    rules
        .expects
        .iter()
        .filter(|t| t.metric != "status")
        .map(|th| match th.metric.as_str() {
            "achieved_rate" => account::judge_achieved(th, &report.accounting),
            _ => judge(th, all, report.elapsed_s),
        })
        .collect()
}

/// The failures and warnings that decide the run's status, after those the run met on its
/// way; `unmet` are the lines of its thresholds not met (`failed_thresholds`).
pub(super) fn verdict<K: RunKind>(
    report: &mut RunReport<K>,
    rules: &Rules,
    all: &TypeStats,
    unmet: Vec<String>,
    env: &RunEnv,
) {
    report
        .failures
        .extend(error_policy(rules.expects, env, all, rules.units.many));
    report.failures.extend(account::rate_failure(
        &report.accounting,
        rules.expects,
        rules.units.many,
    ));
    report.failures.extend(unmet);
    if report.ok + report.failed == 0 && report.failures.is_empty() {
        report
            .failures
            .push(format!("no {} was measured", rules.units.one));
    }
    report.warnings.extend(
        super::client_bound::Signs::of(
            &report.accounting,
            report.service.as_ref(),
            report.setup.lanes(),
            (report.client_cpu_s, report.client_wait_s, report.elapsed_s),
        )
        .and_then(|s| s.warning()),
    );
    report.warnings.extend(account::cut_off_warning(
        &report.accounting,
        rules.units.many,
        rules.load,
        rules.stop,
    ));
    report.status = if env.stop.load(Ordering::Relaxed) {
        Status::Interrupted
    } else if report.failures.is_empty() {
        Status::Ok
    } else {
        Status::Failed
    };
}

/// Errors fail the run unless a threshold allows them: `--max-error-rate`, else the file's
/// `expect error_rate` (or `errors`), else none at all. `unit` names what failed: `queries`.
fn error_policy(
    expects: &[Threshold],
    env: &RunEnv,
    all: &TypeStats,
    unit: &str,
) -> Option<String> {
    let file_rate = expects
        .iter()
        .any(|t| t.metric == "error_rate" || t.metric == "errors");
    match env.max_error_rate {
        Some(max) if all.error_rate() > max => Some(format!(
            "error rate {:.4}% is over --max-error-rate {:.4}%",
            100.0 * all.error_rate(),
            100.0 * max
        )),
        None if !file_rate && all.failed() > 0 => Some(format!(
            "{} of {} {unit} failed (no `expect error_rate` allows errors)",
            all.failed(),
            all.failed() + all.ok
        )),
        _ => None,
    }
}

/// One failure line per threshold not met; `--max-error-rate` replaces the file's own
/// error-rate threshold, so that one is not judged.
pub(super) fn failed_thresholds<'a>(
    thresholds: impl Iterator<Item = &'a ThresholdReport>,
    env: &RunEnv,
) -> Vec<String> {
    let overridden = |t: &ThresholdReport| env.max_error_rate.is_some() && t.metric == "error_rate";
    thresholds
        .filter(|t| !t.ok && !overridden(t))
        .map(|t| format!("threshold not met: {} (measured {})", t.expect, t.actual))
        .collect()
}

pub(super) fn errors(s: &TypeStats) -> std::collections::BTreeMap<String, ErrorCount> {
    s.errors
        .iter()
        .map(|(class, e)| {
            (
                class.as_str().to_string(),
                ErrorCount {
                    count: e.count,
                    first: e.first.clone(),
                },
            )
        })
        .collect()
}

/// Measures a threshold's metric and compares it.
pub fn judge(th: &Threshold, s: &TypeStats, elapsed_s: f64) -> ThresholdReport {
    let us = |q: f64| -> f64 {
        if s.latency.is_empty() {
            0.0
        } else {
            s.latency.value_at_quantile(q) as f64
        }
    };
    // (measured, wanted) in the metric's unit: microseconds, a fraction, a count, per second.
    let (actual, want, shown) = match th.metric.as_str() {
        m @ ("min" | "mean" | "median" | "p50" | "p90" | "p95" | "p99" | "p999" | "p9999"
        | "max") => {
            let v = match m {
                "min" => s.latency.min() as f64,
                "mean" => s.latency.mean(),
                "median" | "p50" => us(0.5),
                "p90" => us(0.9),
                "p95" => us(0.95),
                "p99" => us(0.99),
                "p999" => us(0.999),
                "p9999" => us(0.9999),
                _ => s.latency.max() as f64,
            };
            let want = match &th.value {
                Value::Duration(ns) => *ns as f64 / 1000.0,
                other => other_number(other),
            };
            (v, want, fmt_latency(v, 1000.0, f64::INFINITY))
        }
        "error_rate" => {
            let want = match &th.value {
                Value::Percent(p) => p / 100.0,
                other => other_number(other),
            };
            (
                s.error_rate(),
                want,
                format!("{:.4}%", 100.0 * s.error_rate()),
            )
        }
        "errors" => (
            s.failed() as f64,
            other_number(&th.value),
            s.failed().to_string(),
        ),
        "rows" => (s.rows as f64, other_number(&th.value), s.rows.to_string()),
        "qps" | "rps" => {
            let qps = s.ok as f64 / elapsed_s.max(1e-9);
            let want = match &th.value {
                Value::Rate(r) => *r,
                other => other_number(other),
            };
            (qps, want, format!("{qps:.1}/s"))
        }
        _ => (f64::NAN, 0.0, "not measured".to_string()),
    };
    ThresholdReport {
        metric: th.metric.clone(),
        expect: format!("{} {} {}", th.metric, th.op, th.value),
        actual: shown,
        ok: compare(actual, &th.op, want),
    }
}

fn other_number(v: &Value) -> f64 {
    match v {
        Value::Int(n) => *n as f64,
        Value::Float(f) | Value::Percent(f) | Value::Rate(f) => *f,
        _ => f64::NAN,
    }
}

pub(super) fn compare(actual: f64, op: &str, want: f64) -> bool {
    match op {
        "<" => actual < want,
        "<=" => actual <= want,
        ">" => actual > want,
        ">=" => actual >= want,
        "==" => actual == want,
        "!=" => actual != want,
        _ => false,
    }
}
