//! The canonical result checksum of `check same results across endpoints` (docs/checksum.md,
//! which is normative; this module implements it).
//!
//! Every transport feeds each value of each row, in column order, to a [`ResultHasher`], which
//! encodes the value canonically (so that an int8 from PostgreSQL's binary format, a JSON
//! number from `/exec` and an SQLite INTEGER with the same value encode alike), hashes a row's
//! encodings with FNV-1a 64 and a final mix (`fmix64`), and adds the row hashes (wrapping):
//! the sum does not depend on the order of the rows, and, unlike XOR, two equal rows do not
//! cancel. The row count is compared separately and is not part of the checksum.
//!
//! Values, in short (docs/checksum.md §2):
//!
//! - NULL: its own tag, distinct from 0, the empty text and NaN;
//! - integers of any width, and booleans (as 0 and 1: SQLite has no other booleans): i64;
//! - floating-point numbers rounded to [`SIGNIFICANT_DIGITS`] significant decimal digits
//!   (single-precision ones to [`SIGNIFICANT_DIGITS_F32`] first); a
//!   rounded value that is a whole number in i64's range is that integer, so int 5, numeric 5,
//!   float 5.0 and float 4.9999999999999 are all the integer 5 (and -0.0 is 0); NaN, +inf and
//!   -inf have tags of their own;
//! - decimal (numeric) values: the integer if they are whole and fit i64, else the nearest
//!   double, as a float;
//! - timestamps, with or without zone, as UTC microseconds since the Unix epoch; dates as the
//!   microseconds of their midnight (UTC);
//! - text (varchar, symbol, uuid as lowercase hyphenated text, ...): its UTF-8 bytes.
//!
//! Nothing here allocates.

use std::fmt::Write as _;

/// The row hash's final mix: SplitMix64's output function (docs/rng.md §1.2). Every bit of a
/// row's FNV-1a state affects every bit of its hash, so sums of row hashes do not cancel the
/// way sums of raw FNV-1a states can (two rows whose last bytes swap).
pub use crate::gen::rng::fmix64;

/// Floating-point numbers are rounded to this many significant decimal digits before they are
/// hashed: a double printed with at least 12 significant digits (PostgreSQL's text output
/// prints 15 or the shortest round trip, JSON the shortest round trip) parses back to a value
/// with the same 12-digit rounding, and results computed in a different order on different
/// paths (sums of doubles) agree to about that many digits.
pub const SIGNIFICANT_DIGITS: u32 = 12;

/// Value tags: the first byte of every value's encoding.
pub const TAG_NULL: u8 = 0x00;
pub const TAG_INT: u8 = 0x01;
pub const TAG_FLOAT: u8 = 0x02;
pub const TAG_NAN: u8 = 0x03;
pub const TAG_POS_INF: u8 = 0x04;
pub const TAG_NEG_INF: u8 = 0x05;
pub const TAG_TEXT: u8 = 0x06;
pub const TAG_TIMESTAMP: u8 = 0x07;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// Microseconds per day.
pub const US_PER_DAY: i64 = 86_400_000_000;

/// A number in its canonical form: what `push_i64`, `push_f64` and `push_number` hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Number {
    /// A whole number in i64's range (from any integer type, a whole decimal, or a float whose
    /// 12-digit rounding is whole).
    Int(i64),
    /// `mantissa × 10^(exponent − 11)`: the float rounded to 12 significant digits, with
    /// `10^11 <= |mantissa| < 10^12` (the sign is the mantissa's), and not whole or outside
    /// i64's range.
    Float {
        mantissa: i64,
        exponent: i16,
    },
    NaN,
    PosInf,
    NegInf,
}

/// The canonical form of a double: see [`Number`] and docs/checksum.md §2.3.
pub fn canonical_f64(v: f64) -> Number {
    if v.is_nan() {
        return Number::NaN;
    }
    if v.is_infinite() {
        return if v > 0.0 {
            Number::PosInf
        } else {
            Number::NegInf
        };
    }
    if v == 0.0 {
        return Number::Int(0);
    }
    // Rust's exact formatting: the exact binary value correctly rounded to 12 significant
    // digits, ties to even, as `d.ddddddddddde<exp>`.
    let mut buf = StackText::<40>::new();
    let _ = write!(buf, "{:.11e}", v.abs());
    let text = buf.as_bytes();
    let mut mantissa: i64 = 0;
    let mut i = 0;
    while i < text.len() && text[i] != b'e' {
        if text[i].is_ascii_digit() {
            mantissa = mantissa * 10 + i64::from(text[i] - b'0');
        }
        i += 1;
    }
    let exponent: i32 = std::str::from_utf8(&text[i + 1..])
        .ok()
        .and_then(|e| e.parse().ok())
        .unwrap_or(0);
    if v < 0.0 {
        mantissa = -mantissa;
    }
    // The value is mantissa × 10^(exponent − 11): whole when no digit is below the units.
    let shift = exponent - (SIGNIFICANT_DIGITS as i32 - 1);
    if shift >= 0 {
        if let Some(n) = 10i64
            .checked_pow(shift as u32)
            .and_then(|p| mantissa.checked_mul(p))
        {
            return Number::Int(n);
        }
    } else if shift > -(SIGNIFICANT_DIGITS as i32) {
        let p = 10i64.pow((-shift) as u32);
        if mantissa % p == 0 {
            return Number::Int(mantissa / p);
        }
    }
    Number::Float {
        mantissa,
        exponent: exponent as i16,
    }
}

/// Single-precision floats are rounded to this many significant digits (FLT_DIG) first: the
/// digits a float4 keeps through any decimal text, PostgreSQL's 6-digit output with
/// `extra_float_digits = 0` included (which prints the float4 3.3000002 as `3.3`).
pub const SIGNIFICANT_DIGITS_F32: u32 = 6;

/// The canonical form of a single-precision float: the float rounded to 6 significant digits
/// (correctly, ties to even), read as a double, then as [`canonical_f64`]. So the float4
/// 3.3000002 is the double 3.3, whether it arrived in binary, as `3.3000002` or as `3.3`.
pub fn canonical_f32(v: f32) -> Number {
    if !v.is_finite() || v == 0.0 {
        return canonical_f64(f64::from(v));
    }
    let mut buf = StackText::<24>::new();
    let _ = write!(buf, "{:.5e}", v);
    let d = std::str::from_utf8(buf.as_bytes())
        .ok()
        .and_then(|t| t.parse::<f64>().ok())
        .unwrap_or(f64::from(v));
    canonical_f64(d)
}

/// The canonical form of a decimal number written as text (PostgreSQL's numeric output, a JSON
/// number): `[+-]digits[.digits][e[+-]digits]`, or `NaN`, `Infinity`, `-Infinity` (also `inf`,
/// any case). Without an exponent, a whole value that fits i64 is that integer, exactly (so a
/// numeric sum of bigints equals the bigint sum whatever its size); any other value is the
/// nearest double, as [`canonical_f64`]. `None` when the text is not a number.
pub fn canonical_decimal(text: &str) -> Option<Number> {
    let (negative, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if body.eq_ignore_ascii_case("nan") {
        return Some(Number::NaN);
    }
    if body.eq_ignore_ascii_case("infinity") || body.eq_ignore_ascii_case("inf") {
        return Some(if negative {
            Number::NegInf
        } else {
            Number::PosInf
        });
    }
    let b = body.as_bytes();
    let int_end = b
        .iter()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(b.len());
    let (int_digits, rest) = b.split_at(int_end);
    let (frac_digits, rest) = match rest.split_first() {
        Some((b'.', after)) => {
            let end = after
                .iter()
                .position(|c| !c.is_ascii_digit())
                .unwrap_or(after.len());
            after.split_at(end)
        }
        _ => (&[][..], rest),
    };
    if int_digits.is_empty() && frac_digits.is_empty() {
        return None;
    }
    if rest.is_empty() {
        if frac_digits.iter().all(|&c| c == b'0') {
            let mut n: i128 = 0;
            let mut fits = true;
            for &c in int_digits {
                n = n * 10 + i128::from(c - b'0');
                if n > i128::from(i64::MAX) + 1 {
                    fits = false;
                    break;
                }
            }
            if fits {
                let n = if negative { -n } else { n };
                if let Ok(n) = i64::try_from(n) {
                    return Some(Number::Int(n));
                }
            }
        }
    } else {
        // Only an exponent may follow: e, an optional sign, digits.
        let exp = match rest.split_first() {
            Some((b'e' | b'E', e)) => e,
            _ => return None,
        };
        let digits = match exp.first() {
            Some(b'+' | b'-') => &exp[1..],
            _ => exp,
        };
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
    }
    text.parse::<f64>().ok().map(canonical_f64)
}

/// Reads a timestamp or a date written as text into UTC microseconds since the Unix epoch:
///
/// - `YYYY-MM-DD` (midnight), then optionally `T` or a space and `HH:MM[:SS[.fraction]]`;
/// - then optionally a zone: `Z`, or `+HH`, `+HH:MM`, `+HHMM`, `+HH:MM:SS` (or `-`), the
///   offset from UTC, as PostgreSQL prints timestamptz (`2016-01-01 01:00:00+01`);
/// - then optionally ` BC` (PostgreSQL's years before 1 AD);
/// - `infinity` / `-infinity` are i64::MAX / i64::MIN, as PostgreSQL's binary format has them.
///
/// A time without zone is UTC. Fraction digits past the sixth are dropped (nanoseconds floor
/// to the microsecond). `None` for anything else or a value out of range.
pub fn parse_timestamp_us(text: &str) -> Option<i64> {
    match text {
        "infinity" | "+infinity" => return Some(i64::MAX),
        "-infinity" => return Some(i64::MIN),
        _ => {}
    }
    let (text, bc) = match text.strip_suffix(" BC") {
        Some(t) => (t, true),
        None => (text, false),
    };
    let mut p = Cursor {
        b: text.as_bytes(),
        i: 0,
    };
    let year = p.digits(4, 9)?;
    p.expect(b'-')?;
    let month = p.digits(2, 2)?;
    p.expect(b'-')?;
    let day = p.digits(2, 2)?;
    let year = if bc { 1 - year } else { year };
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let mut secs: i64 = 0;
    let mut micros: i64 = 0;
    if matches!(p.peek(), Some(b'T' | b' ')) {
        p.i += 1;
        let h = p.digits(2, 2)?;
        p.expect(b':')?;
        let m = p.digits(2, 2)?;
        let mut s = 0;
        if p.peek() == Some(b':') {
            p.i += 1;
            s = p.digits(2, 2)?;
            if p.peek() == Some(b'.') {
                p.i += 1;
                let start = p.i;
                while let Some(c) = p.peek().filter(u8::is_ascii_digit) {
                    if p.i - start < 6 {
                        micros = micros * 10 + i64::from(c - b'0');
                    }
                    p.i += 1;
                }
                let n = p.i - start;
                if n == 0 {
                    return None;
                }
                for _ in n..6 {
                    micros *= 10;
                }
            }
        }
        if h > 24 || m > 59 || s > 60 || (h == 24 && (m, s, micros) != (0, 0, 0)) {
            return None;
        }
        secs = h * 3600 + m * 60 + s;
        match p.peek() {
            Some(b'Z') => p.i += 1,
            Some(sign @ (b'+' | b'-')) => {
                p.i += 1;
                let oh = p.digits(2, 2)?;
                let mut offset = oh * 3600;
                for unit in [60, 1] {
                    if p.peek() == Some(b':') {
                        p.i += 1;
                    }
                    if p.peek().is_some_and(|c| c.is_ascii_digit()) {
                        offset += p.digits(2, 2)? * unit;
                    } else {
                        break;
                    }
                }
                if sign == b'+' {
                    secs -= offset;
                } else {
                    secs += offset;
                }
            }
            _ => {}
        }
    }
    if p.i != p.b.len() {
        return None;
    }
    let days = days_from_civil(year, month, day);
    days.checked_mul(US_PER_DAY)?
        .checked_add(secs.checked_mul(1_000_000)?)?
        .checked_add(micros)
}

/// Days from 1970-01-01 to the proleptic Gregorian date (`year` astronomical: 0 is 1 BC).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => 31,
    }
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn expect(&mut self, c: u8) -> Option<()> {
        (self.peek() == Some(c)).then(|| self.i += 1)
    }

    /// `min..=max` decimal digits.
    fn digits(&mut self, min: usize, max: usize) -> Option<i64> {
        let start = self.i;
        let mut v: i64 = 0;
        while self.i - start < max {
            match self.peek() {
                Some(c) if c.is_ascii_digit() => {
                    v = v * 10 + i64::from(c - b'0');
                    self.i += 1;
                }
                _ => break,
            }
        }
        (self.i - start >= min).then_some(v)
    }
}

/// A fixed-size text buffer for `write!`, so formatting allocates nothing.
struct StackText<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> StackText<N> {
    fn new() -> Self {
        StackText {
            buf: [0; N],
            len: 0,
        }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl<const N: usize> std::fmt::Write for StackText<N> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > N {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// The checksum of one result, fed value by value while the rows are read:
///
/// ```
/// use wlrun::query::checksum::ResultHasher;
/// let mut h = ResultHasher::new();
/// h.begin_row();
/// h.push_text("host_1");
/// h.push_i64(42);
/// h.push_null();
/// h.end_row();
/// let sum = h.finish();
/// assert_ne!(sum, 0);
/// ```
#[derive(Clone, Debug)]
pub struct ResultHasher {
    sum: u64,
    state: u64,
    rows: u64,
}

impl Default for ResultHasher {
    fn default() -> Self {
        ResultHasher::new()
    }
}

impl ResultHasher {
    pub fn new() -> ResultHasher {
        ResultHasher {
            sum: 0,
            state: FNV_OFFSET,
            rows: 0,
        }
    }

    /// Starts a row: the values pushed until `end_row` are its columns, in order.
    pub fn begin_row(&mut self) {
        self.state = FNV_OFFSET;
    }

    /// Ends the row and adds its hash to the checksum.
    pub fn end_row(&mut self) {
        self.sum = self.sum.wrapping_add(fmix64(self.state));
        self.rows += 1;
        self.state = FNV_OFFSET;
    }

    /// The checksum: the wrapping sum of the row hashes (0 for no rows).
    pub fn finish(&self) -> u64 {
        self.sum
    }

    /// Rows ended so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    #[inline]
    fn byte(&mut self, b: u8) {
        self.state = (self.state ^ u64::from(b)).wrapping_mul(FNV_PRIME);
    }

    #[inline]
    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    pub fn push_null(&mut self) {
        self.byte(TAG_NULL);
    }

    /// An integer of any width.
    pub fn push_i64(&mut self, v: i64) {
        self.byte(TAG_INT);
        self.bytes(&v.to_le_bytes());
    }

    /// A boolean: the integer 1 or 0.
    pub fn push_bool(&mut self, v: bool) {
        self.push_i64(i64::from(v));
    }

    /// A double, rounded (`canonical_f64`).
    pub fn push_f64(&mut self, v: f64) {
        self.push_number(canonical_f64(v));
    }

    /// A single-precision float (`canonical_f32`).
    pub fn push_f32(&mut self, v: f32) {
        self.push_number(canonical_f32(v));
    }

    /// A number already in canonical form (`canonical_decimal` for numeric text).
    pub fn push_number(&mut self, n: Number) {
        match n {
            Number::Int(v) => self.push_i64(v),
            Number::Float { mantissa, exponent } => {
                self.byte(TAG_FLOAT);
                self.bytes(&mantissa.to_le_bytes());
                self.bytes(&exponent.to_le_bytes());
            }
            Number::NaN => self.byte(TAG_NAN),
            Number::PosInf => self.byte(TAG_POS_INF),
            Number::NegInf => self.byte(TAG_NEG_INF),
        }
    }

    /// Text, as its UTF-8 bytes.
    pub fn push_text(&mut self, s: &str) {
        self.push_text_bytes(s.as_bytes());
    }

    /// Text given as bytes, which the caller knows to be UTF-8.
    pub fn push_text_bytes(&mut self, s: &[u8]) {
        self.byte(TAG_TEXT);
        self.bytes(&(s.len() as u64).to_le_bytes());
        self.bytes(s);
    }

    /// A timestamp (with or without zone; one without is taken as UTC) or a date (its
    /// midnight): microseconds since 1970-01-01T00:00:00Z.
    pub fn push_timestamp_us(&mut self, us: i64) {
        self.byte(TAG_TIMESTAMP);
        self.bytes(&us.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hash of a one-row result whose one value `push` pushes.
    fn one(push: impl FnOnce(&mut ResultHasher)) -> u64 {
        let mut h = ResultHasher::new();
        h.begin_row();
        push(&mut h);
        h.end_row();
        h.finish()
    }

    fn result(rows: &[&[Cell]]) -> u64 {
        let mut h = ResultHasher::new();
        for row in rows {
            h.begin_row();
            for c in *row {
                match c {
                    Cell::Null => h.push_null(),
                    Cell::I(v) => h.push_i64(*v),
                    Cell::F(v) => h.push_f64(*v),
                    Cell::T(s) => h.push_text(s),
                    Cell::Ts(us) => h.push_timestamp_us(*us),
                }
            }
            h.end_row();
        }
        assert_eq!(h.rows(), rows.len() as u64);
        h.finish()
    }

    #[derive(Clone, Copy)]
    enum Cell {
        Null,
        I(i64),
        F(f64),
        T(&'static str),
        Ts(i64),
    }
    use Cell::*;

    #[test]
    fn the_hash_is_pinned() {
        // docs/checksum.md §5 gives these values: a QWP client must reproduce them.
        assert_eq!(ResultHasher::new().finish(), 0);
        assert_eq!(
            result(&[&[I(1), T("a"), Null]]),
            0x3c18_5aaf_8001_6270,
            "{:#x}",
            result(&[&[I(1), T("a"), Null]])
        );
        assert_eq!(
            result(&[&[F(0.5), Ts(1_451_606_400_000_000)]]),
            0x2962_87ba_a5f0_1027,
            "{:#x}",
            result(&[&[F(0.5), Ts(1_451_606_400_000_000)]])
        );
    }

    #[test]
    fn the_combination_is_pinned() {
        // docs/checksum.md §5: two rows, in either order; a row twice.
        let r1: &[Cell] = &[I(1), T("a"), Null];
        let r2: &[Cell] = &[F(0.5), Ts(1_451_606_400_000_000)];
        assert_eq!(result(&[r1, r2]), 0x657a_e26a_25f1_7297);
        assert_eq!(result(&[r2, r1]), 0x657a_e26a_25f1_7297);
        assert_eq!(result(&[r1, r1]), 0x7830_b55f_0002_c4e0);
        // The FNV-1a state of the first row before the final mix.
        let mut h = ResultHasher::new();
        h.begin_row();
        h.push_i64(1);
        h.push_text("a");
        h.push_null();
        assert_eq!(h.state, 0x63b9_5724_da2b_4f39);
        assert_eq!(fmix64(h.state), 0x3c18_5aaf_8001_6270);
    }

    #[test]
    fn ints_whole_decimals_and_whole_floats_are_equal() {
        let five = one(|h| h.push_i64(5));
        assert_eq!(one(|h| h.push_f64(5.0)), five);
        assert_eq!(one(|h| h.push_f32(5.0)), five);
        for text in [
            "5",
            "5.000",
            "+5",
            "5.",
            "5e0",
            "0.5e1",
            "5.0000000000000000001",
        ] {
            assert_eq!(canonical_decimal(text), Some(Number::Int(5)), "{text}");
        }
        // Float error below the 12th digit: still 5.
        assert_eq!(one(|h| h.push_f64(4.999_999_999_999_9)), five);
        assert_eq!(one(|h| h.push_f64(5.000_000_000_001)), five);
        // ... but not above it.
        assert_ne!(one(|h| h.push_f64(5.000_000_000_1)), five);
        assert_ne!(one(|h| h.push_i64(6)), five);
        assert_eq!(one(|h| h.push_bool(true)), one(|h| h.push_i64(1)));
        assert_eq!(one(|h| h.push_bool(false)), one(|h| h.push_i64(0)));
        // -0.0 is 0.
        assert_eq!(one(|h| h.push_f64(-0.0)), one(|h| h.push_i64(0)));
        assert_eq!(canonical_decimal("-0.00"), Some(Number::Int(0)));
        // Large whole numerics stay exact (a numeric SUM of bigints equals the bigint sum).
        assert_eq!(
            canonical_decimal("9223372036854775807"),
            Some(Number::Int(i64::MAX))
        );
        assert_eq!(
            canonical_decimal("-9223372036854775808.000"),
            Some(Number::Int(i64::MIN))
        );
        assert_eq!(
            canonical_decimal("123456789012345678"),
            Some(Number::Int(123_456_789_012_345_678))
        );
        // A whole float in i64 range with more than 12 digits is rounded first.
        assert_eq!(
            canonical_f64(123_456_789_012_345.0),
            Number::Int(123_456_789_012_000)
        );
        // Past i64: a float.
        assert_eq!(
            canonical_decimal("92233720368547758080"),
            Some(Number::Float {
                mantissa: 922_337_203_685,
                exponent: 19
            })
        );
        assert_eq!(
            canonical_f64(1e300),
            Number::Float {
                mantissa: 100_000_000_000,
                exponent: 300
            }
        );
    }

    #[test]
    fn non_whole_numbers_round_to_12_digits() {
        assert_eq!(
            canonical_f64(0.1),
            Number::Float {
                mantissa: 100_000_000_000,
                exponent: -1
            }
        );
        assert_eq!(canonical_decimal("0.1"), Some(canonical_f64(0.1)));
        assert_eq!(canonical_decimal("0.1000"), Some(canonical_f64(0.1)));
        assert_eq!(
            canonical_f64(-2.5),
            Number::Float {
                mantissa: -250_000_000_000,
                exponent: 0
            }
        );
        // 0.1 + 0.2 is 0.30000000000000004: the same as 0.3 after rounding.
        assert_eq!(canonical_f64(0.1 + 0.2), canonical_f64(0.3));
        // Text round trips with 15 significant digits (PostgreSQL's extra_float_digits = 0).
        let x = 1.0 / 3.0;
        let printed: f64 = format!("{x:.14e}").parse().unwrap();
        assert_ne!(printed, x);
        assert_eq!(canonical_f64(printed), canonical_f64(x));
        // The boundary: the 13th digit decides, ties to even.
        assert_eq!(
            canonical_f64(1.234_567_890_124_9),
            Number::Float {
                mantissa: 123_456_789_012,
                exponent: 0
            }
        );
        assert_eq!(
            canonical_f64(1.234_567_890_125_1),
            Number::Float {
                mantissa: 123_456_789_013,
                exponent: 0
            }
        );
        // Exactly representable ties: 0.5 ulp of the 12th digit, to the even neighbour.
        assert_eq!(
            canonical_f64(1_234_567_890_125.0),
            Number::Int(1_234_567_890_120)
        );
        assert_eq!(
            canonical_f64(1_234_567_890_135.0),
            Number::Int(1_234_567_890_140)
        );
        assert_ne!(one(|h| h.push_f64(1.0001)), one(|h| h.push_f64(1.0002)));
        // A carry into a new digit: 999999.9999999995 -> 1000000.
        assert_eq!(canonical_f64(999_999.999_999_999_5), Number::Int(1_000_000));
        // float4: 6 significant digits, not its binary expansion.
        assert_eq!(canonical_f32(1.1), canonical_f64(1.1));
        assert_eq!(canonical_f32(3.300_000_2), canonical_f64(3.3));
        assert_eq!(canonical_f32(3.3), canonical_f64(3.3));
        assert_eq!(canonical_f32(123_456_789.0), Number::Int(123_457_000));
        // 1.234565f32 is 1.23456502...: up. Exact ties go to the even neighbour.
        assert_eq!(canonical_f32(1.234_565), canonical_f64(1.23457));
        assert_eq!(canonical_f32(1_234_565.0), Number::Int(1_234_560));
        assert_eq!(canonical_f32(1_234_575.0), Number::Int(1_234_580));
        assert_ne!(canonical_f32(1.2345), canonical_f32(1.2346));
        assert_eq!(canonical_f32(2.5), canonical_f64(2.5));
        assert_eq!(canonical_f32(-0.0), Number::Int(0));
        assert_eq!(canonical_f32(f32::NAN), Number::NaN);
        assert_eq!(canonical_f32(f32::NEG_INFINITY), Number::NegInf);
        // Subnormals and extremes stay in range.
        assert!(matches!(
            canonical_f64(5e-324),
            Number::Float { exponent: -324, .. }
        ));
        assert!(matches!(
            canonical_f64(f64::MAX),
            Number::Float { exponent: 308, .. }
        ));
    }

    #[test]
    fn nan_and_infinities_are_tagged() {
        assert_eq!(canonical_f64(f64::NAN), Number::NaN);
        assert_eq!(canonical_f64(f64::INFINITY), Number::PosInf);
        assert_eq!(canonical_f64(f64::NEG_INFINITY), Number::NegInf);
        assert_eq!(canonical_decimal("NaN"), Some(Number::NaN));
        assert_eq!(canonical_decimal("Infinity"), Some(Number::PosInf));
        assert_eq!(canonical_decimal("-Infinity"), Some(Number::NegInf));
        assert_eq!(canonical_decimal("-inf"), Some(Number::NegInf));
        let tags = [
            one(|h| h.push_f64(f64::NAN)),
            one(|h| h.push_f64(f64::INFINITY)),
            one(|h| h.push_f64(f64::NEG_INFINITY)),
            one(|h| h.push_null()),
            one(|h| h.push_f64(f64::MAX)),
        ];
        for (i, a) in tags.iter().enumerate() {
            for b in &tags[i + 1..] {
                assert_ne!(a, b);
            }
        }
        for bad in [
            "", "-", ".", "1.2.3", "1e", "1e+", "abc", "1 ", " 1", "0x10", "1_000",
        ] {
            assert_eq!(canonical_decimal(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn null_empty_text_and_zero_are_distinct() {
        let values = [
            one(|h| h.push_null()),
            one(|h| h.push_text("")),
            one(|h| h.push_i64(0)),
            one(|h| h.push_text("0")),
            one(|h| h.push_timestamp_us(0)),
            one(|h| h.push_f64(0.5)),
            one(|h| h.push_text("NULL")),
            one(|_| {}),
        ];
        for (i, a) in values.iter().enumerate() {
            for (j, b) in values.iter().enumerate().skip(i + 1) {
                assert_ne!(a, b, "values {i} and {j}");
            }
        }
        // Column boundaries count: ("ab", "c") is not ("a", "bc").
        assert_ne!(result(&[&[T("ab"), T("c")]]), result(&[&[T("a"), T("bc")]]));
        // Nor is a row of two values two rows of one.
        assert_ne!(result(&[&[I(1), I(2)]]), result(&[&[I(1)], &[I(2)]]));
    }

    #[test]
    fn row_order_does_not_matter_and_duplicates_do_not_cancel() {
        let a: &[Cell] = &[T("host_1"), I(7), F(1.5)];
        let b: &[Cell] = &[T("host_2"), I(8), Null];
        let c: &[Cell] = &[T("host_3"), I(9), Ts(5)];
        let abc = result(&[a, b, c]);
        assert_eq!(result(&[c, a, b]), abc);
        assert_eq!(result(&[b, c, a]), abc);
        // Column order does.
        assert_ne!(result(&[&[I(7), T("host_1"), F(1.5)], b, c]), abc);
        // Two equal rows count twice (XOR would give 0 for them).
        assert_ne!(result(&[a, a]), 0);
        assert_ne!(result(&[a, a]), result(&[]));
        assert_ne!(result(&[a, a, b]), result(&[b]));
        assert_ne!(result(&[a, a]), result(&[a]));
        // Values swapped between rows: a different result, a different checksum.
        assert_ne!(
            result(&[&[I(1), T("host_1")], &[I(2), T("host_2")]]),
            result(&[&[I(1), T("host_2")], &[I(2), T("host_1")]])
        );
        // One value off by one.
        assert_ne!(result(&[a, b, &[T("host_3"), I(10), Ts(5)]]), abc);
    }

    #[test]
    fn swapped_last_bytes_do_not_cancel() {
        // Without the final mix, sums of raw FNV-1a states cancel for many such pairs.
        let mut distinct = 0;
        for k in 0..200u32 {
            let (x, y) = (format!("k{k}_1"), format!("k{k}_2"));
            let (p, q) = (format!("j{k}_1"), format!("j{k}_2"));
            let h = |r1: (&str, &str), r2: (&str, &str)| {
                let mut h = ResultHasher::new();
                for (a, b) in [r1, r2] {
                    h.begin_row();
                    h.push_text(a);
                    h.push_text(b);
                    h.end_row();
                }
                h.finish()
            };
            if h(("a", &x), ("b", &y)) != h(("a", &y), ("b", &x))
                && h((&p, "a"), (&q, "b")) != h((&q, "a"), (&p, "b"))
            {
                distinct += 1;
            }
        }
        assert_eq!(distinct, 200);
    }

    #[test]
    fn timestamps_with_and_without_zone_are_utc_microseconds() {
        let t0 = 1_451_606_400_000_000; // 2016-01-01T00:00:00Z
        for text in [
            "2016-01-01 00:00:00",
            "2016-01-01T00:00:00Z",
            "2016-01-01 00:00:00+00",
            "2016-01-01 01:00:00+01",
            "2016-01-01 05:30:00+05:30",
            "2016-01-01 05:30:00+0530",
            "2015-12-31 19:00:00-05",
            "2016-01-01 00:00:00.000000",
            "2016-01-01T00:00:00.000Z",
            "2016-01-01",
        ] {
            assert_eq!(parse_timestamp_us(text), Some(t0), "{text}");
        }
        assert_eq!(
            parse_timestamp_us("2016-01-01 00:00:10.5+00"),
            Some(t0 + 10_500_000)
        );
        assert_eq!(
            parse_timestamp_us("2016-01-01T00:00:00.123456789Z"),
            Some(t0 + 123_456)
        );
        assert_eq!(
            parse_timestamp_us("2016-01-01 00:00:00.000001"),
            Some(t0 + 1)
        );
        assert_eq!(parse_timestamp_us("1970-01-01"), Some(0));
        assert_eq!(parse_timestamp_us("1969-12-31 23:59:59.999999"), Some(-1));
        assert_eq!(parse_timestamp_us("2016-02-29"), Some(t0 + 59 * US_PER_DAY));
        // 0001-01-01 BC is year 0, 366 days before 0001-01-01.
        assert_eq!(
            parse_timestamp_us("0001-01-01 00:00:00 BC"),
            parse_timestamp_us("0001-01-01").map(|us| us - 366 * US_PER_DAY)
        );
        assert_eq!(parse_timestamp_us("infinity"), Some(i64::MAX));
        assert_eq!(parse_timestamp_us("-infinity"), Some(i64::MIN));
        for bad in [
            "",
            "2016-13-01",
            "2015-02-29",
            "2016-01-01 25:00:00",
            "2016-01-01 00:00:00.",
            "2016-01-01 00:00:00 junk",
            "2016/01/01",
            "16-01-01",
            "2016-01-01T",
        ] {
            assert_eq!(parse_timestamp_us(bad), None, "{bad:?}");
        }
        // A timestamptz and a timestamp of the same instant hash alike, as does the date.
        let with_zone =
            one(|h| h.push_timestamp_us(parse_timestamp_us("2016-01-01 01:00:00+01").unwrap()));
        let without =
            one(|h| h.push_timestamp_us(parse_timestamp_us("2016-01-01 00:00:00").unwrap()));
        let date = one(|h| h.push_timestamp_us(parse_timestamp_us("2016-01-01").unwrap()));
        assert_eq!(with_zone, without);
        assert_eq!(with_zone, date);
        // ... and not as the same number.
        assert_ne!(with_zone, one(|h| h.push_i64(t0)));
    }

    #[test]
    fn days_from_civil_matches_the_csv_encoders_inverse() {
        for days in [-719_468i64, -1, 0, 1, 10_957, 16_801, 2_932_896] {
            let (y, m, d) = crate::encode::csv::civil_from_days(days);
            assert_eq!(days_from_civil(y, i64::from(m), i64::from(d)), days);
        }
    }
}
