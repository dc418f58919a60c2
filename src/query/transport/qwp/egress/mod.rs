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

//!
//! The files follow the message's layers: `request` writes the client's messages, `frames`
//! reads each server message and keeps the connection's state (`Decoder`), `dict` is the
//! symbol dictionary, `columns` the column sections (the first pass's checks and the cursors
//! the second pass walks), `values` turns one wire value into checksum terms.

mod columns;
mod dict;
mod frames;
mod request;
mod values;

pub use frames::{Column, DecodeError, Decoder, Frame, ServerInfo};
pub use request::{encode_credit, encode_query_request};
pub use values::Values;

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

#[cfg(test)]
mod tests;
