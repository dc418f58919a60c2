//! InfluxDB line protocol over TCP: one socket per worker, one large write per chunk. The
//! protocol has no acknowledgement: a row is sent once the kernel accepted its bytes, and a
//! server that drops a line says nothing (the visible-rows count is the only check).
//! `tcps://` speaks it under TLS (QuestDB Enterprise's ILP/TCP over TLS).

use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;

use super::{Chunk, DriverConfig, Sent};
use crate::net::error::{DriverError, ErrorClass};
use crate::net::tls::{Counters, Stream};

pub struct IlpTcp {
    stream: Stream,
    counters: Arc<Counters>,
    endpoint: String,
    timeout: Duration,
}

/// `tcp://host:port` or `tcps://host:port` -> `host:port`.
pub fn host_port(url: &str) -> Result<&str, String> {
    let rest = url
        .strip_prefix("tcp://")
        .or_else(|| url.strip_prefix("tcps://"))
        .ok_or_else(|| format!("`{url}` is not a tcp:// or tcps:// URL"))?;
    let rest = rest.trim_end_matches('/');
    if rest.is_empty() || rest.contains('/') {
        return Err(format!("`{url}`: expected tcp://HOST:PORT"));
    }
    Ok(rest)
}

impl IlpTcp {
    pub async fn connect(cfg: &DriverConfig) -> Result<IlpTcp, DriverError> {
        let url = cfg.url.as_deref().unwrap_or_default();
        let name = format!("{}.{} ({url})", cfg.endpoint.target, cfg.endpoint.name);
        if let Some(p) = cfg.endpoint.options.get("precision") {
            if p.to_string() != "ns" {
                return Err(DriverError::new(
                    ErrorClass::Connect,
                    format!("{name}: ILP over TCP sends nanosecond timestamps; `precision {p}` is not supported"),
                    true,
                ));
            }
        }
        let addr = host_port(url).map_err(|e| DriverError::connect(&name, e))?;
        // Nagle is off (chunks are large; it would only delay the tail of each one).
        let stream = cfg.connector()?.connect(addr, cfg.connect_timeout).await?;
        Ok(IlpTcp {
            counters: stream.counters(),
            stream,
            endpoint: name,
            timeout: cfg.timeout,
        })
    }

    pub async fn send(&mut self, chunk: &Chunk) -> Result<Sent, DriverError> {
        let before = self.counters.written();
        let write = async {
            self.stream.write_all(&chunk.bytes).await?;
            // TLS may hold the end of the chunk in its last record until flushed.
            if self.stream.is_tls() {
                self.stream.flush().await?;
            }
            Ok::<_, std::io::Error>(())
        };
        match tokio::time::timeout(self.timeout, write).await {
            Ok(Ok(())) => Ok(Sent {
                socket_bytes: self.counters.written() - before,
                acked: false,
            }),
            Ok(Err(e)) => Err(DriverError::new(
                ErrorClass::Connection,
                format!("{}: {e}", self.endpoint),
                true,
            )),
            Err(_) => Err(DriverError::timeout(
                format!("{}: writing a batch", self.endpoint),
                self.timeout,
            )),
        }
    }

    /// Flushes and half-closes the socket, then waits briefly for the server to close its
    /// side: a server that rejected a line closes the connection, which is the only error
    /// ILP over TCP ever reports.
    pub async fn finish(&mut self) -> Result<u64, DriverError> {
        let flush = async {
            self.stream.flush().await?;
            self.stream.shutdown().await
        };
        match tokio::time::timeout(self.timeout, flush).await {
            Ok(Ok(())) => Ok(0),
            Ok(Err(e)) => Err(DriverError::new(
                ErrorClass::Connection,
                format!("{}: closing: {e}", self.endpoint),
                true,
            )),
            Err(_) => Err(DriverError::timeout(
                format!("{}: closing", self.endpoint),
                self.timeout,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::host_port;

    #[test]
    fn urls() {
        assert_eq!(host_port("tcp://127.0.0.1:9009"), Ok("127.0.0.1:9009"));
        assert_eq!(host_port("tcp://127.0.0.1:9009/"), Ok("127.0.0.1:9009"));
        assert_eq!(host_port("tcps://db:9009"), Ok("db:9009"));
        assert!(host_port("http://x:1").is_err());
        assert!(host_port("tcp://x:1/path").is_err());
    }
}
