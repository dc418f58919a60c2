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
pub use eval::suggest;
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

/// The schema a `wlrun gen` names (`name` or `alias.name`), lowered with the first cell's
/// values; without a name, the only schema of the root file or the first ingest block's.
pub fn schema_plan(
    checked: &Checked,
    name: Option<&str>,
) -> Result<crate::plan::SchemaPlan, String> {
    use program::Decl;
    let root = checked.program.root();
    let path: Vec<crate::span::Ident> = match name {
        Some(n) => n
            .split('.')
            .map(|p| crate::span::Ident {
                name: p.to_string(),
                span: crate::span::Span::default(),
            })
            .collect(),
        None => {
            let schemas: Vec<&String> = root
                .decls
                .iter()
                .filter(|(_, d)| matches!(d, Decl::Schema(_)))
                .map(|(k, _)| k)
                .collect();
            if schemas.len() == 1 {
                vec![crate::span::Ident {
                    name: schemas[0].clone(),
                    span: crate::span::Span::default(),
                }]
            } else {
                let first_ingest = checked.lowered.first().and_then(|c| {
                    c.phases.iter().find_map(|p| match p {
                        crate::plan::Phase::Ingest(i) => match &i.source {
                            crate::plan::RowSource::Schema(s) => Some(s.clone()),
                            _ => None,
                        },
                        _ => None,
                    })
                });
                return first_ingest.ok_or_else(|| {
                    format!(
                        "name the schema with --schema; this file declares {}",
                        if schemas.is_empty() {
                            "no schema".to_string()
                        } else {
                            schemas
                                .iter()
                                .map(|s| s.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        }
                    )
                });
            }
        }
    };
    let cell = checked.cells.first().ok_or("the workload has no cell")?;
    let ev = eval::Eval::new(&checked.program, cell);
    let found = ev.resolve_decl(&path, InstanceId::ROOT);
    let plan = match found {
        Ok((inst, Decl::Schema(s), used)) if used == path.len() => {
            phases::lower_schema(&ev, inst, s)
        }
        Ok((_, d, _)) => {
            return Err(format!(
                "`{}` is a {}, not a schema",
                name.unwrap_or(""),
                d.kind()
            ))
        }
        Err(d) => return Err(d.message),
    };
    plan.ok_or_else(|| "the schema does not lower".to_string())
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
