//! A query phase's figures against a server that knows the truth (`oracles::load`,
//! `Work::Serial(d)` answering QuestDB's `/exec`): one query at a time, each taking `d`, so its
//! capacity is `1/d`, `c` closed-loop workers each wait `c·d`, and below capacity in open loop a
//! query's service time is `d`. The query runner (`exec/queries.rs`) measures separately from
//! the request runner, so its rate, latency and service time get their own oracle test.
//!
//! One test at a time (a lock): each measures a rate.

#[path = "common/cli.rs"]
mod cli;
#[path = "common/oracles/mod.rs"]
mod oracles;

use std::sync::Mutex;
use std::time::Duration;

use oracles::load::{LoadServer, Work};
use serde_json::Value;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The server's service time.
const D: Duration = Duration::from_millis(5);

fn run(server: &LoadServer, clauses: &str) -> (i32, Value, String) {
    let text = format!(
        "workload w {{ seed 1 }}\ntarget svc {{\n  dialect questdb\n  http \"{}\" {{ timeout 60s }}\n}}\nquery one {{ sql \"SELECT 1\" }}\nrun r {{\n  against svc.http\n  queries one\n{clauses}\n}}\n",
        server.url()
    );
    // No version question: the server's count is the run's alone.
    let (code, report, err) = cli::run_json(&text, &[], &["--no-server-versions"]);
    (code, report["cells"][0]["phases"][0].clone(), err)
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn us(d: Duration) -> u64 {
    d.as_micros() as u64
}

#[test]
fn closed_loop_qps_and_latency_are_the_servers_service_time() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = LoadServer::start(Work::Serial(D));
    let capacity = 1.0 / D.as_secs_f64();
    for workers in [1u64, 4] {
        let (code, p, err) = run(&server, &format!("  workers {workers}\n  duration 2s"));
        eprintln!(
            "queries, closed loop, {workers} workers: {} q/s (capacity {capacity}), latency p50 {} us (truth {} us)",
            p["qps"], p["latency"]["p50_us"], workers * us(D)
        );
        assert_eq!(code, 0, "{err}\n{p}");
        assert_eq!(u(&p["failed"]), 0, "{p}");
        let qps = p["qps"].as_f64().unwrap();
        assert!(
            qps <= capacity * 1.02 && qps >= capacity * 0.6,
            "{workers} workers: {qps} q/s against a capacity of {capacity}/s"
        );
        let p50 = u(&p["latency"]["p50_us"]);
        let truth = workers * us(D);
        assert!(
            p50 >= truth * 95 / 100 && p50 <= truth + 4_000 * workers,
            "{workers} workers: latency p50 {p50} us, truth {truth} us"
        );
        assert!(u(&p["ok"]) <= server.served(), "{p}");
    }
}

#[test]
fn open_loop_below_capacity_keeps_its_rate_and_measures_the_service_time() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = LoadServer::start(Work::Serial(D));
    let (code, p, err) = run(&server, "  workers 4\n  duration 2s\n  rate 40/s");
    eprintln!(
        "queries, open loop 40/s: {} q/s, service p50 {} us (truth {} us), latency p50 {} us",
        p["qps"],
        p["service"]["p50_us"],
        us(D),
        p["latency"]["p50_us"]
    );
    assert_eq!(code, 0, "{err}\n{p}");
    let parts = u(&p["ok"]) + u(&p["failed"]) + u(&p["cut_off"]) + u(&p["unsent"]);
    assert_eq!(u(&p["scheduled"]), parts, "{p}");
    assert_eq!(u(&p["scheduled"]), 80, "{p}");
    let qps = p["qps"].as_f64().unwrap();
    assert!((qps - 40.0).abs() <= 40.0 * 0.05, "{qps} q/s for 40/s\n{p}");
    let service = u(&p["service"]["p50_us"]);
    assert!(
        service >= us(D) && service <= us(D) + 4_000,
        "service p50 {service} us, truth {} us",
        us(D)
    );
}

#[test]
fn open_loop_above_capacity_reports_the_capacity_and_fails() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = LoadServer::start(Work::Serial(D));
    let capacity = 1.0 / D.as_secs_f64();
    let (code, p, err) = run(&server, "  workers 8\n  duration 2s\n  rate 400/s");
    eprintln!(
        "queries, open loop 400/s: {} q/s (capacity {capacity}), achieved {}",
        p["qps"], p["achieved_rate"]
    );
    assert_eq!(code, 1, "a missed rate fails the run: {err}\n{p}");
    let qps = p["qps"].as_f64().unwrap();
    assert!(
        qps <= capacity * 1.02 && qps >= capacity * 0.6,
        "{qps} q/s reported against a capacity of {capacity}/s\n{p}"
    );
    assert!(p["achieved_rate"].as_f64().unwrap() < 0.95, "{p}");
}
