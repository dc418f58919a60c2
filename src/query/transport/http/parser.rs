//! An `/exec` answer's JSON taken apart as its bytes arrive (`Parser`), with bounds on what is
//! kept of it: the top-level members are followed by `Scan` without parsing, each dataset row
//! is parsed once whole (and hashed, with checksums, by `values::Row`).

use serde::de::{DeserializeSeed, IgnoredAny};

use super::values::{ColumnInfo, JsonColumn, JsonKind, Row};
use crate::query::checksum::ResultHasher;

/// A body of a successful answer is parsed as it arrives; these bound what is kept of it.
/// A member name.
const MAX_KEY_BYTES: usize = 4 << 10;
/// A top-level value other than the dataset (`columns`, `count`, `error`, ...), kept whole to
/// be parsed; the `query` echo and unknown members past this are skipped unparsed.
const MAX_KEPT_VALUE_BYTES: usize = 4 << 20;
/// One row of the dataset, kept whole only while it spans two reads from the socket.
const MAX_ROW_BYTES: usize = 64 << 20;
/// With checksums, a dataset that comes before its `columns` is kept until they come.
const MAX_EARLY_BYTES: usize = 16 << 20;
/// The body's first bytes are kept to quote when it is not the expected JSON.
const QUOTED_PREFIX_BYTES: usize = 800;

/// Why an answer could not be read.
#[derive(Debug)]
pub(super) enum Failure {
    /// Not the JSON of an answer: why.
    Json(String),
    /// The body ended inside the JSON.
    Eof,
    /// A value could not be hashed (a `Client` error, as on the other transports).
    Checksum(String),
}

/// The top-level member a value belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Columns,
    Dataset,
    Count,
    Error,
    Position,
    /// `ddl` or `dml`: a statement without rows.
    Statement,
    /// `updated`: the rows an INSERT, UPDATE or DELETE changed.
    Updated,
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Before the top-level `{`.
    Start,
    /// After `{`: a member name or `}`.
    FirstKey,
    /// After `,`: a member name.
    Key,
    InKey,
    Colon,
    Value,
    InValue,
    /// After the dataset's `[`: a row or `]`.
    FirstRow,
    /// After a row's `,`: a row.
    NextRow,
    InRow,
    /// After a row: `,` or `]`.
    AfterRow,
    /// After a member's value: `,` or `}`.
    AfterValue,
    /// After the top-level `}`: only white space.
    Done,
}

/// The bytes of one JSON value, followed without parsing them: where it ends. Strings,
/// escapes and nesting are tracked; numbers and literals end at the byte after them.
#[derive(Default)]
struct Scan {
    depth: usize,
    in_str: bool,
    escaped: bool,
    scalar: bool,
}

impl Scan {
    /// Follows the value from its first byte on; `Some(n)`: it ended after `n` bytes of `b`
    /// (a number or literal ends before the byte that ends it, which is not consumed).
    fn feed(&mut self, b: &[u8]) -> Option<usize> {
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if self.in_str {
                if self.escaped {
                    self.escaped = false;
                } else if c == b'\\' {
                    self.escaped = true;
                } else if c == b'"' {
                    self.in_str = false;
                    if self.depth == 0 {
                        return Some(i + 1);
                    }
                } else {
                    // Most of a string is neither a quote nor a backslash.
                    match memchr::memchr2(b'"', b'\\', &b[i..]) {
                        Some(n) => {
                            i += n;
                            continue;
                        }
                        None => return None,
                    }
                }
            } else if self.scalar {
                if matches!(c, b',' | b']' | b'}') || is_space(c) {
                    return Some(i);
                }
            } else {
                match c {
                    b'"' => self.in_str = true,
                    b'[' | b'{' => self.depth = self.depth.saturating_add(1),
                    // A closer as the value's first byte is a one-byte value that the
                    // parser refuses.
                    b']' | b'}' if self.depth <= 1 => return Some(i + 1),
                    b']' | b'}' => self.depth -= 1,
                    _ if self.depth == 0 => self.scalar = true,
                    _ => {}
                }
            }
            i += 1;
        }
        None
    }
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

/// An `/exec` answer's JSON, parsed incrementally: the top-level object is taken apart
/// member by member by `Scan`, each dataset row is parsed by serde_json once it is whole
/// (and hashed, with checksums, by the `Row` visitor), and the other members are kept
/// (bounded) and parsed once whole. Nothing but the current row, or one small member, is
/// held; see docs/decisions.md.
pub(super) struct Parser {
    pub(super) checksums: bool,
    state: State,
    key: Key,
    scan: Scan,
    /// The member name, the kept value, or the row that spans reads.
    buf: Vec<u8>,
    /// `buf` collects the current value.
    keep: bool,
    /// Bytes fed so far, for positions in messages.
    offset: u64,
    pub(super) prefix: Vec<u8>,
    columns: Option<Vec<JsonColumn>>,
    hasher: ResultHasher,
    /// The dataset's rows so far, once its `[` was read.
    rows: Option<u64>,
    /// Rows kept until `columns` come (checksums only), concatenated, and where each ends.
    early: Vec<u8>,
    early_ends: Vec<usize>,
    count: Option<serde_json::Value>,
    error: Option<serde_json::Value>,
    position: Option<serde_json::Value>,
    statement: bool,
    updated: Option<u64>,
    failure: Option<Failure>,
}

impl Parser {
    pub(super) fn new(checksums: bool) -> Parser {
        Parser {
            checksums,
            state: State::Start,
            key: Key::Other,
            scan: Scan::default(),
            buf: Vec::new(),
            keep: false,
            offset: 0,
            prefix: Vec::new(),
            columns: None,
            hasher: ResultHasher::new(),
            rows: None,
            early: Vec::new(),
            early_ends: Vec::new(),
            count: None,
            error: None,
            position: None,
            statement: false,
            updated: None,
            failure: None,
        }
    }

    /// Dataset rows read so far, the one begun and not yet whole included: a read that
    /// brings the first byte of a row brings a piece of the result (`query::streaming`).
    pub(super) fn rows_begun(&self) -> u64 {
        self.rows.unwrap_or(0) + u64::from(self.state == State::InRow)
    }

    fn fail(&mut self, f: Failure) {
        if self.failure.is_none() {
            self.failure = Some(f);
        }
    }

    fn unexpected(&mut self, at: usize, what: &str) {
        let pos = self.offset + at as u64;
        self.fail(Failure::Json(format!("expected {what} at byte {pos}")));
    }

    pub(super) fn feed(&mut self, data: &[u8]) {
        if self.prefix.len() < QUOTED_PREFIX_BYTES {
            let room = QUOTED_PREFIX_BYTES - self.prefix.len();
            self.prefix.extend_from_slice(&data[..room.min(data.len())]);
        }
        let mut i = 0;
        while i < data.len() && self.failure.is_none() {
            let c = data[i];
            let waits_for_token =
                !matches!(self.state, State::InKey | State::InValue | State::InRow);
            if waits_for_token && is_space(c) {
                i += 1;
                continue;
            }
            match self.state {
                State::Start if c == b'{' => self.state = State::FirstKey,
                State::Start => self.unexpected(i, "a JSON object"),
                State::FirstKey if c == b'}' => self.state = State::Done,
                State::FirstKey | State::Key if c == b'"' => {
                    self.buf.clear();
                    self.scan = Scan::default();
                    self.state = State::InKey;
                    continue;
                }
                State::FirstKey | State::Key => self.unexpected(i, "a member name"),
                State::InKey => {
                    let end = self.scan.feed(&data[i..]);
                    let n = end.unwrap_or(data.len() - i);
                    if self.buf.len() + n > MAX_KEY_BYTES {
                        self.fail(Failure::Json("a member name is too long".to_string()));
                        break;
                    }
                    self.buf.extend_from_slice(&data[i..i + n]);
                    i += n;
                    if end.is_some() {
                        self.key = self.key_of_buf();
                        self.state = State::Colon;
                    }
                    continue;
                }
                State::Colon if c == b':' => self.state = State::Value,
                State::Colon => self.unexpected(i, "`:`"),
                State::Value if self.key == Key::Dataset && c == b'[' => {
                    self.rows = Some(0);
                    self.hasher = ResultHasher::new();
                    self.state = State::FirstRow;
                }
                State::Value => {
                    self.buf.clear();
                    self.scan = Scan::default();
                    self.keep = true;
                    self.state = State::InValue;
                    continue;
                }
                State::InValue => {
                    let end = self.scan.feed(&data[i..]);
                    let n = end.unwrap_or(data.len() - i);
                    if self.keep {
                        if self.buf.len() + n > MAX_KEPT_VALUE_BYTES {
                            if self.key != Key::Other {
                                self.fail(Failure::Json(format!(
                                    "a member of the answer is larger than {} MiB",
                                    MAX_KEPT_VALUE_BYTES >> 20
                                )));
                                break;
                            }
                            // An echo of a long query, or a member wlrun does not read.
                            self.keep = false;
                            self.buf = Vec::new();
                        } else {
                            self.buf.extend_from_slice(&data[i..i + n]);
                        }
                    }
                    i += n;
                    if end.is_some() {
                        self.value_done();
                        self.state = State::AfterValue;
                    }
                    continue;
                }
                State::FirstRow if c == b']' => self.state = State::AfterValue,
                State::FirstRow | State::NextRow => {
                    self.buf.clear();
                    self.scan = Scan::default();
                    self.state = State::InRow;
                    continue;
                }
                State::InRow => {
                    match self.scan.feed(&data[i..]) {
                        // The whole row is in this read: parsed where it lies.
                        Some(n) if self.buf.is_empty() => {
                            self.row(&data[i..i + n]);
                            i += n;
                            self.state = State::AfterRow;
                        }
                        Some(n) => {
                            self.buf.extend_from_slice(&data[i..i + n]);
                            let mut row = std::mem::take(&mut self.buf);
                            self.row(&row);
                            row.clear();
                            self.buf = row;
                            i += n;
                            self.state = State::AfterRow;
                        }
                        None => {
                            if self.buf.len() + (data.len() - i) > MAX_ROW_BYTES {
                                self.fail(Failure::Json(format!(
                                    "a row of the dataset is larger than {} MiB",
                                    MAX_ROW_BYTES >> 20
                                )));
                                break;
                            }
                            self.buf.extend_from_slice(&data[i..]);
                            i = data.len();
                        }
                    }
                    continue;
                }
                State::AfterRow if c == b',' => self.state = State::NextRow,
                State::AfterRow if c == b']' => self.state = State::AfterValue,
                State::AfterRow => self.unexpected(i, "`,` or `]` after a row"),
                State::AfterValue if c == b',' => self.state = State::Key,
                State::AfterValue if c == b'}' => self.state = State::Done,
                State::AfterValue => self.unexpected(i, "`,` or `}`"),
                State::Done => self.unexpected(i, "nothing after the JSON object"),
            }
            i += 1;
        }
        self.offset += data.len() as u64;
    }

    fn key_of_buf(&mut self) -> Key {
        match serde_json::from_slice::<std::borrow::Cow<'_, str>>(&self.buf) {
            Ok(k) => match &*k {
                "columns" => Key::Columns,
                "dataset" => Key::Dataset,
                "count" => Key::Count,
                "error" => Key::Error,
                "position" => Key::Position,
                "ddl" | "dml" => Key::Statement,
                "updated" => Key::Updated,
                _ => Key::Other,
            },
            Err(e) => {
                self.fail(Failure::Json(format!("a member name: {e}")));
                Key::Other
            }
        }
    }

    /// A member's value other than a dataset array is whole in `buf` (unless it was too
    /// large to keep, and skipped).
    fn value_done(&mut self) {
        if !self.keep {
            return;
        }
        let value = std::mem::take(&mut self.buf);
        let parsed = match self.key {
            Key::Columns if self.checksums => {
                serde_json::from_slice::<Option<Vec<ColumnInfo>>>(&value).map(|infos| {
                    self.columns = infos.map(|infos| {
                        infos
                            .into_iter()
                            .map(|c| JsonColumn {
                                kind: JsonKind::of(&c.ty),
                                label: format!("`{}` ({})", c.name, c.ty),
                            })
                            .collect()
                    });
                })
            }
            // Not an array (that is read row by row): only `null` is a dataset, of no rows.
            Key::Dataset => serde_json::from_slice::<Option<Vec<IgnoredAny>>>(&value).map(|d| {
                self.rows = d.map(|r| r.len() as u64);
            }),
            Key::Count => serde_json::from_slice(&value).map(|v| self.count = v),
            Key::Error => serde_json::from_slice(&value).map(|v| self.error = v),
            Key::Position => serde_json::from_slice(&value).map(|v| self.position = v),
            Key::Statement => serde_json::from_slice::<IgnoredAny>(&value).map(|_| {
                self.statement = true;
            }),
            Key::Updated => serde_json::from_slice(&value).map(|v| self.updated = Some(v)),
            Key::Columns | Key::Other => serde_json::from_slice::<IgnoredAny>(&value).map(|_| ()),
        };
        if let Err(e) = parsed {
            self.fail(Failure::Json(e.to_string()));
        }
        self.buf = value;
        self.buf.clear();
    }

    /// One whole row of the dataset.
    fn row(&mut self, row: &[u8]) {
        let n = self.rows.unwrap_or(0);
        self.rows = Some(n + 1);
        if !self.checksums {
            if let Err(e) = serde_json::from_slice::<IgnoredAny>(row) {
                self.fail(Failure::Json(format!("row {} of the dataset: {e}", n + 1)));
            }
            return;
        }
        if self.columns.is_none() {
            if self.early.len() + row.len() > MAX_EARLY_BYTES {
                self.fail(Failure::Json(format!(
                    "the dataset comes before its `columns`, and is larger than the {} MiB \
                     kept until they come",
                    MAX_EARLY_BYTES >> 20
                )));
                return;
            }
            self.early.extend_from_slice(row);
            self.early_ends.push(self.early.len());
            return;
        }
        if let Err(f) = self.hash_row(row, n + 1) {
            self.fail(f);
        }
    }

    fn hash_row(&mut self, row: &[u8], number: u64) -> Result<(), Failure> {
        let columns = self.columns.as_deref().unwrap_or(&[]);
        let mut problem = None;
        let mut de = serde_json::Deserializer::from_slice(row);
        let parsed = Row {
            columns,
            hasher: &mut self.hasher,
            problem: &mut problem,
        }
        .deserialize(&mut de)
        .and_then(|()| de.end());
        match (problem, parsed) {
            (Some(why), _) => Err(Failure::Checksum(why)),
            (None, Err(e)) => Err(Failure::Json(format!("row {number} of the dataset: {e}"))),
            (None, Ok(())) => Ok(()),
        }
    }

    /// The body ended: what it said.
    pub(super) fn finish(mut self) -> Result<Parsed, Failure> {
        if let Some(f) = self.failure.take() {
            return Err(f);
        }
        if self.state != State::Done {
            return Err(Failure::Eof);
        }
        if !self.early_ends.is_empty() {
            if self.columns.is_none() {
                return Err(Failure::Checksum(
                    "the answer has a dataset but no `columns`".to_string(),
                ));
            }
            let early = std::mem::take(&mut self.early);
            let mut start = 0;
            for (i, &end) in std::mem::take(&mut self.early_ends).iter().enumerate() {
                self.hash_row(&early[start..end], i as u64 + 1)?;
                start = end;
            }
        }
        let checksum = (self.checksums && self.rows.is_some()).then(|| self.hasher.finish());
        Ok(Parsed {
            rows: self.rows,
            checksum,
            count: self.count,
            error: self.error,
            position: self.position,
            statement: self.statement,
            updated: self.updated,
        })
    }
}

/// The parts of an answer that matter, once it was read to its end.
pub(super) struct Parsed {
    /// The `dataset`'s length, when it has one.
    pub(super) rows: Option<u64>,
    pub(super) checksum: Option<u64>,
    pub(super) count: Option<serde_json::Value>,
    pub(super) error: Option<serde_json::Value>,
    pub(super) position: Option<serde_json::Value>,
    /// `ddl` or `dml`: a statement without rows.
    pub(super) statement: bool,
    /// `updated`: QuestDB's count of the rows a DML statement changed.
    pub(super) updated: Option<u64>,
}
