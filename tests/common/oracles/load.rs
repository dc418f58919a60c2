//! HTTP servers whose capacity is known, for `find max rate` (tests/findmax.rs): std threads,
//! 127.0.0.1, port 0. Every request gets `200 []`; what differs is the time it takes.
//!
//! - `Work::Serial(d)`: ONE thread does everything (a single-threaded tokio runtime: accepting,
//!   reading, answering) and sleeps `d` per request, blocking itself meanwhile, so requests are
//!   served one at a time: its service time is `d` and its capacity 1/d (a little less: reading
//!   and answering take their microseconds), whatever else the machine is doing, since a
//!   sleeping server needs no CPU to keep its pace. The oracle for rates, latency and capacity.
//! - `Work::Busy(d)`: as `Serial`, but busy-waits `d`: its capacity depends on the CPU it gets.
//! - `LoadServer::start_failing(d, n)`: `Serial(d)` answering every n-th request with HTTP 500
//!   (`FAILED`): a set share of failures, counted (`failed_answers`).
//! - `Work::Serial` and `start_failing` answer a QuestDB `/exec` query (any path starting
//!   `/exec`) with a one-row result set (`EXEC_ANSWER`), so a query phase over `http` SQL
//!   measures the same one-at-a-time server as a request run.
//! - `Work::Smooth`: each request sleeps `base / (1 − rate / capacity)` (at most `cap`), where
//!   `rate` is what the server saw over the last `WINDOW`: latency grows smoothly with load.
//!
//! Part of `oracles` (tests/common/oracles/mod.rs).

#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const ANSWER: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n[]";
/// A QuestDB `/exec` answer: one row, one column.
const EXEC_ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 85\r\n\r\n{\"query\":\"SELECT 1\",\"columns\":[{\"name\":\"x\",\"type\":\"LONG\"}],\"dataset\":[[1]],\"count\":1}";

/// `start_failing`'s failure: a server error with a message.
pub const FAILED: &[u8] =
    b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: 6\r\n\r\nfailed";

/// The span over which `Work::Smooth` measures the rate it sees.
pub const WINDOW: Duration = Duration::from_millis(250);

#[derive(Clone, Copy, Debug)]
pub enum Work {
    Serial(Duration),
    Busy(Duration),
    Smooth {
        base: Duration,
        capacity: f64,
        cap: Duration,
    },
}

pub struct LoadServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    served: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
}

impl LoadServer {
    pub fn start(work: Work) -> LoadServer {
        LoadServer::start_with(work, 0)
    }

    /// `Work::Serial(d)`, answering every `every`-th request (the `every`-th, the 2·`every`-th,
    /// ...) with `FAILED` instead of 200.
    pub fn start_failing(d: Duration, every: u64) -> LoadServer {
        LoadServer::start_with(Work::Serial(d), every)
    }

    fn start_with(work: Work, fail_every: u64) -> LoadServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let served = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(AtomicU64::new(0));
        let serial = match work {
            Work::Serial(d) => Some((d, false)),
            Work::Busy(d) => Some((d, true)),
            Work::Smooth { .. } => None,
        };
        if let Some((d, spin)) = serial {
            let counts = Counts {
                served: served.clone(),
                failed: failed.clone(),
                fail_every,
            };
            serial_server(listener, d, spin, counts, stop.clone());
            return LoadServer {
                addr,
                stop,
                served,
                failed,
            };
        }
        let seen = Arc::new(Mutex::new(VecDeque::new()));
        let (stop2, served2) = (stop.clone(), served.clone());
        thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let _ = conn.set_nodelay(true);
                let (seen, served, stop) = (seen.clone(), served2.clone(), stop2.clone());
                thread::spawn(move || serve(conn, work, &seen, &served, &stop));
            }
        });
        LoadServer {
            addr,
            stop,
            served,
            failed,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Requests answered, failures included.
    pub fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }

    /// Requests answered with `FAILED`.
    pub fn failed_answers(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }

    /// Closed-loop capacity: `conns` connections sending request after request for `span`;
    /// answers per second.
    pub fn closed_loop_rate(&self, conns: usize, span: Duration) -> f64 {
        let end = Instant::now() + span;
        let handles: Vec<_> = (0..conns)
            .map(|_| {
                let addr = self.addr;
                thread::spawn(move || {
                    let mut s = TcpStream::connect(addr).unwrap();
                    s.set_nodelay(true).unwrap();
                    let mut r = BufReader::new(s.try_clone().unwrap());
                    let mut n = 0u64;
                    let mut buf = [0u8; 2];
                    while Instant::now() < end {
                        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
                        let len = read_head(&mut r).expect("an answer");
                        assert_eq!(len, 2);
                        r.read_exact(&mut buf).unwrap();
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        let started = Instant::now();
        let total: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
        total as f64 / started.elapsed().as_secs_f64().max(span.as_secs_f64())
    }
}

impl Drop for LoadServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accepting thread so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

/// What a serial server answered.
struct Counts {
    served: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
    /// Every n-th answer fails; 0: none.
    fail_every: u64,
}

/// `Work::Serial` and `Work::Busy`: one thread, one request at a time, `d` each, asleep or
/// busy.
fn serial_server(
    listener: TcpListener,
    d: Duration,
    spin: bool,
    counts: Counts,
    stop: Arc<AtomicBool>,
) {
    let counts = Arc::new(counts);
    use tokio::io::{AsyncBufReadExt, AsyncReadExt as _, AsyncWriteExt};
    listener.set_nonblocking(true).unwrap();
    thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while !stop.load(Ordering::Relaxed) {
                let Ok((conn, _)) = listener.accept().await else {
                    continue;
                };
                let _ = conn.set_nodelay(true);
                let counts = counts.clone();
                tokio::spawn(async move {
                    let (r, mut w) = conn.into_split();
                    let mut r = tokio::io::BufReader::new(r);
                    let mut line = String::new();
                    loop {
                        let mut len = 0usize;
                        let mut first = true;
                        let mut exec = false;
                        loop {
                            line.clear();
                            match r.read_line(&mut line).await {
                                Ok(0) | Err(_) => return,
                                Ok(_) => {}
                            }
                            if line == "\r\n" && !first {
                                break;
                            }
                            if first {
                                exec = line
                                    .split_whitespace()
                                    .nth(1)
                                    .is_some_and(|t| t.starts_with("/exec"));
                            }
                            first = false;
                            if let Some((k, v)) = line.split_once(':') {
                                if k.eq_ignore_ascii_case("content-length") {
                                    len = v.trim().parse().unwrap_or(0);
                                }
                            }
                        }
                        let mut body = vec![0u8; len];
                        if r.read_exact(&mut body).await.is_err() {
                            return;
                        }
                        // Blocks the runtime's only thread: no other request is served meanwhile.
                        if spin {
                            let until = Instant::now() + d;
                            while Instant::now() < until {
                                std::hint::spin_loop();
                            }
                        } else {
                            thread::sleep(d);
                        }
                        // Counted before the answer leaves, so a client that has its answer
                        // never reads a count that lacks it.
                        let n = counts.served.fetch_add(1, Ordering::Relaxed) + 1;
                        let fail = counts.fail_every > 0 && n % counts.fail_every == 0;
                        if fail {
                            counts.failed.fetch_add(1, Ordering::Relaxed);
                        }
                        let answer = match (fail, exec) {
                            (true, _) => FAILED,
                            (false, true) => EXEC_ANSWER,
                            (false, false) => ANSWER,
                        };
                        if w.write_all(answer).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
    });
}

/// Reads a request head; the body's length (`Content-Length`), or `None` at the end.
fn read_head(r: &mut impl BufRead) -> Option<usize> {
    let mut len = 0;
    let mut line = String::new();
    let mut first = true;
    loop {
        line.clear();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" && !first {
            return Some(len);
        }
        first = false;
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().ok()?;
            }
        }
    }
}

fn serve(
    conn: TcpStream,
    work: Work,
    seen: &Mutex<VecDeque<Instant>>,
    served: &AtomicU64,
    stop: &AtomicBool,
) {
    let _ = conn.set_read_timeout(Some(Duration::from_millis(500)));
    let mut r = BufReader::new(match conn.try_clone() {
        Ok(c) => c,
        Err(_) => return,
    });
    let mut body = Vec::new();
    loop {
        let len = loop {
            match read_head(&mut r) {
                Some(len) => break len,
                // A read timeout between requests: carry on unless the server stops.
                None if !stop.load(Ordering::Relaxed) && r.buffer().is_empty() && alive(&conn) => {
                    continue
                }
                None => return,
            }
        };
        body.resize(len, 0);
        if r.read_exact(&mut body).is_err() {
            return;
        }
        match work {
            Work::Smooth {
                base,
                capacity,
                cap,
            } => {
                let rate = {
                    let now = Instant::now();
                    let mut s = seen.lock().unwrap();
                    s.push_back(now);
                    while s.front().is_some_and(|t| now - *t > WINDOW) {
                        s.pop_front();
                    }
                    s.len() as f64 / WINDOW.as_secs_f64()
                };
                let load = (rate / capacity).min(1.0);
                let wait = if load >= 1.0 {
                    cap
                } else {
                    base.div_f64(1.0 - load).min(cap)
                };
                thread::sleep(wait);
                if (&conn).write_all(ANSWER).is_err() {
                    return;
                }
                served.fetch_add(1, Ordering::Relaxed);
            }
            Work::Serial(_) | Work::Busy(_) => return,
        }
    }
}

/// The peer has not closed the connection (a read timeout is not an end).
fn alive(conn: &TcpStream) -> bool {
    let mut b = [0u8; 1];
    let _ = conn.set_nonblocking(true);
    let open = match conn.peek(&mut b) {
        Ok(0) => false,
        Ok(_) => true,
        Err(e) => e.kind() == std::io::ErrorKind::WouldBlock,
    };
    let _ = conn.set_nonblocking(false);
    open
}
