//! `wlrun merge SHARD_DIR... --out DIR`: the run directories of a sharded run's shards
//! (`wlrun run --shard I/N --out DIR`) put together into one run directory, as one process
//! running the whole run would have written it (docs/report-format.md, "Merged runs").
//!
//! The shards are checked first (`inputs`): one run, every index once; a shard missing, given
//! twice, of another run, killed, interrupted or failed fails the merged report naming it.
//! Then each phase is merged from the shards' parts (`ingest`, `runs`, `breakdown`): counts
//! add, histograms add exactly (`histo`), rates are taken over the union of the shards'
//! measured spans on the wall clock (`spans`), thresholds are judged again on the merged
//! figures (`thresholds`), the time series merge interval by interval (`series`), and the
//! verdict is said per shard (`verdict`). `write` makes the run directory; `command` is the
//! subcommand and `wlrun report` of a directory of shards.

mod breakdown;
mod codec;
pub mod command;
mod connections;
pub mod histo;
mod ingest;
mod inputs;
mod runs;
pub mod series;
pub mod spans;
mod streaming;
mod thresholds;
mod verdict;
mod write;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::report::merged::{MergedPhase, MergedReport, ShardSkew};
use crate::report::{CellReport, ErrorCount, PhaseReport, Report, REPORT_FORMAT};

pub use write::{page, write};

/// A merged run, in memory until `write` makes its directory.
pub struct Merged {
    pub report: Report,
    /// The merged phases' series files.
    pub series: Vec<series::Files>,
    /// The merged shard whose plan.json and sources/ the merged directory keeps: shard 0, or
    /// the lowest index merged.
    pub source: Option<PathBuf>,
}

/// Merges the shards' run directories `dirs`. An error (exit 2) when one cannot be read as a
/// shard's run directory at all; every other problem is in the merged report's failures.
pub fn merge(dirs: &[PathBuf]) -> Result<Merged, String> {
    let shards = dirs
        .iter()
        .map(|d| inputs::read(d))
        .collect::<Result<Vec<_>, String>>()?;
    let checked = inputs::check(shards);
    let source = checked.merged.first().map(|s| s.dir.clone());
    let plan = match &source {
        Some(dir) => thresholds::PlanThresholds::read(dir),
        None => Err("no shard to read plan.json from".into()),
    };
    // Every phase of every cell, in the order the first shard ran them; a phase only later
    // shards have (the first was killed before it) after.
    let mut order: Vec<(usize, String, String)> = Vec::new();
    for s in &checked.merged {
        for c in &s.report.cells {
            for p in &c.phases {
                let name = phase_name(p).to_string();
                if !order.iter().any(|(i, n, _)| *i == c.index && *n == name) {
                    order.push((c.index, name, c.key.clone()));
                }
            }
        }
    }
    let jobs: Vec<Job> = order
        .iter()
        .map(|(cell, name, _)| {
            let mut parts = Vec::new();
            let mut missing = Vec::new();
            for s in &checked.merged {
                let found = s
                    .report
                    .cells
                    .iter()
                    .filter(|c| c.index == *cell)
                    .flat_map(|c| &c.phases)
                    .find(|p| phase_name(p) == name);
                match found {
                    Some(p) => parts.push((s.info.index, s.dir.as_path(), p)),
                    None => missing.push(s.info.index),
                }
            }
            missing.extend(
                (0..checked.count).filter(|i| !checked.merged.iter().any(|s| s.info.index == *i)),
            );
            missing.sort_unstable();
            Job {
                ctx: Ctx {
                    cell: *cell,
                    phase: name,
                    missing,
                    plan: &plan,
                },
                parts,
            }
        })
        .collect();
    let outs = run_jobs(&jobs)?;
    let mut cells: Vec<CellReport> = Vec::new();
    let mut series = Vec::new();
    for ((cell, _, key), out) in order.iter().zip(outs) {
        series.extend(out.series);
        match cells.iter_mut().find(|c| c.index == *cell) {
            Some(c) => c.phases.push(out.report),
            None => cells.push(CellReport {
                index: *cell,
                key: key.clone(),
                phases: vec![out.report],
            }),
        }
    }
    cells.sort_by_key(|c| c.index);
    let merged_info = MergedReport {
        count: checked.count,
        plan: checked.plan.clone(),
        shards: checked.listed.clone(),
        failures: checked.failures.clone(),
        phases: skews(&checked.merged),
    };
    let first = checked.merged.first().map(|s| &s.report);
    let (started, elapsed_s) = span(&checked.merged);
    let report = Report {
        format: REPORT_FORMAT,
        workload: first.map(|r| r.workload.clone()).unwrap_or_default(),
        file: first.map(|r| r.file.clone()).unwrap_or_default(),
        seed: checked.seed,
        plan: Some(checked.plan.clone()),
        started,
        elapsed_s,
        interrupted: checked.merged.iter().any(|s| s.report.interrupted),
        signal: checked.merged.iter().find_map(|s| s.report.signal.clone()),
        // Shards may run on different machines: each shard's own report.json says where it ran.
        environment: None,
        cells,
        shard: None,
        merged: Some(merged_info),
    };
    Ok(Merged {
        report,
        series,
        source,
    })
}

/// One phase to merge: the shards' parts of it.
struct Job<'a> {
    ctx: Ctx<'a>,
    parts: Vec<(u64, &'a Path, &'a PhaseReport)>,
}

/// A merged phase and its series files.
pub struct PhaseOut {
    pub report: PhaseReport,
    pub series: Option<series::Files>,
}

/// The phases merged on every core: each is independent, and decoding the shards' interval
/// histograms is most of the work.
fn run_jobs(jobs: &[Job]) -> Result<Vec<PhaseOut>, String> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, Result<PhaseOut, String>)>> = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(jobs.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let out = merge_phase(&job.ctx, &job.parts);
                done.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((i, out));
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_else(|p| p.into_inner());
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, out)| out).collect()
}

/// What merging one phase knows besides its parts.
pub struct Ctx<'a> {
    pub cell: usize,
    pub phase: &'a str,
    /// Shards of the run whose part of this phase is not in the merge (missing, refused, or
    /// killed before it).
    pub missing: Vec<u64>,
    plan: &'a Result<thresholds::PlanThresholds, String>,
}

impl Ctx<'_> {
    /// The failure line for the shards whose part is not merged.
    fn missing_lines(&self) -> Vec<String> {
        if self.missing.is_empty() {
            return Vec::new();
        }
        vec![format!(
            "{} of the run {} no part in these figures: the merged counts lack {}",
            shard_list(&self.missing),
            if self.missing.len() == 1 {
                "has"
            } else {
                "have"
            },
            if self.missing.len() == 1 {
                "its share"
            } else {
                "their shares"
            }
        )]
    }

    /// The phase's thresholds as planned.
    fn planned(&self) -> Result<thresholds::Planned, String> {
        match self.plan {
            Ok(p) => p.of(self.cell, self.phase),
            Err(e) => Err(e.clone()),
        }
    }

    /// The plan's rows of an ingest phase, where a merge can know them: the shards' own
    /// figures added when every shard has one, else the plan's when the phase has no
    /// `duration` (a duration's rows are what each shard's span allowed, which a shard of a
    /// sharded run does not report).
    fn rows_expected(&self, parts: impl Iterator<Item = Option<u64>>) -> Option<u64> {
        let parts: Option<Vec<u64>> = parts.collect();
        if let Some(p) = parts.filter(|p| !p.is_empty()) {
            return Some(p.iter().sum());
        }
        let plan = self.plan.as_ref().ok()?;
        plan.ingest_rows(self.cell, self.phase)
    }

    /// The merged series of the phase, when every part has one; otherwise a warning says why
    /// there is none.
    fn series<'p>(
        &self,
        parts: impl Iterator<Item = (u64, &'p Path, Option<&'p crate::report::series::SeriesRef>)>,
        (ingest, service): (bool, bool),
        union: &spans::Union,
        warnings: &mut Vec<String>,
    ) -> Option<series::Merged> {
        let mut with = Vec::new();
        let mut without = Vec::new();
        for (index, dir, s) in parts {
            match s {
                Some(series) => with.push(series::Part { index, dir, series }),
                None => without.push(index),
            }
        }
        if !without.is_empty() {
            warnings.push(format!(
                "no merged time series: {} wrote none",
                shard_list(&without)
            ));
            return None;
        }
        let measured = union.spans.clone();
        match series::merge(&with, (self.cell, self.phase), ingest, service, measured) {
            Ok(m) => Some(m),
            Err(e) => {
                warnings.push(format!("no merged time series: {e}"));
                None
            }
        }
    }
}

/// One phase merged from its parts (`parts` in shard order).
fn merge_phase(ctx: &Ctx, parts: &[(u64, &Path, &PhaseReport)]) -> Result<PhaseOut, String> {
    let kinds: Vec<&str> = parts.iter().map(|(_, _, p)| kind(p)).collect();
    let ran: Vec<&(u64, &Path, &PhaseReport)> = parts
        .iter()
        .filter(|(_, _, p)| !matches!(p, PhaseReport::NotRun { .. }))
        .collect();
    let Some(&&(_, _, lead)) = ran.first() else {
        // No shard ran it: as the first shard says.
        let report = parts[0].2.clone();
        return Ok(PhaseOut {
            report,
            series: None,
        });
    };
    let not_run: Vec<String> = parts
        .iter()
        .filter_map(|(i, _, p)| match p {
            PhaseReport::NotRun { reason, .. } => {
                Some(format!("shard {i} did not run it: {reason}"))
            }
            _ => None,
        })
        .collect();
    let other_kind: Vec<u64> = ran
        .iter()
        .zip(&kinds)
        .filter(|(_, k)| **k != kind(lead))
        .map(|((i, _, _), _)| *i)
        .collect();
    if !other_kind.is_empty() {
        return Err(format!(
            "cell {} phase {}: {} ran it as another kind of phase than {}: the shards are not of \
             one plan",
            ctx.cell,
            ctx.phase,
            shard_list(&other_kind),
            kind(lead)
        ));
    }
    let mut out = match lead {
        PhaseReport::Ingest(_) => ingest::merge(
            ctx,
            &parts_of(&ran, |p| match p {
                PhaseReport::Ingest(r) => Some(r.as_ref()),
                _ => None,
            }),
        )?,
        PhaseReport::Queries(_) => {
            let ps = parts_of(&ran, |p| match p {
                PhaseReport::Queries(r) => Some(r.as_ref()),
                _ => None,
            });
            let (r, series) = runs::merge(ctx, &ps)?;
            PhaseOut {
                report: PhaseReport::Queries(Box::new(r)),
                series,
            }
        }
        PhaseReport::Requests(_) => {
            let ps = parts_of(&ran, |p| match p {
                PhaseReport::Requests(r) => Some(r.as_ref()),
                _ => None,
            });
            let (r, series) = runs::merge(ctx, &ps)?;
            PhaseOut {
                report: PhaseReport::Requests(Box::new(r)),
                series,
            }
        }
        PhaseReport::NotRun { .. } => unreachable!("filtered out above"),
    };
    if !not_run.is_empty() {
        let (failures, status) = match &mut out.report {
            PhaseReport::Ingest(r) => (&mut r.failures, &mut r.status),
            PhaseReport::Queries(r) => (&mut r.failures, &mut r.status),
            PhaseReport::Requests(r) => (&mut r.failures, &mut r.status),
            PhaseReport::NotRun { .. } => unreachable!("a merged phase ran"),
        };
        failures.extend(not_run);
        if *status == crate::report::Status::Ok {
            *status = crate::report::Status::Failed;
        }
    }
    Ok(out)
}

/// The shards' reports of one kind of phase (`pick` takes it out of a `PhaseReport`).
fn parts_of<'a, T>(
    ran: &[&(u64, &'a Path, &'a PhaseReport)],
    pick: impl Fn(&'a PhaseReport) -> Option<&'a T>,
) -> Vec<Part<'a, T>> {
    ran.iter()
        .filter_map(|&&(index, dir, p)| pick(p).map(|report| Part { index, dir, report }))
        .collect()
}

/// One shard's part of a phase.
pub struct Part<'a, T> {
    pub index: u64,
    pub dir: &'a Path,
    pub report: &'a T,
}

fn kind(p: &PhaseReport) -> &'static str {
    match p {
        PhaseReport::Ingest(_) => "ingest",
        PhaseReport::Queries(_) => "queries",
        PhaseReport::Requests(_) => "requests",
        PhaseReport::NotRun { .. } => "not_run",
    }
}

pub(crate) fn phase_name(p: &PhaseReport) -> &str {
    match p {
        PhaseReport::Ingest(r) => &r.name,
        PhaseReport::Queries(r) => &r.name,
        PhaseReport::Requests(r) => &r.name,
        PhaseReport::NotRun { name, .. } => name,
    }
}

/// Error classes merged: counts add, and each class's first message is the lowest shard's
/// that had the class (`maps` in shard order).
pub fn errors<'a>(
    maps: impl Iterator<Item = &'a BTreeMap<String, ErrorCount>>,
) -> BTreeMap<String, ErrorCount> {
    let mut out: BTreeMap<String, ErrorCount> = BTreeMap::new();
    for m in maps {
        for (class, e) in m {
            let entry = out.entry(class.clone()).or_default();
            if entry.count == 0 && entry.first.is_empty() {
                entry.first = e.first.clone();
            }
            entry.count += e.count;
        }
    }
    out
}

/// The sum of the figures some shards have; `None` when none has one.
fn sum_f64(parts: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    parts
        .flatten()
        .fold(None, |acc, v| Some(acc.unwrap_or(0.0) + v))
}

/// `shard 2`, `shards 1, 3 and 4`.
pub fn shard_list(indices: &[u64]) -> String {
    let names: Vec<String> = indices.iter().map(u64::to_string).collect();
    match names.as_slice() {
        [] => "no shard".into(),
        [one] => format!("shard {one}"),
        [rest @ .., last] => format!("shards {} and {last}", rest.join(", ")),
    }
}

/// Per phase, what each merged shard's barriers measured at its start.
fn skews(shards: &[inputs::Shard]) -> Vec<MergedPhase> {
    let mut out: Vec<MergedPhase> = Vec::new();
    for s in shards {
        for p in &s.info.phases {
            let skew = ShardSkew {
                index: s.info.index,
                start_skew_ms: p.start_skew_ms,
                skew_error_ms: p.skew_error_ms,
                waited_start_ms: p.waited_start_ms,
            };
            match out
                .iter_mut()
                .find(|m| m.cell == p.cell && m.phase == p.phase)
            {
                Some(m) => m.shards.push(skew),
                None => out.push(MergedPhase {
                    cell: p.cell,
                    phase: p.phase.clone(),
                    shards: vec![skew],
                }),
            }
        }
    }
    out
}

/// The merged run's start (the earliest shard's) and its wall time to the latest shard's end.
fn span(shards: &[inputs::Shard]) -> (String, f64) {
    use time::format_description::well_known::Rfc3339;
    let times: Vec<(time::OffsetDateTime, f64)> = shards
        .iter()
        .filter_map(|s| {
            time::OffsetDateTime::parse(&s.report.started, &Rfc3339)
                .ok()
                .map(|t| (t, s.report.elapsed_s))
        })
        .collect();
    let Some(start) = times.iter().map(|(t, _)| *t).min() else {
        let first = shards.first().map(|s| s.report.started.clone());
        let longest = shards
            .iter()
            .map(|s| s.report.elapsed_s)
            .fold(0.0, f64::max);
        return (first.unwrap_or_default(), longest);
    };
    let end = times
        .iter()
        .map(|(t, e)| (*t - start).as_seconds_f64() + e)
        .fold(0.0, f64::max);
    (start.format(&Rfc3339).unwrap_or_default(), end)
}

#[cfg(test)]
mod tests;
