//! The WebSocket upgrade of a QWP connection (ingestion or queries), on tokio-tungstenite:
//! RFC 6455 with the QWP headers, no subprotocol, no Origin, no extensions; the server's
//! `X-QWP-Version` and `X-QWP-Max-Batch-Size` are read back. `ws://` in clear, `wss://` under
//! TLS (the connector's: `net::tls`).

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderMap, HeaderValue};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::WebSocketStream;

use super::{MAX_MESSAGE, VERSION};
use crate::net::error::ErrorClass;
use crate::net::tls::{Connector, Counters, Stream};

/// An upgraded QWP connection.
pub struct Connected {
    pub ws: WebSocketStream<Stream>,
    /// The negotiated version (`X-QWP-Version`; 1 when an ingest server leaves it out).
    pub version: u8,
    /// `X-QWP-Max-Batch-Size`: the largest message the server takes, when it says.
    pub max_batch_size: Option<usize>,
    /// The bytes that crossed the socket, the upgrade's included (below TLS).
    pub counters: Arc<Counters>,
    /// The 101 answer's headers.
    pub headers: HeaderMap,
}

/// Which side of QWP a connection speaks; the upgrade differs a little.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// `/write/v4`: a missing `X-QWP-Version` means version 1 (as the Rust core reads it).
    Ingest,
    /// `/read/v1`: the server must say `X-QWP-Version`.
    Query,
}

/// The parts of a `ws://` or `wss://` URL a connection needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WsUrl {
    /// `wss://`.
    pub tls: bool,
    /// `host:port` (port 9000 when the URL has none).
    pub authority: String,
    /// The URL's path when it has one other than `/`; the caller's default otherwise.
    pub path: Option<String>,
    /// `Authorization: Basic ...` from `user:password@` in the URL.
    pub basic: Option<String>,
}

impl WsUrl {
    pub fn parse(url: &str) -> Result<WsUrl, String> {
        let (rest, tls) = if let Some(r) = url.strip_prefix("ws://") {
            (r, false)
        } else if let Some(r) = url.strip_prefix("wss://") {
            (r, true)
        } else {
            return Err(format!(
                "{}: a QWP endpoint's URL starts with `ws://` or `wss://`",
                crate::net::http::redact_url(url)
            ));
        };
        let (hostpart, path) = match rest.find('/') {
            Some(i) => (&rest[..i], Some(&rest[i..])),
            None => (rest, None),
        };
        let (userinfo, host) = match hostpart.rfind('@') {
            Some(i) => (Some(&hostpart[..i]), &hostpart[i + 1..]),
            None => (None, hostpart),
        };
        if host.is_empty() {
            return Err(format!(
                "{}: the URL names no host",
                crate::net::http::redact_url(url)
            ));
        }
        let has_port = match host.rfind(':') {
            Some(i) => !host[i..].contains(']'),
            None => false,
        };
        let authority = if has_port {
            host.to_string()
        } else {
            format!("{host}:9000")
        };
        let basic = userinfo.map(|u| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(u.as_bytes())
            )
        });
        let path = path.filter(|p| *p != "/").map(str::to_string);
        Ok(WsUrl {
            tls,
            authority,
            path,
            basic,
        })
    }

    pub fn scheme(&self) -> &'static str {
        if self.tls {
            "wss://"
        } else {
            "ws://"
        }
    }
}

/// Why a connection could not be made: a text for the caller's error, and whether it was the
/// connect timeout that ran out (a `timeout` in reports, not a refused connection).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectError {
    pub message: String,
    pub timed_out: bool,
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<String> for ConnectError {
    fn from(message: String) -> ConnectError {
        ConnectError {
            message,
            timed_out: false,
        }
    }
}

/// Opens a connection to `url`'s host through `connector` (TLS for `wss://`) and upgrades it
/// on `path` (or the URL's own path). `extra` headers are added as given.
pub async fn connect(
    connector: &Connector,
    url: &str,
    default_path: &str,
    side: Side,
    extra: &[(&str, String)],
    connect_timeout: Duration,
) -> Result<Connected, ConnectError> {
    let parsed = WsUrl::parse(url).map_err(ConnectError::from)?;
    let path = parsed.path.as_deref().unwrap_or(default_path);
    let shown = format!("{}{}{path}", parsed.scheme(), parsed.authority);
    if parsed.tls != connector.is_tls() {
        return Err(ConnectError::from(format!(
            "{shown}: the connector was made for another scheme"
        )));
    }
    let attempt = async {
        // Nagle is off: acks and query answers are small and waited on.
        let stream = connector
            .connect(&parsed.authority, connect_timeout)
            .await
            .map_err(|e| ConnectError {
                timed_out: e.class == ErrorClass::Timeout,
                // Named by the URL with its path, as the upgrade's own errors are.
                message: e.message.replacen(
                    &format!("cannot connect to {}", connector.label()),
                    &format!("cannot connect to {shown}"),
                    1,
                ),
            })?;
        let counters = stream.counters();
        // The request's URI is the path only; tungstenite takes the scheme for granted.
        let mut req = format!("{}{}{path}", parsed.scheme(), parsed.authority)
            .into_client_request()
            .map_err(|e| format!("{shown}: {e}"))?;
        let h = req.headers_mut();
        h.insert("X-QWP-Max-Version", HeaderValue::from(VERSION as u16));
        h.insert(
            "X-QWP-Client-Id",
            HeaderValue::from_static(concat!("wlrun/", env!("CARGO_PKG_VERSION"))),
        );
        if let Some(b) = &parsed.basic {
            let v = HeaderValue::from_str(b).map_err(|e| format!("{shown}: {e}"))?;
            h.insert("Authorization", v);
        }
        for (k, v) in extra {
            let name = tokio_tungstenite::tungstenite::http::HeaderName::from_bytes(k.as_bytes())
                .map_err(|e| format!("{shown}: header {k}: {e}"))?;
            let v = HeaderValue::from_str(v).map_err(|e| format!("{shown}: header {k}: {e}"))?;
            h.insert(name, v);
        }
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE + super::HEADER_LEN))
            .max_frame_size(Some(MAX_MESSAGE + super::HEADER_LEN))
            // Messages are written whole, straight after being handed over.
            .write_buffer_size(0);
        let (ws, resp) = tokio_tungstenite::client_async_with_config(req, stream, Some(config))
            .await
            .map_err(|e| upgrade_error(&shown, e))?;
        let headers = resp.headers().clone();
        let version = match header(&headers, "x-qwp-version") {
            Some(v) => v.trim().parse::<u8>().map_err(|_| {
                format!("{shown}: the server's X-QWP-Version `{v}` is not a number")
            })?,
            None if side == Side::Ingest => 1,
            None => {
                return Err(format!(
                    "{shown}: the server's upgrade answer has no X-QWP-Version header: not a QWP \
                     query endpoint"
                )
                .into())
            }
        };
        if version != VERSION {
            return Err(format!(
                "{shown}: the server speaks QWP version {version}; this wlrun speaks version {VERSION}"
            )
            .into());
        }
        let max_batch_size = match header(&headers, "x-qwp-max-batch-size") {
            Some(v) => Some(v.trim().parse::<usize>().map_err(|_| {
                format!("{shown}: the server's X-QWP-Max-Batch-Size `{v}` is not a number")
            })?),
            None => None,
        };
        Ok::<_, ConnectError>(Connected {
            ws,
            version,
            max_batch_size,
            counters,
            headers,
        })
    };
    match tokio::time::timeout(connect_timeout, attempt).await {
        Ok(r) => r,
        Err(_) => Err(ConnectError {
            message: format!(
                "cannot connect to {shown}: no upgrade within {}",
                crate::net::fmt::fmt_duration(connect_timeout)
            ),
            timed_out: true,
        }),
    }
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// An upgrade that failed, in the server's words where it gave any (401 and 403 are
/// authentication; 421 a replica or a primary catching up; 404 a server without QWP).
fn upgrade_error(shown: &str, e: tokio_tungstenite::tungstenite::Error) -> String {
    use tokio_tungstenite::tungstenite::Error;
    match e {
        Error::Http(resp) => {
            let status = resp.status();
            let body = resp
                .body()
                .as_deref()
                .map(crate::net::http::server_message)
                .unwrap_or_default();
            let why = match status.as_u16() {
                401 | 403 => " (authentication failed)",
                404 => " (no QWP endpoint here: QWP needs QuestDB 10.0 or newer)",
                421 => " (the node is a replica or still catching up)",
                _ => "",
            };
            if body.is_empty() {
                format!("cannot upgrade {shown}: HTTP {status}{why}")
            } else {
                format!("cannot upgrade {shown}: HTTP {status}{why}: {body}")
            }
        }
        // A TLS port answers a plain upgrade with a TLS alert, which does not parse as HTTP.
        other @ (Error::HttpFormat(_) | Error::Protocol(_)) if shown.starts_with("ws://") => {
            format!("cannot upgrade {shown}: {other} (if this is a TLS port, use wss://)")
        }
        other => format!("cannot upgrade {shown}: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_server_that_never_upgrades_is_a_timeout_and_a_closed_port_is_not() {
        // Accepts the connection and reads nothing: the upgrade never comes.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let keep = tokio::spawn(async move {
            let conn = listener.accept().await;
            tokio::time::sleep(Duration::from_secs(5)).await;
            drop(conn);
        });
        let url = format!("ws://127.0.0.1:{port}");
        let wait = Duration::from_millis(200);
        let plain = Connector::plain("q.qwp");
        let e = connect(&plain, &url, "/read/v1", Side::Query, &[], wait)
            .await
            .err()
            .unwrap();
        assert!(e.timed_out, "{e}");
        assert!(e.message.contains("no upgrade within"), "{e}");
        keep.abort();
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let url = format!("ws://127.0.0.1:{closed}");
        let e = connect(&plain, &url, "/write/v4", Side::Ingest, &[], wait)
            .await
            .err()
            .unwrap();
        assert!(!e.timed_out, "{e}");
        assert!(e.message.contains("cannot connect to"), "{e}");
    }

    #[test]
    fn urls_give_authority_path_and_credentials() {
        assert_eq!(
            WsUrl::parse("ws://127.0.0.1:9000").unwrap(),
            WsUrl {
                tls: false,
                authority: "127.0.0.1:9000".into(),
                path: None,
                basic: None
            }
        );
        let u = WsUrl::parse("ws://admin:quest@localhost/api/v4/write").unwrap();
        assert_eq!(u.authority, "localhost:9000");
        assert_eq!(u.path.as_deref(), Some("/api/v4/write"));
        assert_eq!(u.basic.as_deref(), Some("Basic YWRtaW46cXVlc3Q="));
        assert_eq!(WsUrl::parse("ws://h:1/").unwrap().path, None);
        let u = WsUrl::parse("wss://h:9443/x").unwrap();
        assert!(u.tls);
        assert_eq!(u.authority, "h:9443");
        assert!(WsUrl::parse("http://h:9000").is_err());
        assert!(WsUrl::parse("ws:///x").is_err());
    }
}
