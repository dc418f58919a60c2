//! `wlrun run` request phases end to end, against an HTTP server started in the test on
//! 127.0.0.1 (tests/common/http_server.rs) that records what it receives and answers as told:
//! fixed and hook-built requests, key streams, statuses and body checks, stalls at a fixed
//! rate, dropped connections, the sandbox, SQL from a hook, and the shipped ksqlDB workload.

#[path = "common/cli.rs"]
mod cli;
use cli::wlrun;

#[path = "common/http_server.rs"]
mod http_server;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use http_server::{Behaviour, Ksql, ServerHandle};

/// Writes `w.wl` and the given side files into a fresh directory, runs it, and returns the
/// exit code, the JSON report and stderr.
fn run_files(text: &str, files: &[(&str, &str)], extra: &[&str]) -> (i32, Value, String) {
    cli::run_json(text, files, extra)
}

/// The request phase of the first cell.
fn phase(report: &Value) -> &Value {
    let p = &report["cells"][0]["phases"][0];
    assert_eq!(p["phase"], "requests", "{p}");
    p
}

/// A column of the phase's per-interval series (a run with `--out res` in `dir`).
fn series_column(dir: &Path, phase: &Value, column: &str) -> Vec<u64> {
    let path = dir
        .join("res")
        .join(phase["series"]["counts"].as_str().unwrap());
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let at = lines
        .next()
        .unwrap()
        .split(',')
        .position(|h| h == column)
        .unwrap();
    lines
        .map(|l| l.split(',').nth(at).unwrap().parse().unwrap())
        .collect()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn target(server: &ServerHandle) -> String {
    format!(
        r#"target svc {{
  http "{}" {{
    headers {{ "Accept": "application/vnd.ksql.v1+json", "Content-Type": "application/vnd.ksql.v1+json" }}
    timeout 5s
  }}
}}
"#,
        server.url()
    )
}

/// A ksqlDB-style hook: a random order key per request, drawn from ctx.rng.
const PULL_HOOK: &str = r#"
fn request(ctx) {
    let key = ctx.rng.int(0, 999);
    #{
        method: "POST",
        path: "/query",
        headers: #{ "X-Worker": `${ctx.worker}` },
        body: `{"ksql":"SELECT * FROM ORDERS_TABLE WHERE ORDERID = ${key};","streamsProperties":{}}`
    }
}

fn response(ctx, resp) {
    if resp.body.contains("\"errorMessage\"") {
        return "ksqlDB reported an error in the body";
    }
    if resp.body.contains("{\"row\"") { ctx.count("found"); } else { ctx.count("missing"); }
    true
}
"#;

fn pull_workload(server: &ServerHandle, seed: u64, clauses: &str) -> String {
    format!(
        "workload w {{ seed {seed} }}\n{}\nhook pull from \"pull.rhai\" (request, response)\nrun pulls {{\n  against svc.http\n  request pull.request\n  {clauses}\n  expect status 200\n  expect body json array\n}}\n",
        target(server)
    )
}

#[test]
fn a_hook_builds_every_request_and_the_same_seed_sends_the_same_keys() {
    let server = ServerHandle::start(Behaviour::ksql_with(Ksql {
        orders: 500,
        ..Ksql::default()
    }));
    let text = pull_workload(&server, 11, "connections 4  count 400");
    let (code, report, err) = run_files(&text, &[("pull.rhai", PULL_HOOK)], &[]);
    assert_eq!(code, 0, "{err}\n{report}");
    let p = phase(&report);
    assert_eq!((u(&p["ok"]), u(&p["failed"])), (400, 0), "{p}");
    assert_eq!(u(&p["statuses"]["200"]), 400);
    assert_eq!(p["request"], "pull.request");
    // Keys 0..500 exist on the server, 500..1000 do not: the response hook counted both.
    let found = p["counters"]["found"].as_i64().unwrap();
    let missing = p["counters"]["missing"].as_i64().unwrap();
    assert_eq!(found + missing, 400);
    assert!(
        found > 120 && missing > 120,
        "{found} found, {missing} missing"
    );
    assert_eq!(
        p["requests_per_worker"]
            .as_array()
            .unwrap()
            .iter()
            .map(u)
            .sum::<u64>(),
        400
    );
    assert!(u(&p["bytes_sent"]) > 400 * 100, "{p}");

    let recorded = server.requests();
    assert_eq!(recorded.len(), 400);
    for r in &recorded {
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/query");
        // The endpoint's headers, and the hook's own.
        assert_eq!(
            r.header("content-type"),
            Some("application/vnd.ksql.v1+json")
        );
        assert_eq!(r.header("accept"), Some("application/vnd.ksql.v1+json"));
        assert!(r
            .header("x-worker")
            .is_some_and(|w| w.parse::<u64>().unwrap() < 4));
    }
    assert_eq!(
        server.connections(),
        4,
        "one keep-alive connection per worker"
    );
    let keys: Vec<i64> = server.ksql_keys();
    assert!(keys.iter().all(|k| (0..1000).contains(k)));
    let distinct: BTreeSet<i64> = keys.iter().copied().collect();
    assert!(
        distinct.len() > 300,
        "keys spread: {} distinct",
        distinct.len()
    );
    let low = keys.iter().filter(|k| **k < 500).count();
    assert!(
        (140..=260).contains(&low),
        "uniform keys: {low} of 400 below 500"
    );

    // The key of request i is a function of (seed, hook, i): the same seed with one
    // connection sends the same set of keys; another seed does not.
    let again = ServerHandle::start(Behaviour::ksql());
    let text = pull_workload(&again, 11, "connections 1  count 400");
    let (code, _, err) = run_files(&text, &[("pull.rhai", PULL_HOOK)], &[]);
    assert_eq!(code, 0, "{err}");
    let mut a = keys.clone();
    let mut b = again.ksql_keys();
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b, "the same seed sends the same keys");
    let one_conn = again.ksql_keys();
    let third = ServerHandle::start(Behaviour::ksql());
    let text = pull_workload(&third, 11, "connections 1  count 400");
    run_files(&text, &[("pull.rhai", PULL_HOOK)], &[]);
    assert_eq!(
        third.ksql_keys(),
        one_conn,
        "one connection: the same stream, in order"
    );
    let other = ServerHandle::start(Behaviour::ksql());
    let text = pull_workload(&other, 12, "connections 1  count 400");
    run_files(&text, &[("pull.rhai", PULL_HOOK)], &[]);
    assert_ne!(other.ksql_keys(), one_conn, "another seed, other keys");
}

#[test]
fn a_server_answering_400_to_everything_fails_the_run_loudly() {
    let server = ServerHandle::start(Behaviour::ksql());
    // A SELECT sent to /ksql: ksqlDB answers 400 statement_error, every time.
    let text = format!(
        "workload w {{ seed 1 }}\n{}\nrun wrong {{\n  against svc.http\n  request POST \"/ksql\" body \"{{\\\"ksql\\\":\\\"SELECT * FROM ORDERS_TABLE WHERE ORDERID = 1;\\\",\\\"streamsProperties\\\":{{}}}}\"\n  connections 2\n  duration 1s\n  expect status 200\n}}\n",
        target(&server)
    );
    let dir = tempfile::tempdir().unwrap();
    let (code, report, err) = cli::run_json_in(dir.path(), &text, &["--out", "res"]);
    assert_eq!(code, 1, "{err}\n{report}");
    let p = phase(&report);
    assert_eq!(p["status"], "failed");
    assert_eq!(u(&p["ok"]), 0);
    let failed = u(&p["failed"]);
    assert!(failed > 50, "{p}");
    assert_eq!(
        p["rps"].as_f64().unwrap(),
        0.0,
        "errors are never throughput"
    );
    assert_eq!(u(&p["statuses"]["400"]), failed);
    let first = p["errors"]["http_status"]["first"].as_str().unwrap();
    assert!(first.contains("HTTP 400"), "{first}");
    assert!(
        first.contains("websocket endpoint"),
        "the server's message: {first}"
    );
    let failures = p["failures"].to_string();
    assert!(failures.contains("failed"), "{failures}");
    assert!(err.contains("FAILED"), "{err}");
    // Every failure is in the time series, in the interval it happened in.
    let per_interval: u64 = series_column(dir.path(), p, "failed").iter().sum();
    assert_eq!(per_interval, failed);
}

#[test]
fn errors_inside_a_200_are_errors_too() {
    // Every 4th answer carries ksqlDB's mid-stream errorMessage element.
    let server = ServerHandle::start(Behaviour::ksql_with(Ksql {
        error_every: 4,
        ..Ksql::default()
    }));
    let text = pull_workload(&server, 5, "connections 1  count 100");
    let (code, report, err) = run_files(&text, &[("pull.rhai", PULL_HOOK)], &[]);
    assert_eq!(code, 1, "{err}");
    let p = phase(&report);
    assert_eq!(u(&p["statuses"]["200"]), 100);
    assert_eq!(u(&p["errors"]["hook"]["count"]), 25, "{p}");
    assert_eq!(u(&p["ok"]), 75);
    // The same run allowed 30% errors passes.
    let text = pull_workload(
        &server,
        5,
        "connections 1  count 100  expect error_rate < 30%",
    );
    let (code, _, err) = run_files(&text, &[("pull.rhai", PULL_HOOK)], &[]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn body_checks_and_status_ranges_judge_every_answer() {
    // 203: a 2xx that, unlike 204, carries a body.
    let server = ServerHandle::start(Behaviour::ok().with_status(203).with_body("not json"));
    let base = |expects: &str| {
        format!(
            "workload w {{ seed 1 }}\n{}\nrun r {{\n  against svc.http\n  request GET \"/x?a=1\"\n  count 20\n  {expects}\n}}\n",
            target(&server)
        )
    };
    // 203 is a 2xx: fine without `expect status`, and within 200..300.
    let (code, report, err) = run_files(&base(""), &[], &[]);
    assert_eq!(code, 0, "{err}\n{report}");
    assert_eq!(u(&phase(&report)["reconnects"]), 0, "keep-alive holds");
    let (code, _, _) = run_files(&base("expect status 200..300"), &[], &[]);
    assert_eq!(code, 0);
    let (code, report, _) = run_files(&base("expect status [200, 201]"), &[], &[]);
    assert_eq!(code, 1);
    assert_eq!(u(&phase(&report)["errors"]["http_status"]["count"]), 20);
    let (code, report, _) = run_files(&base("expect body json"), &[], &[]);
    assert_eq!(code, 1);
    let p = phase(&report);
    assert_eq!(u(&p["errors"]["body"]["count"]), 20);
    assert!(p["errors"]["body"]["first"]
        .as_str()
        .unwrap()
        .contains("expect body json"));
    let (code, _, _) = run_files(&base("expect body contains \"not\""), &[], &[]);
    assert_eq!(code, 0);
    let r = &server.requests()[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("GET", "/x?a=1"));
}

#[test]
fn stalls_at_a_fixed_rate_show_in_p99_and_latency_counts_from_the_intended_time() {
    // Every 100th request stalls 200 ms; at 200/s on one connection the 40 requests behind a
    // stall queue up, and an open-loop run must show that (no coordinated omission).
    let server = ServerHandle::start(
        Behaviour::ok()
            .with_body("[]")
            .with_stall_every(100, Duration::from_millis(200)),
    );
    let text = format!(
        "workload w {{ seed 1 }}\n{}\nrun r {{\n  against svc.http\n  request POST \"/query\" body \"{{}}\"\n  connections 1\n  duration 3s\n  rate 200/s\n  expect p99 < 100ms\n}}\n",
        target(&server)
    );
    let dir = tempfile::tempdir().unwrap();
    let (code, report, err) = cli::run_json_in(dir.path(), &text, &["--out", "res"]);
    let p = phase(&report);
    assert_eq!(code, 1, "the p99 threshold fails: {err}\n{p}");
    let p99 = u(&p["latency"]["p99_us"]);
    assert!(p99 >= 150_000, "p99 {p99} us must show the 200 ms stalls");
    // Service time (from the actual send) hides the queueing; latency does not.
    let svc_p50 = u(&p["service"]["p50_us"]);
    let lat_p90 = u(&p["latency"]["p90_us"]);
    assert!(
        lat_p90 > 10 * svc_p50.max(1),
        "latency p90 {lat_p90} vs service p50 {svc_p50}"
    );
    assert!(u(&p["late"]) > 50, "requests sent late are counted: {p}");
    assert!(p99 < 1_000_000, "the stalls are all there is: p99 {p99} us");
    let sent = u(&p["ok"]) + u(&p["failed"]) + u(&p["unsent"]);
    assert!(
        (450..=620).contains(&sent),
        "about 600 scheduled in 3 s: {sent}"
    );
    assert!(p["thresholds"][0]["ok"] == false, "{p}");
    assert!(series_column(dir.path(), p, "ok").len() >= 3);
    // Closed loop against the same server: only the stalled requests themselves are slow.
    let closed = text.replace("rate 200/s", "");
    let (_, report, _) = run_files(&closed, &[], &[]);
    let p = phase(&report);
    assert!(p["service"].is_null());
    assert_eq!(u(&p["late"]), 0);
}

#[test]
fn dropped_connections_are_errors_and_the_run_goes_on() {
    let server = ServerHandle::start(Behaviour::ok().with_body("[]").with_close_every(10));
    let text = format!(
        "workload w {{ seed 1 }}\n{}\nrun r {{\n  against svc.http\n  request POST \"/query\" body \"{{}}\"\n  connections 2\n  count 100\n  expect error_rate < 20%\n}}\n",
        target(&server)
    );
    let (code, report, err) = run_files(&text, &[], &[]);
    assert_eq!(code, 0, "{err}");
    let p = phase(&report);
    assert_eq!(u(&p["ok"]) + u(&p["failed"]), 100);
    let lost = u(&p["errors"]["connection"]["count"]);
    assert!((8..=12).contains(&lost), "{p}");
    // Each lost connection is opened again, except one lost at a connection's last request.
    assert!(u(&p["reconnects"]) + 2 >= lost, "{p}");
    // The two first connections and every reconnect: at least one per lost connection.
    assert!(server.connections() as u64 >= lost, "{p}");
}

#[test]
fn no_server_fails_the_run() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let text = format!(
        "workload w {{ seed 1 }}\ntarget svc {{ http \"http://127.0.0.1:{port}\" {{ connect_timeout 1s }} }}\nrun r {{ against svc.http  request GET \"/\"  count 5 }}\n"
    );
    let (code, report, _) = run_files(&text, &[], &[]);
    // Nothing answered, every failure a connection not made: could not measure.
    assert_eq!(code, 3);
    let p = phase(&report);
    assert_eq!(u(&p["errors"]["connect"]["count"]), 5, "{p}");
}

fn sandbox_run(hook: &str) -> (i32, Value, String) {
    let server = ServerHandle::start(Behaviour::ok());
    let text = format!(
        "workload w {{ seed 1 }}\n{}\nhook h from \"h.rhai\"\nrun r {{ against svc.http  request h.request  connections 2  duration 30s }}\n",
        target(&server)
    );
    let started = std::time::Instant::now();
    let out = run_files(&text, &[("h.rhai", hook)], &[]);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "a broken hook stops its cell at once, not at the end of the duration"
    );
    out
}

#[test]
fn an_endless_loop_in_a_hook_is_stopped() {
    let (code, report, err) = sandbox_run("fn request(ctx) { loop { } }");
    assert_eq!(code, 1, "{err}");
    let failures = phase(&report)["failures"].to_string();
    assert!(failures.contains("operations"), "{failures}");
    assert!(failures.contains("h.rhai"), "{failures}");
}

#[test]
fn a_hook_allocating_without_bound_is_stopped() {
    let (code, report, err) =
        sandbox_run("fn request(ctx) { let s = \"xxxxxxxx\"; loop { s += s; } }");
    assert_eq!(code, 1, "{err}");
    let failures = phase(&report)["failures"].to_string();
    assert!(failures.contains("string"), "{failures}");
    let (code, report, _) =
        sandbox_run("fn request(ctx) { let a = []; loop { a.push([1, 2, 3, 4]); } }");
    assert_eq!(code, 1);
    let failures = phase(&report)["failures"].to_string();
    // Whichever limit comes first (a debug build is slow enough to reach the time limit).
    assert!(
        failures.contains("array")
            || failures.contains("operations")
            || failures.contains("took too long"),
        "{failures}"
    );
}

#[test]
fn a_hook_error_names_the_script_and_fails_the_cell() {
    let (code, report, _) = sandbox_run("fn request(ctx) { #{ path: 42 } }");
    assert_eq!(code, 1);
    let failures = phase(&report)["failures"].to_string();
    assert!(failures.contains("path"), "{failures}");
}

#[test]
fn a_hook_script_that_does_not_compile_is_a_diagnostic() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("w.wl"),
        "workload w { seed 1 }\ntarget svc { http \"http://127.0.0.1:9\" }\nhook h from \"h.rhai\"\nrun r { against svc.http  request h.request  count 1 }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("h.rhai"),
        "fn request(ctx) {\n  let x = ;\n}\n",
    )
    .unwrap();
    let out = wlrun(dir.path(), &["check", "w.wl"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("h.rhai:2:"), "{err}");
}

#[test]
fn a_hook_can_send_sql_to_a_sql_endpoint() {
    // SQLite, embedded: the hook returns #{sql, binds}; the query runner's transport runs it.
    let hook = r#"
fn init(ctx) { #{ sent: 0 } }
fn request(ctx) {
    ctx.state.sent += 1;
    #{ sql: "SELECT $1 + $2 AS s, $3 AS t", binds: [ctx.index, ctx.rng.int(1, 6), "x"] }
}
fn response(ctx, resp) {
    ctx.count("rows", resp.rows);
    ctx.count("state", ctx.state.sent);
    resp.rows == 1
}
"#;
    let text = "workload w { seed 1 }\ntarget db { sqlite \"db.sqlite\" }\nhook h from \"h.rhai\" (init, request, response)\nrun r { against db.sqlite  request h.request  connections 1  count 30 }\n";
    let (code, report, err) = run_files(text, &[("h.rhai", hook)], &[]);
    assert_eq!(code, 0, "{err}\n{report}");
    let p = phase(&report);
    assert_eq!(u(&p["ok"]), 30, "{p}");
    assert_eq!(u(&p["rows"]), 30);
    assert_eq!(p["counters"]["rows"].as_i64(), Some(30));
    // ctx.state persists across calls: 1 + 2 + ... + 30.
    assert_eq!(p["counters"]["state"].as_i64(), Some(465));
}

#[test]
fn the_shipped_ksql_workload_runs_against_a_ksqldb_shaped_server() {
    let server = ServerHandle::start(Behaviour::ksql());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let url = format!("ksql_url=\"{}\"", server.url());
    // 5 s at 5,000/s is the shipped run; a shorter run at a rate this machine's test
    // server keeps up with checks the same file.
    let out = wlrun(
        root,
        &[
            "run",
            "workloads/ksql-pull.wl",
            "--json",
            "--quiet",
            "--param",
            &url,
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {err}"));
    let p = phase(&report);
    assert!(u(&p["ok"]) > 5_000, "{p}");
    assert_eq!(p["load"], "open 5000/s fixed");
    // Whatever this machine managed, every answer was a 200 with a JSON array.
    assert_eq!(u(&p["statuses"]["200"]), u(&p["ok"]) + u(&p["failed"]));
    assert_eq!(u(&p["failed"]), 0, "{p}");
    let recorded = server.requests();
    let r = &recorded[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/query"));
    assert_eq!(
        r.header("content-type"),
        Some("application/vnd.ksql.v1+json")
    );
    let body: Value = serde_json::from_slice(&r.body).unwrap();
    assert!(body["ksql"]
        .as_str()
        .unwrap()
        .starts_with("SELECT * FROM ORDERS_TABLE WHERE ORDERID = "));
    assert!(server.ksql_keys().iter().all(|k| (0..100_000).contains(k)));
    let found = p["counters"]["found"].as_i64().unwrap_or(0);
    assert_eq!(found as u64, u(&p["ok"]), "every key exists on the server");
    // Either this machine kept the rate, or the run failed saying how far it got.
    assert!(
        out.status.code() == Some(0) || p["failures"].to_string().contains("scheduled requests"),
        "exit {:?} without saying why: {err}",
        out.status.code()
    );
}

#[test]
fn the_shipped_ksql_workload_fails_against_a_server_too_slow_for_its_rate() {
    // 20 ms an answer on one connection is 50 requests/s of the 5,000/s asked for.
    let server = ServerHandle::start(Behaviour::ksql().with_delay(Duration::from_millis(20)));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let url = format!("ksql_url=\"{}\"", server.url());
    let out = wlrun(root, &["run", "workloads/ksql-pull.wl", "--param", &url]);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    // Said in the human output, not only in the JSON.
    assert!(text.contains("of 25,000 scheduled requests"), "{text}");
    assert!(text.contains("25,000 scheduled = "), "{text}");
}

#[test]
fn building_ahead_keeps_the_request_stream() {
    // Without response(), the next request is built while the server answers: the requests
    // sent are still exactly indices 0..count, whatever the connection count.
    let hook = r#"
fn request(ctx) {
    #{ method: "POST", path: "/query",
       body: `{"ksql":"SELECT * FROM ORDERS_TABLE WHERE ORDERID = ${ctx.rng.int(0, 99999)};"}` }
}
"#;
    let keys = |connections: u32| {
        let server = ServerHandle::start(Behaviour::ksql());
        let text = format!(
            "workload w {{ seed 3 }}\n{}\nhook h from \"h.rhai\" (request)\nrun r {{ against svc.http  request h.request  connections {connections}  count 300  expect status 200 }}\n",
            target(&server)
        );
        let (code, report, err) = run_files(&text, &[("h.rhai", hook)], &[]);
        assert_eq!(code, 0, "{err}\n{report}");
        assert_eq!(u(&phase(&report)["ok"]), 300);
        let mut k = server.ksql_keys();
        assert_eq!(k.len(), 300);
        k.sort_unstable();
        k
    };
    assert_eq!(keys(1), keys(3));
}
