//! From ASTs to a checked program: loading (stops a file at its first syntax error), names,
//! types, units, endpoints, hooks, and the matrix expanded into cells. Everything after loading
//! collects every error it finds, sorted by position.
//!
//! Checking works by evaluating: [`crate::compile`] hands the expanded [`Matrix`] to
//! [`crate::lower`], which lowers every cell with the same diagnostics sink, so a type or unit
//! mistake is found with the values the run would use. `check` provides the evaluator
//! ([`Eval`]) and the checked program; it never imports `lower` (data flows check -> lower).

mod axes;
mod builtins;
mod cells;
mod eval;
mod flags;
mod hooks;
mod limits;
mod load;
mod matrix;
mod program;

pub(crate) use builtins::{read_csv_header, root_relative};
pub use cells::CellEnv;
pub(crate) use eval::{Ev, Eval, RunQueries, Scope};
pub(crate) use hooks::Hooks;
pub(crate) use limits::MAX_SERIES;
pub(crate) use load::load_program;
pub(crate) use matrix::Matrix;
pub(crate) use program::Decl;
pub use program::{InstanceId, Program};

pub(crate) use cells::check_program;

use crate::plan::{AxisInfo, Cell};

/// What the command line adds: `--param`, `--only`, `--seed`.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub params: Vec<String>,
    pub only: Vec<String>,
    pub seed: Option<u64>,
    /// Missing CSV bind files are warnings, not errors: `wlrun gen` may be generating them.
    pub csv_may_be_missing: bool,
}

/// A checked workload: the program, the cells of its matrix, and each cell's phases.
#[derive(Debug)]
pub struct Checked {
    pub program: Program,
    pub file: String,
    pub seed: u64,
    pub description: Option<String>,
    pub axes: Vec<AxisInfo>,
    pub cells: Vec<CellEnv>,
    pub lowered: Vec<Cell>,
}
