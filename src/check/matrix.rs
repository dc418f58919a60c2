//! The expanded matrix `check` hands to `lower`: the program, the cells' environments, and what
//! `lower` asks of it while and after it lowers every cell (flag spans, root params, unused
//! warnings, the workload's seed and description).

use indexmap::IndexMap;

use super::axes::AxisDef;
use super::cells::CellEnv;
use super::eval::{Eval, Scope};
use super::flags::point_at_flags;
use super::program::{Decl, InstanceId, Program};
use super::{hooks, Checked, Options};
use crate::diag::{Code, Diagnostic, Diagnostics};
use crate::plan::{AxisInfo, Cell};
use crate::source::SourceMap;
use crate::span::Span;
use crate::value::Value;

/// The expanded matrix, ready for `lower` to lower cell by cell with the same diagnostics sink.
pub struct Matrix {
    pub program: Program,
    pub hooks: hooks::Hooks,
    pub(super) base: CellEnv,
    pub(super) axes: Vec<AxisDef>,
    pub cells: Vec<CellEnv>,
    /// The params set to text by a flag, and where: see `point_at_flags`.
    pub(super) text_flags: Vec<(String, Span)>,
    pub(super) root_file: crate::span::FileId,
    /// Errors reported before the cells were lowered: later ones mean lowering failed.
    pub errors_before: usize,
}

impl Matrix {
    /// Points a diagnostic found while lowering at the `--param` flag that set a text value.
    pub fn point_at_flags(&self, map: &SourceMap, d: Diagnostic) -> Diagnostic {
        point_at_flags(map, &self.text_flags, d)
    }

    /// The root params of a cell, as the Plan records them.
    pub fn root_params(ev: &Eval<'_>) -> IndexMap<String, Value> {
        root_params(ev)
    }

    /// Warnings: a root param nothing reads, an axis no block reads. After an error they would
    /// be noise: a block that failed to lower read nothing.
    pub fn warn_unused(
        &self,
        used: &std::collections::HashSet<(InstanceId, String)>,
        lowering_failed: bool,
        hooks_read: bool,
        diags: &mut Diagnostics,
    ) {
        let program = &self.program;
        let axes = &self.axes;
        for (name, d) in program
            .root()
            .decls
            .iter()
            .filter(|_| !lowering_failed && !hooks_read)
        {
            if let Decl::Param(p) = d {
                let shadowed = axes.iter().any(|a| &a.name == name);
                if !used.contains(&(InstanceId::ROOT, name.clone())) && !shadowed {
                    diags.push(
                        Diagnostic::warning(
                            Code::W0001,
                            p.name.span,
                            format!("param `{name}` is never used"),
                        )
                        .label("declared but not read by any block"),
                    );
                }
            }
        }
        for a in axes
            .iter()
            .filter(|a| !a.implicit && !lowering_failed && !hooks_read)
        {
            if !used.contains(&(InstanceId::ROOT, a.name.clone())) {
                diags.push(
                    Diagnostic::warning(
                        Code::W0002,
                        a.span,
                        format!("no block uses the axis `{}`", a.name),
                    )
                    .label("every cell of this axis runs the same phases")
                    .note("refer to the axis by name in an ingest or run block, or remove it"),
                );
            }
        }
    }

    /// The lowered cells become the checked workload: its seed and description are evaluated
    /// last, after the cells, as they always were (diagnostics keep their order).
    pub fn finish(
        self,
        map: &SourceMap,
        opts: &Options,
        lowered: Vec<Cell>,
        diags: &mut Diagnostics,
    ) -> Checked {
        let Matrix {
            program,
            base,
            axes,
            cells,
            root_file,
            ..
        } = self;
        let seed = workload_seed(&program, opts, &base, diags);
        let description = workload_description(&program, &base, diags);
        let axes_info = axes
            .iter()
            .map(|a| AxisInfo {
                name: a.name.clone(),
                values: a.values.clone(),
                implicit: a.implicit,
            })
            .collect();
        Checked {
            program,
            seed,
            description,
            axes: axes_info,
            cells,
            lowered,
            file: map.get(root_file).name.clone(),
        }
    }
}

fn root_params(ev: &Eval<'_>) -> IndexMap<String, Value> {
    let mut out = IndexMap::new();
    for (name, d) in &ev.prog.root().decls {
        if let Decl::Param(p) = d {
            if ev.cell.axes.contains_key(name) {
                continue;
            }
            let used_before = ev.used.borrow().contains(&(InstanceId::ROOT, name.clone()));
            if let Some(v) = ev.param(InstanceId::ROOT, p) {
                out.insert(name.clone(), v);
            }
            if !used_before {
                ev.used
                    .borrow_mut()
                    .remove(&(InstanceId::ROOT, name.clone()));
            }
        }
    }
    out
}

fn workload_seed(
    program: &Program,
    opts: &Options,
    base: &CellEnv,
    diags: &mut Diagnostics,
) -> u64 {
    if let Some(s) = opts.seed {
        return s;
    }
    let Some(w) = &program.root().workload else {
        return 0;
    };
    let Some(e) = w.seed.first() else { return 0 };
    for extra in w.seed.iter().skip(1) {
        diags.push(
            Diagnostic::error(Code::E0108, extra.span, "a second `seed`")
                .label("the workload has one seed")
                .also(e.span, "the first one is here"),
        );
    }
    let ev = Eval::new(program, base);
    let seed = match ev.eval(e, &Scope::new(InstanceId::ROOT)) {
        Some(Value::Int(i)) if i >= 0 => i as u64,
        Some(other) => {
            diags.push(ev.mismatch(
                e.span,
                "a seed (an integer >= 0)",
                &other,
                &Scope::new(InstanceId::ROOT),
            ));
            0
        }
        None => 0,
    };
    diags.extend(ev.diags.take());
    seed
}

fn workload_description(
    program: &Program,
    base: &CellEnv,
    diags: &mut Diagnostics,
) -> Option<String> {
    let w = program.root().workload.as_ref()?;
    let first = w.description.first()?;
    for extra in w.description.iter().skip(1) {
        diags.push(
            Diagnostic::error(Code::E0108, extra.span, "a second `description`")
                .label("the workload has one description")
                .also(first.span, "the first one is here"),
        );
    }
    let ev = Eval::new(program, base);
    let text = ev
        .string(first, &Scope::new(InstanceId::ROOT))
        .map(|t| t.redacted());
    diags.extend(ev.diags.take());
    text
}
