//! InfluxDB line protocol over HTTP: one POST per chunk on one keep-alive connection per
//! worker. A 2xx answer acknowledges the chunk; 4xx/5xx reject it (the next chunk is still
//! sent).
//!
//! Beware: a 2xx is not proof of storage everywhere. VictoriaMetrics answers 204 to lines it
//! cannot parse and only counts them in its `vm_rows_invalid_total` metric; the visible-rows
//! count after the phase is what catches that.
//!
//! Timestamps: the encoder writes nanoseconds, and they are sent as such (`precision=ns`,
//! which QuestDB, InfluxDB v1/v2 and VictoriaMetrics all read as nanoseconds). Other
//! `precision` values are refused rather than rescaled.

use bytes::Bytes;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::Method;

use super::{Chunk, DriverConfig, Sent};
use crate::net::error::DriverError;
use crate::net::http::{config_error, option_flag, option_text, with_query, HttpClient};
use crate::plan::EndpointPlan;
use crate::value::Value;

/// Where line protocol is posted when the endpoint has no `path` option.
const DEFAULT_PATH: &str = "/write";

/// Boxed: the connection state is large, and `Driver` is an enum of every driver.
pub struct IlpHttp(Box<State>);

struct State {
    client: HttpClient,
    /// Path and query of every POST.
    path: String,
    headers: HeaderMap,
}

impl IlpHttp {
    pub async fn connect(cfg: &DriverConfig) -> Result<IlpHttp, DriverError> {
        let ep = &cfg.endpoint;
        let Some(url) = cfg.url.as_deref() else {
            return Err(config_error(ep, "an `ilp_http` endpoint needs a URL"));
        };
        if option_flag(ep, "gzip")? {
            return Err(config_error(
                ep,
                "`gzip true` is not supported yet: wlrun sends line protocol uncompressed",
            ));
        }
        check_precision(ep)?;
        let path =
            write_path(option_text(ep, "path")?.as_deref()).map_err(|e| config_error(ep, e))?;
        let client =
            HttpClient::via(&cfg.connector()?, ep, url, cfg.connect_timeout, cfg.timeout).await?;
        let mut headers = HeaderMap::new();
        // The endpoint's own `headers` may name another content type; theirs wins.
        if !client.default_headers().contains_key(header::CONTENT_TYPE) {
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
        }
        Ok(IlpHttp(Box::new(State {
            client,
            path,
            headers,
        })))
    }

    pub async fn send(&mut self, chunk: &Chunk) -> Result<Sent, DriverError> {
        // Nothing left to write (the encoder dropped every row): an empty POST would only
        // measure a round trip, and InfluxDB v2 rejects it.
        if chunk.bytes.is_empty() {
            return Ok(Sent {
                socket_bytes: 0,
                acked: true,
            });
        }
        // hyper needs an owned body; the chunk goes back to the producer for reuse.
        let body = Bytes::copy_from_slice(&chunk.bytes);
        let s = &mut *self.0;
        let answer = s
            .client
            .request(Method::POST, &s.path, &s.headers, body)
            .await?;
        if answer.is_success() {
            Ok(Sent {
                socket_bytes: answer.sent_bytes,
                acked: true,
            })
        } else {
            Err(answer.server_error(&format!(
                "{} rejected a batch of {} rows (POST {})",
                s.client.endpoint(),
                chunk.rows,
                s.path
            )))
        }
    }

    /// Connections reopened after the server closed one between batches (VictoriaMetrics
    /// does every `-http.connTimeout`, 2 minutes by default).
    pub fn reconnects(&self) -> u64 {
        self.0.client.reconnects()
    }
}

/// Only nanoseconds: the encoder writes nanosecond timestamps and nothing rescales them.
fn check_precision(ep: &EndpointPlan) -> Result<(), DriverError> {
    match ep.options.get("precision") {
        None | Some(Value::None) => Ok(()),
        Some(Value::Symbol(s)) if s == "ns" => Ok(()),
        Some(other) => Err(config_error(
            ep,
            format!(
                "`precision {other}` is not supported over ilp_http: wlrun's line protocol \
                 carries nanosecond timestamps and does not rescale them; use `precision ns` \
                 or leave the option out"
            ),
        )),
    }
}

/// The POST target: the `path` option or `/write`, with `precision=ns` added unless the
/// path already says nanoseconds. Servers differ in what they assume without it
/// (VictoriaMetrics guesses the unit from the number of digits in newer versions).
fn write_path(option: Option<&str>) -> Result<String, String> {
    let path = option.unwrap_or(DEFAULT_PATH);
    if !path.starts_with('/') {
        return Err(format!("option `path`: `{path}` must start with `/`"));
    }
    if path.contains('#') {
        return Err(format!("option `path`: `{path}` cannot contain `#`"));
    }
    let query = path.split_once('?').map_or("", |(_, q)| q);
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key == "precision" {
            return if value == "n" || value == "ns" {
                Ok(path.to_string())
            } else {
                Err(format!(
                    "option `path`: `precision={value}` in `{path}` does not match the \
                     nanosecond timestamps wlrun writes; use `precision=ns`"
                ))
            };
        }
    }
    Ok(with_query(path, "precision=ns"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_paths() {
        assert_eq!(write_path(None).unwrap(), "/write?precision=ns");
        assert_eq!(write_path(Some("/write")).unwrap(), "/write?precision=ns");
        assert_eq!(
            write_path(Some("/api/v2/write?org=o&bucket=b")).unwrap(),
            "/api/v2/write?org=o&bucket=b&precision=ns"
        );
        assert_eq!(
            write_path(Some("/write?precision=n")).unwrap(),
            "/write?precision=n"
        );
        assert!(write_path(Some("/write?precision=ms"))
            .unwrap_err()
            .contains("precision=ms"));
        assert!(write_path(Some("write")).is_err());
    }
}
