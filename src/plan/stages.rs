//! A staged run's stages as `wlrun plan` lists them, one line each.

use std::fmt::Write as _;

use super::{IngestPhase, Load, StagePlan};
use crate::value::Value;

impl StagePlan {
    /// Units an open-loop stage schedules across all workers (rows of an ingest, sends of a
    /// run): its mean rate times its duration, the integral of its rate (a ramp's is linear);
    /// 0 in closed loop.
    pub fn scheduled(&self) -> f64 {
        let (
            Load::Open {
                rate: Value::Rate(from),
                ..
            },
            Value::Duration(ns),
        ) = (&self.load, &self.duration)
        else {
            return 0.0;
        };
        let to = match self.ramp_to {
            Some(Value::Rate(t)) => t,
            _ => *from,
        };
        (from + to) / 2.0 * (*ns as f64 / 1e9)
    }
}

pub(super) fn stage_lines(o: &mut String, stages: &[StagePlan]) {
    for (i, s) in stages.iter().enumerate() {
        let load = match (&s.load, &s.ramp_to) {
            (Load::Closed, _) => "closed loop".to_string(),
            (Load::Open { rate, arrival }, Some(to)) => {
                format!("open loop rate {rate} to {to} {arrival}")
            }
            (Load::Open { rate, arrival }, None) => format!("open loop rate {rate} {arrival}"),
        };
        let _ = writeln!(
            o,
            "    stage {}  {}  {load}  workers {}{}",
            i + 1,
            s.duration,
            s.workers,
            s.warmup
                .as_ref()
                .map(|w| format!("  warmup {w}"))
                .unwrap_or_default()
        );
    }
}

/// An ingest's stages: how its schedule is made, then one line per stage with the rows it
/// schedules (across all workers) and where the data runs out.
pub(super) fn ingest_stage_lines(o: &mut String, p: &IngestPhase) {
    if p.stages.is_empty() {
        return;
    }
    let total: f64 = p.stages.iter().map(StagePlan::scheduled).sum();
    let rows = p.rows_expected;
    let scheduled = rows.map_or(total.ceil() as u64, |r| r.min(total.ceil() as u64));
    let _ = writeln!(
        o,
        "    stages: one schedule, the rows due by t the integral of the stages' rate, 1/{} of it per worker; {} rows scheduled{}",
        p.workers,
        super::thousands(scheduled),
        p.duration
            .as_ref()
            .map(|d| format!(" in {d}"))
            .unwrap_or_default()
    );
    let mut due = 0.0;
    for (i, s) in p.stages.iter().enumerate() {
        let rate = match (&s.load, &s.ramp_to) {
            (Load::Open { rate, .. }, Some(to)) => format!("rate {rate} to {to}"),
            (Load::Open { rate, .. }, None) => format!("rate {rate}"),
            (Load::Closed, _) => "unpaced".to_string(),
        };
        let own = s.scheduled();
        let data = match rows {
            Some(r) if r as f64 <= due => "  not reached: the rows run out before it".to_string(),
            Some(r) if (r as f64) < due + own => format!(
                "  the rows run out in it, after {}",
                super::thousands(r - due.ceil() as u64)
            ),
            _ => String::new(),
        };
        let _ = writeln!(
            o,
            "    stage {}  {}  {rate}  {} rows due{}{data}",
            i + 1,
            s.duration,
            super::thousands(own.ceil() as u64),
            s.warmup
                .as_ref()
                .map(|w| format!("  warmup {w}"))
                .unwrap_or_default()
        );
        due += own;
    }
}
