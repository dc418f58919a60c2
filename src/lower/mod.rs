//! Lowering: checked blocks become plain Plan data, cell by cell.
//!
//! [`lower_cells`] lowers every cell of the expanded matrix with the compile's diagnostics sink
//! (that is how checking finds value-dependent mistakes: `wlrun check` lowers every cell too),
//! reports each diagnostic once, then warns on unused params and axes. [`lower`] assembles the
//! result into the [`Plan`]; it cannot fail. `lower` uses `check`'s evaluator and checked
//! program; `check` never imports `lower`.

mod cell;
mod column;
mod column_refs;
mod commit;
mod concurrent;
mod disorder;
mod expect;
mod findmax;
mod ingest;
mod observe;
mod observe_metrics;
mod probe;
mod query;
mod repeat;
mod run;
mod schema;
mod series_from;
mod setup;
pub mod shards;
mod stages;
mod statements;
mod table;
mod target;
mod template;
mod values;
mod via;

pub use query::{bad_placeholders, placeholders, MAX_PLACEHOLDER};
pub(crate) use schema::series_domain;
pub use values::{MAX_BATCH_ROWS, MAX_WORKERS};

use crate::check::{Checked, Decl, Eval, InstanceId, Matrix, Options};
use crate::diag::Diagnostics;
use crate::plan::{Cell, Plan, WorkloadInfo, PLAN_FORMAT};
use crate::source::SourceMap;
use schema::lower_schema;

/// Lowers every cell; errors found in several cells are reported once (the sink dedups).
pub(crate) fn lower_cells(
    map: &SourceMap,
    matrix: Matrix,
    opts: &Options,
    diags: &mut Diagnostics,
) -> Checked {
    let mut lowered = Vec::new();
    let mut used = std::collections::HashSet::new();
    for (i, cell) in matrix.cells.iter().enumerate() {
        let ev = Eval::new(&matrix.program, cell);
        let phases = cell::lower_cell(&ev, &matrix.hooks);
        let groups = concurrent::lower_groups(&ev, &phases);
        let observe = observe::cell_observers(&ev, &phases);
        let observe_metrics = observe_metrics::lower_for_cell(&ev, &phases);
        if i == 0 {
            cell::check_all_decls(&ev, &matrix.hooks);
            observe_metrics::check_all(&ev);
        }
        let params = Matrix::root_params(&ev);
        let found = ev.diags.take().into_iter();
        diags.extend(found.map(|d| matrix.point_at_flags(map, d)));
        used.extend(ev.used.take());
        lowered.push(Cell {
            index: cell.index,
            key: cell.key(),
            axes: cell.axes.clone(),
            params,
            phases,
            groups,
            observe,
            observe_metrics,
        });
    }
    let lowering_failed = diags.error_count() > matrix.errors_before;
    // A phase whose `when` held in none of these cells (`--only` can leave it out) may read
    // any param or axis: which names are unused is then not known.
    let phase_left_out = matrix.program.root().decls.values().any(|d| {
        let name = match d {
            Decl::Ingest(i) => &i.name.name,
            Decl::Run(r) => &r.name.name,
            _ => return false,
        };
        !lowered
            .iter()
            .any(|c| c.phases.iter().any(|p| p.name() == name.as_str()))
    });
    // A hook sees every param in `ctx.params`: what it reads is not known here.
    let hooks_read = lowered.iter().any(|c: &Cell| {
        c.phases.iter().any(|p| {
            matches!(p, crate::plan::Phase::Requests(r)
                if matches!(r.request, crate::plan::RequestPlan::Hook { .. }))
        })
    });
    matrix.warn_unused(&used, lowering_failed || phase_left_out, hooks_read, diags);
    matrix.finish(map, opts, lowered, diags)
}

/// The schema a `wlrun gen` names (`name` or `alias.name`), lowered with the first cell's
/// values; without a name, the only schema of the root file or the first ingest block's.
pub fn schema_plan(
    checked: &Checked,
    name: Option<&str>,
) -> Result<crate::plan::SchemaPlan, String> {
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
    let ev = Eval::new(&checked.program, cell);
    let found = ev.resolve_decl(&path, InstanceId::ROOT);
    let plan = match found {
        Ok((inst, Decl::Schema(s), used)) if used == path.len() => lower_schema(&ev, inst, s),
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

pub fn lower(checked: &Checked) -> Plan {
    let root = checked.program.root();
    let name = match &root.workload {
        Some(w) => w.name.name.clone(),
        None => std::path::Path::new(&checked.file)
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned()),
    };
    let description = checked.description.clone();
    Plan {
        format: PLAN_FORMAT,
        workload: WorkloadInfo {
            name,
            file: checked.file.clone(),
            description,
            seed: checked.seed,
        },
        axes: checked.axes.clone(),
        cells: checked.lowered.clone(),
    }
}
