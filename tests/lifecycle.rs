//! A run's lifecycle seen from outside, as a container runtime, a CI runner or a user sees it:
//! the signals that stop it, and the `--out` directory from before the first request is sent
//! to after the last answer.

#[path = "common/cli.rs"]
mod cli;
#[path = "common/oracles/mod.rs"]
mod oracles;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use cli::wlrun;
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
        // Intervals of 0.1 s: the stopped query run (about half a second) has enough of them
        // to be drawn, not listed as a short phase's table.
        .args([
            "run",
            "w.wl",
            "--out",
            "res",
            "--progress-every",
            "0.2",
            "--interval",
            "0.1",
        ])
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
    // A run that does not stop fails the test instead of hanging it (a stopped duration-bound
    // query run once spun forever).
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the run did not stop within 30 s of SIG{signal}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
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
    // The header, a row per phase, and one each for the query run's query type and label.
    assert_eq!(csv.lines().count(), 5, "{csv}");
    assert!(res.join("sources/w.wl").exists());
    // Its page too, saying it was stopped, with the interrupted run's charts over time (the
    // ingest, one interval long, is a table of it) and its numbers.
    let page = std::fs::read_to_string(res.join("report.html")).unwrap();
    assert!(
        page.contains("<span class=\"warn\">stopped by SIG"),
        "report.html"
    );
    assert!(
        page.contains("Latency percentiles over time</figcaption>"),
        "report.html"
    );
    // The stopped run re-renders from its directory: the final table it printed, last.
    let again = wlrun(dir, &["report", "res"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(
        text.ends_with(stdout),
        "re-rendered:\n{text}\nprinted:\n{stdout}"
    );
    assert!(text.contains("interrupted"), "{text}");
}

/// `wlrun report` needs neither the workload nor a server: a finished run's directory prints
/// what the run printed (the environment's header, each cell's lines, then the table), and
/// `--json` gives report.json back byte for byte.
#[test]
fn a_finished_run_re_renders_from_its_directory_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/examples/quickstart.wl"),
        dir.path().join("q.wl"),
    )
    .unwrap();
    let run = wlrun(dir.path(), &["run", "q.wl", "--quiet", "--out", "res"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    std::fs::remove_file(dir.path().join("q.wl")).unwrap();
    std::fs::remove_file(dir.path().join("bench.db")).ok();

    let again = wlrun(dir.path(), &["report", "res"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let cells: String = stderr(&run)
        .lines()
        .filter(|l| !l.starts_with("wlrun: report written"))
        .map(|l| format!("{l}\n"))
        .collect();
    let printed = cells + &String::from_utf8_lossy(&run.stdout);
    // Then what the run printed, after the environment's header (`--quiet` left it out of the
    // run's output; the re-render has it with the load at the end too).
    let again = String::from_utf8_lossy(&again.stdout);
    let header = again
        .lines()
        .take_while(|l| l.starts_with("wlrun ") || l.starts_with("  server "))
        .count();
    assert!(
        again.starts_with(&format!("wlrun {}", env!("CARGO_PKG_VERSION"))) && header >= 1,
        "{again}"
    );
    let rest: String = again
        .lines()
        .skip(header)
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(rest, printed);

    let json = wlrun(dir.path(), &["report", "res/report.json", "--json"]);
    assert_eq!(json.status.code(), Some(0), "{}", stderr(&json));
    let written = std::fs::read(dir.path().join("res/report.json")).unwrap();
    assert!(json.stdout == written, "--json differs from report.json");

    let plan = wlrun(dir.path(), &["report", "res/plan.json"]);
    assert_eq!(plan.status.code(), Some(2));
    assert!(
        stderr(&plan).contains("is not a wlrun report"),
        "{}",
        stderr(&plan)
    );
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

/// A workload that reads a file of every kind, laid out over two folders: a module imported
/// from `../lib`, a CSV of binds, a hook script and a line-protocol file to replay.
fn spread_workload(root: &Path) {
    let write = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        "bench/w.wl",
        r#"
import "../lib/m.wl" as m
workload w { seed 1 }
target local { sqlite "db.sqlite" }
ingest load { into local via sqlite table "cpu"  rows from file "data/cpu.ilp"  batch 10 rows  teardown keep }
query q {
  sql "SELECT count(*) FROM cpu WHERE host = $1"
  binds from csv "data/params.csv" (host text)
}
hook h from "hooks/h.rhai"
run r { against local.sqlite  queries q, m.total  count 4 }
"#,
    );
    write(
        "lib/m.wl",
        "query total { sql \"SELECT count(*) FROM cpu\" }\n",
    );
    write("bench/data/params.csv", "host\nh1\nh2\n");
    let ilp: String = (1..=6)
        .map(|i| format!("cpu,host=h{} v={i}i {i}000000000\n", i % 2 + 1))
        .collect();
    write("bench/data/cpu.ilp", &ilp);
    write(
        "bench/hooks/h.rhai",
        "fn request(ctx) { #{ method: \"GET\", path: \"/\" } }\n",
    );
}

fn files_under(dir: &Path) -> Vec<String> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, base, out);
            } else {
                out.push(p.strip_prefix(base).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn sources_hold_every_file_read_and_check_and_run_from_there() {
    let dir = tempfile::tempdir().unwrap();
    spread_workload(dir.path());
    let out = wlrun(
        dir.path(),
        &["run", "bench/w.wl", "--quiet", "--out", "res"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let sources = dir.path().join("res/sources");
    assert_eq!(
        files_under(&sources),
        [
            "bench/data/cpu.ilp",
            "bench/data/params.csv",
            "bench/hooks/h.rhai",
            "bench/w.wl",
            "lib/m.wl"
        ],
    );
    assert!(
        stderr(&out).contains("the workload as it ran: res/sources/bench/w.wl"),
        "{}",
        stderr(&out)
    );
    // The copy is the workload: it checks and runs where it was written, reading only the copy.
    std::fs::remove_dir_all(dir.path().join("bench")).unwrap();
    std::fs::remove_dir_all(dir.path().join("lib")).unwrap();
    let check = wlrun(dir.path(), &["check", "res/sources/bench/w.wl"]);
    assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
    let again = wlrun(&sources, &["run", "bench/w.wl", "--json", "--quiet"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let r: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(r["cells"][0]["phases"][0]["rows_acked"], 6, "{r:#}");
    assert_eq!(r["cells"][0]["phases"][1]["ok"], 4, "{r:#}");
}

/// An ingest into SQLite: whether anything was sent shows as the database file.
const SMALL_RUN: &str = r#"
workload w { seed 1 }
target local { sqlite "db.sqlite" }
schema cpu { rows 10  field v: long = 1 }
ingest make { into local via sqlite  rows cpu  batch 10 rows }
"#;

#[test]
fn an_out_that_is_a_file_is_refused_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), SMALL_RUN).unwrap();
    std::fs::write(dir.path().join("res"), "not a directory").unwrap();
    let out = wlrun(dir.path(), &["run", "w.wl", "--quiet", "--out", "res"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("`--out res` is a file, not a directory"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("db.sqlite").exists(), "the run went ahead");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("res")).unwrap(),
        "not a directory"
    );
    // A directory that cannot be created is refused as early.
    let out = wlrun(dir.path(), &["run", "w.wl", "--quiet", "--out", "res/sub"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot create the `--out` directory"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("db.sqlite").exists(), "the run went ahead");
}

#[test]
fn an_earlier_run_is_replaced_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), SMALL_RUN).unwrap();
    let seed_of = |dir: &Path| json_file(&dir.join("res/report.json"))["seed"].clone();
    let first = wlrun(dir.path(), &["run", "w.wl", "-q", "--out", "res"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert_eq!(seed_of(dir.path()), 1);

    let refused = wlrun(
        dir.path(),
        &["run", "w.wl", "-q", "--seed", "2", "--out", "res"],
    );
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("is not empty") && stderr(&refused).contains("--replace"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(seed_of(dir.path()), 1, "the earlier run was overwritten");

    let replaced = wlrun(
        dir.path(),
        &[
            "run",
            "w.wl",
            "-q",
            "--seed",
            "2",
            "--out",
            "res",
            "--replace",
        ],
    );
    assert_eq!(replaced.status.code(), Some(0), "{}", stderr(&replaced));
    assert_eq!(seed_of(dir.path()), 2);

    // --replace removes what a run wrote, never anything else.
    std::fs::write(dir.path().join("res/notes.txt"), "mine").unwrap();
    let foreign = wlrun(
        dir.path(),
        &[
            "run",
            "w.wl",
            "-q",
            "--seed",
            "3",
            "--out",
            "res",
            "--replace",
        ],
    );
    assert_eq!(foreign.status.code(), Some(2), "{}", stderr(&foreign));
    assert!(
        stderr(&foreign).contains("`notes.txt`"),
        "{}",
        stderr(&foreign)
    );
    assert_eq!(seed_of(dir.path()), 2);
    std::fs::remove_file(dir.path().join("res/notes.txt")).unwrap();

    // Nor the files of the workload being run, when it is the earlier run's copy.
    let own = wlrun(
        dir.path(),
        &["run", "res/sources/w.wl", "-q", "--out", "res", "--replace"],
    );
    assert_eq!(own.status.code(), Some(2), "{}", stderr(&own));
    assert!(
        stderr(&own).contains("which this run reads"),
        "{}",
        stderr(&own)
    );
    assert!(dir.path().join("res/sources/w.wl").exists());
}

#[test]
fn a_killed_run_keeps_its_intervals_and_renders_as_far_as_they_go() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), LONG_RUN).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .current_dir(dir.path())
        .args(["run", "w.wl", "--out", "res", "--interval", "0.2", "-q"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let res = dir.path().join("res");
    let counts = res.join("series/1-long.csv");
    // Three closed intervals of the query run are on disk: it is well under way.
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read_to_string(&counts).map_or(0, |t| t.lines().count()) < 4 {
        assert!(
            Instant::now() < deadline,
            "the query run wrote no intervals"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL: nothing runs after it
    child.wait().unwrap();
    assert_eq!(json_file(&res.join("plan.json"))["format"], 1);
    assert!(res.join("sources/w.wl").exists());
    assert!(!res.join("report.json").exists());

    // What the killed run had written is what its rebuilt report says.
    let text = std::fs::read_to_string(&counts).unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let ok_at = reader
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "ok")
        .unwrap();
    let written_ok: u64 = text
        .lines()
        .skip(1)
        .filter(|l| text.ends_with('\n') || !text.ends_with(l))
        .map(|l| l.split(',').nth(ok_at).unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(written_ok > 0, "{text}");
    let out = wlrun(dir.path(), &["report", "res", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("the run was killed"));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let phases = r["cells"][0]["phases"].as_array().unwrap();
    assert_eq!(phases[0]["phase"], "ingest");
    assert_eq!(phases[0]["rows_sent"], 10, "{:#}", phases[0]);
    let q = &phases[1];
    assert_eq!(q["status"], "interrupted");
    // The interval log may hold one interval more than the counts if the kill fell between
    // the two writes; never fewer.
    let ok = q["ok"].as_u64().unwrap();
    assert_eq!(ok, written_ok, "{q:#}");
    assert!(q["latency"]["count"].as_u64().unwrap() >= ok, "{q:#}");
    assert!(q["qps"].as_f64().unwrap() > 50.0, "{q:#}");
    let table = wlrun(dir.path(), &["report", "res"]);
    assert_eq!(table.status.code(), Some(0));
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains("long") && table.contains("interrupted"),
        "{table}"
    );
}

/// Many workers with big batches against a server that reads slowly: every worker's write
/// waits on the server, and its producer has the next batch ready. SIGINT must cut the writes
/// in flight after the grace and abandon what was not sent, not wait for the endpoint's
/// `timeout` (60 s) on each; the report is written and its accounting stays whole. Before, the
/// run was still alive 30 s after "stopping the workers".
#[test]
fn sigint_under_load_stops_within_the_grace_and_keeps_the_accounting_whole() {
    // 4 KiB every 50 ms per connection: an 8 MB batch (rows of 1 KB), more than the kernel
    // buffers on both sides hold, takes minutes.
    let server = oracles::trickle::TrickleServer::start(4096, Duration::from_millis(50));
    let text = format!(
        r#"workload w {{ seed 1 }}
{}schema s {{
  series host: symbol = format("h%d", n) for n in 0..64
  field  note: varchar = format("%d{}", uniform(0, 9))
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1d
}}
ingest load {{ into sink via ilp_tcp table t  rows s  batch 8000 rows  workers 8  rate 10000000/s  duration 60s }}
"#,
        server.target(),
        "x".repeat(1000)
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), text).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .current_dir(dir.path())
        .args(["run", "w.wl", "--out", "res", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        let _ = std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut all);
        all
    });
    // Under way: every worker connected and the server has read from them; the deadline only
    // bounds a run that never gets there.
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.connections() < 8 || server.bytes() < 8 * 4096 {
        if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!("the ingest never got under way: {}", reader.join().unwrap());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    // A hang guard, not a measurement: the grace is 1 s, the endpoint's timeout 60 s.
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the run did not stop within 20 s of SIGINT: {}",
                reader.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let code = child.wait().unwrap().code();
    let err = reader.join().unwrap();
    assert_eq!(code, Some(130), "{err}");
    let r = json_file(&dir.path().join("res/report.json"));
    assert_eq!(r["signal"], "SIGINT");
    let p = &r["cells"][0]["phases"][0];
    assert_eq!(p["status"], "interrupted", "{p:#}");
    // Every row taken into a batch was sent or cut off; the rows due by the stop that were
    // never sent are unsent.
    let n = |v: &Value| {
        v.as_u64()
            .unwrap_or_else(|| panic!("not a count: {v}\n{p:#}"))
    };
    assert_eq!(
        n(&p["rows_generated"]),
        n(&p["rows_sent"]) + n(&p["rows_cut_off"]) + n(&p["rows_dropped"]),
        "{p:#}"
    );
    let s = &p["schedule"];
    assert_eq!(
        n(&s["scheduled_rows"]),
        n(&p["rows_sent"]) + n(&s["cut_off_rows"]) + n(&s["unsent_rows"]),
        "{p:#}"
    );
    // The writes the server was still taking were cut off, not waited for.
    assert!(n(&p["rows_cut_off"]) > 0, "{p:#}");
}

/// A tmpfs mounted on a directory for the guard's life: a file system that really fills up.
/// CI runs as root; a machine that cannot mount skips the test with a note, except under
/// CI=true, where it fails.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if mounted {
            return Some(Tmpfs(dir.to_path_buf()));
        }
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true and no tmpfs could be mounted on {} (the full-disk test needs root)",
            dir.display()
        );
        eprintln!("note: the full-disk test is skipped: no tmpfs could be mounted (not root?)");
        None
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazily: a run still holding a file in it must not keep the mount.
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Thirty cells of a second each into the null sink: a run that would take half a minute.
const MANY_CELLS: &str = r#"
workload w { seed 1 }
target t { null }
matrix { k in 0..30 }
schema s {
  series host: symbol = format("h%d", n) for n in 0..10
  field  v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1d
}
ingest load { into t via null  rows s  batch 100 rows  rate 2000/s  duration 1s }
"#;

/// `--out` on a file system that fills up during the run: the run stops sending at the first
/// write that fails, says so, prints what it measured and exits 1; no 0-byte report.json is
/// left, and `wlrun report` renders the directory from its time series. Before, the run went
/// on through every cell and left an empty report.json that `wlrun report` called "not JSON".
#[test]
fn a_full_disk_stops_the_run_and_leaves_no_empty_report() {
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("disk");
    std::fs::create_dir(&disk).unwrap();
    let Some(_mounted) = Tmpfs::mount(&disk, "256k") else {
        return;
    };
    std::fs::write(dir.path().join("w.wl"), MANY_CELLS).unwrap();
    let res = disk.join("res");
    let mut child = Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .current_dir(dir.path())
        .args([
            "run",
            "w.wl",
            "--json",
            "--quiet",
            "--interval",
            "0.05",
            "--out",
        ])
        .arg(&res)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (mut out_pipe, mut err_pipe) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = std::thread::spawn(move || {
        let mut all = Vec::new();
        let _ = std::io::Read::read_to_end(&mut out_pipe, &mut all);
        all
    });
    let err = std::thread::spawn(move || {
        let mut all = String::new();
        let _ = std::io::Read::read_to_string(&mut err_pipe, &mut all);
        all
    });
    // Under way: the first phase has announced itself. Then the disk fills.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !res.join("series/phases.jsonl").exists() {
        if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!("the run never started a phase: {}", err.join().unwrap());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let filler = vec![0u8; 4096];
    let mut f = std::fs::File::create(disk.join("filler")).unwrap();
    while std::io::Write::write_all(&mut f, &filler).is_ok() {}
    drop(f);
    // A hang guard: a run that goes on through its thirty cells takes 30 s.
    let deadline = Instant::now() + Duration::from_secs(25);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the run went on after the disk filled: {}",
                err.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let code = child.wait().unwrap().code();
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("No space left on device") && err.contains("nothing more is sent"),
        "{err}"
    );
    // What was measured is printed, the stopped phase failed saying why, and no cell after it
    // ran.
    let r: Value = serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{e}: {err}"));
    let cells = r["cells"].as_array().unwrap();
    assert!(
        !cells.is_empty() && cells.len() < 30,
        "{} cells ran",
        cells.len()
    );
    let last = &cells[cells.len() - 1]["phases"][0];
    assert_eq!(last["status"], "failed", "{last:#}");
    assert!(
        last["failures"]
            .to_string()
            .contains("No space left on device"),
        "{last:#}"
    );
    assert_eq!(r["interrupted"], false);
    // No report.json at all rather than an empty one: the disk was full when it was written.
    assert!(!res.join("report.json").exists(), "{err}");
    assert!(!res.join("report.json.tmp").exists());
    // With room again, the directory renders from what its series hold.
    std::fs::remove_file(disk.join("filler")).unwrap();
    let again = wlrun(dir.path(), &["report", res.to_str().unwrap(), "--json"]);
    let again_err = stderr(&again);
    assert!(!again_err.contains("not JSON"), "{again_err}");
    let rebuilt: Value =
        serde_json::from_slice(&again.stdout).unwrap_or_else(|e| panic!("{e}: {again_err}"));
    assert_eq!(rebuilt["cells"].as_array().unwrap().len(), cells.len());
}

/// A finished run's directory damaged as a full disk damages it: `wlrun report` rebuilds what
/// it can from `series/`, warns what was cut and left out, and exits 2. Before, an empty
/// report.json was "not JSON: EOF" (exit 2, nothing shown), and a cut phases.jsonl rendered
/// "0 cells", exit 0.
#[test]
fn a_damaged_run_directory_renders_as_far_as_it_goes_and_says_what_was_cut() {
    let dir = tempfile::tempdir().unwrap();
    let two = MANY_CELLS
        .replace("0..30", "0..2")
        .replace("rows s ", "rows s limit 500 ")
        .replace("rate 2000/s  duration 1s", "");
    std::fs::write(dir.path().join("w.wl"), two).unwrap();
    let run = wlrun(dir.path(), &["run", "w.wl", "--quiet", "--out", "res"]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let res = dir.path().join("res");
    let report = std::fs::read(res.join("report.json")).unwrap();
    let report_of = |out: &std::process::Output| -> Value {
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(out)))
    };

    for (damage, says) in [
        (&report[..0], "report.json is empty"),
        (&report[..report.len() / 2], "report.json is cut short"),
    ] {
        std::fs::write(res.join("report.json"), damage).unwrap();
        let out = wlrun(dir.path(), &["report", "res", "--json"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
        let r = report_of(&out);
        let phases: Vec<&Value> = r["cells"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| &c["phases"][0])
            .collect();
        assert_eq!(phases.len(), 2, "{r:#}");
        assert!(phases.iter().all(|p| p["rows_sent"] == 500), "{r:#}");
        // Short figures are not compared as if they were the run's.
        let cmp = wlrun(dir.path(), &["compare", "res", "res"]);
        assert_eq!(cmp.status.code(), Some(2), "{}", stderr(&cmp));
        assert!(stderr(&cmp).contains("a damaged run"), "{}", stderr(&cmp));
    }

    // The second phase's line cut short, no report.json: the first phase is shown, and the
    // cut is said.
    std::fs::remove_file(res.join("report.json")).unwrap();
    let list = res.join("series/phases.jsonl");
    let text = std::fs::read_to_string(&list).unwrap();
    let first = text.find('\n').unwrap() + 1;
    std::fs::write(&list, &text[..first + 40]).unwrap();
    let out = wlrun(dir.path(), &["report", "res", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("phases.jsonl is cut short"),
        "{}",
        stderr(&out)
    );
    assert_eq!(report_of(&out)["cells"].as_array().unwrap().len(), 1);
    // Its only line cut: not "0 cells" and success.
    std::fs::write(&list, &text[..40]).unwrap();
    let out = wlrun(dir.path(), &["report", "res"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("phases.jsonl is cut short"),
        "{}",
        stderr(&out)
    );
}
