//! An ingest endpoint of known capacity, for the rates an ingest reports: line protocol over
//! HTTP (`POST /write`, every line a row), answered `204` once the server has "taken" the body.
//! Taking a body of n rows sleeps n / `capacity` seconds, one body at a time across every
//! connection (a lock held while sleeping), so the server takes at most `capacity` rows per
//! second whatever else the machine is doing: a sleeping server needs no CPU to keep its pace.
//! Capacity 0 answers at once. A server may die after n requests: close every connection
//! with the next request read and unanswered (`start_dying`), or go silent and leave it
//! unanswered with the connection open (`start_silent`); either way it counts the rows that
//! reached it (`received`).
//!
//! Plain threads, one per connection, on an ephemeral port of 127.0.0.1; dropping the handle
//! stops accepting. Part of `oracles` (tests/common/oracles/mod.rs).

#![allow(dead_code)]

use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

pub struct IntakeServer {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
}

struct Shared {
    /// Rows per second; 0: unbounded.
    capacity: f64,
    /// Write requests answered before the server dies (closes every connection unanswered);
    /// 0: never.
    dies_after: u64,
    /// Instead of closing, the server goes silent: it reads every later request whole and
    /// never answers.
    silent: bool,
    requests: AtomicU64,
    /// Held while a body is taken: one at a time.
    taking: Mutex<()>,
    rows: AtomicU64,
    /// Rows of every request read whole, answered or not: what reached the server.
    received: AtomicU64,
}

impl IntakeServer {
    pub fn start(capacity: f64) -> IntakeServer {
        IntakeServer::start_dying(capacity, 0)
    }

    /// As `start`, answering `n` write requests and then closing every connection, the
    /// (n + 1)-th request unanswered: a server that died mid-run.
    pub fn start_dying(capacity: f64, n: u64) -> IntakeServer {
        IntakeServer::launch(capacity, n, false)
    }

    /// As `start`, answering `n` write requests and then none: every later request is read
    /// whole and left unanswered, the connection open, until the client gives up on it.
    pub fn start_silent(n: u64) -> IntakeServer {
        IntakeServer::launch(0.0, n, true)
    }

    fn launch(capacity: f64, n: u64, silent: bool) -> IntakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            capacity,
            dies_after: n,
            silent,
            requests: AtomicU64::new(0),
            taking: Mutex::new(()),
            rows: AtomicU64::new(0),
            received: AtomicU64::new(0),
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
        IntakeServer { addr, shared, stop }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A target `intake` on this server: ILP over HTTP in, nothing to count with.
    pub fn target(&self) -> String {
        format!("target intake {{ ilp_http \"{}\" }}\n", self.url())
    }

    /// Rows taken so far.
    pub fn rows(&self) -> u64 {
        self.shared.rows.load(Ordering::Relaxed)
    }

    /// Rows of every request the server read whole, the unanswered ones too.
    pub fn received(&self) -> u64 {
        self.shared.received.load(Ordering::Relaxed)
    }
}

impl Drop for IntakeServer {
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
        let lines = body.iter().filter(|&&b| b == b'\n').count() as u64;
        s.received.fetch_add(lines, Ordering::Relaxed);
        if s.dies_after > 0 && s.requests.fetch_add(1, Ordering::Relaxed) >= s.dies_after {
            if s.silent {
                continue;
            }
            return Ok(());
        }
        let status = if target.starts_with("/write") {
            let rows = body.iter().filter(|&&b| b == b'\n').count() as u64;
            {
                let _one = s.taking.lock().unwrap_or_else(|e| e.into_inner());
                if s.capacity > 0.0 {
                    thread::sleep(Duration::from_secs_f64(rows as f64 / s.capacity));
                }
                s.rows.fetch_add(rows, Ordering::Relaxed);
            }
            "204 No Content"
        } else {
            "404 Not Found"
        };
        write!(out, "HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n")?;
        out.flush()?;
    }
    Ok(())
}
