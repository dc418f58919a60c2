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

use bytes::Bytes;
use hyper::header::HeaderMap;
use hyper::Method;
use serde::de::IgnoredAny;
use serde::Deserialize;

use super::{client_error, from_driver, Timeouts};
use crate::client::http_sql::json_count;
use crate::http::{option_text, quote_server_text, server_message, url_encode, with_query};
use crate::http::{HttpClient, Response};
use crate::plan::EndpointPlan;
use crate::query::sql::{inline_all, Dialect};
use crate::query::{Instance, Outcome, QueryError, QueryErrorClass};

const DEFAULT_PATH: &str = "/exec";

/// SQL quoted in error messages is cut to this many characters.
const MAX_QUOTED_SQL: usize = 200;

pub struct HttpTransport {
    client: HttpClient,
    path: String,
    dialect: Dialect,
}

impl HttpTransport {
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
        outcome(self.client.endpoint(), &sql, &answer)
    }
}

/// The parts of an answer that matter; `dataset` rows are skipped, not built.
#[derive(Deserialize)]
struct Answer {
    dataset: Option<Vec<IgnoredAny>>,
    count: Option<serde_json::Value>,
    error: Option<serde_json::Value>,
    position: Option<serde_json::Value>,
    ddl: Option<IgnoredAny>,
    dml: Option<IgnoredAny>,
}

/// What an answer says: the rows, or the error.
fn outcome(endpoint: &str, sql: &str, answer: &Response) -> Result<Outcome, QueryError> {
    let status = answer.status.as_u16();
    let fail = |message: String| QueryError {
        class: QueryErrorClass::HttpStatus,
        message: format!("{endpoint}: {message} (query: {})", quote_sql(sql)),
        code: Some(status.to_string()),
        broken: false,
    };
    let parsed = serde_json::from_slice::<Answer>(&answer.body);
    if !answer.is_success() {
        let message = match &parsed {
            Ok(Answer {
                error: Some(error), ..
            }) => sql_error(
                error,
                parsed.as_ref().ok().and_then(|a| a.position.as_ref()),
                sql,
            ),
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
    match parsed.dataset {
        Some(rows) => {
            let rows = rows.len() as u64;
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
            Ok(Outcome { rows })
        }
        None if parsed.ddl.is_some() || parsed.dml.is_some() => Ok(Outcome { rows: 0 }),
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
        outcome("db.http", "SELECT x FROM nope", &answer(status, body))
    }

    #[test]
    fn rows_are_the_dataset() {
        let ok = r#"{"query":"q","columns":[{"name":"x","type":"LONG"}],
                     "dataset":[[1],[2],[3]],"count":3}"#;
        assert_eq!(run(200, ok), Ok(Outcome { rows: 3 }));
        assert_eq!(
            run(200, r#"{"columns":[],"dataset":[]}"#),
            Ok(Outcome { rows: 0 })
        );
        assert_eq!(run(200, r#"{"ddl":"OK"}"#), Ok(Outcome { rows: 0 }));
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
}
