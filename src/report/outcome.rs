//! What a finished run comes to, for its exit code (docs/language.md, "Exit codes"): it
//! passed, it measured and failed, or the environment stopped it before it measured anything.
//! Read off the report alone, so that a run, its merge and a re-read report agree.

use std::collections::BTreeMap;

use super::{ErrorCount, PhaseReport, Report, Status};

/// The error class of a connection that could not be made (refused, an unknown host, a
/// password or a certificate refused): ingest's `ErrorClass::Connect` and the runs'
/// `QueryErrorClass::Connect` share the name.
pub const CONNECT: &str = "connect";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    /// Measured, and failed: a threshold, errors from the server, rows not visible, or
    /// anything else that is not `Unmeasured`.
    Failed,
    /// Every phase that did not pass could not measure (`PhaseReport::unmeasured`), and
    /// nothing else failed.
    Unmeasured,
}

impl Report {
    pub fn outcome(&self) -> Outcome {
        if self.ok() {
            return Outcome::Passed;
        }
        let others_ok = !self.interrupted
            && self.shard.as_ref().is_none_or(|s| s.failure.is_none())
            && self.merged.as_ref().is_none_or(|m| m.failures.is_empty());
        let phases = self.cells.iter().flat_map(|c| &c.phases);
        // A measured failure is the stronger news: one is enough for `Failed`.
        if others_ok
            && phases
                .clone()
                .all(|p| p.status() == Status::Ok || p.unmeasured().is_some())
        {
            Outcome::Unmeasured
        } else {
            Outcome::Failed
        }
    }
}

impl PhaseReport {
    /// Why the phase could not measure: it failed, nothing completed (no row sent, no query or
    /// request answered), and every error was a connection that could not be made. The first
    /// such error's message, which names the endpoint and the cause; `None` for a phase that
    /// measured (passed, or failed on its figures) or did not run.
    pub fn unmeasured(&self) -> Option<&str> {
        match self {
            PhaseReport::Ingest(r) => {
                (r.status == Status::Failed && r.rows_sent == 0 && r.rows_acked.unwrap_or(0) == 0)
                    .then(|| only_connect(&r.errors))
                    .flatten()
            }
            PhaseReport::Queries(r) => (r.status == Status::Failed && r.ok == 0)
                .then(|| only_connect(&r.errors))
                .flatten(),
            PhaseReport::Requests(r) => (r.status == Status::Failed && r.ok == 0)
                .then(|| only_connect(&r.errors))
                .flatten(),
            PhaseReport::NotRun { .. } => None,
        }
    }
}

/// The first `connect` error's message when it is the only class.
fn only_connect(errors: &BTreeMap<String, ErrorCount>) -> Option<&str> {
    match errors.get(CONNECT) {
        Some(e) if errors.len() == 1 && e.count > 0 => Some(e.first.as_str()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{ingest_report, query_report, report, request_report};
    use super::*;

    fn refused(message: &str) -> BTreeMap<String, ErrorCount> {
        let mut errors = BTreeMap::new();
        errors.insert(
            CONNECT.to_string(),
            ErrorCount {
                count: 2,
                first: message.to_string(),
            },
        );
        errors
    }

    /// A query run and a request run that failed at connecting: nothing answered.
    fn unreachable() -> Report {
        let mut r = report();
        for p in &mut r.cells[0].phases {
            match p {
                PhaseReport::Queries(q) => {
                    (q.ok, q.errors) = (0, refused("cannot connect to db.sql: 28P01"));
                }
                PhaseReport::Requests(q) => {
                    q.status = Status::Failed;
                    (q.ok, q.errors) = (0, refused("cannot connect to svc.http: refused"));
                }
                _ => unreachable!(),
            }
        }
        r
    }

    #[test]
    fn a_run_refused_at_every_connection_could_not_measure() {
        let r = unreachable();
        assert_eq!(r.outcome(), Outcome::Unmeasured);
        assert_eq!(
            r.cells[0].phases[0].unmeasured(),
            Some("cannot connect to db.sql: 28P01")
        );
    }

    #[test]
    fn a_measured_failure_wins() {
        // Another phase that answered and failed on its figures.
        let mut r = unreachable();
        let mut measured = request_report();
        measured.status = Status::Failed;
        r.cells[0]
            .phases
            .push(PhaseReport::Requests(Box::new(measured)));
        assert_eq!(r.outcome(), Outcome::Failed);
        // A phase that answered anything measured, whatever its errors.
        let mut r = unreachable();
        if let PhaseReport::Queries(q) = &mut r.cells[0].phases[0] {
            q.ok = 1;
        }
        assert_eq!(r.outcome(), Outcome::Failed);
        // An error of another class beside the connect errors: the server answered.
        let mut r = unreachable();
        if let PhaseReport::Queries(q) = &mut r.cells[0].phases[0] {
            q.errors.extend(query_report().errors);
        }
        assert_eq!(r.outcome(), Outcome::Failed);
        // Stopped by a signal: its own exit code, never 3.
        let mut r = unreachable();
        r.interrupted = true;
        assert_eq!(r.outcome(), Outcome::Failed);
    }

    #[test]
    fn an_ingest_that_sent_nothing_could_not_measure_and_one_that_sent_did() {
        let mut i = ingest_report(Status::Failed);
        (i.rows_sent, i.rows_acked) = (0, Some(0));
        i.errors = refused("cannot connect to db.ilp (tcp://127.0.0.1:9)");
        let phase = PhaseReport::Ingest(Box::new(i.clone()));
        assert!(phase.unmeasured().is_some());
        i.rows_sent = 10;
        assert_eq!(PhaseReport::Ingest(Box::new(i)).unmeasured(), None);
    }

    #[test]
    fn a_passing_run_passes() {
        let mut r = report();
        r.cells[0].phases = vec![PhaseReport::Ingest(Box::new(ingest_report(Status::Ok)))];
        assert_eq!(r.outcome(), Outcome::Passed);
    }
}
