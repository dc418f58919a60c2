//! The merged run directory, as `wlrun run --out DIR` lays one out: report.json, report.csv
//! and report.html of the merged report, series/ of the merged series, and plan.json and
//! sources/ of the shard the merged report takes them from (every shard ran the same plan).

use std::path::Path;

use super::Merged;
use crate::report;

/// Writes `m` into `out` (new or empty; with `replace`, an earlier run's files are replaced).
/// `inputs` are the shards' directories, which `out` must not hold. A page that cannot be
/// written is given back as a warning.
pub fn write(
    m: &Merged,
    out: &Path,
    replace: bool,
    inputs: &[std::path::PathBuf],
) -> Result<Option<String>, String> {
    report::files::prepare(out, replace, inputs)?;
    write_files(m, out)?;
    report::files::write_report(out, &m.report)
}

/// The merged run's page, rendered from a scratch directory holding its series, plan and
/// sources (removed afterwards): `wlrun report DIR --html` of a directory of shards.
pub fn page(m: &Merged) -> Result<String, String> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let dir = std::env::temp_dir().join(format!("wlrun-merge-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let written = write_files(m, &dir);
    let page = written.map(|_| report::html::page(&m.report, Some(&dir)));
    let _ = std::fs::remove_dir_all(&dir);
    page
}

/// series/, plan.json and sources/.
fn write_files(m: &Merged, dir: &Path) -> Result<(), String> {
    let fail = |what: &Path, e: std::io::Error| format!("cannot write {}: {e}", what.display());
    let series = dir.join(report::series::DIR);
    std::fs::create_dir_all(&series).map_err(|e| fail(&series, e))?;
    for f in &m.series {
        for (name, bytes) in [(&f.counts, &f.counts_bytes), (&f.hlog, &f.hlog_bytes)] {
            let path = dir.join(name);
            std::fs::write(&path, bytes).map_err(|e| fail(&path, e))?;
        }
    }
    if let Some(src) = &m.source {
        let plan = src.join("plan.json");
        if plan.is_file() {
            let to = dir.join("plan.json");
            std::fs::copy(&plan, &to).map_err(|e| fail(&to, e))?;
        }
        let sources = src.join("sources");
        if sources.is_dir() {
            copy_dir(&sources, &dir.join("sources"))?;
        }
    }
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let entries =
        std::fs::read_dir(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", from.display()))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if src.is_dir() {
            copy_dir(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst)
                .map_err(|e| format!("cannot copy {} to {}: {e}", src.display(), dst.display()))?;
        }
    }
    Ok(())
}
