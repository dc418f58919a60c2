//! PostgreSQL's admin client: setup statements and counts, over a `net::pg` connection.

use std::time::Duration;

use tokio_postgres::error::SqlState;
use tokio_postgres::SimpleQueryMessage;

use crate::net::error::{DriverError, ErrorClass};
use crate::net::pg::{connect, Conn};
use crate::plan::EndpointPlan;

/// A PostgreSQL connection for setup, teardown and counts. Statements go through the simple
/// query protocol, so one call may carry several statements separated by `;`.
pub struct PgClient {
    conn: Conn,
}

impl PgClient {
    /// Connects to `endpoint` at its resolved `url`; `timeout` bounds the connect and every
    /// later wait.
    pub async fn connect(
        endpoint: &EndpointPlan,
        url: &str,
        timeout: Duration,
    ) -> Result<PgClient, DriverError> {
        let connector = crate::net::connect::connector(endpoint, url)?;
        Ok(PgClient {
            conn: connect(endpoint, url, &connector, timeout, timeout).await?,
        })
    }

    /// Runs statements that return no rows (DDL, TRUNCATE); rows they do return are ignored.
    pub async fn execute(&mut self, sql: &str) -> Result<(), DriverError> {
        let conn = &self.conn;
        conn.wait(|| statement_name(sql), conn.client.batch_execute(sql))
            .await
    }

    /// `execute`, or `false` when the table it names does not exist.
    pub async fn execute_if_exists(&mut self, sql: &str) -> Result<bool, DriverError> {
        let conn = &self.conn;
        let run = async {
            match conn.client.batch_execute(sql).await {
                Err(e) if no_table(&e) => Ok(false),
                r => r.map(|()| true),
            }
        };
        conn.wait(|| statement_name(sql), run).await
    }

    /// Runs `sql` and returns its first row's first column as a count.
    pub async fn count(&mut self, sql: &str) -> Result<u64, DriverError> {
        let conn = &self.conn;
        let messages = conn
            .wait(|| statement_name(sql), conn.client.simple_query(sql))
            .await?;
        self.first_count(sql, &messages)
    }

    /// `count`, or `None` when the table it counts does not exist.
    pub async fn count_if_exists(&mut self, sql: &str) -> Result<Option<u64>, DriverError> {
        let conn = &self.conn;
        let run = async {
            match conn.client.simple_query(sql).await {
                Err(e) if no_table(&e) => Ok(None),
                r => r.map(Some),
            }
        };
        match conn.wait(|| statement_name(sql), run).await? {
            Some(messages) => self.first_count(sql, &messages).map(Some),
            None => Ok(None),
        }
    }

    fn first_count(&self, sql: &str, messages: &[SimpleQueryMessage]) -> Result<u64, DriverError> {
        let row = messages.iter().find_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some(r),
            _ => None,
        });
        let bad = |why: String| {
            DriverError::new(
                ErrorClass::Server,
                format!("{}: {why} (query: {sql})", self.conn.label),
                false,
            )
        };
        let Some(row) = row else {
            return Err(bad("the count query returned no row".to_string()));
        };
        match row.try_get(0) {
            Ok(Some(text)) => parse_count(text).map_err(bad),
            Ok(None) => Err(bad("the count query returned NULL".to_string())),
            Err(_) => Err(bad("the count query returned no column".to_string())),
        }
    }

    /// Runs `sql` and returns its first row's first column as the server wrote it (`None`
    /// when there is no row or the value is NULL): `SELECT version()` and the like.
    pub async fn text(&mut self, sql: &str) -> Result<Option<String>, DriverError> {
        let conn = &self.conn;
        let messages = conn
            .wait(|| statement_name(sql), conn.client.simple_query(sql))
            .await?;
        Ok(messages.iter().find_map(|m| match m {
            SimpleQueryMessage::Row(r) => r.try_get(0).ok().flatten().map(str::to_string),
            _ => None,
        }))
    }
}

/// PostgreSQL's `undefined_table`, or QuestDB's words over the same protocol (it sends no
/// SQLSTATE of its own).
fn no_table(e: &tokio_postgres::Error) -> bool {
    e.code() == Some(&SqlState::UNDEFINED_TABLE)
        || e.as_db_error()
            .is_some_and(|d| super::says_no_table(d.message()))
}

/// A count as the server wrote it: decimal digits only.
fn parse_count(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "the count query returned `{text}`, not a non-negative integer"
        ));
    }
    t.parse()
        .map_err(|_| format!("the count query returned `{text}`, too large for a count"))
}

/// The start of a statement, for a timeout's message.
fn statement_name(sql: &str) -> String {
    const MAX: usize = 60;
    let s = sql.trim();
    match s.char_indices().nth(MAX) {
        Some((cut, _)) => format!("`{}...`", &s[..cut]),
        None => format!("`{s}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_plain_non_negative_integers() {
        assert_eq!(parse_count("0"), Ok(0));
        assert_eq!(parse_count(" 42 "), Ok(42));
        assert_eq!(parse_count("18446744073709551615"), Ok(u64::MAX));
        for bad in ["", "-1", "+1", "1.5", "abc", "18446744073709551616"] {
            assert!(parse_count(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn long_statements_are_cut_in_messages() {
        assert_eq!(statement_name("  SELECT 1 "), "`SELECT 1`");
        let long = "x".repeat(100);
        assert_eq!(statement_name(&long), format!("`{}...`", "x".repeat(60)));
    }
}
