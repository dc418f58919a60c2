//! A recording HTTP/1.1 server for tests of HTTP request runs: it listens on an ephemeral port
//! of 127.0.0.1, records every request it receives (`Recorded`) and answers as its
//! `Behaviour` says. The behaviour can be changed while it runs (`set_behaviour`, `update`).
//!
//! Answers:
//!
//! - `Mode::Fixed`: `status`, `body`, `content_type` and `headers`, rendered once per
//!   behaviour and written as they are;
//! - `Mode::Ksql`: ksqlDB's REST shapes (`POST /query` pull queries on the orders table,
//!   `POST /ksql`, `GET /info`, `GET /healthcheck`, errors as `generic_error` or
//!   `statement_error`; see `ksql_answer`);
//! - `Mode::Raw`: the given bytes, whatever they are (a cut answer, a bad status line, ...).
//!
//! In every mode a request may wait `delay` before its answer, every `stall_every`-th request
//! waits `stall` more, and every `close_every`-th request is read and then the connection is
//! closed without an answer (`Behaviour::close()` closes on every request). The counts run
//! over all connections from the moment the behaviour was set, so a stall comes at a fixed
//! rate whatever the concurrency.
//!
//! Requests are parsed as HTTP/1.1: keep-alive (HTTP/1.1 unless `Connection: close`; HTTP/1.0
//! only with `Connection: keep-alive`), `Content-Length` and chunked bodies, `Expect:
//! 100-continue`; no pipelining. A request that cannot be parsed gets a 400 (or 413, 431)
//! and the connection is closed; it is not recorded.
//!
//! The server runs on its own thread with its own single-threaded tokio runtime, so it serves
//! plain `#[test]`s that block (an in-process run with its own runtime, a child process) as
//! well as `#[tokio::test]`s. Dropping the `ServerHandle` stops it and closes every
//! connection. Use with `#[path = "common/http_server.rs"] mod http_server;`.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{json, Value as Json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// ksqlDB's versioned media type, the `Content-Type` of every ksqlDB-mode answer.
pub const KSQL_CONTENT_TYPE: &str = "application/vnd.ksql.v1+json";
/// The schema a `/query` header announces for the orders table.
pub const KSQL_SCHEMA: &str = "`ORDERID` INTEGER KEY, `ITEMID` STRING";
/// The message of the `errorMessage` element a failed `/query` answer ends with.
pub const KSQL_STREAM_ERROR: &str = "Pull query failed mid-stream (test server)";
/// The message ksqlDB gives a `SELECT` or `PRINT` sent to `/ksql`.
pub const KSQL_QUERY_ENDPOINT_MESSAGE: &str = concat!(
    "The following statement types should be issued to the websocket endpoint '/query':",
    "\n\t* PRINT\n\t* SELECT"
);
/// The largest request head and body the server accepts (431 and 413 beyond).
pub const MAX_HEAD: usize = 64 * 1024;
pub const MAX_BODY: usize = 64 * 1024 * 1024;

/// ksqlDB mode: a materialized table `table` whose key `ORDERID` runs over `0..orders`, the
/// row of key `k` being `[k, item_of(k)]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ksql {
    pub orders: i64,
    /// Compared without regard to case (unquoted identifiers are upper case in ksqlDB).
    pub table: String,
    /// Every `error_every`-th successful `/query` answer (counted from when the behaviour was
    /// set) is still a 200 but ends with an `errorMessage` element (50000); 0: never.
    pub error_every: u64,
    /// `/query` answers are sent chunked, as ksqlDB sends them; else with `Content-Length`.
    pub chunked: bool,
}

impl Default for Ksql {
    fn default() -> Ksql {
        Ksql {
            orders: 100_000,
            table: "ORDERS_TABLE".into(),
            error_every: 0,
            chunked: true,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `status`, `body`, `content_type`, `headers`.
    Fixed,
    /// ksqlDB's REST API over the orders table (`status`, `body` and `content_type` unused).
    Ksql(Ksql),
    /// These bytes as the whole answer; then the connection is closed if `then_close`.
    Raw { bytes: Vec<u8>, then_close: bool },
}

/// How the server answers. `Behaviour::default()` (= `ok()`): 200, empty body, no
/// `Content-Type`, no wait.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Behaviour {
    pub mode: Mode,
    pub status: u16,
    pub body: Vec<u8>,
    pub content_type: Option<String>,
    /// Sent with every answer of every mode but `Raw`, after `Content-Type`.
    pub headers: Vec<(String, String)>,
    /// Every request waits this long before its answer.
    pub delay: Duration,
    /// Every `stall_every`-th request (1-based, counted over all connections since the
    /// behaviour was set) waits `stall` more; 0: none.
    pub stall_every: u64,
    pub stall: Duration,
    /// Every `close_every`-th request is read, recorded, waited for and then its connection is
    /// closed without an answer; 0: never, 1: every request.
    pub close_every: u64,
}

impl Default for Behaviour {
    fn default() -> Behaviour {
        Behaviour {
            mode: Mode::Fixed,
            status: 200,
            body: Vec::new(),
            content_type: None,
            headers: Vec::new(),
            delay: Duration::ZERO,
            stall_every: 0,
            stall: Duration::ZERO,
            close_every: 0,
        }
    }
}

impl Behaviour {
    pub fn ok() -> Behaviour {
        Behaviour::default()
    }

    /// ksqlDB mode with `Ksql::default()`: 100,000 orders in `ORDERS_TABLE`, no errors.
    pub fn ksql() -> Behaviour {
        Behaviour::ksql_with(Ksql::default())
    }

    pub fn ksql_with(ksql: Ksql) -> Behaviour {
        Behaviour {
            mode: Mode::Ksql(ksql),
            ..Behaviour::default()
        }
    }

    /// Reads each request and closes the connection without answering.
    pub fn close() -> Behaviour {
        Behaviour::default().with_close_every(1)
    }

    pub fn raw(bytes: impl Into<Vec<u8>>, then_close: bool) -> Behaviour {
        Behaviour {
            mode: Mode::Raw {
                bytes: bytes.into(),
                then_close,
            },
            ..Behaviour::default()
        }
    }

    pub fn with_status(mut self, status: u16) -> Behaviour {
        self.status = status;
        self
    }

    pub fn with_body(mut self, body: impl Into<Vec<u8>>) -> Behaviour {
        self.body = body.into();
        self
    }

    /// `body` as JSON text, `Content-Type: application/json`.
    pub fn with_json(self, body: &Json) -> Behaviour {
        self.with_body(body.to_string())
            .with_content_type("application/json")
    }

    pub fn with_content_type(mut self, content_type: &str) -> Behaviour {
        self.content_type = Some(content_type.into());
        self
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Behaviour {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Every request waits `delay` before its answer.
    pub fn with_delay(mut self, delay: Duration) -> Behaviour {
        self.delay = delay;
        self
    }

    /// Every `n`-th request waits `stall` (more).
    pub fn with_stall_every(mut self, n: u64, stall: Duration) -> Behaviour {
        self.stall_every = n;
        self.stall = stall;
        self
    }

    /// Every `n`-th request is closed without an answer.
    pub fn with_close_every(mut self, n: u64) -> Behaviour {
        self.close_every = n;
        self
    }

    /// How long request number `n` (1-based since the behaviour was set) waits.
    pub fn wait_of(&self, n: u64) -> Duration {
        let stall = if self.stall_every > 0 && n % self.stall_every == 0 {
            self.stall
        } else {
            Duration::ZERO
        };
        self.delay + stall
    }

    fn closes(&self, n: u64) -> bool {
        self.close_every > 0 && n % self.close_every == 0
    }
}

/// One request as the server received it.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// Its index in `requests()`: the order in which requests were complete.
    pub seq: usize,
    /// The connection, numbered from 0 in the order they were accepted.
    pub conn: usize,
    pub method: String,
    /// The request target: path and query, as sent.
    pub path: String,
    /// `HTTP/1.1` or `HTTP/1.0`.
    pub version: String,
    /// In the order sent; names in lower case, values trimmed.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
    /// Whether the body came with `Transfer-Encoding: chunked`.
    pub chunked: bool,
    /// When the request (head and body) was complete.
    pub at: Instant,
    /// How long the server waited before its answer.
    pub waited: Duration,
    /// Whether the connection was closed instead of an answer.
    pub closed: bool,
}

impl Recorded {
    /// The first header of that name (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The path without its query.
    pub fn path_only(&self) -> &str {
        self.path.split_once('?').map_or(&self.path, |(p, _)| p)
    }

    /// The `ksql` field of a JSON body.
    pub fn ksql(&self) -> Option<String> {
        let v: Json = serde_json::from_slice(&self.body).ok()?;
        v.get("ksql")?.as_str().map(str::to_string)
    }

    /// The `ORDERID` of a `SELECT * FROM t WHERE ORDERID = n` in the `ksql` field.
    pub fn ksql_key(&self) -> Option<i64> {
        parse_pull(&self.ksql()?).ok().map(|(_, key)| key)
    }
}

/// The `ITEMID` of order `key` in ksqlDB mode: `Item_1` ... `Item_999`.
pub fn item_of(key: i64) -> String {
    format!("Item_{}", key.rem_euclid(999) + 1)
}

/// The table and key of `SELECT * FROM <table> WHERE ORDERID = <integer>` (keywords and the
/// column in any case, the column possibly in backticks, an optional `;`), or ksqlDB-like
/// error text.
pub fn parse_pull(ksql: &str) -> Result<(String, i64), String> {
    let text = ksql.trim();
    let text = text.strip_suffix(';').unwrap_or(text);
    if text.contains(';') {
        return Err("line 1:1: Expected exactly one statement (test server)".into());
    }
    let spaced = text.replace('=', " = ");
    let words: Vec<&str> = spaced.split_whitespace().collect();
    let syntax = || {
        format!(
            "line 1:1: Syntax Error: the test server answers only \
             `SELECT * FROM <table> WHERE ORDERID = <integer>;`, not `{}`",
            ksql.trim()
        )
    };
    let [select, star, from, table, where_, column, eq, value] = words[..] else {
        return Err(syntax());
    };
    let keyword = |w: &str, k: &str| w.eq_ignore_ascii_case(k);
    if !(keyword(select, "SELECT")
        && star == "*"
        && keyword(from, "FROM")
        && keyword(where_, "WHERE")
        && eq == "=")
    {
        return Err(syntax());
    }
    let column = column.trim_matches('`');
    if !column.eq_ignore_ascii_case("ORDERID") {
        return Err(format!(
            "WHERE clause missing key column for disjunct: {column} (test server: only ORDERID)"
        ));
    }
    let key = value
        .parse::<i64>()
        .map_err(|_| format!("line 1:1: `{value}` is not an integer key (test server)"))?;
    Ok((table.trim_matches('`').to_ascii_uppercase(), key))
}

/// A running server; dropping it stops the server and closes its connections.
pub struct ServerHandle {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// `ServerHandle::start`.
pub fn start(behaviour: Behaviour) -> ServerHandle {
    ServerHandle::start(behaviour)
}

impl ServerHandle {
    /// Listens on an ephemeral port of 127.0.0.1 (ready when this returns).
    pub fn start(behaviour: Behaviour) -> ServerHandle {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let addr = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared {
            behaviour: Mutex::new(Arc::new(Prepared::new(behaviour))),
            records: Mutex::new(Vec::new()),
            accepted: AtomicUsize::new(0),
            open: AtomicUsize::new(0),
        });
        let (stop, stopped) = oneshot::channel::<()>();
        let state = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("http-test-server-{}", addr.port()))
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime for the test server");
                runtime.block_on(async move {
                    let listener = TcpListener::from_std(listener).expect("a tokio listener");
                    tokio::select! {
                        _ = accept(listener, state) => {}
                        _ = stopped => {}
                    }
                });
                // Dropping the runtime drops every connection task: their sockets close.
            })
            .expect("a thread for the test server");
        ServerHandle {
            addr,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Replaces the behaviour for the requests complete from now on; the stall, close and
    /// error counts start again.
    pub fn set_behaviour(&self, behaviour: Behaviour) {
        *lock(&self.shared.behaviour) = Arc::new(Prepared::new(behaviour));
    }

    /// Changes the current behaviour (`set_behaviour` with the change).
    pub fn update(&self, change: impl FnOnce(&mut Behaviour)) {
        let mut b = self.behaviour();
        change(&mut b);
        self.set_behaviour(b);
    }

    pub fn behaviour(&self) -> Behaviour {
        lock(&self.shared.behaviour).behaviour.clone()
    }

    /// Every request received so far, in the order they were complete.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared.records).clone()
    }

    /// How many requests were received.
    pub fn count(&self) -> usize {
        lock(&self.shared.records).len()
    }

    /// How many connections were accepted.
    pub fn connections(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// How many connections are open now.
    pub fn open_connections(&self) -> usize {
        self.shared.open.load(Ordering::SeqCst)
    }

    /// The `ORDERID` keys of the recorded ksql bodies (`Recorded::ksql_key`, any path), in
    /// the order the requests were complete; requests without one are left out.
    pub fn ksql_keys(&self) -> Vec<i64> {
        lock(&self.shared.records)
            .iter()
            .filter_map(Recorded::ksql_key)
            .collect()
    }

    /// `ksql_keys` per connection, each in its arrival order.
    pub fn ksql_keys_by_connection(&self) -> BTreeMap<usize, Vec<i64>> {
        let mut keys: BTreeMap<usize, Vec<i64>> = BTreeMap::new();
        for r in lock(&self.shared.records).iter() {
            if let Some(k) = r.ksql_key() {
                keys.entry(r.conn).or_default().push(k);
            }
        }
        keys
    }

    /// Waits until `n` requests were received; false if `timeout` passed first.
    pub fn wait_for(&self, n: usize, timeout: Duration) -> bool {
        let started = Instant::now();
        loop {
            if self.count() >= n {
                return true;
            }
            if started.elapsed() >= timeout {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Shared {
    behaviour: Mutex<Arc<Prepared>>,
    records: Mutex<Vec<Recorded>>,
    accepted: AtomicUsize,
    open: AtomicUsize,
}

/// A lock that a panicking test thread cannot poison for the server.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A behaviour with its answers rendered and its counts.
struct Prepared {
    behaviour: Behaviour,
    /// Requests complete under this behaviour.
    requests: AtomicU64,
    /// Successful `/query` answers under this behaviour.
    answers: AtomicU64,
    /// The extra headers as header lines.
    extra: String,
    /// `Mode::Fixed`'s answer, keep-alive and with `Connection: close`.
    fixed: Rendered,
    fixed_close: Rendered,
}

/// An answer's bytes and the length of its head (what a HEAD request gets).
struct Rendered {
    bytes: Vec<u8>,
    head: usize,
}

impl Prepared {
    fn new(behaviour: Behaviour) -> Prepared {
        let mut extra = String::new();
        for (k, v) in &behaviour.headers {
            let _ = write!(extra, "{k}: {v}\r\n");
        }
        let ct = behaviour.content_type.as_deref();
        let fixed = render(behaviour.status, ct, &extra, &behaviour.body, false, false);
        let fixed_close = render(behaviour.status, ct, &extra, &behaviour.body, false, true);
        Prepared {
            behaviour,
            requests: AtomicU64::new(0),
            answers: AtomicU64::new(0),
            extra,
            fixed,
            fixed_close,
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

fn render(
    status: u16,
    content_type: Option<&str>,
    extra: &str,
    body: &[u8],
    chunked: bool,
    close: bool,
) -> Rendered {
    let mut head = String::with_capacity(128 + extra.len());
    let _ = write!(head, "HTTP/1.1 {status} {}\r\n", reason(status));
    if let Some(ct) = content_type {
        let _ = write!(head, "content-type: {ct}\r\n");
    }
    head.push_str(extra);
    if chunked {
        head.push_str("transfer-encoding: chunked\r\n");
    } else {
        let _ = write!(head, "content-length: {}\r\n", body.len());
    }
    if close {
        head.push_str("connection: close\r\n");
    }
    head.push_str("\r\n");
    let mut bytes = Vec::with_capacity(head.len() + body.len() + 16);
    bytes.extend_from_slice(head.as_bytes());
    if chunked {
        if !body.is_empty() {
            bytes.extend_from_slice(format!("{:x}\r\n", body.len()).as_bytes());
            bytes.extend_from_slice(body);
            bytes.extend_from_slice(b"\r\n");
        }
        bytes.extend_from_slice(b"0\r\n\r\n");
    } else {
        bytes.extend_from_slice(body);
    }
    Rendered {
        bytes,
        head: head.len(),
    }
}

async fn accept(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors or the like: try again shortly rather than stop serving.
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        let conn = shared.accepted.fetch_add(1, Ordering::SeqCst);
        shared.open.fetch_add(1, Ordering::SeqCst);
        let shared = shared.clone();
        tokio::spawn(async move {
            let open = OpenGuard(shared.clone());
            serve(&shared, stream, conn).await;
            drop(open);
        });
    }
}

/// Counts a connection as closed even when its task is dropped at shutdown.
struct OpenGuard(Arc<Shared>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A parsed request.
struct Request {
    method: String,
    target: String,
    version: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    chunked: bool,
    keep_alive: bool,
}

/// Why no request could be read.
enum ReadError {
    /// The socket failed or closed in the middle of a request: nothing to answer.
    Io,
    /// Answer this status and close.
    Bad(u16, &'static str),
}

impl From<io::Error> for ReadError {
    fn from(_: io::Error) -> ReadError {
        ReadError::Io
    }
}

async fn serve(shared: &Shared, mut stream: TcpStream, conn: usize) {
    let _ = stream.set_nodelay(true);
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    loop {
        let request = match read_request(&mut stream, &mut buf).await {
            Ok(Some(r)) => r,
            Ok(None) | Err(ReadError::Io) => return,
            Err(ReadError::Bad(status, why)) => {
                let r = render(status, Some("text/plain"), "", why.as_bytes(), false, true);
                let _ = stream.write_all(&r.bytes).await;
                return;
            }
        };
        let at = Instant::now();
        let prepared = lock(&shared.behaviour).clone();
        let b = &prepared.behaviour;
        let n = prepared.requests.fetch_add(1, Ordering::Relaxed) + 1;
        let waited = b.wait_of(n);
        let close = b.closes(n);
        let keep_alive = request.keep_alive && !close;
        let answer = if close {
            None
        } else {
            Some(build_answer(&prepared, &request, keep_alive))
        };
        let keep_alive = keep_alive && answer.as_ref().is_none_or(|a| a.keep_alive);
        let head_only = request.method == "HEAD";
        {
            let mut records = lock(&shared.records);
            let seq = records.len();
            records.push(Recorded {
                seq,
                conn,
                method: request.method,
                path: request.target,
                version: request.version,
                headers: request.headers,
                body: request.body,
                chunked: request.chunked,
                at,
                waited,
                closed: close,
            });
        }
        if !waited.is_zero() {
            tokio::time::sleep(waited).await;
        }
        let Some(answer) = answer else { return };
        let bytes: &[u8] = match &answer.bytes {
            Bytes::Fixed => {
                let r = if keep_alive {
                    &prepared.fixed
                } else {
                    &prepared.fixed_close
                };
                if head_only {
                    &r.bytes[..r.head]
                } else {
                    &r.bytes
                }
            }
            Bytes::Owned(r) if head_only => &r.bytes[..r.head],
            Bytes::Owned(r) => &r.bytes,
        };
        if stream.write_all(bytes).await.is_err() || !keep_alive {
            return;
        }
    }
}

struct Answer {
    bytes: Bytes,
    /// False when the answer itself ends the connection (`Raw` with `then_close`).
    keep_alive: bool,
}

enum Bytes {
    /// `Prepared::fixed` or `fixed_close`.
    Fixed,
    Owned(Rendered),
}

fn build_answer(p: &Prepared, request: &Request, keep_alive: bool) -> Answer {
    match &p.behaviour.mode {
        Mode::Fixed => Answer {
            bytes: Bytes::Fixed,
            keep_alive: true,
        },
        Mode::Raw { bytes, then_close } => {
            let head = bytes
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .map_or(bytes.len(), |i| i + 4);
            Answer {
                bytes: Bytes::Owned(Rendered {
                    bytes: bytes.clone(),
                    head,
                }),
                keep_alive: !then_close,
            }
        }
        Mode::Ksql(k) => {
            let (status, body, chunked) = ksql_answer(p, k, request);
            Answer {
                bytes: Bytes::Owned(render(
                    status,
                    Some(KSQL_CONTENT_TYPE),
                    &p.extra,
                    &body,
                    chunked,
                    !keep_alive,
                )),
                keep_alive: true,
            }
        }
    }
}

/// `{"@type":"generic_error","error_code":..,"message":..}`
fn generic_error(code: u32, message: &str) -> Vec<u8> {
    json!({"@type": "generic_error", "error_code": code, "message": message})
        .to_string()
        .into_bytes()
}

/// `{"@type":"statement_error","error_code":..,"message":..,"statementText":..,"entities":[]}`
fn statement_error(code: u32, message: &str, statement: &str) -> Vec<u8> {
    json!({
        "@type": "statement_error",
        "error_code": code,
        "message": message,
        "statementText": statement,
        "entities": [],
    })
    .to_string()
    .into_bytes()
}

/// The `ksql` text of a `/query` or `/ksql` body, or the 400 answer.
fn ksql_text(body: &[u8]) -> Result<String, Vec<u8>> {
    let v: Json = serde_json::from_slice(body)
        .map_err(|e| generic_error(40000, &format!("Invalid JSON in request: {e}")))?;
    match v.get("ksql").and_then(Json::as_str) {
        Some(s) if !s.trim().is_empty() => Ok(s.to_string()),
        _ => Err(generic_error(40000, "\"ksql\" field must be populated")),
    }
}

const NOT_QUERIES: [&str; 12] = [
    "CREATE",
    "DROP",
    "INSERT",
    "SHOW",
    "LIST",
    "DESCRIBE",
    "EXPLAIN",
    "TERMINATE",
    "SET",
    "UNSET",
    "DEFINE",
    "PAUSE",
];

fn first_word(text: &str) -> String {
    text.split_whitespace()
        .next()
        .unwrap_or("")
        .to_ascii_uppercase()
}

/// ksqlDB mode: (status, body, chunked).
///
/// - `POST /query` with a pull query on the table: 200, a JSON array of a header and, for a
///   key in `0..orders`, one row, elements separated by `,\n` as ksqlDB writes them:
///   `[{"header":{"queryId":"query_N","schema":KSQL_SCHEMA}},`
///   `{"row":{"columns":[k,"Item_i"]}}]` (a newline after the comma);
///   every `error_every`-th ends `,\n{"errorMessage":{...50000...}}]\n` instead of `]`;
/// - empty or missing `ksql`, or a body that is not JSON: 400 `generic_error` 40000; a
///   statement the server cannot parse, an unknown table or key column: 400
///   `statement_error` 40001; a non-query statement: 400 `generic_error` 40000;
/// - `POST /ksql`: `SELECT`/`PRINT` → 400 `statement_error` 40002; other statements → 200
///   `[{"@type":"currentStatus",...}]`;
/// - `GET /info`, `GET /healthcheck`: 200 with ksqlDB's shapes;
/// - a known path with another method: 405 `generic_error` 40500; other paths: 404
///   `generic_error` 40400.
fn ksql_answer(p: &Prepared, k: &Ksql, request: &Request) -> (u16, Vec<u8>, bool) {
    let path = request
        .target
        .split_once('?')
        .map_or(request.target.as_str(), |(p, _)| p);
    match (request.method.as_str(), path) {
        ("POST", "/query") => {
            let ksql = match ksql_text(&request.body) {
                Ok(s) => s,
                Err(body) => return (400, body, false),
            };
            let statement = ksql.trim();
            if NOT_QUERIES.contains(&first_word(statement).as_str()) {
                return (
                    400,
                    generic_error(
                        40000,
                        "Statement type `io.confluent.ksql.parser.tree.Statement' \
                         not supported for this resource",
                    ),
                    false,
                );
            }
            let (table, key) = match parse_pull(statement) {
                Ok(t) => t,
                Err(message) => return (400, statement_error(40001, &message, statement), false),
            };
            if !table.eq_ignore_ascii_case(&k.table) {
                let message =
                    format!("Exception while preparing statement: {table} does not exist.");
                return (400, statement_error(40001, &message, statement), false);
            }
            let a = p.answers.fetch_add(1, Ordering::Relaxed) + 1;
            let failed = k.error_every > 0 && a % k.error_every == 0;
            let mut out = String::with_capacity(160);
            let _ = write!(
                out,
                "[{{\"header\":{{\"queryId\":\"query_{a}\",\"schema\":\"{KSQL_SCHEMA}\"}}}}"
            );
            if (0..k.orders).contains(&key) {
                let _ = write!(
                    out,
                    ",\n{{\"row\":{{\"columns\":[{key},\"{}\"]}}}}",
                    item_of(key)
                );
            }
            if failed {
                let _ = write!(
                    out,
                    ",\n{{\"errorMessage\":{{\"@type\":\"generic_error\",\
                     \"error_code\":50000,\"message\":\"{KSQL_STREAM_ERROR}\"}}}}]\n"
                );
            } else {
                out.push(']');
            }
            (200, out.into_bytes(), k.chunked)
        }
        ("POST", "/ksql") => {
            let ksql = match ksql_text(&request.body) {
                Ok(s) => s,
                Err(body) => return (400, body, false),
            };
            let statement = ksql.trim();
            if matches!(first_word(statement).as_str(), "SELECT" | "PRINT") {
                let body = statement_error(40002, KSQL_QUERY_ENDPOINT_MESSAGE, statement);
                return (400, body, false);
            }
            let n = p.answers.fetch_add(1, Ordering::Relaxed) + 1;
            let body = json!([{
                "@type": "currentStatus",
                "statementText": statement,
                "commandId": format!("test/{n}/execute"),
                "commandStatus": {"status": "SUCCESS", "message": "Executed by the test server"},
                "commandSequenceNumber": n,
                "warnings": [],
            }]);
            (200, body.to_string().into_bytes(), false)
        }
        ("GET", "/info") => {
            let body = json!({"KsqlServerInfo": {
                "version": "0.29.0",
                "kafkaClusterId": "test-cluster",
                "ksqlServiceId": "default_",
                "serverStatus": "RUNNING",
            }});
            (200, body.to_string().into_bytes(), false)
        }
        ("GET", "/healthcheck") => {
            let body = json!({
                "isHealthy": true,
                "details": {"metastore": {"isHealthy": true}, "kafka": {"isHealthy": true}},
                "ksqlServiceId": "default_",
            });
            (200, body.to_string().into_bytes(), false)
        }
        (_, "/query" | "/ksql" | "/info" | "/healthcheck") => (
            405,
            generic_error(
                40500,
                &format!("Method {} not allowed on {path}", request.method),
            ),
            false,
        ),
        _ => (
            404,
            generic_error(40400, &format!("Not found: {path}")),
            false,
        ),
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Reads more into `buf`; false at end of stream.
async fn fill(stream: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<bool> {
    if buf.capacity() - buf.len() < 4096 {
        buf.reserve(8192);
    }
    Ok(stream.read_buf(buf).await? > 0)
}

/// Reads until `buf` holds at least `len` bytes.
async fn need(stream: &mut TcpStream, buf: &mut Vec<u8>, len: usize) -> Result<(), ReadError> {
    while buf.len() < len {
        if !fill(stream, buf).await? {
            return Err(ReadError::Io);
        }
    }
    Ok(())
}

/// The end (index of `\r\n`) of the line starting at `from`.
async fn line_end(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    from: usize,
) -> Result<usize, ReadError> {
    let mut scanned = from;
    loop {
        if let Some(i) = find(&buf[scanned..], b"\r\n") {
            return Ok(scanned + i);
        }
        if buf.len() - from > 4096 {
            return Err(ReadError::Bad(400, "chunk line too long"));
        }
        scanned = buf.len().saturating_sub(1).max(from);
        if !fill(stream, buf).await? {
            return Err(ReadError::Io);
        }
    }
}

/// The next request on the connection, `None` at a clean end of stream. Consumes it from
/// `buf`.
async fn read_request(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
) -> Result<Option<Request>, ReadError> {
    // The head, after any empty lines.
    let mut scanned = 0;
    let head_end = loop {
        while buf.starts_with(b"\r\n") {
            buf.drain(..2);
            scanned = 0;
        }
        if let Some(i) = find(&buf[scanned..], b"\r\n\r\n") {
            break scanned + i + 4;
        }
        if buf.len() > MAX_HEAD {
            return Err(ReadError::Bad(431, "request head too large"));
        }
        scanned = buf.len().saturating_sub(3);
        if !fill(stream, buf).await? {
            return if buf.is_empty() {
                Ok(None)
            } else {
                Err(ReadError::Io)
            };
        }
    };
    let head = std::str::from_utf8(&buf[..head_end - 4])
        .map_err(|_| ReadError::Bad(400, "request head is not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap_or("");
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ReadError::Bad(400, "bad request line"));
    };
    if method.is_empty() || target.is_empty() || !version.starts_with("HTTP/1.") {
        return Err(ReadError::Bad(400, "bad request line"));
    }
    let mut headers = Vec::new();
    for l in lines {
        let Some((name, value)) = l.split_once(':') else {
            return Err(ReadError::Bad(400, "bad header line"));
        };
        if name.is_empty() || name.ends_with([' ', '\t']) || name.starts_with([' ', '\t']) {
            return Err(ReadError::Bad(400, "bad header name"));
        }
        headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
    }
    let values = |name: &str| -> Vec<String> {
        headers
            .iter()
            .filter(|(k, _)| k == name)
            .flat_map(|(_, v)| v.split(','))
            .map(|t| t.trim().to_ascii_lowercase())
            .collect()
    };
    let has_token = |name: &str, token: &str| values(name).iter().any(|t| t == token);
    let keep_alive = if version == "HTTP/1.0" {
        has_token("connection", "keep-alive")
    } else {
        !has_token("connection", "close")
    };
    let mut codings = values("transfer-encoding");
    codings.retain(|t| !t.is_empty());
    let chunked = match codings.last() {
        None => false,
        Some(last) if last == "chunked" => true,
        Some(_) => return Err(ReadError::Bad(400, "unsupported transfer-encoding")),
    };
    let mut length = None;
    if !chunked {
        for v in values("content-length") {
            let n: usize = v
                .parse()
                .map_err(|_| ReadError::Bad(400, "bad content-length"))?;
            if length.is_some_and(|l| l != n) {
                return Err(ReadError::Bad(400, "conflicting content-length"));
            }
            length = Some(n);
        }
    }
    let length = length.unwrap_or(0);
    if length > MAX_BODY {
        return Err(ReadError::Bad(413, "body too large"));
    }
    let expects = has_token("expect", "100-continue");
    let (method, target, version) = (method.to_string(), target.to_string(), version.to_string());
    if expects && (chunked || length > 0) && buf.len() == head_end {
        stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
    }
    let (body, consumed) = if chunked {
        let mut body = Vec::new();
        let mut pos = head_end;
        loop {
            let end = line_end(stream, buf, pos).await?;
            let size_text = std::str::from_utf8(&buf[pos..end])
                .map_err(|_| ReadError::Bad(400, "bad chunk size"))?;
            let size_text = size_text.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_text, 16)
                .map_err(|_| ReadError::Bad(400, "bad chunk size"))?;
            pos = end + 2;
            if size == 0 {
                // Trailers up to an empty line.
                loop {
                    let end = line_end(stream, buf, pos).await?;
                    let empty = end == pos;
                    pos = end + 2;
                    if empty {
                        break;
                    }
                }
                break;
            }
            if body.len() + size > MAX_BODY {
                return Err(ReadError::Bad(413, "body too large"));
            }
            need(stream, buf, pos + size + 2).await?;
            body.extend_from_slice(&buf[pos..pos + size]);
            if &buf[pos + size..pos + size + 2] != b"\r\n" {
                return Err(ReadError::Bad(400, "chunk not followed by CRLF"));
            }
            pos += size + 2;
        }
        (body, pos)
    } else {
        need(stream, buf, head_end + length).await?;
        (buf[head_end..head_end + length].to_vec(), head_end + length)
    };
    buf.drain(..consumed);
    Ok(Some(Request {
        method,
        target,
        version,
        headers,
        body,
        chunked,
        keep_alive,
    }))
}
