//! Where every scheduled query or request of a run went: `scheduled = ok + not found + failed
//! + cut off + unsent`.

use serde::{Deserialize, Serialize};

use super::Latency;

/// What became of every unit a query or request run scheduled:
/// `scheduled = ok + not_found + failed + cut_off + unsent` (`ok` and `failed` are the
/// report's own). In
/// closed loop a unit is scheduled when a worker takes it (or, with `count N`, all N are).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Accounting {
    pub scheduled: u64,
    /// Answered, and judged not found by the query's `not found when` (YCSB's NOT_FOUND):
    /// neither ok nor failed. Absent where it is 0.
    #[serde(default, skip_serializing_if = "super::outcomes::is_zero")]
    pub not_found: u64,
    /// Sent, but still unanswered when the phase ended (its duration plus the grace, or a stop).
    pub cut_off: u64,
    /// Scheduled within the measured span, never sent: the client or the server fell behind,
    /// or the workers stopped at a refused password or certificate.
    pub unsent: u64,
    /// Open loop: sent (ok + not found + failed + cut off) over scheduled, a fraction; `null` in closed loop.
    pub achieved_rate: Option<f64>,
    /// Open loop: sends more than 1 ms after their intended time, and their share of the sends.
    pub late: u64,
    pub late_share: Option<f64>,
    /// Open loop: actual send time minus intended send time, per send.
    pub send_lag: Option<Latency>,
}
