//! `rate R` on an ingest: each of N workers sends its batches on a fixed schedule at R / N
//! rows per second. A batch's slot follows the rows the worker put into batches before it, so
//! a batch of any size (the last, partial one included) keeps the row rate exact; the
//! schedule depends on nothing but the rate and the batch sizes, never on timing.
//!
//! Stages make the rate a curve: steps and linear ramps, one after another. The rows due by t
//! are the integral of the rate up to t, and the batch after n rows goes where n rows are
//! due, so the same holds through every stage: the schedule depends on nothing but the rates,
//! the stages' durations and the batch sizes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::new_histogram;
use super::staged::Tally;
use crate::exec::account::Sends;
use crate::query::ramp::Ramp;
use crate::query::stats::micros;
use crate::report::{IngestSchedule, Latency};

/// One worker's schedule.
#[derive(Clone, Debug)]
pub(super) struct Schedule {
    t0: Instant,
    /// This worker's share of the rate, piece by piece; the last piece's end rate holds after
    /// it (a plain `rate` is one endless step).
    pieces: Arc<[Piece]>,
}

/// A step or a ramp of the rate (a step is a ramp whose ends are equal), per worker.
#[derive(Clone, Copy, Debug)]
struct Piece {
    /// Seconds from the start.
    start_s: f64,
    /// Rows due before it (a fraction: a piece may start part-way through a row).
    before: f64,
    ramp: Ramp,
}

impl Schedule {
    pub(super) fn new(t0: Instant, rate: f64, workers: u64) -> Schedule {
        let r = rate / workers.max(1) as f64;
        Schedule::of(t0, &[(r, r, f64::INFINITY)])
    }

    /// Stages back to back, each `(rate at its start, rate at its end, seconds)` across all
    /// workers.
    pub(super) fn staged(t0: Instant, stages: &[(f64, f64, f64)], workers: u64) -> Schedule {
        let n = workers.max(1) as f64;
        let shares: Vec<_> = stages.iter().map(|&(a, b, s)| (a / n, b / n, s)).collect();
        Schedule::of(t0, &shares)
    }

    fn of(t0: Instant, stages: &[(f64, f64, f64)]) -> Schedule {
        let mut pieces = Vec::with_capacity(stages.len());
        let (mut start_s, mut before) = (0.0, 0.0);
        for &(from, to, span_s) in stages {
            let ramp = Ramp { from, to, span_s };
            pieces.push(Piece {
                start_s,
                before,
                ramp,
            });
            start_s += span_s;
            before += ramp.total();
        }
        Schedule {
            t0,
            pieces: pieces.into(),
        }
    }

    /// When the batch after `rows_before` rows is due, relative to the start.
    pub(super) fn offset(&self, rows_before: u64) -> Duration {
        let n = rows_before as f64;
        let p = self.pieces[self.pieces.partition_point(|p| p.before <= n).max(1) - 1];
        Duration::from_secs_f64(p.start_s + p.ramp.at(n - p.before))
    }

    pub(super) fn at(&self, rows_before: u64) -> Instant {
        self.t0 + self.offset(rows_before)
    }

    /// Rows due within `t_s` seconds of the start, a fraction: the integral of the rate.
    pub(super) fn due(&self, t_s: f64) -> f64 {
        let p = self.pieces[self.pieces.partition_point(|p| p.start_s <= t_s).max(1) - 1];
        p.before + p.ramp.due(t_s - p.start_s)
    }

    /// Rows whose slot lies inside `span` from the start: row i is due where i rows are, so
    /// these are the rows before the first whose slot is at or after `span`.
    pub(super) fn rows_within(&self, span: Duration) -> u64 {
        self.first_row_at(span.as_secs_f64())
    }

    /// The first row whose slot is at or after `t_s` seconds from the start.
    pub(super) fn first_row_at(&self, t_s: f64) -> u64 {
        self.due(t_s).ceil() as u64
    }
}

/// What one worker's schedule measured.
pub(super) struct Kept {
    pub sends: Sends,
    /// Intended send time -> answer, per batch, microseconds.
    pub intended: Histogram<u64>,
    /// Rows the schedule held for this worker within the span.
    pub scheduled_rows: u64,
    /// With stages: where this worker's batches fell among them.
    pub stages: Option<Tally>,
}

impl Default for Kept {
    fn default() -> Self {
        Kept {
            sends: Sends::default(),
            intended: new_histogram(),
            scheduled_rows: 0,
            stages: None,
        }
    }
}

impl Kept {
    /// A batch of `rows` (after `dropped` the encoding left out) taken after `first` rows.
    pub fn take(&mut self, first: u64, rows: u64, dropped: u64) {
        if let Some(t) = self.stages.as_mut() {
            t.take(first, rows, dropped);
        }
    }

    /// The batch taken last starts its send at `now`; `slot` is its intended time.
    pub fn start(&mut self, now: Instant, slot: Option<Instant>) {
        if slot.is_some() {
            self.sends.start(now, slot);
        }
        if let (Some(t), Some(at)) = (self.stages.as_mut(), slot) {
            t.start(now, at);
        }
    }

    /// The batch taken last was answered (or written) at `now`, `took` after its send began;
    /// `acked`: the answer acknowledged its rows.
    pub fn sent(&mut self, now: Instant, took: Duration, slot: Option<Instant>, acked: bool) {
        let intended = slot.map(|at| now.saturating_duration_since(at));
        if let Some(i) = intended {
            let _ = self.intended.record(micros(i));
        }
        if let Some(t) = self.stages.as_mut() {
            t.sent(took, intended, acked);
        }
    }

    /// The batch taken last went out whole and was rejected (or its acknowledgement never
    /// came): sent, not acknowledged.
    pub fn rejected(&mut self) {
        if let Some(t) = self.stages.as_mut() {
            t.rejected();
        }
    }

    /// The batch taken last was abandoned at the hard stop.
    pub fn cut_off(&mut self) {
        if let Some(t) = self.stages.as_mut() {
            t.cut_off();
        }
    }

    /// `rows` acknowledged after their batches' sends returned (QWP's `publish`).
    pub fn acked_later(&mut self, rows: u64) {
        if let Some(t) = self.stages.as_mut() {
            t.acked_later(rows);
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

    /// 2 s at 1,000 rows/s, 2 s ramping from 1,000 to 3,000, 1 s at 500: per worker (two)
    /// half of it.
    fn staged() -> Schedule {
        Schedule::staged(
            Instant::now(),
            &[
                (1000.0, 1000.0, 2.0),
                (1000.0, 3000.0, 2.0),
                (500.0, 500.0, 1.0),
            ],
            2,
        )
    }

    #[test]
    fn rows_due_are_the_integral_of_the_stages_rates() {
        let s = staged();
        // Per worker: 500/s for 2 s (1,000 rows), then 500 to 1,500/s over 2 s (2,000 rows),
        // then 250/s for 1 s (250 rows).
        let due = |t: f64| s.due(t);
        assert_eq!(due(0.0), 0.0);
        assert_eq!(due(1.0), 500.0);
        assert_eq!(due(2.0), 1000.0);
        // Halfway up the ramp: 500·1 + 1000·1²/4 = 750 more.
        assert!((due(3.0) - 1750.0).abs() < 1e-9, "{}", due(3.0));
        assert!((due(4.0) - 3000.0).abs() < 1e-9, "{}", due(4.0));
        assert!((due(5.0) - 3250.0).abs() < 1e-9, "{}", due(5.0));
        // After the last stage its rate holds (no slot there is ever sent: the span ends).
        assert!((due(6.0) - 3500.0).abs() < 1e-9);
        assert_eq!(s.rows_within(Duration::from_secs(5)), 3250);
        assert_eq!(s.first_row_at(2.0), 1000);
        assert_eq!(s.rows_within(Duration::from_millis(2001)), 1001);
    }

    #[test]
    fn the_slot_of_the_nth_row_is_where_n_rows_are_due() {
        let s = staged();
        let secs = |n: u64| s.offset(n).as_secs_f64();
        assert_eq!(secs(0), 0.0);
        assert_eq!(secs(500), 1.0);
        assert_eq!(secs(1000), 2.0);
        assert!((secs(1750) - 3.0).abs() < 1e-9, "{}", secs(1750));
        assert!((secs(3000) - 4.0).abs() < 1e-9, "{}", secs(3000));
        assert!((secs(3125) - 4.5).abs() < 1e-9, "{}", secs(3125));
        // Every slot solves the integral: due(slot(n)) = n, through steps and the ramp.
        for n in (0..3250).step_by(37) {
            let back = s.due(secs(n));
            assert!((back - n as f64).abs() < 1e-6, "row {n}: {back}");
        }
        // The slots never go back, and a stage boundary is where its rows start.
        let all: Vec<Duration> = (0..3250).map(|n| s.offset(n)).collect();
        assert!(all.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn batches_of_any_size_keep_the_stages_row_rate() {
        let s = staged();
        // Whatever the batch size, the batch after n rows goes where n rows are due: the rows
        // taken by a time are the rows due then, to within one batch.
        for batch in [1u64, 7, 100, 333, 1000] {
            let mut taken = 0;
            let mut slots = Vec::new();
            while s.offset(taken) < Duration::from_secs(5) {
                slots.push((s.offset(taken), taken));
                taken += batch;
            }
            for (at, before) in slots {
                let due = s.due(at.as_secs_f64());
                assert!(
                    (due - before as f64).abs() < 1e-6,
                    "{batch}: {due} vs {before}"
                );
            }
            // Rows taken into batches whose slot is inside the 5 s: the span's 3,250, rounded
            // up to a whole batch.
            assert!(taken >= 3250 && taken < 3250 + batch, "{batch}: {taken}");
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
