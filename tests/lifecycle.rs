//! A run's lifecycle seen from outside, as a container runtime, a CI runner or a user sees it:
//! the signals that stop it, and the `--out` directory from before the first request is sent
//! to after the last answer.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

/// A quick ingest into SQLite, then a query run that would go on for 30 s: a signal during the
/// query run finds one finished phase and one in flight.
const LONG_RUN: &str = r#"
workload w { seed 1 }
target local { sqlite "db.sqlite" }
schema cpu { rows 10  field v: long = 1 }
ingest make { into local via sqlite  rows cpu  batch 10 rows  teardown keep }
query q { sql "SELECT count(*) FROM cpu" }
run long { against local.sqlite  queries q  duration 30s  rate 200/s }
"#;

fn json_file(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Starts `wlrun run w.wl --out res` on LONG_RUN, waits until the query run has reported
/// progress (so the ingest phase is done and queries are being measured), sends `signal`, and
/// returns the exit code, standard output and standard error.
fn stopped_by(dir: &Path, signal: &str) -> (Option<i32>, String, String) {
    std::fs::write(dir.join("w.wl"), LONG_RUN).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .current_dir(dir)
        .args(["run", "w.wl", "--out", "res", "--progress-every", "0.2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    // A progress line of the query run; the deadline only bounds a run that never gets there.
    let mut seen = false;
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(60)) {
        if line.contains("long:") && line.contains(" ok ") {
            seen = true;
            break;
        }
    }
    if !seen {
        let _ = child.kill();
    }
    assert!(seen, "the query run never reported progress");
    std::thread::sleep(Duration::from_millis(300));
    let killed = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let err = reader.join().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        err,
    )
}

/// What a stopped run must leave: the table on standard output, and in `--out` the plan, the
/// finished ingest intact and the query run's measurements marked `interrupted`.
fn assert_stopped_run_kept(dir: &Path, stdout: &str, err: &str) {
    assert!(
        stdout.contains("long"),
        "no report printed:\n{stdout}\n{err}"
    );
    let res = dir.join("res");
    let plan = json_file(&res.join("plan.json"));
    assert_eq!(plan["format"], 1);
    let r = json_file(&res.join("report.json"));
    assert_eq!(r["interrupted"], true, "{r:#}");
    let phases = r["cells"][0]["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 2, "{r:#}");
    assert_eq!(phases[0]["phase"], "ingest");
    assert_eq!(phases[0]["status"], "ok", "{:#}", phases[0]);
    assert_eq!(phases[0]["rows_acked"], 10);
    assert_eq!(phases[1]["phase"], "queries");
    assert_eq!(phases[1]["status"], "interrupted", "{:#}", phases[1]);
    assert!(phases[1]["ok"].as_u64().unwrap() > 0, "{:#}", phases[1]);
    assert!(phases[1]["elapsed_s"].as_f64().unwrap() < 30.0);
    let csv = std::fs::read_to_string(res.join("report.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert!(res.join("sources/w.wl").exists());
}

#[test]
fn sigterm_stops_the_run_and_keeps_what_was_measured() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, err) = stopped_by(dir.path(), "TERM");
    assert_eq!(code, Some(143), "{err}");
    assert!(err.contains("SIGTERM"), "{err}");
    assert_stopped_run_kept(dir.path(), &stdout, &err);
    let r = json_file(&dir.path().join("res/report.json"));
    assert_eq!(r["signal"], "SIGTERM");
}

#[test]
fn sigint_stops_the_run_and_keeps_what_was_measured() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, err) = stopped_by(dir.path(), "INT");
    assert_eq!(code, Some(130), "{err}");
    assert_stopped_run_kept(dir.path(), &stdout, &err);
    let r = json_file(&dir.path().join("res/report.json"));
    assert_eq!(r["signal"], "SIGINT");
}
