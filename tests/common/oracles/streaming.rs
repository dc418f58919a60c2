//! Result-streaming oracles: a PostgreSQL-wire server (simple query protocol) and a QuestDB
//! `/exec` HTTP server that answer every query with a result whose schedule the test sets —
//! the first piece (one row) `first_delay` after the query was read, then the other rows in
//! `chunks - 1` writes spaced by `gap` — and record, per query, the bytes they wrote on the
//! socket for it (all of it, and the first write). Part of `oracles` (mod.rs).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::pg_wire::{message, read_message, read_startup, session_ready, SSL_REQUEST};

/// When each part of a result is written.
#[derive(Clone, Copy, Debug)]
pub struct Schedule {
    /// From reading the query to writing the first row.
    pub first_delay: Duration,
    /// Between two writes after the first.
    pub gap: Duration,
    /// Rows of the result (at least `chunks`).
    pub rows: u64,
    /// Writes: the first carries one row, the others share the rest.
    pub chunks: u64,
}

impl Schedule {
    /// The rows of each write.
    fn split(&self) -> Vec<u64> {
        let rest = self.rows - 1;
        let n = self.chunks - 1;
        let mut out = vec![1];
        for i in 0..n {
            out.push(rest / n + u64::from(i < rest % n));
        }
        out
    }
}

/// What the server wrote for one query.
#[derive(Clone, Copy, Debug)]
pub struct Answer {
    /// Every byte of the answer.
    pub bytes: u64,
    /// The first write: everything before the first row, and the first row.
    pub first_bytes: u64,
    /// From reading the query to the first write, and from the first write to the last.
    pub first_after: Duration,
    pub span: Duration,
}

pub struct StreamServer {
    pub addr: SocketAddr,
    answers: Arc<Mutex<Vec<Answer>>>,
}

#[derive(Clone, Copy)]
enum Wire {
    Pg,
    Http,
}

impl StreamServer {
    pub fn pg(schedule: Schedule) -> StreamServer {
        StreamServer::start(Wire::Pg, schedule)
    }

    pub fn http(schedule: Schedule) -> StreamServer {
        StreamServer::start(Wire::Http, schedule)
    }

    fn start(wire: Wire, schedule: Schedule) -> StreamServer {
        assert!(schedule.chunks >= 2 && schedule.rows >= schedule.chunks);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        let answers = Arc::new(Mutex::new(Vec::new()));
        let kept = answers.clone();
        thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let answers = kept.clone();
                thread::spawn(move || {
                    let _ = conn.set_nodelay(true);
                    let _ = match wire {
                        Wire::Pg => serve_pg(conn, schedule, &answers),
                        Wire::Http => serve_http(conn, schedule, &answers),
                    };
                });
            }
        });
        StreamServer { addr, answers }
    }

    /// `postgres://...` (no TLS) or `http://...`.
    pub fn pg_url(&self) -> String {
        format!("postgres://u@{}/db?sslmode=disable", self.addr)
    }

    pub fn http_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn answers(&self) -> Vec<Answer> {
        self.answers.lock().unwrap().clone()
    }
}

/// Writes `parts` on the schedule: the first `first_delay` after `read`, the others `gap`
/// apart; what was written.
fn send(conn: &mut TcpStream, s: Schedule, read: Instant, parts: &[Vec<u8>]) -> Answer {
    thread::sleep(s.first_delay.saturating_sub(read.elapsed()));
    let mut first_at = Instant::now();
    let mut last_at = first_at;
    let mut bytes = 0u64;
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            thread::sleep(s.gap);
        }
        conn.write_all(p).expect("write a part");
        conn.flush().unwrap();
        last_at = Instant::now();
        if i == 0 {
            first_at = last_at;
        }
        bytes += p.len() as u64;
    }
    Answer {
        bytes,
        first_bytes: parts[0].len() as u64,
        first_after: first_at - read,
        span: last_at - first_at,
    }
}

fn serve_pg(mut conn: TcpStream, s: Schedule, answers: &Mutex<Vec<Answer>>) -> std::io::Result<()> {
    let (mut code, _) = read_startup(&mut conn)?;
    while code == SSL_REQUEST {
        conn.write_all(b"N")?;
        code = read_startup(&mut conn)?.0;
    }
    conn.write_all(&session_ready())?;
    loop {
        let (kind, _) = read_message(&mut conn)?;
        let read = Instant::now();
        match kind {
            b'Q' => {}
            b'X' => return Ok(()),
            other => panic!(
                "the oracle speaks the simple protocol only, not `{}`",
                other as char
            ),
        }
        // One int8 column `x`, in text.
        let mut desc = 1i16.to_be_bytes().to_vec();
        desc.extend_from_slice(b"x\0");
        desc.extend_from_slice(&0i32.to_be_bytes());
        desc.extend_from_slice(&0i16.to_be_bytes());
        desc.extend_from_slice(&20i32.to_be_bytes());
        desc.extend_from_slice(&8i16.to_be_bytes());
        desc.extend_from_slice(&(-1i32).to_be_bytes());
        desc.extend_from_slice(&0i16.to_be_bytes());
        let row = |n: u64| {
            let text = n.to_string();
            let mut body = 1i16.to_be_bytes().to_vec();
            body.extend_from_slice(&(text.len() as i32).to_be_bytes());
            body.extend_from_slice(text.as_bytes());
            message(b'D', &body)
        };
        let mut parts = Vec::new();
        let mut n = 0u64;
        for (i, rows) in s.split().into_iter().enumerate() {
            let mut part = if i == 0 {
                message(b'T', &desc)
            } else {
                Vec::new()
            };
            for _ in 0..rows {
                n += 1;
                part.extend(row(n));
            }
            parts.push(part);
        }
        let last = parts.last_mut().unwrap();
        last.extend(message(b'C', format!("SELECT {n}\0").as_bytes()));
        last.extend(message(b'Z', b"I"));
        let a = send(&mut conn, s, read, &parts);
        answers.lock().unwrap().push(a);
    }
}

fn serve_http(
    mut conn: TcpStream,
    s: Schedule,
    answers: &Mutex<Vec<Answer>>,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        buf.clear();
        while !buf.ends_with(b"\r\n\r\n") {
            if conn.read(&mut byte)? == 0 {
                return Ok(());
            }
            buf.push(byte[0]);
        }
        let read = Instant::now();
        let mut parts: Vec<Vec<u8>> = Vec::new();
        let mut n = 0u64;
        for (i, rows) in s.split().into_iter().enumerate() {
            let mut part = if i == 0 {
                br#"{"query":"SELECT x","columns":[{"name":"x","type":"LONG"}],"dataset":["#
                    .to_vec()
            } else {
                Vec::new()
            };
            for _ in 0..rows {
                n += 1;
                if n > 1 {
                    part.push(b',');
                }
                part.extend_from_slice(format!("[{n}]").as_bytes());
            }
            parts.push(part);
        }
        parts
            .last_mut()
            .unwrap()
            .extend_from_slice(format!(r#"],"count":{n}}}"#).as_bytes());
        let length: usize = parts.iter().map(Vec::len).sum();
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
        );
        parts[0].splice(0..0, head.into_bytes());
        let a = send(&mut conn, s, read, &parts);
        answers.lock().unwrap().push(a);
    }
}
