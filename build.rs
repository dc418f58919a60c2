//! Records the commit wlrun is built from, for report.json's `environment.commit`: two runs of
//! "0.1.0" built from different commits are different programs. A build without git or
//! outside a checkout (a source tarball, a container context without `.git`) records none and
//! still builds: nothing here may fail the build.

use std::path::Path;
use std::process::Command;

fn main() {
    // Without this, cargo reruns the script whenever any file of the package changes.
    println!("cargo:rerun-if-changed=build.rs");
    // `.git` of this crate itself (a directory, or a file in a worktree), not of a repository
    // the crate happens to sit in: a vendored copy would take its host's commit.
    if !Path::new(".git").exists() {
        return;
    }
    let Some(commit) = git(&["rev-parse", "--short", "HEAD"]) else {
        return;
    };
    println!("cargo:rustc-env=WLRUN_COMMIT={commit}");
    // A new commit changes HEAD (detached) or the branch's ref (loose, or packed after a gc):
    // rebuild then. Paths that do not exist are left out, since cargo would rerun every time.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            if Path::new(&path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
}

/// `git ARGS`'s one line of output, or `None` when git is missing or says no.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!text.is_empty()).then_some(text)
}
