//! A hostile PostgreSQL-wire server: it answers the start-up, then sends one message whose
//! header announces a size the test chooses (an ErrorResponse, a NoticeResponse, a DataRow of
//! 100 MB), and either streams its body as fast as the client takes it or sends none of it.
//! The oracle for the endpoint's `max_message` (tests/pg_message_cap.rs): the truth it holds is
//! how many body bytes of that message the client took before it closed, which a client that
//! buffers whole messages drives to the announced size, and one that refuses the header keeps
//! to what the sockets hold.
//!
//! - `At::Startup`: the message comes in place of AuthenticationOk;
//! - `At::Query`: the session starts, and every simple query (`Q`) is answered with a
//!   RowDescription (one text column), the message, and, when the client read it all,
//!   CommandComplete and ReadyForQuery. A DataRow is well formed (one field, its bytes 'x'),
//!   so a client allowed the size reads a good row.
//!
//! Over TLS (`tls()`) it answers an SSLRequest with 'S' and a self-signed certificate
//! (`sslmode require` takes it); otherwise with 'N'. Plain threads, one per connection, on an
//! ephemeral port of 127.0.0.1; dropping the handle stops accepting. Part of `oracles`.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use super::pg_wire::{
    message, read_message, read_startup, session_ready, GSSENC_REQUEST, PROTOCOL_3, SSL_REQUEST,
};

/// Where in the session the message comes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    Startup,
    Query,
}

/// What follows the message's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    /// All of it, in 64 KiB writes, as fast as the client takes them.
    Whole,
    /// None: the server goes quiet until the client closes.
    Silent,
}

/// The message: its type (`b'E'`, `b'N'`, `b'D'`), the length its header announces (which
/// counts the length field itself, as the protocol does), where it comes, what follows.
#[derive(Clone, Copy, Debug)]
pub struct Oversize {
    pub kind: u8,
    pub announced: u32,
    pub at: At,
    pub body: Body,
}

pub struct OversizeServer {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
}

#[derive(Default)]
struct Counts {
    connections: AtomicU64,
    /// Headers of the message sent.
    sent: AtomicU64,
    /// The most body bytes of the message one connection took.
    body_max: AtomicU64,
    /// Messages sent whole, body and all.
    whole: AtomicU64,
}

/// How long a client may keep a socket open without reading or writing: a hang guard only.
const STALL: Duration = Duration::from_secs(20);

impl OversizeServer {
    pub fn start(oversize: Oversize) -> OversizeServer {
        OversizeServer::serve_with(oversize, None)
    }

    /// The same, under TLS.
    pub fn tls(oversize: Oversize) -> OversizeServer {
        OversizeServer::serve_with(oversize, Some(super::pg_wire::self_signed_tls()))
    }

    fn serve_with(oversize: Oversize, tls: Option<Arc<rustls::ServerConfig>>) -> OversizeServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(Counts::default());
        let (stop2, counts2) = (stop.clone(), counts.clone());
        thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                counts2.connections.fetch_add(1, Ordering::Relaxed);
                let (counts, tls) = (counts2.clone(), tls.clone());
                thread::spawn(move || {
                    let _ = conn.set_read_timeout(Some(STALL));
                    let _ = conn.set_write_timeout(Some(STALL));
                    let _ = serve(conn, oversize, tls, &counts);
                });
            }
        });
        OversizeServer { addr, stop, counts }
    }

    /// `postgres://wlrun:pw@127.0.0.1:PORT/db`.
    pub fn url(&self) -> String {
        format!("postgres://wlrun:pw@{}/db", self.addr)
    }

    pub fn connections(&self) -> u64 {
        self.counts.connections.load(Ordering::Relaxed)
    }

    /// How many times the message's header went out.
    pub fn sent(&self) -> u64 {
        self.counts.sent.load(Ordering::Relaxed)
    }

    /// The most body bytes of the message one connection took before it closed.
    pub fn body_max(&self) -> u64 {
        self.counts.body_max.load(Ordering::Relaxed)
    }

    /// How many times the message went out whole.
    pub fn whole(&self) -> u64 {
        self.counts.whole.load(Ordering::Relaxed)
    }
}

impl Drop for OversizeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accepting thread so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

/// A connection in clear or under TLS.
trait Io: Read + Write {}
impl<T: Read + Write> Io for T {}

fn serve(
    mut conn: TcpStream,
    oversize: Oversize,
    tls: Option<Arc<rustls::ServerConfig>>,
    counts: &Counts,
) -> std::io::Result<()> {
    loop {
        match read_startup(&mut conn)?.0 {
            SSL_REQUEST if tls.is_some() => {
                conn.write_all(b"S")?;
                let config = tls.expect("a TLS configuration");
                let server = rustls::ServerConnection::new(config)
                    .map_err(|e| std::io::Error::other(e.to_string()))?;
                let mut stream = rustls::StreamOwned::new(server, conn);
                // The start-up packet, now under TLS.
                if read_startup(&mut stream)?.0 != PROTOCOL_3 {
                    return Ok(());
                }
                return session(&mut stream, oversize, counts);
            }
            SSL_REQUEST | GSSENC_REQUEST => conn.write_all(b"N")?,
            PROTOCOL_3 => return session(&mut conn, oversize, counts),
            _ => return Ok(()),
        }
    }
}

/// The session after its start-up packet.
fn session(conn: &mut dyn Io, oversize: Oversize, counts: &Counts) -> std::io::Result<()> {
    if oversize.at == At::Startup {
        return send(conn, oversize, counts);
    }
    conn.write_all(&session_ready())?;
    conn.flush()?;
    loop {
        match read_message(conn)? {
            (b'Q', _) => {
                conn.write_all(&row_description())?;
                send(conn, oversize, counts)?;
                conn.write_all(&message(b'C', b"SELECT 1\0"))?;
                conn.write_all(&message(b'Z', b"I"))?;
                conn.flush()?;
            }
            (b'X', _) => return Ok(()),
            (kind, _) => {
                return Err(std::io::Error::other(format!(
                    "the oracle answers simple queries only, not '{}'",
                    kind as char
                )))
            }
        }
    }
}

/// One column `x` of type text.
fn row_description() -> Vec<u8> {
    let mut body = 1u16.to_be_bytes().to_vec();
    body.extend_from_slice(b"x\0");
    body.extend_from_slice(&0u32.to_be_bytes()); // table oid
    body.extend_from_slice(&0u16.to_be_bytes()); // column number
    body.extend_from_slice(&25u32.to_be_bytes()); // text
    body.extend_from_slice(&(-1i16).to_be_bytes()); // variable size
    body.extend_from_slice(&(-1i32).to_be_bytes()); // no modifier
    body.extend_from_slice(&0u16.to_be_bytes()); // text format
    message(b'T', &body)
}

/// The message: its header, then its body as `oversize.body` says, counting the body bytes the
/// client took. Fails (the client closed) before the body is whole, or after a silence.
fn send(conn: &mut dyn Io, oversize: Oversize, counts: &Counts) -> std::io::Result<()> {
    let (prefix, suffix): (Vec<u8>, &[u8]) = match oversize.kind {
        b'D' => {
            let fill = oversize.announced - 4 - 6;
            let mut p = 1u16.to_be_bytes().to_vec();
            p.extend_from_slice(&fill.to_be_bytes());
            (p, b"")
        }
        b'E' => (b"SERROR\0VERROR\0CXX000\0M".to_vec(), b"\0\0"),
        b'N' => (b"SNOTICE\0VNOTICE\0C01000\0M".to_vec(), b"\0\0"),
        other => panic!("no body for a message of type {}", other as char),
    };
    let fill = oversize.announced as u64 - 4 - prefix.len() as u64 - suffix.len() as u64;
    let mut head = vec![oversize.kind];
    head.extend_from_slice(&oversize.announced.to_be_bytes());
    conn.write_all(&head)?;
    conn.flush()?;
    counts.sent.fetch_add(1, Ordering::Relaxed);
    if oversize.body == Body::Silent {
        // Until the client closes (a read of 0 bytes or an error) or the hang guard.
        let mut byte = [0u8; 1];
        let _ = conn.read(&mut byte);
        return Err(std::io::Error::other("the client closed"));
    }
    let mut taken = 0u64;
    let result = (|| {
        conn.write_all(&prefix)?;
        taken += prefix.len() as u64;
        let chunk = vec![b'x'; 64 * 1024];
        let mut left = fill;
        while left > 0 {
            let n = conn.write(&chunk[..left.min(chunk.len() as u64) as usize])?;
            if n == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            left -= n as u64;
            taken += n as u64;
        }
        conn.write_all(suffix)?;
        conn.flush()
    })();
    counts.body_max.fetch_max(taken, Ordering::Relaxed);
    result?;
    counts.whole.fetch_add(1, Ordering::Relaxed);
    Ok(())
}
