//! An in-test QWP ingestion server (QuestDB's binary columnar protocol over WebSocket), strict
//! by the protocol notes (`shared/reference/qwp.md` §1-§4): it listens on an ephemeral port of
//! 127.0.0.1, upgrades `GET /write/v4` and `GET /api/v4/write`, decodes every `DATA_BATCH`
//! message it receives and keeps the decoded rows per table, so tests can compare what two
//! clients wrote. Its decoding is written from the notes alone and shares no code with
//! `wlrun::qwp` or `wlrun::encode`: it is the independent check of them.
//!
//! Upgrade: any other path gets a 404; a request without a numeric `X-QWP-Max-Version` (>= 1)
//! gets a 400; both are kept in `upgrade_failures()`. The 101 carries `X-QWP-Version: 1` and
//! `X-QWP-Max-Batch-Size: <Config::max_batch_size>` (default 2,097,138, the real server's).
//!
//! WebSocket rules, as the real server applies them: a message longer than `max_batch_size` is
//! refused as soon as its frame header announces it, with Close 1009; an unmasked client frame,
//! non-zero RSV bits or any other framing violation get Close 1002; a text message gets Close
//! 1003. PING is answered with PONG, Close with Close (the client's code echoed). Each of these
//! violations is also kept in `malformed()`.
//!
//! Messages are decoded strictly: magic `QWP1`, version 1, no reserved flag bit (only
//! `0x01` DEFER_COMMIT, `0x04` GORILLA and `0x08` DELTA_SYMBOL_DICT), `payload_length` exact,
//! the delta symbol dictionary (a start past the connection's dictionary is `DICTIONARY_GAP`
//! 0x0D; re-sent ids must carry the identical string; at most 2,000,000 entries), table blocks
//! (names 1..=127 bytes, at most 1,000,000 rows and 2048 columns, column names 0..=127 bytes and
//! unique, the empty name only for a TIMESTAMP or TIMESTAMP_NANOS designated timestamp), every
//! column type of §3.5 (null bitmap with zero padding bits and values only for non-null rows;
//! sentinel mode with a value for every row; Gorilla timestamps; offsets of VARCHAR/BINARY
//! starting at 0, non-decreasing, ending at the data length, VARCHAR valid UTF-8; symbol ids
//! inside the dictionary; geohash values inside their precision or the all-ones sentinel;
//! array dimensions 1..=32 and non-negative; decimal scales in range; boolean padding bits
//! zero) and nothing after the last table. A malformed message is answered with PARSE_ERROR
//! (0x05) and a message saying what was wrong, applies nothing, and is kept in `malformed()`;
//! the connection stays open (unless `Config::close_on_error`). A column whose type differs
//! from the type the table already has gets SCHEMA_MISMATCH (0x03) and applies nothing (not a
//! malformed message: the real server does the same to a well-formed message).
//!
//! Rows: a message without DEFER_COMMIT commits its rows and those of the deferred messages
//! before it on the connection; deferred rows are dropped when the connection ends first or a
//! message of it is refused; their OKs go out like any other (as QuestDB 9.4 did), or, with
//! `Config::hold_deferred_acks`, not at all: the commit's cumulative OK covers them (as 10.x
//! does). Each connection counts its commits and the most rows it held uncommitted. Tables are merged over all connections (`tables()`): a column that
//! a message leaves out is NULL for its rows, a column that appears later is NULL for earlier
//! rows. The designated timestamp (the column named "") is kept under the name `DESIGNATED`.
//! Values are kept as the wire has them (a NaN sent for a NULL double stays NaN; `Cell::is_null`
//! and `same_tables` know the sentinels).
//!
//! Replies (§4): OK = `00 | seq i64 | u16 n | n x (u16 len, name, seqTxn i64)`, cumulative; the
//! table list is empty unless `Config::ok_lists_tables` (then every table the acknowledged
//! messages committed, with its seqTxn: 1 for a table's first committed message, +1 for each
//! later one, over all connections). Error = `status | seq i64 | u16 len | msg`. When the OKs go
//! out is `Config::ack` (`AckMode`). Faults: `error_at` answers one message with an error of the
//! test's choosing, `close_after` drops the TCP connection after a message without answering it.
//!
//! The server runs on its own thread with its own single-threaded tokio runtime, so it serves
//! plain `#[test]`s as well as `#[tokio::test]`s; dropping the `QwpServer` stops it and closes
//! every connection. Use with `#[path = "common/qwp_ingest_server.rs"] mod qwp_ingest_server;`.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{error::ProtocolError, Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;

/// The paths the ingestion endpoint answers on (§1.1).
pub const PATHS: [&str; 2] = ["/write/v4", "/api/v4/write"];
/// The real server's `X-QWP-Max-Batch-Size` with its default 2 MiB receive buffer (§1.2).
pub const DEFAULT_MAX_BATCH_SIZE: usize = 2_097_138;
/// How many OKs the real server holds back before it sends one cumulative OK (§4.1).
pub const ACK_BATCH_SIZE: usize = 8;
/// The name the designated timestamp (the column named "") is kept under.
pub const DESIGNATED: &str = "<designated ts>";

/// Limits of §7.
pub const MAX_ROWS_PER_TABLE: u64 = 1_000_000;
pub const MAX_COLUMNS: u64 = 2048;
pub const MAX_NAME_BYTES: usize = 127;
pub const MAX_DICTIONARY: u64 = 2_000_000;
pub const MAX_TABLES_PER_CONNECTION: usize = 10_000;
/// Error messages are cut to this many bytes (the Rust client refuses longer ones).
pub const MAX_ERROR_MESSAGE: usize = 1024;

/// Header flags (§3.1).
pub const FLAG_DEFER_COMMIT: u8 = 0x01;
pub const FLAG_GORILLA: u8 = 0x04;
pub const FLAG_DELTA_SYMBOL_DICT: u8 = 0x08;

/// Status codes (§4.5).
pub const STATUS_OK: u8 = 0x00;
pub const STATUS_SCHEMA_MISMATCH: u8 = 0x03;
pub const STATUS_PARSE_ERROR: u8 = 0x05;
pub const STATUS_INTERNAL_ERROR: u8 = 0x06;
pub const STATUS_SECURITY_ERROR: u8 = 0x08;
pub const STATUS_WRITE_ERROR: u8 = 0x09;
pub const STATUS_DICTIONARY_GAP: u8 = 0x0D;

/// Column type codes (§3.5).
pub mod ty {
    pub const BOOLEAN: u8 = 0x01;
    pub const BYTE: u8 = 0x02;
    pub const SHORT: u8 = 0x03;
    pub const INT: u8 = 0x04;
    pub const LONG: u8 = 0x05;
    pub const FLOAT: u8 = 0x06;
    pub const DOUBLE: u8 = 0x07;
    pub const SYMBOL: u8 = 0x09;
    pub const TIMESTAMP: u8 = 0x0A;
    pub const DATE: u8 = 0x0B;
    pub const UUID: u8 = 0x0C;
    pub const LONG256: u8 = 0x0D;
    pub const GEOHASH: u8 = 0x0E;
    pub const VARCHAR: u8 = 0x0F;
    pub const TIMESTAMP_NANOS: u8 = 0x10;
    pub const DOUBLE_ARRAY: u8 = 0x11;
    pub const LONG_ARRAY: u8 = 0x12;
    pub const DECIMAL64: u8 = 0x13;
    pub const DECIMAL128: u8 = 0x14;
    pub const DECIMAL256: u8 = 0x15;
    pub const CHAR: u8 = 0x16;
    pub const BINARY: u8 = 0x17;
    pub const IPV4: u8 = 0x18;
}

/// The name of a type code, as the notes spell it ("0x08?" for an unknown one).
pub fn type_name(code: u8) -> String {
    let name = match code {
        ty::BOOLEAN => "BOOLEAN",
        ty::BYTE => "BYTE",
        ty::SHORT => "SHORT",
        ty::INT => "INT",
        ty::LONG => "LONG",
        ty::FLOAT => "FLOAT",
        ty::DOUBLE => "DOUBLE",
        ty::SYMBOL => "SYMBOL",
        ty::TIMESTAMP => "TIMESTAMP",
        ty::DATE => "DATE",
        ty::UUID => "UUID",
        ty::LONG256 => "LONG256",
        ty::GEOHASH => "GEOHASH",
        ty::VARCHAR => "VARCHAR",
        ty::TIMESTAMP_NANOS => "TIMESTAMP_NANOS",
        ty::DOUBLE_ARRAY => "DOUBLE_ARRAY",
        ty::LONG_ARRAY => "LONG_ARRAY",
        ty::DECIMAL64 => "DECIMAL64",
        ty::DECIMAL128 => "DECIMAL128",
        ty::DECIMAL256 => "DECIMAL256",
        ty::CHAR => "CHAR",
        ty::BINARY => "BINARY",
        ty::IPV4 => "IPv4",
        other => return format!("0x{other:02x}?"),
    };
    name.to_string()
}

// ------------------------------------------------------------------------------------------
// Configuration
// ------------------------------------------------------------------------------------------

/// When OKs go out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AckMode {
    /// One OK per message, as soon as it is processed.
    Each,
    /// Like the real server: OKs are held until `ACK_BATCH_SIZE` (8) messages are pending, or
    /// a PING or a Close arrives, or the client has sent nothing for `Config::group_idle`; then
    /// one cumulative OK goes out for everything processed. An error reply first sends the
    /// held OK.
    Grouped,
    /// Every reply (OK or error) goes out this long after its message arrived, in order.
    Delayed(Duration),
    /// No OK at all (errors are still sent): for the client's close/drain timeout.
    Never,
}

#[derive(Clone, Debug)]
pub struct Config {
    pub ack: AckMode,
    /// `AckMode::Grouped`: the held OK also goes out once the client has been quiet this long
    /// after its last message; `None`: only after 8 messages, a PING or a Close.
    pub group_idle: Option<Duration>,
    /// The largest message accepted (bigger: Close 1009), and the `X-QWP-Max-Batch-Size`.
    pub max_batch_size: usize,
    /// Whether the 101 carries `X-QWP-Max-Batch-Size` (older servers leave it out).
    pub advertise_max_batch_size: bool,
    /// `(seq, status, message)`: answer message `seq` of a connection with this error instead
    /// of an OK; its rows are not applied (its dictionary entries are).
    pub error_at: Option<(u64, u8, String)>,
    /// After any error reply, close the connection: Close 1000 after an injected error,
    /// 1002 after a malformed message, 1003 after a schema mismatch. Else it stays open and
    /// later messages are processed and acknowledged.
    pub close_on_error: bool,
    /// Drop the TCP connection right after receiving message `seq` of a connection, without
    /// answering it (and without sending OKs still held back or delayed).
    pub close_after: Option<u64>,
    /// `error_at` and `close_after` act only once per server (on the first connection that
    /// reaches the seq), so a client that reconnects and replays gets through.
    pub faults_once: bool,
    /// OKs list the tables of the acknowledged messages with their seqTxn (else n = 0).
    pub ok_lists_tables: bool,
    /// As QuestDB 10.x: no OK for a deferred message (DEFER_COMMIT); the cumulative OK of the
    /// message that commits covers it. Else (9.4) every deferred message gets its OK.
    pub hold_deferred_acks: bool,
    /// Keep every binary message's bytes in `ConnStats::raw` (for another decoder to read).
    pub keep_messages: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            ack: AckMode::Each,
            group_idle: Some(Duration::from_millis(20)),
            max_batch_size: DEFAULT_MAX_BATCH_SIZE,
            advertise_max_batch_size: true,
            error_at: None,
            close_on_error: false,
            close_after: None,
            faults_once: false,
            ok_lists_tables: false,
            hold_deferred_acks: false,
            keep_messages: false,
        }
    }
}

impl Config {
    pub fn with_ack(mut self, ack: AckMode) -> Config {
        self.ack = ack;
        self
    }

    pub fn with_group_idle(mut self, idle: Option<Duration>) -> Config {
        self.group_idle = idle;
        self
    }

    pub fn with_max_batch_size(mut self, bytes: usize) -> Config {
        self.max_batch_size = bytes;
        self
    }

    pub fn with_error_at(mut self, seq: u64, status: u8, message: &str) -> Config {
        self.error_at = Some((seq, status, message.to_string()));
        self
    }

    pub fn with_close_on_error(mut self, close: bool) -> Config {
        self.close_on_error = close;
        self
    }

    pub fn with_close_after(mut self, seq: u64) -> Config {
        self.close_after = Some(seq);
        self
    }

    pub fn with_faults_once(mut self, once: bool) -> Config {
        self.faults_once = once;
        self
    }

    pub fn with_ok_lists_tables(mut self, list: bool) -> Config {
        self.ok_lists_tables = list;
        self
    }

    pub fn with_hold_deferred_acks(mut self, hold: bool) -> Config {
        self.hold_deferred_acks = hold;
        self
    }

    pub fn with_keep_messages(mut self, keep: bool) -> Config {
        self.keep_messages = keep;
        self
    }
}

// ------------------------------------------------------------------------------------------
// What the server keeps
// ------------------------------------------------------------------------------------------

/// One value as the wire carried it.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// A row marked NULL in the column's bitmap (or absent from the message, or from the rows
    /// before the column existed).
    Null,
    Bool(bool),
    /// BYTE, SHORT, INT, LONG, DATE (ms), TIMESTAMP (us), TIMESTAMP_NANOS (ns), CHAR (the UTF-16
    /// unit), IPv4 (the u32).
    Long(i64),
    /// FLOAT (widened exactly) and DOUBLE.
    Double(f64),
    /// SYMBOL (resolved through the dictionary) and VARCHAR.
    Str(String),
    /// BINARY; UUID (16 bytes: low u64 LE, high u64 LE) and LONG256 (32 bytes) as sent.
    Bytes(Vec<u8>),
    /// GEOHASH: the value and the column's precision in bits.
    Geohash {
        value: u64,
        bits: u8,
    },
    /// DECIMAL64/128/256: the unscaled two's-complement value (LE, 8/16/32 bytes) and the scale.
    Decimal {
        unscaled_le: Vec<u8>,
        scale: u8,
    },
    DoubleArray {
        dims: Vec<i32>,
        values: Vec<f64>,
    },
    LongArray {
        dims: Vec<i32>,
        values: Vec<i64>,
    },
}

impl Cell {
    /// Whether the value is NULL for a column of type `type_code`: a bitmap NULL, or the type's
    /// NULL sentinel (§3.5: NaN for FLOAT/DOUBLE, `MIN` for INT/LONG/DATE/TIMESTAMP*, 0 for
    /// IPv4, all-ones for GEOHASH, `i64::MIN` halves for UUID/LONG256). BOOLEAN, BYTE, SHORT and
    /// CHAR have no NULL: there a NULL reads as false / 0 (`canonical` maps both the same way).
    pub fn is_null(&self, type_code: u8) -> bool {
        match self {
            Cell::Null => true,
            Cell::Double(x) => x.is_nan(),
            Cell::Long(v) => match type_code {
                ty::INT => *v == i64::from(i32::MIN),
                ty::LONG | ty::DATE | ty::TIMESTAMP | ty::TIMESTAMP_NANOS => *v == i64::MIN,
                ty::IPV4 => *v == 0,
                _ => false,
            },
            Cell::Geohash { value, bits } => *value == geohash_sentinel(*bits),
            Cell::Bytes(b) => {
                (type_code == ty::UUID || type_code == ty::LONG256)
                    && b.chunks(8).all(|w| w == i64::MIN.to_le_bytes())
            }
            _ => false,
        }
    }

    /// Equality where NaN equals NaN (bit patterns aside).
    pub fn same(&self, other: &Cell) -> bool {
        match (self, other) {
            (Cell::Double(a), Cell::Double(b)) => (a.is_nan() && b.is_nan()) || a == b,
            (
                Cell::DoubleArray {
                    dims: d1,
                    values: v1,
                },
                Cell::DoubleArray {
                    dims: d2,
                    values: v2,
                },
            ) => {
                d1 == d2
                    && v1.len() == v2.len()
                    && v1
                        .iter()
                        .zip(v2)
                        .all(|(a, b)| (a.is_nan() && b.is_nan()) || a == b)
            }
            _ => self == other,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Cell::Long(v) => Some(*v),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Cell::Double(v) => Some(*v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Cell::Str(s) => Some(s),
            _ => None,
        }
    }
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cell::Null => write!(f, "NULL"),
            Cell::Bool(b) => write!(f, "{b}"),
            Cell::Long(v) => write!(f, "{v}"),
            Cell::Double(v) => write!(f, "{v:?}"),
            Cell::Str(s) => write!(f, "{s:?}"),
            Cell::Bytes(b) => write!(f, "0x{}", hex(b)),
            Cell::Geohash { value, bits } => write!(f, "geohash({value:#x}/{bits})"),
            Cell::Decimal { unscaled_le, scale } => {
                write!(f, "decimal(0x{} e-{scale})", hex(unscaled_le))
            }
            Cell::DoubleArray { dims, values } => write!(f, "{dims:?}{values:?}"),
            Cell::LongArray { dims, values } => write!(f, "{dims:?}{values:?}"),
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn geohash_sentinel(bits: u8) -> u64 {
    let width = usize::from(bits).div_ceil(8);
    if width >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * width)) - 1
    }
}

/// One column of a table, all its rows.
#[derive(Clone, Debug)]
pub struct Column {
    /// As sent; the designated timestamp (sent as "") is `DESIGNATED`.
    pub name: String,
    pub type_code: u8,
    pub designated: bool,
    /// One cell per row of the table.
    pub cells: Vec<Cell>,
    /// How many column sections came with a null bitmap, and how many without (sentinel mode).
    pub bitmap_sections: usize,
    pub plain_sections: usize,
}

impl Column {
    /// The rows whose cell is NULL by `Cell::is_null` (bitmap or sentinel).
    pub fn null_rows(&self) -> Vec<usize> {
        (0..self.cells.len())
            .filter(|&i| self.cells[i].is_null(self.type_code))
            .collect()
    }
}

/// A table as the server has it: column-major, every column `row_count` cells long.
#[derive(Clone, Debug, Default)]
pub struct Table {
    pub name: String,
    /// In the order they first appeared.
    pub columns: Vec<Column>,
    pub row_count: usize,
}

impl Table {
    fn new(name: &str) -> Table {
        Table {
            name: name.to_string(),
            columns: Vec::new(),
            row_count: 0,
        }
    }

    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// The cells of a column; panics (a test's failure) if there is no such column.
    pub fn values(&self, name: &str) -> &[Cell] {
        match self.column(name) {
            Some(c) => &c.cells,
            None => panic!(
                "table {} has no column {name:?}; it has {:?}",
                self.name,
                self.schema()
            ),
        }
    }

    /// `(name, type code)` in column order.
    pub fn schema(&self) -> Vec<(String, u8)> {
        self.columns
            .iter()
            .map(|c| (c.name.clone(), c.type_code))
            .collect()
    }

    /// `(name, type name)` sorted by name: the structure, whatever the column order.
    pub fn structure(&self) -> Vec<(String, String)> {
        let mut s: Vec<(String, String)> = self
            .columns
            .iter()
            .map(|c| (c.name.clone(), type_name(c.type_code)))
            .collect();
        s.sort();
        s
    }

    /// Row `i`, in column order.
    pub fn row(&self, i: usize) -> Vec<Cell> {
        self.columns.iter().map(|c| c.cells[i].clone()).collect()
    }

    pub fn rows(&self) -> Vec<Vec<Cell>> {
        (0..self.row_count).map(|i| self.row(i)).collect()
    }

    fn append(&mut self, block: Block) {
        let before = self.row_count;
        for c in block.columns {
            let name = if c.name.is_empty() {
                DESIGNATED.to_string()
            } else {
                c.name
            };
            let at = match self.columns.iter().position(|x| x.name == name) {
                Some(at) => at,
                None => {
                    self.columns.push(Column {
                        name,
                        type_code: c.type_code,
                        designated: c.designated,
                        cells: vec![Cell::Null; before],
                        bitmap_sections: 0,
                        plain_sections: 0,
                    });
                    self.columns.len() - 1
                }
            };
            let col = &mut self.columns[at];
            col.cells.extend(c.cells);
            if c.bitmap {
                col.bitmap_sections += 1;
            } else {
                col.plain_sections += 1;
            }
        }
        self.row_count = before + block.rows;
        for col in &mut self.columns {
            col.cells.resize(self.row_count, Cell::Null);
        }
    }
}

/// A reply the server sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Cumulative: every message up to `seq` is done.
    Ok {
        seq: i64,
        tables: Vec<(String, i64)>,
    },
    Error {
        seq: i64,
        status: u8,
        message: String,
    },
}

impl Reply {
    /// The wire bytes (§4.2, §4.3).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Reply::Ok { seq, tables } => {
                out.push(STATUS_OK);
                out.extend_from_slice(&seq.to_le_bytes());
                out.extend_from_slice(&(tables.len() as u16).to_le_bytes());
                for (name, txn) in tables {
                    out.extend_from_slice(&(name.len() as u16).to_le_bytes());
                    out.extend_from_slice(name.as_bytes());
                    out.extend_from_slice(&txn.to_le_bytes());
                }
            }
            Reply::Error {
                seq,
                status,
                message,
            } => {
                out.push(*status);
                out.extend_from_slice(&seq.to_le_bytes());
                out.extend_from_slice(&(message.len() as u16).to_le_bytes());
                out.extend_from_slice(message.as_bytes());
            }
        }
        out
    }

    /// Parses a reply frame (for test clients); `None` if it is not one.
    pub fn decode(b: &[u8]) -> Option<Reply> {
        let status = *b.first()?;
        let seq = i64::from_le_bytes(b.get(1..9)?.try_into().ok()?);
        let n = usize::from(u16::from_le_bytes(b.get(9..11)?.try_into().ok()?));
        if status == STATUS_OK {
            let mut p = 11;
            let mut tables = Vec::new();
            for _ in 0..n {
                let len = usize::from(u16::from_le_bytes(b.get(p..p + 2)?.try_into().ok()?));
                let name = std::str::from_utf8(b.get(p + 2..p + 2 + len)?).ok()?;
                let txn = i64::from_le_bytes(b.get(p + 2 + len..p + 10 + len)?.try_into().ok()?);
                tables.push((name.to_string(), txn));
                p += 10 + len;
            }
            (p == b.len()).then_some(Reply::Ok { seq, tables })
        } else {
            let message = std::str::from_utf8(b.get(11..11 + n)?).ok()?;
            (11 + n == b.len()).then(|| Reply::Error {
                seq,
                status,
                message: message.to_string(),
            })
        }
    }
}

/// What one connection saw.
#[derive(Clone, Debug, Default)]
pub struct ConnStats {
    /// Index in accept order of the upgraded connections, from 0.
    pub id: usize,
    pub path: String,
    /// The upgrade request's headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// Binary messages received.
    pub messages: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Per message: the rows of all its table blocks (0 for a message that could not be
    /// decoded or was dropped by `close_after`).
    pub rows_per_message: Vec<usize>,
    /// Per message: the header flags byte (0 if it had no header).
    pub flags_per_message: Vec<u8>,
    /// Messages without DEFER_COMMIT that committed (their rows and the deferred ones before
    /// them; an empty one too).
    pub commits: usize,
    /// The most rows deferred and not yet committed at once.
    pub peak_uncommitted_rows: usize,
    /// Every binary message as received, with `Config::keep_messages`.
    pub raw: Vec<Vec<u8>>,
    pub pings: usize,
    /// The code of the client's Close frame (None: no Close, or one without a code).
    pub close_code: Option<u16>,
    pub close_received: bool,
    /// The code of a Close the server sent first (1009, 1002, 1003, 1000 after an error).
    pub server_close_code: Option<u16>,
    /// `close_after` dropped the connection.
    pub dropped: bool,
    /// The connection is over.
    pub ended: bool,
    /// The connection's symbol dictionary, by id.
    pub dictionary: Vec<String>,
    /// Every reply sent, in order.
    pub replies: Vec<Reply>,
}

impl ConnStats {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The seqs of the OKs sent, in order.
    pub fn ok_seqs(&self) -> Vec<i64> {
        self.replies
            .iter()
            .filter_map(|r| match r {
                Reply::Ok { seq, .. } => Some(*seq),
                _ => None,
            })
            .collect()
    }

    /// `(seq, status, message)` of the error replies sent.
    pub fn errors(&self) -> Vec<(i64, u8, String)> {
        self.replies
            .iter()
            .filter_map(|r| match r {
                Reply::Error {
                    seq,
                    status,
                    message,
                } => Some((*seq, *status, message.clone())),
                _ => None,
            })
            .collect()
    }

    pub fn rows(&self) -> usize {
        self.rows_per_message.iter().sum()
    }
}

// ------------------------------------------------------------------------------------------
// The server
// ------------------------------------------------------------------------------------------

#[derive(Default)]
struct State {
    tables: BTreeMap<String, Table>,
    seq_txn: HashMap<String, i64>,
    conns: Vec<ConnStats>,
    malformed: Vec<String>,
    upgrade_failures: Vec<String>,
    error_fired: bool,
    drop_fired: bool,
}

struct Shared {
    config: Mutex<Arc<Config>>,
    state: Mutex<State>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn config(&self) -> Arc<Config> {
        self.config
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

pub struct QwpServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl QwpServer {
    /// Listens on an ephemeral port of 127.0.0.1 (ready when this returns).
    pub fn start(config: Config) -> QwpServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let addr = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared {
            config: Mutex::new(Arc::new(config)),
            state: Mutex::new(State::default()),
        });
        let (stop, stopped) = oneshot::channel::<()>();
        let state = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("qwp-test-server-{}", addr.port()))
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime for the QWP test server");
                runtime.block_on(async move {
                    let listener = TcpListener::from_std(listener).expect("a tokio listener");
                    tokio::select! {
                        _ = accept(listener, state) => {}
                        _ = stopped => {}
                    }
                });
                // Dropping the runtime drops every connection task: their sockets close.
            })
            .expect("a thread for the QWP test server");
        QwpServer {
            addr,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// `ws://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("ws://{}", self.addr)
    }

    /// The connect string of the official client: `ws::addr=127.0.0.1:PORT;`.
    pub fn conf(&self) -> String {
        format!("ws::addr={};", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Changes the configuration for the connections accepted from now on.
    pub fn set_config(&self, config: Config) {
        *self.shared.config.lock().unwrap_or_else(|e| e.into_inner()) = Arc::new(config);
    }

    pub fn config(&self) -> Config {
        (*self.shared.config()).clone()
    }

    /// Every table, merged over all connections.
    pub fn tables(&self) -> BTreeMap<String, Table> {
        self.shared.state().tables.clone()
    }

    pub fn table(&self, name: &str) -> Option<Table> {
        self.shared.state().tables.get(name).cloned()
    }

    /// Every upgraded connection, in accept order.
    pub fn connections(&self) -> Vec<ConnStats> {
        self.shared.state().conns.clone()
    }

    /// What was wrong with each malformed message or WebSocket violation:
    /// `"connection N, message SEQ: ..."` or `"connection N: websocket: ..."`.
    pub fn malformed(&self) -> Vec<String> {
        self.shared.state().malformed.clone()
    }

    /// Refused upgrades: `"GET /path: 404 ..."`, `"GET /write/v4: 400 ..."`, handshake errors.
    pub fn upgrade_failures(&self) -> Vec<String> {
        self.shared.state().upgrade_failures.clone()
    }

    /// Rows committed, over all tables.
    pub fn total_rows(&self) -> usize {
        self.shared
            .state()
            .tables
            .values()
            .map(|t| t.row_count)
            .sum()
    }

    /// Waits (polling, at most `timeout`) until `done` holds for the connections; returns
    /// them either way.
    pub fn wait_for(
        &self,
        timeout: Duration,
        done: impl Fn(&[ConnStats]) -> bool,
    ) -> Vec<ConnStats> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let conns = self.connections();
            if done(&conns) || std::time::Instant::now() >= deadline {
                return conns;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits (at most `timeout`) until table `name` has at least `rows` rows; returns it as it
    /// is then (None: no such table).
    pub fn wait_rows(&self, name: &str, rows: usize, timeout: Duration) -> Option<Table> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let t = self.table(name);
            if t.as_ref().is_some_and(|t| t.row_count >= rows)
                || std::time::Instant::now() >= deadline
            {
                return t;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits until at least `n` connections were upgraded and all of them ended.
    pub fn wait_ended(&self, n: usize, timeout: Duration) -> Vec<ConnStats> {
        self.wait_for(timeout, |c| c.len() >= n && c.iter().all(|c| c.ended))
    }
}

impl Drop for QwpServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn accept(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(connection(stream, shared.clone()));
    }
}

fn refuse(status: StatusCode, why: &str) -> ErrorResponse {
    let mut r = ErrorResponse::new(Some(why.to_string()));
    *r.status_mut() = status;
    r
}

type Ws = WebSocketStream<TcpStream>;

async fn connection(tcp: TcpStream, shared: Arc<Shared>) {
    let config = shared.config();
    // The id of the connection, registered once the upgrade is accepted (before the 101 goes
    // out, so a client that got it finds its connection in `connections()`).
    let seen: Arc<Mutex<Option<usize>>> = Arc::new(Mutex::new(None));
    let refused = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // tungstenite's callback type returns its (large) error response by value.
    #[allow(clippy::result_large_err)]
    let callback = {
        let (seen, refused, shared) = (seen.clone(), refused.clone(), shared.clone());
        let (max, advertise) = (config.max_batch_size, config.advertise_max_batch_size);
        move |req: &Request, mut resp: Response| -> Result<Response, ErrorResponse> {
            let path = req.uri().path().to_string();
            // Kept before the answer goes out, so a client that sees it finds it recorded.
            let fail = |why: String| {
                refused.store(true, std::sync::atomic::Ordering::SeqCst);
                shared.state().upgrade_failures.push(why);
            };
            if !PATHS.contains(&path.as_str()) {
                fail(format!("GET {path}: 404 not a QWP ingestion path"));
                return Err(refuse(StatusCode::NOT_FOUND, "not found"));
            }
            let version = req
                .headers()
                .get("x-qwp-max-version")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u32>().ok());
            if version.is_none_or(|v| v < 1) {
                fail(format!(
                    "GET {path}: 400 missing or invalid X-QWP-Max-Version ({:?})",
                    req.headers().get("x-qwp-max-version")
                ));
                return Err(refuse(
                    StatusCode::BAD_REQUEST,
                    "missing or invalid X-QWP-Max-Version",
                ));
            }
            let h = resp.headers_mut();
            h.insert("X-QWP-Version", HeaderValue::from_static("1"));
            if advertise {
                if let Ok(v) = HeaderValue::from_str(&max.to_string()) {
                    h.insert("X-QWP-Max-Batch-Size", v);
                }
            }
            let headers = req
                .headers()
                .iter()
                .map(|(k, v)| {
                    (
                        k.as_str().to_ascii_lowercase(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect();
            let id = {
                let mut st = shared.state();
                let id = st.conns.len();
                st.conns.push(ConnStats {
                    id,
                    path,
                    headers,
                    ..ConnStats::default()
                });
                id
            };
            *seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(id);
            Ok(resp)
        }
    };
    let ws_config = WebSocketConfig::default()
        .max_message_size(Some(config.max_batch_size))
        .max_frame_size(Some(config.max_batch_size));
    let accepted =
        tokio_tungstenite::accept_hdr_async_with_config(tcp, callback, Some(ws_config)).await;
    let mut ws = match accepted {
        Ok(ws) => ws,
        Err(e) => {
            if let Some(id) = seen.lock().unwrap_or_else(|e| e.into_inner()).take() {
                shared.state().conns[id].ended = true;
            }
            if !refused.load(std::sync::atomic::Ordering::SeqCst) {
                shared
                    .state()
                    .upgrade_failures
                    .push(format!("handshake failed: {e}"));
            }
            return;
        }
    };
    let id = seen.lock().unwrap_or_else(|e| e.into_inner()).take();
    let Some(id) = id else {
        // Unreachable: an accepted upgrade went through the callback.
        return;
    };
    let mut session = Session {
        id,
        shared: shared.clone(),
        config,
        next_seq: 0,
        dict: Vec::new(),
        staged: Vec::new(),
        held: None,
        out: VecDeque::new(),
        tables_seen: HashSet::new(),
    };
    session.run(&mut ws).await;
    shared.state().conns[id].ended = true;
}

/// A reply waiting to go out.
struct Outgoing {
    due: Instant,
    reply: Reply,
}

/// The OK `AckMode::Grouped` holds back.
struct Held {
    last_seq: u64,
    count: usize,
    tables: BTreeMap<String, i64>,
    last_message: Instant,
}

enum After {
    Continue,
    Close(u16, String),
    Drop,
}

struct Session {
    id: usize,
    shared: Arc<Shared>,
    config: Arc<Config>,
    next_seq: u64,
    dict: Vec<String>,
    /// Blocks of deferred messages, committed by the next message without DEFER_COMMIT.
    staged: Vec<Block>,
    held: Option<Held>,
    out: VecDeque<Outgoing>,
    tables_seen: HashSet<String>,
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending::<()>().await,
    }
}

/// An unmasked server frame, written around tungstenite when it no longer lets us send data
/// (after the client's Close).
fn server_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0x80 | opcode];
    let n = payload.len();
    if n <= 125 {
        f.push(n as u8);
    } else if n <= 0xFFFF {
        f.push(126);
        f.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        f.push(127);
        f.extend_from_slice(&(n as u64).to_be_bytes());
    }
    f.extend_from_slice(payload);
    f
}

fn close_message(code: u16, reason: &str) -> Message {
    Message::Close(Some(CloseFrame {
        code: CloseCode::from(code),
        reason: reason.into(),
    }))
}

/// Reads and discards what the client still sends, until it closes or `limit` passes, so
/// that our Close reaches it before the socket is dropped (an unread socket resets).
async fn drain_raw(ws: &mut Ws, limit: Duration) {
    let deadline = Instant::now() + limit;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match tokio::time::timeout_at(deadline, ws.get_mut().read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => continue,
            _ => return,
        }
    }
}

impl Session {
    fn stats(&self) -> MutexGuard<'_, State> {
        self.shared.state()
    }

    fn with_stats(&self, f: impl FnOnce(&mut ConnStats)) {
        let mut st = self.shared.state();
        f(&mut st.conns[self.id]);
    }

    fn malformed(&self, what: String) {
        self.stats().malformed.push(what);
    }

    async fn run(&mut self, ws: &mut Ws) {
        loop {
            let wake = self.next_wake();
            let event = tokio::select! {
                biased;
                _ = sleep_until_opt(wake) => None,
                m = ws.next() => Some(m),
            };
            let Some(event) = event else {
                self.release_idle();
                if !self.send_due(ws).await {
                    return;
                }
                continue;
            };
            match event {
                None => return,
                Some(Err(e)) => return self.on_ws_error(ws, e).await,
                Some(Ok(Message::Binary(data))) => match self.on_binary(&data) {
                    After::Continue => {
                        if !self.send_due(ws).await {
                            return;
                        }
                    }
                    After::Close(code, reason) => {
                        self.make_all_due();
                        if !self.send_due(ws).await {
                            return;
                        }
                        return self.close(ws, code, &reason, false).await;
                    }
                    After::Drop => {
                        self.with_stats(|c| c.dropped = true);
                        return;
                    }
                },
                Some(Ok(Message::Text(_))) => {
                    self.malformed(format!(
                        "connection {}: websocket: a text message (QWP messages are binary)",
                        self.id
                    ));
                    return self
                        .close(ws, 1003, "text messages are not supported", false)
                        .await;
                }
                Some(Ok(Message::Ping(_))) => {
                    self.with_stats(|c| c.pings += 1);
                    // The real server flushes pending OKs on a PING; ours go out before the
                    // PONG tungstenite queued (it writes queued data frames first).
                    if self.config.ack == AckMode::Grouped {
                        self.release_held();
                    }
                    if !self.send_due(ws).await {
                        return;
                    }
                    if ws.flush().await.is_err() {
                        return;
                    }
                }
                Some(Ok(Message::Pong(_))) | Some(Ok(Message::Frame(_))) => {}
                Some(Ok(Message::Close(frame))) => return self.on_close(ws, frame).await,
            }
        }
    }

    fn next_wake(&self) -> Option<Instant> {
        let delayed = self.out.front().map(|o| o.due);
        let idle = match (&self.held, self.config.group_idle) {
            (Some(h), Some(idle)) => Some(h.last_message + idle),
            _ => None,
        };
        match (delayed, idle) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn release_idle(&mut self) {
        if let (Some(h), Some(idle)) = (&self.held, self.config.group_idle) {
            if h.last_message + idle <= Instant::now() {
                self.release_held();
            }
        }
    }

    /// Turns the held OK into an outgoing one, due now.
    fn release_held(&mut self) {
        if let Some(h) = self.held.take() {
            self.out.push_back(Outgoing {
                due: Instant::now(),
                reply: Reply::Ok {
                    seq: h.last_seq as i64,
                    tables: h.tables.into_iter().collect(),
                },
            });
        }
    }

    fn make_all_due(&mut self) {
        if self.config.ack != AckMode::Never {
            self.release_held();
        }
        let now = Instant::now();
        for o in &mut self.out {
            o.due = o.due.min(now);
        }
    }

    /// Sends the replies that are due; false when the connection is gone.
    async fn send_due(&mut self, ws: &mut Ws) -> bool {
        let now = Instant::now();
        while self.out.front().is_some_and(|o| o.due <= now) {
            let Some(o) = self.out.pop_front() else { break };
            if ws
                .send(Message::Binary(o.reply.encode().into()))
                .await
                .is_err()
            {
                return false;
            }
            self.with_stats(|c| c.replies.push(o.reply));
        }
        true
    }

    /// The next reply's time: now, or `Delayed`'s delay after its message.
    fn due(&self) -> Instant {
        match self.config.ack {
            AckMode::Delayed(d) => Instant::now() + d,
            _ => Instant::now(),
        }
    }

    fn ack(&mut self, seq: u64, tables: Vec<(String, i64)>) {
        match self.config.ack {
            AckMode::Never => {}
            AckMode::Each | AckMode::Delayed(_) => {
                let due = self.due();
                self.out.push_back(Outgoing {
                    due,
                    reply: Reply::Ok {
                        seq: seq as i64,
                        tables,
                    },
                });
            }
            AckMode::Grouped => {
                let h = self.held.get_or_insert_with(|| Held {
                    last_seq: seq,
                    count: 0,
                    tables: BTreeMap::new(),
                    last_message: Instant::now(),
                });
                h.last_seq = seq;
                h.count += 1;
                h.last_message = Instant::now();
                h.tables.extend(tables);
                if h.count >= ACK_BATCH_SIZE {
                    self.release_held();
                }
            }
        }
    }

    fn reply_error(&mut self, seq: u64, status: u8, message: &str) {
        if self.config.ack == AckMode::Grouped {
            self.release_held();
        }
        let mut message = message.to_string();
        if message.len() > MAX_ERROR_MESSAGE {
            let mut cut = MAX_ERROR_MESSAGE;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
        }
        let due = self.due();
        self.out.push_back(Outgoing {
            due,
            reply: Reply::Error {
                seq: seq as i64,
                status,
                message,
            },
        });
    }

    /// Whether a fault set for `seq` acts now (and marks a once-only fault as spent).
    fn fault_fires(&self, at: Option<u64>, seq: u64, drop: bool) -> bool {
        if at != Some(seq) {
            return false;
        }
        if !self.config.faults_once {
            return true;
        }
        let mut st = self.stats();
        let fired = if drop {
            &mut st.drop_fired
        } else {
            &mut st.error_fired
        };
        !std::mem::replace(fired, true)
    }

    fn on_binary(&mut self, data: &[u8]) -> After {
        let seq = self.next_seq;
        self.next_seq += 1;
        let flags = if data.len() >= 12 { data[5] } else { 0 };
        let keep = self.config.keep_messages;
        self.with_stats(|c| {
            c.messages += 1;
            c.bytes += data.len() as u64;
            c.flags_per_message.push(flags);
            if keep {
                c.raw.push(data.to_vec());
            }
        });
        if self.fault_fires(self.config.close_after, seq, true) {
            self.with_stats(|c| c.rows_per_message.push(0));
            return After::Drop;
        }
        let decoded = match decode_message(data, &self.dict) {
            Ok(d) => d,
            Err(reject) => {
                let what = match reject.status {
                    STATUS_DICTIONARY_GAP => "DICTIONARY_GAP",
                    _ => "PARSE_ERROR",
                };
                self.malformed(format!(
                    "connection {}, message {seq}: {what}: {}",
                    self.id, reject.message
                ));
                self.with_stats(|c| c.rows_per_message.push(0));
                self.staged.clear();
                self.reply_error(seq, reject.status, &reject.message);
                return if self.config.close_on_error {
                    After::Close(1002, "malformed message".into())
                } else {
                    After::Continue
                };
            }
        };
        // A message that parses registers its dictionary entries, whatever happens next.
        if !decoded.dict_additions.is_empty() {
            self.dict.extend(decoded.dict_additions.iter().cloned());
            let dict = self.dict.clone();
            self.with_stats(|c| c.dictionary = dict);
        }
        let rows: usize = decoded.blocks.iter().map(|b| b.rows).sum();
        self.with_stats(|c| c.rows_per_message.push(rows));

        let new_tables: Vec<&str> = decoded
            .blocks
            .iter()
            .map(|b| b.table.as_str())
            .filter(|t| !self.tables_seen.contains(*t))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if self.tables_seen.len() + new_tables.len() > MAX_TABLES_PER_CONNECTION {
            let message =
                format!("more than {MAX_TABLES_PER_CONNECTION} distinct tables on one connection");
            self.malformed(format!(
                "connection {}, message {seq}: PARSE_ERROR: {message}",
                self.id
            ));
            self.staged.clear();
            self.reply_error(seq, STATUS_PARSE_ERROR, &message);
            return After::Continue;
        }
        let new_tables: Vec<String> = new_tables.into_iter().map(str::to_string).collect();
        self.tables_seen.extend(new_tables);

        if let Some((at, status, message)) = self.config.error_at.clone() {
            if self.fault_fires(Some(at), seq, false) {
                self.staged.clear();
                self.reply_error(seq, status, &message);
                return if self.config.close_on_error {
                    After::Close(1000, "error reply".into())
                } else {
                    After::Continue
                };
            }
        }

        let deferred = decoded.flags & FLAG_DEFER_COMMIT != 0;
        let result = {
            let mut st = self.shared.state();
            let pending: Vec<&Block> = self.staged.iter().chain(decoded.blocks.iter()).collect();
            let checked = check_schema(&st.tables, &pending);
            match checked {
                Err(e) => Err(e),
                Ok(()) if deferred => {
                    self.staged.extend(decoded.blocks);
                    Ok(Vec::new())
                }
                Ok(()) => {
                    let blocks: Vec<Block> = self.staged.drain(..).chain(decoded.blocks).collect();
                    Ok(commit(&mut st, blocks))
                }
            }
        };
        match result {
            Err(message) => {
                self.staged.clear();
                self.reply_error(seq, STATUS_SCHEMA_MISMATCH, &message);
                if self.config.close_on_error {
                    return After::Close(1003, "schema mismatch".into());
                }
            }
            Ok(txns) => {
                let tables = if self.config.ok_lists_tables {
                    txns
                } else {
                    Vec::new()
                };
                let staged: usize = self.staged.iter().map(|b| b.rows).sum();
                self.with_stats(|c| {
                    if deferred {
                        c.peak_uncommitted_rows = c.peak_uncommitted_rows.max(staged);
                    } else {
                        c.commits += 1;
                    }
                });
                // 10.x: the commit's cumulative OK will cover a deferred message.
                if !(deferred && self.config.hold_deferred_acks) {
                    self.ack(seq, tables);
                }
            }
        }
        After::Continue
    }

    async fn on_ws_error(&mut self, ws: &mut Ws, e: WsError) {
        let (code, why) = match &e {
            WsError::Capacity(c) => (1009, format!("message too big: {c}")),
            WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake) => return,
            WsError::Protocol(p) => (1002, format!("protocol violation: {p}")),
            WsError::Utf8(u) => (1007, format!("invalid UTF-8: {u}")),
            // The connection is gone (reset, closed): nothing to answer.
            _ => return,
        };
        self.malformed(format!("connection {}: websocket: {why}", self.id));
        self.close(ws, code, &why, true).await;
    }

    /// Sends a Close first, then waits (at most 2 s) for the client's Close or its hang-up.
    /// `broken`: the stream stopped inside a frame (too big, bad framing), so what follows is
    /// read and dropped as raw bytes rather than as frames.
    async fn close(&mut self, ws: &mut Ws, code: u16, reason: &str, broken: bool) {
        self.with_stats(|c| c.server_close_code = Some(code));
        let mut reason = reason.to_string();
        while reason.len() > 120 {
            reason.pop();
        }
        let _ = ws.send(close_message(code, &reason)).await;
        let limit = Duration::from_secs(2);
        if broken {
            drain_raw(ws, limit).await;
        } else {
            let _ = tokio::time::timeout(limit, async {
                while let Some(Ok(m)) = ws.next().await {
                    if let Message::Close(frame) = m {
                        let code = frame.as_ref().map(|f| u16::from(f.code));
                        self.with_stats(|c| {
                            c.close_received = true;
                            c.close_code = code;
                        });
                        break;
                    }
                }
            })
            .await;
        }
    }

    async fn on_close(&mut self, ws: &mut Ws, frame: Option<CloseFrame>) {
        let code = frame.as_ref().map(|f| u16::from(f.code));
        self.with_stats(|c| {
            c.close_received = true;
            c.close_code = code;
        });
        self.staged.clear();
        // Pending OKs go out before the Close echo. tungstenite no longer sends data once it
        // has read a Close, so they are written as raw frames ahead of its queued echo.
        self.make_all_due();
        let mut raw = Vec::new();
        let mut sent = Vec::new();
        while let Some(o) = self.out.pop_front() {
            raw.extend(server_frame(0x2, &o.reply.encode()));
            sent.push(o.reply);
        }
        if !raw.is_empty() {
            if ws.get_mut().write_all(&raw).await.is_err() {
                return;
            }
            self.with_stats(|c| c.replies.extend(sent));
        }
        let _ = ws.flush().await;
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            while let Some(Ok(_)) = ws.next().await {}
        })
        .await;
    }
}

/// Refuses a column whose type differs from the one its table already has (committed, or
/// earlier in the same commit).
fn check_schema(tables: &BTreeMap<String, Table>, blocks: &[&Block]) -> Result<(), String> {
    let mut types: HashMap<(&str, &str), u8> = HashMap::new();
    for b in blocks {
        for c in &b.columns {
            let name = if c.name.is_empty() {
                DESIGNATED
            } else {
                c.name.as_str()
            };
            let existing = types.get(&(b.table.as_str(), name)).copied().or_else(|| {
                tables
                    .get(&b.table)
                    .and_then(|t| t.column(name))
                    .map(|col| col.type_code)
            });
            match existing {
                Some(t) if t != c.type_code => {
                    return Err(format!(
                        "column type mismatch [table={}, column={}, existing={}, sent={}]",
                        b.table,
                        if c.name.is_empty() {
                            DESIGNATED
                        } else {
                            &c.name
                        },
                        type_name(t),
                        type_name(c.type_code)
                    ))
                }
                _ => {
                    types.insert((b.table.as_str(), name), c.type_code);
                }
            }
        }
    }
    Ok(())
}

/// Appends the blocks to their tables; one seqTxn per table per commit.
fn commit(st: &mut State, blocks: Vec<Block>) -> Vec<(String, i64)> {
    let mut touched = BTreeSet::new();
    for b in blocks {
        touched.insert(b.table.clone());
        st.tables
            .entry(b.table.clone())
            .or_insert_with(|| Table::new(&b.table))
            .append(b);
    }
    touched
        .into_iter()
        .map(|t| {
            let txn = st.seq_txn.entry(t.clone()).or_insert(0);
            *txn += 1;
            (t, *txn)
        })
        .collect()
}

// ------------------------------------------------------------------------------------------
// Decoding (§3)
// ------------------------------------------------------------------------------------------

/// A refused message: its status (PARSE_ERROR or DICTIONARY_GAP) and what was wrong.
#[derive(Debug)]
pub struct Reject {
    pub status: u8,
    pub message: String,
}

fn parse_error(message: String) -> Reject {
    Reject {
        status: STATUS_PARSE_ERROR,
        message,
    }
}

/// One decoded message.
#[derive(Debug)]
pub struct Decoded {
    pub flags: u8,
    /// `(delta_start, entries)` of the delta dictionary, if the message has one.
    pub delta: Option<(u64, Vec<String>)>,
    /// The entries new to the connection's dictionary.
    pub dict_additions: Vec<String>,
    pub blocks: Vec<Block>,
}

/// One table block.
#[derive(Clone, Debug)]
pub struct Block {
    pub table: String,
    pub rows: usize,
    pub columns: Vec<BlockColumn>,
}

#[derive(Clone, Debug)]
pub struct BlockColumn {
    /// As sent ("" for the designated timestamp).
    pub name: String,
    pub type_code: u8,
    pub designated: bool,
    /// The section had a null bitmap.
    pub bitmap: bool,
    /// One cell per row of the block.
    pub cells: Vec<Cell>,
}

/// A bounds-checked reader: every read says what it was reading when the bytes run out.
struct Reader<'a> {
    b: &'a [u8],
    p: usize,
}

impl<'a> Reader<'a> {
    fn left(&self) -> usize {
        self.b.len() - self.p
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        if n > self.left() {
            return Err(format!(
                "truncated: {what} needs {n} bytes at offset {}, {} left",
                self.p,
                self.left()
            ));
        }
        let s = &self.b[self.p..self.p + n];
        self.p += n;
        Ok(s)
    }

    fn u8(&mut self, what: &str) -> Result<u8, String> {
        Ok(self.take(1, what)?[0])
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], String> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn varint(&mut self, what: &str) -> Result<u64, String> {
        let start = self.p;
        let mut v: u64 = 0;
        for i in 0..10 {
            let byte = self.u8(what)?;
            let part = u64::from(byte & 0x7F);
            if i == 9 && byte > 1 {
                return Err(format!(
                    "{what}: varint at offset {start} does not fit in 64 bits"
                ));
            }
            v |= part << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(format!(
            "{what}: varint at offset {start} is longer than 10 bytes"
        ))
    }

    /// A varint that counts something of at least `min_bytes` bytes each: it cannot exceed
    /// what is left (so nothing is allocated for a count the message cannot hold).
    fn count(&mut self, what: &str, min_bytes: usize) -> Result<usize, String> {
        let at = self.p;
        let n = self.varint(what)?;
        let room = self
            .left()
            .checked_div(min_bytes)
            .map_or(u64::MAX, |r| r as u64);
        if n > room {
            return Err(format!(
                "{what} {n} at offset {at} cannot fit in the {} bytes left",
                self.left()
            ));
        }
        Ok(n as usize)
    }

    fn string(&mut self, what: &str) -> Result<String, String> {
        let at = self.p;
        let len = self.varint(what)?;
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        let bytes = self.take(len, what)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_string()),
            Err(e) => Err(format!("{what} at offset {at} is not UTF-8: {e}")),
        }
    }
}

/// Decodes one ingestion message against the connection's dictionary `dict`.
pub fn decode_message(data: &[u8], dict: &[String]) -> Result<Decoded, Reject> {
    let mut r = Reader { b: data, p: 0 };
    if data.len() < 12 {
        return Err(parse_error(format!(
            "a message of {} bytes is shorter than the 12-byte header",
            data.len()
        )));
    }
    let magic = r.take(4, "magic").map_err(parse_error)?;
    if magic != b"QWP1" {
        return Err(parse_error(format!(
            "bad magic {} (expected 51575031, \"QWP1\")",
            hex(magic)
        )));
    }
    let version = r.u8("version").map_err(parse_error)?;
    if version != 1 {
        return Err(parse_error(format!(
            "unsupported version {version} (negotiated 1)"
        )));
    }
    let flags = r.u8("flags").map_err(parse_error)?;
    let reserved = flags & !(FLAG_DEFER_COMMIT | FLAG_GORILLA | FLAG_DELTA_SYMBOL_DICT);
    if reserved != 0 {
        let note = if reserved & 0x10 != 0 {
            " (0x10 FLAG_ZSTD is for query results only)"
        } else {
            ""
        };
        return Err(parse_error(format!(
            "flags 0x{flags:02x} set reserved bits 0x{reserved:02x}{note}"
        )));
    }
    let table_count = u16::from_le_bytes(r.array::<2>("table_count").map_err(parse_error)?);
    let payload_length = u32::from_le_bytes(r.array::<4>("payload_length").map_err(parse_error)?);
    if payload_length as usize != data.len() - 12 {
        return Err(parse_error(format!(
            "payload_length {payload_length} but the message has {} bytes after the header",
            data.len() - 12
        )));
    }

    let mut additions: Vec<String> = Vec::new();
    let mut delta = None;
    if flags & FLAG_DELTA_SYMBOL_DICT != 0 {
        let start = r.varint("delta_start").map_err(parse_error)?;
        if start > dict.len() as u64 {
            return Err(Reject {
                status: STATUS_DICTIONARY_GAP,
                message: format!(
                    "delta_start {start} is past the connection's dictionary of {} entries",
                    dict.len()
                ),
            });
        }
        let count = r.count("delta_count", 1).map_err(parse_error)?;
        if start + count as u64 > MAX_DICTIONARY {
            return Err(parse_error(format!(
                "the dictionary would exceed {MAX_DICTIONARY} entries ({start} + {count})"
            )));
        }
        let mut entries = Vec::with_capacity(count);
        for k in 0..count {
            let id = start as usize + k;
            let s = r
                .string(&format!("dictionary entry {id}"))
                .map_err(parse_error)?;
            if id < dict.len() {
                if dict[id] != s {
                    return Err(parse_error(format!(
                        "dictionary entry {id} re-sent as {s:?} but it is {:?}",
                        dict[id]
                    )));
                }
            } else {
                additions.push(s.clone());
            }
            entries.push(s);
        }
        delta = Some((start, entries));
    }
    let symbols = Symbols {
        dict,
        additions: &additions,
    };

    let mut blocks = Vec::with_capacity(usize::from(table_count).min(64));
    for t in 0..table_count {
        blocks.push(decode_block(&mut r, flags, &symbols, t).map_err(parse_error)?);
    }
    if r.left() != 0 {
        return Err(parse_error(format!(
            "{} trailing bytes after the last table block (offset {})",
            r.left(),
            r.p
        )));
    }
    Ok(Decoded {
        flags,
        delta,
        dict_additions: additions,
        blocks,
    })
}

struct Symbols<'a> {
    dict: &'a [String],
    additions: &'a [String],
}

impl Symbols<'_> {
    fn len(&self) -> usize {
        self.dict.len() + self.additions.len()
    }

    fn get(&self, id: u64) -> Option<&str> {
        let id = usize::try_from(id).ok()?;
        if id < self.dict.len() {
            Some(&self.dict[id])
        } else {
            self.additions.get(id - self.dict.len()).map(String::as_str)
        }
    }
}

fn decode_block(
    r: &mut Reader<'_>,
    flags: u8,
    symbols: &Symbols<'_>,
    index: u16,
) -> Result<Block, String> {
    let at = r.p;
    let table = r.string(&format!("table {index} name"))?;
    if table.is_empty() || table.len() > MAX_NAME_BYTES {
        return Err(format!(
            "table {index} name at offset {at} has {} bytes (1..={MAX_NAME_BYTES})",
            table.len()
        ));
    }
    let ctx = |e: String| format!("table {table:?}: {e}");
    let rows = r.varint("row_count").map_err(ctx)?;
    if rows > MAX_ROWS_PER_TABLE {
        return Err(ctx(format!(
            "row_count {rows} is over the limit of {MAX_ROWS_PER_TABLE}"
        )));
    }
    let rows = rows as usize;
    let column_count = r.varint("column_count").map_err(ctx)?;
    if column_count > MAX_COLUMNS {
        return Err(ctx(format!(
            "column_count {column_count} is over the limit of {MAX_COLUMNS}"
        )));
    }
    let mut schema: Vec<(String, u8)> = Vec::new();
    let mut names = HashSet::new();
    for k in 0..column_count {
        let at = r.p;
        let name = r.string(&format!("column {k} name")).map_err(ctx)?;
        if name.len() > MAX_NAME_BYTES {
            return Err(ctx(format!(
                "column {k} name at offset {at} has {} bytes (0..={MAX_NAME_BYTES})",
                name.len()
            )));
        }
        let code = r.u8(&format!("column {name:?} type")).map_err(ctx)?;
        if !is_known_type(code) {
            return Err(ctx(format!(
                "column {name:?} has unknown type code 0x{code:02x}"
            )));
        }
        if name.is_empty() && code != ty::TIMESTAMP && code != ty::TIMESTAMP_NANOS {
            return Err(ctx(format!(
                "the designated timestamp (empty column name) must be TIMESTAMP or \
                 TIMESTAMP_NANOS, not {}",
                type_name(code)
            )));
        }
        if !names.insert(name.clone()) {
            return Err(ctx(if name.is_empty() {
                "two designated timestamp columns (empty names)".to_string()
            } else {
                format!("column {name:?} appears twice")
            }));
        }
        schema.push((name, code));
    }
    let mut columns = Vec::with_capacity(schema.len());
    for (name, code) in schema {
        let shown = if name.is_empty() { DESIGNATED } else { &name };
        let (bitmap, cells) = decode_column(r, code, rows, flags, symbols).map_err(|e| {
            format!(
                "table {table:?} column {shown:?} ({}): {e}",
                type_name(code)
            )
        })?;
        columns.push(BlockColumn {
            designated: name.is_empty(),
            name,
            type_code: code,
            bitmap,
            cells,
        });
    }
    Ok(Block {
        table,
        rows,
        columns,
    })
}

fn is_known_type(code: u8) -> bool {
    matches!(code, 0x01..=0x07 | 0x09..=0x18)
}

/// Fixed widths of the types read as plain little-endian integers or floats.
fn fixed_width(code: u8) -> Option<usize> {
    Some(match code {
        ty::BYTE => 1,
        ty::SHORT | ty::CHAR => 2,
        ty::INT | ty::FLOAT | ty::IPV4 => 4,
        ty::LONG | ty::DOUBLE | ty::DATE | ty::TIMESTAMP | ty::TIMESTAMP_NANOS => 8,
        ty::UUID => 16,
        ty::LONG256 => 32,
        _ => return None,
    })
}

/// Decodes one column section of `rows` rows: whether it had a bitmap, and one cell per row.
fn decode_column(
    r: &mut Reader<'_>,
    code: u8,
    rows: usize,
    flags: u8,
    symbols: &Symbols<'_>,
) -> Result<(bool, Vec<Cell>), String> {
    let null_flag = r.u8("null flag")?;
    let bitmap = null_flag != 0;
    let mut nulls = Vec::new();
    if bitmap {
        let at = r.p;
        let bytes = r.take(rows.div_ceil(8), "null bitmap")?;
        if rows % 8 != 0 {
            let pad = bytes[rows / 8] >> (rows % 8);
            if pad != 0 {
                return Err(format!(
                    "null bitmap at offset {at}: padding bits after row {rows} are set"
                ));
            }
        }
        nulls = (0..rows)
            .map(|i| bytes[i / 8] >> (i % 8) & 1 == 1)
            .collect();
    }
    let n = rows - nulls.iter().filter(|&&x| x).count();
    let values = decode_values(r, code, n, flags, symbols)?;
    debug_assert_eq!(values.len(), n);
    if !bitmap {
        return Ok((false, values));
    }
    let mut values = values.into_iter();
    let cells = nulls
        .into_iter()
        .map(|null| {
            if null {
                Cell::Null
            } else {
                values.next().unwrap_or(Cell::Null)
            }
        })
        .collect();
    Ok((true, cells))
}

/// The `n` non-null values of a section, after its null section.
fn decode_values(
    r: &mut Reader<'_>,
    code: u8,
    n: usize,
    flags: u8,
    symbols: &Symbols<'_>,
) -> Result<Vec<Cell>, String> {
    // Column prefixes that come before the values.
    if (code == ty::TIMESTAMP || code == ty::TIMESTAMP_NANOS) && flags & FLAG_GORILLA != 0 {
        let at = r.p;
        match r.u8("timestamp encoding byte")? {
            0 => {}
            1 => return gorilla(r, n),
            e => {
                return Err(format!(
                    "timestamp encoding byte {e} at offset {at} (0 plain or 1 Gorilla)"
                ))
            }
        }
    }
    match code {
        ty::BOOLEAN => {
            let at = r.p;
            let bytes = r.take(n.div_ceil(8), "boolean bits")?;
            if n % 8 != 0 && bytes[n / 8] >> (n % 8) != 0 {
                return Err(format!(
                    "boolean bits at offset {at}: padding bits after value {n} are set"
                ));
            }
            Ok((0..n)
                .map(|i| Cell::Bool(bytes[i / 8] >> (i % 8) & 1 == 1))
                .collect())
        }
        ty::SYMBOL => {
            if flags & FLAG_DELTA_SYMBOL_DICT != 0 {
                let mut out = Vec::with_capacity(n.min(r.left()));
                for _ in 0..n {
                    let at = r.p;
                    let id = r.varint("symbol id")?;
                    match symbols.get(id) {
                        Some(s) => out.push(Cell::Str(s.to_string())),
                        None => {
                            return Err(format!(
                                "symbol id {id} at offset {at} is not in the dictionary \
                                 ({} entries)",
                                symbols.len()
                            ))
                        }
                    }
                }
                Ok(out)
            } else {
                let size = r.count("column dictionary size", 1)?;
                let mut local = Vec::with_capacity(size);
                for k in 0..size {
                    local.push(r.string(&format!("column dictionary entry {k}"))?);
                }
                let mut out = Vec::with_capacity(n.min(r.left()));
                for _ in 0..n {
                    let at = r.p;
                    let i = r.varint("symbol index")?;
                    match usize::try_from(i).ok().and_then(|i| local.get(i)) {
                        Some(s) => out.push(Cell::Str(s.clone())),
                        None => {
                            return Err(format!(
                                "symbol index {i} at offset {at} is outside the column's \
                                 dictionary of {size}"
                            ))
                        }
                    }
                }
                Ok(out)
            }
        }
        ty::VARCHAR | ty::BINARY => {
            let what = if code == ty::VARCHAR {
                "varchar"
            } else {
                "binary"
            };
            let offsets_at = r.p;
            let need = n
                .checked_add(1)
                .and_then(|k| k.checked_mul(4))
                .ok_or_else(|| "offset count overflows".to_string())?;
            let raw = r.take(need, &format!("{what} offsets ({} x u32)", n + 1))?;
            let offsets: Vec<usize> = raw
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as usize)
                .collect();
            if offsets[0] != 0 {
                return Err(format!(
                    "{what} offsets at offset {offsets_at}: the first is {}, not 0",
                    offsets[0]
                ));
            }
            if let Some(k) = (1..offsets.len()).find(|&k| offsets[k] < offsets[k - 1]) {
                return Err(format!(
                    "{what} offsets at offset {offsets_at}: offset {k} ({}) is below offset \
                     {} ({})",
                    offsets[k],
                    k - 1,
                    offsets[k - 1]
                ));
            }
            let data_at = r.p;
            let data = r.take(offsets[n], &format!("{what} data"))?;
            let mut out = Vec::with_capacity(n);
            for k in 0..n {
                let v = &data[offsets[k]..offsets[k + 1]];
                if code == ty::VARCHAR {
                    match std::str::from_utf8(v) {
                        Ok(s) => out.push(Cell::Str(s.to_string())),
                        Err(e) => {
                            return Err(format!(
                                "varchar value {k} at offset {} is not UTF-8: {e}",
                                data_at + offsets[k]
                            ))
                        }
                    }
                } else {
                    out.push(Cell::Bytes(v.to_vec()));
                }
            }
            Ok(out)
        }
        ty::GEOHASH => {
            let at = r.p;
            let bits = r.varint("geohash precision")?;
            if !(1..=60).contains(&bits) {
                return Err(format!(
                    "geohash precision {bits} at offset {at} is outside 1..=60"
                ));
            }
            let bits = bits as u8;
            let width = usize::from(bits).div_ceil(8);
            let need = n
                .checked_mul(width)
                .ok_or_else(|| "geohash size overflows".to_string())?;
            let at = r.p;
            let raw = r.take(need, "geohash values")?;
            let sentinel = geohash_sentinel(bits);
            let mut out = Vec::with_capacity(n);
            for (k, c) in raw.chunks_exact(width).enumerate() {
                let mut b = [0u8; 8];
                b[..width].copy_from_slice(c);
                let value = u64::from_le_bytes(b);
                if value >> bits != 0 && value != sentinel {
                    return Err(format!(
                        "geohash value {k} at offset {} has bits above its precision of {bits}",
                        at + k * width
                    ));
                }
                out.push(Cell::Geohash { value, bits });
            }
            Ok(out)
        }
        ty::DECIMAL64 | ty::DECIMAL128 | ty::DECIMAL256 => {
            let (width, max_scale) = match code {
                ty::DECIMAL64 => (8, 18),
                ty::DECIMAL128 => (16, 38),
                _ => (32, 76),
            };
            let at = r.p;
            let scale = r.u8("decimal scale")?;
            if scale > max_scale {
                return Err(format!(
                    "decimal scale {scale} at offset {at} is over {max_scale}"
                ));
            }
            let need = n
                .checked_mul(width)
                .ok_or_else(|| "decimal size overflows".to_string())?;
            let raw = r.take(need, "decimal values")?;
            Ok(raw
                .chunks_exact(width)
                .map(|c| Cell::Decimal {
                    unscaled_le: c.to_vec(),
                    scale,
                })
                .collect())
        }
        ty::DOUBLE_ARRAY | ty::LONG_ARRAY => {
            let mut out = Vec::with_capacity(n.min(r.left()));
            for k in 0..n {
                let at = r.p;
                let nd = r.u8("array dimension count")?;
                if !(1..=32).contains(&nd) {
                    return Err(format!(
                        "array {k} at offset {at} has {nd} dimensions (1..=32)"
                    ));
                }
                let mut dims = Vec::with_capacity(usize::from(nd));
                let mut count: usize = 1;
                for d in 0..nd {
                    let len = i32::from_le_bytes(r.array::<4>("array dimension")?);
                    if len < 0 {
                        return Err(format!("array {k} at offset {at}: dimension {d} is {len}"));
                    }
                    dims.push(len);
                    count = count.saturating_mul(len as usize);
                }
                if count > r.left() / 8 {
                    return Err(format!(
                        "truncated: array {k} at offset {at} needs {count} elements, {} bytes \
                         left",
                        r.left()
                    ));
                }
                let raw = r.take(count * 8, "array elements")?;
                let words = raw
                    .chunks_exact(8)
                    .map(|c| <[u8; 8]>::try_from(c).unwrap_or_default());
                out.push(if code == ty::DOUBLE_ARRAY {
                    Cell::DoubleArray {
                        dims,
                        values: words.map(f64::from_le_bytes).collect(),
                    }
                } else {
                    Cell::LongArray {
                        dims,
                        values: words.map(i64::from_le_bytes).collect(),
                    }
                });
            }
            Ok(out)
        }
        _ => {
            let Some(width) = fixed_width(code) else {
                return Err(format!("unknown type code 0x{code:02x}"));
            };
            let need = n
                .checked_mul(width)
                .ok_or_else(|| "value size overflows".to_string())?;
            let raw = r.take(need, &format!("{n} values of {width} bytes"))?;
            Ok(raw
                .chunks_exact(width)
                .map(|c| fixed_cell(code, c))
                .collect())
        }
    }
}

fn fixed_cell(code: u8, c: &[u8]) -> Cell {
    let mut b = [0u8; 8];
    let k = c.len().min(8);
    b[..k].copy_from_slice(&c[..k]);
    match code {
        ty::BYTE => Cell::Long(i64::from(c[0] as i8)),
        ty::SHORT => Cell::Long(i64::from(i16::from_le_bytes([c[0], c[1]]))),
        ty::CHAR => Cell::Long(i64::from(u16::from_le_bytes([c[0], c[1]]))),
        ty::INT => Cell::Long(i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]]))),
        ty::IPV4 => Cell::Long(i64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]]))),
        ty::FLOAT => Cell::Double(f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]]))),
        ty::DOUBLE => Cell::Double(f64::from_le_bytes(b)),
        ty::UUID | ty::LONG256 => Cell::Bytes(c.to_vec()),
        // LONG, DATE, TIMESTAMP, TIMESTAMP_NANOS
        _ => Cell::Long(i64::from_le_bytes(b)),
    }
}

/// Reads bits LSB first from a byte slice.
struct Bits<'a> {
    bytes: &'a [u8],
    at: usize,
    offset: usize,
}

impl Bits<'_> {
    fn bit(&mut self) -> Result<u64, String> {
        let Some(byte) = self.bytes.get(self.at / 8) else {
            return Err(format!(
                "truncated: the gorilla bit stream at offset {} ends at bit {}",
                self.offset, self.at
            ));
        };
        let b = u64::from(byte >> (self.at % 8) & 1);
        self.at += 1;
        Ok(b)
    }

    /// A `width`-bit two's-complement value, least significant bit first.
    fn signed(&mut self, width: u32) -> Result<i64, String> {
        let mut v: u64 = 0;
        for k in 0..width {
            v |= self.bit()? << k;
        }
        let shift = 64 - width;
        Ok(((v << shift) as i64) >> shift)
    }
}

/// Gorilla-coded timestamps (§3.6): the first two values as i64, then for each later value a
/// delta-of-delta code (`0` | `10`+7 bits | `110`+9 | `1110`+12 | `1111`+32), LSB first,
/// zero-padded to a byte.
fn gorilla(r: &mut Reader<'_>, n: usize) -> Result<Vec<Cell>, String> {
    let mut vals: Vec<i64> = Vec::with_capacity(n.min(r.left()));
    for _ in 0..n.min(2) {
        vals.push(i64::from_le_bytes(r.array::<8>("gorilla first values")?));
    }
    if n < 3 {
        return Ok(vals.into_iter().map(Cell::Long).collect());
    }
    let mut bits = Bits {
        bytes: &r.b[r.p..],
        at: 0,
        offset: r.p,
    };
    let mut delta = vals[1].wrapping_sub(vals[0]);
    let mut last = vals[1];
    for _ in 2..n {
        let mut ones = 0;
        while ones < 4 && bits.bit()? == 1 {
            ones += 1;
        }
        let dod = match ones {
            0 => 0,
            1 => bits.signed(7)?,
            2 => bits.signed(9)?,
            3 => bits.signed(12)?,
            _ => bits.signed(32)?,
        };
        delta = delta.wrapping_add(dod);
        last = last.wrapping_add(delta);
        vals.push(last);
    }
    let end = bits.at;
    if end % 8 != 0 && bits.bytes[end / 8] >> (end % 8) != 0 {
        return Err(format!(
            "the gorilla bit stream at offset {}: padding bits after bit {end} are set",
            bits.offset
        ));
    }
    r.p += end.div_ceil(8);
    Ok(vals.into_iter().map(Cell::Long).collect())
}

// ------------------------------------------------------------------------------------------
// Comparing tables
// ------------------------------------------------------------------------------------------

fn types_compatible(a: u8, b: u8) -> bool {
    a == b
        || matches!(
            (a, b),
            (ty::TIMESTAMP, ty::TIMESTAMP_NANOS) | (ty::TIMESTAMP_NANOS, ty::TIMESTAMP)
        )
}

/// A cell in a form two clients agree on: TIMESTAMP/TIMESTAMP_NANOS as nanoseconds, every
/// NULL sentinel as NULL (a NaN double and a bitmap NULL are the same), and a NULL of a type
/// without NULL (BOOLEAN, BYTE, SHORT, CHAR) as its false / 0.
pub fn canonical(type_code: u8, cell: &Cell) -> String {
    match (type_code, cell) {
        (ty::BOOLEAN, Cell::Null) => "false".into(),
        (ty::BYTE | ty::SHORT | ty::CHAR, Cell::Null) => "0".into(),
        _ if cell.is_null(type_code) => "NULL".into(),
        (ty::TIMESTAMP, Cell::Long(us)) => format!("ts {}", i128::from(*us) * 1000),
        (ty::TIMESTAMP_NANOS, Cell::Long(ns)) => format!("ts {ns}"),
        (_, Cell::Double(x)) => format!("{x:?}"),
        _ => cell.to_string(),
    }
}

fn canonical_rows(t: &Table, names: &[String]) -> Vec<String> {
    let cols: Vec<&Column> = names.iter().filter_map(|n| t.column(n)).collect();
    (0..t.row_count)
        .map(|i| {
            cols.iter()
                .map(|c| format!("{}={}", c.name, canonical(c.type_code, &c.cells[i])))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .collect()
}

fn compare_schema(a: &Table, b: &Table) -> Result<Vec<String>, String> {
    let names_a: BTreeSet<&str> = a.columns.iter().map(|c| c.name.as_str()).collect();
    let names_b: BTreeSet<&str> = b.columns.iter().map(|c| c.name.as_str()).collect();
    let mut problems = Vec::new();
    let only_a: Vec<&&str> = names_a.difference(&names_b).collect();
    let only_b: Vec<&&str> = names_b.difference(&names_a).collect();
    if !only_a.is_empty() {
        problems.push(format!("columns only in {}: {only_a:?}", a.name));
    }
    if !only_b.is_empty() {
        problems.push(format!("columns only in {}: {only_b:?}", b.name));
    }
    for name in names_a.intersection(&names_b) {
        let (ca, cb) = (a.column(name), b.column(name));
        if let (Some(ca), Some(cb)) = (ca, cb) {
            if !types_compatible(ca.type_code, cb.type_code) {
                problems.push(format!(
                    "column {name:?} is {} in one and {} in the other",
                    type_name(ca.type_code),
                    type_name(cb.type_code)
                ));
            }
        }
    }
    if a.row_count != b.row_count {
        problems.push(format!("{} rows against {} rows", a.row_count, b.row_count));
    }
    if problems.is_empty() {
        Ok(names_a.into_iter().map(str::to_string).collect())
    } else {
        Err(problems.join("; "))
    }
}

/// Whether two tables hold the same rows, comparing columns by name whatever their order and
/// rows as a multiset (several connections interleave rows in no fixed order): the same
/// column names with the same types (TIMESTAMP and TIMESTAMP_NANOS count as one, compared in
/// nanoseconds), the same row count, and the same rows by `canonical` (NaN = NULL, ...).
/// The error lists what differs, with up to 5 rows found only on each side.
pub fn same_tables(a: &Table, b: &Table) -> Result<(), String> {
    let names = compare_schema(a, b).map_err(|e| format!("tables {} / {}: {e}", a.name, b.name))?;
    let mut ra = canonical_rows(a, &names);
    let mut rb = canonical_rows(b, &names);
    ra.sort();
    rb.sort();
    if ra == rb {
        return Ok(());
    }
    let (mut i, mut j) = (0, 0);
    let (mut only_a, mut only_b) = (Vec::new(), Vec::new());
    while i < ra.len() || j < rb.len() {
        match (ra.get(i), rb.get(j)) {
            (Some(x), Some(y)) if x == y => {
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x < y => {
                only_a.push(x.clone());
                i += 1;
            }
            (Some(_), Some(y)) => {
                only_b.push(y.clone());
                j += 1;
            }
            (Some(x), None) => {
                only_a.push(x.clone());
                i += 1;
            }
            (None, Some(y)) => {
                only_b.push(y.clone());
                j += 1;
            }
            (None, None) => break,
        }
    }
    Err(format!(
        "tables {} / {}: {} rows only in the first, {} only in the second\n  first: {}\n  \
         second: {}",
        a.name,
        b.name,
        only_a.len(),
        only_b.len(),
        only_a
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n         "),
        only_b
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n          "),
    ))
}

/// `same_tables`, and the rows also in the same order.
pub fn same_tables_in_order(a: &Table, b: &Table) -> Result<(), String> {
    let names = compare_schema(a, b).map_err(|e| format!("tables {} / {}: {e}", a.name, b.name))?;
    let ra = canonical_rows(a, &names);
    let rb = canonical_rows(b, &names);
    match (0..ra.len()).find(|&i| ra[i] != rb[i]) {
        None => Ok(()),
        Some(i) => Err(format!(
            "tables {} / {}: row {i} differs\n  first:  {}\n  second: {}",
            a.name, b.name, ra[i], rb[i]
        )),
    }
}
