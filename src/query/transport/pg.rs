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

use std::collections::HashMap;
use std::error::Error as StdError;
use std::fmt::Write as _;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use futures_util::StreamExt;
use tokio_postgres::error::DbError;
use tokio_postgres::types::{Format, IsNull, ToSql, Type};
use tokio_postgres::{NoTls, SimpleQueryMessage, Statement};

use super::{client_error, from_driver, timeout_error, Timeouts};
use crate::client::pg::{connect, Conn};
use crate::plan::EndpointPlan;
use crate::query::sql::{inline_all, Dialect};
use crate::query::{BindValue, Instance, Outcome, QueryError, QueryErrorClass};
use crate::value::Value;

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
}

impl PgTransport {
    pub async fn connect(
        endpoint: &EndpointPlan,
        url: &str,
        timeouts: Timeouts,
    ) -> Result<PgTransport, QueryError> {
        let mode = StatementMode::of(endpoint).map_err(|e| QueryError {
            class: QueryErrorClass::Client,
            message: format!("endpoint {}.{}: {e}", endpoint.target, endpoint.name),
            code: None,
            broken: true,
        })?;
        let conn = connect(endpoint, url, timeouts.connect, timeouts.query)
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
        })
    }

    pub fn mode(&self) -> StatementMode {
        self.mode
    }

    /// Statements prepared on this connection and kept.
    pub fn prepared_statements(&self) -> usize {
        self.statements.len()
    }

    /// Sends `inst` and reads every row of its result, within the endpoint's timeout.
    pub async fn run(&mut self, inst: &Instance) -> Result<Outcome, QueryError> {
        let timeout = self.conn.timeout;
        match tokio::time::timeout(timeout, self.exec(inst)).await {
            Ok(result) => result,
            Err(_) => {
                self.cancel();
                Err(timeout_error(&self.conn.label, timeout))
            }
        }
    }

    async fn exec(&mut self, inst: &Instance) -> Result<Outcome, QueryError> {
        match self.mode {
            StatementMode::Prepared => self.exec_prepared(inst).await,
            StatementMode::Unnamed => self.exec_unnamed(inst).await,
            StatementMode::Simple => self.exec_simple(inst).await,
        }
    }

    async fn exec_prepared(&mut self, inst: &Instance) -> Result<Outcome, QueryError> {
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
        self.drain(rows).await
    }

    async fn exec_unnamed(&mut self, inst: &Instance) -> Result<Outcome, QueryError> {
        let params: Vec<(Param, Type)> = inst.binds.iter().map(typed_param).collect();
        let rows = self
            .conn
            .client
            .query_typed_raw(&inst.sql, params.iter().map(|(p, t)| (p, t.clone())))
            .await
            .map_err(|e| self.error(&e))?;
        self.drain(rows).await
    }

    async fn exec_simple(&mut self, inst: &Instance) -> Result<Outcome, QueryError> {
        let sql = if inst.binds.is_empty() {
            inst.sql.to_string()
        } else {
            inline_all(&inst.sql, &inst.binds, self.dialect).map_err(client_error)?
        };
        let stream = self
            .conn
            .client
            .simple_query_raw(&sql)
            .await
            .map_err(|e| self.error(&e))?;
        let mut stream = pin!(stream);
        let mut rows = 0u64;
        while let Some(m) = stream.next().await {
            if let SimpleQueryMessage::Row(_) = m.map_err(|e| self.error(&e))? {
                rows += 1;
            }
        }
        Ok(Outcome { rows })
    }

    async fn drain(&self, rows: tokio_postgres::RowStream) -> Result<Outcome, QueryError> {
        let mut rows = pin!(rows);
        let mut n = 0u64;
        while let Some(r) = rows.next().await {
            r.map_err(|e| self.error(&e))?;
            n += 1;
        }
        Ok(Outcome { rows: n })
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
        let token = self.conn.client.cancel_token();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(CANCEL_WAIT, token.cancel_query(NoTls)).await;
        });
    }
}

/// The server's message, with the detail and hint it gave; the SQLSTATE goes in `code`.
fn db_message(db: &DbError) -> String {
    let mut out = db.message().to_string();
    if let Some(d) = db.detail() {
        let _ = write!(out, "; detail: {d}");
    }
    if let Some(h) = db.hint() {
        let _ = write!(out, "; hint: {h}");
    }
    if let Some(w) = db.where_() {
        let _ = write!(out, "; where: {w}");
    }
    out
}

// ------------------------------------------------------------------------------------------------
// Parameters

/// Microseconds from the Unix epoch to PostgreSQL's, 2000-01-01T00:00:00Z.
const PG_EPOCH_US: i64 = 946_684_800_000_000;
/// Days from the Unix epoch to PostgreSQL's.
const PG_EPOCH_DAYS: i64 = 10_957;
const NS_PER_DAY: i64 = 86_400_000_000_000;

/// A bind value ready for the wire, in the type it is sent as.
#[derive(Clone, Debug, PartialEq)]
enum Param {
    Null,
    Bool(bool),
    Int2(i16),
    Int4(i32),
    Int8(i64),
    Float4(f32),
    Float8(f64),
    /// timestamptz or timestamp: microseconds since 2000-01-01.
    Micros(i64),
    /// date: days since 2000-01-01.
    Days(i32),
    /// Text format: the server's input function for the parameter's type reads it.
    Text(String),
}

/// Why a value could not be encoded; never produced by `Param` itself (conversions happen
/// before), kept so that such a failure would still be a `Client` error.
#[derive(Debug)]
struct BindError(String);

impl std::fmt::Display for BindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl StdError for BindError {}

impl ToSql for Param {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn StdError + Sync + Send>> {
        match self {
            Param::Null => return Ok(IsNull::Yes),
            Param::Bool(b) => out.put_u8(u8::from(*b)),
            Param::Int2(v) => out.put_i16(*v),
            Param::Int4(v) => out.put_i32(*v),
            Param::Int8(v) => out.put_i64(*v),
            Param::Float4(v) => out.put_f32(*v),
            Param::Float8(v) => out.put_f64(*v),
            Param::Micros(v) => out.put_i64(*v),
            Param::Days(v) => out.put_i32(*v),
            Param::Text(s) => {
                if s.len() > i32::MAX as usize {
                    return Err(Box::new(BindError("a text bind longer than 2 GiB".into())));
                }
                out.put_slice(s.as_bytes());
            }
        }
        Ok(IsNull::No)
    }

    /// Every conversion is decided before sending (`convert`, `typed_param`).
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

/// The kind of a bind value, for messages.
fn kind(v: &BindValue) -> String {
    match v {
        BindValue::Null => "NULL".to_string(),
        BindValue::Int(n) => format!("int {n}"),
        BindValue::Float(f) => format!("float {f}"),
        BindValue::Bool(b) => format!("bool {b}"),
        BindValue::Text(s) => {
            let short: String = s.chars().take(40).collect();
            let more = if short.len() < s.len() { "..." } else { "" };
            format!("text {short:?}{more}")
        }
        BindValue::Timestamp(ns) => format!("timestamp {}", crate::value::fmt_timestamp(*ns)),
    }
}

/// `binds` as the parameters `types` of a prepared statement.
fn convert_params(binds: &[BindValue], types: &[Type]) -> Result<Vec<Param>, QueryError> {
    if binds.len() != types.len() {
        return Err(client_error(format!(
            "the statement has {} parameter(s) but the query gives {} bind value(s)",
            types.len(),
            binds.len()
        )));
    }
    binds
        .iter()
        .zip(types)
        .enumerate()
        .map(|(i, (v, ty))| {
            convert(v, ty).map_err(|why| {
                client_error(format!(
                    "${}: {} does not fit the parameter's type {}{why}",
                    i + 1,
                    kind(v),
                    ty.name()
                ))
            })
        })
        .collect()
}

/// One bind as a parameter of type `ty`; `Err` holds an explanation (may be empty).
fn convert(v: &BindValue, ty: &Type) -> Result<Param, String> {
    let range = |what: &str| format!(" (out of range for {what})");
    match v {
        BindValue::Null => Ok(Param::Null),
        BindValue::Text(s) => Ok(Param::Text(s.clone())),
        BindValue::Bool(b) if *ty == Type::BOOL => Ok(Param::Bool(*b)),
        BindValue::Int(n) => match *ty {
            Type::INT8 => Ok(Param::Int8(*n)),
            Type::INT4 => i32::try_from(*n)
                .map(Param::Int4)
                .map_err(|_| range("int4")),
            Type::INT2 => i16::try_from(*n)
                .map(Param::Int2)
                .map_err(|_| range("int2")),
            Type::FLOAT8 => {
                let f = *n as f64;
                if f as i128 == i128::from(*n) {
                    Ok(Param::Float8(f))
                } else {
                    Err(" (not exact as float8)".to_string())
                }
            }
            Type::FLOAT4 => {
                let f = *n as f32;
                if f as i128 == i128::from(*n) {
                    Ok(Param::Float4(f))
                } else {
                    Err(" (not exact as float4)".to_string())
                }
            }
            Type::NUMERIC => Ok(Param::Text(n.to_string())),
            _ => Err(String::new()),
        },
        BindValue::Float(f) => match *ty {
            Type::FLOAT8 => Ok(Param::Float8(*f)),
            Type::FLOAT4 => Ok(Param::Float4(*f as f32)),
            Type::NUMERIC => Ok(Param::Text(numeric_text(*f))),
            _ => Err(String::new()),
        },
        BindValue::Timestamp(ns) => match *ty {
            Type::TIMESTAMPTZ | Type::TIMESTAMP => Ok(Param::Micros(
                ns.div_euclid(1_000).saturating_sub(PG_EPOCH_US),
            )),
            Type::DATE => {
                if ns.rem_euclid(NS_PER_DAY) == 0 {
                    // An i64 of nanoseconds spans ~106,000 days: always an i32.
                    i32::try_from(ns.div_euclid(NS_PER_DAY) - PG_EPOCH_DAYS)
                        .map(Param::Days)
                        .map_err(|_| range("date"))
                } else {
                    Err(" (a date takes whole days only)".to_string())
                }
            }
            _ => Err(String::new()),
        },
        BindValue::Bool(_) => Err(String::new()),
    }
}

/// A float as numeric input text.
fn numeric_text(f: f64) -> String {
    if f.is_nan() {
        "NaN".to_string()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
    } else {
        let mut b = ryu::Buffer::new();
        b.format_finite(f).to_string()
    }
}

/// `unnamed` mode: a bind as a parameter whose type the bind value decides (see the module
/// documentation for why these types).
fn typed_param(v: &BindValue) -> (Param, Type) {
    match v {
        BindValue::Null => (Param::Null, Type::UNKNOWN),
        BindValue::Int(n) => (Param::Int8(*n), Type::INT8),
        BindValue::Float(f) => (Param::Float8(*f), Type::FLOAT8),
        BindValue::Bool(b) => (Param::Bool(*b), Type::BOOL),
        BindValue::Text(s) => (Param::Text(s.clone()), Type::UNKNOWN),
        BindValue::Timestamp(ns) => (
            Param::Micros(ns.div_euclid(1_000).saturating_sub(PG_EPOCH_US)),
            Type::TIMESTAMPTZ,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints_fit_integer_float_and_numeric_parameters() {
        let v = BindValue::Int(300);
        assert_eq!(convert(&v, &Type::INT8), Ok(Param::Int8(300)));
        assert_eq!(convert(&v, &Type::INT4), Ok(Param::Int4(300)));
        assert_eq!(convert(&v, &Type::INT2), Ok(Param::Int2(300)));
        assert_eq!(convert(&v, &Type::FLOAT8), Ok(Param::Float8(300.0)));
        assert_eq!(convert(&v, &Type::NUMERIC), Ok(Param::Text("300".into())));
        assert!(convert(&BindValue::Int(1 << 40), &Type::INT4)
            .unwrap_err()
            .contains("out of range"));
        assert!(convert(&BindValue::Int((1 << 53) + 1), &Type::FLOAT8).is_err());
        assert!(convert(&v, &Type::TEXT).is_err());
        assert!(convert(&v, &Type::BOOL).is_err());
    }

    #[test]
    fn floats_bools_timestamps_and_nulls() {
        assert_eq!(
            convert(&BindValue::Float(1.5), &Type::FLOAT4),
            Ok(Param::Float4(1.5))
        );
        assert!(convert(&BindValue::Float(1.5), &Type::INT4).is_err());
        assert_eq!(
            convert(&BindValue::Float(f64::NAN), &Type::NUMERIC),
            Ok(Param::Text("NaN".into()))
        );
        assert_eq!(
            convert(&BindValue::Bool(true), &Type::BOOL),
            Ok(Param::Bool(true))
        );
        assert!(convert(&BindValue::Bool(true), &Type::INT4).is_err());
        // 2000-01-01T00:00:01Z is one second after PostgreSQL's epoch.
        let ns = 946_684_801_000_000_000;
        assert_eq!(
            convert(&BindValue::Timestamp(ns), &Type::TIMESTAMPTZ),
            Ok(Param::Micros(1_000_000))
        );
        assert!(convert(&BindValue::Timestamp(ns), &Type::DATE).is_err());
        assert_eq!(
            convert(&BindValue::Timestamp(946_771_200_000_000_000), &Type::DATE),
            Ok(Param::Days(1))
        );
        assert!(convert(&BindValue::Timestamp(ns), &Type::TEXT).is_err());
        assert_eq!(convert(&BindValue::Null, &Type::INT4), Ok(Param::Null));
        assert_eq!(
            convert(&BindValue::Text("x".into()), &Type::TIMESTAMPTZ),
            Ok(Param::Text("x".into()))
        );
    }

    #[test]
    fn mismatches_name_the_parameter_and_both_types() {
        let e = convert_params(
            &[BindValue::Int(1), BindValue::Bool(true)],
            &[Type::INT4, Type::INT4],
        )
        .unwrap_err();
        assert_eq!(e.class, QueryErrorClass::Client);
        assert!(!e.broken);
        assert!(e.message.contains("$2"), "{}", e.message);
        assert!(e.message.contains("bool"), "{}", e.message);
        assert!(e.message.contains("int4"), "{}", e.message);
        let e = convert_params(&[BindValue::Int(1)], &[]).unwrap_err();
        assert_eq!(e.class, QueryErrorClass::Client);
    }
}
