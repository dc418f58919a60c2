//! A QWP query server for tests, in the shape of QuestDB's `/read/v1` (spec notes
//! `shared/reference/qwp.md` §5): it upgrades `GET /read/v1` (answering `X-QWP-Version: 1`),
//! sends SERVER_INFO, then reads each QUERY_REQUEST (decoded here, from the spec, independently
//! of `src/qwp`), runs its SQL with its binds on a PostgreSQL server and answers the rows as
//! QuestDB would: RESULT_BATCHes with flags 0x0C (Gorilla timestamps, the connection's delta
//! symbol dictionary), the schema only in batch 0, `batch_rows` rows per batch, then
//! RESULT_END with the total; a statement without rows gets EXEC_DONE, a SQL error
//! QUERY_ERROR status 0x05 (PARSE_ERROR) with PostgreSQL's message.
//!
//! Types, PostgreSQL -> QWP: int2 SHORT, int4 INT, int8 LONG, float4 FLOAT, float8 DOUBLE,
//! bool BOOLEAN, numeric DECIMAL128 (each batch at the largest scale of its values), text,
//! varchar and name VARCHAR, char(n) SYMBOL (trailing blanks dropped, as QuestDB has no
//! blank-padded type), timestamp and timestamptz TIMESTAMP (µs), date DATE (ms), uuid UUID.
//! TIMESTAMP and DATE columns are Gorilla-coded when a batch has at least 3 non-null values
//! whose deltas of deltas fit 32 bits. NULLs are sent with the null bitmap, for every type:
//! QuestDB cannot store a NULL BOOLEAN, but the wire can say one, and the rows stay
//! PostgreSQL's so that checksums can be compared with the other transports'.
//!
//! Binds, QWP -> PostgreSQL: LONG int8, DOUBLE float8, BOOLEAN bool, TIMESTAMP timestamptz,
//! VARCHAR and NULL as untyped text (the server infers them, as from a quoted literal); any
//! other bind type is QUERY_ERROR 0x03.
//!
//! The symbol dictionary is the connection's: a query with `QUERY_FLAG_RESET_DICT` starts it
//! over, and past `dict_soft_cap` entries the server sends CACHE_RESET after a terminator. A
//! `query_flags` trailer from a client told `caps` without `CAP_QUERY_FLAGS` is a protocol
//! error: the server closes with 1002. Before answering each query the server PINGs (and
//! counts the PONGs it reads).
//!
//! Flow control (§5.6), strictly: a request's budget is its `initial_credit` (0: unbounded);
//! each RESULT_BATCH's full wire size (header included) is taken from it, and before each
//! batch, while the budget is ≤ 0, the server sends nothing and reads CREDITs (the row floor:
//! a budget of 1 byte still lets one batch go), for at most `credit_wait`, after which the
//! query fails with QUERY_ERROR 0x0B. A CREDIT for another request, or one that arrives after
//! its request ended, is recorded and changes nothing. `flows()` tells, per connection, the
//! initial credits and CREDITs received, the batches sent, and the largest number of result
//! bytes a request had sent beyond what it had been granted.
//!
//! `Mode`s that misbehave on purpose: `Malformed` answers with a RESULT_BATCH cut short,
//! `CloseMidResult` sends batch 0 and closes (1001), `Stall` never answers, `WrongId` ends
//! the query with a RESULT_END for another request, `NoServerInfo` upgrades and says nothing.
//! Those modes need no PostgreSQL. Use with
//! `#[path = "common/qwp_query_server.rs"] mod qwp_query_server;`.

#![allow(dead_code)]

use std::collections::HashMap;
use std::error::Error as StdError;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_postgres::types::{Format, FromSql, IsNull, ToSql, Type};
use tokio_postgres::NoTls;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// SERVER_INFO capability bits.
pub const CAP_ZONE: u32 = 1;
pub const CAP_QUERY_FLAGS: u32 = 2;

const FLAGS_GORILLA_DICT: u8 = 0x0C;
const PARSE_ERROR: u8 = 0x05;
const BIND_MISMATCH: u8 = 0x03;
const INTERNAL_ERROR: u8 = 0x06;
const LIMIT_EXCEEDED: u8 = 0x0B;
/// Microseconds and days from the Unix epoch to PostgreSQL's (2000-01-01).
const PG_EPOCH_US: i64 = 946_684_800_000_000;
const PG_EPOCH_DAYS: i64 = 10_957;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Answer,
    Malformed,
    CloseMidResult,
    Stall,
    WrongId,
    NoServerInfo,
}

#[derive(Clone, Debug)]
pub struct Options {
    pub mode: Mode,
    /// SERVER_INFO's capabilities: 0 or `CAP_QUERY_FLAGS` (and `CAP_ZONE`, with a zone).
    pub caps: u32,
    pub batch_rows: usize,
    pub dict_soft_cap: usize,
    /// The longest wait for CREDIT on a spent budget.
    pub credit_wait: std::time::Duration,
    /// Result streaming's schedule: batch 0 waits this long after the query was read, each
    /// later batch this long after the one before (0: at once).
    pub first_delay: std::time::Duration,
    pub batch_gap: std::time::Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            mode: Mode::Answer,
            caps: CAP_QUERY_FLAGS,
            batch_rows: 1000,
            dict_soft_cap: 100_000,
            credit_wait: std::time::Duration::from_secs(20),
            first_delay: std::time::Duration::ZERO,
            batch_gap: std::time::Duration::ZERO,
        }
    }
}

/// A bind as the server decoded it.
#[derive(Clone, Debug, PartialEq)]
pub enum Bind {
    /// A NULL of the given type code.
    Null(u8),
    Long(i64),
    Double(f64),
    Boolean(bool),
    Varchar(String),
    /// Microseconds.
    Timestamp(i64),
    /// A type this server does not run.
    Other(u8),
}

/// A QUERY_REQUEST as the server decoded it.
#[derive(Clone, Debug, PartialEq)]
pub struct Seen {
    pub request_id: i64,
    pub sql: String,
    pub initial_credit: u64,
    pub binds: Vec<Bind>,
    pub query_flags: Option<u64>,
}

/// One connection's flow control, as the server saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Flow {
    /// Each QUERY_REQUEST's `initial_credit`, in order.
    pub initial_credits: Vec<u64>,
    /// Each CREDIT: (request_id, additional_bytes), in order.
    pub credits: Vec<(i64, u64)>,
    /// The wire size of each RESULT_BATCH sent, in order.
    pub batches: Vec<u64>,
    /// Of requests with credit: the most result bytes sent beyond the credit granted (initial
    /// plus CREDITs read), just after a batch went.
    pub max_overrun: u64,
    /// How many times a spent budget made the server wait for CREDIT.
    pub pauses: usize,
}

#[derive(Default)]
struct Counters {
    connections: AtomicUsize,
    pongs: AtomicUsize,
    batches: AtomicUsize,
    cache_resets: AtomicUsize,
    seen: Mutex<Vec<Seen>>,
    flows: Mutex<Vec<Flow>>,
    wire: Mutex<Vec<Wire>>,
}

/// What the server wrote on the socket for one answered query (WebSocket framing included):
/// from its PING to its terminator, and up to its first RESULT_BATCH.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wire {
    pub bytes: u64,
    pub first_bytes: u64,
}

/// The bytes of an unmasked WebSocket frame (server to client) carrying `payload` bytes.
fn ws_len(payload: usize) -> u64 {
    let extended = match payload {
        0..=125 => 0,
        126..=65535 => 2,
        _ => 8,
    };
    (2 + extended + payload) as u64
}

pub struct QwpQueryServer {
    pub addr: SocketAddr,
    counters: Arc<Counters>,
    task: JoinHandle<()>,
}

impl QwpQueryServer {
    /// Listens on an ephemeral port of 127.0.0.1. `pg_url`: where queries run; with `None`
    /// (or when it cannot be reached) queries get QUERY_ERROR 0x06.
    pub async fn start(pg_url: Option<String>, options: Options) -> QwpQueryServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let counters = Arc::new(Counters::default());
        let c = counters.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let index = c.connections.fetch_add(1, Ordering::SeqCst);
                if let Ok(mut flows) = c.flows.lock() {
                    flows.push(Flow::default());
                }
                let conn = Conn {
                    index,
                    credit: Credit::default(),
                    pg_url: pg_url.clone(),
                    pg: None,
                    options: options.clone(),
                    dict: Dict::default(),
                    counters: c.clone(),
                    wire: Wire::default(),
                    read_at: tokio::time::Instant::now(),
                };
                tokio::spawn(async move {
                    let _ = conn.serve(stream).await;
                });
            }
        });
        QwpQueryServer {
            addr,
            counters,
            task,
        }
    }

    pub fn url(&self) -> String {
        format!("ws://{}", self.addr)
    }

    pub fn connections(&self) -> usize {
        self.counters.connections.load(Ordering::SeqCst)
    }

    pub fn pongs(&self) -> usize {
        self.counters.pongs.load(Ordering::SeqCst)
    }

    pub fn batches(&self) -> usize {
        self.counters.batches.load(Ordering::SeqCst)
    }

    pub fn cache_resets(&self) -> usize {
        self.counters.cache_resets.load(Ordering::SeqCst)
    }

    /// Flow control per connection, in the order they were accepted.
    pub fn flows(&self) -> Vec<Flow> {
        self.counters
            .flows
            .lock()
            .map(|f| f.clone())
            .unwrap_or_default()
    }

    /// The requests received so far, in order.
    /// Per query answered with rows or EXEC_DONE, the bytes it took on the wire.
    pub fn wire(&self) -> Vec<Wire> {
        self.counters
            .wire
            .lock()
            .map(|w| w.clone())
            .unwrap_or_default()
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.counters
            .seen
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }
}

impl Drop for QwpQueryServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Res<T> = Result<T, Box<dyn StdError + Send + Sync>>;
type Ws = WebSocketStream<TcpStream>;

/// The connection's symbol dictionary: ids in first-use order.
#[derive(Default)]
struct Dict {
    ids: HashMap<String, u64>,
    entries: Vec<String>,
}

impl Dict {
    fn id(&mut self, s: &str) -> u64 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.entries.len() as u64;
        self.entries.push(s.to_string());
        self.ids.insert(s.to_string(), id);
        id
    }

    fn clear(&mut self) {
        self.ids.clear();
        self.entries.clear();
    }
}

/// The running request's flow control.
#[derive(Default)]
struct Credit {
    /// A request is being answered.
    running: bool,
    request_id: i64,
    /// `initial_credit` was not 0.
    bounded: bool,
    /// Granted minus sent; may go negative (the row floor).
    budget: i64,
    granted: u64,
    sent: u64,
}

struct Conn {
    index: usize,
    credit: Credit,
    pg_url: Option<String>,
    pg: Option<tokio_postgres::Client>,
    options: Options,
    dict: Dict,
    counters: Arc<Counters>,
    /// The running query's bytes on the wire.
    wire: Wire,
    /// When the running query was read.
    read_at: tokio::time::Instant,
}

// The signature is tungstenite's `Callback`.
#[allow(clippy::result_large_err)]
fn upgrade(req: &Request, mut resp: Response) -> Result<Response, ErrorResponse> {
    if req.uri().path() != "/read/v1" {
        let mut e = ErrorResponse::new(Some("no QWP query endpoint here".into()));
        *e.status_mut() = StatusCode::NOT_FOUND;
        return Err(e);
    }
    resp.headers_mut()
        .insert("X-QWP-Version", HeaderValue::from_static("1"));
    Ok(resp)
}

impl Conn {
    async fn serve(mut self, stream: TcpStream) -> Res<()> {
        let mut ws = tokio_tungstenite::accept_hdr_async(stream, upgrade).await?;
        if self.options.mode != Mode::NoServerInfo {
            send(&mut ws, server_info(self.options.caps)).await?;
        }
        while let Some(msg) = ws.next().await {
            match msg? {
                Message::Binary(b) if b.first() == Some(&0x15) => {
                    // After its request ended: recorded, nothing more.
                    match parse_credit(&b) {
                        Ok((id, bytes)) => self.credited(id, bytes),
                        Err(why) => return close(&mut ws, CloseCode::Protocol, &why).await,
                    }
                }
                Message::Binary(b) => {
                    let req = match parse_request(&b, self.options.caps) {
                        Ok(r) => r,
                        Err(why) => return close(&mut ws, CloseCode::Protocol, &why).await,
                    };
                    if let Ok(mut seen) = self.counters.seen.lock() {
                        seen.push(req.clone());
                    }
                    self.flow(|f| f.initial_credits.push(req.initial_credit));
                    self.credit = Credit {
                        running: true,
                        request_id: req.request_id,
                        bounded: req.initial_credit > 0,
                        budget: i64::try_from(req.initial_credit).unwrap_or(i64::MAX),
                        granted: req.initial_credit,
                        sent: 0,
                    };
                    let go_on = self.answer(&mut ws, req).await;
                    self.credit.running = false;
                    if !go_on? {
                        return Ok(());
                    }
                }
                Message::Pong(_) => {
                    self.counters.pongs.fetch_add(1, Ordering::SeqCst);
                }
                Message::Close(_) => return Ok(()),
                _ => {}
            }
        }
        Ok(())
    }

    /// Answers one request as the mode says; `false` when the connection is to end.
    async fn answer(&mut self, ws: &mut Ws, req: Seen) -> Res<bool> {
        if req.query_flags.unwrap_or(0) & 1 != 0 {
            self.dict.clear();
        }
        let id = req.request_id;
        self.read_at = tokio::time::Instant::now();
        match self.options.mode {
            Mode::Stall => return Ok(true),
            Mode::Malformed => {
                send(ws, cut_short_batch(id)).await?;
                return Ok(true);
            }
            Mode::CloseMidResult => {
                let rows = vec![vec![Some(42i64.to_be_bytes().to_vec())]];
                let cols = [("x".to_string(), Kind::Int8)];
                let frame = encode_batch(id, 0, &cols, &rows, &mut self.dict)?;
                send(ws, frame).await?;
                close(ws, CloseCode::Away, "test server closing mid-result").await?;
                return Ok(false);
            }
            Mode::WrongId => {
                send(ws, result_end(id + 1000, 0, 0)).await?;
                return Ok(true);
            }
            Mode::Answer | Mode::NoServerInfo => {}
        }
        ws.send(Message::Ping(Bytes::from_static(b"qwp"))).await?;
        self.wire = Wire {
            bytes: ws_len(3),
            first_bytes: 0,
        };
        match self.run(ws, &req).await {
            Ok(()) => {
                if let Ok(mut w) = self.counters.wire.lock() {
                    w.push(self.wire);
                }
            }
            Err(Refusal(status, message)) => send(ws, query_error(id, status, &message)).await?,
        }
        if self.dict.entries.len() > self.options.dict_soft_cap {
            self.dict.clear();
            self.counters.cache_resets.fetch_add(1, Ordering::SeqCst);
            send(ws, cache_reset()).await?;
        }
        Ok(true)
    }

    fn flow(&self, f: impl FnOnce(&mut Flow)) {
        if let Ok(mut flows) = self.counters.flows.lock() {
            if let Some(flow) = flows.get_mut(self.index) {
                f(flow);
            }
        }
    }

    /// A CREDIT read: recorded, and added to the running request's budget if it is its.
    fn credited(&mut self, id: i64, bytes: u64) {
        self.flow(|f| f.credits.push((id, bytes)));
        let c = &mut self.credit;
        if c.running && c.request_id == id {
            c.granted = c.granted.saturating_add(bytes);
            c.budget = c
                .budget
                .saturating_add(i64::try_from(bytes).unwrap_or(i64::MAX));
        }
    }

    /// Before a batch: while the running request's budget is spent, reads CREDITs (and
    /// PONGs), for at most `credit_wait` in all.
    async fn await_credit(&mut self, ws: &mut Ws) -> Result<(), Refusal> {
        if !self.credit.bounded || self.credit.budget > 0 {
            return Ok(());
        }
        self.flow(|f| f.pauses += 1);
        let wait = self.options.credit_wait;
        let deadline = tokio::time::Instant::now() + wait;
        while self.credit.budget <= 0 {
            let msg = match tokio::time::timeout_at(deadline, ws.next()).await {
                Err(_) => {
                    return Err(Refusal(
                        LIMIT_EXCEEDED,
                        format!("no CREDIT within {wait:?} on a spent budget"),
                    ))
                }
                Ok(None) => return Err(Refusal(INTERNAL_ERROR, "the client left".into())),
                Ok(Some(Err(e))) => return Err(Refusal(INTERNAL_ERROR, e.to_string())),
                Ok(Some(Ok(m))) => m,
            };
            match msg {
                Message::Binary(b) => {
                    let (id, bytes) =
                        parse_credit(&b).map_err(|why| Refusal(INTERNAL_ERROR, why))?;
                    self.credited(id, bytes);
                }
                Message::Pong(_) => {
                    self.counters.pongs.fetch_add(1, Ordering::SeqCst);
                }
                Message::Close(_) => {
                    return Err(Refusal(INTERNAL_ERROR, "the client closed".into()))
                }
                _ => {}
            }
        }
        Ok(())
    }

    async fn client(&mut self) -> Result<&tokio_postgres::Client, Refusal> {
        if self.pg.as_ref().is_none_or(|c| c.is_closed()) {
            let url = self
                .pg_url
                .clone()
                .ok_or_else(|| Refusal(INTERNAL_ERROR, "no database behind this server".into()))?;
            let (client, conn) = tokio_postgres::connect(&url, NoTls)
                .await
                .map_err(|e| Refusal(INTERNAL_ERROR, e.to_string()))?;
            tokio::spawn(conn);
            self.pg = Some(client);
        }
        self.pg
            .as_ref()
            .ok_or_else(|| Refusal(INTERNAL_ERROR, "no database".into()))
    }

    /// Runs the query on PostgreSQL and sends its answer; a refusal becomes QUERY_ERROR.
    async fn run(&mut self, ws: &mut Ws, req: &Seen) -> Result<(), Refusal> {
        let params: Vec<(Param, Type)> = req
            .binds
            .iter()
            .enumerate()
            .map(|(i, b)| pg_param(b).ok_or_else(|| unsupported_bind(i, b)))
            .collect::<Result<_, _>>()?;
        let types: Vec<Type> = params.iter().map(|(_, t)| t.clone()).collect();
        let batch_rows = self.options.batch_rows.max(1);
        let client = self.client().await?;
        let stmt = client
            .prepare_typed(&req.sql, &types)
            .await
            .map_err(|e| sql_refusal(&e))?;
        let cols: Vec<(String, Kind)> = stmt
            .columns()
            .iter()
            .map(|c| Ok((c.name().to_string(), kind_of(c.name(), c.type_())?)))
            .collect::<Result<_, Refusal>>()?;
        let rows = client
            .query_raw(&stmt, params.iter().map(|(p, _)| p))
            .await
            .map_err(|e| sql_refusal(&e))?;
        let mut rows = pin!(rows);
        let id = req.request_id;
        let mut batch: Vec<Vec<Option<Vec<u8>>>> = Vec::new();
        let (mut seq, mut total) = (0u64, 0u64);
        while let Some(row) = rows.next().await {
            let row = row.map_err(|e| sql_refusal(&e))?;
            let values = (0..cols.len())
                .map(|i| {
                    row.try_get::<_, Raw>(i)
                        .map(|r| r.0.map(<[u8]>::to_vec))
                        .map_err(|e| Refusal(INTERNAL_ERROR, e.to_string()))
                })
                .collect::<Result<Vec<_>, _>>()?;
            batch.push(values);
            if batch.len() == batch_rows {
                self.send_batch(ws, id, seq, &cols, &batch).await?;
                seq += 1;
                total += batch.len() as u64;
                batch.clear();
            }
        }
        if cols.is_empty() {
            let affected = rows.rows_affected().unwrap_or(0);
            return self.reply(ws, exec_done(id, affected)).await;
        }
        if !batch.is_empty() || seq == 0 {
            self.send_batch(ws, id, seq, &cols, &batch).await?;
            seq += 1;
            total += batch.len() as u64;
        }
        self.reply(ws, result_end(id, seq - 1, total)).await
    }

    async fn send_batch(
        &mut self,
        ws: &mut Ws,
        id: i64,
        seq: u64,
        cols: &[(String, Kind)],
        rows: &[Vec<Option<Vec<u8>>>],
    ) -> Result<(), Refusal> {
        self.await_credit(ws).await?;
        let frame = encode_batch(id, seq, cols, rows, &mut self.dict)
            .map_err(|e| Refusal(INTERNAL_ERROR, e.to_string()))?;
        self.counters.batches.fetch_add(1, Ordering::SeqCst);
        let size = frame.len() as u64;
        let c = &mut self.credit;
        c.sent += size;
        c.budget = c.budget.saturating_sub(size as i64);
        let over = if c.bounded {
            c.sent.saturating_sub(c.granted)
        } else {
            0
        };
        self.flow(|f| {
            f.batches.push(size);
            f.max_overrun = f.max_overrun.max(over);
        });
        if seq == 0 {
            tokio::time::sleep_until(self.read_at + self.options.first_delay).await;
        } else {
            tokio::time::sleep(self.options.batch_gap).await;
        }
        self.reply(ws, frame).await?;
        if seq == 0 {
            self.wire.first_bytes = self.wire.bytes;
        }
        Ok(())
    }

    async fn reply(&mut self, ws: &mut Ws, frame: Vec<u8>) -> Result<(), Refusal> {
        self.wire.bytes += ws_len(frame.len());
        send(ws, frame)
            .await
            .map_err(|e| Refusal(INTERNAL_ERROR, e.to_string()))
    }
}

/// Why a query gets QUERY_ERROR: the status and the message.
#[derive(Debug)]
struct Refusal(u8, String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "status {}: {}", self.0, self.1)
    }
}

impl StdError for Refusal {}

fn sql_refusal(e: &tokio_postgres::Error) -> Refusal {
    let message = match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => e.to_string(),
    };
    Refusal(PARSE_ERROR, message)
}

fn unsupported_bind(i: usize, b: &Bind) -> Refusal {
    Refusal(
        BIND_MISMATCH,
        format!("bind {i}: {b:?} is not a bind type this server runs"),
    )
}

async fn send(ws: &mut Ws, frame: Vec<u8>) -> Res<()> {
    ws.send(Message::Binary(Bytes::from(frame))).await?;
    Ok(())
}

async fn close(ws: &mut Ws, code: CloseCode, reason: &str) -> Res<()> {
    let frame = CloseFrame {
        code,
        reason: reason.to_string().into(),
    };
    ws.send(Message::Close(Some(frame))).await?;
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// Reading QUERY_REQUEST (spec §5.3)

struct Cur<'a> {
    b: &'a [u8],
    p: usize,
}

impl<'a> Cur<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.p.checked_add(n).filter(|&e| e <= self.b.len());
        let end = end.ok_or_else(|| format!("{n} bytes wanted at {}", self.p))?;
        let s = &self.b[self.p..end];
        self.p = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.u8()?;
            if shift == 63 && b > 1 {
                return Err("varint past 64 bits".into());
            }
            v |= u64::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("varint longer than 10 bytes".into())
    }

    fn string(&mut self) -> Result<String, String> {
        let n = usize::try_from(self.varint()?).map_err(|e| e.to_string())?;
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|e| e.to_string())
    }
}

/// CREDIT (§5.6): `15 | request_id i64 LE | additional_bytes varint`.
fn parse_credit(b: &[u8]) -> Result<(i64, u64), String> {
    let mut r = Cur { b, p: 0 };
    let kind = r.u8()?;
    if kind != 0x15 {
        return Err(format!(
            "message kind 0x{kind:02x} mid-result, where only CREDIT may come"
        ));
    }
    let id = i64::from_le_bytes(r.fixed()?);
    let bytes = r.varint()?;
    if r.p != b.len() {
        return Err(format!("{} bytes after the CREDIT", b.len() - r.p));
    }
    Ok((id, bytes))
}

fn parse_request(b: &[u8], caps: u32) -> Result<Seen, String> {
    let mut r = Cur { b, p: 0 };
    let kind = r.u8()?;
    if kind != 0x10 {
        return Err(format!("message kind 0x{kind:02x} is not QUERY_REQUEST"));
    }
    let request_id = i64::from_le_bytes(r.fixed()?);
    let sql = r.string()?;
    let initial_credit = r.varint()?;
    let n = r.varint()?;
    if n > 1024 {
        return Err(format!("{n} binds"));
    }
    let binds = (0..n)
        .map(|_| parse_bind(&mut r))
        .collect::<Result<_, _>>()?;
    let query_flags = if r.p < b.len() {
        if caps & CAP_QUERY_FLAGS == 0 {
            return Err("query_flags sent to a server without CAP_QUERY_FLAGS".into());
        }
        Some(r.varint()?)
    } else {
        None
    };
    if r.p != b.len() {
        return Err(format!("{} bytes after the request", b.len() - r.p));
    }
    Ok(Seen {
        request_id,
        sql,
        initial_credit,
        binds,
        query_flags,
    })
}

/// One bind: type, null flag (and its one-byte bitmap), column arguments, then the value.
fn parse_bind(r: &mut Cur<'_>) -> Result<Bind, String> {
    let ty = r.u8()?;
    let null = match r.u8()? {
        0 => false,
        1 => {
            if r.u8()? != 1 {
                return Err("a NULL bind's bitmap is not 0x01".into());
            }
            true
        }
        other => return Err(format!("null flag {other}")),
    };
    let mut geo_bits = 0;
    match ty {
        0x13..=0x15 => {
            r.u8()?;
        }
        0x0E => geo_bits = r.varint()?,
        _ => {}
    }
    if null {
        return Ok(Bind::Null(ty));
    }
    Ok(match ty {
        0x01 => Bind::Boolean(r.u8()? & 1 == 1),
        0x05 => Bind::Long(i64::from_le_bytes(r.fixed()?)),
        0x07 => Bind::Double(f64::from_le_bytes(r.fixed()?)),
        0x0A => Bind::Timestamp(i64::from_le_bytes(r.fixed()?)),
        0x0F | 0x17 => {
            let start = u32::from_le_bytes(r.fixed()?);
            let end = u32::from_le_bytes(r.fixed()?);
            if start != 0 || end < start {
                return Err(format!("bind offsets {start}, {end}"));
            }
            let bytes = r.take(end as usize)?;
            if ty == 0x17 {
                Bind::Other(ty)
            } else {
                Bind::Varchar(String::from_utf8(bytes.to_vec()).map_err(|e| e.to_string())?)
            }
        }
        _ => {
            let width = match ty {
                0x02 => 1,
                0x03 | 0x16 => 2,
                0x04 | 0x06 | 0x18 => 4,
                0x0B | 0x10 | 0x13 => 8,
                0x0C | 0x14 => 16,
                0x0D | 0x15 => 32,
                0x0E => geo_bits.div_ceil(8) as usize,
                _ => return Err(format!("bind type 0x{ty:02x}")),
            };
            r.take(width)?;
            Bind::Other(ty)
        }
    })
}

// ------------------------------------------------------------------------------------------------
// Running binds on PostgreSQL

enum Param {
    Null,
    Int8(i64),
    Float8(f64),
    Bool(bool),
    Micros(i64),
    Text(String),
}

impl std::fmt::Debug for Param {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Param")
    }
}

impl ToSql for Param {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn StdError + Sync + Send>> {
        match self {
            Param::Null => return Ok(IsNull::Yes),
            Param::Int8(v) => out.put_i64(*v),
            Param::Float8(v) => out.put_f64(*v),
            Param::Bool(v) => out.put_u8(u8::from(*v)),
            Param::Micros(v) => out.put_i64(*v),
            Param::Text(s) => out.put_slice(s.as_bytes()),
        }
        Ok(IsNull::No)
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    fn encode_format(&self, _ty: &Type) -> Format {
        match self {
            Param::Text(_) => Format::Text,
            _ => Format::Binary,
        }
    }

    tokio_postgres::types::to_sql_checked!();
}

/// A bind as a PostgreSQL parameter and its type; texts and NULLs untyped, for the server to
/// infer as it does for a quoted literal.
fn pg_param(b: &Bind) -> Option<(Param, Type)> {
    Some(match b {
        Bind::Null(_) => (Param::Null, Type::UNKNOWN),
        Bind::Long(v) => (Param::Int8(*v), Type::INT8),
        Bind::Double(v) => (Param::Float8(*v), Type::FLOAT8),
        Bind::Boolean(v) => (Param::Bool(*v), Type::BOOL),
        Bind::Timestamp(us) => (
            Param::Micros(us.saturating_sub(PG_EPOCH_US)),
            Type::TIMESTAMPTZ,
        ),
        Bind::Varchar(s) => (Param::Text(s.clone()), Type::UNKNOWN),
        Bind::Other(_) => return None,
    })
}

/// A column value in PostgreSQL's binary format, whatever its type.
struct Raw<'a>(Option<&'a [u8]>);

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(_ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(Raw(Some(raw)))
    }

    fn from_sql_null(_ty: &Type) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(Raw(None))
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }
}

// ------------------------------------------------------------------------------------------------
// Writing frames (spec §5)

/// How a PostgreSQL column is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    Numeric,
    Text,
    Symbol,
    Timestamp,
    Date,
    Uuid,
}

impl Kind {
    fn code(self) -> u8 {
        match self {
            Kind::Bool => 0x01,
            Kind::Int2 => 0x03,
            Kind::Int4 => 0x04,
            Kind::Int8 => 0x05,
            Kind::Float4 => 0x06,
            Kind::Float8 => 0x07,
            Kind::Numeric => 0x14,
            Kind::Text => 0x0F,
            Kind::Symbol => 0x09,
            Kind::Timestamp => 0x0A,
            Kind::Date => 0x0B,
            Kind::Uuid => 0x0C,
        }
    }
}

fn kind_of(name: &str, ty: &Type) -> Result<Kind, Refusal> {
    Ok(match *ty {
        Type::BOOL => Kind::Bool,
        Type::INT2 => Kind::Int2,
        Type::INT4 => Kind::Int4,
        Type::INT8 => Kind::Int8,
        Type::FLOAT4 => Kind::Float4,
        Type::FLOAT8 => Kind::Float8,
        Type::NUMERIC => Kind::Numeric,
        Type::TEXT | Type::VARCHAR | Type::NAME | Type::UNKNOWN => Kind::Text,
        Type::BPCHAR => Kind::Symbol,
        Type::TIMESTAMP | Type::TIMESTAMPTZ => Kind::Timestamp,
        Type::DATE => Kind::Date,
        Type::UUID => Kind::Uuid,
        _ => {
            return Err(Refusal(
                PARSE_ERROR,
                format!("column `{name}` is {ty}, which this test server cannot send over QWP"),
            ))
        }
    })
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7F) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn string(out: &mut Vec<u8>, s: &str) {
    varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// The 12-byte header, then `payload`.
fn message(flags: u8, tables: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(12 + payload.len());
    out.extend_from_slice(b"QWP1");
    out.push(1);
    out.push(flags);
    out.extend_from_slice(&tables.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

fn server_info(caps: u32) -> Vec<u8> {
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    let mut p = vec![0x18, 0];
    p.extend_from_slice(&7u64.to_le_bytes());
    p.extend_from_slice(&caps.to_le_bytes());
    p.extend_from_slice(&wall.to_le_bytes());
    let mut texts = vec!["wlrun-test", "pg-backed"];
    if caps & CAP_ZONE != 0 {
        texts.push("zone-t");
    }
    for t in texts {
        p.extend_from_slice(&(t.len() as u16).to_le_bytes());
        p.extend_from_slice(t.as_bytes());
    }
    message(0, 0, &p)
}

fn result_end(id: i64, final_seq: u64, total: u64) -> Vec<u8> {
    let mut p = vec![0x12];
    p.extend_from_slice(&id.to_le_bytes());
    varint(&mut p, final_seq);
    varint(&mut p, total);
    message(0, 0, &p)
}

fn exec_done(id: i64, affected: u64) -> Vec<u8> {
    let mut p = vec![0x16];
    p.extend_from_slice(&id.to_le_bytes());
    p.push(0);
    varint(&mut p, affected);
    message(0, 0, &p)
}

fn query_error(id: i64, status: u8, text: &str) -> Vec<u8> {
    let mut cut = text.len().min(1024);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut p = vec![0x13];
    p.extend_from_slice(&id.to_le_bytes());
    p.push(status);
    p.extend_from_slice(&(cut as u16).to_le_bytes());
    p.extend_from_slice(&text.as_bytes()[..cut]);
    message(0, 0, &p)
}

fn cache_reset() -> Vec<u8> {
    message(0, 0, &[0x17, 0x01])
}

/// A RESULT_BATCH whose LONG column says 5 rows and carries 2.
fn cut_short_batch(id: i64) -> Vec<u8> {
    let mut p = vec![0x11];
    p.extend_from_slice(&id.to_le_bytes());
    p.extend_from_slice(&[0, 0, 0, 0, 5, 1, 1, b'x', 0x05, 0]);
    p.extend_from_slice(&1i64.to_le_bytes());
    p.extend_from_slice(&2i64.to_le_bytes());
    message(FLAGS_GORILLA_DICT, 1, &p)
}

/// One RESULT_BATCH of `rows` (PostgreSQL binary values) for `cols`.
fn encode_batch(
    id: i64,
    seq: u64,
    cols: &[(String, Kind)],
    rows: &[Vec<Option<Vec<u8>>>],
    dict: &mut Dict,
) -> Res<Vec<u8>> {
    let known = dict.entries.len();
    let mut columns = Vec::new();
    for (i, (name, kind)) in cols.iter().enumerate() {
        let values: Vec<Option<&[u8]>> = rows.iter().map(|r| r[i].as_deref()).collect();
        column(&mut columns, *kind, &values, dict).map_err(|e| format!("column `{name}`: {e}"))?;
    }
    let mut p = vec![0x11];
    p.extend_from_slice(&id.to_le_bytes());
    varint(&mut p, seq);
    varint(&mut p, known as u64);
    varint(&mut p, (dict.entries.len() - known) as u64);
    for e in &dict.entries[known..] {
        string(&mut p, e);
    }
    varint(&mut p, 0);
    varint(&mut p, rows.len() as u64);
    if seq == 0 {
        varint(&mut p, cols.len() as u64);
        for (name, kind) in cols {
            string(&mut p, name);
            p.push(kind.code());
        }
    }
    p.extend_from_slice(&columns);
    Ok(message(FLAGS_GORILLA_DICT, 1, &p))
}

/// The null section, then the non-null values densely.
fn column(out: &mut Vec<u8>, kind: Kind, values: &[Option<&[u8]>], dict: &mut Dict) -> Res<()> {
    if values.iter().any(Option::is_none) {
        out.push(1);
        let mut bitmap = vec![0u8; values.len().div_ceil(8)];
        for (i, v) in values.iter().enumerate() {
            if v.is_none() {
                bitmap[i / 8] |= 1 << (i % 8);
            }
        }
        out.extend_from_slice(&bitmap);
    } else {
        out.push(0);
    }
    let present: Vec<&[u8]> = values.iter().flatten().copied().collect();
    match kind {
        Kind::Bool => {
            let mut bits = vec![0u8; present.len().div_ceil(8)];
            for (i, v) in present.iter().enumerate() {
                if v.first().is_some_and(|&b| b != 0) {
                    bits[i / 8] |= 1 << (i % 8);
                }
            }
            out.extend_from_slice(&bits);
        }
        // Big-endian on PostgreSQL's wire, little-endian on QWP's.
        Kind::Int2 | Kind::Int4 | Kind::Int8 | Kind::Float4 | Kind::Float8 | Kind::Uuid => {
            for v in present {
                out.extend(v.iter().rev());
            }
        }
        Kind::Text => {
            let mut end = 0u32;
            out.extend_from_slice(&0u32.to_le_bytes());
            for v in &present {
                end += v.len() as u32;
                out.extend_from_slice(&end.to_le_bytes());
            }
            for v in present {
                out.extend_from_slice(v);
            }
        }
        Kind::Symbol => {
            for v in present {
                let text = std::str::from_utf8(v)?.trim_end_matches(' ');
                let id = dict.id(text);
                varint(out, id);
            }
        }
        Kind::Timestamp => {
            let us: Vec<i64> = present
                .iter()
                .map(|v| be_i64(v).saturating_add(PG_EPOCH_US))
                .collect();
            temporal(out, &us);
        }
        Kind::Date => {
            let ms: Vec<i64> = present
                .iter()
                .map(|v| (i64::from(be_i32(v)) + PG_EPOCH_DAYS) * 86_400_000)
                .collect();
            temporal(out, &ms);
        }
        Kind::Numeric => {
            let parsed = present
                .iter()
                .map(|v| numeric(v))
                .collect::<Result<Vec<_>, _>>()?;
            let scale = parsed.iter().flatten().map(|&(_, s)| s).max().unwrap_or(0);
            if scale > 38 {
                return Err(format!("numeric scale {scale} past DECIMAL128's 38").into());
            }
            out.push(scale as u8);
            for p in parsed {
                let Some((v, s)) = p else {
                    // NaN: QuestDB has none; its NULL decimal, both halves i64::MIN.
                    out.extend_from_slice(&i64::MIN.to_le_bytes());
                    out.extend_from_slice(&i64::MIN.to_le_bytes());
                    continue;
                };
                let v = 10i128
                    .checked_pow(u32::from(scale - s))
                    .and_then(|k| v.checked_mul(k))
                    .ok_or("numeric value too large for DECIMAL128")?;
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    Ok(())
}

fn be_i64(v: &[u8]) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&v[..8]);
    i64::from_be_bytes(a)
}

fn be_i32(v: &[u8]) -> i32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&v[..4]);
    i32::from_be_bytes(a)
}

/// A TIMESTAMP or DATE column's values after the encoding byte: Gorilla when there are three
/// or more and every delta of deltas fits 32 bits, else plain.
fn temporal(out: &mut Vec<u8>, values: &[i64]) {
    let dods: Option<Vec<i64>> = if values.len() >= 3 {
        values
            .windows(3)
            .map(|w| {
                let dod = (w[2] - w[1]) - (w[1] - w[0]);
                i32::try_from(dod).ok().map(i64::from)
            })
            .collect()
    } else {
        None
    };
    let Some(dods) = dods else {
        out.push(0);
        for v in values {
            out.extend_from_slice(&v.to_le_bytes());
        }
        return;
    };
    out.push(1);
    out.extend_from_slice(&values[0].to_le_bytes());
    out.extend_from_slice(&values[1].to_le_bytes());
    let mut bits = BitSink::default();
    for dod in dods {
        match dod {
            0 => bits.put(0, 1),
            -64..=63 => {
                bits.put(0b01, 2);
                bits.put(dod as u64, 7);
            }
            -256..=255 => {
                bits.put(0b011, 3);
                bits.put(dod as u64, 9);
            }
            -2048..=2047 => {
                bits.put(0b0111, 4);
                bits.put(dod as u64, 12);
            }
            _ => {
                bits.put(0b1111, 4);
                bits.put(dod as u64, 32);
            }
        }
    }
    out.extend_from_slice(&bits.bytes);
}

/// Bits, least significant first, into bytes filled from their lowest bit.
#[derive(Default)]
struct BitSink {
    bytes: Vec<u8>,
    used: u32,
}

impl BitSink {
    /// The low `n` bits of `v`, lowest first.
    fn put(&mut self, v: u64, n: u32) {
        for i in 0..n {
            if self.used % 8 == 0 {
                self.bytes.push(0);
            }
            if (v >> i) & 1 == 1 {
                if let Some(last) = self.bytes.last_mut() {
                    *last |= 1 << (self.used % 8);
                }
            }
            self.used += 1;
        }
    }
}

/// PostgreSQL's binary numeric as (unscaled, scale); `None` for NaN.
fn numeric(raw: &[u8]) -> Result<Option<(i128, u16)>, String> {
    let word = |i: usize| -> Result<u16, String> {
        raw.get(i * 2..i * 2 + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "numeric cut short".to_string())
    };
    let ndigits = usize::from(word(0)?);
    let weight = i64::from(word(1)? as i16);
    let sign = word(2)?;
    let dscale = word(3)?;
    match sign {
        0x0000 | 0x4000 => {}
        0xC000 => return Ok(None),
        _ => return Err("an infinite numeric".into()),
    }
    let too_big = || "numeric value too large for DECIMAL128".to_string();
    let mut v: i128 = 0;
    for i in 0..ndigits {
        let digit = i128::from(word(4 + i)?);
        let exp = 4 * (weight - i as i64) + i64::from(dscale);
        let part = if exp >= 0 {
            10i128
                .checked_pow(exp as u32)
                .and_then(|p| digit.checked_mul(p))
                .ok_or_else(too_big)?
        } else {
            digit / 10i128.checked_pow((-exp) as u32).ok_or_else(too_big)?
        };
        v = v.checked_add(part).ok_or_else(too_big)?;
    }
    Ok(Some((if sign == 0x4000 { -v } else { v }, dscale)))
}
