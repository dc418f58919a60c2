//! One phase's charts over time (throughput, latency percentiles, errors and unsent) from its
//! series, and latency distributions from the histograms kept whole in report.json.

use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use super::svg::{self, Line, Mark, Unit};
use crate::report::series::{IngestInterval, RunInterval, Series, SeriesRef};
use crate::report::Latency;

/// A series of fewer intervals is a table, not charts: two points show no trend.
pub const FEW: usize = 3;

/// Points per line over time at most: 24 cells of 600 intervals stay well under 2 MB, and a
/// chart 560 pixels wide shows no more.
pub const MAX_POINTS: usize = 150;

/// The histogram report.json keeps of `l`, decoded; `None` when empty or unreadable (an older
/// report's figures still show as bars).
pub fn histogram(l: &Latency) -> Option<Histogram<u64>> {
    if l.count == 0 || l.histogram.is_empty() {
        return None;
    }
    let bytes =
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, &l.histogram).ok()?;
    Deserializer::new().deserialize(&mut &bytes[..]).ok()
}

/// The distribution's points: `(k, µs)` with k = log10(1 / (1 - q)), in steps of 0.05 up to
/// where the count runs out (99.9% of 1,000 values is the last one that means anything), then
/// the maximum.
pub fn distribution_points(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    let n = h.len();
    if n == 0 {
        return Vec::new();
    }
    let k_end = (n as f64).log10().clamp(1.0, 7.0);
    let mut out = Vec::new();
    let mut k = 0.0;
    while k < k_end {
        let q = 1.0 - 10f64.powf(-k);
        out.push((k, h.value_at_quantile(q) as f64));
        k += 0.05;
    }
    out.push((k_end, h.max() as f64));
    // A plateau draws the same with its two ends only.
    let mut kept: Vec<(f64, f64)> = Vec::with_capacity(out.len());
    for (i, p) in out.iter().enumerate() {
        let same_before = i > 0 && out[i - 1].1 == p.1;
        let same_after = out.get(i + 1).is_some_and(|n| n.1 == p.1);
        if !(same_before && same_after) {
            kept.push(*p);
        }
    }
    kept
}

/// Consecutive intervals merged so that at most `MAX_POINTS` remain.
pub(super) fn buckets(n: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    let k = n.div_ceil(MAX_POINTS).max(1);
    (0..n.div_ceil(k)).map(move |b| b * k..((b + 1) * k).min(n))
}

/// A rate per bucket: the counts over the measured span, so that merged intervals give the
/// bucket's true rate; NaN (a gap) where less than a quarter of the bucket was measured: the
/// sliver of a phase's first or last interval would otherwise show one answer in 2 ms as a
/// spike of 500/s.
fn rate_line<T>(
    interval_ms: u64,
    name: &str,
    rows: &[T],
    t0: u64,
    at: impl Fn(&T) -> (u64, u64, u64),
) -> Line {
    let points = buckets(rows.len())
        .map(|r| {
            let (start, _, _) = at(&rows[r.start]);
            let r_len = r.len() as u64;
            let (span, count) = rows[r]
                .iter()
                .map(&at)
                .fold((0u64, 0u64), |(s, c), (_, sp, n)| (s + sp, c + n));
            let x = start.saturating_sub(t0) as f64 / 1000.0;
            let nominal = interval_ms * r_len;
            let y = if span > 0 && span * 4 >= nominal {
                count as f64 / (span as f64 / 1000.0)
            } else {
                f64::NAN
            };
            (x, y)
        })
        .collect();
    Line {
        name: name.into(),
        points,
    }
}

/// A percentile per bucket: the largest of the merged intervals', which keeps a spike a
/// reader must see. `None` when no interval has the figure.
pub(super) fn pct_line<T>(
    name: &str,
    rows: &[T],
    t0: u64,
    start: impl Fn(&T) -> u64,
    v: impl Fn(&T) -> Option<u64>,
) -> Option<Line> {
    if !rows.iter().any(|r| v(r).is_some()) {
        return None;
    }
    let points = buckets(rows.len())
        .map(|r| {
            let x = start(&rows[r.start]).saturating_sub(t0) as f64 / 1000.0;
            let y = rows[r].iter().filter_map(&v).max();
            (x, y.map_or(f64::NAN, |y| y as f64))
        })
        .collect();
    Some(Line {
        name: name.into(),
        points,
    })
}

/// The note under an over-time chart: what one point is.
pub(super) fn bucket_note(r: &SeriesRef, n: usize) -> String {
    let k = n.div_ceil(MAX_POINTS).max(1);
    let secs = svg::num(r.interval_ms as f64 * k as f64 / 1000.0);
    if k == 1 {
        format!("one point per {secs}s interval")
    } else {
        format!("one point per {secs}s ({k} intervals merged; percentiles: their largest)")
    }
}

/// The over-time charts of one phase, from its series `s` (read from `r`). `unit` names what
/// a run's throughput counts (`queries/s`, `requests/s`).
pub fn over_time(r: &SeriesRef, s: &Series, unit: &'static str) -> Vec<String> {
    if s.is_empty() {
        return Vec::new();
    }
    let note = bucket_note(r, s.len());
    match s {
        Series::Ingest(rows) => ingest_charts(rows, r.interval_ms, &note),
        Series::Run(rows) => run_charts(rows, r.interval_ms, &note, unit),
    }
}

/// Where a staged run's stages begin on its charts: at the first interval of each stage after
/// the first (an interval holds the stage its start falls in, so a boundary shows to within
/// an interval).
fn stage_marks(rows: &[RunInterval], t0: u64) -> Vec<Mark> {
    rows.windows(2)
        .filter_map(|w| match (w[0].stage, w[1].stage) {
            (Some(a), Some(b)) if a != b => Some(Mark {
                x: w[1].start_ms.saturating_sub(t0) as f64 / 1000.0,
                label: format!("stage {b}"),
            }),
            _ => None,
        })
        .collect()
}

fn ingest_charts(rows: &[IngestInterval], iv: u64, note: &str) -> Vec<String> {
    let t0 = rows.first().map_or(0, |r| r.start_ms);
    let mut out = Vec::new();
    let mut thr = vec![rate_line(iv, "rows sent/s", rows, t0, |r| {
        (r.start_ms, r.span_ms, r.rows_sent)
    })];
    if rows.iter().any(|r| r.rows_acked.is_some()) {
        thr.push(rate_line(iv, "rows acked/s", rows, t0, |r| {
            (r.start_ms, r.span_ms, r.rows_acked.unwrap_or(0))
        }));
    }
    out.extend(svg::over_time(
        "Throughput over time",
        Unit::Per("rows/s"),
        &thr,
        note,
    ));
    let lat: Vec<Line> = [
        (
            "p50",
            (|r: &IngestInterval| r.batch_p50_us) as fn(&IngestInterval) -> Option<u64>,
        ),
        ("p99", |r| r.batch_p99_us),
        ("max", |r| r.batch_max_us),
    ]
    .into_iter()
    .filter_map(|(name, v)| pct_line(name, rows, t0, |r| r.start_ms, v))
    .collect();
    out.extend(svg::over_time(
        "Batch latency percentiles over time",
        Unit::Micros,
        &lat,
        note,
    ));
    let errors = [rate_line(iv, "failed batches/s", rows, t0, |r| {
        (r.start_ms, r.span_ms, r.errors)
    })];
    out.extend(svg::over_time(
        "Errors over time",
        Unit::Per("per second"),
        &errors,
        note,
    ));
    out
}

fn run_charts(rows: &[RunInterval], iv: u64, note: &str, unit: &'static str) -> Vec<String> {
    let t0 = rows.first().map_or(0, |r| r.start_ms);
    let marks = stage_marks(rows, t0);
    let mut out = Vec::new();
    let thr = [
        rate_line(iv, "ok/s", rows, t0, |r| (r.start_ms, r.span_ms, r.ok)),
        rate_line(iv, "failed/s", rows, t0, |r| {
            (r.start_ms, r.span_ms, r.failed)
        }),
    ];
    out.extend(svg::over_time_marked(
        "Throughput over time",
        Unit::Per(unit),
        &thr,
        note,
        &marks,
    ));
    type Get = fn(&RunInterval) -> Option<u64>;
    let lat: Vec<Line> = [
        ("p50", (|r: &RunInterval| r.p50_us) as Get),
        ("p90", |r| r.p90_us),
        ("p99", |r| r.p99_us),
        ("p99.9", |r| r.p999_us),
        ("max", |r| r.max_us),
        ("service p50", |r| r.service_p50_us),
        ("service p99", |r| r.service_p99_us),
    ]
    .into_iter()
    .filter_map(|(name, v)| pct_line(name, rows, t0, |r| r.start_ms, v))
    .collect();
    out.extend(svg::over_time_marked(
        "Latency percentiles over time",
        Unit::Micros,
        &lat,
        note,
        &marks,
    ));
    let errors = [
        rate_line(iv, "failed/s", rows, t0, |r| {
            (r.start_ms, r.span_ms, r.failed)
        }),
        rate_line(iv, "unsent/s", rows, t0, |r| {
            (r.start_ms, r.span_ms, r.unsent)
        }),
        rate_line(iv, "cut off/s", rows, t0, |r| {
            (r.start_ms, r.span_ms, r.cut_off)
        }),
    ];
    out.extend(svg::over_time_marked(
        "Errors and unsent over time",
        Unit::Per("per second"),
        &errors,
        note,
        &marks,
    ));
    out
}

/// A distribution chart of the named histograms; `None` when none has a value.
pub fn distribution(title: &str, latencies: &[(String, &Latency)]) -> Option<String> {
    let lines: Vec<Line> = latencies
        .iter()
        .filter_map(|(name, l)| {
            let h = histogram(l)?;
            Some(Line {
                name: name.clone(),
                points: distribution_points(&h),
            })
        })
        .collect();
    if lines.is_empty() {
        return None;
    }
    svg::distribution(title, &lines, "x: percentile, log scale")
}
