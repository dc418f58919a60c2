//! Binary `COPY ... FROM STDIN`: the stream the worker's producer prepares, one complete
//! stream per batch.

use std::sync::Arc;

use super::binary::{check_layout, fields, write_column, Field, FieldSink};
use crate::gen::batch::{Batch, BatchSchema};

/// `PGCOPY\n\xff\r\n\0`, then the flags word (no OIDs) and the length of the header
/// extension area (none).
pub(super) const COPY_HEADER: [u8; 19] = *b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";
/// The file trailer: a field count of -1.
const COPY_TRAILER: [u8; 2] = (-1i16).to_be_bytes();

/// Turns batches into PostgreSQL binary COPY streams (`COPY ... FROM STDIN (FORMAT binary)`),
/// one complete stream per batch: header, one tuple per row, trailer.
///
/// Columnar: the rows' sizes are summed column by column, then each column is written into
/// its rows' places, one loop per column kind; nothing is allocated once `out` and the
/// per-row cursors have grown to the batch size.
#[derive(Debug)]
pub struct CopyEncoder {
    schema: Arc<BatchSchema>,
    fields: Vec<Field>,
    /// Per row: its size, then where its next field goes.
    cursor: Vec<usize>,
}

impl CopyEncoder {
    pub fn new(schema: Arc<BatchSchema>) -> Result<CopyEncoder, String> {
        Ok(CopyEncoder {
            fields: fields(&schema)?,
            schema,
            cursor: Vec::new(),
        })
    }

    /// Appends a complete binary COPY stream holding every row of `batch` to `out`; returns
    /// the number of rows. On error (a value the column's type cannot hold, a batch of
    /// another layout) `out` is left as it was.
    pub fn encode(&mut self, batch: &Batch, out: &mut Vec<u8>) -> Result<usize, String> {
        let base = out.len();
        CopyEncoder::begin(out);
        match self.tuples(batch, out) {
            Ok(rows) => {
                CopyEncoder::end(out);
                Ok(rows)
            }
            Err(e) => {
                out.truncate(base);
                Err(e)
            }
        }
    }

    /// The stream's header: a stream is `begin`, any number of `tuples`, then `end`, so
    /// that one COPY can carry several generated batches.
    pub fn begin(out: &mut Vec<u8>) {
        out.extend_from_slice(&COPY_HEADER);
    }

    pub fn end(out: &mut Vec<u8>) {
        out.extend_from_slice(&COPY_TRAILER);
    }

    /// Appends one tuple per row of `batch`; returns the number of rows. On error `out` is
    /// left as it was.
    pub fn tuples(&mut self, batch: &Batch, out: &mut Vec<u8>) -> Result<usize, String> {
        check_layout(&self.schema, &self.fields, batch)?;
        let rows = batch.rows;
        let cursor = &mut self.cursor;
        cursor.clear();
        // Each tuple starts with its 16-bit field count.
        cursor.resize(rows, 2);
        for (c, f) in self.fields.iter().enumerate() {
            let dict = batch.schema.columns[c].dictionary.as_deref();
            let mut sizes = Sizes { lens: cursor };
            write_column(f, &batch.columns[c], dict, rows, &mut sizes)?;
        }
        let base = out.len();
        let mut at = base;
        for c in cursor.iter_mut() {
            let len = *c;
            *c = at;
            at += len;
        }
        out.resize(at, 0);
        let count = (self.fields.len() as i16).to_be_bytes();
        for c in cursor.iter_mut() {
            out[*c..*c + 2].copy_from_slice(&count);
            *c += 2;
        }
        for (c, f) in self.fields.iter().enumerate() {
            let dict = batch.schema.columns[c].dictionary.as_deref();
            let mut place = At {
                out: &mut out[..],
                cursor,
            };
            // The sizing pass read the same values through the same conversions.
            if let Err(e) = write_column(f, &batch.columns[c], dict, rows, &mut place) {
                out.truncate(base);
                return Err(e);
            }
        }
        Ok(rows)
    }
}

/// Adds each field's size (length word plus value) to its row's total.
struct Sizes<'a> {
    lens: &'a mut [usize],
}

impl FieldSink for Sizes<'_> {
    #[inline(always)]
    fn null(&mut self, row: usize) {
        self.lens[row] += 4;
    }

    #[inline(always)]
    fn value(&mut self, row: usize, bytes: &[u8]) {
        self.lens[row] += 4 + bytes.len();
    }
}

/// Writes each field at its row's cursor in a buffer laid out by `Sizes`, and moves the
/// cursor on.
struct At<'a> {
    out: &'a mut [u8],
    cursor: &'a mut [usize],
}

impl FieldSink for At<'_> {
    #[inline(always)]
    fn null(&mut self, row: usize) {
        let p = self.cursor[row];
        self.out[p..p + 4].copy_from_slice(&(-1i32).to_be_bytes());
        self.cursor[row] = p + 4;
    }

    #[inline(always)]
    fn value(&mut self, row: usize, bytes: &[u8]) {
        let p = self.cursor[row];
        let end = p + 4 + bytes.len();
        // Lengths were checked against i32::MAX when sizing.
        self.out[p..p + 4].copy_from_slice(&(bytes.len() as i32).to_be_bytes());
        self.out[p + 4..end].copy_from_slice(bytes);
        self.cursor[row] = end;
    }
}
