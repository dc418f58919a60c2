//! The endpoint's `max_message`: the largest backend message a session reads.
//!
//! tokio-postgres reserves room for a whole message as soon as it has read its header, and
//! then reads the message whole: a server announcing a 100 MB ErrorResponse or DataRow costs
//! 100 MB per connection, and a server that announces it and then sends nothing holds the
//! connection until its timeout. So wlrun watches the backend's framing on the bytes it hands
//! to tokio-postgres (after the start-up, every message is a type byte and a 4-byte big-endian
//! length that counts itself), and fails the read at the header of a message larger than the
//! cap, before any of its body is buffered.
//!
//! One cap for every type of message, not one per type: what the cap bounds is the memory of a
//! connection, which is the same whatever the message. Errors and notices are small from any
//! sane server; a DataRow as large as 16 MiB (the default) is rare, and a workload that reads
//! such rows raises the cap, knowing what each connection may then hold.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::plan::EndpointPlan;
use crate::value::Value;

/// `max_message` unless the endpoint sets it.
pub(crate) const DEFAULT_MAX_MESSAGE: u64 = 16 << 20;

/// The endpoint's `max_message`, or the default.
pub(crate) fn max_message(endpoint: &EndpointPlan) -> u64 {
    match endpoint.options.get("max_message") {
        Some(Value::Size(b)) if *b > 0 => *b,
        _ => DEFAULT_MAX_MESSAGE,
    }
}

/// A message the cap refused: its type, the length its header announced, and the cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TooLarge {
    kind: u8,
    announced: u32,
    cap: u64,
}

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the server announced {} message of {} bytes, more than `max_message` ({}) allows: \
             the connection was closed without reading it (raise the endpoint's `max_message` \
             if the server's messages are this large)",
            message_name(self.kind),
            crate::plan::thousands(u64::from(self.announced)),
            crate::value::fmt_size(self.cap)
        )
    }
}

impl std::error::Error for TooLarge {}

/// "a DataRow ('D')", or the type byte itself for a type the protocol does not name.
fn message_name(kind: u8) -> String {
    let name = match kind {
        b'E' => "an ErrorResponse",
        b'N' => "a NoticeResponse",
        b'A' => "a NotificationResponse",
        b'D' => "a DataRow",
        b'T' => "a RowDescription",
        b't' => "a ParameterDescription",
        b'd' => "a CopyData",
        b'C' => "a CommandComplete",
        b'S' => "a ParameterStatus",
        b'R' => "an Authentication",
        b'K' => "a BackendKeyData",
        b'V' => "a FunctionCallResponse",
        b'v' => "a NegotiateProtocolVersion",
        b'G' | b'H' | b'W' => "a Copy response",
        _ => return format!("a message of type 0x{kind:02x}"),
    };
    format!("{name} ('{}')", kind as char)
}

/// The framing of the backend's messages, followed over the bytes read: where each header
/// starts, and how much of the current body is still to come.
pub(crate) struct Frames {
    cap: u64,
    head: [u8; 5],
    /// Header bytes of the next message seen so far.
    have: usize,
    /// Body bytes of the current message still to come.
    body: u64,
    /// Set once a header was over the cap: every later read fails with it.
    refused: Option<TooLarge>,
}

impl Frames {
    pub(crate) fn new(cap: u64) -> Frames {
        Frames {
            cap,
            head: [0; 5],
            have: 0,
            body: 0,
            refused: None,
        }
    }

    /// Reads from `inner` into `buf`, as `AsyncRead::poll_read`, failing at a header over the
    /// cap.
    pub(crate) fn poll_read<S: AsyncRead + ?Sized>(
        &mut self,
        inner: Pin<&mut S>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some(e) = self.refused {
            return Poll::Ready(Err(refusal(e)));
        }
        let from = buf.filled().len();
        ready!(inner.poll_read(cx, buf))?;
        Poll::Ready(self.scan(buf, from))
    }

    /// Follows the framing over `buf.filled()[from..]`, the bytes just read. At a header over
    /// the cap, the bytes before it are kept and the read fails on the next call; when there
    /// are none, it fails now (an empty read would say the server closed).
    pub(crate) fn scan(&mut self, buf: &mut ReadBuf<'_>, from: usize) -> io::Result<()> {
        let end = buf.filled().len();
        let mut at = from;
        // Where the header being read starts in this read; `from` when it began in an earlier
        // one, whose bytes are gone to the reader already.
        let mut start = from;
        while at < end {
            if self.body > 0 {
                let skip = self.body.min((end - at) as u64);
                self.body -= skip;
                at += skip as usize;
                continue;
            }
            if self.have == 0 {
                start = at;
            }
            let take = (self.head.len() - self.have).min(end - at);
            self.head[self.have..self.have + take].copy_from_slice(&buf.filled()[at..at + take]);
            self.have += take;
            at += take;
            if self.have < self.head.len() {
                break;
            }
            self.have = 0;
            let announced =
                u32::from_be_bytes([self.head[1], self.head[2], self.head[3], self.head[4]]);
            if u64::from(announced) > self.cap {
                let e = TooLarge {
                    kind: self.head[0],
                    announced,
                    cap: self.cap,
                };
                self.refused = Some(e);
                if start == from {
                    return Err(refusal(e));
                }
                buf.set_filled(start);
                return Ok(());
            }
            // A length under 4 is tokio-postgres's to refuse; the framing ends there anyway.
            self.body = u64::from(announced.saturating_sub(4));
        }
        Ok(())
    }
}

fn refusal(e: TooLarge) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// A session's stream with its messages capped: what a Unix socket or a TLS session hands to
/// tokio-postgres. (The TCP socket in clear is `tls::PgWire`, which first reads the answer to
/// the SSLRequest, outside the framing.)
pub(crate) struct Capped<S> {
    inner: S,
    frames: Frames,
}

impl<S> Capped<S> {
    pub(crate) fn new(inner: S, cap: u64) -> Capped<S> {
        Capped {
            inner,
            frames: Frames::new(cap),
        }
    }

    pub(crate) fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Capped<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        this.frames.poll_read(Pin::new(&mut this.inner), cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Capped<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kind: u8, len: u32) -> Vec<u8> {
        let mut h = vec![kind];
        h.extend_from_slice(&len.to_be_bytes());
        h
    }

    /// Scans `reads` one after another as separate reads; what each kept, or its error.
    fn scan(cap: u64, reads: &[&[u8]]) -> Vec<Result<Vec<u8>, TooLarge>> {
        let mut frames = Frames::new(cap);
        reads
            .iter()
            .map(|r| {
                if let Some(e) = frames.refused {
                    return Err(e);
                }
                let mut store = vec![0u8; r.len()];
                let mut buf = ReadBuf::new(&mut store);
                buf.put_slice(r);
                match frames.scan(&mut buf, 0) {
                    Ok(()) => Ok(buf.filled().to_vec()),
                    Err(e) => Err(*e.into_inner().unwrap().downcast::<TooLarge>().unwrap()),
                }
            })
            .collect()
    }

    #[test]
    fn messages_within_the_cap_pass_whole_however_they_are_split() {
        let mut stream = header(b'D', 14);
        stream.extend_from_slice(b"0123456789");
        stream.extend(header(b'Z', 5));
        stream.push(b'I');
        for cut in 0..stream.len() {
            let (a, b) = stream.split_at(cut);
            let got = scan(14, &[a, b]);
            assert_eq!(got, vec![Ok(a.to_vec()), Ok(b.to_vec())], "cut at {cut}");
        }
    }

    #[test]
    fn a_header_over_the_cap_fails_after_what_came_before_it() {
        let mut first = header(b'Z', 5);
        first.push(b'I');
        let mut read = first.clone();
        read.extend(header(b'E', 101));
        read.extend_from_slice(b"SERROR");
        let too_large = TooLarge {
            kind: b'E',
            announced: 101,
            cap: 100,
        };
        // The ReadyForQuery is delivered; the next read fails.
        assert_eq!(
            scan(100, &[&read, b"more"]),
            vec![Ok(first), Err(too_large)]
        );
        // A header split over two reads fails at the read that completes it.
        let h = header(b'E', 101);
        assert_eq!(
            scan(100, &[&h[..2], &h[2..]]),
            vec![Ok(h[..2].to_vec()), Err(too_large)]
        );
        // Exactly the cap passes.
        assert_eq!(scan(101, &[&h]), vec![Ok(h.clone())]);
    }

    #[test]
    fn the_error_names_the_message_its_size_and_the_cap() {
        let e = TooLarge {
            kind: b'D',
            announced: 100_000_000,
            cap: 16 << 20,
        };
        let text = e.to_string();
        assert!(
            text.contains("a DataRow ('D') message of 100,000,000 bytes")
                && text.contains("`max_message` (16MiB)"),
            "{text}"
        );
        assert!(message_name(0x01).contains("0x01"));
    }
}
