//! The figures compared beside a phase's headline ones, where both runs have them: an ingest's
//! metrics per second (TSBS's headline), its link ceiling (computed from the socket bytes per
//! row) and its QWP commits; a query run's result streaming per query type (time to first
//! result p50 and p99, streamed rows per second). They are tested like the headline figures
//! when the series give per-interval samples (metrics/s and the link ceiling, from each
//! interval's rows and socket bytes); streaming and commits have no per-interval samples, so
//! their verdict is "no per-interval samples" and, with `--threshold`, a change worse by more
//! than it makes the comparison inconclusive, as for any untested figure.

use super::{Better, Figure, Spec, Unit};
use crate::report::{IngestReport, QueryReport};

/// Whether the comparison page draws `metric` in its per-phase charts: the figures here have
/// units of their own (metrics/s, rows/s of a link or of a stream in a query phase, counts)
/// that the headline charts' axes do not say, so they are in the table only.
pub fn charted(metric: &str) -> bool {
    !(matches!(metric, "metrics_per_s" | "link_rows_per_s" | "commits") || metric.contains('['))
}

/// An ingest's extra figures. `samples` is each run's per-interval pair (counted rows/s,
/// socket bytes per row), `None` without a series.
pub(super) fn ingest(
    b: &IngestReport,
    n: &IngestReport,
    samples: [Option<(&[f64], &[f64])>; 2],
    warnings: &mut Vec<String>,
) -> Vec<(Spec, [Figure; 2])> {
    let mut out = Vec::new();
    let [sb, sn] = samples;
    if let (Some(fb), Some(fn_)) = (b.fields_per_row, n.fields_per_row) {
        if fb != fn_ {
            warnings.push(format!(
                "metrics/s counts {fb} fields a row in the base run and {fn_} in the new one"
            ));
        }
        let per_interval = |s: Option<(&[f64], &[f64])>, fields: u64| {
            s.map(|(rates, _)| rates.iter().map(|r| r * fields as f64).collect())
        };
        out.push((
            spec(
                "metrics_per_s",
                "metrics/s".into(),
                Unit::PerSecond,
                Better::Higher,
            ),
            [
                (b.metrics_per_s, per_interval(sb, fb)),
                (n.metrics_per_s, per_interval(sn, fn_)),
            ],
        ));
    }
    if let (Some(lb), Some(ln)) = (&b.link, &n.link) {
        if lb.bits_per_s != ln.bits_per_s {
            warnings.push(format!(
                "the link is {} in the base run and {} in the new one: its ceilings differ by \
                 that too",
                lb.link, ln.link
            ));
        }
        let per_interval = |s: Option<(&[f64], &[f64])>, bits: f64| {
            // An interval that wrote no socket bytes (an in-process endpoint) has no ceiling.
            s.map(|(_, bpr)| {
                bpr.iter()
                    .filter(|b| **b > 0.0)
                    .map(|b| bits / 8.0 / b)
                    .collect()
            })
        };
        out.push((
            spec(
                "link_rows_per_s",
                format!("link {} rows/s (computed)", lb.link),
                Unit::PerSecond,
                Better::Higher,
            ),
            [
                (lb.rows_per_s, per_interval(sb, lb.bits_per_s)),
                (ln.rows_per_s, per_interval(sn, ln.bits_per_s)),
            ],
        ));
    }
    if let (Some(cb), Some(cn)) = (b.commits, n.commits) {
        // Each commit is work on the server; for the same rows, fewer is cheaper (the QWP
        // write-up's deferred commits).
        out.push((
            spec("commits", "commits".into(), Unit::Count, Better::Lower),
            [(Some(cb as f64), None), (Some(cn as f64), None)],
        ));
    }
    out
}

/// A query run's streaming figures, per query type both runs measured it for, in the base
/// run's order.
pub(super) fn queries(b: &QueryReport, n: &QueryReport) -> Vec<(Spec, [Figure; 2])> {
    let mut out = Vec::new();
    for tb in &b.detail.query_types {
        let Some(tn) = n.detail.query_types.iter().find(|t| t.name == tb.name) else {
            continue;
        };
        let (Some(sb), Some(sn)) = (&tb.streaming, &tn.streaming) else {
            continue;
        };
        let first = |s: &crate::report::streaming::StreamingReport, p: u64| {
            (s.first_result.count > 0).then_some(p as f64)
        };
        let name = &tb.name;
        out.push((
            spec_named(
                format!("first_result_p50_us[{name}]"),
                format!("{name}: first result p50"),
                Unit::Micros,
                Better::Lower,
            ),
            [
                (first(sb, sb.first_result.p50_us), None),
                (first(sn, sn.first_result.p50_us), None),
            ],
        ));
        out.push((
            spec_named(
                format!("first_result_p99_us[{name}]"),
                format!("{name}: first result p99"),
                Unit::Micros,
                Better::Lower,
            ),
            [
                (first(sb, sb.first_result.p99_us), None),
                (first(sn, sn.first_result.p99_us), None),
            ],
        ));
        out.push((
            spec_named(
                format!("stream_rows_per_s[{name}]"),
                format!("{name}: stream rows/s"),
                Unit::PerSecond,
                Better::Higher,
            ),
            [(sb.rows_per_s, None), (sn.rows_per_s, None)],
        ));
    }
    out
}

fn spec(metric: &str, label: String, unit: Unit, better: Better) -> Spec {
    spec_named(metric.to_string(), label, unit, better)
}

fn spec_named(metric: String, label: String, unit: Unit, better: Better) -> Spec {
    Spec {
        metric,
        label,
        unit,
        better,
    }
}
