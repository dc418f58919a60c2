//! Compiles a `SchemaPlan`'s column generators into `Node` trees: constants converted, streams
//! named, formats and patterns parsed, CSV files read, column references resolved to indices,
//! and the evaluation order fixed. Every error a schema can have is found here.
//!
//! Evaluation itself lives in `eval.rs`; iteration over rows in `reference.rs`.

use std::collections::HashMap;

use super::cell::{Cell, Kind};
use super::error::GenError;
use super::format::Format;
use super::node::{Node, Op};
use super::pattern::Pattern;
use super::rng::Zipf;
use super::route::{nested_stream, null_stream};
use crate::plan::{Gen, SchemaPlan};
use crate::value::Value;

/// Where a column's values come from.
#[derive(Clone, Debug)]
pub(super) enum Source {
    Node(Node),
    /// The time axis: `start + epoch * step`.
    Time,
}

#[derive(Clone, Debug)]
pub(super) struct ColumnProgram {
    pub kind: Kind,
    pub per_series: bool,
    pub source: Source,
    pub null_probability: f64,
    pub null_stream: u64,
}

#[derive(Clone, Debug)]
pub(super) struct Program {
    pub columns: Vec<ColumnProgram>,
    /// Per-series columns in evaluation order (dependencies first).
    pub series_order: Vec<usize>,
    /// Per-row columns in evaluation order.
    pub row_order: Vec<usize>,
    /// The series key column (role `series`), if any.
    pub key: Option<usize>,
    /// Walk nodes, i.e. the length of a series' walk-state vector.
    pub walks: usize,
    /// Number of series, at least 1.
    pub series: u64,
    /// Rows per series at most (the epochs), and rows in total.
    pub epochs: u64,
    pub rows: u64,
    /// Time axis start and step, ns.
    pub time: Option<(i64, i64)>,
}

/// The index of the series key column: the first column whose role is `series`.
pub fn series_key_column(schema: &SchemaPlan) -> Option<usize> {
    schema.columns.iter().position(|c| c.role == "series")
}

/// Reads a file a generator names (`csv(...)`), given the path as written in the plan.
pub type ReadFile<'a> = &'a dyn Fn(&str) -> std::io::Result<Vec<u8>>;

pub(super) fn compile(schema: &SchemaPlan, read_file: ReadFile<'_>) -> Result<Program, GenError> {
    let names: HashMap<&str, usize> = schema
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.as_str(), i))
        .collect();
    let key = series_key_column(schema);
    let fail = |column: &str, message: String| GenError {
        schema: schema.name.clone(),
        column: column.to_string(),
        message,
    };
    let time = match &schema.time {
        None => None,
        Some(t) => {
            let start = match t.start {
                Value::Timestamp(ns) | Value::Int(ns) => ns,
                ref other => {
                    return Err(fail(&t.column, format!("time start is {}", other.kind())))
                }
            };
            let step = match t.step {
                Value::Duration(ns) | Value::Int(ns) => ns,
                ref other => return Err(fail(&t.column, format!("time step is {}", other.kind()))),
            };
            Some((start, step, t.count, t.column.as_str()))
        }
    };
    let mut walks = 0;
    let mut columns = Vec::with_capacity(schema.columns.len());
    let mut deps = Vec::with_capacity(schema.columns.len());
    for (i, c) in schema.columns.iter().enumerate() {
        let p = c.null_probability;
        if !(0.0..=1.0).contains(&p) {
            return Err(fail(
                &c.name,
                format!("null probability {p} is not in [0, 1]"),
            ));
        }
        let is_time = time.is_some_and(|t| t.3 == c.name);
        let source = if is_time {
            Source::Time
        } else {
            let mut cx = Compiler {
                schema,
                read_file,
                column: &c.name,
                names: &names,
                walks: &mut walks,
            };
            Source::Node(
                cx.node(&c.gen, &mut Vec::new())
                    .map_err(|m| fail(&c.name, m))?,
            )
        };
        let mut d = Vec::new();
        if let Source::Node(n) = &source {
            column_refs(n, &mut d);
        }
        if d.contains(&i) {
            return Err(fail(&c.name, "the column refers to itself".into()));
        }
        deps.push(d);
        columns.push(ColumnProgram {
            kind: Kind::of(&c.ty, c.unit.as_deref()),
            per_series: !is_time && (c.per == "series" || Some(i) == key),
            source,
            null_probability: p,
            null_stream: null_stream(&schema.name, &c.name),
        });
    }
    for (i, c) in columns.iter().enumerate() {
        if c.per_series {
            if let Some(&d) = deps[i].iter().find(|&&d| !columns[d].per_series) {
                return Err(fail(
                    &schema.columns[i].name,
                    format!(
                        "a per-series column cannot use `{}`, which is drawn per row",
                        schema.columns[d].name
                    ),
                ));
            }
        }
    }
    let order = topological(&deps).map_err(|i| {
        fail(
            &schema.columns[i].name,
            "the column is part of a cycle of column references".into(),
        )
    })?;
    let series = schema.series.max(1);
    let (epochs, rows) = match time {
        Some((_, _, count, _)) => (count, schema.rows.min(series.saturating_mul(count))),
        None => (schema.rows.div_ceil(series), schema.rows),
    };
    Ok(Program {
        series_order: order
            .iter()
            .copied()
            .filter(|&i| columns[i].per_series)
            .collect(),
        row_order: order
            .iter()
            .copied()
            .filter(|&i| !columns[i].per_series)
            .collect(),
        columns,
        key,
        walks,
        series,
        epochs,
        rows,
        time: time.map(|(start, step, _, _)| (start, step)),
    })
}

/// Depth-first order over `deps` (a column's dependencies first), declaration order otherwise;
/// `Err(column)` on a cycle.
fn topological(deps: &[Vec<usize>]) -> Result<Vec<usize>, usize> {
    fn visit(
        i: usize,
        deps: &[Vec<usize>],
        state: &mut [u8],
        out: &mut Vec<usize>,
    ) -> Result<(), usize> {
        match state[i] {
            2 => return Ok(()),
            1 => return Err(i),
            _ => {}
        }
        state[i] = 1;
        for &d in &deps[i] {
            visit(d, deps, state, out)?;
        }
        state[i] = 2;
        out.push(i);
        Ok(())
    }
    let mut state = vec![0u8; deps.len()];
    let mut out = Vec::with_capacity(deps.len());
    for i in 0..deps.len() {
        visit(i, deps, &mut state, &mut out)?;
    }
    Ok(out)
}

fn column_refs(n: &Node, out: &mut Vec<usize>) {
    match n {
        Node::Column(i) | Node::PickBy { column: i, .. } => out.push(*i),
        Node::Walk { start, step, .. } => {
            column_refs(start, out);
            column_refs(step, out);
        }
        Node::Arith { lhs, rhs, .. } => {
            column_refs(lhs, out);
            column_refs(rhs, out);
        }
        Node::Format { args, .. } => args.iter().for_each(|a| column_refs(a, out)),
        Node::ToStr(of) => column_refs(of, out),
        _ => {}
    }
}

struct Compiler<'a> {
    schema: &'a SchemaPlan,
    read_file: ReadFile<'a>,
    column: &'a str,
    names: &'a HashMap<&'a str, usize>,
    walks: &'a mut usize,
}

impl Compiler<'_> {
    fn stream(&self, path: &[usize]) -> u64 {
        nested_stream(&self.schema.name, self.column, path)
    }

    fn child(&mut self, g: &Gen, path: &mut Vec<usize>, k: usize) -> Result<Node, String> {
        path.push(k);
        let n = self.node(g, path);
        path.pop();
        n
    }

    fn column_index(&self, name: &str) -> Result<usize, String> {
        self.names
            .get(name)
            .copied()
            .ok_or_else(|| format!("no column `{name}` in schema `{}`", self.schema.name))
    }

    fn node(&mut self, g: &Gen, path: &mut Vec<usize>) -> Result<Node, String> {
        let stream = self.stream(path);
        Ok(match g {
            Gen::Const { value } => match value {
                Value::Gen(inner) => self.node(inner, path)?,
                v => Node::Const(constant(v)?),
            },
            Gen::SeriesIndex => Node::SeriesIndex,
            Gen::Seq { start, step } => Node::Seq {
                start: *start,
                step: *step,
            },
            Gen::Uniform { lo, hi } => uniform(lo, hi, stream)?,
            Gen::Normal { mean, stddev } => {
                if !mean.is_finite() || !stddev.is_finite() || *stddev < 0.0 {
                    return Err(format!(
                        "normal({mean}, {stddev}) needs a finite mean and stddev >= 0"
                    ));
                }
                Node::Normal {
                    mean: *mean,
                    stddev: *stddev,
                    stream,
                }
            }
            Gen::Walk {
                start,
                step,
                min,
                max,
            } => {
                if min.is_nan() || max.is_nan() || min > max {
                    return Err(format!("walk clamp {min}..{max} is empty"));
                }
                let start = Box::new(self.child(start, path, 0)?);
                let step = Box::new(self.child(step, path, 1)?);
                let slot = *self.walks;
                *self.walks += 1;
                Node::Walk {
                    start,
                    step,
                    min: *min,
                    max: *max,
                    slot,
                }
            }
            Gen::Pick { values } => {
                if values.is_empty() {
                    return Err("pick from an empty list".into());
                }
                Node::Pick {
                    values: constants(values)?,
                    stream,
                }
            }
            Gen::Weighted { values, weights } => {
                if values.is_empty() || values.len() != weights.len() {
                    return Err(format!(
                        "weighted needs one weight per value ({} values, {} weights)",
                        values.len(),
                        weights.len()
                    ));
                }
                if weights.iter().any(|w| !w.is_finite() || *w < 0.0) {
                    return Err("weights must be finite and >= 0".into());
                }
                let mut total = 0.0;
                let cumulative: Vec<f64> = weights
                    .iter()
                    .map(|w| {
                        total += w;
                        total
                    })
                    .collect();
                if total <= 0.0 {
                    return Err("the weights add up to 0".into());
                }
                Node::Weighted {
                    values: constants(values)?,
                    cumulative,
                    stream,
                }
            }
            Gen::PickBy { column, choices } => Node::PickBy {
                column: self.column_index(column)?,
                choices: choices
                    .iter()
                    .map(|(k, vs)| Ok((k.clone(), constants(vs)?)))
                    .collect::<Result<_, String>>()?,
                stream,
            },
            Gen::Zipf { n, s } => {
                if *n < 1 || !s.is_finite() || *s < 0.0 {
                    return Err(format!("zipf({n}, {s}) needs n >= 1 and a finite s >= 0"));
                }
                let n = *n as u64;
                Node::Zipf {
                    n,
                    zipf: (*s > 0.0).then(|| Zipf::new(n, *s)),
                    stream,
                }
            }
            Gen::Format { format, args } => {
                let format = Format::parse(format)?;
                if format.arity() != args.len() {
                    return Err(format!(
                        "the format takes {} arguments but {} are given",
                        format.arity(),
                        args.len()
                    ));
                }
                let args = args
                    .iter()
                    .enumerate()
                    .map(|(k, a)| self.child(a, path, k))
                    .collect::<Result<_, _>>()?;
                Node::Format { format, args }
            }
            Gen::Pattern { pattern } => Node::Pattern {
                pattern: Pattern::parse(pattern)?,
                stream,
            },
            Gen::Csv {
                path: file, column, ..
            } => Node::Csv {
                values: read_csv_column(self.read_file, file, column)?,
            },
            Gen::Uuid => Node::Uuid { stream },
            Gen::Chance { p } => {
                if p.is_nan() {
                    return Err("chance(NaN)".into());
                }
                Node::Chance { p: *p, stream }
            }
            Gen::Column { name } => Node::Column(self.column_index(name)?),
            Gen::Arith { op, lhs, rhs } => {
                let op = match op.as_str() {
                    "+" => Op::Add,
                    "-" => Op::Sub,
                    "*" => Op::Mul,
                    "/" => Op::Div,
                    "%" => Op::Rem,
                    other => return Err(format!("unsupported operator `{other}`")),
                };
                Node::Arith {
                    op,
                    lhs: Box::new(self.child(lhs, path, 0)?),
                    rhs: Box::new(self.child(rhs, path, 1)?),
                }
            }
            Gen::ToStr { of } => Node::ToStr(Box::new(self.child(of, path, 0)?)),
            Gen::Window { .. }
            | Gen::Sample { .. }
            | Gen::Field { .. }
            | Gen::Bind { .. }
            | Gen::Let { .. } => {
                return Err(format!(
                    "`{g}` is a query generator, not allowed in a schema column"
                ))
            }
        })
    }
}

fn uniform(lo: &Value, hi: &Value, stream: u64) -> Result<Node, String> {
    let empty = || format!("uniform({lo}, {hi}) is empty: it needs lo < hi");
    Ok(match (lo, hi) {
        (Value::Int(a), Value::Int(b)) => {
            if a >= b {
                return Err(empty());
            }
            Node::UniformLong {
                lo: *a,
                hi: *b,
                stream,
            }
        }
        (Value::Timestamp(a), Value::Timestamp(b)) | (Value::Duration(a), Value::Duration(b)) => {
            if a >= b {
                return Err(empty());
            }
            Node::UniformNanos {
                lo: *a,
                hi: *b,
                duration: matches!(lo, Value::Duration(_)),
                stream,
            }
        }
        (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => {
            let f = |v: &Value| match v {
                Value::Int(i) => *i as f64,
                Value::Float(x) => *x,
                _ => f64::NAN,
            };
            let (a, b) = (f(lo), f(hi));
            if !a.is_finite() || !b.is_finite() || a >= b {
                return Err(empty());
            }
            Node::UniformDouble {
                lo: a,
                hi: b,
                stream,
            }
        }
        _ => {
            return Err(format!(
                "uniform between {} and {} is not supported",
                lo.kind(),
                hi.kind()
            ))
        }
    })
}

/// A constant as a cell. Text must be literal (no `env(...)`): data must not depend on the
/// machine it is generated on.
pub(crate) fn constant(v: &Value) -> Result<Cell, String> {
    Ok(match v {
        Value::Int(i) => Cell::Long(*i),
        Value::Float(x) => Cell::Double(*x),
        Value::Bool(b) => Cell::Bool(*b),
        Value::None => Cell::Null,
        Value::Str(t) => Cell::Str(
            t.as_lit()
                .ok_or("text from env(...) cannot be generated data")?,
        ),
        Value::Symbol(s) => Cell::Str(s.clone()),
        Value::Duration(ns) => Cell::Duration(*ns),
        Value::Timestamp(ns) => Cell::Timestamp(*ns),
        Value::Rate(r) => Cell::Double(*r),
        Value::Size(b) => Cell::Long(i64::try_from(*b).unwrap_or(i64::MAX)),
        Value::Percent(p) => Cell::Double(*p),
        other @ (Value::Range(..)
        | Value::List(_)
        | Value::Map(_)
        | Value::Gen(_)
        | Value::Bandwidth(_)) => {
            return Err(format!("{} cannot be a generated value here", other.kind()))
        }
    })
}

fn constants(vs: &[Value]) -> Result<Vec<Cell>, String> {
    vs.iter().map(constant).collect()
}

/// The values of one column of a CSV file with a header line, in file order, as text.
pub(crate) fn read_csv_column(
    read_file: ReadFile<'_>,
    path: &str,
    column: &str,
) -> Result<Vec<Cell>, String> {
    let bytes = read_file(path).map_err(|e| format!("cannot read CSV file {path:?}: {e}"))?;
    let mut reader = ::csv::Reader::from_reader(bytes.as_slice());
    let headers = reader
        .headers()
        .map_err(|e| format!("cannot read the header of {path:?}: {e}"))?;
    let at = headers
        .iter()
        .position(|h| h == column)
        .ok_or_else(|| format!("CSV file {path:?} has no column `{column}`"))?;
    let mut values = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| format!("in CSV file {path:?}: {e}"))?;
        values.push(Cell::Str(record.get(at).unwrap_or("").to_string()));
    }
    if values.is_empty() {
        return Err(format!("CSV file {path:?} has no rows"));
    }
    Ok(values)
}
