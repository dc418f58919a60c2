//! The compile side end to end: load -> check -> lower, with one diagnostics sink.
//!
//! `wlrun check` lowers every cell too: checking works by evaluating, and a value-dependent
//! mistake (a unit, a range, a type that depends on an axis) is only found with the values a
//! cell would run with. So [`check_file`] loads the program ([`crate::check`]), expands the
//! matrix, lowers every cell through the same sink ([`crate::lower`]), and reports each
//! diagnostic once, sorted by position.

use std::path::Path;

use crate::check::{Checked, Options};
use crate::diag::{Diagnostic, Diagnostics};
use crate::source::SourceMap;

pub use crate::lower::schema_plan;

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
    let program = crate::check::load_program(
        &mut map,
        root,
        problem,
        crate::lower::series_domain,
        &mut diags,
    );
    let Some(program) = program else {
        return Outcome {
            map,
            diagnostics: diags.into_sorted(),
            checked: None,
        };
    };
    let checked = crate::check::check_program(&mut map, program, opts, &mut diags)
        .map(|matrix| crate::lower::lower_cells(&map, matrix, opts, &mut diags));
    let failed = diags.has_errors();
    Outcome {
        map,
        diagnostics: diags.into_sorted(),
        checked: if failed { None } else { checked },
    }
}
