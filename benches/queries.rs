//! `cargo bench --bench queries`: the query runner against PostgreSQL's own `pgbench`.
//!
//! `SELECT abalance FROM pgbench_accounts WHERE aid = $1` with a uniform `aid`, 4 connections,
//! prepared statements: `pgbench -S -M prepared -c 4 -j 2 -T 10` against a `wlrun` run of the
//! same query for 10 s, interleaved, medians of 5 (target: wlrun at least 0.95x pgbench's
//! TPS), with the client CPU microseconds per query of each. Then a run of 1 M queries
//! (`WLRUN_BENCH_LONG=1`): the process's peak resident memory after 100 k queries and
//! after 1 M more.
//!
//! Needs the local server (`WLRUN_TEST_PG`, default postgres://wlrun:wlrun@127.0.0.1:5432/wlrun)
//! and `pgbench` on the PATH; says so and stops without them.
//!
//! First, one large HTTP `/exec` answer: a 1.6 M-row result shaped like TSBS high-cpu-all's
//! (10 tags, 10 doubles, a timestamp; about 500 MB of JSON), served by the PostgreSQL-backed
//! `/exec` test server in this process (which streams it), read by the HTTP transport without
//! and with checksums. It prints the process's peak resident memory (VmHWM) before and after
//! each read: flat, since the answer is read as it arrives (it used to be held whole, and
//! failed past 16 MiB).

#[path = "common/run.rs"]
mod run;

#[path = "common/stats.rs"]
mod stats;
use stats::median;

#[path = "../tests/common/exec_server.rs"]
mod exec_server;

use std::process::Command;

use wlrun::report::{PhaseReport, QueryReport};

const RUNS: usize = 5;
const SCALE: u64 = 10;

fn pg_url() -> String {
    std::env::var("WLRUN_TEST_PG")
        .unwrap_or_else(|_| "postgres://wlrun:wlrun@127.0.0.1:5432/wlrun".into())
}

/// The query phase of `text`, run in this process as `wlrun run` would.
fn run_queries(text: &str) -> QueryReport {
    let report = run::run_text(text);
    match report.cells[0].phases.last() {
        Some(PhaseReport::Queries(r)) => {
            assert!(
                r.failures.is_empty(),
                "the bench run failed: {:?}",
                r.failures
            );
            (**r).clone()
        }
        _ => panic!("no query phase in the report"),
    }
}

/// pgbench's TPS and its CPU seconds (user + system, from the shell's `times`).
fn pgbench(seconds: u64) -> Option<(f64, f64)> {
    let script = format!(
        "pgbench -n -S -M prepared -c 4 -j 2 -T {seconds} '{}' 2>/dev/null; times",
        pg_url()
    );
    let out = Command::new("bash").args(["-c", &script]).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let tps: f64 = text
        .lines()
        .find(|l| l.starts_with("tps = "))?
        .split_whitespace()
        .nth(2)?
        .parse()
        .ok()?;
    // `times` prints the shell's own times, then its children's: `0m1.230s 0m0.450s`.
    let children = text.lines().last()?;
    let secs = |t: &str| -> Option<f64> {
        let (m, s) = t.trim_end_matches('s').split_once('m')?;
        Some(m.parse::<f64>().ok()? * 60.0 + s.parse::<f64>().ok()?)
    };
    let mut parts = children.split_whitespace();
    let cpu = secs(parts.next()?)? + secs(parts.next()?)?;
    Some((tps, cpu))
}

/// The process's peak resident memory so far (VmHWM), KiB.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn workload(stop: &str) -> String {
    format!(
        r#"workload b {{ seed 7 }}
target db {{ dialect postgres  pg "{}" {{ statements prepared }} }}
query select_only {{
  sql "SELECT abalance FROM pgbench_accounts WHERE aid = $1"
  bind $1 = uniform(1, {})
}}
run s {{ against db.pg  queries select_only  workers 4  {stop}  require rows(pgbench_accounts) > 0 }}
"#,
        pg_url(),
        SCALE * 100_000 + 1
    )
}

/// A result shaped like high-cpu-all's on the TSBS cpu table.
const LARGE_ROWS: u64 = 1_600_000;

fn large_answer_sql() -> String {
    let usage: Vec<String> = (0..10)
        .map(|i| format!("((k * {}) % 10007) / 100.0::float8 AS usage_{i}", 7 + 2 * i))
        .collect();
    format!(
        "SELECT 'host_' || (k % 4000) AS hostname, 'eu-west-1' AS region, 'eu-west-1a' AS datacenter, \
                (k % 100)::text AS rack, 'Ubuntu16.04LTS' AS os, 'x64' AS arch, 'NYC' AS team, \
                (k % 20)::text AS service, (k % 2)::text AS service_version, \
                'production' AS service_environment, {}, \
                '2016-01-01T00:00:00Z'::timestamptz + k * interval '10 milliseconds' AS timestamp \
         FROM generate_series(1, {LARGE_ROWS}) AS k",
        usage.join(", ")
    )
}

/// Reads the large answer over HTTP `/exec` without and with checksums, printing the peak
/// resident memory around each read.
fn large_exec_answer() {
    use std::sync::Arc;
    use wlrun::plan::EndpointPlan;
    use wlrun::query::transport::Transport;
    use wlrun::query::Instance;
    use wlrun::value::Value;

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let server = exec_server::ExecServer::start(Some(pg_url())).await;
        let endpoint = EndpointPlan {
            target: "db".into(),
            name: "http".into(),
            kind: "http".into(),
            dialect: "postgres".into(),
            url: None,
            options: [("timeout".to_string(), Value::Duration(600_000_000_000))]
                .into_iter()
                .collect(),
        };
        let inst = |sql: String| Instance {
            query: 0,
            index: 0,
            sql: Arc::from(sql),
            binds: Vec::new(),
            route: None,
        };
        let mut t = match Transport::connect(&endpoint, &server.url(), std::path::Path::new("."))
            .await
        {
            Ok(t) => t,
            Err(e) => {
                println!("large /exec answer: cannot connect to the test server: {e}");
                return;
            }
        };
        // A small query first: what the process takes before any large answer.
        if let Err(e) = t.run(&inst("SELECT 1".into())).await {
            println!("large /exec answer: the test server cannot run queries: {e}");
            return;
        }
        println!(
            "HTTP /exec, one answer of {LARGE_ROWS} rows (high-cpu-all's shape: 10 tags, 10 doubles, a timestamp)"
        );
        let large = inst(large_answer_sql());
        for checksums in [false, true] {
            t.set_checksums(checksums);
            let before = peak_rss_kib();
            let sent_before = server.json_bytes_sent();
            let started = std::time::Instant::now();
            let outcome = t.run(&large).await;
            let took = started.elapsed().as_secs_f64();
            let mb = (server.json_bytes_sent() - sent_before) as f64 / 1e6;
            let after = peak_rss_kib();
            match outcome {
                Ok(o) => println!(
                    "  checksums {:<3}  {} rows, {mb:.0} MB of JSON in {took:.1} s ({:.0} MB/s, server and client on 2 shared cores); \
                     peak resident memory {before} KiB before, {after} KiB after (+{} KiB)",
                    if checksums { "on" } else { "off" },
                    o.rows,
                    mb / took,
                    after.saturating_sub(before)
                ),
                Err(e) => println!("  checksums {checksums}: the query failed: {e}"),
            }
        }
    });
}

fn main() {
    if std::net::TcpStream::connect("127.0.0.1:5432").is_err() {
        println!("queries bench: no PostgreSQL on 127.0.0.1:5432, nothing measured");
        return;
    }
    large_exec_answer();
    let init = Command::new("pgbench")
        .args(["-i", "-q", "-s", &SCALE.to_string(), &pg_url()])
        .output();
    match init {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            println!(
                "queries bench: pgbench -i failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            return;
        }
        Err(e) => {
            println!("queries bench: cannot run pgbench ({e}), nothing measured");
            return;
        }
    }
    println!(
        "select-only (pgbench -S), scale {SCALE}, 4 connections, 10 s per run, medians of {RUNS} interleaved runs"
    );
    let text = workload("duration 10s");
    let (mut ours, mut theirs, mut our_cpu, mut their_cpu) = (vec![], vec![], vec![], vec![]);
    for _ in 0..RUNS {
        let r = run_queries(&text);
        ours.push(r.output.qps.unwrap_or(f64::NAN));
        if let Some(cpu) = r.client_cpu_s {
            our_cpu.push(cpu * 1e6 / (r.ok + r.failed).max(1) as f64);
        }
        if let Some((tps, cpu)) = pgbench(10) {
            theirs.push(tps);
            their_cpu.push(cpu * 1e6 / (tps * 10.0).max(1.0));
        }
    }
    let ours_m = median(ours);
    println!(
        "{:<40} {:>10.0} q/s  {:>6.1} us CPU/query",
        "wlrun (prepared, 4 workers)",
        ours_m,
        if our_cpu.is_empty() {
            f64::NAN
        } else {
            median(our_cpu)
        }
    );
    if theirs.is_empty() {
        println!("pgbench -S did not report a TPS, no ratio");
    } else {
        let theirs_m = median(theirs);
        println!(
            "{:<40} {:>10.0} q/s  {:>6.1} us CPU/query",
            "pgbench -S -M prepared -c 4 -j 2",
            theirs_m,
            median(their_cpu)
        );
        println!(
            "wlrun / pgbench: {:.2}x (target at least 0.95x)",
            ours_m / theirs_m
        );
    }
    if std::env::var("WLRUN_BENCH_LONG").is_ok_and(|v| v == "1") {
        // Peak memory after 100 k queries, then after 1 M more: flat if nothing grows with
        // the query count (the histograms are fixed-size, instances are built one at a time).
        let short = run_queries(&workload("count 100_000"));
        let peak_short = peak_rss_kib();
        let long = run_queries(&workload("count 1_000_000"));
        let peak_long = peak_rss_kib();
        println!(
            "peak resident memory: {peak_short} KiB after 100 k queries ({:.0} q/s), {peak_long} KiB after 1 M more ({:.0} q/s): {:.2}x",
            short.output.qps.unwrap_or(f64::NAN),
            long.output.qps.unwrap_or(f64::NAN),
            peak_long as f64 / peak_short.max(1) as f64
        );
    }
}
