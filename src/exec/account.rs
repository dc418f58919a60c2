//! Where every scheduled query or request of a run went, shared by both runners: each worker
//! counts its sends (how late each left, which were cut off), the phase adds them up with what
//! the schedule held, and judges the achieved rate.
//!
//! A phase ends hard: no send starts after its span (duration, or an open-loop schedule's end),
//! and what is still in flight `STOP_GRACE` later is cut off — counted as such and never as
//! throughput — so a server that stops answering cannot stretch a 3 s run to a 60 s timeout.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::STOP_GRACE;
use crate::plan::{Load, Stop, Threshold};
use crate::query::stats::{histogram, micros};
use crate::report::{Accounting, Latency, ThresholdReport};
use crate::value::Value;

/// A send later than this after its intended time is late (the one definition, in the report
/// format too).
pub const LATE: Duration = Duration::from_millis(1);

/// The achieved rate an open-loop run needs unless it sets its own `expect achieved_rate`.
pub const DEFAULT_FLOOR: f64 = 0.95;

/// How often a wait in flight looks at the stop flag.
const POLL: Duration = Duration::from_millis(50);

/// One worker's sends in the measured rounds.
#[derive(Clone, Debug)]
pub struct Sends {
    /// Sends that started (answered, failed or cut off).
    pub sent: u64,
    pub cut_off: u64,
    pub late: u64,
    /// Open loop: actual minus intended send time, microseconds.
    pub lag: Histogram<u64>,
}

impl Default for Sends {
    fn default() -> Self {
        Sends {
            sent: 0,
            cut_off: 0,
            late: 0,
            lag: histogram(),
        }
    }
}

impl Sends {
    /// A send starting now; `intended` in open loop.
    pub fn start(&mut self, now: Instant, intended: Option<Instant>) {
        self.sent += 1;
        if let Some(at) = intended {
            let lag = now.saturating_duration_since(at);
            if lag > LATE {
                self.late += 1;
            }
            // Below a microsecond records as one: the histogram's floor.
            self.lag.saturating_record(micros(lag));
        }
    }

    pub fn merge(&mut self, other: &Sends) {
        self.sent += other.sent;
        self.cut_off += other.cut_off;
        self.late += other.late;
        let _ = self.lag.add(&other.lag);
    }
}

/// When the work in flight of a round is cut off: `STOP_GRACE` after the round's end, or after
/// a stop (Ctrl-C), whichever comes first.
#[derive(Clone)]
pub struct Cutoff {
    pub at: Option<Instant>,
    pub stop: Arc<AtomicBool>,
    /// A group's end (`until P`): cut off `STOP_GRACE` after it too.
    pub end: super::end::End,
}

impl Cutoff {
    /// A round whose sends end at `end` (`None`: it ends with its count).
    pub fn after(end: Option<Instant>, stop: Arc<AtomicBool>) -> Cutoff {
        Cutoff {
            at: end.map(|e| e + STOP_GRACE),
            stop,
            end: Default::default(),
        }
    }

    /// The same, also ended by a group's `end`.
    pub fn ending(mut self, end: &super::end::End) -> Cutoff {
        self.end = end.clone();
        self
    }

    /// `f`'s output, or `None` when it was cut off first.
    pub async fn bound<F: Future>(&self, f: F) -> Option<F::Output> {
        tokio::pin!(f);
        let mut hard = self.at;
        loop {
            let now = Instant::now();
            if self.stop.load(Ordering::Relaxed) {
                let by_stop = now + STOP_GRACE;
                hard = Some(hard.map_or(by_stop, |h| h.min(by_stop)));
            }
            if let Some(e) = self.end.at() {
                let by_end = e + STOP_GRACE;
                hard = Some(hard.map_or(by_end, |h| h.min(by_end)));
            }
            let wake = match hard {
                Some(h) if h <= now => return None,
                Some(h) => h.min(now + POLL),
                None => now + POLL,
            };
            tokio::select! {
                biased;
                out = &mut f => return Some(out),
                _ = tokio::time::sleep_until(wake.into()) => {}
            }
        }
    }
}

/// The phase's accounting from its counts: `scheduled` from the schedules (open loop) or the
/// counts (closed loop), `ok`, `not_found` and `failed` from the answers, the rest from the
/// sends.
pub fn accounting(
    scheduled: u64,
    (ok, not_found, failed): (u64, u64, u64),
    sends: &Sends,
    open: bool,
) -> Accounting {
    let sent = ok + not_found + failed + sends.cut_off;
    // The schedule counts every slot due in the span and sends only start inside it, so this
    // never goes below zero; if it ever did, the larger figure is the honest one.
    let scheduled = scheduled.max(sent);
    Accounting {
        scheduled,
        not_found,
        cut_off: sends.cut_off,
        unsent: scheduled - sent,
        achieved_rate: open.then(|| {
            if scheduled == 0 {
                1.0
            } else {
                sent as f64 / scheduled as f64
            }
        }),
        late: sends.late,
        late_share: (open && sent > 0).then(|| sends.late as f64 / sent as f64),
        send_lag: open.then(|| Latency::of(&sends.lag)),
    }
}

/// The achieved rate against the workload's `expect achieved_rate` (judged there) or the
/// default floor: a failure line when it falls short. `unit`: `queries` or `requests`.
pub fn rate_failure(a: &Accounting, expects: &[Threshold], unit: &str) -> Option<String> {
    let achieved = a.achieved_rate?;
    let own = expects.iter().any(|t| t.metric == "achieved_rate");
    (!own && achieved < DEFAULT_FLOOR).then(|| {
        format!(
            "reached {} of {} scheduled {unit} ({:.1}%; an open-loop run needs {:.0}% unless it sets `expect achieved_rate`)",
            crate::plan::thousands(a.scheduled - a.unsent),
            crate::plan::thousands(a.scheduled),
            100.0 * achieved,
            100.0 * DEFAULT_FLOOR
        )
    })
}

/// Work in flight when the phase ended was cut off: said, since those units have no latency.
/// `unit`: `queries` or `requests`.
pub fn cut_off_warning(a: &Accounting, unit: &str, load: &Load, stop: &Stop) -> Option<String> {
    let end = match (load, stop) {
        (_, Stop::Duration { .. }) => "its duration",
        (Load::Open { .. }, Stop::Count { .. }) => "the end of its schedule",
        _ => "the stop",
    };
    (a.cut_off > 0).then(|| {
        format!(
            "{} {unit} were still in flight {} after {end} and were cut off (counted, not measured)",
            crate::plan::thousands(a.cut_off),
            crate::net::fmt::fmt_duration(STOP_GRACE)
        )
    })
}

/// `expect achieved_rate OP P%`, measured.
pub fn judge_achieved(th: &Threshold, a: &Accounting) -> ThresholdReport {
    let want = match &th.value {
        Value::Percent(p) => p / 100.0,
        Value::Float(f) => *f,
        _ => f64::NAN,
    };
    let (ok, actual) = match a.achieved_rate {
        Some(r) => (
            super::judge::compare(r, &th.op, want),
            format!(
                "{:.1}% ({} of {} scheduled)",
                100.0 * r,
                crate::plan::thousands(a.scheduled - a.unsent),
                crate::plan::thousands(a.scheduled)
            ),
        ),
        None => (false, "closed loop: no schedule to reach".into()),
    };
    ThresholdReport {
        metric: th.metric.clone(),
        expect: format!("{} {} {}", th.metric, th.op, th.value),
        actual,
        ok,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scheduled_unit_is_accounted_for() {
        let mut s = Sends {
            cut_off: 3,
            ..Sends::default()
        };
        let t = Instant::now();
        s.start(t + Duration::from_millis(5), Some(t));
        s.start(t, Some(t));
        let a = accounting(1000, (15, 0, 4), &s, true);
        assert_eq!(a.scheduled, 1000);
        assert_eq!(a.unsent, 1000 - 15 - 4 - 3);
        assert_eq!(a.achieved_rate, Some(22.0 / 1000.0));
        assert_eq!(a.late, 1);
        let f = rate_failure(&a, &[], "requests").unwrap();
        assert!(
            f.starts_with("reached 22 of 1,000 scheduled requests (2.2%"),
            "{f}"
        );
        let own = Threshold {
            metric: "achieved_rate".into(),
            op: ">".into(),
            value: Value::Percent(1.0),
        };
        assert_eq!(
            rate_failure(&a, std::slice::from_ref(&own), "requests"),
            None
        );
        assert!(judge_achieved(&own, &a).ok);
        let closed = accounting(0, (10, 0, 0), &Sends::default(), false);
        assert_eq!((closed.scheduled, closed.unsent), (10, 0));
        assert_eq!(rate_failure(&closed, &[], "queries"), None);
    }

    #[tokio::test]
    async fn work_in_flight_is_cut_off_after_the_grace_or_a_stop() {
        let stop = Arc::new(AtomicBool::new(false));
        let now = Instant::now();
        let c = Cutoff::after(Some(now), stop.clone());
        assert_eq!(c.bound(async { 7 }).await, Some(7));
        let never = std::future::pending::<()>();
        assert_eq!(c.bound(never).await, None);
        assert!(now.elapsed() >= STOP_GRACE);
        let open = Cutoff::after(None, stop.clone());
        stop.store(true, Ordering::Relaxed);
        let t = Instant::now();
        assert_eq!(open.bound(std::future::pending::<()>()).await, None);
        assert!(t.elapsed() < STOP_GRACE + Duration::from_millis(500));
    }
}
