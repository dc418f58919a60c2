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
                    stage: None,
                    ..IngestInterval::default()
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
                server: None,
                server_metrics: Vec::new(),
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
                findmax: None,
                stages: Vec::new(),
                commits: None,
                input: None,
                link: None,
                fields_per_row: None,
                metrics_per_s: None,
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

/// One cell of a `concurrent` group: a probed ingest and a staged query run, then a
/// `find max rate` search on its own; `with_series` writes their series under `dir`.
fn mixed(dir: &Path, with_series: bool) -> Report {
    use crate::report::freshness::{FreshSample, Freshness};
    use crate::report::stages::StageReport;
    use crate::report::together::ConcurrentMember;
    use crate::report::Accounting;
    let mut r = synthetic(dir, &["qwp"], &[10], 20);
    let t0 = 1_796_000_000_000u64;
    let member = |set_end, stopped| {
        Some(ConcurrentMember {
            group: "mixed".into(),
            phases: vec!["load".into(), "explore".into()],
            until: Some("load".into()),
            set_end,
            stopped_by_group: stopped,
            started_at_offset_ms: Some(0.0),
            ended_at_offset_ms: Some(20_000.0),
        })
    };
    let phases = &mut r.cells[0].phases;
    let PhaseReport::Ingest(load) = &mut phases[0] else {
        panic!("an ingest first")
    };
    load.concurrent = member(true, false);
    load.freshness = Some(Freshness {
        endpoint: "db.pg (pg)".into(),
        language: "sql".into(),
        query: "SELECT count(*) FROM cpu".into(),
        every_s: 0.1,
        within_s: 60.0,
        probes_sent: 200,
        lag: crate::report::Latency::of(&histogram(3)),
        probe_latency: crate::report::Latency::of(&histogram(4)),
        rows_target: 2_000,
        last_visible: Some(2_000),
        all_visible_after_s: Some(0.3),
        samples_stride: 1,
        samples: (0..200)
            .map(|i| FreshSample {
                t_s: i as f64 * 0.1,
                sent: i * 10,
                visible: (i * 10).saturating_sub(3),
                batches: u64::from(i > 0),
                lag_s: (i > 0).then_some(0.3),
            })
            .collect(),
        ..Freshness::default()
    });
    let probed: Vec<IngestInterval> = (0..20)
        .map(|i| IngestInterval {
            start_ms: t0 + i * 1000,
            span_ms: 1000,
            rows_sent: 100,
            rows_acked: Some(100),
            batches: 1,
            batch_p50_us: Some(800),
            batch_p99_us: Some(900),
            batch_max_us: Some(1000),
            probes: 10,
            visible: Some(i * 100 + 70),
            lag_p50_us: Some(300_000 + i * 100),
            lag_max_us: Some(320_000),
            ..IngestInterval::default()
        })
        .collect();
    if with_series {
        write_csv(
            &dir.join(load.series.as_ref().unwrap().counts.clone()),
            &probed,
        );
    }
    let PhaseReport::Queries(q) = &mut phases[1] else {
        panic!("a query run second")
    };
    q.concurrent = member(false, true);
    let stage = |n: u64, load: &str| StageReport {
        stage: n,
        start_s: (n - 1) as f64 * 10.0,
        gap_before_s: 0.0,
        duration_s: 10.0,
        warmup_s: 0.0,
        span_s: 10.0,
        load: load.into(),
        rate_from: Some(100.0 * n as f64),
        rate_to: Some(100.0 * n as f64),
        workers: 2,
        ok: 1000 * n,
        failed: 0,
        accounting: Accounting {
            not_found: 0,
            scheduled: 1000 * n,
            achieved_rate: Some(1.0),
            ..Accounting::default()
        },
        ok_per_s: Some(100.0 * n as f64),
        error_rate: 0.0,
        latency: crate::report::Latency::of(&histogram(n)),
        service: None,
        warmup_excluded: 0,
        kept_schedule: Some(true),
    };
    q.stages = vec![stage(1, "open 100/s fixed"), stage(2, "open 200/s fixed")];
    let staged: Vec<RunInterval> = (0..20)
        .map(|i| RunInterval {
            start_ms: t0 + (20 + i) * 1000,
            span_ms: 1000,
            ok: 100,
            p50_us: Some(800),
            stage: Some(1 + u64::from(i >= 10)),
            ..RunInterval::default()
        })
        .collect();
    if with_series {
        write_csv(
            &dir.join(q.series.as_ref().unwrap().counts.clone()),
            &staged,
        );
    }
    let mut max = (**q).clone();
    max.name = "max".into();
    max.stages.clear();
    max.concurrent = None;
    max.series = None;
    max.findmax = Some(crate::report::tests::findmax_search(
        Some(100.0),
        "bracketed",
        vec![
            crate::report::tests::findmax_step(1, "grow", 100.0, "met"),
            crate::report::tests::findmax_step(2, "grow", 200.0, "broke"),
        ],
    ));
    phases.push(PhaseReport::Queries(Box::new(max)));
    r
}

#[test]
fn freshness_stages_find_max_and_a_group_are_on_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let report = mixed(dir.path(), true);
    write(dir.path(), &report).unwrap();
    let page = std::fs::read_to_string(dir.path().join(FILE)).unwrap();
    let all = charts(&page);
    for c in &all {
        assert!(c.contains("class=\"m\""), "a chart without marks: {c}");
    }
    let titled = |title: &str| {
        all.iter()
            .filter(|c| c.contains(&format!("aria-label=\"{title}\"")))
            .count()
    };
    // The probe: lag over time and rows sent beside rows visible from the series, the lag's
    // distribution, and the lag in the matrix of one cell, which is a table.
    assert_eq!(titled("Visibility lag over time"), 1, "{page}");
    assert_eq!(titled("Rows sent and seen visible"), 1);
    assert_eq!(titled("Visibility lag distribution"), 1);
    assert!(page.contains("<tr><td>load: visibility lag p50, p99</td><td>p99</td>"));
    assert!(page.contains("<b>Freshness</b> · lag p50 "), "{page}");
    let lag = all
        .iter()
        .find(|c| c.contains("aria-label=\"Visibility lag over time\""))
        .unwrap();
    assert!(
        lag.contains("<title>lag p50: 300ms to 302ms</title>"),
        "{lag}"
    );
    // The stages: a table, and the boundary on each of the run's charts over time.
    assert!(page.contains("<caption>Stages (each after its warm-up"));
    assert!(page.contains("<td>open 200/s fixed</td>"));
    let marked: Vec<&&str> = all.iter().filter(|c| c.contains("class=\"sb\"")).collect();
    assert_eq!(marked.len(), 3, "throughput, latency, errors");
    assert!(marked.iter().all(|c| c.contains(">stage 2</text>")));
    // The search as a curve: p99 against rate, the SLA's bound across, the answer marked,
    // each step a dot (met filled, broke hollow).
    let curve = all
        .iter()
        .find(|c| c.contains("aria-label=\"find max rate: latency against rate\""))
        .expect("the search's curve");
    assert!(
        curve.contains("<title>SLA p99 &lt; 20ms</title>"),
        "{curve}"
    );
    assert!(curve.contains(">answer 100/s</text>"), "{curve}");
    assert!(curve.contains("<title>step 2 (grow) at 200/s: p99 30ms, broke</title>"));
    assert!(
        curve.contains("fill=\"#fff\""),
        "a hollow dot for the broken step"
    );
    // The search's steps and answer.
    assert!(page.contains("<caption>find max rate from 100/s where p99 &lt; 20ms"));
    assert!(page.contains("<td>broke: p99 30ms; errors 2</td>"));
    assert!(page
        .contains("<b>find max rate: 100/s meets p99 &lt; 20ms, confirmed by a repeat (2 steps"));
    // The group: once, before its first member, and on each member's heading.
    assert_eq!(
        page.matches("concurrent mixed: load, explore ran together; ended when load ended (explore stopped by it)")
            .count(),
        1
    );
    assert!(page.contains("<caption>concurrent mixed</caption>"));
    assert!(page.contains("· in concurrent mixed (its end ends the group)</h4>"));
    assert!(page.contains("· in concurrent mixed (stopped by the group&#39;s end)</h4>"));
}

/// Without its series (a page rendered from report.json alone), the probe's charts come from
/// the samples report.json keeps.
#[test]
fn without_series_the_lag_is_drawn_from_the_samples() {
    let dir = tempfile::tempdir().unwrap();
    let report = mixed(dir.path(), false);
    let page = page(&report, None);
    let lag = charts(&page)
        .into_iter()
        .find(|c| c.contains("aria-label=\"Visibility lag over time\""))
        .expect("a lag chart");
    assert!(lag.contains("<title>lag: 300ms to 300ms</title>"), "{lag}");
    assert!(page.contains("one point per probe answered: the lag of the oldest batch it saw first"));
    assert!(page.contains("aria-label=\"Rows sent and seen visible\""));
}

/// An ingest's search lists each step's batch p99 and visibility lag where a run's lists its
/// latency percentiles.
#[test]
fn an_ingest_search_lists_each_steps_lag() {
    use crate::report::findmax::{FindMaxReport, FindMaxStep};
    let step = FindMaxStep {
        step: 1,
        phase: "grow".into(),
        rate_per_s: 10_000.0,
        elapsed_s: 5.0,
        scheduled: 50_000,
        ok: 50_000,
        failed: 0,
        cut_off: 0,
        unsent: 0,
        achieved: Some(1.0),
        achieved_per_s: Some(10_000.0),
        p50_us: 900,
        p90_us: 1_000,
        p99_us: 2_500,
        p999_us: 3_000,
        max_us: 4_000,
        error_rate: 0.0,
        lag_p50_us: Some(120_000),
        lag_p99_us: Some(300_000),
        lag_max_us: None,
        visible_after_s: Some(0.4),
        verdict: "met".into(),
        broke: vec![],
    };
    let f = FindMaxReport {
        sla: "lag_p99 < 1s".into(),
        from_per_s: 10_000.0,
        up_to_per_s: Some(10_000.0),
        samples: 50,
        samples_from: "given".into(),
        probes: true,
        why: "the cap met the SLA".into(),
        ..crate::report::tests::findmax_search(Some(10_000.0), "cap", vec![step])
    };
    let mut out = String::new();
    tables::findmax(&mut out, &f);
    assert!(out.contains("steps of at least 50 probes (given)"), "{out}");
    assert!(out.contains("<th>batch p99</th><th>lag p50</th><th>lag p99</th><th>lag max</th><th>all seen</th><th>verdict</th>"), "{out}");
    assert!(out.contains("<td class=\"n\">2.5ms</td><td class=\"n\">120ms</td><td class=\"n\">300ms</td><td class=\"n\">-</td><td class=\"n\">0.4s</td><td>met</td>"), "{out}");
}

#[test]
fn a_staged_ingest_lists_its_stages_under_its_charts() {
    use crate::report::stages::{IngestStageReport, StageRows};
    let stage = |n: u64, reached: bool| IngestStageReport {
        stage: n,
        start_s: (n - 1) as f64 * 5.0,
        duration_s: 5.0,
        warmup_s: 0.5,
        span_s: 4.5,
        load: "1000/s to 4000/s".into(),
        rate_from: 1000.0,
        rate_to: 4000.0,
        reached,
        rows: StageRows {
            scheduled: 11_250,
            sent: if reached { 11_250 } else { 0 },
            acked: Some(if reached { 11_250 } else { 0 }),
            unsent: if reached { 0 } else { 11_250 },
            ..StageRows::default()
        },
        warmup: StageRows {
            sent: 1_250,
            ..StageRows::default()
        },
        batches: 113,
        rows_per_s: reached.then_some(2_500.0),
        achieved_rate: Some(if reached { 1.0 } else { 0.0 }),
        kept_schedule: Some(reached),
        late_batches: 0,
        late_share: None,
        send_lag: crate::report::Latency::default(),
        batch_latency: crate::report::Latency::default(),
        batch_latency_intended: crate::report::Latency::default(),
    };
    let mut out = String::new();
    tables::ingest_stages(&mut out, &[stage(1, true), stage(2, false)]);
    assert!(
        out.contains("<caption>Stages (one continuous send"),
        "{out}"
    );
    assert!(
        out.contains("<td>1000/s to 4000/s</td><td class=\"n\">11,250</td><td class=\"n\">11,250</td><td class=\"n\">11,250</td>"),
        "{out}"
    );
    assert!(
        out.contains("<td class=\"n\">1,250</td><td>yes</td>"),
        "{out}"
    );
    assert!(out.contains("<td>not reached</td>"), "{out}");
    let mut none = String::new();
    tables::ingest_stages(&mut none, &[]);
    assert!(none.is_empty());
}

/// Issue 31 item 3: the numbers a reader copies, per phase and query type, first; the start to
/// the second; and a matrix of one cell as a table rather than bar charts of one bar.
#[test]
fn a_one_cell_page_has_its_numbers_its_start_to_the_second_and_no_bar_of_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut report = synthetic(dir.path(), &["qwp"], &[10], 3);
    report.started = "2026-12-07T06:14:55.123456789Z".into();
    let page = page(&report, Some(dir.path()));
    assert!(
        page.contains(" · started 2026-12-07 06:14:55 UTC · "),
        "{page}"
    );
    assert!(!page.contains("55.123"), "{page}");
    let numbers = page
        .find("<table class=\"numbers\">")
        .expect("a numbers table");
    assert!(
        numbers < page.find("id=\"matrix\"").unwrap(),
        "the numbers come first"
    );
    // The phase's total, then its one query type: ok, failed, error %, q/s, rows/q, then
    // min ... max in milliseconds to the microsecond.
    assert!(
        page.contains("<tr data-cell=\"1\" data-phase=\"explore\"><td>1 protocol=qwp hosts=10</td><td>explore</td><td>all queries</td>"),
        "{page}"
    );
    assert!(
        page.contains("<tr data-cell=\"1\" data-phase=\"explore\" data-query=\"t\"><td>1 protocol=qwp hosts=10</td><td>explore</td><td>t</td><td class=\"n\">92</td><td class=\"n\">3</td><td class=\"n\">3.16</td><td class=\"n\">61.3</td>"),
        "{page}"
    );
    assert!(page.contains("<th>p90 ms</th>"));
    assert!(page.contains("<tr data-cell=\"1\" data-phase=\"load\"><td>1 protocol=qwp hosts=10</td><td>load</td><td>acked</td>"));
    // The matrix of one cell: a table of its headline figures, no bar chart.
    assert!(page.contains("<table class=\"one-cell\">"), "{page}");
    assert!(page.contains("<tr><td>load: rows/s sent, acknowledged, visible</td><td>sent</td>"));
    assert!(!page.contains("· by hosts</figcaption>"), "{page}");
}

#[test]
fn a_time_is_shown_to_the_second_with_its_zone() {
    use super::run::to_the_second;
    assert_eq!(
        to_the_second("2026-12-07T06:14:55.123456789Z"),
        "2026-12-07 06:14:55 UTC"
    );
    assert_eq!(
        to_the_second("2026-12-07T06:14:55+01:00"),
        "2026-12-07 06:14:55+01:00"
    );
    assert_eq!(
        to_the_second("2026-12-07T06:14:55.5-05:30"),
        "2026-12-07 06:14:55-05:30"
    );
    assert_eq!(to_the_second("unknown"), "unknown");
}

/// A phase of two intervals is a table of them: charts of two dots show no trend and hide
/// their figures.
#[test]
fn a_phase_shorter_than_a_few_intervals_is_a_table_of_them_not_dots() {
    let dir = tempfile::tempdir().unwrap();
    let report = synthetic(dir.path(), &["qwp", "ilp"], &[10], 2);
    let page = page(&report, Some(dir.path()));
    assert_eq!(
        page.matches("<caption>Over time: 2 intervals of 1s, too few to draw")
            .count(),
        4,
        "{page}"
    );
    assert!(
        !page.contains("aria-label=\"Throughput over time\""),
        "{page}"
    );
    // The run's intervals: from, span, ok, failed, cut off, unsent, p50, p99, max.
    assert!(
        page.contains("<td class=\"n\">0s</td><td class=\"n\">1s</td><td class=\"n\">2,000</td><td class=\"n\">1</td>"),
        "{page}"
    );
}

/// A phase with `series/CELL-PHASE.server.csv` (`observe process` with `--out`) has its client
/// and server CPU drawn over time, both lines, the values from the file; one without, none.
#[test]
fn a_phase_with_a_server_series_draws_client_and_server_cpu_over_time() {
    use crate::report::server_series::{path, ServerInterval, HEADER};
    let dir = tempfile::tempdir().unwrap();
    let report = synthetic(dir.path(), &["qwp"], &[10], 3);
    let mut text = format!("{HEADER}\n");
    for i in 1..=5u64 {
        let r = ServerInterval {
            t_s: i as f64,
            span_s: 1.0,
            // The server climbs to 3.5 cores while the client stays under one.
            server_cores: 0.5 * i as f64 + 1.0,
            client_cores: Some(0.25),
            rss_bytes: 100_000_000,
            processes: 3,
        };
        text.push_str(&r.line());
        text.push('\n');
    }
    std::fs::write(dir.path().join(path(1, "explore")), text).unwrap();
    let page = page(&report, Some(dir.path()));
    let title = format!("aria-label=\"{}\"", super::cpu::TITLE);
    assert_eq!(page.matches(&title).count(), 1, "{page}");
    let at = page.find(&title).unwrap();
    let figure = &page[at..at + page[at..].find("</figure>").unwrap()];
    assert!(figure.contains("server cores"), "{figure}");
    assert!(figure.contains("client cores"), "{figure}");
    assert_eq!(figure.matches("<path class=\"m\"").count(), 2, "{figure}");
    assert!(
        figure.contains("server cores: 1.5 cores to 3.5 cores"),
        "{figure}"
    );
    assert!(
        figure.contains("client cores: 0.25 cores to 0.25 cores"),
        "{figure}"
    );
    // The phase's own heading precedes it: it is the query phase's chart, not the ingest's.
    let explore = page.find("<h4>explore").unwrap();
    assert!(at > explore, "{page}");
}

/// A server series that is not one is said under the phase, not a page that fails.
#[test]
fn an_unreadable_server_series_is_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let report = synthetic(dir.path(), &["qwp"], &[10], 3);
    std::fs::write(
        dir.path()
            .join(crate::report::server_series::path(1, "load")),
        "t_s,cores\n1,2\n",
    )
    .unwrap();
    let page = page(&report, Some(dir.path()));
    assert!(
        page.contains("the server&#39;s series could not be read")
            || page.contains("the server's series could not be read"),
        "{page}"
    );
}
