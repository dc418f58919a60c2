//! A request run's figures against a server that knows the truth (`oracles::load`,
//! `Work::Serial(d)`): it serves one request at a time and sleeps `d` for each, so its service
//! time is `d`, its capacity `1/d`, and with `c` closed-loop connections each request waits for
//! the `c - 1` others: latency `c·d`. Sleeping, not spinning, so the truth does not move with
//! the box's load; the bounds leave room only on the side a loaded client can err to (slower,
//! never faster than the server allows).
//!
//! One test at a time (a lock): each measures a rate, and the others' clients would share the
//! two cores with it.

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
        "workload w {{ seed 1 }}\ntarget svc {{ http \"{}\" {{ timeout 60s }} }}\nrun r {{\n  against svc.http\n  request GET \"/q\"\n{clauses}\n}}\n",
        server.url()
    );
    let (code, report, err) = cli::run_json(&text, &[], &[]);
    (code, report["cells"][0]["phases"][0].clone(), err)
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn us(d: Duration) -> u64 {
    d.as_micros() as u64
}

/// scheduled = ok + failed + cut_off + unsent.
fn adds_up(p: &Value) {
    let parts = u(&p["ok"]) + u(&p["failed"]) + u(&p["cut_off"]) + u(&p["unsent"]);
    assert_eq!(u(&p["scheduled"]), parts, "{p}");
}

#[test]
fn closed_loop_rate_and_latency_are_the_servers_service_time() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = LoadServer::start(Work::Serial(D));
    let capacity = 1.0 / D.as_secs_f64();
    for connections in [1u64, 4] {
        let (code, p, err) = run(
            &server,
            &format!("  connections {connections}\n  duration 2s"),
        );
        eprintln!(
            "closed loop, {connections} connections: {} /s (capacity {capacity}), latency p50 {} us (truth {} us)",
            p["rps"], p["latency"]["p50_us"], connections * us(D)
        );
        assert_eq!(code, 0, "{err}\n{p}");
        assert_eq!(u(&p["failed"]), 0, "{p}");
        // A rate is what the server could serve at most, and a loaded client only lowers it.
        let rps = p["rps"].as_f64().unwrap();
        assert!(
            rps <= capacity * 1.02 && rps >= capacity * 0.6,
            "{connections} connections: {rps}/s against a capacity of {capacity}/s"
        );
        // Each request waits for the others' service before its own: c·d.
        let p50 = u(&p["latency"]["p50_us"]);
        let truth = connections * us(D);
        assert!(
            p50 >= truth * 95 / 100 && p50 <= truth + 4_000 * connections,
            "{connections} connections: latency p50 {p50} us, truth {truth} us"
        );
        assert!(u(&p["latency"]["min_us"]) >= us(D), "{p}");
        // The server's count is the report's.
        assert!(server.served() >= u(&p["ok"]), "{p}");
    }
}

#[test]
fn open_loop_below_capacity_keeps_its_rate_and_measures_the_service_time() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = LoadServer::start(Work::Serial(D));
    // 40/s against 200/s: requests rarely meet each other, so latency is the service time.
    let (code, p, err) = run(&server, "  connections 4\n  duration 2s\n  rate 40/s");
    eprintln!(
        "open loop 40/s: {} /s, service p50 {} us (truth {} us), latency p50 {} us, send lag p99 {} us",
        p["rps"], p["service"]["p50_us"], us(D), p["latency"]["p50_us"], p["send_lag"]["p99_us"]
    );
    assert_eq!(code, 0, "{err}\n{p}");
    adds_up(&p);
    assert_eq!(u(&p["scheduled"]), 80, "{p}");
    let rps = p["rps"].as_f64().unwrap();
    assert!((rps - 40.0).abs() <= 40.0 * 0.05, "{rps}/s for 40/s\n{p}");
    let service = u(&p["service"]["p50_us"]);
    assert!(
        service >= us(D) && service <= us(D) + 4_000,
        "service p50 {service} us, truth {} us",
        us(D)
    );
    let latency = u(&p["latency"]["p50_us"]);
    assert!(
        latency >= service && latency <= service + u(&p["send_lag"]["p99_us"]) + 1_000,
        "latency p50 {latency} us = service p50 {service} us + the send's lag\n{p}"
    );
}

#[test]
fn open_loop_above_capacity_reports_the_capacity_and_fails() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = LoadServer::start(Work::Serial(D));
    let capacity = 1.0 / D.as_secs_f64();
    // Twice the capacity, with connections enough to queue at the server.
    let (code, p, err) = run(&server, "  connections 8\n  duration 2s\n  rate 400/s");
    eprintln!(
        "open loop 400/s: {} /s (capacity {capacity}), achieved {}, latency p50 {} us",
        p["rps"], p["achieved_rate"], p["latency"]["p50_us"]
    );
    assert_eq!(code, 1, "a missed rate fails the run: {err}\n{p}");
    adds_up(&p);
    assert_eq!(u(&p["scheduled"]), 800, "{p}");
    let rps = p["rps"].as_f64().unwrap();
    assert!(
        rps <= capacity * 1.02 && rps >= capacity * 0.6,
        "{rps}/s reported against a capacity of {capacity}/s\n{p}"
    );
    assert!(p["achieved_rate"].as_f64().unwrap() < 0.95, "{p}");
    // Served requests never exceed what the server served.
    assert!(u(&p["ok"]) <= server.served(), "{p}");
    // Latency from the intended time carries the queue: far above the service time.
    let latency = u(&p["latency"]["p50_us"]);
    assert!(latency > 4 * us(D), "latency p50 {latency} us\n{p}");
}

#[test]
fn a_set_share_of_failures_is_counted_exactly_and_is_never_throughput() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Every 4th answer is a 500: of 200 requests, exactly 50 fail.
    let server = LoadServer::start_failing(Duration::from_millis(2), 4);
    let (code, p, err) = run(&server, "  connections 1\n  count 200");
    eprintln!(
        "failing every 4th: ok {} failed {} error_rate {} rps {}",
        p["ok"], p["failed"], p["error_rate"], p["rps"]
    );
    assert_eq!(code, 1, "errors fail the run: {err}\n{p}");
    assert_eq!(server.served(), 200, "{p}");
    assert_eq!(server.failed_answers(), 50);
    assert_eq!(u(&p["ok"]), 150, "{p}");
    assert_eq!(u(&p["failed"]), 50, "{p}");
    assert_eq!(u(&p["errors"]["http_status"]["count"]), 50, "{p}");
    assert_eq!(p["error_rate"].as_f64(), Some(0.25), "{p}");
    assert_eq!(u(&p["statuses"]["500"]), 50, "{p}");
    assert_eq!(u(&p["statuses"]["200"]), 150, "{p}");
    // A rate counts what succeeded: 150 over the span, never 200.
    let rps = p["rps"].as_f64().unwrap();
    let elapsed = p["elapsed_s"].as_f64().unwrap();
    assert!(
        (rps - 150.0 / elapsed).abs() < 1e-6,
        "{rps} vs 150 / {elapsed}"
    );
    // Only ok requests are in the latency.
    assert_eq!(u(&p["latency"]["count"]), 150, "{p}");
}

/// A warm-up's answers are not measured: `statuses` counts the measured answers only and
/// agrees with `ok` and `failed`; the warm-up's are apart. (Counted together, a run once
/// printed `statuses 200: 67,370, 404: 7,385` beside `http_status errors: 6,208`.)
#[test]
fn statuses_agree_with_ok_and_failed_and_the_warmup_is_apart() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Every 4th of the 240 answers fails: 60, of which the 40-request warm-up got 10.
    let server = LoadServer::start_failing(Duration::from_millis(1), 4);
    let (code, p, err) = run(&server, "  connections 1\n  warmup 40\n  count 200");
    eprintln!(
        "warm-up 40 + count 200: ok {} failed {} statuses {} warm-up {}",
        p["ok"], p["failed"], p["statuses"], p["warmup_statuses"]
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(server.served(), 240, "{p}");
    assert_eq!(server.failed_answers(), 60, "{p}");
    assert_eq!((u(&p["ok"]), u(&p["failed"])), (150, 50), "{p}");
    assert_eq!(u(&p["statuses"]["200"]), 150, "{p}");
    assert_eq!(u(&p["statuses"]["500"]), 50, "{p}");
    assert_eq!(u(&p["warmup_statuses"]["200"]), 30, "{p}");
    assert_eq!(u(&p["warmup_statuses"]["500"]), 10, "{p}");
}

/// Nothing succeeded: no latency figure from nothing (null in JSON, said in words), never
/// `latency mean 0.00ms ... max 0.00ms`.
#[test]
fn a_run_where_nothing_succeeded_has_no_latency() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = LoadServer::start_failing(Duration::from_millis(1), 1);
    let text = format!(
        "workload w {{ seed 1 }}\ntarget svc {{ http \"{}\" }}\nrun r {{\n  against svc.http\n  request GET \"/q\"\n  connections 1\n  count 20\n}}\n",
        server.url()
    );
    let dir = tempfile::tempdir().unwrap();
    let out = cli::run_out(dir.path(), &text, &[]);
    let p = out.phase();
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!((u(&p["ok"]), u(&p["failed"])), (0, 20), "{p}");
    assert_eq!(u(&p["latency"]["count"]), 0, "{p}");
    for f in ["min_us", "mean_us", "p50_us", "p99_us", "max_us"] {
        assert!(p["latency"][f].is_null(), "{f}: {p}");
    }
    let printed = out.printed();
    assert!(
        printed.contains("latency: none, no request succeeded"),
        "{printed}"
    );
    assert!(!printed.contains("p50 0.00ms"), "{printed}");
}

/// Busy processes on the one core wlrun is pinned to: the client cannot keep a 1,000/s schedule
/// (its send lag grows to the scheduler's slices, many milliseconds) while the server answers
/// in about 0.3 ms on the other core. The run says the client or its host set the figures, in
/// its output and in report.json. Needs `taskset` (util-linux) and two cores.
#[test]
fn a_starved_client_says_it_set_the_figures() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(
        cores >= 2,
        "needs two cores: the server's and the starved client's"
    );
    let server = LoadServer::start(Work::Serial(Duration::from_micros(200)));
    let spinners = Spinners::on_core_0(6);
    let text = format!(
        "workload w {{ seed 1 }}\ntarget svc {{ http \"{}\" }}\nrun r {{\n  against svc.http\n  request GET \"/q\"\n  connections 4\n  rate 1000/s\n  duration 3s\n}}\n",
        server.url()
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), text).unwrap();
    let out = std::process::Command::new("taskset")
        .args(["-c", "0", env!("CARGO_BIN_EXE_wlrun")])
        .args(["run", "w.wl", "--json"])
        .current_dir(dir.path())
        .output()
        .expect("taskset (util-linux)");
    drop(spinners);
    let err = String::from_utf8_lossy(&out.stderr);
    let report = cli::report_of(&out);
    let p = &report["cells"][0]["phases"][0];
    eprintln!(
        "starved: send lag p99 {} us, service p50 {} us, warnings {}",
        p["send_lag"]["p99_us"], p["service"]["p50_us"], p["warnings"]
    );
    let warned = p["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .find(|w| w.starts_with("client-bound:"))
        .unwrap_or_else(|| panic!("no client-bound warning: {p}"));
    assert!(warned.contains("load average"), "{warned}");
    assert!(
        err.contains("client-bound:"),
        "the output says so too: {err}"
    );
}

/// Busy loops pinned to core 0, killed when dropped.
struct Spinners(Vec<std::process::Child>);

impl Spinners {
    fn on_core_0(n: usize) -> Spinners {
        Spinners(
            (0..n)
                .map(|_| {
                    std::process::Command::new("taskset")
                        .args(["-c", "0", "sh", "-c", "while :; do :; done"])
                        .spawn()
                        .expect("taskset (util-linux)")
                })
                .collect(),
        )
    }
}

impl Drop for Spinners {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
