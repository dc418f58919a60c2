//! TLS for tokio-postgres over wlrun's connector: `PgWire`, the counted socket tokio-postgres
//! sends its SSLRequest on; `PgTls`, the `TlsConnect` that hands that socket to
//! `Connector::handshake` (timed, counted full or resumed; the session above it timed by
//! `Connector::timed`); and `PgTlsStream`, the session, with the `tls-server-end-point`
//! channel binding SCRAM-PLUS asks for. A session's messages are capped (`message_cap`) where
//! they are plaintext: on `PgWire` once the session goes on in clear, above TLS otherwise.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_postgres::tls::{ChannelBinding, TlsConnect, TlsStream};

use super::message_cap::{Capped, Frames};
use crate::net::error::DriverError;
use crate::net::tls::{Connector, Counters, Timed, Wire};

/// The socket under tokio-postgres. While `watch` is set, the first byte read is the
/// server's answer to the SSLRequest: an 'N' (no TLS) is noted in `refused`, and the wire is
/// armed so that the first byte of the session in clear is timed as a TLS one would be.
/// `frames` caps the messages of a session in clear: from the start, or from the byte after
/// an 'N' (after an 'S' the bytes are TLS records, capped above TLS).
pub(crate) struct PgWire {
    wire: Wire<TcpStream>,
    watch: Option<Connector>,
    refused: Arc<AtomicBool>,
    cap: u64,
    frames: Option<Frames>,
    /// The session's own bytes (below TLS, if any) that reached the socket: see `out`.
    out: Arc<AtomicU64>,
}

impl PgWire {
    /// `wire` for a connection that sends an SSLRequest first (`ssl_request`), or in clear
    /// from the start (armed now); no message larger than `cap` is read.
    pub(crate) fn new(
        mut wire: Wire<TcpStream>,
        connector: &Connector,
        ssl_request: bool,
        cap: u64,
    ) -> Self {
        let (watch, frames) = if ssl_request {
            (Some(connector.clone()), None)
        } else {
            connector.arm(&mut wire);
            (None, Some(Frames::new(cap)))
        };
        PgWire {
            wire,
            watch,
            refused: Arc::new(AtomicBool::new(false)),
            cap,
            frames,
            out: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The bytes tokio-postgres wrote that reached the socket, counted above TLS (where the
    /// socket's own counters count records): whether a message went out whole is read off
    /// it. In clear a byte is out when the socket took it; under TLS when a flush ended after
    /// it (`PgTlsStream`).
    pub(crate) fn out(&self) -> Arc<AtomicU64> {
        self.out.clone()
    }

    pub(crate) fn counters(&self) -> Arc<Counters> {
        self.wire.counters().clone()
    }

    /// Set once the server answered 'N' to the SSLRequest.
    pub(crate) fn refused(&self) -> Arc<AtomicBool> {
        self.refused.clone()
    }
}

impl AsyncRead for PgWire {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if let Some(frames) = &mut this.frames {
            return frames.poll_read(Pin::new(&mut this.wire), cx, buf);
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.wire).poll_read(cx, buf))?;
        if buf.filled().len() > before {
            if let Some(connector) = this.watch.take() {
                if buf.filled()[before] == b'N' {
                    this.refused.store(true, Ordering::Relaxed);
                    connector.arm(&mut this.wire);
                    let mut frames = Frames::new(this.cap);
                    let scanned = frames.scan(buf, before + 1);
                    this.frames = Some(frames);
                    return Poll::Ready(scanned);
                }
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for PgWire {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.wire).poll_write(cx, buf);
        count(&self.out, &written);
        written
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.wire).poll_write_vectored(cx, bufs);
        count(&self.out, &written);
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.wire.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.wire).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.wire).poll_shutdown(cx)
    }
}

/// The handshake tokio-postgres starts after the server's 'S'. A failure is kept whole in
/// `failed` (tokio-postgres would only pass on its text, behind its own prefix), so that the
/// connect can return the connector's error, class and all.
pub(crate) struct PgTls {
    pub(crate) connector: Connector,
    pub(crate) timeout: Duration,
    /// The session's `max_message`.
    pub(crate) cap: u64,
    pub(crate) failed: Arc<Mutex<Option<DriverError>>>,
}

#[derive(Debug)]
pub(crate) struct HandshakeFailed(String);

impl std::fmt::Display for HandshakeFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HandshakeFailed {}

type Handshake =
    Pin<Box<dyn std::future::Future<Output = Result<PgTlsStream, HandshakeFailed>> + Send>>;

impl TlsConnect<PgWire> for PgTls {
    type Stream = PgTlsStream;
    type Error = HandshakeFailed;
    type Future = Handshake;

    fn connect(self, stream: PgWire) -> Handshake {
        Box::pin(async move {
            let stream_out = stream.out.clone();
            match self.connector.handshake(stream.wire, self.timeout).await {
                // The session's first exchange (startup, authentication) timed above TLS.
                Ok(tls) => Ok(PgTlsStream {
                    tls: Box::new(Capped::new(self.connector.timed(tls), self.cap)),
                    out: stream_out,
                    unflushed: 0,
                }),
                Err(e) => {
                    let text = e.message.clone();
                    if let Ok(mut slot) = self.failed.lock() {
                        *slot = Some(e);
                    }
                    Err(HandshakeFailed(text))
                }
            }
        })
    }
}

/// Adds what a write took to `out`.
fn count(out: &AtomicU64, written: &Poll<io::Result<usize>>) {
    if let Poll::Ready(Ok(n)) = written {
        out.fetch_add(*n as u64, Ordering::Relaxed);
    }
}

/// One PostgreSQL session under TLS, its messages capped.
pub(crate) struct PgTlsStream {
    tls: Box<Capped<Timed<TlsSession>>>,
    /// The wire's `out`: plaintext the TLS session took is out once a flush ended after it.
    out: Arc<AtomicU64>,
    unflushed: u64,
}

type TlsSession = tokio_rustls::client::TlsStream<Wire<TcpStream>>;

impl AsyncRead for PgTlsStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(self.tls.as_mut()).poll_read(cx, buf)
    }
}

impl AsyncWrite for PgTlsStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(self.tls.as_mut()).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = written {
            self.unflushed += n as u64;
        }
        written
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(self.tls.as_mut()).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = written {
            self.unflushed += n as u64;
        }
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.tls.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let flushed = Pin::new(self.tls.as_mut()).poll_flush(cx);
        if let Poll::Ready(Ok(())) = flushed {
            let n = std::mem::take(&mut self.unflushed);
            self.out.fetch_add(n, Ordering::Relaxed);
        }
        flushed
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(self.tls.as_mut()).poll_shutdown(cx)
    }
}

impl TlsStream for PgTlsStream {
    fn channel_binding(&self) -> ChannelBinding {
        let cert = self
            .tls
            .get_ref()
            .get_ref()
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|c| c.first());
        match cert.and_then(|c| server_end_point(c.as_ref())) {
            Some(hash) => ChannelBinding::tls_server_end_point(hash),
            None => ChannelBinding::none(),
        }
    }
}

/// RFC 5929's `tls-server-end-point`: the server certificate hashed with its signature's
/// hash, SHA-256 where that is MD5 or SHA-1. `None` where the signature names no hash
/// (Ed25519, RSA-PSS with its hash in parameters): the server cannot bind either, and SCRAM
/// goes on without channel binding.
fn server_end_point(der: &[u8]) -> Option<Vec<u8>> {
    use ring::digest::{digest, SHA256, SHA384, SHA512};
    let algorithm = match signature_oid(der)? {
        // md5, sha1, sha256 WithRSAEncryption; ecdsa-with-SHA1, ecdsa-with-SHA256; dsa-with-sha1
        // and dsa-with-sha256.
        [42, 134, 72, 134, 247, 13, 1, 1, 4 | 5 | 11]
        | [42, 134, 72, 206, 61, 4, 1]
        | [42, 134, 72, 206, 61, 4, 3, 2]
        | [42, 134, 72, 206, 56, 4, 3]
        | [96, 134, 72, 1, 101, 3, 4, 3, 2] => &SHA256,
        [42, 134, 72, 134, 247, 13, 1, 1, 12] | [42, 134, 72, 206, 61, 4, 3, 3] => &SHA384,
        [42, 134, 72, 134, 247, 13, 1, 1, 13] | [42, 134, 72, 206, 61, 4, 3, 4] => &SHA512,
        _ => return None,
    };
    Some(digest(algorithm, der).as_ref().to_vec())
}

/// The content bytes of the signatureAlgorithm OID of a DER certificate:
/// `SEQUENCE { tbsCertificate SEQUENCE, signatureAlgorithm SEQUENCE { OID, ... }, ... }`.
fn signature_oid(der: &[u8]) -> Option<&[u8]> {
    let (cert, _) = tlv(der, 0x30)?;
    let (_, rest) = tlv(cert, 0x30)?;
    let (algorithm, _) = tlv(rest, 0x30)?;
    let (oid, _) = tlv(algorithm, 0x06)?;
    Some(oid)
}

/// One DER element of type `tag` at the start of `b`: its content and what follows it.
fn tlv(b: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    if *b.first()? != tag {
        return None;
    }
    let first = *b.get(1)?;
    let (len, header) = if first < 0x80 {
        (first as usize, 2)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 {
            return None;
        }
        let mut len = 0usize;
        for &byte in b.get(2..2 + n)? {
            len = (len << 8) | byte as usize;
        }
        (len, 2 + n)
    };
    let end = header.checked_add(len)?;
    Some((b.get(header..end)?, b.get(end..)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert_with(alg: &'static rcgen::SignatureAlgorithm) -> Vec<u8> {
        let key = rcgen::KeyPair::generate_for(alg).unwrap();
        let params = rcgen::CertificateParams::new(vec!["db.example".to_string()]).unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn the_end_point_hash_follows_the_signature() {
        let der = cert_with(&rcgen::PKCS_ECDSA_P256_SHA256);
        let want = ring::digest::digest(&ring::digest::SHA256, &der);
        assert_eq!(server_end_point(&der).unwrap(), want.as_ref());
        let der = cert_with(&rcgen::PKCS_ECDSA_P384_SHA384);
        let want = ring::digest::digest(&ring::digest::SHA384, &der);
        assert_eq!(server_end_point(&der).unwrap(), want.as_ref());
        assert_eq!(server_end_point(&cert_with(&rcgen::PKCS_ED25519)), None);
    }

    #[test]
    fn malformed_certificates_bind_nothing() {
        let der = cert_with(&rcgen::PKCS_ECDSA_P256_SHA256);
        for cut in [0, 1, 2, 3, 10, der.len() / 2] {
            assert_eq!(server_end_point(&der[..cut]), None);
        }
        assert_eq!(
            server_end_point(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]),
            None
        );
    }
}
