//! TSBS `questdb-qwp` binary files (QuestDB's TSBS fork, QWP branch): the magic `QWPB`, a
//! version byte (1), then records, each starting with its kind:
//!
//! | kind | body |
//! |---|---|
//! | `0x01` string | uvarint length, bytes; the next string id (0, 1, 2, ...) |
//! | `0x02` schema | uvarint table string id; uvarint tag count, that many uvarint key ids; uvarint field count, that many (uvarint key id, type byte); the next schema id |
//! | `0x03` row | uvarint schema id, uvarint payload length, payload: a uvarint value string id per tag, each field in its type's encoding, then the i64 timestamp in nanoseconds |
//!
//! Field types: `0x01` int64 (8 bytes), `0x02` float64 (8 bytes, IEEE bits), `0x03` bool (1
//! byte, 0 or 1), `0x04` string (uvarint length, bytes). Little-endian; uvarints are unsigned
//! LEB128 (Go's `binary.Uvarint`, at most 10 bytes). Strings and schemas are written lazily,
//! before the first record that needs them.
//!
//! The first schema is the batch schema. TSBS starts a new schema whenever a point's tag or
//! field keys differ, so a later schema of the same table whose tags and fields are all in the
//! first one (with the same types) is read too, its missing columns null; anything else (another
//! table, a new column, another type) is an error at that schema's offset.
//!
//! Memory: the string table holds every distinct string of the file (tag values included), as
//! the format requires; rows are decoded straight from the read buffer.

use std::collections::HashMap;
use std::sync::Arc;

use super::{
    file_schema, push_null, ColumnKind, Input, More, NewColumn, Opts, MAX_BATCH_BYTES,
    MAX_RECORD_BYTES,
};
use crate::gen::batch::{Batch, BatchSchema, Physical, Values};

pub(super) const MAGIC: &[u8; 4] = b"QWPB";
pub(super) const VERSION: u8 = 1;

const STRING_DEF: u8 = 0x01;
const SCHEMA_DEF: u8 = 0x02;
const ROW: u8 = 0x03;

const INT64: u8 = 0x01;
const FLOAT64: u8 = 0x02;
const BOOL: u8 = 0x03;
const STRING: u8 = 0x04;

/// More tags or fields than any real schema has: a count past it is corruption, refused before
/// it drives a long loop.
const MAX_COLUMNS: u64 = 1 << 16;

fn physical_of(ty: u8) -> Option<Physical> {
    Some(match ty {
        INT64 => Physical::Long,
        FLOAT64 => Physical::Double,
        BOOL => Physical::Bool,
        STRING => Physical::Varchar,
        _ => return None,
    })
}

fn type_name(p: Option<Physical>) -> &'static str {
    match p {
        Some(Physical::Long) => "int64",
        Some(Physical::Double) => "float64",
        Some(Physical::Bool) => "bool",
        _ => "string",
    }
}

/// Why a record could not be decoded from the bytes at hand.
#[derive(Debug)]
enum Stop {
    /// The record goes on past the bytes read so far.
    More,
    /// At this offset from the record's start.
    Bad(usize, String),
}

/// A cursor over a record. Inside a row's payload (`payload` set) running out of bytes is
/// corruption, not a reason to read on: the payload's length was given.
struct Cur<'a> {
    b: &'a [u8],
    i: usize,
    /// Offset of `b[0]` from the record's start.
    base: usize,
    payload: bool,
}

impl<'a> Cur<'a> {
    fn at(&self) -> usize {
        self.base + self.i
    }

    fn short(&self, what: &str) -> Stop {
        if self.payload {
            Stop::Bad(self.at(), format!("the row's payload ends inside {what}"))
        } else {
            Stop::More
        }
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], Stop> {
        match self.b.get(self.i..self.i.saturating_add(n)) {
            Some(s) => {
                self.i += n;
                Ok(s)
            }
            None => Err(self.short(what)),
        }
    }

    fn byte(&mut self, what: &str) -> Result<u8, Stop> {
        Ok(self.take(1, what)?[0])
    }

    fn u64_le(&mut self, what: &str) -> Result<u64, Stop> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8, what)?);
        Ok(u64::from_le_bytes(a))
    }

    fn uvarint(&mut self, what: &str) -> Result<u64, Stop> {
        let start = self.at();
        let mut v = 0u64;
        for k in 0..10 {
            let b = self.byte(what)?;
            if k == 9 && b > 1 {
                return Err(Stop::Bad(start, format!("{what}: a varint past 64 bits")));
            }
            v |= u64::from(b & 0x7f) << (7 * k);
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(Stop::Bad(start, format!("{what}: a varint past 64 bits")))
    }

    /// A length, refused past the record limit before anything is read or allocated for it.
    fn len(&mut self, what: &str) -> Result<usize, Stop> {
        let at = self.at();
        let n = self.uvarint(what)?;
        match usize::try_from(n) {
            Ok(n) if n <= MAX_RECORD_BYTES => Ok(n),
            _ => Err(Stop::Bad(
                at,
                format!(
                    "{what} of {n} bytes (more than {} MiB)",
                    MAX_RECORD_BYTES >> 20
                ),
            )),
        }
    }
}

/// Every string defined so far, by id.
#[derive(Default)]
struct Strings {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Strings {
    fn get(&self, id: u64) -> Option<&[u8]> {
        let i = usize::try_from(id).ok()?;
        let end = *self.ends.get(i)?;
        let start = match i {
            0 => 0,
            _ => self.ends[i - 1],
        };
        self.bytes.get(start..end)
    }

    fn len(&self) -> usize {
        self.ends.len()
    }
}

/// How a schema's rows land in the batch's columns.
struct Mapping {
    /// The column of each tag.
    tags: Vec<usize>,
    /// The column and type of each field.
    fields: Vec<(usize, u8)>,
    /// Columns this schema does not set: null in its rows.
    missing: Vec<usize>,
    /// Which tag is the series key, if this schema has it.
    key_pos: Option<usize>,
}

/// What a record was.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    String,
    Schema,
    /// A row; whether this shard kept it.
    Row(bool),
    End,
}

/// Everything but the input, so that a record can be decoded from the input's buffer.
struct State {
    opts: Opts,
    schema: Arc<BatchSchema>,
    strings: Strings,
    /// Per string id, its shard (only when sharding).
    string_shard: Vec<u64>,
    maps: Vec<Mapping>,
    /// Column by name, for later schemas.
    names: HashMap<String, (usize, ColumnKind)>,
    ids: Vec<u64>,
    rows: u64,
}

impl State {
    fn string(&self, id: u64, at: usize, what: &str) -> Result<&[u8], Stop> {
        self.strings.get(id).ok_or_else(|| {
            Stop::Bad(
                at,
                format!(
                    "{what}: string id {id}, but only {} strings are defined",
                    self.strings.len()
                ),
            )
        })
    }

    fn text(&self, id: u64, at: usize, what: &str) -> Result<String, Stop> {
        // Strings are checked as UTF-8 when they are defined.
        Ok(String::from_utf8_lossy(self.string(id, at, what)?).into_owned())
    }

    /// Decodes the record at the start of `data`; returns its length and what it was. A row
    /// touches `batch` only once the whole record is at hand.
    fn record(&mut self, data: &[u8], batch: &mut Batch) -> Result<(usize, Step), Stop> {
        let mut c = Cur {
            b: data,
            i: 0,
            base: 0,
            payload: false,
        };
        match c.byte("a record")? {
            STRING_DEF => {
                let n = c.len("a string")?;
                let at = c.at();
                let s = c.take(n, "a string")?;
                if std::str::from_utf8(s).is_err() {
                    return Err(Stop::Bad(
                        at,
                        format!("string {} is not UTF-8", self.strings.len()),
                    ));
                }
                self.strings.bytes.extend_from_slice(s);
                self.strings.ends.push(self.strings.bytes.len());
                if let Some(shard) = self.opts.route {
                    self.string_shard.push(shard.of(s));
                }
                Ok((c.i, Step::String))
            }
            SCHEMA_DEF => {
                let table_at = c.at();
                let table = c.uvarint("the schema's table")?;
                let count = |c: &mut Cur, what: &str| -> Result<u64, Stop> {
                    let at = c.at();
                    let n = c.uvarint(what)?;
                    if n > MAX_COLUMNS {
                        return Err(Stop::Bad(at, format!("{n} {what}")));
                    }
                    Ok(n)
                };
                let ntags = count(&mut c, "tags")?;
                let mut tags = Vec::new();
                for _ in 0..ntags {
                    tags.push((c.at(), c.uvarint("a tag key")?));
                }
                let nfields = count(&mut c, "fields")?;
                let mut fields = Vec::new();
                for _ in 0..nfields {
                    let at = c.at();
                    let key = c.uvarint("a field key")?;
                    let ty_at = c.at();
                    let ty = c.byte("a field type")?;
                    if physical_of(ty).is_none() {
                        return Err(Stop::Bad(
                            ty_at,
                            format!(
                                "field type {ty:#04x} (0x01 int64, 0x02 float64, 0x03 bool, \
                                 0x04 string expected)"
                            ),
                        ));
                    }
                    fields.push((at, key, ty));
                }
                self.schema_def((table_at, table), &tags, &fields)?;
                Ok((c.i, Step::Schema))
            }
            ROW => {
                let id_at = c.at();
                let id = c.uvarint("a row's schema id")?;
                let n = c.len("a row payload")?;
                let base = c.at();
                let payload = c.take(n, "a row")?;
                let end = c.i;
                let kept = self.row(id_at, id, base, payload, batch)?;
                Ok((end, Step::Row(kept)))
            }
            k => Err(Stop::Bad(
                0,
                format!("record kind {k:#04x} (0x01 string, 0x02 schema or 0x03 row expected)"),
            )),
        }
    }

    fn schema_def(
        &mut self,
        (table_at, table): (usize, u64),
        tags: &[(usize, u64)],
        fields: &[(usize, u64, u8)],
    ) -> Result<(), Stop> {
        let id = self.maps.len();
        let what = format!("schema {id}");
        let table = self.text(table, table_at, &what)?;
        if self.maps.is_empty() {
            let mut columns = Vec::new();
            for &(at, k) in tags {
                columns.push(NewColumn {
                    name: self.text(k, at, &what)?,
                    kind: ColumnKind::Tag,
                });
            }
            for &(at, k, ty) in fields {
                columns.push(NewColumn {
                    name: self.text(k, at, &what)?,
                    kind: ColumnKind::Field(physical_of(ty).unwrap_or(Physical::Varchar)),
                });
            }
            let schema =
                file_schema(&table, &columns).map_err(|e| Stop::Bad(0, format!("{what}: {e}")))?;
            self.names = columns
                .into_iter()
                .enumerate()
                .map(|(i, c)| (c.name, (i, c.kind)))
                .collect();
            self.maps.push(Mapping {
                tags: (0..tags.len()).collect(),
                fields: fields
                    .iter()
                    .enumerate()
                    .map(|(j, f)| (tags.len() + j, f.2))
                    .collect(),
                missing: Vec::new(),
                key_pos: (!tags.is_empty()).then_some(0),
            });
            self.schema = Arc::new(schema);
            return Ok(());
        }
        if table != self.schema.table {
            return Err(Stop::Bad(
                table_at,
                format!(
                    "{what} is for table `{table}`, but schema 0 is for `{}` (one table per file)",
                    self.schema.table
                ),
            ));
        }
        let designated = self.schema.columns.len() - 1;
        let mut set = vec![false; self.schema.columns.len()];
        set[designated] = true;
        let mut map = Mapping {
            tags: Vec::new(),
            fields: Vec::new(),
            missing: Vec::new(),
            key_pos: None,
        };
        for &(at, k) in tags {
            let name = self.text(k, at, &what)?;
            let col = match self.names.get(&name) {
                Some(&(col, ColumnKind::Tag)) => col,
                _ => {
                    return Err(Stop::Bad(
                        at,
                        format!("{what}: tag `{name}` is not a tag of schema 0"),
                    ))
                }
            };
            if std::mem::replace(&mut set[col], true) {
                return Err(Stop::Bad(at, format!("{what}: tag `{name}` appears twice")));
            }
            if Some(col) == self.schema.series_key {
                map.key_pos = Some(map.tags.len());
            }
            map.tags.push(col);
        }
        for &(at, k, ty) in fields {
            let name = self.text(k, at, &what)?;
            let col = match self.names.get(&name) {
                Some(&(col, ColumnKind::Field(p))) if Some(p) == physical_of(ty) => col,
                Some(&(_, ColumnKind::Field(p))) => {
                    return Err(Stop::Bad(
                        at,
                        format!(
                            "{what}: field `{name}` is {} here but {} in schema 0",
                            type_name(physical_of(ty)),
                            type_name(Some(p))
                        ),
                    ))
                }
                _ => {
                    return Err(Stop::Bad(
                        at,
                        format!("{what}: field `{name}` is not a field of schema 0"),
                    ))
                }
            };
            if std::mem::replace(&mut set[col], true) {
                return Err(Stop::Bad(
                    at,
                    format!("{what}: field `{name}` appears twice"),
                ));
            }
            map.fields.push((col, ty));
        }
        map.missing = (0..set.len()).filter(|&c| !set[c]).collect();
        self.maps.push(map);
        Ok(())
    }

    /// Decodes a row whose payload is all at hand; returns whether this shard kept it.
    fn row(
        &mut self,
        id_at: usize,
        id: u64,
        base: usize,
        payload: &[u8],
        batch: &mut Batch,
    ) -> Result<bool, Stop> {
        let Some(map) = usize::try_from(id).ok().and_then(|i| self.maps.get(i)) else {
            return Err(Stop::Bad(
                id_at,
                format!(
                    "a row of schema {id}, but {} schemas are defined",
                    self.maps.len()
                ),
            ));
        };
        let mut p = Cur {
            b: payload,
            i: 0,
            base,
            payload: true,
        };
        let row_index = self.rows;
        self.rows += 1;
        self.ids.clear();
        for _ in &map.tags {
            let at = p.at();
            let v = p.uvarint("a tag value")?;
            if v >= self.strings.len() as u64 {
                return Err(Stop::Bad(
                    at,
                    format!(
                        "tag value: string id {v}, but only {} strings are defined",
                        self.strings.len()
                    ),
                ));
            }
            self.ids.push(v);
        }
        if let Some(shard) = self.opts.route {
            let mine = match (self.schema.series_key, map.key_pos) {
                (Some(_), Some(k)) => self
                    .ids
                    .get(k)
                    .and_then(|&id| self.string_shard.get(usize::try_from(id).ok()?))
                    .map_or_else(|| shard.owns(b""), |&s| s == shard.i),
                (Some(_), None) => shard.owns(b""),
                (None, _) => shard.owns_row(row_index),
            };
            if !mine {
                return Ok(false);
            }
        }
        let row = batch.rows;
        for (&col, &v) in map.tags.iter().zip(&self.ids) {
            if let Some(Values::Varchar { offsets, bytes }) =
                batch.columns.get_mut(col).map(|c| &mut c.values)
            {
                bytes.extend_from_slice(self.strings.get(v).unwrap_or_default());
                offsets.push(bytes.len() as u32);
            }
        }
        for &(col, ty) in &map.fields {
            let at = p.at();
            let Some(values) = batch.columns.get_mut(col).map(|c| &mut c.values) else {
                continue;
            };
            match (ty, values) {
                (INT64, Values::Long(v)) => v.push(p.u64_le("an int64 field")? as i64),
                (FLOAT64, Values::Double(v)) => {
                    v.push(f64::from_bits(p.u64_le("a float64 field")?))
                }
                (BOOL, Values::Bool(v)) => match p.byte("a bool field")? {
                    b @ (0 | 1) => v.push(b == 1),
                    b => return Err(Stop::Bad(at, format!("bool byte {b} (0 or 1 expected)"))),
                },
                (STRING, Values::Varchar { offsets, bytes }) => {
                    let n = p.len("a string field")?;
                    let s = p.take(n, "a string field")?;
                    if std::str::from_utf8(s).is_err() {
                        return Err(Stop::Bad(at, "a string field that is not UTF-8".into()));
                    }
                    bytes.extend_from_slice(s);
                    offsets.push(bytes.len() as u32);
                }
                // Mappings pair each field with a column of its type.
                _ => {}
            }
        }
        let ts = p.u64_le("the timestamp")? as i64;
        if let Some(Values::Timestamp(v)) = batch.columns.last_mut().map(|c| &mut c.values) {
            v.push(ts);
        }
        if p.i != payload.len() {
            return Err(Stop::Bad(
                p.at(),
                format!(
                    "{} bytes after the row's timestamp (the payload is {} bytes)",
                    payload.len() - p.i,
                    payload.len()
                ),
            ));
        }
        for &col in &map.missing {
            if let Some(c) = batch.columns.get_mut(col) {
                push_null(&mut c.values);
                c.nulls.set(row);
            }
        }
        batch.series.push(0);
        batch.rows += 1;
        Ok(true)
    }
}

/// A TSBS file being read.
pub(super) struct TsbsSource {
    input: Input,
    st: State,
}

impl TsbsSource {
    /// Reads the string records up to the first schema record and takes the schema from it.
    pub(super) fn open(mut input: Input, opts: Opts) -> Result<TsbsSource, String> {
        // `detect` saw the magic and the version.
        input.consume(MAGIC.len() + 1);
        let placeholder = Arc::new(BatchSchema {
            name: String::new(),
            table: String::new(),
            columns: Vec::new(),
            series_key: None,
            timestamp: None,
        });
        let mut s = TsbsSource {
            input,
            st: State {
                opts,
                schema: Arc::clone(&placeholder),
                strings: Strings::default(),
                string_shard: Vec::new(),
                maps: Vec::new(),
                names: HashMap::new(),
                ids: Vec::new(),
                rows: 0,
            },
        };
        // Rows need a schema; one before any fails on its schema id.
        let mut none = Batch::new(placeholder);
        while s.st.maps.is_empty() {
            if s.step(&mut none)? == Step::End {
                return Err(format!(
                    "{}: no schema record: the file holds no rows",
                    s.st.opts.name
                ));
            }
        }
        Ok(s)
    }

    pub(super) fn schema(&self) -> Arc<BatchSchema> {
        Arc::clone(&self.st.schema)
    }

    pub(super) fn rows_read(&self) -> u64 {
        self.st.rows
    }

    pub(super) fn offset(&self) -> u64 {
        self.input.offset()
    }

    /// Decodes the next record, reading more of the file as it needs.
    fn step(&mut self, batch: &mut Batch) -> Result<Step, String> {
        let at = self.input.offset();
        loop {
            let data = self.input.data();
            let stop = if data.is_empty() {
                Stop::More
            } else {
                match self.st.record(data, batch) {
                    Ok((n, step)) => {
                        self.input.consume(n);
                        return Ok(step);
                    }
                    Err(stop) => stop,
                }
            };
            let name = &self.st.opts.name;
            match stop {
                Stop::Bad(off, msg) => {
                    return Err(format!("{name}: offset {}: {msg}", at + off as u64))
                }
                Stop::More => match self.input.more(MAX_RECORD_BYTES + 64) {
                    Ok(More::Read) => {}
                    Ok(More::Eof) if self.input.data().is_empty() => return Ok(Step::End),
                    Ok(More::Eof) => {
                        return Err(format!(
                            "{name}: offset {at}: a truncated record (the file ends {} bytes \
                             into it)",
                            self.input.data().len()
                        ))
                    }
                    Ok(More::Full) => {
                        return Err(format!("{name}: offset {at}: a record too long to read"))
                    }
                    Err(e) => return Err(format!("{name}: offset {at}: read failed: {e}")),
                },
            }
        }
    }

    /// Appends rows of this shard to `batch` (cleared by the caller) up to `max_rows`.
    pub(super) fn fill(&mut self, batch: &mut Batch, max_rows: usize) -> Result<(), String> {
        let mut bytes = 0;
        while batch.rows < max_rows && bytes < MAX_BATCH_BYTES {
            if self.st.opts.limit.is_some_and(|l| self.st.rows >= l) {
                break;
            }
            let before = self.input.offset();
            match self.step(batch)? {
                Step::End => break,
                Step::Row(true) => bytes += (self.input.offset() - before) as usize,
                _ => {}
            }
        }
        Ok(())
    }
}
