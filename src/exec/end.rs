//! What a phase of a `concurrent` group shares with the others: an end another member may set
//! (`until P`: P's end stops the rest), and the gates its members pass together (every table
//! set up before any guard is read; every member ready before any sends).
//!
//! A phase on its own gets `Member::alone()`: an end that never comes and gates that do not
//! wait, so the runners have one code path.

use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use tokio::sync::Notify;

use super::STOP_GRACE;

/// An end set from outside the phase. Once set, the phase behaves as if its duration had ended
/// then: no unit starts at or after it, and what is in flight `STOP_GRACE` later is cut off.
#[derive(Clone, Default)]
pub struct End(Option<Arc<Shared>>);

#[derive(Default)]
struct Shared {
    at: OnceLock<Instant>,
    set: Notify,
}

impl End {
    pub fn new() -> End {
        End(Some(Arc::default()))
    }

    /// Ends the phase now; the first call wins.
    pub fn now(&self) {
        if let Some(s) = &self.0 {
            if s.at.set(Instant::now()).is_ok() {
                s.set.notify_waiters();
            }
        }
    }

    pub fn at(&self) -> Option<Instant> {
        self.0.as_ref().and_then(|s| s.at.get().copied())
    }

    pub fn ended(&self) -> bool {
        self.at().is_some()
    }

    /// A unit that would start at `t` starts too late.
    pub fn past(&self, t: Instant) -> bool {
        self.at().is_some_and(|e| t >= e)
    }

    /// The earlier of `end` and this end.
    pub fn min(&self, end: Option<Instant>) -> Option<Instant> {
        match (end, self.at()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Returns once the end is set: never for a phase nobody ends.
    pub async fn wait(&self) {
        let Some(s) = &self.0 else {
            return std::future::pending().await;
        };
        loop {
            // Registered before the check, so a `now` between the two is not missed.
            let set = s.set.notified();
            if s.at.get().is_some() {
                return;
            }
            set.await;
        }
    }

    /// Returns `STOP_GRACE` after the end: work still in flight then is cut off.
    pub async fn hard(&self) {
        self.wait().await;
        if let Some(at) = self.at() {
            tokio::time::sleep_until((at + STOP_GRACE).into()).await;
        }
    }

    /// `f`'s output, or `None` when the end's hard stop came first.
    pub async fn bound<F: Future>(&self, f: F) -> Option<F::Output> {
        tokio::select! {
            biased;
            out = f => Some(out),
            _ = self.hard() => None,
        }
    }
}

/// A point every member of a group reaches before any goes on. A member that gives up before
/// it (its setup failed) drops its ticket, which counts as having passed, so no one waits for
/// it.
struct Gate {
    members: usize,
    state: Mutex<(usize, Option<Instant>)>,
    open: Notify,
}

pub struct Ticket {
    gate: Option<Arc<Gate>>,
    passed: bool,
    /// Where the member's pass is recorded (the start gate's ticket).
    seen: Option<Arc<OnceLock<Instant>>>,
}

impl Ticket {
    fn none() -> Ticket {
        Ticket {
            gate: None,
            passed: false,
            seen: None,
        }
    }

    /// Counts as having passed without waiting (a member that failed before the gate), so
    /// the others do not wait for it while it finishes.
    pub fn give_up(&mut self) {
        if let (Some(gate), false) = (&self.gate, self.passed) {
            self.passed = true;
            arrive(gate);
        }
    }

    /// Waits until every member has reached the gate (or given up); returns when it opened.
    pub async fn pass(&mut self) -> Instant {
        let Some(gate) = &self.gate else {
            return Instant::now();
        };
        if !self.passed {
            self.passed = true;
            arrive(gate);
        }
        loop {
            let open = gate.open.notified();
            if let Some(at) = gate.state.lock().map_or(Some(Instant::now()), |s| s.1) {
                if let Some(seen) = &self.seen {
                    let _ = seen.set(Instant::now());
                }
                return at;
            }
            open.await;
        }
    }
}

fn arrive(gate: &Gate) {
    let Ok(mut s) = gate.state.lock() else {
        return;
    };
    s.0 += 1;
    if s.0 >= gate.members && s.1.is_none() {
        s.1 = Some(Instant::now());
        gate.open.notify_waiters();
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.give_up();
    }
}

/// When a member started and ended measuring, as the group saw it.
#[derive(Default)]
pub struct Measured {
    pub started: Arc<OnceLock<Instant>>,
    pub ended: OnceLock<Instant>,
}

/// One phase's part in a group.
pub struct Member {
    pub end: End,
    /// Passed once the member's own table setup is done: a run's `require` guards are read
    /// after every ingest of the group has set its table up.
    pub setup: Ticket,
    /// Passed when the member is about to start measuring: every member starts together.
    pub start: Ticket,
    span: Arc<Measured>,
    /// The ends this member's end sets: the others', when the group is `until` it.
    stops: Vec<End>,
}

impl Member {
    /// A phase that runs on its own.
    pub fn alone() -> Member {
        Member {
            end: End::default(),
            setup: Ticket::none(),
            start: Ticket::none(),
            span: Arc::default(),
            stops: Vec::new(),
        }
    }

    /// The members of a group of `n`, each with its own end; the end of member `until` ends
    /// the others. Also each member's span, for the report.
    pub fn group(n: usize, until: Option<usize>) -> (Vec<Member>, Vec<Arc<Measured>>) {
        let gate = || {
            Arc::new(Gate {
                members: n,
                state: Mutex::new((0, None)),
                open: Notify::new(),
            })
        };
        let (setup, start) = (gate(), gate());
        let mut members: Vec<Member> = (0..n)
            .map(|_| {
                let span = Arc::new(Measured::default());
                Member {
                    end: End::new(),
                    setup: Ticket {
                        gate: Some(setup.clone()),
                        passed: false,
                        seen: None,
                    },
                    start: Ticket {
                        gate: Some(start.clone()),
                        passed: false,
                        seen: Some(span.started.clone()),
                    },
                    span,
                    stops: Vec::new(),
                }
            })
            .collect();
        if let Some(u) = until.filter(|&u| u < n) {
            let others: Vec<End> = (0..n)
                .filter(|&i| i != u)
                .map(|i| members[i].end.clone())
                .collect();
            members[u].stops = others;
        }
        let spans = members.iter().map(|m| m.span.clone()).collect();
        (members, spans)
    }

    /// The member's measured span is over (its sending, not its verify or teardown): said
    /// once, and the members it ends are ended now.
    pub fn ended(&self) {
        if self.span.ended.set(Instant::now()).is_ok() {
            for e in &self.stops {
                e.now();
            }
        }
    }
}

impl Drop for Member {
    /// A member that returns early (its setup failed) has ended too.
    fn drop(&mut self) {
        self.ended();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn an_end_cuts_off_after_the_grace_and_a_gate_waits_for_every_member() {
        let end = End::new();
        assert!(!end.ended());
        let e = end.clone();
        let t = Instant::now();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            e.now();
        });
        assert_eq!(end.bound(std::future::pending::<()>()).await, None);
        assert!(t.elapsed() >= STOP_GRACE + Duration::from_millis(50));
        assert!(end.past(Instant::now()));
        assert_eq!(End::default().bound(async { 3 }).await, Some(3));

        let (mut members, _) = Member::group(3, None);
        let gone = members.pop();
        drop(gone);
        let mut b = members.pop().unwrap();
        let mut a = members.pop().unwrap();
        let first = tokio::spawn(async move { a.start.pass().await });
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!first.is_finished(), "one member of two left is not enough");
        let at = b.start.pass().await;
        assert_eq!(first.await.unwrap(), at);
    }
}
