//! `wlrun compare BASE NEW`: two finished runs read back, cells matched by `key` and phases by
//! `name`, and every headline metric of a phase tested for a change from the per-interval
//! samples of its time series (`stats`), rendered as a table (`render`) or serialized as JSON
//! (`Comparison` is the JSON's shape, and what the HTML diff page is drawn from).
//! docs/compare.md describes the method.

mod cpu;
pub mod environment;
pub mod html;
pub mod plans;
pub mod render;
pub mod secondary;
pub mod stats;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::report::read::read_run;
use crate::report::series::{self, Series, SeriesRef};
use crate::report::{CellReport, IngestReport, Latency, PhaseReport, RateCounts, Report, Status};

/// Two runs compared: what was matched, what was not, and every tested metric.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub base: RunInfo,
    pub new: RunInfo,
    /// The significance level of every test: 0.05.
    pub alpha: f64,
    /// `--threshold` as a fraction (5% is 0.05); `None` without it.
    pub threshold: Option<f64>,
    /// Whether both runs ran the same plan; runs of different plans are compared only with
    /// `--allow-different`, and then this says what differs.
    pub plans: plans::PlanCheck,
    /// The parts of the runs' `environment` that differ (`environment`); empty when none do.
    pub environment: Vec<environment::Difference>,
    /// Cells in both runs, in the base run's order.
    pub cells: Vec<CellComparison>,
    /// Keys of the cells only one run has, in that run's order.
    pub only_in_base: Vec<String>,
    pub only_in_new: Vec<String>,
    /// With `--threshold`: every metric significantly worse by more than the threshold, as
    /// `cell key / phase / metric` (`phase / metric` for a workload without a matrix, whose
    /// only cell's key is empty); `wlrun compare` exits 1 when this is not empty. Always
    /// empty without `--threshold`.
    pub regressions: Vec<String>,
    /// With `--threshold`: every metric that could not be tested (too few or no per-interval
    /// samples) and whose whole-run change is worse by more than the threshold, named as in
    /// `regressions`; with none in `regressions`, `wlrun compare` exits 4 (inconclusive) when
    /// this is not empty. Always empty without `--threshold`.
    pub inconclusive: Vec<String>,
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
    /// The run was killed (no report.json): its report was rebuilt from its time series.
    pub killed: bool,
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
    /// What a reader must know about the figures: a series file missing beside a report.json
    /// named alone, rates that count different rows.
    pub warnings: Vec<String>,
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
    /// With `--threshold`: not tested (`too few samples`, `no per-interval samples`) and the
    /// whole-run `change` worse by more than it: the comparison cannot pass on this metric.
    pub inconclusive: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Per second: rows, queries or requests.
    PerSecond,
    /// Microseconds.
    Micros,
    /// A count over the phase (an ingest's commits).
    Count,
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
    /// CPU per unit of work (`cpu`): the unit (`row`, `query`, `request`), the values being
    /// microseconds of CPU per unit; absent for a fraction (the error rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per: Option<String>,
}

/// The significance level of every test.
pub const ALPHA: f64 = 0.05;

/// How `compare` judges: `--threshold` and `--allow-different`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    pub threshold: Option<f64>,
    /// Compare runs of different plans, saying what differs, rather than refuse them.
    pub allow_different: bool,
}

/// Reads both runs (a run directory, a killed run's directory, or a report.json each) and
/// compares them. `Err` when a path is not a report this wlrun reads, a series it names does
/// not parse, or the runs ran different plans without `allow_different`.
pub fn compare(base: &Path, new: &Path, opts: Options) -> Result<Comparison, String> {
    let threshold = opts.threshold;
    let (rb, rn) = (read_run(base)?, read_run(new)?);
    if let Some(cut) = rb.damaged.iter().chain(&rn.damaged).next() {
        return Err(format!(
            "{cut}: a damaged run's figures are short, and no test tells that from a \
             regression (`wlrun report` shows what is left)"
        ));
    }
    let (b, n) = (&rb.report, &rn.report);
    let runs = [Run { dir: run_dir(base) }, Run { dir: run_dir(new) }];
    let plans = plans::check(
        &plans::plan_of(&runs[0].dir, b.plan.clone()),
        &plans::plan_of(&runs[1].dir, n.plan.clone()),
    );
    if plans.verdict == plans::PlanVerdict::Different && !opts.allow_different {
        return Err(format!(
            "{} and {} ran different plans, so their figures may differ for reasons no test \
             tells from a regression:\n{}pass --allow-different to compare them anyway",
            base.display(),
            new.display(),
            plans
                .differences
                .iter()
                .map(|d| format!("  {d}\n"))
                .collect::<String>()
        ));
    }
    let mut cells = Vec::new();
    for cb in &b.cells {
        if let Some(cn) = n.cells.iter().find(|c| c.key == cb.key) {
            cells.push(cell(&runs, cb, cn, threshold)?);
        }
    }
    let only = |a: &Report, other: &Report| -> Vec<String> {
        a.cells
            .iter()
            .filter(|c| !other.cells.iter().any(|o| o.key == c.key))
            .map(|c| c.key.clone())
            .collect()
    };
    let regressions = named(&cells, |m| m.exceeds_threshold);
    let inconclusive = named(&cells, |m| m.inconclusive);
    Ok(Comparison {
        base: info(base, b, rb.rebuilt.is_some()),
        new: info(new, n, rn.rebuilt.is_some()),
        alpha: ALPHA,
        threshold,
        plans,
        environment: environment::differences(b.environment.as_ref(), n.environment.as_ref()),
        cells,
        only_in_base: only(b, n),
        only_in_new: only(n, b),
        regressions,
        inconclusive,
    })
}

/// The metrics `pick` takes, as `cell key / phase / metric`.
fn named(cells: &[CellComparison], pick: fn(&MetricComparison) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    for c in cells {
        for p in &c.phases {
            for m in p.metrics.iter().filter(|m| pick(m)) {
                out.push(metric_name(&c.key, &p.name, &m.metric));
            }
        }
    }
    out
}

/// `cell key / phase / metric`, or `phase / metric` for a workload without a matrix (its one
/// cell's key is empty).
pub fn metric_name(key: &str, phase: &str, metric: &str) -> String {
    match key {
        "" => format!("{phase} / {metric}"),
        key => format!("{key} / {phase} / {metric}"),
    }
}

/// A run read back: the directory its series paths are relative to.
struct Run {
    dir: PathBuf,
}

fn run_dir(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.to_path_buf()
    } else {
        path.parent().map_or_else(PathBuf::new, Path::to_path_buf)
    }
}

fn info(path: &Path, r: &Report, killed: bool) -> RunInfo {
    RunInfo {
        path: path.display().to_string(),
        workload: r.workload.clone(),
        file: r.file.clone(),
        seed: r.seed,
        started: r.started.clone(),
        interrupted: r.interrupted,
        killed,
    }
}

fn name_of(p: &PhaseReport) -> &str {
    match p {
        PhaseReport::Ingest(r) => &r.name,
        PhaseReport::Queries(r) => &r.name,
        PhaseReport::Requests(r) => &r.name,
        PhaseReport::NotRun { name, .. } => name,
    }
}

fn kind_of(p: &PhaseReport) -> &'static str {
    match p {
        PhaseReport::Ingest(_) => "ingest",
        PhaseReport::Queries(_) => "queries",
        PhaseReport::Requests(_) => "requests",
        PhaseReport::NotRun { .. } => "not_run",
    }
}

fn cell(
    runs: &[Run; 2],
    b: &CellReport,
    n: &CellReport,
    threshold: Option<f64>,
) -> Result<CellComparison, String> {
    let mut phases = Vec::new();
    for pb in &b.phases {
        if let Some(pn) = n.phases.iter().find(|p| name_of(p) == name_of(pb)) {
            phases.push(phase(runs, pb, pn, threshold)?);
        }
    }
    let only = |a: &CellReport, other: &CellReport| -> Vec<String> {
        a.phases
            .iter()
            .map(name_of)
            .filter(|name| !other.phases.iter().any(|o| name_of(o) == *name))
            .map(str::to_string)
            .collect()
    };
    Ok(CellComparison {
        key: b.key.clone(),
        phases,
        only_in_base: only(b, n),
        only_in_new: only(n, b),
    })
}

/// One headline metric's figures in one run: the whole-run value and the per-interval
/// samples (`None` without a series).
type Figure = (Option<f64>, Option<Vec<f64>>);

/// What a metric is, before its figures.
struct Spec {
    metric: String,
    label: String,
    unit: Unit,
    better: Better,
}

fn phase(
    runs: &[Run; 2],
    pb: &PhaseReport,
    pn: &PhaseReport,
    threshold: Option<f64>,
) -> Result<PhaseComparison, String> {
    let mut out = PhaseComparison {
        name: name_of(pb).to_string(),
        base_kind: kind_of(pb).to_string(),
        new_kind: kind_of(pn).to_string(),
        base_status: pb.status(),
        new_status: pn.status(),
        note: None,
        warnings: Vec::new(),
        metrics: Vec::new(),
        shown: Vec::new(),
    };
    let figures: Vec<(Spec, [Figure; 2])> = match (pb, pn) {
        (PhaseReport::NotRun { reason, .. }, _) => {
            out.note = Some(format!("not run in the base run: {reason}"));
            return Ok(out);
        }
        (_, PhaseReport::NotRun { reason, .. }) => {
            out.note = Some(format!("not run in the new run: {reason}"));
            return Ok(out);
        }
        (PhaseReport::Ingest(b), PhaseReport::Ingest(n)) => {
            if b.rate_counts != n.rate_counts {
                out.warnings.push(format!(
                    "rows/s counts {} rows in the base run and {} rows in the new one",
                    b.rate_counts.as_str(),
                    n.rate_counts.as_str()
                ));
            }
            let sb = ingest_series(&runs[0], b, &mut out.warnings)?;
            let sn = ingest_series(&runs[1], n, &mut out.warnings)?;
            let mut figures = ingest_figures(b, n, sb.as_ref(), sn.as_ref());
            figures.extend(secondary::ingest(
                b,
                n,
                [sb.as_ref(), sn.as_ref()].map(|s| s.map(|s| (&s[0][..], &s[4][..]))),
                &mut out.warnings,
            ));
            figures
        }
        (PhaseReport::Queries(b), PhaseReport::Queries(n)) => {
            out.shown.push(error_rate(b.error_rate, n.error_rate));
            let sb = run_series(&runs[0], b.series.as_ref(), &mut out.warnings)?;
            let sn = run_series(&runs[1], n.series.as_ref(), &mut out.warnings)?;
            let whole = [
                (b.output.qps, &b.latency, sb),
                (n.output.qps, &n.latency, sn),
            ];
            let mut figures = run_figures("qps", "queries/s", whole);
            figures.extend(secondary::queries(b, n));
            figures
        }
        (PhaseReport::Requests(b), PhaseReport::Requests(n)) => {
            out.shown.push(error_rate(b.error_rate, n.error_rate));
            let sb = run_series(&runs[0], b.series.as_ref(), &mut out.warnings)?;
            let sn = run_series(&runs[1], n.series.as_ref(), &mut out.warnings)?;
            let whole = [
                (b.output.rps, &b.latency, sb),
                (n.output.rps, &n.latency, sn),
            ];
            run_figures("rps", "requests/s", whole)
        }
        _ => {
            out.note = Some(format!(
                "{} in the base run, {} in the new one: not compared",
                out.base_kind, out.new_kind
            ));
            return Ok(out);
        }
    };
    out.shown.extend(cpu::shown(pb, pn));
    out.metrics = figures
        .into_iter()
        .map(|(spec, [fb, fn_])| metric(spec, fb, fn_, threshold))
        .collect();
    Ok(out)
}

fn error_rate(b: f64, n: f64) -> ShownValue {
    ShownValue {
        metric: "error_rate".into(),
        label: "error rate".into(),
        base: Some(b),
        new: Some(n),
        per: None,
    }
}

fn metric(spec: Spec, b: Figure, n: Figure, threshold: Option<f64>) -> MetricComparison {
    let base_samples = b.1.as_deref().and_then(stats::samples);
    let new_samples = n.1.as_deref().and_then(stats::samples);
    let test = match (&base_samples, &new_samples) {
        (Some(sb), Some(sn)) => stats::welch(sb, sn, ALPHA),
        _ => None,
    };
    let verdict = match (&test, &base_samples, &new_samples) {
        (Some(t), _, _) => stats::verdict(t, spec.better, ALPHA),
        (None, Some(_), Some(_)) => Verdict::TooFewSamples,
        _ => Verdict::NoSamples,
    };
    let exceeds_threshold = match (threshold, &test) {
        (Some(th), Some(t)) => verdict == Verdict::Worse && stats::worse_by(t, spec.better) > th,
        _ => false,
    };
    let change = match (b.0, n.0) {
        (Some(x), Some(y)) if x != 0.0 => Some(y / x - 1.0),
        _ => None,
    };
    // What the test could not judge, the whole-run figures still show: a change beyond the
    // threshold there is not a pass, whatever the samples could not say.
    let untested = matches!(verdict, Verdict::TooFewSamples | Verdict::NoSamples);
    let inconclusive = match (threshold, change) {
        (Some(th), Some(c)) => untested && stats::worse_change(c, spec.better) > th,
        _ => false,
    };
    MetricComparison {
        metric: spec.metric.to_string(),
        label: spec.label,
        unit: spec.unit,
        better: spec.better,
        base: b.0,
        new: n.0,
        change,
        base_samples,
        new_samples,
        test,
        verdict,
        exceeds_threshold,
        inconclusive,
    }
}

/// Whether an interval was measured long enough for its count over its span to be a rate:
/// the partial intervals at the edges and those mostly inside a warm-up are left out.
fn full(span_ms: u64, interval_ms: u64) -> bool {
    span_ms > 0 && span_ms * 2 >= interval_ms
}

/// The phase's series read back, `None` without one. A report.json named without its run
/// directory has no series beside it: the phase is compared without samples, and a warning
/// says why.
fn read_series(
    run: &Run,
    r: &SeriesRef,
    ingest: bool,
    warnings: &mut Vec<String>,
) -> Result<Option<Series>, String> {
    let path = run.dir.join(&r.counts);
    if !path.exists() {
        warnings.push(format!(
            "{} is missing: compared without its per-interval samples",
            path.display()
        ));
        return Ok(None);
    }
    series::read(&run.dir, r, ingest).map(Some)
}

/// Per-interval samples of an ingest phase: rows/s (what `rows_per_s` counts), sent rows/s,
/// batch p50 and p99, and socket bytes per row (of the intervals that sent rows, whatever
/// their span: a quotient of two counts is no rate).
fn ingest_series(
    run: &Run,
    r: &IngestReport,
    warnings: &mut Vec<String>,
) -> Result<Option<[Vec<f64>; 5]>, String> {
    let Some(sref) = &r.series else {
        return Ok(None);
    };
    let Some(Series::Ingest(rows)) = read_series(run, sref, true, warnings)? else {
        return Ok(None);
    };
    let mut out: [Vec<f64>; 5] = Default::default();
    for i in &rows {
        if full(i.span_ms, sref.interval_ms) {
            let span_s = i.span_ms as f64 / 1000.0;
            let counted = match r.rate_counts {
                RateCounts::Acked => i.rows_acked.unwrap_or(0),
                RateCounts::Sent => i.rows_sent,
            };
            out[0].push(counted as f64 / span_s);
            out[1].push(i.rows_sent as f64 / span_s);
        }
        if let (Some(p50), Some(p99)) = (i.batch_p50_us, i.batch_p99_us) {
            out[2].push(p50 as f64);
            out[3].push(p99 as f64);
        }
        if i.rows_sent > 0 {
            out[4].push(i.socket_bytes as f64 / i.rows_sent as f64);
        }
    }
    Ok(Some(out))
}

fn ingest_figures(
    b: &IngestReport,
    n: &IngestReport,
    sb: Option<&[Vec<f64>; 5]>,
    sn: Option<&[Vec<f64>; 5]>,
) -> Vec<(Spec, [Figure; 2])> {
    let pick = |s: Option<&[Vec<f64>; 5]>, k: usize| s.map(|s| s[k].clone());
    let pct = |l: &Latency, p: u64| (l.count > 0).then_some(p as f64);
    let rate = |metric: &str, label: String| Spec {
        metric: metric.into(),
        label,
        unit: Unit::PerSecond,
        better: Better::Higher,
    };
    let lat = |metric: &str, label: &str| Spec {
        metric: metric.into(),
        label: label.to_string(),
        unit: Unit::Micros,
        better: Better::Lower,
    };
    vec![
        (
            rate("rows_per_s", format!("rows/s ({})", b.rate_counts.as_str())),
            [(b.rows_per_s, pick(sb, 0)), (n.rows_per_s, pick(sn, 0))],
        ),
        (
            rate("send_rows_per_s", "sent rows/s".into()),
            [
                (b.send_rows_per_s, pick(sb, 1)),
                (n.send_rows_per_s, pick(sn, 1)),
            ],
        ),
        (
            lat("batch_p50_us", "batch p50"),
            [
                (pct(&b.batch_latency, b.batch_latency.p50_us), pick(sb, 2)),
                (pct(&n.batch_latency, n.batch_latency.p50_us), pick(sn, 2)),
            ],
        ),
        (
            lat("batch_p99_us", "batch p99"),
            [
                (pct(&b.batch_latency, b.batch_latency.p99_us), pick(sb, 3)),
                (pct(&n.batch_latency, n.batch_latency.p99_us), pick(sn, 3)),
            ],
        ),
    ]
}

/// Per-interval samples of a query or request run: successes per second, p50 and p99.
fn run_series(
    run: &Run,
    sref: Option<&SeriesRef>,
    warnings: &mut Vec<String>,
) -> Result<Option<[Vec<f64>; 3]>, String> {
    let Some(sref) = sref else {
        return Ok(None);
    };
    let Some(Series::Run(rows)) = read_series(run, sref, false, warnings)? else {
        return Ok(None);
    };
    let mut out: [Vec<f64>; 3] = Default::default();
    for i in &rows {
        if full(i.span_ms, sref.interval_ms) {
            out[0].push(i.ok as f64 / (i.span_ms as f64 / 1000.0));
        }
        if let (Some(p50), Some(p99)) = (i.p50_us, i.p99_us) {
            out[1].push(p50 as f64);
            out[2].push(p99 as f64);
        }
    }
    Ok(Some(out))
}

type RunWhole<'a> = (Option<f64>, &'a Latency, Option<[Vec<f64>; 3]>);

fn run_figures(metric: &'static str, label: &str, runs: [RunWhole; 2]) -> Vec<(Spec, [Figure; 2])> {
    let [(rb, lb, sb), (rn, ln, sn)] = runs;
    let pick = |s: &Option<[Vec<f64>; 3]>, k: usize| s.as_ref().map(|s| s[k].clone());
    let pct = |l: &Latency, p: u64| (l.count > 0).then_some(p as f64);
    let lat = |metric: &str, label: &str| Spec {
        metric: metric.into(),
        label: label.to_string(),
        unit: Unit::Micros,
        better: Better::Lower,
    };
    vec![
        (
            Spec {
                metric: metric.into(),
                label: label.to_string(),
                unit: Unit::PerSecond,
                better: Better::Higher,
            },
            [(rb, pick(&sb, 0)), (rn, pick(&sn, 0))],
        ),
        (
            lat("p50_us", "p50"),
            [
                (pct(lb, lb.p50_us), pick(&sb, 1)),
                (pct(ln, ln.p50_us), pick(&sn, 1)),
            ],
        ),
        (
            lat("p99_us", "p99"),
            [
                (pct(lb, lb.p99_us), pick(&sb, 2)),
                (pct(ln, ln.p99_us), pick(&sn, 2)),
            ],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = "\
start_ms,span_ms,ok,failed,cut_off,unsent,p50_us,p90_us,p99_us,p999_us,max_us,service_p50_us,service_p99_us
1000,4,1,0,0,0,900,900,900,900,900,,
1100,100,20,1,0,0,1000,1100,1200,1200,1200,,
1200,50,10,0,0,0,2000,2100,2200,2200,2200,,
1300,49,30,0,0,0,3000,3100,3200,3200,3200,,
1400,0,0,0,0,0,,,,,,,
1500,100,0,2,0,0,,,,,,,
";

    #[test]
    fn interval_rates_skip_short_spans_and_percentiles_skip_intervals_without_answers() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("series")).unwrap();
        std::fs::write(dir.path().join("series/1-q.csv"), CSV).unwrap();
        let sref = SeriesRef {
            interval_ms: 100,
            counts: "series/1-q.csv".into(),
            hlog: "series/1-q.hlog".into(),
            intervals: 6,
            measured: Vec::new(),
        };
        let run = Run {
            dir: dir.path().to_path_buf(),
        };
        let mut warnings = Vec::new();
        let [rate, p50, p99] = run_series(&run, Some(&sref), &mut warnings)
            .unwrap()
            .unwrap();
        // 20 in 100 ms, 10 in 50 ms (half the interval is enough), 0 in a measured 100 ms;
        // the 4 ms edge, the 49 ms span and the warm-up's 0 ms are not rates.
        assert_eq!(rate, vec![200.0, 200.0, 0.0]);
        // Every interval with answers has percentiles, however short its span.
        assert_eq!(p50, vec![900.0, 1000.0, 2000.0, 3000.0]);
        assert_eq!(p99, vec![900.0, 1200.0, 2200.0, 3200.0]);
        assert!(warnings.is_empty());

        let gone = Run {
            dir: dir.path().join("elsewhere"),
        };
        assert!(run_series(&gone, Some(&sref), &mut warnings)
            .unwrap()
            .is_none());
        assert!(warnings[0].contains("is missing"), "{warnings:?}");
        assert!(run_series(&run, None, &mut warnings).unwrap().is_none());

        // A series that is there but is not one is an error, not a silent "no samples".
        std::fs::write(dir.path().join("series/1-q.csv"), "start_ms,span_ms\nx,y\n").unwrap();
        let e = run_series(&run, Some(&sref), &mut warnings).unwrap_err();
        assert!(e.contains("1-q.csv row 2"), "{e}");
    }
}
