//! The wlrun binary file (`WLB1`): a generated data set stored column-wise, so an ingest can
//! replay it without regenerating it. docs/binary-format.md has the exact layout; in short:
//!
//! - a header: magic `WLB1`, format version (u16), flags (u16, 0), the length of the schema
//!   section (u32), the schema section (names, seed, shard, columns, symbol dictionaries), and an
//!   FNV-1a 64 checksum of everything before it;
//! - column batches, each `u32 rows` (never 0), the series ids, then per column a null flag,
//!   an optional null bitmap and the values in fixed-width little-endian form;
//! - `u32 0` as the end marker, then a trailer with the total rows and batches (u64 each);
//!   nothing may follow it.
//!
//! Little-endian throughout. Every target we run on is little-endian; spelling it out keeps
//! files portable anyway and costs nothing there (the conversions compile to plain copies).
//!
//! The reader trusts nothing: every length is checked against what the file holds (it never
//! allocates ahead of the bytes it has actually read, so a corrupt length cannot make it
//! allocate gigabytes), every id and offset is range-checked, and a short file is an error
//! naming the byte offset, never a panic. The writer refuses any batch the reader would refuse,
//! before writing any of it.

use std::fmt;
use std::io::{self, Read, Write};
use std::sync::Arc;

use crate::gen::batch::{Batch, BatchSchema, ColumnMeta, Dictionary, Nulls, Physical, Values};
use crate::gen::fnv1a64;

/// The first four bytes of every file.
pub const MAGIC: [u8; 4] = *b"WLB1";
/// The format version this code writes and the only one it reads. Any change to the layout
/// bumps it; readers refuse versions they do not know.
pub const VERSION: u16 = 1;
/// Bytes before the schema section: magic, version, flags, section length.
const PREFIX: usize = 12;
/// `series_key` / `timestamp` index meaning "none".
const NO_INDEX: u32 = u32::MAX;

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

fn physical_from(code: u8) -> Option<Physical> {
    Some(match code {
        1 => Physical::Long,
        2 => Physical::Double,
        3 => Physical::Bool,
        4 => Physical::Symbol,
        5 => Physical::Varchar,
        6 => Physical::Timestamp,
        _ => return None,
    })
}

fn physical_of(v: &Values) -> Physical {
    match v {
        Values::Long(_) => Physical::Long,
        Values::Double(_) => Physical::Double,
        Values::Bool(_) => Physical::Bool,
        Values::Symbol(_) => Physical::Symbol,
        Values::Varchar { .. } => Physical::Varchar,
        Values::Timestamp(_) => Physical::Timestamp,
    }
}

/// Words in the null bitmap of a batch of `rows` rows.
fn null_words(rows: usize) -> usize {
    rows.div_ceil(64)
}

/// A fixed-width value stored little-endian.
trait Le: Copy {
    const N: usize;
    fn put(self, out: &mut [u8]);
    fn get(b: &[u8]) -> Self;
}

macro_rules! le {
    ($t:ty, $n:expr) => {
        impl Le for $t {
            const N: usize = $n;
            fn put(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            fn get(b: &[u8]) -> Self {
                let mut a = [0u8; $n];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
        }
    };
}
le!(u32, 4);
le!(u64, 8);
le!(i64, 8);

impl Le for f64 {
    const N: usize = 8;
    fn put(self, out: &mut [u8]) {
        self.to_bits().put(out);
    }
    fn get(b: &[u8]) -> Self {
        f64::from_bits(u64::get(b))
    }
}

/// Appends `v` little-endian: one resize, then a loop the compiler turns into a copy.
fn put_all<T: Le>(buf: &mut Vec<u8>, v: &[T]) {
    let start = buf.len();
    buf.resize(start + v.len() * T::N, 0);
    for (c, &x) in buf[start..].chunks_exact_mut(T::N).zip(v) {
        x.put(c);
    }
}

/// Replaces `out` with the little-endian values in `b` (whose length is a multiple of `T::N`).
fn get_all<T: Le>(b: &[u8], out: &mut Vec<T>) {
    out.clear();
    out.extend(b.chunks_exact(T::N).map(T::get));
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
fn header_bytes(schema: &BatchSchema, seed: u64, shard: Option<(u64, u64)>) -> io::Result<Vec<u8>> {
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

/// The first null bit at or beyond `rows`, if any.
fn stray_null_bit(nulls: &Nulls, rows: usize) -> Option<usize> {
    let full = rows / 64;
    for (w, &word) in nulls.words.iter().enumerate().skip(full) {
        let keep = if w == full {
            (1u64 << (rows % 64)) - 1
        } else {
            0
        };
        let stray = word & !keep;
        if stray != 0 {
            return Some(w * 64 + stray.trailing_zeros() as usize);
        }
    }
    None
}

/// The first non-null row whose symbol id is outside a dictionary of `dict` entries.
fn bad_symbol(ids: &[u32], nulls: &Nulls, dict: usize) -> Option<usize> {
    let dict = u32::try_from(dict).unwrap_or(u32::MAX);
    if !nulls.any() {
        if ids.iter().all(|&x| x < dict) {
            return None;
        }
        return ids.iter().position(|&x| x >= dict);
    }
    ids.iter()
        .enumerate()
        .position(|(i, &x)| x >= dict && !nulls.is_null(i))
}

/// Offsets start at 0, never go down, end at the byte length, and cut the UTF-8 text at
/// character boundaries. A problem comes back as the index of the bad offset (`None` when
/// the text itself is bad) and a message.
fn varchar_error(offsets: &[u32], bytes: &[u8]) -> Option<(Option<usize>, String)> {
    if offsets.first() != Some(&0) {
        return Some((Some(0), "the first offset is not 0".into()));
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            return Some((
                None,
                format!("text is not UTF-8 (byte {} of the text)", e.valid_up_to()),
            ))
        }
    };
    let mut prev = 0u32;
    for (i, &o) in offsets.iter().enumerate() {
        if o < prev {
            return Some((
                Some(i),
                format!("offset {i} is {o}, below the previous {prev}"),
            ));
        }
        if o as usize > bytes.len() {
            return Some((
                Some(i),
                format!(
                    "offset {i} ({o}) is past the end of {} bytes of text",
                    bytes.len()
                ),
            ));
        }
        if !text.is_char_boundary(o as usize) {
            return Some((
                Some(i),
                format!(
                    "offset {i} ({o}) is not a character boundary in {} bytes of text",
                    bytes.len()
                ),
            ));
        }
        prev = o;
    }
    if prev as usize != bytes.len() {
        return Some((
            Some(offsets.len() - 1),
            format!(
                "the last offset is {prev} but the text is {} bytes",
                bytes.len()
            ),
        ));
    }
    None
}

fn check_varchar(offsets: &[u32], bytes: &[u8]) -> Result<(), String> {
    match varchar_error(offsets, bytes) {
        Some((_, msg)) => Err(msg),
        None => Ok(()),
    }
}

/// What went wrong reading a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinErrorKind {
    /// The underlying reader failed.
    Io,
    /// The file does not start with `WLB1`.
    NotBinary,
    /// A format version or flags this reader does not know.
    Version,
    /// The file ends early (including: no end marker, no trailer).
    Truncated,
    /// The bytes are there but make no sense: bad checksum, id or offset out of range, totals
    /// that disagree with the trailer, bytes after the trailer.
    Corrupt,
}

/// A read error at a byte offset in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BinError {
    pub kind: BinErrorKind,
    /// Where the offending item starts, from the start of the file.
    pub offset: u64,
    pub message: String,
}

impl fmt::Display for BinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "offset {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for BinError {}

impl From<BinError> for io::Error {
    fn from(e: BinError) -> io::Error {
        let kind = match e.kind {
            BinErrorKind::Truncated => io::ErrorKind::UnexpectedEof,
            _ => io::ErrorKind::InvalidData,
        };
        io::Error::new(kind, e)
    }
}

fn corrupt(offset: u64, message: String) -> BinError {
    BinError {
        kind: BinErrorKind::Corrupt,
        offset,
        message,
    }
}

/// The byte source with its position.
struct Src<R> {
    inp: R,
    pos: u64,
}

impl<R: Read> Src<R> {
    fn io_error(&self, e: io::Error) -> BinError {
        BinError {
            kind: BinErrorKind::Io,
            offset: self.pos,
            message: format!("read failed: {e}"),
        }
    }

    fn truncated(&self, what: fmt::Arguments<'_>, want: u64, got: u64) -> BinError {
        BinError {
            kind: BinErrorKind::Truncated,
            offset: self.pos,
            message: format!("truncated {what} ({want} bytes expected, {got} found)"),
        }
    }

    /// Reads into `buf` until it is full or the input ends; returns how many bytes it got.
    fn read_up_to(&mut self, buf: &mut [u8]) -> Result<usize, BinError> {
        let mut got = 0;
        while got < buf.len() {
            match self.inp.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io_error(e)),
            }
        }
        Ok(got)
    }

    fn array<const N: usize>(&mut self, what: fmt::Arguments<'_>) -> Result<[u8; N], BinError> {
        let mut a = [0u8; N];
        let got = self.read_up_to(&mut a)?;
        if got < N {
            return Err(self.truncated(what, N as u64, got as u64));
        }
        self.pos += N as u64;
        Ok(a)
    }

    /// Replaces `buf` with the next `n` bytes. The buffer grows only as bytes arrive, so a
    /// corrupt length ends in `Truncated`, not in a huge allocation.
    fn fill(
        &mut self,
        buf: &mut Vec<u8>,
        n: u64,
        what: fmt::Arguments<'_>,
    ) -> Result<(), BinError> {
        buf.clear();
        let got = match (&mut self.inp).take(n).read_to_end(buf) {
            Ok(g) => g as u64,
            Err(e) => return Err(self.io_error(e)),
        };
        if got < n {
            return Err(self.truncated(what, n, got));
        }
        self.pos += n;
        Ok(())
    }
}

/// Parses the schema section, a slice already read and checksummed.
struct Cur<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cur<'a> {
    fn at(&self) -> u64 {
        (PREFIX + self.i) as u64
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], BinError> {
        if self.b.len() - self.i < n {
            return Err(corrupt(
                self.at(),
                format!(
                    "{what} runs past the end of the header ({n} bytes, {} left)",
                    self.b.len() - self.i
                ),
            ));
        }
        let s = &self.b[self.i..self.i + n];
        self.i += n;
        Ok(s)
    }

    fn u8(&mut self, what: &str) -> Result<u8, BinError> {
        Ok(self.take(1, what)?[0])
    }

    fn u32(&mut self, what: &str) -> Result<u32, BinError> {
        Ok(u32::get(self.take(4, what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64, BinError> {
        Ok(u64::get(self.take(8, what)?))
    }

    fn i64(&mut self, what: &str) -> Result<i64, BinError> {
        Ok(i64::get(self.take(8, what)?))
    }

    fn str(&mut self, what: &str) -> Result<String, BinError> {
        let at = self.at();
        let n = self.u32(what)? as usize;
        let b = self.take(n, what)?;
        match std::str::from_utf8(b) {
            Ok(s) => Ok(s.to_owned()),
            Err(_) => Err(corrupt(at, format!("{what} is not UTF-8"))),
        }
    }
}

struct Header {
    schema: BatchSchema,
    seed: u64,
    shard: Option<(u64, u64)>,
}

fn parse_section(b: &[u8]) -> Result<Header, BinError> {
    let mut c = Cur { b, i: 0 };
    let name = c.str("schema name")?;
    let table = c.str("table name")?;
    let seed = c.u64("seed")?;
    let at = c.at();
    let (shard_i, shard_n) = (c.u64("shard")?, c.u64("shard count")?);
    let shard = match (shard_i, shard_n) {
        (0, 0) => None,
        (i, n) if i < n => Some((i, n)),
        (i, n) => return Err(corrupt(at, format!("shard {i} of {n}"))),
    };
    let (key_at, series_key) = (c.at(), c.u32("series key")?);
    let (ts_at, timestamp) = (c.at(), c.u32("timestamp")?);
    let count = c.u32("column count")? as usize;
    let mut columns = Vec::new();
    for k in 0..count {
        let name = c.str("column name")?;
        let role = c.str("column role")?;
        let ty = c.str("column type")?;
        let unit_ns = c.i64("unit")?;
        let at = c.at();
        let code = c.u8("physical kind")?;
        let physical = physical_from(code).ok_or_else(|| {
            corrupt(
                at,
                format!("column {k} `{name}`: unknown physical kind {code}"),
            )
        })?;
        let dictionary = if physical == Physical::Symbol {
            let n = c.u32("dictionary size")? as usize;
            let mut values = Vec::new();
            for _ in 0..n {
                values.push(c.str("dictionary entry")?);
            }
            Some(Arc::new(Dictionary { values }))
        } else {
            None
        };
        columns.push(ColumnMeta {
            name,
            role,
            ty,
            unit_ns,
            physical,
            dictionary,
        });
    }
    if c.i != b.len() {
        return Err(corrupt(
            c.at(),
            format!(
                "{} unexpected bytes at the end of the header",
                b.len() - c.i
            ),
        ));
    }
    let index = |at: u64, v: u32, what: &str| match v {
        NO_INDEX => Ok(None),
        i if (i as usize) < columns.len() => Ok(Some(i as usize)),
        i => Err(corrupt(
            at,
            format!(
                "{what} column {i}, but the schema has {} columns",
                columns.len()
            ),
        )),
    };
    let series_key = index(key_at, series_key, "series key")?;
    let timestamp = index(ts_at, timestamp, "timestamp")?;
    Ok(Header {
        schema: BatchSchema {
            name,
            table,
            columns,
            series_key,
            timestamp,
        },
        seed,
        shard,
    })
}

enum State {
    Reading,
    Done,
    Failed(BinError),
}

/// Reads a `WLB1` file: the header in `open`, then one batch per `next_batch`. Give it a
/// buffered or in-memory reader: small fields (row counts, null flags) are separate reads.
pub struct BinReader<R: Read> {
    src: Src<R>,
    schema: Arc<BatchSchema>,
    seed: u64,
    shard: Option<(u64, u64)>,
    scratch: Vec<u8>,
    rows: u64,
    batches: u64,
    state: State,
}

impl<R: Read> BinReader<R> {
    /// Reads and checks the header.
    pub fn open(r: R) -> Result<Self, BinError> {
        let mut src = Src { inp: r, pos: 0 };
        let prefix: [u8; PREFIX] = src.array(format_args!("header"))?;
        if prefix[0..4] != MAGIC {
            return Err(BinError {
                kind: BinErrorKind::NotBinary,
                offset: 0,
                message: format!(
                    "not a wlrun binary file: it starts with {:02x?}, not `WLB1`",
                    &prefix[0..4]
                ),
            });
        }
        let version = u16::from_le_bytes([prefix[4], prefix[5]]);
        if version != VERSION {
            return Err(BinError {
                kind: BinErrorKind::Version,
                offset: 4,
                message: format!(
                    "unsupported format version {version}; this wlrun reads version {VERSION} \
                     (regenerate the file with this wlrun, or read it with the wlrun that wrote it)"
                ),
            });
        }
        let flags = u16::from_le_bytes([prefix[6], prefix[7]]);
        if flags != 0 {
            return Err(BinError {
                kind: BinErrorKind::Version,
                offset: 6,
                message: format!("unknown flags {flags:#06x} (version {VERSION} defines none)"),
            });
        }
        let section = u64::from(u32::get(&prefix[8..12]));
        let mut buf = Vec::new();
        src.fill(&mut buf, section, format_args!("header"))?;
        let sum_at = src.pos;
        let sum = u64::from_le_bytes(src.array(format_args!("header checksum"))?);
        let mut whole = Vec::with_capacity(PREFIX + buf.len());
        whole.extend_from_slice(&prefix);
        whole.extend_from_slice(&buf);
        let want = fnv1a64(&whole);
        if sum != want {
            return Err(corrupt(
                sum_at,
                format!("header checksum {sum:#018x}, but the header hashes to {want:#018x}"),
            ));
        }
        let h = parse_section(&buf)?;
        Ok(BinReader {
            src,
            schema: Arc::new(h.schema),
            seed: h.seed,
            shard: h.shard,
            scratch: Vec::new(),
            rows: 0,
            batches: 0,
            state: State::Reading,
        })
    }

    /// The schema in the header; batches from `next_batch` share this `Arc`.
    pub fn schema(&self) -> &Arc<BatchSchema> {
        &self.schema
    }

    /// The seed the data set was generated with.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// `(i, n)` when the file holds shard `i` of `n`.
    pub fn shard(&self) -> Option<(u64, u64)> {
        self.shard
    }

    /// Rows read so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Batches read so far.
    pub fn batches(&self) -> u64 {
        self.batches
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.src.pos
    }

    /// Fills `out` with the next batch and returns `true`, or returns `false` at the end of
    /// the file once the trailer checks out (and on every later call). If `out` was not made
    /// from `schema()`, it is replaced by a batch that is. After an error the contents of
    /// `out` are unspecified and every later call returns the same error.
    pub fn next_batch(&mut self, out: &mut Batch) -> Result<bool, BinError> {
        match &self.state {
            State::Done => return Ok(false),
            State::Failed(e) => return Err(e.clone()),
            State::Reading => {}
        }
        match self.read_batch(out) {
            Ok(more) => {
                if !more {
                    self.state = State::Done;
                }
                Ok(more)
            }
            Err(e) => {
                self.state = State::Failed(e.clone());
                Err(e)
            }
        }
    }

    fn read_batch(&mut self, out: &mut Batch) -> Result<bool, BinError> {
        let at = self.src.pos;
        let mut b4 = [0u8; 4];
        let got = self.src.read_up_to(&mut b4)?;
        if got == 0 {
            return Err(BinError {
                kind: BinErrorKind::Truncated,
                offset: at,
                message: format!(
                    "truncated: the file ends after {} batches without the end marker",
                    self.batches
                ),
            });
        }
        if got < 4 {
            return Err(self
                .src
                .truncated(format_args!("batch row count"), 4, got as u64));
        }
        self.src.pos += 4;
        let rows = u32::from_le_bytes(b4);
        if rows == 0 {
            self.read_trailer()?;
            return Ok(false);
        }
        let rows = rows as usize;
        if Arc::ptr_eq(&out.schema, &self.schema) && out.columns.len() == self.schema.columns.len()
        {
            out.clear();
        } else {
            *out = Batch::new(Arc::clone(&self.schema));
        }
        let schema = Arc::clone(&self.schema);
        let (src, scratch) = (&mut self.src, &mut self.scratch);
        src.fill(scratch, rows as u64 * 4, format_args!("series ids"))?;
        get_all(scratch, &mut out.series);
        for (meta, col) in schema.columns.iter().zip(&mut out.columns) {
            let name = &meta.name;
            let what = || format!("column `{name}`");
            let flag_at = src.pos;
            let [flag] = src.array::<1>(format_args!("column `{name}`"))?;
            match flag {
                0 => col.nulls.clear(),
                1 => {
                    let words_at = src.pos;
                    src.fill(
                        scratch,
                        null_words(rows) as u64 * 8,
                        format_args!("column `{name}`"),
                    )?;
                    get_all(scratch, &mut col.nulls.words);
                    if let Some(i) = stray_null_bit(&col.nulls, rows) {
                        return Err(corrupt(
                            words_at,
                            format!("{}: null bit {i} set in a batch of {rows} rows", what()),
                        ));
                    }
                    while col.nulls.words.last() == Some(&0) {
                        col.nulls.words.pop();
                    }
                }
                f => {
                    return Err(corrupt(
                        flag_at,
                        format!("{}: null flag {f} (0 or 1 expected)", what()),
                    ))
                }
            }
            if physical_of(&col.values) != meta.physical {
                col.values = Values::new(meta.physical);
            }
            let vals_at = src.pos;
            let fixed = |width: u64| rows as u64 * width;
            match &mut col.values {
                Values::Long(v) | Values::Timestamp(v) => {
                    src.fill(scratch, fixed(8), format_args!("column `{name}`"))?;
                    get_all(scratch, v);
                }
                Values::Double(v) => {
                    src.fill(scratch, fixed(8), format_args!("column `{name}`"))?;
                    get_all(scratch, v);
                }
                Values::Bool(v) => {
                    src.fill(scratch, fixed(1), format_args!("column `{name}`"))?;
                    if let Some(i) = scratch.iter().position(|&b| b > 1) {
                        return Err(corrupt(
                            vals_at + i as u64,
                            format!("{}: boolean byte {} in row {i}", what(), scratch[i]),
                        ));
                    }
                    v.clear();
                    v.extend(scratch.iter().map(|&b| b != 0));
                }
                Values::Symbol(v) => {
                    src.fill(scratch, fixed(4), format_args!("column `{name}`"))?;
                    get_all(scratch, v);
                    let dict = meta.dictionary.as_deref().map_or(0, |d| d.values.len());
                    if let Some(i) = bad_symbol(v, &col.nulls, dict) {
                        return Err(corrupt(
                            vals_at + 4 * i as u64,
                            format!(
                                "{}: row {i}: symbol id {} outside a dictionary of {dict}",
                                what(),
                                v[i]
                            ),
                        ));
                    }
                }
                Values::Varchar { offsets, bytes } => {
                    src.fill(scratch, fixed(4) + 4, format_args!("column `{name}`"))?;
                    get_all(scratch, offsets);
                    let len_at = src.pos;
                    let len = u32::from_le_bytes(src.array(format_args!("column `{name}`"))?);
                    let text_at = src.pos;
                    src.fill(bytes, u64::from(len), format_args!("column `{name}`"))?;
                    if let Some((row, msg)) = varchar_error(offsets, bytes) {
                        let at = match row {
                            Some(i) => vals_at + 4 * i as u64,
                            None if offsets.last() != Some(&len) => len_at,
                            None => text_at,
                        };
                        return Err(corrupt(at, format!("{}: {msg}", what())));
                    }
                }
            }
        }
        out.rows = rows;
        self.rows += rows as u64;
        self.batches += 1;
        Ok(true)
    }

    fn read_trailer(&mut self) -> Result<(), BinError> {
        let at = self.src.pos;
        let t: [u8; 16] = self.src.array(format_args!("trailer"))?;
        let (rows, batches) = (u64::get(&t[0..8]), u64::get(&t[8..16]));
        if (rows, batches) != (self.rows, self.batches) {
            return Err(corrupt(
                at,
                format!(
                    "the trailer counts {rows} rows in {batches} batches, but the file holds {} \
                     rows in {} batches",
                    self.rows, self.batches
                ),
            ));
        }
        let mut extra = [0u8; 1];
        if self.src.read_up_to(&mut extra)? != 0 {
            return Err(corrupt(
                self.src.pos,
                "bytes after the trailer (the file should end there)".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;
    use crate::gen::batch::push_str;

    fn meta(name: &str, role: &str, ty: &str, physical: Physical, dict: &[&str]) -> ColumnMeta {
        ColumnMeta {
            name: name.into(),
            role: role.into(),
            ty: ty.into(),
            unit_ns: if physical == Physical::Timestamp {
                1_000
            } else {
                0
            },
            physical,
            dictionary: (physical == Physical::Symbol).then(|| {
                Arc::new(Dictionary {
                    values: dict.iter().map(|s| s.to_string()).collect(),
                })
            }),
        }
    }

    fn schema(columns: Vec<ColumnMeta>) -> Arc<BatchSchema> {
        Arc::new(BatchSchema {
            name: "cpu_schema".into(),
            table: "cpu".into(),
            series_key: columns.iter().position(|c| c.role == "series"),
            timestamp: columns.iter().position(|c| c.role == "timestamp"),
            columns,
        })
    }

    /// One column of every physical kind, two of them symbols.
    fn every_kind() -> Arc<BatchSchema> {
        schema(vec![
            meta(
                "host",
                "series",
                "symbol",
                Physical::Symbol,
                &["h0", "h1", "h2"],
            ),
            meta("region", "tag", "symbol", Physical::Symbol, &["eu", "ü-ñ"]),
            meta("n", "field", "long", Physical::Long, &[]),
            meta("x", "field", "double", Physical::Double, &[]),
            meta("ok", "field", "boolean", Physical::Bool, &[]),
            meta("msg", "field", "varchar", Physical::Varchar, &[]),
            meta("ts", "timestamp", "timestamp", Physical::Timestamp, &[]),
        ])
    }

    const TEXTS: [&str; 6] = ["", "plain", "héllo", "日本語", "🦀 crab", ""];

    /// A batch of `rows` rows; `k` varies the values, and odd `k` adds nulls.
    fn batch(s: &Arc<BatchSchema>, rows: usize, k: usize) -> Batch {
        let mut b = Batch::new(Arc::clone(s));
        for i in 0..rows {
            b.series.push((i % 3) as u32);
            for (c, col) in b.columns.iter_mut().enumerate() {
                match &mut col.values {
                    Values::Symbol(v) if c == 0 => v.push((i % 3) as u32),
                    Values::Symbol(v) => v.push(((i + k) % 2) as u32),
                    Values::Long(v) => v.push(i as i64 * k as i64 - 7),
                    Values::Double(v) => v.push(i as f64 * 0.5 - k as f64),
                    Values::Bool(v) => v.push((i + k) % 3 == 0),
                    v @ Values::Varchar { .. } => push_str(v, TEXTS[(i + k) % TEXTS.len()]),
                    Values::Timestamp(v) => v.push(1_000_000 + (i * 1000) as i64),
                }
                if k % 2 == 1 && c > 0 && (i % 5 == 1 || i == rows - 1) {
                    col.nulls.set(i);
                }
            }
        }
        b.rows = rows;
        b
    }

    fn write_file(
        s: &BatchSchema,
        batches: &[Batch],
        seed: u64,
        shard: Option<(u64, u64)>,
    ) -> Vec<u8> {
        let mut w = BinWriter::new(Vec::new(), s, seed, shard).unwrap();
        for b in batches {
            w.write(b).unwrap();
        }
        w.finish().unwrap()
    }

    type Read = (Arc<BatchSchema>, u64, Option<(u64, u64)>, Vec<Batch>);

    fn read_file(bytes: &[u8]) -> Result<Read, BinError> {
        let mut r = BinReader::open(Cursor::new(bytes))?;
        let mut out = Vec::new();
        loop {
            let mut b = Batch::new(Arc::clone(r.schema()));
            if !r.next_batch(&mut b)? {
                break;
            }
            out.push(b);
        }
        assert_eq!(r.offset(), bytes.len() as u64);
        Ok((Arc::clone(r.schema()), r.seed(), r.shard(), out))
    }

    fn assert_same_schema(a: &BatchSchema, b: &BatchSchema) {
        assert_eq!((&a.name, &a.table), (&b.name, &b.table));
        assert_eq!((a.series_key, a.timestamp), (b.series_key, b.timestamp));
        assert_eq!(a.columns.len(), b.columns.len());
        for (x, y) in a.columns.iter().zip(&b.columns) {
            assert_eq!(
                (&x.name, &x.role, &x.ty, x.unit_ns, x.physical),
                (&y.name, &y.role, &y.ty, y.unit_ns, y.physical)
            );
            assert_eq!(x.dictionary, y.dictionary);
        }
    }

    fn assert_same_batch(a: &Batch, b: &Batch) {
        assert_eq!(a.rows, b.rows);
        assert_eq!(a.series, b.series);
        assert_eq!(a.columns, b.columns);
    }

    #[test]
    fn round_trip_every_kind_nulls_unicode_and_batch_sizes() {
        let s = every_kind();
        let sizes = [1, 3, 64, 65, 130, 7, 128];
        let batches: Vec<Batch> = sizes
            .iter()
            .enumerate()
            .map(|(k, &n)| batch(&s, n, k))
            .collect();
        // The fixture really has what the test claims.
        assert!(batches[1].columns[2].nulls.any() && !batches[0].columns[2].nulls.any());
        assert!(batches[3].columns[5].nulls.is_null(64));
        let bytes = write_file(&s, &batches, 42, Some((2, 8)));
        let (rs, seed, shard, got) = read_file(&bytes).unwrap();
        assert_same_schema(&s, &rs);
        assert_eq!((seed, shard), (42, Some((2, 8))));
        assert_eq!(got.len(), batches.len());
        for (a, b) in batches.iter().zip(&got) {
            assert_same_batch(a, b);
        }
        // Text survives byte for byte, the empty string included.
        let texts: Vec<&str> = (0..6).map(|i| got[4].text(5, i)).collect();
        assert_eq!(texts, ["🦀 crab", "", "", "plain", "héllo", "日本語"]);
        assert_eq!(got[2].text(1, 1), "ü-ñ");
    }

    #[test]
    fn doubles_keep_their_bits() {
        let s = schema(vec![meta("x", "field", "double", Physical::Double, &[])]);
        let xs = [
            0.0,
            -0.0,
            f64::NAN,
            f64::from_bits(0x7ff8_0000_dead_beef),
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE / 4.0,
            f64::MAX,
            0.1,
        ];
        let mut b = Batch::new(Arc::clone(&s));
        b.columns[0].values = Values::Double(xs.to_vec());
        b.series = vec![0; xs.len()];
        b.rows = xs.len();
        let (_, _, _, got) = read_file(&write_file(&s, &[b], 0, None)).unwrap();
        let Values::Double(v) = &got[0].columns[0].values else {
            panic!("not doubles")
        };
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(v), bits(&xs));
    }

    #[test]
    fn no_batches_and_empty_batches() {
        let s = every_kind();
        let bytes = write_file(&s, &[Batch::new(Arc::clone(&s))], 1, None);
        let (rs, seed, shard, got) = read_file(&bytes).unwrap();
        assert_same_schema(&s, &rs);
        assert_eq!((seed, shard, got.len()), (1, None, 0));
        // The empty batch wrote nothing: end marker and a zero trailer right after the header.
        assert_eq!(&bytes[bytes.len() - 20..], &[0; 20]);
    }

    #[test]
    fn reader_reuses_or_reshapes_the_output_batch() {
        let s = every_kind();
        let bytes = write_file(&s, &[batch(&s, 10, 1), batch(&s, 3, 2)], 0, None);
        let mut r = BinReader::open(Cursor::new(&bytes[..])).unwrap();
        // A batch of some other schema is replaced by one of the file's.
        let other = schema(vec![meta("y", "field", "boolean", Physical::Bool, &[])]);
        let mut out = Batch::new(other);
        assert!(r.next_batch(&mut out).unwrap());
        assert!(Arc::ptr_eq(&out.schema, r.schema()));
        assert_same_batch(&out, &batch(&s, 10, 1));
        // The same batch is then reused: no stale rows, nulls or text from the first one.
        assert!(r.next_batch(&mut out).unwrap());
        assert_same_batch(&out, &batch(&s, 3, 2));
        assert!(!r.next_batch(&mut out).unwrap());
        assert!(!r.next_batch(&mut out).unwrap());
        assert_eq!((r.rows(), r.batches()), (13, 2));
    }

    /// A tiny file: 2 rows of a symbol series column, a long with a null, a varchar with an
    /// empty string and a two-byte character, a timestamp.
    fn tiny() -> Vec<u8> {
        let s = Arc::new(BatchSchema {
            name: "t".into(),
            table: "t".into(),
            columns: vec![
                meta("host", "series", "symbol", Physical::Symbol, &["a", "b"]),
                meta("v", "field", "long", Physical::Long, &[]),
                meta("note", "field", "varchar", Physical::Varchar, &[]),
                meta("ts", "timestamp", "timestamp", Physical::Timestamp, &[]),
            ],
            series_key: Some(0),
            timestamp: Some(3),
        });
        let mut b = Batch::new(Arc::clone(&s));
        b.series = vec![0, 1];
        b.columns[0].values = Values::Symbol(vec![0, 1]);
        b.columns[1].values = Values::Long(vec![5, 0]);
        b.columns[1].nulls.set(1);
        push_str(&mut b.columns[2].values, "");
        push_str(&mut b.columns[2].values, "é");
        b.columns[3].values = Values::Timestamp(vec![1_000, 2_000]);
        b.rows = 2;
        write_file(&s, &[b], 7, Some((1, 4)))
    }

    /// docs/binary-format.md shows this file; change both together, and bump `VERSION` when
    /// the layout changes.
    const TINY_HEX: &str = concat!(
        "574c423101000000ce00000001000000740100000074070000000000000001000000000000000400",
        "00000000000000000000030000000400000004000000686f73740600000073657269657306000000",
        "73796d626f6c00000000000000000402000000010000006101000000620100000076050000006669",
        "656c64040000006c6f6e67000000000000000001040000006e6f7465050000006669656c64070000",
        "00766172636861720000000000000000050200000074730900000074696d657374616d7009000000",
        "74696d657374616d70e80300000000000006b2f2ea4087dba3650200000000000000010000000000",
        "00000001000000010200000000000000050000000000000000000000000000000000000000000000",
        "000200000002000000c3a900e803000000000000d007000000000000000000000200000000000000",
        "0100000000000000",
    );

    #[test]
    fn golden_tiny_file() {
        let bytes = tiny();
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        if std::env::var_os("WLB_DUMP").is_some() {
            std::fs::write("/tmp/wlb_tiny.bin", &bytes).unwrap();
        }
        // 12 prefix + 206 schema section + 8 checksum, 82 batch, 4 end marker + 16 trailer.
        assert_eq!(bytes.len(), 328);
        assert_eq!(hex, TINY_HEX);
        assert_eq!(&bytes[..8], b"WLB1\x01\x00\x00\x00");
        let (s, seed, shard, got) = read_file(&bytes).unwrap();
        assert_eq!(
            (seed, shard, got.len(), got[0].rows),
            (7, Some((1, 4)), 1, 2)
        );
        assert!(got[0].is_null(1, 1) && !got[0].is_null(1, 0));
        assert_eq!((got[0].text(0, 1), got[0].text(2, 1)), ("b", "é"));
        assert_eq!(s.columns[3].unit_ns, 1_000);
    }

    /// Where things are in `tiny()`: the header is 226 bytes, the batch starts there.
    const TINY_BATCH: usize = 226;
    const TINY_HOST_IDS: usize = 239;
    const TINY_V_FLAG: usize = 247;
    const TINY_NOTE_OFFSET1: usize = 277;
    const TINY_TRAILER: usize = 312;

    fn read_err(bytes: &[u8]) -> BinError {
        match read_file(bytes) {
            Ok(_) => panic!("read a bad file without complaint"),
            Err(e) => e,
        }
    }

    fn patched(at: usize, new: &[u8]) -> Vec<u8> {
        let mut b = tiny();
        b[at..at + new.len()].copy_from_slice(new);
        b
    }

    #[test]
    fn every_prefix_of_a_file_is_a_truncation_error() {
        let s = every_kind();
        for full in [
            tiny(),
            write_file(&s, &[batch(&s, 5, 1), batch(&s, 2, 0)], 3, None),
        ] {
            for len in 0..full.len() {
                let e = read_err(&full[..len]);
                assert_eq!(e.kind, BinErrorKind::Truncated, "prefix {len}: {e}");
                assert!(e.offset <= len as u64, "prefix {len}: {e}");
                assert!(e.to_string().starts_with(&format!("offset {}: ", e.offset)));
            }
        }
    }

    #[test]
    fn truncation_messages_name_the_column_and_offset() {
        let b = tiny();
        // Cut inside the long column's values (they start at 256).
        let e = read_err(&b[..260]);
        assert_eq!(
            e.to_string(),
            "offset 256: truncated column `v` (16 bytes expected, 4 found)"
        );
        let e = read_err(&b[..TINY_BATCH]);
        assert_eq!(
            e.to_string(),
            "offset 226: truncated: the file ends after 0 batches without the end marker"
        );
        let e = read_err(&b[..100]);
        assert_eq!(
            e.to_string(),
            "offset 12: truncated header (206 bytes expected, 88 found)"
        );
    }

    #[test]
    fn bad_magic_version_and_flags() {
        let e = read_err(b"PK\x03\x04 not ours at all, a zip file perhaps");
        assert_eq!((e.kind, e.offset), (BinErrorKind::NotBinary, 0));
        assert!(e.message.contains("not a wlrun binary file"), "{e}");
        // QuestDB's TSBS binary file is not ours either.
        assert_eq!(
            read_err(b"QWPB\x01\x01\x00\x00\x00\x00\x00\x00").kind,
            BinErrorKind::NotBinary
        );

        let e = read_err(&patched(4, &2u16.to_le_bytes()));
        assert_eq!((e.kind, e.offset), (BinErrorKind::Version, 4));
        assert!(
            e.message
                .starts_with("unsupported format version 2; this wlrun reads version 1"),
            "{e}"
        );
        let e = read_err(&patched(6, &1u16.to_le_bytes()));
        assert_eq!((e.kind, e.offset), (BinErrorKind::Version, 6));
        assert!(e.message.contains("unknown flags 0x0001"), "{e}");
    }

    #[test]
    fn header_checksum_catches_edits() {
        // Rename the table from `t` to `u`: same length, wrong checksum.
        let e = read_err(&patched(21, b"u"));
        assert_eq!((e.kind, e.offset), (BinErrorKind::Corrupt, 218));
        assert!(e.message.starts_with("header checksum"), "{e}");
    }

    #[test]
    fn corrupt_batches_are_errors_at_the_right_offset() {
        let e = read_err(&patched(TINY_HOST_IDS + 4, &9u32.to_le_bytes()));
        assert_eq!(
            e.to_string(),
            "offset 243: column `host`: row 1: symbol id 9 outside a dictionary of 2"
        );
        let e = read_err(&patched(TINY_V_FLAG, &[2]));
        assert_eq!(
            e.to_string(),
            "offset 247: column `v`: null flag 2 (0 or 1 expected)"
        );
        // A null bit for row 2 of a 2-row batch.
        let e = read_err(&patched(TINY_V_FLAG + 1, &[0b110]));
        assert_eq!(
            e.to_string(),
            "offset 248: column `v`: null bit 2 set in a batch of 2 rows"
        );
        // An offset in the middle of `é`.
        let e = read_err(&patched(TINY_NOTE_OFFSET1, &1u32.to_le_bytes()));
        assert_eq!((e.kind, e.offset), (BinErrorKind::Corrupt, 277));
        assert!(e.message.contains("not a character boundary"), "{e}");
        // Text that is not UTF-8.
        let e = read_err(&patched(289, &[0xff]));
        assert_eq!((e.kind, e.offset), (BinErrorKind::Corrupt, 289));
        assert!(e.message.contains("not UTF-8"), "{e}");
        // A boolean byte that is neither 0 nor 1.
        let s = schema(vec![meta("ok", "field", "boolean", Physical::Bool, &[])]);
        let mut b = Batch::new(Arc::clone(&s));
        b.columns[0].values = Values::Bool(vec![true, false, true]);
        b.series = vec![0; 3];
        b.rows = 3;
        let mut bytes = write_file(&s, &[b], 0, None);
        let at = bytes.len() - 20 - 3 + 1;
        bytes[at] = 7;
        let e = read_err(&bytes);
        assert_eq!((e.kind, e.offset), (BinErrorKind::Corrupt, at as u64));
        assert!(e.message.contains("boolean byte 7 in row 1"), "{e}");
    }

    #[test]
    fn trailer_and_trailing_bytes_are_checked() {
        let e = read_err(&patched(TINY_TRAILER, &3u64.to_le_bytes()));
        assert_eq!((e.kind, e.offset), (BinErrorKind::Corrupt, 312));
        assert!(e.message.contains("counts 3 rows in 1 batches"), "{e}");
        let mut b = tiny();
        b.push(0);
        let e = read_err(&b);
        assert_eq!((e.kind, e.offset), (BinErrorKind::Corrupt, 328));
    }

    #[test]
    fn huge_lengths_do_not_allocate_ahead_of_the_data() {
        // A section length of 4 GiB and a batch of 4 billion rows: both just run out of file.
        let e = read_err(&patched(8, &u32::MAX.to_le_bytes()));
        assert_eq!((e.kind, e.offset), (BinErrorKind::Truncated, 12));
        let e = read_err(&patched(TINY_BATCH, &u32::MAX.to_le_bytes()));
        assert_eq!((e.kind, e.offset), (BinErrorKind::Truncated, 230));
    }

    #[test]
    fn any_flipped_byte_is_an_error_or_a_file_never_a_panic() {
        let s = every_kind();
        let good = write_file(&s, &[batch(&s, 70, 1), batch(&s, 4, 2)], 3, Some((0, 2)));
        let header = good.len() - {
            let mut w = BinWriter::new(Vec::new(), &s, 3, Some((0, 2))).unwrap();
            w.write(&batch(&s, 70, 1)).unwrap();
            w.write(&batch(&s, 4, 2)).unwrap();
            w.finish().unwrap().len() - header_bytes(&s, 3, Some((0, 2))).unwrap().len()
        };
        for at in 0..good.len() {
            for flip in [0x01, 0x80, 0xff] {
                let mut b = good.clone();
                b[at] ^= flip;
                let r = read_file(&b);
                // The header is checksummed and the trailer counts everything: flips there are
                // always caught. Elsewhere a flip may land in a value and read back fine.
                if at < header || at >= good.len() - 16 {
                    assert!(r.is_err(), "flip {flip:#x} at {at} went unnoticed");
                }
            }
        }
    }

    #[test]
    fn errors_are_sticky() {
        let b = tiny();
        let mut r = BinReader::open(Cursor::new(&b[..300])).unwrap();
        let mut out = Batch::new(Arc::clone(r.schema()));
        let first = r.next_batch(&mut out).unwrap_err();
        assert_eq!(r.next_batch(&mut out).unwrap_err(), first);
    }

    #[test]
    fn writer_refuses_bad_batches_and_the_file_stays_valid() {
        let s = every_kind();
        let good = batch(&s, 4, 1);
        let mut w = BinWriter::new(Vec::new(), &s, 0, None).unwrap();
        w.write(&good).unwrap();
        let refuse = |w: &mut BinWriter<Vec<u8>>, b: &Batch, msg: &str| {
            let e = w.write(b).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
            assert!(e.to_string().contains(msg), "{e} (wanted {msg})");
        };
        let mut b = good.clone();
        b.series.pop();
        refuse(&mut w, &b, "3 series ids for 4 rows");
        let mut b = good.clone();
        b.columns.pop();
        refuse(&mut w, &b, "a batch of 6 columns for a schema of 7");
        let mut b = good.clone();
        b.columns[2].values = Values::Double(vec![0.0; 4]);
        refuse(&mut w, &b, "column `n`: Double values in a Long column");
        let mut b = good.clone();
        b.columns[6].values = Values::Timestamp(vec![0; 5]);
        refuse(&mut w, &b, "column `ts`: 5 values for 4 rows");
        let mut b = good.clone();
        b.columns[3].nulls.set(4);
        refuse(
            &mut w,
            &b,
            "column `x`: null bit 4 set in a batch of 4 rows",
        );
        let mut b = good.clone();
        b.columns[1].values = Values::Symbol(vec![0, 1, 2, 0]);
        refuse(
            &mut w,
            &b,
            "column `region`: row 2: symbol id 2 outside a dictionary of 2",
        );
        let mut b = good.clone();
        b.columns[5].values = Values::Varchar {
            offsets: vec![0, 1, 1, 1, 9],
            bytes: b"abc".to_vec(),
        };
        refuse(
            &mut w,
            &b,
            "column `msg`: offset 4 (9) is past the end of 3 bytes of text",
        );
        b.columns[5].values = Values::Varchar {
            offsets: vec![],
            bytes: vec![],
        };
        refuse(&mut w, &b, "column `msg`: no offsets");
        b.columns[5].values = Values::Varchar {
            offsets: vec![0, 1, 1, 1, 2],
            bytes: b"abc".to_vec(),
        };
        refuse(
            &mut w,
            &b,
            "column `msg`: the last offset is 2 but the text is 3 bytes",
        );
        b.columns[5].values = Values::Varchar {
            offsets: vec![0, 2, 1, 1, 3],
            bytes: b"abc".to_vec(),
        };
        refuse(
            &mut w,
            &b,
            "column `msg`: offset 2 is 1, below the previous 2",
        );
        b.columns[5].values = Values::Varchar {
            offsets: vec![0, 1, 1, 1, 2],
            bytes: vec![b'a', 0xff],
        };
        refuse(
            &mut w,
            &b,
            "column `msg`: text is not UTF-8 (byte 1 of the text)",
        );
        let other = every_kind(); // equal dictionaries in another Arc are fine...
        let mut b = batch(&other, 2, 0);
        w.write(&b).unwrap();
        // ...different ones are not.
        let mut cols = other.columns.clone();
        cols[0] = meta("host", "series", "symbol", Physical::Symbol, &["z"]);
        b.schema = schema(cols);
        refuse(&mut w, &b, "column `host`: the batch's dictionary differs");
        // A null symbol row may hold any id.
        let mut b = good.clone();
        b.columns[1].values = Values::Symbol(vec![0, 99, 1, 0]);
        b.columns[1].nulls = Nulls::default();
        b.columns[1].nulls.set(1);
        w.write(&b).unwrap();
        assert_eq!((w.rows(), w.batches()), (10, 3));
        let (_, _, _, got) = read_file(&w.finish().unwrap()).unwrap();
        assert_eq!(got.len(), 3);
        assert_same_batch(&got[0], &good);
        assert_same_batch(&got[2], &b);
    }

    #[test]
    fn writer_refuses_bad_schemas() {
        let s = every_kind();
        let e = BinWriter::new(Vec::new(), &s, 0, Some((4, 4)))
            .err()
            .unwrap();
        assert!(e.to_string().contains("shard 4 of 4"), "{e}");
        let mut bad = (*s).clone();
        bad.columns[0].dictionary = None;
        let e = BinWriter::new(Vec::new(), &bad, 0, None).err().unwrap();
        assert!(e.to_string().contains("`host` has no dictionary"), "{e}");
        let mut bad = (*s).clone();
        bad.timestamp = Some(7);
        assert!(BinWriter::new(Vec::new(), &bad, 0, None).is_err());
    }

    /// 10 symbol columns (the series key and 9 tags), 10 longs and a timestamp: TSBS cpu-only.
    fn tsbs_schema() -> Arc<BatchSchema> {
        let hosts: Vec<String> = (0..4000).map(|i| format!("host_{i}")).collect();
        let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
        let mut cols = vec![meta(
            "hostname",
            "series",
            "symbol",
            Physical::Symbol,
            &hosts,
        )];
        for t in [
            "region",
            "datacenter",
            "rack",
            "os",
            "arch",
            "team",
            "service",
            "service_version",
            "service_environment",
        ] {
            cols.push(meta(
                t,
                "tag",
                "symbol",
                Physical::Symbol,
                &["a", "b", "c", "d"],
            ));
        }
        for f in [
            "usage_user",
            "usage_system",
            "usage_idle",
            "usage_nice",
            "usage_iowait",
            "usage_irq",
            "usage_softirq",
            "usage_steal",
            "usage_guest",
            "usage_guest_nice",
        ] {
            cols.push(meta(f, "field", "long", Physical::Long, &[]));
        }
        cols.push(meta(
            "timestamp",
            "timestamp",
            "timestamp",
            Physical::Timestamp,
            &[],
        ));
        schema(cols)
    }

    /// `rows` rows in epoch-major, series-minor order, starting at row `first`.
    fn tsbs_batch(s: &Arc<BatchSchema>, b: &mut Batch, first: u64, rows: usize) {
        b.clear();
        let mut x = first.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        for r in 0..rows as u64 {
            let row = first + r;
            let host = (row % 4000) as u32;
            b.series.push(host);
            for (c, col) in b.columns.iter_mut().enumerate() {
                match &mut col.values {
                    Values::Symbol(v) if c == 0 => v.push(host),
                    Values::Symbol(v) => v.push((host + c as u32) % 4),
                    Values::Long(v) => {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        v.push((x % 101) as i64);
                    }
                    Values::Timestamp(v) => {
                        v.push(1_451_606_400_000_000_000 + (row / 4000) as i64 * 10_000_000_000)
                    }
                    _ => {}
                }
            }
        }
        b.rows = rows;
        let _ = s;
    }

    #[test]
    fn tsbs_shaped_rows_cost_132_bytes_each() {
        let s = tsbs_schema();
        let header = header_bytes(&s, 0, None).unwrap().len();
        let mut b = Batch::new(Arc::clone(&s));
        tsbs_batch(&s, &mut b, 0, 100);
        let bytes = write_file(&s, &[b.clone(), b], 0, None);
        // Per row: series 4 + 10 symbols x 4 + 10 longs x 8 + timestamp 8. Per batch: row count
        // 4 + 21 null flags. Per file: header, end marker 4, trailer 16.
        assert_eq!(bytes.len(), header + 2 * (4 + 21 + 100 * 132) + 20);
    }

    /// cargo test --release --lib encode::bin::tests::throughput -- --ignored --nocapture
    #[test]
    #[ignore]
    fn throughput() {
        use std::time::Instant;
        const ROWS: u64 = 1_000_000;
        const BATCH: usize = 10_000;
        let s = tsbs_schema();
        let mut b = Batch::new(Arc::clone(&s));
        let batches: Vec<Batch> = (0..ROWS / BATCH as u64)
            .map(|i| {
                tsbs_batch(&s, &mut b, i * BATCH as u64, BATCH);
                b.clone()
            })
            .collect();
        // Best of 5; the output buffer is reused so that page faults on fresh memory do not
        // count as encoding time.
        let read_all = |r: &mut dyn std::io::Read| {
            let mut r = BinReader::open(r).unwrap();
            let mut out = Batch::new(Arc::clone(r.schema()));
            let mut sum = 0i64;
            while r.next_batch(&mut out).unwrap() {
                if let Values::Long(v) = &out.columns[10].values {
                    sum += v[0];
                }
            }
            assert_eq!(r.rows(), ROWS);
            std::hint::black_box(sum);
        };
        let (mut best_w, mut best_r) = (f64::MAX, f64::MAX);
        let mut file = Vec::with_capacity(140 * ROWS as usize);
        for _ in 0..5 {
            file.clear();
            let t = Instant::now();
            let mut w = BinWriter::new(file, &s, 1, None).unwrap();
            for b in &batches {
                w.write(b).unwrap();
            }
            file = w.finish().unwrap();
            best_w = best_w.min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            read_all(&mut Cursor::new(&file[..]));
            best_r = best_r.min(t.elapsed().as_secs_f64());
        }
        // Through a file in the page cache, 64 KiB buffers.
        let path = std::env::temp_dir().join(format!("wlb-throughput-{}.wlb", std::process::id()));
        let (mut best_fw, mut best_fr) = (f64::MAX, f64::MAX);
        for _ in 0..3 {
            let t = Instant::now();
            let f = std::fs::File::create(&path).unwrap();
            let mut w =
                BinWriter::new(io::BufWriter::with_capacity(1 << 16, f), &s, 1, None).unwrap();
            for b in &batches {
                w.write(b).unwrap();
            }
            w.finish().unwrap().into_inner().unwrap();
            best_fw = best_fw.min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            let f = std::fs::File::open(&path).unwrap();
            read_all(&mut io::BufReader::with_capacity(1 << 16, f));
            best_fr = best_fr.min(t.elapsed().as_secs_f64());
        }
        std::fs::remove_file(&path).ok();
        if let Some(p) = std::env::var_os("WLB_OUT") {
            std::fs::write(p, &file).unwrap();
        }
        let mb = file.len() as f64 / 1e6;
        println!(
            "{ROWS} rows in {} batches, {} bytes, {:.2} bytes/row",
            batches.len(),
            file.len(),
            file.len() as f64 / ROWS as f64
        );
        for (what, t) in [
            ("write, memory", best_w),
            ("read, memory", best_r),
            ("write, file (page cache)", best_fw),
            ("read, file (page cache)", best_fr),
        ] {
            println!(
                "{what:24} {:7.1} ms {:6.0} MB/s {:6.2} M rows/s",
                t * 1e3,
                mb / t,
                ROWS as f64 / t / 1e6
            );
        }
    }
}
