//! `observe process ...` clauses of targets lowered into the cell's `ObservePlan`s: which local
//! server process the runner samples from /proc while a phase runs against the target.

use crate::check::{Decl, Eval, InstanceId, Scope};
use crate::diag::{Code, Diagnostic};
use crate::plan::{ObservePlan, Phase, ProcessRoot};
use crate::syntax::ast::{self, EndpointKind, ObserveHow};
use crate::value::{Text, Value};

use super::target as targets;

/// The observed processes of the targets this cell's phases run against, in the order the
/// targets are declared; a target declared in two modules under one name is taken once, from
/// the first (`EndpointPlan::target` holds the name only).
pub fn cell_observers(ev: &Eval<'_>, phases: &[Phase]) -> Vec<ObservePlan> {
    let used: Vec<&str> = phases.iter().map(endpoint_target).collect();
    let mut out = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for (i, inst) in ev.prog.instances.iter().enumerate() {
        for decl in ev.prog.modules[inst.module].decls.values() {
            let Decl::Target(t) = decl else { continue };
            let name = t.name.name.as_str();
            if !used.contains(&name) || seen.iter().any(|s| s == name) {
                continue;
            }
            seen.push(name.to_string());
            out.extend(lower_observe(ev, InstanceId(i), t));
        }
    }
    out
}

fn endpoint_target(p: &Phase) -> &str {
    match p {
        Phase::Ingest(i) => &i.endpoint.target,
        Phase::Queries(q) => &q.endpoint.target,
        Phase::Requests(r) => &r.endpoint.target,
    }
}

/// Every clause of `target` checked; the ones that check, lowered. Mistakes are collected.
pub fn lower_observe(ev: &Eval<'_>, tinst: InstanceId, target: &ast::Target) -> Vec<ObservePlan> {
    let scope = Scope::new(tinst);
    let mut out = Vec::new();
    for clause in &target.observe_process {
        let root = match &clause.how {
            ObserveHow::Pidfile(e) => {
                text(ev, e, &scope, "a pid file's path").map(|path| ProcessRoot::Pidfile { path })
            }
            ObserveHow::Named(e) => {
                text(ev, e, &scope, "a process name").map(|name| ProcessRoot::Named { name })
            }
            ObserveHow::Listening(name) => listening(ev, tinst, target, name),
        };
        if let Some(root) = root {
            out.push(ObservePlan {
                target: target.name.name.clone(),
                root,
            });
        }
    }
    out
}

/// A non-empty string (`env(...)` parts allowed: they are read when the run starts).
fn text(ev: &Eval<'_>, e: &ast::Expr, scope: &Scope, what: &str) -> Option<Text> {
    match ev.eval(e, scope)? {
        Value::Str(t) if t.as_lit().is_some_and(|s| s.is_empty()) => ev.fail(
            Diagnostic::error(Code::E0203, e.span, format!("an empty string as {what}"))
                .label(format!("expected {what}")),
        ),
        Value::Str(t) => Some(t),
        other => ev.fail(
            Diagnostic::error(
                Code::E0201,
                e.span,
                format!("expected a string as {what}, found {other}"),
            )
            .label("expected a string")
            .note("e.g. `observe process pidfile \"/run/postgresql/15-main.pid\"` or `observe process named \"postgres\"`"),
        ),
    }
}

/// `listening ENDPOINT`: an endpoint of the same target that has a TCP port.
fn listening(
    ev: &Eval<'_>,
    tinst: InstanceId,
    target: &ast::Target,
    name: &crate::span::Ident,
) -> Option<ProcessRoot> {
    let ep = targets::find_endpoint(ev, target, &name.name, name.span)?;
    if matches!(ep.kind, EndpointKind::Sqlite | EndpointKind::Null) {
        return ev.fail(
            Diagnostic::error(
                Code::E0302,
                name.span,
                format!(
                    "endpoint `{}` ({}) listens on no TCP port",
                    ep.name(),
                    ep.kind.as_str()
                ),
            )
            .label("no process listens for this endpoint")
            .also(ep.kind_span, "declared here")
            .note("observe a local server by `pidfile \"PATH\"` or `named \"NAME\"` instead"),
        );
    }
    let plan = targets::endpoint_plan(ev, tinst, target, ep)?;
    Some(ProcessRoot::Listening {
        endpoint: plan.name,
        url: plan.url?,
    })
}
