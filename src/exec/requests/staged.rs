//! A staged request run: one round per stage on the pool's connections (`exec::stages` has
//! the model). The connections a stage does not use sit it out with their sockets closed, so
//! the server sees the stage's connection count.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::pool::Pool;
use super::worker::{Feed, RoundCtl, Worker};
use crate::exec::series::Recorder;
use crate::exec::slots::Schedule;
use crate::exec::stages::{Stage, StageCtl, Staged};

/// A connection's round: with a stage, only if the stage uses it, and with its measurements
/// of the stage handed to the stage as well as kept in its own.
pub(super) async fn round(mut w: Worker, feed: Feed, ctl: RoundCtl) -> Worker {
    let Some(stage) = ctl.stage.clone() else {
        return w.round(feed, ctl).await;
    };
    if w.id >= stage.active {
        w.close();
        return w;
    }
    let stats = std::mem::take(&mut w.stats);
    let sends = std::mem::take(&mut w.sends);
    let mut w = w.round(feed, ctl).await;
    stage.add([&w.stats], &w.sends);
    let own_stats = std::mem::replace(&mut w.stats, stats);
    let own_sends = std::mem::replace(&mut w.sends, sends);
    w.stats.merge(&own_stats);
    w.sends.merge(&own_sends);
    w
}

/// Runs the stages one after another; `ctl(start, end)` is a measured round's control.
pub(super) async fn run(
    pool: &Pool,
    stages: &[Stage],
    seed: u64,
    series: &Recorder,
    halted: impl Fn() -> bool,
    ctl: impl Fn(Instant, Option<Instant>) -> RoundCtl,
) -> Staged {
    let mut out = Staged::default();
    for stage in stages {
        if halted() {
            break;
        }
        let start = out.next_start().await;
        let end = start + stage.duration;
        let measure_from = start + stage.warmup;
        let shared = Arc::new(StageCtl::new(measure_from, stage.workers));
        let schedule = stage.arrivals(seed).map(|a| {
            Arc::new(Mutex::new(Schedule::new(
                a,
                start,
                Some(stage.duration),
                None,
            )))
        });
        let feed = match &schedule {
            Some(s) => Feed::Slots(s.clone()),
            None => Feed::Counter {
                next: Arc::new(AtomicU64::new(0)),
                base: 0,
                end: None,
                // Stages are refused under shards.
                stride: (0, 1),
            },
        };
        let round_ctl = RoundCtl {
            stage: Some(shared.clone()),
            ..ctl(start, Some(end))
        };
        series.stage(start, stage.number);
        series.measure(measure_from);
        // The pool bounds what was due by a group's end (`concurrent ... until P`), as for any
        // round.
        let due = pool.round(feed, None, round_ctl).await;
        let ended = Instant::now();
        series.pause(ended);
        let (stats, sends, warm_sent) = shared.take();
        let warm = schedule
            .as_ref()
            .and_then(|s| s.lock().ok().map(|s| s.scheduled(measure_from)));
        let (scheduled, warm) = match (due, warm) {
            (Some(due), Some(warm)) if stage.rate.is_some() => (due.saturating_sub(warm), warm),
            _ => (sends.sent, warm_sent),
        };
        out.record(stage, start, ended, (stats, sends), scheduled, warm);
    }
    out
}
