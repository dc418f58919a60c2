//! Rows from files: an ingest phase with `rows from file "P"` replays pre-generated rows instead
//! of generating them. Any file must feed any protocol, so every format is parsed into the same
//! column batches the generator fills (`gen::batch`), and every encoder reads them as it reads
//! generated rows.
//!
//! Formats, told apart by their first bytes (`detect`):
//!
//! - `WLB1`: our own binary file (`encode::bin`), read by `BinReader`; batches carry the schema
//!   of the data set that was written, dictionaries included.
//! - `QWPB` + version 1: TSBS's `questdb-qwp` binary file (string, schema and row records);
//!   `tsbs_qwp.rs`.
//! - anything else must be InfluxDB line protocol text (`ilp.rs`); its first line fixes the
//!   schema.
//!
//! A file is streamed through one buffer (4 MiB, growing only for a single record longer than
//! that, up to 64 MiB), so memory does not grow with the file; rows are parsed straight into the
//! batch's columns, so once the buffers have grown nothing is allocated per row.
//!
//! Sharding: `FileReader::open(.., Some((i, n)), ..)` keeps the rows whose routing key `k`
//! satisfies `gen::shard_of(k, n) == i`, in file order, so every reader of one file sees a
//! disjoint part and the rows of one key stay in order on one shard. The key is the text of the
//! series-key column: the first tag of an ILP or TSBS file (TSBS's `--hash-workers` rule; an
//! absent tag is the empty text), the schema's series key in a `WLB1` file. A file without one
//! routes each row by its index in the file, in decimal, as the generator does for a schema
//! without a series key. `limit` counts rows of the whole file before sharding, so the shards
//! of one file together hold exactly its first `limit` rows. Each shard parses only as much of
//! another shard's rows as routing needs (ILP: up to the tags, TSBS: the tag ids), so a
//! malformed value is reported by the shard that owns its row.

mod ilp;
mod tsbs_qwp;
mod wlb;

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;

use crate::gen::batch::{Batch, BatchSchema, ColumnMeta, Physical, Values};
use crate::gen::fnv1a64;

/// The read buffer: TSBS's loader reads through 4 MiB too.
pub const BUFFER_BYTES: usize = 4 << 20;
/// The longest single record (an ILP line, a TSBS record) accepted; the buffer grows to hold
/// one, never further, so a file of garbage without line breaks cannot exhaust memory.
pub const MAX_RECORD_BYTES: usize = 64 << 20;
/// A fill stops taking records once this many bytes of them went into one batch: a text
/// column's offsets are `u32`, and a record's text is never longer than the record.
const MAX_BATCH_BYTES: usize = 1 << 30;

/// What a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileFormat {
    /// Our binary format (`WLB1`, `encode::bin`).
    Wlb,
    /// InfluxDB line protocol text.
    Ilp,
    /// TSBS's `questdb-qwp` binary file (`QWPB`, version 1).
    TsbsQwp,
}

impl FileFormat {
    pub fn name(self) -> &'static str {
        match self {
            FileFormat::Wlb => "wlb",
            FileFormat::Ilp => "ilp",
            FileFormat::TsbsQwp => "tsbs-qwp",
        }
    }
}

/// The format of a file from its first bytes (the more of the first line, the better the ILP
/// check; `FileReader` passes up to 64 KiB): `WLB1` is our binary format, `QWPB` followed by
/// version byte 1 TSBS's, and anything else must look like ILP text: its first line that is not
/// blank or a `#` comment is UTF-8 text without control bytes and starts with
/// `measurement[,tag=value...] field=value` (bytes of comments only pass: rows may follow).
/// The full check of that line comes when the file is opened.
pub fn detect(first_bytes: &[u8]) -> Result<FileFormat, String> {
    if first_bytes.is_empty() {
        return Err("the file is empty".into());
    }
    if first_bytes.starts_with(&crate::encode::bin::MAGIC) {
        return Ok(FileFormat::Wlb);
    }
    if first_bytes.starts_with(tsbs_qwp::MAGIC) {
        return match first_bytes.get(4) {
            Some(&tsbs_qwp::VERSION) => Ok(FileFormat::TsbsQwp),
            Some(v) => Err(format!(
                "a TSBS questdb-qwp file of version {v}; this wlrun reads version {}",
                tsbs_qwp::VERSION
            )),
            None => Err("a TSBS questdb-qwp file cut off after its magic `QWPB`".into()),
        };
    }
    match ilp::looks_like_ilp(first_bytes) {
        Ok(()) => Ok(FileFormat::Ilp),
        Err(why) => Err(format!(
            "not a wlrun binary file (`WLB1`), a TSBS questdb-qwp file (`QWPB`) or ILP text: {why}"
        )),
    }
}

/// Rows of one file, or of one shard of it, as column batches.
pub struct FileReader {
    name: String,
    format: FileFormat,
    schema: Arc<BatchSchema>,
    source: Source,
    /// Errors are sticky: the reader's position after one is meaningless.
    failed: Option<String>,
}

enum Source {
    Wlb(Box<wlb::WlbSource>),
    Ilp(Box<ilp::IlpSource>),
    Tsbs(Box<tsbs_qwp::TsbsSource>),
}

impl FileReader {
    /// Opens `path`, detects its format and reads its schema (the header of a `WLB1` file, the
    /// first line of an ILP file, the first schema record of a TSBS file). `shard` is
    /// `Some((i, n))` to keep only shard `i` of `n` (see the module docs); `limit` reads at most
    /// the first `limit` rows of the file, counted before sharding.
    pub fn open(
        path: &Path,
        shard: Option<(u64, u64)>,
        limit: Option<u64>,
    ) -> Result<FileReader, String> {
        let name = path.display().to_string();
        let file = File::open(path).map_err(|e| format!("{name}: cannot open: {e}"))?;
        FileReader::from_reader(&name, file, shard, limit)
    }

    /// `open` on any byte stream; `name` is what errors call it.
    pub fn from_reader(
        name: &str,
        reader: impl Read + Send + 'static,
        shard: Option<(u64, u64)>,
        limit: Option<u64>,
    ) -> Result<FileReader, String> {
        FileReader::with_buffer(name, Box::new(reader), shard, limit, BUFFER_BYTES)
    }

    /// `from_reader` with another buffer size: tests use tiny ones to put records across
    /// buffer edges.
    pub(crate) fn with_buffer(
        name: &str,
        reader: Box<dyn Read + Send>,
        shard: Option<(u64, u64)>,
        limit: Option<u64>,
        buffer: usize,
    ) -> Result<FileReader, String> {
        if let Some((i, n)) = shard {
            if i >= n {
                return Err(format!("{name}: shard {i} of {n} does not exist"));
            }
        }
        let mut input = Input::new(reader, buffer);
        // Enough of the file for `detect`'s look at the first line.
        while input.data().len() < 64 << 10 {
            match input.more(MAX_RECORD_BYTES) {
                Ok(More::Read) => {}
                Ok(More::Eof | More::Full) => break,
                Err(e) => return Err(format!("{name}: read failed: {e}")),
            }
        }
        let format = detect(input.data()).map_err(|e| format!("{name}: {e}"))?;
        let route = shard.map(|(i, n)| Shard { i, n });
        let opts = Opts {
            name: name.to_string(),
            route,
            limit,
        };
        let (schema, source) = match format {
            FileFormat::Wlb => {
                let s = wlb::WlbSource::open(input, opts)?;
                (s.schema(), Source::Wlb(Box::new(s)))
            }
            FileFormat::Ilp => {
                let s = ilp::IlpSource::open(input, opts)?;
                (s.schema(), Source::Ilp(Box::new(s)))
            }
            FileFormat::TsbsQwp => {
                let s = tsbs_qwp::TsbsSource::open(input, opts)?;
                (s.schema(), Source::Tsbs(Box::new(s)))
            }
        };
        Ok(FileReader {
            name: name.to_string(),
            format,
            schema,
            source,
            failed: None,
        })
    }

    /// What the file turned out to be.
    pub fn format(&self) -> FileFormat {
        self.format
    }

    /// The file's name, as errors spell it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The layout of every batch `fill` produces.
    ///
    /// ILP and TSBS files: the table is the measurement (also the schema's `name`); tags become
    /// text columns of type `symbol` (physical `Varchar`, so the ILP encoder writes them as tags
    /// again), the first of them with role `series` and as `series_key` (it routes rows), the
    /// others with role `tag`; fields keep their types (`long`, `double`, `boolean`, `varchar`,
    /// and ILP's `123t` as a `timestamp` field in microseconds); last comes the designated
    /// `timestamp` column, in nanoseconds. `WLB1` files: the schema in the file's header.
    pub fn schema(&self) -> Arc<BatchSchema> {
        Arc::clone(&self.schema)
    }

    /// Rows of the whole file passed so far (kept or routed to other shards), at most `limit`.
    pub fn rows_read(&self) -> u64 {
        match &self.source {
            Source::Wlb(s) => s.rows_read(),
            Source::Ilp(s) => s.rows_read(),
            Source::Tsbs(s) => s.rows_read(),
        }
    }

    /// Bytes of the file consumed so far (for progress against the file's size).
    pub fn offset(&self) -> u64 {
        match &self.source {
            Source::Wlb(s) => s.offset(),
            Source::Ilp(s) => s.offset(),
            Source::Tsbs(s) => s.offset(),
        }
    }

    /// Replaces the contents of `batch` with up to `max_rows` next rows of this shard, in file
    /// order; returns how many (0 at the end of the file or of `limit`). Give it a batch made
    /// with `Batch::new(self.schema())` and pass it again and again: a batch of another schema
    /// is replaced by one of this schema. The `series` of a row is 0 for ILP and TSBS files
    /// (they number no series) and the file's own for `WLB1` files.
    ///
    /// Errors name the file and the line (ILP) or byte offset (binary formats) of the bad
    /// record. After an error the batch's contents are unspecified and every later call
    /// returns the same error.
    pub fn fill(&mut self, batch: &mut Batch, max_rows: usize) -> Result<usize, String> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if !Arc::ptr_eq(&batch.schema, &self.schema)
            || batch.columns.len() != batch.schema.columns.len()
        {
            *batch = Batch::new(Arc::clone(&self.schema));
        }
        batch.clear();
        if max_rows == 0 {
            return Ok(0);
        }
        let r = match &mut self.source {
            Source::Wlb(s) => s.fill(batch, max_rows),
            Source::Ilp(s) => s.fill(batch, max_rows),
            Source::Tsbs(s) => s.fill(batch, max_rows),
        };
        match r {
            Ok(()) => Ok(batch.rows),
            Err(e) => {
                self.failed = Some(e.clone());
                Err(e)
            }
        }
    }
}

/// What every format's source needs besides its bytes.
struct Opts {
    name: String,
    route: Option<Shard>,
    limit: Option<u64>,
}

/// Shard `i` of `n`.
#[derive(Clone, Copy, Debug)]
struct Shard {
    i: u64,
    n: u64,
}

impl Shard {
    /// The shard of a key's text: `gen::shard_of` on bytes (the texts here are UTF-8 already,
    /// and hashing the bytes avoids re-checking that per row).
    fn of(self, key: &[u8]) -> u64 {
        fnv1a64(key) % self.n.max(1)
    }

    fn owns(self, key: &[u8]) -> bool {
        self.of(key) == self.i
    }

    /// A row of a file without a routing key, by its index in the file in decimal.
    fn owns_row(self, row: u64) -> bool {
        self.owns(itoa::Buffer::new().format(row).as_bytes())
    }
}

/// The file read through one buffer. `data()` is what has been read and not yet consumed;
/// `more` reads after it. Parsers look at `data()`, and consume a record only once it is whole.
pub(crate) struct Input {
    inner: Box<dyn Read + Send>,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    /// File offset of `buf[start]`.
    offset: u64,
}

/// What `Input::more` did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum More {
    /// Read at least one byte.
    Read,
    /// The file has ended; `data()` is all there is.
    Eof,
    /// Unread bytes fill a buffer of the largest size allowed: a record too long to take.
    Full,
}

impl Input {
    pub(crate) fn new(inner: Box<dyn Read + Send>, capacity: usize) -> Input {
        Input {
            inner,
            buf: vec![0; capacity.max(16)],
            start: 0,
            end: 0,
            eof: false,
            offset: 0,
        }
    }

    pub(crate) fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    pub(crate) fn consume(&mut self, n: usize) {
        let n = n.min(self.end - self.start);
        self.start += n;
        self.offset += n as u64;
    }

    /// File offset of `data()[0]`.
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads more after `data()`, moving the unread bytes to the front of the buffer first;
    /// grows the buffer (up to `max` bytes) only when they fill it.
    pub(crate) fn more(&mut self, max: usize) -> io::Result<More> {
        if self.eof {
            return Ok(More::Eof);
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            if self.buf.len() >= max {
                return Ok(More::Full);
            }
            let grown = self.buf.len().saturating_mul(2).min(max);
            self.buf.resize(grown, 0);
        }
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(More::Eof);
                }
                Ok(n) => {
                    // A reader claiming more than it was given is not trusted past the buffer.
                    self.end = (self.end + n).min(self.buf.len());
                    return Ok(More::Read);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// `BinReader` reads through this; it asks for small pieces, which the buffer serves.
impl Read for Input {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.start == self.end {
            if self.eof || out.is_empty() {
                return Ok(0);
            }
            self.start = 0;
            self.end = 0;
            // A read at least as large as the buffer would only be copied through it.
            if out.len() >= self.buf.len() {
                let n = loop {
                    match self.inner.read(out) {
                        Ok(n) => break n.min(out.len()),
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                };
                if n == 0 {
                    self.eof = true;
                }
                self.offset += n as u64;
                return Ok(n);
            }
            if self.more(self.buf.len())? != More::Read {
                return Ok(0);
            }
        }
        let data = self.data();
        let n = out.len().min(data.len());
        out[..n].copy_from_slice(&data[..n]);
        self.consume(n);
        Ok(n)
    }
}

pub use crate::gen::batch::append_rows;

/// Pushes a value for a null cell, keeping every column as long as the batch.
fn push_null(values: &mut Values) {
    match values {
        Values::Long(v) | Values::Timestamp(v) => v.push(0),
        Values::Double(v) => v.push(0.0),
        Values::Bool(v) => v.push(false),
        Values::Symbol(v) => v.push(0),
        Values::Varchar { offsets, bytes } => offsets.push(bytes.len() as u32),
    }
}

/// A column of a schema read from a text or TSBS file.
struct NewColumn {
    name: String,
    kind: ColumnKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ColumnKind {
    Tag,
    /// A field of this physical kind (`Timestamp`: a timestamp field in microseconds).
    Field(Physical),
}

/// The name of the designated timestamp column added to ILP and TSBS schemas.
const TIMESTAMP: &str = "timestamp";

/// The layout of an ILP or TSBS file: tags, fields, then the designated timestamp. Refuses what
/// the ILP encoder could not write back (empty names, line breaks) and names used twice.
fn file_schema(table: &str, columns: &[NewColumn]) -> Result<BatchSchema, String> {
    let check = |what: &str, name: &str| -> Result<(), String> {
        if name.is_empty() {
            return Err(format!("an empty {what} name"));
        }
        if name.contains(['\n', '\r']) {
            return Err(format!("the {what} name {name:?} has a line break"));
        }
        Ok(())
    };
    check("table", table)?;
    let mut seen: HashMap<&str, ()> = HashMap::new();
    let mut metas = Vec::with_capacity(columns.len() + 1);
    let mut first_tag = true;
    for c in columns {
        check("column", &c.name)?;
        if c.name == TIMESTAMP {
            return Err(format!(
                "a tag or field named `{TIMESTAMP}` clashes with the designated timestamp \
                 column this reader adds"
            ));
        }
        if seen.insert(&c.name, ()).is_some() {
            return Err(format!("`{}` appears twice", c.name));
        }
        let (role, ty, physical, unit_ns) = match c.kind {
            ColumnKind::Tag => {
                let role = if first_tag { "series" } else { "tag" };
                first_tag = false;
                (role, "symbol", Physical::Varchar, 0)
            }
            ColumnKind::Field(p) => {
                let (ty, unit) = match p {
                    Physical::Long => ("long", 0),
                    Physical::Double => ("double", 0),
                    Physical::Bool => ("boolean", 0),
                    Physical::Timestamp => ("timestamp", 1_000),
                    Physical::Varchar | Physical::Symbol => ("varchar", 0),
                };
                ("field", ty, p, unit)
            }
        };
        metas.push(ColumnMeta {
            name: c.name.clone(),
            role: role.into(),
            ty: ty.into(),
            unit_ns,
            physical,
            dictionary: None,
        });
    }
    metas.push(ColumnMeta {
        name: TIMESTAMP.into(),
        role: "timestamp".into(),
        ty: "timestamp".into(),
        unit_ns: 1,
        physical: Physical::Timestamp,
        dictionary: None,
    });
    Ok(BatchSchema {
        name: table.to_string(),
        table: table.to_string(),
        series_key: columns.iter().position(|c| c.kind == ColumnKind::Tag),
        timestamp: Some(metas.len() - 1),
        columns: metas,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::batch::{push_str, Dictionary};
    use crate::gen::shard_of;

    #[test]
    fn shard_matches_the_generators_routing() {
        for n in 1..6 {
            let s = Shard { i: 0, n };
            for key in ["host_0", "host_17", "", "ü-ñ", "12345"] {
                assert_eq!(s.of(key.as_bytes()), shard_of(key, n));
            }
            for row in [0u64, 9, 10, 123_456_789] {
                let i = shard_of(&row.to_string(), n);
                assert!(Shard { i, n }.owns_row(row));
            }
        }
    }

    #[test]
    fn detect_by_magic_and_first_line() {
        assert_eq!(detect(b"WLB1\x01\x00"), Ok(FileFormat::Wlb));
        assert_eq!(detect(b"QWPB\x01\x01"), Ok(FileFormat::TsbsQwp));
        assert!(detect(b"QWPB\x02").unwrap_err().contains("version 2"));
        assert!(detect(b"QWPB").unwrap_err().contains("cut off"));
        assert_eq!(detect(b"cpu,host=a u=1i 1\n"), Ok(FileFormat::Ilp));
        assert_eq!(detect(b"# c\n\ncpu u=1i 1"), Ok(FileFormat::Ilp));
        // Comments only: text, maybe with rows past the bytes looked at.
        assert_eq!(detect(b"# c\n\n# d"), Ok(FileFormat::Ilp));
        // A first line cut by the end of the bytes is judged on what is there.
        assert_eq!(detect(b"cpu,host=a usage_user=1"), Ok(FileFormat::Ilp));
        assert_eq!(detect(b""), Err("the file is empty".into()));
        // Comments only: text, maybe with rows past the bytes looked at.
        assert_eq!(detect(b"# c\n\n# d"), Ok(FileFormat::Ilp));
        for garbage in [
            &b"\x00\x01\x02\x03"[..],
            b"hello world",
            b"\xff\xfe=",
            b"a\nb=1 2",
        ] {
            let e = detect(garbage).unwrap_err();
            assert!(e.starts_with("not a wlrun binary file"), "{e}");
        }
    }

    /// A reader handing out at most `step` bytes a call.
    struct Trickle {
        data: Vec<u8>,
        at: usize,
        step: usize,
    }

    impl Read for Trickle {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(out.len()).min(self.data.len() - self.at);
            out[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    #[test]
    fn input_grows_only_for_long_records_and_reads_through() {
        let data: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        let mut input = Input::new(
            Box::new(Trickle {
                data: data.clone(),
                at: 0,
                step: 7,
            }),
            16,
        );
        // Fill the buffer, then ask for more: it doubles, up to the cap.
        while input.more(64).unwrap() == More::Read {
            if input.data().len() == 64 {
                break;
            }
        }
        assert_eq!(input.data(), &data[..64]);
        assert_eq!(input.more(64).unwrap(), More::Full);
        input.consume(60);
        assert_eq!(input.offset(), 60);
        let mut rest = Vec::new();
        input.read_to_end(&mut rest).unwrap();
        assert_eq!(rest, &data[60..]);
        assert_eq!(input.offset(), 1000);
    }

    fn every_kind() -> Arc<BatchSchema> {
        let col = |name: &str, physical: Physical| ColumnMeta {
            name: name.into(),
            role: "field".into(),
            ty: "x".into(),
            unit_ns: 0,
            physical,
            dictionary: (physical == Physical::Symbol)
                .then(|| Arc::new(Dictionary::from_texts(["a", "b"]))),
        };
        Arc::new(BatchSchema {
            name: "t".into(),
            table: "t".into(),
            columns: vec![
                col("l", Physical::Long),
                col("d", Physical::Double),
                col("b", Physical::Bool),
                col("s", Physical::Symbol),
                col("v", Physical::Varchar),
                col("t", Physical::Timestamp),
            ],
            series_key: None,
            timestamp: None,
        })
    }

    #[test]
    fn append_rows_copies_values_nulls_and_text() {
        let s = every_kind();
        let mut a = Batch::new(Arc::clone(&s));
        for r in 0..100usize {
            for (c, col) in a.columns.iter_mut().enumerate() {
                match &mut col.values {
                    Values::Long(v) | Values::Timestamp(v) => v.push(r as i64 * 3),
                    Values::Double(v) => v.push(r as f64 / 4.0),
                    Values::Bool(v) => v.push(r % 3 == 0),
                    Values::Symbol(v) => v.push((r % 2) as u32),
                    v @ Values::Varchar { .. } => push_str(v, &"é".repeat(r % 4)),
                }
                if (r + c) % 7 == 0 {
                    col.nulls.set(r);
                }
            }
            a.series.push(r as u32);
        }
        a.rows = 100;
        let mut b = Batch::new(Arc::clone(&s));
        // Pieces in another order, then back: row by row and in runs across null words.
        append_rows(&a, 0..1, &mut b).unwrap();
        append_rows(&a, 1..1, &mut b).unwrap();
        append_rows(&a, 1..70, &mut b).unwrap();
        for r in 70..100 {
            append_rows(&a, r..r + 1, &mut b).unwrap();
        }
        assert_eq!(b.rows, 100);
        assert_eq!(b.series, a.series);
        for (x, y) in a.columns.iter().zip(&b.columns) {
            assert_eq!(x.values, y.values);
            assert_eq!(x.nulls, y.nulls);
        }
        // Refusals leave the batch alone.
        let before = b.clone();
        assert!(append_rows(&a, 99..101, &mut b).is_err());
        let mut other = Batch::new(Arc::new(BatchSchema {
            columns: s.columns[..5].to_vec(),
            ..(*s).clone()
        }));
        assert!(append_rows(&a, 0..1, &mut other).is_err());
        assert_eq!(other.rows, 0);
        let mut swapped = (*s).clone();
        swapped.columns.swap(0, 1);
        assert!(append_rows(&a, 0..1, &mut Batch::new(Arc::new(swapped))).is_err());
        assert_eq!(b.rows, before.rows);
        assert_eq!(b.columns[0].nulls, before.columns[0].nulls);
    }
}
