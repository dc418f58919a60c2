//! Embedded SQLite's one-statement client, over a connection `net::sqlite::open` made.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

use crate::net::error::{DriverError, ErrorClass};
use crate::net::sqlite::{open, sqlite_error};
use crate::plan::EndpointPlan;

pub struct SqliteClient {
    conn: Connection,
}

impl SqliteClient {
    pub fn open(
        endpoint: &EndpointPlan,
        url: &str,
        _base_dir: &Path,
    ) -> Result<SqliteClient, DriverError> {
        Ok(SqliteClient {
            conn: open(endpoint, url, Duration::from_secs(60))?,
        })
    }

    pub fn execute(&mut self, sql: &str) -> Result<(), DriverError> {
        self.conn
            .execute_batch(sql)
            .map_err(|e| sqlite_error(&format!("`{sql}`"), e))
    }

    /// `execute`, or `false` when the table it names does not exist.
    pub fn execute_if_exists(&mut self, sql: &str) -> Result<bool, DriverError> {
        match self.conn.execute_batch(sql) {
            Ok(()) => Ok(true),
            Err(e) if no_table(&e) => Ok(false),
            Err(e) => Err(sqlite_error(&format!("`{sql}`"), e)),
        }
    }

    pub fn count(&mut self, sql: &str) -> Result<u64, DriverError> {
        let value = self
            .conn
            .query_row(sql, [], |r| r.get(0))
            .map_err(|e| sqlite_error(&format!("`{sql}`"), e))?;
        as_count(sql, value)
    }

    /// `count`, or `None` when the table it counts does not exist.
    pub fn count_if_exists(&mut self, sql: &str) -> Result<Option<u64>, DriverError> {
        match self.conn.query_row(sql, [], |r| r.get(0)) {
            Ok(value) => as_count(sql, value).map(Some),
            Err(e) if no_table(&e) => Ok(None),
            Err(e) => Err(sqlite_error(&format!("`{sql}`"), e)),
        }
    }
}

fn as_count(sql: &str, value: rusqlite::types::Value) -> Result<u64, DriverError> {
    match value {
        rusqlite::types::Value::Integer(n) if n >= 0 => Ok(n as u64),
        other => Err(DriverError::new(
            ErrorClass::Server,
            format!("`{sql}` did not return a count: got {other:?}"),
            false,
        )),
    }
}

/// SQLite says `no such table: NAME`, with no code of its own for it.
fn no_table(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(_, Some(m)) if super::says_no_table(m))
}

/// The embedded SQLite's version, as `SELECT sqlite_version()` answers it: asked on a private
/// in-memory connection, so no database file is opened or created for it.
pub fn engine_version() -> Result<String, DriverError> {
    let conn =
        Connection::open_in_memory().map_err(|e| sqlite_error("an in-memory database", e))?;
    conn.query_row("SELECT sqlite_version()", [], |r| r.get::<_, String>(0))
        .map_err(|e| sqlite_error("`SELECT sqlite_version()`", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> SqliteClient {
        SqliteClient {
            conn: Connection::open_in_memory().unwrap(),
        }
    }

    #[test]
    fn a_missing_table_counts_as_absent_and_other_errors_stay_errors() {
        let mut c = client();
        assert_eq!(c.count_if_exists("SELECT count(*) FROM cpu"), Ok(None));
        assert_eq!(c.execute_if_exists("DELETE FROM cpu"), Ok(false));
        assert!(c.count_if_exists("SELECT count(*) FROM").is_err());
        assert!(c
            .count_if_exists("SELECT nosuch FROM sqlite_master")
            .is_err());
        assert!(c.count("SELECT count(*) FROM cpu").is_err());
        c.execute("CREATE TABLE cpu (v INTEGER); INSERT INTO cpu VALUES (1), (2)")
            .unwrap();
        assert_eq!(c.count_if_exists("SELECT count(*) FROM cpu"), Ok(Some(2)));
        assert_eq!(c.execute_if_exists("DELETE FROM cpu"), Ok(true));
        assert_eq!(c.count_if_exists("SELECT count(*) FROM cpu"), Ok(Some(0)));
    }
}
