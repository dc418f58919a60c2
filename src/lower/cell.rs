//! One cell's phases, and the declarations no block refers to (lowered so that their mistakes
//! show too).

use super::ingest::lower_ingest;
use super::query::lower_query;
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
                    let _ = lower_query(ev, id, q, 1.0);
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
