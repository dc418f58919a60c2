//! Connections over TCP, in clear or under TLS, for every protocol wlrun speaks: HTTP (both
//! clients), WebSocket (QWP), ILP/TCP and PostgreSQL. One stack: rustls with ring, through
//! tokio-rustls; no cryptography of wlrun's own.
//!
//! A `Connector` belongs to one endpoint for one phase (cloned into its workers), so that
//! - reconnects resume TLS sessions: the rustls configuration and its session store are
//!   shared by every connection made through it;
//! - the phase's report can say what opening its connections cost (`Summary`): TCP connect,
//!   TLS handshake, time to the server's first byte, full against resumed handshakes.
//!
//! - `options`: what an endpoint's options say (`tls_ca`, `tls_cert`, `tls_key`,
//!   `tls_server_name`, `tls_verify`);
//! - `config`: rustls configurations and the verifiers of each `Verify` level;
//! - `stream`: the counting `Wire` below TLS and the `Stream` every protocol reads and writes;
//! - `stats`: the per-phase accumulator;
//! - `error`: handshake failures a user can act on.
//!
//! A connector also remembers a refusal (`refuse`): once the server refused who wlrun is (a
//! password, a certificate), every later connection through it fails at once with the same
//! error, without a packet sent, instead of asking again per query.

mod config;
mod error;
mod options;
mod stats;
mod stream;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::net::error::{DriverError, ErrorClass};

pub(crate) use error::certificate_refused;
pub use options::{TlsOptions, Verify};
pub use stats::{Negotiated, Summary};
pub use stream::{Counters, Stream, Timed, Wire};

/// How one endpoint's connections are opened, and what opening them cost.
#[derive(Clone)]
pub struct Connector {
    inner: Arc<Inner>,
}

struct Inner {
    /// `target.endpoint (host:port)` for messages.
    label: String,
    secure: Option<Secure>,
    stats: Arc<stats::Stats>,
    /// Bytes over all connections made through this connector.
    totals: Arc<Counters>,
    /// The refusal every later connection gets at once (`refuse`).
    refusal: Mutex<Option<DriverError>>,
}

struct Secure {
    tls: TlsConnector,
    name: ServerName<'static>,
    shown_name: String,
    verify: Verify,
    /// Where the roots come from, for messages: the CA file or the system's store.
    trust: String,
    plain_scheme: &'static str,
    client_cert: bool,
}

/// The TLS side of a connector, for plans and reports: what is verified and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsSetup {
    pub verify: Verify,
    pub server_name: String,
    /// The CA file's path, or `system` for the system's trust store.
    pub trust: String,
    pub client_cert: bool,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("label", &self.inner.label)
            .field("tls", &self.setup())
            .finish()
    }
}

impl Connector {
    /// Connections in clear.
    pub fn plain(label: impl Into<String>) -> Connector {
        Connector {
            inner: Arc::new(Inner {
                label: label.into(),
                secure: None,
                stats: Arc::new(stats::Stats::new()),
                totals: Arc::default(),
                refusal: Mutex::new(None),
            }),
        }
    }

    /// TLS connections to `host` (the URL's; `tls_server_name` overrides it), configured by
    /// `opts`. `plain_scheme` is how the advice names a plain connection (`http://`). Reads
    /// the CA and key files now.
    pub fn secure(
        label: impl Into<String>,
        host: &str,
        opts: &TlsOptions,
        plain_scheme: &'static str,
    ) -> Result<Connector, DriverError> {
        let label = label.into();
        let fail = |why: String| {
            DriverError::new(
                ErrorClass::Connect,
                format!("cannot connect to {label}: {why}"),
                true,
            )
        };
        let config = config::client_config(opts).map_err(fail)?;
        let shown_name = opts.server_name.clone().unwrap_or_else(|| {
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .to_string()
        });
        let name = ServerName::try_from(shown_name.clone()).map_err(|_| {
            fail(format!(
                "`{shown_name}` is not a host name TLS can verify (set `tls_server_name`)"
            ))
        })?;
        let trust = match &opts.ca_file {
            Some(f) => format!("the CA file `{}`", f.display()),
            None => "the system's trust store".to_string(),
        };
        Ok(Connector {
            inner: Arc::new(Inner {
                label,
                secure: Some(Secure {
                    tls: TlsConnector::from(config),
                    name,
                    shown_name,
                    verify: opts.verify,
                    trust,
                    plain_scheme,
                    client_cert: opts.client_cert.is_some(),
                }),
                stats: Arc::new(stats::Stats::new()),
                totals: Arc::default(),
                refusal: Mutex::new(None),
            }),
        })
    }

    pub fn label(&self) -> &str {
        &self.inner.label
    }

    pub fn is_tls(&self) -> bool {
        self.inner.secure.is_some()
    }

    pub fn setup(&self) -> Option<TlsSetup> {
        self.inner.secure.as_ref().map(|s| TlsSetup {
            verify: s.verify,
            server_name: s.shown_name.clone(),
            trust: match s.verify {
                Verify::Off => "none".to_string(),
                _ => s.trust.clone(),
            },
            client_cert: s.client_cert,
        })
    }

    /// A TCP connection to `addr` (`host:port`), with Nagle off: every protocol here writes
    /// whole messages and then waits on them. Timed as the connection's connect step.
    pub async fn tcp(&self, addr: &str, timeout: Duration) -> Result<Wire<TcpStream>, DriverError> {
        if let Some(e) = self.refusal() {
            return Err(e);
        }
        let started = Instant::now();
        let tcp = match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(DriverError::connect(&self.inner.label, e)),
            Err(_) => {
                return Err(DriverError::new(
                    ErrorClass::Timeout,
                    format!(
                        "cannot connect to {}: no connection within {}",
                        self.inner.label,
                        crate::net::fmt::fmt_duration(timeout)
                    ),
                    true,
                ))
            }
        };
        let _ = tcp.set_nodelay(true);
        self.inner.stats.connected(started.elapsed());
        Ok(Wire::new(tcp, self.inner.totals.clone()))
    }

    /// A connection to `addr`, with the TLS handshake when the connector speaks TLS; the
    /// whole set-up within `timeout`.
    pub async fn connect(&self, addr: &str, timeout: Duration) -> Result<Stream, DriverError> {
        let started = Instant::now();
        let mut wire = self.tcp(addr, timeout).await?;
        if self.inner.secure.is_none() {
            wire.arm(self.inner.stats.clone());
            return Ok(Stream::Plain(wire));
        }
        let left = timeout.saturating_sub(started.elapsed());
        let tls = self.handshake(wire, left).await.inspect_err(|e| {
            if e.refused {
                self.refuse(e);
            }
        })?;
        Ok(Stream::Tls(Box::new(self.timed(tls))))
    }

    /// Remembers that the server refused who wlrun is (`e.refused`: a password, a
    /// certificate): every later connection through this connector fails at once with `e`,
    /// since the next attempt would be refused the same way. Called where a whole connect
    /// failed (PostgreSQL tries its other hosts first).
    pub fn refuse(&self, e: &DriverError) {
        if let Ok(mut r) = self.inner.refusal.lock() {
            r.get_or_insert_with(|| e.clone());
        }
    }

    /// The refusal `refuse` remembered, if any.
    pub fn refusal(&self) -> Option<DriverError> {
        self.inner.refusal.lock().ok().and_then(|r| r.clone())
    }

    /// The TLS handshake over `wire` (which the caller may have used in clear first, as
    /// PostgreSQL's SSLRequest does), within `timeout`. Timed, counted as full or resumed.
    /// The caller wraps the result in `timed` to time the first byte of the answer.
    pub async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        wire: Wire<S>,
        timeout: Duration,
    ) -> Result<tokio_rustls::client::TlsStream<Wire<S>>, DriverError> {
        let Some(s) = &self.inner.secure else {
            return Err(DriverError::new(
                ErrorClass::Connect,
                format!(
                    "cannot connect to {}: a TLS handshake on a plain connector",
                    self.inner.label
                ),
                true,
            ));
        };
        let started = Instant::now();
        let mut tls = match tokio::time::timeout(timeout, s.tls.connect(s.name.clone(), wire)).await
        {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => {
                let cx = error::Context {
                    name: &s.shown_name,
                    trust: &s.trust,
                    plain: s.plain_scheme,
                    client_cert: s.client_cert,
                };
                let why = error::handshake_failure(&e, &cx);
                return Err(if error::refuses_certificate(&e) {
                    DriverError::refusal(&self.inner.label, why)
                } else {
                    DriverError::connect(&self.inner.label, why)
                });
            }
            Err(_) => {
                return Err(DriverError::new(
                    ErrorClass::Timeout,
                    format!(
                        "cannot connect to {}: no TLS handshake within {} (does the server speak \
                         TLS on this port?)",
                        self.inner.label,
                        crate::net::fmt::fmt_duration(timeout)
                    ),
                    true,
                ))
            }
        };
        let took = started.elapsed();
        let (_, conn) = tls.get_mut();
        let negotiated = Negotiated {
            version: conn
                .protocol_version()
                .and_then(|v| v.as_str())
                .unwrap_or("?")
                .replace('_', "."),
            cipher: conn
                .negotiated_cipher_suite()
                .and_then(|c| c.suite().as_str())
                .unwrap_or("?")
                .to_string(),
            alpn: conn
                .alpn_protocol()
                .map(|p| String::from_utf8_lossy(p).into_owned()),
        };
        self.inner
            .stats
            .handshake(took, conn.handshake_kind(), negotiated);
        Ok(tls)
    }

    /// `stream` (TLS, from `handshake`) with its first answer byte timed from now.
    pub fn timed<S>(&self, stream: S) -> Timed<S> {
        Timed::new(stream, self.inner.stats.clone())
    }

    /// Times the first byte `wire` reads from now on, for a connection that stays in clear
    /// after a first exchange of its own (PostgreSQL's SSLRequest answered 'N').
    pub fn arm<S>(&self, wire: &mut Wire<S>) {
        wire.arm(self.inner.stats.clone());
    }

    /// A PostgreSQL `prefer` connection the server answered 'N': it goes on in clear.
    pub fn plaintext_fallback(&self) {
        self.inner.stats.plaintext_fallback();
    }

    /// What this connector's connections cost so far.
    pub fn summary(&self) -> Summary {
        let mut s = self.inner.stats.summary();
        s.socket_bytes_written = self.inner.totals.written();
        s.socket_bytes_read = self.inner.totals.read();
        s
    }
}
