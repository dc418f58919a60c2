//! The `wlrun` binary run as a user runs it, for the tests that drive it from outside.
#![allow(dead_code)] // each test file uses its own subset

use std::path::Path;
use std::process::{Command, Output};

/// `wlrun ARGS` in `dir`, whatever its exit code.
pub fn wlrun(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

/// The JSON report a run printed on standard output (a run that printed none fails the test,
/// showing what it printed instead).
pub fn report_of(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not a JSON report ({e}):\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Writes `text` as `w.wl` into `dir` and runs it with `--json --quiet` and `extra`: the exit
/// code, the JSON report and standard error (a run that prints no report fails the test).
pub fn run_json_in(dir: &Path, text: &str, extra: &[&str]) -> (i32, serde_json::Value, String) {
    std::fs::write(dir.join("w.wl"), text).unwrap();
    let mut args = vec!["run", "w.wl", "--json", "--quiet"];
    args.extend_from_slice(extra);
    let out = wlrun(dir, &args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON report ({e}): {err}"));
    (out.status.code().unwrap_or(-1), report, err)
}

/// `run_json_in` a fresh directory, with the side `files` (name, text) written beside `w.wl`.
pub fn run_json(
    text: &str,
    files: &[(&str, &str)],
    extra: &[&str],
) -> (i32, serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in files {
        std::fs::write(dir.path().join(name), body).unwrap();
    }
    run_json_in(dir.path(), text, extra)
}

/// What `run_out` left: the exit code, report.json, and what the run printed.
pub struct RunOut {
    pub code: i32,
    pub report: serde_json::Value,
    pub stdout: String,
    pub stderr: String,
}

impl RunOut {
    /// The first cell's first phase.
    pub fn phase(&self) -> serde_json::Value {
        self.report["cells"][0]["phases"][0].clone()
    }

    /// Standard output, then standard error.
    pub fn printed(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// Writes `text` as `w.wl` into `dir` and runs it with `--out res` and `extra`; a run that
/// writes no `res/report.json` fails the test, showing what it printed.
pub fn run_out(dir: &Path, text: &str, extra: &[&str]) -> RunOut {
    std::fs::write(dir.join("w.wl"), text).unwrap();
    let mut args = vec!["run", "w.wl", "--out", "res"];
    args.extend_from_slice(extra);
    let out = wlrun(dir, &args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = std::fs::read(dir.join("res/report.json"))
        .unwrap_or_else(|e| panic!("no report.json ({e}): {stdout}{stderr}"));
    RunOut {
        code: out.status.code().unwrap_or(-1),
        report: serde_json::from_slice(&report).unwrap(),
        stdout,
        stderr,
    }
}
