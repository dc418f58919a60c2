//! What an ingest's workers count as they go: the counters the progress ticker reads, and
//! each worker's view of them with its slot of the phase's time series.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::fresh;
use crate::exec::series::Slot;

/// Counters the progress ticker reads while the workers run.
#[derive(Default)]
pub struct Live {
    pub rows_sent: AtomicU64,
    pub rows_acked: AtomicU64,
    pub errors: AtomicU64,
    /// `probe visible`: the rows sent, marked per batch.
    pub(super) timeline: Option<Arc<fresh::Timeline>>,
}

/// Where a worker counts as it goes: the progress ticker's counters and its slot of the
/// phase's time series.
pub(super) struct Counters<'a> {
    pub live: &'a Live,
    pub series: &'a Slot,
}

impl Counters<'_> {
    pub fn sent(&self, at: Instant, rows: u64, payload_bytes: u64, socket_bytes: u64) {
        self.live.rows_sent.fetch_add(rows, Ordering::Relaxed);
        self.series.sent(at, rows, payload_bytes, socket_bytes);
    }

    /// `probe visible`: `rows` counted as sent, marked at `started`, when their batch was
    /// handed to the connection (a batch cannot show before that).
    pub fn mark(&self, started: Instant, rows: u64) {
        if let Some(t) = &self.live.timeline {
            t.sent(started, rows);
        }
    }

    pub fn acked(&self, rows: u64) {
        if rows > 0 {
            self.live.rows_acked.fetch_add(rows, Ordering::Relaxed);
            self.series.acked(Instant::now(), rows, None);
        }
    }
}
