//! A compiled generator: the one tree that `compile.rs` builds from a `plan::Gen`, for a schema
//! column and for a query's lets and binds alike, and that `eval.rs` evaluates. Constants are
//! cells, formats and patterns are parsed, streams are named, column references, lets and binds
//! are slots.

use super::cell::Cell;
use super::format::Format;
use super::pattern::Pattern;
use super::rng::Zipf;
use super::ycsb::{Gray, Hotspot, Latest, Scrambled};

/// A compiled generator. `stream` fields are the node's random stream (docs/rng.md §2, §8.1).
#[derive(Clone, Debug)]
pub(crate) enum Node {
    Const(Cell),
    SeriesIndex,
    Seq {
        start: i64,
        step: i64,
    },
    UniformLong {
        lo: i64,
        hi: i64,
        stream: u64,
    },
    UniformDouble {
        lo: f64,
        hi: f64,
        stream: u64,
    },
    /// Timestamps (`duration: false`) or durations, integer ns in [lo, hi).
    UniformNanos {
        lo: i64,
        hi: i64,
        duration: bool,
        stream: u64,
    },
    Normal {
        mean: f64,
        stddev: f64,
        stream: u64,
    },
    Walk {
        start: Box<Node>,
        step: Box<Node>,
        min: f64,
        max: f64,
        /// `decimals = N` as the factor 10^N: a value is emitted as trunc(v * f) / f.
        scale: Option<f64>,
        /// Index of this walk's state in the series' walk-state vector.
        slot: usize,
        /// A state the step left at `min` becomes this.
        refill: Option<f64>,
    },
    /// `hold`: `start` on a series' first row, then `value` drawn anew with probability
    /// `change` (drawn in `stream`), else the state kept in `slot` of the walk-state vector.
    Hold {
        start: Box<Node>,
        value: Box<Node>,
        change: f64,
        stream: u64,
        slot: usize,
    },
    Pick {
        values: Vec<Cell>,
        stream: u64,
    },
    Weighted {
        values: Vec<Cell>,
        /// Running sums of the weights, in order; the last is the total.
        cumulative: Vec<f64>,
        stream: u64,
    },
    PickBy {
        column: usize,
        choices: Vec<(String, Vec<Cell>)>,
        stream: u64,
    },
    Zipf {
        n: u64,
        /// `None` for exponent 0 (uniform).
        zipf: Option<Zipf>,
        stream: u64,
    },
    Format {
        format: Format,
        args: Vec<Node>,
    },
    Pattern {
        pattern: Pattern,
        stream: u64,
    },
    Csv {
        values: Vec<Cell>,
    },
    Uuid {
        stream: u64,
    },
    Chance {
        p: f64,
        stream: u64,
    },
    /// Another column of the same row.
    Column(usize),
    Arith {
        op: Op,
        lhs: Box<Node>,
        rhs: Box<Node>,
    },
    ToStr(Box<Node>),
    /// YCSB's `zipfian` request distribution, redrawn while above `last`.
    ScrambledZipfian {
        scrambled: Scrambled,
        lo: i64,
        last: Option<Box<Node>>,
        stream: u64,
    },
    /// YCSB's ZipfianGenerator, redrawn while above `last`.
    Zipfian {
        gray: Gray,
        lo: i64,
        last: Option<Box<Node>>,
        stream: u64,
    },
    /// YCSB's `latest`, `inserted` keys after the first ones.
    Latest {
        latest: Latest,
        inserted: Box<Node>,
        stream: u64,
    },
    Hotspot {
        hotspot: Hotspot,
        stream: u64,
    },
    /// YCSB's exponential chooser below `last`, redrawn while negative.
    ExponentialKey {
        last: Box<Node>,
        gamma: f64,
        stream: u64,
    },
    /// `lo + index mod span`.
    Sequential {
        lo: i64,
        span: u64,
    },
    /// YCSB's key name of an integer.
    YcsbKey {
        key: Box<Node>,
        ordered: bool,
        zero_padding: usize,
        prefix: String,
    },
    /// YCSB's RandomByteIterator text of `len` bytes.
    YcsbValue {
        len: usize,
        stream: u64,
    },
    /// How many instances of the run's query at this position came before this one.
    Issued(usize),
    /// Start uniform in `[from, last)`, `last = to - length`, floored to whole seconds.
    Window {
        from: i64,
        last: i64,
        length: i64,
        stream: u64,
    },
    Sample {
        from: SampleFrom,
        k: u64,
        stream: u64,
    },
    Field {
        of: Box<Node>,
        end: bool,
    },
    /// A let's slot.
    Let(usize),
    /// A bind's slot: `$n` is slot n - 1.
    Bind(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

#[derive(Clone, Debug)]
pub(crate) enum SampleFrom {
    List(Vec<Cell>),
    /// The series column's generator, evaluated per series like ingest does.
    Series {
        value: Box<Node>,
        count: u64,
    },
}

/// What a node yields, known when it is compiled: a schema column and most bind generators
/// yield one value; `sample` a list, which is inlined into the SQL; `window` a window, only
/// readable through `.start` and `.end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    One,
    List,
    Window,
}

/// A value while a query instance is evaluated.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum V {
    One(Cell),
    List(Vec<Cell>),
    /// Nanoseconds since the epoch, UTC.
    Window {
        start: i64,
        end: i64,
    },
}

impl V {
    /// The value as text (docs/rng.md §6); a list's elements joined by `,`, a window as
    /// `start/end` (ISO 8601's interval form).
    pub fn text(&self) -> String {
        let mut s = String::new();
        self.write_text(&mut s);
        s
    }

    /// `text`, appended to `out`; a whole number is written without a `String` of its own.
    pub fn write_text(&self, out: &mut String) {
        use std::fmt::Write;
        match self {
            V::One(Cell::Long(v)) => {
                let _ = write!(out, "{v}");
            }
            V::One(c) => out.push_str(&c.to_text()),
            V::List(cs) => {
                for (i, c) in cs.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&c.to_text());
                }
            }
            V::Window { start, end } => {
                let _ = write!(
                    out,
                    "{}/{}",
                    Cell::Timestamp(*start).to_text(),
                    Cell::Timestamp(*end).to_text()
                );
            }
        }
    }
}
