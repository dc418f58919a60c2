//! A RESULT_BATCH's column sections: the first pass (`section`) checks each one against the
//! bytes really there and leaves a `Cursor` at its values; the second pass pulls the next
//! value of a column from its cursor (`Cursor::push_next`) and hands it to `values`.

use super::dict::Dict;
use super::frames::Column;
use super::values::{push_decimal, push_fixed, push_geohash, push_temporal, Values};
use crate::qwp::{types, Malformed, Reader, FLAG_DELTA_SYMBOL_DICT, FLAG_GORILLA};

const MAX_ARRAY_DIMS: u8 = 32;

/// Where one column's values are, and how to read the next one.
#[derive(Clone, Copy, Debug)]
pub(super) struct Cursor {
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
pub(super) struct Gorilla {
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
pub(super) fn section(
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

/// What the second pass reads from besides the cursors.
pub(super) struct Source<'a> {
    pub(super) frame: &'a [u8],
    pub(super) dict: &'a Dict,
    pub(super) local: &'a [(usize, usize)],
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
    pub(super) fn is_null(&self, frame: &[u8], row: usize) -> bool {
        match self.bitmap {
            None => false,
            Some(at) => frame
                .get(at + row / 8)
                .is_some_and(|b| (b >> (row % 8)) & 1 == 1),
        }
    }

    /// Hashes the column's next non-NULL value (by the bitmap) and moves past it.
    pub(super) fn push_next<V: Values + ?Sized>(
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
