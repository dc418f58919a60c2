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
}
