//! Queries on embedded SQLite (rusqlite). SQLite is synchronous: each query runs on tokio's
//! blocking pool with the connection moved there and back, so the worker's runtime thread
//! never blocks and the endpoint's timeout still holds (a query past it is interrupted with
//! `sqlite3_interrupt`).
//!
//! Statements are prepared once and cached by the connection (`prepare_cached`). Placeholders
//! `$n` (and `?n`, `?`) take the n-th bind wherever they appear. Binds go in SQLite's storage
//! classes: Int as INTEGER, Float as REAL, Bool as INTEGER 0/1, Text as TEXT, Null as NULL,
//! and Timestamp as the fixed-width text wlrun's DDL stores timestamps as
//! (`encode::sqlite_time::sqlite_timestamp_text`), so comparisons with stored times are right
//! (`query::sql::sqlite_value`).
//!
//! Checksums (`set_checksums`, docs/checksum.md §3.3): values by their storage class, and a
//! TEXT in wlrun's fixed-width timestamp form as that timestamp (`hash_row`), so that a
//! result equals PostgreSQL's with timestamptz columns.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, InterruptHandle};

use super::{client_error, from_driver, timeout_error, Timeouts};
use crate::plan::EndpointPlan;
use crate::query::checksum::{parse_timestamp_us, ResultHasher};
use crate::query::sql::sqlite_value;
use crate::query::{Instance, Outcome, QueryError, QueryErrorClass};
use crate::value::BindValue;

/// Prepared statements each connection keeps (rusqlite's default is 16).
const STATEMENT_CACHE: usize = 256;

/// After interrupting a query that ran past its timeout, how long to wait for its thread to
/// hand the connection back before giving the connection up.
const INTERRUPT_WAIT: Duration = Duration::from_secs(1);

pub struct SqliteTransport {
    /// `None` while a query that timed out still holds it, and for good after that.
    conn: Option<Connection>,
    interrupt: Arc<InterruptHandle>,
    label: String,
    timeout: Duration,
    /// Compute each result's checksum (`Transport::set_checksums`).
    checksums: bool,
}

impl SqliteTransport {
    /// Whether `run` computes the result's checksum (off by default).
    pub fn set_checksums(&mut self, on: bool) {
        self.checksums = on;
    }

    /// Opens the database `url` with the endpoint's pragmas (`net::sqlite::open`); the
    /// open runs on the blocking pool too, since it may wait on a lock.
    pub async fn open(
        endpoint: &EndpointPlan,
        url: &str,
        _base_dir: &Path,
        timeouts: Timeouts,
    ) -> Result<SqliteTransport, QueryError> {
        let label = format!("{}.{} ({url})", endpoint.target, endpoint.name);
        let ep = endpoint.clone();
        let path = url.to_string();
        let busy = timeouts.query;
        let opening =
            tokio::task::spawn_blocking(move || crate::net::sqlite::open(&ep, &path, busy));
        let conn = match tokio::time::timeout(timeouts.connect, opening).await {
            Ok(Ok(Ok(c))) => c,
            Ok(Ok(Err(e))) => {
                return Err(QueryError {
                    broken: true,
                    ..from_driver(e)
                })
            }
            Ok(Err(e)) => {
                return Err(QueryError {
                    class: QueryErrorClass::Connection,
                    message: format!("opening {label}: {e}"),
                    code: None,
                    broken: true,
                })
            }
            Err(_) => return Err(timeout_error(&format!("opening {label}"), timeouts.connect)),
        };
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        Ok(SqliteTransport {
            interrupt: Arc::new(conn.get_interrupt_handle()),
            conn: Some(conn),
            label,
            timeout: timeouts.query,
            checksums: false,
        })
    }

    /// Runs `inst` and steps through every row of its result, within the endpoint's timeout.
    pub async fn run(&mut self, inst: &Instance) -> Result<Outcome, QueryError> {
        let Some(conn) = self.conn.take() else {
            return Err(QueryError {
                class: QueryErrorClass::Connection,
                message: format!(
                    "{}: the connection was given up after an earlier query",
                    self.label
                ),
                code: None,
                broken: true,
            });
        };
        let sql = inst.sql.clone();
        let binds = inst.binds.clone();
        let checksums = self.checksums;
        let mut task = tokio::task::spawn_blocking(move || {
            let result = execute(&conn, &sql, &binds, checksums);
            (conn, result)
        });
        match tokio::time::timeout(self.timeout, &mut task).await {
            Ok(Ok((conn, result))) => {
                self.conn = Some(conn);
                result
            }
            Ok(Err(e)) => Err(QueryError {
                class: QueryErrorClass::Client,
                message: format!("{}: the query's thread failed: {e}", self.label),
                code: None,
                broken: true,
            }),
            Err(_) => {
                self.interrupt.interrupt();
                let mut err = timeout_error(&self.label, self.timeout);
                if let Ok(Ok((conn, _))) = tokio::time::timeout(INTERRUPT_WAIT, task).await {
                    // Interrupted and back: the connection is as good as before.
                    self.conn = Some(conn);
                    err.broken = false;
                }
                Err(err)
            }
        }
    }
}

fn execute(
    conn: &Connection,
    sql: &str,
    binds: &[BindValue],
    checksums: bool,
) -> Result<Outcome, QueryError> {
    let mut stmt = conn.prepare_cached(sql).map_err(|e| sql_error(&e))?;
    let count = stmt.parameter_count();
    let mut highest = 0;
    for idx in 1..=count {
        let n = match stmt.parameter_name(idx) {
            None => idx,
            Some(name) => placeholder_number(name).ok_or_else(|| {
                client_error(format!(
                    "placeholder `{name}`: wlrun binds numbered placeholders ($1, ?1) only"
                ))
            })?,
        };
        highest = highest.max(n);
        let v = binds.get(n.wrapping_sub(1)).ok_or_else(|| {
            client_error(format!(
                "the statement uses ${n} but the query gives {} bind value(s)",
                binds.len()
            ))
        })?;
        stmt.raw_bind_parameter(idx, sqlite_value(v))
            .map_err(|e| client_error(format!("${n}: cannot bind {v:?}: {e}")))?;
    }
    if highest != binds.len() {
        return Err(client_error(format!(
            "the statement uses {highest} parameter(s) but the query gives {} bind value(s)",
            binds.len()
        )));
    }
    let columns = stmt.column_count();
    // `changes()` keeps the count of the last statement that changed rows, so it is read only
    // after one that may have.
    let writes = !stmt.readonly();
    let mut rows = stmt.raw_query();
    let mut n = 0u64;
    let mut hasher = checksums.then(ResultHasher::new);
    loop {
        match rows.next() {
            Ok(Some(row)) => {
                n += 1;
                if let Some(h) = &mut hasher {
                    hash_row(h, row, columns)?;
                }
            }
            Ok(None) => break,
            Err(e) => return Err(sql_error(&e)),
        }
    }
    drop(rows);
    Ok(Outcome {
        rows: n,
        checksum: hasher.map(|h| h.finish()),
        affected: writes.then(|| conn.changes()),
    })
}

/// Feeds a row's values to the checksum by their storage class (docs/checksum.md §3.3):
/// NULL, INTEGER as an integer (booleans are stored as 0/1 and hash as such everywhere), REAL
/// as a float, TEXT as text, except that a text in wlrun's fixed-width timestamp form
/// (`encode::sqlite_time::sqlite_timestamp_text`, which wlrun's DDL stores timestamps as) is that
/// timestamp. A BLOB has no encoding: a `Client` error.
fn hash_row(
    h: &mut ResultHasher,
    row: &rusqlite::Row<'_>,
    columns: usize,
) -> Result<(), QueryError> {
    use rusqlite::types::ValueRef;
    h.begin_row();
    for i in 0..columns {
        match row.get_ref(i).map_err(|e| sql_error(&e))? {
            ValueRef::Null => h.push_null(),
            ValueRef::Integer(v) => h.push_i64(v),
            ValueRef::Real(f) => h.push_f64(f),
            ValueRef::Text(t) => match wlrun_timestamp(t) {
                Some(us) => h.push_timestamp_us(us),
                None => h.push_text_bytes(t),
            },
            ValueRef::Blob(_) => {
                let name = row.as_ref().column_name(i).unwrap_or("?");
                return Err(client_error(format!(
                    "checksum: column `{name}` holds a BLOB, which has no checksum encoding"
                )));
            }
        }
    }
    h.end_row();
    Ok(())
}

/// The UTC microseconds of a text in wlrun's SQLite timestamp form, exactly 26 bytes
/// `YYYY-MM-DD HH:MM:SS.ffffff`; `None` for any other text.
pub fn wlrun_timestamp(t: &[u8]) -> Option<i64> {
    if t.len() != 26 {
        return None;
    }
    let shape_ok = t.iter().enumerate().all(|(i, &c)| match i {
        4 | 7 => c == b'-',
        10 => c == b' ',
        13 | 16 => c == b':',
        19 => c == b'.',
        _ => c.is_ascii_digit(),
    });
    if !shape_ok {
        return None;
    }
    parse_timestamp_us(std::str::from_utf8(t).ok()?)
}

/// `$3`, `?3`, `:3` or `@3` -> 3.
fn placeholder_number(name: &str) -> Option<usize> {
    let digits = name.get(1..)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|n| *n > 0)
}

/// A SQLite error: the engine's message, and its result code's name in `code`. A busy
/// database (the busy timeout ran out) is a `Timeout`; an interrupted query too.
fn sql_error(e: &rusqlite::Error) -> QueryError {
    match e {
        rusqlite::Error::SqliteFailure(f, msg) => {
            let class = match f.code {
                rusqlite::ErrorCode::DatabaseBusy
                | rusqlite::ErrorCode::DatabaseLocked
                | rusqlite::ErrorCode::OperationInterrupted => QueryErrorClass::Timeout,
                _ => QueryErrorClass::Sql,
            };
            QueryError {
                class,
                message: msg.clone().unwrap_or_else(|| f.to_string()),
                code: Some(code_name(f.extended_code & 0xff).to_string()),
                broken: false,
            }
        }
        rusqlite::Error::InvalidParameterCount(..)
        | rusqlite::Error::InvalidParameterName(_)
        | rusqlite::Error::ToSqlConversionFailure(_) => client_error(e.to_string()),
        other => QueryError {
            class: QueryErrorClass::Sql,
            message: other.to_string(),
            code: None,
            broken: false,
        },
    }
}

/// SQLite's name of a primary result code.
fn code_name(code: i32) -> &'static str {
    match code {
        1 => "SQLITE_ERROR",
        2 => "SQLITE_INTERNAL",
        3 => "SQLITE_PERM",
        4 => "SQLITE_ABORT",
        5 => "SQLITE_BUSY",
        6 => "SQLITE_LOCKED",
        7 => "SQLITE_NOMEM",
        8 => "SQLITE_READONLY",
        9 => "SQLITE_INTERRUPT",
        10 => "SQLITE_IOERR",
        11 => "SQLITE_CORRUPT",
        12 => "SQLITE_NOTFOUND",
        13 => "SQLITE_FULL",
        14 => "SQLITE_CANTOPEN",
        15 => "SQLITE_PROTOCOL",
        16 => "SQLITE_EMPTY",
        17 => "SQLITE_SCHEMA",
        18 => "SQLITE_TOOBIG",
        19 => "SQLITE_CONSTRAINT",
        20 => "SQLITE_MISMATCH",
        21 => "SQLITE_MISUSE",
        22 => "SQLITE_NOLFS",
        23 => "SQLITE_AUTH",
        24 => "SQLITE_FORMAT",
        25 => "SQLITE_RANGE",
        26 => "SQLITE_NOTADB",
        _ => "SQLITE_UNKNOWN",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered() {
        assert_eq!(placeholder_number("$1"), Some(1));
        assert_eq!(placeholder_number("?12"), Some(12));
        assert_eq!(placeholder_number("$0"), None);
        assert_eq!(placeholder_number(":name"), None);
        assert_eq!(placeholder_number("$"), None);
    }

    #[test]
    fn binds_out_of_order_and_repeated() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE t (i INTEGER, s TEXT); \
             INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, NULL);",
        )
        .unwrap();
        let run = |sql: &str, binds: &[BindValue]| execute(&conn, sql, binds, false);
        // $2 appears first: it must still take the second value.
        assert_eq!(
            run(
                "SELECT * FROM t WHERE i < $2 AND i >= $1",
                &[BindValue::Int(2), BindValue::Int(4)]
            )
            .map(|o| o.rows),
            Ok(2)
        );
        assert_eq!(
            run(
                "SELECT * FROM t WHERE i = $1 OR i = $1 + 1",
                &[BindValue::Int(1)]
            )
            .map(|o| o.rows),
            Ok(2)
        );
        assert_eq!(
            run("SELECT * FROM t WHERE s IS $1", &[BindValue::Null]).map(|o| o.rows),
            Ok(1)
        );
        let e = run("SELECT * FROM t WHERE i = $2", &[BindValue::Int(1)]).unwrap_err();
        assert_eq!(e.class, QueryErrorClass::Client);
        let e = run("SELECT * FROM t", &[BindValue::Int(1)]).unwrap_err();
        assert_eq!(e.class, QueryErrorClass::Client);
        let e = run("SELECT * FROM nope", &[]).unwrap_err();
        assert_eq!(e.class, QueryErrorClass::Sql);
        assert_eq!(e.code.as_deref(), Some("SQLITE_ERROR"));
        assert!(e.message.contains("nope"), "{}", e.message);
    }

    #[test]
    fn checksums_read_storage_classes_and_wlrun_timestamps() {
        let conn = Connection::open_in_memory().unwrap();
        let mut ts = Vec::new();
        crate::encode::sqlite_time::sqlite_timestamp_text(1_451_606_410_500_000_000, &mut ts);
        let ts = String::from_utf8(ts).unwrap();
        conn.execute_batch(&format!(
            "CREATE TABLE t (host TEXT, n INTEGER, usage REAL, ts TEXT, flag INTEGER); \
             INSERT INTO t VALUES ('host_1', 7, 1.5, '{ts}', 1), \
                                  (NULL, NULL, NULL, NULL, NULL), \
                                  ('2016-01-01 00:00:10', 8, 2.0, '2016-01-01T00:00:10Z', 0);"
        ))
        .unwrap();
        let sum = |sql: &str| execute(&conn, sql, &[], true).map(|o| o.checksum);
        let mut h = ResultHasher::new();
        h.begin_row();
        h.push_text("host_1");
        h.push_i64(7);
        h.push_f64(1.5);
        h.push_timestamp_us(1_451_606_410_500_000);
        h.push_bool(true);
        h.end_row();
        h.begin_row();
        (0..5).for_each(|_| h.push_null());
        h.end_row();
        // Texts in other forms stay texts; 2.0 is the integer 2.
        h.begin_row();
        h.push_text("2016-01-01 00:00:10");
        h.push_i64(8);
        h.push_i64(2);
        h.push_text("2016-01-01T00:00:10Z");
        h.push_bool(false);
        h.end_row();
        assert_eq!(sum("SELECT * FROM t"), Ok(Some(h.finish())));
        assert_eq!(sum("SELECT * FROM t ORDER BY n DESC"), Ok(Some(h.finish())));
        assert_eq!(
            execute(&conn, "SELECT * FROM t", &[], false).map(|o| (o.rows, o.checksum)),
            Ok((3, None))
        );
        // An aggregate over the timestamp text has no declared type: still a timestamp.
        let mut m = ResultHasher::new();
        m.begin_row();
        m.push_timestamp_us(1_451_606_410_500_000);
        m.end_row();
        assert_eq!(
            sum("SELECT max(ts) FROM t WHERE ts LIKE '2016-01-01 %'"),
            Ok(Some(m.finish()))
        );
        assert_eq!(sum("SELECT * FROM t WHERE n > 100"), Ok(Some(0)));
        let e = sum("SELECT x'00ff' AS b").unwrap_err();
        assert_eq!(e.class, QueryErrorClass::Client);
        assert!(e.message.contains("`b`"), "{e}");
        assert!(e.message.contains("BLOB"), "{e}");
    }

    #[test]
    fn only_the_fixed_width_form_is_a_timestamp() {
        assert_eq!(
            wlrun_timestamp(b"2016-01-01 00:00:00.000000"),
            Some(1_451_606_400_000_000)
        );
        assert_eq!(wlrun_timestamp(b"1969-12-31 23:59:59.999999"), Some(-1));
        for t in [
            &b"2016-01-01 00:00:00"[..],
            b"2016-01-01T00:00:00.000000",
            b"2016-01-01 00:00:00.000000Z",
            b"2016-13-01 00:00:00.000000",
            b"2016-01-01 00:00:00,000000",
            b"host_1",
        ] {
            assert_eq!(wlrun_timestamp(t), None, "{}", String::from_utf8_lossy(t));
        }
    }
}
