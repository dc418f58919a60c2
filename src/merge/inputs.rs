//! The shards' run directories read, and checked against each other before anything is added:
//! one run (the same shard count, plan and seed), every index once. What cannot be read at all
//! is an error (exit 2); what reads but does not fit, or failed, is a failure of the merged
//! report naming the shard and its directory (exit 1), never a shard silently left out.

use std::path::{Path, PathBuf};

use crate::report::merged::MergedShard;
use crate::report::shard::ShardReport;
use crate::report::{self, Report};

/// One shard's run directory, read.
pub struct Shard {
    /// As given.
    pub dir: PathBuf,
    pub report: Report,
    pub info: ShardReport,
    /// No report.json: the report was rebuilt from the time series.
    pub killed: bool,
}

impl Shard {
    /// `shard 2 (runs/s2)`.
    pub fn name(&self) -> String {
        format!("shard {} ({})", self.info.index, self.dir.display())
    }
}

/// The shard in `dir`: its report.json, or for a killed shard the report rebuilt from its time
/// series with the `shard.json` it wrote when it started. An error when `dir` is not a shard's
/// run directory at all.
pub fn read(dir: &Path) -> Result<Shard, String> {
    if !dir.is_dir() {
        return Err(format!(
            "{} is not a directory: name the shards' run directories (`wlrun run --shard I/N \
             --out DIR`)",
            dir.display()
        ));
    }
    let killed = !dir.join("report.json").exists();
    let report = if killed && !report::rebuild::is_killed_run(dir) {
        // Killed before its first phase began: nothing to rebuild, but it says which shard.
        match report::files::read_shard(dir) {
            Some(_) => empty_report(dir),
            None => report::read::read_report(dir)?.0,
        }
    } else {
        let run = report::read::read_run(dir)?;
        if let Some(cut) = run.damaged.first() {
            // As `compare`: short figures merged would pass for the shard's whole record.
            return Err(format!(
                "{cut}: a damaged shard is not merged (`wlrun report` shows what is left)"
            ));
        }
        run.report
    };
    let info = match &report.shard {
        Some(s) => s.clone(),
        None => {
            return Err(format!(
                "{} is not a shard's run directory: its report has no `shard` object (a run \
                 without --shard), and it holds no {}",
                dir.display(),
                report::files::SHARD_FILE
            ))
        }
    };
    Ok(Shard {
        dir: dir.to_path_buf(),
        report,
        info,
        killed,
    })
}

/// The report of a shard killed before any phase began: no cells.
fn empty_report(dir: &Path) -> Report {
    let plan: serde_json::Value = std::fs::read(dir.join("plan.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let w = &plan["workload"];
    Report {
        format: report::REPORT_FORMAT,
        workload: w["name"].as_str().unwrap_or_default().to_string(),
        file: w["file"].as_str().unwrap_or_default().to_string(),
        seed: w["seed"].as_u64().unwrap_or_default(),
        plan: None,
        started: String::new(),
        elapsed_s: 0.0,
        interrupted: true,
        signal: None,
        environment: None,
        cells: Vec::new(),
        shard: report::files::read_shard(dir),
        merged: None,
    }
}

/// What the checks decided.
pub struct Checked {
    /// The shards whose figures are merged, in index order.
    pub merged: Vec<Shard>,
    /// Every directory given, as the merged report lists them.
    pub listed: Vec<MergedShard>,
    pub count: u64,
    pub plan: String,
    pub seed: u64,
    /// Why the merged report fails, each naming a shard.
    pub failures: Vec<String>,
}

/// Checks `shards` against each other: the run they belong to is the one of shard 0 (or, when
/// no directory holds shard 0, of the lowest index given).
pub fn check(mut shards: Vec<Shard>) -> Checked {
    // Index order; the order given among a duplicate's directories.
    shards.sort_by_key(|s| s.info.index);
    let reference = shards
        .first()
        .map(|s| (s.info.count, s.info.plan.clone(), s.report.seed))
        .unwrap_or_default();
    let (count, plan, seed) = reference.clone();
    let mut merged: Vec<Shard> = Vec::new();
    let mut refused: Vec<(Shard, String)> = Vec::new();
    let mut failures = Vec::new();
    for s in shards {
        let why = if s.info.count != count {
            Some(format!(
                "is shard {} of {}, not of {count}: another run",
                s.info.index, s.info.count
            ))
        } else if s.info.plan != plan {
            Some(format!(
                "ran another plan ({}, not {}): another workload, params or seed",
                short(&s.info.plan),
                short(&plan)
            ))
        } else if s.report.seed != seed {
            Some(format!("ran with seed {}, not {seed}", s.report.seed))
        } else if s.info.index >= count {
            Some(format!(
                "has index {} of {count}: out of range",
                s.info.index
            ))
        } else if let Some(first) = merged.iter().find(|m| m.info.index == s.info.index) {
            Some(format!(
                "is given twice: {} holds shard {} too (merged instead)",
                first.dir.display(),
                s.info.index
            ))
        } else {
            None
        };
        match why {
            Some(why) => {
                failures.push(format!("{} {why}", s.name()));
                refused.push((s, why));
            }
            None => merged.push(s),
        }
    }
    for s in &merged {
        if let Some(why) = trouble(s) {
            failures.push(format!("{} {why}", s.name()));
        }
    }
    let missing: Vec<u64> = (0..count)
        .filter(|i| !merged.iter().any(|s| s.info.index == *i))
        .collect();
    for i in &missing {
        failures.push(format!(
            "shard {i} of {count} is missing: no directory given holds it, so its part of \
             every phase is not in the merged figures"
        ));
    }
    let mut listed: Vec<MergedShard> = merged
        .iter()
        .map(|s| MergedShard {
            index: Some(s.info.index),
            dir: s.dir.display().to_string(),
            merged: true,
            killed: s.killed,
            status: trouble(s).unwrap_or_else(|| "ok".into()),
        })
        .collect();
    listed.extend(refused.iter().map(|(s, why)| MergedShard {
        index: Some(s.info.index),
        dir: s.dir.display().to_string(),
        merged: false,
        killed: s.killed,
        status: format!("refused: {why}"),
    }));
    Checked {
        merged,
        listed,
        count,
        plan,
        seed,
        failures,
    }
}

/// What makes a shard's part fail the merged report, though it fits the run: it was killed,
/// interrupted, a barrier failed, or one of its phases failed.
fn trouble(s: &Shard) -> Option<String> {
    if s.killed {
        return Some(
            "was killed: it wrote no report.json; its phases are rebuilt from its time series, \
             as far as they go, without its errors, visibility or verdict"
                .into(),
        );
    }
    if s.report.interrupted {
        return Some(match &s.report.signal {
            Some(sig) => format!("was interrupted by {sig}"),
            None => "was interrupted".into(),
        });
    }
    if let Some(f) = &s.info.failure {
        return Some(format!("failed: {f}"));
    }
    let failed: Vec<String> = s
        .report
        .cells
        .iter()
        .flat_map(|c| c.phases.iter().map(move |p| (c.index, p)))
        .filter(|(_, p)| failed_beyond_thresholds(p))
        .map(|(cell, p)| format!("cell {cell} {}", super::phase_name(p)))
        .collect();
    (!failed.is_empty()).then(|| format!("failed: {}", failed.join(", ")))
}

/// A phase this shard failed for a reason of its own. Its thresholds are not one: they are
/// judged again on the merged figures (a shard of four sends a quarter of the queries, so its
/// own `qps` verdict says nothing of the run's), and the merged phase fails if they fail.
fn failed_beyond_thresholds(p: &report::PhaseReport) -> bool {
    let failures = match p {
        report::PhaseReport::Ingest(r) => &r.failures,
        report::PhaseReport::Queries(r) => &r.failures,
        report::PhaseReport::Requests(r) => &r.failures,
        report::PhaseReport::NotRun { .. } => return true,
    };
    match p.status() {
        report::Status::Ok => false,
        report::Status::Failed => {
            failures.is_empty()
                || failures
                    .iter()
                    .any(|f| !f.starts_with(super::verdict::UNMET))
        }
        report::Status::Interrupted | report::Status::NotRun => true,
    }
}

/// `sha256:0123abcd…`: enough of a digest to tell two apart.
fn short(digest: &str) -> String {
    let cut = digest
        .char_indices()
        .nth("sha256:".len() + 12)
        .map_or(digest.len(), |(i, _)| i);
    if cut < digest.len() {
        format!("{}…", &digest[..cut])
    } else {
        digest.to_string()
    }
}
