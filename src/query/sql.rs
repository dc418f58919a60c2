//! SQL text for the query runner: where a template's `$n` placeholders are, list binds written
//! into the text with the other placeholders renumbered, and statements with every bind written
//! as a literal for transports that take no binds (HTTP `/exec`, PostgreSQL's simple query
//! protocol). docs/decisions.md, "`$n` placeholders on every transport, lists inlined".
//!
//! Literals are exact where the dialect can say the value: numbers read back to the same bits,
//! text keeps every character, timestamps keep every microsecond (all three dialects store
//! microseconds; nanoseconds below that are floored, as SQLite's stored text is). A value a
//! dialect cannot write is an error, never a silently different value.

use std::ops::Range;
use std::sync::Arc;

use crate::value::BindValue;

/// The SQL dialect literals are written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    Postgres,
    Questdb,
    Sqlite,
}

impl Dialect {
    /// A target's `dialect` name: `postgres`, `timescaledb` and `generic` (a target that names
    /// none) write PostgreSQL literals. `None` for dialects without SQL literals of their own.
    pub fn from_name(name: &str) -> Option<Dialect> {
        match name {
            "postgres" | "timescaledb" | "generic" => Some(Dialect::Postgres),
            "questdb" => Some(Dialect::Questdb),
            "sqlite" => Some(Dialect::Sqlite),
            _ => None,
        }
    }

    /// The dialect of an endpoint (`EndpointPlan.kind`, `.dialect`): an embedded `sqlite`
    /// endpoint is SQLite whatever its target says (a target without `dialect` is `generic`),
    /// a `qwp` one QuestDB, otherwise `from_name`, and PostgreSQL's rules for names it does
    /// not know.
    pub fn of_endpoint(kind: &str, dialect: &str) -> Dialect {
        if kind == "sqlite" {
            return Dialect::Sqlite;
        }
        // Only QuestDB speaks QWP, whatever the target's `dialect` says.
        if kind == "qwp" {
            return Dialect::Questdb;
        }
        Dialect::from_name(dialect).unwrap_or(Dialect::Postgres)
    }
}

/// A `$n` placeholder of SQL text: its byte range (`$` included) and its number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placeholder {
    pub start: usize,
    pub end: usize,
    pub n: u32,
}

/// Characters that continue an identifier in PostgreSQL and SQLite; `a$1` is an identifier.
fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// The placeholders of `sql` in text order: `$` and decimal digits (`$10` is ten, not `$1`
/// and a zero), n from 1 to 2^32 - 1, not inside a string literal (`'...'` with `''`, and
/// `E'...'` with backslash escapes), a dollar-quoted string (`$$...$$`, `$tag$...$tag$`), a
/// quoted identifier (`"..."`, `` `...` ``), a comment (`--` to the end of the line,
/// `/* ... */`, nested as PostgreSQL nests them) or an identifier (`a$1`). `$0` and numbers
/// past 32 bits are left as text (the checker reports them). An unterminated quote or comment
/// runs to the end.
pub fn placeholders(sql: &str) -> Vec<Placeholder> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let after_ident = i > 0 && is_ident(b[i - 1]);
        match b[i] {
            b'\'' => {
                let escapes =
                    i > 0 && matches!(b[i - 1], b'E' | b'e') && !(i > 1 && is_ident(b[i - 2]));
                i = skip_quoted(b, i + 1, b'\'', escapes);
            }
            q @ (b'"' | b'`') => i = skip_quoted(b, i + 1, q, false),
            b'-' if b.get(i + 1) == Some(&b'-') => {
                i = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |p| i + p);
            }
            b'/' if b.get(i + 1) == Some(&b'*') => i = skip_block_comment(b, i + 2),
            b'$' if !after_ident => {
                let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
                if digits > 0 {
                    let end = i + 1 + digits;
                    if let Ok(n) = sql[i + 1..end].parse::<u32>() {
                        if n > 0 {
                            out.push(Placeholder { start: i, end, n });
                        }
                    }
                    i = end;
                } else {
                    i = dollar_quoted(b, i).unwrap_or(i + 1);
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// The position after the closing `q` of a quoted run starting at `i`; a doubled `q` is one
/// character, and so is a backslash pair when `escapes`.
fn skip_quoted(b: &[u8], mut i: usize, q: u8, escapes: bool) -> usize {
    while i < b.len() {
        if escapes && b[i] == b'\\' {
            i += 2;
        } else if b[i] == q {
            if b.get(i + 1) == Some(&q) {
                i += 2;
            } else {
                return i + 1;
            }
        } else {
            i += 1;
        }
    }
    b.len()
}

fn skip_block_comment(b: &[u8], mut i: usize) -> usize {
    let mut depth = 1;
    while i < b.len() {
        if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            depth += 1;
            i += 2;
        } else {
            i += 1;
        }
    }
    b.len()
}

/// If a dollar quote opens at `i` (`$$` or `$tag$`, the tag an identifier without `$`), the
/// position after its closing delimiter (the end of the text when it is never closed).
fn dollar_quoted(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    if b.get(j)
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_' || *c >= 0x80)
    {
        while b
            .get(j)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c >= 0x80)
        {
            j += 1;
        }
    }
    if b.get(j) != Some(&b'$') {
        return None;
    }
    let delim = &b[i..=j];
    let body = j + 1;
    Some(
        b[body..]
            .windows(delim.len())
            .position(|w| w == delim)
            .map_or(b.len(), |p| body + p + delim.len()),
    )
}

/// The statement's first keyword, upper-cased (`SELECT`, `UPDATE`, ...), past blanks, `--`
/// and `/* */` comments and opening parentheses; empty where there is none.
pub fn verb(sql: &str) -> String {
    let mut rest = sql;
    loop {
        let t = rest.trim_start_matches(|c: char| c.is_whitespace() || c == '(');
        if let Some(after) = t.strip_prefix("--") {
            rest = after.find('\n').map_or("", |i| &after[i..]);
        } else if let Some(after) = t.strip_prefix("/*") {
            rest = after.find("*/").map_or("", |i| &after[i + 2..]);
        } else {
            rest = t;
            break;
        }
    }
    rest.chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

/// Whether a statement of this verb changes rows, so that the server's count is the rows it
/// inserted, updated or deleted (PostgreSQL's command tag counts the rows a SELECT returned
/// too). A data-modifying `WITH ... UPDATE` is not recognised: its count is not read.
pub fn changes_rows(verb: &str) -> bool {
    matches!(
        verb,
        "INSERT" | "UPDATE" | "DELETE" | "MERGE" | "UPSERT" | "REPLACE"
    )
}

/// A bind's value for rendering: one value, sent as a bind, or a list written into the SQL.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    One(BindValue),
    List(Vec<BindValue>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// Sent as a bind: its number in the rendered SQL.
    Param(u32),
    /// Written into the SQL: the template's placeholder number.
    Inline(u32),
}

/// A template with the placeholders of list binds known, worked out once per query type: each
/// instance then only writes its lists, and a template without lists is the same shared text
/// for every instance.
#[derive(Clone, Debug)]
pub struct Layout {
    template: Arc<str>,
    /// Each placeholder: the template text before it, and what replaces it.
    pieces: Vec<(Range<usize>, Slot)>,
    tail: Range<usize>,
    /// The rendered SQL when no bind is inlined.
    fixed: Option<Arc<str>>,
    /// `order[k]` is the template number of the rendered SQL's `$(k+1)`.
    order: Vec<u32>,
    /// Template numbers written into the SQL, each once.
    inlined: Vec<u32>,
}

impl Layout {
    /// The layout of `sql` when the placeholders for which `is_list(n)` holds are inlined;
    /// the others are renumbered `$1..$m` in order of first appearance, a number used twice
    /// keeping one new number. First-appearance order also makes SQLite, which numbers `$name`
    /// parameters as it meets them, bind the same values as `$n`.
    pub fn new(sql: &str, is_list: impl Fn(u32) -> bool) -> Layout {
        let mut pieces = Vec::new();
        let mut order: Vec<u32> = Vec::new();
        let mut inlined: Vec<u32> = Vec::new();
        let mut at = 0;
        for p in placeholders(sql) {
            let slot = if is_list(p.n) {
                if !inlined.contains(&p.n) {
                    inlined.push(p.n);
                }
                Slot::Inline(p.n)
            } else {
                let k = match order.iter().position(|&n| n == p.n) {
                    Some(k) => k,
                    None => {
                        order.push(p.n);
                        order.len() - 1
                    }
                };
                Slot::Param(k as u32 + 1)
            };
            pieces.push((at..p.start, slot));
            at = p.end;
        }
        let mut layout = Layout {
            template: Arc::from(sql),
            pieces,
            tail: at..sql.len(),
            fixed: None,
            order,
            inlined,
        };
        if layout.inlined.is_empty() {
            let mut s = String::with_capacity(sql.len());
            // Nothing is inlined, so writing reads no argument and cannot fail.
            let _ = layout.write(&[], Dialect::Postgres, &mut s);
            layout.fixed = Some(Arc::from(s));
        }
        layout
    }

    /// The template number of each bind sent, in order: `$1`, `$2`, ... of the rendered SQL.
    pub fn order(&self) -> &[u32] {
        &self.order
    }

    /// Whether the template uses `$n` (outside quotes and comments).
    pub fn uses(&self, n: u32) -> bool {
        self.order.contains(&n) || self.inlined.contains(&n)
    }

    /// The placeholder numbers the template uses, each once: those sent, then those inlined.
    pub fn numbers(&self) -> impl Iterator<Item = u32> + '_ {
        self.order.iter().chain(&self.inlined).copied()
    }

    /// The SQL and the bind values of one instance: `args[n - 1]` is the value of `$n`. Lists
    /// are written with `dialect`'s literals; the values sent are moved out of `args`.
    pub fn render(
        &self,
        args: &mut [Arg],
        dialect: Dialect,
    ) -> Result<(Arc<str>, Vec<BindValue>), String> {
        let sql = match &self.fixed {
            Some(s) => s.clone(),
            None => {
                let mut s = String::with_capacity(self.template.len() + 64);
                self.write(args, dialect, &mut s)?;
                Arc::from(s)
            }
        };
        let mut binds = Vec::with_capacity(self.order.len());
        for &n in &self.order {
            let arg = args
                .get_mut(n as usize - 1)
                .ok_or_else(|| format!("`${n}` has no value"))?;
            match std::mem::replace(arg, Arg::One(BindValue::Null)) {
                Arg::One(v) => binds.push(v),
                Arg::List(_) => {
                    return Err(format!(
                        "`${n}` is a list, which can only be written into the SQL"
                    ))
                }
            }
        }
        Ok((sql, binds))
    }

    fn write(&self, args: &[Arg], dialect: Dialect, out: &mut String) -> Result<(), String> {
        for (text, slot) in &self.pieces {
            out.push_str(&self.template[text.clone()]);
            match *slot {
                Slot::Param(m) => {
                    out.push('$');
                    out.push_str(itoa::Buffer::new().format(m));
                }
                Slot::Inline(n) => match args.get(n as usize - 1) {
                    Some(Arg::List(vs)) => push_list(out, vs, dialect)?,
                    Some(Arg::One(v)) => push_list(out, std::slice::from_ref(v), dialect)?,
                    None => return Err(format!("`${n}` has no value")),
                },
            }
        }
        out.push_str(&self.template[self.tail.clone()]);
        Ok(())
    }
}

/// `(a,b,c)`; an empty list is `(NULL)`, which `IN` matches with nothing, as an empty set.
fn push_list(out: &mut String, vs: &[BindValue], d: Dialect) -> Result<(), String> {
    out.push('(');
    if vs.is_empty() {
        out.push_str("NULL");
    }
    for (i, v) in vs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_literal(out, v, d)?;
    }
    out.push(')');
    Ok(())
}

/// `sql` with every placeholder `$n` replaced by the literal of `binds[n - 1]`, for transports
/// that take no binds. A placeholder without a value is an error.
pub fn inline_all(sql: &str, binds: &[BindValue], dialect: Dialect) -> Result<String, String> {
    let mut out = String::with_capacity(sql.len() + 24 * binds.len());
    let mut at = 0;
    for p in placeholders(sql) {
        let v = binds.get(p.n as usize - 1).ok_or_else(|| {
            format!(
                "`${}` has no value ({} bind value{} given)",
                p.n,
                binds.len(),
                if binds.len() == 1 { "" } else { "s" }
            )
        })?;
        out.push_str(&sql[at..p.start]);
        push_literal(&mut out, v, dialect)?;
        at = p.end;
    }
    out.push_str(&sql[at..]);
    Ok(out)
}

/// `v` as a SQL literal of `dialect`.
pub fn literal(v: &BindValue, dialect: Dialect) -> Result<String, String> {
    let mut out = String::new();
    push_literal(&mut out, v, dialect)?;
    Ok(out)
}

/// Appends `v` as a SQL literal of `dialect`:
/// - Null: `NULL`;
/// - Int: decimal; Float: Rust's shortest round-trip digits (ryu: `0.1`, `100.0`, `1e308`),
///   which every dialect reads back to the same double. Negative numbers are parenthesized,
///   so that a placeholder after `-` cannot turn into a `--` comment. NaN and infinities:
///   PostgreSQL `'NaN'::float8`, `'Infinity'::float8`, `'-Infinity'::float8`; QuestDB `NaN`
///   (its null double) and an error for infinities; SQLite `NULL` for NaN (SQLite stores NaN
///   as NULL) and `9e999`, `(-9e999)` (which SQLite reads as infinities);
/// - Bool: `TRUE`/`FALSE`, `true`/`false` for QuestDB, `1`/`0` for SQLite (stored as integers);
/// - Text: `'...'` with `'` doubled; PostgreSQL text with a backslash is `E'...'` with the
///   backslash doubled too, right whatever `standard_conforming_strings` says. Text with a NUL
///   character is an error (PostgreSQL cannot store it);
/// - Timestamp, floored to the microsecond: PostgreSQL `'2016-01-01 00:00:00.5+00'::timestamptz`
///   (fraction without trailing zeros, none when zero), QuestDB `'2016-01-01T00:00:00.500000Z'`,
///   SQLite `'2016-01-01 00:00:00.500000'`, the text wlrun stores timestamps as in SQLite
///   (`encode::sqlite_time::sqlite_timestamp_text`), which compares as time does.
pub fn push_literal(out: &mut String, v: &BindValue, d: Dialect) -> Result<(), String> {
    match v {
        BindValue::Null => out.push_str("NULL"),
        BindValue::Int(n) => {
            let mut buf = itoa::Buffer::new();
            let text = buf.format(*n);
            if *n < 0 {
                out.push('(');
                out.push_str(text);
                out.push(')');
            } else {
                out.push_str(text);
            }
        }
        BindValue::Float(f) if f.is_finite() => {
            let mut buf = ryu::Buffer::new();
            let text = buf.format_finite(*f);
            if f.is_sign_negative() {
                out.push('(');
                out.push_str(text);
                out.push(')');
            } else {
                out.push_str(text);
            }
        }
        BindValue::Float(f) => out.push_str(match (d, f.is_nan(), *f > 0.0) {
            (Dialect::Postgres, true, _) => "'NaN'::float8",
            (Dialect::Postgres, false, true) => "'Infinity'::float8",
            (Dialect::Postgres, false, false) => "'-Infinity'::float8",
            (Dialect::Questdb, true, _) => "NaN",
            (Dialect::Questdb, false, _) => {
                return Err(format!(
                    "{f} has no QuestDB SQL literal; send it as a bind value instead"
                ))
            }
            (Dialect::Sqlite, true, _) => "NULL",
            (Dialect::Sqlite, false, true) => "9e999",
            (Dialect::Sqlite, false, false) => "(-9e999)",
        }),
        BindValue::Bool(b) => out.push_str(match (d, *b) {
            (Dialect::Postgres, true) => "TRUE",
            (Dialect::Postgres, false) => "FALSE",
            (Dialect::Questdb, true) => "true",
            (Dialect::Questdb, false) => "false",
            (Dialect::Sqlite, true) => "1",
            (Dialect::Sqlite, false) => "0",
        }),
        BindValue::Text(s) => push_text(out, s, d)?,
        BindValue::Timestamp(ns) => {
            let text = sqlite_timestamp(*ns);
            match d {
                Dialect::Postgres => {
                    let text = text.trim_end_matches('0').trim_end_matches('.');
                    out.push('\'');
                    out.push_str(text);
                    out.push_str("+00'::timestamptz");
                }
                Dialect::Questdb => {
                    out.push('\'');
                    out.push_str(&text[..10]);
                    out.push('T');
                    out.push_str(&text[11..]);
                    out.push_str("Z'");
                }
                Dialect::Sqlite => {
                    out.push('\'');
                    out.push_str(&text);
                    out.push('\'');
                }
            }
        }
    }
    Ok(())
}

fn push_text(out: &mut String, s: &str, d: Dialect) -> Result<(), String> {
    if s.contains('\0') {
        return Err(format!(
            "text {:?} contains a NUL character, which SQL text cannot hold",
            truncate(s, 40)
        ));
    }
    let backslashes = d == Dialect::Postgres && s.contains('\\');
    out.reserve(s.len() + 3);
    if backslashes {
        out.push('E');
    }
    out.push('\'');
    for c in s.chars() {
        match c {
            '\'' => out.push_str("''"),
            '\\' if backslashes => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('\'');
    Ok(())
}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The UTC time `ns` as SQLite stores timestamps: `YYYY-MM-DD HH:MM:SS.ffffff`, floored to the
/// microsecond (`encode::sqlite_time::sqlite_timestamp_text`).
pub fn sqlite_timestamp(ns: i64) -> String {
    let mut text = Vec::with_capacity(26);
    crate::encode::sqlite_time::sqlite_timestamp_text(ns, &mut text);
    // The function writes ASCII digits and separators only.
    String::from_utf8(text).unwrap_or_default()
}

/// A bind value as the SQLite transport binds it: timestamps as `sqlite_timestamp` text, since
/// SQLite compares the stored timestamps as text; booleans as 0/1, as they are stored; NaN as
/// NULL, as SQLite would store it.
pub fn sqlite_value(v: &BindValue) -> rusqlite::types::Value {
    use rusqlite::types::Value as V;
    match v {
        BindValue::Null => V::Null,
        BindValue::Int(n) => V::Integer(*n),
        BindValue::Float(f) if f.is_nan() => V::Null,
        BindValue::Float(f) => V::Real(*f),
        BindValue::Bool(b) => V::Integer(i64::from(*b)),
        BindValue::Text(s) => V::Text(s.clone()),
        BindValue::Timestamp(ns) => V::Text(sqlite_timestamp(*ns)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbers(sql: &str) -> Vec<u32> {
        placeholders(sql).iter().map(|p| p.n).collect()
    }

    #[test]
    fn a_statements_verb_is_its_first_keyword() {
        assert_eq!(verb("SELECT 1"), "SELECT");
        assert_eq!(verb("  update t SET a = 1"), "UPDATE");
        assert_eq!(verb("-- note\n /* x */ (select 1)"), "SELECT");
        assert_eq!(verb(""), "");
        assert!(changes_rows(&verb("delete from t")));
        assert!(!changes_rows(&verb("SELECT * FROM t")));
        assert!(!changes_rows(&verb(
            "WITH u AS (UPDATE t SET a = 1) SELECT 1"
        )));
    }

    #[test]
    fn placeholders_outside_quotes_and_comments() {
        assert_eq!(numbers("SELECT $1, $2"), [1, 2]);
        assert_eq!(numbers("a = $10 AND b = $1"), [10, 1]);
        let p = placeholders("x=$12+1");
        assert_eq!((p[0].start, p[0].end, p[0].n), (2, 5, 12));
        assert_eq!(numbers("'$1' || $2"), [2]);
        assert_eq!(numbers("'it''s $1' || $2 || 'x''$3'"), [2]);
        assert_eq!(numbers("\"col$1\" = $2"), [2]);
        assert_eq!(numbers("\"a\"\"$1\" = $2"), [2]);
        assert_eq!(numbers("`a$1` = $2"), [2]);
        assert_eq!(numbers("$1 -- $2 here\n AND $3"), [1, 3]);
        assert_eq!(numbers("$1 /* $2 */ $3"), [1, 3]);
        assert_eq!(numbers("$1 /* a /* $2 */ $3 */ $4"), [1, 4]);
        assert_eq!(numbers("$1 - -$2"), [1, 2]);
        assert_eq!(numbers("E'\\'$1' || $2"), [2]);
        // Without the E, a backslash is an ordinary character.
        assert_eq!(numbers("'\\' || $1"), [1]);
        assert_eq!(numbers("$$ $1 $$ || $2 || $tag$ $3 $tag$ || $4"), [2, 4]);
        assert_eq!(numbers("a$1 + $2"), [2]);
        assert_eq!(numbers("$0 + $4294967296 + $4294967295"), [4294967295]);
        assert_eq!(numbers("$1 'unterminated $2"), [1]);
        assert_eq!(numbers("$1 /* unterminated $2"), [1]);
        assert_eq!(numbers("$a $"), Vec::<u32>::new());
        assert_eq!(numbers("é = $1"), [1]);
    }

    fn t(s: &str) -> BindValue {
        BindValue::Text(s.to_string())
    }

    #[test]
    fn renumbers_in_order_of_first_appearance() {
        let l = Layout::new("SELECT $3, $1, $3", |_| false);
        assert_eq!(l.order(), [3, 1]);
        let mut args = vec![Arg::One(t("a")), Arg::One(t("b")), Arg::One(t("c"))];
        let (sql, binds) = l.render(&mut args, Dialect::Postgres).unwrap();
        assert_eq!(&*sql, "SELECT $1, $2, $1");
        assert_eq!(binds, [t("c"), t("a")]);
        assert!(l.uses(3) && l.uses(1) && !l.uses(2));
    }

    #[test]
    fn sql_without_lists_is_shared() {
        let l = Layout::new("SELECT $1 WHERE x = '$2'", |_| false);
        let (a, _) = l
            .render(&mut [Arg::One(t("x"))], Dialect::Postgres)
            .unwrap();
        let (b, _) = l
            .render(&mut [Arg::One(t("y"))], Dialect::Postgres)
            .unwrap();
        assert_eq!(&*a, "SELECT $1 WHERE x = '$2'");
        assert!(Arc::ptr_eq(&a, &b));
    }

    #[test]
    fn lists_inlined_and_the_rest_renumbered() {
        let sql = "SELECT * FROM cpu WHERE hostname IN $1 AND ts >= $2 AND ts < $3 -- $1\n";
        let l = Layout::new(sql, |n| n == 1);
        assert_eq!(l.order(), [2, 3]);
        let mut args = vec![
            Arg::List(vec![t("host_1"), t("o'k")]),
            Arg::One(BindValue::Timestamp(10)),
            Arg::One(BindValue::Timestamp(20)),
        ];
        let (out, binds) = l.render(&mut args, Dialect::Postgres).unwrap();
        assert_eq!(
            &*out,
            "SELECT * FROM cpu WHERE hostname IN ('host_1','o''k') AND ts >= $1 AND ts < $2 -- $1\n"
        );
        assert_eq!(binds, [BindValue::Timestamp(10), BindValue::Timestamp(20)]);
        // A list used twice is written twice; integers are unquoted.
        let l = Layout::new("a IN $2 OR b IN $2 OR c = $1", |n| n == 2);
        let mut args = vec![
            Arg::One(BindValue::Int(5)),
            Arg::List(vec![BindValue::Int(1), BindValue::Int(-7)]),
        ];
        let (out, binds) = l.render(&mut args, Dialect::Sqlite).unwrap();
        assert_eq!(&*out, "a IN (1,(-7)) OR b IN (1,(-7)) OR c = $1");
        assert_eq!(binds, [BindValue::Int(5)]);
        // Errors, not panics.
        let l = Layout::new("$1 $2", |n| n == 2);
        assert!(l
            .render(&mut [Arg::One(t("a"))], Dialect::Postgres)
            .is_err());
        let l = Layout::new("$1", |_| false);
        assert!(l
            .render(&mut [Arg::List(vec![])], Dialect::Postgres)
            .is_err());
        let l = Layout::new("IN $1", |_| true);
        let (out, _) = l
            .render(&mut [Arg::List(vec![])], Dialect::Postgres)
            .unwrap();
        assert_eq!(&*out, "IN (NULL)");
    }

    fn lit(v: BindValue, d: Dialect) -> String {
        literal(&v, d).unwrap()
    }

    #[test]
    fn text_literals() {
        for d in [Dialect::Postgres, Dialect::Questdb, Dialect::Sqlite] {
            assert_eq!(lit(t("it's"), d), "'it''s'");
            assert_eq!(lit(t(""), d), "''");
            assert_eq!(lit(t("naïve $1 -- x"), d), "'naïve $1 -- x'");
            assert!(literal(&t("a\0b"), d).is_err());
        }
        assert_eq!(lit(t("a\\'b"), Dialect::Postgres), "E'a\\\\''b'");
        assert_eq!(lit(t("a\\b"), Dialect::Sqlite), "'a\\b'");
    }

    #[test]
    fn number_bool_and_null_literals() {
        use BindValue::{Bool, Float, Int, Null};
        let all = [Dialect::Postgres, Dialect::Questdb, Dialect::Sqlite];
        for d in all {
            assert_eq!(lit(Int(42), d), "42");
            assert_eq!(lit(Int(i64::MIN), d), "(-9223372036854775808)");
            assert_eq!(lit(Null, d), "NULL");
            assert_eq!(lit(Float(0.1), d), "0.1");
            assert_eq!(lit(Float(100.0), d), "100.0");
            assert_eq!(lit(Float(-2.5), d), "(-2.5)");
            for x in [0.1, 1.0 / 3.0, 1e308, 5e-324, f64::MAX, 123_456.789e-20] {
                let text = lit(Float(x), d);
                assert_eq!(
                    text.parse::<f64>().unwrap().to_bits(),
                    x.to_bits(),
                    "{text}"
                );
            }
        }
        assert_eq!(lit(Float(f64::NAN), Dialect::Postgres), "'NaN'::float8");
        assert_eq!(
            lit(Float(f64::NEG_INFINITY), Dialect::Postgres),
            "'-Infinity'::float8"
        );
        assert_eq!(lit(Float(f64::NAN), Dialect::Questdb), "NaN");
        assert!(literal(&Float(f64::INFINITY), Dialect::Questdb).is_err());
        assert_eq!(lit(Float(f64::NAN), Dialect::Sqlite), "NULL");
        assert_eq!(lit(Float(f64::INFINITY), Dialect::Sqlite), "9e999");
        assert_eq!(lit(Float(f64::NEG_INFINITY), Dialect::Sqlite), "(-9e999)");
        assert_eq!(lit(Bool(true), Dialect::Postgres), "TRUE");
        assert_eq!(lit(Bool(false), Dialect::Questdb), "false");
        assert_eq!(lit(Bool(true), Dialect::Sqlite), "1");
    }

    #[test]
    fn timestamp_literals_per_dialect() {
        use BindValue::Timestamp;
        let t0 = 1_451_606_400_000_000_000; // 2016-01-01T00:00:00Z
        let half = t0 + 500_000_000;
        assert_eq!(
            lit(Timestamp(half), Dialect::Postgres),
            "'2016-01-01 00:00:00.5+00'::timestamptz"
        );
        assert_eq!(
            lit(Timestamp(t0), Dialect::Postgres),
            "'2016-01-01 00:00:00+00'::timestamptz"
        );
        assert_eq!(
            lit(Timestamp(half), Dialect::Questdb),
            "'2016-01-01T00:00:00.500000Z'"
        );
        assert_eq!(
            lit(Timestamp(half), Dialect::Sqlite),
            "'2016-01-01 00:00:00.500000'"
        );
        // Nanoseconds below the microsecond are floored, also before the epoch.
        assert_eq!(
            lit(Timestamp(t0 + 123_456_789), Dialect::Postgres),
            "'2016-01-01 00:00:00.123456+00'::timestamptz"
        );
        assert_eq!(
            lit(Timestamp(-1), Dialect::Questdb),
            "'1969-12-31T23:59:59.999999Z'"
        );
        assert_eq!(
            sqlite_value(&Timestamp(half)),
            rusqlite::types::Value::Text("2016-01-01 00:00:00.500000".into())
        );
        assert_eq!(
            sqlite_value(&BindValue::Bool(true)),
            rusqlite::types::Value::Integer(1)
        );
    }

    #[test]
    fn inline_all_writes_every_placeholder() {
        let sql = "SELECT '$1', \"$2\" FROM t WHERE a = $2 AND b - $1 > 0 /* $3 */";
        let out = inline_all(sql, &[BindValue::Int(-3), t("x")], Dialect::Postgres).unwrap();
        assert_eq!(
            out,
            "SELECT '$1', \"$2\" FROM t WHERE a = 'x' AND b - (-3) > 0 /* $3 */"
        );
        let err = inline_all("a = $2", &[t("x")], Dialect::Questdb).unwrap_err();
        assert!(err.contains("$2"), "{err}");
        assert_eq!(
            inline_all("no binds", &[], Dialect::Sqlite).unwrap(),
            "no binds"
        );
    }

    #[test]
    fn dialect_names() {
        assert_eq!(Dialect::from_name("questdb"), Some(Dialect::Questdb));
        assert_eq!(Dialect::from_name("timescaledb"), Some(Dialect::Postgres));
        assert_eq!(Dialect::from_name("generic"), Some(Dialect::Postgres));
        assert_eq!(Dialect::from_name("sqlite"), Some(Dialect::Sqlite));
        assert_eq!(Dialect::from_name("influxdb"), None);
        assert_eq!(Dialect::of_endpoint("sqlite", "generic"), Dialect::Sqlite);
        assert_eq!(Dialect::of_endpoint("http", "questdb"), Dialect::Questdb);
        assert_eq!(Dialect::of_endpoint("pg", "ksqldb"), Dialect::Postgres);
    }
}
