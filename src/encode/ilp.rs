//! InfluxDB line protocol (ILP), QuestDB flavour, from a column `Batch`: one line per row,
//!
//! ```text
//! <table>[,<tag>=<value>...] <field>=<value>[,<field>=<value>...][ <ns timestamp>]\n
//! ```
//!
//! - Measurement: the schema's table name.
//! - Tags: the columns whose declared type is `symbol` (dictionary or plain text columns alike),
//!   in column order, so a series key that comes first is the first tag.
//! - Fields: every other column except the designated timestamp, in column order, by physical
//!   kind: Long `58i`; Double in the shortest form that reads back to the same `f64` (`ryu`:
//!   `0.1`, `3.0`, `1e300`), with `NaN`, `Infinity` and `-Infinity` spelled as QuestDB's own
//!   client writes them; Bool `t`/`f`; text (varchar, uuid, ...) as a `"..."` string; other
//!   timestamp columns as microseconds (floored) with suffix `t`.
//! - Timestamp: the designated (`timestamp` role) column in nanoseconds, floored to the
//!   column's unit first; omitted (server time) when the schema has none or the row's is null.
//!
//! Escaping (a backslash before the byte), following QuestDB's client
//! (questdb/c-questdb-client, `questdb-rs/src/ingress/mod.rs`: `must_escape_unquoted` =
//! space `,` `=` `\n` `\r` `\`, `must_escape_quoted` = `"` `\n` `\r` `\`):
//! - measurement: `,`, space and `\` (InfluxDB escapes only `,` and space in measurements, and
//!   reads `\\` as `\`);
//! - tag keys, tag values and field keys: `,`, `=`, space and `\`; in tag values also `\n` and
//!   `\r`, written as a backslash followed by the raw byte;
//! - string field values: `"` and `\`, and `\n`/`\r` as a backslash and the raw byte.
//!
//! InfluxDB's own docs say line protocol cannot carry newlines in tag or field values at all
//! (docs.influxdata.com, "Line protocol reference"); the backslash-newline form is QuestDB's.
//! Table and column names containing `\n` or `\r`, and empty names, are rejected when the
//! encoder is built.
//!
//! Nulls: a null tag or field is left out; so is a tag whose text is empty (`tag=` is invalid
//! ILP). A row left with no field at all cannot be written (ILP needs at least one field): it is
//! dropped and counted in `dropped()`.
//!
//! Speed (TSBS cpu-only lines, ~347 bytes, ~700 instructions a row): nothing is allocated per
//! row. Every byte string that does not depend on the row is built in `new` and kept in 16- or
//! 32-byte blocks, so that writing it is a fixed-size copy rather than a `memcpy` call: each
//! `,key=`, each dictionary id's whole `,key=value`, and for long fields `,key=0i` ...
//! `,key=127i`. Rows go in blocks of 64: the measurement and tags row by row, the fields column
//! by column (one tight loop per column kind, without null checks when the batch has no null
//! there), then each line is appended to `out`. When every tag is a dictionary column, a row
//! whose tag ids equal those its series' last row had copies that row's tag section (the
//! `TagCache`; ~16 MiB at most). The designated timestamp's digits are kept for the next row
//! (rows of one epoch share them). The batch is read through safe indexing only
//! (`unsafe_code` is forbidden in this crate).

mod put;

use std::sync::Arc;

use self::put::{
    put_escaped, put_i64, put_long, write_escaped, KEY, MEASUREMENT, QUOTED, TAG_VALUE,
};
use crate::gen::batch::{Batch, BatchSchema, ColumnMeta, Nulls, Physical, Values};

type Block = [u8; 16];

/// Byte strings kept in 16-byte blocks, so that writing one is a few fixed-size moves instead
/// of a `memcpy` call. Writing may leave up to 15 bytes of garbage past the string's end, which
/// the next write or the end of the line drops.
#[derive(Debug, Default)]
struct Pieces {
    blocks: Vec<Block>,
    /// Per piece: first block and length in bytes.
    index: Vec<(u32, u32)>,
}

impl Pieces {
    fn one(bytes: &[u8]) -> Pieces {
        let mut p = Pieces::default();
        p.push(bytes);
        p
    }

    fn push(&mut self, bytes: &[u8]) {
        let first = self.blocks.len() as u32;
        for chunk in bytes.chunks(16) {
            let mut b = [0u8; 16];
            b[..chunk.len()].copy_from_slice(chunk);
            self.blocks.push(b);
        }
        self.index.push((first, bytes.len() as u32));
    }

    fn len(&self, i: usize) -> usize {
        self.index[i].1 as usize
    }

    fn clear(&mut self) {
        self.blocks.clear();
        self.index.clear();
    }

    /// Room a write of any piece needs.
    fn room(&self) -> usize {
        self.index
            .iter()
            .map(|&(_, len)| (len as usize).div_ceil(16) * 16)
            .max()
            .unwrap_or(0)
    }

    /// Writes piece `i` at `pos`; an unknown `i` writes nothing. Returns the end.
    #[inline(always)]
    fn put(&self, line: &mut [u8], pos: usize, i: usize) -> usize {
        let Some(&(first, len)) = self.index.get(i) else {
            return pos;
        };
        let (first, len) = (first as usize, len as usize);
        let mut at = pos;
        for b in &self.blocks[first..first + len.div_ceil(16)] {
            line[at..at + 16].copy_from_slice(b);
            at += 16;
        }
        pos + len
    }
}

#[derive(Debug)]
struct Col {
    index: usize,
    /// `,key=`, escaped, padded to 32 bytes when it fits (one fixed-size copy) ...
    key32: [u8; 32],
    key_len: usize,
    /// ... else as pieces.
    key: Pieces,
    /// Dictionary columns: each id's whole `,key=value` (tag; empty when the text is) or
    /// `,key="value"` (field).
    chunks: Pieces,
    /// Long fields with a key of up to 28 bytes: `,key=0i` ... `,key=127i`, one copy each.
    small: Option<Box<SmallLongs>>,
}

const SMALL: usize = 128;

#[derive(Debug)]
struct SmallLongs {
    text: [[u8; 32]; SMALL],
    len: [u8; SMALL],
}

impl SmallLongs {
    fn new(key: &[u8]) -> Option<Box<SmallLongs>> {
        if key.len() + 4 > 32 {
            return None;
        }
        let mut t = Box::new(SmallLongs {
            text: [[0; 32]; SMALL],
            len: [0; SMALL],
        });
        for v in 0..SMALL {
            let mut b = [0u8; 32];
            b[..key.len()].copy_from_slice(key);
            let end = put_long(&mut b, key.len(), v as i64);
            t.text[v] = b;
            t.len[v] = end as u8;
        }
        Some(t)
    }
}

impl Col {
    fn new(index: usize, key: &[u8], chunks: Pieces) -> Col {
        let mut key32 = [0u8; 32];
        if key.len() <= 32 {
            key32[..key.len()].copy_from_slice(key);
        }
        Col {
            index,
            key32,
            key_len: key.len(),
            key: Pieces::one(key),
            chunks,
            small: None,
        }
    }

    /// Room writing the key needs.
    fn key_room(&self) -> usize {
        self.key.room().max(32)
    }

    /// Writes `,key=` at `pos`; returns the end.
    #[inline(always)]
    fn put_key(&self, line: &mut [u8], pos: usize) -> usize {
        if self.key_len <= 32 {
            line[pos..pos + 32].copy_from_slice(&self.key32);
            pos + self.key_len
        } else {
            self.key.put(line, pos, 0)
        }
    }
}

/// For every row `first + k` of a block where `op`'s column is not null: binds `x` to the
/// row's item of `vals` (the block's values) and `pos` to the row's line end, and stores `body`
/// as the new end. A macro rather than a closure so that each kind's loop is one tight loop.
macro_rules! each {
    ($op:expr, $first:expr, $end:expr, $vals:expr, |$x:pat, $pos:ident| $body:expr) => {
        match $op.nulls {
            None => {
                for (e, $x) in $end.iter_mut().zip($vals) {
                    let $pos = *e;
                    *e = $body;
                }
            }
            Some(nulls) => {
                for (k, (e, $x)) in $end.iter_mut().zip($vals).enumerate() {
                    if !nulls.is_null($first + k) {
                        let $pos = *e;
                        *e = $body;
                    }
                }
            }
        }
    };
}

/// One column's values in a batch, resolved once per batch.
#[derive(Clone, Copy)]
enum Column<'a> {
    Long(&'a [i64]),
    Double(&'a [f64]),
    Bool(&'a [bool]),
    Symbol(&'a [u32]),
    Text(&'a [u32], &'a [u8]),
    Timestamp(&'a [i64]),
}

/// A tag or field with its values and null bitmap (absent when the batch has no null there).
struct Op<'a> {
    col: &'a Col,
    nulls: Option<&'a Nulls>,
    values: Column<'a>,
}

fn ops<'a>(cols: &'a [Col], batch: &'a Batch) -> Vec<Op<'a>> {
    cols.iter()
        .map(|col| {
            let b = &batch.columns[col.index];
            Op {
                col,
                nulls: b.nulls.any().then_some(&b.nulls),
                values: match &b.values {
                    Values::Long(v) => Column::Long(v),
                    Values::Double(v) => Column::Double(v),
                    Values::Bool(v) => Column::Bool(v),
                    Values::Symbol(v) => Column::Symbol(v),
                    Values::Varchar { offsets, bytes } => Column::Text(offsets, bytes),
                    Values::Timestamp(v) => Column::Timestamp(v),
                },
            }
        })
        .collect()
}

impl Op<'_> {
    #[inline(always)]
    fn is_null(&self, r: usize) -> bool {
        self.nulls.is_some_and(|n| n.is_null(r))
    }

    /// The cache key of a tag at row `r`.
    #[inline(always)]
    fn key(&self, r: usize) -> u32 {
        match self.values {
            _ if self.is_null(r) => NULL_KEY,
            Column::Symbol(ids) => ids[r],
            _ => NULL_KEY,
        }
    }

    #[inline(always)]
    fn text<'b>(offsets: &[u32], bytes: &'b [u8], r: usize) -> &'b [u8] {
        &bytes[offsets[r] as usize..offsets[r + 1] as usize]
    }
}

/// The tag sections of recent rows, one slot per series (the batch's `series` index): a row
/// whose dictionary ids match its slot's copies the slot's bytes instead of writing each tag.
/// On only when every tag is a dictionary column and there are two or more.
#[derive(Debug, Default)]
struct TagCache {
    /// Tags per slot; 0 when the cache is off.
    width: usize,
    /// Bytes per slot: room for the longest tag section.
    stride: usize,
    /// Series at or past this index are not cached (bounds the memory to ~16 MiB).
    cap: usize,
    /// Per slot, `width + 1` words: the length of its bytes (`EMPTY_SLOT` when unused), then
    /// each tag's key (dictionary id, or `NULL_KEY`).
    meta: Vec<u32>,
    bytes: Vec<u8>,
}

impl TagCache {
    fn slots(&self) -> usize {
        self.meta.len() / (self.width + 1)
    }
}

const NULL_KEY: u32 = u32::MAX;
const EMPTY_SLOT: u32 = u32::MAX;

/// Rows encoded together, each in its own region of the line buffer.
const BLOCK: usize = 64;

/// Writes batches of one `BatchSchema` as ILP lines.
#[derive(Debug)]
pub struct IlpEncoder {
    schema: Arc<BatchSchema>,
    measurement: Pieces,
    tags: Vec<Col>,
    fields: Vec<Col>,
    /// The designated timestamp column and its unit in ns (1 when it has none).
    timestamp: Option<(usize, i64)>,
    /// The last designated timestamp value seen, and ` <digits>\n` for it.
    last_ts: Option<i64>,
    ts_end: Pieces,
    cache: TagCache,
    line: Vec<u8>,
    /// Room a line needs besides its text values.
    room: usize,
    /// Whether any tag or field is a text (not dictionary) column.
    has_text: bool,
    dropped: u64,
    /// Running estimate of a line's size, to reserve the output once per batch.
    line_bytes: usize,
}

fn check_name(what: &str, name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err(format!("ILP cannot carry an empty {what} name"));
    }
    if name.contains(['\n', '\r']) {
        return Err(format!(
            "ILP cannot carry the {what} name {name:?}: it has a line break"
        ));
    }
    Ok(())
}

impl IlpEncoder {
    /// An encoder for batches of `schema`. Fails on names ILP cannot carry (empty, or with a
    /// line break), a dictionary column without its dictionary, a `symbol` column that is not
    /// text, or a designated timestamp that is not a timestamp or long column.
    pub fn new(schema: Arc<BatchSchema>) -> Result<IlpEncoder, String> {
        check_name("table", &schema.table)?;
        let mut bytes = Vec::new();
        write_escaped(&mut bytes, schema.table.as_bytes(), MEASUREMENT);
        let measurement = Pieces::one(&bytes);
        // The measurement, ` <20 digits>\n`, and 16 bytes of slack.
        let mut room = measurement.room() + 32 + 16;
        let mut tags = Vec::new();
        let mut fields = Vec::new();
        for (index, c) in schema.columns.iter().enumerate() {
            check_name("column", &c.name)?;
            let dictionary = match (c.physical, &c.dictionary) {
                (Physical::Symbol, Some(d)) => Some(d),
                (Physical::Symbol, None) => {
                    return Err(format!(
                        "column `{}` is a dictionary column without a dictionary",
                        c.name
                    ))
                }
                _ => None,
            };
            if Some(index) == schema.timestamp {
                if !matches!(c.physical, Physical::Timestamp | Physical::Long) {
                    return Err(format!(
                        "the designated timestamp `{}` holds {:?} values, not nanoseconds",
                        c.name, c.physical
                    ));
                }
                continue;
            }
            let is_tag = c.ty == "symbol";
            if is_tag && !matches!(c.physical, Physical::Symbol | Physical::Varchar) {
                return Err(format!(
                    "symbol column `{}` holds {:?} values, not text",
                    c.name, c.physical
                ));
            }
            let mut key = vec![b','];
            write_escaped(&mut key, c.name.as_bytes(), KEY);
            key.push(b'=');
            let mut chunks = Pieces::default();
            for v in dictionary.iter().flat_map(|d| &d.values) {
                bytes.clear();
                if is_tag {
                    if !v.is_empty() {
                        bytes.extend_from_slice(&key);
                        write_escaped(&mut bytes, v.as_bytes(), TAG_VALUE);
                    }
                } else {
                    bytes.extend_from_slice(&key);
                    bytes.push(b'"');
                    write_escaped(&mut bytes, v.as_bytes(), QUOTED);
                    bytes.push(b'"');
                }
                chunks.push(&bytes);
            }
            let mut col = Col::new(index, &key, chunks);
            if c.physical == Physical::Long {
                col.small = SmallLongs::new(&key);
            }
            room += match c.physical {
                Physical::Symbol => col.chunks.room(),
                // Sign and 19 digits, or `-Infinity` and ryu's longest (24), and a suffix.
                Physical::Long | Physical::Timestamp | Physical::Double => col.key_room() + 25,
                // `t`/`f`, or the quotes around a string (its text makes its own room).
                Physical::Bool | Physical::Varchar => col.key_room() + 2,
            };
            if is_tag {
                tags.push(col);
            } else {
                fields.push(col);
            }
        }
        let timestamp = schema
            .timestamp
            .map(|i| (i, schema.columns[i].unit_ns.max(1)));
        let has_text = tags
            .iter()
            .chain(&fields)
            .any(|c| schema.columns[c.index].physical == Physical::Varchar);
        let mut cache = TagCache::default();
        if tags.len() >= 2
            && tags
                .iter()
                .all(|t| schema.columns[t.index].physical == Physical::Symbol)
        {
            cache.width = tags.len();
            cache.stride = tags.iter().map(|t| t.chunks.room()).sum::<usize>();
            cache.cap = (16 << 20) / (cache.stride + 4 * cache.width + 4);
        }
        Ok(IlpEncoder {
            schema,
            measurement,
            tags,
            fields,
            timestamp,
            last_ts: None,
            ts_end: Pieces::default(),
            cache,
            line: vec![0; BLOCK * room],
            room,
            has_text,
            dropped: 0,
            line_bytes: 64,
        })
    }

    pub fn schema(&self) -> &Arc<BatchSchema> {
        &self.schema
    }

    /// Rows dropped so far because they had no non-null field.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Appends every row of `batch` to `out`, one line each; returns the number of lines
    /// written (rows minus those dropped for having no field).
    ///
    /// # Panics
    ///
    /// When `batch` is not of this encoder's schema (same `Arc`, or the same columns with the
    /// same kinds and dictionaries).
    pub fn encode(&mut self, batch: &Batch, out: &mut Vec<u8>) -> usize {
        assert!(
            same_layout(&self.schema, &batch.schema),
            "an ILP encoder for `{}` got a batch of `{}` with another layout",
            self.schema.name,
            batch.schema.name
        );
        let IlpEncoder {
            measurement,
            tags,
            fields,
            timestamp,
            last_ts,
            ts_end,
            cache,
            line,
            room,
            has_text,
            dropped,
            line_bytes,
            ..
        } = self;
        let room = *room;
        let start_len = out.len();
        out.reserve(batch.rows * *line_bytes);
        let mut floats = ryu::Buffer::new();
        let tag_ops = ops(tags, batch);
        let field_ops = ops(fields, batch);
        let stamps = timestamp.map(|(c, unit)| {
            let b = &batch.columns[c];
            let v: &[i64] = match &b.values {
                Values::Timestamp(v) | Values::Long(v) => v,
                _ => &[], // refused in `new`
            };
            (v, b.nulls.any().then_some(&b.nulls), unit)
        });
        let mut written = 0;
        // Rows go in blocks: each row of a block gets its own region of `line`, the measurement
        // and tags are written row by row, the fields column by column (one kind of value per
        // inner loop), then each finished line is appended to `out`.
        let mut slot = [usize::MAX; BLOCK];
        let mut hit = [false; BLOCK];
        let mut start = [0usize; BLOCK];
        let mut fields_start = [0usize; BLOCK];
        let mut end = [0usize; BLOCK];
        for first in (0..batch.rows).step_by(BLOCK) {
            let n = BLOCK.min(batch.rows - first);
            // Row `i` starts after `i` rows' room and their texts, escaped (at most doubled).
            let mut total = n * room;
            for (i, st) in start[..n].iter_mut().enumerate() {
                *st = i * room;
            }
            if *has_text {
                for op in tag_ops.iter().chain(&field_ops) {
                    if let Column::Text(offsets, _) = op.values {
                        let base = offsets[first];
                        for (st, &o) in start[..n].iter_mut().zip(&offsets[first..first + n]) {
                            *st += 2 * (o - base) as usize;
                        }
                        total += 2 * (offsets[first + n] - base) as usize;
                    }
                }
            }
            make_room(line, total);
            let line: &mut [u8] = line;

            // Which rows' tag sections are in the cache: the slot must hold the same keys.
            let w = cache.width + 1;
            if cache.width > 0 {
                for (i, (sl, hit)) in slot[..n].iter_mut().zip(&mut hit[..n]).enumerate() {
                    *sl = batch
                        .series
                        .get(first + i)
                        .map_or(usize::MAX, |&s| s as usize);
                    *hit = *sl < cache.slots() && cache.meta[*sl * w] != EMPTY_SLOT;
                }
                for (k, op) in tag_ops.iter().enumerate() {
                    let slots = slot[..n].iter().zip(&mut hit[..n]);
                    match (op.values, op.nulls) {
                        (Column::Symbol(ids), None) => {
                            for ((&sl, hit), &id) in slots.zip(&ids[first..first + n]) {
                                *hit = *hit && id == cache.meta[sl * w + 1 + k];
                            }
                        }
                        _ => {
                            for (i, (&sl, hit)) in slots.enumerate() {
                                *hit = *hit && op.key(first + i) == cache.meta[sl * w + 1 + k];
                            }
                        }
                    }
                }
            }
            if cache.width == 0 {
                for i in 0..n {
                    end[i] = measurement.put(line, start[i], 0);
                }
                for op in &tag_ops {
                    let col = op.col;
                    let end = &mut end[..n];
                    match op.values {
                        Column::Symbol(ids) => {
                            each!(op, first, end, &ids[first..first + n], |&id, pos| {
                                col.chunks.put(line, pos, id as usize)
                            })
                        }
                        Column::Text(offsets, bytes) => {
                            each!(op, first, end, first..first + n, |r, pos| {
                                let s = Op::text(offsets, bytes, r);
                                if s.is_empty() {
                                    pos
                                } else {
                                    let p = col.put_key(line, pos);
                                    put_escaped(line, p, s, TAG_VALUE)
                                }
                            })
                        }
                        // Refused in `new`.
                        _ => {}
                    }
                }
                fields_start[..n].copy_from_slice(&end[..n]);
            }
            if cache.width > 0 {
                for i in 0..n {
                    let r = first + i;
                    let tags_start = measurement.put(line, start[i], 0);
                    let mut pos = tags_start;
                    if hit[i] {
                        let (len, at) = (cache.meta[slot[i] * w] as usize, slot[i] * cache.stride);
                        line[pos..pos + len].copy_from_slice(&cache.bytes[at..at + len]);
                        pos += len;
                    } else {
                        for op in &tag_ops {
                            if op.is_null(r) {
                                continue;
                            }
                            match op.values {
                                Column::Symbol(ids) => {
                                    pos = op.col.chunks.put(line, pos, ids[r] as usize)
                                }
                                Column::Text(offsets, bytes) => {
                                    let s = Op::text(offsets, bytes, r);
                                    if !s.is_empty() {
                                        pos = op.col.put_key(line, pos);
                                        pos = put_escaped(line, pos, s, TAG_VALUE);
                                    }
                                }
                                // Refused in `new`.
                                _ => {}
                            }
                        }
                    }
                    fields_start[i] = pos;
                    end[i] = pos;
                }
            }
            // Rows that missed fill their slots, only now: the hits above were decided against
            // the slots as they were when the block began, and copied what was there then.
            if cache.width > 0 {
                for i in 0..n {
                    let s = slot[i];
                    if hit[i] || s >= cache.cap {
                        continue;
                    }
                    if s >= cache.slots() {
                        cache.meta.resize((s + 1) * w, EMPTY_SLOT);
                        cache.bytes.resize((s + 1) * cache.stride, 0);
                    }
                    let meta = &mut cache.meta[s * w..(s + 1) * w];
                    for (k, op) in meta[1..].iter_mut().zip(&tag_ops) {
                        *k = op.key(first + i);
                    }
                    let tags_start = start[i] + measurement.len(0);
                    let len = fields_start[i] - tags_start;
                    meta[0] = len as u32;
                    let at = s * cache.stride;
                    cache.bytes[at..at + len].copy_from_slice(&line[tags_start..fields_start[i]]);
                }
            }

            for op in &field_ops {
                let col = op.col;
                let end = &mut end[..n];
                match op.values {
                    Column::Long(v) => match &col.small {
                        Some(t) => each!(op, first, end, &v[first..first + n], |&x, pos| {
                            if (x as u64) < SMALL as u64 {
                                line[pos..pos + 32].copy_from_slice(&t.text[x as usize]);
                                pos + t.len[x as usize] as usize
                            } else {
                                let p = col.put_key(line, pos);
                                put_long(line, p, x)
                            }
                        }),
                        None => each!(op, first, end, &v[first..first + n], |&x, pos| {
                            let p = col.put_key(line, pos);
                            put_long(line, p, x)
                        }),
                    },
                    Column::Double(v) => each!(op, first, end, &v[first..first + n], |&x, pos| {
                        let p = col.put_key(line, pos);
                        let s: &[u8] = if x.is_finite() {
                            floats.format_finite(x).as_bytes()
                        } else if x.is_nan() {
                            b"NaN"
                        } else if x > 0.0 {
                            b"Infinity"
                        } else {
                            b"-Infinity"
                        };
                        line[p..p + s.len()].copy_from_slice(s);
                        p + s.len()
                    }),
                    Column::Bool(v) => each!(op, first, end, &v[first..first + n], |&x, pos| {
                        let p = col.put_key(line, pos);
                        line[p] = if x { b't' } else { b'f' };
                        p + 1
                    }),
                    Column::Symbol(ids) => {
                        each!(op, first, end, &ids[first..first + n], |&id, pos| {
                            col.chunks.put(line, pos, id as usize)
                        })
                    }
                    Column::Text(offsets, bytes) => {
                        each!(op, first, end, first..first + n, |r, pos| {
                            let p = col.put_key(line, pos);
                            line[p] = b'"';
                            let p = put_escaped(line, p + 1, Op::text(offsets, bytes, r), QUOTED);
                            line[p] = b'"';
                            p + 1
                        })
                    }
                    Column::Timestamp(v) => {
                        each!(op, first, end, &v[first..first + n], |&x, pos| {
                            let p = col.put_key(line, pos);
                            let p = put_i64(line, p, x.div_euclid(1_000));
                            line[p] = b't';
                            p + 1
                        })
                    }
                }
            }

            for i in 0..n {
                let r = first + i;
                let mut pos = end[i];
                if pos == fields_start[i] {
                    *dropped += 1;
                    continue;
                }
                // Every field went out as `,key=value`: the first separator is the space.
                line[fields_start[i]] = b' ';
                let stamp = stamps.and_then(|(v, nulls, unit)| {
                    (!nulls.is_some_and(|n| n.is_null(r))).then(|| (v[r], unit))
                });
                match stamp {
                    Some((v, unit)) => {
                        if *last_ts != Some(v) {
                            *last_ts = Some(v);
                            let mut b = [0u8; 24];
                            b[0] = b' ';
                            let e = put_i64(&mut b, 1, v - v.rem_euclid(unit));
                            b[e] = b'\n';
                            ts_end.clear();
                            ts_end.push(&b[..=e]);
                        }
                        pos = ts_end.put(line, pos, 0);
                    }
                    None => {
                        line[pos] = b'\n';
                        pos += 1;
                    }
                }
                out.extend_from_slice(&line[start[i]..pos]);
                written += 1;
            }
        }
        if let Some(mean) = (out.len() - start_len).checked_div(written) {
            *line_bytes = mean + 8;
        }
        written
    }
}

/// Grows the line buffer to at least `n` bytes (text values longer than any seen before).
#[inline]
fn make_room(line: &mut Vec<u8>, n: usize) {
    if line.len() < n {
        line.resize(n, 0);
    }
}

fn same_layout(a: &Arc<BatchSchema>, b: &Arc<BatchSchema>) -> bool {
    if Arc::ptr_eq(a, b) {
        return true;
    }
    let same_column = |x: &ColumnMeta, y: &ColumnMeta| {
        x.name == y.name
            && x.ty == y.ty
            && x.role == y.role
            && x.unit_ns == y.unit_ns
            && x.physical == y.physical
            && match (&x.dictionary, &y.dictionary) {
                (Some(p), Some(q)) => Arc::ptr_eq(p, q) || p == q,
                (None, None) => true,
                _ => false,
            }
    };
    // The table is not part of the layout: the encoder's own table is the measurement, so an
    // ingest block may load a schema's batches under another name.
    a.timestamp == b.timestamp
        && a.columns.len() == b.columns.len()
        && a.columns
            .iter()
            .zip(&b.columns)
            .all(|(x, y)| same_column(x, y))
}

#[cfg(test)]
mod tests;
