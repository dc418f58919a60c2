//! The `WLB1` reader: trusts nothing, checks every length against the bytes actually read and
//! every id and offset against its range, and reports a bad file as a [`BinError`] at a byte
//! offset, never a panic.

use std::fmt;
use std::io::{self, Read};
use std::sync::Arc;

use super::{
    bad_symbol, get_all, null_words, physical_of, stray_null_bit, varchar_error, Le, MAGIC,
    NO_INDEX, PREFIX, VERSION,
};
use crate::gen::batch::{Batch, BatchSchema, ColumnMeta, Dictionary, Physical, Texts, Values};
use crate::gen::fnv1a64;

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
            let mut values = Texts::default();
            for _ in 0..n {
                values.push(&c.str("dictionary entry")?);
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
