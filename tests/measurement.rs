//! What a run's figures mean when the client keeps a schedule or a deadline, checked from the
//! outside: the in-test HTTP server stamps each request's arrival, so the precision of the
//! schedule is measured with the server's clock, not the client's. Also: every scheduled
//! request accounted for, a missed rate failing the run, `duration` as a hard stop (HTTP and
//! PostgreSQL wire), and latency grouped by label.
//!
//! One test at a time (a lock): the timing tests measure microseconds, and the other tests'
//! clients would share the two cores with them.

#[path = "common/cli.rs"]
mod cli;
use cli::wlrun;

#[path = "common/http_server.rs"]
mod http_server;
#[path = "common/nginx.rs"]
mod nginx;
#[path = "common/servers.rs"]
mod servers;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use http_server::{Behaviour, ServerHandle};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn run(text: &str) -> (i32, Value, String) {
    cli::run_json(text, &[], &[])
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn first_phase(report: &Value) -> &Value {
    &report["cells"][0]["phases"][0]
}

/// scheduled = ok + failed + cut_off + unsent, in the JSON.
fn adds_up(p: &Value) {
    let parts = u(&p["ok"]) + u(&p["failed"]) + u(&p["cut_off"]) + u(&p["unsent"]);
    assert_eq!(u(&p["scheduled"]), parts, "{p}");
}

fn request_run(server: &ServerHandle, clauses: &str) -> String {
    request_to(&server.url(), "/q", clauses)
}

fn request_to(url: &str, path: &str, clauses: &str) -> String {
    format!(
        "workload w {{ seed 1 }}\ntarget svc {{ http \"{url}\" {{ timeout 60s }} }}\nrun r {{\n  against svc.http\n  request GET \"{path}\"\n  connections 1\n{clauses}\n}}\n"
    )
}

/// A query run against the PostgreSQL test server, or `None` (skipped) without one.
fn pg_run(sql: &str, clauses: &str) -> Option<String> {
    if !servers::pg_up() {
        return None;
    }
    Some(format!(
        "workload w {{ seed 1 }}\ntarget db {{ pg \"{}\" }}\nquery q {{ sql \"{sql}\" }}\nrun r {{\n  against db.pg\n  queries q\n{clauses}\n}}\n",
        servers::pg_url()
    ))
}

fn percentile(sorted: &[u64], q: f64) -> u64 {
    sorted[((sorted.len() - 1) as f64 * q) as usize]
}

/// Timing on a shared machine: the server's thread and the client's can both be preempted, which
/// only ever adds deviation. The claim is that the client keeps the schedule; the best of a few
/// runs checks it, and the message gives every run's figures.
const TRIES: usize = 3;

#[test]
fn a_fixed_rate_is_kept_to_microseconds_as_the_server_sees_it() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut seen = Vec::new();
    for _ in 0..TRIES {
        let server = ServerHandle::start(Behaviour::ok().with_body("[]"));
        let (code, report, err) = run(&request_run(&server, "  duration 3s\n  rate 1000/s"));
        let p = first_phase(&report);
        assert_eq!(code, 0, "{err}\n{p}");
        adds_up(p);
        assert_eq!(u(&p["scheduled"]), 3000, "{p}");
        assert_eq!(p["achieved_rate"].as_f64(), Some(1.0), "{p}");
        let lag = &p["send_lag"];
        assert_eq!(u(&lag["count"]), u(&p["ok"]) + u(&p["failed"]), "{lag}");
        // The server's own clock: gaps between arrivals, against the 1 ms schedule.
        let at: Vec<Instant> = server.requests().iter().map(|r| r.at).collect();
        assert!(at.len() >= 2900, "{} requests arrived", at.len());
        let mut dev: Vec<u64> = at
            .windows(2)
            .map(|w| {
                let gap = w[1].duration_since(w[0]).as_nanos() as i64;
                (gap - 1_000_000).unsigned_abs() / 1000
            })
            .collect();
        dev.sort_unstable();
        let gaps = percentile(&dev, 0.5);
        // Intended-time latency carries no client lag beyond the send's own.
        let lat = u(&p["latency"]["p50_us"]);
        let svc = u(&p["service"]["p50_us"]);
        let extra = lat.saturating_sub(svc);
        let lag50 = u(&lag["p50_us"]);
        seen.push(format!(
            "gap deviation p50 {gaps} us (p90 {} us), latency p50 {lat} us - service p50 {svc} us, send lag p50 {lag50} us",
            percentile(&dev, 0.9)
        ));
        // The gaps are timed by the server's thread, whose own wake-ups on a loaded 2-core box
        // add 20 us at the median while the client's send lag stays at 1 us: 50 us for them.
        if gaps < 50 && extra < 20 && lag50 < 20 {
            return;
        }
    }
    panic!(
        "in none of {TRIES} runs was the schedule kept to 50 us (gaps) and 20 us (lag): {seen:#?}"
    );
}

#[test]
fn a_rate_the_client_cannot_reach_fails_and_every_request_is_accounted_for() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = ServerHandle::start(Behaviour::ok().with_body("[]"));
    let text = request_run(&server, "  duration 1s\n  rate 200000/s");
    let (code, report, err) = run(&text);
    let p = first_phase(&report);
    assert_eq!(code, 1, "a missed rate fails the run: {err}\n{p}");
    adds_up(p);
    assert_eq!(u(&p["scheduled"]), 200_000, "{p}");
    assert!(u(&p["unsent"]) > 0, "{p}");
    let achieved = p["achieved_rate"].as_f64().unwrap();
    assert!(achieved < 0.95, "{p}");
    let failures = p["failures"].to_string();
    assert!(
        failures.contains("scheduled requests") && failures.contains("reached"),
        "{failures}"
    );
    // The server saw exactly the sends the report counts.
    let sent = u(&p["ok"]) + u(&p["failed"]) + u(&p["cut_off"]);
    assert!(server.count() as u64 <= sent && sent <= server.count() as u64 + 1);
    // Late sends are counted from their intended times, not dropped.
    assert!(p["late_share"].as_f64().unwrap() > 0.5, "{p}");

    // A workload may accept less.
    let lenient = text.replace(
        "rate 200000/s",
        "rate 200000/s\n  expect achieved_rate > 0.1%",
    );
    let (code, report, err) = run(&lenient);
    let p = first_phase(&report);
    assert_eq!(code, 0, "{err}\n{p}");
    assert_eq!(p["thresholds"][0]["ok"], true, "{p}");
}

#[test]
fn duration_is_a_hard_stop_against_a_server_that_never_answers() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = ServerHandle::start(Behaviour::ok().with_delay(Duration::from_secs(3600)));
    for load in ["", "  rate 10/s"] {
        let text = request_run(&server, &format!("  duration 2s\n{load}"));
        let t = Instant::now();
        let (code, report, err) = run(&text);
        let took = t.elapsed();
        let p = first_phase(&report);
        assert!(
            took < Duration::from_secs(6),
            "{load}: took {took:?}, not 2 s plus the grace: {p}"
        );
        assert_eq!(code, 1, "{err}");
        adds_up(p);
        assert!(u(&p["cut_off"]) >= 1, "{p}");
        assert_eq!(u(&p["ok"]), 0, "{p}");
        assert!(p["warnings"].to_string().contains("cut off"), "{p}");
    }
    // Said in the human output too, where nothing was answered.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("w.wl"),
        request_run(&server, "  duration 1s"),
    )
    .unwrap();
    let out = wlrun(dir.path(), &["run", "w.wl", "--quiet"]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("1 scheduled = 0 ok + 0 failed + 1 cut off + 0 unsent"),
        "{text}"
    );
}

#[test]
fn duration_is_a_hard_stop_over_postgres_wire_too() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Accepts connections and never says a word: the startup handshake never completes.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let keep = std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().take(8).flatten() {
            held.push(s);
        }
        std::thread::sleep(Duration::from_secs(30));
    });
    let text = format!(
        "workload w {{ seed 1 }}\ntarget db {{ pg \"postgres://wlrun:wlrun@127.0.0.1:{port}/wlrun\" }}\nquery one {{ sql \"SELECT 1\" }}\nrun q {{\n  against db.pg\n  queries one\n  workers 2\n  duration 2s\n}}\n"
    );
    let t = Instant::now();
    let (code, report, err) = run(&text);
    let took = t.elapsed();
    let p = first_phase(&report);
    assert!(took < Duration::from_secs(6), "took {took:?}: {p}");
    assert_eq!(code, 1, "{err}");
    adds_up(p);
    drop(keep);
}

#[test]
fn queries_that_share_a_label_are_measured_as_one() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let text = "workload w { seed 1 }\ntarget db { sqlite \"l.db\" }\n\
        query a { sql \"SELECT 1\" label \"UPDATE\" }\n\
        query b { sql \"SELECT 2\" label \"UPDATE\" }\n\
        query c { sql \"SELECT 3\" }\n\
        run q {\n  against db.sqlite\n  queries a, b, c\n  count 30\n}\n";
    let (code, report, err) = run(text);
    let p = first_phase(&report);
    assert_eq!(code, 0, "{err}\n{p}");
    let labels = p["labels"].as_array().unwrap();
    assert_eq!(labels.len(), 2, "{p}");
    assert_eq!(labels[0]["label"], "UPDATE");
    assert_eq!(labels[0]["queries"], serde_json::json!(["a", "b"]));
    assert_eq!(u(&labels[0]["ok"]), 20);
    assert_eq!(u(&labels[0]["latency"]["count"]), 20);
    assert_eq!(labels[1]["label"], "c");
    assert_eq!(p["query_types"].as_array().unwrap().len(), 3);
    adds_up(p);
}

#[test]
fn progress_lines_name_the_warm_up_and_count_failures_apart() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    // Every query fails (no such table): the progress must not call that throughput.
    let text = "workload w { seed 1 }\ntarget db { sqlite \"p.db\" }\n\
        query bad { sql \"SELECT * FROM missing\" }\n\
        run q {\n  against db.sqlite\n  queries bad\n  warmup 1500ms\n  duration 1500ms\n}\n";
    std::fs::write(dir.path().join("w.wl"), text).unwrap();
    let out = wlrun(dir.path(), &["run", "w.wl", "--progress-every", "0.5"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("[1/1] q: ")).collect();
    assert!(
        lines.iter().any(|l| l.contains("warm-up (not measured)")),
        "{err}"
    );
    let measured: Vec<&&str> = lines.iter().filter(|l| !l.contains("warm-up")).collect();
    assert!(!measured.is_empty(), "{err}");
    assert!(
        measured.iter().all(|l| l.contains(" 0 ok (0/s)")),
        "failed queries are not shown as a rate of queries: {err}"
    );
}

#[test]
fn open_loop_against_nginx_keeps_its_schedule_or_says_how_far_it_got() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(program) = nginx::program() else {
        return servers::missing(nginx::MISSING);
    };
    let server = nginx::Nginx::start(&program);
    let mut seen = Vec::new();
    for _ in 0..TRIES {
        let (code, report, err) = run(&request_to(
            &server.url(),
            "/query",
            "  duration 2s\n  rate 1000/s",
        ));
        let p = first_phase(&report);
        assert_eq!(code, 0, "{err}\n{p}");
        adds_up(p);
        assert_eq!(u(&p["scheduled"]), 2000, "{p}");
        // A machine busy with other work can hold the last send past the end (it is then
        // unsent, and said so): the schedule must be kept in one of the tries.
        let achieved = p["achieved_rate"].as_f64();
        let lat = u(&p["latency"]["p50_us"]);
        let svc = u(&p["service"]["p50_us"]);
        seen.push(format!(
            "achieved {achieved:?}, latency p50 {lat} us, service p50 {svc} us"
        ));
        if achieved == Some(1.0) && lat.saturating_sub(svc) < 20 {
            break;
        }
        assert!(seen.len() < TRIES, "{seen:#?}");
    }

    let (code, report, err) = run(&request_to(
        &server.url(),
        "/query",
        "  duration 1s\n  rate 200000/s",
    ));
    let p = first_phase(&report);
    assert_eq!(code, 1, "{err}\n{p}");
    adds_up(p);
    assert_eq!(u(&p["scheduled"]), 200_000, "{p}");
    assert!(
        p["failures"].to_string().contains("scheduled requests"),
        "{p}"
    );
}

#[test]
fn postgres_queries_still_running_at_the_end_are_cut_off() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(text) = pg_run("SELECT pg_sleep(30)", "  workers 2\n  duration 2s") else {
        return;
    };
    let t = Instant::now();
    let (code, report, err) = run(&text);
    let took = t.elapsed();
    let p = first_phase(&report);
    assert!(took < Duration::from_secs(8), "took {took:?}: {p}");
    assert_eq!(code, 1, "{err}\n{p}");
    adds_up(p);
    assert_eq!(u(&p["cut_off"]), 2, "one query in flight per worker: {p}");
    assert_eq!(u(&p["ok"]), 0, "{p}");
}

#[test]
fn a_postgres_open_loop_run_below_its_rate_fails_and_adds_up() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // 20 ms a query on one connection is at most 50/s of the 200/s asked for.
    let Some(text) = pg_run(
        "SELECT pg_sleep(0.02)",
        "  workers 1\n  duration 2s\n  rate 200/s",
    ) else {
        return;
    };
    let (code, report, err) = run(&text);
    let p = first_phase(&report);
    assert_eq!(code, 1, "{err}\n{p}");
    adds_up(p);
    assert_eq!(u(&p["scheduled"]), 400, "{p}");
    assert!(u(&p["unsent"]) > 200, "{p}");
    let failures = p["failures"].to_string();
    assert!(failures.contains("of 400 scheduled queries"), "{failures}");
    // Latency counts from the intended times: the backlog shows.
    assert!(
        u(&p["latency"]["p50_us"]) > 10 * u(&p["service"]["p50_us"]) / 2,
        "{p}"
    );
}
