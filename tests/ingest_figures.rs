//! The figures of an ingest phase can be trusted: a rate counts what succeeded and is given
//! only over a span long enough to be one, acknowledgements are said to be missing only where
//! the protocol has none, and a `duration` ends the phase whatever the server does. Every
//! server here is started on 127.0.0.1:0.

#[path = "common/cli.rs"]
mod cli;
#[path = "common/http_server.rs"]
mod http_server;

use std::net::TcpListener;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use http_server::Behaviour;
use serde_json::Value;

/// 5 hosts x 60 minutes at 1 minute: 300 rows.
const SCHEMA: &str = r#"
schema cpu {
  series hostname: symbol = format("host_%d", n) for n in 0..5
  field  usage: long      = uniform(0, 100)
  timestamp ts = every 1m from 2016-01-01T00:00:00Z for 1h
}
"#;

fn run(target: &str, ingest: &str, json: bool) -> (tempfile::TempDir, Output) {
    let dir = tempfile::tempdir().unwrap();
    let wl = format!("workload t {{ seed 7 }}\n{target}\n{SCHEMA}\n{ingest}\n");
    std::fs::write(dir.path().join("w.wl"), wl).unwrap();
    let mut args = vec!["run", "w.wl", "--quiet"];
    if json {
        args.push("--json");
    }
    let out = cli::wlrun(dir.path(), &args);
    (dir, out)
}

fn report(out: &Output) -> Value {
    cli::report_of(out)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A port nothing listens on: bound, noted, closed.
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn sqlite_run(dir: &Path) -> Output {
    let wl = format!(
        "workload t {{ seed 7 }}\ntarget local {{ sqlite \"bench.db\" }}\n{SCHEMA}\n\
         ingest load {{ into local via sqlite  rows cpu  batch 100 rows }}\n"
    );
    std::fs::write(dir.join("w.wl"), wl).unwrap();
    cli::wlrun(dir, &["run", "w.wl", "--quiet", "--json"])
}

/// 300 rows into SQLite take a few milliseconds: no rate is made of that, in the JSON or on
/// the summary line, while the counts are all there.
#[test]
fn a_phase_too_short_has_no_rate() {
    let dir = tempfile::tempdir().unwrap();
    let out = sqlite_run(dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = report(&out);
    let p = &r["cells"][0]["phases"][0];
    assert_eq!(p["rows_acked"], 300, "{p}");
    let elapsed = p["elapsed_s"].as_f64().unwrap();
    assert!(elapsed > 0.0, "{p}");
    // The span is short on any machine this runs on; if it is not, the rates must be there.
    if elapsed < 0.1 {
        for field in ["rows_per_s", "send_rows_per_s", "ack_rows_per_s"] {
            assert_eq!(p[field], Value::Null, "{field}: {p}");
        }
        assert!(
            stderr(&out).contains("300 acked: too short to be a rate"),
            "{}",
            stderr(&out)
        );
    } else {
        assert!(p["rows_per_s"].as_f64().unwrap() > 0.0, "{p}");
    }
    assert_eq!(p["rate_counts"], "acked", "{p}");
}

/// A server that rejects every batch (HTTP 404) acknowledged nothing: the rate counts the
/// acknowledged rows, so it is 0, whatever was sent. Each answer waits 40 ms so that the span
/// is long enough to be a rate.
#[test]
fn a_load_the_server_rejected_has_a_rate_of_zero() {
    let server = http_server::start(
        Behaviour::ok()
            .with_status(404)
            .with_body("not found")
            .with_delay(Duration::from_millis(40)),
    );
    let target = format!("target db {{ ilp_http \"{}\" }}", server.url());
    let ingest = "ingest load { into db via ilp_http  rows cpu  batch 50 rows }";
    let (_dir, out) = run(&target, ingest, true);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = report(&out);
    let p = &r["cells"][0]["phases"][0];
    assert_eq!(p["status"], "failed", "{p}");
    assert_eq!(p["rows_sent"], 300, "{p}");
    assert_eq!(p["rows_acked"], 0, "{p}");
    assert_eq!(p["rate_counts"], "acked", "{p}");
    assert_eq!(p["rows_per_s"], 0.0, "{p}");
    assert_eq!(p["ack_rows_per_s"], 0.0, "{p}");
    // What was sent still has its own rate, under its own name.
    assert!(p["send_rows_per_s"].as_f64().unwrap() > 0.0, "{p}");
    let err = stderr(&out);
    assert!(err.contains("0 acked: 0.00 rows/s acked"), "{err}");
}

/// Without acknowledgements the rate counts what was sent, and says so.
#[test]
fn without_acks_the_rate_counts_rows_sent() {
    let (_dir, out) = run(
        "target t { null }",
        "ingest load { into t via null  rows cpu }",
        true,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = report(&out);
    let p = &r["cells"][0]["phases"][0];
    assert_eq!(p["rate_counts"], "sent", "{p}");
    assert_eq!(p["rows_acked"], Value::Null, "{p}");
    assert!(
        stderr(&out).contains("no acks (protocol has none)"),
        "{}",
        stderr(&out)
    );
}

/// A PostgreSQL phase whose setup cannot connect acknowledged nothing; it is not a protocol
/// without acknowledgements.
#[test]
fn a_pg_phase_failing_at_setup_shows_0_acked() {
    let port = closed_port();
    let target = format!("target db {{ pg \"postgres://wlrun:wlrun@127.0.0.1:{port}/wlrun\" }}");
    let (_dir, out) = run(&target, "ingest load { into db via pg  rows cpu }", false);
    // Nothing sent: the run could not measure.
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("setup:"), "{err}");
    assert!(err.contains("0 rows sent in 0.00s, 0 acked"), "{err}");
    assert!(!err.contains("no acks"), "{err}");
}

/// The same for ILP over HTTP when its count's endpoint cannot be reached at setup.
#[test]
fn an_ilp_http_phase_failing_at_setup_shows_0_acked() {
    let port = closed_port();
    let target = format!(
        "target db {{ ilp_http \"http://127.0.0.1:{port}\"\n  pg \"postgres://wlrun:wlrun@127.0.0.1:{port}/wlrun\" }}"
    );
    let (_dir, out) = run(
        &target,
        "ingest load { into db via ilp_http  rows cpu  verify visible via db.pg }",
        true,
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let r = report(&out);
    let p = &r["cells"][0]["phases"][0];
    assert!(p["failures"].to_string().contains("setup:"), "{p}");
    assert_eq!(p["rows_acked"], 0, "{p}");
    assert!(!stderr(&out).contains("no acks"), "{}", stderr(&out));
    let _ = stdout(&out);
}

/// The final table has one table for ingest phases and one for query and request runs: a
/// column never holds rows/s in one row and q/s in the next, and every header says its unit.
#[test]
fn the_final_table_splits_ingest_from_runs() {
    let dir = tempfile::tempdir().unwrap();
    let wl = format!(
        "workload t {{ seed 7 }}\ntarget local {{ sqlite \"bench.db\" }}\n{SCHEMA}\n\
         ingest load {{ into local via sqlite  rows cpu  batch 100 rows }}\n\
         query n {{ sql \"SELECT count(*) FROM cpu\" }}\n\
         run count_rows {{ against local.sqlite  queries n  count 5 }}\n"
    );
    std::fs::write(dir.path().join("w.wl"), wl).unwrap();
    let out = cli::wlrun(dir.path(), &["run", "w.wl", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let table = stdout(&out);
    let lines: Vec<&str> = table.lines().collect();
    let ingest_header = lines
        .iter()
        .position(|l| l.starts_with("cell  ingest  "))
        .unwrap_or_else(|| panic!("no ingest table:\n{table}"));
    let runs_header = lines
        .iter()
        .position(|l| l.starts_with("cell  run  "))
        .unwrap_or_else(|| panic!("no table of runs:\n{table}"));
    let words = |l: &str| {
        l.split("  ")
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        words(lines[ingest_header]),
        [
            "cell",
            "ingest",
            "endpoint",
            "status",
            "rows sent",
            "rows acked",
            "rows visible",
            "acked|sent rows/s",
            "socket B/row",
            "batch p99 ms",
            "errors"
        ],
        "{table}"
    );
    assert_eq!(
        words(lines[runs_header]),
        [
            "cell",
            "run",
            "kind",
            "endpoint",
            "status",
            "ok",
            "failed",
            "ok q|req/s",
            "latency p50 ms",
            "latency p99 ms",
            "errors"
        ],
        "{table}"
    );
    let ingest_row = lines[ingest_header + 1];
    assert!(
        ingest_row.starts_with("1     load    local.sqlite (sqlite)"),
        "{table}"
    );
    assert!(ingest_row.contains("300"), "{table}");
    let run_row = lines[runs_header + 1];
    assert!(run_row.contains("count_rows  queries"), "{table}");
    for l in [ingest_row, run_row] {
        assert!(
            !l.contains("q/s") && !l.contains("rows/s"),
            "units belong in the headers:\n{table}"
        );
    }
    assert!(
        lines.last().unwrap().starts_with("1 cell, 0 not ok, "),
        "{table}"
    );
}

/// A server that accepts connections and reads everything, and never answers.
fn silent_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 1 << 16];
                while let Ok(n) = std::io::Read::read(&mut stream, &mut buf) {
                    if n == 0 {
                        return;
                    }
                }
            });
        }
    });
    port
}

/// `duration` is a hard stop: against a server that never answers, the phase ends at its
/// duration plus the grace (1 s), not at the endpoint's 60 s timeout, and the batch still in
/// flight is neither sent nor acknowledged.
#[test]
fn a_duration_stops_an_ingest_against_a_server_that_never_answers() {
    let port = silent_server();
    let target = format!("target db {{ ilp_http \"http://127.0.0.1:{port}\" }}");
    let started = std::time::Instant::now();
    let (_dir, out) = run(
        &target,
        "ingest load { into db via ilp_http  rows cpu  duration 2s }",
        true,
    );
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "took {took:?}: {}",
        stderr(&out)
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = report(&out);
    let p = &r["cells"][0]["phases"][0];
    assert_eq!(p["status"], "failed", "{p}");
    assert_eq!(p["rows_sent"], 0, "{p}");
    assert_eq!(p["rows_acked"], 0, "{p}");
    assert_eq!(p["rows_cut_off"], 300, "{p}");
    assert_eq!(p["rows_expected"], 300, "{p}");
    assert!(p["elapsed_s"].as_f64().unwrap() < 4.0, "{p}");
    assert!(
        p["warnings"]
            .to_string()
            .contains("stopped at its duration (2.0s)"),
        "{p}"
    );
    assert!(
        p["failures"].to_string().contains(
            "cut off at its duration (2.0s) plus 1.0s of grace: 300 rows still unanswered"
        ),
        "{p}"
    );
    // No timeout was waited for: the endpoint's own 60 s never came into it.
    assert_eq!(p["errors"]["timeout"], Value::Null, "{p}");
}

/// A healthy server that is slower than the duration: sending stops at the duration, the
/// batch in flight then is answered within the grace, and the phase is judged on what its
/// span allowed, so it passes.
#[test]
fn a_duration_stopped_ingest_is_judged_on_what_its_span_allowed() {
    let server = http_server::start(
        Behaviour::ok()
            .with_status(204)
            .with_delay(Duration::from_millis(50)),
    );
    let target = format!("target db {{ ilp_http \"{}\" }}", server.url());
    let (_dir, out) = run(
        &target,
        "ingest load { into db via ilp_http  rows cpu  batch 10 rows  duration 300ms }",
        true,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = report(&out);
    let p = &r["cells"][0]["phases"][0];
    assert_eq!(p["status"], "ok", "{p}");
    let sent = p["rows_sent"].as_u64().unwrap();
    // 30 batches at 50 ms each take 1.5 s: 300 ms allow a handful.
    assert!(sent < 300, "{p}");
    assert_eq!(p["rows_acked"], sent, "{p}");
    assert_eq!(p["rows_cut_off"], 0, "{p}");
    assert_eq!(p["rows_expected"], sent, "{p}");
    assert!(
        p["warnings"].to_string().contains(&format!(
            "stopped at its duration (300ms): judged on the {sent} rows its span allowed, of the 300 planned"
        )),
        "{p}"
    );
}

/// A duration longer than the load changes nothing.
#[test]
fn a_duration_longer_than_the_load_changes_nothing() {
    let (_dir, out) = run(
        "target t { null }",
        "ingest load { into t via null  rows cpu  duration 1h }",
        true,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = report(&out);
    let p = &r["cells"][0]["phases"][0];
    assert_eq!(p["rows_sent"], 300, "{p}");
    assert_eq!(p["rows_expected"], 300, "{p}");
    assert_eq!(p["warnings"], serde_json::json!([]), "{p}");
}
