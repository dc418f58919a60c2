//! What a query instance runs beyond its `sql`, and how its result is judged: `then sql`,
//! `transaction`, `expect affected OP N` and `not found when CONDITION`.

use super::values::single;
use crate::check::{Ev, Eval, Scope};
use crate::diag::{Code, Diagnostic};
use crate::plan::{InstanceCheck, InstanceRules};
use crate::span::Span;
use crate::syntax::ast::{self, BinOp, ExprKind};
use crate::value::Value;

/// The `then sql` texts, with their spans; `None` where one cannot be read.
pub(super) fn then_sql(ev: &Eval<'_>, q: &ast::Query, scope: &Scope) -> Ev<Vec<(String, Span)>> {
    let mut out = Vec::with_capacity(q.then.len());
    let mut ok = true;
    for c in &q.then {
        let span = c.value.span;
        match ev.string(&c.value, scope).map(|s| s.as_lit()) {
            Some(Some(s)) => out.push((s, span)),
            Some(None) => {
                ev.error(
                    Diagnostic::error(Code::E0203, span, "SQL cannot contain env(...) values")
                        .label("secrets do not belong in SQL text"),
                );
                ok = false;
            }
            None => ok = false,
        }
    }
    ok.then_some(out)
}

/// Whether an `expect` is judged per instance (`expect affected OP N`) rather than over the
/// run: those are the query's instance checks, the others its thresholds.
pub(super) fn per_instance(e: &ast::Expect) -> bool {
    let ast::Expect::Condition(cond, _) = e else {
        return false;
    };
    matches!(&cond.kind, ExprKind::Binary(_, lhs, _)
        if matches!(&lhs.kind, ExprKind::Path(p) if p.len() == 1 && p[0].name == "affected"))
}

/// The query's instance rules; `then` are the texts `then_sql` read.
pub(super) fn instance_rules(
    ev: &Eval<'_>,
    q: &ast::Query,
    then: Vec<String>,
    scope: &Scope,
) -> Ev<InstanceRules> {
    let mut ok = true;
    if let Some(first) = single(ev, &q.transaction, |s| *s, "transaction") {
        if then.is_empty() {
            ev.error(
                Diagnostic::warning(
                    Code::W0004,
                    *first,
                    "`transaction` around a single statement",
                )
                .label("one statement is its own transaction already")
                .note(
                    "`transaction` wraps `sql` and its `then sql` statements in BEGIN ... COMMIT",
                ),
            );
        }
    }
    let mut checks = Vec::new();
    for e in q.expects.iter().filter(|e| per_instance(e)) {
        let ast::Expect::Condition(cond, _) = e else {
            continue;
        };
        match check(ev, cond, scope, &["affected"]) {
            Some(c) => checks.push(c),
            None => ok = false,
        }
    }
    let not_found = match single(ev, &q.not_found, |c| c.span, "not found when") {
        Some(c) => match check(ev, &c.value, scope, &["rows", "affected"]) {
            Some(c) => Some(c),
            None => {
                ok = false;
                None
            }
        },
        None => None,
    };
    ok.then_some(InstanceRules {
        then,
        transaction: !q.transaction.is_empty(),
        checks,
        not_found,
    })
}

/// `METRIC OP N`, METRIC one of `metrics`, N a count.
fn check(ev: &Eval<'_>, cond: &ast::Expr, scope: &Scope, metrics: &[&str]) -> Ev<InstanceCheck> {
    let bad = || {
        Diagnostic::error(
            Code::E0702,
            cond.span,
            "a condition on one instance's result is `METRIC OP N`",
        )
        .label("cannot read this condition")
        .note(format!(
            "METRIC is {}; for example: expect affected == 1, not found when rows == 0",
            listed(metrics)
        ))
    };
    let ExprKind::Binary(op, lhs, rhs) = &cond.kind else {
        return ev.fail(bad());
    };
    let ExprKind::Path(p) = &lhs.kind else {
        return ev.fail(bad());
    };
    if p.len() != 1
        || !matches!(
            op,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne
        )
    {
        return ev.fail(bad());
    }
    let metric = p[0].name.as_str();
    if !metrics.contains(&metric) {
        return ev.fail(
            Diagnostic::error(
                Code::E0702,
                p[0].span,
                format!("`{metric}` is not a count of one instance"),
            )
            .label("not judged per instance")
            .note(format!("here: {}", listed(metrics))),
        );
    }
    let value = match ev.eval(rhs, scope)? {
        Value::Int(i) if i >= 0 => i as u64,
        other => return ev.fail(ev.mismatch(rhs.span, "a count (0 or more)", &other, scope)),
    };
    Some(InstanceCheck {
        metric: metric.to_string(),
        op: op.as_str().to_string(),
        value,
    })
}

/// `` `rows` or `affected` ``.
fn listed(metrics: &[&str]) -> String {
    let quoted: Vec<String> = metrics.iter().map(|m| format!("`{m}`")).collect();
    quoted.join(" or ")
}
