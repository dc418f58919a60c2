//! The page from a synthetic matrix: every chart drawn, the cells grouped by their axes, and
//! the size bound of issue 17 (24 cells of 600 intervals per phase under 2 MB).

use std::path::Path;

use hdrhistogram::Histogram;

use super::*;
use crate::report::series::{IngestInterval, RunInterval, SeriesRef};
use crate::report::{IngestReport, PhaseReport, QueryReport, RateCounts, Status};

fn histogram(seed: u64) -> Histogram<u64> {
    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    // A long tail: most answers near 800µs, one in a hundred near 20ms.
    let mut x = seed | 1;
    for i in 0..20_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let v = if i % 100 == 0 {
            15_000 + x % 10_000
        } else {
            500 + x % 600
        };
        h.record(v).unwrap();
    }
    h
}

fn write_csv<T: serde::Serialize>(path: &Path, rows: &[T]) {
    let mut w = csv::Writer::from_path(path).unwrap();
    for r in rows {
        w.serialize(r).unwrap();
    }
    w.flush().unwrap();
}

/// A report of `protocols` × `hosts` cells, each an ingest and a query phase of `intervals`
/// one-second intervals, with its series written under `dir`.
fn synthetic(dir: &Path, protocols: &[&str], hosts: &[u64], intervals: u64) -> Report {
    let template: Report =
        serde_json::from_str(include_str!("../testdata/runs.json")).expect("runs.json reads");
    let PhaseReport::Queries(query) = &template.cells[0].phases[0] else {
        panic!("runs.json starts with a query phase");
    };
    std::fs::create_dir_all(dir.join("series")).unwrap();
    let t0 = 1_796_000_000_000u64;
    let mut cells = Vec::new();
    for (pi, protocol) in protocols.iter().enumerate() {
        for (hi, h) in hosts.iter().enumerate() {
            let index = cells.len() + 1;
            let scale = (pi as u64 + 1) * 100_000 / (hi as u64 + 1);
            let ingest_rows: Vec<IngestInterval> = (0..intervals)
                .map(|i| IngestInterval {
                    start_ms: t0 + i * 1000,
                    span_ms: 1000,
                    rows_sent: scale + (i * 7919) % 5000,
                    rows_acked: Some(scale + (i * 7919) % 4000),
                    payload_bytes: scale * 60,
                    socket_bytes: scale * 62,
                    batches: scale / 1000,
                    errors: u64::from(i % 97 == 0),
                    batch_p50_us: Some(800 + i % 50),
                    batch_p99_us: Some(4000 + (i * 31) % 900),
                    batch_max_us: Some(9000 + (i * 131) % 9000),
                })
                .collect();
            let run_rows: Vec<RunInterval> = (0..intervals)
                .map(|i| RunInterval {
                    start_ms: t0 + (intervals + i) * 1000,
                    span_ms: 1000,
                    ok: 2000 + (i * 17) % 300,
                    failed: u64::from(i % 50 == 0),
                    cut_off: 0,
                    unsent: u64::from(i % 120 == 0) * 3,
                    p50_us: Some(700 + i % 40),
                    p90_us: Some(1100 + i % 90),
                    p99_us: Some(3000 + (i * 13) % 700),
                    p999_us: Some(9000 + (i * 29) % 3000),
                    max_us: Some(20_000 + (i * 53) % 9000),
                    service_p50_us: None,
                    service_p99_us: None,
                    stage: None,
                })
                .collect();
            let sref = |phase: &str| {
                let (counts, hlog) = SeriesRef::paths(index, phase);
                SeriesRef {
                    interval_ms: 1000,
                    counts,
                    hlog,
                    intervals,
                    measured: Vec::new(),
                }
            };
            let load = sref("load");
            write_csv(&dir.join(&load.counts), &ingest_rows);
            let explore = sref("explore");
            write_csv(&dir.join(&explore.counts), &run_rows);
            let sent = ingest_rows.iter().map(|r| r.rows_sent).sum::<u64>();
            let ingest = IngestReport {
                name: "load".into(),
                endpoint: format!("db.{protocol} ({protocol})"),
                kind: protocol.to_string(),
                table: "cpu".into(),
                workers: 4,
                batch_rows: 1000,
                status: Status::Ok,
                failures: vec![],
                warnings: vec![],
                rows_expected: Some(sent),
                rows_generated: sent,
                rows_dropped: 0,
                payload_bytes: sent * 60,
                rows_sent: sent,
                rows_acked: Some(sent),
                rows_cut_off: 0,
                rows_visible: Some(sent),
                visible_baseline: None,
                visible_after_s: Some(1.5),
                socket_bytes: sent * 62,
                payload_bytes_per_row: Some(60.0),
                socket_bytes_per_row: Some(62.0),
                elapsed_s: intervals as f64,
                rows_per_s: Some(sent as f64 / intervals as f64),
                rate_counts: RateCounts::Acked,
                send_rows_per_s: Some(sent as f64 / intervals as f64),
                ack_rows_per_s: Some(sent as f64 / intervals as f64 * 0.97),
                batch_latency: crate::report::Latency::of(&histogram(index as u64)),
                client_cpu_s: Some(1.0),
                errors: Default::default(),
                rows_per_worker: vec![sent / 4; 4],
                calibration: None,
                series: Some(load),
                connecting: None,
                schedule: None,
                concurrent: None,
                freshness: None,
            };
            let mut q: QueryReport = (**query).clone();
            q.name = "explore".into();
            q.output.qps = Some(2000.0 + scale as f64 / 100.0);
            q.latency = crate::report::Latency::of(&histogram(index as u64 + 99));
            q.service = None;
            q.detail.labels.clear();
            q.series = Some(explore);
            q.status = Status::Ok;
            q.failures.clear();
            q.warnings.clear();
            if index == 5 {
                q.status = Status::Failed;
                q.failures.push("p99 < 2ms: 3.1ms".into());
            }
            cells.push(CellReport {
                index,
                key: format!("protocol={protocol} hosts={h}"),
                phases: vec![
                    PhaseReport::Ingest(Box::new(ingest)),
                    PhaseReport::Queries(Box::new(q)),
                ],
            });
        }
    }
    Report {
        cells,
        workload: "synthetic <matrix>".into(),
        ..template
    }
}

use crate::report::CellReport;

/// Each `<svg class="chart">` of the page, with what it draws.
fn charts(page: &str) -> Vec<&str> {
    page.split("<svg class=\"chart\"")
        .skip(1)
        .map(|s| &s[..s.find("</svg>").expect("every chart is closed")])
        .collect()
}

#[test]
fn a_24_cell_matrix_of_600_intervals_is_one_page_under_2_mb_with_every_chart_drawn() {
    let dir = tempfile::tempdir().unwrap();
    let report = synthetic(
        dir.path(),
        &["qwp", "ilp", "pg"],
        &[1000, 2000, 4000, 8000, 16_000, 32_000, 64_000, 100_000],
        600,
    );
    assert_eq!(report.cells.len(), 24);
    write(dir.path(), &report).unwrap();
    let page = std::fs::read_to_string(dir.path().join(FILE)).unwrap();
    assert!(
        page.len() < 2_000_000,
        "report.html is {} bytes",
        page.len()
    );
    let all = charts(&page);
    // The matrix: 2 bar charts per phase and 1 distribution per phase and protocol; then 4
    // charts per phase per cell.
    assert_eq!(all.len(), 2 * (2 + 3) + 24 * 2 * 4, "charts drawn");
    for c in &all {
        assert!(c.contains("class=\"m\""), "a chart without marks: {c}");
    }
    // Cells grouped by their axes: hosts (8 values) along x, one bar per protocol.
    assert!(page.contains(">100000</text>"), "x groups by hosts");
    assert!(page.contains("rows/s sent, acknowledged, visible · by hosts</figcaption>"));
    assert!(page.contains("<li><i style=\"background:#4e79a7\"></i>protocol=qwp · sent</li>"));
    assert!(page.contains(
        "<li><i style=\"background:#4e79a7;opacity:0.62\"></i>protocol=qwp · acked</li>"
    ));
    assert!(page.contains("explore: latency distribution, protocol=ilp</figcaption>"));
    assert!(page.contains("<h1>synthetic &lt;matrix&gt;</h1>"));
    assert!(page.contains("<span class=\"bad\">1 not ok</span>"));
    assert!(page.contains("<li class=\"bad\">cell 5 explore: p99 &lt; 2ms: 3.1ms</li>"));
    // Nothing fetched when opened.
    for needle in ["<script", "src=\"http", "href=\"http", "@import", "url("] {
        assert!(!page.contains(needle), "the page holds `{needle}`");
    }
    eprintln!("report.html: {} bytes, {} charts", page.len(), all.len());
}

#[test]
fn a_report_without_its_directory_still_draws_its_summary_charts() {
    let dir = tempfile::tempdir().unwrap();
    let report = synthetic(dir.path(), &["qwp", "ilp"], &[10], 3);
    let page = page(&report, None);
    let all = charts(&page);
    // Bars (2 per phase); distributions across cells: protocol (2 values) runs along x and
    // hosts (1 value) makes one chart per phase; and one per phase of each cell.
    assert_eq!(all.len(), 2 * 2 + 2 + 2 * 2, "{page}");
    assert!(page.contains("load: latency distribution, hosts=10</figcaption>"));
    assert!(page.contains("no run directory: the series is not shown"));
    assert!(page.contains("No plan.json beside the report."));
}

#[test]
fn axes_come_from_the_key_and_a_spaced_value_stays_whole() {
    assert_eq!(
        run::axes("protocol=qwp hosts=1000"),
        vec![
            ("protocol".to_string(), "qwp".to_string()),
            ("hosts".to_string(), "1000".to_string())
        ]
    );
    assert_eq!(
        run::axes("name=a b n=1"),
        vec![
            ("name".to_string(), "a b".to_string()),
            ("n".to_string(), "1".to_string())
        ]
    );
    assert!(run::axes("").is_empty());
}

#[test]
fn the_distribution_reaches_the_maximum_on_the_log_percentile_axis() {
    let h = histogram(7);
    let points = phase::distribution_points(&h);
    let (k_last, v_last) = *points.last().unwrap();
    assert!((k_last - (20_000f64).log10()).abs() < 1e-9, "{k_last}");
    assert_eq!(v_last, h.max() as f64);
    assert!(points
        .windows(2)
        .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
}
