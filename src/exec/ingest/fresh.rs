//! `probe visible every I`: while an ingest sends, a probe of its own (a task and a
//! connection, so it never holds a worker up) counts the phase's visible rows every I, and each
//! answer is set against the timeline of rows sent: a probe sent at `t` that sees V rows gives
//! the lag `t - (the moment the V-th row had been sent)`. After sending ends it goes on until
//! every row the phase must show is visible, or `within` passes.
//!
//! The lag is taken at the probe's send time: the count describes the server at some moment
//! between the probe's send and its answer, and the send time charges none of the probe's own
//! latency to the server. The V-th row became visible after the previous probe's count and
//! before this one's answer, so a sample errs by at most one interval plus the probe's latency.

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
/// a few instructions; marks the probe no longer needs are dropped as it goes, so the timeline
/// holds the batches not yet seen visible, not the whole phase.
pub(super) struct Timeline {
    marks: Mutex<Marks>,
    started: Notify,
}

#[derive(Default)]
struct Marks {
    /// The phase's start (its first send slot): what sample times are offsets from.
    start: Option<Instant>,
    total: u64,
    /// `(moment, rows sent by then)`, both non-decreasing; never emptied once pushed to, so
    /// the last is always the last batch's.
    sent: VecDeque<(Instant, u64)>,
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
        let mut m = self.lock();
        m.total += rows;
        // Workers race to the lock: a mark never goes back in time.
        let at = m.sent.back().map_or(at, |&(last, _)| last.max(at));
        let total = m.total;
        m.sent.push_back((at, total));
    }

    fn total(&self) -> u64 {
        self.lock().total
    }

    fn last_sent(&self) -> Option<Instant> {
        self.lock().sent.back().map(|&(t, _)| t)
    }

    /// When the `v`-th row had been sent (`v` >= 1), `None` if fewer rows were ever sent.
    /// Marks wholly before it are dropped: a later probe sees at least as many rows (a count
    /// that went back would find a later moment, a smaller lag).
    fn moment_of(&self, v: u64) -> Option<Instant> {
        let mut m = self.lock();
        while m.sent.len() > 1 && m.sent[0].1 < v {
            m.sent.pop_front();
        }
        m.sent.front().filter(|&&(_, c)| c >= v).map(|&(t, _)| t)
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
    /// The end of a search step's warm-up: lags of probes sent before it are not recorded.
    warm_until: Instant,
    /// The probe's slot of the phase's time series.
    series: Slot,
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
    let lag = if visible == 0 {
        fresh.probes_empty += 1;
        None
    } else {
        let lag = match timeline.moment_of(visible) {
            Some(sent) if sent <= at => at - sent,
            // Seen before it was recorded as sent (the server read the batch before the write
            // returned), or more rows than were ever sent: impossible as a lag.
            _ => {
                fresh.lag_clamped += 1;
                Duration::ZERO
            }
        };
        if at < tally.warm_until {
            fresh.probes_warmup += 1;
        } else {
            tally.lag.saturating_record(micros(lag));
        }
        Some(lag)
    };
    // In the series the probe counts where its answer arrived, as a query's answer does; a
    // warm-up's lag is left out there as in `lag`.
    let measured = lag.filter(|_| at >= tally.warm_until);
    tally
        .series
        .probe_answered(Instant::now(), visible, measured);
    fresh.keep(
        tally.answered,
        FreshSample {
            t_s: at.saturating_duration_since(start).as_secs_f64(),
            sent: sent_then,
            visible,
            lag_s: lag.map(|l| l.as_secs_f64()),
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
