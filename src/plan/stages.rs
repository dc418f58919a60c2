//! A staged run's stages as `wlrun plan` lists them, one line each.

use std::fmt::Write as _;

use super::{Load, StagePlan};

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
