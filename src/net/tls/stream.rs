//! The socket of every TCP protocol: `Wire`, a TCP stream that counts the bytes that crossed
//! it and notes when the first answer byte arrived, and `Stream`, that wire in clear or under
//! TLS. Counting below TLS is what makes a report's socket bytes the bytes on the network, so
//! that TLS's own overhead per row shows beside the protocol's payload bytes.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::stats::Stats;

/// Bytes that crossed one connection's socket, both ways. Shared, so that a protocol layer
/// that owns the stream (hyper, tungstenite) can still be asked.
#[derive(Debug, Default)]
pub struct Counters {
    written: AtomicU64,
    read: AtomicU64,
}

impl Counters {
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    pub fn read(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }
}

/// The time to first byte of a connection's first exchange: from the first byte written
/// after the set-up (or from the end of the set-up, for a server that speaks first) to the
/// first byte read.
struct FirstByte {
    stats: Arc<Stats>,
    from: Instant,
    sent: bool,
}

impl FirstByte {
    fn new(stats: Arc<Stats>) -> FirstByte {
        FirstByte {
            stats,
            from: Instant::now(),
            sent: false,
        }
    }

    fn wrote(slot: &mut Option<FirstByte>) {
        if let Some(f) = slot {
            if !f.sent {
                f.sent = true;
                f.from = Instant::now();
            }
        }
    }

    fn read(slot: &mut Option<FirstByte>) {
        if let Some(f) = slot.take() {
            f.stats.first_byte(f.from.elapsed());
        }
    }
}

/// A byte stream (a TCP socket) that counts what crosses it and, once armed, records the time
/// to the first byte the server sends.
pub struct Wire<S> {
    io: S,
    counters: Arc<Counters>,
    /// The connector's totals over all its connections.
    totals: Arc<Counters>,
    first: Option<FirstByte>,
}

impl<S> Wire<S> {
    pub(crate) fn new(io: S, totals: Arc<Counters>) -> Wire<S> {
        Wire {
            io,
            counters: Arc::new(Counters::default()),
            totals,
            first: None,
        }
    }

    /// From now on, the first exchange's time to first byte is timed into `stats`.
    pub(crate) fn arm(&mut self, stats: Arc<Stats>) {
        self.first = Some(FirstByte::new(stats));
    }

    pub fn counters(&self) -> &Arc<Counters> {
        &self.counters
    }

    pub fn get_ref(&self) -> &S {
        &self.io
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Wire<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.io).poll_read(cx, buf);
        let n = (buf.filled().len() - before) as u64;
        if n > 0 {
            self.counters.read.fetch_add(n, Ordering::Relaxed);
            self.totals.read.fetch_add(n, Ordering::Relaxed);
            FirstByte::read(&mut self.first);
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Wire<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = r {
            self.counters.written.fetch_add(n as u64, Ordering::Relaxed);
            self.totals.written.fetch_add(n as u64, Ordering::Relaxed);
            if n > 0 {
                FirstByte::wrote(&mut self.first);
            }
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = r {
            self.counters.written.fetch_add(n as u64, Ordering::Relaxed);
            self.totals.written.fetch_add(n as u64, Ordering::Relaxed);
            if n > 0 {
                FirstByte::wrote(&mut self.first);
            }
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// A stream whose first exchange is timed into `stats` (see `FirstByte`) above TLS, where
/// the first byte read is the server's answer. Below TLS it would be a TLS 1.3 session
/// ticket, which the server sends right after the handshake, before any answer.
pub struct Timed<S> {
    io: S,
    first: Option<FirstByte>,
}

impl<S> Timed<S> {
    pub(crate) fn new(io: S, stats: Arc<Stats>) -> Timed<S> {
        Timed {
            io,
            first: Some(FirstByte::new(stats)),
        }
    }

    pub fn get_ref(&self) -> &S {
        &self.io
    }

    pub fn get_mut(&mut self) -> &mut S {
        &mut self.io
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Timed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.io).poll_read(cx, buf);
        if buf.filled().len() > before {
            FirstByte::read(&mut self.first);
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Timed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            FirstByte::wrote(&mut self.first);
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            FirstByte::wrote(&mut self.first);
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// A connection's stream: the wire itself, or TLS over it.
pub enum Stream {
    Plain(Wire<TcpStream>),
    Tls(Box<Timed<tokio_rustls::client::TlsStream<Wire<TcpStream>>>>),
}

impl Stream {
    fn wire(&self) -> &Wire<TcpStream> {
        match self {
            Stream::Plain(w) => w,
            Stream::Tls(t) => t.get_ref().get_ref().0,
        }
    }

    /// The socket's byte counters (below TLS).
    pub fn counters(&self) -> Arc<Counters> {
        self.wire().counters.clone()
    }

    pub fn tcp(&self) -> &TcpStream {
        &self.wire().io
    }

    pub fn is_tls(&self) -> bool {
        matches!(self, Stream::Tls(_))
    }
}

macro_rules! both {
    ($self:ident, $s:ident => $e:expr) => {
        match $self.get_mut() {
            Stream::Plain($s) => {
                let $s = Pin::new($s);
                $e
            }
            Stream::Tls($s) => {
                let $s = Pin::new($s.as_mut());
                $e
            }
        }
    };
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => match Pin::new(s.as_mut()).poll_read(cx, buf) {
                Poll::Ready(Err(e)) => Poll::Ready(Err(super::error::after_handshake(e))),
                other => other,
            },
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        both!(self, s => s.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        both!(self, s => s.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        both!(self, s => s.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        both!(self, s => s.poll_shutdown(cx))
    }
}
