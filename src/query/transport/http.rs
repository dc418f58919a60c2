//! Queries over QuestDB's REST endpoint: `GET {path}?query=<url-encoded SQL>` (`path` is the
//! endpoint option, `/exec` by default), one keep-alive connection (`crate::net::http::HttpClient`).
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
//! The answer is read as it arrives, never held whole (`ExecReader`, `Parser`; docs/decisions.md):
//! rows are counted, and hashed, one by one, so an answer of any size takes bounded memory.
//! The endpoint's `max_answer` option fails an answer larger than it (off by default).
//!
//! Checksums (`set_checksums`, docs/checksum.md §3.2): the dataset is hashed value by value
//! while the JSON is parsed (nothing is built), each value read by its column's reported
//! `type` (`JsonKind`): integers, doubles, floats, decimals, booleans, timestamps and dates
//! (ISO text, or numbers in the type's unit), and everything else as text. A value that does
//! not fit its column's type is a `Client` error.

use bytes::Bytes;
use hyper::header::HeaderMap;
use hyper::{Method, StatusCode};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::{client_error, from_driver, Timeouts};
use crate::net::error::{DriverError, ErrorClass};
use crate::net::http::json_count;
use crate::net::http::{option_text, quote_server_text, server_message, url_encode, with_query};
use crate::net::http::{BodyReader, HttpClient};
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
    /// The endpoint's `max_answer`: a larger answer fails (by default any size is read).
    max_answer: Option<u64>,
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
            max_answer: match endpoint.options.get("max_answer") {
                Some(crate::value::Value::Size(b)) if *b > 0 => Some(*b),
                _ => None,
            },
        })
    }

    /// Connections the client reopened because the server closed one between requests.
    pub fn reconnects(&self) -> u64 {
        self.client.reconnects()
    }

    /// Sends `inst` as one `GET` and reads and checks the answer to its end, within the
    /// endpoint's timeout.
    pub async fn run(&mut self, inst: &Instance) -> Result<Outcome, QueryError> {
        let sql = if inst.binds.is_empty() {
            inst.sql.to_string()
        } else {
            inline_all(&inst.sql, &inst.binds, self.dialect).map_err(client_error)?
        };
        let target = with_query(&self.path, &format!("query={}", url_encode(&sql)));
        let mut reader = ExecReader::new(self.checksums, self.max_answer);
        let head = self
            .client
            .request_streamed(
                Method::GET,
                &target,
                &HeaderMap::new(),
                Bytes::new(),
                &mut reader,
            )
            .await;
        match head {
            Ok(head) => outcome(self.client.endpoint(), &sql, head.status, reader),
            Err(_) if reader.too_large => Err(QueryError {
                class: QueryErrorClass::HttpStatus,
                message: format!(
                    "{}: the answer is larger than the endpoint's `max_answer` ({}) (query: {})",
                    self.client.endpoint(),
                    crate::value::fmt_size(self.max_answer.unwrap_or(0)),
                    quote_sql(&sql)
                ),
                code: None,
                broken: true,
            }),
            Err(e) => Err(from_driver(e)),
        }
    }
}

/// A body of a successful answer is parsed as it arrives; these bound what is kept of it.
/// A member name.
const MAX_KEY_BYTES: usize = 4 << 10;
/// A top-level value other than the dataset (`columns`, `count`, `error`, ...), kept whole to
/// be parsed; the `query` echo and unknown members past this are skipped unparsed.
const MAX_KEPT_VALUE_BYTES: usize = 4 << 20;
/// One row of the dataset, kept whole only while it spans two reads from the socket.
const MAX_ROW_BYTES: usize = 64 << 20;
/// With checksums, a dataset that comes before its `columns` is kept until they come.
const MAX_EARLY_BYTES: usize = 16 << 20;
/// An answer outside 2xx is an error text: this much of it is kept to quote.
const MAX_ERROR_BODY_BYTES: usize = 64 << 10;
/// The body's first bytes are kept to quote when it is not the expected JSON.
const QUOTED_PREFIX_BYTES: usize = 800;

/// Reads one `/exec` answer as its bytes arrive (`HttpClient::request_streamed`): a 2xx
/// body goes through `Parser`, anything else is kept (`MAX_ERROR_BODY_BYTES`) to quote.
/// Memory is bounded whatever the answer's size; `limit` (the endpoint's `max_answer`) only
/// stops an answer that is larger than the user allows.
struct ExecReader {
    success: bool,
    limit: Option<u64>,
    bytes: u64,
    too_large: bool,
    error_body: Vec<u8>,
    parser: Parser,
}

impl ExecReader {
    fn new(checksums: bool, limit: Option<u64>) -> ExecReader {
        ExecReader {
            success: false,
            limit,
            bytes: 0,
            too_large: false,
            error_body: Vec::new(),
            parser: Parser::new(checksums),
        }
    }
}

impl BodyReader for ExecReader {
    fn head(&mut self, status: StatusCode, _: &HeaderMap) {
        self.success = status.is_success();
    }

    fn chunk(&mut self, data: &[u8]) -> Result<(), DriverError> {
        self.bytes += data.len() as u64;
        if self.limit.is_some_and(|l| self.bytes > l) {
            self.too_large = true;
            return Err(DriverError::new(
                ErrorClass::Server,
                "the answer is larger than `max_answer`",
                true,
            ));
        }
        if self.success {
            self.parser.feed(data);
        } else {
            let room = MAX_ERROR_BODY_BYTES.saturating_sub(self.error_body.len());
            self.error_body
                .extend_from_slice(&data[..room.min(data.len())]);
        }
        Ok(())
    }
}

/// Why an answer could not be read.
#[derive(Debug)]
enum Failure {
    /// Not the JSON of an answer: why.
    Json(String),
    /// The body ended inside the JSON.
    Eof,
    /// A value could not be hashed (a `Client` error, as on the other transports).
    Checksum(String),
}

/// The top-level member a value belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Columns,
    Dataset,
    Count,
    Error,
    Position,
    /// `ddl` or `dml`: a statement without rows.
    Statement,
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Before the top-level `{`.
    Start,
    /// After `{`: a member name or `}`.
    FirstKey,
    /// After `,`: a member name.
    Key,
    InKey,
    Colon,
    Value,
    InValue,
    /// After the dataset's `[`: a row or `]`.
    FirstRow,
    /// After a row's `,`: a row.
    NextRow,
    InRow,
    /// After a row: `,` or `]`.
    AfterRow,
    /// After a member's value: `,` or `}`.
    AfterValue,
    /// After the top-level `}`: only white space.
    Done,
}

/// The bytes of one JSON value, followed without parsing them: where it ends. Strings,
/// escapes and nesting are tracked; numbers and literals end at the byte after them.
#[derive(Default)]
struct Scan {
    depth: usize,
    in_str: bool,
    escaped: bool,
    scalar: bool,
}

impl Scan {
    /// Follows the value from its first byte on; `Some(n)`: it ended after `n` bytes of `b`
    /// (a number or literal ends before the byte that ends it, which is not consumed).
    fn feed(&mut self, b: &[u8]) -> Option<usize> {
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if self.in_str {
                if self.escaped {
                    self.escaped = false;
                } else if c == b'\\' {
                    self.escaped = true;
                } else if c == b'"' {
                    self.in_str = false;
                    if self.depth == 0 {
                        return Some(i + 1);
                    }
                } else {
                    // Most of a string is neither a quote nor a backslash.
                    match memchr::memchr2(b'"', b'\\', &b[i..]) {
                        Some(n) => {
                            i += n;
                            continue;
                        }
                        None => return None,
                    }
                }
            } else if self.scalar {
                if matches!(c, b',' | b']' | b'}') || is_space(c) {
                    return Some(i);
                }
            } else {
                match c {
                    b'"' => self.in_str = true,
                    b'[' | b'{' => self.depth = self.depth.saturating_add(1),
                    // A closer as the value's first byte is a one-byte value that the
                    // parser refuses.
                    b']' | b'}' if self.depth <= 1 => return Some(i + 1),
                    b']' | b'}' => self.depth -= 1,
                    _ if self.depth == 0 => self.scalar = true,
                    _ => {}
                }
            }
            i += 1;
        }
        None
    }
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

/// An `/exec` answer's JSON, parsed incrementally: the top-level object is taken apart
/// member by member by `Scan`, each dataset row is parsed by serde_json once it is whole
/// (and hashed, with checksums, by the `Row` visitor), and the other members are kept
/// (bounded) and parsed once whole. Nothing but the current row, or one small member, is
/// held; see docs/decisions.md.
struct Parser {
    checksums: bool,
    state: State,
    key: Key,
    scan: Scan,
    /// The member name, the kept value, or the row that spans reads.
    buf: Vec<u8>,
    /// `buf` collects the current value.
    keep: bool,
    /// Bytes fed so far, for positions in messages.
    offset: u64,
    prefix: Vec<u8>,
    columns: Option<Vec<JsonColumn>>,
    hasher: ResultHasher,
    /// The dataset's rows so far, once its `[` was read.
    rows: Option<u64>,
    /// Rows kept until `columns` come (checksums only), concatenated, and where each ends.
    early: Vec<u8>,
    early_ends: Vec<usize>,
    count: Option<serde_json::Value>,
    error: Option<serde_json::Value>,
    position: Option<serde_json::Value>,
    statement: bool,
    failure: Option<Failure>,
}

impl Parser {
    fn new(checksums: bool) -> Parser {
        Parser {
            checksums,
            state: State::Start,
            key: Key::Other,
            scan: Scan::default(),
            buf: Vec::new(),
            keep: false,
            offset: 0,
            prefix: Vec::new(),
            columns: None,
            hasher: ResultHasher::new(),
            rows: None,
            early: Vec::new(),
            early_ends: Vec::new(),
            count: None,
            error: None,
            position: None,
            statement: false,
            failure: None,
        }
    }

    fn fail(&mut self, f: Failure) {
        if self.failure.is_none() {
            self.failure = Some(f);
        }
    }

    fn unexpected(&mut self, at: usize, what: &str) {
        let pos = self.offset + at as u64;
        self.fail(Failure::Json(format!("expected {what} at byte {pos}")));
    }

    fn feed(&mut self, data: &[u8]) {
        if self.prefix.len() < QUOTED_PREFIX_BYTES {
            let room = QUOTED_PREFIX_BYTES - self.prefix.len();
            self.prefix.extend_from_slice(&data[..room.min(data.len())]);
        }
        let mut i = 0;
        while i < data.len() && self.failure.is_none() {
            let c = data[i];
            let waits_for_token =
                !matches!(self.state, State::InKey | State::InValue | State::InRow);
            if waits_for_token && is_space(c) {
                i += 1;
                continue;
            }
            match self.state {
                State::Start if c == b'{' => self.state = State::FirstKey,
                State::Start => self.unexpected(i, "a JSON object"),
                State::FirstKey if c == b'}' => self.state = State::Done,
                State::FirstKey | State::Key if c == b'"' => {
                    self.buf.clear();
                    self.scan = Scan::default();
                    self.state = State::InKey;
                    continue;
                }
                State::FirstKey | State::Key => self.unexpected(i, "a member name"),
                State::InKey => {
                    let end = self.scan.feed(&data[i..]);
                    let n = end.unwrap_or(data.len() - i);
                    if self.buf.len() + n > MAX_KEY_BYTES {
                        self.fail(Failure::Json("a member name is too long".to_string()));
                        break;
                    }
                    self.buf.extend_from_slice(&data[i..i + n]);
                    i += n;
                    if end.is_some() {
                        self.key = self.key_of_buf();
                        self.state = State::Colon;
                    }
                    continue;
                }
                State::Colon if c == b':' => self.state = State::Value,
                State::Colon => self.unexpected(i, "`:`"),
                State::Value if self.key == Key::Dataset && c == b'[' => {
                    self.rows = Some(0);
                    self.hasher = ResultHasher::new();
                    self.state = State::FirstRow;
                }
                State::Value => {
                    self.buf.clear();
                    self.scan = Scan::default();
                    self.keep = true;
                    self.state = State::InValue;
                    continue;
                }
                State::InValue => {
                    let end = self.scan.feed(&data[i..]);
                    let n = end.unwrap_or(data.len() - i);
                    if self.keep {
                        if self.buf.len() + n > MAX_KEPT_VALUE_BYTES {
                            if self.key != Key::Other {
                                self.fail(Failure::Json(format!(
                                    "a member of the answer is larger than {} MiB",
                                    MAX_KEPT_VALUE_BYTES >> 20
                                )));
                                break;
                            }
                            // An echo of a long query, or a member wlrun does not read.
                            self.keep = false;
                            self.buf = Vec::new();
                        } else {
                            self.buf.extend_from_slice(&data[i..i + n]);
                        }
                    }
                    i += n;
                    if end.is_some() {
                        self.value_done();
                        self.state = State::AfterValue;
                    }
                    continue;
                }
                State::FirstRow if c == b']' => self.state = State::AfterValue,
                State::FirstRow | State::NextRow => {
                    self.buf.clear();
                    self.scan = Scan::default();
                    self.state = State::InRow;
                    continue;
                }
                State::InRow => {
                    match self.scan.feed(&data[i..]) {
                        // The whole row is in this read: parsed where it lies.
                        Some(n) if self.buf.is_empty() => {
                            self.row(&data[i..i + n]);
                            i += n;
                            self.state = State::AfterRow;
                        }
                        Some(n) => {
                            self.buf.extend_from_slice(&data[i..i + n]);
                            let mut row = std::mem::take(&mut self.buf);
                            self.row(&row);
                            row.clear();
                            self.buf = row;
                            i += n;
                            self.state = State::AfterRow;
                        }
                        None => {
                            if self.buf.len() + (data.len() - i) > MAX_ROW_BYTES {
                                self.fail(Failure::Json(format!(
                                    "a row of the dataset is larger than {} MiB",
                                    MAX_ROW_BYTES >> 20
                                )));
                                break;
                            }
                            self.buf.extend_from_slice(&data[i..]);
                            i = data.len();
                        }
                    }
                    continue;
                }
                State::AfterRow if c == b',' => self.state = State::NextRow,
                State::AfterRow if c == b']' => self.state = State::AfterValue,
                State::AfterRow => self.unexpected(i, "`,` or `]` after a row"),
                State::AfterValue if c == b',' => self.state = State::Key,
                State::AfterValue if c == b'}' => self.state = State::Done,
                State::AfterValue => self.unexpected(i, "`,` or `}`"),
                State::Done => self.unexpected(i, "nothing after the JSON object"),
            }
            i += 1;
        }
        self.offset += data.len() as u64;
    }

    fn key_of_buf(&mut self) -> Key {
        match serde_json::from_slice::<std::borrow::Cow<'_, str>>(&self.buf) {
            Ok(k) => match &*k {
                "columns" => Key::Columns,
                "dataset" => Key::Dataset,
                "count" => Key::Count,
                "error" => Key::Error,
                "position" => Key::Position,
                "ddl" | "dml" => Key::Statement,
                _ => Key::Other,
            },
            Err(e) => {
                self.fail(Failure::Json(format!("a member name: {e}")));
                Key::Other
            }
        }
    }

    /// A member's value other than a dataset array is whole in `buf` (unless it was too
    /// large to keep, and skipped).
    fn value_done(&mut self) {
        if !self.keep {
            return;
        }
        let value = std::mem::take(&mut self.buf);
        let parsed = match self.key {
            Key::Columns if self.checksums => {
                serde_json::from_slice::<Option<Vec<ColumnInfo>>>(&value).map(|infos| {
                    self.columns = infos.map(|infos| {
                        infos
                            .into_iter()
                            .map(|c| JsonColumn {
                                kind: JsonKind::of(&c.ty),
                                label: format!("`{}` ({})", c.name, c.ty),
                            })
                            .collect()
                    });
                })
            }
            // Not an array (that is read row by row): only `null` is a dataset, of no rows.
            Key::Dataset => serde_json::from_slice::<Option<Vec<IgnoredAny>>>(&value).map(|d| {
                self.rows = d.map(|r| r.len() as u64);
            }),
            Key::Count => serde_json::from_slice(&value).map(|v| self.count = v),
            Key::Error => serde_json::from_slice(&value).map(|v| self.error = v),
            Key::Position => serde_json::from_slice(&value).map(|v| self.position = v),
            Key::Statement => serde_json::from_slice::<IgnoredAny>(&value).map(|_| {
                self.statement = true;
            }),
            Key::Columns | Key::Other => serde_json::from_slice::<IgnoredAny>(&value).map(|_| ()),
        };
        if let Err(e) = parsed {
            self.fail(Failure::Json(e.to_string()));
        }
        self.buf = value;
        self.buf.clear();
    }

    /// One whole row of the dataset.
    fn row(&mut self, row: &[u8]) {
        let n = self.rows.unwrap_or(0);
        self.rows = Some(n + 1);
        if !self.checksums {
            if let Err(e) = serde_json::from_slice::<IgnoredAny>(row) {
                self.fail(Failure::Json(format!("row {} of the dataset: {e}", n + 1)));
            }
            return;
        }
        if self.columns.is_none() {
            if self.early.len() + row.len() > MAX_EARLY_BYTES {
                self.fail(Failure::Json(format!(
                    "the dataset comes before its `columns`, and is larger than the {} MiB \
                     kept until they come",
                    MAX_EARLY_BYTES >> 20
                )));
                return;
            }
            self.early.extend_from_slice(row);
            self.early_ends.push(self.early.len());
            return;
        }
        if let Err(f) = self.hash_row(row, n + 1) {
            self.fail(f);
        }
    }

    fn hash_row(&mut self, row: &[u8], number: u64) -> Result<(), Failure> {
        let columns = self.columns.as_deref().unwrap_or(&[]);
        let mut problem = None;
        let mut de = serde_json::Deserializer::from_slice(row);
        let parsed = Row {
            columns,
            hasher: &mut self.hasher,
            problem: &mut problem,
        }
        .deserialize(&mut de)
        .and_then(|()| de.end());
        match (problem, parsed) {
            (Some(why), _) => Err(Failure::Checksum(why)),
            (None, Err(e)) => Err(Failure::Json(format!("row {number} of the dataset: {e}"))),
            (None, Ok(())) => Ok(()),
        }
    }

    /// The body ended: what it said.
    fn finish(mut self) -> Result<Parsed, Failure> {
        if let Some(f) = self.failure.take() {
            return Err(f);
        }
        if self.state != State::Done {
            return Err(Failure::Eof);
        }
        if !self.early_ends.is_empty() {
            if self.columns.is_none() {
                return Err(Failure::Checksum(
                    "the answer has a dataset but no `columns`".to_string(),
                ));
            }
            let early = std::mem::take(&mut self.early);
            let mut start = 0;
            for (i, &end) in std::mem::take(&mut self.early_ends).iter().enumerate() {
                self.hash_row(&early[start..end], i as u64 + 1)?;
                start = end;
            }
        }
        let checksum = (self.checksums && self.rows.is_some()).then(|| self.hasher.finish());
        Ok(Parsed {
            rows: self.rows,
            checksum,
            count: self.count,
            error: self.error,
            position: self.position,
            statement: self.statement,
        })
    }
}

/// The parts of an answer that matter, once it was read to its end.
struct Parsed {
    /// The `dataset`'s length, when it has one.
    rows: Option<u64>,
    checksum: Option<u64>,
    count: Option<serde_json::Value>,
    error: Option<serde_json::Value>,
    position: Option<serde_json::Value>,
    /// `ddl` or `dml`: a statement without rows.
    statement: bool,
}

/// What an answer read to its end says: the rows, or the error.
fn outcome(
    endpoint: &str,
    sql: &str,
    status: StatusCode,
    reader: ExecReader,
) -> Result<Outcome, QueryError> {
    let fail = |message: String| QueryError {
        class: QueryErrorClass::HttpStatus,
        message: format!("{endpoint}: {message} (query: {})", quote_sql(sql)),
        code: Some(status.as_u16().to_string()),
        broken: false,
    };
    if !status.is_success() {
        let body = &reader.error_body;
        let parsed = serde_json::from_slice::<serde_json::Value>(body).ok();
        let message = match parsed.as_ref().and_then(|j| j.get("error")) {
            Some(error) => sql_error(error, parsed.as_ref().and_then(|j| j.get("position")), sql),
            None if body.is_empty() => format!("HTTP {status} with an empty body"),
            None => server_message(body),
        };
        return Err(fail(message));
    }
    let checksums = reader.parser.checksums;
    let prefix = reader.parser.prefix.clone();
    let parsed = match reader.parser.finish() {
        Ok(p) => p,
        Err(Failure::Checksum(why)) => {
            return Err(client_error(format!(
                "{endpoint}: checksum: {why} (query: {})",
                quote_sql(sql)
            )))
        }
        Err(f) => {
            let what = match f {
                Failure::Eof => "the answer ends before its JSON does".to_string(),
                Failure::Json(why) | Failure::Checksum(why) => {
                    format!("the answer is not the expected JSON ({why})")
                }
            };
            let body = String::from_utf8_lossy(&prefix);
            let shown: String = body.chars().take(200).collect();
            let more = if shown.len() < reader.bytes as usize {
                "..."
            } else {
                ""
            };
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

fn width_problem(got: Option<usize>, columns: usize) -> String {
    match got {
        Some(n) => {
            format!("a row of the dataset has {n} value(s) but the answer has {columns} column(s)")
        }
        None => "a row of the dataset is not a JSON array".to_string(),
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

    /// `body` read as it arrives in pieces of `piece` bytes.
    fn read_in(
        sql: &str,
        status: u16,
        body: &str,
        checksums: bool,
        piece: usize,
    ) -> Result<Outcome, QueryError> {
        let status = StatusCode::from_u16(status).unwrap();
        let mut r = ExecReader::new(checksums, None);
        r.head(status, &HeaderMap::new());
        for c in body.as_bytes().chunks(piece) {
            r.chunk(c).unwrap();
        }
        outcome("db.http", sql, status, r)
    }

    /// `body` read whole, and in pieces of every size up to 17 bytes: the same outcome
    /// wherever the reads from the socket cut the JSON.
    fn read(sql: &str, status: u16, body: &str, checksums: bool) -> Result<Outcome, QueryError> {
        let whole = read_in(sql, status, body, checksums, body.len().max(1));
        for piece in 1..=17 {
            assert_eq!(
                read_in(sql, status, body, checksums, piece),
                whole,
                "{body} in pieces of {piece}"
            );
        }
        whole
    }

    fn run(status: u16, body: &str) -> Result<Outcome, QueryError> {
        read("SELECT x FROM nope", status, body, false)
    }

    proptest::proptest! {
        /// Whatever a server sends, in whatever pieces, reading it ends in an outcome.
        #[test]
        fn any_bytes_give_an_outcome_not_a_panic(
            body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
            piece in 1usize..40,
            checksums in proptest::prelude::any::<bool>(),
        ) {
            let status = StatusCode::OK;
            let mut r = ExecReader::new(checksums, None);
            r.head(status, &HeaderMap::new());
            for c in body.chunks(piece) {
                r.chunk(c).unwrap();
            }
            let _ = outcome("db.http", "SELECT 1", status, r);
        }

        /// Answers that are nearly right: a valid one cut or with one byte changed.
        #[test]
        fn damaged_answers_give_an_outcome_not_a_panic(
            at in 0usize..200,
            byte in proptest::prelude::any::<u8>(),
            cut in proptest::prelude::any::<bool>(),
            piece in 1usize..20,
        ) {
            let good = br#"{"query":"q","columns":[{"name":"s","type":"VARCHAR"},{"name":"n","type":"LONG"}],"dataset":[["a\"b",1],[null,2],["\u00e9",3]],"count":3}"#;
            let mut body = good.to_vec();
            let at = at % body.len();
            if cut { body.truncate(at) } else { body[at] = byte }
            for checksums in [false, true] {
                let mut r = ExecReader::new(checksums, None);
                r.head(StatusCode::OK, &HeaderMap::new());
                for c in body.chunks(piece) {
                    r.chunk(c).unwrap();
                }
                let _ = outcome("db.http", "SELECT 1", StatusCode::OK, r);
            }
        }
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
        read("SELECT x FROM t", 200, body, true)
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
        let e = read(
            "SELECT x FROM nope",
            400,
            r#"{"error":"table does not exist","position":14}"#,
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
