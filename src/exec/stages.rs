//! The stages of a staged query or request run: what each asks for (span, load, connections,
//! warm-up), how a round knows it is measuring a stage, and the stage's own figures.
//!
//! Stages run back to back as one round each: a stage's schedule starts when the previous
//! stage's in-flight work has drained, so that work belongs to the stage that scheduled it and
//! nothing is cut off at a boundary (the drain is reported as the next stage's
//! `gap_before_s`). A stage's warm-up is the first part of its own schedule: sent as
//! scheduled, not counted, so the schedule stays continuous through it. Each runner measures a
//! stage with `Stage` and `StageCtl` and reports it with `report`; `find max rate` can measure
//! its steps the same way.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::account::{self, Sends, DEFAULT_FLOOR};
use crate::plan::{Load, StagePlan, Threshold};
use crate::query::ramp::Ramp;
use crate::query::schedule::Arrivals;
use crate::query::stats::TypeStats;
use crate::report::stages::StageReport;
use crate::report::Latency;
use crate::value::Value;

/// One stage, read off the plan.
#[derive(Clone, Debug)]
pub(super) struct Stage {
    /// From 1.
    pub number: u64,
    pub duration: Duration,
    pub warmup: Duration,
    pub workers: usize,
    /// Open loop: the rate at the start and at the end (equal but for a ramp), and Poisson.
    pub rate: Option<(f64, f64, bool)>,
}

impl Stage {
    pub fn all(plans: &[StagePlan]) -> Vec<Stage> {
        plans
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let rate = match &p.load {
                    Load::Open {
                        rate: Value::Rate(r),
                        arrival,
                    } => {
                        let to = match p.ramp_to {
                            Some(Value::Rate(t)) => t,
                            _ => *r,
                        };
                        Some((*r, to, arrival == "poisson"))
                    }
                    _ => None,
                };
                Stage {
                    number: i as u64 + 1,
                    duration: nanos(&p.duration),
                    warmup: p.warmup.as_ref().map_or(Duration::ZERO, nanos),
                    workers: p.workers.max(1) as usize,
                    rate,
                }
            })
            .collect()
    }

    /// The most connections any stage uses: the runner opens that many workers once.
    pub fn max_workers(stages: &[Stage]) -> usize {
        stages.iter().map(|s| s.workers).max().unwrap_or(1)
    }

    /// The stage's arrivals (open loop): fixed or Poisson at a steady rate, or fixed along a
    /// ramp. Each stage draws Poisson gaps from a seed of its own.
    pub fn arrivals(&self, seed: u64) -> Option<Arrivals> {
        let (from, to, poisson) = self.rate?;
        if (from - to).abs() > f64::EPSILON {
            return Some(Arrivals::ramp(
                seed,
                Ramp {
                    from,
                    to,
                    span_s: self.duration.as_secs_f64(),
                },
            ));
        }
        let load = Load::Open {
            rate: Value::Rate(from),
            arrival: if poisson { "poisson" } else { "fixed" }.into(),
        };
        Arrivals::new(&load, seed.wrapping_add(self.number))
    }

    fn load_text(&self) -> String {
        match self.rate {
            None => "closed".into(),
            Some((from, to, poisson)) => {
                let arrival = if poisson { "poisson" } else { "fixed" };
                if (from - to).abs() > f64::EPSILON {
                    format!(
                        "open {} to {} {arrival}",
                        Value::Rate(from),
                        Value::Rate(to)
                    )
                } else {
                    format!("open {} {arrival}", Value::Rate(from))
                }
            }
        }
    }
}

fn nanos(v: &Value) -> Duration {
    match v {
        Value::Duration(ns) => Duration::from_nanos((*ns).max(0) as u64),
        _ => Duration::ZERO,
    }
}

/// What a round measuring a stage shares with its workers: which of them take part, from when
/// a send counts, and where each worker leaves its part of the stage's figures.
pub(super) struct StageCtl {
    /// Sends intended (open loop) or started (closed loop) before this are the warm-up's.
    pub measure_from: Instant,
    /// Workers with an id from this up sit the stage out, their connections closed.
    pub active: usize,
    warm: AtomicU64,
    tally: Mutex<(TypeStats, Sends)>,
}

impl StageCtl {
    pub fn new(measure_from: Instant, active: usize) -> StageCtl {
        StageCtl {
            measure_from,
            active,
            warm: AtomicU64::new(0),
            tally: Mutex::new((TypeStats::default(), Sends::default())),
        }
    }

    /// Whether a send at `at` counts; a warm-up send is counted as such.
    pub fn counts(&self, at: Instant) -> bool {
        let counts = at >= self.measure_from;
        if !counts {
            self.warm.fetch_add(1, Ordering::Relaxed);
        }
        counts
    }

    /// A worker's measurements of this stage.
    pub fn add<'a>(&self, stats: impl IntoIterator<Item = &'a TypeStats>, sends: &Sends) {
        if let Ok(mut t) = self.tally.lock() {
            for s in stats {
                t.0.merge(s);
            }
            t.1.merge(sends);
        }
    }

    /// The stage's measurements, and how many warm-up sends it left out.
    pub fn take(&self) -> (TypeStats, Sends, u64) {
        let (stats, sends) = self
            .tally
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default();
        (stats, sends, self.warm.load(Ordering::Relaxed))
    }
}

/// Where a stage sat in the run and what it measured.
struct Measured {
    pub stats: TypeStats,
    pub sends: Sends,
    /// Open loop: slots due after the warm-up; closed loop: what was sent after it.
    pub scheduled: u64,
    /// Open loop: slots due in the warm-up; closed loop: sends started in it.
    pub warm: u64,
    pub start_s: f64,
    pub gap_before_s: f64,
    pub span_s: f64,
}

/// What the stages did together.
#[derive(Default)]
pub(super) struct Staged {
    /// Each stage and what it measured, made into reports by `reports` once the run is over
    /// (a report's histograms are compressed: not between two stages).
    measured: Vec<(Stage, Measured)>,
    /// Units scheduled after the stages' warm-ups, all stages.
    pub scheduled: u64,
    /// Answers counted, and the measured spans, all stages.
    pub answered: u64,
    pub span: std::time::Duration,
    pub last_end: Option<Instant>,
    first: Option<Instant>,
    /// Where the previous stage's schedule ended.
    sends_ended: Option<Instant>,
}

impl Staged {
    /// A stage whose schedule began at `start` ended (drained) at `ended`, having measured
    /// `stats` and `sends` after its warm-up; `scheduled` and `warm` as in `Measured`.
    pub fn record(
        &mut self,
        stage: &Stage,
        start: Instant,
        ended: Instant,
        (stats, sends): (TypeStats, Sends),
        scheduled: u64,
        warm: u64,
    ) {
        let first = *self.first.get_or_insert(start);
        let span = ended.saturating_duration_since(start + stage.warmup);
        let m = Measured {
            stats,
            sends,
            scheduled,
            warm,
            start_s: start.duration_since(first).as_secs_f64(),
            gap_before_s: self
                .sends_ended
                .map_or(0.0, |p| start.saturating_duration_since(p).as_secs_f64()),
            span_s: span.as_secs_f64(),
        };
        self.answered += m.stats.ok + m.stats.failed();
        self.measured.push((stage.clone(), m));
        self.scheduled += scheduled;
        self.span += span;
        self.last_end = Some(ended);
        self.sends_ended = Some(start + stage.duration);
    }

    /// Waits until the previous stage's schedule is over: a stage whose last answer came
    /// before its end (the last slot is due a little before it) must not start the next early.
    pub async fn next_start(&self) -> Instant {
        if let Some(end) = self.sends_ended {
            tokio::time::sleep_until(end.into()).await;
        }
        Instant::now()
    }

    /// The stages' reports.
    pub fn reports(&self) -> Vec<StageReport> {
        self.measured.iter().map(|(s, m)| report(s, m)).collect()
    }
}

/// A stage's report; its accounting identity holds on its own.
fn report(stage: &Stage, m: &Measured) -> StageReport {
    let open = stage.rate.is_some();
    let ok = m.stats.ok;
    let failed = m.stats.failed();
    let accounting =
        account::accounting(m.scheduled, (ok, m.stats.not_found, failed), &m.sends, open);
    StageReport {
        stage: stage.number,
        start_s: m.start_s,
        gap_before_s: m.gap_before_s,
        duration_s: stage.duration.as_secs_f64(),
        warmup_s: stage.warmup.as_secs_f64(),
        span_s: m.span_s,
        load: stage.load_text(),
        rate_from: stage.rate.map(|r| r.0),
        rate_to: stage.rate.map(|r| r.1),
        workers: stage.workers as u64,
        ok,
        failed,
        kept_schedule: accounting.achieved_rate.map(|a| a >= DEFAULT_FLOOR),
        accounting,
        ok_per_s: crate::report::rate(ok, m.span_s),
        error_rate: m.stats.error_rate(),
        latency: Latency::of(&m.stats.latency),
        service: open.then(|| Latency::of(&m.stats.service)),
        warmup_excluded: m.warm,
    }
}

/// The stages that did not keep their schedule, as failure lines; none when the workload
/// judges the run's `achieved_rate` itself (on the totals).
pub(super) fn schedule_failures(
    stages: &[StageReport],
    expects: &[Threshold],
    unit: &str,
) -> Vec<String> {
    if expects.iter().any(|t| t.metric == "achieved_rate") {
        return Vec::new();
    }
    stages
        .iter()
        .filter(|s| s.kept_schedule == Some(false))
        .map(|s| {
            format!(
                "stage {} ({}) sent {} of {} scheduled {unit} ({:.1}%): every stage must keep its schedule",
                s.stage,
                s.load,
                crate::plan::thousands(s.accounting.scheduled - s.accounting.unsent),
                crate::plan::thousands(s.accounting.scheduled),
                s.accounting.achieved_rate.unwrap_or(0.0) * 100.0
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::slots::Schedule;

    fn plan(secs: i64, rate: Option<(f64, f64)>, workers: u64, warmup_ms: i64) -> StagePlan {
        StagePlan {
            duration: Value::Duration(secs * 1_000_000_000),
            load: match rate {
                Some((r, _)) => Load::Open {
                    rate: Value::Rate(r),
                    arrival: "fixed".into(),
                },
                None => Load::Closed,
            },
            ramp_to: rate.filter(|(a, b)| a != b).map(|(_, b)| Value::Rate(b)),
            workers,
            warmup: (warmup_ms > 0).then(|| Value::Duration(warmup_ms * 1_000_000)),
        }
    }

    #[test]
    fn steps_and_ramps_schedule_their_rate_times_their_span() {
        let stages = Stage::all(&[
            plan(2, Some((200.0, 200.0)), 4, 0),
            plan(2, Some((200.0, 1000.0)), 4, 0),
            plan(3, None, 7, 0),
        ]);
        assert_eq!(Stage::max_workers(&stages), 7);
        let t0 = Instant::now();
        let due = |s: &Stage| {
            let sched = Schedule::new(s.arrivals(1).unwrap(), t0, Some(s.duration), None);
            sched.scheduled(t0 + Duration::from_secs(60))
        };
        assert_eq!(due(&stages[0]), 400);
        assert_eq!(due(&stages[1]), 1200);
        assert!(stages[2].arrivals(1).is_none());
        assert_eq!(stages[1].load_text(), "open 200/s to 1000/s fixed");
        assert_eq!(stages[2].load_text(), "closed");
    }

    #[test]
    fn a_stage_leaves_its_warm_up_out_and_keeps_its_accounting() {
        let stage = &Stage::all(&[plan(1, Some((100.0, 100.0)), 2, 250)])[0];
        let t0 = Instant::now();
        let ctl = StageCtl::new(t0 + stage.warmup, stage.workers);
        assert!(!ctl.counts(t0));
        assert!(!ctl.counts(t0 + Duration::from_millis(240)));
        assert!(ctl.counts(t0 + Duration::from_millis(250)));
        let mut stats = TypeStats::default();
        let mut sends = Sends::default();
        for _ in 0..70 {
            sends.start(t0, Some(t0));
            stats.record_ok(Duration::from_millis(1), Some(Duration::from_millis(1)), 1);
        }
        sends.start(t0, Some(t0));
        sends.cut_off += 1;
        ctl.add([&stats], &sends);
        let (stats, sends, warm) = ctl.take();
        assert_eq!(warm, 2);
        let mut staged = Staged::default();
        // 73 slots due after the warm-up: 70 answered, 1 cut off, 2 never sent (97%).
        let ended = t0 + Duration::from_millis(1100);
        staged.record(stage, t0, ended, (stats, sends), 73, 25);
        let reports = staged.reports();
        let r = &reports[0];
        assert_eq!((r.ok, r.failed, r.accounting.cut_off), (70, 0, 1));
        assert_eq!(r.accounting.unsent, 2);
        assert_eq!(r.accounting.scheduled, 73);
        assert_eq!(r.kept_schedule, Some(true));
        assert_eq!(r.warmup_excluded, 25);
        assert!((r.span_s - 0.85).abs() < 1e-9, "{}", r.span_s);
        assert_eq!(staged.scheduled, 73);
        assert_eq!(staged.answered, 70);
        let failures = schedule_failures(&reports, &[], "requests");
        assert!(failures.is_empty(), "{failures:?}");
        // A second stage that sent 71 of 100: it did not keep its schedule, and the run fails
        // for it unless the workload judges `achieved_rate` itself.
        let (stats, sends, _) = {
            let again = StageCtl::new(t0, 2);
            let mut s = TypeStats::default();
            s.record_ok(Duration::from_millis(1), None, 1);
            let mut d = Sends::default();
            d.start(t0, Some(t0));
            again.add([&s], &d);
            again.take()
        };
        let second = Stage {
            number: 2,
            ..stage.clone()
        };
        staged.record(
            &second,
            ended,
            ended + stage.duration,
            (stats, sends),
            100,
            25,
        );
        let reports = staged.reports();
        assert_eq!(reports[1].kept_schedule, Some(false));
        assert_eq!(reports[1].accounting.unsent, 99);
        assert_eq!(reports[1].gap_before_s, 0.1);
        let failures = schedule_failures(&reports, &[], "requests");
        assert_eq!(failures.len(), 1);
        assert!(
            failures[0].starts_with("stage 2 (open 100/s fixed) sent 1 of 100"),
            "{failures:?}"
        );
        let own = crate::plan::Threshold {
            metric: "achieved_rate".into(),
            op: ">".into(),
            value: Value::Float(0.5),
        };
        assert!(schedule_failures(&reports, &[own], "requests").is_empty());
    }
}
