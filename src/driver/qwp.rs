//! QWP ingestion over WebSocket (`/write/v4`, spec notes §3–§4): one connection per worker,
//! sending the messages the producer encoded (`encode::qwp`), and counting the rows the
//! server's cumulative OKs cover.
//!
//! Acknowledgements (spec §4.1): the server numbers the messages of a connection from 0 and
//! answers with cumulative OKs ("every message up to N is committed"), which it groups and
//! sends when data, a PING or a CLOSE arrives. So a client waiting for an OK sends a PING
//! rather than waiting for a timer, and PINGs again while it waits.
//!
//! - `per_batch`: after each batch's messages, PING and wait until an OK covers the batch
//!   (at most `ack_timeout`, 60 s by default) before sending the next;
//! - `publish`: send batch after batch, reading OKs as they come without waiting for them;
//!   closing is the acknowledgement barrier: PING, and wait up to `ack_timeout` for an OK
//!   covering the last message. The official clients wait 5 s there, which cut large real
//!   runs short.
//!
//! A rows count as acknowledged when an OK covers their message. An error status (schema
//! mismatch, parse, internal, security, write, dictionary gap, ...) is reported with the
//! server's message; the batch being sent is finished and counted as sent (as it is when the
//! connection is found lost after its last message was written), and the worker stops: the
//! messages after the last OK stay unacknowledged. A lost connection is an error,
//! never a silent reconnect (a new connection would need the symbol dictionary again and
//! would hide the loss).
//!
//! Commits (`commit::Ledger`): with `commit every N rows` the messages between commits carry
//! `FLAG_DEFER_COMMIT`; rows count as acknowledged only when the OK of their commit comes, and
//! closing first commits what is still deferred. `ack per_batch` then waits at each commit
//! only: a server may hold the OKs of deferred messages until their commit (QuestDB 10.x).

mod commit;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{FutureExt as _, SinkExt as _, StreamExt as _};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::{Chunk, DriverConfig, Sent};
use crate::encode::qwp::{QwpOptions, DEFAULT_MAX_MESSAGE};
use crate::net::error::{DriverError, ErrorClass};
use crate::net::http::{config_error, option_text};
use crate::net::tls::{Counters, Stream};
use crate::plan::{Ack, EndpointPlan};
use crate::qwp::{self, status, ws, Reader};
use crate::value::Value;

/// The acknowledgement barrier when the endpoint sets no `ack_timeout`.
pub const DEFAULT_ACK_TIMEOUT: Duration = Duration::from_secs(60);

/// While waiting for an OK, PING again after this long, doubling up to `MAX_PING_EVERY`.
const FIRST_PING_AGAIN: Duration = Duration::from_millis(5);
const MAX_PING_EVERY: Duration = Duration::from_millis(200);

/// Where a message's header keeps its flags.
const FLAGS_AT: usize = 5;

/// How long closing waits for the server's Close answer.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// The encoder's settings for an endpoint: `max_frame` and `precision`.
pub fn options(ep: &EndpointPlan) -> QwpOptions {
    let max_message = match ep.options.get("max_frame") {
        Some(Value::Size(b)) if *b > 0 => (*b as usize).min(qwp::MAX_MESSAGE),
        _ => DEFAULT_MAX_MESSAGE,
    };
    let designated_nanos =
        matches!(ep.options.get("precision"), Some(Value::Symbol(w)) if w == "ns");
    QwpOptions {
        max_message,
        designated_nanos,
    }
}

/// How long to wait for acknowledgements: the endpoint's `ack_timeout`, or 60 s.
pub fn ack_timeout(ep: &EndpointPlan) -> Duration {
    match ep.options.get("ack_timeout") {
        Some(Value::Duration(ns)) if *ns > 0 => Duration::from_nanos(ns.unsigned_abs()),
        _ => DEFAULT_ACK_TIMEOUT,
    }
}

/// Boxed: the WebSocket state is large, and `Driver` is an enum of every driver.
pub struct QwpWriter(Box<State>);

struct State {
    ws: WebSocketStream<Stream>,
    /// Where the connection goes, for messages.
    shown: String,
    per_batch: bool,
    ack_timeout: Duration,
    /// Every write waits at most this long.
    timeout: Duration,
    /// The wire sequence number of the next message.
    next_seq: u64,
    /// Messages sent and not yet covered by an OK: (sequence, rows, whether it commits).
    pending: VecDeque<(u64, u64, bool)>,
    commits: commit::Ledger,
    /// Rows covered by OKs, and how many of them `take_acked` has handed out.
    acked_rows: u64,
    reported_rows: u64,
    /// The socket's byte counters, and how much of them `take_bytes` has handed out.
    counters: Arc<Counters>,
    counted: u64,
    /// The server answered an error, or the connection failed: nothing more is sent.
    usable: bool,
}

impl QwpWriter {
    pub async fn connect(cfg: &DriverConfig) -> Result<QwpWriter, DriverError> {
        let ep = &cfg.endpoint;
        let Some(url) = cfg.url.as_deref() else {
            return Err(config_error(ep, "a `qwp` endpoint needs a URL"));
        };
        let path = option_text(ep, "path")?;
        let path = path.as_deref().unwrap_or(qwp::INGEST_PATH);
        let options = options(ep);
        let connector = cfg.connector()?;
        let connected = ws::connect(
            &connector,
            url,
            path,
            ws::Side::Ingest,
            &[],
            cfg.connect_timeout,
        )
        .await
        .map_err(|e| {
            // A server that accepts but never upgrades is a timeout, not a refusal.
            let class = if e.timed_out {
                ErrorClass::Timeout
            } else {
                ErrorClass::Connect
            };
            DriverError::new(class, format!("{}.{}: {e}", ep.target, ep.name), true)
        })?;
        let server_max = connected
            .max_batch_size
            .unwrap_or(qwp::DEFAULT_SERVER_MAX_BATCH);
        if server_max < options.max_message {
            return Err(DriverError::new(
                ErrorClass::Connect,
                format!(
                    "endpoint {}.{}: the server takes QWP messages of at most {server_max} bytes \
                     (X-QWP-Max-Batch-Size) and wlrun encodes up to {}; set `max_frame` to at \
                     most {server_max} on the endpoint",
                    ep.target, ep.name, options.max_message
                ),
                true,
            ));
        }
        Ok(QwpWriter(Box::new(State {
            shown: crate::net::http::redact_url(url),
            ws: connected.ws,
            per_batch: cfg.ack == Ack::PerBatch,
            ack_timeout: ack_timeout(ep),
            timeout: cfg.timeout,
            next_seq: 0,
            pending: VecDeque::new(),
            commits: commit::Ledger::new(cfg.commit_every),
            acked_rows: 0,
            reported_rows: 0,
            counters: connected.counters,
            counted: 0,
            usable: true,
        })))
    }

    /// Sends the chunk's messages; with `per_batch`, returns once an OK covers them.
    pub async fn send(&mut self, chunk: &Chunk) -> Result<Sent, DriverError> {
        let s = &mut *self.0;
        let mut start = 0;
        let mut rejected = None;
        let last = chunk.frames.len().saturating_sub(1);
        for (i, f) in chunk.frames.iter().enumerate() {
            let message = &chunk.bytes[start..f.end];
            start = f.end;
            // One copy: tungstenite takes its payload by value and masks it into its own
            // buffer. The commit policy sets the copy's flags.
            let mut payload = bytes::BytesMut::from(message);
            let batch = (i == last).then_some(chunk.rows);
            let commits = match payload.get_mut(FLAGS_AT) {
                Some(flags) => s.commits.flag(flags, batch),
                None => true,
            };
            s.write(Message::Binary(payload.freeze())).await?;
            s.commits.written(f.rows, commits, batch);
            s.pending.push_back((s.next_seq, f.rows, commits));
            s.next_seq += 1;
            // A connection found lost between the messages of a split batch cuts it short.
            if rejected.is_none() && i < last {
                rejected = s.read_ready()?;
            }
        }
        // From here the batch has gone out whole: whatever is found now (a rejection, a lost
        // connection, no OK in time), it counts as sent, and the worker stops on `usable()`.
        let confirmed = match rejected {
            Some(e) => Ok(Some(e)),
            None => s.confirm().await,
        };
        let bytes = s.take_bytes();
        match confirmed {
            Ok(None) => Ok(Sent {
                socket_bytes: bytes,
                acked: false,
            }),
            Ok(Some(mut e)) | Err(mut e) => {
                e.fatal = false;
                Err(e)
            }
        }
    }

    /// Rows newly covered by OKs since the last call.
    pub fn take_acked(&mut self) -> u64 {
        let s = &mut *self.0;
        let n = s.acked_rows - s.reported_rows;
        s.reported_rows = s.acked_rows;
        n
    }

    /// Whether more can be sent on this connection.
    pub fn usable(&self) -> bool {
        self.0.usable
    }

    /// Commit messages written whole (`FLAG_DEFER_COMMIT` clear), the closing one included.
    pub fn commits(&self) -> u64 {
        self.0.commits.commits
    }

    /// The commit of what is still deferred, the acknowledgement barrier, then an orderly
    /// close. Returns the bytes that wrote.
    pub async fn finish(&mut self) -> Result<u64, DriverError> {
        let s = &mut *self.0;
        let mut result = Ok(());
        if s.usable && s.commits.open {
            match s
                .write(Message::Binary(Bytes::from_static(&commit::EMPTY_COMMIT)))
                .await
            {
                Ok(()) => {
                    s.commits.written(0, true, None);
                    s.pending.push_back((s.next_seq, 0, true));
                    s.next_seq += 1;
                }
                Err(e) => result = Err(e),
            }
        }
        if s.usable && result.is_ok() && !s.pending.is_empty() {
            let last = s.next_seq - 1;
            match s.wait_acked(last).await {
                Ok(None) => {}
                Ok(Some(e)) | Err(e) => result = Err(e),
            }
        }
        s.close().await;
        let bytes = s.take_bytes();
        result.map(|()| bytes)
    }
}

impl State {
    /// The bytes written to the socket since the last call: the messages and their frames,
    /// pings, pongs and the close, the upgrade (and TLS) at first.
    fn take_bytes(&mut self) -> u64 {
        let now = self.counters.written();
        let n = now - self.counted;
        self.counted = now;
        n
    }

    async fn write(&mut self, m: Message) -> Result<(), DriverError> {
        match tokio::time::timeout(self.timeout, self.ws.send(m)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(self.lost(format!("sending failed: {e}"))),
            Err(_) => {
                self.usable = false;
                Err(DriverError::timeout(
                    format!("{}: sending a QWP message", self.shown),
                    self.timeout,
                ))
            }
        }
    }

    /// After a batch's last message: reads what the server has already sent and, with
    /// `per_batch`, waits for the OK covering the batch.
    async fn confirm(&mut self) -> Result<Option<DriverError>, DriverError> {
        if let Some(e) = self.read_ready()? {
            return Ok(Some(e));
        }
        // A deferred message's OK may wait for its commit: only a commit is waited for.
        if self.per_batch && !self.pending.is_empty() && !self.commits.open {
            return self.wait_acked(self.next_seq - 1).await;
        }
        Ok(None)
    }

    /// Reads what the server has already sent, without waiting. Returns the server's error
    /// status if one came.
    fn read_ready(&mut self) -> Result<Option<DriverError>, DriverError> {
        loop {
            match self.ws.next().now_or_never() {
                None => return Ok(None),
                Some(m) => {
                    if let Some(e) = self.on_reply(m)? {
                        return Ok(Some(e));
                    }
                }
            }
        }
    }

    /// Waits until an OK covers message `seq`, PINGing so the server sends its grouped OKs.
    async fn wait_acked(&mut self, seq: u64) -> Result<Option<DriverError>, DriverError> {
        let started = Instant::now();
        let deadline = started + self.ack_timeout;
        let mut every = FIRST_PING_AGAIN;
        loop {
            if self.acked_through().is_some_and(|a| a >= seq) {
                return Ok(None);
            }
            self.write(Message::Ping(Bytes::new())).await?;
            let until = (Instant::now() + every).min(deadline);
            loop {
                if self.acked_through().is_some_and(|a| a >= seq) {
                    return Ok(None);
                }
                match tokio::time::timeout_at(until.into(), self.ws.next()).await {
                    Ok(m) => {
                        if let Some(e) = self.on_reply(m)? {
                            return Ok(Some(e));
                        }
                    }
                    Err(_) => break,
                }
            }
            if Instant::now() >= deadline {
                self.usable = false;
                let rows: u64 = self.pending.iter().map(|p| p.1).sum();
                let deferred = self.deferred_text();
                return Err(DriverError::new(
                    ErrorClass::Timeout,
                    format!(
                        "{}: {} QWP messages ({rows} rows) were not acknowledged within {} \
                         (the endpoint's ack_timeout){deferred}",
                        self.shown,
                        self.pending.len(),
                        crate::net::fmt::fmt_duration(self.ack_timeout)
                    ),
                    true,
                ));
            }
            every = (every * 2).min(MAX_PING_EVERY);
        }
    }

    /// The highest sequence every message up to which is acknowledged.
    fn acked_through(&self) -> Option<u64> {
        match self.pending.front() {
            Some(&(first, _, _)) => first.checked_sub(1),
            None => self.next_seq.checked_sub(1),
        }
    }

    /// Handles one thing the server sent. An error status comes back as `Some` (the
    /// connection is then unusable); a lost or broken connection as `Err`.
    fn on_reply(
        &mut self,
        m: Option<Result<Message, tokio_tungstenite::tungstenite::Error>>,
    ) -> Result<Option<DriverError>, DriverError> {
        let m = match m {
            None => return Err(self.lost("the server closed the connection".into())),
            Some(Err(e)) => return Err(self.lost(format!("the connection failed: {e}"))),
            Some(Ok(m)) => m,
        };
        match m {
            Message::Binary(b) => match parse_reply(&b) {
                Ok(Reply::Ok(seq)) => {
                    if seq >= self.next_seq {
                        return Err(self.broken(format!(
                            "the server acknowledged message {seq}, but only {} were sent",
                            self.next_seq
                        )));
                    }
                    while let Some(&(s, rows, commits)) = self.pending.front() {
                        if s > seq {
                            break;
                        }
                        self.acked_rows += self.commits.covered(rows, commits);
                        self.pending.pop_front();
                    }
                    Ok(None)
                }
                Ok(Reply::Durable) => Ok(None),
                Ok(Reply::Error { status, seq, text }) => {
                    self.usable = false;
                    Ok(Some(DriverError::new(
                        ErrorClass::Server,
                        format!(
                            "{}: the server rejected message {seq} with {} (0x{status:02x}): {}",
                            self.shown,
                            status::name(status),
                            crate::net::http::quote_server_text(&text)
                        ),
                        false,
                    )))
                }
                Err(e) => Err(self.broken(format!("a malformed reply: {e}"))),
            },
            Message::Close(frame) => {
                let why = match frame {
                    Some(f) if f.reason.is_empty() => format!(" (code {})", u16::from(f.code)),
                    Some(f) => format!(" (code {}: {})", u16::from(f.code), f.reason),
                    None => String::new(),
                };
                Err(self.lost(format!("the server closed the connection{why}")))
            }
            Message::Text(_) => {
                Err(self.broken("a text message where QWP replies are binary".into()))
            }
            // tungstenite answers PINGs itself; PONGs answer ours.
            Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => Ok(None),
        }
    }

    fn lost(&mut self, what: String) -> DriverError {
        self.usable = false;
        let unacked = self.pending.len();
        DriverError::new(
            ErrorClass::Connection,
            format!(
                "{}: {what}; {unacked} messages sent were not acknowledged{}",
                self.shown,
                self.deferred_text()
            ),
            true,
        )
    }

    /// What a lost connection leaves uncommitted: the rows sent since the last commit an OK
    /// confirmed (deferred ones are rolled back; a commit without its OK may or may not have
    /// been applied).
    fn deferred_text(&self) -> String {
        let pending: u64 = self.pending.iter().map(|p| p.1).sum();
        let unconfirmed = self.commits.uncommitted_ok + pending;
        if unconfirmed == 0 || !(self.commits.defers() || self.commits.open_rows > 0) {
            return String::new();
        }
        format!(
            "; {unconfirmed} rows sent after the last acknowledged commit count as sent, not \
             acknowledged ({} of them in deferred messages (FLAG_DEFER_COMMIT) whose commit was \
             never sent: the server rolls them back)",
            self.commits.open_rows
        )
    }

    fn broken(&mut self, what: String) -> DriverError {
        self.usable = false;
        DriverError::new(ErrorClass::Server, format!("{}: {what}", self.shown), true)
    }

    /// Close 1000, and wait a little for the server's Close.
    async fn close(&mut self) {
        let frame = CloseFrame {
            code: CloseCode::Normal,
            reason: "".into(),
        };
        // A server that stopped reading must not hold the close either.
        match tokio::time::timeout(CLOSE_WAIT, self.ws.close(Some(frame))).await {
            Ok(Ok(())) => {}
            _ => return,
        }
        let deadline = Instant::now() + CLOSE_WAIT;
        while let Ok(Some(Ok(m))) = tokio::time::timeout_at(deadline.into(), self.ws.next()).await {
            if m.is_close() {
                break;
            }
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Reply {
    /// Every message up to this sequence is committed.
    Ok(u64),
    /// Enterprise's durable acknowledgement (not asked for; ignored).
    Durable,
    Error {
        status: u8,
        seq: i64,
        text: String,
    },
}

/// One server reply on the ingest side (no QWP header; the status byte first).
fn parse_reply(b: &[u8]) -> Result<Reply, qwp::Malformed> {
    let mut r = Reader::new(b);
    let code = r.u8()?;
    let reply = match code {
        status::OK => {
            let seq = r.i64()?;
            let tables = r.u16()?;
            for _ in 0..tables {
                let n = r.u16()? as usize;
                r.take(n)?;
                r.i64()?;
            }
            if seq < 0 {
                return Err(r.malformed(format!("OK for sequence {seq}")));
            }
            Reply::Ok(seq as u64)
        }
        status::DURABLE_ACK => {
            let tables = r.u16()?;
            for _ in 0..tables {
                let n = r.u16()? as usize;
                r.take(n)?;
                r.i64()?;
            }
            Reply::Durable
        }
        other => {
            let seq = r.i64()?;
            let n = r.u16()? as usize;
            let text = String::from_utf8_lossy(r.take(n)?).into_owned();
            Reply::Error {
                status: other,
                seq,
                text,
            }
        }
    };
    if !r.is_empty() {
        return Err(r.malformed(format!("{} bytes after the reply", r.remaining())));
    }
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qwp::testing::fixture;

    #[test]
    fn the_real_servers_replies_parse() {
        assert_eq!(
            parse_reply(&fixture("real_server_ack_seq0")),
            Ok(Reply::Ok(0))
        );
        assert_eq!(
            parse_reply(&fixture("real_server_ack_seq1")),
            Ok(Reply::Ok(1))
        );
        assert_eq!(
            parse_reply(&fixture("server_ingress_ok_seq0")),
            Ok(Reply::Ok(0))
        );
        match parse_reply(&fixture("real_server_error_schema_mismatch")).unwrap() {
            Reply::Error { status, seq, text } => {
                assert_eq!((status, seq), (status::SCHEMA_MISMATCH, 2));
                assert_eq!(text, "cannot parse LONG from string [value=oops, column=u]");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn malformed_replies_are_errors() {
        let ok = fixture("real_server_ack_seq1");
        for cut in 0..ok.len() {
            assert!(parse_reply(&ok[..cut]).is_err(), "cut at {cut}");
        }
        let mut trailing = ok.clone();
        trailing.push(0);
        assert!(parse_reply(&trailing).is_err());
        let mut negative = vec![0u8];
        negative.extend_from_slice(&(-1i64).to_le_bytes());
        negative.extend_from_slice(&[0, 0]);
        assert!(parse_reply(&negative).is_err());
    }
}
