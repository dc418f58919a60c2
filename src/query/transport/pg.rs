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

use std::collections::HashMap;
use std::error::Error as StdError;
use std::fmt::Write as _;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use futures_util::StreamExt;
use tokio_postgres::error::DbError;
use tokio_postgres::types::{Format, FromSql, IsNull, Kind, ToSql, Type};
use tokio_postgres::{NoTls, SimpleQueryMessage, Statement};

use super::{client_error, from_driver, timeout_error, Timeouts};
use crate::net::pg::{connect, Conn};
use crate::plan::EndpointPlan;
use crate::query::checksum::{
    canonical_decimal, parse_timestamp_us, Number, ResultHasher, US_PER_DAY,
};
use crate::query::sql::{inline_all, Dialect};
use crate::query::{Instance, Outcome, QueryError, QueryErrorClass};
use crate::value::BindValue;
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
    /// Compute each result's checksum (`Transport::set_checksums`).
    checksums: bool,
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
            checksums: false,
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
        while let Some(m) = stream.next().await {
            match m.map_err(|e| self.error(&e))? {
                SimpleQueryMessage::Row(row) => {
                    rows += 1;
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
            }),
        }
    }

    async fn drain(&self, rows: tokio_postgres::RowStream) -> Result<Outcome, QueryError> {
        let mut rows = pin!(rows);
        let mut n = 0u64;
        let mut sum: Option<ResultSum> = None;
        while let Some(r) = rows.next().await {
            let row = r.map_err(|e| self.error(&e))?;
            if self.checksums {
                sum.get_or_insert_with(|| ResultSum::of_columns(row.columns()))
                    .binary_row(&row)?;
            }
            n += 1;
        }
        Ok(Outcome {
            rows: n,
            checksum: self.checksums.then(|| sum.map_or(0, |s| s.hasher.finish())),
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

// ------------------------------------------------------------------------------------------------
// Checksums (docs/checksum.md)

/// How the values of a result column are read for the checksum, by the column's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ColKind {
    Bool,
    Int2,
    Int4,
    Int8,
    /// oid: an unsigned 32-bit integer.
    Oid,
    Float4,
    Float8,
    Numeric,
    /// text, varchar, name, "char", unknown, json, xml, enums, citext: binary format = text.
    Text,
    /// char(n): text without its trailing blanks, as PostgreSQL's cast to text has it.
    Bpchar,
    /// Binary: a version byte (1), then the text.
    Jsonb,
    /// timestamp and timestamptz: microseconds since 2000-01-01 (UTC for timestamptz; a
    /// timestamp without zone is taken as UTC).
    Timestamp,
    Date,
    Uuid,
    /// Anything else: no binary reading (a `Client` error); in `simple` mode, its text.
    Other,
}

fn col_kind(ty: &Type) -> ColKind {
    match *ty {
        Type::BOOL => ColKind::Bool,
        Type::INT2 => ColKind::Int2,
        Type::INT4 => ColKind::Int4,
        Type::INT8 => ColKind::Int8,
        Type::OID => ColKind::Oid,
        Type::FLOAT4 => ColKind::Float4,
        Type::FLOAT8 => ColKind::Float8,
        Type::NUMERIC => ColKind::Numeric,
        Type::TEXT
        | Type::VARCHAR
        | Type::NAME
        | Type::CHAR
        | Type::UNKNOWN
        | Type::JSON
        | Type::XML => ColKind::Text,
        Type::BPCHAR => ColKind::Bpchar,
        Type::JSONB => ColKind::Jsonb,
        Type::TIMESTAMP | Type::TIMESTAMPTZ => ColKind::Timestamp,
        Type::DATE => ColKind::Date,
        Type::UUID => ColKind::Uuid,
        _ => match ty.kind() {
            Kind::Enum(_) => ColKind::Text,
            Kind::Domain(base) => col_kind(base),
            _ if ty.name() == "citext" => ColKind::Text,
            _ => ColKind::Other,
        },
    }
}

/// One result's checksum as its rows are read: the column kinds (from the statement's
/// description, or the first row's columns), and a buffer for numeric text.
struct ResultSum {
    hasher: ResultHasher,
    kinds: Vec<ColKind>,
    /// `name (type)` of each column, for messages.
    names: Vec<String>,
    /// Reused for the text of non-whole numerics (no allocation per value).
    scratch: String,
}

impl ResultSum {
    fn of_columns(columns: &[tokio_postgres::Column]) -> ResultSum {
        ResultSum {
            hasher: ResultHasher::new(),
            kinds: columns.iter().map(|c| col_kind(c.type_())).collect(),
            names: columns
                .iter()
                .map(|c| format!("`{}` ({})", c.name(), c.type_().name()))
                .collect(),
            scratch: String::new(),
        }
    }

    fn column_error(&self, i: usize, why: &str) -> QueryError {
        let name = self.names.get(i).map_or("?", String::as_str);
        client_error(format!("checksum: column {name}: {why}"))
    }

    /// A row in the binary format (`prepared` and `unnamed`).
    fn binary_row(&mut self, row: &tokio_postgres::Row) -> Result<(), QueryError> {
        self.check_width(row.len())?;
        self.hasher.begin_row();
        for i in 0..self.kinds.len() {
            let raw = row
                .try_get::<_, RawValue>(i)
                .map_err(|e| self.column_error(i, &e.to_string()))?;
            if let Err(why) = push_binary(&mut self.hasher, self.kinds[i], raw.0, &mut self.scratch)
            {
                return Err(self.column_error(i, &why));
            }
        }
        self.hasher.end_row();
        Ok(())
    }

    /// A row in the text format (`simple`).
    fn text_row(&mut self, row: &tokio_postgres::SimpleQueryRow) -> Result<(), QueryError> {
        self.check_width(row.len())?;
        self.hasher.begin_row();
        for i in 0..self.kinds.len() {
            let text = row
                .try_get(i)
                .map_err(|e| self.column_error(i, &e.to_string()))?;
            if let Err(why) = push_text_value(&mut self.hasher, self.kinds[i], text) {
                return Err(self.column_error(i, &why));
            }
        }
        self.hasher.end_row();
        Ok(())
    }

    fn check_width(&self, n: usize) -> Result<(), QueryError> {
        if n == self.kinds.len() {
            Ok(())
        } else {
            Err(client_error(format!(
                "checksum: the rows have {n} column(s) but the statement was described with {}",
                self.kinds.len()
            )))
        }
    }
}

/// A column value as it came in a row, unread: `None` for NULL.
struct RawValue<'a>(Option<&'a [u8]>);

impl<'a> FromSql<'a> for RawValue<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(RawValue(Some(raw)))
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(RawValue(None))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

fn fixed<const N: usize>(raw: &[u8]) -> Result<[u8; N], String> {
    raw.try_into()
        .map_err(|_| format!("{} byte(s) where the type has {N}", raw.len()))
}

/// Microseconds since PostgreSQL's epoch as Unix microseconds; ±infinity stay i64::MAX/MIN.
fn unix_micros(pg: i64) -> i64 {
    match pg {
        i64::MAX | i64::MIN => pg,
        _ => pg.saturating_add(PG_EPOCH_US),
    }
}

/// Days since PostgreSQL's epoch as the Unix microseconds of their midnight; ±infinity are
/// i64::MAX/MIN, as for timestamps.
fn date_micros(pg_days: i32) -> i64 {
    match pg_days {
        i32::MAX => i64::MAX,
        i32::MIN => i64::MIN,
        d => (i64::from(d) + PG_EPOCH_DAYS) * US_PER_DAY,
    }
}

/// Feeds one value in PostgreSQL's binary format; `Err` says why it cannot be read.
fn push_binary(
    h: &mut ResultHasher,
    kind: ColKind,
    raw: Option<&[u8]>,
    scratch: &mut String,
) -> Result<(), String> {
    let Some(raw) = raw else {
        h.push_null();
        return Ok(());
    };
    match kind {
        ColKind::Bool => h.push_bool(fixed::<1>(raw)?[0] != 0),
        ColKind::Int2 => h.push_i64(i16::from_be_bytes(fixed(raw)?).into()),
        ColKind::Int4 => h.push_i64(i32::from_be_bytes(fixed(raw)?).into()),
        ColKind::Int8 => h.push_i64(i64::from_be_bytes(fixed(raw)?)),
        ColKind::Oid => h.push_i64(u32::from_be_bytes(fixed(raw)?).into()),
        ColKind::Float4 => h.push_f32(f32::from_be_bytes(fixed(raw)?)),
        ColKind::Float8 => h.push_f64(f64::from_be_bytes(fixed(raw)?)),
        ColKind::Numeric => h.push_number(numeric_binary(raw, scratch)?),
        ColKind::Text => h.push_text_bytes(raw),
        ColKind::Bpchar => h.push_text_bytes(trim_blanks(raw)),
        ColKind::Jsonb => match raw.split_first() {
            Some((1, text)) => h.push_text_bytes(text),
            _ => return Err("a jsonb value in an unknown binary version".to_string()),
        },
        ColKind::Timestamp => h.push_timestamp_us(unix_micros(i64::from_be_bytes(fixed(raw)?))),
        ColKind::Date => h.push_timestamp_us(date_micros(i32::from_be_bytes(fixed(raw)?))),
        ColKind::Uuid => h.push_text_bytes(&uuid_text(&fixed::<16>(raw)?)),
        ColKind::Other => {
            return Err(
                "the type has no checksum encoding in binary results; cast it to text \
                        in the query (or use `statements simple`, which hashes its text)"
                    .to_string(),
            )
        }
    }
    Ok(())
}

/// Feeds one value in PostgreSQL's text format, read by its column's type.
fn push_text_value(h: &mut ResultHasher, kind: ColKind, text: Option<&str>) -> Result<(), String> {
    let Some(t) = text else {
        h.push_null();
        return Ok(());
    };
    let bad = || format!("cannot read `{t}` as a value of its type");
    match kind {
        ColKind::Bool => match t {
            "t" | "true" => h.push_bool(true),
            "f" | "false" => h.push_bool(false),
            _ => return Err(bad()),
        },
        ColKind::Int2 | ColKind::Int4 | ColKind::Int8 | ColKind::Oid => {
            h.push_i64(t.parse().map_err(|_| bad())?)
        }
        ColKind::Float4 => h.push_f32(t.parse().map_err(|_| bad())?),
        ColKind::Float8 => h.push_f64(t.parse().map_err(|_| bad())?),
        ColKind::Numeric => h.push_number(canonical_decimal(t).ok_or_else(bad)?),
        ColKind::Bpchar => h.push_text_bytes(trim_blanks(t.as_bytes())),
        ColKind::Text | ColKind::Jsonb | ColKind::Uuid | ColKind::Other => h.push_text(t),
        ColKind::Timestamp | ColKind::Date => {
            h.push_timestamp_us(parse_timestamp_us(t).ok_or_else(bad)?)
        }
    }
    Ok(())
}

fn trim_blanks(b: &[u8]) -> &[u8] {
    let end = b.iter().rposition(|&c| c != b' ').map_or(0, |i| i + 1);
    &b[..end]
}

/// A uuid as PostgreSQL prints it: lowercase, hyphenated.
fn uuid_text(b: &[u8; 16]) -> [u8; 36] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [b'-'; 36];
    let mut o = 0;
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            o += 1;
        }
        out[o] = HEX[usize::from(byte >> 4)];
        out[o + 1] = HEX[usize::from(byte & 0xf)];
        o += 2;
    }
    out
}

/// A numeric in PostgreSQL's binary format (ndigits, weight, sign, dscale, then base-10000
/// digits, the first worth 10000^weight) in canonical form: a whole value that fits i64 is
/// that integer, exactly; any other is read as the text PostgreSQL would print for it, so
/// that it becomes the same double as in `simple` mode (`canonical_decimal`).
fn numeric_binary(raw: &[u8], scratch: &mut String) -> Result<Number, String> {
    let malformed = || format!("a malformed numeric ({} bytes)", raw.len());
    if raw.len() < 8 {
        return Err(malformed());
    }
    let word = |i: usize| u16::from_be_bytes([raw[i], raw[i + 1]]);
    let ndigits = usize::from(word(0));
    let weight = i64::from(word(2) as i16);
    let sign = word(4);
    if raw.len() != 8 + 2 * ndigits {
        return Err(malformed());
    }
    let digit = |i: usize| -> i64 {
        if i < ndigits {
            i64::from(word(8 + 2 * i))
        } else {
            0
        }
    };
    let negative = match sign {
        0x0000 => false,
        0x4000 => true,
        0xC000 => return Ok(Number::NaN),
        0xD000 => return Ok(Number::PosInf),
        0xF000 => return Ok(Number::NegInf),
        _ => return Err(malformed()),
    };
    if (0..ndigits).any(|i| digit(i) > 9999) {
        return Err(malformed());
    }
    if ndigits == 0 {
        return Ok(Number::Int(0));
    }
    // Digit i is worth 10000^(weight - i): whole when every digit below the units is zero.
    let whole = (0..ndigits).all(|i| weight - i as i64 >= 0 || digit(i) == 0);
    if whole && weight < 5 {
        // At most 5 base-10000 digits before the point: fits i128 without overflow.
        let mut v: i128 = 0;
        for i in 0..=weight as usize {
            v = v * 10_000 + i128::from(digit(i));
        }
        if let Ok(n) = i64::try_from(if negative { -v } else { v }) {
            return Ok(Number::Int(n));
        }
    }
    scratch.clear();
    if negative {
        scratch.push('-');
    }
    if weight < 0 {
        scratch.push('0');
    } else {
        for i in 0..=weight as usize {
            if i == 0 {
                let _ = write!(scratch, "{}", digit(i));
            } else {
                let _ = write!(scratch, "{:04}", digit(i));
            }
        }
    }
    scratch.push('.');
    // The digits after the point: 10000^-1, 10000^-2, ... down to the last digit sent.
    let mut pos = -1i64;
    loop {
        let i = weight - pos;
        if i >= ndigits as i64 {
            break;
        }
        let d = if i < 0 { 0 } else { digit(i as usize) };
        let _ = write!(scratch, "{d:04}");
        pos -= 1;
    }
    if scratch.ends_with('.') {
        scratch.push('0');
    }
    canonical_decimal(scratch).ok_or_else(malformed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::checksum::canonical_f64;

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

    /// A numeric in the binary format.
    fn numeric(weight: i16, sign: u16, dscale: u16, digits: &[u16]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&(digits.len() as u16).to_be_bytes());
        out.extend_from_slice(&weight.to_be_bytes());
        out.extend_from_slice(&sign.to_be_bytes());
        out.extend_from_slice(&dscale.to_be_bytes());
        for d in digits {
            out.extend_from_slice(&d.to_be_bytes());
        }
        out
    }

    #[test]
    fn binary_numerics_are_exact_integers_or_their_printed_double() {
        let mut scratch = String::new();
        let mut read = |raw: Vec<u8>| numeric_binary(&raw, &mut scratch);
        assert_eq!(read(numeric(0, 0, 0, &[])), Ok(Number::Int(0)));
        assert_eq!(read(numeric(0, 0x4000, 0, &[5])), Ok(Number::Int(-5)));
        // 5.000: whole.
        assert_eq!(read(numeric(0, 0, 3, &[5])), Ok(Number::Int(5)));
        // 45000000000000 = 45 0000 0000 0000.
        assert_eq!(
            read(numeric(3, 0, 0, &[45])),
            Ok(Number::Int(45_000_000_000_000))
        );
        // i64::MAX and MIN exactly: 922 3372 0368 5477 5807.
        assert_eq!(
            read(numeric(4, 0, 0, &[922, 3372, 368, 5477, 5807])),
            Ok(Number::Int(i64::MAX))
        );
        assert_eq!(
            read(numeric(4, 0x4000, 0, &[922, 3372, 368, 5477, 5808])),
            Ok(Number::Int(i64::MIN))
        );
        // One past i64::MAX, and 10^20: floats.
        assert_eq!(
            read(numeric(4, 0, 0, &[922, 3372, 368, 5477, 5808])),
            Ok(canonical_f64(9_223_372_036_854_775_808.0))
        );
        assert_eq!(read(numeric(5, 0, 0, &[1])), Ok(canonical_f64(1e20)));
        // 12345.678 = 1 2345 . 6780
        assert_eq!(
            read(numeric(1, 0, 3, &[1, 2345, 6780])),
            Ok(canonical_f64(12345.678))
        );
        // 0.00012340 = 0 . 0001 2340
        assert_eq!(
            read(numeric(-1, 0, 8, &[1, 2340])),
            Ok(canonical_f64(0.0001234))
        );
        // 0.00000005 = 0 . 0000 0005
        assert_eq!(read(numeric(-2, 0x4000, 8, &[5])), Ok(canonical_f64(-5e-8)));
        assert_eq!(read(numeric(0, 0xC000, 0, &[])), Ok(Number::NaN));
        assert_eq!(read(numeric(0, 0xD000, 0, &[])), Ok(Number::PosInf));
        assert_eq!(read(numeric(0, 0xF000, 0, &[])), Ok(Number::NegInf));
        assert!(read(vec![0, 1, 0, 0]).is_err());
        assert!(read(numeric(0, 0, 0, &[10_000])).is_err());
        assert!(read(numeric(0, 0x1234, 0, &[1])).is_err());
        let mut short = numeric(0, 0, 0, &[1, 2]);
        short.pop();
        assert!(read(short).is_err());
    }

    /// The hash of one row of one value.
    fn one(push: impl FnOnce(&mut ResultHasher) -> Result<(), String>) -> Result<u64, String> {
        let mut h = ResultHasher::new();
        h.begin_row();
        push(&mut h)?;
        h.end_row();
        Ok(h.finish())
    }

    #[test]
    fn binary_and_text_values_hash_alike() {
        let mut scratch = String::new();
        let uuid = [
            0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38,
            0x0a, 0x11,
        ];
        let ts = (1_451_606_400_000_000i64 - PG_EPOCH_US + 500_000).to_be_bytes();
        let cases: Vec<(ColKind, Vec<u8>, &str)> = vec![
            (ColKind::Bool, vec![1], "t"),
            (ColKind::Bool, vec![0], "f"),
            (ColKind::Int2, (-7i16).to_be_bytes().to_vec(), "-7"),
            (ColKind::Int4, 123_456i32.to_be_bytes().to_vec(), "123456"),
            (
                ColKind::Int8,
                i64::MIN.to_be_bytes().to_vec(),
                "-9223372036854775808",
            ),
            (ColKind::Oid, u32::MAX.to_be_bytes().to_vec(), "4294967295"),
            (ColKind::Float4, 1.1f32.to_be_bytes().to_vec(), "1.1"),
            // float4 printed with 6 digits (extra_float_digits = 0) is still the same value.
            (
                ColKind::Float4,
                3.300_000_2f32.to_be_bytes().to_vec(),
                "3.3",
            ),
            (
                ColKind::Float4,
                3.300_000_2f32.to_be_bytes().to_vec(),
                "3.3000002",
            ),
            (ColKind::Float8, 0.1f64.to_be_bytes().to_vec(), "0.1"),
            (
                ColKind::Float8,
                (1.0f64 / 3.0).to_be_bytes().to_vec(),
                "0.333333333333333",
            ),
            (ColKind::Float8, f64::NAN.to_be_bytes().to_vec(), "NaN"),
            (
                ColKind::Float8,
                f64::NEG_INFINITY.to_be_bytes().to_vec(),
                "-Infinity",
            ),
            (
                ColKind::Numeric,
                numeric(1, 0, 3, &[1, 2345, 6780]),
                "12345.678",
            ),
            (
                ColKind::Numeric,
                numeric(3, 0, 4, &[45]),
                "45000000000000.0000",
            ),
            (ColKind::Text, b"it's".to_vec(), "it's"),
            (ColKind::Bpchar, b"ab   ".to_vec(), "ab   "),
            (ColKind::Jsonb, b"\x01{\"a\": 1}".to_vec(), "{\"a\": 1}"),
            (ColKind::Timestamp, ts.to_vec(), "2016-01-01 01:00:00.5+01"),
            (ColKind::Date, 5_844i32.to_be_bytes().to_vec(), "2016-01-01"),
            (ColKind::Date, i32::MAX.to_be_bytes().to_vec(), "infinity"),
            (
                ColKind::Uuid,
                uuid.to_vec(),
                "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            ),
        ];
        for (kind, raw, text) in cases {
            let b = one(|h| push_binary(h, kind, Some(&raw), &mut scratch));
            let t = one(|h| push_text_value(h, kind, Some(text)));
            assert!(b.is_ok(), "{kind:?} {text}: {b:?}");
            assert_eq!(b, t, "{kind:?} {text}");
        }
        // The same instant, with and without zone, and a date at midnight.
        let midnight = one(|h| push_text_value(h, ColKind::Date, Some("2016-01-01")));
        let ts0 = (1_451_606_400_000_000i64 - PG_EPOCH_US).to_be_bytes();
        assert_eq!(
            one(|h| push_binary(h, ColKind::Timestamp, Some(&ts0), &mut scratch)),
            midnight
        );
        // char(n) without its blanks equals the text.
        assert_eq!(
            one(|h| push_binary(h, ColKind::Bpchar, Some(b"ab  "), &mut scratch)),
            one(|h| push_binary(h, ColKind::Text, Some(b"ab"), &mut scratch))
        );
        // NULL is NULL whatever the type.
        assert_eq!(
            one(|h| push_binary(h, ColKind::Int4, None, &mut scratch)),
            one(|h| push_text_value(h, ColKind::Other, None))
        );
        // Wrong widths and unreadable texts say so.
        assert!(
            one(|h| push_binary(h, ColKind::Int4, Some(&[0, 1]), &mut scratch))
                .unwrap_err()
                .contains("2 byte(s)")
        );
        assert!(
            one(|h| push_binary(h, ColKind::Other, Some(b"x"), &mut scratch))
                .unwrap_err()
                .contains("cast it to text")
        );
        assert!(one(|h| push_text_value(h, ColKind::Int4, Some("1.5"))).is_err());
        assert!(one(|h| push_text_value(h, ColKind::Bool, Some("yes"))).is_err());
        assert!(one(|h| push_text_value(h, ColKind::Timestamp, Some("soon"))).is_err());
        // In text, other types are their text.
        assert_eq!(
            one(|h| push_text_value(h, ColKind::Other, Some("1 day"))),
            one(|h| push_text_value(h, ColKind::Text, Some("1 day")))
        );
    }

    #[test]
    fn column_kinds_by_type() {
        assert_eq!(col_kind(&Type::INT8), ColKind::Int8);
        assert_eq!(col_kind(&Type::TIMESTAMPTZ), ColKind::Timestamp);
        assert_eq!(col_kind(&Type::TIMESTAMP), ColKind::Timestamp);
        assert_eq!(col_kind(&Type::VARCHAR), ColKind::Text);
        assert_eq!(col_kind(&Type::BPCHAR), ColKind::Bpchar);
        assert_eq!(col_kind(&Type::INTERVAL), ColKind::Other);
        assert_eq!(col_kind(&Type::BYTEA), ColKind::Other);
        assert_eq!(col_kind(&Type::INT4_ARRAY), ColKind::Other);
    }
}
