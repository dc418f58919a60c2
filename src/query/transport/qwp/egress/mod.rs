//! QWP queries on `/read/v1`: encoding QUERY_REQUEST and decoding the server's frames
//! (spec notes §5; column encodings §3.5, Gorilla §3.6).
//!
//! - `encode_query_request`: the client's message has no 12-byte header; binds are one-row
//!   columns prefixed by their type code, in `$1..$n` order (QWP's bind indexes are 0-based
//!   positions): Int as LONG, Float as DOUBLE, Bool as BOOLEAN, Text as VARCHAR, Timestamp as
//!   TIMESTAMP (microseconds, floored: QuestDB's TIMESTAMP unit), Null as a NULL VARCHAR
//!   (`0f 01 01`, as the official client binds a None). `initial_credit` is the flow-control
//!   budget in bytes (0: unbounded, the reference clients' default).
//! - `encode_credit`: CREDIT (§5.6), also headerless: `15 | request_id i64 LE |
//!   additional_bytes varint`, adding to the running request's budget.
//! - `Decoder`: one connection's server frames. It keeps what the protocol makes
//!   connection-scoped: the symbol dictionary (extended by each batch's delta section, kept
//!   across batches and queries until CACHE_RESET or a query sent with
//!   `QUERY_FLAG_RESET_DICT`), and the running query's schema (only batch 0 carries it).
//!
//! A RESULT_BATCH is read in two passes over the frame, neither of which builds rows: the
//! first walks every column section, checking each length against the bytes that are really
//! there (a count from the wire never sizes an allocation) and leaving a cursor at the start
//! of each column's values; with checksums on, the second walks the rows, pulling the next
//! value of each column in turn and feeding it to a `ResultHasher` as docs/checksum.md §6
//! says. Without checksums only the first pass runs and the rows are counted.
//!
//! Every malformed input is a `Malformed` error; nothing here panics on what a server sends.

use std::borrow::Cow;

use crate::query::checksum::{canonical_decimal, ResultHasher};
use crate::qwp::{
    put_str, put_varint, read_header, types, Malformed, Reader, FLAG_DELTA_SYMBOL_DICT,
    FLAG_GORILLA, FLAG_ZSTD,
};
use crate::value::BindValue;

/// Message kinds: the first payload byte.
pub mod kind {
    pub const QUERY_REQUEST: u8 = 0x10;
    pub const RESULT_BATCH: u8 = 0x11;
    pub const RESULT_END: u8 = 0x12;
    pub const QUERY_ERROR: u8 = 0x13;
    pub const CANCEL: u8 = 0x14;
    pub const CREDIT: u8 = 0x15;
    pub const EXEC_DONE: u8 = 0x16;
    pub const CACHE_RESET: u8 = 0x17;
    pub const SERVER_INFO: u8 = 0x18;

    pub fn name(kind: u8) -> &'static str {
        match kind {
            QUERY_REQUEST => "QUERY_REQUEST",
            RESULT_BATCH => "RESULT_BATCH",
            RESULT_END => "RESULT_END",
            QUERY_ERROR => "QUERY_ERROR",
            CANCEL => "CANCEL",
            CREDIT => "CREDIT",
            EXEC_DONE => "EXEC_DONE",
            CACHE_RESET => "CACHE_RESET",
            SERVER_INFO => "SERVER_INFO",
            _ => "unknown",
        }
    }
}

/// SERVER_INFO capability bits.
pub const CAP_ZONE: u32 = 0x01;
pub const CAP_QUERY_FLAGS: u32 = 0x02;
/// QUERY_REQUEST's `query_flags`: clear the connection's symbol dictionary first.
pub const QUERY_FLAG_RESET_DICT: u64 = 0x01;
/// CACHE_RESET's mask bit for the symbol dictionary.
pub const RESET_SYMBOL_DICT: u8 = 0x01;

/// Per-batch caps the reference decoders enforce.
pub const MAX_ROWS_PER_BATCH: usize = 1_048_576;
pub const MAX_COLUMNS: usize = 2048;
/// What the server takes per request.
pub const MAX_BINDS: usize = 1024;
pub const MAX_SQL_BYTES: usize = 1 << 20;
/// Results have no table name; anything longer than a table name could be is malformed.
const MAX_TABLE_NAME: u64 = 127;
/// Past this the dictionary's growth is a server fault, not a result (the server's soft cap
/// is 100,000 entries between CACHE_RESETs; one query may pass it, not by this much).
const MAX_DICT_ENTRIES: usize = 1 << 24;
const MAX_ARRAY_DIMS: u8 = 32;

// ------------------------------------------------------------------------------------------------
// QUERY_REQUEST

/// Appends a QUERY_REQUEST to `out`. `initial_credit`: the bytes of RESULT_BATCHes (header
/// included) the server may send before it waits for CREDIT; 0 is no limit (TCP's
/// back-pressure paces the server, as with the reference clients). `query_flags` is written
/// only when it is `Some` and not 0 (the trailer must be absent unless SERVER_INFO advertised
/// `CAP_QUERY_FLAGS`, and 0 means nothing). Lengths are the caller's to check
/// (`MAX_SQL_BYTES`, `MAX_BINDS`, the server's message size): a text bind past 4 GiB cannot be
/// described and is cut at the wire's limit.
pub fn encode_query_request(
    out: &mut Vec<u8>,
    request_id: i64,
    sql: &str,
    binds: &[BindValue],
    initial_credit: u64,
    query_flags: Option<u64>,
) {
    out.push(kind::QUERY_REQUEST);
    out.extend_from_slice(&request_id.to_le_bytes());
    put_str(out, sql);
    put_varint(out, initial_credit);
    put_varint(out, binds.len() as u64);
    for b in binds {
        put_bind(out, b);
    }
    if let Some(flags) = query_flags.filter(|&f| f != 0) {
        put_varint(out, flags);
    }
}

/// Appends a CREDIT giving request `request_id` `additional_bytes` more of budget.
pub fn encode_credit(out: &mut Vec<u8>, request_id: i64, additional_bytes: u64) {
    out.push(kind::CREDIT);
    out.extend_from_slice(&request_id.to_le_bytes());
    put_varint(out, additional_bytes);
}

fn put_bind(out: &mut Vec<u8>, b: &BindValue) {
    match b {
        BindValue::Null => out.extend_from_slice(&[types::VARCHAR, 1, 1]),
        BindValue::Int(v) => {
            out.extend_from_slice(&[types::LONG, 0]);
            out.extend_from_slice(&v.to_le_bytes());
        }
        BindValue::Float(v) => {
            out.extend_from_slice(&[types::DOUBLE, 0]);
            out.extend_from_slice(&v.to_le_bytes());
        }
        BindValue::Bool(v) => out.extend_from_slice(&[types::BOOLEAN, 0, u8::from(*v)]),
        BindValue::Text(s) => {
            let len = u32::try_from(s.len()).unwrap_or(u32::MAX);
            out.extend_from_slice(&[types::VARCHAR, 0]);
            out.extend_from_slice(&0u32.to_le_bytes());
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&s.as_bytes()[..len as usize]);
        }
        BindValue::Timestamp(ns) => {
            out.extend_from_slice(&[types::TIMESTAMP, 0]);
            out.extend_from_slice(&ns.div_euclid(1000).to_le_bytes());
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Server frames

/// SERVER_INFO: who answers on this connection.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerInfo {
    pub role: u8,
    pub epoch: u64,
    pub capabilities: u32,
    pub server_wall_ns: i64,
    pub cluster_id: String,
    pub node_id: String,
    /// Present iff `capabilities` has `CAP_ZONE`.
    pub zone_id: Option<String>,
}

impl ServerInfo {
    /// Whether QUERY_REQUEST may carry the `query_flags` trailer.
    pub fn query_flags(&self) -> bool {
        self.capabilities & CAP_QUERY_FLAGS != 0
    }

    pub fn role_name(&self) -> &'static str {
        match self.role {
            0 => "STANDALONE",
            1 => "PRIMARY",
            2 => "REPLICA",
            3 => "PRIMARY_CATCHUP",
            _ => "unknown role",
        }
    }
}

/// One decoded server frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    ServerInfo(ServerInfo),
    /// `rows` rows were read (and hashed, when a hasher was given).
    ResultBatch {
        request_id: i64,
        batch_seq: u64,
        rows: u64,
    },
    ResultEnd {
        request_id: i64,
        final_seq: u64,
        /// 0 when the server does not track it.
        total_rows: u64,
    },
    QueryError {
        request_id: i64,
        status: u8,
        message: Cow<'a, str>,
    },
    ExecDone {
        request_id: i64,
        op_type: u8,
        rows_affected: u64,
    },
    /// Already applied to the decoder.
    CacheReset {
        mask: u8,
    },
}

/// Why a frame could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The frame breaks the protocol; the connection's state cannot be trusted after it.
    Malformed(Malformed),
    /// The batch was read (the decoder's state is as after any other batch), but a column has
    /// a type without a checksum encoding (docs/checksum.md §2.8).
    Unhashable(String),
}

impl From<Malformed> for DecodeError {
    fn from(m: Malformed) -> DecodeError {
        DecodeError::Malformed(m)
    }
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Malformed(m) => m.fmt(f),
            DecodeError::Unhashable(why) => f.write_str(why),
        }
    }
}

/// What the second pass feeds each value of each row to, in column order, with the values
/// already in docs/checksum.md §6's terms (NULL sentinels as NULL, DATE as microseconds, ...):
/// a `ResultHasher` for checksums, or a reader of one value (`client::qwp_sql`'s counts).
pub trait Values {
    fn begin_row(&mut self);
    fn end_row(&mut self);
    fn push_null(&mut self);
    fn push_i64(&mut self, v: i64);
    fn push_bool(&mut self, v: bool);
    fn push_f64(&mut self, v: f64);
    fn push_f32(&mut self, v: f32);
    fn push_number(&mut self, n: crate::query::checksum::Number);
    fn push_text(&mut self, s: &str);
    fn push_text_bytes(&mut self, b: &[u8]);
    fn push_timestamp_us(&mut self, us: i64);
}

impl Values for ResultHasher {
    fn begin_row(&mut self) {
        ResultHasher::begin_row(self)
    }
    fn end_row(&mut self) {
        ResultHasher::end_row(self)
    }
    fn push_null(&mut self) {
        ResultHasher::push_null(self)
    }
    fn push_i64(&mut self, v: i64) {
        ResultHasher::push_i64(self, v)
    }
    fn push_bool(&mut self, v: bool) {
        ResultHasher::push_bool(self, v)
    }
    fn push_f64(&mut self, v: f64) {
        ResultHasher::push_f64(self, v)
    }
    fn push_f32(&mut self, v: f32) {
        ResultHasher::push_f32(self, v)
    }
    fn push_number(&mut self, n: crate::query::checksum::Number) {
        ResultHasher::push_number(self, n)
    }
    fn push_text(&mut self, s: &str) {
        ResultHasher::push_text(self, s)
    }
    fn push_text_bytes(&mut self, b: &[u8]) {
        ResultHasher::push_text_bytes(self, b)
    }
    fn push_timestamp_us(&mut self, us: i64) {
        ResultHasher::push_timestamp_us(self, us)
    }
}

/// A result column: its name (for messages) and type code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub code: u8,
}

/// One connection's decoding state (see the module comment).
#[derive(Debug, Default)]
pub struct Decoder {
    dict: Dict,
    schema: Vec<Column>,
    /// The running query, between `begin_query` and its terminator.
    request_id: Option<i64>,
    next_seq: u64,
    /// Reused per batch: one cursor per column, and the entries of column-local symbol
    /// dictionaries (frames without the delta flag) as byte ranges of the frame.
    cursors: Vec<Cursor>,
    local: Vec<(usize, usize)>,
}

impl Decoder {
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// A query was sent as `request_id`: its batches start at 0 with a schema. `reset_dict`:
    /// it was sent with `QUERY_FLAG_RESET_DICT`, so the server starts a new dictionary.
    pub fn begin_query(&mut self, request_id: i64, reset_dict: bool) {
        self.request_id = Some(request_id);
        self.next_seq = 0;
        self.schema.clear();
        if reset_dict {
            self.dict.clear();
        }
    }

    /// The running query's columns (after its batch 0).
    pub fn schema(&self) -> &[Column] {
        &self.schema
    }

    /// Entries of the connection's symbol dictionary.
    pub fn dict_len(&self) -> usize {
        self.dict.len()
    }

    /// Batches of the running query read so far.
    pub fn batches(&self) -> u64 {
        self.next_seq
    }

    /// Decodes one server message. A RESULT_BATCH's rows are fed to `hasher` when given.
    pub fn decode<'a>(
        &mut self,
        frame: &'a [u8],
        hasher: Option<&mut ResultHasher>,
    ) -> Result<Frame<'a>, DecodeError> {
        self.decode_into(frame, hasher)
    }

    /// `decode`, with a RESULT_BATCH's values fed to any `Values` (a `ResultHasher`, or a
    /// reader of one value such as a count).
    pub fn decode_into<'a, V: Values + ?Sized>(
        &mut self,
        frame: &'a [u8],
        hasher: Option<&mut V>,
    ) -> Result<Frame<'a>, DecodeError> {
        let mut r = Reader::new(frame);
        let header = read_header(&mut r)?;
        let at = r.pos();
        let kind = r.u8()?;
        let out = match kind {
            kind::RESULT_BATCH => return self.result_batch(frame, r, header.flags, hasher),
            kind::SERVER_INFO => Frame::ServerInfo(server_info(&mut r)?),
            kind::RESULT_END => Frame::ResultEnd {
                request_id: r.i64()?,
                final_seq: r.varint()?,
                total_rows: r.varint()?,
            },
            kind::QUERY_ERROR => {
                let request_id = r.i64()?;
                let status = r.u8()?;
                let len = r.u16()?;
                let message = String::from_utf8_lossy(r.take(len as usize)?);
                Frame::QueryError {
                    request_id,
                    status,
                    message,
                }
            }
            kind::EXEC_DONE => Frame::ExecDone {
                request_id: r.i64()?,
                op_type: r.u8()?,
                rows_affected: r.varint()?,
            },
            kind::CACHE_RESET => {
                let mask = r.u8()?;
                if mask & RESET_SYMBOL_DICT != 0 {
                    self.dict.clear();
                }
                Frame::CacheReset { mask }
            }
            other => {
                return Err(Malformed {
                    at,
                    what: format!(
                        "message kind 0x{other:02x} ({}) is not one a server sends",
                        kind::name(other)
                    ),
                }
                .into())
            }
        };
        no_trailing(&r, kind)?;
        if let Frame::ResultEnd { final_seq, .. } = out {
            self.check_final_seq(final_seq, at)?;
        }
        if matches!(
            out,
            Frame::ResultEnd { .. } | Frame::ExecDone { .. } | Frame::QueryError { .. }
        ) {
            self.request_id = None;
        }
        Ok(out)
    }

    /// A RESULT_END naming a last batch that never came means batches were lost.
    fn check_final_seq(&self, final_seq: u64, at: usize) -> Result<(), Malformed> {
        if final_seq > 0 && final_seq >= self.next_seq {
            return Err(Malformed {
                at,
                what: format!(
                    "RESULT_END says the last batch was {final_seq}, but {} batch(es) arrived",
                    self.next_seq
                ),
            });
        }
        Ok(())
    }

    fn result_batch<'a, V: Values + ?Sized>(
        &mut self,
        frame: &'a [u8],
        mut r: Reader<'a>,
        flags: u8,
        hasher: Option<&mut V>,
    ) -> Result<Frame<'a>, DecodeError> {
        let at = r.pos();
        let request_id = r.i64()?;
        match self.request_id {
            Some(id) if id == request_id => {}
            Some(id) => {
                return Err(Malformed {
                    at,
                    what: format!("a RESULT_BATCH for request {request_id} while {id} runs"),
                }
                .into())
            }
            None => {
                return Err(Malformed {
                    at,
                    what: format!("a RESULT_BATCH for request {request_id} while none runs"),
                }
                .into())
            }
        }
        let at = r.pos();
        let batch_seq = r.varint()?;
        if batch_seq != self.next_seq {
            return Err(Malformed {
                at,
                what: format!("batch {batch_seq} where batch {} was due", self.next_seq),
            }
            .into());
        }
        if flags & FLAG_ZSTD != 0 {
            return Err(r
                .malformed(
                    "the batch is zstd-compressed, which this client never asks for (it sends \
                     no X-QWP-Accept-Encoding)",
                )
                .into());
        }
        if flags & FLAG_DELTA_SYMBOL_DICT != 0 {
            self.dict.apply_delta(&mut r)?;
        }
        let name_len = r.count("table name length", MAX_TABLE_NAME)?;
        r.take(name_len)?;
        let rows = r.count("row count", MAX_ROWS_PER_BATCH as u64)?;
        if batch_seq == 0 {
            self.read_schema(&mut r)?;
        }
        self.layout(&mut r, rows, flags)?;
        no_trailing(&r, kind::RESULT_BATCH)?;
        self.next_seq = batch_seq + 1;
        if let Some(h) = hasher {
            if let Some(c) = self.schema.iter().find(|c| !hashable(c.code)) {
                return Err(DecodeError::Unhashable(format!(
                    "column `{}` is {}, which has no checksum encoding (cast it to text in \
                     the query)",
                    c.name,
                    types::name(c.code)
                )));
            }
            self.hash_rows(frame, rows, h)?;
        }
        Ok(Frame::ResultBatch {
            request_id,
            batch_seq,
            rows: rows as u64,
        })
    }

    fn read_schema(&mut self, r: &mut Reader<'_>) -> Result<(), Malformed> {
        let at = r.pos();
        let n = r.count("column count", MAX_COLUMNS as u64)?;
        // A column takes at least its name's length byte and its type byte.
        if n > r.remaining() / 2 {
            return Err(Malformed {
                at,
                what: format!("{n} columns but {} bytes follow", r.remaining()),
            });
        }
        self.schema.clear();
        for _ in 0..n {
            let name = r.str()?;
            let at = r.pos();
            let code = r.u8()?;
            if !known_type(code) {
                return Err(Malformed {
                    at,
                    what: format!("column `{name}` has the unknown type code 0x{code:02x}"),
                });
            }
            self.schema.push(Column {
                name: name.to_string(),
                code,
            });
        }
        Ok(())
    }

    /// First pass: every column section checked and skipped, a cursor left at its values.
    fn layout(&mut self, r: &mut Reader<'_>, rows: usize, flags: u8) -> Result<(), Malformed> {
        self.cursors.clear();
        self.local.clear();
        let dict_len = self.dict.len();
        for col in &self.schema {
            let c = section(r, col, rows, flags, dict_len, &mut self.local).map_err(|mut m| {
                m.what = format!(
                    "column `{}` ({}): {}",
                    col.name,
                    types::name(col.code),
                    m.what
                );
                m
            })?;
            self.cursors.push(c);
        }
        Ok(())
    }

    /// Second pass: the rows, each value pulled from its column's cursor and hashed.
    fn hash_rows<V: Values + ?Sized>(
        &mut self,
        frame: &[u8],
        rows: usize,
        h: &mut V,
    ) -> Result<(), Malformed> {
        let Decoder {
            cursors,
            dict,
            local,
            ..
        } = self;
        let src = Source {
            frame,
            dict,
            local: local.as_slice(),
        };
        for row in 0..rows {
            h.begin_row();
            for c in cursors.iter_mut() {
                if c.is_null(frame, row) {
                    h.push_null();
                } else {
                    c.push_next(&src, h)?;
                }
            }
            h.end_row();
        }
        Ok(())
    }
}

fn no_trailing(r: &Reader<'_>, kind: u8) -> Result<(), Malformed> {
    if r.is_empty() {
        Ok(())
    } else {
        Err(r.malformed(format!(
            "{} bytes after the end of the {}",
            r.remaining(),
            kind::name(kind)
        )))
    }
}

fn server_info(r: &mut Reader<'_>) -> Result<ServerInfo, Malformed> {
    let role = r.u8()?;
    let epoch = r.u64()?;
    let capabilities = r.u32()?;
    let server_wall_ns = r.i64()?;
    let cluster_id = short_str(r)?;
    let node_id = short_str(r)?;
    let zone_id = if capabilities & CAP_ZONE != 0 {
        Some(short_str(r)?)
    } else {
        None
    };
    Ok(ServerInfo {
        role,
        epoch,
        capabilities,
        server_wall_ns,
        cluster_id,
        node_id,
        zone_id,
    })
}

/// SERVER_INFO's strings: u16 length, UTF-8.
fn short_str(r: &mut Reader<'_>) -> Result<String, Malformed> {
    let len = r.u16()?;
    let at = r.pos();
    let b = r.take(len as usize)?;
    std::str::from_utf8(b)
        .map(str::to_string)
        .map_err(|_| Malformed {
            at,
            what: "string is not UTF-8".into(),
        })
}

fn known_type(code: u8) -> bool {
    types::name(code) != "unknown"
}

/// Types docs/checksum.md §2.8 gives no encoding.
fn hashable(code: u8) -> bool {
    !matches!(
        code,
        types::BINARY | types::DOUBLE_ARRAY | types::LONG_ARRAY
    )
}

// ------------------------------------------------------------------------------------------------
// The symbol dictionary

/// The connection's symbol dictionary: entries concatenated, with their end offsets.
#[derive(Debug, Default)]
struct Dict {
    text: String,
    ends: Vec<usize>,
}

impl Dict {
    fn len(&self) -> usize {
        self.ends.len()
    }

    fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
    }

    fn get(&self, id: usize) -> Option<&str> {
        let end = *self.ends.get(id)?;
        let start = match id {
            0 => 0,
            _ => *self.ends.get(id - 1)?,
        };
        self.text.get(start..end)
    }

    /// A delta section: entries from `start`, which may repeat known ones (identically) but
    /// not leave a gap.
    fn apply_delta(&mut self, r: &mut Reader<'_>) -> Result<(), Malformed> {
        let at = r.pos();
        let start = r.varint()?;
        // Each entry takes at least its length byte.
        let count = r.count("dictionary entries", r.remaining() as u64)?;
        if start > self.len() as u64 {
            return Err(Malformed {
                at,
                what: format!(
                    "the dictionary delta starts at id {start} but {} ids are known",
                    self.len()
                ),
            });
        }
        let start = start as usize;
        if start.saturating_add(count) > MAX_DICT_ENTRIES {
            return Err(Malformed {
                at,
                what: format!("the symbol dictionary would pass {MAX_DICT_ENTRIES} entries"),
            });
        }
        for k in 0..count {
            let at = r.pos();
            let s = r.str()?;
            let id = start + k;
            match self.get(id) {
                Some(known) if known == s => {}
                Some(known) => {
                    return Err(Malformed {
                        at,
                        what: format!("symbol id {id} is `{known}`, and the delta says `{s}`"),
                    })
                }
                None => {
                    self.text.push_str(s);
                    self.ends.push(self.text.len());
                }
            }
        }
        Ok(())
    }
}

// ------------------------------------------------------------------------------------------------
// Column sections

/// Where one column's values are, and how to read the next one.
#[derive(Clone, Copy, Debug)]
struct Cursor {
    code: u8,
    /// Offset of the null bitmap in the frame.
    bitmap: Option<usize>,
    /// The next value's offset (for `Bits`, the first byte of the packed bits).
    pos: usize,
    shape: Shape,
}

#[derive(Clone, Copy, Debug)]
enum Shape {
    Fixed(usize),
    /// BOOLEAN: the next bit.
    Bits(usize),
    Gorilla(Gorilla),
    /// Varint ids, into the connection's dictionary or, without the delta flag, into the
    /// batch's `local` entries `[first, first + len)`.
    Symbols(Option<(usize, usize)>),
    /// VARCHAR: the next offset entry's position and where the bytes start.
    Varlen {
        data: usize,
    },
    Geohash {
        bits: u8,
        width: usize,
    },
    Decimal {
        scale: u8,
        width: usize,
    },
    /// BINARY and arrays: checked, never hashed.
    Opaque,
}

/// The state of a Gorilla column between values: the two seeds, then the bit stream.
#[derive(Clone, Copy, Debug, Default)]
struct Gorilla {
    seeds: [i64; 2],
    taken: usize,
    prev: i64,
    delta: i64,
    /// The bit stream's first byte and the next bit.
    stream: usize,
    bit: usize,
}

impl Gorilla {
    fn next(&mut self, frame: &[u8]) -> Result<i64, Malformed> {
        let v = if self.taken < 2 {
            let v = self.seeds[self.taken];
            if self.taken == 1 {
                self.delta = v.wrapping_sub(self.prev);
            }
            v
        } else {
            let mut bits = Bits {
                buf: frame.get(self.stream..).unwrap_or_default(),
                at: self.stream,
                bit: self.bit,
            };
            let dod = bits.dod()?;
            self.bit = bits.bit;
            self.delta = self.delta.wrapping_add(dod);
            self.prev.wrapping_add(self.delta)
        };
        self.prev = v;
        self.taken += 1;
        Ok(v)
    }
}

/// An LSB-first bit stream (Gorilla).
struct Bits<'a> {
    buf: &'a [u8],
    /// The stream's offset in the frame, for messages.
    at: usize,
    bit: usize,
}

impl Bits<'_> {
    fn one(&mut self) -> Result<u64, Malformed> {
        let byte = self.buf.get(self.bit / 8).ok_or_else(|| Malformed {
            at: self.at + self.buf.len(),
            what: "the Gorilla bit stream runs past the end of the message".into(),
        })?;
        let v = (byte >> (self.bit % 8)) & 1;
        self.bit += 1;
        Ok(u64::from(v))
    }

    /// `n` bits, least significant first, as an n-bit two's-complement number.
    fn signed(&mut self, n: u32) -> Result<i64, Malformed> {
        let mut v = 0u64;
        for i in 0..n {
            v |= self.one()? << i;
        }
        let shift = 64 - n;
        Ok(((v << shift) as i64) >> shift)
    }

    /// One delta of deltas: `0`, `10`+7, `110`+9, `1110`+12 or `1111`+32 bits.
    fn dod(&mut self) -> Result<i64, Malformed> {
        if self.one()? == 0 {
            return Ok(0);
        }
        if self.one()? == 0 {
            return self.signed(7);
        }
        if self.one()? == 0 {
            return self.signed(9);
        }
        if self.one()? == 0 {
            return self.signed(12);
        }
        self.signed(32)
    }
}

/// Rows of `bitmap` (the first `rows` bits) that are NULL.
fn nulls(bitmap: &[u8], rows: usize) -> usize {
    let full = rows / 8;
    let mut n: usize = bitmap[..full.min(bitmap.len())]
        .iter()
        .map(|b| b.count_ones() as usize)
        .sum();
    if rows % 8 != 0 {
        if let Some(last) = bitmap.get(full) {
            n += (last & ((1u8 << (rows % 8)) - 1)).count_ones() as usize;
        }
    }
    n
}

/// Reads one column section (`rows` rows), checking it, and returns the cursor of its values.
fn section(
    r: &mut Reader<'_>,
    col: &Column,
    rows: usize,
    flags: u8,
    dict_len: usize,
    local: &mut Vec<(usize, usize)>,
) -> Result<Cursor, Malformed> {
    let null_flag = r.u8()?;
    let (bitmap, n) = if null_flag != 0 {
        let at = r.pos();
        let bm = r.take(rows.div_ceil(8))?;
        (Some(at), rows - nulls(bm, rows))
    } else {
        (None, rows)
    };
    let code = col.code;
    let temporal = matches!(
        code,
        types::TIMESTAMP | types::TIMESTAMP_NANOS | types::DATE
    );
    let mut cursor = Cursor {
        code,
        bitmap,
        pos: r.pos(),
        shape: Shape::Opaque,
    };
    if temporal && flags & FLAG_GORILLA != 0 {
        let at = r.pos();
        match r.u8()? {
            0 => {}
            1 => {
                cursor.shape = Shape::Gorilla(gorilla_section(r, n)?);
                cursor.pos = r.pos();
                return Ok(cursor);
            }
            other => {
                return Err(Malformed {
                    at,
                    what: format!("timestamp encoding {other}: neither raw (0) nor Gorilla (1)"),
                })
            }
        }
        cursor.pos = r.pos();
    }
    cursor.shape = match code {
        types::BOOLEAN => {
            r.take(n.div_ceil(8))?;
            Shape::Bits(0)
        }
        types::SYMBOL => {
            let (shape, ids) = symbol_section(r, n, flags, dict_len, local)?;
            cursor.pos = ids;
            shape
        }
        types::VARCHAR | types::BINARY => {
            let data = varlen_section(r, n, code == types::VARCHAR)?;
            Shape::Varlen { data }
        }
        types::GEOHASH => {
            let at = r.pos();
            let bits = r.count("geohash precision", 60)?;
            if bits == 0 {
                return Err(Malformed {
                    at,
                    what: "geohash precision 0".into(),
                });
            }
            cursor.pos = r.pos();
            let width = bits.div_ceil(8);
            fixed_values(r, n, width)?;
            Shape::Geohash {
                bits: bits as u8,
                width,
            }
        }
        types::DECIMAL64 | types::DECIMAL128 | types::DECIMAL256 => {
            let (width, max) = match code {
                types::DECIMAL64 => (8, 18),
                types::DECIMAL128 => (16, 38),
                _ => (32, 76),
            };
            let at = r.pos();
            let scale = r.u8()?;
            if scale > max {
                return Err(Malformed {
                    at,
                    what: format!("decimal scale {scale} past the type's {max}"),
                });
            }
            cursor.pos = r.pos();
            fixed_values(r, n, width)?;
            Shape::Decimal { scale, width }
        }
        types::DOUBLE_ARRAY | types::LONG_ARRAY => {
            array_section(r, n)?;
            Shape::Opaque
        }
        _ => {
            let width = fixed_width(code).ok_or_else(|| r.malformed("no layout for the type"))?;
            fixed_values(r, n, width)?;
            Shape::Fixed(width)
        }
    };
    Ok(cursor)
}

fn fixed_width(code: u8) -> Option<usize> {
    Some(match code {
        types::BYTE => 1,
        types::SHORT | types::CHAR => 2,
        types::INT | types::FLOAT | types::IPV4 => 4,
        types::LONG | types::DOUBLE | types::TIMESTAMP | types::TIMESTAMP_NANOS | types::DATE => 8,
        types::UUID => 16,
        types::LONG256 => 32,
        _ => return None,
    })
}

fn fixed_values(r: &mut Reader<'_>, n: usize, width: usize) -> Result<(), Malformed> {
    let bytes = n
        .checked_mul(width)
        .ok_or_else(|| r.malformed("column size overflows"))?;
    r.take(bytes)?;
    Ok(())
}

/// A Gorilla column: up to two seeds, then (from 3 values on) the bit stream, decoded once
/// here to find where it ends.
fn gorilla_section(r: &mut Reader<'_>, n: usize) -> Result<Gorilla, Malformed> {
    let mut g = Gorilla::default();
    for seed in g.seeds.iter_mut().take(n.min(2)) {
        *seed = r.i64()?;
    }
    g.stream = r.pos();
    if n >= 3 {
        let rest = r.clone().take(r.remaining())?;
        let mut bits = Bits {
            buf: rest,
            at: g.stream,
            bit: 0,
        };
        for _ in 2..n {
            bits.dod()?;
        }
        r.take(bits.bit.div_ceil(8))?;
    }
    Ok(g)
}

fn symbol_section(
    r: &mut Reader<'_>,
    n: usize,
    flags: u8,
    dict_len: usize,
    local: &mut Vec<(usize, usize)>,
) -> Result<(Shape, usize), Malformed> {
    let (limit, shape) = if flags & FLAG_DELTA_SYMBOL_DICT != 0 {
        (dict_len, Shape::Symbols(None))
    } else {
        // A column-local dictionary (the UDP form): no more entries than values.
        let size = r.count("symbol dictionary size", n as u64)?;
        let first = local.len();
        for _ in 0..size {
            let s = r.str()?;
            let end = r.pos();
            local.push((end - s.len(), end));
        }
        (size, Shape::Symbols(Some((first, size))))
    };
    let ids = r.pos();
    for _ in 0..n {
        let at = r.pos();
        let id = r.varint()?;
        if id >= limit as u64 {
            return Err(Malformed {
                at,
                what: format!("symbol id {id} but the dictionary has {limit} entries"),
            });
        }
    }
    Ok((shape, ids))
}

/// VARCHAR/BINARY: `n + 1` u32 offsets from 0, never decreasing, then the bytes; VARCHAR
/// values must be UTF-8. Returns where the bytes start.
fn varlen_section(r: &mut Reader<'_>, n: usize, utf8: bool) -> Result<usize, Malformed> {
    let at = r.pos();
    let table = n
        .checked_add(1)
        .and_then(|k| k.checked_mul(4))
        .ok_or_else(|| r.malformed("offsets overflow"))?;
    let offsets = r.take(table)?;
    let mut prev = 0u32;
    for (i, o) in offsets.chunks_exact(4).enumerate() {
        let o = u32::from_le_bytes([o[0], o[1], o[2], o[3]]);
        if (i == 0 && o != 0) || o < prev {
            return Err(Malformed {
                at: at + 4 * i,
                what: format!("offset {o} after {prev}: offsets start at 0 and never decrease"),
            });
        }
        prev = o;
    }
    let data_at = r.pos();
    let data = r.take(prev as usize)?;
    if utf8 {
        let text = std::str::from_utf8(data).map_err(|e| Malformed {
            at: data_at + e.valid_up_to(),
            what: "a VARCHAR value is not UTF-8".into(),
        })?;
        for o in offsets.chunks_exact(4) {
            let o = u32::from_le_bytes([o[0], o[1], o[2], o[3]]) as usize;
            if !text.is_char_boundary(o) {
                return Err(Malformed {
                    at: data_at + o,
                    what: "a VARCHAR value ends inside a UTF-8 character".into(),
                });
            }
        }
    }
    Ok(data_at)
}

/// Arrays: per value `u8 n_dims` (1..=32), the dims (i32, not negative), the elements.
fn array_section(r: &mut Reader<'_>, n: usize) -> Result<(), Malformed> {
    for _ in 0..n {
        let at = r.pos();
        let dims = r.u8()?;
        if dims == 0 || dims > MAX_ARRAY_DIMS {
            return Err(Malformed {
                at,
                what: format!("an array of {dims} dimensions (1 to {MAX_ARRAY_DIMS})"),
            });
        }
        let mut elements: usize = 1;
        for _ in 0..dims {
            let at = r.pos();
            let d = r.u32()? as i32;
            let d = usize::try_from(d).map_err(|_| Malformed {
                at,
                what: format!("an array dimension of {d}"),
            })?;
            elements = elements.saturating_mul(d);
        }
        let bytes = elements.saturating_mul(8);
        r.take(bytes)?;
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// Hashing values

/// What the second pass reads from besides the cursors.
struct Source<'a> {
    frame: &'a [u8],
    dict: &'a Dict,
    local: &'a [(usize, usize)],
}

impl Source<'_> {
    fn bytes(&self, at: usize, n: usize) -> Result<&[u8], Malformed> {
        self.frame.get(at..at + n).ok_or_else(|| Malformed {
            at,
            what: "a value runs past the end of the message".into(),
        })
    }

    fn array<const N: usize>(&self, at: usize) -> Result<[u8; N], Malformed> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.bytes(at, N)?);
        Ok(a)
    }
}

impl Cursor {
    fn is_null(&self, frame: &[u8], row: usize) -> bool {
        match self.bitmap {
            None => false,
            Some(at) => frame
                .get(at + row / 8)
                .is_some_and(|b| (b >> (row % 8)) & 1 == 1),
        }
    }

    /// Hashes the column's next non-NULL value (by the bitmap) and moves past it.
    fn push_next<V: Values + ?Sized>(
        &mut self,
        src: &Source<'_>,
        h: &mut V,
    ) -> Result<(), Malformed> {
        match &mut self.shape {
            Shape::Fixed(width) => {
                let width = *width;
                let at = self.pos;
                self.pos += width;
                push_fixed(self.code, src.bytes(at, width)?, h);
            }
            Shape::Bits(bit) => {
                let byte = src.bytes(self.pos + *bit / 8, 1)?[0];
                h.push_bool((byte >> (*bit % 8)) & 1 == 1);
                *bit += 1;
            }
            Shape::Gorilla(g) => push_temporal(self.code, g.next(src.frame)?, h),
            Shape::Symbols(local) => {
                let mut r = Reader::new(src.frame.get(self.pos..).unwrap_or_default());
                let id = r.varint().map_err(|m| Malformed {
                    at: self.pos + m.at,
                    what: m.what,
                })?;
                let at = self.pos;
                self.pos += r.pos();
                let text = match local {
                    None => usize::try_from(id).ok().and_then(|i| src.dict.get(i)),
                    Some((first, len)) => usize::try_from(id)
                        .ok()
                        .filter(|i| i < len)
                        .and_then(|i| src.local.get(*first + i))
                        .and_then(|&(s, e)| src.frame.get(s..e))
                        .and_then(|b| std::str::from_utf8(b).ok()),
                };
                let text = text.ok_or_else(|| Malformed {
                    at,
                    what: format!("symbol id {id} is not in the dictionary"),
                })?;
                h.push_text(text);
            }
            Shape::Varlen { data } => {
                let start = u32::from_le_bytes(src.array(self.pos)?) as usize;
                let end = u32::from_le_bytes(src.array(self.pos + 4)?) as usize;
                self.pos += 4;
                let len = end.checked_sub(start).ok_or_else(|| Malformed {
                    at: self.pos,
                    what: "offsets decrease".into(),
                })?;
                h.push_text_bytes(src.bytes(*data + start, len)?);
            }
            Shape::Geohash { bits, width } => {
                let (bits, width) = (*bits, *width);
                let at = self.pos;
                self.pos += width;
                push_geohash(src.bytes(at, width)?, bits, h);
            }
            Shape::Decimal { scale, width } => {
                let (scale, width) = (*scale, *width);
                let at = self.pos;
                self.pos += width;
                push_decimal(src.bytes(at, width)?, scale, h);
            }
            Shape::Opaque => {
                return Err(Malformed {
                    at: self.pos,
                    what: format!(
                        "{} values have no checksum encoding",
                        types::name(self.code)
                    ),
                })
            }
        }
        Ok(())
    }
}

fn le<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    let n = N.min(b.len());
    a[..n].copy_from_slice(&b[..n]);
    a
}

/// A fixed-width value, NULL sentinels as NULL (spec §5.4; docs/checksum.md §6).
fn push_fixed<V: Values + ?Sized>(code: u8, b: &[u8], h: &mut V) {
    match code {
        types::BYTE => h.push_i64(i64::from(i8::from_le_bytes(le(b)))),
        types::SHORT => h.push_i64(i64::from(i16::from_le_bytes(le(b)))),
        types::INT => match i32::from_le_bytes(le(b)) {
            i32::MIN => h.push_null(),
            v => h.push_i64(i64::from(v)),
        },
        types::LONG => match i64::from_le_bytes(le(b)) {
            i64::MIN => h.push_null(),
            v => h.push_i64(v),
        },
        types::FLOAT => match f32::from_le_bytes(le(b)) {
            v if v.is_nan() => h.push_null(),
            v => h.push_f32(v),
        },
        types::DOUBLE => match f64::from_le_bytes(le(b)) {
            v if v.is_nan() => h.push_null(),
            v => h.push_f64(v),
        },
        types::TIMESTAMP | types::TIMESTAMP_NANOS | types::DATE => {
            push_temporal(code, i64::from_le_bytes(le(b)), h)
        }
        types::CHAR => push_char(u16::from_le_bytes(le(b)), h),
        types::IPV4 => push_ipv4(u32::from_le_bytes(le(b)), h),
        types::UUID => push_uuid(b, h),
        types::LONG256 => push_long256(b, h),
        _ => h.push_null(),
    }
}

/// TIMESTAMP (µs), TIMESTAMP_NANOS (floored to µs), DATE (ms); `i64::MIN` is NULL.
fn push_temporal<V: Values + ?Sized>(code: u8, v: i64, h: &mut V) {
    if v == i64::MIN {
        return h.push_null();
    }
    let us = match code {
        types::TIMESTAMP_NANOS => v.div_euclid(1000),
        types::DATE => v.saturating_mul(1000),
        _ => v,
    };
    h.push_timestamp_us(us);
}

/// CHAR: one UTF-16 code unit as its text; QuestDB's NULL CHAR (0) prints as nothing and a
/// lone surrogate has no UTF-8 form (U+FFFD stands in).
fn push_char<V: Values + ?Sized>(c: u16, h: &mut V) {
    if c == 0 {
        return h.push_text("");
    }
    let ch = char::from_u32(u32::from(c)).unwrap_or(char::REPLACEMENT_CHARACTER);
    let mut buf = [0u8; 4];
    h.push_text(ch.encode_utf8(&mut buf));
}

/// IPv4: dotted quad, first octet in the high byte; 0 is NULL.
fn push_ipv4<V: Values + ?Sized>(v: u32, h: &mut V) {
    if v == 0 {
        return h.push_null();
    }
    let mut t = Text::new();
    for (i, octet) in v.to_be_bytes().iter().enumerate() {
        if i > 0 {
            t.push(b'.');
        }
        t.decimal(u128::from(*octet));
    }
    h.push_text_bytes(t.as_bytes());
}

/// UUID: low half then high half on the wire; PostgreSQL's text form; both halves
/// `i64::MIN` is NULL.
fn push_uuid<V: Values + ?Sized>(b: &[u8], h: &mut V) {
    let lo = u64::from_le_bytes(le(b));
    let hi = u64::from_le_bytes(le(b.get(8..).unwrap_or_default()));
    let null = i64::MIN as u64;
    if lo == null && hi == null {
        return h.push_null();
    }
    let mut t = Text::new();
    let digits = (u128::from(hi) << 64) | u128::from(lo);
    for i in (0..32).rev() {
        if matches!(i, 23 | 19 | 15 | 11) {
            t.push(b'-');
        }
        t.push(HEX[((digits >> (i * 4)) & 0xF) as usize]);
    }
    h.push_text_bytes(t.as_bytes());
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// LONG256 as QuestDB prints it: `0x`, then the hex digits without leading zeros but an even
/// number of them; four `i64::MIN` words are NULL.
fn push_long256<V: Values + ?Sized>(b: &[u8], h: &mut V) {
    let words: [u64; 4] =
        std::array::from_fn(|i| u64::from_le_bytes(le(b.get(i * 8..).unwrap_or_default())));
    if words.iter().all(|&w| w == i64::MIN as u64) {
        return h.push_null();
    }
    let mut t = Text::new();
    t.push(b'0');
    t.push(b'x');
    let top = words.iter().rposition(|&w| w != 0).unwrap_or(0);
    for (i, &w) in words[..=top].iter().enumerate().rev() {
        let digits = if i == top {
            let nibbles = (64 - (w | 1).leading_zeros()).div_ceil(4);
            nibbles + (nibbles & 1)
        } else {
            16
        };
        for k in (0..digits).rev() {
            t.push(HEX[((w >> (k * 4)) & 0xF) as usize]);
        }
    }
    h.push_text_bytes(t.as_bytes());
}

/// GEOHASH as QuestDB prints it: base-32 characters when the precision is a multiple of 5
/// bits, else the bits as `0`/`1`; all ones is NULL.
fn push_geohash<V: Values + ?Sized>(b: &[u8], bits: u8, h: &mut V) {
    const BASE32: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    if b.iter().all(|&x| x == 0xFF) {
        return h.push_null();
    }
    let v = u64::from_le_bytes(le(b));
    let mut t = Text::new();
    if bits % 5 == 0 {
        for i in (0..bits / 5).rev() {
            t.push(BASE32[((v >> (u32::from(i) * 5)) & 31) as usize]);
        }
    } else {
        for i in (0..bits).rev() {
            t.push(if (v >> i) & 1 == 1 { b'1' } else { b'0' });
        }
    }
    h.push_text_bytes(t.as_bytes());
}

/// DECIMAL64/128/256: the unscaled two's-complement value over 10^scale, read through its
/// text as every other transport reads decimals (`canonical_decimal`); the type's sentinel
/// (every 64-bit word `i64::MIN`) is NULL.
fn push_decimal<V: Values + ?Sized>(b: &[u8], scale: u8, h: &mut V) {
    let null = b
        .chunks(8)
        .all(|w| u64::from_le_bytes(le(w)) == i64::MIN as u64);
    if null {
        return h.push_null();
    }
    let mut t = Text::new();
    let negative = b.last().is_some_and(|&x| x & 0x80 != 0);
    if negative {
        t.push(b'-');
    }
    let mut digits = Text::new();
    magnitude_digits(b, negative, &mut digits);
    let d = digits.as_bytes();
    let scale = usize::from(scale);
    if scale == 0 {
        t.extend(d);
    } else if d.len() > scale {
        t.extend(&d[..d.len() - scale]);
        t.push(b'.');
        t.extend(&d[d.len() - scale..]);
    } else {
        t.extend(b"0.");
        for _ in d.len()..scale {
            t.push(b'0');
        }
        t.extend(d);
    }
    match std::str::from_utf8(t.as_bytes())
        .ok()
        .and_then(canonical_decimal)
    {
        Some(n) => h.push_number(n),
        None => h.push_null(),
    }
}

/// The decimal digits of |v|, v a little-endian two's-complement integer of 8, 16 or 32
/// bytes.
fn magnitude_digits(b: &[u8], negative: bool, out: &mut Text) {
    let mut limbs: [u64; 4] =
        std::array::from_fn(|i| u64::from_le_bytes(le(b.get(i * 8..).unwrap_or_default())));
    let used = b.len().div_ceil(8).min(4);
    if negative {
        // Sign-extend, then negate: the magnitude.
        for l in limbs.iter_mut().skip(used) {
            *l = u64::MAX;
        }
        let mut carry = true;
        for l in limbs.iter_mut() {
            let (v, c) = (!*l).overflowing_add(u64::from(carry));
            *l = v;
            carry = c;
        }
    }
    // Repeated division by 10^19, least significant chunk first.
    const CHUNK: u64 = 10_000_000_000_000_000_000;
    let mut chunks = [0u64; 5];
    let mut n = 0;
    loop {
        let mut rem: u128 = 0;
        for l in limbs.iter_mut().rev() {
            let cur = (rem << 64) | u128::from(*l);
            *l = (cur / u128::from(CHUNK)) as u64;
            rem = cur % u128::from(CHUNK);
        }
        chunks[n] = rem as u64;
        n += 1;
        if limbs.iter().all(|&l| l == 0) || n == chunks.len() {
            break;
        }
    }
    out.decimal(u128::from(chunks[n - 1]));
    for &c in chunks[..n - 1].iter().rev() {
        let mut part = Text::new();
        part.decimal(u128::from(c));
        for _ in part.as_bytes().len()..19 {
            out.push(b'0');
        }
        out.extend(part.as_bytes());
    }
}

/// Text built on the stack (the longest: a DECIMAL256 with its point and sign, 80 bytes).
struct Text {
    buf: [u8; 96],
    len: usize,
}

impl Text {
    fn new() -> Text {
        Text {
            buf: [0; 96],
            len: 0,
        }
    }

    fn push(&mut self, b: u8) {
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = b;
            self.len += 1;
        }
    }

    fn extend(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.push(b);
        }
    }

    fn decimal(&mut self, mut v: u128) {
        let mut tmp = [0u8; 40];
        let mut i = tmp.len();
        loop {
            i -= 1;
            tmp[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.extend(&tmp[i..]);
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

#[cfg(test)]
mod tests;
