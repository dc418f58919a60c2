//! From ASTs to a checked program. Loading stops a file at its first syntax error; everything
//! after that collects every error it finds, sorted by position.
//!
//! Checking works by evaluating: every cell of the matrix is lowered with a diagnostics sink, so
//! a type or unit mistake is found with the values the run would use. Diagnostics found in
//! several cells are reported once.

mod builtins;
mod cells;
mod eval;
mod hooks;
mod load;
mod phases;
mod program;
mod targets;

pub use cells::CellEnv;
pub use program::{InstanceId, Program};

use std::path::Path;

use crate::diag::{Diagnostic, Diagnostics};
use crate::plan::{AxisInfo, Cell};
use crate::source::SourceMap;

/// What the command line adds: `--param`, `--only`, `--seed`.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub params: Vec<String>,
    pub only: Vec<String>,
    pub seed: Option<u64>,
}

/// A checked workload: the program, the cells of its matrix, and each cell's phases.
#[derive(Debug)]
pub struct Checked {
    pub program: Program,
    pub file: String,
    pub seed: u64,
    pub axes: Vec<AxisInfo>,
    pub cells: Vec<CellEnv>,
    pub lowered: Vec<Cell>,
}

pub struct Outcome {
    pub map: SourceMap,
    /// Errors and warnings, sorted by position.
    pub diagnostics: Vec<Diagnostic>,
    /// Present when there is no error.
    pub checked: Option<Checked>,
}

pub fn check_file(path: &Path, opts: &Options) -> Outcome {
    let mut map = SourceMap::new();
    let (root, problem) = map.load_disk(path);
    check_loaded(map, root, problem, opts)
}

/// Checks text as if it were a file with this name (tests, docs examples).
pub fn check_text(name: &str, text: &str, opts: &Options) -> Outcome {
    let mut map = SourceMap::new();
    let (root, problem) = map.add_bytes(
        crate::source::Origin::Disk(name.into()),
        name.to_string(),
        text.as_bytes().to_vec(),
    );
    check_loaded(map, root, problem, opts)
}

fn check_loaded(
    mut map: SourceMap,
    root: crate::span::FileId,
    problem: Option<crate::source::LoadProblem>,
    opts: &Options,
) -> Outcome {
    let mut diags = Diagnostics::default();
    let program = load::load_program(&mut map, root, problem, &mut diags);
    let Some(program) = program else {
        return Outcome {
            map,
            diagnostics: diags.into_sorted(),
            checked: None,
        };
    };
    let checked = cells::check_program(&mut map, program, opts, &mut diags);
    let failed = diags.has_errors();
    Outcome {
        map,
        diagnostics: diags.into_sorted(),
        checked: if failed { None } else { checked },
    }
}
