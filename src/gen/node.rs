//! A compiled generator: the tree `program.rs` builds from a `plan::Gen` and `eval.rs`
//! evaluates. Constants are cells, formats and patterns are parsed, streams are named and
//! column references are indices.

use super::cell::Cell;
use super::format::Format;
use super::pattern::Pattern;
use super::rng::Zipf;

/// A compiled generator. `stream` fields are the node's random stream (docs/rng.md).
#[derive(Clone, Debug)]
pub(super) enum Node {
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
        /// Index of this walk's state in the series' walk-state vector.
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
    Column(usize),
    Arith {
        op: Op,
        lhs: Box<Node>,
        rhs: Box<Node>,
    },
    ToStr(Box<Node>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}
