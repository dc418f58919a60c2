//! SQL over QuestDB's REST endpoint: `GET /exec?query=<sql>`, one statement per request.
//!
//! Answers (questdb.com/docs, REST API): a query gives
//! `{"query":..,"columns":[{"name":..,"type":..}],"timestamp":..,"dataset":[[..],..],"count":n}`,
//! DDL gives `{"ddl":"OK"}`, and a failure gives HTTP 400 with
//! `{"query":..,"error":"<text>","position":<byte offset in the query>}`.

use std::time::Duration;

use bytes::Bytes;
use hyper::header::HeaderMap;
use hyper::Method;
use serde_json::Value as Json;

use crate::net::error::{DriverError, ErrorClass};
use crate::net::http::{
    connect_timeout, json_count, option_text, quote_server_text, url_encode, with_query,
    HttpClient, Response,
};
use crate::plan::EndpointPlan;

const DEFAULT_PATH: &str = "/exec";

/// SQL text quoted in error messages is cut to this many characters.
const MAX_QUOTED_SQL: usize = 200;

pub struct HttpSql {
    client: HttpClient,
    path: String,
}

impl HttpSql {
    pub async fn connect(
        endpoint: &EndpointPlan,
        url: &str,
        timeout: Duration,
    ) -> Result<HttpSql, DriverError> {
        let path = option_text(endpoint, "path")?.unwrap_or_else(|| DEFAULT_PATH.to_string());
        if !path.starts_with('/') {
            return Err(crate::net::http::config_error(
                endpoint,
                format!("option `path`: `{path}` must start with `/`"),
            ));
        }
        let client =
            HttpClient::for_endpoint(endpoint, url, connect_timeout(endpoint, timeout), timeout)
                .await?;
        Ok(HttpSql::with_client(client, path))
    }

    /// Over a client already connected; `path` is QuestDB's `/exec` or its equivalent.
    pub fn with_client(client: HttpClient, path: String) -> HttpSql {
        HttpSql { client, path }
    }

    /// Runs a statement whose result, if any, is not needed (DDL, TRUNCATE).
    pub async fn execute(&mut self, sql: &str) -> Result<(), DriverError> {
        self.run(sql).await.map(|_| ())
    }

    /// `execute`, or `false` when the table it names does not exist.
    pub async fn execute_if_exists(&mut self, sql: &str) -> Result<bool, DriverError> {
        Ok(matches!(self.answer(sql).await?, Answer::Json(_)))
    }

    /// Runs a query and returns its first row's first value, which must be a non-negative
    /// integer.
    pub async fn count(&mut self, sql: &str) -> Result<u64, DriverError> {
        let answer = self.run(sql).await?;
        self.count_of(sql, &answer)
    }

    /// `count`, or `None` when the table it counts does not exist.
    pub async fn count_if_exists(&mut self, sql: &str) -> Result<Option<u64>, DriverError> {
        match self.answer(sql).await? {
            Answer::Json(j) => self.count_of(sql, &j).map(Some),
            Answer::NoTable(_) => Ok(None),
        }
    }

    fn count_of(&self, sql: &str, answer: &Json) -> Result<u64, DriverError> {
        let fail = |why: String| {
            DriverError::new(
                ErrorClass::Server,
                format!(
                    "{}: the count `{}` {why}",
                    self.client.endpoint(),
                    quote_sql(sql)
                ),
                false,
            )
        };
        let Some(rows) = answer.get("dataset").and_then(Json::as_array) else {
            return Err(fail("returned no `dataset`".to_string()));
        };
        let Some(first) = rows.first() else {
            return Err(fail("returned no rows".to_string()));
        };
        let Some(value) = first.as_array().and_then(|r| r.first()) else {
            return Err(fail("returned a row without columns".to_string()));
        };
        json_count(value).map_err(fail)
    }

    /// Runs a query and returns its first row's first value as text (a string as is, another
    /// value as JSON), or `None` when the answer has no rows: `SELECT build()` and the like.
    pub async fn text(&mut self, sql: &str) -> Result<Option<String>, DriverError> {
        let answer = self.run(sql).await?;
        Ok(first_value(&answer).map(|v| match v {
            Json::String(s) => s.clone(),
            other => other.to_string(),
        }))
    }

    async fn run(&mut self, sql: &str) -> Result<Json, DriverError> {
        match self.answer(sql).await? {
            Answer::Json(j) => Ok(j),
            Answer::NoTable(e) => Err(e),
        }
    }

    async fn answer(&mut self, sql: &str) -> Result<Answer, DriverError> {
        let target = with_query(&self.path, &format!("query={}", url_encode(sql)));
        let answer = self
            .client
            .request(Method::GET, &target, &HeaderMap::new(), Bytes::new())
            .await?;
        let parsed = serde_json::from_slice::<Json>(&answer.body).ok();
        if let Some(message) = parsed.as_ref().and_then(|j| sql_error(j, sql)) {
            let e = DriverError::new(
                ErrorClass::Server,
                format!(
                    "{} rejected `{}`: {message} (HTTP {})",
                    self.client.endpoint(),
                    quote_sql(sql),
                    answer.status
                ),
                false,
            );
            let no_table = parsed
                .as_ref()
                .and_then(|j| j.get("error"))
                .and_then(Json::as_str)
                .is_some_and(super::says_no_table);
            return if no_table {
                Ok(Answer::NoTable(e))
            } else {
                Err(e)
            };
        }
        if !answer.is_success() {
            return Err(reject(&self.client, sql, &answer));
        }
        match parsed {
            Some(j) => Ok(Answer::Json(j)),
            None => Err(DriverError::new(
                ErrorClass::Server,
                format!(
                    "{}: the answer to `{}` is not JSON: {}",
                    self.client.endpoint(),
                    quote_sql(sql),
                    quote_server_text(&String::from_utf8_lossy(&answer.body))
                ),
                false,
            )),
        }
    }
}

/// A statement's answer: its JSON, or the server's refusal because the table it names does not
/// exist (the error, for the callers to whom that is one).
enum Answer {
    Json(Json),
    NoTable(DriverError),
}

/// The first row's first value of a query's answer.
fn first_value(answer: &Json) -> Option<&Json> {
    answer
        .get("dataset")?
        .as_array()?
        .first()?
        .as_array()?
        .first()
        .filter(|v| !v.is_null())
}

fn reject(client: &HttpClient, sql: &str, answer: &Response) -> DriverError {
    answer.server_error(&format!(
        "{} rejected `{}`",
        client.endpoint(),
        quote_sql(sql)
    ))
}

/// QuestDB's `error`, with the text of the query from its `position` on.
fn sql_error(answer: &Json, sql: &str) -> Option<String> {
    let error = answer.get("error")?;
    let mut message = match error {
        Json::String(s) => quote_server_text(s),
        other => quote_server_text(&other.to_string()),
    };
    if let Some(pos) = answer.get("position").and_then(Json::as_u64) {
        let at = usize::try_from(pos).unwrap_or(usize::MAX);
        match sql.get(at..) {
            Some(rest) if !rest.is_empty() => {
                let near: String = rest.chars().take(40).collect();
                message = format!("{message} (at position {pos}: `{near}`)");
            }
            _ => message = format!("{message} (at position {pos})"),
        }
    }
    Some(message)
}

fn quote_sql(sql: &str) -> String {
    let one_line = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(MAX_QUOTED_SQL) {
        Some((cut, _)) => format!("{}...", &one_line[..cut]),
        None => one_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_positions() {
        let answer = serde_json::json!({
            "query": "SELECT count() FROM nope",
            "error": "table does not exist [table=nope]",
            "position": 20
        });
        assert_eq!(
            sql_error(&answer, "SELECT count() FROM nope").as_deref(),
            Some("table does not exist [table=nope] (at position 20: `nope`)")
        );
        assert_eq!(
            sql_error(&answer, "short").as_deref(),
            Some("table does not exist [table=nope] (at position 20)")
        );
        assert_eq!(sql_error(&serde_json::json!({"ddl": "OK"}), "x"), None);
    }

    #[test]
    fn first_values_of_answers() {
        let build = serde_json::json!({
            "query": "SELECT build()",
            "columns": [{"name": "build", "type": "STRING"}],
            "dataset": [["Build Information: QuestDB 9.4.4"]],
            "count": 1
        });
        assert_eq!(
            first_value(&build),
            Some(&serde_json::json!("Build Information: QuestDB 9.4.4"))
        );
        for empty in [
            serde_json::json!({"ddl": "OK"}),
            serde_json::json!({"dataset": []}),
            serde_json::json!({"dataset": [[]]}),
            serde_json::json!({"dataset": [[null]]}),
        ] {
            assert_eq!(first_value(&empty), None, "{empty}");
        }
    }
}
