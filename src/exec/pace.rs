//! Waiting until an open-loop send's intended time, to within a few microseconds.
//!
//! tokio's timer has a resolution of one millisecond, so a schedule kept with it sends every
//! request up to a millisecond late and that lag lands in every intended-time latency. A
//! `Pacer` arms its own timerfd (a kernel hrtimer, which has no timer slack) for a moment just
//! before the intended time, lets the runtime's reactor wake it, and spins for the rest. How
//! early it wakes follows how late the timer has been on this thread (its mean plus its mean
//! deviation over four, learnt from wake-ups clamped at `OUTLIER`: a thread preempted for
//! milliseconds says nothing about the timer, and would make every later wait a long spin).
//!
//! The spin is the client's CPU, measured like the rest of it (`client_cpu_s`), and at high
//! rates it was most of it: on a VM whose timer wakes 30-60 us late, 10,000 sends a second spun
//! away half a core. So what the pacers of one thread learn is the thread's (a connection's
//! wake-up delayed by another connection's work on the same thread is not learnt as that
//! connection's alone), and their spin is held to `SPIN_SHARE` of the time between the thread's
//! sends: at 1,000/s a send may spin 100 us, at 10,000/s 10 us, and what the timer's lateness
//! exceeds that by is send lag, reported as such.

use std::cell::Cell;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::time::{
    timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags,
    Timespec,
};
use tokio::io::unix::AsyncFd;

use super::end::End;

/// The longest single wait: a stop (Ctrl-C) is noticed within it even at a low rate.
const CHUNK: Duration = Duration::from_millis(100);
/// Bounds of the early wake-up: at least this much spin, at most this much.
const MIN_EARLY: Duration = Duration::from_micros(5);
const MAX_EARLY: Duration = Duration::from_micros(100);
/// A wake-up later than this is the scheduler's (preemption), not the timer's: learnt as this.
const OUTLIER: Duration = Duration::from_micros(100);
/// The most of a thread's time between sends its pacers may spend spinning.
const SPIN_SHARE: f64 = 0.1;

/// What a thread's pacers learnt: how late the timer's wake-ups were and how far apart the
/// thread's sends are (exponentially weighted, nanoseconds).
#[derive(Clone, Copy, Debug)]
struct Learnt {
    late_mean: f64,
    late_dev: f64,
    gap_mean: f64,
    last_send: Option<Instant>,
}

impl Learnt {
    const START: Learnt = Learnt {
        late_mean: 30_000.0,
        late_dev: 10_000.0,
        // Until the thread has sent, nothing holds the spin below `MAX_EARLY`.
        gap_mean: 1e9,
        last_send: None,
    };

    /// How early to wake before an intended time.
    fn early(&self) -> Duration {
        let ns = (self.late_mean + 0.25 * self.late_dev).max(0.0) as u64;
        let budget = Duration::from_nanos((SPIN_SHARE * self.gap_mean) as u64);
        Duration::from_nanos(ns)
            .clamp(MIN_EARLY, MAX_EARLY)
            .min(budget)
    }

    fn learn(&mut self, late: Duration) {
        let late = late.min(OUTLIER).as_nanos() as f64;
        let dev = (late - self.late_mean).abs();
        self.late_mean += (late - self.late_mean) / 16.0;
        self.late_dev += (dev - self.late_dev) / 16.0;
    }

    fn sent(&mut self, now: Instant) {
        if let Some(last) = self.last_send {
            let gap = now.saturating_duration_since(last).min(CHUNK).as_nanos() as f64;
            self.gap_mean += (gap - self.gap_mean) / 16.0;
        }
        self.last_send = Some(now);
    }
}

thread_local! {
    static LEARNT: Cell<Learnt> = const { Cell::new(Learnt::START) };
}

fn learnt<R>(f: impl FnOnce(&mut Learnt) -> R) -> R {
    LEARNT.with(|c| {
        let mut l = c.get();
        let r = f(&mut l);
        c.set(l);
        r
    })
}

/// One connection's timer; what it learns is its thread's.
#[derive(Default)]
pub struct Pacer {
    timer: Timer,
}

#[derive(Default)]
enum Timer {
    /// Not created yet: an `AsyncFd` needs the runtime of the task that waits on it.
    #[default]
    Unopened,
    Fd(AsyncFd<OwnedFd>),
    /// No timerfd here (not Linux): tokio's timer, to the millisecond.
    Tokio,
}

impl Pacer {
    /// Waits until `at`; `false` when `stop` was set or a group's `end` came first (seen
    /// within one `CHUNK`): nothing should be sent then.
    pub async fn until(&mut self, at: Instant, stop: &AtomicBool, end: &End) -> bool {
        loop {
            if stop.load(Ordering::Relaxed) || end.ended() {
                return false;
            }
            let now = Instant::now();
            if now >= at {
                learnt(|l| l.sent(now));
                return true;
            }
            let early = learnt(|l| l.early());
            let left = at - now;
            if left <= early {
                // The last stretch: a spin on the monotonic clock (a vDSO call, no syscall).
                let mut now = Instant::now();
                while now < at {
                    std::hint::spin_loop();
                    now = Instant::now();
                }
                learnt(|l| l.sent(now));
                return true;
            }
            let wake = (left - early).min(CHUNK);
            let last = wake == left - early;
            self.sleep(wake).await;
            if last {
                let target = now + wake;
                let late = Instant::now().saturating_duration_since(target);
                learnt(|l| l.learn(late));
            }
        }
    }

    async fn sleep(&mut self, d: Duration) {
        if matches!(self.timer, Timer::Unopened) {
            self.timer = open().map_or(Timer::Tokio, Timer::Fd);
        }
        match &self.timer {
            Timer::Fd(fd) => {
                if arm(fd, d).is_err() {
                    self.timer = Timer::Tokio;
                    tokio::time::sleep(d).await;
                    return;
                }
                // The reactor's epoll is edge-triggered: each expiry of the timer is an event
                // of its own, whether or not the count of the one before was read, and
                // re-arming resets that count. So the count is not read (a syscall per send);
                // the readiness is cleared, and a stale one (a wait given up before its expiry)
                // only makes `until` look at the clock and wait again.
                match fd.readable().await {
                    Ok(mut ready) => ready.clear_ready(),
                    Err(_) => self.timer = Timer::Tokio,
                }
            }
            _ => tokio::time::sleep(d).await,
        }
    }
}

fn open() -> Option<AsyncFd<OwnedFd>> {
    let fd = timerfd_create(
        TimerfdClockId::Monotonic,
        TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
    )
    .ok()?;
    // `AsyncFd::register` is the undeprecated spelling but `unsafe` (which this crate forbids):
    // its requirement, that the descriptor stays open while registered, is what an `OwnedFd`
    // moved into the `AsyncFd` guarantees.
    #[allow(deprecated)]
    AsyncFd::new(fd).ok()
}

fn arm(fd: &AsyncFd<OwnedFd>, d: Duration) -> rustix::io::Result<()> {
    // A zero value would disarm the timer instead of firing it at once.
    let d = d.max(Duration::from_nanos(1));
    let zero = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let spec = Itimerspec {
        it_interval: zero,
        it_value: Timespec {
            tv_sec: d.as_secs() as _,
            tv_nsec: d.subsec_nanos() as _,
        },
    };
    timerfd_settime(fd.get_ref(), TimerfdTimerFlags::empty(), &spec).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn never_returns_before_the_intended_time_and_stops_on_request() {
        let mut p = Pacer::default();
        let stop = AtomicBool::new(false);
        let start = Instant::now();
        for i in 1..=50u32 {
            let at = start + Duration::from_micros(300) * i;
            assert!(p.until(at, &stop, &End::default()).await);
            assert!(Instant::now() >= at);
        }
        assert!(matches!(p.timer, Timer::Fd(_)), "a timerfd on Linux");
        let far = Instant::now() + Duration::from_secs(3600);
        let end = End::new();
        end.now();
        assert!(!p.until(far, &stop, &end).await, "a group's end");
        stop.store(true, Ordering::Relaxed);
        assert!(!p.until(far, &stop, &End::default()).await);
    }

    #[test]
    fn the_early_margin_follows_the_timer_and_stays_bounded() {
        let mut p = Learnt::START;
        for _ in 0..200 {
            p.learn(Duration::from_micros(8));
        }
        let e = p.early();
        assert!(
            e >= Duration::from_micros(7) && e < Duration::from_micros(10),
            "{e:?}"
        );
        for _ in 0..200 {
            p.learn(Duration::from_millis(5));
        }
        assert_eq!(p.early(), MAX_EARLY);
        // One preemption of milliseconds moves the margin by a few microseconds, not to the cap.
        for _ in 0..200 {
            p.learn(Duration::from_micros(20));
        }
        p.learn(Duration::from_millis(3));
        assert!(p.early() < Duration::from_micros(40), "{:?}", p.early());
    }

    #[test]
    fn the_spin_is_held_to_its_share_of_the_time_between_sends() {
        let mut p = Learnt::START;
        for _ in 0..200 {
            p.learn(Duration::from_micros(60));
        }
        let t0 = Instant::now();
        // A thread sending every millisecond may spin what the timer needs.
        for i in 0..200u32 {
            p.sent(t0 + Duration::from_millis(1) * i);
        }
        let e = p.early();
        assert!(
            e > Duration::from_micros(55) && e <= Duration::from_micros(80),
            "{e:?}"
        );
        // Every 100 us: 10% of that, the rest is lag.
        let t1 = t0 + Duration::from_secs(1);
        for i in 0..200u32 {
            p.sent(t1 + Duration::from_micros(100) * i);
        }
        let e = p.early();
        assert!(
            e >= Duration::from_micros(9) && e <= Duration::from_micros(11),
            "{e:?}"
        );
    }
}
