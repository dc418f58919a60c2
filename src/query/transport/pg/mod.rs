//! Queries over the PostgreSQL wire protocol (tokio-postgres), in the endpoint's `statements`
//! mode:
//!
//! - `prepared` (the default): each distinct SQL text is prepared once per connection and the
//!   statement kept (at most `MAX_STATEMENTS`; list binds make texts vary, so the cache is
//!   emptied when full). Each bind is converted to the type the server inferred for its
//!   parameter (`Statement::params`): an Int to int2/int4/int8 (range-checked), float4/float8
//!   (when exact) or numeric; a Float to float4/float8 or numeric; a Timestamp to
//!   timestamptz/timestamp (microseconds, as the server stores them) or date (whole days);
//!   a Bool to bool; a Null to a NULL of the parameter's type; a Text to any type, sent in
//!   text format so that the server's input function reads it as it reads a quoted literal
//!   (`'2016-01-01T00:00:00Z'` for a timestamptz, `'42'` for an int4: a text that does not
//!   parse is the server's SQL error). Any other pairing is a `Client` error naming `$n` and
//!   both types, and nothing is sent.
//! - `unnamed`: parse, bind, describe and execute in one round trip, with the parameter types
//!   taken from the bind values (`PARAM_TYPES`): Int as int8, Float as float8, Bool as bool,
//!   Timestamp as timestamptz, all in binary; Text and Null as `unknown` (text format), which
//!   leaves their type to the server exactly as an untyped quoted literal does. So an Int
//!   compares with int2/int4/int8 columns (PostgreSQL's cross-type integer operators, which
//!   indexes serve) and with float and numeric ones (implicit casts), a Timestamp with
//!   timestamptz (and timestamp, in the session's time zone), and a Text with anything a
//!   literal compares with, a timestamptz column included.
//! - `simple`: the simple query protocol, the binds rendered into the SQL as literals
//!   (`query::sql::inline_all`) in the target's dialect.
//!
//! Every row is read (and counted) from a row stream, never collected. Errors carry the
//! server's message and SQLSTATE; a timeout sends the server a cancel request and gives the
//! connection up.
//!
//! Checksums (`set_checksums`, docs/checksum.md §3.1): in `prepared` and `unnamed` modes each
//! value is decoded from the binary row format by its column's type (`ColKind`): int2/4/8 and
//! oid, float4/8, numeric (decoded from its base-10000 digits: exact when whole and in i64,
//! else via the text PostgreSQL would print), bool, text-like types (text, varchar, name,
//! "char", json, jsonb, xml, enums, citext), char(n) without its trailing blanks,
//! timestamp/timestamptz, date and uuid; any other type is a `Client` error naming the column
//! and its type. In `simple` mode the rows are text and tokio-postgres keeps no column types,
//! so the statement is first described (Parse/Describe of the inlined SQL: one more round
//! trip, only with checksums) and each text is read by its column's type; other types are
//! hashed as their text.
//!
//! Files: `params` converts binds for the extended protocol, `checksums` reads result values
//! for the checksum; this file runs the statements in each mode and maps errors.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio_postgres::error::DbError;
use tokio_postgres::types::Type;
use tokio_postgres::{SimpleQueryMessage, Statement};

mod checksums;
mod params;

use super::{client_error, from_driver, timeout_error, Timeouts};
use crate::net::pg::{connect, push_db_details, Conn};
use crate::net::tls::Connector;
use crate::plan::EndpointPlan;
use crate::query::sql::{inline_all, Dialect};
use crate::query::streaming::Streamed;
use crate::query::{Instance, Outcome, QueryError, QueryErrorClass};
use crate::value::Value;
use checksums::ResultSum;
use params::{convert_params, typed_param, BindError, Param};

/// Statements kept per connection in `prepared` mode before the cache is emptied.
pub const MAX_STATEMENTS: usize = 1024;

/// How long a cancel request sent after a timeout may take, in the background.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

/// The endpoint's `statements` option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatementMode {
    Prepared,
    Unnamed,
    Simple,
}

impl StatementMode {
    pub fn of(endpoint: &EndpointPlan) -> Result<StatementMode, String> {
        let word = match endpoint.options.get("statements") {
            None | Some(Value::None) => return Ok(StatementMode::Prepared),
            Some(Value::Symbol(w)) => w.clone(),
            Some(Value::Str(t)) => t.as_lit().unwrap_or_default(),
            Some(other) => other.to_string(),
        };
        match word.as_str() {
            "prepared" => Ok(StatementMode::Prepared),
            "unnamed" => Ok(StatementMode::Unnamed),
            "simple" => Ok(StatementMode::Simple),
            _ => Err(format!(
                "option `statements`: `{word}` is not prepared, unnamed or simple"
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            StatementMode::Prepared => "prepared",
            StatementMode::Unnamed => "unnamed",
            StatementMode::Simple => "simple",
        }
    }
}

/// One PostgreSQL connection of a query worker.
pub struct PgTransport {
    conn: Conn,
    mode: StatementMode,
    dialect: Dialect,
    /// `prepared` mode: the statements of this connection, by SQL text.
    statements: HashMap<Arc<str>, Statement>,
    /// Compute each result's checksum (`Transport::set_checksums`).
    checksums: bool,
    /// How the last query's result arrived (`query::streaming`): a piece is a DataRow.
    streamed: Streamed,
}

impl PgTransport {
    pub async fn connect(
        endpoint: &EndpointPlan,
        url: &str,
        connector: &Connector,
        timeouts: Timeouts,
    ) -> Result<PgTransport, QueryError> {
        let mode = StatementMode::of(endpoint).map_err(|e| QueryError {
            class: QueryErrorClass::Client,
            message: format!("endpoint {}.{}: {e}", endpoint.target, endpoint.name),
            code: None,
            broken: true,
        })?;
        let conn = connect(endpoint, url, connector, timeouts.connect, timeouts.query)
            .await
            .map_err(|e| QueryError {
                broken: true,
                ..from_driver(e)
            })?;
        Ok(PgTransport {
            conn,
            mode,
            dialect: Dialect::of_endpoint(&endpoint.kind, &endpoint.dialect),
            statements: HashMap::new(),
            checksums: false,
            streamed: Streamed::default(),
        })
    }

    /// Whether `run` computes the result's checksum (off by default).
    pub fn set_checksums(&mut self, on: bool) {
        self.checksums = on;
    }

    pub fn mode(&self) -> StatementMode {
        self.mode
    }

    /// Statements prepared on this connection and kept.
    pub fn prepared_statements(&self) -> usize {
        self.statements.len()
    }

    /// How the last query's result arrived: its first DataRow, and the socket bytes read from
    /// its send (a statement's first preparation on this connection included) to its end.
    pub fn streamed(&self) -> Streamed {
        self.streamed
    }

    /// Socket bytes read so far on this connection (0 over a Unix socket).
    fn read_bytes(&self) -> u64 {
        self.conn.socket.as_ref().map_or(0, |c| c.read())
    }

    /// Sends `inst` and reads every row of its result, within the endpoint's timeout.
    pub async fn run(&mut self, inst: &Instance) -> Result<Outcome, QueryError> {
        let timeout = self.conn.timeout;
        self.streamed = Streamed::start();
        let before = self.read_bytes();
        match tokio::time::timeout(timeout, self.exec(inst, before)).await {
            Ok(result) => {
                if result.is_ok() {
                    let bytes = self.conn.socket.as_ref().map(|c| c.read() - before);
                    self.streamed.end(bytes);
                }
                result
            }
            Err(_) => {
                self.cancel();
                Err(timeout_error(&self.conn.label, timeout))
            }
        }
    }

    async fn exec(&mut self, inst: &Instance, before: u64) -> Result<Outcome, QueryError> {
        match self.mode {
            StatementMode::Prepared => self.exec_prepared(inst, before).await,
            StatementMode::Unnamed => self.exec_unnamed(inst, before).await,
            StatementMode::Simple => self.exec_simple(inst, before).await,
        }
    }

    async fn exec_prepared(&mut self, inst: &Instance, before: u64) -> Result<Outcome, QueryError> {
        let stmt = match self.statements.get(&*inst.sql) {
            Some(s) => s.clone(),
            None => {
                let s = self
                    .conn
                    .client
                    .prepare(&inst.sql)
                    .await
                    .map_err(|e| self.error(&e))?;
                if self.statements.len() >= MAX_STATEMENTS {
                    // Dropping a statement sends its Close.
                    self.statements.clear();
                }
                self.statements.insert(inst.sql.clone(), s.clone());
                s
            }
        };
        let params = convert_params(&inst.binds, stmt.params())?;
        let rows = self
            .conn
            .client
            .query_raw(&stmt, params.iter())
            .await
            .map_err(|e| self.error(&e))?;
        self.drain(rows, before).await
    }

    async fn exec_unnamed(&mut self, inst: &Instance, before: u64) -> Result<Outcome, QueryError> {
        let params: Vec<(Param, Type)> = inst.binds.iter().map(typed_param).collect();
        let rows = self
            .conn
            .client
            .query_typed_raw(&inst.sql, params.iter().map(|(p, t)| (p, t.clone())))
            .await
            .map_err(|e| self.error(&e))?;
        self.drain(rows, before).await
    }

    async fn exec_simple(&mut self, inst: &Instance, before: u64) -> Result<Outcome, QueryError> {
        let sql = if inst.binds.is_empty() {
            inst.sql.to_string()
        } else {
            inline_all(&inst.sql, &inst.binds, self.dialect).map_err(client_error)?
        };
        // The simple protocol's rows are text, and tokio-postgres keeps no column types from
        // its RowDescription: for a checksum, the statement is described first (one more
        // round trip, paid only when checksums are on).
        let described = if self.checksums {
            Some(
                self.conn
                    .client
                    .prepare(&sql)
                    .await
                    .map_err(|e| self.error(&e)),
            )
        } else {
            None
        };
        let mut sum = match &described {
            Some(Ok(stmt)) => Some(ResultSum::of_columns(stmt.columns())),
            _ => None,
        };
        let stream = self
            .conn
            .client
            .simple_query_raw(&sql)
            .await
            .map_err(|e| self.error(&e))?;
        let mut stream = pin!(stream);
        let mut rows = 0u64;
        let mut affected = None;
        while let Some(m) = stream.next().await {
            match m.map_err(|e| self.error(&e))? {
                SimpleQueryMessage::CommandComplete(n) => affected = Some(n),
                SimpleQueryMessage::Row(row) => {
                    rows += 1;
                    self.streamed.piece(1, self.read_bytes() - before);
                    if let Some(s) = &mut sum {
                        s.text_row(&row)?;
                    }
                }
                SimpleQueryMessage::RowDescription(columns) => {
                    if let Some(s) = &sum {
                        s.check_width(columns.len())?;
                    }
                }
                _ => {}
            }
        }
        match described {
            // The query ran, but its columns could not be described (several statements in
            // one text, ...): no checksum can be computed for it.
            Some(Err(e)) => Err(client_error(format!(
                "checksum: the result's column types are unknown: describing the statement \
                 failed: {e}"
            ))),
            _ => Ok(Outcome {
                rows,
                checksum: sum.map(|s| s.hasher.finish()),
                affected,
            }),
        }
    }

    async fn drain(
        &mut self,
        rows: tokio_postgres::RowStream,
        before: u64,
    ) -> Result<Outcome, QueryError> {
        let mut rows = pin!(rows);
        let mut n = 0u64;
        let mut sum: Option<ResultSum> = None;
        while let Some(r) = rows.next().await {
            let row = r.map_err(|e| self.error(&e))?;
            self.streamed.piece(1, self.read_bytes() - before);
            if self.checksums {
                sum.get_or_insert_with(|| ResultSum::of_columns(row.columns()))
                    .binary_row(&row)?;
            }
            n += 1;
        }
        Ok(Outcome {
            rows: n,
            checksum: self.checksums.then(|| sum.map_or(0, |s| s.hasher.finish())),
            // The CommandComplete tag's count, read once the stream has ended.
            affected: rows.rows_affected(),
        })
    }

    /// A tokio-postgres error in the query runner's classes: a server error on a live
    /// session is `Sql` with its SQLSTATE; one that ends the session (FATAL, PANIC, as when
    /// the backend is terminated) and a lost connection are `Connection`, broken; a value
    /// tokio-postgres could not encode is `Client`.
    fn error(&self, e: &tokio_postgres::Error) -> QueryError {
        let closed = self.conn.client.is_closed();
        if let Some(db) = e.as_db_error() {
            let ends_session = matches!(db.severity(), "FATAL" | "PANIC");
            let mut message = db_message(db);
            if ends_session || closed {
                message = format!("{}: {message}", self.conn.label);
            }
            return QueryError {
                class: if ends_session {
                    QueryErrorClass::Connection
                } else {
                    QueryErrorClass::Sql
                },
                message,
                code: Some(db.code().code().to_string()),
                broken: ends_session || closed,
            };
        }
        if let Some(c) = StdError::source(e).and_then(|c| c.downcast_ref::<BindError>()) {
            return client_error(c.0.clone());
        }
        let mut err = from_driver(self.conn.error(e));
        err.broken |= closed;
        if err.class == QueryErrorClass::HttpStatus {
            // `Server` for a non-database error does not happen; if it did, it is the SQL's.
            err.class = QueryErrorClass::Sql;
        }
        err
    }

    /// Asks the server, in the background, to cancel what this connection is running: a
    /// query that ran past its timeout should not keep the server busy.
    fn cancel(&self) {
        // Through net::pg: the session's socket was opened by wlrun (for TLS), so
        // tokio-postgres's own cancel does not know the host.
        let cancel = self.conn.canceller();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(CANCEL_WAIT, cancel.send()).await;
        });
    }
}

/// The server's message, with the detail and hint it gave; the SQLSTATE goes in `code`.
fn db_message(db: &DbError) -> String {
    let mut out = db.message().to_string();
    push_db_details(&mut out, db);
    out
}

/// Microseconds from the Unix epoch to PostgreSQL's, 2000-01-01T00:00:00Z.
const PG_EPOCH_US: i64 = 946_684_800_000_000;
/// Days from the Unix epoch to PostgreSQL's.
const PG_EPOCH_DAYS: i64 = 10_957;

#[cfg(test)]
mod tests;
