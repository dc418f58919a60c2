//! The column batch: what the generator fills and every encoder reads (ILP, CSV, COPY, SQLite,
//! QWP, the binary file format). Protocol-neutral: typed columns, a null bitmap per column,
//! dictionaries for symbols, timestamps in nanoseconds with the column's unit kept alongside.
//! A batch is reused: `clear` keeps every allocation, so the hot loop allocates nothing once
//! the buffers have grown to the batch size.

use std::sync::Arc;

use super::cell::Kind;
use crate::plan::SchemaPlan;

/// Distinct texts of a symbol column, indexed by id. Fixed when the generator is built
/// (per-series values, or the choices of a `pick`), so encoders may cache per-id bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dictionary {
    pub values: Texts,
}

impl Dictionary {
    pub fn from_texts<S: AsRef<str>>(texts: impl IntoIterator<Item = S>) -> Dictionary {
        Dictionary {
            values: texts.into_iter().collect(),
        }
    }
}

/// Texts packed end to end in one buffer, indexed from 0. A series key's dictionary holds one
/// text per series: a `String` each cost ~56 bytes at a million hosts (the header and the
/// allocator's smallest chunk), packed they cost their length and one offset.
#[derive(Clone, PartialEq, Eq)]
pub struct Texts {
    bytes: String,
    /// Text `i` is `bounds[i]..bounds[i + 1]` of `bytes`; `bounds[0]` is 0, so a lookup reads
    /// two neighbouring words and tests nothing else (encoders look a text up per cell).
    bounds: Vec<usize>,
}

impl Default for Texts {
    fn default() -> Texts {
        Texts {
            bytes: String::new(),
            bounds: vec![0],
        }
    }
}

impl Texts {
    pub fn len(&self) -> usize {
        self.bounds.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn get(&self, i: usize) -> Option<&str> {
        match self.bounds.get(i..i.checked_add(2)?)? {
            &[start, end] => self.bytes.get(start..end),
            _ => None,
        }
    }

    pub fn push(&mut self, text: &str) {
        self.bytes.push_str(text);
        self.bounds.push(self.bytes.len());
    }

    pub fn iter(&self) -> TextsIter<'_> {
        TextsIter {
            texts: self,
            at: 0,
            start: 0,
        }
    }

    /// Gives back spare capacity, once the texts are complete.
    pub fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
        self.bounds.shrink_to_fit();
    }
}

impl std::ops::Index<usize> for Texts {
    type Output = str;

    fn index(&self, i: usize) -> &str {
        &self.bytes[self.bounds[i]..self.bounds[i + 1]]
    }
}

/// The texts in id order.
#[derive(Clone, Debug)]
pub struct TextsIter<'a> {
    texts: &'a Texts,
    at: usize,
    start: usize,
}

impl<'a> Iterator for TextsIter<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let end = *self.texts.bounds.get(self.at + 1)?;
        let s = &self.texts.bytes[self.start..end];
        self.at += 1;
        self.start = end;
        Some(s)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.texts.len() - self.at;
        (n, Some(n))
    }
}

impl ExactSizeIterator for TextsIter<'_> {}

impl<'a> IntoIterator for &'a Texts {
    type Item = &'a str;
    type IntoIter = TextsIter<'a>;

    fn into_iter(self) -> TextsIter<'a> {
        self.iter()
    }
}

impl<S: AsRef<str>> FromIterator<S> for Texts {
    fn from_iter<I: IntoIterator<Item = S>>(texts: I) -> Texts {
        let mut t = Texts::default();
        for s in texts {
            t.push(s.as_ref());
        }
        t
    }
}

impl std::fmt::Debug for Texts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// What a column holds in a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Physical {
    Long,
    Double,
    Bool,
    /// Ids into the column's dictionary.
    Symbol,
    /// Text: `offsets[i]..offsets[i + 1]` of `bytes`.
    Varchar,
    /// Nanoseconds since the epoch.
    Timestamp,
}

/// A column's identity: its place in the schema and how to read its values.
#[derive(Clone, Debug)]
pub struct ColumnMeta {
    pub name: String,
    /// `series`, `tag`, `field` or `timestamp`, as in the plan.
    pub role: String,
    /// The declared type: `symbol`, `varchar`, `long`, `int`, `double`, `boolean`, `timestamp`...
    pub ty: String,
    /// Nanoseconds per unit of a timestamp column (1, 1_000 or 1_000_000), else 0.
    pub unit_ns: i64,
    pub physical: Physical,
    /// Present exactly when `physical` is `Symbol`.
    pub dictionary: Option<Arc<Dictionary>>,
}

/// The layout every batch of one generator shares.
#[derive(Clone, Debug)]
pub struct BatchSchema {
    pub name: String,
    pub table: String,
    pub columns: Vec<ColumnMeta>,
    /// Index of the series-key column, if any; routing hashes its text.
    pub series_key: Option<usize>,
    /// Index of the designated timestamp column, if any.
    pub timestamp: Option<usize>,
}

/// One column's values for the rows of a batch.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    Long(Vec<i64>),
    Double(Vec<f64>),
    Bool(Vec<bool>),
    Symbol(Vec<u32>),
    Varchar { offsets: Vec<u32>, bytes: Vec<u8> },
    Timestamp(Vec<i64>),
}

impl Values {
    pub fn new(p: Physical) -> Values {
        match p {
            Physical::Long => Values::Long(Vec::new()),
            Physical::Double => Values::Double(Vec::new()),
            Physical::Bool => Values::Bool(Vec::new()),
            Physical::Symbol => Values::Symbol(Vec::new()),
            Physical::Varchar => Values::Varchar {
                offsets: vec![0],
                bytes: Vec::new(),
            },
            Physical::Timestamp => Values::Timestamp(Vec::new()),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Values::Long(v) | Values::Timestamp(v) => v.len(),
            Values::Double(v) => v.len(),
            Values::Bool(v) => v.len(),
            Values::Symbol(v) => v.len(),
            Values::Varchar { offsets, .. } => offsets.len().saturating_sub(1),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn clear(&mut self) {
        match self {
            Values::Long(v) | Values::Timestamp(v) => v.clear(),
            Values::Double(v) => v.clear(),
            Values::Bool(v) => v.clear(),
            Values::Symbol(v) => v.clear(),
            Values::Varchar { offsets, bytes } => {
                offsets.truncate(1);
                bytes.clear();
            }
        }
    }

    /// The text of row `i` of a varchar column.
    pub fn str_at(&self, i: usize) -> &str {
        match self {
            Values::Varchar { offsets, bytes } => {
                let (a, b) = (offsets[i] as usize, offsets[i + 1] as usize);
                // Only `push_str` writes these bytes, and it takes whole `&str`s.
                std::str::from_utf8(&bytes[a..b]).unwrap_or_default()
            }
            _ => "",
        }
    }
}

/// A null bitmap: bit `i` set means row `i` is null. Absent when the column has no nulls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Nulls {
    pub words: Vec<u64>,
}

impl Nulls {
    pub fn is_null(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    pub fn set(&mut self, i: usize) {
        if self.words.len() <= i / 64 {
            self.words.resize(i / 64 + 1, 0);
        }
        self.words[i / 64] |= 1 << (i % 64);
    }

    pub fn clear(&mut self) {
        self.words.clear();
    }

    pub fn any(&self) -> bool {
        self.words.iter().any(|&w| w != 0)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ColumnBatch {
    pub values: Values,
    pub nulls: Nulls,
}

/// A batch of rows in column form, in generation order (epoch-major, series-minor).
#[derive(Clone, Debug)]
pub struct Batch {
    pub schema: Arc<BatchSchema>,
    pub rows: usize,
    pub columns: Vec<ColumnBatch>,
    /// The series index of each row (0 for a schema without series).
    pub series: Vec<u32>,
}

impl Batch {
    pub fn new(schema: Arc<BatchSchema>) -> Batch {
        let columns = schema
            .columns
            .iter()
            .map(|c| ColumnBatch {
                values: Values::new(c.physical),
                nulls: Nulls::default(),
            })
            .collect();
        Batch {
            schema,
            rows: 0,
            columns,
            series: Vec::new(),
        }
    }

    /// Empties the batch, keeping its buffers.
    pub fn clear(&mut self) {
        self.rows = 0;
        self.series.clear();
        for c in &mut self.columns {
            c.values.clear();
            c.nulls.clear();
        }
    }

    pub fn is_null(&self, col: usize, row: usize) -> bool {
        self.columns[col].nulls.is_null(row)
    }

    /// The text of a symbol or varchar cell, for encoders that write text.
    pub fn text(&self, col: usize, row: usize) -> &str {
        match &self.columns[col].values {
            Values::Symbol(ids) => self.schema.columns[col]
                .dictionary
                .as_ref()
                .and_then(|d| d.values.get(ids[row] as usize))
                .unwrap_or(""),
            v @ Values::Varchar { .. } => v.str_at(row),
            _ => "",
        }
    }
}

/// Pushes text onto a varchar column.
pub fn push_str(values: &mut Values, s: &str) {
    if let Values::Varchar { offsets, bytes } = values {
        bytes.extend_from_slice(s.as_bytes());
        offsets.push(bytes.len() as u32);
    }
}

/// The physical kind a column type is generated into, before dictionaries are known: the
/// generator's own type rules (`Kind`), so layout and coercion cannot disagree.
pub fn physical_of(kind: Kind) -> Physical {
    match kind {
        Kind::Long => Physical::Long,
        Kind::Double => Physical::Double,
        Kind::Bool => Physical::Bool,
        Kind::Timestamp { .. } => Physical::Timestamp,
        Kind::Str | Kind::Any => Physical::Varchar,
    }
}

impl BatchSchema {
    /// The layout of a schema; symbol columns become `Varchar` here and the generator turns
    /// them into dictionary columns where their values are known up front.
    pub fn from_plan(plan: &SchemaPlan) -> BatchSchema {
        let columns: Vec<ColumnMeta> = plan
            .columns
            .iter()
            .map(|c| {
                let kind = Kind::of(&c.ty, c.unit.as_deref());
                ColumnMeta {
                    name: c.name.clone(),
                    role: c.role.clone(),
                    ty: c.ty.clone(),
                    unit_ns: match kind {
                        Kind::Timestamp { unit_ns } => unit_ns,
                        _ => 0,
                    },
                    physical: physical_of(kind),
                    dictionary: None,
                }
            })
            .collect();
        BatchSchema {
            name: plan.name.clone(),
            table: plan.table.clone(),
            series_key: columns.iter().position(|c| c.role == "series"),
            timestamp: columns.iter().position(|c| c.role == "timestamp"),
            columns,
        }
    }
}

/// Appends rows `rows` of `src` to `dst`, both of one layout (same columns and physical
/// kinds): values, null bits and series ids. Symbol ids are copied as they are, so the two
/// batches must share their dictionaries (as batches of one schema do). Fails, leaving `dst`
/// as it was, when the range is outside `src`, the layouts differ, or a text column of `dst`
/// would pass 4 GiB. `r..r + 1` appends row `r`.
pub fn append_rows(
    src: &Batch,
    rows: std::ops::Range<usize>,
    dst: &mut Batch,
) -> Result<(), String> {
    let (s, e) = (rows.start, rows.end);
    if s > e || e > src.rows {
        return Err(format!("rows {s}..{e} of a batch of {}", src.rows));
    }
    if src.columns.len() != dst.columns.len() {
        return Err(format!(
            "a batch of {} columns appended to one of {}",
            src.columns.len(),
            dst.columns.len()
        ));
    }
    for (k, (a, b)) in src.columns.iter().zip(&dst.columns).enumerate() {
        let text_room = match (&a.values, &b.values) {
            (Values::Long(_), Values::Long(_))
            | (Values::Timestamp(_), Values::Timestamp(_))
            | (Values::Double(_), Values::Double(_))
            | (Values::Bool(_), Values::Bool(_))
            | (Values::Symbol(_), Values::Symbol(_)) => true,
            (Values::Varchar { offsets: ao, .. }, Values::Varchar { bytes: bb, .. }) => {
                let (from, to) = (ao.get(s).copied(), ao.get(e).copied());
                matches!((from, to), (Some(f), Some(t)) if f <= t
                    && bb.len() as u64 + u64::from(t - f) <= u64::from(u32::MAX))
            }
            _ => return Err(format!("column {k}: the batches' layouts differ")),
        };
        if !text_room {
            return Err(format!("column {k}: the text does not fit one batch"));
        }
        if a.values.len() < e {
            return Err(format!(
                "column {k}: {} values for {} rows",
                a.values.len(),
                src.rows
            ));
        }
    }
    let base = dst.rows;
    for (a, b) in src.columns.iter().zip(&mut dst.columns) {
        match (&a.values, &mut b.values) {
            (Values::Long(x), Values::Long(y)) | (Values::Timestamp(x), Values::Timestamp(y)) => {
                y.extend_from_slice(&x[s..e])
            }
            (Values::Double(x), Values::Double(y)) => y.extend_from_slice(&x[s..e]),
            (Values::Bool(x), Values::Bool(y)) => y.extend_from_slice(&x[s..e]),
            (Values::Symbol(x), Values::Symbol(y)) => y.extend_from_slice(&x[s..e]),
            (
                Values::Varchar {
                    offsets: ao,
                    bytes: ab,
                },
                Values::Varchar {
                    offsets: bo,
                    bytes: bb,
                },
            ) => {
                let (from, to) = (ao[s], ao[e]);
                let shift = bb.len() as u32;
                bb.extend_from_slice(&ab[from as usize..to as usize]);
                bo.extend(ao[s + 1..=e].iter().map(|&o| o - from + shift));
            }
            _ => {} // refused above
        }
        if a.nulls.any() {
            for r in s..e {
                if a.nulls.is_null(r) {
                    b.nulls.set(base + r - s);
                }
            }
        }
    }
    dst.series
        .extend((s..e).map(|r| src.series.get(r).copied().unwrap_or(0)));
    dst.rows += e - s;
    Ok(())
}
