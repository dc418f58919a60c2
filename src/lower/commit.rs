//! `commit per_batch | commit every N rows`: when a QWP ingest's rows commit, checked against
//! the endpoint kind and the server's cap on uncommitted rows.
//!
//! Only QWP defers commits (`FLAG_DEFER_COMMIT`). A clause on an ingest whose endpoint is named
//! directly and is not QWP is a mistake, refused. When the endpoint comes from an axis or a
//! list (`via [qwp, ilp_tcp]`), one clause serves every cell: it applies to the QWP cells and
//! the others say in the plan that it does not apply to them, as a `via` list's user would
//! expect of a protocol comparison (the ILP cells commit as ILP does).

use super::values::single;
use super::via::via_lookup;
use crate::check::{Eval, Scope};
use crate::diag::{Code, Diagnostic};
use crate::plan::{thousands, Commit, EndpointPlan};
use crate::span::Span;
use crate::syntax::ast;
use crate::value::Value;

/// QuestDB's default `qwp.max.uncommitted.rows`.
pub const DEFAULT_MAX_UNCOMMITTED_ROWS: u64 = 1_000_000;

/// The phase's policy: `None` for a non-QWP endpoint without a clause.
pub(super) fn lower_commit(
    ev: &Eval<'_>,
    i: &ast::Ingest,
    (ep, plan): (&ast::Endpoint, &EndpointPlan),
    batch_rows: u64,
    scope: &Scope,
) -> Option<Option<Commit>> {
    let qwp = ep.kind == ast::EndpointKind::Qwp;
    let default = Some(qwp.then_some(Commit::PerBatch));
    let Some(c) = single(ev, &i.commit, |c| c.span, "commit") else {
        return default;
    };
    let (expr, every) = match &c.value {
        ast::CommitPolicy::EveryRows(e) => (e, true),
        ast::CommitPolicy::Value(e) => (e, false),
    };
    // An axis value: `per_batch`, `none` (the cells it is filtered out of) or a row count.
    let rows = match ev.eval(expr, scope)? {
        Value::None => return default,
        Value::Symbol(s) if s == "per_batch" && !every => None,
        Value::Int(n) if n > 0 => Some(n as u64),
        Value::Int(n) => {
            return ev.fail(
                Diagnostic::error(
                    Code::E0203,
                    expr.span,
                    format!("commits come every at least 1 row, found {n}"),
                )
                .label("expected a positive number of rows"),
            )
        }
        Value::Symbol(w) if !every => {
            return ev.fail(
                Diagnostic::error(
                    Code::E0203,
                    expr.span,
                    format!("unknown commit policy `{w}`"),
                )
                .label("expected per_batch, every N rows, or none"),
            )
        }
        other => {
            let expected = if every {
                "a number of rows"
            } else {
                "a commit policy (per_batch, every N rows, or none)"
            };
            return ev.fail(ev.mismatch(expr.span, expected, &other, scope));
        }
    };
    if !qwp {
        if !endpoint_varies(ev, i, scope) {
            return ev.fail(
                Diagnostic::error(
                    Code::E0302,
                    c.span,
                    format!(
                        "a commit policy does not fit the {} endpoint `{}`",
                        ep.kind.as_str(),
                        ep.name()
                    ),
                )
                .label("only QWP defers commits (FLAG_DEFER_COMMIT)")
                .note(
                    "remove the clause; in a comparison of protocols (`via [qwp, ilp_tcp]`, \
                     or an axis) it applies to the QWP cells only",
                ),
            );
        }
        return Some(rows.map(|rows| Commit::NotQwp { rows }));
    }
    let Some(rows) = rows else {
        return Some(Some(Commit::PerBatch));
    };
    let cap = match plan.options.get("max_uncommitted_rows") {
        Some(Value::Int(n)) if *n > 0 => *n as u64,
        _ => DEFAULT_MAX_UNCOMMITTED_ROWS,
    };
    let batch = batch_rows.max(1);
    // Commits fall on batch boundaries: the first at or after `rows`.
    let at = rows.div_ceil(batch).saturating_mul(batch);
    if at > cap {
        return over_cap(ev, expr.span, (rows, at, batch), cap, ep, plan);
    }
    if rows < batch {
        ev.error(
            Diagnostic::warning(
                Code::W0004,
                expr.span,
                format!(
                    "commits every {} rows with batches of {} rows commit every batch",
                    thousands(rows),
                    thousands(batch)
                ),
            )
            .label("fewer rows than a batch")
            .note("a batch commits as a whole: this is `commit per_batch`"),
        );
    }
    Some(Some(Commit::EveryRows { rows, cap }))
}

/// Whether the ingest's endpoint comes from an axis, a list, a local or a param, so that one
/// clause may serve cells of several protocols.
fn endpoint_varies(ev: &Eval<'_>, i: &ast::Ingest, scope: &Scope) -> bool {
    i.into.first().is_some_and(|into| match &into.via {
        ast::Via::List(..) => true,
        ast::Via::Name(n) => via_lookup(ev, n, scope).is_some(),
    })
}

fn over_cap(
    ev: &Eval<'_>,
    span: Span,
    (rows, at, batch): (u64, u64, u64),
    cap: u64,
    ep: &ast::Endpoint,
    plan: &EndpointPlan,
) -> Option<Option<Commit>> {
    let label = if at == rows {
        format!(
            "more than the server's cap of {} uncommitted rows",
            thousands(cap)
        )
    } else {
        format!(
            "commits fall on batch boundaries: {} rows (batches of {}) pass the server's cap \
             of {} uncommitted rows",
            thousands(at),
            thousands(batch),
            thousands(cap)
        )
    };
    let told = if plan.options.contains_key("max_uncommitted_rows") {
        "as the endpoint's `max_uncommitted_rows` says"
    } else {
        "QuestDB's default"
    };
    ev.fail(
        Diagnostic::error(
            Code::E0203,
            span,
            format!(
                "commit every {} rows leaves more rows uncommitted than the server takes",
                thousands(rows)
            ),
        )
        .label(label)
        .note(format!(
            "the server refuses more than {} uncommitted rows per connection ({told}); raise \
             `qwp.max.uncommitted.rows` in its server.conf and tell wlrun with \
             `max_uncommitted_rows N` on the endpoint `{}.{}`, or commit more often",
            thousands(cap),
            plan.target,
            ep.name()
        )),
    )
}
