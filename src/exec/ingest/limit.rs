//! An ingest phase's hard end: its `duration` (or its stages' span), its group's end, and a
//! stop.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
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

/// A stop (Ctrl-C, SIGTERM, a lost shard, a run directory that can no longer be written) as an
/// end the workers wait on, set within `POLL` of the run's flag. Without it a stop was seen only
/// between batches: a write to a slow server went on to the endpoint's `timeout` (60 s) in every
/// worker, and the run outlived its grace by that much. Dropping it ends the watch.
pub(super) struct Halt {
    pub end: End,
    watch: tokio::task::JoinHandle<()>,
}

/// How soon a stop is seen: well inside `STOP_GRACE`.
const POLL: Duration = Duration::from_millis(50);

impl Halt {
    pub fn watch(stop: Arc<AtomicBool>) -> Halt {
        let end = End::new();
        let set = end.clone();
        let watch = tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(POLL).await;
            }
            set.now();
        });
        Halt { end, watch }
    }
}

impl Drop for Halt {
    fn drop(&mut self) {
        self.watch.abort();
    }
}

/// `f`, or `None` if a limit's, the group's or a stop's hard stop comes first.
pub(super) async fn within<T>(
    (limit, end, halt): (Option<Limit>, &End, &End),
    f: impl std::future::Future<Output = T>,
) -> Option<T> {
    let f = async { halt.bound(end.bound(f)).await.flatten() };
    match limit {
        Some(l) => tokio::time::timeout_at(l.hard.into(), f)
            .await
            .ok()
            .flatten(),
        None => f.await,
    }
}
