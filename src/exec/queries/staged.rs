//! A staged query run: one round per stage (`exec::stages` has the model). The workers a
//! stage does not use sit it out with their connections closed, so the server sees the
//! stage's connection count.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::worker::{Record, Worker};
use super::{round as plain_round, Ended, Round};
use crate::exec::progress::RunCounts;
use crate::exec::series::Recorder;
use crate::exec::stages::{Stage, StageCtl, Staged};
use crate::query::stats::TypeStats;

/// A round: with a stage, on the workers the stage uses, each handing the stage its
/// measurements of it as well as keeping them.
pub(super) async fn round(
    workers: Vec<Worker>,
    routed: bool,
    record: Record,
    r: Round<'_>,
    counts: &Arc<RunCounts>,
) -> (Vec<Worker>, Ended) {
    let Some(stage) = r.stage.clone() else {
        return plain_round(workers, routed, record, r, counts).await;
    };
    let (mut active, mut idle): (Vec<Worker>, Vec<Worker>) =
        workers.into_iter().partition(|w| w.id < stage.active);
    for w in &mut idle {
        w.link.conn = None;
    }
    let mut saved = BTreeMap::new();
    for w in &mut active {
        let fresh = vec![TypeStats::default(); w.stats.len()];
        saved.insert(
            w.id,
            (
                std::mem::replace(&mut w.stats, fresh),
                std::mem::take(&mut w.sends),
            ),
        );
    }
    let (mut back, ended) = plain_round(active, routed, record, r, counts).await;
    for w in &mut back {
        stage.add(&w.stats, &w.sends);
        if let Some((mut stats, mut sends)) = saved.remove(&w.id) {
            for (own, s) in stats.iter_mut().zip(&w.stats) {
                own.merge(s);
            }
            sends.merge(&w.sends);
            w.stats = stats;
            w.sends = sends;
        }
    }
    back.extend(idle);
    back.sort_by_key(|w| w.id);
    (back, ended)
}

/// Runs the stages one after another; `base` is a measured round of the run (its order, and
/// its error limit), which each stage gives its own load, span and warm-up.
pub(super) async fn run<'a>(
    mut workers: Vec<Worker>,
    routed: bool,
    stages: &[Stage],
    base: impl Fn() -> Round<'a>,
    first_record: Record,
    counts: &Arc<RunCounts>,
    series: &Recorder,
) -> (Vec<Worker>, Staged, Vec<String>) {
    let mut out = Staged::default();
    let mut errors = Vec::new();
    for (i, stage) in stages.iter().enumerate() {
        let b = base();
        // A group's end (`concurrent ... until P`) ends the staged run as its last stage would.
        if b.env.stop.load(Ordering::Relaxed) || b.abort.load(Ordering::Relaxed) || b.group.ended()
        {
            break;
        }
        let start = out.next_start().await;
        let measure_from = start + stage.warmup;
        let shared = Arc::new(StageCtl::new(measure_from, stage.workers));
        let r = Round {
            arrivals: stage.arrivals(b.env.seed),
            span: Some(stage.duration),
            stage: Some(shared.clone()),
            start: Some(start),
            ..b
        };
        let record = if i == 0 {
            first_record
        } else {
            Record::Measure
        };
        series.stage(start, stage.number);
        series.measure(measure_from);
        let (back, ended) = round(workers, routed, record, r, counts).await;
        let end = Instant::now();
        series.pause(end);
        workers = back;
        errors.extend(ended.errors);
        let (stats, sends, warm_sent) = shared.take();
        let (scheduled, warm) = match ended.scheduled {
            // Open loop: the schedule's own count; closed loop: what was sent after the warm-up.
            Some(n) if stage.rate.is_some() => (n, ended.warm),
            _ => (sends.sent, warm_sent),
        };
        out.record(stage, start, end, (stats, sends), scheduled, warm);
    }
    (workers, out, errors)
}
