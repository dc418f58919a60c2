//! `wlrun run` query phases end to end: embedded SQLite here, and the system PostgreSQL that
//! scripts/test starts (skipped without it, except under CI=true, where it fails).

#[path = "common/cli.rs"]
mod cli;
use cli::wlrun;

#[path = "common/servers.rs"]
mod servers;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use servers::{pg_up, pg_url};

/// Runs `w.wl` (written into `dir`) and returns the exit code, the JSON report and stderr.
fn run_in(dir: &Path, text: &str, extra: &[&str]) -> (i32, Value, String) {
    cli::run_json_in(dir, text, extra)
}

fn run(text: &str, extra: &[&str]) -> (i32, Value, String) {
    let dir = tempfile::tempdir().unwrap();
    run_in(dir.path(), text, extra)
}

/// The query phase(s) of the first cell.
fn query_phases(report: &Value) -> Vec<Value> {
    report["cells"][0]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["phase"] == "queries")
        .cloned()
        .collect()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// TSBS cpu rows for 10 hosts over an hour in SQLite, ready for queries.
const SQLITE_DATA: &str = r#"
import "std/tsbs/cpu-only.wl" as tsbs (hosts = 10, end = 2016-01-01T01:00:00Z)
workload w { seed 3 }
target local { sqlite "db.sqlite" }
ingest load {
  into local via sqlite
  rows tsbs.cpu
  batch 1000 rows
  teardown keep
}
"#;

/// The quickstart as a first-time user runs it: it passes, and every figure it prints per
/// second is a rate (its phases last long enough, a few seconds in all), with its queries'
/// table under them.
#[test]
fn quickstart_runs_its_queries_and_prints_rates() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(
        root.join("examples/quickstart.wl"),
        dir.path().join("quickstart.wl"),
    )
    .unwrap();
    let out = wlrun(dir.path(), &["run", "quickstart.wl", "--out", "res"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let printed = format!("{err}{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(out.status.code(), Some(0), "{printed}");
    for line in printed.lines() {
        assert!(!line.contains("too short"), "not a rate: {line}\n{printed}");
    }
    for says in ["rows/s acked", "ok queries/s", "cores over", "p90", "p95"] {
        assert!(printed.contains(says), "no `{says}`:\n{printed}");
    }
    let report: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("res/report.json")).unwrap())
            .unwrap();
    let load = &report["cells"][0]["phases"][0];
    assert_eq!(load["phase"], "ingest", "{load:#}");
    assert_eq!(u(&load["rows_acked"]), 3_600);
    assert!(load["rows_per_s"].as_f64().is_some(), "{load:#}");
    let q = &query_phases(&report)[0];
    assert_eq!(q["status"], "ok", "{q:#}");
    assert!(q["qps"].as_f64().is_some(), "{q:#}");
    assert_eq!(u(&q["failed"]), 0);
    let ok = u(&q["ok"]);
    let types = q["query_types"].as_array().unwrap();
    assert_eq!(types.len(), 3);
    for t in types {
        assert!(u(&t["ok"]) > 0, "{t:#}");
        assert!(t["qps"].as_f64().is_some(), "{t:#}");
        assert_eq!(u(&t["latency"]["count"]), u(&t["ok"]));
        assert!(!t["latency"]["histogram"].as_str().unwrap().is_empty());
        // Each type's row in the table: its name, then its counts.
        let name = t["name"].as_str().unwrap();
        let row = format!("  {name} ");
        assert!(printed.contains(&row), "no row for {name}:\n{printed}");
    }
    assert_eq!(types.iter().map(|t| u(&t["ok"])).sum::<u64>(), ok);
    // The top-3 query returns 3 rows every time; the windowed one 2 hosts' maxima at most.
    assert_eq!(types[0]["rows_per_query"].as_f64(), Some(3.0));
    let w = types[1]["rows_per_query"].as_f64().unwrap();
    assert!(w > 0.0 && w <= 2.0, "{w}");
    let per_worker: Vec<u64> = q["queries_per_worker"]
        .as_array()
        .unwrap()
        .iter()
        .map(u)
        .collect();
    assert_eq!(per_worker.iter().sum::<u64>(), ok);
    assert_eq!(per_worker.len(), 2);
}

#[test]
fn an_empty_table_is_refused_by_require() {
    let text = r#"
workload w { seed 1 }
target local { sqlite "db.sqlite" }
schema cpu { rows 10  field v: long = 1 }
ingest make { into local via sqlite  rows cpu  batch 10 rows  teardown keep }
query q { sql "SELECT count(*) FROM cpu" }
run r { against local.sqlite  queries q  count 5  require rows(cpu) > 100 }
"#;
    let (code, report, _) = run(text, &[]);
    assert_eq!(code, 1);
    let q = &query_phases(&report)[0];
    assert_eq!(q["status"], "failed");
    let f = q["failures"][0].as_str().unwrap();
    assert!(
        f.contains("refusing to measure") && f.contains("10 rows"),
        "{f}"
    );
    assert_eq!(u(&q["ok"]), 0);
}

#[test]
fn failed_queries_are_counted_never_throughput_and_fail_the_run() {
    let text = format!(
        "{SQLITE_DATA}
query good {{ sql \"SELECT count(*) FROM cpu\" }}
query bad {{ sql \"SELECT * FROM no_such_table\" }}
run r {{ against local.sqlite  queries good, bad  count 20 per query  workers 2 }}
"
    );
    let (code, report, _) = run(&text, &[]);
    assert_eq!(code, 1);
    let q = &query_phases(&report)[0];
    assert_eq!(u(&q["ok"]), 20);
    assert_eq!(u(&q["failed"]), 20);
    assert_eq!(u(&q["errors"]["sql"]["count"]), 20);
    assert!(q["errors"]["sql"]["first"]
        .as_str()
        .unwrap()
        .contains("no_such_table"));
    let bad = &q["query_types"][1];
    assert_eq!(u(&bad["ok"]), 0);
    // Never throughput: 0/s, or no rate at all when the run was too short to be one.
    assert!(
        bad["qps"].is_null() || bad["qps"].as_f64() == Some(0.0),
        "{bad}"
    );
    // The command line may allow it.
    let (code, _, _) = run(&text, &["--max-error-rate", "50%"]);
    assert_eq!(code, 0);
    let (code, _, _) = run(&text, &["--max-error-rate", "0.4"]);
    assert_eq!(code, 1);
}

#[test]
fn thresholds_decide_the_exit_code() {
    let text = format!(
        "{SQLITE_DATA}
query q {{ sql \"SELECT hostname FROM cpu WHERE usage_user > $1\"  bind $1 = uniform(0, 100) }}
run r {{ against local.sqlite  queries q  count 30  expect p99 < 1us  expect rows > 0 }}
"
    );
    let (code, report, _) = run(&text, &[]);
    assert_eq!(code, 1);
    let q = &query_phases(&report)[0];
    let th = q["thresholds"].as_array().unwrap();
    assert_eq!(th[0]["ok"], false, "{th:?}");
    assert_eq!(th[1]["ok"], true, "{th:?}");
    assert!(q["failures"][0].as_str().unwrap().contains("p99 < 1us"));
    let text = text.replace("expect p99 < 1us", "expect p99 < 10s");
    let (code, _, err) = run(&text, &[]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn route_by_pins_each_key_to_one_worker() {
    // One key only: every query goes to the same worker, and the others show idle.
    let text = format!(
        "{SQLITE_DATA}
query q {{ sql \"SELECT count(*) FROM cpu WHERE hostname = $1\"  bind $1 = pick([\"host_3\"])  route by $1 }}
run r {{ against local.sqlite  queries q  count 40  workers 3 }}
"
    );
    let (code, report, err) = run(&text, &[]);
    assert_eq!(code, 0, "{err}");
    let q = &query_phases(&report)[0];
    let mut per: Vec<u64> = q["queries_per_worker"]
        .as_array()
        .unwrap()
        .iter()
        .map(u)
        .collect();
    per.sort();
    assert_eq!(per, vec![0, 0, 40]);
    assert_eq!(q["query_types"][0]["rows_per_query"].as_f64(), Some(1.0));
    // The terminal says so, as the pgbench timeseries tool's "Queries per worker" line does.
    assert_eq!(q["routed"], true, "{q:#}");
    let line = err
        .lines()
        .find(|l| l.starts_with("  queries per worker (route by): "))
        .unwrap_or_else(|| panic!("no queries per worker:\n{err}"));
    assert!(line.contains("; 2 of 3 workers sat idle"), "{line}");
}

#[test]
fn open_loop_keeps_the_rate_and_reports_service_time() {
    let text = format!(
        "{SQLITE_DATA}
query q {{ sql \"SELECT max(usage_user) FROM cpu WHERE hostname = $1\"  bind $1 = pick([\"host_1\", \"host_2\"]) }}
run r {{ against local.sqlite  queries q  duration 2s  rate 100/s poisson  workers 2 }}
"
    );
    let (code, report, err) = run(&text, &[]);
    assert_eq!(code, 0, "{err}");
    let q = &query_phases(&report)[0];
    let n = u(&q["ok"]);
    assert!((150..=250).contains(&n), "{n} queries at 100/s for 2 s");
    assert!(q["service"]["count"].as_u64() == Some(n));
    // Latency from the intended time is never shorter than the service time.
    assert!(q["latency"]["p50_us"].as_u64() >= q["service"]["p50_us"].as_u64());
    assert!(q["load"].as_str().unwrap().starts_with("open"));
}

#[test]
fn a_routed_open_loop_run_keeps_its_schedule_and_accounts_for_it() {
    // Routed instances go through the dispatcher to their worker's queue: the slots still
    // carry their intended times, nothing is dropped, and a counted schedule ends on time.
    let text = format!(
        "{SQLITE_DATA}
query q {{ sql \"SELECT count(*) FROM cpu WHERE hostname = $1\"  bind $1 = pick([\"host_1\", \"host_2\", \"host_3\"])  route by $1 }}
run r {{ against local.sqlite  queries q  count 300  rate 200/s  workers 3 }}
"
    );
    let t = std::time::Instant::now();
    let (code, report, err) = run(&text, &[]);
    assert_eq!(code, 0, "{err}");
    let q = &query_phases(&report)[0];
    assert_eq!(u(&q["scheduled"]), 300, "{q}");
    assert_eq!(u(&q["ok"]), 300, "{q}");
    assert_eq!(u(&q["unsent"]) + u(&q["cut_off"]), 0, "{q}");
    assert_eq!(q["achieved_rate"].as_f64(), Some(1.0));
    assert_eq!(u(&q["send_lag"]["count"]), 300);
    // 300 at 200/s is a 1.5 s schedule, not a burst.
    assert!(t.elapsed().as_secs_f64() > 1.4, "{:?}", t.elapsed());
    let per: u64 = q["queries_per_worker"]
        .as_array()
        .unwrap()
        .iter()
        .map(u)
        .sum();
    assert_eq!(per, 300);
}

#[test]
fn warmup_and_repeats_are_measured_apart() {
    let text = format!(
        "{SQLITE_DATA}
query q {{ sql \"SELECT count(*) FROM cpu\" }}
run r {{ against local.sqlite  queries q  count 10  warmup 5  repeat 3 }}
"
    );
    let (code, report, err) = run(&text, &[]);
    assert_eq!(code, 0, "{err}");
    let q = &query_phases(&report)[0];
    assert_eq!(u(&q["ok"]), 30, "warm-ups are not measured");
    let reps = q["repeats"].as_array().unwrap();
    assert_eq!(reps.len(), 3);
    assert!(reps.iter().all(|r| r["queries"] == 10));
}

#[test]
fn the_same_seed_sends_the_same_queries() {
    // The rows each query returns depend on its bind: the same seed gives the same totals.
    let text = format!(
        "{SQLITE_DATA}
query q {{ sql \"SELECT hostname FROM cpu WHERE usage_user > $1 AND hostname IN $2\"  bind $1 = uniform(0, 100)  bind $2 = sample(tsbs.cpu.hostname, 3) }}
run r {{ against local.sqlite  queries q  count 50  workers 2 }}
"
    );
    let rows = |extra: &[&str]| {
        let (code, report, err) = run(&text, extra);
        assert_eq!(code, 0, "{err}");
        u(&query_phases(&report)[0]["rows"])
    };
    let a = rows(&[]);
    assert_eq!(a, rows(&[]));
    assert_ne!(a, rows(&["--seed", "99"]));
}

/// The 16 TSBS query types, PostgreSQL dialect, on data the ingest runner loaded.
#[test]
fn tsbs_postgres_queries_run_on_ingested_data() {
    if !pg_up() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root.join("workloads/tsbs-postgres.wl")).unwrap();
    std::fs::write(dir.path().join("w.wl"), &text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .current_dir(dir.path())
        .envs(servers::pg_env())
        .args([
            "run",
            "w.wl",
            "--json",
            "--quiet",
            "--param",
            "hosts=40",
            "--param",
            "per_query=3",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let q = &query_phases(&report)[0];
    let types = q["query_types"].as_array().unwrap();
    assert_eq!(types.len(), 16);
    for t in types {
        assert_eq!(u(&t["ok"]), 3, "{t:#}");
        assert_eq!(u(&t["failed"]), 0, "{t:#}");
    }
    // Every query type that reads a window of data returns rows on it.
    let lastpoint = types.iter().find(|t| t["name"] == "lastpoint").unwrap();
    assert_eq!(lastpoint["rows_per_query"].as_f64(), Some(40.0));
}

/// The pgbench timeseries workload as shipped, but pointed at the test server.
#[test]
fn pgbench_timeseries_runs_its_csv_with_affinity() {
    if !pg_up() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root.join("workloads/pgbench-timeseries.wl")).unwrap();
    let url_line = text
        .lines()
        .find(|l| l.trim_start().starts_with("pg \"postgres://"))
        .expect("the workload names its server");
    let ours = format!("  pg \"{}\" {{", pg_url());
    let text = text.replace(url_line, &ours);
    std::fs::write(dir.path().join("w.wl"), &text).unwrap();
    std::fs::copy(
        root.join("workloads/pgbench-query-params.csv"),
        dir.path().join("pgbench-query-params.csv"),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .current_dir(dir.path())
        .args(["run", "w.wl", "--json", "--quiet", "--param", "hosts=10"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let q = &query_phases(&report)[0];
    assert_eq!(u(&q["ok"]), 200);
    // An hour of 1-minute buckets, both bounds inclusive: 60 or 61 rows per query.
    let rpq = q["query_types"][0]["rows_per_query"].as_f64().unwrap();
    assert!((60.0..=61.0).contains(&rpq), "{rpq}");
    let per: Vec<u64> = q["queries_per_worker"]
        .as_array()
        .unwrap()
        .iter()
        .map(u)
        .collect();
    assert_eq!(per.len(), 4);
    assert_eq!(per.iter().sum::<u64>(), 200);
}

/// The same rows loaded into PostgreSQL and SQLite, the same queries over both: every
/// instance's row count and checksum must agree, and a LIMIT without ORDER BY is only flagged.
#[test]
fn results_cross_check_between_postgres_and_sqlite() {
    if !pg_up() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let head = format!(
        r#"import "std/tsbs/cpu-only.wl" as tsbs (hosts = 5, end = 2016-01-01T01:00:00Z)
workload w {{ seed 3 }}
target db {{
  pg "{}"
  sqlite "cross.sqlite"
}}
"#,
        pg_url()
    );
    let load = format!(
        "{head}ingest load {{ into db via [pg, sqlite] table \"cpu_xcheck\"  rows tsbs.cpu  batch 1000 rows  teardown keep }}\n"
    );
    let (code, _, err) = run_in(dir.path(), &load, &[]);
    assert_eq!(code, 0, "{err}");
    let queries = format!(
        r#"{head}
query by_host {{
  sql "SELECT hostname, max(usage_user), min(usage_idle), count(*) FROM cpu_xcheck
       WHERE timestamp >= $1 AND timestamp < $2 GROUP BY hostname"
  let w = window(2016-01-01T00:00:00Z, 2016-01-01T01:00:00Z, 10m)
  bind $1 = w.start
  bind $2 = w.end
}}
query rows_of {{
  sql "SELECT * FROM cpu_xcheck WHERE hostname IN $1 AND usage_user > $2"
  bind $1 = sample(tsbs.cpu.hostname, 2)
  bind $2 = uniform(0, 100)
}}
query first_rows {{ sql "SELECT hostname FROM cpu_xcheck LIMIT 3" }}
run r {{ against db via [pg, sqlite]  queries by_host, rows_of, first_rows  count 20 per query  workers 2  check same results across endpoints }}
"#
    );
    let (code, report, err) = run_in(dir.path(), &queries, &[]);
    assert_eq!(code, 0, "{err}\n{report:#}");
    let later = &report["cells"][1]["phases"][0];
    let check = &later["cross_checks"][0];
    assert_eq!(u(&check["compared"]), 40, "{check:#}");
    assert_eq!(u(&check["mismatches"]), 0, "{check:#}");
    assert_eq!(check["not_compared"][0], "first_rows");
    // Results that differ are caught: the SQLite copy loses a row.
    let conn = rusqlite::Connection::open(dir.path().join("cross.sqlite")).unwrap();
    conn.execute("DELETE FROM cpu_xcheck WHERE rowid IN (SELECT rowid FROM cpu_xcheck WHERE usage_user > 50 LIMIT 1)", [])
        .unwrap();
    drop(conn);
    let (code, report, _) = run_in(dir.path(), &queries, &[]);
    assert_eq!(code, 1);
    let later = &report["cells"][1]["phases"][0];
    assert!(u(&later["cross_checks"][0]["mismatches"]) > 0, "{later:#}");
    assert!(later["failures"][0]
        .as_str()
        .unwrap()
        .contains("results differ"));
}

/// Killing every connection of the run mid-way: failures are counted as connection errors,
/// workers reconnect and go on, and the run ends on time.
#[test]
fn a_server_dropping_connections_mid_run_is_counted_and_survived() {
    if !pg_up() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"workload w {{ seed 1 }}
target db {{ pg "{}" {{ application_name "wlrun-restart-test" }} }}
query q {{ sql "SELECT $1::int + 1"  bind $1 = uniform(0, 1000) }}
run r {{ against db.pg  queries q  duration 3s  workers 3 }}
"#,
        pg_url()
    );
    std::fs::write(dir.path().join("w.wl"), &text).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .current_dir(dir.path())
        .args([
            "run",
            "w.wl",
            "--json",
            "--quiet",
            "--max-error-rate",
            "50%",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let kill = Command::new("psql")
        .arg(pg_url())
        .args([
            "-tAc",
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'wlrun-restart-test'",
        ])
        .output()
        .expect("psql");
    let killed: u64 = String::from_utf8_lossy(&kill.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    let out = child.wait_with_output().unwrap();
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(took.as_secs_f64() < 10.0, "the run took {took:?}");
    assert_eq!(killed, 3, "three connections to terminate");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let q = &query_phases(&report)[0];
    let lost = u(&q["errors"]["connection"]["count"]);
    assert!((1..=6).contains(&lost), "{q:#}");
    assert!(
        u(&q["ok"]) > 100,
        "the workers went on after reconnecting: {q:#}"
    );
}

/// No server at all: every attempt is a counted `connect` error, the run ends on time, could
/// not measure (exit 3), and nothing counts as throughput.
#[test]
fn no_server_fails_the_run_on_time() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let text = format!(
        r#"workload w {{ seed 1 }}
target db {{ pg "postgres://nobody@127.0.0.1:{port}/none" {{ connect_timeout 1s }} }}
query q {{ sql "SELECT 1" }}
run r {{ against db.pg  queries q  duration 2s  workers 2 }}
"#
    );
    let started = std::time::Instant::now();
    let (code, report, _) = run(&text, &[]);
    assert!(started.elapsed().as_secs_f64() < 15.0);
    assert_eq!(code, 3);
    let q = &query_phases(&report)[0];
    assert_eq!(u(&q["ok"]), 0);
    assert_eq!(q["qps"].as_f64(), Some(0.0));
    assert!(u(&q["errors"]["connect"]["count"]) >= 2, "{q:#}");
    assert_eq!(q["status"], "failed");
}
