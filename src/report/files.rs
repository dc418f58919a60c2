//! `--out DIR`: everything needed to reproduce and re-render a run. report.json (versioned),
//! report.csv (`csv`), plan.json, and in `sources/` every file the run read, laid
//! out as they were so that the copied workload checks and runs as is.
//!
//! The directory is checked and plan.json and `sources/` are written before anything is sent,
//! so a bad `--out` costs no run and a killed run still says what it was running; report.json
//! and report.csv are written when the run ends or is stopped.

use std::path::{Component, Path, PathBuf};

use super::Report;
use crate::plan::Plan;
use crate::source::{lexical, Origin};

/// The names a run writes in its directory: all that `--replace` removes.
const WRITTEN: &[&str] = &[
    "report.json",
    "report.csv",
    "report.html",
    "plan.json",
    SHARD_FILE,
    "sources",
    super::series::DIR,
];

/// A shard's run directory: which shard of which run it is, written when the run starts, so
/// that a shard killed before its report.json is still known by `wlrun merge`.
pub const SHARD_FILE: &str = "shard.json";

/// Makes `dir` ready for this run before anything is sent: created if missing; an empty
/// directory is fine; one that holds anything is refused unless `replace`, and then only when
/// it holds nothing but an earlier run's files (which are removed), never the files this run
/// reads. `reads` are the files on disk the run reads.
pub fn prepare(dir: &Path, replace: bool, reads: &[PathBuf]) -> Result<(), String> {
    let shown = dir.display();
    if dir.as_os_str().is_empty() {
        return Err("`--out` needs a directory name".into());
    }
    match std::fs::metadata(dir) {
        // Missing, or not reachable (a file on the way): creating it says why best.
        Err(_) => {
            return std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create the `--out` directory `{shown}`: {e}"));
        }
        Ok(m) if !m.is_dir() => {
            return Err(format!(
                "`--out {shown}` is a file, not a directory: name a new or empty directory"
            ))
        }
        Ok(_) => {}
    }
    let mut entries: Vec<String> = std::fs::read_dir(dir)
        .and_then(|rd| {
            rd.map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
                .collect()
        })
        .map_err(|e| format!("cannot read the `--out` directory `{shown}`: {e}"))?;
    if entries.is_empty() {
        return Ok(());
    }
    entries.sort();
    if !replace {
        return Err(format!(
            "`--out {shown}` is not empty (it holds {}): name a new or empty directory, or pass \
             --replace to replace an earlier run's files",
            list(&entries)
        ));
    }
    let foreign: Vec<String> = entries
        .iter()
        .filter(|e| !WRITTEN.contains(&e.strip_suffix(TMP).unwrap_or(e)))
        .cloned()
        .collect();
    if !foreign.is_empty() {
        return Err(format!(
            "`--out {shown}` holds {}, which no run wrote: --replace removes only report.json, \
             report.csv, report.html, plan.json, shard.json, sources/ and series/; name another \
             directory",
            list(&foreign)
        ));
    }
    // A workload run from an earlier run's sources/ must not delete what it is about to read.
    if let Ok(canon) = dir.canonicalize() {
        if let Some(inside) = reads
            .iter()
            .find(|r| r.canonicalize().is_ok_and(|r| r.starts_with(&canon)))
        {
            return Err(format!(
                "`--out {shown}` holds `{}`, which this run reads: --replace would delete it; \
                 name another directory",
                inside.display()
            ));
        }
    }
    for name in &entries {
        let path = dir.join(name);
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.map_err(|e| format!("cannot remove `{}` to replace it: {e}", path.display()))?;
    }
    Ok(())
}

fn list(names: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut out = names
        .iter()
        .take(SHOWN)
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        out.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    out
}

/// A file the run read, for `sources/`.
pub struct Source {
    pub origin: Origin,
    /// The text checked (a module), or `None` to copy the file as it is on disk (a CSV, a file
    /// to replay: possibly large, never held in memory).
    pub text: Option<String>,
}

/// What `write_start` did with the sources.
#[derive(Debug, Default)]
pub struct Written {
    /// Where the root workload went, relative to `sources/`.
    pub workload: Option<PathBuf>,
    /// Files not copied, and why.
    pub left_out: Vec<String>,
}

/// Writes plan.json and `sources/` into a directory `prepare` accepted. `sources[0]` is the
/// root workload. Files on disk keep their layout relative to the deepest folder that holds
/// them all, so relative imports, CSV paths, hooks and files to replay resolve in the copy as
/// they did in the original; stdlib files go under `sources/std/` for the record (a copied
/// workload still imports the stdlib built into wlrun). Files that look like private keys or
/// secrets are left out.
pub fn write_start(dir: &Path, plan: &Plan, sources: &[Source]) -> Result<Written, String> {
    let fail =
        |what: &str, e: std::io::Error| format!("cannot write {what} in {}: {e}", dir.display());
    let plan_json = serde_json::to_string_pretty(plan).map_err(|e| e.to_string())? + "\n";
    let plan_json = crate::secrets::mask_json(&plan_json);
    write_whole(&dir.join("plan.json"), plan_json.as_bytes()).map_err(|e| fail("plan.json", e))?;
    let src = dir.join("sources");
    std::fs::create_dir_all(&src).map_err(|e| fail("sources/", e))?;
    let mut written = Written::default();
    let mut taken = std::collections::HashSet::new();
    for (i, (source, rel)) in sources.iter().zip(layout(sources)).enumerate() {
        let name = match &source.origin {
            Origin::Disk(p) => p.display().to_string(),
            Origin::Stdlib(rest) => format!("std/{rest}"),
        };
        if !taken.insert(rel.clone()) {
            continue;
        }
        if i == 0 {
            written.workload = Some(rel.clone());
        }
        if let (Origin::Disk(p), None) = (&source.origin, &source.text) {
            if looks_secret(p) {
                written
                    .left_out
                    .push(format!("{name} (it looks like a private key or a secret)"));
                continue;
            }
        }
        let path = src.join(&rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| fail("sources/", e))?;
        }
        let done = match (&source.text, &source.origin) {
            (Some(text), _) => std::fs::write(&path, text),
            (None, Origin::Disk(p)) => std::fs::copy(p, &path).map(|_| ()),
            (None, Origin::Stdlib(rest)) => match crate::source::stdlib_file(rest) {
                Some(bytes) => std::fs::write(&path, bytes),
                None => continue,
            },
        };
        done.map_err(|e| format!("cannot copy {name} into {}: {e}", src.display()))?;
    }
    Ok(written)
}

/// Writes `SHARD_FILE` (the shard's `shard` object as it starts: no phases yet).
pub fn write_shard(dir: &Path, shard: &super::shard::ShardReport) -> Result<(), String> {
    let json = serde_json::to_string_pretty(shard).map_err(|e| e.to_string())? + "\n";
    write_whole(
        &dir.join(SHARD_FILE),
        crate::secrets::mask_json(&json).as_bytes(),
    )
    .map_err(|e| format!("cannot write {SHARD_FILE} in {}: {e}", dir.display()))
}

/// Reads `SHARD_FILE` back: `None` where there is none (an unsharded run), or it does not read.
pub fn read_shard(dir: &Path) -> Option<super::shard::ShardReport> {
    let text = std::fs::read(dir.join(SHARD_FILE)).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Writes report.json, report.csv and report.html: at the end of the run, or when it was
/// stopped. The page is a view of the other two: a failure to write it is given back as a
/// warning (`Ok(Some(why))`), never as the run's failure.
pub fn write_report(dir: &Path, report: &Report) -> Result<Option<String>, String> {
    let fail =
        |what: &str, e: std::io::Error| format!("cannot write {what} in {}: {e}", dir.display());
    // Masked as a whole too: its messages were masked where they were made, and a secret must
    // not reach the file through one that was not (`secrets`).
    let json = serde_json::to_string_pretty(report).map_err(|e| e.to_string())? + "\n";
    let json = crate::secrets::mask_json(&json);
    write_whole(&dir.join("report.json"), json.as_bytes()).map_err(|e| fail("report.json", e))?;
    write_whole(&dir.join("report.csv"), &super::csv::csv(report)?)
        .map_err(|e| fail("report.csv", e))?;
    Ok(super::html::write(dir, report).err())
}

/// Writes `bytes` as the file `path` whole or not at all: into `NAME.tmp` beside it, synced,
/// then renamed over it. A direct write on a full disk left a 0-byte report.json, which then
/// hid the run's time series from `wlrun report`; now the old file (or none) stays, and the
/// error says why.
pub fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(TMP);
    let tmp = path.with_file_name(name);
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        // A file system may report a full disk only when the data reaches it.
        f.sync_all()
    });
    let done = written.and_then(|()| std::fs::rename(&tmp, path));
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

/// What `write_whole` appends to a file's name while it writes it.
const TMP: &str = ".tmp";

/// Each source's path under `sources/`.
fn layout(sources: &[Source]) -> Vec<PathBuf> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let absolute: Vec<Option<PathBuf>> = sources
        .iter()
        .map(|s| match &s.origin {
            Origin::Disk(p) => Some(lexical(&cwd.join(p))),
            Origin::Stdlib(_) => None,
        })
        .collect();
    let mut base: Option<PathBuf> = None;
    for parent in absolute.iter().flatten().filter_map(|p| p.parent()) {
        base = Some(match base {
            None => parent.to_path_buf(),
            Some(b) => b
                .components()
                .zip(parent.components())
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| a)
                .collect(),
        });
    }
    let base = base.unwrap_or_default();
    sources
        .iter()
        .zip(absolute)
        .map(|(s, abs)| match (&s.origin, abs) {
            (Origin::Stdlib(rest), _) => Path::new("std").join(rest),
            (_, Some(abs)) => abs
                .strip_prefix(&base)
                .map_or_else(|_| normal_only(&abs), Path::to_path_buf),
            (Origin::Disk(p), None) => normal_only(p),
        })
        .collect()
}

/// The path's plain names only: never outside `sources/`.
fn normal_only(p: &Path) -> PathBuf {
    p.components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect()
}

/// Private keys and credential files do not belong in a directory people share to show a
/// result: judged by the name, and by a PEM private-key header at the start.
fn looks_secret(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let by_name = [
        ".pgpass",
        ".netrc",
        ".env",
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
    ]
    .contains(&name.as_str())
        || ["pem", "key", "p12", "pfx", "jks", "keystore"]
            .iter()
            .any(|ext| name.ends_with(&format!(".{ext}")));
    by_name || starts_with_private_key(path)
}

fn starts_with_private_key(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 256];
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    let n = f.read(&mut head).unwrap_or(0);
    let head = String::from_utf8_lossy(&head[..n]);
    head.trim_start().starts_with("-----BEGIN") && head.contains("PRIVATE KEY-----")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_that_cannot_be_written_is_a_warning_and_the_report_is_still_written() {
        let dir = tempfile::tempdir().unwrap();
        // A directory where the page goes: the write fails, the JSON and CSV do not.
        std::fs::create_dir(dir.path().join("report.html")).unwrap();
        let report: Report =
            serde_json::from_str(include_str!("testdata/runs.json")).expect("runs.json reads");
        let warning = write_report(dir.path(), &report).unwrap();
        let warning = warning.expect("the page's failure is given back");
        assert!(warning.contains("cannot write report.html"), "{warning}");
        assert!(dir.path().join("report.json").is_file());
        assert!(dir.path().join("report.csv").is_file());
    }

    #[test]
    fn keys_and_credentials_are_secrets_and_data_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        assert!(looks_secret(&write("client.key", "x")));
        assert!(looks_secret(&write(".pgpass", "h:5432:db:u:pw")));
        assert!(looks_secret(&write(
            "tls.txt",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n"
        )));
        assert!(!looks_secret(&write("params.csv", "host,ts\nh1,1\n")));
        assert!(!looks_secret(&write("cpu.ilp", "cpu,host=a v=1i 1\n")));
    }

    #[test]
    fn files_keep_their_layout_under_the_deepest_common_folder() {
        let src = |p: &str| Source {
            origin: Origin::Disk(p.into()),
            text: None,
        };
        let sources = [
            src("/w/bench/run.wl"),
            src("/w/bench/../lib/m.wl"),
            src("/w/bench/data/./p.csv"),
            Source {
                origin: Origin::Stdlib("tsbs/cpu-only.wl".into()),
                text: None,
            },
        ];
        let got = layout(&sources);
        let want: Vec<PathBuf> = [
            "bench/run.wl",
            "lib/m.wl",
            "bench/data/p.csv",
            "std/tsbs/cpu-only.wl",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(got, want);
    }
}
