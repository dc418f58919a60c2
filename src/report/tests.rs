//! report.json's bytes: every field of a query and a request run, filled with values that
//! differ, serialized and compared with the file a reader of report.json relies on (key
//! order included). The shared figures are one struct flattened into each report, so these
//! files are what proves the flattening moved no key.

use std::collections::BTreeMap;

use super::findmax::{FindMaxReport, FindMaxStep};

use super::*;

pub(super) fn latency(base: u64) -> Latency {
    Latency {
        count: base,
        min_us: base + 1,
        mean_us: base as f64 + 0.5,
        p50_us: base + 2,
        p90_us: base + 3,
        p95_us: base + 4,
        p99_us: base + 5,
        p999_us: base + 6,
        max_us: base + 7,
        stddev_us: base as f64 + 0.25,
        histogram: format!("hist{base}"),
    }
}

fn errors() -> BTreeMap<String, ErrorCount> {
    let mut e = BTreeMap::new();
    e.insert(
        "sql".to_string(),
        ErrorCount {
            count: 3,
            first: "boom".into(),
        },
    );
    e
}

fn accounting() -> Accounting {
    Accounting {
        not_found: 0,
        scheduled: 100,
        cut_off: 2,
        unsent: 3,
        achieved_rate: Some(0.97),
        late: 4,
        late_share: Some(0.04),
        send_lag: Some(latency(500)),
    }
}

fn threshold(metric: &str) -> ThresholdReport {
    ThresholdReport {
        metric: metric.into(),
        expect: format!("{metric} < 20ms"),
        actual: "3ms".into(),
        ok: true,
    }
}

fn repeat() -> RepeatReport {
    RepeatReport {
        repeat: 1,
        elapsed_s: 1.5,
        queries: 95,
        qps: Some(63.3),
    }
}

pub(super) fn query_report() -> QueryReport {
    QueryReport {
        server: None,
        server_metrics: Vec::new(),
        name: "q".into(),
        endpoint: "db.sql".into(),
        kind: "pg".into(),
        setup: QuerySetup { workers: 4 },
        load: "open 200/s poisson".into(),
        status: Status::Failed,
        failures: vec!["f1".into()],
        warnings: vec!["w1".into()],
        elapsed_s: 1.5,
        ok: 92,
        failed: 3,
        error_rate: 0.03,
        output: QueryOutput {
            rows: 920,
            qps: Some(61.3),
        },
        sum_us: 12345,
        latency: latency(10),
        service: Some(latency(20)),
        errors: errors(),
        traffic: QueryTraffic {
            queries_per_worker: vec![24, 23],
            routed: false,
        },
        client_cpu_s: Some(0.25),
        client_wait_s: None,
        accounting: accounting(),
        repeats: vec![repeat()],
        detail: QueryDetail {
            thresholds: vec![threshold("p99")],
            query_types: vec![QueryTypeReport {
                name: "t".into(),
                label: "l".into(),
                ok: 92,
                failed: 3,
                rows: 920,
                rows_per_query: Some(10.0),
                qps: Some(61.3),
                sum_us: 12345,
                latency: latency(30),
                service: Some(latency(40)),
                errors: errors(),
                thresholds: vec![threshold("p50")],
                streaming: None,
                outcomes: Default::default(),
            }],
            labels: vec![LabelReport {
                label: "l".into(),
                queries: vec!["t".into()],
                ok: 92,
                failed: 3,
                rows: 920,
                qps: Some(61.3),
                latency: latency(50),
                service: None,
            }],
            cross_checks: vec![CrossCheck {
                against: "db2.sql".into(),
                compared: 5,
                mismatches: 1,
                first_mismatches: vec!["m".into()],
                not_compared: vec!["n".into()],
            }],
            results: None,
            streaming: None,
        },
        series: None,
        connecting: None,
        stages: Vec::new(),
        concurrent: None,
        findmax: None,
    }
}

pub(super) fn request_report() -> RequestReport {
    let mut statuses = BTreeMap::new();
    statuses.insert(200, 92);
    statuses.insert(500, 3);
    let mut counters = BTreeMap::new();
    counters.insert("hits".to_string(), 7);
    RequestReport {
        server: None,
        server_metrics: Vec::new(),
        name: "r".into(),
        endpoint: "api.http".into(),
        kind: "http".into(),
        setup: RequestSetup {
            request: "GET /".into(),
            connections: 8,
        },
        load: "closed".into(),
        status: Status::Ok,
        failures: Vec::new(),
        warnings: vec!["w".into()],
        elapsed_s: 2.5,
        ok: 92,
        failed: 3,
        error_rate: 0.03,
        output: RequestOutput {
            rps: Some(36.8),
            rows: 0,
        },
        sum_us: 999,
        latency: latency(60),
        service: None,
        errors: errors(),
        traffic: RequestTraffic {
            statuses,
            warmup_statuses: BTreeMap::from([(200, 7)]),
            counters,
            bytes_sent: 1000,
            bytes_received: 2000,
            reconnects: 1,
            requests_per_worker: vec![50, 45],
        },
        client_cpu_s: None,
        client_wait_s: None,
        accounting: Accounting::default(),
        repeats: vec![repeat()],
        detail: RequestDetail {
            thresholds: vec![threshold("rps")],
        },
        series: Some(series::SeriesRef {
            interval_ms: 1000,
            counts: "series/1-r.csv".into(),
            hlog: "series/1-r.hlog".into(),
            intervals: 3,
            measured: Vec::new(),
        }),
        connecting: None,
        stages: Vec::new(),
        concurrent: None,
        findmax: None,
    }
}

pub(super) fn ingest_report(status: Status) -> IngestReport {
    IngestReport {
        server: None,
        server_metrics: Vec::new(),
        name: "load".into(),
        endpoint: "db.ilp (ilp)".into(),
        kind: "ilp".into(),
        table: "t".into(),
        workers: 2,
        batch_rows: 1000,
        status,
        failures: vec!["lost rows".into()],
        warnings: vec!["slow".into()],
        rows_expected: Some(10_000),
        rows_generated: 10_000,
        rows_dropped: 0,
        payload_bytes: 500_000,
        rows_sent: 10_000,
        rows_acked: Some(9_000),
        rows_cut_off: 10,
        rows_visible: Some(8_990),
        visible_baseline: None,
        visible_after_s: Some(0.5),
        socket_bytes: 510_000,
        payload_bytes_per_row: Some(50.0),
        socket_bytes_per_row: Some(51.0),
        elapsed_s: 2.0,
        rows_per_s: Some(4500.0),
        rate_counts: RateCounts::Acked,
        send_rows_per_s: Some(5000.0),
        ack_rows_per_s: Some(4500.0),
        batch_latency: latency(80),
        client_cpu_s: Some(0.5),
        errors: errors(),
        rows_per_worker: vec![5000, 5000],
        calibration: Some(Calibration {
            null_rows_per_s: Some(90_000.0),
            ratio: Some(0.05),
        }),
        series: None,
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

pub(super) fn report() -> Report {
    Report {
        format: REPORT_FORMAT,
        workload: "w".into(),
        file: "w.wl".into(),
        seed: 1,
        plan: None,
        started: "2026-01-01T00:00:00Z".into(),
        elapsed_s: 4.0,
        interrupted: false,
        signal: None,
        environment: None,
        cells: vec![CellReport {
            index: 1,
            key: "k".into(),
            phases: vec![
                PhaseReport::Queries(Box::new(query_report())),
                PhaseReport::Requests(Box::new(request_report())),
            ],
        }],
        shard: None,
        merged: None,
    }
}

#[test]
fn query_and_request_runs_serialize_to_the_same_bytes_as_ever() {
    let json = serde_json::to_string_pretty(&report()).unwrap() + "\n";
    if let Ok(path) = std::env::var("WLRUN_WRITE_REPORT_JSON") {
        std::fs::write(path, &json).unwrap();
    }
    assert_eq!(json, include_str!("testdata/runs.json"));
}

/// `report()` and a second cell of ingest phases, runs with nothing answered, labels, open
/// loop and a phase not run.
fn full_report() -> Report {
    let mut r = report();
    let mut quiet_q = query_report();
    quiet_q.ok = 0;
    quiet_q.failed = 0;
    let mut quiet_r = request_report();
    quiet_r.ok = 0;
    quiet_r.failed = 0;
    quiet_r.accounting = accounting();
    let mut labelled = query_report();
    let mut second = labelled.detail.labels[0].clone();
    second.label = "m".into();
    second.queries = vec!["t".into(), "u".into()];
    labelled.detail.labels.push(second);
    labelled.client_cpu_s = Some(0.0001);
    labelled.elapsed_s = 0.05;
    let mut open_r = request_report();
    open_r.service = Some(latency(70));
    open_r.accounting = accounting();
    open_r.client_cpu_s = Some(1.5);
    // Nothing succeeded: no latency figure from nothing.
    let mut failing_r = request_report();
    failing_r.ok = 0;
    failing_r.failed = 50;
    failing_r.latency = Latency::default();
    let mut failing_q = query_report();
    failing_q.ok = 0;
    failing_q.failed = 50;
    failing_q.latency = Latency::default();
    failing_q.detail.query_types[0].latency = Latency::default();
    r.cells.push(CellReport {
        index: 2,
        key: String::new(),
        phases: vec![
            PhaseReport::Ingest(Box::new(ingest_report(Status::Failed))),
            PhaseReport::Ingest(Box::new(ingest_report(Status::NotRun))),
            PhaseReport::Queries(Box::new(quiet_q)),
            PhaseReport::Requests(Box::new(quiet_r)),
            PhaseReport::Queries(Box::new(labelled)),
            PhaseReport::Requests(Box::new(open_r)),
            PhaseReport::Requests(Box::new(failing_r)),
            PhaseReport::Queries(Box::new(failing_q)),
            PhaseReport::NotRun {
                name: "x".into(),
                reason: "why".into(),
            },
        ],
    });
    r
}

/// The report as people read it, for the same runs and for runs with nothing answered: what
/// the terminal shows is pinned as report.json is.
#[test]
fn query_and_request_runs_render_as_ever() {
    let r = full_report();
    let text = render::run_text(&r);
    if let Ok(path) = std::env::var("WLRUN_WRITE_REPORT_TEXT") {
        std::fs::write(path, &text).unwrap();
    }
    assert_eq!(text, include_str!("testdata/runs.txt"));
}

/// `wlrun report` reads report.json back: every field survives, so the file re-renders as the
/// run printed it and serializes to the same bytes.
#[test]
fn a_report_read_back_serializes_and_renders_as_written() {
    let r = full_report();
    let json = serde_json::to_string_pretty(&r).unwrap();
    let back: Report = serde_json::from_str(&json).unwrap();
    assert_eq!(serde_json::to_string_pretty(&back).unwrap(), json);
    assert_eq!(render::run_text(&back), render::run_text(&r));
    let pinned: Report = serde_json::from_str(include_str!("testdata/runs.json")).unwrap();
    assert_eq!(
        serde_json::to_string_pretty(&pinned).unwrap() + "\n",
        include_str!("testdata/runs.json")
    );
}

/// A group's members: one line before the first, naming what ended the group and whom it
/// stopped; the `concurrent` object reads back as written.
#[test]
fn a_concurrent_group_shows_one_line_and_reads_back() {
    let member = |set_end: bool, stopped: bool, end_ms: f64| {
        Some(super::together::ConcurrentMember {
            group: "mixed".into(),
            phases: vec!["load".into(), "q".into()],
            until: Some("load".into()),
            set_end,
            stopped_by_group: stopped,
            started_at_offset_ms: Some(0.0),
            ended_at_offset_ms: Some(end_ms),
        })
    };
    let mut load = ingest_report(Status::Ok);
    load.name = "load".into();
    load.concurrent = member(true, false, 2_013.4);
    let mut q = query_report();
    q.concurrent = member(false, true, 2_020.0);
    let mut r = report();
    r.cells[0].phases = vec![
        PhaseReport::Ingest(Box::new(load)),
        PhaseReport::Queries(Box::new(q)),
    ];
    let text = render::cell_lines(&r.cells[0], 1);
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("concurrent")).collect();
    assert_eq!(
        lines,
        ["cell 1/1 k: concurrent mixed: load, q ran together; ended when load ended (q stopped by it); load 0-2,013 ms, q 0-2,020 ms"],
        "{text}"
    );
    assert!(text.starts_with("cell 1/1 k: concurrent mixed"), "{text}");
    let json = serde_json::to_string_pretty(&r).unwrap();
    let back: Report = serde_json::from_str(&json).unwrap();
    assert_eq!(serde_json::to_string_pretty(&back).unwrap(), json);
}

/// A step of a `find max rate` search: 4 s at `rate`, 3 of its slots not answered ok (2
/// failed, 1 cut off); `broke` steps broke on p99 and errors.
pub(super) fn findmax_step(n: u64, search: &str, rate: f64, verdict: &str) -> FindMaxStep {
    FindMaxStep {
        step: n,
        phase: search.into(),
        rate_per_s: rate,
        elapsed_s: 4.0,
        scheduled: (rate * 4.0) as u64,
        ok: (rate * 4.0) as u64 - 3,
        failed: 2,
        cut_off: 1,
        unsent: 0,
        achieved: Some(1.0),
        achieved_per_s: Some((rate * 4.0 - 3.0) / 4.0),
        p50_us: 800,
        p90_us: 900,
        p99_us: if verdict == "met" { 1_000 } else { 30_000 },
        p999_us: 40_000,
        max_us: 50_000,
        error_rate: 2.0 / (rate * 4.0 - 1.0),
        lag_p50_us: None,
        lag_p99_us: None,
        lag_max_us: None,
        visible_after_s: None,
        verdict: verdict.into(),
        broke: if verdict == "met" {
            vec![]
        } else {
            vec!["p99 30ms".into(), "errors 2".into()]
        },
    }
}

pub(super) fn findmax_search(
    answer: Option<f64>,
    outcome: &str,
    steps: Vec<FindMaxStep>,
) -> FindMaxReport {
    FindMaxReport {
        sla: "p99 < 20ms".into(),
        from_per_s: 100.0,
        up_to_per_s: None,
        growth: 2.0,
        resolution: 0.05,
        samples: 1000,
        samples_from: "p99".into(),
        probes: false,
        answer_per_s: answer,
        confirmed: answer.is_some(),
        non_monotonic: vec![],
        outcome: outcome.into(),
        why: outcome.into(),
        steps,
    }
}

/// What a user asks of each query type and each request run (the pgbench timeseries tool's
/// summary) stands in its table: counts, the share that failed, the rate, rows per query,
/// and the latency from min to max.
#[test]
fn a_query_types_and_a_request_runs_tables_carry_every_figure_a_user_asks_for() {
    let mut r = report();
    let spread = Latency {
        count: 92,
        min_us: 1_000,
        mean_us: 2_000.0,
        p50_us: 3_000,
        p90_us: 4_000,
        p95_us: 5_000,
        p99_us: 6_000,
        max_us: 7_000,
        ..Latency::default()
    };
    if let PhaseReport::Queries(q) = &mut r.cells[0].phases[0] {
        q.detail.query_types[0].latency = spread.clone();
    }
    if let PhaseReport::Requests(q) = &mut r.cells[0].phases[1] {
        q.latency = spread;
    }
    let text = render::run_text(&r);
    let lines: Vec<&str> = text.lines().collect();
    let cells = |line: &str| -> Vec<String> {
        line.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect()
    };
    let latency = [
        "1.00ms", "2.00ms", "3.00ms", "4.00ms", "5.00ms", "6.00ms", "7.00ms",
    ];
    for (name, rate, rows, row) in [
        (
            "query",
            "q/s",
            "rows/q",
            ["t", "92", "3", "3.16", "61.3", "10.0"],
        ),
        (
            "request",
            "req/s",
            "rows/req",
            ["GET /", "92", "3", "3.16", "36.8", "-"],
        ),
    ] {
        let at = lines
            .iter()
            .position(|l| l.starts_with(&format!("  {name} ")))
            .unwrap_or_else(|| panic!("no table of {name}s:\n{text}"));
        let head = [
            name, "ok", "failed", "err %", rate, rows, "min", "mean", "p50", "p90", "p95", "p99",
            "max",
        ];
        assert_eq!(cells(lines[at]), head, "{text}");
        let want: Vec<&str> = row.iter().copied().chain(latency).collect();
        assert_eq!(cells(lines[at + 1]), want, "{text}");
    }
}

/// A QWP ingest says its commits on its line and in report.json; the other protocols say
/// nothing of them.
#[test]
fn a_qwp_ingest_shows_its_commits() {
    let mut load = ingest_report(Status::Ok);
    load.commits = Some(12_000);
    let mut r = report();
    r.cells[0].phases = vec![PhaseReport::Ingest(Box::new(load))];
    let text = render::cell_lines(&r.cells[0], 1);
    assert!(text.contains(", 12,000 commits, "), "{text}");
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["cells"][0]["phases"][0]["commits"], 12_000);
    r.cells[0].phases = vec![PhaseReport::Ingest(Box::new(ingest_report(Status::Ok)))];
    assert!(!render::cell_lines(&r.cells[0], 1).contains("commits"));
    let json = serde_json::to_value(&r).unwrap();
    assert!(json["cells"][0]["phases"][0].get("commits").is_none());
}
