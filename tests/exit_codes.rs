//! Exit codes a CI can act on (docs/language.md, "Exit codes"): a run the environment stopped
//! before it measured anything (a refused connection, a refused password, a refused
//! certificate) exits 3; a run that measured and failed (an HTTP 401 is the server's answer, a
//! threshold missed against a server of known service time) exits 1, and so does a run where
//! both happened. A refusal fails the phase at its first connection: the refusing oracle
//! (tests/common/oracles/refuse.rs) counts one attempt per worker, not one per query. And
//! `sslmode prefer` against a server offering TLS warns once per run and endpoint.

#[path = "common/cli.rs"]
mod cli;
#[path = "common/http_server.rs"]
mod http_server;
#[path = "common/oracles/mod.rs"]
mod oracles;
#[path = "common/servers.rs"]
mod servers;

use std::time::Duration;

use serde_json::Value;

use http_server::{Behaviour, ServerHandle};
use oracles::load::{LoadServer, Work};
use oracles::refuse::{RefuseServer, PASSWORD_REFUSED};

const COULD_NOT_MEASURE: i32 = 3;
const FAILED: i32 = 1;

/// Workers of the refused runs: each may try once, and only once.
const WORKERS: u64 = 2;
/// Queries each refused run asks for: before the refusal was remembered, each one connected.
const QUERIES: u64 = 50;

/// The first message of the phase's `connect` errors: what stopped it from measuring.
fn connect_error(p: &Value) -> &str {
    p["errors"]["connect"]["first"]
        .as_str()
        .unwrap_or_else(|| panic!("no connect error: {p:#}"))
}

fn phases(report: &Value) -> Vec<Value> {
    report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["phases"].as_array().unwrap().clone())
        .collect()
}

/// A port nothing listens on (bound, then let go).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// A pg query run of `count` queries on `WORKERS` workers against `url` with `options`.
fn query_run(url: &str, options: &str, count: u64) -> String {
    format!(
        r#"workload w {{ seed 1 }}
target db {{ pg "{url}" {{ connect_timeout 5s {options} }} }}
query q {{ sql "SELECT 1" }}
run r {{ against db.pg  queries q  count {count}  workers {WORKERS} }}
"#
    )
}

#[test]
fn a_refused_connection_could_not_measure() {
    let port = closed_port();
    let dir = tempfile::tempdir().unwrap();
    let out = cli::run_out(
        dir.path(),
        // A refused port is tried again (a server restarting comes back): few queries.
        &query_run(&format!("postgres://u:p@127.0.0.1:{port}/db"), "", 4),
        &[],
    );
    assert_eq!(out.code, COULD_NOT_MEASURE, "{}", out.printed());
    let p = out.phase();
    assert_eq!(p["status"], "failed");
    assert_eq!(p["ok"], 0);
    assert_eq!(p["errors"].as_object().unwrap().len(), 1, "{p:#}");
    let why = connect_error(&p);
    assert!(why.contains("cannot connect to db.pg"), "{why}");
    assert!(
        out.printed().contains("could not measure"),
        "{}",
        out.printed()
    );
}

/// An ingest whose workers cannot connect measured nothing either.
#[test]
fn an_ingest_to_a_refused_port_could_not_measure() {
    let port = closed_port();
    let text = format!(
        r#"workload w {{ seed 1 }}
target db {{ ilp_tcp "tcp://127.0.0.1:{port}" {{ connect_timeout 5s }} }}
schema s {{
  series host: symbol = format("h%d", n) for n in 0..10
  field  v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1h
}}
ingest load {{ into db via ilp_tcp table t  rows s  batch 100 rows  workers 2 }}
"#
    );
    let (code, report, err) = cli::run_json(&text, &[], &[]);
    assert_eq!(code, COULD_NOT_MEASURE, "{err}\n{report:#}");
    let p = &phases(&report)[0];
    assert_eq!(p["rows_sent"], 0);
    assert!(connect_error(p).contains("cannot connect"), "{p:#}");
}

#[test]
fn a_wrong_password_is_refused_once_per_worker() {
    let server = RefuseServer::password();
    let dir = tempfile::tempdir().unwrap();
    let out = cli::run_out(
        dir.path(),
        &query_run(&server.url("wlrun", "wrong"), "sslmode disable", QUERIES),
        // Asking the server's version for the report's environment is one more attempt,
        // before the run: the truth here is the workers' alone.
        &["--no-server-versions"],
    );
    // The truth: the oracle counted the passwords it refused.
    let attempts = server.attempts();
    assert!(
        (1..=WORKERS).contains(&attempts),
        "{attempts} passwords sent for {QUERIES} queries on {WORKERS} workers"
    );
    assert_eq!(out.code, COULD_NOT_MEASURE, "{}", out.printed());
    let p = out.phase();
    assert_eq!(p["ok"], 0);
    // Each worker failed once, at its first connection; the rest was never sent.
    assert!(p["failed"].as_u64().unwrap() <= WORKERS, "{p:#}");
    assert_eq!(
        p["failed"].as_u64().unwrap() + p["unsent"].as_u64().unwrap(),
        QUERIES,
        "{p:#}"
    );
    let why = connect_error(&p);
    assert!(
        why.contains(PASSWORD_REFUSED) && why.contains("28P01"),
        "{why}"
    );
    let printed = out.printed();
    assert!(
        printed.contains("could not measure") && printed.contains(PASSWORD_REFUSED),
        "{printed}"
    );
}

#[test]
fn an_untrusted_certificate_is_refused_once_per_worker() {
    let server = RefuseServer::untrusted_tls();
    let dir = tempfile::tempdir().unwrap();
    let out = cli::run_out(
        dir.path(),
        &query_run(
            &server.url("wlrun", "pw"),
            r#"sslmode "verify-full""#,
            QUERIES,
        ),
        // As above: the workers' handshakes alone, not the version question's.
        &["--no-server-versions"],
    );
    let handshakes = server.handshakes();
    assert!(
        (1..=WORKERS).contains(&handshakes),
        "{handshakes} TLS handshakes for {QUERIES} queries on {WORKERS} workers"
    );
    assert_eq!(out.code, COULD_NOT_MEASURE, "{}", out.printed());
    let p = out.phase();
    assert_eq!(p["ok"], 0);
    let why = connect_error(&p);
    assert!(why.contains("not signed by a CA trusted here"), "{why}");
    assert!(out.printed().contains("could not measure"));
}

/// A 401 is the server's answer to the requests sent: measured, and failed.
#[test]
fn http_401_is_a_measured_failure() {
    let server = ServerHandle::start(Behaviour::ok().with_status(401));
    let text = format!(
        "workload w {{ seed 1 }}\ntarget svc {{ http \"{}\" }}\n\
         run r {{ against svc.http  request GET \"/\"  count 5 }}\n",
        server.url()
    );
    let (code, report, err) = cli::run_json(&text, &[], &[]);
    assert_eq!(code, FAILED, "{err}\n{report:#}");
    let p = &phases(&report)[0];
    assert_eq!(p["failed"], 5);
    assert!(p["errors"]["http_status"].is_object(), "{p:#}");
    assert_eq!(server.count(), 5);
}

/// Against a server that takes 5 ms per request, `p99 < 1ms` cannot hold: measured, failed.
#[test]
fn a_missed_threshold_is_a_measured_failure() {
    let server = LoadServer::start(Work::Serial(Duration::from_millis(5)));
    let text = format!(
        "workload w {{ seed 1 }}\ntarget svc {{ http \"{}\" }}\n\
         run r {{ against svc.http  request GET \"/\"  count 20  expect p99 < 1ms }}\n",
        server.url()
    );
    let (code, report, err) = cli::run_json(&text, &[], &[]);
    assert_eq!(code, FAILED, "{err}\n{report:#}");
    let p = &phases(&report)[0];
    assert_eq!(p["ok"], 20);
    assert!(p["latency"]["p99_us"].as_u64().unwrap() >= 5_000, "{p:#}");
}

/// A measured failure is the stronger news: one phase refused, one that measured and failed.
#[test]
fn a_measured_failure_wins_over_could_not_measure() {
    let port = closed_port();
    let server = LoadServer::start(Work::Serial(Duration::from_millis(5)));
    let text = format!(
        r#"workload w {{ seed 1 }}
target db {{ pg "postgres://u:p@127.0.0.1:{port}/db" {{ connect_timeout 5s }} }}
target svc {{ http "{}" }}
query q {{ sql "SELECT 1" }}
run refused {{ against db.pg  queries q  count 5 }}
run slow {{ against svc.http  request GET "/"  count 20  expect p99 < 1ms }}
"#,
        server.url()
    );
    let (code, report, err) = cli::run_json(&text, &[], &[]);
    let ps = phases(&report);
    assert!(connect_error(&ps[0]).contains("cannot connect"));
    assert_eq!(ps[1]["failed"], 0);
    assert_eq!(code, FAILED, "{err}\n{report:#}");
}

/// Two phases through the same `sslmode prefer` endpoint of a server offering TLS (the local
/// PostgreSQL, with its snakeoil certificate): the unverified TLS is said once for the run.
#[test]
fn prefer_warns_once_per_run_and_endpoint() {
    if !servers::pg_up() {
        return;
    }
    let text = format!(
        r#"workload w {{ seed 1 }}
target db {{ pg "{}" }}
query q {{ sql "SELECT 1" }}
run a {{ against db.pg  queries q  count 5 }}
run b {{ against db.pg  queries q  count 5 }}
"#,
        servers::pg_url()
    );
    let dir = tempfile::tempdir().unwrap();
    let out = cli::run_out(dir.path(), &text, &[]);
    assert_eq!(out.code, 0, "{}", out.printed());
    let ps = phases(&out.report);
    let tls = &ps[0]["connecting"]["tls"];
    if tls.is_null() || tls["full_handshakes"].as_u64().unwrap_or(0) == 0 {
        servers::missing("PostgreSQL offering TLS on 127.0.0.1:5432");
        return;
    }
    let printed = out.printed();
    let said = printed.matches("TLS without verification").count();
    assert_eq!(said, 1, "{printed}");
    // The report still says so in every phase, where a reader of one phase looks.
    for p in &ps {
        assert_eq!(p["connecting"]["tls"]["verification"], "off", "{p:#}");
    }
}
