//! An ingest's rate against a server that knows its own capacity (oracles/intake.rs): a
//! rate-paced ingest reports the rate its schedule asked when the server keeps up, whatever
//! its batch size, and the server's capacity when it does not (docs/report-format.md,
//! "Ingest phases": `elapsed_s` and `rows_per_s`).

use serde_json::Value;

#[path = "common/cli.rs"]
mod cli;
#[path = "common/oracles/mod.rs"]
mod oracles;

use oracles::intake::IntakeServer;

/// 100 hosts, one row a second each: `r` holds `hosts x secs` rows.
fn schema(secs: u64) -> String {
    format!(
        r#"
workload t {{ seed 7 }}
schema r {{
  series host: symbol = format("h%d", n) for n in 0..100
  field  v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for {secs}s
}}
"#
    )
}

/// Runs an ingest of `r` (`secs` seconds of 100 hosts) into `server` with `clauses` besides
/// its `into` and `rows`: exit code, report and standard error.
fn run(server: &IntakeServer, secs: u64, clauses: &str) -> (i32, Value, String) {
    let wl = format!(
        "{}{}ingest i {{ into intake via ilp_http  rows r  {clauses} }}\n",
        schema(secs),
        server.target()
    );
    let dir = tempfile::tempdir().unwrap();
    cli::run_json_in(dir.path(), &wl, &[])
}

fn ingest(r: &Value) -> &Value {
    &r["cells"][0]["phases"][0]
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn within(x: f64, truth: f64, share: f64) -> bool {
    (x - truth).abs() <= truth * share
}

/// 20,000 rows at 5,000/s in batches of 2,500: a batch every 0.5 s, eight of them. Measured from
/// the first send to the last answer (3.5 s and a little) the rate was 5,600-5,700/s; the
/// schedule covers 4 s.
#[test]
fn big_batches_on_a_server_that_keeps_up_report_the_rate_asked() {
    let server = IntakeServer::start(0.0);
    let (code, r, err) = run(&server, 200, "batch 2500 rows  rate 5000/s");
    assert_eq!(code, 0, "{err}");
    let p = ingest(&r);
    eprintln!(
        "batches of 2,500 at 5,000/s by count: {} rows/s over {} s",
        p["rows_per_s"], p["elapsed_s"]
    );
    assert_eq!(server.rows(), 20_000);
    assert_eq!(p["rows_acked"], 20_000);
    assert!(within(f(&p["rows_per_s"]), 5_000.0, 0.02), "{p}");
    assert!(f(&p["elapsed_s"]) >= 4.0, "{p}");
}

/// The same over a duration: 3 s at 5,000/s in batches of 2,500 sends six batches (at 0 ...
/// 2.5 s); their slots end at 3 s.
#[test]
fn big_batches_over_a_duration_report_the_rate_asked() {
    let server = IntakeServer::start(0.0);
    let (code, r, err) = run(&server, 3600, "batch 2500 rows  rate 5000/s  duration 3s");
    assert_eq!(code, 0, "{err}");
    let p = ingest(&r);
    eprintln!(
        "batches of 2,500 at 5,000/s for 3 s: {} rows/s over {} s",
        p["rows_per_s"], p["elapsed_s"]
    );
    assert_eq!(p["rows_acked"], 15_000, "{p}");
    assert!(within(f(&p["rows_per_s"]), 5_000.0, 0.02), "{p}");
}

/// A server that takes 2,500 rows/s, asked for 5,000/s: the rate reported is the server's.
#[test]
fn a_server_slower_than_the_target_reports_its_capacity() {
    let capacity = 2_500.0;
    let server = IntakeServer::start(capacity);
    let (code, r, err) = run(&server, 100, "batch 500 rows  rate 5000/s");
    let p = ingest(&r);
    assert_eq!(server.rows(), 10_000, "{err}");
    assert_eq!(p["rows_acked"], 10_000, "{p}");
    let rate = f(&p["rows_per_s"]);
    eprintln!(
        "capacity {capacity} rows/s asked 5,000/s: {rate} rows/s, batch p50 {} us",
        p["batch_latency"]["p50_us"]
    );
    assert!(within(rate, capacity, 0.02), "{rate} vs {capacity}: {p}");
    // Each batch of 500 rows takes the server 500 / 2,500 s; a batch waits for none before it
    // (one connection sends the next after the answer).
    let p50 = p["batch_latency"]["p50_us"].as_f64().unwrap() / 1e6;
    assert!((0.2..0.26).contains(&p50), "batch p50 {p50}s vs 0.2s: {p}");
    // It kept half its schedule's pace: the run says so and fails.
    assert_eq!(code, 1, "{err}");
}

/// A server that dies after 4 batches of a 2-second ingest due 10,000 rows at 5,000/s: its
/// remaining slots are unsent rows, not a smaller schedule (which once made "judged on the
/// 2,500 rows its span allowed" of a phase due 10,000).
#[test]
fn a_connection_lost_mid_run_leaves_its_slots_unsent() {
    let server = IntakeServer::start_dying(0.0, 4);
    let (code, r, err) = run(&server, 3600, "batch 500 rows  rate 5000/s  duration 2s");
    let p = ingest(&r);
    let s = &p["schedule"];
    eprintln!(
        "died after 4 batches: scheduled {} unsent {} achieved {} acked {}",
        s["scheduled_rows"], s["unsent_rows"], s["achieved_rate"], p["rows_acked"]
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(p["rows_acked"], 2_000, "{p}");
    assert_eq!(s["scheduled_rows"], 10_000, "{p}");
    let sent = p["rows_sent"].as_u64().unwrap() + s["cut_off_rows"].as_u64().unwrap();
    assert_eq!(s["unsent_rows"].as_u64().unwrap(), 10_000 - sent, "{p}");
    assert!(f(&s["achieved_rate"]) < 0.5, "{p}");
}

/// Runs 2,000 rows in batches of 500 at 5,000/s into `server`, whose endpoint waits 1 s for
/// an answer: the third batch is the one the server reads whole and does not answer.
fn unanswered(server: &IntakeServer) -> (i32, Value, String) {
    let wl = format!(
        "{}target intake {{ ilp_http \"{}\" {{ timeout 1s }} }}\n\
         ingest i {{ into intake via ilp_http  rows r  batch 500 rows  rate 5000/s }}\n",
        schema(20),
        server.url()
    );
    let dir = tempfile::tempdir().unwrap();
    cli::run_json_in(dir.path(), &wl, &[])
}

/// What a server that read a batch whole and never confirmed it must show in the report: the
/// batch sent and not acknowledged, nothing unsent, every scheduled row accounted for.
fn written_not_acked(server: &IntakeServer, code: i32, r: &Value, err: &str) {
    let p = ingest(r);
    let s = &p["schedule"];
    eprintln!(
        "server received {} rows, answered {}: sent {} acked {} unsent {}",
        server.received(),
        server.rows(),
        p["rows_sent"],
        p["rows_acked"],
        s["unsent_rows"]
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(server.received(), 1_500, "{p}");
    assert_eq!(server.rows(), 1_000, "{p}");
    // Written is sent: the third batch reached the server.
    assert_eq!(p["rows_sent"], server.received(), "{p}");
    assert_eq!(p["rows_acked"], server.rows(), "{p}");
    assert_eq!(s["unsent_rows"], 0, "{p}");
    let accounted = p["rows_sent"].as_u64().unwrap()
        + s["cut_off_rows"].as_u64().unwrap()
        + s["unsent_rows"].as_u64().unwrap();
    assert_eq!(s["scheduled_rows"].as_u64().unwrap(), accounted, "{p}");
    let failures = p["failures"].to_string();
    assert!(!failures.contains("unsent"), "{failures}");
}

/// A server that reads the third batch whole and never answers: the client's `timeout`
/// fires. Its rows were once "not sent" ("1,000 unsent, the client or the server fell
/// behind"), though every byte of them had reached the server.
#[test]
fn a_batch_written_whole_then_timed_out_is_sent_not_acknowledged() {
    let server = IntakeServer::start_silent(2);
    let (code, r, err) = unanswered(&server);
    written_not_acked(&server, code, &r, &err);
    assert_eq!(ingest(&r)["errors"]["timeout"]["count"], 1, "{r}");
}

/// The same batch read whole, then the connection closed unanswered.
#[test]
fn a_batch_written_whole_then_closed_unanswered_is_sent_not_acknowledged() {
    let server = IntakeServer::start_dying(0.0, 2);
    let (code, r, err) = unanswered(&server);
    written_not_acked(&server, code, &r, &err);
    assert_eq!(ingest(&r)["errors"]["connection"]["count"], 1, "{r}");
}
