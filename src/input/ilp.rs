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

mod line;

use std::collections::HashMap;
use std::sync::Arc;

use self::line::{
    describe, fields, head, same, scan, show, splat, unescape_into, word, zero_bytes, Hint, Hints,
    Span, Tokens, Val, COMMA, SPACE, UNRESOLVED,
};
use super::{
    file_schema, push_null, ColumnKind, Input, More, NewColumn, Opts, Shard, MAX_BATCH_BYTES,
    MAX_RECORD_BYTES,
};
use crate::gen::batch::{Batch, BatchSchema, Physical, Values};

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
mod tests;
