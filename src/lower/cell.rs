//! One cell's phases, and the declarations no block refers to (lowered so that their mistakes
//! show too).

use super::ingest::lower_ingest;
use super::query::lower_family;
use super::run::lower_run;
use super::schema::lower_schema;
use super::target as targets;
use super::via::count_endpoint;
use crate::check::{Decl, Eval, Hooks, InstanceId};
use crate::diag::{Code, Diagnostic};
use crate::plan::*;
use crate::syntax::ast;

pub fn lower_cell(ev: &Eval<'_>, hooks: &Hooks) -> Vec<Phase> {
    let mut out = Vec::new();
    for decl in ev.prog.root().decls.values() {
        let phase = match decl {
            Decl::Ingest(i) if !runs_here(ev, &i.when) => continue,
            Decl::Run(r) if !runs_here(ev, &r.when) => continue,
            Decl::Ingest(i) => lower_ingest(ev, i).map(|p| Phase::Ingest(Box::new(p))),
            Decl::Run(r) => lower_run(ev, r, hooks),
            _ => continue,
        };
        if let Some(p) = phase {
            out.push(p);
        }
    }
    out
}

/// `ingest NAME when CONDITION`, `run NAME when CONDITION`: whether the phase runs in this cell.
/// A condition that is not a boolean is reported, and the phase is lowered anyway so that its
/// own mistakes show too.
fn runs_here(ev: &Eval<'_>, when: &Option<ast::Expr>) -> bool {
    let Some(e) = when else { return true };
    match ev.eval(e, &crate::check::Scope::new(InstanceId::ROOT)) {
        Some(crate::value::Value::Bool(b)) => b,
        Some(v @ (crate::value::Value::Symbol(_) | crate::value::Value::Str(_))) => {
            ev.error(
                Diagnostic::error(
                    Code::E0201,
                    e.span,
                    format!("a phase's `when` needs a condition, not the value `{v}`"),
                )
                .label("expected true or false in each cell")
                .note("compare an axis with its value, e.g. `ingest load when part == ingest { ... }`"),
            );
            true
        }
        Some(other) => {
            ev.error(ev.mismatch(
                e.span,
                "a condition (true or false) on the matrix's axes",
                &other,
                &crate::check::Scope::new(InstanceId::ROOT),
            ));
            true
        }
        None => true,
    }
}

/// Whether a phase with this `when` is in this cell, quietly: its mistakes are `lower_cell`'s.
pub(super) fn phase_in_cell(ev: &Eval<'_>, when: &Option<ast::Expr>) -> bool {
    let before = ev.diags.borrow().len();
    let here = runs_here(ev, when);
    ev.diags.borrow_mut().truncate(before);
    here
}

/// Lowers what no block refers to, so that a module's mistakes show even when it is checked on
/// its own or only partly used.
pub fn check_all_decls(ev: &Eval<'_>, _hooks: &Hooks) {
    for (i, inst) in ev.prog.instances.iter().enumerate() {
        let id = InstanceId(i);
        // A module imported twice is checked once, in its first instance.
        if ev.prog.instances[..i]
            .iter()
            .any(|x| x.module == inst.module)
        {
            continue;
        }
        let module = &ev.prog.modules[inst.module];
        for decl in module.decls.values() {
            match decl {
                Decl::Param(p) => {
                    let was_used = ev.used.borrow().contains(&(id, p.name.name.clone()));
                    let _ = ev.param(id, p);
                    if !was_used {
                        ev.used.borrow_mut().remove(&(id, p.name.name.clone()));
                    }
                }
                Decl::Schema(s) => {
                    let _ = lower_schema(ev, id, s);
                }
                Decl::Query(q) => {
                    let _ = lower_family(ev, id, q, 1.0, &crate::check::RunQueries::Any);
                }
                Decl::Target(t) => {
                    for ep in &t.endpoints {
                        let _ = targets::endpoint_plan(ev, id, t, ep);
                    }
                    for c in &t.counts {
                        let _ = count_endpoint(ev, id, t, c);
                    }
                    let _ = super::observe::lower_observe(ev, id, t);
                    if t.endpoints.is_empty() {
                        ev.error(
                            Diagnostic::error(
                                Code::E0109,
                                t.name.span,
                                format!("target `{}` has no endpoint", t.name),
                            )
                            .label("declare at least one endpoint")
                            .note(
                                "for example: pg \"postgres://postgres@127.0.0.1:5432/postgres\"",
                            ),
                        );
                    }
                    let mut seen: Vec<&ast::Endpoint> = Vec::new();
                    for ep in &t.endpoints {
                        if let Some(first) = seen.iter().find(|e| e.name() == ep.name()) {
                            ev.error(
                                Diagnostic::error(
                                    Code::E0103,
                                    ep.kind_span,
                                    format!("endpoint `{}` is declared twice", ep.name()),
                                )
                                .label("give one of them a name with `as NAME`")
                                .also(first.kind_span, "the first one is here"),
                            );
                        }
                        seen.push(ep);
                    }
                }
                _ => {}
            }
        }
    }
}
