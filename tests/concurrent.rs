//! `concurrent` groups end to end (docs/language.md, "concurrent"): members start together, a
//! query run beside an ingest into PostgreSQL sees the rows arrive, `until` stops the others
//! as their duration would (cut off, not failed; an ingest judged on what its span allowed),
//! and a signal interrupts every member. PostgreSQL tests skip with a note where the server is
//! missing (they fail under CI=true). Timing bounds are generous: a shared 2-core machine.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

#[path = "common/cli.rs"]
mod cli;
#[path = "common/servers.rs"]
mod servers;

use cli::run_json_in;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn phase<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["cells"][0]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no phase {name}: {r:#}"))
}

/// `scheduled = ok + failed + cut off + unsent`, with the run's own counts.
fn assert_adds_up(p: &Value) {
    assert_eq!(
        u(&p["scheduled"]),
        u(&p["ok"]) + u(&p["failed"]) + u(&p["cut_off"]) + u(&p["unsent"]),
        "{p:#}"
    );
}

/// A table of `rows` rows for PostgreSQL, named per test so that tests may run at once.
fn pg_workload(table: &str, rows: u64, body: &str) -> String {
    let url = servers::pg_url();
    format!(
        r#"
workload w {{ seed 3 }}
target db {{ pg "{url}" }}
schema s {{
  table "{table}"
  field v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for {rows}s
}}
query all {{ sql "SELECT v FROM {table}" }}
{body}
"#
    )
}

/// The reads see the table fill: each query returns the rows sent so far, so over the ingest's
/// span the rows per query lie well between none and all. Run one after the other, they would
/// be all (ingest first) or none (reads first).
#[test]
fn a_query_run_beside_an_ingest_sees_its_rows_arrive_and_ends_with_it() {
    if !servers::pg_up() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = pg_workload(
        "wlrun_conc_arrive",
        2_000,
        r#"
ingest load { into db via pg  rows s  batch 50 rows  rate 1000/s  verify visible within 10s }
run reads { against db.pg  queries all  rate 20/s  duration 1h }
concurrent mixed { phases load, reads  until load }
"#,
    );
    let started = Instant::now();
    let (code, r, err) = run_json_in(dir.path(), &text, &[]);
    assert_eq!(code, 0, "{err}\n{r:#}");
    // The reads' hour was cut short by the ingest's ~2 s.
    assert!(started.elapsed() < Duration::from_secs(60), "{r:#}");
    let phases = r["cells"][0]["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 2);
    assert_eq!(phases[0]["name"], "load");
    assert_eq!(phases[1]["name"], "reads");
    let (load, reads) = (phase(&r, "load"), phase(&r, "reads"));
    assert_eq!(load["status"], "ok", "{load:#}");
    assert_eq!(reads["status"], "ok", "{reads:#}");
    assert_eq!(u(&load["rows_sent"]), 2_000);
    assert_eq!(u(&load["rows_visible"]), 2_000);
    let c = &load["concurrent"];
    assert_eq!(c["group"], "mixed");
    assert_eq!(c["until"], "load");
    assert_eq!(c["set_end"], true);
    assert_eq!(c["stopped_by_group"], false);
    let c = &reads["concurrent"];
    assert_eq!(c["set_end"], false);
    assert_eq!(c["stopped_by_group"], true, "{reads:#}");
    assert!(f(&c["started_at_offset_ms"]) < 500.0, "{c}");
    // The reads ended with the ingest's sending (its verify comes after), not an hour later.
    let (load_end, reads_end) = (
        f(&load["concurrent"]["ended_at_offset_ms"]),
        f(&c["ended_at_offset_ms"]),
    );
    assert!(load_end >= 1_500.0, "{load:#}");
    assert!(
        reads_end >= load_end && reads_end < load_end + 3_000.0,
        "{r:#}"
    );
    assert!(
        reads["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().starts_with("stopped when load ended")),
        "{reads:#}"
    );
    assert_adds_up(reads);
    assert!(u(&reads["ok"]) >= 10, "{reads:#}");
    let per_query = f(&reads["query_types"][0]["rows_per_query"]);
    assert!(
        per_query > 200.0 && per_query < 1_800.0,
        "the reads saw {per_query} rows per query of 2,000: not while the rows arrived\n{reads:#}"
    );
}

/// `until reads`: a short run stops an ingest with a long duration, which is judged on the
/// rows its span allowed, and whose visible rows are the rows it sent.
#[test]
fn until_a_run_stops_a_long_ingest_judged_on_what_its_span_allowed() {
    if !servers::pg_up() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = pg_workload(
        "wlrun_conc_until",
        1_000_000,
        r#"
ingest load { into db via pg  rows s  batch 50 rows  rate 500/s  duration 1h  verify visible within 10s }
run reads { against db.pg  queries all  rate 5/s  duration 2s }
concurrent mixed { phases reads, load  until reads }
"#,
    );
    let (code, r, err) = run_json_in(dir.path(), &text, &[]);
    assert_eq!(code, 0, "{err}\n{r:#}");
    // The group's order, not the file's.
    assert_eq!(r["cells"][0]["phases"][0]["name"], "reads");
    let (load, reads) = (phase(&r, "load"), phase(&r, "reads"));
    assert_eq!(reads["status"], "ok", "{reads:#}");
    assert_eq!(load["status"], "ok", "{load:#}");
    assert_eq!(reads["concurrent"]["set_end"], true);
    assert_eq!(load["concurrent"]["stopped_by_group"], true, "{load:#}");
    let sent = u(&load["rows_sent"]);
    // About 2 s at 500 rows/s; an hour would be 1.8 M.
    assert!((500..=3_000).contains(&sent), "{load:#}");
    assert_eq!(u(&load["rows_visible"]), sent, "{load:#}");
    let s = &load["schedule"];
    assert_eq!(
        u(&load["rows_expected"]),
        u(&s["scheduled_rows"]) + u(&load["rows_dropped"]),
        "{load:#}"
    );
    assert_eq!(
        u(&s["scheduled_rows"]),
        sent + u(&s["cut_off_rows"]) + u(&s["unsent_rows"]),
        "{s}"
    );
    assert!(
        load["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("its span allowed")),
        "{load:#}"
    );
}

/// SIGINT during a group interrupts every member, and the report is written with both.
#[test]
fn a_signal_during_a_group_interrupts_every_member() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("w.wl"),
        r#"
workload w { seed 1 }
target t { null  sqlite "db.sqlite" }
schema s {
  field v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1000d
}
query one { sql "SELECT 1" }
ingest load { into t via null  rows s  batch 100 rows  rate 2000/s  duration 1h }
run reads { against t.sqlite  queries one  rate 10/s  duration 1h }
concurrent mixed { phases load, reads }
"#,
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .current_dir(dir.path())
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
    // Both members report progress: they run at once.
    let (mut load, mut reads) = (false, false);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !(load && reads) && Instant::now() < deadline {
        let Ok(line) = rx.recv_timeout(Duration::from_secs(60)) else {
            break;
        };
        load |= line.contains("load:");
        reads |= line.contains("reads:");
    }
    if !(load && reads) {
        let _ = child.kill();
    }
    assert!(load && reads, "the members never both reported progress");
    // A moment of measuring for both before the signal.
    std::thread::sleep(Duration::from_secs(1));
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the run did not stop within 30 s of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let err = reader.join().unwrap();
    assert_eq!(out.status.code(), Some(130), "{err}");
    let bytes = std::fs::read(dir.path().join("res/report.json")).unwrap();
    let r: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(r["interrupted"], true);
    for name in ["load", "reads"] {
        let p = phase(&r, name);
        assert_eq!(p["status"], "interrupted", "{p:#}");
        assert_eq!(p["concurrent"]["stopped_by_group"], false, "{p:#}");
    }
    assert!(u(&phase(&r, "load")["rows_sent"]) > 0);
    assert!(u(&phase(&r, "reads")["ok"]) > 0);
}
