//! The endpoint's `max_message`: no PostgreSQL-wire message larger than it is read. A server
//! that announces one (an ErrorResponse, a NoticeResponse, a DataRow of 100 MB) fails the
//! connection at its header, with an error naming the message, its size and the cap, before
//! any of its body is buffered; in clear and under TLS, at start-up and in answer to a query,
//! for query runs and ingests. The truth is the hostile oracle's
//! (tests/common/oracles/oversize.rs): how many body bytes the client took before it closed,
//! which stays within what the sockets hold instead of reaching the announced size. And a
//! message over the default cap passes under a raised one.

#[path = "common/cli.rs"]
mod cli;
#[path = "common/oracles/mod.rs"]
mod oracles;

use serde_json::Value;

use oracles::oversize::{At, Body, Oversize, OversizeServer};

const FAILED: i32 = 1;
const COULD_NOT_MEASURE: i32 = 3;

/// The default `max_message`.
const DEFAULT_CAP: u64 = 16 << 20;
/// The hostile messages' announced size: what buffering them whole would cost, per connection.
const HUGE: u32 = 100_000_000;

/// A pg query run of `count` simple queries on one worker against `url` with `options`.
fn query_run(url: &str, options: &str, count: u64) -> String {
    format!(
        r#"workload w {{ seed 1 }}
target db {{ pg "{url}" {{ statements simple  connect_timeout 5s  timeout 30s  {options} }} }}
query q {{ sql "SELECT x" }}
run r {{ against db.pg  queries q  count {count}  workers 1 }}
"#
    )
}

/// Every error the phase counted, class and first message, one per line.
fn errors(p: &Value) -> String {
    p["errors"]
        .as_object()
        .unwrap_or_else(|| panic!("no errors: {p:#}"))
        .iter()
        .map(|(class, e)| format!("{class}: {}\n", e["first"].as_str().unwrap_or("")))
        .collect()
}

/// Runs `text` against the oracle (its workers alone: no version question first).
fn run(text: &str) -> cli::RunOut {
    let dir = tempfile::tempdir().unwrap();
    cli::run_out(dir.path(), text, &["--no-server-versions"])
}

/// The oracle's truth for a message refused at its header: it went out, and the client took
/// no more of its body than the sockets hold, far from the whole.
fn refused_unread(server: &OversizeServer) {
    assert!(server.sent() >= 1, "the oracle never sent its message");
    assert_eq!(server.whole(), 0, "the client read the message whole");
    assert!(
        server.body_max() < DEFAULT_CAP,
        "the client took {} bytes of the message's body before it closed",
        server.body_max()
    );
}

#[test]
fn a_data_row_over_the_default_cap_fails_the_query_run_unread() {
    let server = OversizeServer::start(Oversize {
        kind: b'D',
        announced: HUGE,
        at: At::Query,
        body: Body::Whole,
    });
    // `sslmode prefer` (the default): the oracle answers 'N', and the session goes on in
    // clear, capped from the byte after that answer.
    let out = run(&query_run(&server.url(), "", 2));
    refused_unread(&server);
    // The session answered: a measured failure, not an environment that stopped the run.
    assert_eq!(out.code, FAILED, "{}", out.printed());
    let p = out.phase();
    assert_eq!(p["ok"], 0, "{p:#}");
    let why = errors(&p);
    assert!(
        why.contains("DataRow ('D') message of 100,000,000 bytes")
            && why.contains("`max_message` (16MiB)"),
        "{why}"
    );
}

/// Under TLS the cap watches the plaintext: a server that refuses the start-up with an
/// ErrorResponse announcing 100 MB, and then sends none of it, stops the run at once.
#[test]
fn an_error_response_over_the_cap_under_tls_could_not_measure() {
    let server = OversizeServer::tls(Oversize {
        kind: b'E',
        announced: HUGE,
        at: At::Startup,
        body: Body::Silent,
    });
    let out = run(&query_run(&server.url(), "sslmode require", 2));
    assert!(server.sent() >= 1, "the oracle never sent its message");
    assert_eq!(out.code, COULD_NOT_MEASURE, "{}", out.printed());
    let why = errors(&out.phase());
    assert!(
        why.starts_with("connect: ")
            && why.contains("ErrorResponse ('E') message of 100,000,000 bytes")
            && why.contains("`max_message` (16MiB)"),
        "{why}"
    );
}

/// An ingest's connections (setup, COPY) are under the cap too, and a lowered cap is named.
#[test]
fn a_notice_over_a_lowered_cap_stops_a_copy_ingest() {
    let server = OversizeServer::start(Oversize {
        kind: b'N',
        announced: HUGE,
        at: At::Startup,
        body: Body::Whole,
    });
    let url = server.url();
    let out = run(&format!(
        r#"workload w {{ seed 1 }}
target db {{ pg "{url}" {{ sslmode disable  connect_timeout 5s  max_message 1MiB }} }}
schema s {{
  series host: symbol = format("h%d", n) for n in 0..2
  field  v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 10s
}}
ingest load {{ into db via pg table t  rows s  batch 10 rows  workers 1 }}
"#
    ));
    refused_unread(&server);
    assert_eq!(out.code, COULD_NOT_MEASURE, "{}", out.printed());
    let p = out.phase();
    assert_eq!(p["rows_sent"], 0, "{p:#}");
    let why = errors(&p);
    assert!(
        why.contains("NoticeResponse ('N') message of 100,000,000 bytes")
            && why.contains("`max_message` (1MiB)"),
        "{why}"
    );
}

/// The cap is the option's: a 20 MiB row fails under the default and is read under 32 MiB.
#[test]
fn a_row_over_the_default_cap_passes_under_a_raised_one() {
    let server = OversizeServer::start(Oversize {
        kind: b'D',
        announced: 20 << 20,
        at: At::Query,
        body: Body::Whole,
    });
    let refused = run(&query_run(&server.url(), "sslmode disable", 1));
    assert_eq!(refused.code, FAILED, "{}", refused.printed());
    assert!(
        errors(&refused.phase()).contains("`max_message` (16MiB)"),
        "{}",
        refused.printed()
    );
    assert_eq!(server.whole(), 0);

    let out = run(&query_run(
        &server.url(),
        "sslmode disable  max_message 32MiB",
        2,
    ));
    assert_eq!(out.code, 0, "{}", out.printed());
    assert_eq!(out.phase()["ok"], 2, "{:#}", out.phase());
    assert_eq!(server.whole(), 2, "each query read its 20 MiB row whole");
}
