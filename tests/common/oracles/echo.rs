//! An HTTP server that refuses every request with 401 and says back what it was sent, as a
//! careless server does: the request's `X-…` headers as they came, percent-encoded (as a server
//! putting a value into a URL) and in base64 (as one logging bytes), and its `Authorization`
//! header as it came and with the `user:password` of Basic authorization decoded. The oracle
//! for "no secret wlrun sent comes back out of it" (tests/secrets.rs): the truth it holds is
//! that every form of every secret is in its answers, so output that shows none of them masked
//! them all.
//!
//! Std threads, one per connection, on an ephemeral port of 127.0.0.1; dropping the handle
//! stops accepting. Part of `oracles` (tests/common/oracles/mod.rs).

#![allow(dead_code)]

use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use base64::Engine as _;

pub struct EchoServer {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    answered: Arc<AtomicU64>,
}

impl EchoServer {
    pub fn start() -> EchoServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicU64::new(0));
        let (s, a) = (stop.clone(), answered.clone());
        thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let a = a.clone();
                        thread::spawn(move || serve(conn, &a));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        EchoServer {
            addr,
            stop,
            answered,
        }
    }

    /// The 401s it sent, each echoing the request's secrets.
    pub fn answered(&self) -> u64 {
        self.answered.load(Ordering::Relaxed)
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(conn: TcpStream, answered: &AtomicU64) {
    conn.set_nonblocking(false).unwrap();
    let mut w = conn.try_clone().unwrap();
    let mut r = BufReader::new(conn);
    while let Ok(Some(req)) = super::http::read_whole_request(&mut r) {
        let body = echo(&req.headers);
        let head = format!(
            "HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        if w.write_all(head.as_bytes()).is_err() || w.write_all(body.as_bytes()).is_err() {
            return;
        }
        answered.fetch_add(1, Ordering::Relaxed);
    }
}

fn echo(headers: &[(String, String)]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut out = String::from("who are you? you sent");
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("authorization") {
            out.push_str(&format!(" {name}: {value}"));
            let creds = value
                .strip_prefix("Basic ")
                .and_then(|c| b64.decode(c).ok());
            if let Some(plain) = creds {
                out.push_str(&format!(
                    " (credentials {})",
                    String::from_utf8_lossy(&plain)
                ));
            }
        } else if name.to_ascii_lowercase().starts_with("x-") {
            out.push_str(&format!(
                " {name}: {value} (as a query: {}, in base64: {})",
                percent_encoded(value),
                b64.encode(value)
            ));
        }
    }
    out
}

/// As a server puts a value into a URL: every byte but the unreserved ones as `%XX`.
pub fn percent_encoded(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
