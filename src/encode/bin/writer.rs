//! The `WLB1` writer: the header (schema section and checksum) and one column batch per `write`,
//! refusing any batch the reader would refuse before writing a byte of it.

use std::io::{self, Write};
use std::sync::Arc;

use super::{
    bad_symbol, null_words, physical_of, put_all, stray_null_bit, varchar_error, MAGIC, NO_INDEX,
    PREFIX, VERSION,
};
use crate::gen::batch::{Batch, BatchSchema, ColumnMeta, Physical, Values};
use crate::gen::fnv1a64;

fn physical_code(p: Physical) -> u8 {
    match p {
        Physical::Long => 1,
        Physical::Double => 2,
        Physical::Bool => 3,
        Physical::Symbol => 4,
        Physical::Varchar => 5,
        Physical::Timestamp => 6,
    }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

fn len_u32(n: usize, what: &str) -> io::Result<u32> {
    u32::try_from(n).map_err(|_| invalid(format!("{what} too long for the binary format: {n}")))
}

fn put_str(buf: &mut Vec<u8>, s: &str, what: &str) -> io::Result<()> {
    buf.extend_from_slice(&len_u32(s.len(), what)?.to_le_bytes());
    buf.extend_from_slice(s.as_bytes());
    Ok(())
}

/// The header bytes for a schema, checksum included.
pub(super) fn header_bytes(
    schema: &BatchSchema,
    seed: u64,
    shard: Option<(u64, u64)>,
) -> io::Result<Vec<u8>> {
    let (shard_i, shard_n) = match shard {
        Some((i, n)) if i < n => (i, n),
        Some((i, n)) => return Err(invalid(format!("shard {i} of {n}: need i < n"))),
        None => (0, 0),
    };
    let index = |ix: Option<usize>, what: &str| -> io::Result<u32> {
        match ix {
            None => Ok(NO_INDEX),
            Some(i) if i < schema.columns.len() => Ok(i as u32),
            Some(i) => Err(invalid(format!(
                "{what} index {i} but only {} columns",
                schema.columns.len()
            ))),
        }
    };
    let mut h = Vec::with_capacity(256);
    h.extend_from_slice(&MAGIC);
    h.extend_from_slice(&VERSION.to_le_bytes());
    h.extend_from_slice(&0u16.to_le_bytes());
    h.extend_from_slice(&[0; 4]); // section length, patched below
    put_str(&mut h, &schema.name, "schema name")?;
    put_str(&mut h, &schema.table, "table name")?;
    h.extend_from_slice(&seed.to_le_bytes());
    h.extend_from_slice(&shard_i.to_le_bytes());
    h.extend_from_slice(&shard_n.to_le_bytes());
    h.extend_from_slice(&index(schema.series_key, "series key")?.to_le_bytes());
    h.extend_from_slice(&index(schema.timestamp, "timestamp")?.to_le_bytes());
    h.extend_from_slice(&len_u32(schema.columns.len(), "column list")?.to_le_bytes());
    for c in &schema.columns {
        put_str(&mut h, &c.name, "column name")?;
        put_str(&mut h, &c.role, "column role")?;
        put_str(&mut h, &c.ty, "column type")?;
        h.extend_from_slice(&c.unit_ns.to_le_bytes());
        h.push(physical_code(c.physical));
        match (c.physical, &c.dictionary) {
            (Physical::Symbol, Some(d)) => {
                h.extend_from_slice(&len_u32(d.values.len(), "dictionary")?.to_le_bytes());
                for s in &d.values {
                    put_str(&mut h, s, "dictionary entry")?;
                }
            }
            (Physical::Symbol, None) => {
                return Err(invalid(format!(
                    "symbol column `{}` has no dictionary",
                    c.name
                )))
            }
            (_, Some(_)) => {
                return Err(invalid(format!(
                    "column `{}` has a dictionary but is not a symbol column",
                    c.name
                )))
            }
            (_, None) => {}
        }
    }
    let section = len_u32(h.len() - PREFIX, "header")?;
    h[8..PREFIX].copy_from_slice(&section.to_le_bytes());
    let sum = fnv1a64(&h);
    h.extend_from_slice(&sum.to_le_bytes());
    Ok(h)
}

/// Writes batches to a `WLB1` file: the header in `new`, one `write` per batch, the end marker
/// and trailer in `finish` (a file without them reads as truncated). Give it a buffered or
/// in-memory writer if batches are small: each batch is `1 + columns` `write_all` calls.
pub struct BinWriter<W: Write> {
    out: W,
    schema: BatchSchema,
    /// Reused for every write; grows to the largest column of a batch, then stays.
    scratch: Vec<u8>,
    rows: u64,
    batches: u64,
    /// Set when a write failed part-way: the stream is no longer a valid file.
    broken: bool,
}

impl<W: Write> BinWriter<W> {
    /// Writes the header. `shard` is `(i, n)` for shard `i` of `n` (`i < n`), or `None`.
    pub fn new(
        mut out: W,
        schema: &BatchSchema,
        seed: u64,
        shard: Option<(u64, u64)>,
    ) -> io::Result<Self> {
        out.write_all(&header_bytes(schema, seed, shard)?)?;
        Ok(BinWriter {
            out,
            schema: schema.clone(),
            scratch: Vec::new(),
            rows: 0,
            batches: 0,
            broken: false,
        })
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Batches written so far (empty batches are not written and not counted).
    pub fn batches(&self) -> u64 {
        self.batches
    }

    /// Appends a batch. An empty batch writes nothing. A batch that does not fit the schema
    /// given to `new` is refused with `InvalidInput` before any of it is written, so the file
    /// stays valid.
    pub fn write(&mut self, batch: &Batch) -> io::Result<()> {
        if self.broken {
            return Err(io::Error::other(
                "an earlier write failed; the file is incomplete",
            ));
        }
        if batch.rows == 0 {
            return Ok(());
        }
        self.check(batch)?;
        let r = self.put(batch);
        if r.is_err() {
            self.broken = true;
        }
        r
    }

    /// Writes the end marker and the trailer, flushes, and hands back the writer.
    pub fn finish(mut self) -> io::Result<W> {
        if self.broken {
            return Err(io::Error::other(
                "an earlier write failed; the file is incomplete",
            ));
        }
        let mut t = [0u8; 20];
        t[4..12].copy_from_slice(&self.rows.to_le_bytes());
        t[12..20].copy_from_slice(&self.batches.to_le_bytes());
        self.out.write_all(&t)?;
        self.out.flush()?;
        Ok(self.out)
    }

    /// Everything the reader checks, so a refused batch leaves nothing half-written.
    fn check(&self, b: &Batch) -> io::Result<()> {
        let rows = b.rows;
        if u32::try_from(rows).is_err() {
            return Err(invalid(format!(
                "a batch of {rows} rows (at most {} per batch)",
                u32::MAX
            )));
        }
        if b.columns.len() != self.schema.columns.len() {
            return Err(invalid(format!(
                "a batch of {} columns for a schema of {}",
                b.columns.len(),
                self.schema.columns.len()
            )));
        }
        if b.series.len() != rows {
            return Err(invalid(format!(
                "{} series ids for {rows} rows",
                b.series.len()
            )));
        }
        for (i, (meta, col)) in self.schema.columns.iter().zip(&b.columns).enumerate() {
            let bad = |msg: String| invalid(format!("column `{}`: {msg}", meta.name));
            let p = physical_of(&col.values);
            if p != meta.physical {
                return Err(bad(format!("{p:?} values in a {:?} column", meta.physical)));
            }
            if let Values::Varchar { offsets, .. } = &col.values {
                if offsets.is_empty() {
                    return Err(bad(
                        "no offsets (a varchar column starts with offset 0)".into()
                    ));
                }
            }
            if col.values.len() != rows {
                return Err(bad(format!("{} values for {rows} rows", col.values.len())));
            }
            if let Some(r) = stray_null_bit(&col.nulls, rows) {
                return Err(bad(format!("null bit {r} set in a batch of {rows} rows")));
            }
            match &col.values {
                Values::Symbol(ids) => {
                    let dict = meta.dictionary.as_deref().map_or(0, |d| d.values.len());
                    if !same_dictionary(meta, &b.schema, i) {
                        return Err(bad(
                            "the batch's dictionary differs from the one in the header".into(),
                        ));
                    }
                    if let Some(r) = bad_symbol(ids, &col.nulls, dict) {
                        return Err(bad(format!(
                            "row {r}: symbol id {} outside a dictionary of {dict}",
                            ids[r]
                        )));
                    }
                }
                Values::Varchar { offsets, bytes } => {
                    if let Err(msg) = check_varchar(offsets, bytes) {
                        return Err(bad(msg));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn put(&mut self, b: &Batch) -> io::Result<()> {
        let rows = b.rows;
        let s = &mut self.scratch;
        s.clear();
        s.extend_from_slice(&(rows as u32).to_le_bytes());
        put_all(s, &b.series);
        self.out.write_all(s)?;
        for col in &b.columns {
            s.clear();
            if col.nulls.any() {
                s.push(1);
                let words = &col.nulls.words;
                let n = null_words(rows).min(words.len());
                put_all(s, &words[..n]);
                s.resize(s.len() + (null_words(rows) - n) * 8, 0);
            } else {
                s.push(0);
            }
            match &col.values {
                Values::Long(v) | Values::Timestamp(v) => put_all(s, v),
                Values::Double(v) => put_all(s, v),
                Values::Bool(v) => s.extend(v.iter().map(|&x| u8::from(x))),
                Values::Symbol(v) => put_all(s, v),
                Values::Varchar { offsets, bytes } => {
                    put_all(s, offsets);
                    s.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                    s.extend_from_slice(bytes);
                }
            }
            self.out.write_all(s)?;
        }
        self.rows += rows as u64;
        self.batches += 1;
        Ok(())
    }
}

/// Whether the batch's dictionary for column `i` is the header's (same `Arc`, or equal).
fn same_dictionary(meta: &ColumnMeta, batch_schema: &BatchSchema, i: usize) -> bool {
    match (
        &meta.dictionary,
        batch_schema
            .columns
            .get(i)
            .and_then(|c| c.dictionary.as_ref()),
    ) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a.values == b.values,
        _ => false,
    }
}

fn check_varchar(offsets: &[u32], bytes: &[u8]) -> Result<(), String> {
    match varchar_error(offsets, bytes) {
        Some((_, msg)) => Err(msg),
        None => Ok(()),
    }
}
