//! Replay as a matrix axis, and the link ceiling, against servers that know the truth:
//!
//! - `replay when input == "replay"` over an axis `input in ["live", "replay"]`: both cells land the
//!   same rows in the in-test QWP server (tests/common/qwp_ingest_server.rs) and in a real
//!   VictoriaMetrics over ILP/TCP, and the report marks each cell `live` or `replay`;
//! - `link BANDWIDTH`: an ILP/TCP endpoint that counts the bytes and the lines it read gives
//!   the bytes per row, and the report's computed ceiling is the link over them.

#[path = "common/cli.rs"]
mod cli;

#[path = "common/servers.rs"]
mod servers;

#[path = "common/vm_process.rs"]
mod vm_process;

#[path = "common/qwp_ingest_server.rs"]
mod qwp_ingest_server;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use qwp_ingest_server::{Config, QwpServer};
use serde_json::Value;
use vm_process::Victoria;

/// TSBS cpu-only at 10 hosts x 10 minutes of 10 s: 600 rows of 10 fields.
const ROWS: u64 = 600;
const TSBS: &str = "import \"std/tsbs/cpu-only.wl\" as tsbs (hosts = 10, end = 2016-01-01T00:10:00Z)\nworkload w { seed 11 }\n";

// ------------------------------------------------------------------------------------------
// Live and replay in one file
// ------------------------------------------------------------------------------------------

/// The metrics VictoriaMetrics holds whose name starts with `prefix`, each keyed by its labels
/// with the prefix taken off the name: `{labels} -> (timestamps, values)`, so two loads into
/// two prefixes compare.
fn exported(vm: &Victoria, prefix: &str) -> BTreeMap<String, Value> {
    let query = format!("%7B__name__%3D~%22{prefix}.%2A%22%7D");
    let mut conn = TcpStream::connect(("127.0.0.1", vm.http)).unwrap();
    // HTTP/1.0: the body ends with the connection, unchunked.
    write!(
        conn,
        "GET /api/v1/export?match[]={query} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    conn.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(
        head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"),
        "{head}"
    );
    let mut out = BTreeMap::new();
    for line in body.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap();
        let mut labels: BTreeMap<String, String> = v["metric"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, x)| (k.clone(), x.as_str().unwrap_or_default().to_string()))
            .collect();
        let name = labels.remove("__name__").unwrap();
        labels.insert(
            "__name__".into(),
            name.strip_prefix(prefix).unwrap().to_string(),
        );
        // Samples in time order: the export need not give them so.
        let mut samples: Vec<(i64, f64)> = v["timestamps"]
            .as_array()
            .unwrap()
            .iter()
            .zip(v["values"].as_array().unwrap())
            .map(|(t, x)| (t.as_i64().unwrap(), x.as_f64().unwrap()))
            .collect();
        samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
        out.insert(format!("{labels:?}"), serde_json::json!(samples));
    }
    out
}

/// One file, both columns of the write-up: the same ingest live and replayed, over QWP (the
/// in-test server decodes every row) and over ILP/TCP into VictoriaMetrics (exported back).
/// Both cells land identical rows, and each says which it was.
#[test]
fn live_and_replay_cells_land_the_same_rows() {
    let Some(vm) = Victoria::start("100y") else {
        return;
    };
    let qwp = QwpServer::start(Config::default());
    let wl = format!(
        r#"{TSBS}
target qdb {{ qwp "{qwp}" }}
target victoria {{
  dialect victoriametrics
  ilp_tcp "tcp://127.0.0.1:{influx}"
  http    "http://127.0.0.1:{http}" as api
  count samples via api promql "sum(count_over_time({{__name__=~\"${{table}}_.*\"}}[${{end - start}}]))"
}}
matrix {{ input in ["live", "replay"] }}
ingest over_qwp {{
  into qdb via qwp table "cpu_${{input}}"
  rows tsbs.cpu
  batch 100 rows
  ack per_batch
  replay when input == "replay"
}}
ingest over_ilp {{
  into victoria via ilp_tcp table "cpu_${{input}}"
  rows tsbs.cpu
  batch 100 rows
  replay when input == "replay"
  verify visible via victoria.api within 30s
}}
"#,
        qwp = qwp.url(),
        influx = vm.influx,
        http = vm.http
    );
    let dir = tempfile::tempdir().unwrap();
    let out = cli::run_out(dir.path(), &wl, &[]);
    assert_eq!(out.code, 0, "{}", out.printed());
    for (cell, input) in [(0, "live"), (1, "replay")] {
        let c = &out.report["cells"][cell];
        assert_eq!(c["key"], format!("input={input}"), "{c}");
        for phase in c["phases"].as_array().unwrap() {
            assert_eq!(phase["status"], "ok", "{phase}");
            assert_eq!(phase["input"], input, "{phase}");
            assert_eq!(phase["rows_sent"], ROWS, "{phase}");
        }
        assert_eq!(c["phases"][0]["rows_acked"], ROWS);
        // VictoriaMetrics keeps one sample per field: 10 a row.
        assert_eq!(c["phases"][1]["rows_visible"], ROWS, "{c}");
    }
    // The summary lines say which column each cell is.
    let printed = out.printed();
    assert!(
        printed.contains("replayed (encoded before the clock started)"),
        "{printed}"
    );
    assert!(
        printed.contains("live (generated while sending)"),
        "{printed}"
    );

    // QWP: the server decoded the same rows, in the same order (one worker), into each table.
    qwp.wait_ended(2, Duration::from_secs(5));
    let (live, replay) = (
        qwp.table("cpu_live").expect("the live cell's table"),
        qwp.table("cpu_replay").expect("the replay cell's table"),
    );
    assert_eq!(live.rows().len() as u64, ROWS);
    assert_eq!(live.structure(), replay.structure());
    let (a, b) = (live.rows(), replay.rows());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert!(
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.same(q)),
            "row {i} differs: {x:?} vs {y:?}"
        );
    }
    // VictoriaMetrics: every series with the same samples under either name.
    let (live, replay) = (exported(&vm, "cpu_live_"), exported(&vm, "cpu_replay_"));
    assert_eq!(
        live.len(),
        10 * 10,
        "10 hosts x 10 fields: {:?}",
        live.keys()
    );
    assert_eq!(live, replay);
}

// ------------------------------------------------------------------------------------------
// The link ceiling
// ------------------------------------------------------------------------------------------

/// An ILP/TCP endpoint that reads everything and counts the bytes, the lines (rows) and the
/// fields (metrics, as TSBS's loader counts them: the commas of a line's field section plus
/// one) it read: the truth of bytes per row, on the server's side of the socket.
struct CountingSink {
    addr: SocketAddr,
    bytes: Arc<AtomicU64>,
    lines: Arc<AtomicU64>,
    fields: Arc<AtomicU64>,
    open: Arc<AtomicU64>,
}

/// The fields of one line-protocol line without escaped spaces: `table,tags fields ts`.
fn fields_of(line: &[u8]) -> u64 {
    let first = line.iter().position(|c| *c == b' ').unwrap();
    let last = line.iter().rposition(|c| *c == b' ').unwrap();
    line[first + 1..last].iter().filter(|c| **c == b',').count() as u64 + 1
}

impl CountingSink {
    fn start() -> CountingSink {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let counter = || Arc::new(AtomicU64::new(0));
        let (bytes, lines, fields, open) = (counter(), counter(), counter(), counter());
        let (b, l, f, o) = (bytes.clone(), lines.clone(), fields.clone(), open.clone());
        thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                o.fetch_add(1, Ordering::SeqCst);
                let (b, l, f, o) = (b.clone(), l.clone(), f.clone(), o.clone());
                thread::spawn(move || {
                    let mut buf = vec![0u8; 64 * 1024];
                    // A line cut across two reads waits here for its end.
                    let mut pending = Vec::new();
                    loop {
                        match conn.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => {
                                b.fetch_add(n as u64, Ordering::SeqCst);
                                pending.extend_from_slice(&buf[..n]);
                                let end = pending.iter().rposition(|c| *c == b'\n');
                                let Some(end) = end else { continue };
                                for line in pending[..end].split(|c| *c == b'\n') {
                                    l.fetch_add(1, Ordering::SeqCst);
                                    f.fetch_add(fields_of(line), Ordering::SeqCst);
                                }
                                pending.drain(..=end);
                            }
                        }
                    }
                    o.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        CountingSink {
            addr,
            bytes,
            lines,
            fields,
            open,
        }
    }

    /// (bytes, lines, fields) once every connection has ended (at most 5 s after the run).
    fn totals(&self) -> (u64, u64, u64) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.open.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        (
            self.bytes.load(Ordering::SeqCst),
            self.lines.load(Ordering::SeqCst),
            self.fields.load(Ordering::SeqCst),
        )
    }
}

/// `link 10gbit`: the ceiling is 10e9 / 8 bytes a second over the bytes per row the server
/// counted, within rounding; the report says it was computed, in report.json, on the terminal
/// and in report.csv's appended columns.
#[test]
fn the_link_ceiling_is_the_link_over_the_bytes_the_server_received() {
    let sink = CountingSink::start();
    let wl = format!(
        r#"{TSBS}
target sink {{ ilp_tcp "tcp://{addr}" }}
ingest load {{
  into sink via ilp_tcp table "cpu"
  rows tsbs.cpu
  batch 50 rows
  workers 2
  setup shared
  link 10gbit
  rate 3000/s                // a span of 0.2 s: long enough to be a rate (metrics/s)
}}
"#,
        addr = sink.addr
    );
    let dir = tempfile::tempdir().unwrap();
    let out = cli::run_out(dir.path(), &wl, &[]);
    assert_eq!(out.code, 0, "{}", out.printed());
    let p = out.phase();
    let (bytes, rows, fields) = sink.totals();
    assert_eq!(rows, ROWS, "{p}");
    assert_eq!(p["rows_sent"], ROWS, "{p}");
    assert_eq!(p["socket_bytes"], bytes, "{p}");
    let truth = 10e9 / 8.0 / (bytes as f64 / rows as f64);
    let link = &p["link"];
    assert_eq!(link["link"], "10Gbit/s", "{link}");
    assert_eq!(link["bits_per_s"], 10e9, "{link}");
    let ceiling = link["rows_per_s"].as_f64().unwrap();
    assert!(
        (ceiling - truth).abs() <= truth * 1e-9,
        "{ceiling} vs {truth}: {link}"
    );
    assert!(
        link["computed"].as_str().unwrap().starts_with("computed"),
        "{link}"
    );
    // TSBS's metrics: the fields the server received per row, times the rows per second.
    assert_eq!(fields, 10 * ROWS, "cpu-only rows carry 10 fields");
    assert_eq!(p["fields_per_row"], fields / rows, "{p}");
    let metrics = p["metrics_per_s"].as_f64().unwrap();
    let rows_per_s = p["rows_per_s"].as_f64().unwrap();
    assert!(
        (metrics - rows_per_s * fields as f64 / rows as f64).abs() <= metrics * 1e-9,
        "{p}"
    );
    // The summary line, with the bytes per row rounded as it prints them.
    let per_row = bytes as f64 / rows as f64;
    let per_row = if per_row >= 100.0 {
        format!("{}", per_row.round())
    } else {
        format!("{per_row:.1}")
    };
    let millions = truth / 1e6;
    let millions = if millions >= 10.0 {
        format!("{}", millions.round())
    } else {
        format!("{millions:.1}")
    };
    let line =
        format!("link 10 Gbit/s would carry ≈ {millions} M rows/s at {per_row} B/row (computed)");
    assert!(out.printed().contains(&line), "{line}\n{}", out.printed());
    // report.csv: the appended columns, last.
    let csv = std::fs::read_to_string(dir.path().join("res/report.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        header[header.len() - 5..],
        [
            "input",
            "link_bits_per_s",
            "link_rows_per_s",
            "fields_per_row",
            "metrics_per_s"
        ]
    );
    let csv_ceiling: f64 = row[header.len() - 3].parse().unwrap();
    assert!((csv_ceiling - truth).abs() <= truth * 1e-9, "{csv}");
}
