//! The matrix: axes and their values, `when` filters, exclusions, `--param` pins and `--only`
//! filters, expanded into ordered cells. Each cell is then lowered once to find every error.

use indexmap::IndexMap;

use super::axes::{cell_count_fits, check_conditions, check_only, declared_axes, AxisDef};
use super::eval::{Eval, Scope};
use super::flags::{read_flags, Flags};
use super::hooks;
use super::limits;
use super::matrix::Matrix;
use super::program::{InstanceId, Program};
use super::Options;
use crate::diag::{Code, Diagnostic, Diagnostics};
use crate::source::SourceMap;
use crate::span::Span;
use crate::syntax::ast;
use crate::value::Value;

/// One cell's environment: the value of every axis and the command-line overrides.
#[derive(Clone, Debug, Default)]
pub struct CellEnv {
    pub index: usize,
    pub axes: IndexMap<String, Value>,
    /// `--param name=value` for root params, as parsed expressions.
    pub overrides: IndexMap<String, ast::Expr>,
    /// See `Options::csv_may_be_missing`.
    pub csv_may_be_missing: bool,
}

impl CellEnv {
    pub fn override_for(&self, inst: InstanceId, name: &str) -> Option<&ast::Expr> {
        if inst == InstanceId::ROOT {
            self.overrides.get(name)
        } else {
            None
        }
    }

    pub fn key(&self) -> String {
        self.axes
            .iter()
            .map(|(k, v)| format!("{k}={}", display_plain(v)))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// How a value is written in a cell key and matched by `--only`: words and strings bare.
pub fn display_plain(v: &Value) -> String {
    match v {
        Value::Str(t) => t.redacted(),
        v => v.to_string(),
    }
}

/// The most cells a matrix may have: far more than a benchmark can run, few enough to check.
pub const MAX_CELLS: usize = 10_000;

pub fn check_program(
    map: &mut SourceMap,
    program: Program,
    opts: &Options,
    diags: &mut Diagnostics,
) -> Option<Matrix> {
    let root_file = program.root().file;
    // Errors from loading (say, an unknown import argument) do not stop the cells from being
    // checked; errors in the matrix itself do.
    let errors_before = diags.error_count();
    let flags = read_flags(map, &program, opts, diags);

    // The axes: evaluated in the root scope with no axis bound.
    let base = CellEnv {
        index: 0,
        axes: IndexMap::new(),
        overrides: flags.overrides.clone(),
        csv_may_be_missing: opts.csv_may_be_missing,
    };
    let ev = Eval::new(&program, &base);
    let axes = declared_axes(&ev, &program, &flags.pins, diags);
    diags.extend(ev.diags.take());
    check_only(&flags.only, &axes, diags);
    if diags.error_count() > errors_before {
        return None;
    }
    check_conditions(&program, &axes, diags);
    if diags.error_count() > errors_before || !cell_count_fits(&axes, diags) {
        return None;
    }
    let cells = expand(&program, &axes, &flags, opts, diags);
    if diags.error_count() > errors_before {
        return None;
    }
    if cells.is_empty() {
        let span = program
            .root()
            .matrix
            .as_ref()
            .map_or(Span::new(root_file, 0, 0), |m| m.span);
        let mut d = Diagnostic::error(Code::E0402, span, "the matrix leaves no cell to run")
            .label("every combination is excluded or filtered out");
        if !flags.only.is_empty() {
            d = d.note("the `--only` filters match no cell");
        }
        diags.push(d);
        return None;
    }
    if !limits::phases_fit(&program, &axes, cells.len(), diags) {
        return None;
    }

    let hook_info = hooks::check_hooks(map, &program, diags);

    // The params set to text by a flag, and where: see `point_at_flags`.
    let text_flags: Vec<(String, Span)> = flags
        .overrides
        .iter()
        .filter(|(_, e)| matches!(e.kind, ast::ExprKind::Str(_)))
        .map(|(name, e)| (name.clone(), e.span))
        .collect();
    Some(Matrix {
        program,
        hooks: hook_info,
        base,
        axes,
        cells,
        text_flags,
        root_file,
        errors_before,
    })
}

/// The cartesian product of the axes (first axis outermost), through `when`, `exclude` and
/// `--only`, without the duplicates filters make. Filter errors are reported sorted.
fn expand(
    program: &Program,
    axes: &[AxisDef],
    flags: &Flags,
    opts: &Options,
    diags: &mut Diagnostics,
) -> Vec<CellEnv> {
    let (overrides, only) = (&flags.overrides, &flags.only);
    let mut combos: Vec<IndexMap<String, Value>> = vec![IndexMap::new()];
    for a in axes {
        let mut next = Vec::with_capacity(combos.len() * a.values.len());
        for c in &combos {
            for v in &a.values {
                let mut c = c.clone();
                c.insert(a.name.clone(), v.clone());
                next.push(c);
            }
        }
        combos = next;
    }
    let excludes: Vec<ast::Expr> = program
        .root()
        .matrix
        .as_ref()
        .map(|m| m.excludes.clone())
        .unwrap_or_default();
    let mut cells: Vec<CellEnv> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut filter_errors = Diagnostics::default();
    'combo: for mut combo in combos {
        // `when` filters see every axis's value; a filtered axis becomes `none`.
        let snapshot = CellEnv {
            index: 0,
            axes: combo.clone(),
            overrides: overrides.clone(),
            csv_may_be_missing: opts.csv_may_be_missing,
        };
        let fev = Eval::new(program, &snapshot);
        for a in axes {
            if let Some(w) = &a.when {
                match fev.eval(w, &Scope::new(InstanceId::ROOT)) {
                    Some(Value::Bool(true)) => {}
                    Some(Value::Bool(false)) => {
                        combo.insert(a.name.clone(), Value::None);
                    }
                    Some(other) => filter_errors.push(fev.mismatch(
                        w.span,
                        "a condition (true or false)",
                        &other,
                        &Scope::new(InstanceId::ROOT),
                    )),
                    None => {}
                }
            }
        }
        // Exclusions see the axes after `when`, so they can test for `none`.
        filter_errors.extend(fev.diags.take());
        let after_when = CellEnv {
            index: 0,
            axes: combo.clone(),
            overrides: overrides.clone(),
            csv_may_be_missing: opts.csv_may_be_missing,
        };
        let fev = Eval::new(program, &after_when);
        for x in &excludes {
            match fev.eval(x, &Scope::new(InstanceId::ROOT)) {
                Some(Value::Bool(true)) => continue 'combo,
                Some(Value::Bool(false)) | None => {}
                Some(other) => filter_errors.push(fev.mismatch(
                    x.span,
                    "a condition (true or false)",
                    &other,
                    &Scope::new(InstanceId::ROOT),
                )),
            }
        }
        filter_errors.extend(fev.diags.take());
        // Several `--only` on one axis are alternatives; different axes must all match.
        for ((name, _), _) in only {
            let have = combo.get(name).map(display_plain);
            let matched = only
                .iter()
                .any(|((n, _), want)| n == name && have.as_deref() == Some(want.as_str()));
            if !matched {
                continue 'combo;
            }
        }
        // Filters that set axes to `none` make combinations equal; a set, not a scan of the
        // cells so far, keeps this linear (10,000 cells took 79 s).
        if !seen.insert(format!("{combo:?}")) {
            continue;
        }
        cells.push(CellEnv {
            index: cells.len() + 1,
            axes: combo,
            overrides: overrides.clone(),
            csv_may_be_missing: opts.csv_may_be_missing,
        });
    }
    diags.extend(filter_errors.into_sorted());
    cells
}
