//! Queries over QuestDB's QWP on WebSocket (`/read/v1`; src/qwp, spec notes §5): one
//! upgraded connection, on which the server first says who it is (SERVER_INFO, often in the
//! same TCP segment as the 101), then answers each QUERY_REQUEST with RESULT_BATCHes and one
//! terminator: RESULT_END, EXEC_DONE (a statement without rows) or QUERY_ERROR.
//!
//! - Requests are numbered from 1 on each connection. Binds go positionally, `$1` first (QWP
//!   numbers them from 0; `egress::encode_query_request` says how each kind is typed).
//!   When the server advertises `CAP_QUERY_FLAGS` every request asks it to reset the symbol
//!   dictionary (as the official client's `query()` does), so the dictionary never outgrows
//!   one result; otherwise the dictionary lives on until the server sends CACHE_RESET.
//! - QUERY_ERROR for the running request is a `Sql` error with the server's message and the
//!   status's name (`PARSE_ERROR`, `LIMIT_EXCEEDED`, ...) in `code`; the connection stays
//!   usable. Anything that leaves the connection's state unknown breaks it (`broken`): a
//!   malformed frame, a frame for another request, a RESULT_END whose total disagrees with the
//!   rows read, a close, a transport error, a timeout.
//! - A request that cannot be sent (too many binds, too long) is a `Client` error before
//!   anything goes out.
//! - Flow control (§5.6): without the endpoint's `credit` option every request says
//!   `initial_credit` 0 and the server streams without limit, paced only by TCP, as with the
//!   reference clients. With `credit N` each request asks for N bytes of credit, and after
//!   each RESULT_BATCH is read (decoded, and hashed when checksums are on) the client sends
//!   CREDIT(request id, that batch's wire size: the WebSocket message, QWP header included),
//!   so the server is never more than N bytes (plus the one batch its row floor lets it send
//!   on a spent budget) ahead of what the client has read. A batch whose column cannot be
//!   hashed is credited too: the result is read to its end either way. No CREDIT follows the
//!   terminator, and credit is per request, so nothing carries over to the next query.
//! - Every wait is bounded: connecting and SERVER_INFO by `connect_timeout`, each query's
//!   whole exchange by `timeout`. PINGs are answered while reading (tungstenite queues the
//!   PONG and writes it on the next read).
//!
//! Checksums (`set_checksums`, docs/checksum.md §6): the decoder feeds each value of each
//! batch straight to one `ResultHasher` per query. A result with a column that has no
//! checksum encoding (BINARY, arrays) is still read to its end, then refused as a `Client`
//! error, as the other transports refuse such columns.

pub mod egress;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::{client_error, timeout_error, Timeouts};
use crate::net::http::quote_server_text;
use crate::net::tls::{Connector, Counters, Stream};
use crate::plan::EndpointPlan;
use crate::query::checksum::ResultHasher;
use crate::query::streaming::Streamed;
use crate::query::{Instance, Outcome, QueryError, QueryErrorClass};
use crate::qwp::ws::{self, Side, WsUrl};
use crate::qwp::{status, DEFAULT_SERVER_MAX_BATCH, HEADER_LEN, MAX_MESSAGE, QUERY_PATH};
use crate::value::Value;
use egress::{
    DecodeError, Decoder, Frame, ServerInfo, Values, MAX_BINDS, MAX_SQL_BYTES,
    QUERY_FLAG_RESET_DICT,
};

pub struct QwpTransport {
    ws: WebSocketStream<Stream>,
    /// `target.endpoint (ws://host:port/read/v1)`, for messages; never with credentials.
    label: String,
    timeout: Duration,
    info: ServerInfo,
    decoder: Decoder,
    next_request: i64,
    /// The largest request the server takes.
    max_request: usize,
    /// Compute each result's checksum (`Transport::set_checksums`).
    checksums: bool,
    /// The request being sent, reused.
    request: Vec<u8>,
    /// `initial_credit` for every request, and what each RESULT_BATCH read gives back;
    /// 0: unbounded, no CREDIT sent.
    credit: u64,
    /// The socket's byte counters (below TLS).
    socket: Arc<Counters>,
    /// How the last query's result arrived (`query::streaming`): a piece is a RESULT_BATCH
    /// with rows.
    streamed: Streamed,
    /// The last statement's EXEC_DONE count; `None` after a result with rows.
    affected: Option<u64>,
}

impl QwpTransport {
    /// Upgrades a connection to `url` (`ws://host[:port][/path]`, `/read/v1` by default) and
    /// reads the server's SERVER_INFO.
    pub async fn connect(
        endpoint: &EndpointPlan,
        url: &str,
        connector: &Connector,
        timeouts: Timeouts,
    ) -> Result<QwpTransport, QueryError> {
        let name = format!("{}.{}", endpoint.target, endpoint.name);
        let connected = ws::connect(
            connector,
            url,
            QUERY_PATH,
            Side::Query,
            &[],
            timeouts.connect,
        )
        .await
        .map_err(|e| {
            let class = if e.timed_out {
                QueryErrorClass::Timeout
            } else {
                QueryErrorClass::Connect
            };
            broken(class, format!("{name}: {e}"))
        })?;
        let label = match WsUrl::parse(url) {
            Ok(u) => format!(
                "{name} ({}{}{})",
                u.scheme(),
                u.authority,
                u.path.as_deref().unwrap_or(QUERY_PATH)
            ),
            Err(_) => name,
        };
        let max_request = connected
            .max_batch_size
            .unwrap_or(DEFAULT_SERVER_MAX_BATCH)
            .min(MAX_MESSAGE);
        let socket = connected.ws.get_ref().counters();
        let mut t = QwpTransport {
            socket,
            streamed: Streamed::default(),
            affected: None,
            ws: connected.ws,
            label,
            timeout: timeouts.query,
            // Until SERVER_INFO says otherwise: no capabilities.
            info: ServerInfo::default(),
            decoder: Decoder::new(),
            next_request: 1,
            max_request,
            checksums: false,
            request: Vec::new(),
            credit: match endpoint.options.get("credit") {
                Some(Value::Size(b)) => *b,
                _ => 0,
            },
        };
        t.info = match tokio::time::timeout(timeouts.connect, t.read_server_info()).await {
            Ok(info) => info?,
            Err(_) => {
                return Err(broken(
                    QueryErrorClass::Timeout,
                    format!(
                        "{}: no SERVER_INFO within {} of the upgrade",
                        t.label,
                        crate::net::fmt::fmt_duration(timeouts.connect)
                    ),
                ))
            }
        };
        Ok(t)
    }

    /// Whether `run` computes the result's checksum (off by default).
    pub fn set_checksums(&mut self, on: bool) {
        self.checksums = on;
    }

    /// How the last query's result arrived: its first RESULT_BATCH with rows, and the socket
    /// bytes read from its send to its terminator (WebSocket framing and PINGs included).
    pub fn streamed(&self) -> Streamed {
        self.streamed
    }

    /// What the server said about itself.
    pub fn server_info(&self) -> &ServerInfo {
        &self.info
    }

    /// Sends `inst` and reads its result to the terminator, within the endpoint's timeout.
    pub async fn run(&mut self, inst: &Instance) -> Result<Outcome, QueryError> {
        let mut hasher = self.checksums.then(ResultHasher::new);
        let rows = self.run_into(inst, hasher.as_mut()).await?;
        Ok(Outcome {
            rows,
            checksum: hasher.map(|h| h.finish()),
            affected: self.affected,
        })
    }

    /// `run`, with every value of the result fed to `values` (`None`: the rows are only
    /// counted); the number of rows. A result with a column that has no encoding is read to
    /// its end and then refused, as with checksums.
    pub async fn run_into<V: Values + Send + ?Sized>(
        &mut self,
        inst: &Instance,
        values: Option<&mut V>,
    ) -> Result<u64, QueryError> {
        let id = self.encode(inst)?;
        self.affected = None;
        match tokio::time::timeout(self.timeout, self.exchange(id, values)).await {
            Ok(result) => result,
            Err(_) => Err(timeout_error(&self.label, self.timeout)),
        }
    }

    /// The first frame: SERVER_INFO.
    async fn read_server_info(&mut self) -> Result<ServerInfo, QueryError> {
        let frame = self.next_frame().await?;
        match self.decoder.decode(&frame, None) {
            Ok(Frame::ServerInfo(info)) => Ok(info),
            Ok(other) => Err(self.protocol(format!(
                "the first message is {} where SERVER_INFO was due",
                frame_name(&other)
            ))),
            Err(e) => Err(self.protocol(e.to_string())),
        }
    }

    /// Encodes the QUERY_REQUEST into `self.request`; its request id.
    fn encode(&mut self, inst: &Instance) -> Result<i64, QueryError> {
        if inst.binds.len() > MAX_BINDS {
            return Err(client_error(format!(
                "{}: {} bind values; a QWP query takes at most {MAX_BINDS}",
                self.label,
                inst.binds.len()
            )));
        }
        if inst.sql.len() > MAX_SQL_BYTES {
            return Err(client_error(format!(
                "{}: the SQL is {} bytes; a QWP query takes at most {MAX_SQL_BYTES}",
                self.label,
                inst.sql.len()
            )));
        }
        let id = self.next_request;
        let flags = self.info.query_flags().then_some(QUERY_FLAG_RESET_DICT);
        self.request.clear();
        egress::encode_query_request(
            &mut self.request,
            id,
            &inst.sql,
            &inst.binds,
            self.credit,
            flags,
        );
        if self.request.len() > self.max_request {
            return Err(client_error(format!(
                "{}: the request is {} bytes with its binds; the server takes at most {}",
                self.label,
                self.request.len(),
                self.max_request
            )));
        }
        self.next_request += 1;
        Ok(id)
    }

    async fn exchange<V: Values + Send + ?Sized>(
        &mut self,
        id: i64,
        mut values: Option<&mut V>,
    ) -> Result<u64, QueryError> {
        self.decoder.begin_query(id, self.info.query_flags());
        self.streamed = Streamed::start();
        let before = self.socket.read();
        let message = Message::Binary(Bytes::copy_from_slice(&self.request));
        if let Err(e) = self.ws.send(message).await {
            return Err(self.lost(format!("sending the query: {e}")));
        }
        let mut refused: Option<String> = None;
        let mut rows = 0u64;
        loop {
            let frame = self.next_frame().await?;
            let sum = if refused.is_none() {
                values.as_deref_mut()
            } else {
                None
            };
            match self.decoder.decode_into(&frame, sum) {
                Ok(Frame::ResultBatch { rows: n, .. }) => {
                    rows += n;
                    self.streamed.piece(n, self.socket.read() - before);
                }
                Ok(Frame::CacheReset { .. }) => {}
                Ok(Frame::ResultEnd {
                    request_id,
                    total_rows,
                    ..
                }) => {
                    self.ours(id, request_id, "RESULT_END")?;
                    if refused.is_none() && total_rows != 0 && total_rows != rows {
                        return Err(self.protocol(format!(
                            "RESULT_END counts {total_rows} rows, but {rows} arrived"
                        )));
                    }
                    self.streamed.end(Some(self.socket.read() - before));
                    return self.outcome(rows, refused);
                }
                Ok(Frame::ExecDone {
                    request_id,
                    rows_affected,
                    ..
                }) => {
                    self.ours(id, request_id, "EXEC_DONE")?;
                    self.affected = Some(rows_affected);
                    self.streamed.end(Some(self.socket.read() - before));
                    return self.outcome(rows, refused);
                }
                Ok(Frame::QueryError {
                    request_id,
                    status,
                    message,
                }) => return Err(self.query_error(id, request_id, status, &message)),
                Ok(Frame::ServerInfo(_)) => {
                    return Err(self.protocol("a SERVER_INFO in the middle of a result".into()))
                }
                Err(DecodeError::Unhashable(why)) => refused = Some(why),
                Err(DecodeError::Malformed(m)) => return Err(self.protocol(m.to_string())),
            }
            // A RESULT_BATCH was read (CACHE_RESET is the other frame that gets here).
            if self.credit > 0 && frame.get(HEADER_LEN) == Some(&egress::kind::RESULT_BATCH) {
                self.give_credit(id, frame.len()).await?;
            }
        }
    }

    /// CREDIT for `bytes` more of request `id`'s result.
    async fn give_credit(&mut self, id: i64, bytes: usize) -> Result<(), QueryError> {
        let mut credit = Vec::with_capacity(19);
        egress::encode_credit(&mut credit, id, bytes as u64);
        match self.ws.send(Message::Binary(Bytes::from(credit))).await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.lost(format!("sending CREDIT: {e}"))),
        }
    }

    fn outcome(&self, rows: u64, refused: Option<String>) -> Result<u64, QueryError> {
        match refused {
            Some(why) => Err(client_error(format!("{}: checksum: {why}", self.label))),
            None => Ok(rows),
        }
    }

    /// The next binary message; control frames are handled on the way (PINGs are answered).
    async fn next_frame(&mut self) -> Result<Bytes, QueryError> {
        loop {
            match self.ws.next().await {
                Some(Ok(Message::Binary(b))) => return Ok(b),
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
                Some(Ok(Message::Text(t))) => {
                    return Err(self.protocol(format!(
                        "a text message where QWP sends binary ones: {}",
                        quote_server_text(&t)
                    )))
                }
                Some(Ok(Message::Close(c))) => return Err(self.lost(closed(c.as_ref()))),
                Some(Err(e)) => return Err(self.lost(e.to_string())),
                None => return Err(self.lost("the server closed the connection".into())),
            }
        }
    }

    /// A terminator must be the running request's; one for another leaves the stream's
    /// state unknown.
    fn ours(&self, id: i64, request_id: i64, what: &str) -> Result<(), QueryError> {
        if request_id == id {
            Ok(())
        } else {
            Err(self.protocol(format!(
                "{what} for request {request_id} while request {id} runs"
            )))
        }
    }

    fn query_error(&self, id: i64, request_id: i64, status: u8, message: &str) -> QueryError {
        let text = quote_server_text(message);
        let name = status::name(status);
        if request_id == id {
            return QueryError {
                class: QueryErrorClass::Sql,
                message: text,
                code: Some(name.to_string()),
                broken: false,
            };
        }
        // -1: the connection failed as a whole; anything else is not this query's.
        QueryError {
            code: Some(name.to_string()),
            ..self.lost(format!(
                "QUERY_ERROR {name} for request {request_id} while request {id} runs: {text}"
            ))
        }
    }

    /// The connection was lost: the worker reconnects.
    fn lost(&self, what: String) -> QueryError {
        broken(
            QueryErrorClass::Connection,
            format!("{}: {what}", self.label),
        )
    }

    /// The server broke the protocol: nothing after this can be trusted.
    fn protocol(&self, what: String) -> QueryError {
        self.lost(format!("protocol error: {what}"))
    }
}

fn broken(class: QueryErrorClass, message: String) -> QueryError {
    QueryError {
        class,
        message,
        code: None,
        broken: true,
    }
}

fn closed(frame: Option<&CloseFrame>) -> String {
    match frame {
        Some(f) if !f.reason.is_empty() => format!(
            "the server closed the connection (code {}: {})",
            u16::from(f.code),
            quote_server_text(&f.reason)
        ),
        Some(f) => format!(
            "the server closed the connection (code {})",
            u16::from(f.code)
        ),
        None => "the server closed the connection".into(),
    }
}

fn frame_name(f: &Frame<'_>) -> &'static str {
    egress::kind::name(match f {
        Frame::ServerInfo(_) => egress::kind::SERVER_INFO,
        Frame::ResultBatch { .. } => egress::kind::RESULT_BATCH,
        Frame::ResultEnd { .. } => egress::kind::RESULT_END,
        Frame::QueryError { .. } => egress::kind::QUERY_ERROR,
        Frame::ExecDone { .. } => egress::kind::EXEC_DONE,
        Frame::CacheReset { .. } => egress::kind::CACHE_RESET,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::sql::Dialect;

    #[test]
    fn qwp_endpoints_write_questdb_sql() {
        assert_eq!(Dialect::of_endpoint("qwp", "generic"), Dialect::Questdb);
        assert_eq!(Dialect::of_endpoint("qwp", "questdb"), Dialect::Questdb);
    }

    #[test]
    fn close_frames_are_described() {
        use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
        let f = CloseFrame {
            code: CloseCode::Policy,
            reason: "bye".into(),
        };
        assert_eq!(
            closed(Some(&f)),
            "the server closed the connection (code 1008: bye)"
        );
        assert_eq!(closed(None), "the server closed the connection");
    }
}
