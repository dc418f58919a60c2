//! `concurrent` groups lowered against one cell's phases: every member names an ingest or run
//! block of the workload, a block is in one group at most, and what measures the client alone
//! or compares results across cells is refused with its position.

use std::collections::HashMap;

use crate::check::{Decl, Eval};
use crate::diag::{Code, Diagnostic};
use crate::plan::{ConcurrentGroup, Phase};
use crate::span::Span;
use crate::syntax::ast;

pub fn lower_groups(ev: &Eval<'_>, phases: &[Phase]) -> Vec<ConcurrentGroup> {
    let root = ev.prog.root();
    let mut groups = Vec::new();
    // Block name -> the group that first took it, and where.
    let mut taken: HashMap<String, (String, Span)> = HashMap::new();
    let mut names: HashMap<&str, Span> = HashMap::new();
    for c in &root.concurrent {
        if let Some(first) = names.get(c.name.name.as_str()) {
            ev.error(
                Diagnostic::error(
                    Code::E0103,
                    c.name.span,
                    format!("concurrent group `{}` is declared twice", c.name),
                )
                .label("a second group of this name")
                .also(*first, "the first one is here"),
            );
            continue;
        }
        names.insert(&c.name.name, c.name.span);
        if let Some(g) = lower_group(ev, c, phases, &mut taken) {
            groups.push(g);
        }
    }
    groups
}

fn lower_group(
    ev: &Eval<'_>,
    c: &ast::Concurrent,
    phases: &[Phase],
    taken: &mut HashMap<String, (String, Span)>,
) -> Option<ConcurrentGroup> {
    let root = ev.prog.root();
    let mut ok = true;
    let mut members: Vec<&crate::span::Ident> = Vec::new();
    if c.phases.is_empty() {
        ev.error(
            Diagnostic::error(
                Code::E0109,
                c.name.span,
                format!("concurrent group `{}` names no phases", c.name),
            )
            .label("add `phases A, B`"),
        );
        return None;
    }
    for name in c.phases.iter().flat_map(|p| &p.value) {
        if let Some(first) = members.iter().find(|m| m.name == name.name) {
            ev.error(
                Diagnostic::error(
                    Code::E0703,
                    name.span,
                    format!("`{}` is named twice in this group", name.name),
                )
                .label("a second time")
                .also(first.span, "the first time"),
            );
            ok = false;
            continue;
        }
        members.push(name);
        match root.decls.get(&name.name) {
            Some(Decl::Ingest(i)) => ok &= refuse_ingest(ev, c, i),
            Some(Decl::Run(r)) => ok &= refuse_run(ev, c, r, phases),
            Some(other) => {
                ev.error(
                    Diagnostic::error(
                        Code::E0703,
                        name.span,
                        format!(
                            "`{}` is a {}, not an ingest or run block",
                            name,
                            other.kind()
                        ),
                    )
                    .label("a group runs ingest and run blocks")
                    .also(other.name_span(), "declared here"),
                );
                ok = false;
                continue;
            }
            None => {
                ev.error(
                    Diagnostic::error(
                        Code::E0104,
                        name.span,
                        format!("no ingest or run block `{}`", name.name),
                    )
                    .label("not declared in this workload"),
                );
                ok = false;
                continue;
            }
        }
        if let Some((group, span)) = taken.get(&name.name) {
            ev.error(
                Diagnostic::error(
                    Code::E0703,
                    name.span,
                    format!("`{}` is already in group `{group}`", name.name),
                )
                .label("a block runs in one group at most")
                .also(*span, "there"),
            );
            ok = false;
        } else {
            taken.insert(name.name.clone(), (c.name.name.clone(), name.span));
        }
    }
    if members.len() < 2 && ok {
        ev.error(
            Diagnostic::error(
                Code::E0703,
                c.phases[0].span,
                format!("concurrent group `{}` has one member", c.name),
            )
            .label("name two or more ingest or run blocks")
            .note("a block on its own already runs by itself"),
        );
        ok = false;
    }
    let mut until = None;
    for (i, u) in c.until.iter().enumerate() {
        if i > 0 {
            ev.error(
                Diagnostic::error(Code::E0108, u.span, "a second `until`")
                    .label("a group ends at one phase's end")
                    .also(c.until[0].span, "the first one is here"),
            );
            ok = false;
        } else if !members.iter().any(|m| m.name == u.value.name) {
            ev.error(
                Diagnostic::error(
                    Code::E0703,
                    u.value.span,
                    format!("`{}` is not a member of group `{}`", u.value, c.name),
                )
                .label("`until` names one of the group's phases"),
            );
            ok = false;
        } else {
            until = Some(u.value.name.clone());
        }
    }
    // Members with `when` conditions: all absent from this cell, the group is too; some absent
    // and some present, the present ones would run without the others, which the group says
    // they must not.
    let present: Vec<bool> = members
        .iter()
        .map(|m| match root.decls.get(&m.name) {
            Some(Decl::Ingest(i)) => super::cell::phase_in_cell(ev, &i.when),
            Some(Decl::Run(r)) => super::cell::phase_in_cell(ev, &r.when),
            _ => true,
        })
        .collect();
    if present.iter().all(|p| !p) {
        return None;
    }
    if let Some(i) = present.iter().position(|p| !p) {
        ev.error(
            Diagnostic::error(
                Code::E0703,
                members[i].span,
                format!(
                    "`{}` does not run in cell {} (its `when`), where the other members of group `{}` do",
                    members[i].name,
                    ev.cell.key(),
                    c.name
                ),
            )
            .label("a group's members run in the same cells")
            .note("give the members the same `when` condition"),
        );
        return None;
    }
    // A member that did not lower (its own mistake is reported) leaves the group out.
    let lowered = members
        .iter()
        .all(|m| phases.iter().any(|p| p.name() == m.name));
    (ok && lowered).then(|| ConcurrentGroup {
        name: c.name.name.clone(),
        phases: members.iter().map(|m| m.name.clone()).collect(),
        until,
    })
}

fn refused(ev: &Eval<'_>, at: Span, c: &ast::Concurrent, what: &str, why: &str) -> bool {
    ev.error(
        Diagnostic::error(
            Code::E0703,
            at,
            format!("{what} cannot run in concurrent group `{}`", c.name),
        )
        .label("refused in a group")
        .note(why.to_string()),
    );
    false
}

fn refuse_ingest(ev: &Eval<'_>, c: &ast::Concurrent, i: &ast::Ingest) -> bool {
    let mut ok = true;
    for at in &i.calibrate {
        ok = refused(
            ev,
            *at,
            c,
            "`calibrate`",
            "calibrating measures the client alone against a null sink; beside other phases it would measure them too",
        );
    }
    // A `replay when` that does not hold in this cell leaves the ingest live: it may join.
    for r in i
        .replay
        .iter()
        .filter(|r| super::ingest::replays_here(ev, r))
    {
        ok = refused(
            ev,
            r.span,
            c,
            "`replay`",
            "replay encodes every batch before its clock starts, so it cannot start with the other members",
        );
    }
    for f in &i.find_max {
        ok = refused(
            ev,
            f.span,
            c,
            "`find max rate`",
            "a search runs its steps one after another, each an ingest of its own, so it cannot start and end with the other members; search on its own, or give the ingest a fixed `rate` in the group",
        );
    }
    ok
}

fn refuse_run(ev: &Eval<'_>, c: &ast::Concurrent, r: &ast::Run, phases: &[Phase]) -> bool {
    let mut ok = true;
    let lowered = phases.iter().find_map(|p| match p {
        Phase::Queries(q) if q.name == r.name.name => Some(&q.run),
        Phase::Requests(q) if q.name == r.name.name => Some(&q.run),
        _ => None,
    });
    if let (Some(run), Some(clause)) = (lowered, r.repeat.first()) {
        if run.repeat > 1 {
            ok = refused(
                ev,
                clause.span,
                c,
                "`repeat` above 1",
                "repetitions compare like with like; beside other phases each would see a different load",
            );
        }
    }
    for f in &r.find_max {
        ok = refused(
            ev,
            f.span,
            c,
            "`find max rate`",
            "a search runs its steps one after another, each a run of its own, so it cannot start and end with the other members; search on its own, or give the run a fixed `rate` in the group",
        );
    }
    let root = ev.prog.root();
    let with_ingest = c
        .phases
        .iter()
        .flat_map(|p| &p.value)
        .any(|m| matches!(root.decls.get(&m.name), Some(Decl::Ingest(_))));
    if let (Some(at), true) = (r.check_same.first(), with_ingest) {
        ok = refused(
            ev,
            *at,
            c,
            "`check same results across endpoints`",
            "beside an ingest a query's results depend on when it ran, so cells would differ for no fault of an endpoint",
        );
    }
    ok
}
