//! A merged phase's failures, warnings and status, from its shards' and from its thresholds
//! judged again. A shard's failure stays a failure of the merged phase, prefixed by the shards
//! that had it (`shard 2: ...`); a shard's own verdict on a threshold is replaced by the
//! verdict on the merged figures; warnings every shard gave are said once.

use crate::report::{Status, ThresholdReport};

/// What one shard said of the phase.
pub struct Said<'a> {
    pub index: u64,
    pub status: Status,
    pub failures: &'a [String],
    pub warnings: &'a [String],
}

/// The failure line the runner writes for a threshold not met (`exec::judge`).
pub const UNMET: &str = "threshold not met: ";

/// The merged phase's failures and warnings. `judged`: the thresholds judged again, whose
/// shard-level lines are dropped (`None`: they could not be, and the shards' lines stay);
/// `extra`: what the merge itself found (a shard's part missing, ...).
pub fn lines(
    said: &[Said],
    judged: Option<&[&ThresholdReport]>,
    overridden: bool,
    extra: Vec<String>,
    extra_warnings: Vec<String>,
) -> (Vec<String>, Vec<String>) {
    let rejudged = |line: &str| {
        judged.is_some_and(|j| {
            line.strip_prefix(UNMET).is_some_and(|rest| {
                j.iter()
                    .any(|t| rest.starts_with(&format!("{} (measured ", t.expect)))
            })
        })
    };
    let mut failures = grouped(said, |s| s.failures, rejudged, false);
    if let Some(j) = judged {
        failures.extend(
            j.iter()
                // `--max-error-rate` stood in for the run's own error rate threshold.
                .filter(|t| !t.ok && (!overridden || t.metric != "error_rate"))
                .map(|t| format!("{UNMET}{} (measured {}, all shards)", t.expect, t.actual)),
        );
    }
    failures.extend(extra);
    let mut warnings = grouped(said, |s| s.warnings, |_| false, true);
    warnings.extend(extra_warnings);
    (failures, warnings)
}

/// Each distinct line once, in the order first said, prefixed by the shards that said it
/// (`every shard:`); with `quiet_when_all`, a line every shard said has no prefix.
fn grouped<'a>(
    said: &'a [Said],
    of: impl Fn(&Said<'a>) -> &'a [String],
    skip: impl Fn(&str) -> bool,
    quiet_when_all: bool,
) -> Vec<String> {
    let mut order: Vec<(&str, Vec<u64>)> = Vec::new();
    for s in said {
        for line in of(s) {
            if skip(line) {
                continue;
            }
            match order.iter_mut().find(|(l, _)| l == line) {
                Some((_, who)) => who.push(s.index),
                None => order.push((line, vec![s.index])),
            }
        }
    }
    order
        .into_iter()
        .map(|(line, who)| {
            // A shard's line that names the shard already (`shard 0 of 3: ...`).
            let named =
                matches!(who.as_slice(), [one] if line.starts_with(&format!("shard {one} ")));
            if named {
                line.to_string()
            } else if who.len() == said.len() && said.len() > 1 {
                if quiet_when_all {
                    line.to_string()
                } else {
                    format!("every shard: {line}")
                }
            } else {
                format!("{}: {line}", super::shard_list(&who))
            }
        })
        .collect()
}

/// The merged phase's status: interrupted when any shard was, failed when anything failed,
/// not run when no shard ran it.
pub fn status(said: &[Said], failures: &[String]) -> Status {
    if said.iter().any(|s| s.status == Status::Interrupted) {
        Status::Interrupted
    } else if !said.is_empty() && said.iter().all(|s| s.status == Status::NotRun) {
        Status::NotRun
    } else if failures.is_empty() {
        // A shard that failed only a threshold the merged figures meet is not a failure.
        Status::Ok
    } else {
        Status::Failed
    }
}
