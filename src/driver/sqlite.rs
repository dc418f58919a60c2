//! Embedded SQLite: one prepared INSERT, one transaction per chunk (the commit is the
//! acknowledgement). Values are bound straight from the batch's typed columns.

use rusqlite::types::ToSqlOutput;
use rusqlite::{CachedStatement, Connection};

use super::{Chunk, DriverConfig, Sent};
use crate::encode::sqlite_time::sqlite_timestamp_text;
use crate::gen::batch::Values;
use crate::net::error::DriverError;
use crate::net::sql_text::quote_ident;
use crate::net::sqlite::{open, sqlite_error};

pub struct SqliteWriter {
    conn: Connection,
    insert: String,
    /// Reused text buffer for timestamps (SQLite stores them as fixed-width text).
    text: Vec<u8>,
}

impl SqliteWriter {
    pub fn open(cfg: &DriverConfig) -> Result<SqliteWriter, DriverError> {
        let url = cfg.url.as_deref().unwrap_or(":memory:");
        let conn = open(&cfg.endpoint, url, cfg.timeout)?;
        let columns: Vec<String> = cfg
            .schema
            .columns
            .iter()
            .map(|c| quote_ident(&c.name))
            .collect();
        let params: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
        let insert = format!(
            "INSERT INTO {} ({}) VALUES ({})",
            quote_ident(&cfg.table),
            columns.join(", "),
            params.join(", ")
        );
        Ok(SqliteWriter {
            conn,
            insert,
            text: Vec::with_capacity(32),
        })
    }

    pub fn send(&mut self, chunk: &Chunk) -> Result<Sent, DriverError> {
        let tx = self
            .conn
            .unchecked_transaction()
            .map_err(|e| sqlite_error("BEGIN", e))?;
        {
            let mut stmt = tx
                .prepare_cached(&self.insert)
                .map_err(|e| sqlite_error(&self.insert, e))?;
            insert_rows(&mut stmt, chunk, &mut self.text).map_err(|e| sqlite_error("INSERT", e))?;
        }
        tx.commit().map_err(|e| sqlite_error("COMMIT", e))?;
        Ok(Sent {
            // Embedded: nothing crosses a socket; the report shows no socket bytes for it.
            socket_bytes: 0,
            acked: true,
        })
    }
}

fn insert_rows(
    stmt: &mut CachedStatement<'_>,
    chunk: &Chunk,
    text: &mut Vec<u8>,
) -> rusqlite::Result<()> {
    let batch = &chunk.batch;
    let schema = &batch.schema;
    for row in 0..batch.rows {
        for (c, col) in batch.columns.iter().enumerate() {
            let p = c + 1;
            if col.nulls.is_null(row) {
                stmt.raw_bind_parameter(p, rusqlite::types::Null)?;
                continue;
            }
            match &col.values {
                Values::Long(v) => stmt.raw_bind_parameter(p, v[row])?,
                Values::Double(v) => stmt.raw_bind_parameter(p, v[row])?,
                Values::Bool(v) => stmt.raw_bind_parameter(p, i64::from(v[row]))?,
                Values::Symbol(ids) => {
                    let s = schema.columns[c]
                        .dictionary
                        .as_ref()
                        .and_then(|d| d.values.get(ids[row] as usize))
                        .unwrap_or("");
                    stmt.raw_bind_parameter(p, s)?
                }
                v @ Values::Varchar { .. } => stmt.raw_bind_parameter(p, v.str_at(row))?,
                Values::Timestamp(v) => {
                    text.clear();
                    sqlite_timestamp_text(v[row], text);
                    // The text is ASCII by construction.
                    let s = std::str::from_utf8(text).unwrap_or_default();
                    stmt.raw_bind_parameter(p, ToSqlOutput::from(s))?
                }
            }
        }
        stmt.raw_execute()?;
    }
    Ok(())
}
