//! PostgreSQL connections, shared by the admin client (`client::pg`), the ingest driver
//! (`driver::pg`) and the query transport (`query::transport::pg`): connecting with a bounded wait, bounding
//! every later wait, and turning tokio-postgres errors into `DriverError`s that carry the
//! server's own message and SQLSTATE (tokio-postgres's `Display` says only "db error").

use std::fmt::Write as _;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_postgres::config::Host;
use tokio_postgres::error::DbError;
use tokio_postgres::{Client, Config, NoTls};

use crate::net::error::{DriverError, ErrorClass};
use crate::net::tls::Connector;
use crate::plan::EndpointPlan;
use crate::value::Value;

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
            .resolve(|var| std::env::var(var).ok())
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
}

/// The connector of a `pg` endpoint: how its sessions are secured, by `sslmode`.
pub(crate) fn connector(endpoint: &EndpointPlan, _url: &str) -> Result<Connector, DriverError> {
    Ok(Connector::plain(crate::net::connect::endpoint_name(
        endpoint,
    )))
}

/// Connects to `endpoint` at `url` through `connector` (from `connector` above). The endpoint options `user`, `password`,
/// `database` and `application_name` override the URL's. Every failure, including a login
/// the server refuses, is a `Connect` error naming the endpoint; a connect that takes longer
/// than `connect_timeout` (refused ports answer at once) is a `Timeout`.
pub(crate) async fn connect(
    endpoint: &EndpointPlan,
    url: &str,
    _connector: &Connector,
    connect_timeout: Duration,
    timeout: Duration,
) -> Result<Conn, DriverError> {
    // The parse error may quote the URL, password included: say only that it is invalid.
    let mut config: Config = url.parse().map_err(|_| {
        DriverError::connect(
            &label(endpoint, None),
            "the URL is not a valid PostgreSQL connection string",
        )
    })?;
    let name = label(endpoint, Some(&config));
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
    let (client, mut connection) =
        match tokio::time::timeout(connect_timeout, config.connect(NoTls)).await {
            Ok(Ok(pair)) => pair,
            Ok(Err(e)) => return Err(DriverError::connect(&name, describe(&e))),
            Err(_) => {
                return Err(DriverError::timeout(
                    format!("connecting to {name}"),
                    connect_timeout,
                ))
            }
        };
    let broken = Arc::new(Mutex::new(None));
    let slot = Arc::clone(&broken);
    let task = tokio::spawn(async move {
        // Polled through a reference so that the connection, which holds the senders of
        // pending requests, is dropped only after the reason is stored: a request that sees
        // "closed" can then read why.
        if let Err(e) = (&mut connection).await {
            if let Ok(mut s) = slot.lock() {
                *s = Some(describe(&e));
            }
        }
        drop(connection);
    });
    Ok(Conn {
        client,
        label: name,
        timeout,
        broken,
        task,
    })
}

impl Conn {
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
