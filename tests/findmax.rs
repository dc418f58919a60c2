//! `find max rate` end to end against servers of known capacity (tests/common/oracles/load.rs):
//! a single-threaded server busy for 2 ms a request, whose closed-loop capacity the test
//! measures first, and a server whose latency grows smoothly with the rate it sees, searched
//! with three seeds. Also the ksqlDB variant of workloads/ against the in-test ksqlDB server.

#[path = "common/cli.rs"]
mod cli;
#[path = "common/http_server.rs"]
mod http_server;
#[path = "common/oracles/mod.rs"]
mod oracles;

use std::time::Duration;

use serde_json::Value;

use oracles::load::{LoadServer, Work};

/// The searches of this file run one at a time: each measures latency on a shared machine, and
/// another search beside it would be part of what it measures.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn phase(report: &Value) -> &Value {
    let p = &report["cells"][0]["phases"][0];
    assert_eq!(p["phase"], "requests", "{p}");
    p
}

fn workload(url: &str, find: &str) -> String {
    workload_with(url, 32, find)
}

fn workload_with(url: &str, connections: u32, find: &str) -> String {
    format!(
        r#"target svc {{
  http "{url}" {{ timeout 5s }}
}}

run probe {{
  against svc.http
  request GET "/"
  connections {connections}
  warmup 300ms
  {find}
}}
"#
    )
}

/// The search's answer and its steps, after checking what every step and report must hold.
fn answer(report: &Value) -> (Option<f64>, Vec<Value>) {
    let p = phase(report);
    let f = &p["findmax"];
    let steps = f["steps"].as_array().unwrap().clone();
    assert!(!steps.is_empty(), "{f}");
    for s in &steps {
        let n = |k: &str| s[k].as_u64().unwrap();
        // Every scheduled request is accounted for, in each step.
        assert_eq!(
            n("scheduled"),
            n("ok") + n("failed") + n("cut_off") + n("unsent"),
            "{s}"
        );
        assert!(["grow", "down", "bisect", "confirm"].contains(&s["phase"].as_str().unwrap()));
        let verdict = s["verdict"].as_str().unwrap();
        assert_eq!(
            verdict == "met",
            s["broke"].as_array().unwrap().is_empty(),
            "{s}"
        );
    }
    let a = f["answer_per_s"].as_f64();
    if let Some(a) = a {
        // The answer met the SLA twice (its step and its confirmation) and never broke it.
        let at_answer = |verdict: &str| {
            steps
                .iter()
                .filter(|s| s["verdict"] == verdict && s["rate_per_s"].as_f64() == Some(a))
                .count()
        };
        if f["confirmed"] == true {
            assert_eq!(at_answer("met"), 2, "{f}");
            assert_eq!(steps.last().unwrap()["phase"], "confirm", "{f}");
        } else {
            assert!(at_answer("met") >= 1, "{f}");
        }
        assert_eq!(at_answer("broke"), 0, "{f}");
        // The run's own figures are the answer step's.
        assert_eq!(p["load"], format!("open {} fixed", fmt_rate(a)), "{p}");
    }
    (a, steps)
}

fn fmt_rate(r: f64) -> String {
    if r.fract() == 0.0 {
        format!("{}/s", r as i64)
    } else {
        format!("{r}/s")
    }
}

fn table(report: &Value) -> String {
    let steps = report["cells"][0]["phases"][0]["findmax"]["steps"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    steps
        .iter()
        .map(|s| {
            format!(
                "{} {} ok {} p99 {}us {} {:?}",
                s["phase"], s["rate_per_s"], s["ok"], s["p99_us"], s["verdict"], s["broke"]
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Latency base / (1 − rate / capacity): 20 ms / (1 − r / 1000/s) is under 90 ms below 778/s.
/// The same answer, within the resolution, whatever the seed. Latencies of tens of
/// milliseconds and a p90 keep the verdicts clear of a busy machine's scheduling delays (a few
/// milliseconds at its p99); 128 connections carry 100 ms answers at 800/s.
#[test]
fn a_smooth_server_gives_the_same_answer_across_seeds() {
    let _serial = serial();
    let server = LoadServer::start(Work::Smooth {
        base: Duration::from_millis(20),
        capacity: 1000.0,
        cap: Duration::from_secs(1),
    });
    let wl = workload_with(
        &server.url(),
        128,
        "find max rate from 200/s where p90 < 90ms and error_rate < 1%",
    );
    let mut answers = Vec::new();
    let mut tables = Vec::new();
    for seed in ["1", "2", "3"] {
        let (code, report, err) = cli::run_json(&wl, &[], &["--seed", seed]);
        tables.push(table(&report));
        assert_eq!(code, 0, "{err}\n{}", tables.join("\n\n"));
        answers.push(answer(&report).0.expect("an answer"));
    }
    let lo = answers.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = answers.iter().cloned().fold(0.0, f64::max);
    // Each search ends with its bracket within 5%; two searches agree within that.
    assert!(
        (hi - lo) / lo <= 0.05,
        "{answers:?}\n{}",
        tables.join("\n\n")
    );
    assert!(
        (700.0..800.0).contains(&lo) && hi < 800.0,
        "{answers:?}\n{}",
        tables.join("\n\n")
    );
}

/// A first step that breaks searches down, halving to `from / 64`: an SLA no rate meets ends
/// there with no answer, exit 1, said in the report.
#[test]
fn an_sla_not_met_at_from_nor_below_fails_the_run() {
    let _serial = serial();
    let server = LoadServer::start(Work::Serial(Duration::from_millis(2)));
    let wl = workload(
        &server.url(),
        "find max rate from 6400/s where p50 < 1us samples 20",
    );
    let (code, report, _) = cli::run_json(&wl, &[], &[]);
    assert_eq!(code, 1);
    let p = phase(&report);
    let f = &p["findmax"];
    assert_eq!(f["answer_per_s"], Value::Null);
    assert_eq!(f["outcome"], "not_met_at_from");
    let rates: Vec<(String, f64)> = f["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["phase"].as_str().unwrap().to_string(),
                s["rate_per_s"].as_f64().unwrap(),
            )
        })
        .collect();
    let expected: Vec<(String, f64)> = [6400.0, 3200.0, 1600.0, 800.0, 400.0, 200.0, 100.0]
        .iter()
        .enumerate()
        .map(|(i, &r)| ((if i == 0 { "grow" } else { "down" }).to_string(), r))
        .collect();
    assert_eq!(rates, expected, "{f}");
    assert_eq!(p["status"], "failed");
    let why = p["failures"][0].as_str().unwrap();
    assert!(
        why.contains("not met at from 6400/s") && why.contains("nor searching down to 100/s"),
        "{why}"
    );
}

/// The search against the serial oracle (one request at a time, sleeping 5 ms: capacity
/// C = 200/s whatever the box's load): fixed arrivals queue nothing below C and without bound
/// above it, so a p90 SLA of 50 ms holds up to about C (a step 5% above C queues 13 requests
/// more by its end, 65 ms, which its last quarter waits past 50 ms; one 2% above it, 5 more,
/// meets the SLA for its span: the answer may be 2% over C). 50 ms, not less: on a loaded box
/// the client's own scheduling lag put a p90 of 20 ms at C/4. A server that spins instead of
/// sleeping (an earlier test here) loses capacity to the box's load and answered 45-53% of it
/// under builds. Whether the search starts above C
/// (searching down) or far under it (C/8, growing), its confirmed answer is in [0.6 C, C]
/// (1.02 C: below).
#[test]
fn the_answer_is_the_oracles_capacity_from_above_and_from_below() {
    let _serial = serial();
    let d = Duration::from_millis(5);
    let capacity = 1.0 / d.as_secs_f64();
    let server = LoadServer::start(Work::Serial(d));
    for from in [4.0 * capacity, capacity / 8.0] {
        let wl = workload(
            &server.url(),
            &format!(
                "find max rate from {}/s where p90 < 50ms samples 200",
                fmt_rate(from).trim_end_matches("/s")
            ),
        );
        let (code, report, err) = cli::run_json(&wl, &[], &[]);
        let (a, _) = answer(&report);
        eprintln!(
            "from {from}/s: answer {a:?} of a capacity of {capacity}/s\n{}",
            table(&report)
        );
        assert_eq!(code, 0, "{err}\n{}", table(&report));
        let a = a.expect("an answer");
        assert!(
            (0.6 * capacity..=1.02 * capacity).contains(&a),
            "from {from}/s: answer {a}/s, capacity {capacity}/s\n{}",
            table(&report)
        );
        assert_eq!(phase(&report)["findmax"]["confirmed"], true);
    }
}

/// `up to` met: the answer is the cap, said as such.
#[test]
fn a_cap_that_meets_is_the_answer() {
    let _serial = serial();
    let server = LoadServer::start(Work::Serial(Duration::from_micros(100)));
    let wl = workload(
        &server.url(),
        "find max rate from 100/s up to 300/s where p99 < 1s samples 100",
    );
    let dir = tempfile::tempdir().unwrap();
    let (code, report, err) = cli::run_json_in(dir.path(), &wl, &["--out", "out"]);
    assert_eq!(code, 0, "{err}");
    let (a, steps) = answer(&report);
    assert_eq!(a, Some(300.0));
    let rates: Vec<f64> = steps
        .iter()
        .map(|s| s["rate_per_s"].as_f64().unwrap())
        .collect();
    // The cap met, then met again on its repeat.
    assert_eq!(rates, vec![100.0, 200.0, 300.0, 300.0]);
    assert_eq!(phase(&report)["findmax"]["outcome"], "cap");
    assert_eq!(phase(&report)["findmax"]["confirmed"], true);

    // report.csv: the answer on the phase row, then a row per step with its own figures.
    let mut csv = csv::Reader::from_path(dir.path().join("out/report.csv")).unwrap();
    let header = csv.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
    let col = |r: &csv::StringRecord, c: &str| {
        r.get(header.iter().position(|h| h == c).unwrap())
            .unwrap()
            .to_string()
    };
    let run = rows.iter().find(|r| col(r, "row") == "phase").unwrap();
    assert_eq!(
        (
            col(run, "findmax_answer_per_s"),
            col(run, "findmax_outcome")
        ),
        ("300".into(), "cap".into())
    );
    let step_rows: Vec<_> = rows.iter().filter(|r| col(r, "row") == "step").collect();
    assert_eq!(step_rows.len(), steps.len());
    for (r, s) in step_rows.iter().zip(&steps) {
        let rate: f64 = col(r, "step_rate_per_s").parse().unwrap();
        assert_eq!(Some(rate), s["rate_per_s"].as_f64());
        assert_eq!(col(r, "step_verdict"), "met");
        assert_eq!(col(r, "ok"), s["ok"].to_string());
        assert_eq!(col(r, "p99_us"), s["p99_us"].to_string());
        assert_eq!(col(r, "kind"), "requests");
        let qps: f64 = col(r, "rps").parse().unwrap();
        let expected = s["ok"].as_f64().unwrap() / s["elapsed_s"].as_f64().unwrap();
        assert!((qps - expected).abs() < 1e-6 * expected, "{qps} {expected}");
    }
}

/// `confirm false`: the same search without the repeat: the cap is answered from its one step,
/// said as unconfirmed.
#[test]
fn confirm_false_answers_from_single_steps() {
    let _serial = serial();
    let server = LoadServer::start(Work::Serial(Duration::from_micros(100)));
    let wl = workload(
        &server.url(),
        "find max rate from 100/s up to 300/s where p99 < 1s samples 100 confirm false",
    );
    let (code, report, err) = cli::run_json(&wl, &[], &[]);
    assert_eq!(code, 0, "{err}");
    let f = &phase(&report)["findmax"];
    let rates: Vec<f64> = f["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["rate_per_s"].as_f64().unwrap())
        .collect();
    assert_eq!(rates, vec![100.0, 200.0, 300.0], "{f}");
    assert_eq!(f["answer_per_s"], 300.0);
    assert_eq!(f["confirmed"], false);
    // Anything but a boolean is refused, at its position.
    let wl = workload(
        &server.url(),
        "find max rate from 100/s where p99 < 1s confirm 3",
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), &wl).unwrap();
    let out = cli::wlrun(dir.path(), &["check", "w.wl"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("w.wl:") && err.contains("`true` or `false`"),
        "{err}"
    );
}

/// workloads/ksql-pull-max.wl against the in-test ksqlDB server, answering every pull query in
/// about 2 ms: far under 20 ms at p90 at every rate up to the cap, so the answer is the cap.
#[test]
fn the_ksql_findmax_workload_answers_against_a_ksql_server() {
    let _serial = serial();
    let server = http_server::ServerHandle::start(
        http_server::Behaviour::ksql().with_delay(Duration::from_millis(2)),
    );
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let url = format!("ksql_url=\"{}\"", server.url());
    let args = [
        "run",
        "workloads/ksql-pull-max.wl",
        "--json",
        "--quiet",
        "--param",
        &url,
        "--param",
        "start=250/s",
        "--param",
        "cap=1000/s",
        "--param",
        "step=100ms",
    ];
    // At 2 ms an answer only a machine busy with other work (builds, benches) breaks p90 < 20ms
    // at 250/s: then the search is tried once more.
    let mut report = Value::Null;
    for _ in 0..2 {
        let out = cli::wlrun(root, &args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        report = cli::report_of(&out);
        if phase(&report)["findmax"]["outcome"] != "not_met_at_from" {
            assert_eq!(out.status.code(), Some(0), "{err}\n{}", table(&report));
            break;
        }
    }
    let (a, steps) = answer(&report);
    let a = a.expect("an answer");
    let rates: Vec<f64> = steps
        .iter()
        .map(|s| s["rate_per_s"].as_f64().unwrap())
        .collect();
    let f = &phase(&report)["findmax"];
    // The server keeps 2 ms to 1,000/s; a client starved by a busy machine may not (its own
    // send lag counts in the latency), and then the answer is below the cap, bracketed.
    match f["outcome"].as_str().unwrap() {
        "cap" => assert_eq!(
            (a, &rates[..]),
            (1000.0, &[250.0, 500.0, 1000.0, 1000.0][..])
        ),
        "bracketed" => assert!((250.0..1000.0).contains(&a), "{}", table(&report)),
        other => panic!("{other}: {}", table(&report)),
    }
    assert_eq!(f["sla"], "p90 < 20ms and error_rate < 0.1%");
    // p90 asks for 1,000 samples a step: 4 s at 250/s, 1 s at 1,000/s (more than `step`).
    assert_eq!(f["samples"], 1000);
    for s in &steps {
        assert!(s["ok"].as_u64().unwrap() >= 950, "{s}");
        assert_eq!(s["failed"], 0, "{s}");
    }
    // Every request was a pull query by order key, and the workload's checks passed on each
    // (the response hook's counter also counts the answer step's warm-up).
    assert!(server.ksql_keys().iter().all(|k| (0..100_000).contains(k)));
    let p = phase(&report);
    assert!(p["counters"]["found"].as_u64() >= p["ok"].as_u64(), "{p}");
}
