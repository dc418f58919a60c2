//! `probe visible every I`: while an ingest sends, a probe of its own (a task and a
//! connection, so it never holds a worker up) counts the phase's visible rows every I, and each
//! answer is set against the timeline of batches sent. A batch's lag runs from its send mark to
//! the send time of the first probe whose count included it (reached its last row, batches
//! taken in the order they were marked); the previous probe, which did not include it, bounds
//! it below. Each batch is one sample, taken once: a probe that finds nothing new adds none, so
//! however far apart the batches are, a probe that finds the server caught up does not report
//! the last batch's age. After sending ends it goes on until every row the phase must show is
//! visible, or `within` passes.
//!
//! The lag is taken at the probe's send time: the count describes the server at some moment
//! between the probe's send and its answer, and the send time charges none of the probe's own
//! latency to the server. The batch became visible after the previous probe's send and before
//! this one's answer, so a sample is late by at most the time between the two probes (one
//! interval, or the previous probe's latency when it took longer) and early by at most this
//! probe's latency: the resolution is one interval plus the probe's latency, whatever the
//! batches' spacing.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use tokio::sync::{oneshot, Notify};
use tokio::time::MissedTickBehavior;

use super::feed::Rows;
use super::new_histogram;
use crate::exec::admin::{self, Visibility};
use crate::exec::series::Slot;
use crate::exec::RunEnv;
use crate::plan::{thousands, IngestPhase};
use crate::query::stats::micros;
use crate::report::freshness::{FreshSample, Freshness};
use crate::report::{IngestReport, Latency, Status};
use crate::value::Value;

/// The phase's cumulative rows sent, one mark per batch. A mark is pushed under a lock held for
/// a few instructions; a batch's mark is dropped once a probe has seen it, so the timeline
/// holds the batches not yet seen visible, not the whole phase.
pub(super) struct Timeline {
    marks: Mutex<Marks>,
    started: Notify,
}

/// Counts that ran ahead of the marks are kept up to this many (see `Marks::ahead`).
const AHEAD: usize = 64;

#[derive(Default)]
struct Marks {
    /// The phase's start (its first send slot): what sample times are offsets from.
    start: Option<Instant>,
    total: u64,
    /// `(moment, rows sent by then)` of the batches no probe has seen yet, both non-decreasing.
    unseen: VecDeque<(Instant, u64)>,
    /// The last batch's moment, kept once it has been seen.
    last: Option<Instant>,
    /// The rows sent by the last batch seen: no batch up to it is sampled again.
    seen: u64,
    /// Probes that counted more rows than had been marked when they answered (a batch showed
    /// before its send returned and marked it): `(send time, count)`, both increasing. A batch
    /// marked later within such a count was first seen by that probe, not by the next one.
    /// Only a count that includes foreign rows stays here long; past `AHEAD` entries the last
    /// one's count grows instead, so its batches' lags may err early by an interval.
    ahead: VecDeque<(Instant, u64)>,
}

impl Timeline {
    pub(super) fn new() -> Timeline {
        Timeline {
            marks: Mutex::new(Marks::default()),
            started: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Marks> {
        // A worker that panicked while holding the lock left whole marks behind.
        self.marks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The clock starts: the probe begins its interval here.
    pub(super) fn begin(&self, at: Instant) {
        self.lock().start = Some(at);
        self.started.notify_one();
    }

    /// `rows` more were counted as sent; their batch was handed to the connection at `at`.
    pub(super) fn sent(&self, at: Instant, rows: u64) {
        // A batch of no rows never shows: it would be a sample of nothing.
        if rows == 0 {
            return;
        }
        let mut m = self.lock();
        m.total += rows;
        // Workers race to the lock: a mark never goes back in time.
        let at = m.last.map_or(at, |last| last.max(at));
        let total = m.total;
        m.last = Some(at);
        m.unseen.push_back((at, total));
    }

    fn total(&self) -> u64 {
        self.lock().total
    }

    fn last_sent(&self) -> Option<Instant> {
        self.lock().last
    }

    /// A probe sent at `at` counted `visible` rows: into `out`, in the order sent, the batches
    /// that no earlier probe included and this count (or an earlier one that ran ahead of the
    /// marks) includes, each as `(its mark, the send time of the first probe that included
    /// it)`. A count includes a batch when it reaches the batch's last row; a count that
    /// repeats an earlier one, or goes back, includes nothing new.
    fn newly_included(&self, at: Instant, visible: u64, out: &mut Vec<(Instant, Instant)>) {
        out.clear();
        let mut m = self.lock();
        let m = &mut *m;
        let reach = m.ahead.back().map_or(visible, |&(_, v)| v.max(visible));
        while let Some(&(mark, rows)) = m.unseen.front() {
            if rows > reach {
                break;
            }
            let by = m
                .ahead
                .iter()
                .find(|&&(_, v)| v >= rows)
                .map_or(at, |&(t, _)| t);
            out.push((mark, by));
            m.seen = rows;
            m.unseen.pop_front();
        }
        while m.ahead.front().is_some_and(|&(_, v)| v <= m.seen) {
            m.ahead.pop_front();
        }
        if visible > m.total && m.ahead.back().is_none_or(|&(_, v)| v < visible) {
            if m.ahead.len() < AHEAD {
                m.ahead.push_back((at, visible));
            } else if let Some(back) = m.ahead.back_mut() {
                back.1 = visible;
            }
        }
    }
}

/// A running probe: its task, and the word that sending ended.
pub(super) struct Probe {
    task: tokio::task::JoinHandle<Freshness>,
    end: oneshot::Sender<u64>,
}

/// The phase's probe, connected with its baseline taken (after the table's setup, before
/// anything is sent), and the timeline the workers mark; or, when its count could not be
/// prepared, a report that says so. Nothing at all without `probe visible`. Each probe is
/// recorded in `series`, the probe's slot of the phase's time series.
pub(super) async fn prepare(
    env: &RunEnv,
    phase: &IngestPhase,
    rows: &Rows<'_>,
    series: Slot,
) -> (Option<Arc<Timeline>>, Option<Probe>, Option<Freshness>) {
    let Some(plan) = &phase.probe else {
        return (None, None, None);
    };
    let every = crate::report::freshness::every(plan);
    let mut fresh = Freshness {
        warmup_s: match phase.warmup {
            Some(Value::Duration(ns)) if ns > 0 => ns as f64 / 1e9,
            _ => 0.0,
        },
        ..Freshness::planned(plan)
    };
    match admin::counting(env, &plan.count, &rows.layout(), rows.end_ms()).await {
        Ok(count) => {
            let timeline = Arc::new(Timeline::new());
            let probe = start(
                env,
                every,
                count.probing(),
                (timeline.clone(), series),
                fresh,
            );
            (Some(timeline), Some(probe), None)
        }
        Err(e) => {
            fresh.first_error = Some(format!("its count could not be prepared: {e}"));
            (None, None, Some(fresh))
        }
    }
}

/// Starts probing over `count`: the first probe one interval after the timeline begins.
fn start(
    env: &RunEnv,
    every: Duration,
    count: Visibility,
    (timeline, series): (Arc<Timeline>, Slot),
    fresh: Freshness,
) -> Probe {
    let (end, ended) = oneshot::channel();
    let task = tokio::spawn(probe(
        env.stop.clone(),
        count,
        every,
        (timeline, series),
        ended,
        fresh,
    ));
    Probe { task, end }
}

impl Probe {
    /// Sending ended and `target` rows must show (acknowledged, or sent without
    /// acknowledgements): probes at once, then every interval until they show or `within`
    /// passes.
    pub(super) async fn finish(self, target: u64) -> Option<Freshness> {
        let _ = self.end.send(target);
        self.task.await.ok()
    }
}

/// What the probe task accumulates besides the report's figures.
struct Tally {
    lag: Histogram<u64>,
    own: Histogram<u64>,
    answered: u64,
    /// The end of a search step's warm-up: lags of batches first seen by probes sent before
    /// it are not recorded.
    warm_until: Instant,
    /// The probe's slot of the phase's time series.
    series: Slot,
    /// The batches a probe included first, and their recorded lags: reused from probe to
    /// probe.
    included: Vec<(Instant, Instant)>,
    lags: Vec<Duration>,
}

async fn probe(
    stop: Arc<AtomicBool>,
    mut count: Visibility,
    every: Duration,
    (timeline, series): (Arc<Timeline>, Slot),
    mut ended: oneshot::Receiver<u64>,
    mut fresh: Freshness,
) -> Freshness {
    let start = tokio::select! {
        _ = timeline.started.notified() => timeline.lock().start,
        // Sending ended before it began (a failed connection): nothing to probe.
        _ = &mut ended => None,
    };
    let Some(start) = start else {
        return fresh;
    };
    let mut tally = Tally {
        lag: new_histogram(),
        own: new_histogram(),
        answered: 0,
        warm_until: start + Duration::from_secs_f64(fresh.warmup_s),
        series,
        included: Vec::new(),
        lags: Vec::new(),
    };
    let mut tick = tokio::time::interval_at((start + every).into(), every);
    // A probe slower than its interval delays the next one rather than bunching them.
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // After the end: the rows that must show, the end of sending, the last moment to probe.
    let mut after: Option<(u64, Instant, Instant)> = None;
    // The first of the latest probes that saw every row sent before it: (its send time, the
    // rows sent then). If no row was sent after it, everything was visible from that probe on.
    let mut full: Option<(Instant, u64)> = None;
    loop {
        if after.is_none() {
            tokio::select! {
                _ = tick.tick() => {}
                target = &mut ended => {
                    let now = Instant::now();
                    let target = target.unwrap_or_else(|_| timeline.total());
                    let end = timeline.last_sent().unwrap_or(now);
                    after = Some((target, end, now + count.within));
                    if let Some((at, sent_then)) = full {
                        if sent_then >= timeline.total() && sent_then >= target {
                            fresh.all_visible_after_s =
                                Some(at.saturating_duration_since(end).as_secs_f64());
                            break;
                        }
                    }
                    // A probe goes now; the next one interval after it.
                    tick.reset();
                }
            }
        } else {
            tick.tick().await;
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let Some((at, sent_then, visible)) =
            one_probe(&mut count, &timeline, start, &mut tally, &mut fresh).await
        else {
            if after.is_some_and(|(_, _, until)| Instant::now() >= until) {
                break;
            }
            continue;
        };
        match full {
            Some((_, n)) if n == sent_then && visible >= sent_then => {}
            _ => full = (visible >= sent_then).then_some((at, sent_then)),
        }
        if let Some((target, end, until)) = after {
            if visible >= target {
                fresh.all_visible_after_s = Some(at.saturating_duration_since(end).as_secs_f64());
                break;
            }
            if Instant::now() >= until {
                break;
            }
        }
    }
    fresh.rows_target = after.map_or(timeline.total(), |(t, _, _)| t);
    fresh.lag = Latency::of(&tally.lag);
    fresh.probe_latency = Latency::of(&tally.own);
    fresh
}

/// One count: `Some((its send time, the rows sent by then, the rows it saw))` when it
/// answered. A fatal error (the
/// connection is gone) ends nothing here: the next probe tries again and fails the same way,
/// each counted.
async fn one_probe(
    count: &mut Visibility,
    timeline: &Timeline,
    start: Instant,
    tally: &mut Tally,
    fresh: &mut Freshness,
) -> Option<(Instant, u64, u64)> {
    let sent_then = timeline.total();
    let at = Instant::now();
    let answer = count.count_now().await;
    tally.own.saturating_record(micros(at.elapsed()));
    fresh.probes_sent += 1;
    let visible = match answer {
        Ok(v) => v,
        Err(e) => {
            fresh.probes_failed += 1;
            fresh.first_error.get_or_insert_with(|| e.to_string());
            tally.series.probe_failed(Instant::now());
            return None;
        }
    };
    fresh.last_visible = Some(visible);
    if visible > 0 && visible >= sent_then {
        fresh.probes_caught_up += 1;
    }
    if visible == 0 {
        fresh.probes_empty += 1;
    } else if at < tally.warm_until {
        fresh.probes_warmup += 1;
    }
    timeline.newly_included(at, visible, &mut tally.included);
    tally.lags.clear();
    // The oldest batch this answer sampled: the probe's point in `samples`.
    let mut oldest: Option<Duration> = None;
    for &(mark, by) in &tally.included {
        let lag = if by >= mark {
            by - mark
        } else {
            // Seen by a probe sent before the batch's send began (a count taken late in the
            // probe's flight, or workers' batches shown out of their marks' order): impossible
            // as a lag.
            fresh.lag_clamped += 1;
            Duration::ZERO
        };
        oldest = oldest.max(Some(lag));
        if by >= tally.warm_until {
            tally.lag.saturating_record(micros(lag));
            tally.lags.push(lag);
        }
    }
    // In the series the batches count where the answer that saw them arrived, as a query's
    // answer does; a warm-up's lag is left out there as in `lag`.
    tally
        .series
        .probe_answered(Instant::now(), visible, &tally.lags);
    fresh.keep(
        tally.answered,
        FreshSample {
            t_s: at.saturating_duration_since(start).as_secs_f64(),
            sent: sent_then,
            visible,
            batches: tally.included.len() as u64,
            lag_s: oldest.map(|l| l.as_secs_f64()),
        },
    );
    tally.answered += 1;
    Some((at, sent_then, visible))
}

/// The probe's verdict, after the phase's: rows that never showed fail the phase, as
/// `verify visible`'s do; probe errors never touch the rows' figures, but a probe that failed
/// more often than it answered measured no lag worth reading, and fails the phase too.
pub(super) fn judge(report: &mut IngestReport, interrupted: bool) {
    let Some(f) = &report.freshness else {
        return;
    };
    let mut failures = Vec::new();
    let mut warnings = Vec::new();
    if f.probes_failed > 0 {
        let line = format!(
            "probe visible: {} of {} probes failed (first: {})",
            thousands(f.probes_failed),
            thousands(f.probes_sent),
            f.first_error.as_deref().unwrap_or("-")
        );
        if 2 * f.probes_failed > f.probes_sent {
            failures.push(format!(
                "{line}: more than half, the lag figures do not describe the phase"
            ));
        } else {
            warnings.push(line);
        }
    }
    if f.all_visible_after_s.is_none() && f.probes_sent > 0 && !interrupted && report.rows_sent > 0
    {
        let what = if report.rows_acked.is_some() {
            "acknowledged"
        } else {
            "sent"
        };
        failures.push(format!(
            "probe visible: {} rows {what} but not all visible within {:.1}s after sending ended: the probe's last count reached {} of {}",
            thousands(f.rows_target.saturating_sub(f.last_visible.unwrap_or(0))),
            f.within_s,
            f.last_visible.map_or("-".into(), thousands),
            thousands(f.rows_target)
        ));
    }
    if f.probes_sent == 0 && !interrupted && report.rows_sent > 0 {
        failures.push(format!(
            "probe visible: no probe was sent{}",
            f.first_error
                .as_ref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        ));
    }
    report.warnings.extend(warnings);
    if !failures.is_empty() {
        report.failures.extend(failures);
        if report.status == Status::Ok {
            report.status = Status::Failed;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn each_batch_is_sampled_once_by_the_first_count_that_includes_it() {
        let t0 = Instant::now();
        let timeline = Timeline::new();
        timeline.sent(t0, 100);
        timeline.sent(t0 + ms(500), 100);
        timeline.sent(t0 + ms(1000), 100);
        let mut out = Vec::new();
        // Half of the second batch shows: only the first is included.
        timeline.newly_included(t0 + ms(600), 150, &mut out);
        assert_eq!(out, [(t0, t0 + ms(600))]);
        // The server caught up with nothing new: no sample, however old the last batch is.
        timeline.newly_included(t0 + ms(650), 150, &mut out);
        assert!(out.is_empty());
        timeline.newly_included(t0 + ms(1100), 300, &mut out);
        assert_eq!(
            out,
            [
                (t0 + ms(500), t0 + ms(1100)),
                (t0 + ms(1000), t0 + ms(1100))
            ]
        );
        for (at, visible) in [(1150, 300), (1200, 250)] {
            timeline.newly_included(t0 + ms(at), visible, &mut out);
            assert!(out.is_empty(), "{visible} at {at} ms: {out:?}");
        }
        // Seen batches are dropped; the last one's moment stays for `all_visible_after`.
        assert!(timeline.lock().unseen.is_empty());
        assert_eq!(timeline.last_sent(), Some(t0 + ms(1000)));
    }

    #[test]
    fn a_batch_counted_before_its_mark_belongs_to_the_probe_that_counted_it() {
        let t0 = Instant::now();
        let timeline = Timeline::new();
        timeline.sent(t0, 100);
        let mut out = Vec::new();
        // The probe at 300 ms counts a second batch whose send has not returned yet.
        timeline.newly_included(t0 + ms(300), 200, &mut out);
        assert_eq!(out, [(t0, t0 + ms(300))]);
        timeline.sent(t0 + ms(250), 100);
        // The next probe, even one whose count went back, gives it to the probe at 300 ms.
        timeline.newly_included(t0 + ms(350), 150, &mut out);
        assert_eq!(out, [(t0 + ms(250), t0 + ms(300))]);
        assert!(timeline.lock().ahead.is_empty());
        timeline.sent(t0 + ms(400), 100);
        timeline.newly_included(t0 + ms(450), 300, &mut out);
        assert_eq!(out, [(t0 + ms(400), t0 + ms(450))]);
    }
}
