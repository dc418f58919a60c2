//! `cargo bench --bench queries`: the query runner against PostgreSQL's own `pgbench`.
//!
//! `SELECT abalance FROM pgbench_accounts WHERE aid = $1` with a uniform `aid`, prepared
//! statements, at 1 connection (`pgbench -S -M prepared -c 1 -j 1 -T 10`) and at 4 (`-c 4
//! -j 2`), each against a `wlrun` run of the same query for 10 s with as many workers,
//! interleaved, medians of 5 (targets, issue 33: wlrun at least 0.95x pgbench's TPS at no more
//! than 1.1x its client CPU per query). The client (this process and pgbench) runs on core 0,
//! the server's processes on core 1 (benches/common/pin.rs). Then a run of 1 M queries
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

#[path = "common/pin.rs"]
mod pin;

#[allow(dead_code)] // run_wrk: only `times` is read here
#[path = "common/wrk.rs"]
mod wrk;
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
fn pgbench(flags: &str, seconds: u64) -> Option<(f64, f64)> {
    let script = format!(
        "pgbench -n -S -M prepared {flags} -T {seconds} '{}' 2>/dev/null",
        pg_url()
    );
    let text = wrk::run_timed(&script, None).stdout;
    let tps: f64 = text
        .lines()
        .find(|l| l.starts_with("tps = "))?
        .split_whitespace()
        .nth(2)?
        .parse()
        .ok()?;
    Some((tps, wrk::children_cpu_s(&text)?))
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
    workload_with(4, stop)
}

fn workload_with(workers: u64, stop: &str) -> String {
    format!(
        r#"workload b {{ seed 7 }}
target db {{ dialect postgres  pg "{}" {{ statements prepared }} }}
query select_only {{
  sql "SELECT abalance FROM pgbench_accounts WHERE aid = $1"
  bind $1 = uniform(1, {})
}}
run s {{ against db.pg  queries select_only  workers {workers}  {stop}  require rows(pgbench_accounts) > 0 }}
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
            then: Vec::new(),
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
    let server = wlrun::exec::observe::root::find(&wlrun::plan::ProcessRoot::Listening {
        endpoint: "pg".into(),
        url: wlrun::value::Text::lit(pg_url()),
    });
    match server {
        Ok(p) => println!("{}", pin::pin(0, p.pid, 1)),
        Err(e) => println!("not pinned: the server's process: {e}"),
    }
    println!(
        "select-only (pgbench -S), scale {SCALE}, 10 s per run, medians of {RUNS} interleaved runs"
    );
    println!(
        "{:<34} {:>10} {:>9} {:>10} {:>9} {:>8} {:>8}",
        "", "wlrun q/s", "us/query", "pgbench", "us/query", "q/s", "CPU/q"
    );
    for (workers, flags) in [(1u64, "-c 1 -j 1"), (4, "-c 4 -j 2")] {
        let text = workload_with(workers, "duration 10s");
        let (mut ours, mut theirs, mut our_cpu, mut their_cpu) = (vec![], vec![], vec![], vec![]);
        for round in 0..RUNS {
            let mut ours_run = || {
                let r = run_queries(&text);
                ours.push(r.output.qps.unwrap_or(f64::NAN));
                our_cpu.push(
                    r.client_cpu_s.unwrap_or(f64::NAN) * 1e6 / (r.ok + r.failed).max(1) as f64,
                );
            };
            // Alternate which goes first, so that neither always runs on a warmer machine.
            if round % 2 == 0 {
                ours_run();
            }
            if let Some((tps, cpu)) = pgbench(flags, 10) {
                theirs.push(tps);
                their_cpu.push(cpu * 1e6 / (tps * 10.0).max(1.0));
            }
            if round % 2 == 1 {
                ours_run();
            }
        }
        if theirs.is_empty() {
            println!("pgbench -S {flags} did not report a TPS, no ratio");
            continue;
        }
        let (q, c, tq, tc) = (
            median(ours),
            median(our_cpu),
            median(theirs),
            median(their_cpu),
        );
        let (rate, cpu) = (q / tq, c / tc);
        let mut below = Vec::new();
        if rate < 0.95 {
            below.push("q/s below 0.95x");
        }
        if cpu > 1.1 {
            below.push("CPU above 1.1x");
        }
        println!(
            "{:<34} {q:>10.0} {c:>9.1} {tq:>10.0} {tc:>9.1} {rate:>7.2}x {cpu:>7.2}x  {}",
            format!("{workers} conn (pgbench -S -M prepared {flags})"),
            below.join(", ")
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
