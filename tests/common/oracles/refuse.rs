//! PostgreSQL-wire servers that refuse who the client is, and count how often it asked: the
//! oracle for "a refusal fails the phase at its first connection" (tests/exit_codes.rs). The
//! truth they hold is the number of attempts a client made; a client that reconnects per query
//! shows one per query, one that remembers the refusal one per connection it opens.
//!
//! - `RefuseServer::password()`: answers an SSLRequest with 'N' (no TLS), asks for a cleartext
//!   password and refuses it, whatever it is, with the ErrorResponse a real server sends
//!   (FATAL, SQLSTATE 28P01). `attempts` counts the passwords it refused.
//! - `RefuseServer::untrusted_tls()`: answers an SSLRequest with 'S' and offers a self-signed
//!   certificate made when the server starts (rcgen, for 127.0.0.1 and localhost), which no
//!   trust store holds: `sslmode verify-full` (or `verify-ca`) must refuse it. `handshakes`
//!   counts the TLS handshakes a client began (its ClientHello arrived).
//!
//! Plain threads, one per connection, on an ephemeral port of 127.0.0.1; dropping the handle
//! stops accepting. Part of `oracles` (tests/common/oracles/mod.rs).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use super::pg_wire::{self, error_response, read_startup, GSSENC_REQUEST, PROTOCOL_3, SSL_REQUEST};

/// The message a real PostgreSQL sends for a wrong password.
pub const PASSWORD_REFUSED: &str = "password authentication failed for user";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refusal {
    Password,
    Certificate,
}

pub struct RefuseServer {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
}

#[derive(Default)]
struct Counts {
    /// TCP connections accepted.
    connections: AtomicU64,
    /// Passwords refused.
    attempts: AtomicU64,
    /// TLS handshakes begun.
    handshakes: AtomicU64,
}

impl RefuseServer {
    /// Refuses every password with FATAL 28P01.
    pub fn password() -> RefuseServer {
        RefuseServer::start(Refusal::Password, None)
    }

    /// Offers TLS with a certificate no trust store holds.
    pub fn untrusted_tls() -> RefuseServer {
        RefuseServer::start(Refusal::Certificate, Some(pg_wire::self_signed_tls()))
    }

    fn start(refusal: Refusal, tls: Option<Arc<rustls::ServerConfig>>) -> RefuseServer {
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
                    // A client that goes silent must not keep the thread forever.
                    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
                    let _ = serve(conn, refusal, tls, &counts);
                });
            }
        });
        RefuseServer { addr, stop, counts }
    }

    /// `postgres://USER:PASSWORD@127.0.0.1:PORT/db`.
    pub fn url(&self, user: &str, password: &str) -> String {
        format!("postgres://{user}:{password}@{}/db", self.addr)
    }

    /// TCP connections accepted.
    pub fn connections(&self) -> u64 {
        self.counts.connections.load(Ordering::Relaxed)
    }

    /// Passwords refused (`password()`).
    pub fn attempts(&self) -> u64 {
        self.counts.attempts.load(Ordering::Relaxed)
    }

    /// TLS handshakes begun (`untrusted_tls()`).
    pub fn handshakes(&self) -> u64 {
        self.counts.handshakes.load(Ordering::Relaxed)
    }
}

impl Drop for RefuseServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accepting thread so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

/// One connection: the start-up packets until the refusal.
fn serve(
    mut conn: TcpStream,
    refusal: Refusal,
    tls: Option<Arc<rustls::ServerConfig>>,
    counts: &Counts,
) -> std::io::Result<()> {
    loop {
        let (code, _body) = read_startup(&mut conn)?;
        match code {
            SSL_REQUEST if refusal == Refusal::Certificate => {
                conn.write_all(b"S")?;
                let mut first = [0u8; 1];
                if conn.peek(&mut first)? == 1 && first[0] == 0x16 {
                    counts.handshakes.fetch_add(1, Ordering::Relaxed);
                }
                let config = tls.expect("a TLS configuration");
                let mut server = rustls::ServerConnection::new(config)
                    .map_err(|e| std::io::Error::other(e.to_string()))?;
                // Fails when the client refuses the certificate: it sends an alert and
                // closes, which is the point.
                while server.is_handshaking() {
                    server.complete_io(&mut conn)?;
                }
                return Ok(());
            }
            SSL_REQUEST | GSSENC_REQUEST => conn.write_all(b"N")?,
            PROTOCOL_3 => break,
            _ => return Ok(()),
        }
    }
    // AuthenticationCleartextPassword.
    conn.write_all(&[b'R', 0, 0, 0, 8, 0, 0, 0, 3])?;
    let mut kind = [0u8; 1];
    conn.read_exact(&mut kind)?;
    let mut len = [0u8; 4];
    conn.read_exact(&mut len)?;
    let mut body = vec![0u8; (u32::from_be_bytes(len) as usize).saturating_sub(4)];
    conn.read_exact(&mut body)?;
    if kind[0] != b'p' {
        return Ok(());
    }
    counts.attempts.fetch_add(1, Ordering::Relaxed);
    conn.write_all(&error_response(
        "28P01",
        &format!("{PASSWORD_REFUSED} \"wlrun\""),
    ))?;
    conn.flush()
}
