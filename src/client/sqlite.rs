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

    pub fn count(&mut self, sql: &str) -> Result<u64, DriverError> {
        let value: rusqlite::types::Value = self
            .conn
            .query_row(sql, [], |r| r.get(0))
            .map_err(|e| sqlite_error(&format!("`{sql}`"), e))?;
        match value {
            rusqlite::types::Value::Integer(n) if n >= 0 => Ok(n as u64),
            other => Err(DriverError::new(
                ErrorClass::Server,
                format!("`{sql}` did not return a count: got {other:?}"),
                false,
            )),
        }
    }
}
