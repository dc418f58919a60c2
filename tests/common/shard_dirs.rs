//! Synthetic run directories of a sharded run's shards, as `wlrun run --shard I/N --out DIR`
//! leaves them (report.json with its `shard` object, plan.json, sources/, series/), written
//! with the report types from known samples, so that what a merge must give is known exactly:
//! the histogram of every shard's samples, the sums, the union of the spans.
#![allow(dead_code)] // each test file uses its own subset

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use wlrun::report::series::{
    IngestInterval, Measured, RunInterval, SeriesRef, DIR, TAG_BATCH, TAG_LATENCY,
};
use wlrun::report::shard::{ShardPhase, ShardReport};
use wlrun::report::streaming::StreamingReport;
use wlrun::report::{
    Accounting, CellReport, ErrorCount, IngestReport, LabelReport, Latency, PhaseReport,
    QueryDetail, QueryOutput, QueryReport, QuerySetup, QueryTraffic, QueryTypeReport, RateCounts,
    RepeatReport, Report, RunReport, Status, ThresholdReport, REPORT_FORMAT,
};
use wlrun::shard::Figures;

/// The wall-clock start of every synthetic run: a whole second, so intervals line up.
pub const BASE_MS: u64 = 1_796_000_000_000;
pub const PLAN: &str = "sha256:5ca1ab1e0000000000000000000000000000000000000000000000000000feed";

/// One shard to write.
#[derive(Clone, Debug)]
pub struct Spec {
    pub index: u64,
    pub count: u64,
    pub plan: String,
    pub seed: u64,
    /// The shard's `shard.failure` (a barrier that failed).
    pub failure: Option<String>,
    /// Errors of its query run: (class, count, first message).
    pub errors: Vec<(&'static str, u64, String)>,
}

impl Spec {
    pub fn new(index: u64, count: u64) -> Spec {
        Spec {
            index,
            count,
            plan: PLAN.into(),
            seed: 42,
            failure: None,
            errors: Vec::new(),
        }
    }
}

/// The batch latencies shard `i` records, microseconds (three intervals' worth).
pub fn batch_samples(i: u64) -> Vec<u64> {
    (0..150).map(|k| 1_000 + 13 * k + 700 * i).collect()
}

/// The query latencies shard `i` records: 100 + 10 i queries, shard 2 and up slow.
pub fn query_samples(i: u64) -> Vec<u64> {
    (0..100 + 10 * i)
        .map(|k| 500 + (k * 97) % 3_000 + if i >= 2 { 25_000 } else { 0 })
        .collect()
}

/// The times to first result shard `i` records, microseconds: one per query with rows.
pub fn first_result_samples(i: u64) -> Vec<u64> {
    (0..50 + 5 * i)
        .map(|k| 200 + (k * 31) % 900 + 400 * i)
        .collect()
}

/// Shard `i`'s result streaming (its run's and its one query type's): shard 2 measured none.
/// The summed spans differ per shard, so the merged rates are no average of the shards'.
pub fn streaming(i: u64) -> Option<StreamingReport> {
    if i == 2 {
        return None;
    }
    let samples = first_result_samples(i);
    let streamed_queries = 40 + i;
    let (rows, bytes, span) = (4_000 * (i + 1), 120_000 * (i + 1), 0.5 + 0.25 * i as f64);
    let (egress_bytes, egress_rows) = (150_000 * (i + 1) + 1_000, 5_000 * (i + 1));
    Some(StreamingReport {
        first_result: Latency::of(&histogram(&samples)),
        streamed_queries,
        single_piece_queries: samples.len() as u64 - streamed_queries,
        streamed_rows: rows,
        streamed_bytes: bytes,
        streaming_s: span,
        rows_per_s: Some(rows as f64 / span),
        bytes_per_s: Some(bytes as f64 / span),
        egress_bytes,
        egress_rows,
        egress_bytes_per_row: Some(egress_bytes as f64 / egress_rows as f64),
    })
}

/// Rows shard `i` sends: 1,000 (i + 1).
pub fn rows(i: u64) -> u64 {
    1_000 * (i + 1)
}

/// The ingest's measured span of shard `i`, Unix ms: they start within a few ms.
pub fn ingest_span(i: u64) -> (f64, f64) {
    let b = BASE_MS as f64;
    (b + 100.0 + 3.0 * i as f64, b + 2_500.0 + 150.0 * i as f64)
}

pub fn query_span(i: u64) -> (f64, f64) {
    let b = BASE_MS as f64;
    (b + 3_000.0 + 2.0 * i as f64, b + 4_000.0 + 100.0 * i as f64)
}

pub fn histogram(samples: &[u64]) -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    for &s in samples {
        h.record(s).unwrap();
    }
    h
}

fn interval_histogram(samples: &[u64]) -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 1_000, 3).unwrap();
    h.auto(true);
    for &s in samples {
        h.record(s).unwrap();
    }
    h
}

/// The plan.json every shard of the run writes: a cell with `load` and `q`, whose
/// thresholds are `p99 < 20ms` (no single shard's p99 says whether the run met it) and
/// `qps > 150/s` (no shard sends that much alone).
pub fn plan_json(count: u64) -> serde_json::Value {
    let rows: u64 = (0..count).map(rows).sum();
    serde_json::json!({
        "format": 1,
        "workload": {"name": "sharded", "file": "w.wl", "seed": 42},
        "axes": [],
        "cells": [{"index": 1, "key": "", "axes": {}, "params": {}, "phases": [
            {"phase": "ingest", "name": "load", "rows_expected": rows, "duration": null},
            {"phase": "queries", "name": "q", "expects": [
                {"metric": "p99", "op": "<", "value": {"duration": "20ms", "ns": 20_000_000}},
                {"metric": "qps", "op": ">", "value": {"rate": "150/s", "per_second": 150.0}}
            ], "queries": [{"name": "a", "expects": []}]}
        ]}]
    })
}

/// Writes shard `s` into `dir` (created) and returns its report.
pub fn write_shard(dir: &Path, s: &Spec) -> Report {
    std::fs::create_dir_all(dir.join(DIR)).unwrap();
    std::fs::create_dir_all(dir.join("sources")).unwrap();
    std::fs::write(dir.join("sources/w.wl"), "workload sharded { seed 42 }\n").unwrap();
    let plan = serde_json::to_string_pretty(&plan_json(s.count)).unwrap();
    std::fs::write(dir.join("plan.json"), plan).unwrap();
    let load = ingest(dir, s);
    let q = queries(dir, s);
    let phase = |name: &str, kind: &str, own: Figures| ShardPhase {
        cell: 1,
        phase: name.into(),
        kind: kind.into(),
        start_barrier: Some(if kind == "ingest" { 1 } else { 3 }),
        start_skew_ms: Some(0.4 + s.count as f64 * 0.1),
        skew_error_ms: Some(0.05),
        waited_start_ms: Some(1.0 + s.index as f64),
        own,
        all: None,
    };
    let shard = ShardReport {
        index: s.index,
        count: s.count,
        plan: s.plan.clone(),
        barrier: "127.0.0.1:7471".into(),
        timeout_s: 120.0,
        phases: vec![
            phase(
                "load",
                "ingest",
                Figures {
                    sent: load.rows_sent,
                    acked: load.rows_acked,
                    ..Figures::default()
                },
            ),
            phase(
                "q",
                "queries",
                Figures {
                    sent: q.ok + q.failed,
                    ok: Some(q.ok),
                    ..Figures::default()
                },
            ),
        ],
        failure: s.failure.clone(),
    };
    let report = Report {
        format: REPORT_FORMAT,
        workload: "sharded".into(),
        file: "w.wl".into(),
        seed: s.seed,
        plan: Some(s.plan.clone()),
        started: format!("2026-12-01T00:00:0{}Z", s.index.min(9)),
        elapsed_s: 5.0,
        interrupted: false,
        signal: None,
        environment: None,
        cells: vec![CellReport {
            index: 1,
            key: String::new(),
            phases: vec![
                PhaseReport::Ingest(Box::new(load)),
                PhaseReport::Queries(Box::new(q)),
            ],
        }],
        shard: Some(shard),
        merged: None,
    };
    let text = serde_json::to_string_pretty(&report).unwrap() + "\n";
    std::fs::write(dir.join("report.json"), text).unwrap();
    report
}

fn write_log(path: &Path, start_ms: u64, tag: &str, hists: &[Histogram<u64>]) {
    let mut f = File::create(path).unwrap();
    let mut serializer = V2DeflateSerializer::new();
    let mut log = IntervalLogWriterBuilder::new()
        .add_comment("synthetic shard")
        .with_start_time(UNIX_EPOCH + Duration::from_millis(start_ms))
        .with_max_value_divisor(1000.0)
        .begin_log_with(&mut f, &mut serializer)
        .unwrap();
    for (i, h) in hists.iter().enumerate() {
        let at = Duration::from_millis(start_ms + 1_000 * i as u64);
        log.write_histogram(h, at, Duration::from_millis(1_000), Tag::new(tag))
            .unwrap();
    }
}

fn sref(phase: &str, intervals: u64, span: (f64, f64)) -> SeriesRef {
    let (counts, hlog) = SeriesRef::paths(1, phase);
    SeriesRef {
        interval_ms: 1_000,
        counts,
        hlog,
        intervals,
        measured: vec![Measured {
            from_unix_ms: span.0,
            to_unix_ms: span.1,
        }],
    }
}

fn ingest(dir: &Path, s: &Spec) -> IngestReport {
    let i = s.index;
    let samples = batch_samples(i);
    let sent = rows(i);
    let series = sref("load", 3, ingest_span(i));
    // Three intervals: rows split 1/4, 1/2, 1/4; batches likewise.
    let split = [sent / 4, sent / 2, sent - sent / 4 - sent / 2];
    let mut csv = csv::Writer::from_path(dir.join(&series.counts)).unwrap();
    let mut hists = Vec::new();
    for (k, chunk) in samples.chunks(50).enumerate() {
        let h = interval_histogram(chunk);
        let mut row = IngestInterval {
            start_ms: BASE_MS + 1_000 * k as u64,
            span_ms: [900, 1_000, 500 + 150 * i][k],
            rows_sent: split[k],
            rows_acked: Some(split[k]),
            payload_bytes: split[k] * 100,
            socket_bytes: split[k] * 110,
            batches: 50,
            errors: 0,
            ..IngestInterval::default()
        };
        row.set_batch_latency(&h);
        csv.serialize(row).unwrap();
        hists.push(h);
    }
    csv.flush().unwrap();
    write_log(&dir.join(&series.hlog), BASE_MS, TAG_BATCH, &hists);
    let (from, to) = ingest_span(i);
    let elapsed_s = (to - from) / 1000.0;
    IngestReport {
        server: None,
        server_metrics: Vec::new(),
        name: "load".into(),
        endpoint: "db.pg (pg)".into(),
        kind: "pg".into(),
        table: "cpu".into(),
        workers: 2,
        batch_rows: 20,
        status: Status::Ok,
        failures: Vec::new(),
        warnings: Vec::new(),
        rows_expected: None,
        rows_generated: sent,
        rows_dropped: 0,
        payload_bytes: sent * 100,
        rows_sent: sent,
        rows_acked: Some(sent),
        rows_cut_off: 0,
        rows_visible: (i == 0).then_some((0..s.count).map(rows).sum()),
        visible_baseline: (i == 0).then_some(0),
        visible_after_s: (i == 0).then_some(0.25),
        socket_bytes: sent * 110,
        payload_bytes_per_row: Some(100.0),
        socket_bytes_per_row: Some(110.0),
        elapsed_s,
        rows_per_s: Some(sent as f64 / elapsed_s),
        rate_counts: RateCounts::Acked,
        send_rows_per_s: Some(sent as f64 / elapsed_s),
        ack_rows_per_s: Some(sent as f64 / elapsed_s),
        batch_latency: Latency::of(&histogram(&samples)),
        client_cpu_s: Some(0.5),
        errors: BTreeMap::new(),
        rows_per_worker: vec![sent / 2, sent - sent / 2],
        calibration: None,
        series: Some(series),
        connecting: None,
        schedule: None,
        concurrent: None,
        freshness: None,
        findmax: None,
        stages: Vec::new(),
        commits: None,
        input: None,
        link: None,
        fields_per_row: None,
        metrics_per_s: None,
    }
}

fn queries(dir: &Path, s: &Spec) -> QueryReport {
    let i = s.index;
    let samples = query_samples(i);
    let failed: u64 = s.errors.iter().map(|e| e.1).sum();
    let ok = samples.len() as u64;
    let series = sref("q", 1, query_span(i));
    let h = histogram(&samples);
    let mut csv = csv::Writer::from_path(dir.join(&series.counts)).unwrap();
    let ih = interval_histogram(&samples);
    let mut row = RunInterval {
        start_ms: BASE_MS + 3_000,
        span_ms: 1_000,
        ok,
        failed,
        ..RunInterval::default()
    };
    row.set_latency(&ih, None);
    csv.serialize(row).unwrap();
    csv.flush().unwrap();
    write_log(&dir.join(&series.hlog), BASE_MS + 3_000, TAG_LATENCY, &[ih]);
    let (from, to) = query_span(i);
    let elapsed_s = (to - from) / 1000.0;
    let latency = Latency::of(&h);
    let p99 = latency.p99_us;
    let qps = ok as f64 / elapsed_s;
    let thresholds = vec![
        ThresholdReport {
            metric: "p99".into(),
            expect: "p99 < 20ms".into(),
            actual: format!("{p99}us"),
            ok: p99 < 20_000,
        },
        ThresholdReport {
            metric: "qps".into(),
            expect: "qps > 150/s".into(),
            actual: format!("{qps:.1}/s"),
            ok: qps > 150.0,
        },
    ];
    let failures: Vec<String> = thresholds
        .iter()
        .filter(|t| !t.ok)
        .map(|t| format!("threshold not met: {} (measured {})", t.expect, t.actual))
        .chain(s.failure.iter().map(|f| format!("shards: {f}")))
        .collect();
    let errors: BTreeMap<String, ErrorCount> = s
        .errors
        .iter()
        .map(|(c, n, f)| {
            (
                c.to_string(),
                ErrorCount {
                    count: *n,
                    first: f.clone(),
                },
            )
        })
        .collect();
    let sum_us = samples.iter().sum();
    RunReport {
        server: None,
        server_metrics: Vec::new(),
        name: "q".into(),
        endpoint: "db.pg".into(),
        kind: "pg".into(),
        setup: QuerySetup { workers: 2 },
        load: "closed".into(),
        status: if failures.is_empty() {
            Status::Ok
        } else {
            Status::Failed
        },
        failures,
        warnings: vec!["every shard says this".into()],
        elapsed_s,
        ok,
        failed,
        error_rate: failed as f64 / (ok + failed) as f64,
        output: QueryOutput {
            rows: ok * 3,
            qps: Some(qps),
        },
        sum_us,
        latency: latency.clone(),
        service: None,
        errors: errors.clone(),
        traffic: QueryTraffic {
            queries_per_worker: vec![ok / 2, ok - ok / 2],
            routed: false,
        },
        client_cpu_s: Some(0.25),
        client_wait_s: None,
        accounting: Accounting {
            scheduled: ok + failed,
            ..Accounting::default()
        },
        repeats: vec![RepeatReport {
            repeat: 1,
            elapsed_s,
            queries: ok + failed,
            qps: Some(qps),
        }],
        detail: QueryDetail {
            thresholds,
            query_types: vec![QueryTypeReport {
                name: "a".into(),
                label: "a".into(),
                ok,
                failed,
                rows: ok * 3,
                rows_per_query: Some(3.0),
                qps: Some(qps),
                sum_us,
                latency: latency.clone(),
                service: None,
                errors,
                thresholds: Vec::new(),
                streaming: streaming(i),
                outcomes: Default::default(),
            }],
            labels: vec![LabelReport {
                label: "a".into(),
                queries: vec!["a".into()],
                ok,
                failed,
                rows: ok * 3,
                qps: Some(qps),
                latency,
                service: None,
            }],
            cross_checks: Vec::new(),
            results: None,
            streaming: streaming(i),
        },
        series: Some(series),
        connecting: None,
        stages: Vec::new(),
        concurrent: None,
        findmax: None,
    }
}

/// Writes the `n` shards of one run under `parent` as `shard-0` ... and returns their dirs.
pub fn write_run(parent: &Path, n: u64) -> Vec<std::path::PathBuf> {
    (0..n)
        .map(|i| {
            let dir = parent.join(format!("shard-{i}"));
            write_shard(&dir, &Spec::new(i, n));
            dir
        })
        .collect()
}
