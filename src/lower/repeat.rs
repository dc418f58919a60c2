//! `for VAR in VALUES`: the values a loop takes, and a schema's columns inside loops expanded,
//! one column per value, before the schema is lowered. (A query family binds its variable in
//! the query's scope instead: `query::lower_family`.)

use std::borrow::Cow;
use std::collections::BTreeSet;

use crate::check::{Ev, Eval, InstanceId, Scope};
use crate::diag::{Code, Diagnostic};
use crate::span::Ident;
use crate::syntax::ast::{self, ColumnGen, Expr, ExprKind, StrPart};
use crate::value::Value;

/// The most values a loop may take: each is a column or a query type of its own.
pub const MAX_VALUES: u64 = 1_000;

/// The integers `r` takes: a range such as `0..fields`, or a list of distinct integers.
pub(super) fn values(ev: &Eval<'_>, inst: InstanceId, r: &ast::Repeat) -> Ev<Vec<i64>> {
    let scope = Scope::new(inst);
    match ev.eval(&r.values, &scope)? {
        Value::Range(lo, hi) if lo < hi && ((hi - lo) as u64) <= MAX_VALUES => {
            Some((lo..hi).collect())
        }
        Value::List(l)
            if !l.is_empty()
                && l.len() as u64 <= MAX_VALUES
                && l.iter().all(|v| matches!(v, Value::Int(_))) =>
        {
            let v: Vec<i64> = l
                .iter()
                .filter_map(|v| match v {
                    Value::Int(i) => Some(*i),
                    _ => None,
                })
                .collect();
            let distinct: BTreeSet<i64> = v.iter().copied().collect();
            if distinct.len() != v.len() {
                return ev.fail(
                    Diagnostic::error(Code::E0203, r.values.span, "a value repeats")
                        .label("each value makes a column or a query of its own"),
                );
            }
            Some(v)
        }
        other => ev.fail(ev.mismatch(
            r.values.span,
            &format!("a range such as `0..10` or a list of integers, 1 to {MAX_VALUES} values"),
            &other,
            &scope,
        )),
    }
}

/// `s` with every column inside a `for` repeated once per value: `${VAR}` in its name and
/// `VAR` in its expressions replaced by the value, spans kept, so that a mistake points into
/// the column as written. A schema without loops is returned as it is. `false` with the
/// columns that could be expanded, after a loop's mistake (reported), so that the other
/// columns are still checked.
pub(super) fn expand<'s>(
    ev: &Eval<'_>,
    inst: InstanceId,
    s: &'s ast::Schema,
) -> (Cow<'s, ast::Schema>, bool) {
    let templated = |c: &ast::Column| c.name.name.contains("${");
    if !s.columns.iter().any(|c| c.repeat.is_some() || templated(c)) {
        return (Cow::Borrowed(s), true);
    }
    let mut ok = true;
    let mut columns = Vec::with_capacity(s.columns.len());
    // A loop's values, once per loop (its columns share its span).
    let mut loops: Vec<(crate::span::Span, Option<Vec<i64>>)> = Vec::new();
    for c in &s.columns {
        let Some(r) = &c.repeat else {
            if templated(c) {
                ev.error(outside(&c.name));
                ok = false;
            } else {
                columns.push(c.clone());
            }
            continue;
        };
        let vals = match loops.iter().find(|(span, _)| *span == r.span) {
            Some((_, v)) => v.clone(),
            None => {
                let v = values(ev, inst, r);
                loops.push((r.span, v.clone()));
                v
            }
        };
        let Some(vals) = vals else {
            ok = false;
            continue;
        };
        let pattern = format!("${{{}}}", r.var.name);
        for v in vals {
            let name = c.name.name.replace(&pattern, &v.to_string());
            if name.contains("${") {
                ev.error(outside(&c.name));
                ok = false;
                break;
            }
            let mut col = c.clone();
            col.name = Ident {
                name,
                span: c.name.span,
            };
            col.repeat = None;
            substitute_column(&mut col, &r.var.name, v);
            columns.push(col);
        }
    }
    let expanded = ast::Schema {
        columns,
        ..s.clone()
    };
    (Cow::Owned(expanded), ok)
}

fn outside(name: &Ident) -> Diagnostic {
    Diagnostic::error(
        Code::E0104,
        name.span,
        format!("`{}`: `${{...}}` names no loop variable here", name.name),
    )
    .label("a column name takes `${VAR}` inside `for VAR in VALUES { ... }` only")
}

fn substitute_column(c: &mut ast::Column, var: &str, v: i64) {
    match &mut c.gen {
        ColumnGen::Expr(e) => substitute(e, var, v),
        ColumnGen::Series { expr, domain, .. } => {
            substitute(expr, var, v);
            substitute(domain, var, v);
        }
        ColumnGen::Every { step, from, end } => {
            substitute(step, var, v);
            substitute(from, var, v);
            match end {
                Some(ast::TimeEnd::For(e) | ast::TimeEnd::To(e)) => substitute(e, var, v),
                None => {}
            }
        }
    }
    for e in &mut c.null {
        substitute(e, var, v);
    }
}

/// Every use of the name `var` in `e` becomes the integer `v`, at the use's place.
fn substitute(e: &mut Expr, var: &str, v: i64) {
    match &mut e.kind {
        ExprKind::Path(p) if p.len() == 1 && p[0].name == var => e.kind = ExprKind::Int(v),
        ExprKind::Str(s) => {
            for part in &mut s.parts {
                if let StrPart::Interp(x) = part {
                    substitute(x, var, v);
                }
            }
        }
        ExprKind::Env {
            default: Some(d), ..
        } => substitute(d, var, v),
        ExprKind::List(xs) => xs.iter_mut().for_each(|x| substitute(x, var, v)),
        ExprKind::Map(kvs) => kvs.iter_mut().for_each(|(_, x)| substitute(x, var, v)),
        ExprKind::Call { args, .. } => args
            .iter_mut()
            .for_each(|a| substitute(&mut a.value, var, v)),
        ExprKind::Unary(_, x) => substitute(x, var, v),
        ExprKind::Binary(_, a, b) => {
            substitute(a, var, v);
            substitute(b, var, v);
        }
        _ => {}
    }
}
