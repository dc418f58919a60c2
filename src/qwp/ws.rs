//! The WebSocket upgrade of a QWP connection (ingestion or queries), on tokio-tungstenite:
//! RFC 6455 with the QWP headers, no subprotocol, no Origin, no extensions; the server's
//! `X-QWP-Version` and `X-QWP-Max-Batch-Size` are read back. Only `ws://` is spoken: a
//! `wss://` URL is refused with a message rather than sent in clear.

use std::time::Duration;

use base64::Engine as _;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderMap, HeaderValue};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::WebSocketStream;

use super::{MAX_MESSAGE, VERSION};

/// An upgraded QWP connection.
pub struct Connected {
    pub ws: WebSocketStream<TcpStream>,
    /// The negotiated version (`X-QWP-Version`; 1 when an ingest server leaves it out).
    pub version: u8,
    /// `X-QWP-Max-Batch-Size`: the largest message the server takes, when it says.
    pub max_batch_size: Option<usize>,
    /// Bytes the upgrade request took on the wire (request line and headers).
    pub request_bytes: u64,
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

/// The parts of a `ws://` URL a connection needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WsUrl {
    /// `host:port` (port 9000 when the URL has none).
    pub authority: String,
    /// The URL's path when it has one other than `/`; the caller's default otherwise.
    pub path: Option<String>,
    /// `Authorization: Basic ...` from `user:password@` in the URL.
    pub basic: Option<String>,
}

impl WsUrl {
    pub fn parse(url: &str) -> Result<WsUrl, String> {
        let rest = if let Some(r) = url.strip_prefix("ws://") {
            r
        } else if url.starts_with("wss://") {
            return Err(format!(
                "{}: TLS (`wss://`) is not supported by this wlrun; use `ws://`",
                crate::net::http::redact_url(url)
            ));
        } else {
            return Err(format!(
                "{}: a QWP endpoint's URL starts with `ws://`",
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
            authority,
            path,
            basic,
        })
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

/// Opens a TCP connection to `url`'s host and upgrades it on `path` (or the URL's own path).
/// `extra` headers are added as given.
pub async fn connect(
    url: &str,
    default_path: &str,
    side: Side,
    extra: &[(&str, String)],
    connect_timeout: Duration,
) -> Result<Connected, ConnectError> {
    let parsed = WsUrl::parse(url).map_err(ConnectError::from)?;
    let path = parsed.path.as_deref().unwrap_or(default_path);
    let shown = format!("ws://{}{path}", parsed.authority);
    let attempt = async {
        let tcp = TcpStream::connect(&parsed.authority)
            .await
            .map_err(|e| format!("cannot connect to {shown}: {e}"))?;
        // Acks and query answers are small and waited on: Nagle would hold them back.
        let _ = tcp.set_nodelay(true);
        let mut req = format!("ws://{}{path}", parsed.authority)
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
        let request_bytes = request_size(&req);
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE + super::HEADER_LEN))
            .max_frame_size(Some(MAX_MESSAGE + super::HEADER_LEN))
            // Messages are written whole, straight after being handed over.
            .write_buffer_size(0);
        let (ws, resp) = tokio_tungstenite::client_async_with_config(req, tcp, Some(config))
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
                ))
            }
        };
        if version != VERSION {
            return Err(format!(
                "{shown}: the server speaks QWP version {version}; this wlrun speaks version {VERSION}"
            ));
        }
        let max_batch_size = match header(&headers, "x-qwp-max-batch-size") {
            Some(v) => Some(v.trim().parse::<usize>().map_err(|_| {
                format!("{shown}: the server's X-QWP-Max-Batch-Size `{v}` is not a number")
            })?),
            None => None,
        };
        Ok(Connected {
            ws,
            version,
            max_batch_size,
            request_bytes,
            headers,
        })
    };
    match tokio::time::timeout(connect_timeout, attempt).await {
        Ok(r) => r.map_err(ConnectError::from),
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

/// The upgrade request's size on the wire: request line, headers, blank line.
fn request_size<B>(req: &tokio_tungstenite::tungstenite::http::Request<B>) -> u64 {
    let line = req.method().as_str().len()
        + 1
        + req.uri().path_and_query().map_or(1, |p| p.as_str().len())
        + " HTTP/1.1\r\n".len();
    let headers: usize = req
        .headers()
        .iter()
        .map(|(k, v)| k.as_str().len() + 2 + v.len() + 2)
        .sum();
    // tungstenite adds Host, Connection, Upgrade, Sec-WebSocket-Version and -Key when absent.
    (line + headers + 120 + 2) as u64
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
        let e = connect(&url, "/read/v1", Side::Query, &[], wait)
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
        let e = connect(&url, "/write/v4", Side::Ingest, &[], wait)
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
        assert!(WsUrl::parse("wss://h:9000")
            .unwrap_err()
            .contains("not supported"));
        assert!(WsUrl::parse("http://h:9000").is_err());
        assert!(WsUrl::parse("ws:///x").is_err());
    }
}
