//! The `wlrun merge` subcommand, and `wlrun report` of a directory holding shards' run
//! directories (the merged view, in memory: nothing is written).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::Merged;
use crate::cli::{EXIT_FAILED, EXIT_OK, EXIT_UNMEASURED, EXIT_USAGE};
use crate::report::outcome::Outcome;
use crate::report::{self, read::Run};

/// `wlrun merge DIRS --out OUT`: 0 when the merged report is ok, 1 when it fails, 3 when it
/// could not measure (every failed phase could not connect), 2 when an input cannot be read or
/// OUT cannot take the run.
pub fn run(dirs: &[PathBuf], out: &Path, replace: bool, json: bool) -> i32 {
    let merged = match super::merge(dirs) {
        Ok(m) => m,
        Err(e) => {
            sayln!("wlrun merge: {e}");
            return EXIT_USAGE;
        }
    };
    match super::write(&merged, out, replace, dirs) {
        Ok(warning) => {
            if let Some(w) = warning {
                sayln!("wlrun merge: the page was not written: {w}");
            }
        }
        Err(e) => {
            sayln!("wlrun merge: {e}");
            return EXIT_USAGE;
        }
    }
    let text = if json {
        serde_json::to_string_pretty(&merged.report).expect("the report serializes") + "\n"
    } else {
        report::render::run_text(&merged.report)
    };
    let _ = std::io::stdout().write_all(text.as_bytes());
    let failures = merged
        .report
        .merged
        .as_ref()
        .map_or(0, |m| m.failures.len());
    if json && failures > 0 {
        if let Some(m) = &merged.report.merged {
            for f in &m.failures {
                sayln!("wlrun merge: {f}");
            }
        }
    }
    sayln!("wlrun merge: merged report written to {}", out.display());
    match merged.report.outcome() {
        Outcome::Passed => EXIT_OK,
        Outcome::Failed => EXIT_FAILED,
        Outcome::Unmeasured => EXIT_UNMEASURED,
    }
}

/// The run at `path` for `wlrun report`: a directory of shards' run directories (no
/// report.json of its own) merged in memory, or else the run itself. The merge, when there
/// was one, for the page.
pub fn read_run(path: &Path) -> Result<(Run, Option<Merged>), String> {
    let Some(dirs) = report::read::shard_dirs(path) else {
        return report::read::read_run(path).map(|r| (r, None));
    };
    let merged = super::merge(&dirs)?;
    let text = serde_json::to_string_pretty(&merged.report).map_err(|e| e.to_string())? + "\n";
    let run = Run {
        report: merged.report.clone(),
        text,
        rebuilt: Some(format!(
            "{} holds the run directories of {} shards: their merged view (nothing written; \
             `wlrun merge` writes it)",
            path.display(),
            dirs.len()
        )),
        damaged: Vec::new(),
    };
    Ok((run, Some(merged)))
}
