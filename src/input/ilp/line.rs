//! The grammar of one ILP line: escapes, the word-at-a-time scanner, field values, and the
//! measurement, tags and fields cut into spans of the line (`head`, `fields`). The file reader
//! in `input::ilp` turns those spans into rows. The scanner is the reader's hot loop: its
//! `#[inline]`s are part of the measured speed.

use crate::gen::batch::Physical;

pub(super) const SPACE: u8 = 1;
pub(super) const COMMA: u8 = 2;
pub(super) const EQUALS: u8 = 4;
pub(super) const BACKSLASH: u8 = 8;

/// The bytes the unquoted scanner stops at or treats specially; 0 for every other byte, so
/// the common case is one table load and one test.
pub(super) static CLASS: [u8; 256] = classes();

const fn classes() -> [u8; 256] {
    let mut t = [0u8; 256];
    t[b' ' as usize] = SPACE;
    t[b',' as usize] = COMMA;
    t[b'=' as usize] = EQUALS;
    t[b'\\' as usize] = BACKSLASH;
    t
}

/// Whether a backslash before `c` escapes it (else the backslash is kept as text).
fn escapable(c: u8, quoted: bool) -> bool {
    if quoted {
        matches!(c, b'"' | b'\\' | b'\n' | b'\r')
    } else {
        matches!(c, b' ' | b',' | b'=' | b'\\' | b'\n' | b'\r')
    }
}

/// Appends `raw` with its escapes undone.
pub(super) fn unescape_into(out: &mut Vec<u8>, raw: &[u8], quoted: bool) {
    let mut i = 0;
    let mut run = 0;
    while i < raw.len() {
        if raw[i] == b'\\' && raw.get(i + 1).is_some_and(|&c| escapable(c, quoted)) {
            out.extend_from_slice(&raw[run..i]);
            run = i + 1;
            i += 2;
        } else {
            i += 1;
        }
    }
    out.extend_from_slice(&raw[run..]);
}

/// A piece of a line: bytes `a..b`, `esc` when they hold a backslash (and may need unescaping).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Span {
    pub(super) a: usize,
    pub(super) b: usize,
    pub(super) esc: bool,
}

impl Span {
    pub(super) fn raw(self, line: &[u8]) -> &[u8] {
        line.get(self.a..self.b).unwrap_or_default()
    }

    pub(super) fn is_empty(self) -> bool {
        self.a >= self.b
    }
}

/// A field value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Val {
    Long(i64),
    Double(f64),
    Bool(bool),
    Str(Span),
    /// A `123t` timestamp, already in nanoseconds.
    Micros(i64),
}

impl Val {
    pub(super) fn physical(self) -> Physical {
        match self {
            Val::Long(_) => Physical::Long,
            Val::Double(_) => Physical::Double,
            Val::Bool(_) => Physical::Bool,
            Val::Str(_) => Physical::Varchar,
            Val::Micros(_) => Physical::Timestamp,
        }
    }
}

pub(super) fn describe(p: Physical) -> &'static str {
    match p {
        Physical::Long => "an integer",
        Physical::Double => "a double",
        Physical::Bool => "a boolean",
        Physical::Varchar | Physical::Symbol => "a string",
        Physical::Timestamp => "a timestamp",
    }
}

/// A line cut into spans; reused from line to line.
#[derive(Debug, Default)]
pub(super) struct Tokens {
    pub(super) table: Span,
    /// Key, value and column (`UNRESOLVED` unless a hint found it).
    pub(super) tags: Vec<(Span, Span, usize)>,
    pub(super) fields: Vec<(Span, Val, usize)>,
    pub(super) ts: i64,
}

/// Text for an error message: the raw bytes, shortened.
pub(super) fn show(raw: &[u8]) -> String {
    let s = String::from_utf8_lossy(raw);
    match s.char_indices().nth(60) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.into_owned(),
    }
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

pub(super) const fn splat(b: u8) -> u64 {
    LO * b as u64
}

/// High bit of each zero byte of `x`. Bits above the first zero byte may be false alarms, so
/// only the lowest set bit is to be trusted (and it always is, also in an OR of such masks).
#[inline(always)]
pub(super) fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(LO) & !x & HI
}

#[inline(always)]
pub(super) fn word(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

/// Bytes of `w` that a scan for `stops` must look at: the stops and backslashes.
#[inline(always)]
fn specials(w: u64, stops: u8) -> u64 {
    let mut m = zero_bytes(w ^ splat(b'\\'));
    if stops & SPACE != 0 {
        m |= zero_bytes(w ^ splat(b' '));
    }
    if stops & COMMA != 0 {
        m |= zero_bytes(w ^ splat(b','));
    }
    if stops & EQUALS != 0 {
        m |= zero_bytes(w ^ splat(b'='));
    }
    m
}

/// An unquoted token from `i` up to the first unescaped byte of class `stops` (or the end).
/// Eight bytes at a time while they hold nothing to look at. Always inlined, so that each
/// call site's constant `stops` folds away the tests for the other bytes.
#[inline(always)]
pub(super) fn scan(line: &[u8], mut i: usize, stops: u8) -> Span {
    let a = i;
    let mut esc = false;
    loop {
        while let Some(c) = line.get(i..i + 8) {
            let m = specials(word(c), stops);
            if m != 0 {
                i += (m.trailing_zeros() / 8) as usize;
                break;
            }
            i += 8;
        }
        let Some(&c) = line.get(i) else { break };
        let k = CLASS[c as usize];
        if k & stops != 0 {
            break;
        }
        if k == BACKSLASH {
            // Whatever follows a backslash never ends the token.
            esc = true;
            i += 2;
        } else {
            i += 1;
        }
    }
    Span {
        a,
        b: i.min(line.len()),
        esc,
    }
}

/// A string's contents from `i` (just after the opening quote) to the closing quote.
pub(super) fn quoted(line: &[u8], mut i: usize) -> Option<Span> {
    let a = i;
    let mut esc = false;
    loop {
        while let Some(c) = line.get(i..i + 8) {
            let w = word(c);
            let m = zero_bytes(w ^ splat(b'"')) | zero_bytes(w ^ splat(b'\\'));
            if m != 0 {
                i += (m.trailing_zeros() / 8) as usize;
                break;
            }
            i += 8;
        }
        match line.get(i)? {
            b'"' => return Some(Span { a, b: i, esc }),
            b'\\' => {
                esc = true;
                i += 2;
            }
            _ => i += 1,
        }
    }
}

/// Whether `a == b`, without a `memcmp` call for the short keys lines are made of.
#[inline]
pub(super) fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if (8..=16).contains(&n) {
        // Two overlapping words cover it.
        word(a) == word(b) && word(&a[n - 8..]) == word(&b[n - 8..])
    } else if n < 8 {
        a.iter().zip(b).all(|(x, y)| x == y)
    } else {
        a == b
    }
}

/// Whether `line` has `key` at `at`.
#[inline(always)]
fn has_at(line: &[u8], at: usize, key: &[u8]) -> bool {
    line.get(at..at + key.len()).is_some_and(|s| same(s, key))
}

/// No column resolved yet.
pub(super) const UNRESOLVED: usize = usize::MAX;

/// A column as lines usually spell it: `key=` escaped as the ILP encoder escapes keys. Finding
/// it where the first line had it replaces cutting the key and looking it up.
#[derive(Debug)]
pub(super) struct Hint {
    pub(super) key: Box<[u8]>,
    pub(super) esc: bool,
    pub(super) col: usize,
}

impl Hint {
    pub(super) fn new(name: &str, col: usize) -> Hint {
        let mut key = Vec::with_capacity(name.len() + 1);
        for &c in name.as_bytes() {
            if matches!(c, b' ' | b',' | b'=' | b'\\') {
                key.push(b'\\');
            }
            key.push(c);
        }
        let esc = key.len() > name.len();
        key.push(b'=');
        Hint {
            key: key.into(),
            esc,
            col,
        }
    }
}

/// The tags and the fields in the first line's order.
#[derive(Debug, Default)]
pub(super) struct Hints {
    pub(super) tags: Vec<Hint>,
    pub(super) fields: Vec<Hint>,
}

/// The key at `at` if it is `hint`'s: its span and column.
#[inline(always)]
fn hinted(line: &[u8], at: usize, hint: Option<&Hint>) -> Option<(Span, usize)> {
    let h = hint?;
    if !has_at(line, at, &h.key) {
        return None;
    }
    let span = Span {
        a: at,
        b: at + h.key.len() - 1,
        esc: h.esc,
    };
    Some((span, h.col))
}

/// A decimal `i64`, optionally signed; `None` on anything else or overflow.
fn parse_i64(b: &[u8]) -> Option<i64> {
    let (neg, digits) = match b {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, b),
    };
    if digits.is_empty() {
        return None;
    }
    // Accumulated negative, so that i64::MIN fits.
    let mut v: i64 = 0;
    for &d in digits {
        let d = d.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_sub(i64::from(d))?;
    }
    if neg {
        Some(v)
    } else {
        v.checked_neg()
    }
}

/// An unquoted field value.
fn value(raw: &[u8], key: &[u8]) -> Result<Val, String> {
    let (Some(&first), Some(&last)) = (raw.first(), raw.last()) else {
        return Err(format!("field `{}` has no value", show(key)));
    };
    let bad = |what: &str| format!("field `{}`: `{}` is not {what}", show(key), show(raw));
    if matches!(first, b't' | b'T' | b'f' | b'F') {
        return match raw {
            b"t" | b"T" | b"true" | b"True" | b"TRUE" => Ok(Val::Bool(true)),
            b"f" | b"F" | b"false" | b"False" | b"FALSE" => Ok(Val::Bool(false)),
            _ => Err(bad(
                "a boolean (t, T, true, True, TRUE, f, F, false, False, FALSE)",
            )),
        };
    }
    let body = &raw[..raw.len() - 1];
    let numeric = first.is_ascii_digit() || first == b'-' || first == b'+';
    match last {
        b'i' if numeric => parse_i64(body)
            .map(Val::Long)
            .ok_or_else(|| bad("a 64-bit integer")),
        b'u' if numeric => Err(format!(
            "field `{}`: unsigned integers (`{}`) are not supported; write `{}i`",
            show(key),
            show(raw),
            show(body)
        )),
        b't' if numeric => parse_i64(body)
            .and_then(|us| us.checked_mul(1_000))
            .map(Val::Micros)
            .ok_or_else(|| bad("a timestamp in microseconds within 64-bit nanoseconds")),
        _ => std::str::from_utf8(raw)
            .ok()
            .and_then(|s| s.parse::<f64>().ok())
            .map(Val::Double)
            .ok_or_else(|| {
                bad("a number, a boolean or a string (strings go in double quotes; integers end in `i`)")
            }),
    }
}

/// Cuts the measurement and tags; returns where the fields start.
pub(super) fn head(line: &[u8], t: &mut Tokens, hints: &Hints) -> Result<usize, String> {
    t.tags.clear();
    t.fields.clear();
    let m = scan(line, 0, COMMA | SPACE);
    if m.is_empty() {
        return Err("no measurement (the line starts with a separator)".into());
    }
    t.table = m;
    let mut i = m.b;
    let mut next = 0;
    while line.get(i) == Some(&b',') {
        let (k, col) = match hinted(line, i + 1, hints.tags.get(next)) {
            Some(found) => found,
            None => (scan(line, i + 1, COMMA | SPACE | EQUALS), UNRESOLVED),
        };
        next += 1;
        if k.is_empty() {
            return Err(format!("an empty tag key at byte {}", i + 2));
        }
        if line.get(k.b) != Some(&b'=') {
            return Err(format!("tag `{}` has no `=value`", show(k.raw(line))));
        }
        let v = scan(line, k.b + 1, COMMA | SPACE);
        if v.is_empty() {
            return Err(format!("tag `{}` has an empty value", show(k.raw(line))));
        }
        t.tags.push((k, v, col));
        i = v.b;
    }
    if i >= line.len() {
        return Err("no fields: the line ends after the measurement and tags".into());
    }
    // `scan` stopped at a space: the only other stop, a comma, was taken by the loop.
    while line.get(i) == Some(&b' ') {
        i += 1;
    }
    Ok(i)
}

/// Cuts and reads the fields from `i` and the timestamp after them.
pub(super) fn fields(
    line: &[u8],
    mut i: usize,
    t: &mut Tokens,
    hints: &Hints,
) -> Result<(), String> {
    let mut next = 0;
    loop {
        let (k, col) = match hinted(line, i, hints.fields.get(next)) {
            Some(found) => found,
            None => (scan(line, i, COMMA | SPACE | EQUALS), UNRESOLVED),
        };
        next += 1;
        if k.is_empty() {
            return Err(if i >= line.len() {
                "no fields: the line ends after the measurement and tags".into()
            } else {
                format!("an empty field key at byte {}", i + 1)
            });
        }
        let key = k.raw(line);
        if line.get(k.b) != Some(&b'=') {
            return Err(format!("field `{}` has no `=value`", show(key)));
        }
        let at = k.b + 1;
        let (val, end) = if line.get(at) == Some(&b'"') {
            let s = quoted(line, at + 1)
                .ok_or_else(|| format!("field `{}`: the string has no closing `\"`", show(key)))?;
            (Val::Str(s), s.b + 1)
        } else {
            let v = scan(line, at, COMMA | SPACE);
            (value(v.raw(line), key)?, v.b)
        };
        t.fields.push((k, val, col));
        i = end;
        match line.get(i) {
            Some(b',') => i += 1,
            Some(b' ') => break,
            None => {
                return Err(
                    "no timestamp: every line of a file needs one (rows read from a file \
                     must be the same rows on every run)"
                        .into(),
                )
            }
            Some(&c) => {
                return Err(format!(
                    "`{}` after the value of field `{}` (a `,` or a space expected)",
                    show(&[c]),
                    show(key)
                ))
            }
        }
    }
    while line.get(i) == Some(&b' ') {
        i += 1;
    }
    let mut end = line.len();
    while end > i && matches!(line[end - 1], b' ' | b'\t' | b'\r') {
        end -= 1;
    }
    let raw = &line[i.min(end)..end];
    if raw.is_empty() {
        return Err(
            "no timestamp: every line of a file needs one (rows read from a file \
                    must be the same rows on every run)"
                .into(),
        );
    }
    t.ts = parse_i64(raw).ok_or_else(|| {
        format!(
            "the timestamp `{}` is not an integer number of nanoseconds",
            show(raw)
        )
    })?;
    Ok(())
}
