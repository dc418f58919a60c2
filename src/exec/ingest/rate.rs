//! `rate R` on an ingest: each of N workers sends its batches on a fixed schedule at R / N
//! rows per second. A batch's slot follows the rows the worker put into batches before it, so
//! a batch of any size (the last, partial one included) keeps the row rate exact; the
//! schedule depends on nothing but the rate and the batch sizes, never on timing.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::new_histogram;
use crate::exec::account::Sends;
use crate::report::{IngestSchedule, Latency};

/// One worker's schedule.
#[derive(Clone, Copy, Debug)]
pub(super) struct Schedule {
    t0: Instant,
    /// This worker's share of the rate.
    rows_per_s: f64,
}

impl Schedule {
    pub(super) fn new(t0: Instant, rate: f64, workers: u64) -> Schedule {
        Schedule {
            t0,
            rows_per_s: rate / workers.max(1) as f64,
        }
    }

    /// When the batch after `rows_before` rows is due, relative to the start.
    pub(super) fn offset(&self, rows_before: u64) -> Duration {
        Duration::from_secs_f64(rows_before as f64 / self.rows_per_s)
    }

    pub(super) fn at(&self, rows_before: u64) -> Instant {
        self.t0 + self.offset(rows_before)
    }

    /// Rows whose slot lies inside `span` from the start: row i is due at i / rate.
    pub(super) fn rows_within(&self, span: Duration) -> u64 {
        (span.as_secs_f64() * self.rows_per_s).ceil() as u64
    }
}

/// What one worker's schedule measured.
pub(super) struct Kept {
    pub sends: Sends,
    /// Intended send time -> answer, per batch, microseconds.
    pub intended: Histogram<u64>,
    /// Rows the schedule held for this worker within the span.
    pub scheduled_rows: u64,
}

impl Default for Kept {
    fn default() -> Self {
        Kept {
            sends: Sends::default(),
            intended: new_histogram(),
            scheduled_rows: 0,
        }
    }
}

/// The phase's accounting from its workers' schedules; `carried` is rows sent plus cut off,
/// `planned` the rows the source holds (when known), which caps what a span can schedule.
pub(super) fn account(
    rate: f64,
    kept: &[Kept],
    carried: u64,
    cut_off: u64,
    planned: Option<u64>,
) -> IngestSchedule {
    let mut sends = Sends::default();
    let mut intended = new_histogram();
    let mut scheduled = 0;
    for k in kept {
        sends.merge(&k.sends);
        let _ = intended.add(&k.intended);
        scheduled += k.scheduled_rows;
    }
    let scheduled = planned.map_or(scheduled, |p| scheduled.min(p)).max(carried);
    IngestSchedule {
        rate_rows_per_s: rate,
        scheduled_rows: scheduled,
        cut_off_rows: cut_off,
        unsent_rows: scheduled - carried,
        achieved_rate: if scheduled == 0 {
            1.0
        } else {
            carried as f64 / scheduled as f64
        },
        late_batches: sends.late,
        late_share: (sends.sent > 0).then(|| sends.late as f64 / sends.sent as f64),
        send_lag: Latency::of(&sends.lag),
        batch_latency_intended: Latency::of(&intended),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slots a worker's batches get, relative to the start: the schedule's whole output.
    fn slots(s: &Schedule, batches: &[u64]) -> Vec<Duration> {
        let mut before = 0;
        batches
            .iter()
            .map(|b| {
                let at = s.offset(before);
                before += b;
                at
            })
            .collect()
    }

    #[test]
    fn slots_follow_the_rows_sent_so_partial_batches_keep_the_rate() {
        let s = Schedule::new(Instant::now(), 20_000.0, 2);
        // 10,000 rows/s per worker: a batch of 1,000 rows every 100 ms, a partial one after its
        // rows only.
        let got = slots(&s, &[1000, 1000, 500, 1000]);
        let ms = |m| Duration::from_millis(m);
        assert_eq!(got, vec![ms(0), ms(100), ms(200), ms(250)]);
        assert_eq!(s.rows_within(Duration::from_secs(2)), 20_000);
        assert_eq!(s.rows_within(Duration::from_micros(150)), 2);
    }

    #[test]
    fn the_same_rate_and_batches_give_the_same_schedule() {
        let batches: Vec<u64> = (0..500).map(|i| 1 + (i * 7919) % 997).collect();
        let a = Schedule::new(Instant::now(), 33_333.0, 3);
        std::thread::sleep(Duration::from_millis(2));
        let b = Schedule::new(Instant::now(), 33_333.0, 3);
        assert_eq!(slots(&a, &batches), slots(&b, &batches));
        for (i, w) in slots(&a, &batches).windows(2).enumerate() {
            assert!(w[0] <= w[1], "slot {i} goes back");
        }
    }

    #[test]
    fn rows_add_up_to_the_schedule() {
        let mut late = Kept {
            scheduled_rows: 10_000,
            ..Kept::default()
        };
        let t = Instant::now();
        late.sends.start(t + Duration::from_millis(3), Some(t));
        late.sends.start(t, Some(t));
        let ok = Kept {
            scheduled_rows: 10_000,
            ..Kept::default()
        };
        let a = account(20_000.0, &[late, ok], 15_000, 1_000, None);
        assert_eq!(a.scheduled_rows, 20_000);
        assert_eq!(a.unsent_rows, 5_000);
        assert_eq!(a.achieved_rate, 0.75);
        assert_eq!((a.late_batches, a.late_share), (1, Some(0.5)));
        // The source's rows cap the span's slots; what went out is never above the schedule.
        let capped = account(20_000.0, &[Kept::default()], 300, 0, Some(100));
        assert_eq!((capped.scheduled_rows, capped.unsent_rows), (300, 0));
    }
}
