//! Queries over QuestDB's REST endpoint: `GET {path}?query=<url-encoded SQL>` (`path` is the
//! endpoint option, `/exec` by default), one keep-alive connection (`crate::http::HttpClient`).
//! The endpoint takes no binds, so they are rendered into the SQL as literals in the target's
//! dialect (`query::sql::inline_all`).
//!
//! Answers (questdb.com/docs, REST API):
//!
//! - a query: `{"query": .., "columns": [{"name": .., "type": ..}, ..], "dataset": [[..], ..],
//!   "count": n}`: the rows are the `dataset`'s entries, and `count`, when present, must
//!   agree (the whole result is asked for, no `limit`);
//! - a statement without rows: `{"ddl": "OK"}` or `{"dml": "OK"}`: no rows;
//! - a failure: HTTP 400 with `{"query": .., "error": "<text>", "position": n}`.
//!
//! Any status outside 2xx is an `HttpStatus` error with the status in `code` and the server's
//! own text; a 2xx body that is not that shape is an `HttpStatus` error too. An answer cut
//! short by a closed connection is a `Connection` error, no answer in time a `Timeout`; both
//! leave the connection unusable.
//!
//! Checksums (`set_checksums`, docs/checksum.md §3.2): the dataset is hashed value by value
//! while the JSON is parsed (nothing is built), each value read by its column's reported
//! `type` (`JsonKind`): integers, doubles, floats, decimals, booleans, timestamps and dates
//! (ISO text, or numbers in the type's unit), and everything else as text. A value that does
//! not fit its column's type is a `Client` error.

use bytes::Bytes;
use hyper::header::HeaderMap;
use hyper::Method;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::{client_error, from_driver, Timeouts};
use crate::client::http_sql::json_count;
use crate::http::{option_text, quote_server_text, server_message, url_encode, with_query};
use crate::http::{HttpClient, Response};
use crate::plan::EndpointPlan;
use crate::query::checksum::{canonical_decimal, parse_timestamp_us, ResultHasher};
use crate::query::sql::{inline_all, Dialect};
use crate::query::{Instance, Outcome, QueryError, QueryErrorClass};

const DEFAULT_PATH: &str = "/exec";

/// SQL quoted in error messages is cut to this many characters.
const MAX_QUOTED_SQL: usize = 200;

pub struct HttpTransport {
    client: HttpClient,
    path: String,
    dialect: Dialect,
    /// Compute each result's checksum (`Transport::set_checksums`).
    checksums: bool,
}

impl HttpTransport {
    /// Whether `run` computes the result's checksum (off by default).
    pub fn set_checksums(&mut self, on: bool) {
        self.checksums = on;
    }

    pub async fn connect(
        endpoint: &EndpointPlan,
        url: &str,
        timeouts: Timeouts,
    ) -> Result<HttpTransport, QueryError> {
        let broken = |e| QueryError {
            broken: true,
            ..from_driver(e)
        };
        let path = option_text(endpoint, "path")
            .map_err(broken)?
            .unwrap_or_else(|| DEFAULT_PATH.to_string());
        if !path.starts_with('/') {
            return Err(QueryError {
                class: QueryErrorClass::Client,
                message: format!(
                    "endpoint {}.{}: option `path`: `{path}` must start with `/`",
                    endpoint.target, endpoint.name
                ),
                code: None,
                broken: true,
            });
        }
        let client = HttpClient::for_endpoint(endpoint, url, timeouts.connect, timeouts.query)
            .await
            .map_err(broken)?;
        Ok(HttpTransport {
            client,
            path,
            dialect: Dialect::of_endpoint(&endpoint.kind, &endpoint.dialect),
            checksums: false,
        })
    }

    /// Connections the client reopened because the server closed one between requests.
    pub fn reconnects(&self) -> u64 {
        self.client.reconnects()
    }

    /// Sends `inst` as one `GET` and reads and checks the whole answer, within the endpoint's
    /// timeout.
    pub async fn run(&mut self, inst: &Instance) -> Result<Outcome, QueryError> {
        let sql = if inst.binds.is_empty() {
            inst.sql.to_string()
        } else {
            inline_all(&inst.sql, &inst.binds, self.dialect).map_err(client_error)?
        };
        let target = with_query(&self.path, &format!("query={}", url_encode(&sql)));
        let answer = self
            .client
            .request(Method::GET, &target, &HeaderMap::new(), Bytes::new())
            .await
            .map_err(from_driver)?;
        outcome(self.client.endpoint(), &sql, &answer, self.checksums)
    }
}

/// The parts of an answer that matter. The `dataset` rows are skipped, not built, or, with
/// checksums, hashed value by value as they are parsed.
#[derive(Default)]
struct Answer {
    /// The `dataset`'s length, when it has one.
    rows: Option<u64>,
    checksum: Option<u64>,
    count: Option<serde_json::Value>,
    error: Option<serde_json::Value>,
    position: Option<serde_json::Value>,
    /// `ddl` or `dml`: a statement without rows.
    statement: bool,
}

/// What an answer says: the rows, or the error.
fn outcome(
    endpoint: &str,
    sql: &str,
    answer: &Response,
    checksums: bool,
) -> Result<Outcome, QueryError> {
    let status = answer.status.as_u16();
    let fail = |message: String| QueryError {
        class: QueryErrorClass::HttpStatus,
        message: format!("{endpoint}: {message} (query: {})", quote_sql(sql)),
        code: Some(status.to_string()),
        broken: false,
    };
    // Checksums are read from successful answers only.
    let checksums = checksums && answer.is_success();
    let mut problem = None;
    let mut de = serde_json::Deserializer::from_slice(&answer.body);
    let parsed = (&mut de)
        .deserialize_map(AnswerVisitor {
            checksums,
            problem: &mut problem,
        })
        // Nothing but white space after the object.
        .and_then(|a| de.end().map(|()| a));
    if let Some(why) = problem {
        return Err(client_error(format!(
            "{endpoint}: checksum: {why} (query: {})",
            quote_sql(sql)
        )));
    }
    if !answer.is_success() {
        let message = match &parsed {
            Ok(Answer {
                error: Some(error),
                position,
                ..
            }) => sql_error(error, position.as_ref(), sql),
            _ if answer.body.is_empty() => format!("HTTP {} with an empty body", answer.status),
            _ => server_message(&answer.body),
        };
        return Err(fail(message));
    }
    let parsed = match parsed {
        Ok(a) => a,
        Err(e) => {
            let what = if e.is_eof() {
                "the answer ends before its JSON does".to_string()
            } else {
                format!("the answer is not the expected JSON ({e})")
            };
            let body = String::from_utf8_lossy(&answer.body);
            let shown: String = body.chars().take(200).collect();
            let more = if shown.len() < body.len() { "..." } else { "" };
            return Err(fail(format!("{what}: {}{more}", shown.trim())));
        }
    };
    if let Some(error) = &parsed.error {
        // A 2xx carrying an error: still the server's refusal.
        return Err(fail(sql_error(error, parsed.position.as_ref(), sql)));
    }
    match parsed.rows {
        Some(rows) => {
            if let Some(count) = &parsed.count {
                match json_count(count) {
                    Ok(c) if c == rows => {}
                    Ok(c) => {
                        return Err(fail(format!(
                            "the answer says `count` {c} but its dataset has {rows} rows"
                        )))
                    }
                    Err(why) => return Err(fail(format!("the answer's `count` {why}"))),
                }
            }
            Ok(Outcome {
                rows,
                checksum: parsed.checksum,
            })
        }
        None if parsed.statement => Ok(Outcome {
            rows: 0,
            checksum: checksums.then_some(0),
        }),
        None => Err(fail(
            "the answer has no `dataset` (nor `ddl`/`dml`): not a /exec answer".to_string(),
        )),
    }
}

// ------------------------------------------------------------------------------------------------
// Reading the answer (and, with checksums, its values)

/// How a column's JSON values are read for the checksum, by the type QuestDB reports
/// (`columns[].type`; docs/checksum.md §3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum JsonKind {
    Bool,
    /// BYTE, SHORT, INT, LONG (and the SQL names INTEGER, SMALLINT, BIGINT).
    Int,
    /// FLOAT: single precision, read as QuestDB prints it.
    Float4,
    /// DOUBLE.
    Float8,
    /// DECIMAL / NUMERIC: an integer exactly, a fraction as the nearest double.
    Decimal,
    /// TIMESTAMP: ISO text (`2016-01-01T00:00:00.000000Z`), or a number of microseconds.
    Timestamp,
    /// TIMESTAMP_NS: ISO text, or a number of nanoseconds.
    TimestampNs,
    /// DATE: ISO text, or a number of milliseconds.
    Date,
    /// SYMBOL, STRING, VARCHAR, CHAR, UUID, IPv4, LONG256, GEOHASH, ... : the text.
    Text,
}

impl JsonKind {
    fn of(ty: &str) -> JsonKind {
        let base = ty.split('(').next().unwrap_or("").trim();
        let is = |name: &str| base.eq_ignore_ascii_case(name);
        if is("BOOLEAN") || is("BOOL") {
            JsonKind::Bool
        } else if [
            "BYTE", "SHORT", "INT", "LONG", "INTEGER", "SMALLINT", "BIGINT",
        ]
        .iter()
        .any(|n| is(n))
        {
            JsonKind::Int
        } else if is("FLOAT") || is("REAL") {
            JsonKind::Float4
        } else if is("DOUBLE") {
            JsonKind::Float8
        } else if is("DECIMAL") || is("NUMERIC") {
            JsonKind::Decimal
        } else if is("TIMESTAMP") {
            JsonKind::Timestamp
        } else if is("TIMESTAMP_NS") {
            JsonKind::TimestampNs
        } else if is("DATE") {
            JsonKind::Date
        } else {
            JsonKind::Text
        }
    }
}

struct JsonColumn {
    kind: JsonKind,
    /// `name (TYPE)`, for messages.
    label: String,
}

#[derive(Deserialize)]
struct ColumnInfo {
    #[serde(default)]
    name: String,
    #[serde(rename = "type", default)]
    ty: String,
}

/// One JSON value of a row, as the parser hands it over.
#[derive(Clone, Copy, Debug)]
enum Scalar<'a> {
    Null,
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(&'a str),
}

/// Feeds one JSON value of a column of `kind`; `Err` says why it cannot be read.
fn push_json(h: &mut ResultHasher, kind: JsonKind, v: Scalar<'_>) -> Result<(), String> {
    use JsonKind as K;
    let bad = || format!("cannot read {v:?} as a value of the column's type");
    match (v, kind) {
        (Scalar::Null, _) => h.push_null(),
        (Scalar::Bool(b), _) => h.push_bool(b),
        (Scalar::U64(u), _) if i64::try_from(u).is_ok() => {
            return push_json(h, kind, Scalar::I64(u as i64))
        }
        (Scalar::U64(u), K::Int | K::Decimal | K::Float8) => h.push_f64(u as f64),
        (Scalar::U64(u), K::Text) => h.push_text(itoa::Buffer::new().format(u)),
        (Scalar::I64(n), K::Int | K::Decimal) => h.push_i64(n),
        (Scalar::I64(n), K::Float8) => h.push_f64(n as f64),
        (Scalar::I64(n), K::Float4) => h.push_f32(n as f32),
        (Scalar::I64(n), K::Timestamp) => h.push_timestamp_us(n),
        (Scalar::I64(n), K::TimestampNs) => h.push_timestamp_us(n.div_euclid(1_000)),
        (Scalar::I64(n), K::Date) => h.push_timestamp_us(n.checked_mul(1_000).ok_or_else(bad)?),
        (Scalar::I64(n), K::Text) => h.push_text(itoa::Buffer::new().format(n)),
        (Scalar::F64(f), K::Int | K::Decimal | K::Float8) => h.push_f64(f),
        (Scalar::F64(f), K::Float4) => h.push_f32(f as f32),
        (Scalar::F64(f), K::Text) => h.push_text(ryu::Buffer::new().format(f)),
        (Scalar::Str(s), K::Timestamp | K::TimestampNs | K::Date) => {
            h.push_timestamp_us(parse_timestamp_us(s).ok_or_else(bad)?)
        }
        (Scalar::Str(s), K::Int | K::Decimal | K::Float8) => {
            h.push_number(canonical_decimal(s).ok_or_else(bad)?)
        }
        (Scalar::Str(s), K::Float4) => h.push_f32(s.parse().map_err(|_| bad())?),
        (Scalar::Str(s), K::Bool) => match s {
            "true" => h.push_bool(true),
            "false" => h.push_bool(false),
            _ => return Err(bad()),
        },
        (Scalar::Str(s), K::Text) => h.push_text(s),
        _ => return Err(bad()),
    }
    Ok(())
}

/// The top-level object of an answer.
struct AnswerVisitor<'p> {
    checksums: bool,
    /// Why the checksum could not be computed, when it could not.
    problem: &'p mut Option<String>,
}

impl<'de> Visitor<'de> for AnswerVisitor<'_> {
    type Value = Answer;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Answer, A::Error> {
        let mut a = Answer::default();
        let mut columns: Option<Vec<JsonColumn>> = None;
        // With checksums, a dataset that comes before its columns is kept until they come.
        let mut early: Option<Vec<serde_json::Value>> = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*key {
                "dataset" if !self.checksums => {
                    let rows: Option<Vec<IgnoredAny>> = map.next_value()?;
                    a.rows = rows.map(|r| r.len() as u64);
                }
                "dataset" => match &columns {
                    Some(cols) => {
                        let mut hasher = ResultHasher::new();
                        let seen = map.next_value_seed(Dataset {
                            columns: cols,
                            hasher: &mut hasher,
                            problem: &mut *self.problem,
                        })?;
                        a.rows = seen.then(|| hasher.rows());
                        a.checksum = seen.then(|| hasher.finish());
                    }
                    None => {
                        let rows: Option<Vec<serde_json::Value>> = map.next_value()?;
                        a.rows = rows.as_ref().map(|r| r.len() as u64);
                        early = rows;
                    }
                },
                "columns" if self.checksums => {
                    let infos: Option<Vec<ColumnInfo>> = map.next_value()?;
                    columns = infos.map(|infos| {
                        infos
                            .into_iter()
                            .map(|c| JsonColumn {
                                kind: JsonKind::of(&c.ty),
                                label: format!("`{}` ({})", c.name, c.ty),
                            })
                            .collect()
                    });
                }
                "count" => a.count = map.next_value()?,
                "error" => a.error = map.next_value()?,
                "position" => a.position = map.next_value()?,
                "ddl" | "dml" => {
                    map.next_value::<IgnoredAny>()?;
                    a.statement = true;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if let Some(rows) = early {
            let cols = columns.as_deref().unwrap_or(&[]);
            if !rows.is_empty() && columns.is_none() {
                *self.problem = Some("the answer has a dataset but no `columns`".to_string());
                return Err(de::Error::custom("no columns"));
            }
            let mut hasher = ResultHasher::new();
            for row in &rows {
                let values = row.as_array().map(Vec::as_slice).unwrap_or_default();
                if !row.is_array() || values.len() != cols.len() {
                    *self.problem = Some(width_problem(row.as_array().map(Vec::len), cols.len()));
                    return Err(de::Error::custom("row width"));
                }
                hasher.begin_row();
                for (v, col) in values.iter().zip(cols) {
                    let scalar = match v {
                        serde_json::Value::Null => Scalar::Null,
                        serde_json::Value::Bool(b) => Scalar::Bool(*b),
                        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64()) {
                            (Some(i), _) => Scalar::I64(i),
                            (None, Some(u)) => Scalar::U64(u),
                            _ => Scalar::F64(n.as_f64().unwrap_or(f64::NAN)),
                        },
                        serde_json::Value::String(s) => Scalar::Str(s),
                        _ => {
                            *self.problem = Some(format!(
                                "column {}: a JSON array or object has no checksum encoding",
                                col.label
                            ));
                            return Err(de::Error::custom("value"));
                        }
                    };
                    if let Err(why) = push_json(&mut hasher, col.kind, scalar) {
                        *self.problem = Some(format!("column {}: {why}", col.label));
                        return Err(de::Error::custom("value"));
                    }
                }
                hasher.end_row();
            }
            a.checksum = Some(hasher.finish());
        }
        Ok(a)
    }
}

fn width_problem(got: Option<usize>, columns: usize) -> String {
    match got {
        Some(n) => {
            format!("a row of the dataset has {n} value(s) but the answer has {columns} column(s)")
        }
        None => "a row of the dataset is not a JSON array".to_string(),
    }
}

/// The `dataset` array, hashed row by row as it is parsed; `false` for `null`.
struct Dataset<'c, 'h, 'p> {
    columns: &'c [JsonColumn],
    hasher: &'h mut ResultHasher,
    problem: &'p mut Option<String>,
}

impl<'de> DeserializeSeed<'de> for Dataset<'_, '_, '_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Dataset<'_, '_, '_> {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an array of rows")
    }

    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq
            .next_element_seed(Row {
                columns: self.columns,
                hasher: &mut *self.hasher,
                problem: &mut *self.problem,
            })?
            .is_some()
        {}
        Ok(true)
    }
}

/// One row of the dataset: its values, hashed in column order.
struct Row<'c, 'h, 'p> {
    columns: &'c [JsonColumn],
    hasher: &'h mut ResultHasher,
    problem: &'p mut Option<String>,
}

impl<'de> DeserializeSeed<'de> for Row<'_, '_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Row<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a row (an array of values)")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.hasher.begin_row();
        let mut i = 0;
        loop {
            let Some(col) = self.columns.get(i) else {
                // More values than columns?
                if seq.next_element::<IgnoredAny>()?.is_some() {
                    let mut n = i + 1;
                    while seq.next_element::<IgnoredAny>()?.is_some() {
                        n += 1;
                    }
                    *self.problem = Some(width_problem(Some(n), self.columns.len()));
                    return Err(de::Error::custom("row width"));
                }
                break;
            };
            let pushed = seq.next_element_seed(Value {
                column: col,
                hasher: &mut *self.hasher,
                problem: &mut *self.problem,
            })?;
            if pushed.is_none() {
                *self.problem = Some(width_problem(Some(i), self.columns.len()));
                return Err(de::Error::custom("row width"));
            }
            i += 1;
        }
        self.hasher.end_row();
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        *self.problem = Some(width_problem(None, self.columns.len()));
        Err(de::Error::custom("row"))
    }
}

/// One value of a row, hashed as its column's type says.
struct Value<'c, 'h, 'p> {
    column: &'c JsonColumn,
    hasher: &'h mut ResultHasher,
    problem: &'p mut Option<String>,
}

impl Value<'_, '_, '_> {
    fn push<E: de::Error>(self, v: Scalar<'_>) -> Result<(), E> {
        push_json(self.hasher, self.column.kind, v).map_err(|why| {
            *self.problem = Some(format!("column {}: {why}", self.column.label));
            E::custom("value")
        })
    }
}

impl<'de> DeserializeSeed<'de> for Value<'_, '_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Value<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON scalar")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.push(Scalar::Null)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.push(Scalar::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.push(Scalar::I64(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.push(Scalar::U64(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.push(Scalar::F64(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.push(Scalar::Str(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        *self.problem = Some(format!(
            "column {}: a JSON array has no checksum encoding",
            self.column.label
        ));
        Err(de::Error::custom("value"))
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        *self.problem = Some(format!(
            "column {}: a JSON object has no checksum encoding",
            self.column.label
        ));
        Err(de::Error::custom("value"))
    }
}

/// QuestDB's `error`, with the query text from its `position` on.
fn sql_error(error: &serde_json::Value, position: Option<&serde_json::Value>, sql: &str) -> String {
    let mut message = match error {
        serde_json::Value::String(s) => quote_server_text(s),
        other => quote_server_text(&other.to_string()),
    };
    if let Some(pos) = position.and_then(serde_json::Value::as_u64) {
        let at = usize::try_from(pos).unwrap_or(usize::MAX);
        match sql.get(at..) {
            Some(rest) if !rest.is_empty() => {
                let near: String = rest.chars().take(40).collect();
                message = format!("{message} (at position {pos}: `{near}`)");
            }
            _ => message = format!("{message} (at position {pos})"),
        }
    }
    message
}

fn quote_sql(sql: &str) -> String {
    let one_line = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(MAX_QUOTED_SQL) {
        Some((cut, _)) => format!("`{}...`", &one_line[..cut]),
        None => format!("`{one_line}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::StatusCode;

    fn answer(status: u16, body: &str) -> Response {
        Response {
            status: StatusCode::from_u16(status).unwrap(),
            headers: HeaderMap::new(),
            body: Bytes::from(body.to_string()),
            sent_bytes: 0,
        }
    }

    fn run(status: u16, body: &str) -> Result<Outcome, QueryError> {
        outcome(
            "db.http",
            "SELECT x FROM nope",
            &answer(status, body),
            false,
        )
    }

    #[test]
    fn rows_are_the_dataset() {
        let ok = r#"{"query":"q","columns":[{"name":"x","type":"LONG"}],
                     "dataset":[[1],[2],[3]],"count":3}"#;
        assert_eq!(
            run(200, ok),
            Ok(Outcome {
                rows: 3,
                checksum: None
            })
        );
        assert_eq!(
            run(200, r#"{"columns":[],"dataset":[]}"#),
            Ok(Outcome {
                rows: 0,
                checksum: None
            })
        );
        assert_eq!(
            run(200, r#"{"ddl":"OK"}"#),
            Ok(Outcome {
                rows: 0,
                checksum: None
            })
        );
        let e = run(200, r#"{"dataset":[[1]],"count":2}"#).unwrap_err();
        assert_eq!(e.class, QueryErrorClass::HttpStatus);
        assert!(e.message.contains("count"), "{}", e.message);
    }

    #[test]
    fn errors_carry_the_status_and_the_servers_text() {
        let e = run(
            400,
            r#"{"query":"SELECT x FROM nope","error":"table does not exist [table=nope]","position":14}"#,
        )
        .unwrap_err();
        assert_eq!(e.class, QueryErrorClass::HttpStatus);
        assert_eq!(e.code.as_deref(), Some("400"));
        assert!(!e.broken);
        assert!(e.message.contains("table does not exist"), "{}", e.message);
        assert!(
            e.message.contains("at position 14: `nope`"),
            "{}",
            e.message
        );

        let e = run(503, "overloaded, try later\n").unwrap_err();
        assert_eq!(e.code.as_deref(), Some("503"));
        assert!(e.message.contains("overloaded, try later"), "{}", e.message);

        let e = run(200, r#"{"dataset":[[1],[2"#).unwrap_err();
        assert_eq!(e.class, QueryErrorClass::HttpStatus);
        assert!(e.message.contains("ends before"), "{}", e.message);

        let e = run(200, "<html>hello</html>").unwrap_err();
        assert!(e.message.contains("not the expected JSON"), "{}", e.message);

        let e = run(200, r#"{"something":"else"}"#).unwrap_err();
        assert!(e.message.contains("no `dataset`"), "{}", e.message);
    }

    fn sums(body: &str) -> Result<Outcome, QueryError> {
        outcome("db.http", "SELECT x FROM t", &answer(200, body), true)
    }

    /// The checksum of `rows`, each pushed by a closure.
    fn expected(rows: &[&dyn Fn(&mut ResultHasher)]) -> u64 {
        let mut h = ResultHasher::new();
        for push in rows {
            h.begin_row();
            push(&mut h);
            h.end_row();
        }
        h.finish()
    }

    #[test]
    fn checksums_read_values_by_column_type() {
        let body = r#"{"query":"q","columns":[
              {"name":"host","type":"SYMBOL"},{"name":"n","type":"LONG"},
              {"name":"usage","type":"DOUBLE"},{"name":"f","type":"FLOAT"},
              {"name":"ts","type":"TIMESTAMP"},{"name":"d","type":"DATE"},
              {"name":"ok","type":"BOOLEAN"},{"name":"s","type":"DECIMAL(20,2)"}],
            "dataset":[
              ["host_1",42,1.5,1.1,"2016-01-01T00:00:10.500000Z","2016-01-01T00:00:00.000Z",
               true,"12.50"],
              [null,null,null,null,null,null,null,null],
              ["h\u00e9",-1,5,2,"2016-01-01T00:00:00.000000Z","2016-01-02T00:00:00.000Z",
               false,9223372036854775807]],
            "count":3}"#;
        let t0 = 1_451_606_400_000_000;
        let want = expected(&[
            &|h| {
                h.push_text("host_1");
                h.push_i64(42);
                h.push_f64(1.5);
                h.push_f32(1.1);
                h.push_timestamp_us(t0 + 10_500_000);
                h.push_timestamp_us(t0);
                h.push_bool(true);
                h.push_f64(12.5);
            },
            &|h| (0..8).for_each(|_| h.push_null()),
            &|h| {
                h.push_text("hé");
                h.push_i64(-1);
                h.push_i64(5);
                h.push_i64(2);
                h.push_timestamp_us(t0);
                h.push_timestamp_us(t0 + 86_400_000_000);
                h.push_i64(0);
                h.push_i64(i64::MAX);
            },
        ]);
        assert_eq!(
            sums(body),
            Ok(Outcome {
                rows: 3,
                checksum: Some(want)
            })
        );
        // Without checksums, none.
        assert_eq!(
            run(200, body),
            Ok(Outcome {
                rows: 3,
                checksum: None
            })
        );
        // The same rows in another order, with the columns after the dataset.
        let late = r#"{"dataset":[
              ["h\u00e9",-1,5.0,2.0,"2016-01-01T00:00:00Z","2016-01-02T00:00:00.000Z",
               false,9223372036854775807],
              [null,null,null,null,null,null,null,null],
              ["host_1",42,1.5,1.1,"2016-01-01T00:00:10.5Z","2016-01-01T00:00:00.000Z",true,12.5]],
            "columns":[
              {"name":"host","type":"SYMBOL"},{"name":"n","type":"LONG"},
              {"name":"usage","type":"DOUBLE"},{"name":"f","type":"FLOAT"},
              {"name":"ts","type":"TIMESTAMP"},{"name":"d","type":"DATE"},
              {"name":"ok","type":"BOOLEAN"},{"name":"s","type":"DECIMAL"}]}"#;
        assert_eq!(sums(late).map(|o| o.checksum), Ok(Some(want)));
        // One value off: another checksum.
        let off = body.replace("[\"host_1\",42,", "[\"host_1\",43,");
        assert_ne!(sums(&off).map(|o| o.checksum), Ok(Some(want)));
        // Numbers in timestamp columns: microseconds (TIMESTAMP), nanoseconds, milliseconds.
        let numbers = r#"{"columns":[{"name":"a","type":"TIMESTAMP"},
              {"name":"b","type":"TIMESTAMP_NS"},{"name":"c","type":"date"}],
            "dataset":[[1451606400000000,1451606400000000999,1451606400000]]}"#;
        assert_eq!(
            sums(numbers).map(|o| o.checksum),
            Ok(Some(expected(&[
                &|h| (0..3).for_each(|_| h.push_timestamp_us(t0))
            ])))
        );
        // No rows, and statements: checksum 0.
        assert_eq!(
            sums(r#"{"columns":[{"name":"x","type":"LONG"}],"dataset":[],"count":0}"#),
            Ok(Outcome {
                rows: 0,
                checksum: Some(0)
            })
        );
        assert_eq!(
            sums(r#"{"ddl":"OK"}"#),
            Ok(Outcome {
                rows: 0,
                checksum: Some(0)
            })
        );
    }

    #[test]
    fn values_that_cannot_be_read_are_client_errors() {
        let cols = r#""columns":[{"name":"n","type":"LONG"},{"name":"ts","type":"TIMESTAMP"}]"#;
        for (dataset, says) in [
            (r#"[[1]]"#, "1 value(s) but the answer has 2"),
            (
                r#"[[1,"2016-01-01T00:00:00Z",3]]"#,
                "3 value(s) but the answer has 2",
            ),
            (r#"[[1,"yesterday"]]"#, "column `ts` (TIMESTAMP)"),
            (r#"[["one","2016-01-01T00:00:00Z"]]"#, "column `n` (LONG)"),
            (r#"[[[1],"2016-01-01T00:00:00Z"]]"#, "JSON array"),
            (r#"[{"n":1}]"#, "not a JSON array"),
        ] {
            for body in [
                format!("{{{cols},\"dataset\":{dataset}}}"),
                format!("{{\"dataset\":{dataset},{cols}}}"),
            ] {
                let e = sums(&body).unwrap_err();
                assert_eq!(e.class, QueryErrorClass::Client, "{body}: {e}");
                assert!(e.message.contains("checksum"), "{body}: {e}");
                assert!(e.message.contains(says), "{body}: {e}");
                assert!(!e.broken);
            }
        }
        let e = sums(r#"{"dataset":[[1]]}"#).unwrap_err();
        assert!(e.message.contains("no `columns`"), "{e}");
        // Errors of the server are still the server's.
        let e = outcome(
            "db.http",
            "SELECT x FROM nope",
            &answer(400, r#"{"error":"table does not exist","position":14}"#),
            true,
        )
        .unwrap_err();
        assert_eq!(e.class, QueryErrorClass::HttpStatus);
        assert!(e.message.contains("table does not exist"), "{e}");
        // A null count is no count.
        assert_eq!(
            run(200, r#"{"dataset":[[1]],"count":null}"#).map(|o| o.rows),
            Ok(1)
        );
        let e = run(200, r#"{"dataset":[[1]]} trailing"#).unwrap_err();
        assert!(e.message.contains("not the expected JSON"), "{e}");
    }
}
