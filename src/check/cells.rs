//! The matrix: axes and their values, `when` filters, exclusions, `--param` pins and `--only`
//! filters, expanded into ordered cells. Each cell is then lowered once to find every error.

use indexmap::IndexMap;

use super::eval::{Eval, Scope};
use super::program::{Decl, InstanceId, Program};
use super::{hooks, Checked, Options};
use crate::diag::{suggest, Code, Diagnostic, Diagnostics};
use crate::plan::{AxisInfo, Cell};
use crate::source::{Origin, SourceMap};
use crate::span::Span;
use crate::syntax::{self, ast};
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

struct AxisDef {
    name: String,
    values: Vec<Value>,
    when: Option<ast::Expr>,
    span: Span,
    implicit: bool,
}

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
    let file_start = Span::new(root_file, 0, 0);

    // Command-line overrides, parsed as values in a file of their own so errors point at them.
    let mut overrides: IndexMap<String, ast::Expr> = IndexMap::new();
    let mut pins: IndexMap<String, ast::Expr> = IndexMap::new();
    let axis_names: Vec<String> = program
        .root()
        .matrix
        .iter()
        .flat_map(|m| m.axes.iter().map(|a| a.name.name.clone()))
        .collect();
    // Declared values evaluated without overrides, to judge each override against; what this
    // evaluation reports is left to the cells, which report it anyway.
    let declared_env = CellEnv::default();
    let declared = Eval::new(&program, &declared_env);
    for (flag, raw) in opts.params.iter().map(|p| ("--param", p)) {
        let text_param = |name: &str| {
            !axis_names.iter().any(|a| a == name)
                && matches!(program.root().decls.get(name), Some(Decl::Param(p)) if declares_text(p))
        };
        let Some((name, value)) = parse_assignment(map, flag, raw, text_param, diags) else {
            continue;
        };
        let is_param = matches!(program.root().decls.get(&name.0), Some(Decl::Param(_)));
        let is_axis = axis_names.contains(&name.0);
        if !is_param && !is_axis {
            let mut candidates: Vec<&str> = axis_names.iter().map(String::as_str).collect();
            candidates.extend(
                program
                    .root()
                    .decls
                    .iter()
                    .filter(|(_, d)| matches!(d, Decl::Param(_)))
                    .map(|(k, _)| k.as_str()),
            );
            let mut d = Diagnostic::error(
                Code::E0403,
                name.1,
                format!(
                    "`{}` is not a param or matrix axis of this workload",
                    name.0
                ),
            )
            .label("unknown name");
            if let Some(s) = suggest(&name.0, candidates.iter().copied()) {
                d = d.note(format!("did you mean `{s}`?"));
            }
            diags.push(d);
            continue;
        }
        if is_axis {
            pins.insert(name.0.clone(), value.clone());
        }
        if is_param {
            if let Some(d) = override_mismatch(&declared, &name.0, raw, &value) {
                // The param keeps its declared value, so its uses do not report the flag's
                // mistake again, each at a place in the file that is not wrong.
                diags.push(d);
                continue;
            }
            overrides.insert(name.0, value);
        }
    }
    declared.diags.take();
    let mut only: Vec<((String, Span), String)> = Vec::new();
    for raw in &opts.only {
        let Some((name, value)) = split_assignment(map, "--only", raw, diags) else {
            continue;
        };
        only.push((name, value));
    }

    // The axes: evaluated in the root scope with no axis bound.
    let base = CellEnv {
        index: 0,
        axes: IndexMap::new(),
        overrides: overrides.clone(),
        csv_may_be_missing: opts.csv_may_be_missing,
    };
    let ev = Eval::new(&program, &base);
    let mut axes: Vec<AxisDef> = Vec::new();
    if let Some(m) = &program.root().matrix {
        for a in &m.axes {
            if let Some(first) = axes.iter().find(|x| x.name == a.name.name) {
                diags.push(
                    Diagnostic::error(
                        Code::E0103,
                        a.name.span,
                        format!("axis `{}` is declared twice", a.name),
                    )
                    .label("duplicate axis")
                    .also(first.span, "first declared here"),
                );
                continue;
            }
            let values = match pins.get(&a.name.name) {
                Some(e) => ev.eval(e, &Scope::new(InstanceId::ROOT)).map(|v| vec![v]),
                None => axis_values(&ev, &a.values),
            };
            let Some(values) = values else { continue };
            axes.push(AxisDef {
                name: a.name.name.clone(),
                values,
                when: a.when.clone(),
                span: a.name.span,
                implicit: false,
            });
        }
    }
    // A `via [a, b]` list is one more axis, named after its block.
    for decl in program.root().decls.values() {
        let (name, via) = match decl {
            Decl::Ingest(i) => (&i.name, i.into.first().map(|x| &x.via)),
            Decl::Run(r) => (&r.name, r.against.first().and_then(|x| x.via.as_ref())),
            _ => continue,
        };
        if let Some(ast::Via::List(items, span)) = via {
            axes.push(AxisDef {
                name: format!("{}.via", name.name),
                values: items
                    .iter()
                    .map(|i| Value::Symbol(i.name.clone()))
                    .collect(),
                when: None,
                span: *span,
                implicit: true,
            });
        }
    }
    diags.extend(ev.diags.take());

    for ((name, span), want) in &only {
        if let Some(a) = axes.iter().find(|a| &a.name == name) {
            if !a.values.iter().any(|v| display_plain(v) == *want) {
                let values: Vec<String> = a.values.iter().map(display_plain).collect();
                let mut d = Diagnostic::error(
                    Code::E0403,
                    *span,
                    format!("axis `{name}` has no value `{want}`"),
                )
                .label("no cell would match")
                .note(format!("its values: {}", values.join(", ")));
                let numeric = want
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == '.' || c == '_');
                if let Some(s) =
                    suggest(want, values.iter().map(String::as_str)).filter(|_| !numeric)
                {
                    d = d.note(format!("did you mean `{s}`?"));
                }
                diags.push(d);
            }
        }
        if !axes.iter().any(|a| &a.name == name) {
            let mut d =
                Diagnostic::error(Code::E0403, *span, format!("`{name}` is not a matrix axis"))
                    .label("unknown axis");
            if let Some(s) = suggest(name, axes.iter().map(|a| a.name.as_str())) {
                d = d.note(format!("did you mean `{s}`?"));
            }
            diags.push(d);
        }
    }
    if diags.error_count() > errors_before {
        return None;
    }

    // Conditions compare axes with bare words; a misspelt axis or value would silently match
    // nothing, so both are checked against the declared axes and their values.
    let params: Vec<String> = program
        .root()
        .decls
        .iter()
        .filter(|(_, d)| matches!(d, Decl::Param(_)))
        .map(|(k, _)| k.clone())
        .collect();
    let conditions = program.root().matrix.iter().flat_map(|m| {
        m.axes
            .iter()
            .filter_map(|a| a.when.as_ref())
            .chain(m.excludes.iter())
    });
    for c in conditions {
        check_condition(c, &axes, &params, diags);
    }
    if diags.error_count() > errors_before {
        return None;
    }

    // Every cell is lowered to be checked (and run), so the product must be bounded before it
    // is built: three axes of 2,000 values asked for 8e9 cells.
    let count = axes
        .iter()
        .fold(1u128, |n, a| n.saturating_mul(a.values.len() as u128));
    if count > MAX_CELLS as u128 {
        let most = axes.iter().map(|a| a.values.len()).max().unwrap_or(0);
        let widest = axes
            .iter()
            .find(|a| a.values.len() == most)
            .expect("a product over 1 has an axis");
        let mut d = Diagnostic::error(
            Code::E0401,
            widest.span,
            format!("the matrix has {count} cells; at most {MAX_CELLS}"),
        )
        .label(format!("{} values", widest.values.len()));
        for a in axes.iter().filter(|a| a.span != widest.span) {
            d = d.also(a.span, format!("{} values", a.values.len()));
        }
        diags.push(d.note("every cell is checked and run; pin axes with --param or narrow them"));
        return None;
    }

    // The cartesian product, first axis outermost.
    let mut combos: Vec<IndexMap<String, Value>> = vec![IndexMap::new()];
    for a in &axes {
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
        let fev = Eval::new(&program, &snapshot);
        for a in &axes {
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
        let fev = Eval::new(&program, &after_when);
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
        for ((name, _), _) in &only {
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
    if diags.error_count() > errors_before {
        return None;
    }
    if cells.is_empty() {
        let span = program
            .root()
            .matrix
            .as_ref()
            .map_or(file_start, |m| m.span);
        let mut d = Diagnostic::error(Code::E0402, span, "the matrix leaves no cell to run")
            .label("every combination is excluded or filtered out");
        if !only.is_empty() {
            d = d.note("the `--only` filters match no cell");
        }
        diags.push(d);
        return None;
    }

    let hook_info = hooks::check_hooks(map, &program, diags);

    // The params set to text by a flag, and where: see `point_at_flags`.
    let text_flags: Vec<(String, Span)> = overrides
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

/// The expanded matrix, ready for `lower` to lower cell by cell with the same diagnostics sink.
pub struct Matrix {
    pub program: Program,
    pub hooks: hooks::Hooks,
    base: CellEnv,
    axes: Vec<AxisDef>,
    pub cells: Vec<CellEnv>,
    /// The params set to text by a flag, and where: see `point_at_flags`.
    text_flags: Vec<(String, Span)>,
    root_file: crate::span::FileId,
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

/// The name a condition operand refers to: `protocol`, or `load.via` for an implicit axis.
fn operand_name(e: &ast::Expr) -> Option<(String, Span)> {
    match &e.kind {
        ast::ExprKind::Path(p) if p.len() == 1 => Some((p[0].name.clone(), p[0].span)),
        ast::ExprKind::Path(p) if p.len() == 2 && p[1].name == "via" => {
            Some((format!("{}.via", p[0].name), e.span))
        }
        _ => None,
    }
}

fn check_condition(e: &ast::Expr, axes: &[AxisDef], params: &[String], diags: &mut Diagnostics) {
    use ast::{BinOp, ExprKind};
    match &e.kind {
        ExprKind::Binary(BinOp::And | BinOp::Or, a, b) => {
            check_condition(a, axes, params, diags);
            check_condition(b, axes, params, diags);
        }
        ExprKind::Unary(_, x) => check_condition(x, axes, params, diags),
        ExprKind::Binary(BinOp::Eq | BinOp::Ne | BinOp::In, a, b) => {
            let known = |n: &str| axes.iter().any(|x| x.name == n) || params.iter().any(|p| p == n);
            let (la, lb) = (operand_name(a), operand_name(b));
            let axis_of = |o: &Option<(String, Span)>| {
                o.as_ref()
                    .and_then(|(n, _)| axes.iter().find(|x| &x.name == n))
            };
            // One side an axis: a bare word on the other side must be one of its values.
            for (axis, other) in [(axis_of(&la), &lb), (axis_of(&lb), &la)] {
                let Some(axis) = axis else { continue };
                let words: Vec<(String, Span)> = match other {
                    Some((w, span)) if !known(w) => vec![(w.clone(), *span)],
                    _ => match &(if axis_of(&la).is_some() { b } else { a }).kind {
                        ExprKind::List(items) => items
                            .iter()
                            .filter_map(operand_name)
                            .filter(|(w, _)| !known(w))
                            .collect(),
                        _ => Vec::new(),
                    },
                };
                for (w, span) in words {
                    let values: Vec<String> = axis.values.iter().map(display_plain).collect();
                    if w != "none" && !values.contains(&w) {
                        let mut d = Diagnostic::error(
                            Code::E0104,
                            span,
                            format!("`{w}` is not a value of the axis `{}`", axis.name),
                        )
                        .label("this comparison can never be true")
                        .note(format!("its values: {}", values.join(", ")));
                        if let Some(s) = suggest(&w, values.iter().map(String::as_str)) {
                            d = d.note(format!("did you mean `{s}`?"));
                        }
                        diags.push(d);
                    }
                }
                return;
            }
            // Neither side an axis or a param: the left one is a misspelt axis name (two bare
            // words never compare usefully).
            if let Some((n, span)) = [la, lb].into_iter().flatten().find(|(n, _)| !known(n)) {
                let names: Vec<&str> = axes
                    .iter()
                    .map(|x| x.name.as_str())
                    .chain(params.iter().map(String::as_str))
                    .collect();
                let mut d = Diagnostic::error(Code::E0104, span, format!("unknown name `{n}`"))
                    .label("not an axis or a param")
                    .note(format!(
                        "conditions compare axes or params: {}",
                        names.join(", ")
                    ));
                if let Some(s) = suggest(&n, names.iter().copied()) {
                    d = d.note(format!("did you mean `{s}`?"));
                }
                diags.push(d);
            }
        }
        _ => {}
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

fn axis_values(ev: &Eval<'_>, e: &ast::Expr) -> Option<Vec<Value>> {
    let v = ev.eval(e, &Scope::new(InstanceId::ROOT))?;
    let values = match v {
        Value::List(items) => items,
        Value::Range(lo, hi) if i128::from(hi) - i128::from(lo) <= 10_000 => {
            (lo..hi).map(Value::Int).collect()
        }
        Value::Range(lo, hi) => {
            return ev.fail(
                Diagnostic::error(
                    Code::E0401,
                    e.span,
                    format!(
                        "the range {lo}..{hi} has {} values",
                        i128::from(hi) - i128::from(lo)
                    ),
                )
                .label("an axis range may hold at most 10000 values"),
            )
        }
        other => {
            return ev.fail(
                Diagnostic::error(
                    Code::E0401,
                    e.span,
                    format!("axis values must be a list, found {}", other.kind()),
                )
                .label("expected `[value, ...]` or a small `lo..hi` range"),
            )
        }
    };
    if values.is_empty() {
        return ev.fail(
            Diagnostic::error(Code::E0401, e.span, "an axis without values")
                .label("needs at least one value"),
        );
    }
    for (i, v) in values.iter().enumerate() {
        if matches!(
            v,
            Value::Gen(_) | Value::List(_) | Value::Map(_) | Value::None
        ) {
            return ev.fail(
                Diagnostic::error(
                    Code::E0401,
                    e.span,
                    format!("an axis value cannot be {}", v.kind()),
                )
                .label("axis values are plain values"),
            );
        }
        if values[..i].contains(v) {
            return ev.fail(
                Diagnostic::error(Code::E0401, e.span, format!("the value {v} appears twice"))
                    .label("duplicate axis value"),
            );
        }
    }
    Some(values)
}

/// Splits `name=value`, reporting a positioned error in a pseudo-file for the flag.
fn split_assignment(
    map: &mut SourceMap,
    flag: &str,
    raw: &str,
    diags: &mut Diagnostics,
) -> Option<((String, Span), String)> {
    let file = map.add(
        Origin::Disk(flag.into()),
        format!("{flag} {raw}"),
        raw.to_string(),
    );
    let Some((name, value)) = raw.split_once('=') else {
        diags.push(
            Diagnostic::error(
                Code::E0403,
                Span::new(file, 0, raw.len()),
                format!("`{flag}` takes NAME=VALUE"),
            )
            .label("missing `=`"),
        );
        return None;
    };
    let name_t = name.trim();
    if name_t.is_empty() {
        diags.push(
            Diagnostic::error(
                Code::E0403,
                Span::new(file, 0, 1),
                "missing name before `=`",
            )
            .label("expected NAME=VALUE"),
        );
        return None;
    }
    Some((
        (name_t.to_string(), Span::new(file, 0, name.len())),
        value.trim().to_string(),
    ))
}

/// An override whose kind differs from the param's declared value (`--param records=ten` for
/// `param records = 100`), reported at the flag. An integer does for a number, and words and
/// strings for each other; a declared value that needs a cell to evaluate is not judged here.
fn override_mismatch(
    declared: &Eval<'_>,
    name: &str,
    raw: &str,
    value: &ast::Expr,
) -> Option<Diagnostic> {
    let Some(Decl::Param(p)) = declared.prog.root().decls.get(name) else {
        return None;
    };
    let want = declared.param(InstanceId::ROOT, p)?;
    let got = declared.eval(value, &Scope::new(InstanceId::ROOT))?;
    let fits = match (&want, &got) {
        (Value::None | Value::Gen(_), _) => true,
        (Value::Float(_), Value::Int(_)) => true,
        (Value::Str(_) | Value::Symbol(_), Value::Str(_) | Value::Symbol(_)) => true,
        (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
    };
    if fits {
        return None;
    }
    let found = match &got {
        Value::Symbol(w) => format!("`{w}`"),
        v => v.kind().to_string(),
    };
    Some(
        Diagnostic::error(
            Code::E0403,
            value.span,
            format!("`--param {raw}`: expected {}, found {found}", want.kind()),
        )
        .label(format!("`{name}` is {}", want.kind()))
        .also(p.value.span, "declared here"),
    )
}

fn parse_assignment(
    map: &mut SourceMap,
    flag: &str,
    raw: &str,
    text_param: impl Fn(&str) -> bool,
    diags: &mut Diagnostics,
) -> Option<((String, Span), ast::Expr)> {
    let ((name, span), _) = split_assignment(map, flag, raw, diags)?;
    let eq = raw.find('=').expect("split found `=`");
    let value_text = &raw[eq + 1..];
    let file = map.add(
        Origin::Disk(format!("{flag} {name}").into()),
        format!("{flag} {name}="),
        value_text.to_string(),
    );
    // A text param takes the value as it stands, the way a shell user writes a URL or a path.
    // A value in quotes is still a string literal (`"${host}:9000"` interpolates), and an
    // empty one still fails to parse: `--param url=$UNSET` is a mistake, not "".
    let text = value_text.trim();
    if text_param(&name) && !text.is_empty() && !text.starts_with('"') {
        let start = value_text.len() - value_text.trim_start().len();
        let at = Span::new(file, start, start + text.len());
        let lit = ast::StrLit {
            parts: vec![ast::StrPart::Text(text.to_string())],
            span: at,
        };
        return Some((
            (name, span),
            ast::Expr {
                kind: ast::ExprKind::Str(lit),
                span: at,
            },
        ));
    }
    match syntax::parse_value(map, file) {
        Ok(e) => Some(((name, span), e)),
        Err(d) => {
            diags.push(d);
            None
        }
    }
}

/// A text param is checked where it is used (a URL where an endpoint reads it), so the error
/// points at the file; when the text under the error names a param set by a flag, the flag is
/// shown too, since what was checked is the flag's value, not the file's.
fn point_at_flags(map: &SourceMap, flags: &[(String, Span)], mut d: Diagnostic) -> Diagnostic {
    let at = d.primary.span;
    let Some(text) = map.get(at.file).text.get(at.range()) else {
        return d;
    };
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    for (name, flag) in flags.iter().filter(|(_, f)| f.file != at.file) {
        let named = text.match_indices(name.as_str()).any(|(i, _)| {
            !text[..i].ends_with(ident) && !text[i + name.len()..].starts_with(ident)
        });
        if named {
            d = d.also(*flag, format!("`{name}` is set here"));
        }
    }
    d
}

/// Whether a param's value is text, so that `--param url=http://h:1` needs no inner quotes:
/// declared `varchar` or `string`, or written as a string in the file.
fn declares_text(p: &ast::Param) -> bool {
    match p.ty.as_ref().map(|t| t.name.name.as_str()) {
        Some("varchar" | "string") => true,
        Some("symbol") | None => matches!(p.value.kind, ast::ExprKind::Str(_)),
        Some(_) => false,
    }
}
