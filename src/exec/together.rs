//! A `concurrent` group of one cell: its members run as tasks of the same runtime, each with
//! its own time series and report. They set up on their own, pass a common start together
//! (`end::Member`), and with `until P` P's end ends the others as their duration would. The
//! reports stay flat, in the group's order, each saying which group it ran in.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::end::Member;
use super::RunEnv;
use crate::plan::{Cell, ConcurrentGroup, Phase};
use crate::report::together::ConcurrentMember;
use crate::report::PhaseReport;

/// Where a phase of a cell runs.
pub(super) enum Place<'a> {
    Alone,
    /// The first member of a group in the cell's order: the whole group runs here.
    First(&'a ConcurrentGroup),
    /// A later member: it ran with its group.
    Later,
}

pub(super) fn place<'a>(cell: &'a Cell, phase: &Phase) -> Place<'a> {
    let name = phase.name();
    let Some(g) = cell
        .groups
        .iter()
        .find(|g| g.phases.iter().any(|m| m == name))
    else {
        return Place::Alone;
    };
    let first = cell
        .phases
        .iter()
        .map(Phase::name)
        .find(|n| g.phases.iter().any(|m| m == n));
    if first == Some(name) {
        Place::First(g)
    } else {
        Place::Later
    }
}

/// Runs every member of `group` at once; their reports in the group's order.
pub(super) fn run(
    env: &RunEnv,
    runtime: &tokio::runtime::Runtime,
    cell: &Cell,
    group: &ConcurrentGroup,
    label: &str,
) -> Vec<PhaseReport> {
    let members: Vec<&Phase> = group
        .phases
        .iter()
        .filter_map(|n| cell.phases.iter().find(|p| p.name() == n))
        .collect();
    let until = group
        .until
        .as_ref()
        .and_then(|u| members.iter().position(|p| p.name() == u));
    let (handles, spans) = Member::group(members.len(), until);
    let ends: Vec<_> = handles.iter().map(|m| m.end.clone()).collect();
    // Each member observes its target's server over its own span, as a phase alone does; a
    // server shared by members is the whole server's CPU in each, and the report says so.
    let series: Vec<_> = members
        .iter()
        .map(|p| {
            let (recorder, warning, label) = super::start_series(env, cell, p, label);
            let observer = super::start_observer(env, cell, p);
            let recorder = match &observer {
                Some(o) => recorder.observed(o.marks()),
                None => recorder,
            };
            ((recorder, warning, label), observer)
        })
        .collect();
    let scrapers: Vec<_> = members
        .iter()
        .map(|p| {
            runtime.block_on(super::scrape::start(
                cell,
                super::phase_target(p),
                super::metrics_series(env, cell, p),
            ))
        })
        .collect();
    let futures =
        members
            .iter()
            .zip(&series)
            .zip(handles)
            .map(|((p, ((recorder, _, label), _)), member)| {
                super::phase_future(env, cell, p, (label, recorder), member)
            });
    let reports = runtime.block_on(futures_util::future::join_all(futures));
    let interrupted = env.stop.load(Ordering::Relaxed);
    // Every member passes the start together: the first to have passed it is the common start.
    let t0 = spans.iter().filter_map(|s| s.started.get().copied()).min();
    reports
        .into_iter()
        .zip(series)
        .zip(scrapers)
        .enumerate()
        .map(
            |(i, ((mut report, ((recorder, warning, _), observer)), scrapers))| {
                if let Some(o) = observer {
                    super::observed(&mut report, o);
                    shared_server(&mut report, &members, i);
                }
                runtime.block_on(scrapers.finish(&mut report));
                // Stopped by the group: its end came while this member still measured. A stop
                // (Ctrl-C) is an interruption instead, whoever noticed it first.
                let stopped = !interrupted
                    && until != Some(i)
                    && match (ends[i].at(), spans[i].ended.get()) {
                        (Some(e), Some(own)) => e <= *own,
                        _ => false,
                    };
                let info = ConcurrentMember {
                    group: group.name.clone(),
                    phases: group.phases.clone(),
                    until: group.until.clone(),
                    set_end: until == Some(i),
                    stopped_by_group: stopped,
                    started_at_offset_ms: offset(t0, spans[i].started.get()),
                    ended_at_offset_ms: offset(t0, spans[i].ended.get()),
                };
                let note = shared_cpu(&members, i);
                mark(
                    &mut report,
                    info,
                    stopped.then(|| stopped_line(group)),
                    note,
                );
                super::finish_series(report, recorder, warning)
            },
        )
        .collect()
}

fn offset(t0: Option<Instant>, at: Option<&Instant>) -> Option<f64> {
    let (t0, at) = (t0?, *at?);
    Some(at.saturating_duration_since(t0).as_secs_f64() * 1e3)
}

fn stopped_line(group: &ConcurrentGroup) -> String {
    let u = group.until.as_deref().unwrap_or("?");
    format!(
        "stopped when {u} ended (concurrent group {}): no unit started after that, and what was in flight was given {} and then counted as cut off, not as failed",
        group.name,
        crate::net::fmt::fmt_duration(super::STOP_GRACE)
    )
}

/// The names of the members running beside member `i`, joined for a warning.
fn beside(members: &[&Phase], i: usize) -> String {
    let others: Vec<&str> = members
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != i)
        .map(|(_, p)| p.name())
        .collect();
    others.join(", ")
}

/// `client_cpu_s` is the process's CPU over the phase's span: beside other members it counts
/// theirs too, and the report says so.
fn shared_cpu(members: &[&Phase], i: usize) -> String {
    let others = beside(members, i);
    format!(
        "client_cpu_s is the whole client's CPU over this phase's span, shared with {others} running beside it"
    )
}

/// The observed server (`observe process`) serves every member at once: its CPU over this
/// phase's span is the whole server's, and the report says so rather than split it by guess.
fn shared_server(report: &mut PhaseReport, members: &[&Phase], i: usize) {
    let others = beside(members, i);
    let (server, warnings) = match report {
        PhaseReport::Ingest(r) => (r.server.is_some(), &mut r.warnings),
        PhaseReport::Queries(r) => (r.server.is_some(), &mut r.warnings),
        PhaseReport::Requests(r) => (r.server.is_some(), &mut r.warnings),
        PhaseReport::NotRun { .. } => return,
    };
    if server {
        warnings.push(format!(
            "server is the observed server's whole CPU over this phase's span, shared with {others} running beside it"
        ));
    }
}

fn mark(report: &mut PhaseReport, info: ConcurrentMember, stopped: Option<String>, cpu: String) {
    let (slot, warnings, has_cpu) = match report {
        PhaseReport::Ingest(r) => (&mut r.concurrent, &mut r.warnings, r.client_cpu_s.is_some()),
        PhaseReport::Queries(r) => (&mut r.concurrent, &mut r.warnings, r.client_cpu_s.is_some()),
        PhaseReport::Requests(r) => (&mut r.concurrent, &mut r.warnings, r.client_cpu_s.is_some()),
        PhaseReport::NotRun { .. } => return,
    };
    *slot = Some(info);
    warnings.extend(stopped);
    if has_cpu {
        warnings.push(cpu);
    }
}
