//! ILP text files: one row per line,
//!
//! ```text
//! <measurement>[,<tag>=<value>...] <field>=<value>[,<field>=<value>...] <ns timestamp>
//! ```
//!
//! read as QuestDB and its clients write it, and as `encode::ilp` writes it, so that re-encoding
//! what is read here gives the same bytes back:
//!
//! - Field values: `123i` long, `123t` timestamp in microseconds (QuestDB), `t`/`T`/`true`/
//!   `True`/`TRUE` and the same for false boolean, `"..."` string, anything else a double if it
//!   reads as one (`1.5`, `1e3`, `-0.0`, `NaN`, `Infinity`, `-Infinity`). Unsigned `123u` is
//!   refused: QuestDB has no unsigned integers.
//! - Escapes: in the measurement, keys and tag values a backslash before space, `,`, `=`, `\`,
//!   a line feed or a carriage return stands for that byte; in strings before `"`, `\`, a line
//!   feed or a carriage return. A backslash before anything else is itself (InfluxDB's rule), so
//!   `C:\dir` needs no escaping. An escaped line feed does not end the line (QuestDB's client
//!   writes line breaks in values that way).
//! - The first line that is not blank and not a `#` comment fixes the schema: its measurement
//!   is the table, its tags and fields the columns, in its order. Later lines may leave out
//!   tags and fields (null) and list them in any order, but may not bring new ones, change a
//!   field's type or name another table.
//! - Every line needs a timestamp: rows replayed from a file must be the same rows every time,
//!   and a server-assigned time is not.
//!
//! Speed (~7,000 instructions a TSBS cpu-only line of ~340 bytes): a line is found with a
//! word-at-a-time search for `\n`, checked as UTF-8 once and cut into spans of the line (no
//! copies); values are scanned eight bytes at a time and pushed straight into the batch's
//! columns. Keys are not cut and looked up when the line has, where the first line had it, the
//! expected `key=` (one short comparison); otherwise a hash map finds the column.

use std::collections::HashMap;
use std::sync::Arc;

use super::{
    file_schema, push_null, ColumnKind, Input, More, NewColumn, Opts, Shard, MAX_BATCH_BYTES,
    MAX_RECORD_BYTES,
};
use crate::gen::batch::{Batch, BatchSchema, Physical, Values};

const SPACE: u8 = 1;
const COMMA: u8 = 2;
const EQUALS: u8 = 4;
const BACKSLASH: u8 = 8;

/// The bytes the unquoted scanner stops at or treats specially; 0 for every other byte, so
/// the common case is one table load and one test.
static CLASS: [u8; 256] = classes();

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
fn unescape_into(out: &mut Vec<u8>, raw: &[u8], quoted: bool) {
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
struct Span {
    a: usize,
    b: usize,
    esc: bool,
}

impl Span {
    fn raw(self, line: &[u8]) -> &[u8] {
        line.get(self.a..self.b).unwrap_or_default()
    }

    fn is_empty(self) -> bool {
        self.a >= self.b
    }
}

/// A field value.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Val {
    Long(i64),
    Double(f64),
    Bool(bool),
    Str(Span),
    /// A `123t` timestamp, already in nanoseconds.
    Micros(i64),
}

impl Val {
    fn physical(self) -> Physical {
        match self {
            Val::Long(_) => Physical::Long,
            Val::Double(_) => Physical::Double,
            Val::Bool(_) => Physical::Bool,
            Val::Str(_) => Physical::Varchar,
            Val::Micros(_) => Physical::Timestamp,
        }
    }
}

fn describe(p: Physical) -> &'static str {
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
struct Tokens {
    table: Span,
    /// Key, value and column (`UNRESOLVED` unless a hint found it).
    tags: Vec<(Span, Span, usize)>,
    fields: Vec<(Span, Val, usize)>,
    ts: i64,
}

/// Text for an error message: the raw bytes, shortened.
fn show(raw: &[u8]) -> String {
    let s = String::from_utf8_lossy(raw);
    match s.char_indices().nth(60) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.into_owned(),
    }
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

const fn splat(b: u8) -> u64 {
    LO * b as u64
}

/// High bit of each zero byte of `x`. Bits above the first zero byte may be false alarms, so
/// only the lowest set bit is to be trusted (and it always is, also in an OR of such masks).
#[inline(always)]
fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(LO) & !x & HI
}

#[inline(always)]
fn word(b: &[u8]) -> u64 {
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
fn scan(line: &[u8], mut i: usize, stops: u8) -> Span {
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
fn quoted(line: &[u8], mut i: usize) -> Option<Span> {
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
fn same(a: &[u8], b: &[u8]) -> bool {
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
const UNRESOLVED: usize = usize::MAX;

/// A column as lines usually spell it: `key=` escaped as the ILP encoder escapes keys. Finding
/// it where the first line had it replaces cutting the key and looking it up.
#[derive(Debug)]
struct Hint {
    key: Box<[u8]>,
    esc: bool,
    col: usize,
}

impl Hint {
    fn new(name: &str, col: usize) -> Hint {
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
struct Hints {
    tags: Vec<Hint>,
    fields: Vec<Hint>,
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
fn head(line: &[u8], t: &mut Tokens, hints: &Hints) -> Result<usize, String> {
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
fn fields(line: &[u8], mut i: usize, t: &mut Tokens, hints: &Hints) -> Result<(), String> {
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

fn trim_start(line: &[u8]) -> &[u8] {
    let n = line
        .iter()
        .position(|&c| c != b' ' && c != b'\t')
        .unwrap_or(line.len());
    &line[n..]
}

/// Whether a line holds a row (else it is blank or a comment).
fn is_row(line: &[u8]) -> bool {
    let l = trim_start(line);
    !(l.is_empty() || l[0] == b'#' || l.iter().all(|&c| matches!(c, b' ' | b'\t' | b'\r')))
}

fn check_utf8(line: &[u8]) -> Result<(), String> {
    std::str::from_utf8(line)
        .map(|_| ())
        .map_err(|e| format!("not UTF-8 text (byte {} of the line)", e.valid_up_to() + 1))
}

/// `detect`'s look at the first bytes: the first row line starts like ILP.
pub(super) fn looks_like_ilp(first: &[u8]) -> Result<(), String> {
    let mut rest = first;
    // The number of the next line.
    let mut lines = 1;
    while !rest.is_empty() {
        // The next line; a line break after an odd run of backslashes is escaped.
        let mut from = 0;
        let len = loop {
            match find_newline(&rest[from..]).map(|p| p + from) {
                Some(p) if rest[..p].iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 1 => {
                    from = p + 1
                }
                Some(p) => break p,
                None => break rest.len(),
            }
        };
        let line = &rest[..len];
        let n = lines;
        lines += 1 + line.iter().filter(|&&c| c == b'\n').count();
        rest = rest.get(len + 1..).unwrap_or_default();
        if !is_row(line) {
            continue;
        }
        if let Some(p) = line
            .iter()
            .position(|&c| c < 0x20 && !matches!(c, b'\t' | b'\r' | b'\n'))
        {
            return Err(format!(
                "line {n} holds the byte {:#04x} at byte {}, which is not text",
                line[p],
                p + 1
            ));
        }
        if let Err(e) = std::str::from_utf8(line) {
            // A character cut by the end of what was looked at is fine.
            if e.error_len().is_some() {
                return Err(format!(
                    "line {n} is not UTF-8 text (byte {})",
                    e.valid_up_to() + 1
                ));
            }
        }
        let line = trim_start(line);
        let m = scan(line, 0, COMMA | SPACE);
        if m.is_empty() {
            return Err(format!("line {n} does not start with a measurement"));
        }
        if !line.contains(&b'=') {
            return Err(format!("line {n} (`{}`) has no `key=value`", show(line)));
        }
        return Ok(());
    }
    // Only comments so far: text, and perhaps rows further on; opening the file will tell.
    Ok(())
}

/// Where the next line ends in `input.data()`.
#[derive(Debug)]
struct Record {
    /// The line's bytes, without its `\n`.
    len: usize,
    /// Bytes to consume: the line and its `\n`, if any.
    consume: usize,
    /// Line breaks the record spans (escaped ones included), for line numbers.
    lines: u64,
}

/// The first byte `\n` in `b`, eight bytes at a time.
fn find_newline(b: &[u8]) -> Option<usize> {
    let mut chunks = b.chunks_exact(8);
    let mut at = 0;
    for c in &mut chunks {
        let z = zero_bytes(word(c) ^ splat(b'\n'));
        if z != 0 {
            return Some(at + (z.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&c| c == b'\n')
        .map(|p| at + p)
}

/// Finds the line at the start of `input.data()`, reading more as needed; `None` at the end.
fn next_record(input: &mut Input) -> Result<Option<Record>, String> {
    let mut from = 0;
    let mut escaped = 0u64;
    loop {
        let data = input.data();
        while let Some(p) = find_newline(&data[from..]).map(|p| p + from) {
            let backslashes = data[..p].iter().rev().take_while(|&&c| c == b'\\').count();
            if backslashes % 2 == 1 {
                escaped += 1;
                from = p + 1;
                continue;
            }
            return Ok(Some(Record {
                len: p,
                consume: p + 1,
                lines: 1 + escaped,
            }));
        }
        from = data.len();
        match input.more(MAX_RECORD_BYTES) {
            Ok(More::Read) => {}
            Ok(More::Eof) => {
                let n = input.data().len();
                return Ok((n > 0).then_some(Record {
                    len: n,
                    consume: n,
                    lines: 1 + escaped,
                }));
            }
            Ok(More::Full) => {
                return Err(format!(
                    "a line longer than {} MiB (is this really ILP text?)",
                    MAX_RECORD_BYTES >> 20
                ))
            }
            Err(e) => return Err(format!("read failed: {e}")),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Tag,
    Field(Physical),
    Designated,
}

struct Col {
    name: Box<[u8]>,
    kind: Kind,
}

/// Everything a line is parsed against, and the per-line scratch.
struct Parser {
    cols: Vec<Col>,
    index: HashMap<Box<[u8]>, usize>,
    table: Box<[u8]>,
    series_key: Option<usize>,
    designated: usize,
    /// The line the schema came from, for errors.
    schema_line: u64,
    hints: Hints,
    tokens: Tokens,
    /// Per column, the `stamp` of the last line that set it.
    seen: Vec<u64>,
    stamp: u64,
    tag_cols: Vec<usize>,
    scratch: Vec<u8>,
}

/// The key of `span` with escapes undone (in `scratch` when there are any).
fn key_of<'a>(line: &'a [u8], span: Span, scratch: &'a mut Vec<u8>) -> &'a [u8] {
    if span.esc {
        scratch.clear();
        unescape_into(scratch, span.raw(line), false);
        scratch
    } else {
        span.raw(line)
    }
}

/// The column named by `span`: `expect` if it is that one, else by the map.
fn lookup(
    cols: &[Col],
    index: &HashMap<Box<[u8]>, usize>,
    scratch: &mut Vec<u8>,
    line: &[u8],
    span: Span,
    expect: usize,
) -> Option<usize> {
    let key = key_of(line, span, scratch);
    if cols.get(expect).is_some_and(|c| same(&c.name, key)) {
        return Some(expect);
    }
    index.get(key).copied()
}

/// Appends a span's text to a varchar column.
fn push_span(values: &mut Values, line: &[u8], span: Span, quoted: bool) {
    if let Values::Varchar { offsets, bytes } = values {
        let raw = span.raw(line);
        if span.esc {
            unescape_into(bytes, raw, quoted);
        } else {
            bytes.extend_from_slice(raw);
        }
        offsets.push(bytes.len() as u32);
    }
}

/// The schema of a first line.
fn infer(line: &[u8], t: &mut Tokens) -> Result<(BatchSchema, Vec<Col>), String> {
    check_utf8(line)?;
    let none = Hints::default();
    let at = head(line, t, &none)?;
    fields(line, at, t, &none)?;
    let text = |s: Span, quoted: bool| {
        let mut v = Vec::new();
        unescape_into(&mut v, s.raw(line), quoted);
        String::from_utf8_lossy(&v).into_owned()
    };
    let table = text(t.table, false);
    let mut columns = Vec::new();
    for &(k, _, _) in &t.tags {
        columns.push(NewColumn {
            name: text(k, false),
            kind: ColumnKind::Tag,
        });
    }
    for &(k, v, _) in &t.fields {
        columns.push(NewColumn {
            name: text(k, false),
            kind: ColumnKind::Field(v.physical()),
        });
    }
    let schema = file_schema(&table, &columns)?;
    let mut cols: Vec<Col> = columns
        .iter()
        .map(|c| Col {
            name: c.name.as_bytes().into(),
            kind: match c.kind {
                ColumnKind::Tag => Kind::Tag,
                ColumnKind::Field(p) => Kind::Field(p),
            },
        })
        .collect();
    cols.push(Col {
        name: super::TIMESTAMP.as_bytes().into(),
        kind: Kind::Designated,
    });
    Ok((schema, cols))
}

impl Parser {
    fn new(line: &[u8], schema_line: u64) -> Result<(Parser, BatchSchema), String> {
        let mut tokens = Tokens::default();
        let (schema, cols) = infer(line, &mut tokens)?;
        let index = cols
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name.clone(), i))
            .collect();
        let mut table = Vec::new();
        unescape_into(&mut table, tokens.table.raw(line), false);
        let mut hints = Hints::default();
        for (i, c) in schema.columns.iter().enumerate() {
            match cols.get(i).map(|c| c.kind) {
                Some(Kind::Tag) => hints.tags.push(Hint::new(&c.name, i)),
                Some(Kind::Field(_)) => hints.fields.push(Hint::new(&c.name, i)),
                _ => {}
            }
        }
        let parser = Parser {
            hints,
            index,
            table: table.into(),
            series_key: schema.series_key,
            designated: cols.len() - 1,
            schema_line,
            tokens,
            seen: vec![0; cols.len()],
            stamp: 0,
            tag_cols: Vec::new(),
            scratch: Vec::new(),
            cols,
        };
        Ok((parser, schema))
    }

    /// Parses a row line into `batch`, or only as far as routing needs when the row belongs to
    /// another shard; returns whether it was kept.
    fn row(
        &mut self,
        line: &[u8],
        row_index: u64,
        route: Option<Shard>,
        batch: &mut Batch,
    ) -> Result<bool, String> {
        let line = trim_start(line);
        check_utf8(line)?;
        let Parser {
            cols,
            index,
            table,
            series_key,
            designated,
            schema_line,
            hints,
            tokens: t,
            seen,
            stamp,
            tag_cols,
            scratch,
        } = self;
        let (series_key, designated, schema_line) = (*series_key, *designated, *schema_line);
        let not_in_schema = |what: &str, key: &[u8]| {
            format!(
                "{what} `{}` is not in the schema of line {schema_line} (the first line fixes \
                 the columns)",
                show(key)
            )
        };
        let at = head(line, t, hints)?;
        if !same(key_of(line, t.table, scratch), table) {
            return Err(format!(
                "measurement `{}`, but line {schema_line} made this a file of `{}` (one table \
                 per file)",
                show(t.table.raw(line)),
                show(table)
            ));
        }
        *stamp += 1;
        let stamp = *stamp;
        tag_cols.clear();
        let mut expect = 0;
        let mut key = None;
        for &(k, v, col) in &t.tags {
            let c = match col {
                UNRESOLVED => match lookup(cols, index, scratch, line, k, expect) {
                    Some(c) => c,
                    None => return Err(not_in_schema("tag", k.raw(line))),
                },
                c => c,
            };
            match cols[c].kind {
                Kind::Tag => {}
                Kind::Field(_) | Kind::Designated => {
                    return Err(format!(
                        "`{}` is a tag here but a field in line {}",
                        show(k.raw(line)),
                        schema_line
                    ))
                }
            }
            if seen[c] == stamp {
                return Err(format!("tag `{}` appears twice", show(k.raw(line))));
            }
            seen[c] = stamp;
            tag_cols.push(c);
            expect = c + 1;
            if Some(c) == series_key {
                key = Some(v);
            }
        }
        if let Some(shard) = route {
            let mine = match (series_key, key) {
                (Some(_), Some(v)) => shard.owns(key_of(line, v, scratch)),
                (Some(_), None) => shard.owns(b""),
                (None, _) => shard.owns_row(row_index),
            };
            if !mine {
                return Ok(false);
            }
        }
        fields(line, at, t, hints)?;
        let row = batch.rows;
        for (&c, &(_, v, _)) in tag_cols.iter().zip(&t.tags) {
            push_span(&mut batch.columns[c].values, line, v, false);
        }
        for &(k, val, col) in &t.fields {
            let c = match col {
                UNRESOLVED => match lookup(cols, index, scratch, line, k, expect) {
                    Some(c) => c,
                    None => return Err(not_in_schema("field", k.raw(line))),
                },
                c => c,
            };
            let want = match cols[c].kind {
                Kind::Field(p) => p,
                Kind::Tag => {
                    return Err(format!(
                        "`{}` is a field here but a tag in line {}",
                        show(k.raw(line)),
                        schema_line
                    ))
                }
                Kind::Designated => {
                    return Err(format!(
                        "a field named `{}`, the designated timestamp column's name",
                        super::TIMESTAMP
                    ))
                }
            };
            if want != val.physical() {
                return Err(format!(
                    "field `{}` is {} here but {} in line {} (the first line fixes the types)",
                    show(k.raw(line)),
                    describe(val.physical()),
                    describe(want),
                    schema_line
                ));
            }
            if seen[c] == stamp {
                return Err(format!("field `{}` appears twice", show(k.raw(line))));
            }
            seen[c] = stamp;
            expect = c + 1;
            let values = &mut batch.columns[c].values;
            match (val, values) {
                (Val::Long(x), Values::Long(v)) => v.push(x),
                (Val::Double(x), Values::Double(v)) => v.push(x),
                (Val::Bool(x), Values::Bool(v)) => v.push(x),
                (Val::Micros(x), Values::Timestamp(v)) => v.push(x),
                (Val::Str(s), v @ Values::Varchar { .. }) => push_span(v, line, s, true),
                // The kinds were matched against the schema just above.
                _ => {}
            }
        }
        if let Values::Timestamp(v) = &mut batch.columns[designated].values {
            v.push(t.ts);
        }
        seen[designated] = stamp;
        if tag_cols.len() + t.fields.len() + 1 < cols.len() {
            for (c, col) in batch.columns.iter_mut().enumerate() {
                if seen.get(c) != Some(&stamp) {
                    push_null(&mut col.values);
                    col.nulls.set(row);
                }
            }
        }
        batch.series.push(0);
        batch.rows += 1;
        Ok(true)
    }
}

/// An ILP file being read.
pub(super) struct IlpSource {
    input: Input,
    opts: Opts,
    schema: Arc<BatchSchema>,
    parser: Parser,
    /// The line number of the next line.
    line: u64,
    /// Rows of the file passed so far.
    rows: u64,
}

impl IlpSource {
    /// Reads up to the first row line and takes the schema from it (without consuming it).
    pub(super) fn open(mut input: Input, opts: Opts) -> Result<IlpSource, String> {
        let mut line = 1;
        let name = &opts.name;
        loop {
            let rec = next_record(&mut input).map_err(|e| format!("{name}: line {line}: {e}"))?;
            let Some(rec) = rec else {
                return Err(format!(
                    "{name}: no rows: the file holds only blank lines and `#` comments, so \
                     there is no first line to take the schema from"
                ));
            };
            let text = input.data().get(..rec.len).unwrap_or_default();
            if is_row(text) {
                let (parser, schema) = Parser::new(trim_start(text), line)
                    .map_err(|e| format!("{name}: line {line}: {e}"))?;
                return Ok(IlpSource {
                    input,
                    opts,
                    schema: Arc::new(schema),
                    parser,
                    line,
                    rows: 0,
                });
            }
            input.consume(rec.consume);
            line += rec.lines;
        }
    }

    pub(super) fn schema(&self) -> Arc<BatchSchema> {
        Arc::clone(&self.schema)
    }

    pub(super) fn rows_read(&self) -> u64 {
        self.rows
    }

    pub(super) fn offset(&self) -> u64 {
        self.input.offset()
    }

    /// Appends rows of this shard to `batch` (cleared by the caller) up to `max_rows`.
    pub(super) fn fill(&mut self, batch: &mut Batch, max_rows: usize) -> Result<(), String> {
        let mut bytes = 0;
        while batch.rows < max_rows && bytes < MAX_BATCH_BYTES {
            if self.opts.limit.is_some_and(|l| self.rows >= l) {
                break;
            }
            let rec = next_record(&mut self.input)
                .map_err(|e| format!("{}: line {}: {e}", self.opts.name, self.line))?;
            let Some(rec) = rec else { break };
            let line_no = self.line;
            self.line += rec.lines;
            let text = self.input.data().get(..rec.len).unwrap_or_default();
            if !is_row(text) {
                self.input.consume(rec.consume);
                continue;
            }
            let row = self.rows;
            self.rows += 1;
            let kept = self.parser.row(text, row, self.opts.route, batch);
            self.input.consume(rec.consume);
            if kept.map_err(|e| format!("{}: line {line_no}: {e}", self.opts.name))? {
                bytes += rec.consume;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::encode::IlpEncoder;
    use crate::input::FileReader;

    fn tokens(line: &str) -> Result<Tokens, String> {
        let mut t = Tokens::default();
        let none = Hints::default();
        let at = head(line.as_bytes(), &mut t, &none)?;
        fields(line.as_bytes(), at, &mut t, &none)?;
        Ok(t)
    }

    fn text(line: &str, s: Span, quoted: bool) -> String {
        let mut v = Vec::new();
        unescape_into(&mut v, s.raw(line.as_bytes()), quoted);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn escapes_in_every_position() {
        let line = r#"we\ ather\,x,lo\=c\ a=S\,F\=1\ 2\\,k\\=v f\ 1="a \"q\" \\ \n",f\,2=1i 17"#;
        let t = tokens(line).unwrap();
        assert_eq!(text(line, t.table, false), "we ather,x");
        let tags: Vec<(String, String)> = t
            .tags
            .iter()
            .map(|&(k, v, _)| (text(line, k, false), text(line, v, false)))
            .collect();
        assert_eq!(
            tags,
            [
                ("lo=c a".to_string(), "S,F=1 2\\".to_string()),
                ("k\\".to_string(), "v".to_string())
            ]
        );
        assert_eq!(text(line, t.fields[0].0, false), "f 1");
        let Val::Str(s) = t.fields[0].1 else {
            panic!("{:?}", t.fields[0].1)
        };
        // `\n` that is not a line feed keeps its backslash: only `"`, `\`, LF and CR escape.
        assert_eq!(text(line, s, true), r#"a "q" \ \n"#);
        assert_eq!(text(line, t.fields[1].0, false), "f,2");
        assert_eq!(t.fields[1].1, Val::Long(1));
        assert_eq!(t.ts, 17);
        // A backslash before an ordinary byte is itself; before a line break it escapes it.
        let line = "m,p=C:\\dir\\x,q=a\\\nb s=\"x\\\ry\" 1";
        let t = tokens(line).unwrap();
        assert_eq!(text(line, t.tags[0].1, false), "C:\\dir\\x");
        assert_eq!(text(line, t.tags[1].1, false), "a\nb");
        let Val::Str(s) = t.fields[0].1 else { panic!() };
        assert_eq!(text(line, s, true), "x\ry");
        // An escaped space does not end the measurement or a value.
        let t = tokens(r"a\ b c\ d=1i 2").unwrap();
        assert!(t.tags.is_empty());
        assert_eq!(t.fields.len(), 1);
    }

    #[test]
    fn field_types() {
        let t = tokens(
            "m a=1i,b=-9223372036854775808i,c=1.5,d=1e3,e=-0.0,f=NaN,g=Infinity,h=-Infinity,\
             i=t,j=T,k=true,l=True,m=TRUE,n=f,o=F,p=false,q=False,r=FALSE,s=\"\",u=12t,v=7,w=-3t \
             -5",
        )
        .unwrap();
        let vals: Vec<Val> = t.fields.iter().map(|f| f.1).collect();
        assert_eq!(vals[0], Val::Long(1));
        assert_eq!(vals[1], Val::Long(i64::MIN));
        assert_eq!(vals[2], Val::Double(1.5));
        assert_eq!(vals[3], Val::Double(1000.0));
        assert!(matches!(vals[4], Val::Double(x) if x == 0.0 && x.is_sign_negative()));
        assert!(matches!(vals[5], Val::Double(x) if x.is_nan()));
        assert_eq!(vals[6], Val::Double(f64::INFINITY));
        assert_eq!(vals[7], Val::Double(f64::NEG_INFINITY));
        for v in &vals[8..13] {
            assert_eq!(*v, Val::Bool(true));
        }
        for v in &vals[13..18] {
            assert_eq!(*v, Val::Bool(false));
        }
        assert!(matches!(vals[18], Val::Str(s) if s.is_empty()));
        assert_eq!(vals[19], Val::Micros(12_000));
        assert_eq!(vals[20], Val::Double(7.0));
        assert_eq!(vals[21], Val::Micros(-3_000));
        assert_eq!(t.ts, -5);
    }

    #[test]
    fn malformed_lines_say_what_is_wrong() {
        let cases = [
            ("cpu,host=a usage=abc 123", "`abc` is not a number"),
            ("cpu,host=a usage=1i", "no timestamp"),
            ("cpu,host=a usage=1i ", "no timestamp"),
            (
                "cpu,host=a usage=1i 12x",
                "timestamp `12x` is not an integer",
            ),
            ("cpu,host=a", "no fields"),
            ("cpu,host=a ", "no fields"),
            ("cpu,host usage=1i 1", "tag `host` has no `=value`"),
            ("cpu,host= usage=1i 1", "tag `host` has an empty value"),
            ("cpu,=a usage=1i 1", "an empty tag key"),
            (",host=a usage=1i 1", "no measurement"),
            ("cpu usage 1", "field `usage` has no `=value`"),
            ("cpu usage= 1", "field `usage` has no value"),
            ("cpu usage=\"abc 1", "no closing `\"`"),
            (
                "cpu usage=\"abc\"x 1",
                "`x` after the value of field `usage`",
            ),
            ("cpu usage=99999999999999999999i 1", "not a 64-bit integer"),
            (
                "cpu usage=1u 1",
                "unsigned integers (`1u`) are not supported",
            ),
            ("cpu usage=tru 1", "not a boolean"),
            ("cpu usage=1i, 1", "an empty field key"),
            ("cpu usage=9223372036854775807t 1", "microseconds"),
            ("cpu x=1i 99999999999999999999", "not an integer"),
        ];
        for (line, want) in cases {
            let e = tokens(line)
                .err()
                .unwrap_or_else(|| panic!("{line} parsed"));
            assert!(e.contains(want), "{line}: {e} (wanted {want})");
        }
    }

    #[test]
    fn newline_search_and_escaped_newlines() {
        for len in 0..40 {
            let mut b = vec![b'a'; len];
            assert_eq!(find_newline(&b), None);
            for at in 0..len {
                b[at] = b'\n';
                assert_eq!(find_newline(&b), Some(at), "len {len}");
                b[at] = 0x8a; // a byte that differs from `\n` in the high bit only
            }
        }
        // Escaped line breaks stay in the record; `\\` before one does not escape it.
        let data = b"a,t=x\\\ny f=1i 1\nb f=1i 2 \\\\\nc";
        let mut input = Input::new(Box::new(&data[..]), 4);
        let r = next_record(&mut input).unwrap().unwrap();
        assert_eq!((r.len, r.consume, r.lines), (15, 16, 2));
        input.consume(r.consume);
        let r = next_record(&mut input).unwrap().unwrap();
        assert_eq!(&input.data()[..r.len], b"b f=1i 2 \\\\");
        input.consume(r.consume);
        let r = next_record(&mut input).unwrap().unwrap();
        assert_eq!((r.len, r.consume, r.lines), (1, 1, 1));
        input.consume(r.consume);
        assert!(next_record(&mut input).unwrap().is_none());
    }

    fn read_all(text: &[u8], buffer: usize) -> Result<(Arc<BatchSchema>, Vec<u8>), String> {
        let mut r = FileReader::with_buffer(
            "t.ilp",
            Box::new(std::io::Cursor::new(text.to_vec())),
            None,
            None,
            buffer,
        )?;
        let schema = r.schema();
        let mut enc = IlpEncoder::new(Arc::clone(&schema))?;
        let mut b = Batch::new(Arc::clone(&schema));
        let mut out = Vec::new();
        while r.fill(&mut b, 3)? > 0 {
            enc.encode(&b, &mut out);
        }
        Ok((schema, out))
    }

    #[test]
    fn nulls_any_order_comments_and_tiny_buffers() {
        let text = "# header\r\n\
                    \n\
                    m,a=1,b=x\\ y s=\"q\\\"\\\\\\\nz\",l=5i,d=0.25,o=t,u=3t 100\r\n\
                    m,b=2 l=6i,s=\"\" 200\n\
                    \x20 # indented comment\n\
                    m,a=3 d=1e300 300\n\
                    m,b=4,a=5 o=F,l=-7i 400";
        let want = "m,a=1,b=x\\ y s=\"q\\\"\\\\\\\nz\",l=5i,d=0.25,o=t,u=3t 100\n\
                    m,b=2 s=\"\",l=6i 200\n\
                    m,a=3 d=1e300 300\n\
                    m,a=5,b=4 l=-7i,o=f 400\n";
        for buffer in [16, 17, 64, 1 << 20] {
            let (schema, out) = read_all(text.as_bytes(), buffer).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), want, "buffer {buffer}");
            let cols: Vec<(&str, &str, &str)> = schema
                .columns
                .iter()
                .map(|c| (c.name.as_str(), c.role.as_str(), c.ty.as_str()))
                .collect();
            assert_eq!(
                cols,
                [
                    ("a", "series", "symbol"),
                    ("b", "tag", "symbol"),
                    ("s", "field", "varchar"),
                    ("l", "field", "long"),
                    ("d", "field", "double"),
                    ("o", "field", "boolean"),
                    ("u", "field", "timestamp"),
                    ("timestamp", "timestamp", "timestamp"),
                ]
            );
            assert_eq!((schema.series_key, schema.timestamp), (Some(0), Some(7)));
        }
    }

    #[test]
    fn schema_violations_name_the_line() {
        let err = |text: &[u8]| read_all(text, 1 << 16).unwrap_err();
        let e = err(b"# c\nm,h=a x=1i 1\nm,h=a x=1i,y=2i 2\n");
        assert_eq!(
            e,
            "t.ilp: line 3: field `y` is not in the schema of line 2 (the first line fixes the \
             columns)"
        );
        let e = err(b"m,h=a x=1i 1\nm,h=a,g=b x=1i 2\n");
        assert!(
            e.starts_with("t.ilp: line 2: tag `g` is not in the schema"),
            "{e}"
        );
        let e = err(b"m,h=a x=1i 1\nm,h=a x=1.5 2\n");
        assert_eq!(
            e,
            "t.ilp: line 2: field `x` is a double here but an integer in line 1 (the first line \
             fixes the types)"
        );
        let e = err(b"m,h=a x=1i 1\nm,x=a h=1i 2\n");
        assert!(
            e.contains("line 2: `x` is a tag here but a field in line 1"),
            "{e}"
        );
        let e = err(b"m,h=a x=1i 1\nn,h=a x=1i 2\n");
        assert!(e.contains("line 2: measurement `n`"), "{e}");
        let e = err(b"m,h=a x=1i 1\nm,h=a x=1i,x=2i 2\n");
        assert!(e.contains("line 2: field `x` appears twice"), "{e}");
        let e = err(b"m,h=a x=1i 1\nm,h=a,h=b x=1i 2\n");
        assert!(e.contains("line 2: tag `h` appears twice"), "{e}");
        let e = err(b"m,h=a x=1i 1\nm timestamp=1t 2\n");
        assert!(e.contains("line 2: a field named `timestamp`"), "{e}");
        let e = err(b"m,h=a,h=b x=1i 1\n");
        assert_eq!(e, "t.ilp: line 1: `h` appears twice");
        let e = err(b"m,timestamp=a x=1i 1\n");
        assert!(e.contains("clashes with the designated timestamp"), "{e}");
        let e = err(b"m,a\\\nb=c x=1i 1\n");
        assert!(e.contains("has a line break"), "{e}");
        // Line numbers count escaped line breaks too.
        let e = err(b"m,h=a\\\nb x=1i 1\nm x=oops 2\n");
        assert!(e.starts_with("t.ilp: line 3: "), "{e}");
        let e = err(b"m x=1i 1\nm x=\xff 2\n");
        assert!(e.contains("line 2: not UTF-8"), "{e}");
        let e = err(b"# only\n\n");
        assert!(e.contains("no rows"), "{e}");
    }

    #[test]
    fn over_long_lines_are_refused_not_buffered() {
        // A 64 KiB buffer may grow to 64 MiB for one line; a line past that is an error.
        let mut text = b"m x=\"".to_vec();
        text.resize(MAX_RECORD_BYTES + 10, b'a');
        let e = read_all(&text, 1 << 16).unwrap_err();
        assert!(e.contains("line 1: a line longer than 64 MiB"), "{e}");
    }

    /// The scanners' plain definitions, a byte at a time.
    fn scan_bytewise(line: &[u8], mut i: usize, stops: u8) -> Span {
        let a = i;
        let mut esc = false;
        while let Some(&c) = line.get(i) {
            let k = CLASS[c as usize];
            if k & stops != 0 {
                break;
            }
            if k == BACKSLASH {
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

    fn quoted_bytewise(line: &[u8], mut i: usize) -> Option<Span> {
        let a = i;
        let mut esc = false;
        loop {
            match *line.get(i)? {
                b'"' => return Some(Span { a, b: i, esc }),
                b'\\' => {
                    esc = true;
                    i += 2;
                }
                _ => i += 1,
            }
        }
    }

    fn special_bytes() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(
            prop_oneof![
                Just(b' '),
                Just(b','),
                Just(b'='),
                Just(b'\\'),
                Just(b'"'),
                Just(b'a'),
                Just(0x80u8 | b' '),
                any::<u8>(),
            ],
            0..40,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn word_scanners_agree_with_bytewise_ones(
            line in special_bytes(),
            other in special_bytes(),
            from in 0..45usize,
        ) {
            let from = from.min(line.len());
            for stops in [COMMA | SPACE, COMMA | SPACE | EQUALS] {
                prop_assert_eq!(scan(&line, from, stops), scan_bytewise(&line, from, stops));
            }
            prop_assert_eq!(quoted(&line, from), quoted_bytewise(&line, from));
            prop_assert_eq!(find_newline(&line), line.iter().position(|&c| c == b'\n'));
            let n = line.len().min(other.len());
            prop_assert_eq!(same(&line[..n], &other[..n]), line[..n] == other[..n]);
            prop_assert_eq!(same(&line, &other), line == other);
            prop_assert!(same(&line, &line.clone()));
        }

        #[test]
        fn arbitrary_lines_never_panic(
            lines in proptest::collection::vec(
                proptest::collection::vec(
                    prop_oneof![
                        Just(b' '), Just(b','), Just(b'='), Just(b'\\'), Just(b'"'),
                        Just(b'\n'), Just(b'\r'), Just(b'#'), Just(b'i'), Just(b't'),
                        Just(b'1'), Just(b'-'), Just(b'.'), Just(b'e'), Just(b'a'),
                        any::<u8>(),
                    ],
                    0..40,
                ),
                0..8,
            )
        ) {
            let first = b"m,h=a x=1i,s=\"a\",d=1.5 1\n";
            let mut text = first.to_vec();
            for l in &lines {
                text.extend_from_slice(l);
                text.push(b'\n');
            }
            for buffer in [16, 1 << 12] {
                let _ = read_all(&text, buffer);
            }
            // As a first line too.
            let _ = read_all(&text[first.len()..], 64);
        }
    }
}
