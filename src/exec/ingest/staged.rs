//! An ingest's stages: one continuous send, its schedule following the stages' rates
//! (`rate::Schedule`), each stage reported on its own.
//!
//! A batch belongs to the stage its slot (its intended time) falls in, and within it to the
//! stage's warm-up or to its measured rest. Slots follow the rows taken, so that is a matter
//! of row indices: every worker has the same share of the rate, hence the same boundaries, and
//! the batch after n rows falls where n does. The rows the schedule held but no batch took
//! (unsent) fall where their own index does. So every row is in exactly one part of one stage,
//! and the parts add up to the phase: its totals are the whole send, warm-ups included (they
//! were sent, and a count sees them); a stage's figures leave its warm-up out.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::new_histogram;
use super::rate::{Kept, Schedule};
use crate::exec::account::{Sends, DEFAULT_FLOOR};
use crate::exec::stages::Stage;
use crate::plan::{thousands, Ack};
use crate::query::ramp::Ramp;
use crate::query::stats::micros;
use crate::report::stages::{IngestStageReport, StageRows};
use crate::report::{rate, Latency};

/// Where the stages' parts begin, in a worker's rows: part `2k` is stage k's warm-up, part
/// `2k + 1` its measured rest; `bounds[j]` is the first row of part `j` and the last entry the
/// rows due in the whole span.
#[derive(Debug)]
pub(super) struct Parts {
    bounds: Vec<u64>,
    /// Seconds from the start: each stage's start, its measured part's start, and the end.
    starts_s: Vec<(f64, f64)>,
    end_s: f64,
    mean_rate: f64,
    /// Each measured part's latencies and sends, filled by every worker.
    hists: Vec<Mutex<Hists>>,
}

impl Parts {
    pub fn new(schedule: &Schedule, stages: &[Stage]) -> Parts {
        let mut bounds = Vec::with_capacity(2 * stages.len() + 1);
        let mut starts_s = Vec::with_capacity(stages.len());
        let mut t = 0.0;
        for s in stages {
            let measured = t + s.warmup.as_secs_f64();
            bounds.push(schedule.first_row_at(t));
            bounds.push(schedule.first_row_at(measured));
            starts_s.push((t, measured));
            t += s.duration.as_secs_f64();
        }
        bounds.push(schedule.first_row_at(t));
        Parts {
            bounds,
            starts_s,
            end_s: t,
            mean_rate: 0.0,
            hists: stages
                .iter()
                .map(|_| Mutex::new(Hists::default()))
                .collect(),
        }
    }

    /// The stages' schedule from `t0` for `workers` workers, and where its parts begin.
    pub fn schedule(t0: Instant, stages: &[Stage], workers: u64) -> (Schedule, Arc<Parts>) {
        let pieces: Vec<(f64, f64, f64)> = stages
            .iter()
            .map(|s| {
                let (from, to) = s.rate.map_or((0.0, 0.0), |r| (r.0, r.1));
                (from, to, s.duration.as_secs_f64())
            })
            .collect();
        let each = Schedule::staged(t0, &pieces, workers);
        let mut parts = Parts::new(&each, stages);
        let rows: f64 = pieces
            .iter()
            .map(|&(from, to, span_s)| Ramp { from, to, span_s }.total())
            .sum();
        parts.mean_rate = rows / parts.end_s.max(f64::MIN_POSITIVE);
        (each, Arc::new(parts))
    }

    /// The rows per second asked over the whole span, across all workers: the rows due over
    /// it, over it.
    pub fn mean_rate(&self) -> f64 {
        self.mean_rate
    }

    /// Tells the phase's series where each stage begins, `t0` being the schedule's start.
    pub fn mark(&self, series: &crate::exec::series::Recorder, t0: Instant) {
        for (k, (start_s, _)) in self.starts_s.iter().enumerate() {
            series.stage(t0 + Duration::from_secs_f64(*start_s), k as u64 + 1);
        }
    }

    fn len(&self) -> usize {
        self.bounds.len() - 1
    }

    /// The part of the row with index `row` (past the span: the last part).
    fn of(&self, row: u64) -> usize {
        (self.bounds.partition_point(|&b| b <= row).max(1) - 1).min(self.len() - 1)
    }
}

/// A measured part's distributions, across workers.
#[derive(Debug)]
struct Hists {
    /// Send -> answer (or written), per batch.
    latency: Histogram<u64>,
    /// Intended send time -> answer, per batch.
    intended: Histogram<u64>,
    sends: Sends,
}

impl Default for Hists {
    fn default() -> Self {
        Hists {
            latency: new_histogram(),
            intended: new_histogram(),
            sends: Sends::default(),
        }
    }
}

/// What one part of a stage counted, in rows (batches apart).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Counts {
    /// Rows of the batches whose slot fell here; then, at the end, plus the unsent rows due
    /// here: the schedule.
    scheduled: u64,
    batches: u64,
    sent: u64,
    acked: u64,
    /// Sent and rejected (or never acknowledged where each batch is).
    failed: u64,
    dropped: u64,
    cut_off: u64,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.scheduled += o.scheduled;
        self.batches += o.batches;
        self.sent += o.sent;
        self.acked += o.acked;
        self.failed += o.failed;
        self.dropped += o.dropped;
        self.cut_off += o.cut_off;
    }

    fn rows(&self, acks: bool) -> StageRows {
        StageRows {
            scheduled: self.scheduled,
            sent: self.sent,
            acked: acks.then_some(self.acked),
            failed: self.failed,
            dropped: self.dropped,
            cut_off: self.cut_off,
            // The schedule counts the rows of every batch taken, and batches are taken only
            // inside the span: never below what went out.
            unsent: self.scheduled.saturating_sub(self.sent + self.cut_off),
        }
    }
}

/// One worker's batches among the stages.
#[derive(Debug)]
pub(super) struct Tally {
    parts: Arc<Parts>,
    counts: Vec<Counts>,
    /// The part of the batch taken last.
    batch: usize,
    rows: u64,
    /// Batches sent whose acknowledgement comes later (QWP's `publish`), oldest first: the
    /// server acknowledges in order.
    unacked: VecDeque<(usize, u64)>,
    acks_later: bool,
}

impl Tally {
    /// A worker's tally; `ack` is the phase's: with `publish`, acknowledgements come after
    /// the sends that carried the rows.
    pub fn new(parts: &Arc<Parts>, ack: Ack) -> Tally {
        Tally {
            counts: vec![Counts::default(); parts.len()],
            parts: parts.clone(),
            batch: 0,
            rows: 0,
            unacked: VecDeque::new(),
            acks_later: ack == Ack::Publish,
        }
    }

    fn measured(&self) -> Option<&Mutex<Hists>> {
        (self.batch % 2 == 1).then(|| &self.parts.hists[self.batch / 2])
    }

    pub fn take(&mut self, first: u64, rows: u64, dropped: u64) {
        self.batch = self.parts.of(first);
        self.rows = rows;
        let c = &mut self.counts[self.batch];
        c.scheduled += rows;
        c.batches += 1;
        c.dropped += dropped;
    }

    pub fn start(&mut self, now: Instant, slot: Instant) {
        if let Some(h) = self.measured() {
            if let Ok(mut h) = h.lock() {
                h.sends.start(now, Some(slot));
            }
        }
    }

    pub fn sent(&mut self, took: Duration, intended: Option<Duration>, acked: bool) {
        let c = &mut self.counts[self.batch];
        c.sent += self.rows;
        if acked {
            c.acked += self.rows;
        } else if self.acks_later {
            self.unacked.push_back((self.batch, self.rows));
        }
        if let Some(h) = self.measured() {
            if let Ok(mut h) = h.lock() {
                let _ = h.latency.record(micros(took));
                if let Some(i) = intended {
                    let _ = h.intended.record(micros(i));
                }
            }
        }
    }

    pub fn rejected(&mut self) {
        let c = &mut self.counts[self.batch];
        c.sent += self.rows;
        c.failed += self.rows;
    }

    pub fn cut_off(&mut self) {
        self.counts[self.batch].cut_off += self.rows;
    }

    pub fn acked_later(&mut self, mut rows: u64) {
        while rows > 0 {
            let Some((part, left)) = self.unacked.front_mut() else {
                // More than the batches waiting (a protocol that counts otherwise): where the
                // sending is.
                self.counts[self.batch].acked += rows;
                return;
            };
            let n = rows.min(*left);
            self.counts[*part].acked += n;
            *left -= n;
            rows -= n;
            if *left == 0 {
                self.unacked.pop_front();
            }
        }
    }

    /// The worker is done: it took `taken` rows into batches and the schedule held `held` of
    /// its rows (at least `taken`). The rows held but never taken fall where their index does.
    pub fn finish(&mut self, taken: u64, held: u64) {
        let b = &self.parts.bounds;
        for (j, c) in self.counts.iter_mut().enumerate() {
            let (lo, hi) = (b[j].max(taken), b[j + 1].min(held));
            c.scheduled += hi.saturating_sub(lo);
        }
        // Rows held past the span's last slot (never, but for rounding) stay in the last part.
        let past = held.saturating_sub(b[b.len() - 1].max(taken));
        if let Some(c) = self.counts.last_mut() {
            c.scheduled += past;
        }
    }

    /// What each part counted.
    pub fn counts(self) -> Vec<Counts> {
        self.counts
    }
}

/// What the stages' reports need of the phase.
pub(super) struct Phase<'a> {
    pub stages: &'a [Stage],
    pub parts: &'a Parts,
    /// Every worker's counts, part by part.
    pub workers: Vec<Vec<Counts>>,
    /// The phase's schedule after the data's cap: the parts are trimmed to it, latest first.
    pub scheduled: u64,
    /// Seconds from the start until the send ended: the span's end when that stopped it,
    /// else when the last worker was done.
    pub ended_s: f64,
    /// The protocol acknowledges rows; `rows_per_s` counts acknowledged rows then.
    pub acks: bool,
}

/// Each stage's report, its parts summed over the workers.
pub(super) fn reports(p: Phase<'_>) -> Vec<IngestStageReport> {
    let mut counts = vec![Counts::default(); p.parts.len()];
    for w in &p.workers {
        for (c, o) in counts.iter_mut().zip(w) {
            c.add(o);
        }
    }
    // The data's rows cap the schedule (a worker stopped by the span counts every slot in it,
    // rows or not): the rows beyond the data are the latest ones.
    let mut over = counts
        .iter()
        .map(|c| c.scheduled)
        .sum::<u64>()
        .saturating_sub(p.scheduled);
    for c in counts.iter_mut().rev() {
        let unsent = c.scheduled.saturating_sub(c.sent + c.cut_off);
        let cut = over.min(unsent);
        c.scheduled -= cut;
        over -= cut;
    }
    p.stages
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let (warm, measured) = (counts[2 * k], counts[2 * k + 1]);
            let (start_s, measure_s) = p.parts.starts_s[k];
            let end_s = start_s + s.duration.as_secs_f64();
            let span_s = (end_s.min(p.ended_s) - measure_s).max(0.0);
            let hists = p.parts.hists[k]
                .lock()
                .map(|mut h| std::mem::take(&mut *h))
                .unwrap_or_default();
            let rows = measured.rows(p.acks);
            let carried = rows.sent + rows.cut_off;
            let achieved = (rows.scheduled > 0).then(|| carried as f64 / rows.scheduled as f64);
            let (from, to) = s.rate.map_or((0.0, 0.0), |r| (r.0, r.1));
            IngestStageReport {
                stage: s.number,
                start_s,
                duration_s: s.duration.as_secs_f64(),
                warmup_s: s.warmup.as_secs_f64(),
                span_s,
                load: load_text(from, to),
                rate_from: from,
                rate_to: to,
                reached: warm.batches + measured.batches > 0,
                batches: measured.batches,
                rows_per_s: rate(
                    if p.acks {
                        rows.acked.unwrap_or(0)
                    } else {
                        rows.sent
                    },
                    span_s,
                ),
                achieved_rate: achieved,
                kept_schedule: achieved.map(|a| a >= DEFAULT_FLOOR),
                late_batches: hists.sends.late,
                late_share: (hists.sends.sent > 0)
                    .then(|| hists.sends.late as f64 / hists.sends.sent as f64),
                send_lag: Latency::of(&hists.sends.lag),
                batch_latency: Latency::of(&hists.latency),
                batch_latency_intended: Latency::of(&hists.intended),
                rows,
                warmup: warm.rows(p.acks),
            }
        })
        .collect()
}

/// Every worker's counts, part by part.
pub(super) fn counts(kept: Vec<Kept>) -> Vec<Vec<Counts>> {
    kept.into_iter()
        .filter_map(|k| k.stages.map(Tally::counts))
        .collect()
}

/// Seconds from `t0` until the send ended: at the end of the span (`span`) when that stopped it
/// (its last slot may be a batch's interval earlier), else when the last worker was done.
pub(super) fn ended_s(span: Option<Duration>, last: Option<Instant>, t0: Instant) -> f64 {
    match (span, last) {
        (Some(d), _) => d.as_secs_f64(),
        (None, Some(l)) => l.saturating_duration_since(t0).as_secs_f64(),
        (None, None) => 0.0,
    }
}

/// `200/s`, or `200/s to 1000/s` for a ramp.
fn load_text(from: f64, to: f64) -> String {
    use crate::value::fmt_rate;
    if (from - to).abs() > f64::EPSILON {
        format!("{} to {}", fmt_rate(from), fmt_rate(to))
    } else {
        fmt_rate(from)
    }
}

/// The stages that did not keep their schedule, as failure lines.
pub(super) fn failures(stages: &[IngestStageReport]) -> Vec<String> {
    stages
        .iter()
        .filter(|s| s.kept_schedule == Some(false))
        .map(|s| {
            let r = &s.rows;
            format!(
                "stage {} (rate {}) sent {} of {} scheduled rows ({:.1}%){}: every stage must keep {:.0}% of its schedule",
                s.stage,
                s.load,
                thousands(r.sent + r.cut_off),
                thousands(r.scheduled),
                100.0 * s.achieved_rate.unwrap_or(0.0),
                if s.reached { "" } else { ", not reached" },
                100.0 * DEFAULT_FLOOR
            )
        })
        .collect()
}

/// The stages the send never reached with nothing due in them (the rows ran out, or the
/// group ended first), as one warning; `why` says which.
pub(super) fn unreached(stages: &[IngestStageReport], why: &str) -> Option<String> {
    let missed: Vec<String> = stages
        .iter()
        .filter(|s| !s.reached && s.rows.scheduled + s.warmup.scheduled == 0)
        .map(|s| s.stage.to_string())
        .collect();
    match missed.len() {
        0 => None,
        1 => Some(format!("stage {} was not reached: {why}", missed[0])),
        _ => Some(format!(
            "stages {} were not reached: {why}",
            missed.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Load, StagePlan};
    use crate::value::Value;

    fn stages(list: &[(f64, f64, i64, i64)]) -> Vec<Stage> {
        let plans: Vec<StagePlan> = list
            .iter()
            .map(|&(from, to, secs, warm_ms)| StagePlan {
                duration: Value::Duration(secs * 1_000_000_000),
                load: Load::Open {
                    rate: Value::Rate(from),
                    arrival: "fixed".into(),
                },
                ramp_to: (from != to).then_some(Value::Rate(to)),
                workers: 1,
                warmup: (warm_ms > 0).then(|| Value::Duration(warm_ms * 1_000_000)),
            })
            .collect();
        Stage::all(&plans)
    }

    fn schedule_of(st: &[Stage], workers: u64) -> Schedule {
        let pieces: Vec<_> = st
            .iter()
            .map(|s| {
                let (a, b, _) = s.rate.unwrap();
                (a, b, s.duration.as_secs_f64())
            })
            .collect();
        Schedule::staged(Instant::now(), &pieces, workers)
    }

    #[test]
    fn the_parts_begin_where_their_rows_are_due() {
        // One worker: 1 s at 1,000/s with 250 ms of warm-up, then 2 s ramping to 3,000/s.
        let st = stages(&[(1000.0, 1000.0, 1, 250), (1000.0, 3000.0, 2, 0)]);
        let parts = Parts::new(&schedule_of(&st, 1), &st);
        assert_eq!(parts.bounds, vec![0, 250, 1000, 1000, 5000]);
        assert_eq!(parts.of(0), 0);
        assert_eq!(parts.of(249), 0);
        assert_eq!(parts.of(250), 1);
        // Stage 2 has no warm-up: its first row is in its measured part.
        assert_eq!(parts.of(1000), 3);
        assert_eq!(parts.of(99_999), 3);
        assert_eq!(parts.starts_s, vec![(0.0, 0.25), (1.0, 1.0)]);
    }

    #[test]
    fn every_row_falls_in_one_part_and_the_parts_add_up() {
        let st = stages(&[(1000.0, 1000.0, 1, 250), (1000.0, 3000.0, 2, 0)]);
        let parts = Arc::new(Parts::new(&schedule_of(&st, 1), &st));
        let mut t = Tally::new(&parts, Ack::Publish);
        let now = Instant::now();
        // Batches of 300 rows: slots at rows 0, 300 (measured), 600, 900 (in stage 1, its rows
        // spilling into stage 2's), 1200 ... A batch belongs where its first row is due.
        let mut taken = 0;
        for i in 0..6 {
            t.take(taken, 300, 0);
            t.start(now, now);
            match i {
                2 => t.rejected(),
                5 => t.cut_off(),
                _ => t.sent(
                    Duration::from_millis(1),
                    Some(Duration::from_millis(2)),
                    false,
                ),
            }
            taken += 300;
        }
        // Acknowledged later, in order: the first three batches sent, and half the fourth.
        t.acked_later(600);
        t.acked_later(300 + 150);
        // Stopped inside the span: everything due until 2 s was held (1,000 rows, then
        // 1,000 + 500 up the ramp), 1,800 rows taken.
        let held = schedule_of(&st, 1).rows_within(Duration::from_secs(2));
        assert_eq!(held, 2500);
        t.finish(taken, held);
        let counts = t.counts();
        let warm = counts[0];
        assert_eq!((warm.scheduled, warm.sent, warm.acked), (300, 300, 300));
        let one = counts[1];
        // Batches at 300, 600 (rejected), 900: 900 rows, and no unsent rows of its own.
        assert_eq!(
            (one.scheduled, one.sent, one.failed, one.acked),
            (900, 900, 300, 600)
        );
        assert_eq!(counts[2], Counts::default());
        let two = counts[3];
        // Batches at 1200 (sent, half acked) and 1500 (cut off), then 700 rows never taken.
        assert_eq!((two.sent, two.cut_off, two.acked), (300, 300, 150));
        assert_eq!(two.scheduled, 600 + 700);
        let total: u64 = counts.iter().map(|c| c.scheduled).sum();
        assert_eq!(total, held);
        for c in &counts {
            let r = c.rows(true);
            assert_eq!(r.scheduled, r.sent + r.cut_off + r.unsent, "{c:?}");
        }
        // The stages' reports: stage 1's warm-up apart, stage 2 short of its schedule.
        let reports = reports(Phase {
            stages: &st,
            parts: &parts,
            workers: vec![counts],
            scheduled: held,
            ended_s: 2.0,
            acks: true,
        });
        assert_eq!(reports[0].warmup.scheduled, 300);
        assert_eq!(reports[0].rows.scheduled, 900);
        assert_eq!(reports[0].kept_schedule, Some(true));
        assert_eq!(reports[0].batches, 3);
        assert!((reports[0].span_s - 0.75).abs() < 1e-12);
        assert_eq!(reports[0].batch_latency.count, 2);
        assert_eq!(reports[0].send_lag.count, 3);
        assert_eq!(reports[1].rows.unsent, 700);
        assert_eq!(reports[1].kept_schedule, Some(false));
        assert_eq!(reports[1].load, "1000/s to 3000/s");
        // It ended at 2 s, one second into stage 2.
        assert!((reports[1].span_s - 1.0).abs() < 1e-12);
        let f = failures(&reports);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].starts_with(
                "stage 2 (rate 1000/s to 3000/s) sent 600 of 1,300 scheduled rows (46.2%)"
            ),
            "{f:?}"
        );
    }

    #[test]
    fn the_datas_cap_trims_the_latest_unsent_rows_and_an_empty_stage_is_not_reached() {
        let st = stages(&[
            (100.0, 100.0, 1, 0),
            (100.0, 100.0, 1, 0),
            (100.0, 100.0, 1, 0),
        ]);
        let parts = Arc::new(Parts::new(&schedule_of(&st, 1), &st));
        let mut t = Tally::new(&parts, Ack::None);
        let now = Instant::now();
        for first in [0, 50, 100] {
            t.take(first, 50, 0);
            t.start(now, now);
            t.sent(Duration::from_millis(1), None, false);
        }
        // The span held 300 slots; the data, 170 rows.
        t.finish(150, 300);
        let counts = t.counts();
        let reports = reports(Phase {
            stages: &st,
            parts: &parts,
            workers: vec![counts],
            scheduled: 170,
            ended_s: 1.6,
            acks: false,
        });
        let scheduled: Vec<u64> = reports.iter().map(|r| r.rows.scheduled).collect();
        assert_eq!(scheduled, vec![100, 70, 0]);
        assert_eq!(reports[1].rows.unsent, 20);
        assert!(!reports[2].reached);
        assert_eq!(reports[2].kept_schedule, None);
        assert_eq!(reports[0].rows.acked, None);
        assert_eq!(
            unreached(&reports, "its rows ran out first").as_deref(),
            Some("stage 3 was not reached: its rows ran out first")
        );
    }
}
