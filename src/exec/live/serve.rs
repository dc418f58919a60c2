//! `--metrics-listen`: `/metrics` served over HTTP/1.1 from a thread of its own. A scrape is
//! a few requests a minute: one blocking thread that answers each connection and closes it
//! keeps scrapes off the runtime that sends the load, and outlives it for the linger
//! (docs/decisions.md says why not hyper's server).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::text::{render, Format};
use super::Live;

/// A request head larger than this is refused: a scraper's is a few hundred bytes.
const MAX_HEAD: usize = 16 * 1024;
/// A client that sends nothing for this long is dropped, so one stuck connection cannot keep
/// Prometheus's next scrape waiting for long.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// The server, running until `stop`.
pub struct Server {
    pub addr: SocketAddr,
    stopping: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds `addr` (HOST:PORT; port 0 picks a free one) and serves `live` from a thread.
    pub fn start(addr: &str, live: Arc<Live>) -> Result<Server, String> {
        let addrs: Vec<SocketAddr> = addr
            .to_socket_addrs()
            .map_err(|e| {
                format!("--metrics-listen {addr}: {e} (write HOST:PORT, such as 127.0.0.1:9464)")
            })?
            .collect();
        let listener = TcpListener::bind(&addrs[..])
            .map_err(|e| format!("--metrics-listen {addr}: cannot listen: {e}"))?;
        let bound = listener
            .local_addr()
            .map_err(|e| format!("--metrics-listen {addr}: {e}"))?;
        let stopping = Arc::new(AtomicBool::new(false));
        let thread = {
            let stopping = stopping.clone();
            std::thread::Builder::new()
                .name("wlrun-metrics".into())
                .spawn(move || {
                    for conn in listener.incoming() {
                        if stopping.load(Ordering::Relaxed) {
                            break;
                        }
                        if let Ok(conn) = conn {
                            let _ = answer(conn, &live);
                        }
                    }
                })
                .map_err(|e| format!("cannot start the metrics server: {e}"))?
        };
        Ok(Server {
            addr: bound,
            stopping,
            thread: Some(thread),
        })
    }

    /// Stops serving: the thread is woken by a connection of our own and ends.
    pub fn stop(mut self) {
        self.stopping.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One connection: one request answered, then closed.
fn answer(mut conn: TcpStream, live: &Live) -> std::io::Result<()> {
    conn.set_read_timeout(Some(READ_TIMEOUT))?;
    conn.set_write_timeout(Some(READ_TIMEOUT))?;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_HEAD {
            return respond(
                &mut conn,
                "431 Request Header Fields Too Large",
                "text/plain",
                b"",
                false,
            );
        }
        let n = conn.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&head);
    let mut lines = head.split("\r\n");
    let mut words = lines.next().unwrap_or("").split(' ');
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let accept = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("accept"))
        .map(|(_, v)| v.trim().to_string());
    let path = target.split('?').next().unwrap_or("");
    let head_only = method == "HEAD";
    if method != "GET" && !head_only {
        return respond(
            &mut conn,
            "405 Method Not Allowed",
            "text/plain",
            b"GET /metrics\n",
            false,
        );
    }
    if path != "/metrics" {
        return respond(
            &mut conn,
            "404 Not Found",
            "text/plain",
            b"wlrun serves /metrics\n",
            head_only,
        );
    }
    let format = Format::negotiate(accept.as_deref());
    let body = crate::secrets::masked(render(&live.snapshot(), format));
    respond(
        &mut conn,
        "200 OK",
        format.content_type(),
        body.as_bytes(),
        head_only,
    )
}

fn respond(
    conn: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
    head_only: bool,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes())?;
    if !head_only {
        conn.write_all(body)?;
    }
    conn.flush()
}
