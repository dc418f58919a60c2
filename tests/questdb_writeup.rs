//! workloads/questdb-writeup.wl run as shipped, at 10 hosts x 10 minutes (`--param`), against
//! servers that know the truth (no QuestDB can be installed here):
//!
//! - its QWP ingest cells, live and replayed, per batch and `commit every 100_000 rows`,
//!   against the in-test QWP server (tests/common/qwp_ingest_server.rs), counted over a
//!   QuestDB-like `/exec` that answers the rows that server committed, and scraped over a
//!   QuestDB-like `/metrics` whose commit counters are that server's;
//! - its ILP/TCP and ILP/HTTP ingest cells against a real VictoriaMetrics.
//!
//! Its query and mixed cells use QuestDB's SQL (`SAMPLE BY`, `LATEST BY`), which neither
//! PostgreSQL nor the in-test servers answer: tests/corpus.rs checks and plans them.

#[path = "common/cli.rs"]
mod cli;

#[path = "common/servers.rs"]
mod servers;

#[path = "common/vm_process.rs"]
mod vm_process;

#[path = "common/qwp_ingest_server.rs"]
mod qwp_ingest_server;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

use qwp_ingest_server::{Config, QwpServer};
use serde_json::Value;
use vm_process::Victoria;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// 10 hosts x 10 minutes of 10 s.
const ROWS: u64 = 600;
const SMALL: [&str; 4] = ["--param", "hosts=10", "--param", "duration=10m"];

/// `wlrun run workloads/questdb-writeup.wl --json --quiet ARGS` from the crate root, at 10 hosts
/// x 10 minutes.
fn run_writeup(args: &[&str]) -> (i32, Value, String) {
    run_writeup_at(&SMALL, args)
}

fn run_writeup_at(scale: &[&str], args: &[&str]) -> (i32, Value, String) {
    let mut all = vec!["run", "workloads/questdb-writeup.wl", "--json", "--quiet"];
    all.extend_from_slice(scale);
    all.extend_from_slice(args);
    let out = cli::wlrun(Path::new(ROOT), &all);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON report ({e}): {err}"));
    (out.status.code().unwrap_or(-1), report, err)
}

/// A QuestDB-like REST endpoint over the in-test QWP server: `count(*)` answers the rows the QWP
/// server decoded into the table since the last `DROP` or `TRUNCATE` of it (which it takes as
/// QuestDB would), `SELECT build()` a build, any other statement `OK`.
struct Exec {
    addr: SocketAddr,
    counts: Arc<AtomicU64>,
}

impl Exec {
    fn start(qwp: Arc<QwpServer>) -> Exec {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let counts = Arc::new(AtomicU64::new(0));
        // Rows of the table when it was last dropped: what a count no longer sees.
        let dropped = Arc::new(AtomicU64::new(0));
        let c = counts.clone();
        thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let (qwp, c, dropped) = (qwp.clone(), c.clone(), dropped.clone());
                thread::spawn(move || {
                    let _ = serve(conn, &qwp, &c, &dropped);
                });
            }
        });
        Exec { addr, counts }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

fn rows_in(qwp: &QwpServer) -> u64 {
    qwp.table("cpu").map_or(0, |t| t.row_count as u64)
}

fn serve(
    conn: TcpStream,
    qwp: &QwpServer,
    counts: &AtomicU64,
    dropped: &AtomicU64,
) -> std::io::Result<()> {
    let mut out = conn.try_clone()?;
    let mut r = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let target = line.split_whitespace().nth(1).unwrap_or("").to_string();
        let mut length = 0usize;
        loop {
            let mut h = String::new();
            if r.read_line(&mut h)? == 0 || h == "\r\n" {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0u8; length];
        r.read_exact(&mut body)?;
        let query = decode(
            target
                .split_once("query=")
                .map_or("", |q| q.1.split('&').next().unwrap_or("")),
        );
        let lower = query.to_ascii_lowercase();
        let (status, answer) = if target.starts_with("/metrics") {
            // QuestDB's names (its docs' list), valued from what the QWP server committed.
            let commits: usize = qwp.connections().iter().map(|c| c.commits).sum();
            (
                200,
                format!(
                    "# TYPE questdb_commits_total counter\nquestdb_commits_total {commits}\n\
                     # TYPE questdb_committed_rows_total counter\nquestdb_committed_rows_total {}\n\
                     # TYPE questdb_memory_rss gauge\nquestdb_memory_rss 1048576\n",
                    qwp.total_rows()
                ),
            )
        } else if lower.contains("build()") {
            (200, r#"{"query":"build","columns":[{"name":"build","type":"STRING"}],"dataset":[["QWP write-up test /exec"]],"count":1}"#.to_string())
        } else if lower.contains("count(") {
            counts.fetch_add(1, Ordering::SeqCst);
            let n = rows_in(qwp) - dropped.load(Ordering::SeqCst);
            (
                200,
                format!(
                    r#"{{"query":"count","columns":[{{"name":"count","type":"LONG"}}],"dataset":[[{n}]],"count":1}}"#
                ),
            )
        } else {
            if lower.starts_with("drop") || lower.starts_with("truncate") {
                dropped.store(rows_in(qwp), Ordering::SeqCst);
            }
            (200, r#"{"ddl":"OK"}"#.to_string())
        };
        write!(
            out,
            "HTTP/1.1 {status} OK\r\nContent-Type: {}\r\nContent-Length: {}\r\n\r\n{answer}",
            if target.starts_with("/metrics") {
                "text/plain; version=0.0.4"
            } else {
                "application/json"
            },
            answer.len()
        )?;
        out.flush()?;
    }
}

/// A query string's value, percent-decoded.
fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz");
                match u8::from_str_radix(hex, 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The figures every ingest cell of the write-up has: its rows sent (and acknowledged where the
/// protocol has acknowledgements) and visible, which input it was, its bytes per row and the
/// link ceiling computed from them.
fn assert_ingest_cell(cell: &Value, input: &str, acks: bool) {
    let p = &cell["phases"][0];
    assert_eq!(cell["phases"].as_array().unwrap().len(), 1, "{cell}");
    assert_eq!(p["name"], "load", "{p}");
    assert_eq!(p["status"], "ok", "{p}");
    assert_eq!(p["input"], input, "{p}");
    assert_eq!(p["rows_sent"], ROWS, "{p}");
    if acks {
        assert_eq!(p["rows_acked"], ROWS, "{p}");
    }
    assert_eq!(p["rows_visible"], ROWS, "{p}");
    let per_row = p["socket_bytes_per_row"].as_f64().unwrap();
    let link = &p["link"];
    assert_eq!(link["bits_per_s"], 14.7e9, "{link}");
    let ceiling = link["rows_per_s"].as_f64().unwrap();
    let truth = 14.7e9 / 8.0 / per_row;
    assert!((ceiling - truth).abs() <= truth * 1e-9, "{link}");
}

/// A port on 127.0.0.1 that nothing listens on (bound, then let go).
fn dead_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The QWP cells' arguments: the in-test QWP server, the `/exec` and `/metrics` over it, and
/// the pg endpoint (which only `observe process listening pg` reads) at `pg_port`.
fn qwp_args(qwp: &QwpServer, exec: &Exec, pg_port: u16) -> Vec<String> {
    vec![
        "--only".into(),
        "part=ingest".into(),
        "--only".into(),
        "protocol=qwp".into(),
        "--param".into(),
        format!("qwp_url={:?}", qwp.url()),
        "--param".into(),
        format!("http_url={:?}", exec.url()),
        "--param".into(),
        format!("metrics_url={:?}", format!("{}/metrics", exec.url())),
        "--param".into(),
        "metrics_every=100ms".into(),
        "--param".into(),
        format!(
            "pg_url={:?}",
            format!("postgres://admin@127.0.0.1:{pg_port}/qdb")
        ),
    ]
}

/// The increase of a kept counter over a phase's scrapes.
fn scraped_increase(p: &Value, name: &str) -> f64 {
    let m = &p["server_metrics"][0];
    m["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("{name} not kept: {m}"))["increase"]
        .as_f64()
        .unwrap()
}

/// The commits the QWP server saw on each connection that carried rows, in the order they
/// connected: one connection per cell (`workers 1`).
fn commits_per_cell(qwp: &QwpServer) -> Vec<(usize, usize)> {
    qwp.connections()
        .iter()
        .filter(|c| c.rows() > 0)
        .map(|c| (c.commits, c.rows()))
        .collect()
}

#[test]
fn qwp_cells_live_and_replayed_per_batch_and_deferred_land_every_row() {
    let qwp = Arc::new(QwpServer::start(Config::default()));
    let exec = Exec::start(qwp.clone());
    // No QuestDB process to find: the cells warn and go on.
    let pg_port = dead_port();
    let args = qwp_args(&qwp, &exec, pg_port);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, r, err) = run_writeup(&args);
    assert_eq!(code, 0, "{err}\n{r:#}");
    let cells = r["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4, "{r:#}");
    let server = commits_per_cell(&qwp);
    assert_eq!(server.len(), 4, "{server:?}");
    for (i, (cell, (input, commit))) in cells
        .iter()
        .zip([
            ("live", "per_batch"),
            ("live", "100000"),
            ("replay", "per_batch"),
            ("replay", "100000"),
        ])
        .enumerate()
    {
        let key = cell["key"].as_str().unwrap();
        assert!(
            key.contains(&format!("input={input}")) && key.contains(&format!("commit={commit}")),
            "{key}"
        );
        assert_ingest_cell(cell, input, true);
        let p = &cell["phases"][0];
        // 600 rows are one batch: it commits, or it is deferred and the end commits it.
        assert_eq!(p["commits"], 1, "{p}");
        assert_eq!(server[i], (1, ROWS as usize), "{key}");
        // The process was not found: said, not failed.
        let nothing = format!("nothing listens on TCP port {pg_port}");
        assert!(p["server"]["notes"].to_string().contains(&nothing), "{p}");
        assert!(p["warnings"].to_string().contains(&nothing), "{p}");
        assert_eq!(p["server"]["samples"], 0, "{p}");
        // QuestDB's counters, scraped: the commits and rows the server made in this cell.
        assert!(
            p["server_metrics"][0]["scrapes_ok"].as_u64().unwrap() >= 2,
            "{p}"
        );
        assert_eq!(scraped_increase(p, "questdb_commits_total"), 1.0, "{p}");
        assert_eq!(
            scraped_increase(p, "questdb_committed_rows_total"),
            ROWS as f64,
            "{p}"
        );
    }
    // The server committed all four cells' rows; the counts were asked of the truth.
    assert_eq!(rows_in(&qwp), 4 * ROWS);
    assert!(exec.counts.load(Ordering::SeqCst) >= 4);
}

/// `commit every 100_000 rows` against per batch, at 216,000 rows (100 hosts x 6 h) in batches
/// of 10,000: 3 commits (100,000, 200,000, the end's) against 22, each counted as the server
/// counted it, every row acknowledged only as committed. The QuestDB process is this test's
/// (it holds the pg port the file observes), found and sampled.
#[test]
fn qwp_commit_every_100_000_rows_counts_the_server_s_commits() {
    const BIG: u64 = 216_000;
    let qwp = Arc::new(QwpServer::start(
        Config::default().with_hold_deferred_acks(true),
    ));
    let exec = Exec::start(qwp.clone());
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut args = qwp_args(&qwp, &exec, held.local_addr().unwrap().port());
    args.extend(["--only", "input=replay"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, r, err) = run_writeup_at(&["--param", "hosts=100", "--param", "duration=6h"], &args);
    assert_eq!(code, 0, "{err}\n{r:#}");
    let cells = r["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "{r:#}");
    let server = commits_per_cell(&qwp);
    assert_eq!(server, vec![(22, BIG as usize), (3, BIG as usize)]);
    for (cell, commits) in cells.iter().zip([22u64, 3]) {
        let p = &cell["phases"][0];
        assert_eq!(p["status"], "ok", "{p}");
        assert_eq!(p["rows_sent"], BIG, "{p}");
        assert_eq!(p["rows_acked"], BIG, "{p}");
        assert_eq!(p["rows_visible"], BIG, "{p}");
        assert_eq!(p["commits"], commits, "{p}");
        assert_eq!(scraped_increase(p, "questdb_commits_total"), commits as f64);
        let s = &p["server"];
        assert_eq!(s["observed"][0]["pid"], std::process::id(), "{s}");
        assert_eq!(s["unit"], "row", "{s}");
        assert!(s["cpu_s"].as_f64().unwrap() >= 0.0, "{s}");
    }
    assert_eq!(rows_in(&qwp), 2 * BIG as usize as u64);
    drop(held);
}

#[test]
fn ilp_cells_live_and_replayed_land_every_row_in_victoria_metrics() {
    let Some(vm) = Victoria::start("100y") else {
        return;
    };
    let (http, ilp) = (
        format!("vm_http_port={}", vm.http),
        format!("vm_ilp_port={}", vm.influx),
    );
    let (code, r, err) = run_writeup(&[
        "--only",
        "part=ingest",
        "--only",
        "protocol=ilp_tcp",
        "--only",
        "protocol=ilp_http",
        "--param",
        "db=victoria",
        "--param",
        &http,
        "--param",
        &ilp,
    ]);
    assert_eq!(code, 0, "{err}\n{r:#}");
    let cells = r["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4, "{r:#}");
    for (cell, (protocol, input)) in cells.iter().zip([
        ("ilp_tcp", "live"),
        ("ilp_tcp", "replay"),
        ("ilp_http", "live"),
        ("ilp_http", "replay"),
    ]) {
        let key = cell["key"].as_str().unwrap();
        assert!(
            key.contains(&format!("protocol={protocol}"))
                && key.contains(&format!("input={input}")),
            "{key}"
        );
        assert_ingest_cell(cell, input, protocol == "ilp_http");
    }
}
