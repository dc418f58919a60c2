//! The reference generator: a schema's rows, one at a time, in TSBS order. Obviously correct
//! rather than fast; the columnar engine is tested against it.
//!
//! Row order: global row `g` is series `g % S` at epoch `g / S` (S = number of series), for
//! `g < rows`; so with a time axis every series at t0, then every series at t1, and without
//! one (S = 1) rows 0..N. The time column's value at epoch `e` is `start + e * step`.
//!
//! Sharding: `Some((i, n))` keeps the rows whose routing key satisfies
//! `shard_of(key, n) == i` (FNV-1a 64, `route.rs`), in the same order. The routing key is the
//! series key column's value as text; a schema without a series key routes each row by its
//! global row index in decimal. Rows of series that a shard does not own are never generated
//! (only those series' per-series values, to find their key); in a schema without a series key, rows that a shard does not own
//! are skipped, except that walk columns make them be generated and discarded, since the walk
//! state runs through every row.

use super::cell::Cell;
use super::error::GenError;
use super::eval::Ctx;
use super::program::{compile, Program, ReadFile, Source};
use super::rng::{Rng, PER_SERIES};
use super::route::shard_of;
use crate::plan::SchemaPlan;

/// The rows of `schema` for `seed`, or of one shard `(i, n)` of them (0 <= i < n). All errors
/// (unknown columns, bad formats and patterns, unreadable CSV files, ...) are reported here;
/// iterating never fails. Each row has one cell per column, in column order. `csv(...)` paths
/// are read with `std::fs::read` as written (relative to the current directory); use
/// `rows_with` to resolve them otherwise.
pub fn rows(schema: &SchemaPlan, seed: u64, shard: Option<(u64, u64)>) -> Result<Rows, GenError> {
    rows_with(schema, seed, shard, &|path: &str| std::fs::read(path))
}

/// `rows`, reading the files that `csv(...)` generators name through `read_file`, which gets
/// the path as written in the plan (e.g. resolve it against the workload's directory, or the
/// embedded stdlib). Files are read once, here.
pub fn rows_with(
    schema: &SchemaPlan,
    seed: u64,
    shard: Option<(u64, u64)>,
    read_file: ReadFile<'_>,
) -> Result<Rows, GenError> {
    let prog = compile(schema, read_file)?;
    if let Some((i, n)) = shard {
        if n == 0 || i >= n {
            return Err(GenError {
                schema: schema.name.clone(),
                column: String::new(),
                message: format!("shard {i} of {n} does not exist"),
            });
        }
    }
    let mut rows = Rows {
        seed,
        series: Vec::new(),
        row_shard: None,
        epoch: 0,
        pos: 0,
        prog,
    };
    let by_series = rows.prog.key.is_some();
    for s in 0..rows.prog.series {
        let state = rows.series_state(s);
        let owned = match (shard, by_series) {
            (Some((i, n)), true) => {
                let key = rows.prog.key.map(|k| state.template[k].to_text());
                shard_of(&key.unwrap_or_default(), n) == i
            }
            _ => true,
        };
        if owned {
            rows.series.push(state);
        }
    }
    if !by_series {
        rows.row_shard = shard;
    }
    Ok(rows)
}

/// The per-series values of series `s` (per-row slots Null): what every row of the series
/// starts from. The columnar engine builds its dictionaries from the same function.
pub(super) fn series_template(prog: &Program, seed: u64, s: u64) -> Vec<Cell> {
    let mut template = vec![Cell::Null; prog.columns.len()];
    for &c in &prog.series_order {
        let Source::Node(node) = &prog.columns[c].source else {
            continue;
        };
        let v = Ctx::per_series(seed, s, &template).eval(node);
        template[c] = finish(prog, seed, c, v, s, PER_SERIES);
    }
    template
}

/// Coerces to the column's type, then applies its null probability: null when `f64() < p` on
/// the column's null stream at (series, row counter).
fn finish(prog: &Program, seed: u64, c: usize, v: Cell, series: u64, row: u64) -> Cell {
    let col = &prog.columns[c];
    let v = col.kind.coerce(v);
    if col.null_probability > 0.0
        && Rng::new(seed, col.null_stream, series, row).f64() < col.null_probability
    {
        return Cell::Null;
    }
    v
}

/// The rows of one schema (or shard): an iterator of `Vec<Cell>`, one cell per column.
pub struct Rows {
    prog: Program,
    seed: u64,
    /// Owned series in index order.
    series: Vec<SeriesState>,
    /// Per-row routing, for schemas without a series key.
    row_shard: Option<(u64, u64)>,
    epoch: u64,
    /// Next position in `series` at `epoch`.
    pos: usize,
}

struct SeriesState {
    index: u64,
    /// Per-series values in place; per-row slots are Null until a row fills them.
    template: Vec<Cell>,
    walks: Vec<f64>,
}

impl Rows {
    fn series_state(&self, s: u64) -> SeriesState {
        SeriesState {
            index: s,
            template: series_template(&self.prog, self.seed, s),
            walks: vec![0.0; self.prog.walks],
        }
    }

    fn finish(&self, c: usize, v: Cell, series: u64, row: u64) -> Cell {
        finish(&self.prog, self.seed, c, v, series, row)
    }

    fn row(&mut self, at: usize, epoch: u64) -> Vec<Cell> {
        let mut st = std::mem::replace(
            &mut self.series[at],
            SeriesState {
                index: 0,
                template: Vec::new(),
                walks: Vec::new(),
            },
        );
        let mut row = st.template.clone();
        for &c in &self.prog.row_order {
            let v = match &self.prog.columns[c].source {
                Source::Time => {
                    let (start, step) = self.prog.time.unwrap_or((0, 0));
                    Cell::Timestamp(start.wrapping_add(step.wrapping_mul(epoch as i64)))
                }
                Source::Node(node) => {
                    Ctx::per_row(self.seed, st.index, epoch, &row, &mut st.walks).eval(node)
                }
            };
            row[c] = self.finish(c, v, st.index, epoch);
        }
        self.series[at] = st;
        row
    }
}

impl Iterator for Rows {
    type Item = Vec<Cell>;

    fn next(&mut self) -> Option<Vec<Cell>> {
        let s_count = self.prog.series;
        loop {
            if self.epoch >= self.prog.epochs || self.series.is_empty() {
                return None;
            }
            if self.pos >= self.series.len() {
                self.epoch += 1;
                self.pos = 0;
                continue;
            }
            let at = self.pos;
            let global = self.epoch * s_count + self.series[at].index;
            if global >= self.prog.rows {
                // Owned series are in index order: the rest of this epoch is past the end too.
                self.epoch = self.prog.epochs;
                return None;
            }
            self.pos += 1;
            let Some((i, n)) = self.row_shard else {
                return Some(self.row(at, self.epoch));
            };
            if shard_of(&global.to_string(), n) == i {
                return Some(self.row(at, self.epoch));
            }
            if self.prog.walks > 0 {
                self.row(at, self.epoch);
            }
        }
    }
}
