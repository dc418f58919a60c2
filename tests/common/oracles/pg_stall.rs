//! A PostgreSQL-wire proxy in front of a real server that goes deaf after a batch: once a
//! connection has sent its n-th message of a kind (CopyDone, the end of a COPY; Execute, of
//! an INSERT), nothing the server says on it reaches the client any more. The server has the
//! whole batch and commits it; the client hears neither its CommandComplete nor anything
//! after, and its `timeout` fires. The proxy counts the batches it passed on whole (messages
//! of that kind), so a test knows what the server was given.
//!
//! The client must connect in clear (`sslmode=disable`): the proxy reads the client's
//! messages to find the CopyDones. Plain threads, two per connection, on an ephemeral port of
//! 127.0.0.1; dropping the handle stops accepting. Part of `oracles` (mod.rs).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

/// The codes of the start-up requests that come before the real start-up message.
const SSL_REQUEST: u32 = 80877103;
const GSSENC_REQUEST: u32 = 80877104;

pub struct PgStall {
    pub addr: SocketAddr,
    batches: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

/// The message that ends a batch: CopyDone.
pub const COPY_DONE: u8 = b'c';
/// The message that runs an INSERT's bound batch: Execute.
pub const EXECUTE: u8 = b'E';

impl PgStall {
    /// Proxies to the server at `upstream` (`host:port`); each connection goes deaf after its
    /// `after`-th message of type `kind` (`COPY_DONE`, `EXECUTE`).
    pub fn start(upstream: &str, kind: u8, after: u64) -> PgStall {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let batches = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (c, st, up) = (batches.clone(), stop.clone(), upstream.to_string());
        thread::spawn(move || {
            for conn in listener.incoming() {
                if st.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(client) = conn else { continue };
                let Ok(server) = TcpStream::connect(&up) else {
                    continue;
                };
                proxy(client, server, (kind, after), c.clone());
            }
        });
        PgStall {
            addr,
            batches,
            stop,
        }
    }

    /// Batches passed on to the server whole, over every connection.
    pub fn batches(&self) -> u64 {
        self.batches.load(Ordering::Relaxed)
    }
}

impl Drop for PgStall {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(self.addr);
    }
}

fn proxy(client: TcpStream, server: TcpStream, end: (u8, u64), batches: Arc<AtomicU64>) {
    let deaf = Arc::new(AtomicBool::new(false));
    let (Ok(c_in), Ok(s_out)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let d = deaf.clone();
    thread::spawn(move || {
        let _ = to_server(c_in, s_out, end, &d, &batches);
    });
    thread::spawn(move || {
        let _ = to_client(server, client, &deaf);
    });
}

/// Passes the client's messages on one by one, counting those that end a batch; the
/// `after`-th makes the connection deaf before it goes out, so that no answer to it can slip
/// through.
fn to_server(
    mut client: TcpStream,
    mut server: TcpStream,
    (end, after): (u8, u64),
    deaf: &AtomicBool,
    batches: &AtomicU64,
) -> std::io::Result<()> {
    let mut done = 0;
    let mut starting = true;
    loop {
        let mut kind = [0u8; 1];
        if !starting && client.read_exact(&mut kind).is_err() {
            break;
        }
        let mut len = [0u8; 4];
        if client.read_exact(&mut len).is_err() {
            break;
        }
        let n = u32::from_be_bytes(len) as usize;
        let mut body = vec![0; n.saturating_sub(4)];
        client.read_exact(&mut body)?;
        if starting {
            let code = body
                .get(..4)
                .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
            starting = matches!(code, Some(SSL_REQUEST | GSSENC_REQUEST));
        } else if kind[0] == end {
            done += 1;
            batches.fetch_add(1, Ordering::Relaxed);
            if done >= after {
                deaf.store(true, Ordering::Relaxed);
            }
        }
        let mut message = Vec::with_capacity(1 + n);
        if kind[0] != 0 {
            message.push(kind[0]);
        }
        message.extend_from_slice(&len);
        message.extend_from_slice(&body);
        server.write_all(&message)?;
    }
    server.shutdown(Shutdown::Write)
}

/// Passes the server's bytes on until the connection is deaf; after that it reads them (the
/// server must not block on a full socket) and drops them.
fn to_client(
    mut server: TcpStream,
    mut client: TcpStream,
    deaf: &AtomicBool,
) -> std::io::Result<()> {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = server.read(&mut buf)?;
        if n == 0 {
            break;
        }
        if !deaf.load(Ordering::Relaxed) {
            client.write_all(&buf[..n])?;
        }
    }
    client.shutdown(Shutdown::Both)
}
