//! The query runner's data: query instances (SQL and bind values, the same on every transport),
//! the transports that execute them, and the statistics and schedule of a run.
//!
//! - `binds`: a query type's bind program, evaluated per instance, deterministically from the
//!   workload seed and the instance index (docs/rng.md);
//! - `sql`: placeholders and literals: list binds inlined, the rest renumbered, and whole
//!   statements rendered with literals where an endpoint takes no binds;
//! - `transport`: PostgreSQL wire, HTTP REST (`/exec`) and embedded SQLite.

pub mod binds;
pub mod checksum;
pub mod ramp;
pub mod schedule;
pub mod sql;
pub mod stats;
pub mod streaming;
pub mod transport;

use std::sync::Arc;

use crate::value::BindValue;

/// One query instance, ready for any transport: the SQL with list binds already inlined as
/// quoted literals and the remaining placeholders renumbered `$1..$n`, and those n values.
#[derive(Clone, Debug, PartialEq)]
pub struct Instance {
    /// The query type: its index in the phase's `queries`.
    pub query: usize,
    /// The instance's index among the instances of its query type (0-based).
    pub index: u64,
    pub sql: Arc<str>,
    pub binds: Vec<BindValue>,
    /// The `route by` key as text (docs/rng.md §6), if the query routes.
    pub route: Option<String>,
    /// `then sql`: the further statements of the instance, each with its own SQL and binds,
    /// run in order after `sql` on the same connection.
    pub then: Vec<(Arc<str>, Vec<BindValue>)>,
}

/// What a transport reports for a query that succeeded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Rows returned, all of them read.
    pub rows: u64,
    /// The order-insensitive checksum of the result (`checksum.rs`), when the transport was
    /// asked for it (`check same results across endpoints`).
    pub checksum: Option<u64>,
    /// The rows the statement inserted, updated or deleted, as the server counted them (the
    /// command tag's count on PostgreSQL, `changes()` on SQLite, `updated` of QuestDB's
    /// `/exec`, `rows_affected` of QWP's EXEC_DONE); `None` where the server said nothing.
    /// Read for statements whose verb changes rows (`query::sql::changes_rows`) only: for a
    /// SELECT PostgreSQL's tag counts the rows returned.
    pub affected: Option<u64>,
}

/// Why a query failed, in the classes the report counts separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QueryErrorClass {
    /// The server ran the statement and refused it (SQL error, SQLSTATE in `code`).
    Sql,
    /// An HTTP reply outside 2xx (status in `code`), or a body that is not the expected shape.
    HttpStatus,
    /// No answer within the endpoint's timeout.
    Timeout,
    /// The connection could not be made: refused, an unknown host, a password or a
    /// certificate refused. Nothing reached the server's query path.
    Connect,
    /// The connection was lost (reset, closed, the session ended by the server).
    Connection,
    /// The client could not send the query (a bind that does not fit its parameter, ...).
    Client,
    /// Request runs: the answer's body failed an `expect body` check.
    Body,
    /// Request runs: the response hook called the answer an error.
    Hook,
    /// Query runs: the rows the instance changed failed its `expect affected` (an UPDATE of
    /// a key that is not there).
    Affected,
}

impl QueryErrorClass {
    /// The class as the report names it: serde's own name (a unit test holds them together).
    pub fn as_str(self) -> &'static str {
        match self {
            QueryErrorClass::Sql => "sql",
            QueryErrorClass::HttpStatus => "http_status",
            QueryErrorClass::Timeout => "timeout",
            QueryErrorClass::Connect => "connect",
            QueryErrorClass::Connection => "connection",
            QueryErrorClass::Client => "client",
            QueryErrorClass::Body => "body",
            QueryErrorClass::Hook => "hook",
            QueryErrorClass::Affected => "affected",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct QueryError {
    pub class: QueryErrorClass,
    /// The server's own message, or ours when the server said nothing.
    pub message: String,
    /// SQLSTATE for SQL errors, the status code for HTTP errors.
    pub code: Option<String>,
    /// The connection is no longer usable: the worker reconnects before its next query.
    pub broken: bool,
}

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.code {
            Some(code) => write!(f, "{} ({code})", self.message),
            None => f.write_str(&self.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::QueryErrorClass;

    #[test]
    fn error_class_names_are_serdes_own() {
        use QueryErrorClass::*;
        for c in [
            Sql, HttpStatus, Timeout, Connect, Connection, Client, Body, Hook, Affected,
        ] {
            // A class added without a name here fails to compile below, not silently.
            match c {
                Sql | HttpStatus | Timeout | Connect | Connection | Client | Body | Hook
                | Affected => {}
            }
            let serde_name = serde_json::to_string(&c).unwrap();
            assert_eq!(serde_name, format!("\"{}\"", c.as_str()));
        }
    }
}
