//! PostgreSQL connections, shared by the admin client (`client::pg`), the ingest driver
//! (`driver::pg`) and the query transport (`query::transport::pg`): connecting with a bounded
//! wait (in clear or under TLS, by `sslmode`), bounding every later wait, and turning
//! tokio-postgres errors into `DriverError`s that carry the server's own message and SQLSTATE
//! (tokio-postgres's `Display` says only "db error").
//!
//! wlrun opens the TCP connection itself (through the endpoint's `Connector`, so that it is
//! timed and counted) and hands it to tokio-postgres's `connect_raw`; `sslmode` reads the
//! libpq `sslmode` and its companions, `tls` is the TLS layer tokio-postgres asks for after
//! the SSLRequest; `message_cap` bounds the size of a message the server may send
//! (`max_message`).

use std::fmt::Write as _;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinHandle;
use tokio_postgres::config::{Host, TargetSessionAttrs};
use tokio_postgres::error::DbError;
use tokio_postgres::{Client, Config, Connection, NoTls};

use crate::net::error::{DriverError, ErrorClass};
use crate::net::tls::{Connector, Counters, Verify};
use crate::plan::EndpointPlan;
use crate::value::Value;
use message_cap::Capped;
use sslmode::SslMode;
use tls::{PgTls, PgWire};

mod message_cap;
mod sslmode;
mod tls;

/// What `application_name` the server shows for wlrun's sessions unless the URL or the
/// endpoint's options name one.
const APPLICATION_NAME: &str = "wlrun";

/// A cause that is wlrun's own doing rather than the connection's: a value the server's
/// column type cannot take. `pg_error` finds it in tokio-postgres's error chain (parameters
/// are serialized inside tokio-postgres) and classes it as an encode error.
#[derive(Debug)]
pub(crate) struct EncodeCause(pub(crate) String);

impl std::fmt::Display for EncodeCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EncodeCause {}

/// Appends the detail, hint and context a server error gave, each as `; <what>: <text>`.
pub(crate) fn push_db_details(out: &mut String, db: &DbError) {
    if let Some(d) = db.detail() {
        let _ = write!(out, "; detail: {d}");
    }
    if let Some(h) = db.hint() {
        let _ = write!(out, "; hint: {h}");
    }
    if let Some(w) = db.where_() {
        let _ = write!(out, "; where: {w}");
    }
}

/// The text of a tokio-postgres error: for a server error its message, SQLSTATE, and the
/// detail, hint and context the server gave; otherwise the error and its causes.
pub(crate) fn describe(e: &tokio_postgres::Error) -> String {
    let mut out = String::new();
    if let Some(db) = e.as_db_error() {
        let _ = write!(out, "{} (SQLSTATE {})", db.message(), db.code().code());
        push_db_details(&mut out, db);
        return out;
    }
    let _ = write!(out, "{e}");
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let _ = write!(out, ": {c}");
        cause = c.source();
    }
    out
}

/// A tokio-postgres error as a `DriverError`. A server error on a live connection is
/// `Server` and not fatal: the session is back to idle and takes the next statement. A
/// server error of severity FATAL or PANIC ends the session, a closed connection or an I/O
/// failure breaks it, and any other protocol trouble leaves it in an unknown state: all
/// `Connection`, fatal.
pub(crate) fn pg_error(e: &tokio_postgres::Error) -> DriverError {
    if let Some(db) = e.as_db_error() {
        let ends_session = matches!(db.severity(), "FATAL" | "PANIC");
        let class = if ends_session {
            ErrorClass::Connection
        } else {
            ErrorClass::Server
        };
        return DriverError::new(class, describe(e), ends_session);
    }
    if let Some(c) = std::error::Error::source(e).and_then(|c| c.downcast_ref::<EncodeCause>()) {
        return DriverError::new(ErrorClass::Encode, c.0.clone(), false);
    }
    DriverError::new(ErrorClass::Connection, describe(e), true)
}

/// The text of an option whose value is a string, with `env(...)` parts resolved now.
fn option_text(endpoint: &EndpointPlan, name: &str) -> Result<Option<String>, String> {
    match endpoint.options.get(name) {
        Some(Value::Str(t)) => t
            .resolve_env()
            .map(Some)
            .map_err(|e| format!("option `{name}`: {e}")),
        _ => Ok(None),
    }
}

/// `target.endpoint (host:port)` for messages; never the URL, which may hold a password.
fn label(endpoint: &EndpointPlan, config: Option<&Config>) -> String {
    let mut out = format!("{}.{}", endpoint.target, endpoint.name);
    let Some(config) = config else {
        return out;
    };
    let ports = config.get_ports();
    let mut places = Vec::new();
    for (i, h) in config.get_hosts().iter().enumerate() {
        let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
        places.push(match h {
            Host::Tcp(name) => format!("{name}:{port}"),
            Host::Unix(dir) => format!("{}:{port}", dir.display()),
        });
    }
    if !places.is_empty() {
        let _ = write!(out, " ({})", places.join(", "));
    }
    out
}

/// One open connection: the client, the task that drives its socket, and why that task
/// stopped, if it did.
pub(crate) struct Conn {
    pub(crate) client: Client,
    /// `target.endpoint (host:port)`, for messages.
    pub(crate) label: String,
    /// Every wait on the server ends after this.
    pub(crate) timeout: Duration,
    /// Set by the connection task when the socket fails or the server ends the session;
    /// requests only see "connection closed", this says why.
    broken: Arc<Mutex<Option<String>>>,
    task: JoinHandle<()>,
    /// The socket's byte counters when the session is under TLS, where the bytes on the
    /// network are not the protocol's framing.
    pub(crate) counters: Option<Arc<Counters>>,
    /// The session's bytes that reached the socket, counted above TLS (`PgWire::out`); `None`
    /// over a Unix socket.
    pub(crate) out: Option<Arc<AtomicU64>>,
    cancel: Arc<Canceller>,
    /// The socket's byte counters, in clear or under TLS (`counters` is only under TLS);
    /// `None` over a Unix socket. What a query's result cost in bytes is read off them.
    pub(crate) socket: Option<Arc<Counters>>,
}

/// How to ask the server to cancel what a session runs: a connection of its own to the host
/// the session is on, secured as the session was (the token's mode says whether to ask for
/// TLS). The connection goes through a connector of its own, so that it is not counted among
/// the phase's connections.
pub(crate) struct Canceller {
    token: tokio_postgres::CancelToken,
    place: Place,
    port: u16,
    label: String,
    /// The name to verify and the TLS options, when the session's connector speaks TLS.
    tls: Option<(String, crate::net::tls::TlsOptions)>,
    timeout: Duration,
    /// The session's `max_message` (the server answers a cancel request with nothing).
    cap: u64,
}

impl Canceller {
    /// Sends the cancel request (the server answers nothing; it cancels, or not).
    pub(crate) async fn send(&self) -> Result<(), DriverError> {
        let failed = |e: tokio_postgres::Error| DriverError::connect(&self.label, describe(&e));
        let host = match &self.place {
            Place::Unix(path) => {
                let unix = tokio::net::UnixStream::connect(path)
                    .await
                    .map_err(|e| DriverError::connect(&self.label, e))?;
                return self
                    .token
                    .cancel_query_raw(unix, NoTls)
                    .await
                    .map_err(failed);
            }
            Place::Tcp(host) => host,
        };
        let connector = match &self.tls {
            Some((name, opts)) => {
                Connector::secure(self.label.clone(), name, opts, "sslmode disable")?
            }
            None => Connector::plain(self.label.clone()),
        };
        let wire = connector
            .tcp(&socket_addr(host, self.port), self.timeout)
            .await?;
        let wire = PgWire::new(wire, &connector, self.tls.is_some(), self.cap);
        let handshake = PgTls {
            connector: connector.clone(),
            timeout: self.timeout,
            cap: self.cap,
            failed: Arc::new(Mutex::new(None)),
        };
        self.token
            .cancel_query_raw(wire, handshake)
            .await
            .map_err(failed)
    }
}

/// The connector of a `pg` endpoint: how its sessions are secured, by `sslmode` (see
/// `sslmode`). The name verified is the URL's first host (`tls_server_name` overrides it);
/// an endpoint reached only over Unix sockets is in clear, as libpq does.
pub(crate) fn connector(endpoint: &EndpointPlan, url: &str) -> Result<Connector, DriverError> {
    let s = sslmode::settings(endpoint, url)?;
    let name = label(endpoint, Some(&s.config));
    if s.mode == SslMode::Disable {
        return Ok(Connector::plain(name));
    }
    let tcp = tcp_hosts(&s.config);
    let Some(first) = tcp.first() else {
        return Ok(Connector::plain(name));
    };
    if s.tls.verify == Verify::Full && s.tls.server_name.is_none() && tcp.iter().any(|h| h != first)
    {
        return Err(DriverError::connect(
            &name,
            "`sslmode verify-full` with several hosts checks one name: set `tls_server_name` \
             to the name their certificates share, or give one host",
        ));
    }
    Connector::secure(name, first, &s.tls, "sslmode disable")
}

/// The names of the URL's TCP hosts (its hostaddrs when it names no host), in order.
fn tcp_hosts(config: &Config) -> Vec<String> {
    if config.get_hosts().is_empty() {
        return config
            .get_hostaddrs()
            .iter()
            .map(|a| a.to_string())
            .collect();
    }
    config
        .get_hosts()
        .iter()
        .filter_map(|h| match h {
            Host::Tcp(n) => Some(n.clone()),
            Host::Unix(_) => None,
        })
        .collect()
}

/// The name TLS verifies: the URL's first TCP host, as `connector` takes it.
fn tls_name(config: &Config) -> Option<String> {
    tcp_hosts(config).into_iter().next()
}

/// `host:port` for a connect, an IPv6 literal in brackets.
fn socket_addr(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Connects to `endpoint` at `url` through `connector` (from `connector` above), trying the
/// URL's hosts in order as libpq does. The endpoint options `user`, `password`, `database`
/// and `application_name` override the URL's; its `max_message` caps every message the
/// server sends. Every failure, including a login the server refuses, is a `Connect` error
/// naming the endpoint; a connect that takes longer than `connect_timeout` (refused ports
/// answer at once) is a `Timeout`.
pub(crate) async fn connect(
    endpoint: &EndpointPlan,
    url: &str,
    connector: &Connector,
    connect_timeout: Duration,
    timeout: Duration,
) -> Result<Conn, DriverError> {
    let sslmode::Settings {
        mode,
        mut config,
        tls: tls_options,
    } = sslmode::settings(endpoint, url)?;
    let name = label(endpoint, Some(&config));
    let cap = message_cap::max_message(endpoint);
    let opt = |key: &str| option_text(endpoint, key).map_err(|e| DriverError::connect(&name, e));
    if let Some(v) = opt("user")? {
        config.user(v);
    }
    if let Some(v) = opt("password")? {
        config.password(v);
    }
    if let Some(v) = opt("database")? {
        config.dbname(v);
    }
    if let Some(v) = opt("application_name")? {
        config.application_name(v);
    } else if config.get_application_name().is_none() {
        config.application_name(APPLICATION_NAME);
    }
    config.connect_timeout(connect_timeout);
    let hosts = config.get_hosts().to_vec();
    let addrs = config.get_hostaddrs().to_vec();
    let ports = config.get_ports().to_vec();
    let count = hosts.len().max(addrs.len());
    if count == 0 {
        return Err(DriverError::connect(&name, "the URL names no host"));
    }
    if (!hosts.is_empty() && !addrs.is_empty() && hosts.len() != addrs.len())
        || (ports.len() > 1 && ports.len() != count)
    {
        return Err(DriverError::connect(
            &name,
            "the URL's hosts, hostaddrs and ports do not pair up",
        ));
    }
    let mut failures = Vec::new();
    for i in 0..count {
        let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
        let place = match (addrs.get(i), hosts.get(i)) {
            (Some(ip), _) => Place::Tcp(ip.to_string()),
            (None, Some(Host::Tcp(h))) => Place::Tcp(h.clone()),
            (None, Some(Host::Unix(dir))) => Place::Unix(dir.join(format!(".s.PGSQL.{port}"))),
            (None, None) => continue,
        };
        let attempt = Attempt {
            config: &config,
            mode,
            connector,
            name: &name,
            connect_timeout,
            cap,
        };
        let result = match tokio::time::timeout(connect_timeout, attempt.run(&place, port)).await {
            Ok(r) => r,
            Err(_) => Err(DriverError::timeout(
                format!("connecting to {name}"),
                connect_timeout,
            )),
        };
        let conn = match result {
            Ok(opened) => {
                let cancel = Canceller {
                    token: opened.client.cancel_token(),
                    place,
                    port,
                    label: name.clone(),
                    tls: match (connector.is_tls(), tls_name(&config)) {
                        (true, Some(host)) => Some((host, tls_options.clone())),
                        _ => None,
                    },
                    timeout: connect_timeout,
                    cap,
                };
                opened.into_conn(name.clone(), timeout, Arc::new(cancel))
            }
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        match session_attrs(&conn, config.get_target_session_attrs()).await {
            Ok(()) => return Ok(conn),
            Err(e) => {
                failures.push(e);
                let _ = conn.close().await;
            }
        }
    }
    // Every host refused who wlrun is: the next connect would be refused the same way.
    let refused = !failures.is_empty() && failures.iter().all(|e| e.refused);
    let mut err = failures.pop().unwrap_or_else(|| {
        DriverError::connect(&name, "the URL names no host wlrun can connect to")
    });
    if !failures.is_empty() {
        // Each host's reason: the last one's error, the earlier ones in front of it.
        let earlier: Vec<String> = failures.into_iter().map(|e| e.message).collect();
        err.message = format!("{} (earlier hosts: {})", err.message, earlier.join("; "));
    }
    err.refused = refused;
    if refused {
        connector.refuse(&err);
    }
    Err(err)
}

/// Where one of the URL's hosts is.
#[derive(Clone)]
enum Place {
    Tcp(String),
    Unix(std::path::PathBuf),
}

/// One host's connection attempt.
struct Attempt<'a> {
    config: &'a Config,
    mode: SslMode,
    connector: &'a Connector,
    name: &'a str,
    connect_timeout: Duration,
    /// `max_message`.
    cap: u64,
}

/// Where a connection task leaves why it stopped.
type BrokenSlot = Arc<Mutex<Option<String>>>;

/// A session whose start-up completed, before its connection task runs.
struct Opened {
    client: Client,
    task: Box<dyn FnOnce(BrokenSlot) -> JoinHandle<()> + Send>,
    /// The socket's byte counters, under TLS (in clear the driver counts framing).
    counters: Option<Arc<Counters>>,
    /// `Conn::out`.
    out: Option<Arc<AtomicU64>>,
    /// `Conn::socket`.
    socket: Option<Arc<Counters>>,
}

impl Attempt<'_> {
    async fn run(&self, place: &Place, port: u16) -> Result<Opened, DriverError> {
        let path = match place {
            Place::Tcp(host) => return self.tcp(host, port).await,
            Place::Unix(path) => path,
        };
        // No TLS over a Unix socket, as libpq: the server does not offer it there.
        let unix = tokio::net::UnixStream::connect(path)
            .await
            .map_err(|e| DriverError::connect(self.name, format!("{}: {e}", path.display())))?;
        let mut config = self.config.clone();
        config.ssl_mode(tokio_postgres::config::SslMode::Disable);
        let (client, connection) = config
            .connect_raw(Capped::new(unix, self.cap), NoTls)
            .await
            .map_err(|e| self.refused(&e, false))?;
        Ok(Opened {
            client,
            task: Box::new(move |slot| drive(connection, slot)),
            counters: None,
            out: None,
            socket: None,
        })
    }

    async fn tcp(&self, host: &str, port: u16) -> Result<Opened, DriverError> {
        let tls = self.mode != SslMode::Disable;
        if tls && !self.connector.is_tls() {
            return Err(DriverError::connect(
                self.name,
                format!(
                    "`sslmode {}` but the connector speaks no TLS (a connector made for another \
                     endpoint?)",
                    self.mode.as_str()
                ),
            ));
        }
        let addr = socket_addr(host, port);
        let wire = self.connector.tcp(&addr, self.connect_timeout).await?;
        let wire = PgWire::new(wire, self.connector, tls, self.cap);
        let refused = wire.refused();
        let counters = wire.counters();
        let out = wire.out();
        let failed = Arc::new(Mutex::new(None));
        let handshake = PgTls {
            connector: self.connector.clone(),
            timeout: self.connect_timeout,
            cap: self.cap,
            failed: failed.clone(),
        };
        match self.config.connect_raw(wire, handshake).await {
            Ok((client, connection)) => {
                let in_clear = refused.load(Ordering::Relaxed);
                if in_clear && self.mode == SslMode::Prefer {
                    self.connector.plaintext_fallback();
                }
                Ok(Opened {
                    client,
                    task: Box::new(move |slot| drive(connection, slot)),
                    counters: (tls && !in_clear).then_some(counters.clone()),
                    out: Some(out),
                    socket: Some(counters),
                })
            }
            Err(e) => {
                if let Some(why) = failed.lock().ok().and_then(|mut f| f.take()) {
                    return Err(why);
                }
                if refused.load(Ordering::Relaxed) && self.mode.requires_tls() {
                    return Err(DriverError::connect(
                        self.name,
                        format!(
                            "the server does not accept TLS (it answered 'N' to SSLRequest), \
                             and `sslmode {}` requires it: enable ssl on the server, or use \
                             sslmode=disable or prefer",
                            self.mode.as_str()
                        ),
                    ));
                }
                Err(self.refused(&e, !tls || refused.load(Ordering::Relaxed)))
            }
        }
    }

    /// A start-up the server refused, with a hint where it wants TLS and got clear. A login
    /// refused (SQLSTATE class 28: a password, a pg_hba.conf rule, a certificate the role
    /// needs) or a certificate refused by an alert is a refusal (`DriverError::refused`).
    fn refused(&self, e: &tokio_postgres::Error, in_clear: bool) -> DriverError {
        if let Some((why, certificate)) = tls_alert(e, self.connector) {
            return if certificate {
                DriverError::refusal(self.name, why)
            } else {
                DriverError::connect(self.name, why)
            };
        }
        let mut err = DriverError::connect(self.name, describe(e));
        err.refused = e
            .as_db_error()
            .is_some_and(|db| db.code().code().starts_with("28"));
        let no_encryption = e.as_db_error().is_some_and(|db| {
            db.code() == &tokio_postgres::error::SqlState::INVALID_AUTHORIZATION_SPECIFICATION
                && db.message().contains("no encryption")
        });
        let wants_cert = e
            .as_db_error()
            .is_some_and(|db| db.message().contains("requires a valid client certificate"));
        if wants_cert && !self.connector.setup().is_some_and(|s| s.client_cert) {
            err.message.push_str(
                "; the server logs this role in by certificate: give `tls_cert` and `tls_key`",
            );
        }
        if in_clear && no_encryption {
            err.message.push_str(
                "; the server requires TLS: set sslmode=require (or verify-full to check its \
                 certificate)",
            );
        }
        err
    }
}

/// A TLS alert the server sent after the handshake, in words: under TLS 1.3 the server
/// checks the client's certificate after the client considers the handshake done, so a
/// refused certificate shows only at the first read of the start-up. With it, whether the
/// alert refused a certificate (or asked for one), which another attempt would meet again.
fn tls_alert(e: &tokio_postgres::Error, connector: &Connector) -> Option<(String, bool)> {
    use rustls::AlertDescription as A;
    let io = std::error::Error::source(e)?.downcast_ref::<std::io::Error>()?;
    let rustls::Error::AlertReceived(alert) = io.get_ref()?.downcast_ref::<rustls::Error>()? else {
        return None;
    };
    let client_cert = connector.setup().is_some_and(|s| s.client_cert);
    let certificate = matches!(
        alert,
        A::UnknownCA
            | A::BadCertificate
            | A::CertificateUnknown
            | A::AccessDenied
            | A::CertificateExpired
            | A::UnsupportedCertificate
            | A::CertificateRequired
    );
    let why = match alert {
        A::UnknownCA
        | A::BadCertificate
        | A::CertificateUnknown
        | A::AccessDenied
        | A::CertificateExpired
        | A::UnsupportedCertificate
            if client_cert =>
        {
            format!(
                "the server refused wlrun's client certificate ({alert:?}): is it signed by a CA \
                 in the server's `ssl_ca_file`, and still valid?"
            )
        }
        A::CertificateRequired => "the server wants a client certificate: give `tls_cert` and \
                                   `tls_key` (or the URL's sslcert and sslkey)"
            .to_string(),
        other => format!("the server ended the TLS session with the alert {other:?}"),
    };
    Some((why, certificate))
}

impl Opened {
    fn into_conn(self, label: String, timeout: Duration, cancel: Arc<Canceller>) -> Conn {
        let broken = Arc::new(Mutex::new(None));
        let task = (self.task)(Arc::clone(&broken));
        Conn {
            client: self.client,
            label,
            timeout,
            broken,
            task,
            counters: self.counters,
            out: self.out,
            cancel,
            socket: self.socket,
        }
    }
}

/// Runs a session's connection task, storing why it ended in `slot` when it failed.
fn drive<S, T>(mut connection: Connection<S, T>, slot: BrokenSlot) -> JoinHandle<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        // Polled through a reference so that the connection, which holds the senders of
        // pending requests, is dropped only after the reason is stored: a request that sees
        // "closed" can then read why.
        if let Err(e) = (&mut connection).await {
            if let Ok(mut s) = slot.lock() {
                *s = Some(describe(&e));
            }
        }
        drop(connection);
    })
}

/// libpq's `target_session_attrs`: a host whose session is not what the URL asks for is
/// passed over for the next one.
async fn session_attrs(conn: &Conn, want: TargetSessionAttrs) -> Result<(), DriverError> {
    let write = match want {
        TargetSessionAttrs::ReadWrite => true,
        TargetSessionAttrs::ReadOnly => false,
        _ => return Ok(()),
    };
    let rows = conn
        .wait(
            || "asking whether the session is read-only".to_string(),
            conn.client.simple_query("SHOW transaction_read_only"),
        )
        .await?;
    let read_only = rows.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(|v| v == "on"),
        _ => None,
    });
    match read_only {
        Some(ro) if ro != write => Ok(()),
        _ => Err(DriverError::connect(
            &conn.label,
            if write {
                "the session is read-only (target_session_attrs=read-write)"
            } else {
                "the session is not read-only (target_session_attrs=read-only)"
            },
        )),
    }
}

impl Conn {
    /// What a cancel request for this session needs, to send from a task of its own.
    pub(crate) fn canceller(&self) -> Arc<Canceller> {
        Arc::clone(&self.cancel)
    }

    /// `e` as a `DriverError`, with the reason the connection task saw when the connection
    /// is gone.
    pub(crate) fn error(&self, e: &tokio_postgres::Error) -> DriverError {
        let mut err = pg_error(e);
        if err.class == ErrorClass::Connection {
            if let Some(why) = self.broken.lock().ok().and_then(|s| s.clone()) {
                if !err.message.contains(&why) {
                    let _ = write!(err.message, " ({why})");
                }
            }
            err.message = format!("{}: {}", self.label, err.message);
        }
        err
    }

    /// Awaits `fut` for at most the connection's timeout. `what` names the wait in a
    /// timeout's message; it is built only then.
    pub(crate) async fn wait<T>(
        &self,
        what: impl FnOnce() -> String,
        fut: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, DriverError> {
        match tokio::time::timeout(self.timeout, fut).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(self.error(&e)),
            Err(_) => Err(DriverError::timeout(
                format!("{} on {}", what(), self.label),
                self.timeout,
            )),
        }
    }

    /// Drops the session at once, its socket closed under it: for a session left waiting for
    /// an answer, where an orderly end would wait behind it.
    pub(crate) fn abandon(self) {
        self.task.abort();
    }

    /// Ends the session (the client's drop makes the connection send Terminate) and waits,
    /// bounded by the timeout, for the socket to close. Prepared statements must be dropped
    /// before: each holds the session open until its Close is sent.
    pub(crate) async fn close(self) -> Result<(), DriverError> {
        let Conn {
            client,
            label,
            timeout,
            task,
            ..
        } = self;
        drop(client);
        match tokio::time::timeout(timeout, task).await {
            Ok(_) => Ok(()),
            Err(_) => Err(DriverError::timeout(
                format!("closing the connection to {label}"),
                timeout,
            )),
        }
    }
}

/// A `pg` endpoint `db.pg` (dialect `postgres`) with `options`, for the unit tests of the
/// PostgreSQL code above this layer (driver, query transport) and of this file.
#[cfg(test)]
pub(crate) fn test_endpoint(options: &[(&str, Value)]) -> EndpointPlan {
    EndpointPlan {
        target: "db".into(),
        name: "pg".into(),
        kind: "pg".into(),
        dialect: "postgres".into(),
        url: None,
        options: options
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint() -> EndpointPlan {
        test_endpoint(&[])
    }

    #[test]
    fn labels_name_the_endpoint_and_never_the_password() {
        let config: Config = "postgres://u:secret@127.0.0.1:5433/db".parse().unwrap();
        let l = label(&endpoint(), Some(&config));
        assert_eq!(l, "db.pg (127.0.0.1:5433)");
        assert_eq!(label(&endpoint(), None), "db.pg");
    }

    #[test]
    fn unix_sockets_stay_in_clear_and_verify_full_wants_one_name() {
        let word = |w: &str| Value::Symbol(w.into());
        let full = test_endpoint(&[("sslmode", word("verify-full"))]);
        let unix = "postgres://u@/db?host=/var/run/postgresql";
        assert!(!connector(&full, unix).unwrap().is_tls());
        let c = connector(&full, "postgres://u:secret@db.example:5433/db").unwrap();
        assert_eq!(c.setup().unwrap().server_name, "db.example");
        assert_eq!(c.label(), "db.pg (db.example:5433)");
        let two = "postgres://u:secret@a.example:5432,b.example:5432/db";
        let e = connector(&full, two).unwrap_err();
        assert!(e.message.contains("tls_server_name"), "{e}");
        assert!(!e.message.contains("secret"), "{e}");
        let named = test_endpoint(&[
            ("sslmode", word("verify-full")),
            (
                "tls_server_name",
                Value::Str(crate::value::Text::lit("db.example")),
            ),
        ]);
        assert!(connector(&named, two).unwrap().is_tls());
        let disable = test_endpoint(&[("sslmode", word("disable"))]);
        assert!(!connector(&disable, two).unwrap().is_tls());
    }

    #[tokio::test]
    async fn an_invalid_url_is_a_connect_error_without_the_url() {
        let Err(e) = connect(
            &endpoint(),
            "postgres://u:secret@127.0.0.1:notaport/db",
            &Connector::plain("db.pg"),
            Duration::from_secs(1),
            Duration::from_secs(1),
        )
        .await
        else {
            panic!("connected with an invalid URL");
        };
        assert_eq!(e.class, ErrorClass::Connect);
        assert!(e.fatal);
        assert!(!e.message.contains("secret"), "{}", e.message);
        assert!(e.message.contains("db.pg"), "{}", e.message);
    }
}
