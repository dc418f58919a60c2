//! PostgreSQL ingest: binary `COPY ... FROM STDIN` (the default), or `INSERT` with one array
//! per column (`insert insert` on the endpoint).
//!
//! Both carry values in PostgreSQL's binary wire format, written by one column writer
//! (`write_column`): int8/int4/int2, float8/float4, bool and timestamptz big-endian, text as
//! its UTF-8 bytes, uuid as 16 bytes. The COPY stream (`CopyEncoder`) is made by the worker's
//! producer before the send's clock starts; the INSERT arrays are built in `send`, since the
//! `Rows` encoding leaves binding to the driver.
//!
//! COPY: one `COPY "table" ("c1", ...) FROM STDIN (FORMAT binary)` per chunk, prepared once
//! per connection, the chunk's bytes in one CopyData message; the server's CommandComplete
//! acknowledges the rows. INSERT: `INSERT INTO "table" (...) SELECT * FROM unnest($1::int8[],
//! ...)`, prepared once, one array parameter per column: a single statement per chunk,
//! whatever its size (a `VALUES` list would need a parameter per value and hit the protocol's
//! 65,535-parameter limit), committed on its own.
//!
//! Files: `binary` writes columns in the binary format, `copy` the COPY stream, `insert` the
//! INSERT arrays; this file holds the connection (`PgWriter`) and the statements' text.

use std::fmt::Write as _;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures_util::SinkExt;
use tokio_postgres::Statement;

mod binary;
mod copy;
mod insert;

pub use copy::CopyEncoder;

use super::{Chunk, DriverConfig, Encoding, Sent};
use crate::net::error::{DriverError, ErrorClass};
use crate::net::pg::{connect, Conn};
use crate::net::sql_text::push_ident;
use crate::plan::EndpointPlan;
use crate::value::Value;
use binary::{fields, Field};
use insert::Arrays;

/// The encoding a `pg` endpoint's producer prepares: binary COPY unless the endpoint says
/// `insert insert`.
pub fn encoding(endpoint: &EndpointPlan) -> Encoding {
    let word = match endpoint.options.get("insert") {
        Some(Value::Symbol(w)) => Some(w.clone()),
        Some(Value::Str(t)) => t.as_lit(),
        _ => None,
    };
    if word.as_deref() == Some("insert") {
        Encoding::Rows
    } else {
        Encoding::PgCopy
    }
}

/// Framing bytes of the extended-protocol messages a send writes, for `Sent::socket_bytes`.
/// tokio-postgres names prepared statements `s<n>` with a process-wide counter it does not
/// expose; the name is counted as `STATEMENT_NAME` bytes, which is exact for `s10` to `s99`
/// and off by a byte or two otherwise.
const STATEMENT_NAME: u64 = 3;
/// Bind without the parameters: type byte, length, empty portal name, the statement's name
/// and its terminator, the parameter-format count, the parameter count, one result format.
const BIND: u64 = 1 + 4 + 1 + STATEMENT_NAME + 1 + 2 + 2 + 2 + 2;
/// Execute (type, length, empty portal name, row limit) and Sync (type, length).
const EXECUTE_SYNC: u64 = (1 + 4 + 1 + 4) + (1 + 4);
/// A message's type byte and length word: what CopyData, CopyDone and Sync add.
const HEADER: u64 = 5;
/// Terminate, which closing the session writes.
const TERMINATE: u64 = 5;
/// Close of a prepared statement and its Sync, written when the statement is dropped.
const CLOSE_SYNC: u64 = (1 + 4 + 1 + STATEMENT_NAME + 1) + 5;

enum Mode {
    Copy { staging: BytesMut },
    Insert(Box<Arrays>),
}

/// One worker's PostgreSQL connection.
pub struct PgWriter {
    /// `None` once `finish` has closed it.
    conn: Option<Conn>,
    mode: Mode,
    table: String,
    /// The COPY or INSERT statement's text.
    sql: String,
    /// The prepared statement; prepared at connect, and again after a failed attempt.
    statement: Option<Statement>,
}

impl PgWriter {
    /// Connects to the endpoint and prepares the chunk statement. A statement the server
    /// refuses to prepare (a missing table) is not a connect failure: each send tries again
    /// and reports the server's error.
    pub async fn connect(cfg: &DriverConfig) -> Result<PgWriter, DriverError> {
        let endpoint = format!("{}.{}", cfg.endpoint.target, cfg.endpoint.name);
        let url = cfg
            .url
            .as_deref()
            .ok_or_else(|| DriverError::connect(&endpoint, "the endpoint has no URL"))?;
        let fields =
            fields(&cfg.schema).map_err(|e| DriverError::new(ErrorClass::Encode, e, true))?;
        let mode = match encoding(&cfg.endpoint) {
            Encoding::Rows => Mode::Insert(Box::new(
                Arrays::new(Arc::clone(&cfg.schema))
                    .map_err(|e| DriverError::new(ErrorClass::Encode, e, true))?,
            )),
            _ => Mode::Copy {
                staging: BytesMut::new(),
            },
        };
        let sql = match mode {
            Mode::Copy { .. } => copy_sql(&cfg.table, &fields),
            Mode::Insert(_) => insert_sql(&cfg.table, &fields),
        };
        let connector = cfg.connector()?;
        let conn = connect(
            &cfg.endpoint,
            url,
            &connector,
            cfg.connect_timeout,
            cfg.timeout,
        )
        .await?;
        let mut w = PgWriter {
            conn: Some(conn),
            mode,
            table: cfg.table.clone(),
            sql,
            statement: None,
        };
        match w.prepare().await {
            Ok(_) => Ok(w),
            Err(e) if !e.fatal => Ok(w),
            Err(e) => Err(e),
        }
    }

    /// The chunk statement, prepared now if it is not yet; returns the bytes preparing wrote.
    async fn prepare(&mut self) -> Result<u64, DriverError> {
        if self.statement.is_some() {
            return Ok(0);
        }
        let conn = self.conn.as_ref().ok_or_else(finished)?;
        let sql = &self.sql;
        let table = &self.table;
        let st = conn
            .wait(
                || format!("preparing the statement for {table:?}"),
                conn.client.prepare(sql),
            )
            .await?;
        self.statement = Some(st);
        // Parse (name, query, no parameter types), Describe (statement), Sync.
        let parse = 1 + 4 + STATEMENT_NAME + 1 + sql.len() as u64 + 1 + 2;
        let describe = 1 + 4 + 1 + STATEMENT_NAME + 1;
        Ok(parse + describe + HEADER)
    }

    /// Sends one chunk and waits for the server to confirm it.
    ///
    /// A server error (a constraint, a value the column rejects) is not fatal: the session is
    /// usable for the next chunk. Except one: a COPY the server refuses before it starts
    /// reading data (a missing table or column, no permission) leaves tokio-postgres 0.7 out
    /// of step with the server (it has sent two Syncs and receives two ReadyForQuery,
    /// rust-postgres/rust-postgres#789), so the connection cannot go on and the error is
    /// fatal.
    ///
    /// `socket_bytes` counts the payload and the framing of every message the send writes
    /// (Bind, Execute, Sync; for COPY also CopyData, CopyDone and the second Sync; the
    /// Parse/Describe/Sync of a statement prepared during the send), not TCP/IP overhead.
    /// Under TLS it is what the socket wrote during the send, TLS records included.
    ///
    /// A send whose answer timed out abandons the session: its Terminate would queue behind
    /// the answer that never came, and `finish` would wait a second timeout for nothing.
    pub async fn send(&mut self, chunk: &Chunk) -> Result<Sent, DriverError> {
        let sent = self.send_chunk(chunk).await;
        if sent.as_ref().is_err_and(|e| e.class == ErrorClass::Timeout) {
            self.statement = None;
            if let Some(conn) = self.conn.take() {
                conn.abandon();
            }
        }
        sent
    }

    async fn send_chunk(&mut self, chunk: &Chunk) -> Result<Sent, DriverError> {
        if chunk.rows == 0 {
            return Ok(Sent {
                socket_bytes: 0,
                acked: true,
            });
        }
        // Under TLS the socket's own count: records and handshake traffic are not framing.
        let measured = self
            .conn
            .as_ref()
            .and_then(|c| c.counters.clone())
            .map(|c| (c.written(), c));
        let prepared = self.prepare().await?;
        let conn = self.conn.as_ref().ok_or_else(finished)?;
        let Some(statement) = &self.statement else {
            return Err(DriverError::new(
                ErrorClass::Connection,
                "no prepared statement after preparing",
                true,
            ));
        };
        let table = &self.table;
        let (stored, written) = match &mut self.mode {
            Mode::Copy { staging } => {
                // Into a buffer tokio-postgres may keep until the socket write: the bytes go
                // out after this call returns, and the staging allocation comes back once
                // they have been written and the `Bytes` dropped.
                staging.reserve(chunk.bytes.len());
                staging.extend_from_slice(&chunk.bytes);
                let data: Bytes = staging.split().freeze();
                let payload = data.len() as u64;
                let sink = conn
                    .wait(
                        || format!("starting COPY into {table:?}"),
                        conn.client.copy_in::<_, Bytes>(statement),
                    )
                    .await
                    .map_err(|mut e| {
                        if e.class == ErrorClass::Server {
                            e.fatal = true;
                            e.message.push_str(
                                " (the COPY did not start; the connection cannot be reused)",
                            );
                        }
                        e
                    })?;
                // The data follows in one CopyData message: once the session has written that
                // much more, the rows are out, whatever happens to the answer.
                let data_out = DataOut::mark(conn, HEADER + payload);
                let mut sink = pin!(sink);
                conn.wait(
                    || format!("sending COPY data into {table:?}"),
                    sink.as_mut().send(data),
                )
                .await
                .map_err(|e| data_out.judge(e))?;
                let stored = conn
                    .wait(
                        || format!("completing COPY into {table:?}"),
                        sink.as_mut().finish(),
                    )
                    .await
                    .map_err(|e| data_out.judge(e))?;
                let framing = BIND + EXECUTE_SYNC + HEADER + HEADER + HEADER;
                (stored, payload + framing)
            }
            Mode::Insert(arrays) => {
                arrays
                    .fill(&chunk.batch)
                    .map_err(|e| DriverError::new(ErrorClass::Encode, e, false))?;
                // The rows are in the Bind. Its statement name's length is only known to
                // within a few bytes (STATEMENT_NAME), so the mark is the whole request with
                // the shortest name, `s0`: never past its end, and past the Bind's for any
                // name up to 17 characters.
                let bound = BIND + arrays.bind_bytes() + EXECUTE_SYNC - (STATEMENT_NAME - 2);
                let data_out = DataOut::mark(conn, bound);
                let stored = conn
                    .wait(
                        || format!("INSERT into {table:?}"),
                        conn.client.execute_raw(statement, arrays.params()),
                    )
                    .await
                    .map_err(|e| data_out.judge(e))?;
                (stored, BIND + arrays.bind_bytes() + EXECUTE_SYNC)
            }
        };
        if stored != chunk.rows {
            return Err(DriverError::new(
                ErrorClass::Server,
                format!(
                    "{}: the server stored {stored} rows of a chunk of {} into {table:?}",
                    conn.label, chunk.rows
                ),
                false,
            ));
        }
        let socket_bytes = match measured {
            Some((before, c)) => c.written().saturating_sub(before),
            None => prepared + written,
        };
        Ok(Sent {
            socket_bytes,
            acked: true,
        })
    }

    /// Closes the session: the prepared statement's Close, then Terminate. Returns the bytes
    /// those wrote (under TLS, what the socket wrote, close_notify included); 0 when already
    /// closed.
    pub async fn finish(&mut self) -> Result<u64, DriverError> {
        let Some(conn) = self.conn.take() else {
            return Ok(0);
        };
        let measured = conn.counters.clone().map(|c| (c.written(), c));
        let closed = if self.statement.take().is_some() {
            CLOSE_SYNC
        } else {
            0
        };
        conn.close().await?;
        Ok(match measured {
            Some((before, c)) => c.written().saturating_sub(before),
            None => closed + TERMINATE,
        })
    }
}

/// Where a session's count of bytes out stood before a message of `len` bytes, to tell
/// whether the message was written whole when its answer fails to come.
struct DataOut {
    out: Option<Arc<AtomicU64>>,
    from: u64,
    len: u64,
}

impl DataOut {
    fn mark(conn: &Conn, len: u64) -> DataOut {
        let out = conn.out.clone();
        let from = out.as_ref().map_or(0, |o| o.load(Ordering::Relaxed));
        DataOut { out, from, len }
    }

    /// `e`, marked `written` when the message had gone out whole: a COPY or INSERT whose
    /// answer timed out or whose connection closed after its rows were written sent them (the
    /// server may well have committed them).
    fn judge(&self, mut e: DriverError) -> DriverError {
        if let Some(out) = &self.out {
            e.written |= out.load(Ordering::Relaxed).saturating_sub(self.from) >= self.len;
        }
        e
    }
}

fn finished() -> DriverError {
    DriverError::new(
        ErrorClass::Connection,
        "the PostgreSQL connection was already closed by finish",
        true,
    )
}

/// `COPY "table" ("c1", ...) FROM STDIN (FORMAT binary)`.
fn copy_sql(table: &str, fields: &[Field]) -> String {
    let mut sql = String::from("COPY ");
    push_ident(&mut sql, table);
    push_columns(&mut sql, fields);
    sql.push_str(" FROM STDIN (FORMAT binary)");
    sql
}

/// `INSERT INTO "table" ("c1", ...) SELECT * FROM unnest($1::int8[], ...)`.
fn insert_sql(table: &str, fields: &[Field]) -> String {
    let mut sql = String::from("INSERT INTO ");
    push_ident(&mut sql, table);
    push_columns(&mut sql, fields);
    sql.push_str(" SELECT * FROM unnest(");
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        let _ = write!(sql, "${}::{}[]", i + 1, f.wire.name());
    }
    sql.push(')');
    sql
}

fn push_columns(sql: &mut String, fields: &[Field]) {
    sql.push_str(" (");
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        push_ident(sql, &f.name);
    }
    sql.push(')');
}

#[cfg(test)]
mod tests;
