//! SQL over QuestDB's QWP query protocol (`/read/v1`), one statement at a time: `require`
//! counts, visibility counts, setup and teardown on a `qwp` endpoint. It is the query
//! runner's own client (`query::transport::qwp`), so both speak the protocol alike; a count
//! reads its first row's first value from the decoder, without building rows.

use std::sync::Arc;
use std::time::Duration;

use crate::net::error::{DriverError, ErrorClass};
use crate::plan::EndpointPlan;
use crate::query::checksum::Number;
use crate::query::transport::qwp::egress::Values;
use crate::query::transport::qwp::QwpTransport;
use crate::query::transport::Timeouts;
use crate::query::{Instance, QueryError, QueryErrorClass};

pub struct QwpSql {
    transport: QwpTransport,
    label: String,
}

impl QwpSql {
    pub async fn connect(
        endpoint: &EndpointPlan,
        url: &str,
        timeout: Duration,
    ) -> Result<QwpSql, DriverError> {
        let timeouts = Timeouts {
            connect: crate::net::http::connect_timeout(endpoint, timeout),
            query: timeout,
        };
        let connector = crate::net::connect::connector(endpoint, url)?;
        let transport = QwpTransport::connect(endpoint, url, &connector, timeouts)
            .await
            .map_err(driver_error)?;
        Ok(QwpSql {
            transport,
            label: format!("{}.{}", endpoint.target, endpoint.name),
        })
    }

    /// Runs a statement whose result, if any, is not needed (DDL, TRUNCATE).
    pub async fn execute(&mut self, sql: &str) -> Result<(), DriverError> {
        self.transport
            .run_into::<First>(&statement(sql), None)
            .await
            .map(|_| ())
            .map_err(|e| self.failed(sql, e))
    }

    /// `execute`, or `false` when the table it names does not exist.
    pub async fn execute_if_exists(&mut self, sql: &str) -> Result<bool, DriverError> {
        match self
            .transport
            .run_into::<First>(&statement(sql), None)
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if no_table(&e) => Ok(false),
            Err(e) => Err(self.failed(sql, e)),
        }
    }

    /// Runs a query and returns its first row's first value, which must be a non-negative
    /// integer.
    pub async fn count(&mut self, sql: &str) -> Result<u64, DriverError> {
        let mut first = First::default();
        self.transport
            .run_into(&statement(sql), Some(&mut first))
            .await
            .map_err(|e| self.failed(sql, e))?;
        self.count_of(sql, first)
    }

    /// `count`, or `None` when the table it counts does not exist.
    pub async fn count_if_exists(&mut self, sql: &str) -> Result<Option<u64>, DriverError> {
        let mut first = First::default();
        match self
            .transport
            .run_into(&statement(sql), Some(&mut first))
            .await
        {
            Ok(_) => self.count_of(sql, first).map(Some),
            Err(e) if no_table(&e) => Ok(None),
            Err(e) => Err(self.failed(sql, e)),
        }
    }

    fn count_of(&self, sql: &str, first: First) -> Result<u64, DriverError> {
        let bad = |why: String| {
            DriverError::new(
                ErrorClass::Server,
                format!("{}: {why} (query: {sql})", self.label),
                false,
            )
        };
        match first.value {
            None => Err(bad("the count query returned no row".to_string())),
            Some(Cell::Null) => Err(bad("the count query returned NULL".to_string())),
            Some(Cell::Int(n)) => u64::try_from(n).map_err(|_| {
                bad(format!(
                    "the count query returned `{n}`, not a non-negative integer"
                ))
            }),
            Some(Cell::Float(f)) => crate::net::http::float_count(f).ok_or_else(|| {
                bad(format!(
                    "the count query returned `{f}`, not a non-negative integer"
                ))
            }),
            Some(Cell::Other(what)) => Err(bad(format!(
                "the count query returned {what}, not a non-negative integer"
            ))),
        }
    }

    fn failed(&self, sql: &str, e: QueryError) -> DriverError {
        let e = driver_error(e);
        if e.class == ErrorClass::Server {
            DriverError::new(
                e.class,
                format!("{} rejected `{sql}`: {}", self.label, e.message),
                e.fatal,
            )
        } else {
            e
        }
    }
}

/// QuestDB's words for a table that does not exist, in an error the server sent.
fn no_table(e: &QueryError) -> bool {
    e.class == QueryErrorClass::Sql && super::says_no_table(&e.message)
}

fn statement(sql: &str) -> Instance {
    Instance {
        query: 0,
        index: 0,
        sql: Arc::from(sql),
        binds: Vec::new(),
        route: None,
        then: Vec::new(),
    }
}

/// The query runner's error in the classes of the one-statement clients.
fn driver_error(e: QueryError) -> DriverError {
    let class = match e.class {
        QueryErrorClass::Connect => ErrorClass::Connect,
        QueryErrorClass::Connection => ErrorClass::Connection,
        QueryErrorClass::Timeout => ErrorClass::Timeout,
        QueryErrorClass::Client => ErrorClass::Encode,
        _ => ErrorClass::Server,
    };
    let message = match &e.code {
        Some(code) if e.class == QueryErrorClass::Sql => format!("{} ({code})", e.message),
        _ => e.message,
    };
    DriverError::new(class, message, e.broken)
}

/// The first value of the first row.
#[derive(Clone, Debug, PartialEq)]
enum Cell {
    Null,
    Int(i64),
    Float(f64),
    /// Anything else, described.
    Other(String),
}

/// Keeps the first row's first value; the rest pass by.
#[derive(Default)]
struct First {
    value: Option<Cell>,
    /// Values seen in the current row.
    column: usize,
    rows: u64,
}

impl First {
    fn keep(&mut self, cell: impl FnOnce() -> Cell) {
        if self.rows == 0 && self.column == 0 {
            self.value = Some(cell());
        }
        self.column += 1;
    }
}

impl Values for First {
    fn begin_row(&mut self) {
        self.column = 0;
    }
    fn end_row(&mut self) {
        self.rows += 1;
    }
    fn push_null(&mut self) {
        self.keep(|| Cell::Null)
    }
    fn push_i64(&mut self, v: i64) {
        self.keep(|| Cell::Int(v))
    }
    fn push_bool(&mut self, v: bool) {
        self.keep(|| Cell::Other(format!("the boolean {v}")))
    }
    fn push_f64(&mut self, v: f64) {
        self.keep(|| Cell::Float(v))
    }
    fn push_f32(&mut self, v: f32) {
        self.keep(|| Cell::Float(f64::from(v)))
    }
    fn push_number(&mut self, n: Number) {
        self.keep(|| match n {
            Number::Int(i) => Cell::Int(i),
            other => Cell::Other(format!("the decimal {other:?}")),
        })
    }
    fn push_text(&mut self, s: &str) {
        self.keep(|| {
            Cell::Other(format!(
                "the text `{}`",
                crate::net::http::quote_server_text(s)
            ))
        })
    }
    fn push_text_bytes(&mut self, b: &[u8]) {
        self.push_text(&String::from_utf8_lossy(b))
    }
    fn push_timestamp_us(&mut self, us: i64) {
        self.keep(|| Cell::Other(format!("a timestamp ({us} µs)")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_value_of_the_first_row_is_kept() {
        let mut f = First::default();
        f.begin_row();
        f.push_i64(42);
        f.push_text("x");
        f.end_row();
        f.begin_row();
        f.push_i64(7);
        f.end_row();
        assert_eq!(f.value, Some(Cell::Int(42)));
        let mut f = First::default();
        f.begin_row();
        f.push_null();
        f.end_row();
        assert_eq!(f.value, Some(Cell::Null));
        assert_eq!(First::default().value, None);
    }
}
