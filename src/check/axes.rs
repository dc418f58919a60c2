//! Matrix axes: their declared values (or a `--param` pin), the implicit `via [a, b]` axes, and
//! the checks on `when` and `exclude` conditions and on the size of the product.

use indexmap::IndexMap;

use super::cells::{display_plain, MAX_CELLS};
use super::eval::{Eval, Scope};
use super::program::{Decl, InstanceId, Program};
use crate::diag::{suggest, Code, Diagnostic, Diagnostics};
use crate::span::Span;
use crate::syntax::ast;
use crate::value::Value;

pub(super) struct AxisDef {
    pub name: String,
    pub values: Vec<Value>,
    pub when: Option<ast::Expr>,
    pub span: Span,
    /// A `via [a, b]` list's axis, not declared in the matrix.
    pub implicit: bool,
}

/// The matrix's axes, then one implicit axis per `via [a, b]` list, named after its block.
pub(super) fn declared_axes(
    ev: &Eval<'_>,
    program: &Program,
    pins: &IndexMap<String, ast::Expr>,
    diags: &mut Diagnostics,
) -> Vec<AxisDef> {
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
                None => axis_values(ev, &a.values),
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
    axes
}

/// `--only` names an axis and one of its values.
pub(super) fn check_only(
    only: &[((String, Span), String)],
    axes: &[AxisDef],
    diags: &mut Diagnostics,
) {
    for ((name, span), want) in only {
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
}

/// Conditions compare axes with bare words; a misspelt axis or value would silently match
/// nothing, so both are checked against the declared axes and their values.
pub(super) fn check_conditions(program: &Program, axes: &[AxisDef], diags: &mut Diagnostics) {
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
        check_condition(c, axes, &params, diags);
    }
}

/// Every cell is lowered to be checked (and run), so the product must be bounded before it
/// is built: three axes of 2,000 values asked for 8e9 cells.
pub(super) fn cell_count_fits(axes: &[AxisDef], diags: &mut Diagnostics) -> bool {
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
        return false;
    }
    true
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
