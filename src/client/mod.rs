//! Clients that run one statement at a time: the table setup and teardown around an ingest
//! phase, and the counts that decide how many rows a server shows. Not the measured path;
//! simple and strict (every answer is checked, every wait has a timeout).

pub mod http_sql;
pub mod metrics;
pub mod pg;
pub mod qwp_sql;
pub mod sqlite;

use std::path::Path;
use std::time::Duration;

use crate::net::error::{DriverError, ErrorClass};
use crate::plan::EndpointPlan;

/// A SQL connection of any kind of endpoint that runs SQL: PostgreSQL wire, embedded SQLite,
/// an HTTP endpoint that takes SQL in a query string (QuestDB's `/exec`), or QuestDB's QWP
/// query protocol.
pub enum SqlClient {
    Pg(pg::PgClient),
    Sqlite(sqlite::SqliteClient),
    Http(Box<http_sql::HttpSql>),
    // Boxed: a WebSocket stream is several times the size of the other connections.
    Qwp(Box<qwp_sql::QwpSql>),
}

impl SqlClient {
    /// Connects to `endpoint`, whose resolved URL is `url`.
    pub async fn connect(
        endpoint: &EndpointPlan,
        url: &str,
        base_dir: &Path,
        timeout: Duration,
    ) -> Result<SqlClient, DriverError> {
        Ok(match endpoint.kind.as_str() {
            "pg" => SqlClient::Pg(pg::PgClient::connect(endpoint, url, timeout).await?),
            "sqlite" => SqlClient::Sqlite(sqlite::SqliteClient::open(endpoint, url, base_dir)?),
            "http" => SqlClient::Http(Box::new(
                http_sql::HttpSql::connect(endpoint, url, timeout).await?,
            )),
            "qwp" => SqlClient::Qwp(Box::new(
                qwp_sql::QwpSql::connect(endpoint, url, timeout).await?,
            )),
            other => {
                return Err(DriverError::new(
                    ErrorClass::Connect,
                    format!("`{other}` endpoints do not take SQL"),
                    true,
                ))
            }
        })
    }

    /// Runs a statement that returns no rows (DDL, TRUNCATE).
    pub async fn execute(&mut self, sql: &str) -> Result<(), DriverError> {
        match self {
            SqlClient::Pg(c) => c.execute(sql).await,
            SqlClient::Sqlite(c) => c.execute(sql),
            SqlClient::Http(c) => c.execute(sql).await,
            SqlClient::Qwp(c) => c.execute(sql).await,
        }
    }

    /// Runs a query whose first row's first column is a count, and returns it. An empty
    /// result, NULL, or a value that is not a non-negative integer is an error.
    pub async fn count(&mut self, sql: &str) -> Result<u64, DriverError> {
        match self {
            SqlClient::Pg(c) => c.count(sql).await,
            SqlClient::Sqlite(c) => c.count(sql),
            SqlClient::Http(c) => c.count(sql).await,
            SqlClient::Qwp(c) => c.count(sql).await,
        }
    }

    /// `count`, or `None` when the server says the table it counts does not exist (a first
    /// run, before anything created it): a table that is not there shows no rows. Any other
    /// error is an error.
    pub async fn count_if_exists(&mut self, sql: &str) -> Result<Option<u64>, DriverError> {
        match self {
            SqlClient::Pg(c) => c.count_if_exists(sql).await,
            SqlClient::Sqlite(c) => c.count_if_exists(sql),
            SqlClient::Http(c) => c.count_if_exists(sql).await,
            SqlClient::Qwp(c) => c.count_if_exists(sql).await,
        }
    }

    /// `execute`, or `false` when the server says the table the statement names does not
    /// exist (a `TRUNCATE` of a table no run created yet has nothing to empty).
    pub async fn execute_if_exists(&mut self, sql: &str) -> Result<bool, DriverError> {
        match self {
            SqlClient::Pg(c) => c.execute_if_exists(sql).await,
            SqlClient::Sqlite(c) => c.execute_if_exists(sql),
            SqlClient::Http(c) => c.execute_if_exists(sql).await,
            SqlClient::Qwp(c) => c.execute_if_exists(sql).await,
        }
    }
}

/// Whether a server's error text says that the table a statement names does not exist, for
/// the servers that give no code for it: SQLite (`no such table: t`) and QuestDB over HTTP,
/// PostgreSQL wire and QWP (`table does not exist [table=t]`). PostgreSQL itself is asked by
/// its code, 42P01, whatever the language of its messages.
pub(crate) fn says_no_table(message: &str) -> bool {
    message.starts_with("no such table") || message.contains("table does not exist")
}

#[cfg(test)]
mod tests {
    #[test]
    fn missing_tables_by_the_servers_words() {
        assert!(super::says_no_table("no such table: cpu"));
        assert!(super::says_no_table("table does not exist [table=cpu]"));
        for other in [
            "no such column: x",
            "syntax error at or near \"FROM\"",
            "relation \"cpu\" already exists",
            "permission denied for table cpu",
        ] {
            assert!(!super::says_no_table(other), "{other}");
        }
    }
}
