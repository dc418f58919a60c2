//! The merge's rules on their own: histograms add exactly, spans unite round by round, error
//! maps add, thresholds read from the plan and judged again, verdicts said per shard.
//! tests/merge.rs merges whole shard directories, and runs the command.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use super::spans::{self, Part};
use super::verdict::{self, Said};
use super::*;
use crate::report::series::{Measured, SeriesRef};
use crate::report::{Latency, Status, ThresholdReport};

fn histogram() -> Histogram<u64> {
    crate::query::stats::histogram()
}

/// Latency summaries of three shards' samples, and of all the samples in one histogram.
fn three_shards() -> (Vec<Latency>, Latency) {
    let mut all = histogram();
    let shards: Vec<Latency> = (0..3u64)
        .map(|s| {
            let mut h = histogram();
            // Different shapes: a fast shard, a slow one, one with a long tail.
            for i in 0..(500 + 300 * s) {
                let v = match s {
                    0 => 200 + i % 50,
                    1 => 9_000 + (i * 37) % 4_000,
                    _ => 150 + (i * i) % 120_000,
                };
                h.record(v).unwrap();
                all.record(v).unwrap();
            }
            Latency::of(&h)
        })
        .collect();
    (shards, Latency::of(&all))
}

#[test]
fn merged_histograms_are_the_histogram_of_all_samples() {
    let (shards, all) = three_shards();
    let merged = histo::merge_all(&shards).unwrap();
    assert_eq!(merged.count, 2_400);
    assert_eq!(
        (merged.min_us, merged.p50_us, merged.p90_us, merged.p99_us),
        (all.min_us, all.p50_us, all.p90_us, all.p99_us)
    );
    assert_eq!(
        (merged.p95_us, merged.p999_us, merged.max_us),
        (all.p95_us, all.p999_us, all.max_us)
    );
    assert_eq!(merged.mean_us, all.mean_us);
    assert_eq!(merged.stddev_us, all.stddev_us);
    // Bucket for bucket: the serialized histograms are the same bytes.
    assert_eq!(merged.histogram, all.histogram);
    // No shard's p99 is the merged one, and neither is their mean.
    let mean_p99 = shards.iter().map(|l| l.p99_us).sum::<u64>() / 3;
    assert!(shards.iter().all(|l| l.p99_us != merged.p99_us));
    assert_ne!(mean_p99, merged.p99_us);
    // A shard without samples adds nothing; none at all is none.
    let with_empty = histo::merge([Some(&shards[0]), None, Some(&Latency::default())]).unwrap();
    assert_eq!(with_empty.unwrap().histogram, shards[0].histogram);
    assert!(histo::merge([None, None]).unwrap().is_none());
    // A histogram that does not hold what its summary counts is refused, not merged.
    let mut wrong = shards[1].clone();
    wrong.count += 1;
    let e = histo::merge_all([&shards[0], &wrong]).unwrap_err();
    assert!(
        e.contains("holds 800 samples where its summary counts 801"),
        "{e}"
    );
}

fn sref(measured: &[(f64, f64)]) -> SeriesRef {
    SeriesRef {
        interval_ms: 1000,
        counts: String::new(),
        hlog: String::new(),
        intervals: 0,
        measured: measured
            .iter()
            .map(|&(from_unix_ms, to_unix_ms)| Measured {
                from_unix_ms,
                to_unix_ms,
            })
            .collect(),
    }
}

#[test]
fn rates_are_over_the_union_of_the_shards_spans_round_by_round() {
    // Two rounds with a warm-up between them; shard 2 measured nothing in the second.
    let a = sref(&[(1_000.0, 3_000.0), (5_000.0, 6_000.0)]);
    let b = sref(&[(1_500.0, 3_500.0), (4_800.0, 6_100.0)]);
    let c = sref(&[(1_200.0, 2_800.0), (5_000.0, 5_000.0)]);
    let parts = [
        Part {
            index: 0,
            series: Some(&a),
            rounds: vec![2.0, 1.0],
        },
        Part {
            index: 1,
            series: Some(&b),
            rounds: vec![2.0, 1.3],
        },
        Part {
            index: 2,
            series: Some(&c),
            rounds: vec![1.6, 0.0],
        },
    ];
    let u = spans::union(&parts);
    assert_eq!(u.approximate, None);
    assert_eq!(u.rounds, vec![2.5, 1.3]);
    assert!((u.total_s() - 3.8).abs() < 1e-12);
    let spans: Vec<(f64, f64)> = u
        .spans
        .iter()
        .map(|m| (m.from_unix_ms, m.to_unix_ms))
        .collect();
    assert_eq!(spans, [(1_000.0, 3_500.0), (4_800.0, 6_100.0)]);
    // Not the sum of the shards' spans, nor the hull over the warm-up.
    assert!(u.total_s() < 2.0 + 2.0 + 1.6);
    assert!(u.total_s() < 5.1);
    // 1,000 queries over it: what the merged qps is.
    assert_eq!(crate::report::rate(1_000, u.total_s()), Some(1_000.0 / 3.8));

    // Closed-loop shards drift apart by the second round: each round is its shards' span,
    // and the phase is the time any shard measured, never an instant twice.
    let a = sref(&[(0.0, 10_000.0), (12_000.0, 22_000.0)]);
    let b = sref(&[(0.0, 15_000.0), (17_000.0, 27_000.0)]);
    let drift = [
        Part {
            index: 0,
            series: Some(&a),
            rounds: vec![10.0, 10.0],
        },
        Part {
            index: 1,
            series: Some(&b),
            rounds: vec![15.0, 10.0],
        },
    ];
    let u = spans::union(&drift);
    assert_eq!(u.rounds, vec![15.0, 15.0]);
    assert_eq!(u.total_s(), 27.0);

    // A shard that does not place its span: the longest shard's time, said.
    let parts = [
        Part {
            index: 0,
            series: Some(&a),
            rounds: vec![2.0, 1.0],
        },
        Part {
            index: 3,
            series: None,
            rounds: vec![2.2, 0.9],
        },
    ];
    let u = spans::union(&parts);
    assert_eq!(u.rounds, vec![2.2, 1.0]);
    let why = u.approximate.unwrap();
    assert!(why.contains("shard 3 left no measured span"), "{why}");
}

#[test]
fn error_classes_add_and_keep_the_lowest_shards_first_message() {
    let e = |list: &[(&str, u64, &str)]| -> BTreeMap<String, ErrorCount> {
        list.iter()
            .map(|(c, n, f)| {
                (
                    c.to_string(),
                    ErrorCount {
                        count: *n,
                        first: f.to_string(),
                    },
                )
            })
            .collect()
    };
    let shard0 = e(&[("timeout", 1, "no answer in 5s")]);
    let shard1 = e(&[("sql", 2, "relation x does not exist (42P01)")]);
    let shard2 = e(&[("sql", 3, "later"), ("timeout", 4, "later")]);
    let merged = errors([&shard0, &shard1, &shard2].into_iter());
    assert_eq!(merged.len(), 2);
    assert_eq!(merged["sql"].count, 5);
    assert_eq!(merged["sql"].first, "relation x does not exist (42P01)");
    assert_eq!(merged["timeout"].count, 5);
    assert_eq!(merged["timeout"].first, "no answer in 5s");
}

fn threshold(expect: &str, metric: &str, ok: bool) -> ThresholdReport {
    ThresholdReport {
        metric: metric.into(),
        expect: expect.into(),
        actual: String::new(),
        ok,
    }
}

#[test]
fn thresholds_come_from_the_plan_and_are_judged_on_the_merged_figures() {
    let plan: serde_json::Value = serde_json::json!({"cells": [{"index": 1, "phases": [
        {"phase": "queries", "name": "q", "expects": [
            {"metric": "p99", "op": "<", "value": {"duration": "20ms", "ns": 20_000_000}},
            {"metric": "qps", "op": ">", "value": {"rate": "150/s", "per_second": 150.0}},
            {"metric": "error_rate", "op": "<", "value": {"percent": 1.0}},
            {"metric": "errors", "op": "<=", "value": 3},
        ], "queries": [{"name": "a", "expects": [
            {"metric": "max", "op": "<", "value": {"duration": "1s", "ns": 1_000_000_000}}
        ]}]},
    ]}]});
    let plan = thresholds::PlanThresholds::from_value(plan);
    let planned = plan.of(1, "q").unwrap();
    assert_eq!(planned.run.len(), 4);
    assert_eq!(planned.queries["a"].len(), 1);
    let reported = [
        threshold("p99 < 20ms", "p99", true),
        threshold("qps > 150/s", "qps", false),
        threshold("error_rate < 1%", "error_rate", true),
        threshold("errors <= 3", "errors", true),
    ];
    thresholds::matching(&planned.run, &reported).unwrap();
    let e = thresholds::matching(&planned.run, &reported[..2]).unwrap_err();
    assert!(e.contains("are not the report's"), "{e}");
    assert!(plan.of(2, "q").is_err());

    // Each shard: 100 queries over the same second, one at 30 ms; merged: 200 over 1 s.
    let mut h = histogram();
    for i in 0..199 {
        h.record(1_000 + i).unwrap();
    }
    h.record(30_000).unwrap();
    let latency = Latency::of(&h);
    let errors = BTreeMap::from([(
        "sql".to_string(),
        ErrorCount {
            count: 1,
            first: "x".into(),
        },
    )]);
    let f = thresholds::Figures {
        ok: 200,
        rows: 0,
        sum_us: 0,
        latency: &latency,
        errors: &errors,
        elapsed_s: 1.0,
    };
    let judged = thresholds::judge_all(&planned.run, &f, None).unwrap();
    let verdicts: Vec<(&str, bool)> = judged.iter().map(|t| (t.expect.as_str(), t.ok)).collect();
    assert_eq!(
        verdicts,
        [
            ("p99 < 20ms", true),
            ("qps > 150/s", true),
            ("error_rate < 1%", true),
            ("errors <= 3", true)
        ]
    );
    assert_eq!(judged[1].actual, "200.0/s");
}

#[test]
fn failures_are_said_per_shard_and_thresholds_by_the_merged_verdict() {
    let f0 = vec![
        "threshold not met: qps > 150/s (measured 100.0/s)".to_string(),
        "shards: shard 2 died".to_string(),
    ];
    let f1 = vec![
        "threshold not met: qps > 150/s (measured 100.0/s)".to_string(),
        "shards: shard 2 died".to_string(),
        "3 of 100 queries failed (no `expect error_rate` allows errors)".to_string(),
    ];
    let cut = "4 queries were still in flight".to_string();
    let w = [
        cut.clone(),
        "only shard 1".to_string(),
        "shard 1 of 2: names itself".to_string(),
    ];
    let said = [
        Said {
            index: 0,
            status: Status::Failed,
            failures: &f0,
            warnings: &w[..1],
        },
        Said {
            index: 1,
            status: Status::Failed,
            failures: &f1,
            warnings: &w,
        },
    ];
    let qps = ThresholdReport {
        actual: "200.0/s".into(),
        ..threshold("qps > 150/s", "qps", true)
    };
    let p99 = ThresholdReport {
        actual: "31.0ms".into(),
        ..threshold("p99 < 20ms", "p99", false)
    };
    let (failures, warnings) = verdict::lines(&said, Some(&[&qps, &p99]), false, vec![], vec![]);
    assert_eq!(
        failures,
        [
            "every shard: shards: shard 2 died",
            "shard 1: 3 of 100 queries failed (no `expect error_rate` allows errors)",
            "threshold not met: p99 < 20ms (measured 31.0ms, all shards)",
        ]
    );
    assert_eq!(
        warnings,
        [
            cut.as_str(),
            "shard 1: only shard 1",
            "shard 1 of 2: names itself"
        ]
    );
    assert_eq!(verdict::status(&said, &failures), Status::Failed);
    // The shards' threshold lines alone, met on the merged figures: the phase passes.
    let only = [f0[0].clone()];
    let said = [Said {
        index: 0,
        status: Status::Failed,
        failures: &only,
        warnings: &[],
    }];
    let (failures, _) = verdict::lines(&said, Some(&[&qps]), false, vec![], vec![]);
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(verdict::status(&said, &failures), Status::Ok);
    // Not judged again: the shards' lines stand.
    let (failures, _) = verdict::lines(&said, None, false, vec![], vec![]);
    assert_eq!(failures.len(), 1);
}

#[test]
fn shard_lists_read_as_sentences() {
    assert_eq!(shard_list(&[2]), "shard 2");
    assert_eq!(shard_list(&[1, 3, 4]), "shards 1, 3 and 4");
}
