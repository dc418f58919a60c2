//! What a sharded run (`wlrun run --shard I/N`) refuses, with the clause's position: what
//! would need the shards to agree while a phase runs, beyond the start and end barriers.
//!
//! - `stage`: a staged run changes its rate and connections at moments each shard would pick
//!   on its own clock;
//! - `find max rate`: each step's verdict, and so the next step's rate, would have to be the
//!   verdict on every shard's figures together;
//! - `concurrent` groups: a member's end (`until`) would have to end the others on every
//!   shard;
//! - `probe visible`: the lag is measured against the rows sent, which only each shard knows.
//!
//! Checked once the shard count is known, that is by `run` with a shard, not by `check`.

use std::collections::HashSet;

use crate::check::{Checked, Decl};
use crate::diag::{Code, Diagnostic};
use crate::plan::Phase;

/// One error per clause that the plan uses and a sharded run cannot run.
pub fn refusals(checked: &Checked) -> Vec<Diagnostic> {
    let root = checked.program.root();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let why = "a sharded run (--shard, or JOB_COMPLETION_INDEX with WLRUN_SHARDS) cannot";
    for cell in &checked.lowered {
        for phase in &cell.phases {
            if !seen.insert(phase.name().to_string()) {
                continue;
            }
            let decl = root.decls.get(phase.name());
            match (phase, decl) {
                (Phase::Queries(_) | Phase::Requests(_), Some(Decl::Run(r))) => {
                    if let Some(s) = r.stages.first() {
                        out.push(
                            Diagnostic::error(
                                Code::E0701,
                                s.span,
                                format!("{why} run the stages of `{}`", r.name),
                            )
                            .label("stages change the load at moments each shard would pick alone")
                            .note("run it without --shard, or as one stage per run"),
                        );
                    }
                    if let Some(f) = r.find_max.first() {
                        out.push(
                            Diagnostic::error(
                                Code::E0701,
                                f.span,
                                format!("{why} search for the highest rate of `{}`", r.name),
                            )
                            .label("each step's verdict would have to judge every shard's figures together")
                            .note("run the search without --shard, or shard a fixed `rate`"),
                        );
                    }
                }
                (Phase::Ingest(_), Some(Decl::Ingest(i))) => {
                    if let Some(s) = i.stages.first() {
                        out.push(
                            Diagnostic::error(
                                Code::E0701,
                                s.span,
                                format!("{why} run the stages of `{}`", i.name),
                            )
                            .label("stages change the rate at moments each shard would pick alone")
                            .note("run it without --shard, or as one ingest at a fixed `rate` per stage"),
                        );
                    }
                    if let Some(f) = i.find_max.first() {
                        out.push(
                            Diagnostic::error(
                                Code::E0701,
                                f.span,
                                format!("{why} search for the highest row rate of `{}`", i.name),
                            )
                            .label("each step's verdict would have to judge every shard's figures together")
                            .note("run the search without --shard, or shard a fixed `rate`"),
                        );
                    }
                    if let Some(p) = i.probe.first() {
                        out.push(
                            Diagnostic::error(
                                Code::E0701,
                                p.span,
                                format!("{why} probe the visibility lag of `{}`", i.name),
                            )
                            .label("the lag is measured against rows only each shard knows it sent")
                            .note("`verify visible` works under shards: shard 0 counts every shard's rows"),
                        );
                    }
                }
                _ => {}
            }
        }
    }
    let grouped: HashSet<&str> = checked
        .lowered
        .iter()
        .flat_map(|c| &c.groups)
        .map(|g| g.name.as_str())
        .collect();
    for c in &root.concurrent {
        if grouped.contains(c.name.name.as_str()) {
            out.push(
                Diagnostic::error(
                    Code::E0703,
                    c.name.span,
                    format!("{why} run the concurrent group `{}`", c.name),
                )
                .label("a member's end would have to end the others on every shard")
                .note("run the members as phases one after another, or without --shard"),
            );
        }
    }
    out.sort_by_key(|d| d.primary.span.start);
    out
}
