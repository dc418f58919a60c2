//! Counts for line-protocol stores without SQL, and VictoriaMetrics' admin calls.
//!
//! - PromQL (`/api/v1/query`, Prometheus and VictoriaMetrics): an instant query whose vector's
//!   values are summed; an empty vector is 0.
//! - InfluxQL (`/query`, InfluxDB v1): the value column of every row of every series of the
//!   first statement's result is summed (`SELECT count(f) ... GROUP BY ...` gives one row per
//!   group); no series is 0. `count(*)` answers one column per field (`count_usage_user`,
//!   ...), which may differ where fields are sparse: a row count refuses an answer with more
//!   than one value column, a sample count adds them all ([`InfluxColumns`]).
//!
//! The endpoint's `path` option, when set, replaces the query path (`/api/v1/query` or
//! `/query`), e.g. `path "/query?db=benchmark"`; the URL's own path is a prefix of every path
//! (`http://vmselect:8481/select/0/prometheus`).
//!
//! VictoriaMetrics keeps one sample per field (`cpu,host=a usage_user=1i` is the series
//! `cpu_usage_user{host="a"}`), makes new samples searchable only after a few seconds or a
//! `force_flush`, and caches query results: counts ask with `nocache=1`.

use std::time::Duration;

use bytes::Bytes;
use hyper::header::HeaderMap;
use hyper::Method;
use serde_json::Value as Json;

use crate::net::error::{DriverError, ErrorClass};
use crate::net::http::float_count;
use crate::net::http::{
    connect_timeout, option_text, quote_server_text, url_encode, with_query, HttpClient, Response,
};
use crate::plan::EndpointPlan;

const PROMQL_PATH: &str = "/api/v1/query";
const INFLUXQL_PATH: &str = "/query";

/// An HTTP connection to a metric store's query API.
pub struct MetricsClient {
    http: HttpClient,
    /// The endpoint's `path` option.
    path: Option<String>,
}

impl MetricsClient {
    pub async fn connect(
        endpoint: &EndpointPlan,
        url: &str,
        timeout: Duration,
    ) -> Result<MetricsClient, DriverError> {
        let path = option_text(endpoint, "path")?;
        if let Some(p) = path.as_deref().filter(|p| !p.starts_with('/')) {
            return Err(crate::net::http::config_error(
                endpoint,
                format!("option `path`: `{p}` must start with `/`"),
            ));
        }
        let http =
            HttpClient::for_endpoint(endpoint, url, connect_timeout(endpoint, timeout), timeout)
                .await?;
        Ok(MetricsClient { http, path })
    }

    /// Over a client already connected; `path` replaces the default query paths.
    pub fn with_client(http: HttpClient, path: Option<String>) -> MetricsClient {
        MetricsClient { http, path }
    }

    pub fn http(&mut self) -> &mut HttpClient {
        &mut self.http
    }

    async fn get(&mut self, target: &str) -> Result<Response, DriverError> {
        self.http
            .request(Method::GET, target, &HeaderMap::new(), Bytes::new())
            .await
    }

    fn error(&self, message: String) -> DriverError {
        DriverError::new(
            ErrorClass::Server,
            format!("{}: {message}", self.http.endpoint()),
            false,
        )
    }
}

/// PromQL's `time`: seconds with millisecond decimals.
fn promql_time(unix_ms: i64) -> String {
    let sign = if unix_ms < 0 { "-" } else { "" };
    let abs = unix_ms.unsigned_abs();
    format!("{sign}{}.{:03}", abs / 1000, abs % 1000)
}

/// Evaluates `query` at `at_unix_ms` and returns the sum of its result's values, which must
/// be whole, non-negative numbers.
pub async fn promql_count(
    client: &mut MetricsClient,
    query: &str,
    at_unix_ms: i64,
) -> Result<u64, DriverError> {
    let path = client.path.as_deref().unwrap_or(PROMQL_PATH).to_string();
    let target = with_query(
        &path,
        &format!(
            "query={}&time={}&nocache=1",
            url_encode(query),
            promql_time(at_unix_ms)
        ),
    );
    let answer = client.get(&target).await?;
    let what = format!("PromQL `{}`", quote_server_text(query));
    let json = match serde_json::from_slice::<Json>(&answer.body) {
        Ok(j) => j,
        Err(_) if !answer.is_success() => {
            return Err(answer.server_error(&client_what(client, &what)))
        }
        Err(_) => {
            return Err(client.error(format!(
                "the answer to {what} is not JSON: {}",
                quote_server_text(&String::from_utf8_lossy(&answer.body))
            )))
        }
    };
    if json.get("status").and_then(Json::as_str) != Some("success") || !answer.is_success() {
        let kind = json.get("errorType").and_then(Json::as_str).unwrap_or("");
        let text = match json.get("error").and_then(Json::as_str) {
            Some(e) => quote_server_text(e),
            None => quote_server_text(&String::from_utf8_lossy(&answer.body)),
        };
        let kind = if kind.is_empty() {
            String::new()
        } else {
            format!("{kind}: ")
        };
        return Err(client.error(format!(
            "{what} failed (HTTP {}): {kind}{text}",
            answer.status
        )));
    }
    let data = json.get("data").unwrap_or(&Json::Null);
    let result = data.get("result").unwrap_or(&Json::Null);
    let fail = |why: String| client.error(format!("{what} {why}"));
    match data.get("resultType").and_then(Json::as_str) {
        Some("vector") => {
            let Some(samples) = result.as_array() else {
                return Err(fail("returned a vector without `result`".to_string()));
            };
            let mut total: u64 = 0;
            for s in samples {
                let n = promql_value(s.get("value").unwrap_or(&Json::Null)).map_err(|why| {
                    fail(format!(
                        "returned {why} for {}",
                        quote_server_text(&s.get("metric").unwrap_or(&Json::Null).to_string())
                    ))
                })?;
                total = total
                    .checked_add(n)
                    .ok_or_else(|| fail("returned counts whose sum overflows".to_string()))?;
            }
            Ok(total)
        }
        Some("scalar") => promql_value(result).map_err(|why| fail(format!("returned {why}"))),
        Some(other) => Err(fail(format!(
            "returned a {other}, not an instant vector: count with e.g. \
             `sum(count_over_time(...[<range>]))`"
        ))),
        None => Err(fail("returned no `resultType`".to_string())),
    }
}

fn client_what(client: &MetricsClient, what: &str) -> String {
    format!("{}: {what}", client.http.endpoint())
}

/// A PromQL sample `[<unix seconds>, "<value>"]` as a count.
fn promql_value(sample: &Json) -> Result<u64, String> {
    let text = sample
        .as_array()
        .and_then(|pair| pair.get(1))
        .and_then(Json::as_str)
        .ok_or_else(|| {
            format!(
                "a malformed sample {}",
                quote_server_text(&sample.to_string())
            )
        })?;
    let f: f64 = text.parse().map_err(|_| {
        format!(
            "the value `{}`, which is not a number",
            quote_server_text(text)
        )
    })?;
    float_count(f).ok_or_else(|| format!("the value {text}, which is not a whole count"))
}

/// How an InfluxQL count reads the value columns (every column but `time`) of its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InfluxColumns {
    /// Rows: the answer must have exactly one value column. Which of `count(*)`'s columns
    /// counts rows is not something wlrun can know, so several are an error, never a guess.
    One,
    /// Samples: every value column is added (each counts the values of one field).
    All,
}

/// Runs an InfluxQL query and returns the sum of its value columns (see [`InfluxColumns`])
/// over every row of every series of the first statement.
pub async fn influxql_count(
    client: &mut MetricsClient,
    query: &str,
    columns: InfluxColumns,
) -> Result<u64, DriverError> {
    let path = client.path.as_deref().unwrap_or(INFLUXQL_PATH).to_string();
    let target = with_query(&path, &format!("q={}", url_encode(query)));
    let answer = client.get(&target).await?;
    let what = format!("InfluxQL `{}`", quote_server_text(query));
    let json = match serde_json::from_slice::<Json>(&answer.body) {
        Ok(j) => j,
        Err(_) if !answer.is_success() => {
            return Err(answer.server_error(&client_what(client, &what)))
        }
        Err(_) => {
            return Err(client.error(format!(
                "the answer to {what} is not JSON: {}",
                quote_server_text(&String::from_utf8_lossy(&answer.body))
            )))
        }
    };
    let first = json
        .get("results")
        .and_then(Json::as_array)
        .and_then(|r| r.first());
    // InfluxDB puts a request error at the top level, a statement's error in its result.
    let error = json
        .get("error")
        .or_else(|| first.and_then(|r| r.get("error")))
        .and_then(Json::as_str);
    if let Some(e) = error {
        return Err(client.error(format!(
            "{what} failed (HTTP {}): {}",
            answer.status,
            quote_server_text(e)
        )));
    }
    if !answer.is_success() {
        return Err(answer.server_error(&client_what(client, &what)));
    }
    let Some(first) = first else {
        return Err(client.error(format!("{what} returned no result")));
    };
    let series = match first.get("series") {
        None | Some(Json::Null) => return Ok(0),
        Some(Json::Array(s)) => s,
        Some(other) => {
            return Err(client.error(format!(
                "{what} returned a malformed `series`: {}",
                quote_server_text(&other.to_string())
            )))
        }
    };
    let mut total: u64 = 0;
    for s in series {
        let names: Vec<&str> = s
            .get("columns")
            .and_then(Json::as_array)
            .map(|c| c.iter().map(|n| n.as_str().unwrap_or("")).collect())
            .unwrap_or_default();
        let value_columns: Vec<usize> = (0..names.len()).filter(|&i| names[i] != "time").collect();
        // Asking again gets the same columns: these are fatal, so a verify stops at once
        // instead of retrying for its whole `within`.
        let unreadable = |why: String| {
            DriverError::new(
                ErrorClass::Server,
                format!("{}: {what} {why}", client.http.endpoint()),
                true,
            )
        };
        if value_columns.is_empty() {
            return Err(unreadable(format!(
                "returned a series without a value column: {}",
                quote_server_text(&s.to_string())
            )));
        }
        if columns == InfluxColumns::One && value_columns.len() > 1 {
            let listed: Vec<&str> = value_columns.iter().map(|&i| names[i]).collect();
            return Err(unreadable(format!(
                "returned {} value columns ({}), and a row count needs one: count one field, \
                 e.g. `SELECT count(\"{}\") FROM ...`, or count samples (`count samples via \
                 ... influxql`), which adds every column and divides by the fields",
                listed.len(),
                quote_server_text(&listed.join(", ")),
                quote_server_text(listed[0].strip_prefix("count_").unwrap_or(listed[0])),
            )));
        }
        let rows = s.get("values").and_then(Json::as_array);
        for row in rows.into_iter().flatten() {
            let cells = row.as_array();
            for &i in &value_columns {
                let n = match cells.and_then(|r| r.get(i)) {
                    // `count` over a group with no points in it, with `fill(null)`.
                    Some(Json::Null) => 0,
                    Some(v) => crate::net::http::json_count(v)
                        .map_err(|why| client.error(format!("{what} {why}")))?,
                    None => {
                        return Err(unreadable(format!(
                            "returned a row without its column `{}`: {}",
                            quote_server_text(names[i]),
                            quote_server_text(&row.to_string())
                        )))
                    }
                };
                total = total.checked_add(n).ok_or_else(|| {
                    client.error(format!("{what} returned counts whose sum overflows"))
                })?;
            }
        }
    }
    Ok(total)
}

/// Runs one InfluxQL statement that changes something (`CREATE DATABASE`, `DROP MEASUREMENT`)
/// at `path` (`/query?db=bench`). A POST: InfluxDB 1.x takes such statements over GET only
/// with a deprecation warning.
pub async fn influxql_execute(
    client: &mut MetricsClient,
    path: &str,
    statement: &str,
) -> Result<(), DriverError> {
    let target = with_query(path, &format!("q={}", url_encode(statement)));
    let answer = client
        .http
        .request(Method::POST, &target, &HeaderMap::new(), Bytes::new())
        .await?;
    let what = format!("InfluxQL `{}`", quote_server_text(statement));
    let json = serde_json::from_slice::<Json>(&answer.body).unwrap_or(Json::Null);
    let error = json.get("error").or_else(|| {
        json.get("results")
            .and_then(Json::as_array)
            .and_then(|r| r.iter().find_map(|r| r.get("error")))
    });
    if let Some(e) = error {
        let text = e.as_str().map_or_else(|| e.to_string(), str::to_string);
        return Err(client.error(format!(
            "{what} failed (HTTP {}): {}",
            answer.status,
            quote_server_text(&text)
        )));
    }
    if !answer.is_success() {
        return Err(answer.server_error(&client_what(client, &what)));
    }
    Ok(())
}

/// Deletes every series `match_selector` matches (`{__name__=~"cpu_.*"}`).
pub async fn victoria_delete_series(
    client: &mut MetricsClient,
    match_selector: &str,
) -> Result<(), DriverError> {
    let target = format!(
        "/api/v1/admin/tsdb/delete_series?match%5B%5D={}",
        url_encode(match_selector)
    );
    let answer = client.get(&target).await?;
    if answer.is_success() {
        Ok(())
    } else {
        Err(answer.server_error(&client_what(
            client,
            &format!("deleting the series {match_selector}"),
        )))
    }
}

/// Makes every sample received so far searchable now rather than in a few seconds.
pub async fn victoria_force_flush(client: &mut MetricsClient) -> Result<(), DriverError> {
    let answer = client.get("/internal/force_flush").await?;
    if answer.is_success() {
        Ok(())
    } else {
        Err(answer.server_error(&client_what(client, "flushing recent samples")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promql_times() {
        assert_eq!(promql_time(1_451_606_400_000), "1451606400.000");
        assert_eq!(promql_time(1_451_606_400_999), "1451606400.999");
        assert_eq!(promql_time(-1_500), "-1.500");
        assert_eq!(promql_time(0), "0.000");
    }

    #[test]
    fn promql_values() {
        assert_eq!(promql_value(&serde_json::json!([1.5, "360"])), Ok(360));
        assert_eq!(
            promql_value(&serde_json::json!([1, "1e+06"])),
            Ok(1_000_000)
        );
        assert!(promql_value(&serde_json::json!([1, "NaN"])).is_err());
        assert!(promql_value(&serde_json::json!([1, "2.5"])).is_err());
        assert!(promql_value(&serde_json::json!([1, "-3"])).is_err());
        assert!(promql_value(&serde_json::json!([1, 3])).is_err());
    }
}
