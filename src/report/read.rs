//! A finished run's report read back (`wlrun report`): report.json, from a run directory or
//! named directly. Only this wlrun's report format is read; another is refused by name, since
//! its fields may mean other things.

use std::path::{Path, PathBuf};

use super::{Report, REPORT_FORMAT};

/// The oldest report format this wlrun reads.
const READS_FROM: u64 = 2;

/// A run read back for `wlrun report`.
pub struct Run {
    pub report: Report,
    /// What `--json` prints: report.json as written, or the rebuilt report.
    pub text: String,
    /// Set when the run was killed and its report was rebuilt from its time series: says so.
    pub rebuilt: Option<String>,
    /// What was cut short in the run directory and left out (a damaged report.json, a line
    /// of `series/`): the report is short of it, and `wlrun report` exits 2.
    pub damaged: Vec<String>,
}

/// The run at `path`: its report.json, or for a killed run's directory (no report.json, but
/// time series) the report rebuilt from those. A report.json that is empty or not JSON (a
/// full disk) is rebuilt from the time series too, when there are some, and said to be
/// damaged.
pub fn read_run(path: &Path) -> Result<Run, String> {
    let killed = super::rebuild::is_killed_run(path);
    let broken = match killed {
        false if has_series(path) => unreadable(&path.join("report.json")),
        _ => None,
    };
    if !killed && broken.is_none() {
        let (report, text) = read_report(path)?;
        return Ok(Run {
            report,
            text,
            rebuilt: None,
            damaged: Vec::new(),
        });
    }
    let (report, mut damaged) = super::rebuild::rebuild(path)?;
    let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())? + "\n";
    let phases: usize = report.cells.iter().map(|c| c.phases.len()).sum();
    let what = match &broken {
        Some(e) => {
            damaged.insert(0, e.clone());
            format!("{}'s report.json cannot be read", path.display())
        }
        None => format!("{} has no report.json: the run was killed", path.display()),
    };
    Ok(Run {
        report,
        text,
        rebuilt: Some(format!(
            "{what}; its {phases} phase{} rebuilt from the time series, as far as their \
             intervals go",
            if phases == 1 { " is" } else { "s are" }
        )),
        damaged,
    })
}

fn has_series(dir: &Path) -> bool {
    dir.is_dir() && dir.join(super::series::DIR).join("phases.jsonl").is_file()
}

/// Why `file` is no report at all (empty, cut short, not JSON), or `None` when it reads as
/// JSON (whether it is a report of this format is for `read_report` to say).
fn unreadable(file: &Path) -> Option<String> {
    let text = match std::fs::read(file) {
        Ok(t) => t,
        Err(e) => return Some(format!("cannot read {}: {e}", file.display())),
    };
    if text.iter().all(u8::is_ascii_whitespace) {
        return Some(format!("{} is empty", file.display()));
    }
    serde_json::from_slice::<serde_json::Value>(&text)
        .err()
        .map(|e| format!("{} is cut short or not JSON ({e})", file.display()))
}

/// The report at `path` (a run directory, `--out DIR`, or a report.json file) and its text as
/// written: `--json` gives the text back rather than the parsed report re-serialized, whose
/// floats serde_json reads to within an ulp, not always to the same bits.
pub fn read_report(path: &Path) -> Result<(Report, String), String> {
    let file: PathBuf = if path.is_dir() {
        path.join("report.json")
    } else {
        path.to_path_buf()
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if path.is_dir() && e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "{} has no report.json: the run did not end (a run stopped by Ctrl-C or \
                 SIGTERM writes one; a run killed before its first phase leaves only \
                 plan.json and sources/, and a later one its time series in series/)",
                path.display()
            ))
        }
        Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
    };
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", file.display()))?;
    // A plan.json has a `format` too; a report is the one that says when it started.
    if value.get("started").is_none() {
        return Err(format!(
            "{} is not a wlrun report (the report.json `wlrun run --out DIR` writes)",
            file.display()
        ));
    }
    match value.get("format").and_then(serde_json::Value::as_u64) {
        // Format 3 changed what some fields mean but kept their shapes; a format 2 report
        // reads with the fields format 3 added absent (docs/report-format.md).
        Some(f) if (READS_FROM..=u64::from(REPORT_FORMAT)).contains(&f) => {}
        Some(f) => {
            return Err(format!(
                "{} is report format {f}; this wlrun reads formats {READS_FROM} to \
                 {REPORT_FORMAT} (docs/report-format.md)",
                file.display()
            ))
        }
        None => {
            return Err(format!(
                "{} is not a wlrun report: it has no `format` number",
                file.display()
            ))
        }
    }
    let report = serde_json::from_value(value)
        .map_err(|e| format!("{} is not a wlrun report: {e}", file.display()))?;
    Ok((report, text))
}

/// The shards' run directories `dir` holds, when it is a directory of a sharded run's shards
/// rather than a run directory: no report.json, time series or shard of its own, and
/// subdirectories that are shards' run directories (their report.json has a `shard` object,
/// or a killed shard's `shard.json` says which it was), in name order. `None` otherwise.
pub fn shard_dirs(dir: &Path) -> Option<Vec<PathBuf>> {
    let own = ["report.json", super::files::SHARD_FILE, super::series::DIR];
    if !dir.is_dir() || own.iter().any(|f| dir.join(f).exists()) {
        return None;
    }
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    let shards: Vec<PathBuf> = subdirs.into_iter().filter(|d| is_shard_dir(d)).collect();
    (!shards.is_empty()).then_some(shards)
}

fn is_shard_dir(dir: &Path) -> bool {
    if dir.join(super::files::SHARD_FILE).is_file() {
        return true;
    }
    std::fs::read(dir.join("report.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .is_some_and(|v| v.get("shard").is_some_and(|s| s.is_object()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(name: &str, text: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(name), text).unwrap();
        dir
    }

    #[test]
    fn a_directory_or_its_file_reads_and_other_formats_are_refused_by_name() {
        let dir = dir_with("report.json", include_str!("testdata/runs.json"));
        let (from_dir, text) = read_report(dir.path()).unwrap();
        let (from_file, _) = read_report(&dir.path().join("report.json")).unwrap();
        assert_eq!(from_dir.cells.len(), 1);
        assert_eq!(from_file.workload, from_dir.workload);
        assert_eq!(text, include_str!("testdata/runs.json"));

        let two = include_str!("testdata/runs.json").replacen("\"format\": 3", "\"format\": 2", 1);
        let dir = dir_with("report.json", &two);
        assert_eq!(read_report(dir.path()).unwrap().0.format, 2);

        let old = include_str!("testdata/runs.json").replacen("\"format\": 3", "\"format\": 1", 1);
        let dir = dir_with("report.json", &old);
        let e = read_report(dir.path()).unwrap_err();
        assert!(
            e.contains("is report format 1; this wlrun reads formats 2 to 3"),
            "{e}"
        );

        let dir = dir_with("report.json", "{\"started\": \"\", \"cells\": []}");
        let e = read_report(dir.path()).unwrap_err();
        assert!(e.contains("has no `format` number"), "{e}");

        let dir = dir_with("plan.json", "{\"format\": 1, \"cells\": []}");
        let e = read_report(&dir.path().join("plan.json")).unwrap_err();
        assert!(e.contains("is not a wlrun report (the report.json"), "{e}");

        let dir = dir_with(
            "report.json",
            "{\"format\": 2, \"started\": \"\", \"cells\": 3}",
        );
        let e = read_report(dir.path()).unwrap_err();
        assert!(e.contains("is not a wlrun report"), "{e}");

        let dir = dir_with("plan.json", "{}");
        let e = read_report(dir.path()).unwrap_err();
        assert!(e.contains("has no report.json"), "{e}");
    }
}
