//! Result streaming (docs/report-format.md, "Result streaming") against servers whose schedule
//! the test sets (`oracles::streaming`, and the QWP query server's delays): each result's first
//! row comes `D1` after the query, the rest in writes `D2` apart. The time to first result is at
//! least D1 (the oracle waits D1 after reading the query, which is after the send), the
//! streaming span follows the oracle's writes, and the rows and bytes after the first piece,
//! and the bytes per row, are exactly what the oracle wrote. A real PostgreSQL gives first-row
//! figures too.
//!
//! One test at a time (a lock): spans are timed.

#[path = "common/cli.rs"]
mod cli;
#[path = "common/oracles/mod.rs"]
mod oracles;
#[path = "common/qwp_query_server.rs"]
mod qwp_query_server;
#[path = "common/servers.rs"]
mod servers;

use std::sync::Mutex;
use std::time::Duration;

use oracles::streaming::{Answer, Schedule, StreamServer};
use serde_json::Value;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const D1: Duration = Duration::from_millis(150);
const D2: Duration = Duration::from_millis(60);
const ROWS: u64 = 301;
const CHUNKS: u64 = 4;
const QUERIES: u64 = 3;

fn schedule() -> Schedule {
    Schedule {
        first_delay: D1,
        gap: D2,
        rows: ROWS,
        chunks: CHUNKS,
    }
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Runs `QUERIES` queries against `endpoint` (a target's body) and returns the phase.
fn run(endpoint: &str, name: &str) -> Value {
    let text = format!(
        "workload w {{ seed 1 }}\ntarget svc {{\n  dialect questdb\n{endpoint}\n}}\nquery one {{ sql \"SELECT x FROM t\" }}\nrun r {{\n  against svc.{name}\n  queries one\n  count {QUERIES} per query\n  workers 1\n}}\n"
    );
    let (code, report, err) = cli::run_json(&text, &[], &["--no-server-versions"]);
    let phase = report["cells"][0]["phases"][0].clone();
    assert_eq!(code, 0, "{err}\n{phase}");
    phase
}

/// The figures of one type and of the run against what the oracle wrote.
fn check(what: &str, phase: &Value, answers: &[Answer]) {
    assert_eq!(answers.len() as u64, QUERIES, "{what}: {answers:?}");
    let t = &phase["query_types"][0]["streaming"];
    eprintln!("{what}: {t}");
    assert_eq!(
        &phase["streaming"], t,
        "{what}: one type, so the run's are the type's"
    );
    let first = &t["first_result"];
    assert_eq!(u(&first["count"]), QUERIES, "{what}: {t}");
    let d1 = D1.as_micros() as u64;
    // The lower bound is exact; the upper one is a margin for a loaded box.
    assert!(
        u(&first["min_us"]) >= d1,
        "{what}: first result before D1: {t}"
    );
    assert!(u(&first["max_us"]) <= d1 + 1_000_000, "{what}: {t}");
    // Every first result came no later than its query's whole latency.
    assert!(
        u(&first["max_us"]) <= u(&phase["latency"]["max_us"]),
        "{what}: {phase}"
    );
    assert_eq!(u(&t["streamed_queries"]), QUERIES, "{what}: {t}");
    assert_eq!(u(&t["single_piece_queries"]), 0, "{what}: {t}");
    assert_eq!(u(&t["streamed_rows"]), QUERIES * (ROWS - 1), "{what}: {t}");
    let after_first: u64 = answers.iter().map(|a| a.bytes - a.first_bytes).sum();
    assert_eq!(u(&t["streamed_bytes"]), after_first, "{what}: {t}");
    let all: u64 = answers.iter().map(|a| a.bytes).sum();
    assert_eq!(u(&t["egress_bytes"]), all, "{what}: {t}");
    assert_eq!(u(&t["egress_rows"]), QUERIES * ROWS, "{what}: {t}");
    let per_row = t["egress_bytes_per_row"].as_f64().unwrap();
    assert!(
        (per_row - all as f64 / (QUERIES * ROWS) as f64).abs() < 1e-9,
        "{what}: {t}"
    );
    // The span follows the oracle's writes (each at least (CHUNKS - 1) gaps long), not the
    // send: timed from the send it would be D1 longer per query.
    let oracle: f64 = answers.iter().map(|a| a.span.as_secs_f64()).sum();
    let gaps = (QUERIES * (CHUNKS - 1)) as f64 * D2.as_secs_f64();
    assert!(oracle >= gaps, "{answers:?}");
    let span = t["streaming_s"].as_f64().unwrap();
    let d1 = QUERIES as f64 * D1.as_secs_f64();
    assert!(
        span >= oracle * 0.8 && span <= oracle + d1 / 2.0,
        "{what}: streaming span {span}s, the oracle wrote over {oracle}s\n{t}"
    );
    let rate = t["rows_per_s"].as_f64().unwrap();
    assert!(
        (rate - (QUERIES * (ROWS - 1)) as f64 / span).abs() < 1e-6 * rate,
        "{what}: {t}"
    );
}

#[test]
fn pg_first_datarow_and_streaming_follow_the_servers_schedule() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = StreamServer::pg(schedule());
    let phase = run(
        &format!(
            "  pg \"{}\" {{ statements simple  timeout 30s }}",
            server.pg_url()
        ),
        "pg",
    );
    check("pg", &phase, &server.answers());
}

#[test]
fn http_first_dataset_row_and_streaming_follow_the_servers_schedule() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = StreamServer::http(schedule());
    let phase = run(
        &format!("  http \"{}\" {{ timeout 30s }}", server.http_url()),
        "http",
    );
    check("http", &phase, &server.answers());
}

#[test]
fn a_real_postgresql_reports_its_first_datarow() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !servers::pg_up() {
        return;
    }
    let text = format!(
        "workload w {{ seed 1 }}\ntarget db {{ pg \"{}\" }}\nquery many {{ sql \"SELECT g, md5(g::text) FROM generate_series(1, 2000) g\" }}\nrun r {{\n  against db.pg\n  queries many\n  count 20 per query\n  workers 1\n}}\n",
        servers::pg_url()
    );
    let (code, report, err) = cli::run_json(&text, &[], &["--no-server-versions"]);
    let phase = &report["cells"][0]["phases"][0];
    assert_eq!(code, 0, "{err}\n{phase}");
    let t = &phase["query_types"][0]["streaming"];
    eprintln!("real PostgreSQL: {t}\nlatency {}", phase["latency"]);
    let first = &t["first_result"];
    assert_eq!(u(&first["count"]), 20, "{t}");
    assert!(u(&first["min_us"]) > 0, "{t}");
    assert!(
        u(&first["max_us"]) <= u(&phase["latency"]["max_us"]),
        "{phase}"
    );
    assert!(
        u(&first["p50_us"]) <= u(&phase["latency"]["p50_us"]),
        "{phase}"
    );
    assert_eq!(u(&t["egress_rows"]), 20 * 2000, "{t}");
    // A DataRow of an int4 and a 32-character text is 4 + 1 + 2 + 4 + 4 + 4 + 32 = 51 bytes,
    // so the whole result's bytes per row are at least that.
    let per_row = t["egress_bytes_per_row"].as_f64().unwrap();
    assert!((51.0..80.0).contains(&per_row), "{t}");
}

/// QWP: batches of 100 rows, batch 0 D1 after the query was read, the 3 others D2 apart (the
/// server runs the SQL on PostgreSQL); the first piece is batch 0's 100 rows.
#[test]
fn qwp_first_batch_and_streaming_follow_the_servers_schedule() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !servers::pg_up() {
        return;
    }
    let options = qwp_query_server::Options {
        batch_rows: 100,
        first_delay: D1,
        batch_gap: D2,
        ..Default::default()
    };
    // The server's tasks run on this runtime's threads while the run goes on.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(qwp_query_server::QwpQueryServer::start(
        Some(servers::pg_url()),
        options,
    ));
    let url = server.url();
    let text = format!(
        "workload w {{ seed 1 }}\ntarget svc {{\n  dialect questdb\n  qwp \"{url}\" {{ timeout 30s }}\n}}\nquery one {{ sql \"SELECT g::int8 AS x FROM generate_series(1, {ROWS}) g\" }}\nrun r {{\n  against svc.qwp\n  queries one\n  count {QUERIES} per query\n  workers 1\n}}\n"
    );
    let (code, report, err) = cli::run_json(&text, &[], &["--no-server-versions"]);
    let phase = &report["cells"][0]["phases"][0];
    assert_eq!(code, 0, "{err}\n{phase}");
    let wire = server.wire();
    assert_eq!(wire.len() as u64, QUERIES, "{wire:?}");
    let t = &phase["query_types"][0]["streaming"];
    eprintln!("qwp: {t}");
    let first = &t["first_result"];
    assert_eq!(u(&first["count"]), QUERIES, "{t}");
    assert!(u(&first["min_us"]) >= D1.as_micros() as u64, "{t}");
    assert!(
        u(&first["max_us"]) <= D1.as_micros() as u64 + 1_000_000,
        "{t}"
    );
    assert_eq!(u(&t["streamed_queries"]), QUERIES, "{t}");
    assert_eq!(u(&t["streamed_rows"]), QUERIES * (ROWS - 100), "{t}");
    let after_first: u64 = wire.iter().map(|w| w.bytes - w.first_bytes).sum();
    let all: u64 = wire.iter().map(|w| w.bytes).sum();
    assert_eq!(u(&t["streamed_bytes"]), after_first, "{t}");
    assert_eq!(u(&t["egress_bytes"]), all, "{t}");
    assert_eq!(u(&t["egress_rows"]), QUERIES * ROWS, "{t}");
    // 4 batches: 3 gaps of D2 from batch 0 to the last (RESULT_END follows it at once).
    let gaps = (QUERIES * (CHUNKS - 1)) as f64 * D2.as_secs_f64();
    let span = t["streaming_s"].as_f64().unwrap();
    assert!(
        span >= gaps * 0.8 && span <= gaps + QUERIES as f64 * D1.as_secs_f64() / 2.0,
        "streaming span {span}s for {gaps}s of gaps\n{t}"
    );
}
