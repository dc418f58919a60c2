//! A request template: a fixed HTTP request whose path and body carry `$N`, filled per request
//! by the run's `let` and `bind $N = ...` clauses. They are lowered by a query's own bind
//! lowering and run by its bind program, so a request draws its values exactly as a query
//! would (docs/rng.md "Query binds"), without a hook.

use std::collections::BTreeSet;

use super::query::{all_bound, expr_binds, query_lets, Template, MAX_PLACEHOLDER};
use crate::check::{Eval, InstanceId, Scope};
use crate::diag::{Code, Diagnostic};
use crate::plan::{template_placeholders, RequestPlan};
use crate::span::Span;
use crate::syntax::ast;

/// The run's fixed request as a template when it has `let` or `bind` clauses.
pub(super) fn request_template(
    ev: &Eval<'_>,
    r: &ast::Run,
    span: Span,
    method: &str,
    path: String,
    body: Option<String>,
) -> Option<RequestPlan> {
    let mut ok = true;
    let mut used = Vec::new();
    for text in std::iter::once(path.as_str()).chain(body.as_deref()) {
        for (n, token) in template_placeholders(text) {
            match u32::try_from(n)
                .ok()
                .filter(|n| (1..=MAX_PLACEHOLDER).contains(n))
            {
                Some(n) => used.push(n),
                None => {
                    ev.error(
                        Diagnostic::error(
                            Code::E0601,
                            span,
                            format!("`{token}` is not a placeholder"),
                        )
                        .label(format!("placeholders are $1 to ${MAX_PLACEHOLDER}")),
                    );
                    ok = false;
                }
            }
        }
    }
    let used_set: BTreeSet<u32> = used.iter().copied().collect();
    let mut scope = Scope::new(InstanceId::ROOT);
    scope.binds = Some(Vec::new());
    let text = Template {
        what: "request",
        span,
        owner: (r.name.span, "in this run"),
    };
    let lets = query_lets(ev, &r.lets, &mut scope, &mut ok);
    let binds = expr_binds(ev, &r.binds, &used, &text, false, &mut scope, &mut ok);
    ok &= all_bound(ev, &used_set, &text, &scope);
    ok.then(|| RequestPlan::Template {
        method: method.to_string(),
        path,
        body,
        placeholders: used_set.last().copied().unwrap_or(0),
        lets,
        binds,
    })
}

/// `let` and `bind` in a run that sends no fixed request: the query's or the hook's own
/// values are drawn elsewhere.
pub(super) fn misplaced(ev: &Eval<'_>, r: &ast::Run, fixed_request: bool) -> bool {
    if fixed_request {
        return true;
    }
    let spans = r
        .lets
        .iter()
        .map(|l| l.span)
        .chain(r.binds.iter().map(|b| b.span));
    let mut ok = true;
    for s in spans {
        ev.error(
            Diagnostic::error(
                Code::E0601,
                s,
                "`let` and `bind` in a run fill a fixed request's `$N`",
            )
            .label("this run sends no fixed request")
            .note("a query's binds go in the query; a hook draws its own values"),
        );
        ok = false;
    }
    ok
}
