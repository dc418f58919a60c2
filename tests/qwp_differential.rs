//! Differential test of QWP ingestion: the official client (`questdb-rs`, the Rust core of every
//! official QuestDB client) and wlrun's own QWP driver write the same rows to in-test QWP
//! servers (tests/common/qwp_ingest_server.rs), whose strict, independent decoding is then
//! compared table by table.
//!
//! - A TSBS cpu-only shaped table (`cpu`: 10 symbols, 10 long gauges, a designated timestamp;
//!   200 rows for 20 hosts, one flush per 50 rows) and a small `readings` table with NULLs (a
//!   missing symbol, double, long, varchar and boolean), sent by questdb-rs.
//! - The same rows written as an ILP file and loaded by `wlrun run` over QWP
//!   (`rows from file`): the decoded tables must be the same (`same_tables`).
//! - wlrun's generator (`std/tsbs/cpu-only.wl` at 20 hosts x 10 epochs, and a `readings`
//!   schema with `null 30%` columns): its values are its own, so the tables must have the
//!   official client's structure (names, QWP types, row counts) and NULLs only where a column
//!   may have them.

#[path = "common/cli.rs"]
mod cli;
use cli::wlrun;

#[path = "common/tsbs_names.rs"]
mod tsbs_names;
use tsbs_names::{GAUGES, TAGS};

#[path = "common/qwp_ingest_server.rs"]
mod qwp_ingest_server;

use std::path::Path;
use std::time::Duration;

use questdb::ingress::{AckLevel, Sender, TimestampNanos};
use qwp_ingest_server::*;

const HOSTS: usize = 20;
const EPOCHS: usize = 10;
/// 2016-01-01T00:00:00Z, TSBS's default start, in nanoseconds.
const START_NS: i64 = 1_451_606_400_000_000_000;
const STEP_NS: i64 = 10_000_000_000;
const FLUSH_ROWS: usize = 50;

#[derive(Clone, Debug)]
enum Field {
    Long(Option<i64>),
    Double(Option<f64>),
    Str(Option<String>),
    Bool(Option<bool>),
}

/// One row, as both clients are given it. `None`: the row does not set the column.
#[derive(Clone, Debug)]
struct Row {
    table: &'static str,
    symbols: Vec<(&'static str, Option<String>)>,
    fields: Vec<(&'static str, Field)>,
    ts_ns: i64,
}

fn pick<'a>(options: &[&'a str], h: usize, salt: usize) -> &'a str {
    options[(h * 7 + salt * 3 + h / 3) % options.len()]
}

/// TSBS cpu-only shaped rows: epoch-major, host-minor, deterministic values.
fn cpu_rows() -> Vec<Row> {
    let regions = [
        "us-east-1",
        "us-west-2",
        "eu-west-1",
        "ap-southeast-1",
        "sa-east-1",
    ];
    let mut rows = Vec::new();
    for e in 0..EPOCHS {
        for h in 0..HOSTS {
            let region = pick(&regions, h, 0);
            let tags = [
                format!("host_{h}"),
                region.to_string(),
                format!("{region}{}", pick(&["a", "b", "c"], h, 1)),
                ((h * 13) % 100).to_string(),
                pick(&["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"], h, 2).to_string(),
                pick(&["x64", "x86"], h, 3).to_string(),
                pick(&["SF", "NYC", "LON", "CHI"], h, 4).to_string(),
                ((h * 11) % 20).to_string(),
                (h % 2).to_string(),
                pick(&["production", "staging", "test"], h, 5).to_string(),
            ];
            rows.push(Row {
                table: "cpu",
                symbols: TAGS
                    .iter()
                    .copied()
                    .zip(tags.into_iter().map(Some))
                    .collect(),
                fields: GAUGES
                    .iter()
                    .enumerate()
                    .map(|(k, g)| {
                        (
                            *g,
                            Field::Long(Some(((h * 37 + e * 11 + k * 7) % 101) as i64)),
                        )
                    })
                    .collect(),
                ts_ns: START_NS + e as i64 * STEP_NS,
            });
        }
    }
    rows
}

/// A small table with NULLs. The first row sets every column (an ILP file's first line fixes
/// its schema); later rows leave out a symbol, a double, a long, a varchar, a boolean.
fn readings_rows() -> Vec<Row> {
    let row = |i: i64,
               sensor: Option<&str>,
               temp: Option<f64>,
               count: Option<i64>,
               note: Option<&str>,
               ok: Option<bool>| Row {
        table: "readings",
        symbols: vec![("sensor", sensor.map(str::to_string))],
        fields: vec![
            ("temp", Field::Double(temp)),
            ("count", Field::Long(count)),
            ("note", Field::Str(note.map(str::to_string))),
            ("ok", Field::Bool(ok)),
        ],
        ts_ns: START_NS + i * 1_000_000_000,
    };
    vec![
        row(
            0,
            Some("s1"),
            Some(21.5),
            Some(3),
            Some("hello"),
            Some(true),
        ),
        row(
            1,
            None,
            Some(19.25),
            Some(4),
            Some("with space, comma"),
            Some(false),
        ),
        row(2, Some("s2"), None, Some(5), Some("x"), Some(true)),
        row(
            3,
            Some("s1"),
            Some(-3.5),
            None,
            Some("quote \"q\" \\ back"),
            Some(true),
        ),
        row(4, Some("s3"), Some(0.0), Some(0), None, Some(true)),
        row(
            5,
            Some("s2"),
            Some(0.001),
            Some(-7),
            Some("é unicode"),
            None,
        ),
        row(6, Some("s3 x"), None, Some(9), None, None),
        row(7, None, Some(1e300), None, Some(""), Some(false)),
    ]
}

/// Sends the rows through the official client, one flush per `FLUSH_ROWS` rows of a table,
/// waits for every OK and closes.
fn send_official(conf: &str, tables: &[Vec<Row>]) {
    let mut sender = Sender::from_conf(conf).expect("questdb-rs connects");
    let mut buf = sender.new_buffer();
    for rows in tables {
        for (i, r) in rows.iter().enumerate() {
            buf.table(r.table).unwrap();
            for (name, v) in &r.symbols {
                if let Some(v) = v {
                    buf.symbol(*name, v.as_str()).unwrap();
                }
            }
            for (name, f) in &r.fields {
                match f {
                    Field::Long(Some(v)) => buf.column_i64(*name, *v).unwrap(),
                    Field::Double(Some(v)) => buf.column_f64(*name, *v).unwrap(),
                    Field::Str(Some(v)) => buf.column_str(*name, v.as_str()).unwrap(),
                    Field::Bool(Some(v)) => buf.column_bool(*name, *v).unwrap(),
                    _ => &mut buf,
                };
            }
            buf.at(TimestampNanos::new(r.ts_ns)).unwrap();
            if (i + 1) % FLUSH_ROWS == 0 {
                sender.flush(&mut buf).unwrap();
            }
        }
        if !buf.is_empty() {
            sender.flush(&mut buf).unwrap();
        }
    }
    sender
        .wait(AckLevel::Ok, Duration::from_secs(5))
        .expect("every frame acknowledged");
    sender.close_drain().unwrap();
}

/// The table the rows should decode to (column order as first used; NULLs as `Cell::Null`).
fn expected_table(name: &str, rows: &[Row]) -> Table {
    let mut t = Table {
        name: name.to_string(),
        columns: Vec::new(),
        row_count: rows.len(),
    };
    let column = |t: &mut Table, name: &str, code: u8, i: usize, cell: Cell| {
        let at = match t.columns.iter().position(|c| c.name == name) {
            Some(at) => at,
            None => {
                t.columns.push(Column {
                    name: name.to_string(),
                    type_code: code,
                    designated: name == DESIGNATED,
                    cells: vec![Cell::Null; rows.len()],
                    bitmap_sections: 0,
                    plain_sections: 0,
                });
                t.columns.len() - 1
            }
        };
        t.columns[at].cells[i] = cell;
    };
    for (i, r) in rows.iter().enumerate() {
        for (name, v) in &r.symbols {
            let cell = v.clone().map_or(Cell::Null, Cell::Str);
            column(&mut t, name, ty::SYMBOL, i, cell);
        }
        for (name, f) in &r.fields {
            let (code, cell) = match f {
                Field::Long(v) => (ty::LONG, v.map_or(Cell::Null, Cell::Long)),
                Field::Double(v) => (ty::DOUBLE, v.map_or(Cell::Null, Cell::Double)),
                Field::Str(v) => (ty::VARCHAR, v.clone().map_or(Cell::Null, Cell::Str)),
                Field::Bool(v) => (ty::BOOLEAN, v.map_or(Cell::Null, Cell::Bool)),
            };
            column(&mut t, name, code, i, cell);
        }
        column(
            &mut t,
            DESIGNATED,
            ty::TIMESTAMP_NANOS,
            i,
            Cell::Long(r.ts_ns),
        );
    }
    t
}

/// Starts a server, sends both tables with questdb-rs, and returns the server once the
/// client has closed.
fn official_server() -> QwpServer {
    let server = QwpServer::start(Config::default());
    send_official(&server.conf(), &[cpu_rows(), readings_rows()]);
    server.wait_ended(1, Duration::from_secs(10));
    server
}

#[test]
fn official_client_rows_decode_as_sent() {
    let server = official_server();
    assert!(server.malformed().is_empty(), "{:#?}", server.malformed());
    let tables = server.tables();
    assert_eq!(tables.keys().collect::<Vec<_>>(), vec!["cpu", "readings"]);
    let cpu = &tables["cpu"];
    let want = expected_table("cpu", &cpu_rows());
    same_tables_in_order(&want, cpu).unwrap();
    assert_eq!(
        cpu.schema(),
        want.schema(),
        "types and first-use column order"
    );
    let readings = &tables["readings"];
    same_tables_in_order(&expected_table("readings", &readings_rows()), readings).unwrap();

    // How the official client (7.2) places NULLs (§3.5): a bitmap for SYMBOL and VARCHAR;
    // sentinels without a bitmap for DOUBLE (NaN), LONG (i64::MIN) and BOOLEAN (false).
    let col = |n: &str| readings.column(n).unwrap();
    assert_eq!(col("sensor").cells[1], Cell::Null);
    assert_eq!(col("sensor").bitmap_sections, 1);
    assert_eq!(col("note").cells[4], Cell::Null);
    assert_eq!(col("note").bitmap_sections, 1);
    assert!(col("temp").cells[2].as_f64().unwrap().is_nan());
    assert_eq!(col("temp").bitmap_sections, 0);
    assert_eq!(col("count").cells[3], Cell::Long(i64::MIN));
    assert_eq!(col("count").bitmap_sections, 0);
    assert_eq!(col("count").null_rows(), vec![3, 7]);
    assert_eq!(col("ok").cells[5], Cell::Bool(false));
    assert_eq!(col("ok").bitmap_sections, 0);
    // Columns without NULLs never carry a bitmap.
    assert!(cpu.columns.iter().all(|c| c.bitmap_sections == 0));

    let conns = server.connections();
    assert_eq!(conns.len(), 1);
    let c = &conns[0];
    assert_eq!(c.path, "/api/v4/write", "the Rust core's path");
    assert_eq!(
        c.rows_per_message,
        vec![50, 50, 50, 50, readings_rows().len()]
    );
    assert!(c
        .flags_per_message
        .iter()
        .all(|f| *f == FLAG_DELTA_SYMBOL_DICT));
    assert_eq!(c.ok_seqs(), (0..5).collect::<Vec<_>>());
    assert!(c.errors().is_empty());
    assert!(c.dictionary.contains(&"host_19".to_string()));
    assert!(c.dictionary.contains(&"s3 x".to_string()));
    // questdb-rs 7.2 hangs up after its drain without a Close frame.
    assert!(c.ended && !c.dropped && c.server_close_code.is_none());
}

#[test]
fn same_tables_sees_a_changed_value() {
    let server = official_server();
    let mut rows = cpu_rows();
    rows[123].fields[4].1 = Field::Long(Some(1000));
    let e = same_tables(&expected_table("cpu", &rows), &server.table("cpu").unwrap()).unwrap_err();
    assert!(e.contains("usage_iowait=1000"), "{e}");
}

#[test]
fn official_client_takes_grouped_oks_listing_tables() {
    let server = QwpServer::start(
        Config::default()
            .with_ack(AckMode::Grouped)
            .with_ok_lists_tables(true),
    );
    send_official(&server.conf(), &[cpu_rows(), readings_rows()]);
    let c = &server.wait_ended(1, Duration::from_secs(10))[0];
    assert_eq!(c.ok_seqs().last(), Some(&4), "{:?}", c.replies);
    let want = expected_table("cpu", &cpu_rows());
    same_tables_in_order(&want, &server.table("cpu").unwrap()).unwrap();
}

#[test]
fn official_client_replays_after_a_retriable_error() {
    // WRITE_ERROR is retriable: the client reconnects and replays from message 1. The server
    // closes after the error, so the messages after it on that connection are not applied.
    let server = QwpServer::start(
        Config::default()
            .with_error_at(1, STATUS_WRITE_ERROR, "table is suspended [test]")
            .with_close_on_error(true)
            .with_faults_once(true),
    );
    send_official(&server.conf(), &[cpu_rows()]);
    let conns = server.wait_ended(2, Duration::from_secs(10));
    assert_eq!(
        conns[0].errors(),
        vec![(1, STATUS_WRITE_ERROR, "table is suspended [test]".into())]
    );
    assert!(conns[1].errors().is_empty());
    same_tables_in_order(
        &expected_table("cpu", &cpu_rows()),
        &server.table("cpu").unwrap(),
    )
    .unwrap();
}

#[test]
fn official_client_reports_a_terminal_error() {
    let server = QwpServer::start(Config::default().with_error_at(
        2,
        STATUS_SCHEMA_MISMATCH,
        "cannot parse LONG from string [test]",
    ));
    let mut sender = Sender::from_conf(server.conf()).unwrap();
    let mut buf = sender.new_buffer();
    for r in &cpu_rows()[..150] {
        buf.table("cpu")
            .unwrap()
            .symbol("hostname", r.symbols[0].1.as_deref().unwrap())
            .unwrap();
        buf.column_i64("usage_user", 1).unwrap();
        buf.at(TimestampNanos::new(r.ts_ns)).unwrap();
        if buf.row_count() == FLUSH_ROWS {
            sender.flush(&mut buf).unwrap();
        }
    }
    let e = sender
        .wait(AckLevel::Ok, Duration::from_secs(5))
        .unwrap_err();
    assert!(
        e.msg().contains("cannot parse LONG from string [test]"),
        "{e:?}"
    );
    assert!(sender.must_close());
    drop(sender);
    assert_eq!(server.table("cpu").unwrap().row_count, 100);
}

// ---------------------------------------------------------------------------------------------
// wlrun
// ---------------------------------------------------------------------------------------------

fn escape_key(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if matches!(c, ' ' | ',' | '=' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The rows as InfluxDB line protocol, nanosecond timestamps.
fn ilp(rows: &[Row]) -> String {
    let mut out = String::new();
    for r in rows {
        out.push_str(&escape_key(r.table));
        for (name, v) in &r.symbols {
            if let Some(v) = v {
                out.push_str(&format!(",{}={}", escape_key(name), escape_key(v)));
            }
        }
        let fields: Vec<String> = r
            .fields
            .iter()
            .filter_map(|(name, f)| {
                let v = match f {
                    Field::Long(v) => format!("{}i", (*v)?),
                    Field::Double(v) => format!("{:?}", (*v)?),
                    Field::Str(v) => format!(
                        "\"{}\"",
                        v.as_ref()?.replace('\\', "\\\\").replace('"', "\\\"")
                    ),
                    Field::Bool(v) => (if (*v)? { "t" } else { "f" }).to_string(),
                };
                Some(format!("{}={v}", escape_key(name)))
            })
            .collect();
        out.push_str(&format!(" {} {}\n", fields.join(","), r.ts_ns));
    }
    out
}

/// Runs `wlrun run w.wl` with this workload; panics (with its output) unless every phase is ok.
fn run_workload(dir: &Path, wl: &str) {
    std::fs::write(dir.join("w.wl"), wl).unwrap();
    let out = wlrun(dir, &["run", "w.wl", "--json", "--quiet"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "wlrun failed:\n{stdout}\n{stderr}\n{wl}"
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not a JSON report ({e}):\n{stdout}\n{stderr}"));
    for cell in report["cells"].as_array().unwrap() {
        for p in cell["phases"].as_array().unwrap() {
            assert_eq!(p["status"], "ok", "{p}\n{stderr}");
        }
    }
}

/// The `(name, type name)` structure, with TIMESTAMP and TIMESTAMP_NANOS as one.
fn structure(t: &Table) -> Vec<(String, String)> {
    t.structure()
        .into_iter()
        .map(|(n, ty)| {
            (
                n,
                if ty == "TIMESTAMP_NANOS" {
                    "TIMESTAMP".into()
                } else {
                    ty
                },
            )
        })
        .collect()
}

#[test]
fn wlrun_from_an_ilp_file_writes_the_official_clients_tables() {
    let official = official_server();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cpu.ilp"), ilp(&cpu_rows())).unwrap();
    std::fs::write(dir.path().join("readings.ilp"), ilp(&readings_rows())).unwrap();
    let server = QwpServer::start(Config::default());
    let wl = format!(
        r#"workload differential {{ seed 1 }}
target same {{ qwp "{url}" }}
ingest cpu_file {{
  into same via qwp table "cpu"
  rows from file "cpu.ilp"
  batch {FLUSH_ROWS} rows
  workers 1
  ack per_batch
}}
ingest readings_file {{
  into same via qwp table "readings"
  rows from file "readings.ilp"
  batch {FLUSH_ROWS} rows
  workers 1
  ack per_batch
}}
"#,
        url = server.url()
    );
    run_workload(dir.path(), &wl);
    let conns = server.wait_ended(1, Duration::from_secs(10));
    assert!(server.malformed().is_empty(), "{:#?}", server.malformed());
    assert!(conns.iter().all(|c| c.errors().is_empty()), "{conns:#?}");
    let (want, got) = (official.tables(), server.tables());
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (name, t) in &want {
        same_tables(t, &got[name]).unwrap();
    }
    // One worker, so the rows also keep their order.
    for (name, t) in &want {
        same_tables_in_order(t, &got[name]).unwrap();
    }
    // 200 cpu rows in batches of 50, then the readings.
    let rows: Vec<usize> = conns
        .iter()
        .flat_map(|c| c.rows_per_message.clone())
        .collect();
    assert_eq!(
        rows.iter().sum::<usize>(),
        200 + readings_rows().len(),
        "{rows:?}"
    );
    assert!(rows.iter().all(|r| *r <= FLUSH_ROWS), "{rows:?}");
}

#[test]
fn wlrun_generated_rows_have_the_official_clients_structure() {
    let official = official_server();
    let dir = tempfile::tempdir().unwrap();
    let server = QwpServer::start(Config::default());
    // 20 hosts x 10 epochs of 10 s = 200 rows; readings: 8 rows at 1 s.
    let wl = format!(
        r#"workload differential {{ seed 1 }}
import "std/tsbs/cpu-only.wl" as tsbs (hosts = {HOSTS}, end = 2016-01-01T00:01:40Z)
schema readings {{
  table "readings"
  tag   sensor: symbol  = pick(["s1", "s2", "s3"]) per row null 30%
  field temp:   double  = uniform(-10.0, 40.0) null 30%
  field count:  long    = uniform(0, 100) null 30%
  field note:   varchar = pick(["hello", "x"]) null 30%
  field ok:     boolean = chance(50%) null 30%
  timestamp ts: timestamp(ns) = every 1s from 2016-01-01T00:00:00Z for 8s
}}
target gen {{ qwp "{url}" }}
ingest cpu_gen {{
  into gen via qwp
  rows tsbs.cpu
  batch {FLUSH_ROWS} rows
  workers 1
  ack per_batch
}}
ingest readings_gen {{
  into gen via qwp
  rows readings
  batch {FLUSH_ROWS} rows
  workers 1
  ack per_batch
}}
"#,
        url = server.url()
    );
    run_workload(dir.path(), &wl);
    server.wait_ended(1, Duration::from_secs(10));
    assert!(server.malformed().is_empty(), "{:#?}", server.malformed());
    let (want, got) = (official.tables(), server.tables());
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (name, t) in &want {
        let g = &got[name];
        assert_eq!(structure(g), structure(t), "{name}: names and QWP types");
        assert_eq!(g.row_count, t.row_count, "{name}: rows");
    }

    // cpu: nothing is NULL; 20 hosts, timestamps every 10 s over 10 epochs, gauges 0..=100.
    let cpu = &got["cpu"];
    for c in &cpu.columns {
        assert!(c.null_rows().is_empty(), "cpu.{} has NULLs", c.name);
    }
    let hosts: std::collections::BTreeSet<&str> = cpu
        .values("hostname")
        .iter()
        .filter_map(Cell::as_str)
        .collect();
    assert_eq!(hosts.len(), HOSTS);
    let ts = cpu.column(DESIGNATED).unwrap();
    let ns = |c: &Cell| {
        let v = c.as_i64().unwrap();
        if ts.type_code == ty::TIMESTAMP {
            v * 1000
        } else {
            v
        }
    };
    let times: std::collections::BTreeSet<i64> = ts.cells.iter().map(ns).collect();
    assert_eq!(
        times.into_iter().collect::<Vec<_>>(),
        (0..EPOCHS as i64)
            .map(|e| START_NS + e * STEP_NS)
            .collect::<Vec<_>>()
    );
    for g in GAUGES {
        assert!(cpu
            .values(g)
            .iter()
            .all(|c| (0..=100).contains(&c.as_i64().unwrap())));
    }

    // readings: NULLs only in the nullable columns, never in the designated timestamp; a
    // missing boolean reads as false, as the official client sends it.
    let r = &got["readings"];
    assert!(r.column(DESIGNATED).unwrap().null_rows().is_empty());
    let nulls: usize = ["sensor", "temp", "count", "note"]
        .iter()
        .map(|c| r.column(c).unwrap().null_rows().len())
        .sum();
    assert!(
        nulls > 0 && nulls < 4 * r.row_count,
        "{nulls} NULLs: {r:#?}"
    );
}
