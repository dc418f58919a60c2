//! Compiles a `SchemaPlan`'s column generators into `Node` trees: constants converted, streams
//! named, formats and patterns parsed, CSV files read, column references resolved to indices,
//! and the evaluation order fixed. Every error a schema can have is found here (a generator's
//! own in `compile.rs`).
//!
//! Evaluation itself lives in `eval.rs`; iteration over rows in `reference.rs`.

use std::collections::HashMap;

use super::cell::Kind;
use super::compile::{Compiler, Within};
use super::error::GenError;
use super::node::Node;
use super::route::null_stream;
use crate::plan::SchemaPlan;
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
            // A column taken by `series from` draws from its own schema's streams.
            let owner = c.from.as_deref().unwrap_or(&schema.name);
            let mut cx = Compiler {
                read_file,
                prefix: owner,
                name: &c.name,
                within: Within::Column {
                    schema: &schema.name,
                    names: &names,
                    walks: &mut walks,
                },
            };
            Source::Node(cx.compile(&c.gen).map_err(|m| fail(&c.name, m))?.0)
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
            null_stream: null_stream(c.from.as_deref().unwrap_or(&schema.name), &c.name),
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
        Node::Walk {
            start, step: next, ..
        }
        | Node::Hold {
            start, value: next, ..
        } => {
            column_refs(start, out);
            column_refs(next, out);
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
