//! A minimal HTTP/1.1 client for the drivers and admin clients that talk to HTTP endpoints:
//! one keep-alive connection over plain TCP, one request at a time, every wait bounded.
//!
//! What it guarantees, because the numbers a run reports depend on it:
//!
//! - `Response::sent_bytes` is what went onto the socket for the request: request line,
//!   headers and body, counted by the socket adapter as hyper writes them (not estimated).
//! - A request that fails once any of it may have reached the server (reset, closed before
//!   the answer, timeout) is never retried, and the connection is not used again: every later
//!   request fails with the same cause. A retried POST could store its rows twice.
//! - A connection the server closed *between* requests (it answered `Connection: close`, as
//!   VictoriaMetrics does every `-http.connTimeout` (2 minutes), or it dropped an idle
//!   connection) is reopened before the next request and counted in `reconnects()`: nothing
//!   was in flight, so nothing can be lost or doubled, and a run longer than the server's
//!   connection lifetime must not die of it.
//!
//! Plain `http://` only; `https://` and `tls true` are refused when connecting.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use base64::Engine as _;
use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, StatusCode};
use tokio::io::AsyncWrite;
use tokio::net::TcpStream;

use crate::driver::{DriverError, ErrorClass};
use crate::plan::EndpointPlan;
use crate::value::Value;

/// The largest answer body `HttpClient::request` reads into memory. Counts, acknowledgements
/// and error messages are small; a body larger than this is a misconfigured endpoint, not
/// something to buffer. Query results are read as a stream instead (`request_streamed`).
pub const MAX_ANSWER_BYTES: usize = 16 << 20;

/// Bytes read from the socket per `poll_read` (see `Io`): most answers fit in one, and a
/// streamed query result is read in as many as it takes.
const READ_CHUNK: usize = 16 << 10;

/// Server text quoted in error messages is cut to this many characters.
pub const MAX_QUOTED_CHARS: usize = 500;

/// An `http://host[:port][/base]` URL taken apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpUrl {
    /// `host` or `host:port` as written (brackets kept for IPv6), for the `Host` header.
    pub authority: String,
    /// What `TcpStream::connect` gets: `host:port`, with the port defaulted to 80.
    pub connect_to: String,
    /// The path every request path is appended to, without a trailing slash; often empty.
    pub base_path: String,
    /// `user[:password]@` from the URL, percent-decoded.
    pub user: Option<String>,
    pub password: Option<String>,
}

impl HttpUrl {
    pub fn parse(url: &str) -> Result<HttpUrl, String> {
        let rest = if let Some(r) = strip_prefix_ignore_case(url, "http://") {
            r
        } else if strip_prefix_ignore_case(url, "https://").is_some() {
            return Err(format!(
                "`{}`: wlrun speaks plain HTTP only for now; TLS (https://) is not supported yet",
                redact_url(url)
            ));
        } else {
            return Err(format!("`{}` is not an http:// URL", redact_url(url)));
        };
        let (authority_full, path) = match rest.find(['/', '?', '#']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if path.contains(['?', '#']) {
            return Err(format!(
                "`{}`: the endpoint URL cannot carry a query or fragment; use the `path` option",
                redact_url(url)
            ));
        }
        let (userinfo, authority) = match authority_full.rsplit_once('@') {
            Some((u, a)) => (Some(u), a),
            None => (None, authority_full),
        };
        let (user, password) = match userinfo {
            None => (None, None),
            Some(u) => {
                let (name, pass) = match u.split_once(':') {
                    Some((n, p)) => (n, Some(p)),
                    None => (u, None),
                };
                let name = percent_decode(name)
                    .map_err(|e| format!("the user in the endpoint URL: {e}"))?;
                let pass = pass
                    .map(percent_decode)
                    .transpose()
                    .map_err(|e| format!("the password in the endpoint URL: {e}"))?;
                (Some(name), pass)
            }
        };
        let (host, port) =
            split_host_port(authority).map_err(|e| format!("`{}`: {e}", redact_url(url)))?;
        let connect_to = format!("{host}:{}", port.unwrap_or(80));
        Ok(HttpUrl {
            authority: authority.to_string(),
            connect_to,
            base_path: path.trim_end_matches('/').to_string(),
            user,
            password,
        })
    }

    /// `http://authority/base`, without credentials: how errors name the endpoint.
    pub fn display(&self) -> String {
        format!("http://{}{}", self.authority, self.base_path)
    }
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// Host (brackets kept for IPv6 literals, as `connect` wants them) and optional port.
fn split_host_port(authority: &str) -> Result<(&str, Option<u16>), String> {
    if authority.is_empty() {
        return Err("no host".to_string());
    }
    let (host, port) = if authority.starts_with('[') {
        match authority.find(']') {
            Some(end) => {
                let host = &authority[..=end];
                match &authority[end + 1..] {
                    "" => (host, None),
                    p => match p.strip_prefix(':') {
                        Some(p) => (host, Some(p)),
                        None => return Err(format!("cannot read `{authority}` as host:port")),
                    },
                }
            }
            None => return Err(format!("unclosed `[` in `{authority}`")),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() || host == "[]" {
        return Err("no host".to_string());
    }
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => Some(n),
            _ => return Err(format!("`{p}` is not a port (1-65535)")),
        },
    };
    Ok((host, port))
}

/// The URL with any password replaced by `***`, for messages.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let after = &url[scheme_end + 3..];
    let auth_end = after.find(['/', '?', '#']).unwrap_or(after.len());
    match after[..auth_end].rfind('@') {
        Some(at) => {
            let userinfo = &after[..at];
            let user = userinfo.split(':').next().unwrap_or("");
            let hidden = if userinfo.contains(':') { ":***" } else { "" };
            format!("{}{user}{hidden}{}", &url[..scheme_end + 3], &after[at..])
        }
        None => url.to_string(),
    }
}

fn percent_decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad percent escape at byte {i}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "not UTF-8 once decoded".to_string())
}

/// Percent-encodes everything but RFC 3986's unreserved characters, for query values.
pub fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3 / 2);
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(char::from(b"0123456789ABCDEF"[usize::from(b >> 4)]));
            out.push(char::from(b"0123456789ABCDEF"[usize::from(b & 15)]));
        }
    }
    out
}

/// `path` followed by `params` (already encoded), joined with `?` or `&` as `path` needs.
pub fn with_query(path: &str, params: &str) -> String {
    if params.is_empty() {
        path.to_string()
    } else if path.contains('?') {
        format!("{path}&{params}")
    } else {
        format!("{path}?{params}")
    }
}

/// `text` trimmed and cut to `MAX_QUOTED_CHARS` characters on a character boundary.
pub fn quote_server_text(text: &str) -> String {
    let t = text.trim();
    match t.char_indices().nth(MAX_QUOTED_CHARS) {
        Some((cut, _)) => format!("{}...", &t[..cut]),
        None => t.to_string(),
    }
}

/// The error text of an answer body: the `message` of a JSON object (QuestDB), else its
/// `error` (InfluxDB, Prometheus, VictoriaMetrics), else the body as text; trimmed and cut.
pub fn server_message(body: &[u8]) -> String {
    if let Ok(serde_json::Value::Object(o)) = serde_json::from_slice::<serde_json::Value>(body) {
        for key in ["message", "error"] {
            if let Some(serde_json::Value::String(s)) = o.get(key) {
                let mut m = s.clone();
                // QuestDB says which line of the batch it rejected: worth keeping.
                if let Some(line) = o.get("line").and_then(serde_json::Value::as_u64) {
                    m = format!("{m} (line {line})");
                }
                return quote_server_text(&m);
            }
        }
    }
    quote_server_text(&String::from_utf8_lossy(body))
}

/// A text option of an endpoint, with `env(...)` parts resolved now.
pub fn option_text(endpoint: &EndpointPlan, name: &str) -> Result<Option<String>, DriverError> {
    match endpoint.options.get(name) {
        None | Some(Value::None) => Ok(None),
        Some(Value::Str(t)) => t
            .resolve(|n| std::env::var(n).ok())
            .map(Some)
            .map_err(|e| config_error(endpoint, format!("option `{name}`: {e}"))),
        Some(other) => Err(config_error(
            endpoint,
            format!("option `{name}` must be a string, not {}", other.kind()),
        )),
    }
}

/// A boolean option, `false` when absent.
pub fn option_flag(endpoint: &EndpointPlan, name: &str) -> Result<bool, DriverError> {
    match endpoint.options.get(name) {
        None | Some(Value::None) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(config_error(
            endpoint,
            format!(
                "option `{name}` must be true or false, not {}",
                other.kind()
            ),
        )),
    }
}

/// An endpoint whose options cannot work: the connection is never attempted.
pub fn config_error(endpoint: &EndpointPlan, message: impl std::fmt::Display) -> DriverError {
    DriverError::new(
        ErrorClass::Connect,
        format!("endpoint {}.{}: {message}", endpoint.target, endpoint.name),
        true,
    )
}

/// The headers every request of an endpoint carries: its `headers` option, and Basic
/// authentication from `user`/`password` (or the URL's `user:password@`).
pub(crate) fn endpoint_headers(
    endpoint: &EndpointPlan,
    url: &HttpUrl,
) -> Result<HeaderMap, DriverError> {
    let mut headers = HeaderMap::new();
    match endpoint.options.get("headers") {
        None | Some(Value::None) => {}
        Some(Value::Map(entries)) => {
            for (name, value) in entries {
                let Value::Str(text) = value else {
                    return Err(config_error(
                        endpoint,
                        format!("header `{name}` must be a string, not {}", value.kind()),
                    ));
                };
                let value = text
                    .resolve(|n| std::env::var(n).ok())
                    .map_err(|e| config_error(endpoint, format!("header `{name}`: {e}")))?;
                let hname = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                    config_error(
                        endpoint,
                        format!("`{name}` is not a valid HTTP header name"),
                    )
                })?;
                // These decide how the request is framed; a different value from the user
                // would desynchronise the connection.
                if [
                    header::HOST,
                    header::CONTENT_LENGTH,
                    header::TRANSFER_ENCODING,
                    header::CONNECTION,
                ]
                .contains(&hname)
                {
                    return Err(config_error(
                        endpoint,
                        format!("header `{name}` is set by wlrun and cannot be overridden"),
                    ));
                }
                let hvalue = HeaderValue::from_str(&value).map_err(|_| {
                    config_error(
                        endpoint,
                        format!("the value of header `{name}` is not valid in HTTP"),
                    )
                })?;
                headers.append(hname, hvalue);
            }
        }
        Some(other) => {
            return Err(config_error(
                endpoint,
                format!("option `headers` must be a map, not {}", other.kind()),
            ))
        }
    }
    let user = option_text(endpoint, "user")?;
    let password = option_text(endpoint, "password")?;
    if (user.is_some() || password.is_some()) && url.user.is_some() {
        return Err(config_error(
            endpoint,
            "credentials are given both in the URL and in the `user`/`password` options; keep one",
        ));
    }
    let (user, password) = match (user, password) {
        (None, None) => (url.user.clone(), url.password.clone()),
        (None, Some(_)) => {
            return Err(config_error(
                endpoint,
                "option `password` needs a `user` for HTTP Basic authentication",
            ))
        }
        (u, p) => (u, p),
    };
    if let Some(user) = user {
        if headers.contains_key(header::AUTHORIZATION) {
            return Err(config_error(
                endpoint,
                "both `user` and an `Authorization` header are set; keep one",
            ));
        }
        if user.contains(':') {
            return Err(config_error(
                endpoint,
                "a Basic authentication user name cannot contain `:`",
            ));
        }
        let token = base64::engine::general_purpose::STANDARD
            .encode(format!("{user}:{}", password.unwrap_or_default()));
        let mut value = HeaderValue::from_str(&format!("Basic {token}")).map_err(|_| {
            config_error(endpoint, "the credentials cannot be sent in an HTTP header")
        })?;
        value.set_sensitive(true);
        headers.insert(header::AUTHORIZATION, value);
    }
    Ok(headers)
}

/// The endpoint's `connect_timeout` option, else `timeout` capped at 10 s: for clients that
/// are given a single timeout.
pub fn connect_timeout(endpoint: &EndpointPlan, timeout: Duration) -> Duration {
    match endpoint.options.get("connect_timeout") {
        Some(Value::Duration(ns)) if *ns > 0 => Duration::from_nanos(ns.unsigned_abs()),
        _ => timeout.min(Duration::from_secs(10)),
    }
}

/// An answer, read completely.
#[derive(Clone, Debug)]
pub struct Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// Bytes written to the socket for the request: request line, headers and body.
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
}

/// An answer whose body went to a `BodyReader`.
#[derive(Clone, Debug)]
pub struct Head {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// Bytes written to the socket for the request: request line, headers and body.
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
    sender: SendRequest<Full<Bytes>>,
    connection: Pin<Box<http1::Connection<Io, Full<Bytes>>>>,
    /// The connection future has completed: the socket is closed.
    ended: bool,
    /// Bytes the socket adapter has written on this connection so far.
    written: Arc<AtomicU64>,
    /// The last answer said `Connection: close`.
    closing: bool,
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
        HttpClient::connect_named(None, url, headers, connect_timeout, timeout).await
    }

    async fn connect_named(
        label: Option<String>,
        url: &str,
        headers: HeaderMap,
        connect_timeout: Duration,
        timeout: Duration,
    ) -> Result<HttpClient, DriverError> {
        let parsed = HttpUrl::parse(url).map_err(|e| {
            DriverError::new(ErrorClass::Connect, format!("cannot connect: {e}"), true)
        })?;
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
            broken: None,
            reconnects: 0,
        };
        client.conn = Some(client.open().await?);
        Ok(client)
    }

    /// Connects to an `http` or `ilp_http` endpoint: its URL (resolved), its `tls`, `headers`,
    /// `user` and `password` options.
    pub async fn for_endpoint(
        endpoint: &EndpointPlan,
        url: &str,
        connect_timeout: Duration,
        timeout: Duration,
    ) -> Result<HttpClient, DriverError> {
        if option_flag(endpoint, "tls")? {
            return Err(config_error(
                endpoint,
                "`tls true` is not supported yet: wlrun speaks plain HTTP only",
            ));
        }
        let parsed = HttpUrl::parse(url).map_err(|e| config_error(endpoint, e))?;
        let headers = endpoint_headers(endpoint, &parsed)?;
        let label = format!("{}.{}", endpoint.target, endpoint.name);
        HttpClient::connect_named(Some(label), url, headers, connect_timeout, timeout).await
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

    /// Connections reopened because the server closed the previous one between requests.
    pub fn reconnects(&self) -> u64 {
        self.reconnects
    }

    async fn open(&self) -> Result<Conn, DriverError> {
        let connect = async {
            let stream = TcpStream::connect(&self.url.connect_to).await?;
            // Requests are written whole and then waited on: Nagle would only add delay.
            stream.set_nodelay(true)?;
            Ok::<_, io::Error>(stream)
        };
        let stream = match tokio::time::timeout(self.connect_timeout, connect).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(DriverError::connect(&self.name, e)),
            Err(_) => {
                return Err(DriverError::connect(
                    &self.name,
                    format!(
                        "no connection within {}",
                        crate::exec::fmt_duration(self.connect_timeout)
                    ),
                ))
            }
        };
        let written = Arc::new(AtomicU64::new(0));
        let io = Io {
            stream,
            written: written.clone(),
            scratch: vec![0; READ_CHUNK].into_boxed_slice(),
        };
        // The handshake only sets up state: no bytes are exchanged yet.
        let (sender, connection) = http1::handshake(io)
            .await
            .map_err(|e| DriverError::connect(&self.name, error_chain(&e)))?;
        Ok(Conn {
            sender,
            connection: Box::pin(connection),
            ended: false,
            written,
            closing: false,
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
        let request = builder.body(Full::new(body)).map_err(|e| {
            DriverError::new(
                ErrorClass::Encode,
                format!("{}: cannot build the request: {e}", what(&self.name)),
                false,
            )
        })?;
        let timeout = self.timeout;
        let result = tokio::time::timeout(timeout, self.exchange(request, reader)).await;
        let outcome = match result {
            Ok(r) => r,
            Err(_) => Err(DriverError::timeout(what(&self.name), timeout)),
        };
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
                let e = DriverError::new(e.class, with_context(&what(&self.name), &e), true);
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
        request: Request<Full<Bytes>>,
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
        let before = conn.written.load(Ordering::Relaxed);
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
        let sent_bytes = conn.written.load(Ordering::Relaxed) - before;
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
        format!("{endpoint} answered something that is not HTTP/1.1: {detail}")
    } else if e.is_incomplete_message() || e.is_canceled() || e.is_closed() {
        format!("{endpoint} closed the connection before answering: {detail}")
    } else {
        format!("the connection to {endpoint} broke: {detail}")
    };
    DriverError::new(ErrorClass::Connection, message, true)
}

/// tokio's `TcpStream` as hyper's IO traits, counting the bytes written.
///
/// Reads go through a scratch buffer: filling hyper's cursor in place needs `unsafe`, which
/// this crate forbids; the extra copy costs little next to parsing what is read.
struct Io {
    stream: TcpStream,
    written: Arc<AtomicU64>,
    scratch: Box<[u8]>,
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
        let this = self.get_mut();
        let r = Pin::new(&mut this.stream).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = r {
            this.written.fetch_add(n as u64, Ordering::Relaxed);
        }
        r
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = r {
            this.written.fetch_add(n as u64, Ordering::Relaxed);
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        let u = HttpUrl::parse("http://127.0.0.1:9000").unwrap();
        assert_eq!(u.connect_to, "127.0.0.1:9000");
        assert_eq!(u.authority, "127.0.0.1:9000");
        assert_eq!(u.base_path, "");
        let u = HttpUrl::parse("HTTP://db.local/select/0/prometheus/").unwrap();
        assert_eq!(u.connect_to, "db.local:80");
        assert_eq!(u.base_path, "/select/0/prometheus");
        assert_eq!(u.display(), "http://db.local/select/0/prometheus");
        let u = HttpUrl::parse("http://[::1]:8428/x").unwrap();
        assert_eq!(u.connect_to, "[::1]:8428");
        let u = HttpUrl::parse("http://admin:p%40ss@127.0.0.1:9000").unwrap();
        assert_eq!(u.user.as_deref(), Some("admin"));
        assert_eq!(u.password.as_deref(), Some("p@ss"));
        assert_eq!(u.authority, "127.0.0.1:9000");
        assert_eq!(u.display(), "http://127.0.0.1:9000");
    }

    #[test]
    fn rejects_bad_urls() {
        for (url, says) in [
            ("https://127.0.0.1:9000", "TLS"),
            ("tcp://127.0.0.1:9009", "not an http:// URL"),
            ("http://127.0.0.1:0", "not a port"),
            ("http://127.0.0.1:99999", "not a port"),
            ("http://:9000", "no host"),
            ("http://127.0.0.1:9000/write?precision=n", "`path` option"),
            ("http://[::1:9000", "unclosed"),
        ] {
            let e = HttpUrl::parse(url).unwrap_err();
            assert!(e.contains(says), "{url}: {e}");
        }
    }

    #[test]
    fn redacts_passwords() {
        assert_eq!(redact_url("http://u:secret@h:1/p"), "http://u:***@h:1/p");
        assert_eq!(redact_url("http://u@h:1"), "http://u@h:1");
        assert_eq!(redact_url("http://h:1/a@b"), "http://h:1/a@b");
    }

    #[test]
    fn encodes_queries() {
        assert_eq!(
            url_encode("sum(count_over_time({__name__=~\"cpu_.*\"}[1d]))"),
            "sum%28count_over_time%28%7B__name__%3D~%22cpu_.%2A%22%7D%5B1d%5D%29%29"
        );
        assert_eq!(url_encode("a b/é"), "a%20b%2F%C3%A9");
        assert_eq!(with_query("/write", "precision=ns"), "/write?precision=ns");
        assert_eq!(with_query("/query?db=x", "q=1"), "/query?db=x&q=1");
    }

    #[test]
    fn quotes_server_messages() {
        assert_eq!(
            server_message(br#"{"code":"invalid","message":"bad line","line":3,"errorId":"x"}"#),
            "bad line (line 3)"
        );
        assert_eq!(
            server_message(br#"{"status":"error","errorType":"422","error":"parse error"}"#),
            "parse error"
        );
        assert_eq!(server_message(b"  plain text\n"), "plain text");
        let long = "\u{e9}".repeat(MAX_QUOTED_CHARS + 10);
        let q = server_message(long.as_bytes());
        assert_eq!(q.chars().count(), MAX_QUOTED_CHARS + 3);
    }
}
