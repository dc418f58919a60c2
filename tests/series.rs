//! The time series a `--out` run writes (docs/report-format.md, "Time series"), read from
//! outside: the counts add up to the report's totals, the intervals are wall-clock aligned,
//! and the interval logs are read by HdrHistogram's Python port — an implementation the
//! writer does not share — into the very histograms report.json holds.

#[path = "common/cli.rs"]
mod cli;
#[path = "common/http_server.rs"]
mod http_server;
#[path = "common/servers.rs"]
mod servers;

use std::path::{Path, PathBuf};
use std::process::Command;

use cli::wlrun;
use serde_json::Value;

/// An ingest into SQLite at 4,000 rows/s with a probe of its visibility, then an open-loop
/// query run over a little more than 2 s: several quarter-second intervals, with latency and
/// service time, batch latency and visibility lag.
const RUN: &str = r#"
workload w { seed 7 }
target local { sqlite "db.sqlite" }
schema cpu { rows 2000  field v: long = uniform(0, 100) }
ingest make {
  into local via sqlite  rows cpu  batch 100 rows  rate 4000/s  teardown keep
  probe visible every 20ms
}
query q { sql "SELECT count(*) FROM cpu WHERE v > $1"  bind $1 = uniform(0, 100) }
run probe { against local.sqlite  queries q  duration 2100ms  rate 300/s }
"#;

/// A Python with PyPI's `hdrhistogram` (scripts/test installs it in target/pyenv).
fn hdr_python() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = std::env::var_os("WLRUN_HDR_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("target/pyenv/bin/python"));
    candidates.push("python3".into());
    let found = candidates.into_iter().find(|p| {
        Command::new(p)
            .args(["-c", "import hdrh.log"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if found.is_none() {
        servers::missing("Python with PyPI's hdrhistogram (scripts/test installs it)");
    }
    found
}

fn json_file(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn column(csv: &str, name: &str) -> Vec<String> {
    let mut lines = csv.lines();
    let at = lines
        .next()
        .unwrap()
        .split(',')
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name}"));
    lines
        .map(|l| l.split(',').nth(at).unwrap().to_string())
        .collect()
}

fn sum(csv: &str, name: &str) -> u64 {
    column(csv, name)
        .iter()
        .map(|v| v.parse::<u64>().unwrap())
        .sum()
}

fn run_with_series(dir: &Path) -> Value {
    std::fs::write(dir.join("w.wl"), RUN).unwrap();
    let out = wlrun(
        dir,
        &["run", "w.wl", "--out", "res", "--interval", "0.25", "-q"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_file(&dir.join("res/report.json"))
}

#[test]
fn the_counts_add_up_to_the_report_and_the_intervals_are_aligned() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_with_series(dir.path());
    let phases = r["cells"][0]["phases"].as_array().unwrap();
    let (ingest, run) = (&phases[0], &phases[1]);

    let series = &ingest["series"];
    assert_eq!(series["interval_ms"], 250);
    let counts = std::fs::read_to_string(
        dir.path()
            .join("res")
            .join(series["counts"].as_str().unwrap()),
    )
    .unwrap();
    assert_eq!(
        sum(&counts, "rows_sent"),
        ingest["rows_sent"].as_u64().unwrap()
    );
    assert_eq!(
        sum(&counts, "rows_acked"),
        ingest["rows_acked"].as_u64().unwrap()
    );
    assert_eq!(sum(&counts, "batches"), 20);
    // Every probe counts once, answered or failed, where its answer came; each interval with
    // an answer has the count it saw, and the last is every row.
    let fresh = &ingest["freshness"];
    assert_eq!(
        sum(&counts, "probes") + sum(&counts, "probes_failed"),
        fresh["probes_sent"].as_u64().unwrap(),
        "{counts}"
    );
    assert_eq!(
        sum(&counts, "probes_failed"),
        fresh["probes_failed"].as_u64().unwrap()
    );
    assert!(sum(&counts, "probes") >= 10, "{counts}");
    let visible: Vec<String> = column(&counts, "visible");
    for (v, n) in visible.iter().zip(column(&counts, "probes")) {
        assert_eq!(v.is_empty(), n == "0", "{counts}");
    }
    let last = visible.iter().rev().find(|v| !v.is_empty()).unwrap();
    assert_eq!(last, &fresh["last_visible"].as_u64().unwrap().to_string());

    let series = &run["series"];
    let counts = std::fs::read_to_string(
        dir.path()
            .join("res")
            .join(series["counts"].as_str().unwrap()),
    )
    .unwrap();
    let rows = counts.lines().count() as u64 - 1;
    assert_eq!(rows, series["intervals"].as_u64().unwrap());
    // 2.1 s in quarter seconds: 9 intervals, or 10 when the start falls late in one.
    assert!((9..=10).contains(&rows), "{counts}");
    assert_eq!(sum(&counts, "ok"), run["ok"].as_u64().unwrap());
    assert_eq!(sum(&counts, "failed"), run["failed"].as_u64().unwrap());
    assert_eq!(
        sum(&counts, "ok")
            + sum(&counts, "failed")
            + sum(&counts, "cut_off")
            + sum(&counts, "unsent"),
        run["scheduled"].as_u64().unwrap()
    );
    let starts: Vec<u64> = column(&counts, "start_ms")
        .iter()
        .map(|v| v.parse().unwrap())
        .collect();
    assert!(starts.iter().all(|s| s % 250 == 0), "{starts:?}");
    assert!(starts.windows(2).all(|w| w[1] - w[0] == 250), "{starts:?}");
    let spans: Vec<u64> = column(&counts, "span_ms")
        .iter()
        .map(|v| v.parse().unwrap())
        .collect();
    assert!(
        spans[1..spans.len() - 1].iter().all(|&s| s == 250),
        "{spans:?}"
    );
    let measured: u64 = spans.iter().sum();
    let elapsed_ms = run["elapsed_s"].as_f64().unwrap() * 1000.0;
    assert!(
        (measured as f64 - elapsed_ms).abs() < 10.0,
        "{measured} ms in the series, {elapsed_ms} ms in the report"
    );
    // Open loop at 300/s: every full interval holds about 75 answers.
    let ok: Vec<u64> = column(&counts, "ok")
        .iter()
        .map(|v| v.parse().unwrap())
        .collect();
    assert!(
        ok[1..ok.len() - 1].iter().all(|&n| (55..=95).contains(&n)),
        "{ok:?}"
    );

    let announced = std::fs::read_to_string(dir.path().join("res/series/phases.jsonl")).unwrap();
    assert_eq!(announced.lines().count(), 2, "{announced}");
}

#[test]
fn hdrhistograms_own_log_reader_reads_the_histograms_the_report_holds() {
    let Some(python) = hdr_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let r = run_with_series(dir.path());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hdr/read_hlog.py");
    let read = |phase: &Value| -> Value {
        let hlog = dir
            .path()
            .join("res")
            .join(phase["series"]["hlog"].as_str().unwrap());
        let out = Command::new(&python)
            .arg(&script)
            .arg(&hlog)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let same = |logged: &Value, latency: &Value, what: &str| {
        assert_eq!(
            logged["count"], latency["count"],
            "{what}: {logged} vs {latency}"
        );
        for (l, r) in [
            ("min", "min_us"),
            ("max", "max_us"),
            ("p50", "p50_us"),
            ("p99", "p99_us"),
        ] {
            assert_eq!(logged[l], latency[r], "{what} {l}: {logged} vs {latency}");
        }
    };
    let phases = r["cells"][0]["phases"].as_array().unwrap();
    let run = &phases[1];
    let logged = read(run);
    let intervals = run["series"]["intervals"].as_u64().unwrap();
    assert_eq!(logged["latency"]["intervals"], intervals, "{logged}");
    assert_eq!(logged["service"]["intervals"], intervals, "{logged}");
    same(&logged["latency"], &run["latency"], "latency");
    same(&logged["service"], &run["service"], "service time");
    let ingest = &phases[0];
    let logged = read(ingest);
    same(&logged["batch"], &ingest["batch_latency"], "batch latency");
    // The probes' lag: one histogram per interval, merging to the report's.
    let intervals = ingest["series"]["intervals"].as_u64().unwrap();
    assert_eq!(logged["lag"]["intervals"], intervals, "{logged}");
    same(
        &logged["lag"],
        &ingest["freshness"]["lag"],
        "visibility lag",
    );
}

#[test]
fn a_request_runs_series_counts_its_failures_where_they_happened() {
    // Every 5th request is read and its connection closed unanswered: a failure each time.
    let server = http_server::ServerHandle::start(http_server::Behaviour::ok().with_close_every(5));
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "workload w {{ seed 1 }}\ntarget svc {{ http \"{}\" {{ timeout 5s }} }}\nrun r {{\n  against svc.http\n  request GET \"/x\"\n  connections 2\n  duration 1500ms\n  rate 200/s\n  expect error_rate < 50%\n}}\n",
        server.url()
    );
    std::fs::write(dir.path().join("w.wl"), text).unwrap();
    let out = wlrun(
        dir.path(),
        &["run", "w.wl", "--out", "res", "--interval", "0.5", "-q"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json_file(&dir.path().join("res/report.json"));
    let run = &r["cells"][0]["phases"][0];
    assert_eq!(run["phase"], "requests");
    let counts = std::fs::read_to_string(
        dir.path()
            .join("res")
            .join(run["series"]["counts"].as_str().unwrap()),
    )
    .unwrap();
    assert_eq!(sum(&counts, "ok"), run["ok"].as_u64().unwrap(), "{counts}");
    assert_eq!(
        sum(&counts, "failed"),
        run["failed"].as_u64().unwrap(),
        "{counts}"
    );
    assert!(run["failed"].as_u64().unwrap() >= 40, "{run:#}");
    // The failures came all along the run, not at its end: every full interval has some.
    let failed = column(&counts, "failed");
    assert!(
        failed[1..failed.len() - 1].iter().all(|f| f != "0"),
        "{counts}"
    );
    assert!(
        column(&counts, "service_p99_us")
            .iter()
            .any(|v| !v.is_empty()),
        "{counts}"
    );
}

/// A run killed (SIGKILL) while a `concurrent` group of a probed ingest and a query run goes:
/// `wlrun report` rebuilds each member's group from `phases.jsonl`, and the ingest's probe
/// figures from its columns and its lag histograms.
#[test]
fn a_killed_groups_report_rebuilds_its_members_and_the_probes_lag() {
    const GROUP: &str = r#"
workload w { seed 7 }
target local { sqlite "db.sqlite" { journal wal } }
schema cpu { rows 1000000  field v: long = uniform(0, 100) }
ingest fill {
  into local via sqlite  rows cpu  batch 50 rows  rate 2000/s  duration 1h
  probe visible every 25ms
}
query q { sql "SELECT count(*) FROM cpu" }
run reads { against local.sqlite  queries q  rate 20/s  duration 1h }
concurrent mixed { phases fill, reads  until fill }
"#;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), GROUP).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .current_dir(dir.path())
        .args(["run", "w.wl", "--out", "res", "--interval", "0.2", "-q"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let res = dir.path().join("res");
    let counts_path = res.join("series/1-fill.csv");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    // Five closed intervals of the ingest, with probes answered.
    while std::fs::read_to_string(&counts_path).map_or(0, |t| t.lines().count()) < 6 {
        assert!(
            std::time::Instant::now() < deadline,
            "the group wrote no intervals"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL: nothing runs after it
    child.wait().unwrap();
    assert!(!res.join("report.json").exists());

    let out = wlrun(dir.path(), &["report", "res", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let phases = r["cells"][0]["phases"].as_array().unwrap();
    let (fill, reads) = (&phases[0], &phases[1]);
    assert_eq!(
        (fill["name"].as_str(), reads["name"].as_str()),
        (Some("fill"), Some("reads"))
    );
    for (p, until) in [(fill, true), (reads, false)] {
        let c = &p["concurrent"];
        assert_eq!(c["group"], "mixed", "{p:#}");
        assert_eq!(c["phases"], serde_json::json!(["fill", "reads"]));
        assert_eq!(c["until"], "fill");
        assert_eq!(c["set_end"], until);
        assert_eq!(p["status"], "interrupted");
    }

    // The probe's figures are the counts the killed run had written, and its lag the
    // histograms of its log (which may hold one interval more than the counts).
    let text = std::fs::read_to_string(&counts_path).unwrap();
    let whole = &text[..=text.rfind('\n').unwrap()];
    let f = &fill["freshness"];
    assert_eq!(
        f["probes_sent"].as_u64().unwrap(),
        sum(whole, "probes") + sum(whole, "probes_failed"),
        "{f:#}\n{whole}"
    );
    assert!(sum(whole, "probes") >= 5, "{whole}");
    assert_eq!(f["every_s"], 0.025);
    assert_eq!(f["language"], "sql");
    assert!(f["all_visible_after_s"].is_null());
    // A lag per batch a probe saw, each once: at most the batches sent; the log may be an
    // interval (8 batches) ahead of the counts.
    let lag = f["lag"]["count"].as_u64().unwrap();
    assert!(
        lag > 0 && lag <= sum(whole, "batches") + 20,
        "{f:#}\n{whole}"
    );
    let last_visible = column(whole, "visible")
        .into_iter()
        .rev()
        .find(|v| !v.is_empty())
        .unwrap();
    assert_eq!(f["last_visible"].to_string(), last_visible);

    // The table says which phases ran together; the CSV names the group on each row.
    let table = wlrun(dir.path(), &["report", "res"]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains("concurrent mixed: fill, reads ran together"),
        "{table}"
    );
    assert!(
        table.contains("stopped before all were seen visible"),
        "{table}"
    );
    let csv = wlrun(dir.path(), &["report", "res", "--csv"]);
    let csv = String::from_utf8_lossy(&csv.stdout).to_string();
    assert_eq!(column(&csv, "concurrent"), ["mixed", "mixed"], "{csv}");
    assert_eq!(
        column(&csv, "concurrent_end"),
        ["until", "interrupted"],
        "{csv}"
    );
    assert_eq!(column(&csv, "probes_sent")[0], f["probes_sent"].to_string());
}
