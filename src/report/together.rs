//! What a phase's report says about the `concurrent` group it ran in, and the line the
//! terminal shows per group: which phases ran together, what ended them, each member's span.

use serde::{Deserialize, Serialize};

use super::{CellReport, PhaseReport};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConcurrentMember {
    pub group: String,
    /// The group's members, in its order.
    pub phases: Vec<String>,
    /// The member whose end ends the group (`until`); absent: the group ends with its last
    /// member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// This phase is the group's `until`: its end stopped the others.
    pub set_end: bool,
    /// The group's end stopped this phase while it still ran: no unit started after it, what
    /// was in flight got `STOP_GRACE` and was counted as cut off.
    pub stopped_by_group: bool,
    /// When this phase started measuring, milliseconds after the group's common start (every
    /// member passes the start together, so this is near 0); absent if it never started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at_offset_ms: Option<f64>,
    /// When its measured span ended (sending over; before its verify and teardown), on the same
    /// clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at_offset_ms: Option<f64>,
}

fn member(p: &PhaseReport) -> Option<(&str, &ConcurrentMember)> {
    match p {
        PhaseReport::Ingest(r) => r.concurrent.as_ref().map(|c| (r.name.as_str(), c)),
        PhaseReport::Queries(r) => r.concurrent.as_ref().map(|c| (r.name.as_str(), c)),
        PhaseReport::Requests(r) => r.concurrent.as_ref().map(|c| (r.name.as_str(), c)),
        PhaseReport::NotRun { .. } => None,
    }
}

/// One line per group of the cell, before its first member's lines: `concurrent mixed: load,
/// reads ran together; ended when load ended (reads stopped by it); load 0-2,013 ms, ...`.
pub fn group_line(cell: &CellReport, phase: &PhaseReport) -> Option<String> {
    let (name, me) = member(phase)?;
    let members: Vec<(&str, &ConcurrentMember)> = cell
        .phases
        .iter()
        .filter_map(member)
        .filter(|(_, c)| c.group == me.group)
        .collect();
    if members.first().map(|(n, _)| *n) != Some(name) {
        return None;
    }
    let stopped: Vec<&str> = members
        .iter()
        .filter(|(_, c)| c.stopped_by_group)
        .map(|(n, _)| *n)
        .collect();
    let end = match &me.until {
        Some(u) if stopped.is_empty() => format!("ended when {u} ended (the others had ended)"),
        Some(u) => format!(
            "ended when {u} ended ({} stopped by it)",
            stopped.join(", ")
        ),
        None => "ended when every member had ended".to_string(),
    };
    let ms = |v: Option<f64>| v.map_or("?".to_string(), |v| crate::plan::thousands(v as u64));
    let spans: Vec<String> = members
        .iter()
        .map(|(n, c)| match c.started_at_offset_ms {
            Some(_) => format!(
                "{n} {}-{} ms",
                ms(c.started_at_offset_ms),
                ms(c.ended_at_offset_ms)
            ),
            None => format!("{n} never started"),
        })
        .collect();
    Some(format!(
        "concurrent {}: {} ran together; {end}; {}\n",
        me.group,
        me.phases.join(", "),
        spans.join(", ")
    ))
}
