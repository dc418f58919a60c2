//! `wlrun compare BASE NEW`: two finished runs read back, cells matched by `key` and phases by
//! `name`, and every headline metric of a phase tested for a change from the per-interval
//! samples of its time series (`stats`), rendered as a table (`render`) or serialized as JSON
//! (`Comparison` is the JSON's shape, and what the HTML diff page is drawn from).
//! docs/compare.md describes the method.

use serde::Serialize;

use crate::report::Status;

/// Two runs compared: what was matched, what was not, and every tested metric.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub base: RunInfo,
    pub new: RunInfo,
    /// The significance level of every test: 0.05.
    pub alpha: f64,
    /// `--threshold` as a fraction (5% is 0.05); `None` without it.
    pub threshold: Option<f64>,
    /// Cells in both runs, in the base run's order.
    pub cells: Vec<CellComparison>,
    /// Keys of the cells only one run has, in that run's order.
    pub only_in_base: Vec<String>,
    pub only_in_new: Vec<String>,
    /// With `--threshold`: every metric significantly worse by more than the threshold, as
    /// `cell key / phase / metric`; `wlrun compare` exits 1 when this is not empty. Always
    /// empty without `--threshold`.
    pub regressions: Vec<String>,
}

/// Which run a side of the comparison is.
#[derive(Clone, Debug, Serialize)]
pub struct RunInfo {
    /// As given on the command line.
    pub path: String,
    pub workload: String,
    pub file: String,
    pub seed: u64,
    /// RFC 3339 UTC, when the run started (from its report).
    pub started: String,
    pub interrupted: bool,
}

/// One cell both runs have.
#[derive(Clone, Debug, Serialize)]
pub struct CellComparison {
    pub key: String,
    /// Phases both runs have, in the base run's order.
    pub phases: Vec<PhaseComparison>,
    /// Names of the phases only one run's cell has.
    pub only_in_base: Vec<String>,
    pub only_in_new: Vec<String>,
}

/// One phase both runs' cells have, by name.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseComparison {
    pub name: String,
    /// `ingest`, `queries`, `requests` or `not_run`, for each run.
    pub base_kind: String,
    pub new_kind: String,
    pub base_status: Status,
    pub new_status: Status,
    /// Why `metrics` is empty: the kinds differ, or a run did not run the phase. `None` when
    /// the phase was compared.
    pub note: Option<String>,
    /// The headline metrics, tested (ingest: rows/s, sent rows/s, batch p50, batch p99;
    /// queries and requests: successes per second, p50, p99).
    pub metrics: Vec<MetricComparison>,
    /// Figures shown beside the metrics but not tested (the error rate of a query or request
    /// run).
    pub shown: Vec<ShownValue>,
}

/// A headline metric of a phase in both runs, and its test.
#[derive(Clone, Debug, Serialize)]
pub struct MetricComparison {
    /// `rows_per_s`, `send_rows_per_s`, `batch_p50_us`, `batch_p99_us` (ingest); `qps` or
    /// `rps`, `p50_us`, `p99_us` (query and request runs).
    pub metric: String,
    /// For people: `rows/s (acked)`, `queries/s`, `p99`, ...
    pub label: String,
    pub unit: Unit,
    pub better: Better,
    /// The whole-run values from report.json (throughput over the phase's span; latency
    /// percentiles of the merged histogram); `None` where the report has none (a span too short
    /// to be a rate, no answers).
    pub base: Option<f64>,
    pub new: Option<f64>,
    /// `new / base - 1` of the whole-run values; `None` without both or with a zero base.
    pub change: Option<f64>,
    /// The per-interval samples of each run; `None` without a series (a run without `--out`,
    /// or a phase that measured nothing).
    pub base_samples: Option<Samples>,
    pub new_samples: Option<Samples>,
    /// Welch's test of the per-interval means; `None` unless both runs have enough samples.
    pub test: Option<Test>,
    pub verdict: Verdict,
    /// With `--threshold`: significantly worse and `test.change` worse by more than it.
    pub exceeds_threshold: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Per second: rows, queries or requests.
    PerSecond,
    /// Microseconds.
    Micros,
}

/// Which direction of change is an improvement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
}

/// One run's per-interval samples of a metric: interval rates (count over span, for intervals
/// measured over at least half their length) or interval percentiles (of intervals that had
/// answers).
#[derive(Clone, Debug, Serialize)]
pub struct Samples {
    /// Samples taken.
    pub n: usize,
    /// The sample size corrected for autocorrelation: `n / tau`, between 1 and `n`.
    pub n_eff: f64,
    pub mean: f64,
    /// Sample standard deviation (n - 1).
    pub stddev: f64,
    /// Lag-1 autocorrelation of the samples (0 when it cannot be estimated).
    pub lag1: f64,
}

/// Welch's t-test of `new.mean - base.mean` with the effective sample sizes.
#[derive(Clone, Debug, Serialize)]
pub struct Test {
    /// Welch–Satterthwaite degrees of freedom from the effective sample sizes.
    pub df: f64,
    pub t: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// `new.mean / base.mean - 1`: the point estimate the threshold is judged on.
    pub change: f64,
    /// The 95% (1 - alpha) confidence interval of `new.mean - base.mean`, relative to
    /// `base.mean`.
    pub ci_low: f64,
    pub ci_high: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Significant at `alpha`, in the better direction.
    Better,
    /// Significant at `alpha`, in the worse direction.
    Worse,
    NoSignificantChange,
    /// A run has fewer samples (raw or effective) than a test needs.
    TooFewSamples,
    /// A run has no per-interval series for the phase.
    NoSamples,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoSignificantChange => "no significant change",
            Verdict::TooFewSamples => "too few samples",
            Verdict::NoSamples => "no per-interval samples",
        }
    }
}

/// A figure shown for both runs without a test.
#[derive(Clone, Debug, Serialize)]
pub struct ShownValue {
    /// `error_rate`.
    pub metric: String,
    pub label: String,
    pub base: Option<f64>,
    pub new: Option<f64>,
}
