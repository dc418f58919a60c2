//! The open-loop schedule of one measured round, kept as wrk2 keeps it: the intended send times
//! are computed from the seed, not queued, so memory stays constant whatever the rate. A free
//! worker takes the next slot and sends at its time, or at once when it is behind; its latency
//! counts from the intended time either way, so a client or server that falls behind shows in
//! the latency and in the slots never sent, never as a gap in the schedule.
//!
//! The round's span: its `duration`, or for `count N` the N intended times (N/R at a fixed
//! rate). No send starts at or after the span's end, and what was scheduled in it is counted
//! exactly afterwards, so `scheduled = ok + failed + cut off + unsent` holds to the unit.

use std::time::{Duration, Instant};

use crate::query::schedule::Arrivals;

pub struct Schedule {
    start: Instant,
    /// Sends stop here.
    end: Option<Instant>,
    limit: Option<u64>,
    /// A fresh copy, for counting what was scheduled.
    origin: Arrivals,
    arrivals: Arrivals,
    taken: u64,
    /// When a stop (Ctrl-C, a failed hook) closed the schedule early.
    closed_at: Option<Instant>,
}

/// One send of the schedule: its index in the round (in the whole round, for a shard) and
/// when it is meant to go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    pub index: u64,
    pub at: Instant,
}

impl Schedule {
    /// The schedule of a round starting at `start` that lasts `duration` or holds `count` sends.
    pub fn new(
        arrivals: Arrivals,
        start: Instant,
        duration: Option<Duration>,
        count: Option<u64>,
    ) -> Schedule {
        let end = match (duration, count) {
            (Some(d), _) => Some(start + d),
            // A counted schedule spans until the send after its last would be due.
            (None, Some(n)) => {
                let mut a = arrivals.clone();
                let mut off = Duration::ZERO;
                for _ in 0..=n {
                    off = a.next_offset();
                }
                Some(start + off)
            }
            (None, None) => None,
        };
        Schedule {
            start,
            end,
            limit: count,
            origin: arrivals.clone(),
            arrivals,
            taken: 0,
            closed_at: None,
        }
    }

    /// Where sends stop (`None`: until stopped).
    pub fn end(&self) -> Option<Instant> {
        self.end
    }

    /// The next slot, or `None` once the schedule is over or was closed.
    pub fn take(&mut self) -> Option<Slot> {
        if self.closed_at.is_some() || self.limit.is_some_and(|n| self.taken >= n) {
            return None;
        }
        let at = self.start + self.arrivals.next_offset();
        if self.end.is_some_and(|e| at >= e) {
            return None;
        }
        // A shard's slot carries its index in the whole schedule: a request hook builds
        // request number `index` whichever shard sends it.
        let slot = Slot {
            index: self.origin.whole_index(self.taken),
            at,
        };
        self.taken += 1;
        Some(slot)
    }

    /// Ends the schedule at `at` (the first to see a stop calls it): later slots are not
    /// scheduled.
    pub fn close(&mut self, at: Instant) {
        self.closed_at.get_or_insert(at);
    }

    /// Slots whose intended time fell in the span that ended at `ended` (or earlier, at its end
    /// or when it was closed).
    pub fn scheduled(&self, ended: Instant) -> u64 {
        let mut until = ended;
        for t in [self.end, self.closed_at].into_iter().flatten() {
            until = until.min(t);
        }
        // A counted schedule's end is the time after its last slot: every slot was due by then.
        if let (Some(limit), Some(end)) = (self.limit, self.end) {
            if until >= end {
                return limit;
            }
        }
        let mut a = self.origin.clone();
        let mut n = 0u64;
        while self.limit.is_none_or(|l| n < l) && self.start + a.next_offset() < until {
            n += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Load;
    use crate::value::Value;

    fn fixed(rate: f64) -> Arrivals {
        let load = Load::Open {
            rate: Value::Rate(rate),
            arrival: "fixed".into(),
        };
        Arrivals::new(&load, 1).unwrap()
    }

    #[test]
    fn a_timed_schedule_counts_every_slot_in_its_span_taken_or_not() {
        let t0 = Instant::now();
        let mut s = Schedule::new(fixed(1000.0), t0, Some(Duration::from_secs(2)), None);
        let first = s.take().unwrap();
        assert_eq!(first, Slot { index: 0, at: t0 });
        assert_eq!(s.take().unwrap().at, t0 + Duration::from_millis(1));
        // However few were taken, 2,000 were due in 2 s.
        assert_eq!(s.scheduled(t0 + Duration::from_secs(5)), 2000);
        // Stopped after 0.5 s: only what was due until then.
        s.close(t0 + Duration::from_millis(500));
        assert_eq!(s.scheduled(t0 + Duration::from_secs(5)), 500);
        assert_eq!(s.take(), None);
    }

    #[test]
    fn a_counted_schedule_spans_its_sends_and_ends_there() {
        let t0 = Instant::now();
        let mut s = Schedule::new(fixed(100.0), t0, None, Some(10));
        assert_eq!(s.end(), Some(t0 + Duration::from_millis(100)));
        let slots: Vec<Slot> = std::iter::from_fn(|| s.take()).collect();
        assert_eq!(slots.len(), 10);
        assert_eq!(slots[9].at, t0 + Duration::from_millis(90));
        assert_eq!(s.scheduled(t0 + Duration::from_secs(60)), 10);
        assert_eq!(s.scheduled(t0 + Duration::from_millis(45)), 5);
    }

    #[test]
    fn poisson_slots_are_the_same_on_every_run_and_counted_the_same_way() {
        let load = Load::Open {
            rate: Value::Rate(5000.0),
            arrival: "poisson".into(),
        };
        let t0 = Instant::now();
        let span = Some(Duration::from_secs(1));
        let mut a = Schedule::new(Arrivals::new(&load, 7).unwrap(), t0, span, None);
        let b = Schedule::new(Arrivals::new(&load, 7).unwrap(), t0, span, None);
        let taken = std::iter::from_fn(|| a.take()).count() as u64;
        assert_eq!(taken, b.scheduled(t0 + Duration::from_secs(9)));
        assert!((4700..5300).contains(&taken), "{taken}");
    }
}
