//! A run directory that can no longer be written (a full disk, a removed directory). Before,
//! the run went on without its time series and left a 0-byte report.json, cell after cell:
//! measurements nobody could keep. Now the first failed write stops the run as a stop does (no
//! batch, query or request starts after it; what is in flight gets the grace), says so once,
//! and fails the phase it stopped, so the run exits 1 with its report printed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use crate::report::{PhaseReport, Status};

/// Shared by every phase's series of a run.
#[derive(Debug, Default)]
pub struct Fault {
    why: OnceLock<String>,
    /// The run's stop flag (`RunEnv::stop`), which every sender watches.
    stop: Arc<AtomicBool>,
}

impl Fault {
    pub fn new(stop: Arc<AtomicBool>) -> Fault {
        Fault {
            why: OnceLock::new(),
            stop,
        }
    }

    /// `why` (`cannot write DIR/series/1-load.csv: No space left on device`) stops the run; the
    /// first failure is the one reported.
    pub fn ring(&self, why: &str) {
        if self.why.set(why.to_string()).is_ok() {
            sayln!(
                "wlrun: {why}: the run directory cannot keep what is measured; stopping, \
                 nothing more is sent"
            );
            self.stop.store(true, Ordering::SeqCst);
        }
    }

    /// Why the run directory failed, once it has.
    pub fn why(&self) -> Option<&str> {
        self.why.get().map(String::as_str)
    }
}

/// A phase the fault stopped: failed, not interrupted (nobody asked it to stop), with the
/// reason. A phase that had ended before keeps its verdict.
pub fn fail_stopped(report: &mut PhaseReport, why: &str) {
    let (status, failures) = match report {
        PhaseReport::Ingest(r) => (&mut r.status, &mut r.failures),
        PhaseReport::Queries(r) => (&mut r.status, &mut r.failures),
        PhaseReport::Requests(r) => (&mut r.status, &mut r.failures),
        PhaseReport::NotRun { .. } => return,
    };
    if *status != Status::Interrupted {
        return;
    }
    *status = Status::Failed;
    failures.retain(|f| !f.starts_with("interrupted"));
    failures.push(format!(
        "stopped: {why}; the figures cover what was sent until then"
    ));
}
