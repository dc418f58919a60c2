//! A small HTTP/1.1 server in the shape of QuestDB's REST `/exec`, for tests: it runs the SQL
//! of `GET /exec?query=...` on a PostgreSQL server (described first for its column types, then
//! run with the simple query protocol) and answers `{"query","columns","dataset","count"}`, or
//! HTTP 400 `{"query","error","position"}` for a SQL error, so an HTTP query is a real
//! execution. The answer is formatted as QuestDB formats its own (`questdb_type`,
//! `json_value`): QuestDB's type names (`LONG`, `DOUBLE`, `TIMESTAMP`, ...; numeric as
//! `DECIMAL`), integers and doubles as JSON numbers (NaN and infinities as `null`), booleans
//! as JSON booleans, timestamps as ISO text in UTC with microseconds
//! (`2016-01-01T00:00:10.500000Z`), dates as `2016-01-01T00:00:00.000Z`, char(n) without its
//! padding. Answers are streamed (chunked, rows written as PostgreSQL sends them), so a
//! result of any size takes the server little memory. Other paths misbehave on purpose:
//!
//! - `/cut`: a 200 whose `Content-Length` promises more than is sent, then the socket closes;
//! - `/slow`: answers after `SLOW` (longer than the tests' timeouts);
//! - `/text500`: a 500 with a plain-text body;
//! - `/badcount`: runs the query but says `count` one more than the dataset has;
//! - `/notjson`: a 200 whose body is not JSON;
//! - `/close`: reads the request and closes without answering.
//!
//! Keep-alive: requests on one connection are answered in turn; `connections()` counts the
//! connections accepted. Use with `#[path = "common/exec_server.rs"] mod exec_server;`.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{json, Value as Json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_postgres::types::Type;
use tokio_postgres::{NoTls, SimpleQueryMessage};

/// How long `/slow` waits before answering.
pub const SLOW: Duration = Duration::from_secs(5);

pub struct ExecServer {
    pub addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    sent: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl ExecServer {
    /// Listens on an ephemeral port of 127.0.0.1. `pg_url`: where `/exec` runs its SQL; with
    /// `None` it answers 503.
    pub async fn start(pg_url: Option<String>) -> ExecServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let connections = Arc::new(AtomicUsize::new(0));
        let sent = Arc::new(AtomicU64::new(0));
        let count = connections.clone();
        let bytes = sent.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let url = pg_url.clone();
                let bytes = bytes.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, url, bytes).await;
                });
            }
        });
        ExecServer {
            addr,
            connections,
            sent,
            task,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Bytes of JSON sent in streamed `/exec` answers so far, framing left out.
    pub fn json_bytes_sent(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }
}

impl Drop for ExecServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

async fn serve(mut stream: TcpStream, pg_url: Option<String>, sent: Arc<AtomicU64>) -> Res<()> {
    let mut pg: Option<tokio_postgres::Client> = None;
    let mut buf = Vec::new();
    loop {
        // One request head (GET: no body).
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        buf.drain(..end);
        let target = head
            .lines()
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .unwrap_or("/")
            .to_string();
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        let sql = query
            .split('&')
            .find_map(|kv| kv.strip_prefix("query="))
            .map(percent_decode)
            .unwrap_or_default();
        match path {
            "/cut" => {
                stream
                    .write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                          Content-Length: 1000\r\n\r\n{\"query\":\"x\",\"dataset\":[[1],",
                    )
                    .await?;
                stream.flush().await?;
                return Ok(());
            }
            "/close" => return Ok(()),
            "/slow" => {
                tokio::time::sleep(SLOW).await;
                respond(
                    &mut stream,
                    200,
                    "application/json",
                    br#"{"dataset":[],"count":0}"#,
                )
                .await?;
            }
            "/text500" => {
                respond(
                    &mut stream,
                    500,
                    "text/plain",
                    b"internal trouble: disk on fire\n",
                )
                .await?;
            }
            "/notjson" => {
                respond(&mut stream, 200, "text/html", b"<html>not json</html>").await?;
            }
            "/exec" | "/badcount" => {
                let Some(url) = &pg_url else {
                    respond(
                        &mut stream,
                        503,
                        "text/plain",
                        b"no database behind this server",
                    )
                    .await?;
                    continue;
                };
                if pg.as_ref().is_none_or(|c| c.is_closed()) {
                    let (client, conn) = tokio_postgres::connect(url, NoTls).await?;
                    tokio::spawn(conn);
                    // Texts `json_value` reformats: timestamps in UTC, ISO dates, doubles in
                    // their shortest exact form.
                    client
                        .batch_execute(
                            "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, MDY'; \
                             SET extra_float_digits = 3",
                        )
                        .await?;
                    pg = Some(client);
                }
                let client = pg.as_ref().ok_or("no client")?;
                execute(&mut stream, client, &sql, path == "/badcount", &sent).await?;
            }
            _ => respond(&mut stream, 404, "text/plain", b"not found").await?,
        }
    }
}

/// Answers `sql` as QuestDB does, streamed: chunked, rows written as PostgreSQL sends them,
/// so that an answer of any size takes this server little memory. An error before the first
/// row is a 400; one after it cuts the answer short (the connection closes).
async fn execute(
    stream: &mut TcpStream,
    client: &tokio_postgres::Client,
    sql: &str,
    bad_count: bool,
    sent: &AtomicU64,
) -> Res<()> {
    // The simple protocol's rows do not say their types: describe the statement first.
    let types: Vec<Type> = match client.prepare(sql).await {
        Ok(stmt) => stmt.columns().iter().map(|c| c.type_().clone()).collect(),
        Err(e) => return refuse(stream, sql, &e).await,
    };
    let messages = match client.simple_query_raw(sql).await {
        Ok(m) => m,
        Err(e) => return refuse(stream, sql, &e).await,
    };
    let mut messages = pin!(messages);
    let first = match messages.next().await {
        Some(Err(e)) => return refuse(stream, sql, &e).await,
        Some(Ok(m)) => Some(m),
        None => None,
    };
    stream
        .write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
              Transfer-Encoding: chunked\r\n\r\n",
        )
        .await?;
    let mut out = Vec::with_capacity(CHUNK + 4096);
    out.extend_from_slice(b"{\"query\":");
    serde_json::to_writer(&mut out, sql)?;
    out.extend_from_slice(b",\"columns\":");
    let mut columns = Vec::new();
    if let Some(SimpleQueryMessage::RowDescription(cols)) = &first {
        columns = cols
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let ty = types.get(i).map_or("STRING", questdb_type);
                json!({"name": c.name(), "type": ty})
            })
            .collect();
    }
    serde_json::to_writer(&mut out, &columns)?;
    out.extend_from_slice(b",\"timestamp\":-1,\"dataset\":[");
    let mut rows = 0usize;
    let mut next = first;
    loop {
        if let Some(SimpleQueryMessage::Row(row)) = &next {
            if rows > 0 {
                out.push(b',');
            }
            let values: Vec<Json> = (0..row.len())
                .map(|i| match (row.get(i), types.get(i)) {
                    (Some(s), Some(ty)) => json_value(ty, s),
                    (Some(s), None) => Json::String(s.to_string()),
                    (None, _) => Json::Null,
                })
                .collect();
            serde_json::to_writer(&mut out, &values)?;
            rows += 1;
        }
        if out.len() >= CHUNK {
            sent.fetch_add(out.len() as u64, Ordering::SeqCst);
            write_chunk(stream, &out).await?;
            out.clear();
        }
        next = match messages.next().await {
            Some(m) => Some(m?),
            None => break,
        };
    }
    let count = rows + usize::from(bad_count);
    out.extend_from_slice(format!("],\"count\":{count}}}").as_bytes());
    sent.fetch_add(out.len() as u64, Ordering::SeqCst);
    write_chunk(stream, &out).await?;
    stream.write_all(b"0\r\n\r\n").await?;
    stream.flush().await?;
    Ok(())
}

/// Bytes of JSON sent per chunk of a streamed answer.
const CHUNK: usize = 64 << 10;

async fn write_chunk(stream: &mut TcpStream, data: &[u8]) -> Res<()> {
    stream
        .write_all(format!("{:x}\r\n", data.len()).as_bytes())
        .await?;
    stream.write_all(data).await?;
    stream.write_all(b"\r\n").await?;
    Ok(())
}

async fn refuse(stream: &mut TcpStream, sql: &str, e: &tokio_postgres::Error) -> Res<()> {
    let (status, body) = error_answer(sql, e);
    respond(
        stream,
        status,
        "application/json",
        body.to_string().as_bytes(),
    )
    .await
}

fn error_answer(sql: &str, e: &tokio_postgres::Error) -> (u16, Json) {
    let (message, position) = match e.as_db_error() {
        Some(db) => {
            let pos = match db.position() {
                Some(tokio_postgres::error::ErrorPosition::Original(p)) => {
                    u64::from(p.saturating_sub(1))
                }
                _ => 0,
            };
            (db.message().to_string(), pos)
        }
        None => (e.to_string(), 0),
    };
    (
        400,
        json!({"query": sql, "error": message, "position": position}),
    )
}

/// The name QuestDB gives the type in `columns[].type`.
pub fn questdb_type(ty: &Type) -> &'static str {
    match *ty {
        Type::BOOL => "BOOLEAN",
        Type::INT2 => "SHORT",
        Type::INT4 => "INT",
        Type::INT8 => "LONG",
        Type::FLOAT4 => "FLOAT",
        Type::FLOAT8 => "DOUBLE",
        Type::NUMERIC => "DECIMAL",
        Type::TIMESTAMP | Type::TIMESTAMPTZ => "TIMESTAMP",
        Type::DATE => "DATE",
        Type::UUID => "UUID",
        Type::TEXT | Type::VARCHAR | Type::NAME | Type::BPCHAR => "VARCHAR",
        _ => "STRING",
    }
}

/// A value PostgreSQL printed as text (session in UTC, ISO dates), as QuestDB writes it.
pub fn json_value(ty: &Type, text: &str) -> Json {
    let number = |text: &str| match text.parse::<f64>() {
        // QuestDB has no NaN or infinities in JSON: they are nulls.
        Ok(f) if f.is_finite() => json!(f),
        _ => Json::Null,
    };
    match *ty {
        Type::BOOL => Json::Bool(text == "t"),
        Type::INT2 | Type::INT4 | Type::INT8 => text
            .parse::<i64>()
            .map_or_else(|_| Json::String(text.to_string()), Json::from),
        Type::FLOAT4 | Type::FLOAT8 => number(text),
        // Whole numerics as JSON integers where they fit, others as the nearest double.
        Type::NUMERIC => match text.parse::<i64>() {
            Ok(n) => Json::from(n),
            Err(_) => number(text),
        },
        Type::TIMESTAMP | Type::TIMESTAMPTZ => {
            match text.strip_suffix("+00").unwrap_or(text).split_once(' ') {
                Some((date, time)) => {
                    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
                    Json::String(format!("{date}T{hms}.{frac:0<6}Z"))
                }
                None => Json::String(text.to_string()),
            }
        }
        Type::DATE => Json::String(format!("{text}T00:00:00.000Z")),
        Type::BPCHAR => Json::String(text.trim_end_matches(' ').to_string()),
        _ => Json::String(text.to_string()),
    }
}

async fn respond(stream: &mut TcpStream, status: u16, ctype: &str, body: &[u8]) -> Res<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad request",
        404 => "Not Found",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Other",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.flush().await?;
    Ok(())
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = (b[i] == b'%')
            .then(|| s.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (hex, b[i]) {
            (Some(v), _) => {
                out.push(v);
                i += 3;
            }
            (None, b'+') => {
                out.push(b' ');
                i += 1;
            }
            (None, c) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
