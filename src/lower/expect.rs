//! Thresholds and guards: the `threshold` and `require` clauses of run and ingest blocks.

use super::schema::lower_schema;
use super::values::{join, text_value};
use crate::check::{Decl, Ev, Eval, Scope};
use crate::diag::{Code, Diagnostic};
use crate::plan::*;
use crate::span::Span;
use crate::syntax::ast::{self, BinOp, ExprKind};
use crate::value::Value;

pub(super) const DURATION_METRICS: &[&str] = &[
    "min", "mean", "median", "p50", "p90", "p95", "p99", "p999", "p9999", "max",
];
pub(super) const OTHER_METRICS: &[&str] = &[
    "error_rate",
    "achieved_rate",
    "errors",
    "rows",
    "qps",
    "rps",
];

pub(super) fn thresholds(
    ev: &Eval<'_>,
    expects: &[ast::Expect],
    scope: &Scope,
    in_query: bool,
) -> Ev<Vec<Threshold>> {
    let mut out = Vec::new();
    let mut ok = true;
    for e in expects {
        let threshold = match e {
            ast::Expect::Status(v, _) => status_threshold(ev, e, v, scope, in_query),
            // Body checks are not thresholds: `body_checks` collects them for request runs.
            ast::Expect::Body(..) => {
                if in_query {
                    ev.error(
                        Diagnostic::error(
                            Code::E0702,
                            e.span(),
                            "`expect body` belongs to request runs",
                        )
                        .label("queries have no HTTP body to check"),
                    );
                    ok = false;
                }
                continue;
            }
            ast::Expect::Condition(cond, _) => condition_threshold(ev, cond, scope),
        };
        match threshold {
            Some(t) => out.push(t),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

/// `expect status 200 | [200, 204] | 200..300`, request runs only.
fn status_threshold(
    ev: &Eval<'_>,
    e: &ast::Expect,
    v: &ast::Expr,
    scope: &Scope,
    in_query: bool,
) -> Option<Threshold> {
    if in_query {
        return ev.fail(
            Diagnostic::error(
                Code::E0702,
                e.span(),
                "`expect status` belongs to request runs",
            )
            .label("queries have no HTTP status to expect"),
        );
    }
    let (codes, value) = match ev.eval(v, scope)? {
        Value::Int(c) => (vec![Value::Int(c)], Value::List(vec![Value::Int(c)])),
        Value::List(l) if !l.is_empty() => (l.clone(), Value::List(l)),
        // A range is half-open, as everywhere: `200..300` is every 2xx.
        Value::Range(lo, hi) if lo < hi => (
            vec![Value::Int(lo), Value::Int(hi - 1)],
            Value::Range(lo, hi),
        ),
        other => {
            return ev.fail(ev.mismatch(
                v.span,
                "an HTTP status, a list of them or a range such as `200..300`",
                &other,
                scope,
            ))
        }
    };
    if codes
        .iter()
        .any(|c| !matches!(c, Value::Int(x) if (100..=599).contains(x)))
    {
        return ev.fail(
            Diagnostic::error(Code::E0702, v.span, "an HTTP status is 100..599")
                .label("invalid status"),
        );
    }
    Some(Threshold {
        metric: "status".into(),
        op: "in".into(),
        value,
    })
}

/// `expect METRIC OP VALUE`, such as `expect p99 < 20ms`.
pub(super) fn condition_threshold(
    ev: &Eval<'_>,
    cond: &ast::Expr,
    scope: &Scope,
) -> Option<Threshold> {
    let ExprKind::Binary(op, lhs, rhs) = &cond.kind else {
        return ev.fail(bad_threshold(cond.span));
    };
    let ExprKind::Path(p) = &lhs.kind else {
        return ev.fail(bad_threshold(cond.span));
    };
    if p.len() != 1
        || !matches!(
            op,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne
        )
    {
        return ev.fail(bad_threshold(cond.span));
    }
    let metric = p[0].name.as_str();
    if !DURATION_METRICS.contains(&metric) && !OTHER_METRICS.contains(&metric) {
        let all: Vec<&str> = DURATION_METRICS
            .iter()
            .chain(OTHER_METRICS)
            .copied()
            .collect();
        let mut d = Diagnostic::error(Code::E0702, p[0].span, format!("unknown metric `{metric}`"))
            .label("not a metric")
            .note(format!("metrics: {}", all.join(", ")));
        if let Some(s) = crate::diag::suggest(metric, all.iter().copied()) {
            d = d.note(format!("did you mean `{s}`?"));
        }
        return ev.fail(d);
    }
    let value = match (metric, ev.eval(rhs, scope)?) {
        (m, Value::Duration(d)) if DURATION_METRICS.contains(&m) && d >= 0 => Value::Duration(d),
        ("error_rate" | "achieved_rate", Value::Percent(p)) if (0.0..=100.0).contains(&p) => {
            Value::Percent(p)
        }
        ("errors" | "rows", Value::Int(i)) if i >= 0 => Value::Int(i),
        ("qps" | "rps", Value::Rate(r)) => Value::Rate(r),
        ("qps" | "rps", Value::Int(i)) => Value::Rate(i as f64),
        ("qps" | "rps", Value::Float(f)) => Value::Rate(f),
        (m, other) => {
            let want = match m {
                "error_rate" => "a percentage such as `0.1%`",
                "achieved_rate" => "a percentage such as `80%`",
                "errors" | "rows" => "a count",
                "qps" | "rps" => "a rate such as `100/s`",
                _ => "a duration such as `20ms`",
            };
            return ev.fail(
                Diagnostic::error(
                    Code::E0202,
                    rhs.span,
                    format!("`{m}` is compared with {want}, found {}", other.kind()),
                )
                .label(format!("expected {want}")),
            );
        }
    };
    Some(Threshold {
        metric: metric.to_string(),
        op: op.as_str().to_string(),
        value,
    })
}

pub(super) fn bad_threshold(span: Span) -> Diagnostic {
    Diagnostic::error(Code::E0702, span, "a threshold is `METRIC OP VALUE`")
        .label("cannot read this threshold")
        .note("for example: expect p99 < 20ms, expect error_rate < 0.1%, expect rows > 0, expect status 200")
}

pub(super) fn require(ev: &Eval<'_>, c: &ast::Clause<ast::Expr>, scope: &Scope) -> Ev<Require> {
    let bad = || {
        Diagnostic::error(Code::E0701, c.value.span, "a guard is `rows(TABLE) OP N`")
            .label("cannot read this guard")
            .note("for example: require rows(cpu) > 0")
    };
    let ExprKind::Binary(op, lhs, rhs) = &c.value.kind else {
        return ev.fail(bad());
    };
    let ExprKind::Call { callee, args } = &lhs.kind else {
        return ev.fail(bad());
    };
    if callee.len() != 1 || callee[0].name != "rows" || args.len() != 1 || args[0].name.is_some() {
        return ev.fail(bad());
    }
    if !matches!(
        op,
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne
    ) {
        return ev.fail(bad());
    }
    let a = &args[0].value;
    let table = match &a.kind {
        ExprKind::Path(p) => match ev.resolve_decl(p, scope.inst) {
            Ok((inst, Decl::Schema(s), used)) if used == p.len() => {
                lower_schema(ev, inst, s).map(|s| s.table)?
            }
            _ if p.len() == 1 => {
                // Not a schema: a table by name. Close to a schema's name, it is likely a typo.
                let schemas: Vec<&str> = ev
                    .prog
                    .module_of(scope.inst)
                    .decls
                    .iter()
                    .filter(|(_, d)| matches!(d, Decl::Schema(_)))
                    .map(|(k, _)| k.as_str())
                    .collect();
                if let Some(s) = crate::diag::suggest(&p[0].name, schemas.iter().copied()) {
                    ev.error(
                        Diagnostic::warning(
                            Code::W0004,
                            p[0].span,
                            format!("no schema `{}`; taken as a table name", p[0].name),
                        )
                        .label("counted as the table of this name")
                        .note(format!("did you mean the schema `{s}`?")),
                    );
                }
                p[0].name.clone()
            }
            Ok(_) | Err(_) => {
                return ev.fail(
                    Diagnostic::error(
                        Code::E0104,
                        a.span,
                        format!("`{}` is not a schema", join(p)),
                    )
                    .label("name a schema or write the table as a string"),
                )
            }
        },
        _ => text_value(ev, a, scope, "a table name")?,
    };
    let value = match ev.eval(rhs, scope)? {
        Value::Int(i) => i,
        other => return ev.fail(ev.mismatch(rhs.span, "a row count", &other, scope)),
    };
    Some(Require {
        table,
        op: op.as_str().to_string(),
        value,
    })
}
