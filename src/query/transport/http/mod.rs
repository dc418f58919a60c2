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
//!
//! Files: `parser` follows the answer's JSON as it arrives, `values` reads a row's values for
//! the checksum; this file sends the request and judges the answer read (`outcome`).

use std::sync::Arc;

use bytes::Bytes;
use hyper::header::HeaderMap;
use hyper::{Method, StatusCode};

mod parser;
mod values;
use super::{client_error, from_driver, Timeouts};
use crate::net::error::{DriverError, ErrorClass};
use crate::net::http::json_count;
use crate::net::http::{option_text, quote_server_text, server_message, url_encode, with_query};
use crate::net::http::{BodyReader, HttpClient};
use crate::net::tls::{Connector, Counters};
use crate::plan::EndpointPlan;
use crate::query::sql::{inline_all, Dialect};
use crate::query::streaming::Streamed;
use crate::query::{Instance, Outcome, QueryError, QueryErrorClass};
use parser::{Failure, Parser};

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
    /// How the last query's result arrived (`query::streaming`): a piece is a read of the
    /// body that begins dataset rows.
    streamed: Streamed,
}

impl HttpTransport {
    /// Whether `run` computes the result's checksum (off by default).
    pub fn set_checksums(&mut self, on: bool) {
        self.checksums = on;
    }

    pub async fn connect(
        endpoint: &EndpointPlan,
        url: &str,
        connector: &Connector,
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
        let client = HttpClient::via(connector, endpoint, url, timeouts.connect, timeouts.query)
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
            streamed: Streamed::default(),
        })
    }

    /// How the last query's result arrived: the read that brought the first byte of its
    /// dataset's first row, and the socket bytes read from its send to the body's end (status
    /// line, headers and chunk framing included).
    pub fn streamed(&self) -> Streamed {
        self.streamed
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
        if head.is_ok() {
            reader.streamed.end(reader.received());
        }
        self.streamed = reader.streamed;
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

/// An answer outside 2xx is an error text: this much of it is kept to quote.
const MAX_ERROR_BODY_BYTES: usize = 64 << 10;

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
    /// The socket's counters and what they had read before the request.
    socket: Option<(Arc<Counters>, u64)>,
    streamed: Streamed,
}

impl ExecReader {
    /// Socket bytes read since the request went out.
    fn received(&self) -> Option<u64> {
        self.socket.as_ref().map(|(c, before)| c.read() - before)
    }
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
            socket: None,
            streamed: Streamed::start(),
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
            let begun = self.parser.rows_begun();
            self.parser.feed(data);
            let rows = self.parser.rows_begun() - begun;
            if rows > 0 {
                let bytes = self.received().unwrap_or(0);
                self.streamed.piece(rows, bytes);
            }
        } else {
            let room = MAX_ERROR_BODY_BYTES.saturating_sub(self.error_body.len());
            self.error_body
                .extend_from_slice(&data[..room.min(data.len())]);
        }
        Ok(())
    }

    fn socket(&mut self, counters: &Arc<Counters>) {
        self.socket = Some((counters.clone(), counters.read()));
    }
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
                affected: parsed.updated,
            })
        }
        None if parsed.statement => Ok(Outcome {
            rows: 0,
            checksum: checksums.then_some(0),
            affected: parsed.updated,
        }),
        None => Err(fail(
            "the answer has no `dataset` (nor `ddl`/`dml`): not a /exec answer".to_string(),
        )),
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
mod tests;
