//! `wlrun run` ingest phases over QWP (QuestDB's binary columnar protocol over WebSocket)
//! against the in-test QWP server (tests/common/qwp_ingest_server.rs), which decodes every
//! message on its own: each test checks the report (`--json`) and what the server saw.
//!
//! - acknowledgement policies: `per_batch` against a server that sends its grouped OKs only on
//!   a PING, `publish` (OKs read as they come, the barrier at close), a server that never
//!   acknowledges (`ack_timeout`), delayed OKs (the batch latency);
//! - failures: an error status (the worker stops, only the rows of OKs before it count), a
//!   dropped connection (an error, no reconnect), a server taking smaller messages than the
//!   endpoint's `max_frame` (refused at connect);
//! - endpoint options: `max_frame` (batches split into DEFER_COMMIT messages), `path`,
//!   `precision`;
//! - `replay`, and the bytes per row of TSBS cpu-only.
//!
//! The default data set is TSBS cpu-only at 20 hosts x 60 epochs of 10 s (1,200 rows); the
//! rows the server committed are compared with `wlrun gen --format csv` of the same workload.

#[path = "common/cli.rs"]
mod cli;
use cli::wlrun;

#[path = "common/tsbs_names.rs"]
mod tsbs_names;
use tsbs_names::{GAUGES, TAGS};

#[path = "common/qwp_ingest_server.rs"]
mod qwp_ingest_server;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use qwp_ingest_server::*;
use serde_json::Value;

/// 2016-01-01T00:00:00Z, TSBS's default start.
const START_US: i64 = 1_451_606_400_000_000;
const STEP_US: i64 = 10_000_000;
const HOSTS: usize = 20;
const EPOCHS: usize = 60;
/// 20 hosts x 60 epochs.
const ROWS: u64 = (HOSTS * EPOCHS) as u64;

/// How long to wait for the server to see every connection end once wlrun has exited.
const SETTLE: Duration = Duration::from_secs(5);

// ------------------------------------------------------------------------------------------
// Running wlrun
// ------------------------------------------------------------------------------------------

/// A workload: TSBS cpu-only at `hosts` x `minutes` (10 s epochs) into target `db`, whose qwp
/// endpoint has `options` (e.g. `ack_timeout 1s`; empty for none), loaded by one ingest block
/// with `clauses` (`ack per_batch`, `batch 100 rows`, ...).
fn tsbs_workload(url: &str, options: &str, hosts: usize, minutes: u32, clauses: &str) -> String {
    let options = if options.is_empty() {
        String::new()
    } else {
        format!(" {{ {options} }}")
    };
    format!(
        r#"workload qwp_ingest {{ seed 1 }}
import "std/tsbs/cpu-only.wl" as tsbs (hosts = {hosts}, end = 2016-01-01T00:00:00Z + {minutes}m)
target db {{ qwp "{url}"{options} }}
ingest load {{
  into db via qwp
  rows tsbs.cpu
  {clauses}
}}
"#
    )
}

/// The default data set: 20 hosts x 10 minutes.
fn tsbs(url: &str, options: &str, clauses: &str) -> String {
    tsbs_workload(url, options, HOSTS, 10, clauses)
}

/// One `wlrun run w.wl --json --quiet`.
struct Run {
    dir: tempfile::TempDir,
    wl: String,
    code: Option<i32>,
    report: Value,
    stderr: String,
    /// Wall time of the whole process.
    took: Duration,
}

impl Run {
    /// The `i`th phase of the only cell.
    fn phase(&self, i: usize) -> &Value {
        &self.report["cells"][0]["phases"][i]
    }

    /// The first (only) phase.
    fn p(&self) -> &Value {
        self.phase(0)
    }

    fn u(&self, field: &str) -> u64 {
        self.p()[field]
            .as_u64()
            .unwrap_or_else(|| panic!("phase field {field} is not a count: {}", self.context()))
    }

    fn f(&self, field: &str) -> f64 {
        self.p()[field]
            .as_f64()
            .unwrap_or_else(|| panic!("phase field {field} is not a number: {}", self.context()))
    }

    /// `errors.CLASS` of the phase: `(count, first)`, or None.
    fn error(&self, class: &str) -> Option<(u64, String)> {
        let e = &self.p()["errors"][class];
        if e.is_null() {
            return None;
        }
        Some((
            e["count"].as_u64().unwrap_or(0),
            e["first"].as_str().unwrap_or("").to_string(),
        ))
    }

    /// The error classes the phase reported.
    fn error_classes(&self) -> Vec<String> {
        match self.p()["errors"].as_object() {
            Some(o) => o.keys().cloned().collect(),
            None => Vec::new(),
        }
    }

    /// Everything useful in an assertion message.
    fn context(&self) -> String {
        format!(
            "exit {:?} after {:?}\n--- phase\n{:#}\n--- stderr\n{}\n--- workload\n{}",
            self.code,
            self.took,
            self.p(),
            self.stderr,
            self.wl
        )
    }

    /// Asserts the run succeeded with every row of the data set sent and acknowledged.
    fn assert_complete(&self, rows: u64) {
        assert_eq!(self.code, Some(0), "{}", self.context());
        assert_eq!(self.p()["status"], "ok", "{}", self.context());
        assert_eq!(self.u("rows_expected"), rows, "{}", self.context());
        assert_eq!(self.u("rows_sent"), rows, "{}", self.context());
        assert_eq!(self.u("rows_acked"), rows, "{}", self.context());
        assert!(self.error_classes().is_empty(), "{}", self.context());
        let failures = self.p()["failures"].as_array().map_or(0, Vec::len);
        assert_eq!(failures, 0, "{}", self.context());
    }

    /// Asserts the run failed (exit 1, phase `failed`).
    fn assert_failed(&self) {
        assert_eq!(self.code, Some(1), "{}", self.context());
        assert_eq!(self.p()["status"], "failed", "{}", self.context());
        let failures = self.p()["failures"].as_array().map_or(0, Vec::len);
        assert!(failures > 0, "a failed phase says why: {}", self.context());
    }

    /// `wlrun gen --format csv` of the same workload: the rows the run generated.
    fn generated_csv(&self) -> String {
        let out = wlrun(self.dir.path(), &["gen", "w.wl", "--format", "csv"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

fn run(wl: String) -> Run {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), &wl).unwrap();
    let started = Instant::now();
    let out = wlrun(dir.path(), &["run", "w.wl", "--json", "--quiet"]);
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not a JSON report ({e}):\n{}\n{stderr}\n{wl}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    Run {
        dir,
        wl,
        code: out.status.code(),
        report,
        stderr,
        took,
    }
}

// ------------------------------------------------------------------------------------------
// What the server saw
// ------------------------------------------------------------------------------------------

/// The connections once `n` of them have ended (the client closed or the server dropped them),
/// with nothing malformed on any.
fn ended(server: &QwpServer, n: usize) -> Vec<ConnStats> {
    let conns = server.wait_ended(n, SETTLE);
    assert!(
        conns.len() >= n && conns.iter().all(|c| c.ended),
        "expected {n} ended connections: {conns:#?}"
    );
    assert!(server.malformed().is_empty(), "{:#?}", server.malformed());
    assert!(
        server.upgrade_failures().is_empty(),
        "{:#?}",
        server.upgrade_failures()
    );
    conns
}

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v
}

/// The report's `rows_per_worker`, sorted.
fn rows_per_worker(r: &Run) -> Vec<u64> {
    sorted(
        r.p()["rows_per_worker"]
            .as_array()
            .unwrap_or_else(|| panic!("no rows_per_worker: {}", r.context()))
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect(),
    )
}

/// Rows the connection's messages `0..n` carried.
fn rows_of_first(c: &ConnStats, n: usize) -> u64 {
    c.rows_per_message.iter().take(n).sum::<usize>() as u64
}

fn text(cell: &Cell) -> String {
    match cell {
        Cell::Str(s) => s.clone(),
        Cell::Long(v) => v.to_string(),
        other => panic!("unexpected cell {other:?}"),
    }
}

/// The table's rows as CSV-like lines in `columns` order (the designated timestamp, as the
/// wire had it, where `timestamp` is), sorted: rows of several connections come in no order.
fn table_lines(t: &Table, columns: &[String]) -> Vec<String> {
    let mut lines: Vec<String> = (0..t.row_count)
        .map(|i| {
            columns
                .iter()
                .map(|c| {
                    let name = if c == "timestamp" { DESIGNATED } else { c };
                    text(&t.values(name)[i])
                })
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    lines.sort();
    lines
}

/// `wlrun gen`'s CSV as the same lines: the header, and the rows with the RFC 3339 timestamp
/// as an integer in `units_per_s` (1e6: microseconds, 1e9: nanoseconds), sorted.
fn csv_lines(csv: &str, units_per_s: i128) -> (Vec<String>, Vec<String>) {
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    let ts = header.iter().position(|h| h == "timestamp").unwrap();
    let mut lines: Vec<String> = reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            r.iter()
                .enumerate()
                .map(|(k, v)| {
                    if k == ts {
                        let t = time::OffsetDateTime::parse(
                            v,
                            &time::format_description::well_known::Rfc3339,
                        )
                        .unwrap();
                        (t.unix_timestamp_nanos() * units_per_s / 1_000_000_000).to_string()
                    } else {
                        v.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    lines.sort();
    (header, lines)
}

/// The server's `cpu` table holds exactly the rows `wlrun gen` makes for the workload, with
/// TSBS's QWP types (tags SYMBOL, gauges LONG, the designated timestamp `ts_type`), and each
/// host's timestamps rise by 10 s from the start.
fn assert_cpu_table_is_generated(server: &QwpServer, r: &Run, ts_type: u8) {
    let t = server
        .table("cpu")
        .unwrap_or_else(|| panic!("no cpu table: {:?}", server.tables().keys()));
    let mut want_types: Vec<(String, String)> = TAGS
        .iter()
        .map(|c| (c.to_string(), "SYMBOL".to_string()))
        .chain(GAUGES.iter().map(|c| (c.to_string(), "LONG".to_string())))
        .chain([(DESIGNATED.to_string(), type_name(ts_type))])
        .collect();
    want_types.sort();
    assert_eq!(t.structure(), want_types);
    assert!(t.column(DESIGNATED).unwrap().designated);
    for c in &t.columns {
        assert!(c.null_rows().is_empty(), "cpu.{} has NULLs", c.name);
    }

    let units_per_s = if ts_type == ty::TIMESTAMP_NANOS {
        1_000_000_000
    } else {
        1_000_000
    };
    let (header, want) = csv_lines(&r.generated_csv(), units_per_s);
    let got = table_lines(&t, &header);
    assert_eq!(got.len(), want.len(), "row count against wlrun gen");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "the server's rows differ from wlrun gen's at sorted row {i}:\n  server: {}\n  gen:    \
             {}\n  ({header:?})",
            got[i], want[i]
        );
    }

    // Per host, in the order the host's rows arrived (one connection each): the timestamps
    // go up by one interval at a time, from the start.
    let scale = units_per_s as i64 / 1_000_000;
    let mut by_host: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    let hosts = t.values("hostname");
    let ts = t.values(DESIGNATED);
    for i in 0..t.row_count {
        by_host
            .entry(text(&hosts[i]))
            .or_default()
            .push(ts[i].as_i64().unwrap());
    }
    assert_eq!(by_host.len(), HOSTS);
    let rows = t.row_count / HOSTS;
    let expected: Vec<i64> = (0..rows as i64)
        .map(|e| (START_US + e * STEP_US) * scale)
        .collect();
    for (host, times) in &by_host {
        assert_eq!(times, &expected, "{host}'s timestamps");
    }
}

/// Group a connection's messages into batches: a message without DEFER_COMMIT ends one.
/// Returns (messages, rows) per batch; panics on deferred messages left at the end.
fn batches(c: &ConnStats) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let (mut messages, mut rows) = (0, 0);
    for (flags, r) in c.flags_per_message.iter().zip(&c.rows_per_message) {
        messages += 1;
        rows += r;
        if flags & FLAG_DEFER_COMMIT == 0 {
            out.push((messages, rows));
            (messages, rows) = (0, 0);
        }
    }
    assert_eq!(
        messages, 0,
        "connection {} ends with deferred messages",
        c.id
    );
    out
}

fn grouped_on_ping_only() -> Config {
    Config::default()
        .with_ack(AckMode::Grouped)
        .with_group_idle(None)
}

// ------------------------------------------------------------------------------------------
// Acknowledgements
// ------------------------------------------------------------------------------------------

/// `ack per_batch` against a server that holds its OKs until a PING (or 8 pending): every batch
/// is PINGed for and acknowledged, the rows arrive whole, one connection per worker.
#[test]
fn per_batch_pings_for_grouped_oks() {
    let server = QwpServer::start(grouped_on_ping_only());
    let r = run(tsbs(
        &server.url(),
        "",
        "batch 100 rows\n  workers 2\n  ack per_batch",
    ));
    r.assert_complete(ROWS);
    let conns = ended(&server, 2);
    assert_eq!(conns.len(), 2, "one connection per worker: {conns:#?}");

    let mut batches_total = 0;
    for c in &conns {
        assert_eq!(c.path, "/write/v4");
        assert!(c.messages > 1, "{c:#?}");
        // A batch of 100 rows fits one message: no deferred commit.
        assert!(c
            .flags_per_message
            .iter()
            .all(|f| f & FLAG_DEFER_COMMIT == 0));
        assert!(c.rows_per_message.iter().all(|&n| (1..=100).contains(&n)));
        // A PING after each batch (none of the OKs would come otherwise), one OK each.
        assert!(
            c.pings >= c.messages,
            "{} pings, {} batches",
            c.pings,
            c.messages
        );
        assert_eq!(
            c.ok_seqs(),
            (0..c.messages as i64).collect::<Vec<_>>(),
            "one OK per batch"
        );
        assert!(c.errors().is_empty());
        assert_eq!(c.close_code, Some(1000), "an orderly close: {c:#?}");
        assert!(!c.dropped);
        batches_total += c.messages;
    }
    // The report's figures are the server's.
    let server_rows: Vec<u64> = conns.iter().map(|c| c.rows() as u64).collect();
    assert_eq!(rows_per_worker(&r), sorted(server_rows));
    assert_eq!(r.p()["batch_latency"]["count"], batches_total as u64);
    assert_eq!(r.p()["workers"], 2, "{}", r.context());

    // Every message's rows are in the table, and nothing else.
    let messages_rows: usize = conns.iter().map(ConnStats::rows).sum();
    assert_eq!(messages_rows as u64, ROWS);
    assert_eq!(server.total_rows() as u64, ROWS);
    assert_cpu_table_is_generated(&server, &r, ty::TIMESTAMP);
}

/// `ack publish` against the same server: nothing is waited for while sending; the PING of the
/// close barrier brings the OK covering everything.
#[test]
fn publish_is_acknowledged_at_close() {
    let server = QwpServer::start(grouped_on_ping_only());
    let r = run(tsbs(
        &server.url(),
        "",
        "batch 50 rows\n  workers 2\n  ack publish",
    ));
    r.assert_complete(ROWS);
    let conns = ended(&server, 2);
    assert_eq!(conns.len(), 2, "{conns:#?}");
    for c in &conns {
        assert!(c.messages >= 8, "{c:#?}");
        // No PING per batch: only the barrier's (and its repeats while it waits).
        assert!(c.pings >= 1, "the barrier PINGs: {c:#?}");
        assert!(
            c.pings < c.messages,
            "publish PINGed {} times for {} batches",
            c.pings,
            c.messages
        );
        // The last OK covers the last message.
        assert_eq!(
            c.ok_seqs().last().copied(),
            Some(c.messages as i64 - 1),
            "{c:#?}"
        );
        assert_eq!(c.close_code, Some(1000));
    }
    assert_eq!(server.total_rows() as u64, ROWS);
}

/// A server that never acknowledges: the close barrier gives up after the endpoint's
/// `ack_timeout` (1 s, not the default 60 s), with a `timeout` error naming it, and nothing
/// counts as acknowledged.
#[test]
fn publish_without_oks_times_out_after_ack_timeout() {
    let server = QwpServer::start(Config::default().with_ack(AckMode::Never));
    let r = run(tsbs(
        &server.url(),
        "ack_timeout 1s",
        "batch 200 rows\n  workers 2\n  ack publish",
    ));
    r.assert_failed();
    assert_eq!(r.u("rows_sent"), ROWS, "{}", r.context());
    assert_eq!(r.u("rows_acked"), 0, "{}", r.context());
    let (count, first) = r
        .error("timeout")
        .unwrap_or_else(|| panic!("{}", r.context()));
    assert_eq!(count, 2, "one per worker: {}", r.context());
    assert!(first.contains("ack_timeout"), "{first}");
    assert!(
        first.contains("were not acknowledged within 1.0s"),
        "{first}"
    );
    assert!(
        r.took >= Duration::from_secs(1) && r.took < Duration::from_secs(8),
        "the run took {:?}",
        r.took
    );
    let elapsed = r.f("elapsed_s");
    assert!((1.0..5.0).contains(&elapsed), "elapsed_s {elapsed}");

    // The server got everything (it only never said so), and the client still closed.
    let conns = ended(&server, 2);
    assert_eq!(conns.len(), 2);
    for c in &conns {
        assert!(c.ok_seqs().is_empty());
        assert!(c.pings >= 1, "{c:#?}");
        assert_eq!(c.close_code, Some(1000), "{c:#?}");
    }
    assert_eq!(server.total_rows() as u64, ROWS);
}

/// OKs that come 50 ms after each message: `per_batch` waits for each, so every batch
/// latency is at least 50 ms.
#[test]
fn delayed_oks_set_the_per_batch_latency() {
    let server =
        QwpServer::start(Config::default().with_ack(AckMode::Delayed(Duration::from_millis(50))));
    let r = run(tsbs(
        &server.url(),
        "",
        "batch 300 rows\n  workers 2\n  ack per_batch",
    ));
    r.assert_complete(ROWS);
    let lat = &r.p()["batch_latency"];
    let conns = ended(&server, 2);
    let messages: usize = conns.iter().map(|c| c.messages).sum();
    assert_eq!(lat["count"], messages as u64, "{lat}");
    for field in ["min_us", "p50_us"] {
        let us = lat[field].as_f64().unwrap_or(0.0);
        assert!(us >= 50_000.0, "batch_latency.{field} = {us} us: {lat}");
    }
    // A worker's batches go one after the other: at least 50 ms each.
    let most = conns.iter().map(|c| c.messages).max().unwrap();
    assert!(
        r.f("elapsed_s") >= 0.05 * most as f64,
        "elapsed_s {} for {most} batches",
        r.f("elapsed_s")
    );
}

// ------------------------------------------------------------------------------------------
// Failures
// ------------------------------------------------------------------------------------------

const MISMATCH: &str = "cannot parse LONG from string";

/// The server rejects message 2 of each connection with SCHEMA_MISMATCH: with `per_batch`
/// the worker stops after that batch, reports the server's message, and only the rows of
/// messages 0 and 1 count as acknowledged.
#[test]
fn an_error_status_stops_a_per_batch_worker() {
    let server =
        QwpServer::start(grouped_on_ping_only().with_error_at(2, STATUS_SCHEMA_MISMATCH, MISMATCH));
    let r = run(tsbs(
        &server.url(),
        "",
        "batch 50 rows\n  workers 2\n  ack per_batch",
    ));
    r.assert_failed();
    let (count, first) = r
        .error("server")
        .unwrap_or_else(|| panic!("{}", r.context()));
    assert_eq!(count, 2, "one per worker: {}", r.context());
    assert!(first.contains(MISMATCH), "{first}");
    assert!(first.contains("SCHEMA_MISMATCH"), "{first}");
    assert!(first.contains("message 2"), "{first}");
    assert_eq!(r.error_classes(), vec!["server"], "{}", r.context());

    let conns = ended(&server, 2);
    assert_eq!(conns.len(), 2, "no reconnect: {conns:#?}");
    for c in &conns {
        // The batch of message 2 was the last one sent.
        assert_eq!(c.messages, 3, "{c:#?}");
        assert_eq!(
            c.errors(),
            vec![(2, STATUS_SCHEMA_MISMATCH, MISMATCH.into())]
        );
        assert_eq!(c.close_code, Some(1000), "{c:#?}");
    }
    let acked: u64 = conns.iter().map(|c| rows_of_first(c, 2)).sum();
    let sent: u64 = conns.iter().map(|c| rows_of_first(c, 3)).sum();
    assert_eq!(r.u("rows_acked"), acked, "{}", r.context());
    assert_eq!(r.u("rows_sent"), sent, "{}", r.context());
    // Message 2's rows were not applied.
    assert_eq!(server.total_rows() as u64, acked);
}

/// The same rejection with `publish`: the worker stops once it reads the error; the rows
/// acknowledged are those of the OK that came before it (messages 0 and 1), whatever the
/// server did with the messages sent after.
#[test]
fn an_error_status_stops_a_publish_worker() {
    let server =
        QwpServer::start(grouped_on_ping_only().with_error_at(2, STATUS_SCHEMA_MISMATCH, MISMATCH));
    let r = run(tsbs(
        &server.url(),
        "",
        "batch 50 rows\n  workers 2\n  ack publish",
    ));
    r.assert_failed();
    let (count, first) = r
        .error("server")
        .unwrap_or_else(|| panic!("{}", r.context()));
    assert_eq!(count, 2, "{}", r.context());
    assert!(
        first.contains(MISMATCH) && first.contains("SCHEMA_MISMATCH"),
        "{first}"
    );
    assert_eq!(r.error_classes(), vec!["server"], "{}", r.context());

    let conns = ended(&server, 2);
    assert_eq!(conns.len(), 2, "no reconnect: {conns:#?}");
    let mut acked = 0;
    for c in &conns {
        assert!(c.messages >= 3, "{c:#?}");
        assert_eq!(
            c.errors(),
            vec![(2, STATUS_SCHEMA_MISMATCH, MISMATCH.into())]
        );
        // The held OK went out right before the error and covered messages 0 and 1.
        assert_eq!(c.ok_seqs().first(), Some(&1), "{c:#?}");
        acked += rows_of_first(c, 2);
    }
    assert_eq!(r.u("rows_acked"), acked, "{}", r.context());
    let sent = r.u("rows_sent");
    let received: u64 = conns.iter().map(|c| c.rows() as u64).sum();
    assert!(sent >= acked + 50, "{}", r.context());
    assert!(sent <= received, "sent {sent}, the server saw {received}");
}

/// The server drops the TCP connection after message 1 without answering it: a `connection`
/// error, exit 1, and no second connection.
#[test]
fn a_dropped_connection_is_an_error_not_a_reconnect() {
    let server = QwpServer::start(Config::default().with_close_after(1));
    let r = run(tsbs(
        &server.url(),
        "ack_timeout 5s",
        "batch 50 rows\n  workers 2\n  ack per_batch",
    ));
    r.assert_failed();
    let (count, first) = r
        .error("connection")
        .unwrap_or_else(|| panic!("{}", r.context()));
    assert_eq!(count, 2, "one per worker: {}", r.context());
    assert!(first.contains("not acknowledged"), "{first}");
    assert_eq!(r.error_classes(), vec!["connection"], "{}", r.context());
    assert!(r.took < Duration::from_secs(5), "took {:?}", r.took);

    let conns = ended(&server, 2);
    // Give a reconnect the time to show.
    std::thread::sleep(Duration::from_millis(200));
    let conns_after = server.connections();
    assert_eq!(conns_after.len(), 2, "no reconnect: {conns_after:#?}");
    for c in &conns {
        assert!(c.dropped, "{c:#?}");
        assert_eq!(c.messages, 2, "{c:#?}");
        assert_eq!(c.ok_seqs(), vec![0]);
    }
    let acked: u64 = conns.iter().map(|c| rows_of_first(c, 1)).sum();
    assert_eq!(r.u("rows_acked"), acked, "{}", r.context());
    assert!(r.u("rows_sent") >= acked, "{}", r.context());
    assert_eq!(server.total_rows() as u64, acked);
}

/// rows_sent is "rows whose bytes were handed to the socket": the batch written whole before
/// the connection was found lost (while waiting for its OK) was handed to the socket, and the
/// server received it (message 1). It counts as sent with `per_batch` as with `publish`.
#[test]
fn a_batch_written_before_the_connection_dropped_counts_as_sent() {
    let server = QwpServer::start(Config::default().with_close_after(1));
    let r = run(tsbs(
        &server.url(),
        "ack_timeout 5s",
        "batch 50 rows\n  workers 1\n  ack per_batch",
    ));
    r.assert_failed();
    let conns = ended(&server, 1);
    assert_eq!(conns[0].messages, 2, "{conns:#?}");
    // Message 1 (50 rows) went out whole: `dropped` means the server read all of it.
    assert_eq!(r.u("rows_sent"), 100, "{}", r.context());
}

// ------------------------------------------------------------------------------------------
// Message size
// ------------------------------------------------------------------------------------------

const KIB_60: usize = 60 * 1024;
const KIB_64: usize = 64 * 1024;

/// A server that takes 64 KiB messages while the endpoint keeps the default `max_frame`
/// (1,887,424 bytes): refused at connect, the message saying to set `max_frame`; nothing sent.
#[test]
fn a_server_taking_smaller_messages_is_refused_at_connect() {
    let server = QwpServer::start(Config::default().with_max_batch_size(KIB_64));
    let r = run(tsbs(&server.url(), "", "batch 100 rows\n  workers 2"));
    // Refused at connect, nothing sent: could not measure (exit 3), not a failed measurement.
    assert_eq!(r.code, Some(3), "{}", r.context());
    assert_eq!(r.p()["status"], "failed", "{}", r.context());
    let (count, first) = r
        .error("connect")
        .unwrap_or_else(|| panic!("{}", r.context()));
    assert_eq!(count, 2, "{}", r.context());
    assert!(first.contains("set `max_frame`"), "{first}");
    assert!(first.contains(&KIB_64.to_string()), "{first}");
    // What wlrun encodes up to by default: 90% of the real server's 2,097,138 bytes.
    let encodes = first
        .split("wlrun encodes up to ")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .and_then(|n| n.trim().parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no size in {first}"));
    assert_eq!(encodes, 1_887_424, "{first}");
    assert_eq!(r.u("rows_sent"), 0, "{}", r.context());
    let conns = ended(&server, 2);
    assert!(conns.iter().all(|c| c.messages == 0), "{conns:#?}");
}

/// `max_frame 60KiB` against servers of 64 KiB and of exactly 60 KiB (which closes with 1009
/// on any larger message): batches of 10,000 rows go as several messages, DEFER_COMMIT on all
/// but the last of each batch, every one within 60 KiB, and the batches commit whole.
#[test]
fn max_frame_splits_batches_into_deferred_messages() {
    // 100 hosts x 120 epochs = 12,000 rows: a batch of 10,000, then one of 2,000.
    let rows = 12_000;
    for server_max in [KIB_64, KIB_60] {
        let server = QwpServer::start(Config::default().with_max_batch_size(server_max));
        let r = run(tsbs_workload(
            &server.url(),
            "max_frame 60KiB",
            100,
            20,
            "batch 10_000 rows\n  workers 1\n  ack per_batch",
        ));
        r.assert_complete(rows);
        let conns = ended(&server, 1);
        assert_eq!(conns.len(), 1);
        let c = &conns[0];
        assert_eq!(c.server_close_code, None, "{c:#?}");
        assert!(c.bytes / c.messages as u64 <= KIB_60 as u64);
        let b = batches(c);
        assert_eq!(
            b.iter().map(|&(_, n)| n).collect::<Vec<_>>(),
            vec![10_000, 2_000],
            "rows per batch"
        );
        // ~100 bytes a row: at least 10,000 x 95 / 60 KiB messages for the first batch.
        assert!(b[0].0 >= 16, "{b:?}");
        assert!(b[1].0 >= 4, "{b:?}");
        // DEFER_COMMIT on all but the last message of each batch, and every message has rows.
        let mut deferred = Vec::new();
        for &(messages, _) in &b {
            deferred.extend(std::iter::repeat_n(true, messages - 1));
            deferred.push(false);
        }
        let flags: Vec<bool> = c
            .flags_per_message
            .iter()
            .map(|f| f & FLAG_DEFER_COMMIT != 0)
            .collect();
        assert_eq!(flags, deferred);
        assert!(c.rows_per_message.iter().all(|&n| n > 0), "{c:#?}");
        // One acknowledged batch per 10,000 rows.
        assert_eq!(r.p()["batch_latency"]["count"], 2, "{}", r.context());
        assert_eq!(server.total_rows() as u64, rows);
    }
}

// ------------------------------------------------------------------------------------------
// Endpoint options
// ------------------------------------------------------------------------------------------

/// Two ingest blocks into two tables, through an endpoint with default options and one with
/// `path "/api/v4/write"` and `precision ns`.
#[test]
fn path_and_precision_options() {
    let server = QwpServer::start(Config::default());
    let wl = format!(
        r#"workload qwp_ingest {{ seed 1 }}
import "std/tsbs/cpu-only.wl" as tsbs (hosts = 4, end = 2016-01-01T00:01:00Z)
target db {{
  qwp "{url}"
  qwp "{url}" as alias {{ path "/api/v4/write"  precision ns }}
}}
ingest plain {{
  into db via qwp table "cpu_us"
  rows tsbs.cpu
  ack per_batch
}}
ingest options {{
  into db via alias table "cpu_ns"
  rows tsbs.cpu
  ack per_batch
}}
"#,
        url = server.url()
    );
    let r = run(wl);
    assert_eq!(r.code, Some(0), "{}", r.context());
    for i in 0..2 {
        let p = r.phase(i);
        assert_eq!(p["status"], "ok", "{p}");
        assert_eq!(p["rows_acked"], 24, "{p}");
    }
    let conns = ended(&server, 2);
    assert_eq!(conns.len(), 2, "{conns:#?}");
    let mut paths: Vec<&str> = conns.iter().map(|c| c.path.as_str()).collect();
    paths.sort();
    assert_eq!(paths, vec!["/api/v4/write", "/write/v4"]);
    for c in &conns {
        assert_eq!(c.header("X-QWP-Max-Version"), Some("1"), "{c:#?}");
    }

    // 4 hosts x 6 epochs of 10 s.
    let times: Vec<i64> = (0..6).map(|e| START_US + e * STEP_US).collect();
    for (table, code, scale) in [
        ("cpu_us", ty::TIMESTAMP, 1),
        ("cpu_ns", ty::TIMESTAMP_NANOS, 1000),
    ] {
        let t = server.table(table).unwrap_or_else(|| panic!("no {table}"));
        assert_eq!(t.row_count, 24);
        let ts = t.column(DESIGNATED).unwrap();
        assert!(ts.designated);
        assert_eq!(type_name(ts.type_code), type_name(code), "{table}");
        let mut got: Vec<i64> = ts.cells.iter().map(|c| c.as_i64().unwrap()).collect();
        got.sort_unstable();
        got.dedup();
        let want: Vec<i64> = times.iter().map(|t| t * scale).collect();
        assert_eq!(got, want, "{table}");
    }
    // The same rows either way.
    let mut us = server.table("cpu_us").unwrap();
    let mut ns = server.table("cpu_ns").unwrap();
    us.name = "cpu".into();
    ns.name = "cpu".into();
    same_tables(&us, &ns).unwrap();
}

/// `precision ns` on the TSBS run: the whole table is wlrun gen's, in nanoseconds.
#[test]
fn precision_ns_sends_timestamp_nanos() {
    let server = QwpServer::start(Config::default());
    let r = run(tsbs(
        &server.url(),
        "precision ns",
        "batch 400 rows\n  workers 2\n  ack per_batch",
    ));
    r.assert_complete(ROWS);
    ended(&server, 2);
    assert_cpu_table_is_generated(&server, &r, ty::TIMESTAMP_NANOS);
}

// ------------------------------------------------------------------------------------------
// Replay and bytes
// ------------------------------------------------------------------------------------------

/// `replay` encodes everything before the clock: the same rows arrive, in the same messages,
/// and the report has its figures.
#[test]
fn replay_sends_the_same_rows() {
    let clauses = "batch 100 rows\n  workers 2\n  ack per_batch";
    let live_server = QwpServer::start(Config::default());
    let live = run(tsbs(&live_server.url(), "", clauses));
    live.assert_complete(ROWS);
    let replay_server = QwpServer::start(Config::default());
    let replay = run(tsbs(
        &replay_server.url(),
        "",
        &format!("{clauses}\n  replay"),
    ));
    replay.assert_complete(ROWS);
    let live_conns = ended(&live_server, 2);
    let replay_conns = ended(&replay_server, 2);

    assert_cpu_table_is_generated(&replay_server, &replay, ty::TIMESTAMP);
    same_tables(
        &live_server.table("cpu").unwrap(),
        &replay_server.table("cpu").unwrap(),
    )
    .unwrap();
    // The same encoding: the same messages, the same bytes.
    let shape = |conns: &[ConnStats]| {
        let mut s: Vec<(Vec<usize>, u64)> = conns
            .iter()
            .map(|c| (c.rows_per_message.clone(), c.bytes))
            .collect();
        s.sort();
        s
    };
    assert_eq!(shape(&replay_conns), shape(&live_conns));
    assert_eq!(replay.u("payload_bytes"), live.u("payload_bytes"));
    let payload: u64 = replay_conns.iter().map(|c| c.bytes).sum();
    assert_eq!(replay.u("payload_bytes"), payload, "{}", replay.context());
    assert!(replay.u("socket_bytes") > payload, "{}", replay.context());
    assert_eq!(rows_per_worker(&replay), rows_per_worker(&live));
    let messages: usize = replay_conns.iter().map(|c| c.messages).sum();
    assert_eq!(replay.p()["batch_latency"]["count"], messages as u64);
    assert!(replay.f("elapsed_s") > 0.0, "{}", replay.context());
    // A rate only over a span long enough to be one (report::MIN_RATE_SPAN_S).
    let long_enough = replay.f("elapsed_s") >= 0.1;
    for field in ["rows_per_s", "send_rows_per_s", "ack_rows_per_s"] {
        let rate = replay.p()[field].as_f64();
        assert_eq!(rate.is_some(), long_enough, "{field}: {}", replay.context());
        assert!(
            rate.is_none_or(|r| r > 0.0),
            "{field}: {}",
            replay.context()
        );
    }
}

/// TSBS cpu-only costs about 99 bytes a row in QWP: ten one-byte symbol ids (fewer than 128
/// distinct texts at 20 hosts), ten LONGs and the timestamp make 98, and each message adds its
/// header, table name and schema. The socket adds the WebSocket frames, the upgrade, PINGs and
/// the close.
#[test]
fn tsbs_bytes_per_row() {
    let server = QwpServer::start(Config::default());
    let r = run(tsbs(
        &server.url(),
        "",
        "batch 1000 rows\n  workers 1\n  ack per_batch",
    ));
    r.assert_complete(ROWS);
    let payload = r.f("payload_bytes_per_row");
    let socket = r.f("socket_bytes_per_row");
    assert!((95.0..=110.0).contains(&payload), "{}", r.context());
    assert!(socket >= payload, "{}", r.context());
    let conns = ended(&server, 1);
    assert_eq!(r.u("payload_bytes"), conns[0].bytes, "{}", r.context());
    // Frames of 1,000 rows take 14 bytes of header and mask; the upgrade a few hundred.
    let socket_bytes = r.u("socket_bytes");
    assert!(
        socket_bytes > conns[0].bytes + 2 * 14 && socket_bytes < conns[0].bytes + 4096,
        "{}",
        r.context()
    );
}
