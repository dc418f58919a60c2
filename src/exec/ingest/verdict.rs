//! How an ingest phase ends: the count the server shows polled until it reaches what was
//! confirmed, then the verdict on errors, missing rows and rows never visible.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::WorkersDone;
use crate::exec::account::DEFAULT_FLOOR;
use crate::exec::admin::{lost_connection, Visibility};
use crate::exec::{RunEnv, STOP_GRACE};
use crate::plan::{thousands, IngestPhase};
use crate::report::{ErrorCount, IngestReport, Status};

/// Polls the count until it reaches `target`, what the server confirmed (or, without acks,
/// what was sent; under shards, by every shard), or the phase's `within` runs out.
pub(super) async fn verify(
    env: &RunEnv,
    v: &mut Visibility,
    report: &mut IngestReport,
    target: u64,
) {
    let started = Instant::now();
    let mut wait = Duration::from_millis(50);
    let mut last = None;
    // Counts whose connection was lost: tried again on a new one within `within`, and
    // errors only if no count got through after them.
    let mut lost: Option<ErrorCount> = None;
    loop {
        match v.count(env).await {
            Ok(n) => {
                last = Some(n);
                if n >= target {
                    report.visible_after_s = Some(started.elapsed().as_secs_f64());
                    break;
                }
            }
            Err(e) if lost_connection(&e) => {
                let l = lost.get_or_insert_with(|| ErrorCount {
                    count: 0,
                    first: e.to_string(),
                });
                l.count += 1;
            }
            Err(e) => {
                let entry = report.errors.entry("verify".into()).or_default();
                if entry.count == 0 {
                    entry.first = e.to_string();
                }
                entry.count += 1;
                if e.fatal {
                    break;
                }
            }
        }
        if started.elapsed() >= v.within || env.stop.load(Ordering::Relaxed) {
            break;
        }
        tokio::time::sleep(wait.min(v.within.saturating_sub(started.elapsed()))).await;
        wait = (wait * 2).min(Duration::from_secs(1));
    }
    match lost {
        Some(l) if report.visible_after_s.is_some() => report.warnings.push(format!(
            "verify: the count's connection was lost {} and reconnected (first: {})",
            times(l.count),
            l.first
        )),
        Some(l) => {
            let entry = report.errors.entry("verify".into()).or_default();
            if entry.count == 0 {
                entry.first = l.first;
            }
            entry.count += l.count;
        }
        None => {}
    }
    report.rows_visible = last;
    report.visible_baseline = Some(v.baseline);
}

fn times(n: u64) -> String {
    if n == 1 {
        "once".into()
    } else {
        format!("{} times", thousands(n))
    }
}

/// The verdict: any error, missing rows or rows that never became visible (of `target`, the
/// count `verify` waited for) fail the phase.
pub(super) fn judge(
    report: &mut IngestReport,
    phase: &IngestPhase,
    workers: WorkersDone,
    interrupted: bool,
    target: u64,
) {
    if interrupted {
        report.status = Status::Interrupted;
        report
            .failures
            .push("interrupted: the figures cover what was sent until then".into());
        return;
    }
    let errors: u64 = report.errors.values().map(|e| e.count).sum();
    if errors > 0 {
        let classes: Vec<String> = report
            .errors
            .iter()
            .map(|(c, e)| format!("{} {c}", e.count))
            .collect();
        report.failures.push(format!(
            "errors: {} (first: {})",
            classes.join(", "),
            first_error(report)
        ));
    }
    if let Some(d) = workers.at_duration {
        // A duration is a stop, not a shortfall: the phase is judged on what its span
        // allowed, the rows it took into batches before the duration.
        let planned = report.rows_expected;
        // With a rate, the span allowed what its schedule held, sent or not.
        let allowed = match &report.schedule {
            Some(s) => s.scheduled_rows + report.rows_dropped,
            None => report.rows_generated,
        };
        report.rows_expected = Some(allowed);
        let end = if workers.by_group {
            "stopped by its concurrent group's end, after"
        } else if !phase.stages.is_empty() {
            "stopped at the end of its last stage"
        } else {
            "stopped at its duration"
        };
        report.warnings.push(format!(
            "{end} ({}): judged on the {} rows its span allowed{}",
            crate::net::fmt::fmt_duration(d),
            thousands(allowed),
            planned
                .map(|p| format!(", of the {} planned", thousands(p)))
                .unwrap_or_default()
        ));
        let mut lost = Vec::new();
        if report.rows_cut_off > 0 {
            lost.push(format!(
                "{} rows still unanswered were counted neither as sent nor as acknowledged",
                thousands(report.rows_cut_off)
            ));
        }
        if workers.close_cut_off {
            lost.push(
                "closing a connection (its flush, or its last acknowledgements) was abandoned"
                    .to_string(),
            );
        }
        if !lost.is_empty() && workers.by_group {
            // Stopped from outside: what was in flight is cut off, as a run's queries are.
            report.warnings.push(format!(
                "cut off at its group's end plus {} of grace: {}",
                crate::net::fmt::fmt_duration(STOP_GRACE),
                lost.join("; ")
            ));
        } else if !lost.is_empty() {
            report.failures.push(format!(
                "cut off at its duration ({}) plus {} of grace: {}",
                crate::net::fmt::fmt_duration(d),
                crate::net::fmt::fmt_duration(STOP_GRACE),
                lost.join("; ")
            ));
        }
    }
    // With stages, each stage is judged on its own schedule (its warm-up apart).
    report
        .failures
        .extend(super::staged::failures(&report.stages));
    let why = if workers.by_group {
        "its concurrent group ended first"
    } else {
        "its rows ran out first"
    };
    if let Some(w) = super::staged::unreached(&report.stages, why) {
        report.warnings.push(w);
    }
    if let Some(s) = report.schedule.as_ref().filter(|_| phase.stages.is_empty()) {
        if s.achieved_rate < DEFAULT_FLOOR {
            report.failures.push(format!(
                "reached {} of {} scheduled rows at {} ({:.1}%; a rate-controlled ingest needs {:.0}%): {} rows unsent, the client or the server fell behind",
                thousands(s.scheduled_rows - s.unsent_rows),
                thousands(s.scheduled_rows),
                crate::value::fmt_rate(s.rate_rows_per_s),
                100.0 * s.achieved_rate,
                100.0 * DEFAULT_FLOOR,
                thousands(s.unsent_rows)
            ));
        } else if let Some(sent) = report.send_rows_per_s {
            // Every row went out, late: over the span the schedule covers (which ends at the
            // last answer when that is later), the rows left slower than asked.
            if sent < DEFAULT_FLOOR * s.rate_rows_per_s {
                report.failures.push(format!(
                    "sent at {} rows/s ({:.1}% of the {} asked; a rate-controlled ingest needs {:.0}%): the client or the server fell behind",
                    thousands(sent.round() as u64),
                    100.0 * sent / s.rate_rows_per_s,
                    crate::value::fmt_rate(s.rate_rows_per_s),
                    100.0 * DEFAULT_FLOOR,
                ));
            }
        }
    }
    if !workers.complete && errors == 0 && report.failures.is_empty() {
        report
            .failures
            .push("not every worker sent all its rows".into());
    }
    if let Some(expected) = report.rows_expected {
        let carried = report.rows_sent + report.rows_dropped;
        // A schedule's shortfall is judged above, against its own floor.
        if carried < expected && workers.complete && report.schedule.is_none() {
            report.failures.push(format!(
                "sent {} of the {expected} rows expected",
                report.rows_sent
            ));
        }
        // More rows than the plan holds is a bug of ours (how `limit` once hid), never a
        // success: the figures would describe a bigger load than the one asked for.
        if carried > expected {
            report.failures.push(format!(
                "sent {} rows, more than the {} expected",
                thousands(carried),
                thousands(expected)
            ));
        }
    }
    if report.rows_dropped > 0 {
        report.failures.push(format!(
            "{} rows could not be encoded for {} (a line-protocol row needs a non-null field)",
            report.rows_dropped, report.kind
        ));
    }
    if let Some(visible) = report.rows_visible {
        if visible < target {
            let what = if report.rows_acked.is_some() {
                "acknowledged"
            } else {
                "sent"
            };
            report.failures.push(format!(
                "{} rows {what} but never visible: the count reached {visible} of {target}",
                target - visible
            ));
        } else if visible > target && report.rows_acked.is_some() {
            // More rows than acknowledged: rows sent whose answer never came (the server
            // stored them all the same), a retried batch, or a table shared with another
            // writer. Not a failure, but it must show.
            let why = if visible <= report.rows_sent {
                ": rows sent and not acknowledged were stored"
            } else {
                ""
            };
            report.failures.push(format!(
                "note: the count ({visible}) exceeds the rows acknowledged ({target}){why}"
            ));
        }
    } else if phase.verify.is_some() && report.rows_sent > 0 {
        report
            .failures
            .push("the visible rows could not be counted".into());
    }
    let failed = report.failures.iter().any(|f| !f.starts_with("note:"));
    report.status = if failed { Status::Failed } else { Status::Ok };
}

fn first_error(report: &IngestReport) -> String {
    report
        .errors
        .values()
        .next()
        .map(|e| e.first.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::EndpointPlan;

    fn phase(rows: u64) -> IngestPhase {
        IngestPhase {
            rows_expected: Some(rows),
            ..IngestPhase::fixture(EndpointPlan {
                target: "t".into(),
                name: "null".into(),
                kind: "null".into(),
                dialect: "generic".into(),
                url: None,
                options: Default::default(),
            })
        }
    }

    fn judged(expected: u64, sent: u64) -> IngestReport {
        let p = phase(expected);
        let mut r = crate::exec::ingest::empty::empty_report(&p);
        r.rows_generated = sent;
        r.rows_sent = sent;
        let done = WorkersDone {
            complete: true,
            ..WorkersDone::default()
        };
        judge(&mut r, &p, done, false, sent);
        r
    }

    #[test]
    fn the_rows_planned_pass() {
        let r = judged(100, 100);
        assert_eq!(r.status, Status::Ok, "{:?}", r.failures);
    }

    #[test]
    fn fewer_rows_than_planned_fail() {
        let r = judged(100, 90);
        assert_eq!(r.status, Status::Failed);
        assert!(
            r.failures[0].contains("sent 90 of the 100"),
            "{:?}",
            r.failures
        );
    }

    #[test]
    fn more_rows_than_planned_fail() {
        let r = judged(100, 101);
        assert_eq!(r.status, Status::Failed);
        assert!(
            r.failures[0].contains("sent 101 rows, more than the 100 expected"),
            "{:?}",
            r.failures
        );
    }
}
