//! One wire value in docs/checksum.md §6's terms, fed to a `Values`: NULL sentinels as NULL,
//! temporal types as microseconds, CHAR, IPv4, UUID, LONG256, GEOHASH and decimals as the text
//! QuestDB prints, built on the stack.

use crate::query::checksum::{canonical_decimal, ResultHasher};
use crate::qwp::types;

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

fn le<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    let n = N.min(b.len());
    a[..n].copy_from_slice(&b[..n]);
    a
}

/// A fixed-width value, NULL sentinels as NULL (spec §5.4; docs/checksum.md §6).
pub(super) fn push_fixed<V: Values + ?Sized>(code: u8, b: &[u8], h: &mut V) {
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
pub(super) fn push_temporal<V: Values + ?Sized>(code: u8, v: i64, h: &mut V) {
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
pub(super) fn push_geohash<V: Values + ?Sized>(b: &[u8], bits: u8, h: &mut V) {
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
pub(super) fn push_decimal<V: Values + ?Sized>(b: &[u8], scale: u8, h: &mut V) {
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
