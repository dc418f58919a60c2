//! The files a shard reads, and where they go in its pod.
//!
//! The pod mirrors the directory `wlrun k8s` ran in: every file keeps its path relative to the
//! current directory, under `/workload`, and the container's working directory is the current
//! directory's place there. So the workload path on the command line, the paths a workload
//! names relative to itself (imports, CSV tables, hooks, row files) and the TLS files an
//! endpoint names relative to the current directory all resolve in the pod as they did here.
//! The files come from one projected volume: the ConfigMap's keys and the Secret's, each
//! mapped to its path (keys cannot hold `/`).

use std::path::{Component, Path, PathBuf};

use serde_json::Value as Json;

use crate::check::Checked;
use crate::plan::{Phase, Plan, RowSource};
use crate::source::{lexical, Origin, SourceMap};

/// Where the projected volume is mounted.
pub const MOUNT: &str = "/workload";

/// Kubernetes' limit on a ConfigMap's or a Secret's data: the values' bytes, all together
/// (the API server's `MaxSecretSize`, which it applies to both).
pub const DATA_LIMIT: u64 = 1024 * 1024;

/// The endpoint options that name files, read relative to the current directory (docs/tls.md).
const TLS_FILES: &[&str] = &["tls_ca", "tls_cert", "tls_key"];

#[derive(Debug)]
pub struct File {
    /// Relative to [`MOUNT`]: plain names only.
    pub path: String,
    /// As the workload or the command line named it, for messages.
    pub shown: String,
    pub bytes: Vec<u8>,
    /// A TLS file: it goes into the Secret.
    pub secret: bool,
}

#[derive(Debug)]
pub struct Files {
    /// The root workload first, then modules, then inputs and TLS files in the order found.
    pub files: Vec<File>,
    /// The root workload's path as given on the pod's command line (relative to the working
    /// directory).
    pub workload: String,
    /// The container's working directory.
    pub working_dir: String,
}

/// The root workload's path as the compiler should see it: relative to the current directory,
/// so that a path the workload writes as absolute stays recognizable as such.
pub fn relative_root(file: &Path, cwd: &Path) -> PathBuf {
    if file.is_absolute() {
        relative(&lexical(file), cwd)
    } else {
        lexical(file)
    }
}

/// Collects the files: the checked modules' text, the inputs checking recorded and the TLS
/// files the plan's endpoints name. Refuses what the pod could not find where the workload
/// looks: absolute paths, paths built from environment variables, row files not made yet.
pub fn collect(
    map: &SourceMap,
    checked: &Checked,
    plan: &Plan,
    root: &Path,
    cwd: &Path,
) -> Result<Files, String> {
    let mut found: Vec<(PathBuf, String, Option<Vec<u8>>, bool)> = Vec::new();
    let root_file = checked.program.root().file;
    let modules = std::iter::once(root_file).chain(
        checked
            .program
            .modules
            .iter()
            .map(|m| m.file)
            .filter(|&f| f != root_file),
    );
    for m in modules {
        let f = map.get(m);
        if let Origin::Disk(p) = &f.origin {
            found.push((
                p.clone(),
                f.name.clone(),
                Some(f.text.clone().into_bytes()),
                false,
            ));
        }
    }
    for origin in checked.program.inputs.list() {
        if let Origin::Disk(p) = origin {
            let shown = p.display().to_string();
            found.push((p, shown, None, false));
        }
    }
    missing_row_files(plan)?;
    for path in tls_files(plan)? {
        let shown = path.clone();
        found.push((PathBuf::from(path), shown, None, true));
    }

    let mut files: Vec<File> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut absolute = Vec::new();
    for (p, shown, text, secret) in found {
        if p.is_absolute() {
            absolute.push(shown);
            continue;
        }
        let abs = lexical(&cwd.join(&p));
        if !seen.insert(abs.clone()) {
            continue;
        }
        let bytes = match text {
            Some(t) => t,
            None => std::fs::read(&abs).map_err(|e| format!("cannot read `{shown}`: {e}"))?,
        };
        files.push(File {
            path: abs.display().to_string(),
            shown,
            bytes,
            secret,
        });
    }
    if !absolute.is_empty() {
        return Err(format!(
            "{} named by an absolute path: a pod looks for it at that path, where the \
             ConfigMap cannot put it; name it relative to the workload (TLS files: relative to \
             the current directory)",
            list(&absolute)
        ));
    }
    // The deepest folder holding the current directory and every file.
    let mut base = lexical(cwd);
    for f in &files {
        let parent = Path::new(&f.path).parent().unwrap_or(Path::new("/"));
        base = base
            .components()
            .zip(parent.components())
            .take_while(|(a, b)| a == b)
            .map(|(a, _)| a)
            .collect();
    }
    for f in &mut files {
        f.path = under(Path::new(&f.path), &base);
    }
    let here = under(&lexical(cwd), &base);
    let working_dir = if here.is_empty() {
        MOUNT.to_string()
    } else {
        format!("{MOUNT}/{here}")
    };
    Ok(Files {
        files,
        workload: root.display().to_string(),
        working_dir,
    })
}

/// A row file that does not exist yet (the compiler's warning) would be missing in the pod.
fn missing_row_files(plan: &Plan) -> Result<(), String> {
    let mut missing: Vec<String> = Vec::new();
    for cell in &plan.cells {
        for phase in &cell.phases {
            if let Phase::Ingest(p) = phase {
                if let RowSource::File {
                    path, bytes: None, ..
                } = &p.source
                {
                    if !missing.contains(path) {
                        missing.push(path.clone());
                    }
                }
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the row file {} does not exist: the manifests carry the files a run reads, so \
             make it first (`wlrun gen`)",
            list(&missing)
        ))
    }
}

/// The files the endpoints' `tls_ca`, `tls_cert` and `tls_key` name, from every endpoint in
/// the plan (phases, counts, probes), in the order the plan lists them.
fn tls_files(plan: &Plan) -> Result<Vec<String>, String> {
    fn walk(v: &Json, out: &mut Vec<String>, env: &mut Vec<String>) {
        match v {
            Json::Object(m) => {
                for (k, v) in m {
                    match v {
                        Json::String(s) if TLS_FILES.contains(&k.as_str()) => {
                            let list = if s.contains("${env:") {
                                &mut *env
                            } else {
                                &mut *out
                            };
                            if !list.contains(s) {
                                list.push(s.clone());
                            }
                        }
                        _ => walk(v, out, env),
                    }
                }
            }
            Json::Array(a) => a.iter().for_each(|v| walk(v, out, env)),
            _ => {}
        }
    }
    let json = serde_json::to_value(plan).map_err(|e| e.to_string())?;
    let (mut out, mut env) = (Vec::new(), Vec::new());
    walk(&json, &mut out, &mut env);
    if !env.is_empty() {
        return Err(format!(
            "the TLS file {} comes from an environment variable: wlrun k8s cannot tell which \
             file to put in the Secret; name the file",
            list(&env)
        ));
    }
    Ok(out)
}

/// The names of the environment variables the plan reads (`${env:NAME}` in its JSON), sorted.
pub fn env_names(plan: &Plan) -> Vec<String> {
    let json = serde_json::to_string(plan).unwrap_or_default();
    let mut names: Vec<String> = json
        .split("${env:")
        .skip(1)
        .filter_map(|rest| {
            let end = rest.find('}')?;
            let name = &rest[..end];
            (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
                .then(|| name.to_string())
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// `to` as a path relative to `from` (both absolute and lexical): `..` up to their common
/// folder, then down.
fn relative(to: &Path, from: &Path) -> PathBuf {
    let common = to
        .components()
        .zip(from.components())
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = PathBuf::new();
    for _ in from.components().skip(common) {
        out.push("..");
    }
    for c in to.components().skip(common) {
        out.push(c);
    }
    out
}

/// `p` below `base`, `/`-separated; empty for `base` itself.
fn under(p: &Path, base: &Path) -> String {
    p.strip_prefix(base)
        .unwrap_or(p)
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_climb_to_the_common_folder() {
        let r = |to: &str, from: &str| relative(Path::new(to), Path::new(from));
        assert_eq!(r("/w/bench/x.wl", "/w/bench"), PathBuf::from("x.wl"));
        assert_eq!(r("/w/lib/x.wl", "/w/bench"), PathBuf::from("../lib/x.wl"));
        assert_eq!(r("/x.wl", "/w/bench"), PathBuf::from("../../x.wl"));
        assert_eq!(
            relative_root(Path::new("/w/bench/../lib/./x.wl"), Path::new("/w/bench")),
            PathBuf::from("../lib/x.wl")
        );
        assert_eq!(
            under(Path::new("/w/bench/a/b"), Path::new("/w")),
            "bench/a/b"
        );
        assert_eq!(under(Path::new("/w"), Path::new("/w")), "");
    }
}
