//! An ingest phase's hard end: its `duration` (or its stages' span) and its group's end.

use std::time::{Duration, Instant};

use crate::exec::end::End;
use crate::exec::STOP_GRACE;
use crate::plan::IngestPhase;
use crate::value::Value;

/// A phase's `duration`: no batch starts after `deadline`, and whatever is still in flight at
/// `hard` (the deadline plus `STOP_GRACE`) is abandoned.
#[derive(Clone, Copy)]
pub(super) struct Limit {
    pub duration: Duration,
    pub deadline: Instant,
    pub hard: Instant,
}

impl Limit {
    pub fn of(phase: &IngestPhase, start: Instant) -> Option<Limit> {
        let Some(Value::Duration(ns)) = phase.duration else {
            return None;
        };
        let duration = Duration::from_nanos(ns.max(0) as u64);
        let deadline = start + duration;
        Some(Limit {
            duration,
            deadline,
            hard: deadline + STOP_GRACE,
        })
    }
}

/// `f`, or `None` if a limit's or the group's hard stop comes first.
pub(super) async fn within<T>(
    (limit, end): (Option<Limit>, &End),
    f: impl std::future::Future<Output = T>,
) -> Option<T> {
    let f = end.bound(f);
    match limit {
        Some(l) => tokio::time::timeout_at(l.hard.into(), f)
            .await
            .ok()
            .flatten(),
        None => f.await,
    }
}
