//! `probe visible every I` end to end (docs/language.md, "Freshness"): the lag measured
//! against an in-test server whose rows become visible a fixed D after they arrive, probes
//! that fail, and real PostgreSQL (visible at once).
//!
//! Timing bounds: each sample errs by at most one probe interval plus the probe's latency, so
//! a lag is asserted within one interval of what the server does, plus ALLOWANCE for a 2-core
//! machine shared by several builds (a probe or a batch held up by the scheduler).

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

#[path = "common/cli.rs"]
mod cli;
#[path = "common/oracles/mod.rs"]
mod oracles;
#[path = "common/servers.rs"]
mod servers;
#[path = "common/vm_process.rs"]
mod vm_process;

use oracles::fresh::{FreshServer, SCHEMA};
use vm_process::Victoria;
use wlrun::report::series::{self, IngestInterval, LoggedHistogram, Series, SeriesRef};

/// What a loaded machine may add to a lag on top of the probe's interval.
const ALLOWANCE_MS: f64 = 150.0;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn ms(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}")) / 1000.0
}

/// Runs `text` with `--out`: the exit code, report.json's ingest phase, and what the run
/// printed (standard output and error).
fn run(dir: &Path, text: &str) -> (i32, Value, String) {
    let o = cli::run_out(dir, text, &["-q"]);
    (o.code, o.phase(), o.printed())
}

/// The phase's time series in the run directory `res`: its intervals and its interval log.
fn series_of(dir: &Path, p: &Value) -> (Vec<IngestInterval>, Vec<LoggedHistogram>) {
    let r: SeriesRef = serde_json::from_value(p["series"].clone()).unwrap();
    let res = dir.join("res");
    let Series::Ingest(rows) = series::read(&res, &r, true).unwrap() else {
        panic!("an ingest series")
    };
    assert_eq!(rows.len() as u64, r.intervals);
    (rows, series::read_hlog(&res.join(&r.hlog)).unwrap())
}

#[test]
fn the_lag_is_the_servers_visibility_delay() {
    const D_MS: f64 = 300.0;
    const EVERY_MS: f64 = 50.0;
    let server = FreshServer::start(Duration::from_millis(D_MS as u64), 0);
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{SCHEMA}{}
ingest steady {{
  into fake via ilp_http
  rows s
  batch 200 rows
  rate 20_000/s
  duration 3s
  probe visible every 50ms within 10s
}}
",
        server.target()
    );
    let (code, p, printed) = run(dir.path(), &text);
    assert_eq!(code, 0, "{printed}\n{p:#}");
    // The measured figures, for whoever runs this with --nocapture.
    for l in printed.lines().filter(|l| l.contains("freshness")) {
        eprintln!("D {D_MS} ms: {}", l.trim());
    }
    let f = &p["freshness"];
    assert_eq!(u(&p["rows_sent"]), server.rows(), "{p:#}");
    assert!(u(&p["rows_sent"]) >= 40_000, "{p:#}");
    assert_eq!(u(&f["probes_failed"]), 0, "{f:#}");
    // 3 s of sending and D after it, every 50 ms: about 66 probes; a loaded machine fewer.
    assert!(u(&f["probes_sent"]) >= 30, "{f:#}");
    let (counts, _) = server.counts();
    // The server also answered the baseline count.
    assert_eq!(counts, u(&f["probes_sent"]) + 1);
    let p50 = ms(&f["lag"]["p50_us"]);
    assert!(
        (D_MS - EVERY_MS..=D_MS + EVERY_MS + ALLOWANCE_MS).contains(&p50),
        "lag p50 {p50} ms, rows visible {D_MS} ms after they arrive: {f:#}"
    );
    let after = f["all_visible_after_s"].as_f64().expect("all visible") * 1e3;
    assert!(
        (D_MS - EVERY_MS..=D_MS + EVERY_MS + ALLOWANCE_MS).contains(&after),
        "all visible {after} ms after sending ended, D {D_MS} ms: {f:#}"
    );
    assert_eq!(u(&f["rows_target"]), u(&p["rows_sent"]));
    // The samples add up: each saw at most what had been sent before the next one, and the
    // batches they saw first are the lag's samples, each batch once.
    let samples = f["samples"].as_array().unwrap();
    assert_eq!(samples.len() as u64, u(&f["probes_sent"]));
    let last = samples.last().unwrap();
    assert_eq!(u(&last["visible"]), u(&p["rows_sent"]));
    for s in samples {
        assert!(u(&s["visible"]) <= u(&p["rows_sent"]));
        assert_eq!(s["lag_s"].is_null(), u(&s["batches"]) == 0, "{s}");
    }
    let batches = u(&p["rows_sent"]) / 200;
    assert_eq!(
        samples.iter().map(|s| u(&s["batches"])).sum::<u64>(),
        batches
    );
    assert_eq!(u(&f["lag"]["count"]), batches, "{f:#}");
    assert!(
        printed.contains("freshness  lag p50 ")
            && printed.contains(" batches (")
            && printed.contains("probes every 50ms; resolution 50ms + probe p99")
            && printed.contains("after sending ended"),
        "{printed}"
    );

    // The series: every probe in the interval its answer came in, the lag of each well-filled
    // interval about D, and the intervals' lag histograms merge to the report's.
    let (rows, logged) = series_of(dir.path(), &p);
    let answered: u64 = rows.iter().map(|r| r.probes).sum();
    assert_eq!(answered, u(&f["probes_sent"]), "{rows:?}");
    assert_eq!(rows.iter().map(|r| r.probes_failed).sum::<u64>(), 0);
    // (The first D of sending has probes that see nothing yet: no lag in their interval.)
    let full: Vec<&IngestInterval> = rows
        .iter()
        .filter(|r| r.probes >= 5 && r.lag_p50_us.is_some())
        .collect();
    assert!(full.len() >= 3, "3 s of sending in 1 s intervals: {rows:?}");
    for r in &full {
        let p50 = r.lag_p50_us.expect("a lag") as f64 / 1000.0;
        assert!(
            (D_MS - EVERY_MS..=D_MS + EVERY_MS + ALLOWANCE_MS).contains(&p50),
            "interval at {} lag p50 {p50} ms, D {D_MS} ms: {rows:?}",
            r.start_ms
        );
        eprintln!(
            "D {D_MS} ms: interval {} ms: {} probes, lag p50 {p50} ms max {} ms, visible {:?}",
            r.start_ms,
            r.probes,
            r.lag_max_us.unwrap() as f64 / 1000.0,
            r.visible
        );
    }
    // The last count, after sending ended (in an interval of no measured time), saw every row.
    let last = rows.iter().rev().find(|r| r.visible.is_some()).unwrap();
    assert_eq!(last.visible, Some(u(&p["rows_sent"])), "{rows:?}");
    let lag = series::merged(&logged, series::TAG_LAG).expect("lag histograms");
    assert_eq!(lag.len(), u(&f["lag"]["count"]));
    assert_eq!(lag.value_at_quantile(0.5), u(&f["lag"]["p50_us"]));
    assert_eq!(lag.max(), u(&f["lag"]["max_us"]));
    let tagged = |tag: &str| {
        logged
            .iter()
            .filter(|l| l.tag.as_deref() == Some(tag))
            .count()
    };
    assert_eq!(tagged(series::TAG_LAG), rows.len());
    assert_eq!(tagged(series::TAG_BATCH), rows.len());
}

#[test]
fn failed_probes_are_counted_and_the_rows_still_judged() {
    let server = FreshServer::start(Duration::from_millis(100), 2);
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{SCHEMA}{}
ingest steady {{
  into fake via ilp_http
  rows s
  batch 200 rows
  rate 10_000/s
  duration 1s
  probe visible every 20ms within 10s
}}
",
        server.target()
    );
    let (code, p, printed) = run(dir.path(), &text);
    let f = &p["freshness"];
    // Count 1 (the baseline) answered; from there every other count fails.
    let (counts, failed) = server.counts();
    assert_eq!(u(&f["probes_sent"]), counts - 1, "{f:#}");
    assert_eq!(u(&f["probes_failed"]), failed, "{f:#}");
    assert!(failed >= 10, "{f:#}");
    assert!(f["first_error"].as_str().unwrap().contains("500"), "{f:#}");
    // The series counts them where they failed.
    let (rows, _) = series_of(dir.path(), &p);
    assert_eq!(rows.iter().map(|r| r.probes_failed).sum::<u64>(), failed);
    assert_eq!(
        rows.iter().map(|r| r.probes + r.probes_failed).sum::<u64>(),
        u(&f["probes_sent"])
    );
    // Half the probes failed, not more: a warning, and the phase stands on its rows.
    assert_eq!(code, 0, "{printed}\n{p:#}");
    assert_eq!(p["status"], "ok");
    assert!(
        p["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("probes failed")),
        "{p:#}"
    );
    assert!(printed.contains(" failed"), "{printed}");
    assert_eq!(u(&p["rows_sent"]), server.rows());
    assert_eq!(u(&p["rows_acked"]), server.rows());
    assert!(f["all_visible_after_s"].as_f64().is_some(), "{f:#}");
    assert_eq!(p["errors"].as_object().unwrap().len(), 0, "{p:#}");
}

#[test]
fn a_probe_that_cannot_count_fails_the_phase_but_not_its_rows() {
    let server = FreshServer::start(Duration::ZERO, 1);
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{SCHEMA}{}
ingest steady {{
  into fake via ilp_http
  rows s limit 5_000
  batch 500 rows
  probe visible every 20ms
}}
",
        server.target()
    );
    let (code, p, printed) = run(dir.path(), &text);
    assert_eq!(code, 1, "{printed}");
    assert_eq!(u(&p["rows_sent"]), 5_000);
    assert_eq!(u(&p["rows_acked"]), 5_000);
    assert_eq!(server.rows(), 5_000);
    let f = &p["freshness"];
    assert_eq!(u(&f["probes_sent"]), 0, "{f:#}");
    let failures = p["failures"].to_string();
    assert!(
        failures.contains("probe visible: no probe was sent: its count could not be prepared"),
        "{failures}"
    );
    // Nothing else failed: the rows were all sent and acknowledged.
    assert_eq!(p["failures"].as_array().unwrap().len(), 1, "{failures}");
}

#[test]
fn postgres_rows_are_visible_at_once() {
    if !servers::pg_up() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"{SCHEMA}
target pg {{
  pg "{url}"
}}
ingest steady {{
  into pg via pg table "wlrun_fresh_probe"
  rows s
  batch 500 rows
  rate 10_000/s
  duration 2s
  teardown drop
  probe visible every 50ms within 10s
  verify visible within 10s
}}
"#,
        url = servers::pg_url()
    );
    let (code, p, printed) = run(dir.path(), &text);
    assert_eq!(code, 0, "{printed}\n{p:#}");
    let f = &p["freshness"];
    assert_eq!(f["language"], "sql");
    assert!(u(&f["probes_sent"]) >= 10, "{f:#}");
    assert_eq!(u(&f["probes_failed"]), 0, "{f:#}");
    // COPY is committed when its batch is answered: visible as soon as it counts as sent.
    let p50 = ms(&f["lag"]["p50_us"]);
    assert!(p50 <= 3.0 * 50.0 + ALLOWANCE_MS, "lag p50 {p50} ms: {f:#}");
    let after = f["all_visible_after_s"].as_f64().expect("all visible");
    assert!(after <= 0.05 + ALLOWANCE_MS / 1e3, "{f:#}");
    // verify visible keeps its own figures beside the probe.
    assert_eq!(u(&p["rows_visible"]), u(&p["rows_sent"]));
}

#[test]
fn a_promql_probe_sees_victoria_metrics_rows_become_searchable() {
    let Some(vm) = Victoria::start("100y") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"{SCHEMA}
target victoria {{
  dialect victoriametrics
  ilp_http "http://127.0.0.1:{http}"
  http     "http://127.0.0.1:{http}" as api
  count samples via api promql "sum(count_over_time({{__name__=~\"${{table}}_.*\"}}[${{end - start}}]))"
}}
ingest steady {{
  into victoria via ilp_http
  rows s
  batch 500 rows
  rate 10_000/s
  duration 2s
  probe visible every 100ms via victoria.api within 30s
}}
"#,
        http = vm.http
    );
    let (code, p, printed) = run(dir.path(), &text);
    for l in printed.lines().filter(|l| l.contains("freshness")) {
        eprintln!("VictoriaMetrics: {}", l.trim());
    }
    assert_eq!(code, 0, "{printed}\n{p:#}");
    let f = &p["freshness"];
    assert_eq!(f["language"], "promql");
    assert_eq!(u(&f["probes_failed"]), 0, "{f:#}");
    assert!(u(&f["probes_sent"]) >= 10, "{f:#}");
    assert!(u(&f["lag"]["count"]) > 0, "{f:#}");
    assert_eq!(u(&f["last_visible"]), u(&p["rows_sent"]), "{f:#}");
    assert!(f["all_visible_after_s"].as_f64().is_some(), "{f:#}");
}

/// Batches 500 ms apart, ten probes between two of them, rows visible `d` after they arrive:
/// the exit code, the phase and what the run printed. Each of the 6 batches is one sample.
fn spaced_batches(d: Duration) -> (i32, Value, String, FreshServer, tempfile::TempDir) {
    let server = FreshServer::start(d, 0);
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{SCHEMA}{}
ingest spaced {{
  into fake via ilp_http
  rows s limit 6_000
  batch 1_000 rows
  rate 2_000/s
  probe visible every 50ms within 10s
}}
",
        server.target()
    );
    let (code, p, printed) = run(dir.path(), &text);
    for l in printed.lines().filter(|l| l.contains("freshness")) {
        eprintln!("D {} ms, batches 500 ms apart: {}", d.as_millis(), l.trim());
    }
    (code, p, printed, server, dir)
}

/// The bound a lag sample keeps above the server's delay: one interval, the probe's own
/// latency (p99) and the machine's allowance.
fn resolution_ms(f: &Value) -> f64 {
    f["every_s"].as_f64().unwrap() * 1e3 + ms(&f["probe_latency"]["p99_us"]) + ALLOWANCE_MS
}

#[test]
fn the_lag_is_per_batch_not_the_batch_spacing() {
    const D_MS: f64 = 300.0;
    let (code, p, printed, server, dir) = spaced_batches(Duration::from_millis(D_MS as u64));
    assert_eq!(code, 0, "{printed}\n{p:#}");
    assert_eq!(u(&p["rows_sent"]), 6_000, "{p:#}");
    assert_eq!(server.rows(), 6_000);
    let f = &p["freshness"];
    let bound = D_MS + resolution_ms(f);
    let p50 = ms(&f["lag"]["p50_us"]);
    assert!(
        (D_MS..=bound).contains(&p50),
        "lag p50 {p50} ms, rows visible {D_MS} ms after they arrive (at most {bound} ms): {f:#}"
    );
    // One sample per batch, taken by the first probe that saw it, however many probes follow.
    assert_eq!(u(&f["lag"]["count"]), 6, "{f:#}");
    assert!(u(&f["probes_sent"]) >= 30, "{f:#}");
    let max = ms(&f["lag"]["max_us"]);
    assert!(max <= bound, "lag max {max} ms, at most {bound} ms: {f:#}");
    // The last batch's lag, as the probe that first saw every row measured it.
    let after = f["all_visible_after_s"].as_f64().expect("all visible") * 1e3;
    assert!(
        (D_MS..=bound).contains(&after),
        "all visible {after} ms after sending ended, D {D_MS} ms: {f:#}"
    );
    // A probe gives a lag only for the batches it saw first: most probes see nothing new.
    let samples = f["samples"].as_array().unwrap();
    let with_lag = samples.iter().filter(|s| !s["lag_s"].is_null()).count();
    assert_eq!(with_lag, 6, "{f:#}");
    assert_eq!(
        samples.iter().map(|s| u(&s["batches"])).sum::<u64>(),
        6,
        "{f:#}"
    );
    // The series holds the same samples: its lag histograms merge to the report's.
    let (_, logged) = series_of(dir.path(), &p);
    let lag = series::merged(&logged, series::TAG_LAG).expect("lag histograms");
    assert_eq!(lag.len(), 6);
    assert_eq!(lag.value_at_quantile(0.5), u(&f["lag"]["p50_us"]));
    assert_eq!(lag.max(), u(&f["lag"]["max_us"]));
}

#[test]
fn rows_visible_at_once_lag_under_the_resolution() {
    let (code, p, printed, _server, _dir) = spaced_batches(Duration::ZERO);
    assert_eq!(code, 0, "{printed}\n{p:#}");
    let f = &p["freshness"];
    let bound = resolution_ms(f);
    let p50 = ms(&f["lag"]["p50_us"]);
    assert!(
        p50 <= bound,
        "lag p50 {p50} ms, rows visible at once (at most {bound} ms): {f:#}"
    );
    assert_eq!(u(&f["lag"]["count"]), 6, "{f:#}");
    let after = f["all_visible_after_s"].as_f64().expect("all visible") * 1e3;
    assert!(
        after <= bound,
        "all visible {after} ms after sending ended: {f:#}"
    );
}
