//! QWP ingestion messages (`DATA_BATCH`, spec notes §3) from column batches: one batch becomes
//! one message, or several when it would pass the message cap.
//!
//! A message is the 12-byte header (flags `0x08`: the delta symbol dictionary, as every
//! WebSocket sender sends it; `0x01` "defer commit" on all but the last message of a split
//! batch, so that a batch commits as one), the dictionary entries new since the previous
//! message, and one table block: name, row count, the schema inline, then column by column.
//!
//! - Symbols get connection-wide ids in first-use order, one id per distinct text whatever the
//!   column, as the official clients assign them, except that columns with small
//!   dictionaries go first (`assign_ids`). Batches carry per-column dictionary ids, so
//!   each column keeps a table from its ids to connection ids and stops looking once every id
//!   of its dictionary has one. An encoder belongs to one connection: its dictionary state is
//!   the server's, message after message (a new connection needs a new encoder).
//! - Values go at their native width: `long` LONG, `int` INT, `short` SHORT, `byte` BYTE,
//!   `double` DOUBLE, `float` FLOAT, `boolean` bit-packed, `symbol` SYMBOL, `uuid` UUID, other
//!   text VARCHAR, timestamps TIMESTAMP in microseconds (floored). The designated timestamp is
//!   the column named `""`: TIMESTAMP (µs, what tables created over ILP have, TSBS's) or, with
//!   `precision ns`, TIMESTAMP_NANOS.
//! - Nulls follow the official Rust client byte for byte: a null bitmap only when the
//!   message's rows have a null in that column, with only the non-null values written;
//!   DOUBLE and FLOAT nulls as NaN without a bitmap; BOOLEAN, BYTE and SHORT nulls as
//!   false / 0 (QuestDB cannot store them as null).
//!
//! Speed: 8-byte columns without nulls are copied as they are in memory (little-endian
//! machines), the others written with one resize and a chunked copy per column, which the
//! compiler turns into wide stores; nothing is allocated per message once the output and the
//! dictionary have grown.

use std::collections::HashMap;
use std::sync::Arc;

use zerocopy::IntoBytes as _;

use crate::gen::batch::{Batch, BatchSchema, Nulls, Physical, Values};
use crate::qwp::{self, put_str, put_varint, types, varint_len};

/// What the server takes by default per message (`X-QWP-Max-Batch-Size`), less a tenth: the
/// docs advise staying at 90% of the advertised size.
pub const DEFAULT_MAX_MESSAGE: usize = qwp::DEFAULT_SERVER_MAX_BATCH * 9 / 10;

/// A connection's symbol dictionary may hold this many entries (server limit).
pub const MAX_SYMBOLS: usize = 2_000_000;

/// Names are at most this many bytes (server limit).
const MAX_NAME: usize = 127;

/// Where a message ends in the encoded bytes, and the rows it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    pub end: usize,
    pub rows: u64,
}

/// How the encoder writes: fixed for a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QwpOptions {
    /// No message is larger than this many bytes.
    pub max_message: usize,
    /// The designated timestamp as TIMESTAMP_NANOS instead of TIMESTAMP (µs).
    pub designated_nanos: bool,
}

impl Default for QwpOptions {
    fn default() -> Self {
        QwpOptions {
            max_message: DEFAULT_MAX_MESSAGE,
            designated_nanos: false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Integers at 8, 4, 2 or 1 bytes; the narrow two write nulls as 0.
    Int(usize),
    /// DOUBLE (8) or FLOAT (4); nulls as NaN.
    Float(usize),
    Bool,
    /// Dictionary ids of the batch.
    SymbolIds,
    /// Symbol text without a dictionary known up front: looked up row by row.
    SymbolText,
    Varchar,
    Uuid,
    /// Nanoseconds in the batch, divided by this on the wire.
    Timestamp(i64),
}

struct Column {
    kind: Kind,
    /// The column's dictionary id -> connection id (`u32::MAX`: none yet).
    ids: Vec<u32>,
    /// Every id of the column's dictionary has a connection id.
    complete: bool,
}

pub struct QwpEncoder {
    schema: Arc<BatchSchema>,
    columns: Vec<Column>,
    options: QwpOptions,
    /// Table name as a QWP string.
    name: Vec<u8>,
    /// Column count and every (name, type), as the block writes them.
    block_schema: Vec<u8>,
    /// Connection ids of the texts seen.
    by_text: HashMap<Box<str>, u32>,
    /// Every entry as written in a delta section (varint length + UTF-8), in id order, and
    /// where each one starts.
    dict: Vec<u8>,
    dict_at: Vec<usize>,
    /// Entries `0..sent` were in earlier messages.
    sent: usize,
}

impl QwpEncoder {
    pub fn new(schema: Arc<BatchSchema>, options: QwpOptions) -> Result<QwpEncoder, String> {
        let table = schema.table.as_str();
        if table.is_empty() || table.len() > MAX_NAME {
            return Err(format!(
                "QWP table names are 1 to {MAX_NAME} bytes; `{table}` is {}",
                table.len()
            ));
        }
        if options.max_message < 1024 {
            return Err(format!(
                "max_frame {} is too small for a QWP message",
                options.max_message
            ));
        }
        let mut name = Vec::new();
        put_str(&mut name, table);
        let mut block_schema = Vec::new();
        put_varint(&mut block_schema, schema.columns.len() as u64);
        let mut columns = Vec::new();
        for (i, c) in schema.columns.iter().enumerate() {
            let designated = schema.timestamp == Some(i);
            let (kind, code) = match (c.physical, c.ty.as_str()) {
                (Physical::Long, "int" | "integer") => (Kind::Int(4), types::INT),
                (Physical::Long, "short") => (Kind::Int(2), types::SHORT),
                (Physical::Long, "byte") => (Kind::Int(1), types::BYTE),
                (Physical::Long, _) => (Kind::Int(8), types::LONG),
                (Physical::Double, "float") => (Kind::Float(4), types::FLOAT),
                (Physical::Double, _) => (Kind::Float(8), types::DOUBLE),
                (Physical::Bool, _) => (Kind::Bool, types::BOOLEAN),
                (Physical::Symbol, _) => (Kind::SymbolIds, types::SYMBOL),
                (Physical::Varchar, "symbol") => (Kind::SymbolText, types::SYMBOL),
                (Physical::Varchar, "uuid") => (Kind::Uuid, types::UUID),
                (Physical::Varchar, _) => (Kind::Varchar, types::VARCHAR),
                (Physical::Timestamp, _) if designated && options.designated_nanos => {
                    (Kind::Timestamp(1), types::TIMESTAMP_NANOS)
                }
                (Physical::Timestamp, _) => (Kind::Timestamp(1000), types::TIMESTAMP),
            };
            let col_name = if designated { "" } else { c.name.as_str() };
            if col_name.len() > MAX_NAME {
                return Err(format!(
                    "QWP column names are at most {MAX_NAME} bytes; `{}` is {}",
                    c.name,
                    c.name.len()
                ));
            }
            put_str(&mut block_schema, col_name);
            block_schema.push(code);
            let ids = match &c.dictionary {
                Some(d) if kind == Kind::SymbolIds => vec![u32::MAX; d.values.len()],
                _ => Vec::new(),
            };
            columns.push(Column {
                kind,
                complete: ids.is_empty() && kind == Kind::SymbolIds,
                ids,
            });
        }
        Ok(QwpEncoder {
            schema,
            columns,
            options,
            name,
            block_schema,
            by_text: HashMap::new(),
            dict: Vec::new(),
            dict_at: Vec::new(),
            sent: 0,
        })
    }

    /// Connection ids handed out so far.
    pub fn symbols(&self) -> usize {
        self.dict_at.len()
    }

    /// Appends `batch` as one or more messages to `out`, and where each ends to `frames`.
    /// Returns the rows written (all of them).
    pub fn encode(
        &mut self,
        batch: &Batch,
        out: &mut Vec<u8>,
        frames: &mut Vec<Frame>,
    ) -> Result<u64, String> {
        if batch.rows == 0 {
            return Ok(0);
        }
        self.assign_ids(batch)?;
        let mut a = 0;
        while a < batch.rows {
            // A dictionary too large to share a message with rows goes first, in messages of
            // its own: no table, "defer commit" (spec §3.3).
            while self.delta_len() > self.options.max_message / 2 {
                self.dictionary_message(out);
                frames.push(Frame {
                    end: out.len(),
                    rows: 0,
                });
            }
            let fixed = qwp::HEADER_LEN + self.delta_len() + self.name.len() + 10 + {
                self.block_schema.len()
            };
            let left = batch.rows - a;
            let mut m = left.min(qwp::MAX_ROWS_PER_TABLE);
            if fixed + self.bound(batch, a, m) > self.options.max_message {
                // The largest row count that fits: `bound` grows with the rows.
                let (mut lo, mut hi) = (0, m);
                while lo < hi {
                    let mid = (lo + hi).div_ceil(2);
                    if fixed + self.bound(batch, a, mid) <= self.options.max_message {
                        lo = mid;
                    } else {
                        hi = mid - 1;
                    }
                }
                m = lo;
            }
            if m == 0 {
                return Err(format!(
                    "row {a} of a batch does not fit in a QWP message of max_frame {} bytes \
                     (with {} bytes of new symbol dictionary); raise the endpoint's max_frame",
                    self.options.max_message,
                    self.delta_len()
                ));
            }
            let last = a + m == batch.rows;
            let flags = qwp::FLAG_DELTA_SYMBOL_DICT | if last { 0 } else { qwp::FLAG_DEFER_COMMIT };
            self.message(batch, a, a + m, flags, out);
            frames.push(Frame {
                end: out.len(),
                rows: m as u64,
            });
            a += m;
        }
        Ok(batch.rows as u64)
    }

    /// Writes one message for rows `a..b`.
    fn message(&mut self, batch: &Batch, a: usize, b: usize, flags: u8, out: &mut Vec<u8>) {
        let at = out.len();
        out.resize(at + qwp::HEADER_LEN, 0);
        // Delta dictionary: everything handed out since the last message.
        put_varint(out, self.sent as u64);
        put_varint(out, (self.dict_at.len() - self.sent) as u64);
        if self.sent < self.dict_at.len() {
            out.extend_from_slice(&self.dict[self.dict_at[self.sent]..]);
        }
        self.sent = self.dict_at.len();
        out.extend_from_slice(&self.name);
        put_varint(out, (b - a) as u64);
        out.extend_from_slice(&self.block_schema);
        for (i, col) in batch.columns.iter().enumerate() {
            let c = &self.columns[i];
            write_column(c, &col.values, &col.nulls, a, b, out, &self.by_text);
        }
        qwp::patch_header(out, at, flags, 1);
    }

    /// A message with no table that carries as many pending dictionary entries as fit.
    fn dictionary_message(&mut self, out: &mut Vec<u8>) {
        let room = self.options.max_message - qwp::HEADER_LEN - 20;
        let start = self.dict_at[self.sent];
        let mut end = self.sent;
        while end < self.dict_at.len() {
            let next = self
                .dict_at
                .get(end + 1)
                .copied()
                .unwrap_or(self.dict.len());
            if next - start > room && end > self.sent {
                break;
            }
            end += 1;
        }
        let stop = self.dict_at.get(end).copied().unwrap_or(self.dict.len());
        let at = out.len();
        out.resize(at + qwp::HEADER_LEN, 0);
        put_varint(out, self.sent as u64);
        put_varint(out, (end - self.sent) as u64);
        out.extend_from_slice(&self.dict[start..stop]);
        self.sent = end;
        qwp::patch_header(
            out,
            at,
            qwp::FLAG_DELTA_SYMBOL_DICT | qwp::FLAG_DEFER_COMMIT,
            0,
        );
    }

    /// Bytes the delta section of the next message takes.
    fn delta_len(&self) -> usize {
        let n = self.dict_at.len() - self.sent;
        let body = match self.dict_at.get(self.sent) {
            Some(&start) => self.dict.len() - start,
            None => 0,
        };
        varint_len(self.sent as u64) + varint_len(n as u64) + body
    }

    /// At least the bytes rows `a..a + m` take in a table block (columns only).
    fn bound(&self, batch: &Batch, a: usize, m: usize) -> usize {
        let bitmap = m.div_ceil(8);
        let mut total = 0;
        for (i, c) in self.columns.iter().enumerate() {
            total += 1 + bitmap;
            total += match c.kind {
                Kind::Int(w) | Kind::Float(w) => w * m,
                Kind::Bool => bitmap,
                Kind::SymbolIds | Kind::SymbolText => 5 * m,
                Kind::Uuid => 16 * m,
                Kind::Timestamp(_) => 8 * m,
                Kind::Varchar => match &batch.columns[i].values {
                    Values::Varchar { offsets, .. } => {
                        4 * (m + 1) + (offsets[a + m] - offsets[a]) as usize
                    }
                    _ => 0,
                },
            };
        }
        total
    }

    /// Gives every symbol text of the batch a connection id, in first-use order column by
    /// column as the official clients do when they flush (`a`, `b` in the first column, then
    /// `eu` in the second: ids 0, 1, 2), but taking the columns with the smallest
    /// dictionaries first (ties in schema order). TSBS's nine tags then have one-byte ids
    /// and only the host name takes two: 99 bytes a row instead of 108.
    fn assign_ids(&mut self, batch: &Batch) -> Result<(), String> {
        // A dictionary that grew since (a file's, read as it goes) reopens its column.
        let dict_len = |i: usize| {
            batch.schema.columns[i]
                .dictionary
                .as_ref()
                .map_or(0, |d| d.values.len())
        };
        let mut open: Vec<usize> = (0..self.columns.len())
            .filter(|&i| match self.columns[i].kind {
                Kind::SymbolIds => {
                    !self.columns[i].complete || self.columns[i].ids.len() < dict_len(i)
                }
                Kind::SymbolText => true,
                _ => false,
            })
            .collect();
        // Smallest dictionaries first: their values then get the one-byte ids (below 128),
        // and every row pays one byte per such column instead of two.
        open.sort_by_key(|&i| match self.columns[i].kind {
            Kind::SymbolIds => self.columns[i].ids.len(),
            _ => usize::MAX,
        });
        if open.is_empty() {
            return Ok(());
        }
        for &i in &open {
            let col = &batch.columns[i];
            for row in 0..batch.rows {
                if col.nulls.is_null(row) {
                    continue;
                }
                match &col.values {
                    Values::Symbol(ids) => {
                        let local = ids[row] as usize;
                        if local >= self.columns[i].ids.len() {
                            self.columns[i].ids.resize(local + 1, u32::MAX);
                        }
                        if self.columns[i].ids[local] == u32::MAX {
                            let text = batch.text(i, row);
                            let id = self.intern(text)?;
                            self.columns[i].ids[local] = id;
                        }
                    }
                    v @ Values::Varchar { .. } => {
                        let text = v.str_at(row);
                        if !self.by_text.contains_key(text) {
                            self.intern(text)?;
                        }
                    }
                    _ => {}
                }
            }
        }
        for &i in &open {
            let c = &mut self.columns[i];
            if c.kind == Kind::SymbolIds {
                c.complete = c.ids.len() >= dict_len(i) && c.ids.iter().all(|&id| id != u32::MAX);
            }
        }
        Ok(())
    }

    /// The connection id of `text`, handing out the next one if it has none.
    fn intern(&mut self, text: &str) -> Result<u32, String> {
        if let Some(&id) = self.by_text.get(text) {
            return Ok(id);
        }
        if self.dict_at.len() >= MAX_SYMBOLS {
            return Err(format!(
                "more than {MAX_SYMBOLS} distinct symbol values on one QWP connection (the \
                 server's limit)"
            ));
        }
        let id = self.dict_at.len() as u32;
        self.dict_at.push(self.dict.len());
        put_str(&mut self.dict, text);
        self.by_text.insert(text.into(), id);
        Ok(id)
    }

    pub fn schema(&self) -> &Arc<BatchSchema> {
        &self.schema
    }
}

/// Whether any of rows `a..b` is null.
fn any_null(nulls: &Nulls, a: usize, b: usize) -> bool {
    if nulls.words.is_empty() || a >= b {
        return false;
    }
    let (first, last) = (a / 64, (b - 1) / 64);
    for w in first..=last.min(nulls.words.len().saturating_sub(1)) {
        let mut word = nulls.words[w];
        if w == first {
            word &= u64::MAX << (a % 64);
        }
        if w == last && b % 64 != 0 {
            word &= u64::MAX >> (64 - b % 64);
        }
        if word != 0 {
            return true;
        }
    }
    false
}

/// 64 bits of the bitmap starting at row `pos` (rows past the bitmap are not null).
fn bits64(nulls: &Nulls, pos: usize) -> u64 {
    let (w, s) = (pos / 64, pos % 64);
    let lo = nulls.words.get(w).copied().unwrap_or(0) >> s;
    if s == 0 {
        return lo;
    }
    let hi = nulls.words.get(w + 1).copied().unwrap_or(0) << (64 - s);
    lo | hi
}

/// Null flag 1 and the bitmap of rows `a..b`, LSB first.
fn write_bitmap(nulls: &Nulls, a: usize, b: usize, out: &mut Vec<u8>) {
    out.push(1);
    let n = b - a;
    let bytes = n.div_ceil(8);
    let mut i = 0;
    while i < bytes {
        let word = bits64(nulls, a + i * 8).to_le_bytes();
        let take = (bytes - i).min(8);
        out.extend_from_slice(&word[..take]);
        i += take;
    }
    // Bits past row b - 1 must be zero.
    if n % 8 != 0 {
        if let Some(last) = out.last_mut() {
            *last &= (1u8 << (n % 8)) - 1;
        }
    }
}

/// Appends `n` values of `width` bytes each, produced by `value(i)` as 8 little-endian bytes.
#[inline(always)]
fn put_fixed<const W: usize>(out: &mut Vec<u8>, n: usize, mut value: impl FnMut(usize) -> [u8; W]) {
    let start = out.len();
    out.resize(start + W * n, 0);
    for (i, dst) in out[start..].chunks_exact_mut(W).enumerate() {
        dst.copy_from_slice(&value(i));
    }
}

/// Appends 8-byte numbers as they are in memory when that is little-endian (one copy), else
/// value by value.
#[inline]
fn put_slice<T>(out: &mut Vec<u8>, v: &[T])
where
    T: zerocopy::IntoBytes + zerocopy::Immutable + Copy + ToLe,
{
    if cfg!(target_endian = "little") {
        out.extend_from_slice(v.as_bytes());
    } else {
        put_fixed::<8>(out, v.len(), |i| v[i].to_le());
    }
}

/// Numbers written 8 bytes little-endian.
trait ToLe {
    fn to_le(self) -> [u8; 8];
}

impl ToLe for i64 {
    fn to_le(self) -> [u8; 8] {
        self.to_le_bytes()
    }
}

impl ToLe for f64 {
    fn to_le(self) -> [u8; 8] {
        self.to_le_bytes()
    }
}

fn write_column(
    c: &Column,
    values: &Values,
    nulls: &Nulls,
    a: usize,
    b: usize,
    out: &mut Vec<u8>,
    by_text: &HashMap<Box<str>, u32>,
) {
    let has_nulls = any_null(nulls, a, b);
    match (c.kind, values) {
        (Kind::Int(w), Values::Long(v)) => {
            let v = &v[a..b];
            // BYTE and SHORT have no null in QuestDB: the clients send 0.
            let narrow = w <= 2;
            if has_nulls && !narrow {
                write_bitmap(nulls, a, b, out);
                for (i, &x) in v.iter().enumerate() {
                    if !nulls.is_null(a + i) {
                        put_int(out, w, x);
                    }
                }
                return;
            }
            out.push(0);
            let zeroed = |i: usize| {
                if has_nulls && nulls.is_null(a + i) {
                    0
                } else {
                    v[i]
                }
            };
            match w {
                8 if !has_nulls => put_slice(out, v),
                8 => put_fixed::<8>(out, v.len(), |i| zeroed(i).to_le_bytes()),
                4 => put_fixed::<4>(out, v.len(), |i| (zeroed(i) as i32).to_le_bytes()),
                2 => put_fixed::<2>(out, v.len(), |i| (zeroed(i) as i16).to_le_bytes()),
                _ => put_fixed::<1>(out, v.len(), |i| (zeroed(i) as i8).to_le_bytes()),
            }
        }
        (Kind::Float(w), Values::Double(v)) => {
            let v = &v[a..b];
            out.push(0);
            let get = |i: usize| {
                if has_nulls && nulls.is_null(a + i) {
                    f64::NAN
                } else {
                    v[i]
                }
            };
            if w == 8 {
                if has_nulls {
                    put_fixed::<8>(out, v.len(), |i| get(i).to_le_bytes());
                } else {
                    put_slice(out, v);
                }
            } else {
                put_fixed::<4>(out, v.len(), |i| (get(i) as f32).to_le_bytes());
            }
        }
        (Kind::Bool, Values::Bool(v)) => {
            out.push(0);
            for (k, group) in v[a..b].chunks(8).enumerate() {
                let mut byte = 0u8;
                for (j, &x) in group.iter().enumerate() {
                    let row = a + k * 8 + j;
                    if x && !(has_nulls && nulls.is_null(row)) {
                        byte |= 1 << j;
                    }
                }
                out.push(byte);
            }
        }
        (Kind::SymbolIds, Values::Symbol(ids)) => {
            if has_nulls {
                write_bitmap(nulls, a, b, out);
            } else {
                out.push(0);
            }
            // Room for the longest ids, written through a slice (no capacity check per
            // byte), then cut to what was written.
            let start = out.len();
            out.resize(start + 5 * (b - a), 0);
            let buf = &mut out[start..];
            let mut p = 0;
            for (i, &local) in ids[a..b].iter().enumerate() {
                if has_nulls && nulls.is_null(a + i) {
                    continue;
                }
                let mut id = c.ids.get(local as usize).copied().unwrap_or(0);
                while id >= 0x80 {
                    buf[p] = (id as u8) | 0x80;
                    id >>= 7;
                    p += 1;
                }
                buf[p] = id as u8;
                p += 1;
            }
            out.truncate(start + p);
        }
        (Kind::SymbolText, v @ Values::Varchar { .. }) => {
            if has_nulls {
                write_bitmap(nulls, a, b, out);
            } else {
                out.push(0);
            }
            for row in a..b {
                if has_nulls && nulls.is_null(row) {
                    continue;
                }
                let id = by_text.get(v.str_at(row)).copied().unwrap_or(0);
                put_varint(out, id as u64);
            }
        }
        (Kind::Varchar, Values::Varchar { offsets, bytes }) => {
            if !has_nulls {
                out.push(0);
                let base = offsets[a];
                put_fixed::<4>(out, b - a + 1, |i| (offsets[a + i] - base).to_le_bytes());
                out.extend_from_slice(&bytes[base as usize..offsets[b] as usize]);
                return;
            }
            write_bitmap(nulls, a, b, out);
            let mut end = 0u32;
            out.extend_from_slice(&0u32.to_le_bytes());
            for row in a..b {
                if !nulls.is_null(row) {
                    end += offsets[row + 1] - offsets[row];
                    out.extend_from_slice(&end.to_le_bytes());
                }
            }
            for row in a..b {
                if !nulls.is_null(row) {
                    out.extend_from_slice(&bytes[offsets[row] as usize..offsets[row + 1] as usize]);
                }
            }
        }
        (Kind::Uuid, v @ Values::Varchar { .. }) => {
            // A text that is not a UUID is sent as null, as the generator's coercions do.
            let parsed: Vec<Option<u128>> = (a..b)
                .map(|row| {
                    if nulls.is_null(row) {
                        None
                    } else {
                        parse_uuid(v.str_at(row))
                    }
                })
                .collect();
            if parsed.iter().any(Option::is_none) {
                let mut bits = Nulls::default();
                for (i, p) in parsed.iter().enumerate() {
                    if p.is_none() {
                        bits.set(i);
                    }
                }
                write_bitmap(&bits, 0, b - a, out);
            } else {
                out.push(0);
            }
            for u in parsed.into_iter().flatten() {
                out.extend_from_slice(&(u as u64).to_le_bytes());
                out.extend_from_slice(&((u >> 64) as u64).to_le_bytes());
            }
        }
        (Kind::Timestamp(div), Values::Timestamp(v)) => {
            let v = &v[a..b];
            if has_nulls {
                write_bitmap(nulls, a, b, out);
                for (i, &x) in v.iter().enumerate() {
                    if !nulls.is_null(a + i) {
                        out.extend_from_slice(&x.div_euclid(div).to_le_bytes());
                    }
                }
                return;
            }
            out.push(0);
            // A constant divisor: the division becomes a multiplication.
            match div {
                1 => put_slice(out, v),
                1000 => put_fixed::<8>(out, v.len(), |i| v[i].div_euclid(1000).to_le_bytes()),
                _ => put_fixed::<8>(out, v.len(), |i| v[i].div_euclid(div).to_le_bytes()),
            }
        }
        // The kinds follow the physical kinds (`new`), so a mismatch cannot happen; should
        // it, an all-null column keeps the message well formed.
        _ => {
            write_bitmap(&all_null(b - a), 0, b - a, out);
            if matches!(c.kind, Kind::Varchar) {
                out.extend_from_slice(&0u32.to_le_bytes());
            }
        }
    }
}

fn all_null(n: usize) -> Nulls {
    let mut bits = Nulls::default();
    for i in 0..n {
        bits.set(i);
    }
    bits
}

fn put_int(out: &mut Vec<u8>, width: usize, x: i64) {
    match width {
        8 => out.extend_from_slice(&x.to_le_bytes()),
        4 => out.extend_from_slice(&(x as i32).to_le_bytes()),
        2 => out.extend_from_slice(&(x as i16).to_le_bytes()),
        _ => out.push(x as i8 as u8),
    }
}

/// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` (hyphens optional) as a 128-bit number.
fn parse_uuid(s: &str) -> Option<u128> {
    let mut v: u128 = 0;
    let mut digits = 0;
    for c in s.bytes() {
        if c == b'-' {
            continue;
        }
        v = (v << 4) | (c as char).to_digit(16)? as u128;
        digits += 1;
    }
    (digits == 32).then_some(v)
}

#[cfg(test)]
mod tests;
