//! A server for `probe visible` tests: it takes line protocol over HTTP (`POST /write`, every
//! line of a body a row) and answers QuestDB-style counts (`GET /exec?query=SELECT count...`,
//! `{"dataset":[[N]]}`) as if each request's rows became visible a fixed `delay` after the
//! request arrived whole, or, with `start_applying`, as if a single applier made them visible
//! in arrival order at a fixed number of rows per second (QuestDB's WAL apply, reduced to its
//! capacity). Other `/exec` statements (DDL) answer `{"ddl":"OK"}`; with
//! `fail_every` n > 0, every n-th count answers HTTP 500.
//!
//! Plain threads, one per connection, on an ephemeral port of 127.0.0.1; dropping the handle
//! stops accepting. Part of `oracles` (tests/common/oracles/mod.rs).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
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
}

impl FreshServer {
    pub fn start(delay: Duration, fail_every: u64) -> FreshServer {
        FreshServer::start_applying(delay, fail_every, 0.0)
    }

    /// As `start`, with rows made visible at most `apply_per_s` rows per second: a write
    /// becomes visible `delay` after it arrived or once the applier has finished the writes
    /// before it, whichever is later, and then takes its rows / `apply_per_s` to show.
    pub fn start_applying(delay: Duration, fail_every: u64, apply_per_s: f64) -> FreshServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            delay,
            apply_per_s,
            fail_every,
            arrivals: Mutex::new(Vec::new()),
            counts: AtomicU64::new(0),
            failed: AtomicU64::new(0),
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
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let target = line.split_whitespace().nth(1).unwrap_or("").to_string();
        let mut length = 0usize;
        loop {
            let mut h = String::new();
            if r.read_line(&mut h)? == 0 {
                return Ok(());
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; length];
        r.read_exact(&mut body)?;
        let (status, answer) = if target.starts_with("/write") {
            let rows = body.iter().filter(|&&b| b == b'\n').count() as u64;
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
}

fn exec(s: &Shared, query: &str) -> (u16, String) {
    if !query.to_ascii_lowercase().contains("count(") {
        return (200, r#"{"ddl":"OK"}"#.into());
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

/// The rows visible at `now`.
fn visible(s: &Shared, now: Instant) -> u64 {
    let arrivals = s.arrivals.lock().unwrap();
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
