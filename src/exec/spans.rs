//! How long the rounds of a query or request run last, from the plan's values: the warm-up
//! (a count or a time) and the measured span of a timed run.

use std::time::Duration;

use crate::plan::Stop;
use crate::value::Value;

/// `warmup N` or `warmup 10s`: (count, time), at most one of them set.
pub(super) fn warmup(warmup: &Option<Value>) -> (Option<u64>, Option<Duration>) {
    match warmup {
        Some(Value::Int(n)) if *n > 0 => (Some(*n as u64), None),
        Some(Value::Duration(ns)) if *ns > 0 => (None, Some(Duration::from_nanos(*ns as u64))),
        _ => (None, None),
    }
}

/// The measured span of a run stopped by its `duration`; `None` for a counted run.
pub(super) fn measured(stop: &Stop) -> Option<Duration> {
    match stop {
        Stop::Duration {
            duration: Value::Duration(ns),
        } => Some(Duration::from_nanos((*ns).max(0) as u64)),
        _ => None,
    }
}
