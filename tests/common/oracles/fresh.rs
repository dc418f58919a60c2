//! A server for `probe visible` tests: it takes line protocol over HTTP (`POST /write`, every
//! line of a body a row) and answers QuestDB-style counts (`GET /exec?query=SELECT count...`,
//! `{"dataset":[[N]]}`) as if each request's rows became visible a fixed `delay` after the
//! request arrived whole, or, with `start_applying`, as if a single applier made them visible
//! in arrival order at a fixed number of rows per second (QuestDB's WAL apply, reduced to its
//! capacity). `SELECT build()` answers `BUILD`, as QuestDB says its build (wlrun asks it once
//! per run for the report's environment). Other `/exec` statements (DDL) answer
//! `{"ddl":"OK"}` and are logged (`ddl`, with the rows received before each); with
//! `fail_every` n > 0, every n-th count answers HTTP 500.
//!
//! With `start_with_tables` the server also knows which tables exist, as QuestDB does: a count
//! or `TRUNCATE` of a table that does not exist answers HTTP 400 `table does not exist
//! [table=NAME]`, `CREATE TABLE` creates one, `DROP TABLE IF EXISTS` drops one, a line-protocol
//! write creates its measurement's table, and a drop or truncate makes the rows received until
//! then uncountable (the server holds one table's rows).
//!
//! Plain threads, one per connection, on an ephemeral port of 127.0.0.1; dropping the handle
//! stops accepting. Part of `oracles` (tests/common/oracles/mod.rs).

#![allow(dead_code)]

use std::collections::HashSet;
use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// 100 hosts x 1 day at 1 s: more rows than any span of these tests sends.
pub const SCHEMA: &str = r#"
workload t { seed 7 }
schema s {
  series host: symbol = format("h%d", n) for n in 0..100
  field  v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1d
}
"#;

pub struct FreshServer {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
}

struct Shared {
    delay: Duration,
    /// Rows per second the applier makes visible; 0: unbounded.
    apply_per_s: f64,
    fail_every: u64,
    /// `(arrival, rows)` per write request.
    arrivals: Mutex<Vec<(Instant, u64)>>,
    counts: AtomicU64,
    failed: AtomicU64,
    /// The tables that exist; `None`: every table does (the server knows none).
    tables: Mutex<Option<HashSet<String>>>,
    /// Every statement that is not a count, with the rows received before it arrived.
    ddl: Mutex<Vec<(String, u64)>>,
    /// Arrivals before this index were dropped or truncated away: no count includes them.
    cleared: AtomicU64,
}

impl FreshServer {
    pub fn start(delay: Duration, fail_every: u64) -> FreshServer {
        FreshServer::start_applying(delay, fail_every, 0.0)
    }

    /// As `start`, with rows made visible at most `apply_per_s` rows per second: a write
    /// becomes visible `delay` after it arrived or once the applier has finished the writes
    /// before it, whichever is later, and then takes its rows / `apply_per_s` to show.
    pub fn start_applying(delay: Duration, fail_every: u64, apply_per_s: f64) -> FreshServer {
        FreshServer::spawn(delay, fail_every, apply_per_s, None)
    }

    /// As `start`, on a server that knows which tables exist: `tables` at first (see the
    /// module's comment).
    pub fn start_with_tables(delay: Duration, tables: &[&str]) -> FreshServer {
        let tables = tables.iter().map(|t| t.to_string()).collect();
        FreshServer::spawn(delay, 0, 0.0, Some(tables))
    }

    fn spawn(
        delay: Duration,
        fail_every: u64,
        apply_per_s: f64,
        tables: Option<HashSet<String>>,
    ) -> FreshServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            delay,
            apply_per_s,
            fail_every,
            arrivals: Mutex::new(Vec::new()),
            counts: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            tables: Mutex::new(tables),
            ddl: Mutex::new(Vec::new()),
            cleared: AtomicU64::new(0),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (shared.clone(), stop.clone());
        thread::spawn(move || {
            for conn in listener.incoming() {
                if st.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let s = s.clone();
                thread::spawn(move || {
                    let _ = serve(conn, &s);
                });
            }
        });
        FreshServer { addr, shared, stop }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A QuestDB-like target `fake` on this server: ILP over HTTP in, `/exec` counts out.
    pub fn target(&self) -> String {
        format!(
            r#"
target fake {{
  dialect questdb
  ilp_http "{url}"
  http     "{url}"
  count rows via http sql "SELECT count(*) FROM ${{table}}"
}}
"#,
            url = self.url()
        )
    }

    /// Rows received so far.
    pub fn rows(&self) -> u64 {
        self.shared
            .arrivals
            .lock()
            .unwrap()
            .iter()
            .map(|a| a.1)
            .sum()
    }

    /// Every statement other than a count, in arrival order, each with the rows received
    /// before it.
    pub fn ddl(&self) -> Vec<(String, u64)> {
        self.shared.ddl.lock().unwrap().clone()
    }

    /// The tables that exist now (`start_with_tables` only).
    pub fn tables(&self) -> Vec<String> {
        let mut t: Vec<String> = self
            .shared
            .tables
            .lock()
            .unwrap()
            .iter()
            .flatten()
            .cloned()
            .collect();
        t.sort();
        t
    }

    /// Count requests answered (failed ones included), and those answered 500.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.shared.counts.load(Ordering::Relaxed),
            self.shared.failed.load(Ordering::Relaxed),
        )
    }
}

impl Drop for FreshServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(conn: TcpStream, s: &Shared) -> std::io::Result<()> {
    conn.set_nodelay(true)?;
    let mut out = conn.try_clone()?;
    let mut r = BufReader::new(conn);
    while let Some((target, body)) = super::http::read_request(&mut r)? {
        let (status, answer) = if target.starts_with("/write") {
            let rows = body.iter().filter(|&&b| b == b'\n').count() as u64;
            // Line protocol creates the table of a measurement it has not seen.
            if let Some(tables) = s.tables.lock().unwrap().as_mut() {
                let first = body
                    .split(|&b| b == b',' || b == b' ')
                    .next()
                    .unwrap_or(&[]);
                tables.insert(String::from_utf8_lossy(first).into_owned());
            }
            s.arrivals.lock().unwrap().push((Instant::now(), rows));
            (204, String::new())
        } else if target.starts_with("/exec") {
            exec(s, &decode(target.split_once("query=").map_or("", |q| q.1)))
        } else {
            (404, String::new())
        };
        let reason = match status {
            200 => "OK",
            204 => "No Content",
            400 => "Bad Request",
            404 => "Not Found",
            _ => "Internal Server Error",
        };
        write!(
            out,
            "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{answer}",
            answer.len()
        )?;
        out.flush()?;
    }
    Ok(())
}

/// What the server says its build is.
pub const BUILD: &str = "Build Information: QuestDB fresh oracle (test server)";

fn exec(s: &Shared, query: &str) -> (u16, String) {
    let lower = query.to_ascii_lowercase();
    if lower.trim() == "select build()" {
        return (
            200,
            format!(
                r#"{{"query":"build","columns":[{{"name":"build","type":"STRING"}}],"dataset":[["{BUILD}"]],"count":1}}"#
            ),
        );
    }
    if !lower.contains("count(") {
        let received = s.arrivals.lock().unwrap().iter().map(|a| a.1).sum();
        s.ddl.lock().unwrap().push((query.to_string(), received));
        return ddl(s, query);
    }
    if let Some(missing) = missing_table(s, query) {
        return missing;
    }
    let n = s.counts.fetch_add(1, Ordering::Relaxed) + 1;
    if s.fail_every > 0 && n % s.fail_every == 0 {
        s.failed.fetch_add(1, Ordering::Relaxed);
        return (500, "probe failure (test server)".into());
    }
    let visible = visible(s, Instant::now());
    (
        200,
        format!(
            r#"{{"query":"count","columns":[{{"name":"count","type":"LONG"}}],"dataset":[[{visible}]],"count":1}}"#
        ),
    )
}

/// A statement other than a count: on a server that knows its tables, what QuestDB does with
/// it; else `OK`.
fn ddl(s: &Shared, query: &str) -> (u16, String) {
    const OK: &str = r#"{"ddl":"OK"}"#;
    if s.tables.lock().unwrap().is_none() {
        return (200, OK.into());
    }
    let words: Vec<&str> = query.split_whitespace().collect();
    let upper: Vec<String> = words.iter().map(|w| w.to_ascii_uppercase()).collect();
    let upper: Vec<&str> = upper.iter().map(String::as_str).collect();
    let name = |i: usize| {
        let w = words.get(i).copied().unwrap_or("");
        w.split('(')
            .next()
            .unwrap_or("")
            .trim_matches('"')
            .to_string()
    };
    let clear = || {
        let n = s.arrivals.lock().unwrap().len() as u64;
        s.cleared.store(n, Ordering::Relaxed);
    };
    match upper.as_slice() {
        ["DROP", "TABLE", "IF", "EXISTS", ..] => {
            let table = name(4);
            if let Some(t) = s.tables.lock().unwrap().as_mut() {
                t.remove(&table);
            }
            clear();
        }
        ["CREATE", "TABLE", ..] => {
            let table = name(2);
            let created = s
                .tables
                .lock()
                .unwrap()
                .as_mut()
                .map(|t| t.insert(table.clone()));
            if created == Some(false) {
                return error(query, &format!("table already exists [table={table}]"));
            }
        }
        ["TRUNCATE", "TABLE", ..] => {
            if let Some(missing) = missing_table(s, query) {
                return missing;
            }
            clear();
        }
        _ => {}
    }
    (200, OK.into())
}

/// QuestDB's answer to a statement on a table that does not exist, if it names one: the
/// table after `FROM` or `TABLE`.
fn missing_table(s: &Shared, query: &str) -> Option<(u16, String)> {
    let tables = s.tables.lock().unwrap();
    let tables = tables.as_ref()?;
    let words: Vec<&str> = query.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| w.eq_ignore_ascii_case("from") || w.eq_ignore_ascii_case("table"))?;
    let table = words.get(at + 1)?.trim_end_matches(';').trim_matches('"');
    if tables.contains(table) {
        return None;
    }
    Some(error(
        query,
        &format!("table does not exist [table={table}]"),
    ))
}

/// QuestDB's HTTP 400 answer: the query, the error and where in the query it is.
fn error(query: &str, message: &str) -> (u16, String) {
    let json = |t: &str| t.replace('\\', "\\\\").replace('"', "\\\"");
    (
        400,
        format!(
            r#"{{"query":"{}","error":"{}","position":0}}"#,
            json(query),
            json(message)
        ),
    )
}

/// The rows visible at `now`.
fn visible(s: &Shared, now: Instant) -> u64 {
    let arrivals = s.arrivals.lock().unwrap();
    // Rows a drop or truncate took away are never counted again.
    let cleared = s.cleared.load(Ordering::Relaxed) as usize;
    let arrivals = &arrivals[cleared.min(arrivals.len())..];
    if s.apply_per_s <= 0.0 {
        return arrivals
            .iter()
            .filter(|(at, _)| *at + s.delay <= now)
            .map(|a| a.1)
            .sum();
    }
    // The applier takes the writes in arrival order; `free` is when it finished the last.
    let mut free: Option<Instant> = None;
    let mut visible = 0;
    for &(at, rows) in arrivals.iter() {
        let begin = free.map_or(at + s.delay, |f| f.max(at + s.delay));
        if begin >= now {
            break;
        }
        let took = Duration::from_secs_f64(rows as f64 / s.apply_per_s);
        if begin + took > now {
            visible += ((now - begin).as_secs_f64() * s.apply_per_s) as u64;
            break;
        }
        visible += rows;
        free = Some(begin + took);
    }
    visible
}

/// `%XX` and `+` of a query string.
fn decode(q: &str) -> String {
    let q = q.split('&').next().unwrap_or("");
    let b = q.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("00");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
