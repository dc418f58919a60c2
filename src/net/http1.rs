//! The request runner's HTTP/1.1 connection: wrk's approach in Rust. A request is rendered to
//! bytes once (a fixed request) or into a reused buffer (a hook's request) and written with
//! one `write`; the answer is parsed with `httparse` (hyper's own parser) and its body framed
//! by `Content-Length`, chunked encoding or the end of the connection, all in the task that
//! sends. hyper's client builds a `Request`, a `HeaderMap` and a `Uri` per request and hands
//! them to its dispatcher: against a local nginx that cost more client CPU than the kernel's
//! TCP work, and a load generator must not be the bottleneck it measures. `net::http` stays
//! the client for everything else (drivers, counts, `/exec` queries).
//!
//! The same guarantees as `net::http`: a request that failed once any of it may have reached
//! the server is never retried, and the connection is not used again (the caller connects
//! afresh). A connection the server closed while idle is noticed before the next request is
//! written, and reopened: nothing was in flight.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadBuf};

use super::error::{DriverError, ErrorClass};
use super::http::{HttpUrl, MAX_ANSWER_BYTES};
use super::tls::{Connector, Stream};

/// Headers an answer may have; more is a malformed answer for a load test.
const MAX_HEADERS: usize = 64;

/// An idle connection older than this is checked for a close from the server before reuse.
const IDLE_CHECK: Duration = Duration::from_millis(500);

/// Where requests go and what every request carries.
pub struct Target {
    pub url: HttpUrl,
    /// The endpoint's headers (and Basic authentication), sent with every request unless the
    /// request has its own of the same name.
    pub headers: HeaderMap,
    /// How errors name the endpoint.
    pub name: String,
    pub connect_timeout: Duration,
    pub timeout: Duration,
    /// The phase's connector: in clear or TLS (`https://`), shared by every connection.
    pub connector: Connector,
}

impl Target {
    /// Renders a request: request line, `Host`, the endpoint's headers not overridden by the
    /// request's own, the request's headers, `Content-Length`, the body.
    pub fn render(
        &self,
        out: &mut Vec<u8>,
        method: &hyper::Method,
        path: &str,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<(), String> {
        if !path.starts_with('/') {
            return Err(format!("a request path must start with `/`, not `{path}`"));
        }
        if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(format!(
                "the request path `{path}` has spaces or control characters"
            ));
        }
        out.clear();
        out.extend_from_slice(method.as_str().as_bytes());
        out.push(b' ');
        out.extend_from_slice(self.url.base_path.as_bytes());
        out.extend_from_slice(path.as_bytes());
        out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
        out.extend_from_slice(self.url.authority.as_bytes());
        out.extend_from_slice(b"\r\n");
        let mut put = |name: &HeaderName, value: &HeaderValue| {
            out.extend_from_slice(name.as_str().as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        };
        for (name, value) in &self.headers {
            if !headers.contains_key(name) {
                put(name, value);
            }
        }
        for (name, value) in headers {
            if [
                header::HOST,
                header::CONTENT_LENGTH,
                header::TRANSFER_ENCODING,
                header::CONNECTION,
            ]
            .contains(name)
            {
                return Err(format!(
                    "header `{name}` is set by wlrun and cannot be set by a hook"
                ));
            }
            put(name, value);
        }
        // GET and HEAD without a body send no Content-Length, as curl and wrk do.
        if !body.is_empty() || !matches!(*method, hyper::Method::GET | hyper::Method::HEAD) {
            out.extend_from_slice(b"Content-Length: ");
            out.extend_from_slice(itoa::Buffer::new().format(body.len()).as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(body);
        Ok(())
    }
}

/// An answer, read completely.
pub struct Answer {
    pub status: u16,
    /// Only when asked for (a response hook reads them).
    pub headers: Option<HeaderMap>,
    pub body: Bytes,
}

/// One keep-alive connection.
pub struct Conn {
    stream: Stream,
    buf: BytesMut,
    /// The last answer ended the connection (`Connection: close`, or a body read to EOF).
    closing: bool,
    last_used: Instant,
    /// Connections opened again because the server closed an idle one.
    pub reopened: u64,
}

impl Conn {
    pub async fn connect(t: &Target) -> Result<Conn, DriverError> {
        Ok(Conn {
            stream: open(t).await?,
            buf: BytesMut::with_capacity(16 << 10),
            closing: false,
            last_used: Instant::now(),
            reopened: 0,
        })
    }

    /// Sends `request` (rendered by `Target::render`) and reads the whole answer within the
    /// target's timeout. `head`: the request was a HEAD (its answer has no body).
    #[cfg(test)]
    pub async fn exchange(
        &mut self,
        t: &Target,
        request: &[u8],
        head: bool,
        want_headers: bool,
    ) -> Result<Answer, DriverError> {
        let deadline = self.send(t, request).await?;
        self.receive(t, deadline, head, want_headers).await
    }

    /// Writes a request; returns when its answer must be complete. Split from `receive` so
    /// that the caller can work (build its next request) while the server answers.
    pub async fn send(&mut self, t: &Target, request: &[u8]) -> Result<Instant, DriverError> {
        if self.closing || self.last_used.elapsed() > IDLE_CHECK && self.closed_by_peer() {
            // Nothing was in flight: a new connection loses and doubles nothing.
            self.stream = open(t).await?;
            self.buf.clear();
            self.closing = false;
            self.reopened += 1;
        }
        let deadline = Instant::now() + t.timeout;
        let write = async {
            self.stream.write_all(request).await?;
            // TLS may keep the last record in rustls when the socket was full; in clear this
            // is nothing.
            self.stream.flush().await
        };
        match tokio::time::timeout_at(deadline.into(), write).await {
            Ok(Ok(())) => Ok(deadline),
            Ok(Err(e)) => Err(failed(t, &e)),
            Err(_) => Err(DriverError::timeout(&t.name, t.timeout)),
        }
    }

    /// Reads the whole answer to the request `send` wrote, by `deadline`.
    pub async fn receive(
        &mut self,
        t: &Target,
        deadline: Instant,
        head: bool,
        want_headers: bool,
    ) -> Result<Answer, DriverError> {
        let result =
            tokio::time::timeout_at(deadline.into(), self.read_answer(t, head, want_headers)).await;
        self.last_used = Instant::now();
        match result {
            Ok(r) => r,
            Err(_) => Err(DriverError::timeout(&t.name, t.timeout)),
        }
    }

    /// Whether the server closed this idle connection (or sent something unasked). Read
    /// through TLS, not peeked on the socket: a TLS 1.3 server sends session tickets after the
    /// handshake, which are not data, and a close arrives as a `close_notify` record.
    fn closed_by_peer(&mut self) -> bool {
        let mut probe = [0u8; 1];
        let mut buf = ReadBuf::new(&mut probe);
        let mut cx = Context::from_waker(futures_util::task::noop_waker_ref());
        !matches!(
            Pin::new(&mut self.stream).poll_read(&mut cx, &mut buf),
            Poll::Pending
        )
    }

    async fn read_answer(
        &mut self,
        t: &Target,
        head: bool,
        want_headers: bool,
    ) -> Result<Answer, DriverError> {
        loop {
            // An answer's head, then its body; 1xx answers are skipped.
            let (status, header_len, framing, headers, close) = loop {
                if let Some(head) = self.parse_head(t, head, want_headers)? {
                    break head;
                }
                self.fill(t).await?;
            };
            if (100..200).contains(&status) {
                self.buf.advance(header_len);
                continue;
            }
            self.buf.advance(header_len);
            let body = match framing {
                Framing::Length(n) => {
                    if n > MAX_ANSWER_BYTES {
                        return Err(too_large(t));
                    }
                    while self.buf.len() < n {
                        self.fill(t).await?;
                    }
                    self.buf.split_to(n).freeze()
                }
                Framing::Chunked => self.read_chunked(t).await?,
                Framing::UntilClose => {
                    loop {
                        if self.buf.len() > MAX_ANSWER_BYTES {
                            return Err(too_large(t));
                        }
                        let n = self
                            .stream
                            .read_buf(&mut self.buf)
                            .await
                            .map_err(|e| failed(t, &e))?;
                        if n == 0 {
                            break;
                        }
                    }
                    self.closing = true;
                    self.buf.split().freeze()
                }
            };
            if close {
                self.closing = true;
            }
            return Ok(Answer {
                status,
                headers,
                body,
            });
        }
    }

    /// Reads more of the answer; the end of the connection here is an error.
    async fn fill(&mut self, t: &Target) -> Result<(), DriverError> {
        if self.buf.len() > MAX_ANSWER_BYTES {
            return Err(too_large(t));
        }
        self.buf.reserve(16 << 10);
        match self.stream.read_buf(&mut self.buf).await {
            Ok(0) => Err(DriverError::new(
                ErrorClass::Connection,
                format!("{} closed the connection before answering", t.name),
                true,
            )),
            Ok(_) => Ok(()),
            Err(e) => Err(failed(t, &e)),
        }
    }

    /// The answer's head, if the buffer holds all of it.
    #[allow(clippy::type_complexity)]
    fn parse_head(
        &self,
        t: &Target,
        head_request: bool,
        want_headers: bool,
    ) -> Result<Option<(u16, usize, Framing, Option<HeaderMap>, bool)>, DriverError> {
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut r = httparse::Response::new(&mut slots);
        let len = match r.parse(&self.buf) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            // A TLS port answers a plain request with a TLS alert record: every request in
            // clear would be refused so, and the connector remembers it.
            Err(e) if !t.url.tls && self.buf.first() == Some(&0x15) => {
                let refusal = DriverError::refusal(
                    &t.name,
                    format!("it answered something that is not HTTP/1.1: {e} (it speaks TLS: use https://)"),
                );
                t.connector.refuse(&refusal);
                return Err(refusal);
            }
            Err(e) => {
                return Err(DriverError::new(
                    ErrorClass::Connection,
                    format!("{} answered something that is not HTTP/1.1: {e}", t.name),
                    true,
                ));
            }
        };
        let status = r.code.unwrap_or(0);
        let mut length = None;
        let mut chunked = false;
        let mut close = r.version == Some(0);
        for h in r.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let n = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|v| v.trim().parse::<usize>().ok());
                match n {
                    Some(n) => length = Some(n),
                    None => {
                        return Err(DriverError::new(
                            ErrorClass::Connection,
                            format!("{} answered an invalid Content-Length", t.name),
                            true,
                        ))
                    }
                }
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = h
                    .value
                    .rsplit(|b| *b == b',')
                    .next()
                    .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            } else if h.name.eq_ignore_ascii_case("connection") {
                let v = h.value.trim_ascii();
                if v.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if v.eq_ignore_ascii_case(b"keep-alive") {
                    close = false;
                }
            }
        }
        let framing = if head_request || status == 204 || status == 304 || status < 200 {
            Framing::Length(0)
        } else if chunked {
            Framing::Chunked
        } else if let Some(n) = length {
            Framing::Length(n)
        } else {
            Framing::UntilClose
        };
        let headers = want_headers.then(|| {
            let mut map = HeaderMap::with_capacity(r.headers.len());
            for h in r.headers.iter() {
                if let (Ok(n), Ok(v)) = (
                    HeaderName::from_bytes(h.name.as_bytes()),
                    HeaderValue::from_bytes(h.value),
                ) {
                    map.append(n, v);
                }
            }
            map
        });
        Ok(Some((status, len, framing, headers, close)))
    }

    async fn read_chunked(&mut self, t: &Target) -> Result<Bytes, DriverError> {
        let mut body = BytesMut::new();
        loop {
            let (skip, size) = loop {
                match httparse::parse_chunk_size(&self.buf) {
                    Ok(httparse::Status::Complete((skip, size))) => break (skip, size as usize),
                    Ok(httparse::Status::Partial) => self.fill(t).await?,
                    Err(_) => {
                        return Err(DriverError::new(
                            ErrorClass::Connection,
                            format!("{} sent an invalid chunk size", t.name),
                            true,
                        ))
                    }
                }
            };
            self.buf.advance(skip);
            if size == 0 {
                // Trailers, if any, end with an empty line.
                loop {
                    if let Some(end) = find(&self.buf, b"\r\n") {
                        let line_empty = end == 0;
                        self.buf.advance(end + 2);
                        if line_empty {
                            return Ok(body.freeze());
                        }
                    } else {
                        self.fill(t).await?;
                    }
                }
            }
            if body.len() + size > MAX_ANSWER_BYTES {
                return Err(too_large(t));
            }
            while self.buf.len() < size + 2 {
                self.fill(t).await?;
            }
            body.extend_from_slice(&self.buf[..size]);
            if &self.buf[size..size + 2] != b"\r\n" {
                return Err(DriverError::new(
                    ErrorClass::Connection,
                    format!("{} sent a chunk without its CRLF", t.name),
                    true,
                ));
            }
            self.buf.advance(size + 2);
        }
    }
}

enum Framing {
    Length(usize),
    Chunked,
    UntilClose,
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A new connection (Nagle off: requests are written whole and then waited on).
async fn open(t: &Target) -> Result<Stream, DriverError> {
    t.connector
        .connect(&t.url.connect_to, t.connect_timeout)
        .await
}

/// A read or write that failed: the server refusing wlrun's certificate after the handshake
/// (TLS 1.3) is a refusal the connector remembers, as a refused handshake is; anything else
/// broke the connection.
fn failed(t: &Target, e: &std::io::Error) -> DriverError {
    if super::tls::certificate_refused(e) {
        let refusal = DriverError::refusal(&t.name, e);
        t.connector.refuse(&refusal);
        return refusal;
    }
    broke(t, &e.to_string())
}

fn broke(t: &Target, why: &str) -> DriverError {
    DriverError::new(
        ErrorClass::Connection,
        format!("the connection to {} broke: {why}", t.name),
        true,
    )
}

fn too_large(t: &Target) -> DriverError {
    DriverError::new(
        ErrorClass::Server,
        format!(
            "{} sent an answer larger than {} MiB",
            t.name,
            MAX_ANSWER_BYTES >> 20
        ),
        true,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpListener;

    /// A server that answers each request on a connection with the next of `answers`, raw;
    /// `None` closes the connection instead. Returns the target and the connection count.
    async fn server(answers: Vec<Option<&'static [u8]>>) -> (Target, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            let mut answers = answers.into_iter();
            loop {
                let Ok((mut s, _)) = listener.accept().await else {
                    return;
                };
                count.fetch_add(1, Ordering::SeqCst);
                let mut buf = Vec::new();
                loop {
                    // One request: a head, plus the body its Content-Length announces.
                    let mut chunk = [0u8; 4096];
                    let n = s.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let Some(end) = find(&buf, b"\r\n\r\n") else {
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
                    let len = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length: "))
                        .map_or(0, |v| v.trim().parse::<usize>().unwrap());
                    if buf.len() < end + 4 + len {
                        continue;
                    }
                    buf.drain(..end + 4 + len);
                    match answers.next() {
                        // An HTTP/1.0 answer without a length ends with the connection.
                        Some(Some(a)) if a.starts_with(b"HTTP/1.0") => {
                            s.write_all(a).await.unwrap();
                            break;
                        }
                        Some(Some(a)) => s.write_all(a).await.unwrap(),
                        _ => break,
                    }
                }
            }
        });
        let target = Target {
            url: HttpUrl::parse(&format!("http://{addr}/base")).unwrap(),
            headers: HeaderMap::new(),
            name: "t".into(),
            connect_timeout: Duration::from_secs(2),
            timeout: Duration::from_secs(2),
            connector: Connector::plain("t"),
        };
        (target, accepted)
    }

    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn get(t: &Target) -> Vec<u8> {
        let mut out = Vec::new();
        t.render(&mut out, &hyper::Method::GET, "/x", &HeaderMap::new(), b"")
            .unwrap();
        out
    }

    #[tokio::test]
    async fn bodies_are_framed_by_length_chunks_and_close() {
        let (t, accepted) = server(vec![
            Some(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"),
            Some(b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: v\r\n\r\n"),
            Some(b"HTTP/1.1 204 No Content\r\n\r\n"),
            Some(b"HTTP/1.1 400 Bad\r\nContent-Length: 3\r\nX-A: b\r\n\r\nbad"),
            Some(b"HTTP/1.0 200 OK\r\n\r\nuntil close"),
        ])
        .await;
        let mut c = Conn::connect(&t).await.unwrap();
        let req = get(&t);
        let a = c.exchange(&t, &req, false, false).await.unwrap();
        assert_eq!((a.status, &a.body[..]), (200, &b"hello"[..]));
        let a = c.exchange(&t, &req, false, false).await.unwrap();
        assert_eq!((a.status, &a.body[..]), (201, &b"abcde"[..]));
        let a = c.exchange(&t, &req, false, false).await.unwrap();
        assert_eq!((a.status, a.body.len()), (204, 0));
        let a = c.exchange(&t, &req, false, true).await.unwrap();
        assert_eq!(a.status, 400);
        assert_eq!(a.headers.unwrap().get("x-a").unwrap(), "b");
        let a = c.exchange(&t, &req, false, false).await.unwrap();
        assert_eq!(&a.body[..], b"until close");
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            1,
            "one keep-alive connection"
        );
    }

    #[tokio::test]
    async fn a_close_without_an_answer_is_an_error_and_an_announced_close_reopens() {
        let (t, accepted) = server(vec![
            Some(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
            Some(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
            None,
        ])
        .await;
        let mut c = Conn::connect(&t).await.unwrap();
        let req = get(&t);
        c.exchange(&t, &req, false, false).await.unwrap();
        // The server said close: the next request goes on a new connection, counted.
        let a = c.exchange(&t, &req, false, false).await.unwrap();
        assert_eq!(&a.body[..], b"ok");
        assert_eq!(c.reopened, 1);
        let e = c.exchange(&t, &req, false, false).await.err().unwrap();
        assert_eq!(e.class, ErrorClass::Connection);
        assert!(
            e.message.contains("closed the connection before answering"),
            "{}",
            e.message
        );
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn garbage_and_silence_are_errors() {
        let (t, _) = server(vec![Some(b"SSH-2.0-OpenSSH\r\n\r\n")]).await;
        let mut c = Conn::connect(&t).await.unwrap();
        let e = c.exchange(&t, &get(&t), false, false).await.err().unwrap();
        assert!(e.message.contains("not HTTP/1.1"), "{}", e.message);
        // A server that reads and never answers: the timeout.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (s, _) = listener.accept().await.unwrap();
            tokio::time::sleep(Duration::from_secs(5)).await;
            drop(s);
        });
        let t = Target {
            url: HttpUrl::parse(&format!("http://{addr}")).unwrap(),
            headers: HeaderMap::new(),
            name: "t".into(),
            connect_timeout: Duration::from_secs(1),
            timeout: Duration::from_millis(200),
            connector: Connector::plain("t"),
        };
        let mut c = Conn::connect(&t).await.unwrap();
        let e = c.exchange(&t, &get(&t), false, false).await.err().unwrap();
        assert_eq!(e.class, ErrorClass::Timeout);
    }

    #[test]
    fn requests_carry_host_endpoint_headers_and_a_length() {
        let mut headers = HeaderMap::new();
        headers.insert("accept", HeaderValue::from_static("a/b"));
        headers.insert("x-keep", HeaderValue::from_static("1"));
        let t = Target {
            url: HttpUrl::parse("http://127.0.0.1:9/base").unwrap(),
            headers,
            name: "t".into(),
            connect_timeout: Duration::from_secs(1),
            timeout: Duration::from_secs(1),
            connector: Connector::plain("t"),
        };
        let mut own = HeaderMap::new();
        own.insert("accept", HeaderValue::from_static("c/d"));
        let mut out = Vec::new();
        t.render(&mut out, &hyper::Method::POST, "/q?x=1", &own, b"{}")
            .unwrap();
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(
            text.starts_with("POST /base/q?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n"),
            "{text}"
        );
        assert!(
            text.contains("x-keep: 1\r\n") && text.contains("accept: c/d\r\n"),
            "{text}"
        );
        assert!(
            !text.contains("a/b"),
            "the request's own header replaces the endpoint's"
        );
        assert!(text.ends_with("Content-Length: 2\r\n\r\n{}"), "{text}");
        t.render(&mut out, &hyper::Method::GET, "/", &HeaderMap::new(), b"")
            .unwrap();
        assert!(!String::from_utf8_lossy(&out).contains("Content-Length"));
        assert!(t
            .render(&mut out, &hyper::Method::GET, "x", &HeaderMap::new(), b"")
            .is_err());
        let mut bad = HeaderMap::new();
        bad.insert("content-length", HeaderValue::from_static("9"));
        assert!(t
            .render(&mut out, &hyper::Method::GET, "/", &bad, b"")
            .is_err());
    }
}
