//! Reading one server message: SERVER_INFO, the terminators, CACHE_RESET, and RESULT_BATCH,
//! whose two passes run from here (`Decoder::layout`, `Decoder::hash_rows`) over the
//! sections `columns` reads. The `Decoder` keeps what the protocol makes connection-scoped.

use std::borrow::Cow;

use super::columns::{section, Cursor, Source};
use super::dict::Dict;
use super::values::Values;
use super::{kind, CAP_QUERY_FLAGS, CAP_ZONE, MAX_COLUMNS, MAX_ROWS_PER_BATCH, RESET_SYMBOL_DICT};
use crate::query::checksum::ResultHasher;
use crate::qwp::{read_header, types, Malformed, Reader, FLAG_DELTA_SYMBOL_DICT, FLAG_ZSTD};

/// Results have no table name; anything longer than a table name could be is malformed.
const MAX_TABLE_NAME: u64 = 127;
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
