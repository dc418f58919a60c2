//! The query runner's transports: one connection of one query worker to one endpoint, which
//! sends a query instance (SQL and binds) and reads its whole result.
//!
//! - `pg`: PostgreSQL wire (tokio-postgres), with the endpoint's `statements` mode: `prepared`
//!   (the default, one prepare per connection and SQL text), `unnamed` (parse, bind and
//!   execute in one round trip, parameter types from the bind values) or `simple` (the simple
//!   query protocol, binds rendered as literals);
//! - `sqlite`: embedded SQLite (rusqlite), each query on a blocking thread;
//! - `http`: QuestDB's REST `/exec` (`GET {path}?query=<sql>`, binds rendered as literals);
//! - `qwp`: QuestDB's binary protocol over WebSocket (`/read/v1`), binds sent as typed values
//!   and results read column by column.
//!
//! `run` does nothing but send the query and read its result to the last row: the caller
//! measures latency around it. Every wait is bounded by the endpoint's `timeout` (default
//! 60 s; connecting by `connect_timeout`, default 10 s), so a server that stops answering
//! gives counted failures, never a hang. A failure that leaves the connection unusable says
//! `broken: true`, and the caller connects again before its next query.
//!
//! With `set_checksums(true)` (off by default: it costs CPU per value) every transport also
//! feeds each value of each row to a `query::checksum::ResultHasher` while reading, and returns
//! the result's canonical checksum in `Outcome::checksum` (docs/checksum.md): equal across
//! transports for equal results.

pub mod http;
pub mod pg;
pub mod qwp;
pub mod sqlite;

use std::path::Path;
use std::time::Duration;

use super::{Instance, Outcome, QueryError, QueryErrorClass};
use crate::net::error::{DriverError, ErrorClass};
use crate::net::tls::Connector;
use crate::plan::EndpointPlan;
use crate::value::Value;

/// Connecting waits this long unless the endpoint sets `connect_timeout`.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A query waits this long for its whole result unless the endpoint sets `timeout`.
pub const DEFAULT_QUERY_TIMEOUT: Duration = Duration::from_secs(60);

/// One connection to a query endpoint.
pub enum Transport {
    Pg(pg::PgTransport),
    Sqlite(sqlite::SqliteTransport),
    Http(http::HttpTransport),
    // Boxed: a WebSocket stream is several times the size of the other connections.
    Qwp(Box<qwp::QwpTransport>),
}

impl Transport {
    /// Connects to `endpoint`, whose URL (`env(...)` parts resolved) is `url`. `base_dir` is
    /// the workload file's directory; SQLite paths are read as every other wlrun SQLite
    /// connection reads them (`net::sqlite::open`), so all of them open the same file.
    /// Connects with a connector of its own (see `connect_via`).
    pub async fn connect(
        endpoint: &EndpointPlan,
        url: &str,
        base_dir: &Path,
    ) -> Result<Transport, QueryError> {
        let connector = crate::net::connect::connector(endpoint, url).map_err(|e| QueryError {
            broken: true,
            ..from_driver(e)
        })?;
        Transport::connect_via(endpoint, url, base_dir, &connector).await
    }

    /// Connects through the phase's connector for the endpoint (TLS sessions resume across
    /// the workers' reconnects, and the phase reports what connecting cost).
    pub async fn connect_via(
        endpoint: &EndpointPlan,
        url: &str,
        base_dir: &Path,
        connector: &Connector,
    ) -> Result<Transport, QueryError> {
        let timeouts = Timeouts::of(endpoint);
        match endpoint.kind.as_str() {
            "pg" => pg::PgTransport::connect(endpoint, url, connector, timeouts)
                .await
                .map(Transport::Pg),
            "sqlite" => sqlite::SqliteTransport::open(endpoint, url, base_dir, timeouts)
                .await
                .map(Transport::Sqlite),
            "http" => http::HttpTransport::connect(endpoint, url, connector, timeouts)
                .await
                .map(Transport::Http),
            "qwp" => qwp::QwpTransport::connect(endpoint, url, connector, timeouts)
                .await
                .map(|t| Transport::Qwp(Box::new(t))),
            other => Err(QueryError {
                class: QueryErrorClass::Connection,
                message: format!(
                    "endpoint {}.{}: queries over `{other}` endpoints are not supported yet",
                    endpoint.target, endpoint.name
                ),
                code: None,
                broken: true,
            }),
        }
    }

    /// Whether `run` computes the result's checksum (`query::checksum`) and returns it in
    /// `Outcome::checksum`. Off by default: it costs CPU per value read, which latency runs
    /// must not pay unless asked (`check same results across endpoints`).
    pub fn set_checksums(&mut self, on: bool) {
        match self {
            Transport::Pg(t) => t.set_checksums(on),
            Transport::Sqlite(t) => t.set_checksums(on),
            Transport::Http(t) => t.set_checksums(on),
            Transport::Qwp(t) => t.set_checksums(on),
        }
    }

    /// How the last successful `run`'s result arrived (`query::streaming`); nothing for
    /// SQLite, which has no socket and no pieces.
    pub fn streamed(&self) -> super::streaming::Streamed {
        match self {
            Transport::Pg(t) => t.streamed(),
            Transport::Sqlite(_) => super::streaming::Streamed::default(),
            Transport::Http(t) => t.streamed(),
            Transport::Qwp(t) => t.streamed(),
        }
    }

    /// Sends `inst` and reads its result to the last row.
    pub async fn run(&mut self, inst: &Instance) -> Result<Outcome, QueryError> {
        match self {
            Transport::Pg(t) => t.run(inst).await,
            Transport::Sqlite(t) => t.run(inst).await,
            Transport::Http(t) => t.run(inst).await,
            Transport::Qwp(t) => t.run(inst).await,
        }
    }
}

/// The waits of one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    pub connect: Duration,
    pub query: Duration,
}

impl Timeouts {
    /// The endpoint's `connect_timeout` and `timeout`, or the defaults.
    pub fn of(endpoint: &EndpointPlan) -> Timeouts {
        let get = |name: &str| match endpoint.options.get(name) {
            Some(Value::Duration(ns)) if *ns > 0 => Some(Duration::from_nanos(ns.unsigned_abs())),
            _ => None,
        };
        Timeouts {
            connect: get("connect_timeout").unwrap_or(DEFAULT_CONNECT_TIMEOUT),
            query: get("timeout").unwrap_or(DEFAULT_QUERY_TIMEOUT),
        }
    }
}

/// A failure of the crate's shared clients (connecting, HTTP) in the query runner's classes.
pub(crate) fn from_driver(e: DriverError) -> QueryError {
    let class = match e.class {
        ErrorClass::Connect => QueryErrorClass::Connect,
        ErrorClass::Connection => QueryErrorClass::Connection,
        ErrorClass::Timeout => QueryErrorClass::Timeout,
        ErrorClass::Encode => QueryErrorClass::Client,
        ErrorClass::Server => QueryErrorClass::HttpStatus,
    };
    QueryError {
        class,
        message: e.message,
        code: None,
        broken: e.fatal,
    }
}

/// "no answer within ..." for a query that ran past its timeout; the connection is given up.
pub(crate) fn timeout_error(label: &str, after: Duration) -> QueryError {
    QueryError {
        class: QueryErrorClass::Timeout,
        message: format!(
            "{label}: no complete answer within {}",
            crate::net::fmt::fmt_duration(after)
        ),
        code: None,
        broken: true,
    }
}

pub(crate) fn client_error(message: impl Into<String>) -> QueryError {
    QueryError {
        class: QueryErrorClass::Client,
        message: message.into(),
        code: None,
        broken: false,
    }
}

/// The checksum of `rows`, each pushed by a closure: what the transports' unit tests expect a
/// result to sum to.
#[cfg(test)]
pub(crate) fn expected_checksum(rows: &[&dyn Fn(&mut super::checksum::ResultHasher)]) -> u64 {
    let mut h = super::checksum::ResultHasher::new();
    for push in rows {
        h.begin_row();
        push(&mut h);
        h.end_row();
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::pg::test_endpoint as endpoint;

    /// Workers run on tokio's multi-threaded runtime: their futures must be `Send`.
    #[allow(dead_code)]
    fn futures_are_send(t: &mut Transport, inst: &Instance, ep: &EndpointPlan) {
        fn send<T: Send>(_: T) {}
        send(t.run(inst));
        send(Transport::connect(ep, "", Path::new("")));
    }

    #[test]
    fn timeouts_default_unless_the_endpoint_sets_them() {
        assert_eq!(
            Timeouts::of(&endpoint(&[])),
            Timeouts {
                connect: Duration::from_secs(10),
                query: Duration::from_secs(60),
            }
        );
        let t = Timeouts::of(&endpoint(&[
            ("timeout", Value::Duration(1_500_000_000)),
            ("connect_timeout", Value::Duration(250_000_000)),
        ]));
        assert_eq!(t.query, Duration::from_millis(1500));
        assert_eq!(t.connect, Duration::from_millis(250));
    }
}
