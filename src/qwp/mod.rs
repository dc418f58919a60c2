//! QuestDB's QWP v1: the binary columnar protocol over WebSocket (spec notes:
//! `../shared/reference/qwp.md`; public docs "QWP ingress/egress over WebSocket").
//!
//! - this file: the wire's constants and primitives (little-endian values, LEB128 varints,
//!   a bounds-checked reader that never panics on a malformed message);
//! - `ws`: the WebSocket upgrade both directions share (tokio-tungstenite), with the QWP
//!   headers;
//!
//! The ingest encoder is `encode::qwp` (it reads column batches like every other encoder); the
//! ingest driver is `driver::qwp`; the query transport, with the read protocol's
//! client side (QUERY_REQUEST, RESULT_BATCH decoding), is `query::transport::qwp`.

pub mod ws;

/// "QWP1": the first four bytes of every message that carries the 12-byte header.
pub const MAGIC: [u8; 4] = *b"QWP1";
/// The only protocol version.
pub const VERSION: u8 = 1;
/// Bytes of the message header: magic, version, flags, table count (u16), payload length (u32).
pub const HEADER_LEN: usize = 12;

/// Header flags.
pub const FLAG_DEFER_COMMIT: u8 = 0x01;
pub const FLAG_GORILLA: u8 = 0x04;
pub const FLAG_DELTA_SYMBOL_DICT: u8 = 0x08;
pub const FLAG_ZSTD: u8 = 0x10;

/// Ingestion paths: `/write/v4` (docs, Java, Go) and its alias `/api/v4/write` (Rust core).
pub const INGEST_PATH: &str = "/write/v4";
pub const INGEST_PATH_ALIAS: &str = "/api/v4/write";
/// The query path.
pub const QUERY_PATH: &str = "/read/v1";

/// What the server accepts per message when it does not say (`X-QWP-Max-Batch-Size`): its
/// default receive buffer (2 MiB) less 14 bytes.
pub const DEFAULT_SERVER_MAX_BATCH: usize = 2_097_138;
/// The protocol's ceiling per message, whatever a server advertises.
pub const MAX_MESSAGE: usize = 16 << 20;
/// Rows per table block a server takes by default (`qwp.max.rows.per.table`).
pub const MAX_ROWS_PER_TABLE: usize = 1_000_000;

/// Column type codes.
pub mod types {
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

    /// The type's name in QuestDB's vocabulary, for messages.
    pub fn name(code: u8) -> &'static str {
        match code {
            BOOLEAN => "BOOLEAN",
            BYTE => "BYTE",
            SHORT => "SHORT",
            INT => "INT",
            LONG => "LONG",
            FLOAT => "FLOAT",
            DOUBLE => "DOUBLE",
            SYMBOL => "SYMBOL",
            TIMESTAMP => "TIMESTAMP",
            DATE => "DATE",
            UUID => "UUID",
            LONG256 => "LONG256",
            GEOHASH => "GEOHASH",
            VARCHAR => "VARCHAR",
            TIMESTAMP_NANOS => "TIMESTAMP_NS",
            DOUBLE_ARRAY => "DOUBLE[]",
            LONG_ARRAY => "LONG[]",
            DECIMAL64 => "DECIMAL64",
            DECIMAL128 => "DECIMAL128",
            DECIMAL256 => "DECIMAL256",
            CHAR => "CHAR",
            BINARY => "BINARY",
            IPV4 => "IPv4",
            _ => "unknown",
        }
    }
}

/// Status codes, shared by ingestion replies and query errors.
pub mod status {
    pub const OK: u8 = 0x00;
    pub const DURABLE_ACK: u8 = 0x02;
    pub const SCHEMA_MISMATCH: u8 = 0x03;
    pub const PARSE_ERROR: u8 = 0x05;
    pub const INTERNAL_ERROR: u8 = 0x06;
    pub const SECURITY_ERROR: u8 = 0x08;
    pub const WRITE_ERROR: u8 = 0x09;
    pub const CANCELLED: u8 = 0x0A;
    pub const LIMIT_EXCEEDED: u8 = 0x0B;
    pub const NOT_WRITABLE: u8 = 0x0C;
    pub const DICTIONARY_GAP: u8 = 0x0D;

    /// The status's name as the docs spell it, for messages.
    pub fn name(code: u8) -> &'static str {
        match code {
            OK => "OK",
            DURABLE_ACK => "DURABLE_ACK",
            SCHEMA_MISMATCH => "SCHEMA_MISMATCH",
            PARSE_ERROR => "PARSE_ERROR",
            INTERNAL_ERROR => "INTERNAL_ERROR",
            SECURITY_ERROR => "SECURITY_ERROR",
            WRITE_ERROR => "WRITE_ERROR",
            CANCELLED => "CANCELLED",
            LIMIT_EXCEEDED => "LIMIT_EXCEEDED",
            NOT_WRITABLE => "NOT_WRITABLE",
            DICTIONARY_GAP => "DICTIONARY_GAP",
            _ => "UNKNOWN_STATUS",
        }
    }
}

/// Appends `v` as an unsigned LEB128 varint.
#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Bytes `put_varint` writes for `v`.
#[inline]
pub fn varint_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Appends a QWP string: varint byte length, then the UTF-8 bytes.
#[inline]
pub fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// Writes the 12-byte message header at `out[at..at + 12]` (reserved by the caller), with the
/// payload length taken from what follows it.
pub fn patch_header(out: &mut [u8], at: usize, flags: u8, table_count: u16) {
    let payload = (out.len() - at - HEADER_LEN) as u32;
    out[at..at + 4].copy_from_slice(&MAGIC);
    out[at + 4] = VERSION;
    out[at + 5] = flags;
    out[at + 6..at + 8].copy_from_slice(&table_count.to_le_bytes());
    out[at + 8..at + 12].copy_from_slice(&payload.to_le_bytes());
}

/// A malformed message: what was wrong and where. Decoders return it; they never panic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed {
    pub at: usize,
    pub what: String,
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "malformed QWP message at byte {}: {}",
            self.at, self.what
        )
    }
}

/// A bounds-checked cursor over one message.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    pub fn malformed(&self, what: impl Into<String>) -> Malformed {
        Malformed {
            at: self.pos,
            what: what.into(),
        }
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if n > self.remaining() {
            return Err(self.malformed(format!("{n} bytes wanted, {} left", self.remaining())));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn u8(&mut self) -> Result<u8, Malformed> {
        Ok(self.take(1)?[0])
    }

    pub fn u16(&mut self) -> Result<u16, Malformed> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    pub fn u32(&mut self) -> Result<u32, Malformed> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub fn i64(&mut self) -> Result<i64, Malformed> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    pub fn u64(&mut self) -> Result<u64, Malformed> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], Malformed> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// An unsigned LEB128 varint of at most 10 bytes that fits in a u64.
    pub fn varint(&mut self) -> Result<u64, Malformed> {
        let start = self.pos;
        let mut v: u64 = 0;
        for i in 0..10 {
            let b = self.u8()?;
            let part = (b & 0x7F) as u64;
            if i == 9 && part > 1 {
                self.pos = start;
                return Err(self.malformed("varint overflows 64 bits"));
            }
            v |= part << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        self.pos = start;
        Err(self.malformed("varint longer than 10 bytes"))
    }

    /// A varint that must fit `max` (a count or a length): anything larger is malformed.
    pub fn count(&mut self, what: &str, max: u64) -> Result<usize, Malformed> {
        let at = self.pos;
        let v = self.varint()?;
        if v > max {
            return Err(Malformed {
                at,
                what: format!("{what} {v} exceeds {max}"),
            });
        }
        Ok(v as usize)
    }

    /// A QWP string (varint length + UTF-8).
    pub fn str(&mut self) -> Result<&'a str, Malformed> {
        let n = self.count("string length", self.remaining() as u64)?;
        let at = self.pos;
        let b = self.take(n)?;
        std::str::from_utf8(b).map_err(|_| Malformed {
            at,
            what: "string is not UTF-8".into(),
        })
    }
}

/// The header of a server or ingest message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub version: u8,
    pub flags: u8,
    pub table_count: u16,
    pub payload_len: u32,
}

/// Reads and checks the 12-byte header; the payload length must be exactly what follows.
pub fn read_header(r: &mut Reader<'_>) -> Result<Header, Malformed> {
    let magic: [u8; 4] = r.array()?;
    if magic != MAGIC {
        return Err(Malformed {
            at: 0,
            what: format!("magic {magic:02x?} is not \"QWP1\""),
        });
    }
    let version = r.u8()?;
    if version != VERSION {
        return Err(Malformed {
            at: 4,
            what: format!("version {version}; this client speaks version {VERSION}"),
        });
    }
    let flags = r.u8()?;
    let table_count = r.u16()?;
    let payload_len = r.u32()?;
    if payload_len as usize != r.remaining() {
        return Err(Malformed {
            at: 8,
            what: format!(
                "payload length {payload_len} but {} bytes follow the header",
                r.remaining()
            ),
        });
    }
    Ok(Header {
        version,
        flags,
        table_count,
        payload_len,
    })
}

/// Test support: hex text (whitespace ignored) as bytes, and a golden frame of
/// tests/fixtures/qwp by name.
#[cfg(test)]
pub(crate) mod testing {
    pub fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digits"))
            .collect()
    }

    pub fn fixture(name: &str) -> Vec<u8> {
        let path = format!(
            "{}/tests/fixtures/qwp/{name}.hex",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        hex(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_match_the_spec_examples() {
        for (v, bytes) in [
            (0u64, &[0x00][..]),
            (127, &[0x7F]),
            (128, &[0x80, 0x01]),
            (300, &[0xAC, 0x02]),
            (65536, &[0x80, 0x80, 0x04]),
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out, bytes, "{v}");
            assert_eq!(varint_len(v), bytes.len(), "{v}");
            assert_eq!(Reader::new(bytes).varint(), Ok(v));
        }
        let mut out = Vec::new();
        put_varint(&mut out, u64::MAX);
        assert_eq!(out.len(), 10);
        assert_eq!(varint_len(u64::MAX), 10);
        assert_eq!(Reader::new(&out).varint(), Ok(u64::MAX));
    }

    #[test]
    fn malformed_varints_are_errors() {
        assert!(Reader::new(&[0x80]).varint().is_err());
        assert!(Reader::new(&[0xFF; 11]).varint().is_err());
        let mut too_big = vec![0xFF; 9];
        too_big.push(0x02);
        assert!(Reader::new(&too_big).varint().is_err());
    }

    #[test]
    fn headers_check_magic_version_and_length() {
        let mut m = vec![0u8; HEADER_LEN];
        m.extend_from_slice(b"abc");
        patch_header(&mut m, 0, FLAG_DELTA_SYMBOL_DICT, 1);
        let h = read_header(&mut Reader::new(&m)).unwrap();
        assert_eq!((h.flags, h.table_count, h.payload_len), (0x08, 1, 3));
        let mut short = m.clone();
        short.pop();
        assert!(read_header(&mut Reader::new(&short)).is_err());
        let mut bad = m.clone();
        bad[0] = b'X';
        assert!(read_header(&mut Reader::new(&bad)).is_err());
        bad = m;
        bad[4] = 2;
        assert!(read_header(&mut Reader::new(&bad))
            .unwrap_err()
            .what
            .contains("version 2"));
    }
}
