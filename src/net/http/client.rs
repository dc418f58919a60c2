//! The client itself: one keep-alive connection, its requests, and the body readers.
//! See the module docs of `net::http` for what it guarantees.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, StatusCode};
use tokio::io::AsyncWrite;

use crate::plan::EndpointPlan;

use super::delivery::{Delivery, Tracked};
use super::{endpoint_headers, server_message, HttpUrl};
use crate::net::connect::http_connector;
use crate::net::error::{DriverError, ErrorClass};
use crate::net::tls::{Connector, Counters, Stream};

/// The largest answer body `HttpClient::request` reads into memory. Counts, acknowledgements
/// and error messages are small; a body larger than this is a misconfigured endpoint, not
/// something to buffer. Query results are read as a stream instead (`request_streamed`).
pub const MAX_ANSWER_BYTES: usize = 16 << 20;

/// Bytes read from the socket per `poll_read` (see `Io`): most answers fit in one, and a
/// streamed query result is read in as many as it takes.
const READ_CHUNK: usize = 16 << 10;

/// An answer, read completely.
#[derive(Clone, Debug)]
pub struct Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// Bytes written to the socket for the request: request line, headers and body, and under
    /// TLS the records that carried them.
    pub sent_bytes: u64,
}

impl Response {
    pub fn is_success(&self) -> bool {
        self.status.is_success()
    }

    /// A `Server` error quoting this answer: its status and the server's own message.
    pub fn server_error(&self, what: &str) -> DriverError {
        DriverError::new(
            ErrorClass::Server,
            format!(
                "{what}: HTTP {}: {}",
                self.status,
                server_message(&self.body)
            ),
            false,
        )
    }
}

/// What reads an answer's body as it arrives (`HttpClient::request_streamed`).
pub trait BodyReader {
    /// The answer's status and headers, before any of its body.
    fn head(&mut self, status: StatusCode, headers: &HeaderMap);
    /// The next bytes of the body. An error stops the reading (and gives the connection up).
    fn chunk(&mut self, data: &[u8]) -> Result<(), DriverError>;
    /// The byte counters of the socket the request goes out on, just before it is sent: a
    /// reader that times the answer's arrival reads the bytes received off them.
    fn socket(&mut self, _counters: &Arc<Counters>) {}
}

/// An answer whose body went to a `BodyReader`.
#[derive(Clone, Debug)]
pub struct Head {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// Bytes written to the socket for the request: request line, headers and body, and under
    /// TLS the records that carried them.
    pub sent_bytes: u64,
}

/// The whole body in memory, up to `MAX_ANSWER_BYTES`: for the answers that are small by
/// nature (counts, acknowledgements, errors).
#[derive(Default)]
struct Buffer {
    body: BytesMut,
}

impl BodyReader for Buffer {
    fn head(&mut self, _: StatusCode, _: &HeaderMap) {}

    fn chunk(&mut self, data: &[u8]) -> Result<(), DriverError> {
        if self.body.len() + data.len() > MAX_ANSWER_BYTES {
            return Err(DriverError::new(
                ErrorClass::Server,
                format!("the answer is larger than {} MiB", MAX_ANSWER_BYTES >> 20),
                true,
            ));
        }
        self.body.extend_from_slice(data);
        Ok(())
    }
}

/// One open connection. Its hyper connection future is polled by the task that sends, while it
/// waits for an answer (`drive`), not by a task of its own: a request then costs no wake-up of a
/// second task, which halved the client CPU per request against a local nginx.
struct Conn {
    sender: SendRequest<Tracked>,
    connection: Pin<Box<http1::Connection<Io, Tracked>>>,
    /// The connection future has completed: the socket is closed.
    ended: bool,
    /// Bytes that crossed this connection's socket so far (below TLS).
    counters: Arc<Counters>,
    /// The last answer said `Connection: close`.
    closing: bool,
    /// How far the request in flight got: whether it was written whole.
    delivery: Arc<Delivery>,
}

impl Conn {
    /// Awaits `fut` while polling the connection, which does the reading and writing `fut`
    /// waits for. `None`: the connection ended and `fut` cannot complete.
    async fn drive<F: std::future::Future>(&mut self, fut: F) -> Option<F::Output> {
        let mut fut = std::pin::pin!(fut);
        std::future::poll_fn(|cx| {
            if let Poll::Ready(v) = fut.as_mut().poll(cx) {
                return Poll::Ready(Some(v));
            }
            if !self.ended && self.connection.as_mut().poll(cx).is_ready() {
                self.ended = true;
                // Whatever the connection delivered before ending is in `fut` now.
                return Poll::Ready(match fut.as_mut().poll(cx) {
                    Poll::Ready(v) => Some(v),
                    Poll::Pending => None,
                });
            }
            if self.ended {
                return Poll::Ready(None);
            }
            Poll::Pending
        })
        .await
    }
}

/// One HTTP/1.1 keep-alive connection to one endpoint.
pub struct HttpClient {
    url: HttpUrl,
    /// How errors name the endpoint.
    name: String,
    headers: HeaderMap,
    connect_timeout: Duration,
    timeout: Duration,
    conn: Option<Conn>,
    connector: Connector,
    /// Why the connection cannot be used any more, once a request failed on it.
    broken: Option<DriverError>,
    reconnects: u64,
}

impl HttpClient {
    /// Connects to `url` now, so that a wrong address fails before any work starts.
    /// `headers` go with every request (a request's own headers replace same-named ones).
    pub async fn connect(
        url: &str,
        headers: HeaderMap,
        connect_timeout: Duration,
        timeout: Duration,
    ) -> Result<HttpClient, DriverError> {
        let parsed = HttpUrl::parse(url).map_err(|e| {
            DriverError::new(ErrorClass::Connect, format!("cannot connect: {e}"), true)
        })?;
        let connector = http_connector(None, &parsed)?;
        HttpClient::connect_named(None, parsed, connector, headers, connect_timeout, timeout).await
    }

    async fn connect_named(
        label: Option<String>,
        parsed: HttpUrl,
        connector: Connector,
        headers: HeaderMap,
        connect_timeout: Duration,
        timeout: Duration,
    ) -> Result<HttpClient, DriverError> {
        let mut headers = headers;
        let host = HeaderValue::from_str(&parsed.authority).map_err(|_| {
            DriverError::new(
                ErrorClass::Connect,
                format!("cannot connect: `{}` is not a valid host", parsed.authority),
                true,
            )
        })?;
        headers.insert(header::HOST, host);
        let mut client = HttpClient {
            name: match label {
                Some(l) => format!("{l} ({})", parsed.display()),
                None => parsed.display(),
            },
            url: parsed,
            headers,
            connect_timeout,
            timeout,
            conn: None,
            connector,
            broken: None,
            reconnects: 0,
        };
        client.conn = Some(client.open().await?);
        Ok(client)
    }

    /// Connects to an `http` or `ilp_http` endpoint: its URL (resolved), its `headers`,
    /// `user`, `password` and TLS options, with a connector of its own.
    pub async fn for_endpoint(
        endpoint: &EndpointPlan,
        url: &str,
        connect_timeout: Duration,
        timeout: Duration,
    ) -> Result<HttpClient, DriverError> {
        let parsed = HttpUrl::parse(url).map_err(|e| super::config_error(endpoint, e))?;
        let connector = http_connector(Some(endpoint), &parsed)?;
        HttpClient::parsed(connector, endpoint, parsed, connect_timeout, timeout).await
    }

    /// As `for_endpoint`, through a connector the phase shares (made by `net::connect`).
    pub async fn via(
        connector: &Connector,
        endpoint: &EndpointPlan,
        url: &str,
        connect_timeout: Duration,
        timeout: Duration,
    ) -> Result<HttpClient, DriverError> {
        let parsed = HttpUrl::parse(url).map_err(|e| super::config_error(endpoint, e))?;
        HttpClient::parsed(
            connector.clone(),
            endpoint,
            parsed,
            connect_timeout,
            timeout,
        )
        .await
    }

    async fn parsed(
        connector: Connector,
        endpoint: &EndpointPlan,
        parsed: HttpUrl,
        connect_timeout: Duration,
        timeout: Duration,
    ) -> Result<HttpClient, DriverError> {
        let headers = endpoint_headers(endpoint, &parsed)?;
        let label = format!("{}.{}", endpoint.target, endpoint.name);
        HttpClient::connect_named(
            Some(label),
            parsed,
            connector,
            headers,
            connect_timeout,
            timeout,
        )
        .await
    }

    /// The headers every request carries (`Host`, the endpoint's `headers`, authorization).
    pub fn default_headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// How messages name the endpoint: `target.endpoint (http://host:port/base)`, or just the
    /// URL for a client made with `connect`; never with credentials.
    pub fn endpoint(&self) -> &str {
        &self.name
    }

    pub fn base_path(&self) -> &str {
        &self.url.base_path
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    pub fn connector(&self) -> &Connector {
        &self.connector
    }

    /// Connections reopened because the server closed the previous one between requests.
    pub fn reconnects(&self) -> u64 {
        self.reconnects
    }

    async fn open(&self) -> Result<Conn, DriverError> {
        let stream = self
            .connector
            .connect(&self.url.connect_to, self.connect_timeout)
            .await?;
        let counters = stream.counters();
        let delivery = Arc::new(Delivery::default());
        let io = Io {
            stream,
            scratch: vec![0; READ_CHUNK].into_boxed_slice(),
            delivery: delivery.clone(),
        };
        // The handshake only sets up state: no bytes are exchanged yet.
        let (sender, connection) = http1::handshake(io)
            .await
            .map_err(|e| DriverError::connect(&self.name, error_chain(&e)))?;
        Ok(Conn {
            sender,
            connection: Box::pin(connection),
            ended: false,
            counters,
            closing: false,
            delivery,
        })
    }

    /// The connection to send on: the open one, or a new one when the server closed the
    /// previous one while no request was in flight.
    async fn ready_conn(&mut self) -> Result<&mut Conn, DriverError> {
        if let Some(b) = &self.broken {
            return Err(b.clone());
        }
        let reusable = match &mut self.conn {
            Some(c) if !c.closing && !c.ended => {
                // Fails only if the connection is closed; nothing of the next request has been
                // written yet. Polling the connection here also notices a close the server
                // sent while the connection sat idle.
                let ready = std::future::poll_fn(|cx| {
                    if !c.ended && c.connection.as_mut().poll(cx).is_ready() {
                        c.ended = true;
                    }
                    match c.sender.poll_ready(cx) {
                        Poll::Ready(r) => Poll::Ready(r.is_ok() && !c.ended),
                        Poll::Pending if c.ended => Poll::Ready(false),
                        Poll::Pending => Poll::Pending,
                    }
                })
                .await;
                ready
            }
            _ => false,
        };
        if !reusable {
            self.conn = None;
            let conn = self.open().await?;
            self.reconnects += 1;
            self.conn = Some(conn);
        }
        match &mut self.conn {
            Some(c) => Ok(c),
            None => Err(DriverError::new(
                ErrorClass::Connection,
                format!("no connection to {}", self.name),
                true,
            )),
        }
    }

    /// Sends one request and reads the whole answer into memory, all within the client's
    /// timeout. `path_and_query` is appended to the URL's base path. Any status is returned as
    /// a `Response`; failures of the connection are errors, and so is a body larger than
    /// `MAX_ANSWER_BYTES`.
    pub async fn request(
        &mut self,
        method: Method,
        path_and_query: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Response, DriverError> {
        let mut buffer = Buffer::default();
        let head = self
            .request_streamed(method, path_and_query, headers, body, &mut buffer)
            .await?;
        Ok(Response {
            status: head.status,
            headers: head.headers,
            body: buffer.body.freeze(),
            sent_bytes: head.sent_bytes,
        })
    }

    /// Sends one request and hands the answer's body to `reader` as it arrives, so that an
    /// answer of any size is read in the memory `reader` keeps; all within the client's
    /// timeout. An error from `reader` stops the reading and, since the rest of the body is
    /// left on the socket, the connection is not used again.
    pub async fn request_streamed<R: BodyReader + Send>(
        &mut self,
        method: Method,
        path_and_query: &str,
        headers: &HeaderMap,
        body: Bytes,
        reader: &mut R,
    ) -> Result<Head, DriverError> {
        // Only failures name the request: no message is built on the way of a success.
        let what = |name: &str| format!("{method} {name}{path_and_query}");
        if !path_and_query.starts_with('/') {
            return Err(DriverError::new(
                ErrorClass::Encode,
                format!("{}: a request path must start with `/`", what(&self.name)),
                false,
            ));
        }
        let mut builder = if self.url.base_path.is_empty() {
            Request::builder()
                .method(method.clone())
                .uri(path_and_query)
        } else {
            let target = format!("{}{}", self.url.base_path, path_and_query);
            Request::builder().method(method.clone()).uri(target)
        };
        if let Some(h) = builder.headers_mut() {
            for (k, v) in &self.headers {
                h.append(k, v.clone());
            }
            // A request's own headers replace the defaults of the same name.
            let mut last: Option<&HeaderName> = None;
            for (k, v) in headers {
                if last != Some(k) {
                    h.remove(k);
                    last = Some(k);
                }
                h.append(k, v.clone());
            }
        }
        let request = builder.body(body).map_err(|e| {
            DriverError::new(
                ErrorClass::Encode,
                format!("{}: cannot build the request: {e}", what(&self.name)),
                false,
            )
        })?;
        let timeout = self.timeout;
        // The previous request's marks must not speak for this one if it fails early.
        if let Some(c) = &self.conn {
            c.delivery.start(false);
        }
        let result = tokio::time::timeout(timeout, self.exchange(request, reader)).await;
        let outcome = match result {
            Ok(r) => r,
            Err(_) => Err(DriverError::timeout(what(&self.name), timeout)),
        };
        let written = self.conn.as_ref().is_some_and(|c| c.delivery.written());
        match outcome {
            Ok(r) => Ok(r),
            // Reopening a connection the server closed between requests failed: nothing was
            // sent, and the next request may try again.
            Err(e) if e.class == ErrorClass::Connect => {
                self.conn = None;
                Err(e)
            }
            Err(e) => {
                // Whatever part of the request reached the server, the connection's state is
                // unknown now: never send on it again.
                self.conn = None;
                let mut e = DriverError::new(e.class, with_context(&what(&self.name), &e), true);
                e.written = written;
                self.broken = Some(DriverError::new(
                    e.class,
                    format!(
                        "{}: the connection broke on an earlier request ({})",
                        self.name, e.message
                    ),
                    true,
                ));
                Err(e)
            }
        }
    }

    async fn exchange<R: BodyReader + Send>(
        &mut self,
        request: Request<Bytes>,
        reader: &mut R,
    ) -> Result<Head, DriverError> {
        self.ready_conn().await?;
        let name = &self.name;
        let Some(conn) = self.conn.as_mut() else {
            return Err(DriverError::new(
                ErrorClass::Connection,
                format!("no connection to {name}"),
                true,
            ));
        };
        let (head, body) = request.into_parts();
        let request = Request::from_parts(head, Tracked::new(body, conn.delivery.clone()));
        let before = conn.counters.written();
        reader.socket(&conn.counters);
        let sending = conn.sender.send_request(request);
        let response = conn
            .drive(sending)
            .await
            .ok_or_else(|| closed_early(name))?
            .map_err(|e| transport_error(name, &e))?;
        let (parts, mut incoming) = response.into_parts();
        reader.head(parts.status, &parts.headers);
        loop {
            let frame = match conn.drive(incoming.frame()).await {
                Some(Some(f)) => f,
                Some(None) => break,
                None => return Err(closed_early(name)),
            };
            let frame = frame.map_err(|e| transport_error(name, &e))?;
            if let Ok(data) = frame.into_data() {
                reader.chunk(&data)?;
            }
        }
        // The server answered after reading the whole request, so the count is complete.
        let sent_bytes = conn.counters.written() - before;
        conn.closing = parts
            .headers
            .get_all(header::CONNECTION)
            .iter()
            .any(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
        Ok(Head {
            status: parts.status,
            headers: parts.headers,
            sent_bytes,
        })
    }
}

fn closed_early(endpoint: &str) -> DriverError {
    DriverError::new(
        ErrorClass::Connection,
        format!("{endpoint} closed the connection before answering"),
        true,
    )
}

fn with_context(what: &str, e: &DriverError) -> String {
    if e.message.starts_with(what) {
        e.message.clone()
    } else {
        format!("{what}: {}", e.message)
    }
}

/// hyper's message and the causes under it (`connection reset by peer` is a cause).
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let s = c.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        cause = c.source();
    }
    out
}

fn transport_error(endpoint: &str, e: &hyper::Error) -> DriverError {
    let detail = error_chain(e);
    let message = if e.is_parse() {
        // A TLS port answers a plain request with a TLS alert, which is this.
        let hint = if endpoint.contains("http://") {
            " (if this is a TLS port, use https://)"
        } else {
            ""
        };
        format!("{endpoint} answered something that is not HTTP/1.1: {detail}{hint}")
    } else if e.is_incomplete_message() || e.is_canceled() || e.is_closed() {
        format!("{endpoint} closed the connection before answering: {detail}")
    } else {
        format!("the connection to {endpoint} broke: {detail}")
    };
    DriverError::new(ErrorClass::Connection, message, true)
}

/// A connection's stream as hyper's IO traits (the stream counts the bytes).
///
/// Reads go through a scratch buffer: filling hyper's cursor in place needs `unsafe`, which
/// this crate forbids; the extra copy costs little next to parsing what is read.
struct Io {
    stream: Stream,
    scratch: Box<[u8]>,
    delivery: Arc<Delivery>,
}

impl hyper::rt::Read for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let want = buf.remaining().min(this.scratch.len());
        let mut rb = tokio::io::ReadBuf::new(&mut this.scratch[..want]);
        match tokio::io::AsyncRead::poll_read(Pin::new(&mut this.stream), cx, &mut rb) {
            Poll::Ready(Ok(())) => {
                buf.put_slice(rb.filled());
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

impl hyper::rt::Write for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let flushed = Pin::new(&mut this.stream).poll_flush(cx);
        if let Poll::Ready(Ok(())) = flushed {
            this.delivery.flushed();
        }
        flushed
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
