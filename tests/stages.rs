//! Staged runs end to end (docs/language.md, "Stages"): the steps and the ramp of an open-loop
//! run show in its per-interval series and in each stage's own figures, closed-loop stages
//! change the connections the server sees, and a staged query run works against PostgreSQL.

#[path = "common/cli.rs"]
mod cli;
#[path = "common/http_server.rs"]
mod http_server;
#[path = "common/servers.rs"]
mod servers;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use cli::wlrun;
use http_server::{Behaviour, ServerHandle};

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// The phase's series rows: (stage, span_ms, ok, failed, cut_off, unsent).
fn series_rows(dir: &Path, phase: &Value) -> Vec<[u64; 6]> {
    let path = dir
        .join("res")
        .join(phase["series"]["counts"].as_str().unwrap());
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no column {name} in {header:?}"))
    };
    let cols = [
        at("stage"),
        at("span_ms"),
        at("ok"),
        at("failed"),
        at("cut_off"),
        at("unsent"),
    ];
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            cols.map(|c| cells[c].parse().unwrap_or_else(|_| panic!("{l}")))
        })
        .collect()
}

/// Every stage's accounting holds on its own, and the run's totals are their sums.
fn check_accounting(run: &Value) {
    let stages = run["stages"].as_array().unwrap();
    let mut sums = [0u64; 5];
    for s in stages {
        let parts = u(&s["ok"]) + u(&s["failed"]) + u(&s["cut_off"]) + u(&s["unsent"]);
        assert_eq!(parts, u(&s["scheduled"]), "{s:#}");
        for (sum, key) in sums
            .iter_mut()
            .zip(["scheduled", "ok", "failed", "cut_off", "unsent"])
        {
            *sum += u(&s[key]);
        }
    }
    for (sum, key) in sums
        .iter()
        .zip(["scheduled", "ok", "failed", "cut_off", "unsent"])
    {
        assert_eq!(*sum, u(&run[key]), "{key}: stages {sums:?}");
    }
}

/// The test: two steps and a ramp at 0.5 s intervals. Full intervals inside a step hold
/// about the step's rate, the ramp's grow, each stage's figures match the series, and every
/// slot of every stage is accounted for.
#[test]
fn stages_show_their_steps_in_the_per_interval_series() {
    let server = ServerHandle::start(Behaviour::ok());
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "workload w {{ seed 1 }}\ntarget svc {{ http \"{}\" }}\nrun steps {{\n  against svc.http\n  request GET \"/\"\n  workers 4\n  stage 2s rate 200/s\n  stage 2s rate 600/s\n  stage 2s rate 200/s to 1000/s\n}}\n",
        server.url()
    );
    std::fs::write(dir.path().join("w.wl"), text).unwrap();
    let out = wlrun(
        dir.path(),
        &["run", "w.wl", "--out", "res", "--interval", "0.5"],
    );
    // The cell's lines (standard error) show one row per stage.
    let human = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{human}");
    assert!(human.contains("stages:"), "{human}");
    assert!(human.contains("200/s to 1,000/s"), "{human}");
    let report: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("res/report.json")).unwrap())
            .unwrap();
    let run = &report["cells"][0]["phases"][0];
    let stages = run["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 3, "{run:#}");
    // A fixed schedule is exact: R·T slots, and a ramp's mean rate times its span.
    let scheduled: Vec<u64> = stages.iter().map(|s| u(&s["scheduled"])).collect();
    assert_eq!(scheduled, [400, 1200, 1200]);
    check_accounting(run);
    assert_eq!(stages[2]["rate_from"], 200.0);
    assert_eq!(stages[2]["rate_to"], 1000.0);
    for s in stages {
        assert_eq!(s["kept_schedule"], true, "{s:#}");
        assert_eq!(u(&s["workers"]), 4);
        assert!(s["send_lag"]["count"].as_u64().is_some(), "{s:#}");
        assert!(s["service"]["count"].as_u64().is_some(), "{s:#}");
    }
    // The stages follow each other: each starts after the one before ended.
    let starts: Vec<f64> = stages
        .iter()
        .map(|s| s["start_s"].as_f64().unwrap())
        .collect();
    assert_eq!(starts[0], 0.0);
    assert!(
        starts[1] >= 2.0 && starts[2] >= starts[1] + 2.0,
        "{starts:?}"
    );

    let rows = series_rows(dir.path(), run);
    let total = |i: usize| rows.iter().map(|r| r[i]).sum::<u64>();
    assert_eq!(total(2), u(&run["ok"]));
    assert_eq!(total(3), u(&run["failed"]));
    assert_eq!(
        total(2) + total(3) + total(4) + total(5),
        u(&run["scheduled"])
    );
    // Each stage's figures match its intervals', give or take the intervals that straddle its
    // start and end (tagged with the stage they start in): at most half a second of the faster
    // of two neighbouring stages (600/s, then 1000/s at the ramp's end).
    for s in stages {
        let k = u(&s["stage"]);
        let tagged: u64 = rows.iter().filter(|r| r[0] == k).map(|r| r[2]).sum();
        let ok = u(&s["ok"]) as i64;
        let slack = [300, 500, 500][k as usize - 1];
        assert!(
            (tagged as i64 - ok).abs() <= slack,
            "stage {k}: {tagged} in the series, {ok} in the report\n{rows:?}"
        );
    }
    // Full intervals that lie inside one stage: the next interval starts in the same stage.
    let inside = |k: u64| -> Vec<u64> {
        rows.windows(2)
            .filter(|w| w[0][0] == k && w[1][0] == k && w[0][1] == 500)
            .map(|w| w[0][2])
            .collect()
    };
    let first = inside(1);
    let second = inside(2);
    let ramp = inside(3);
    assert!(
        first.len() >= 2 && second.len() >= 2 && ramp.len() >= 2,
        "{rows:?}"
    );
    assert!(first.iter().all(|n| (75..=125).contains(n)), "{rows:?}");
    assert!(second.iter().all(|n| (240..=360).contains(n)), "{rows:?}");
    // The ramp grows about 100 a second from one interval to the next.
    assert!(ramp.windows(2).all(|w| w[1] > w[0]), "{rows:?}");
    assert!(ramp.iter().all(|n| (100..=520).contains(n)), "{rows:?}");
}

/// Closed-loop stages of 2, 6 and 3 connections: the report says so per stage, and the server
/// sees that many connections at work in each stage, and the ones a stage does not use closed.
#[test]
fn closed_loop_stages_change_the_connections_the_server_sees() {
    let server = Arc::new(ServerHandle::start(
        Behaviour::ok().with_delay(Duration::from_millis(2)),
    ));
    // The connections open on the server, sampled while the run goes.
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (server, done) = (server.clone(), done.clone());
        std::thread::spawn(move || {
            let mut samples = Vec::new();
            while !done.load(Ordering::Relaxed) {
                samples.push((Instant::now(), server.open_connections()));
                std::thread::sleep(Duration::from_millis(10));
            }
            samples
        })
    };
    let text = format!(
        "workload w {{ seed 1 }}\ntarget svc {{ http \"{}\" }}\nrun conns {{\n  against svc.http\n  request GET \"/\"\n  stage 1500ms workers 2\n  stage 1500ms workers 6\n  stage 1500ms workers 3\n}}\n",
        server.url()
    );
    let (code, report, err) = cli::run_json(&text, &[], &[]);
    done.store(true, Ordering::Relaxed);
    let samples = sampler.join().unwrap();
    assert_eq!(code, 0, "{err}\n{report:#}");
    let run = &report["cells"][0]["phases"][0];
    let stages = run["stages"].as_array().unwrap();
    let workers: Vec<u64> = stages.iter().map(|s| u(&s["workers"])).collect();
    assert_eq!(workers, [2, 6, 3]);
    check_accounting(run);
    for s in stages {
        assert_eq!(s["load"], "closed", "{s:#}");
        assert!(s["achieved_rate"].is_null() && s["kept_schedule"].is_null());
        assert_eq!(u(&s["unsent"]), 0);
        assert!(u(&s["ok"]) > 100, "{s:#}");
    }
    // The connections that answered in the middle of each stage (stage k's span is
    // [first + 1.5 s·k, + 1.5 s), give or take the short drains between stages).
    let requests = server.requests();
    let first = requests.iter().map(|r| r.at).min().unwrap();
    let used = |k: u32| -> BTreeSet<usize> {
        let from = first + Duration::from_millis(1500) * k + Duration::from_millis(300);
        let to = from + Duration::from_millis(900);
        requests
            .iter()
            .filter(|r| r.at >= from && r.at < to)
            .map(|r| r.conn)
            .collect()
    };
    assert_eq!(used(0).len(), 2, "{:?}", used(0));
    assert_eq!(used(1).len(), 6, "{:?}", used(1));
    assert_eq!(used(2).len(), 3, "{:?}", used(2));
    // The third stage kept three of the six connections and closed the others.
    assert_eq!(server.connections(), 6);
    let open_in = |k: u32| -> BTreeSet<usize> {
        let from = first + Duration::from_millis(1500) * k + Duration::from_millis(300);
        let to = from + Duration::from_millis(900);
        samples
            .iter()
            .filter(|(at, _)| *at >= from && *at < to)
            .map(|(_, n)| *n)
            .collect()
    };
    assert_eq!(open_in(0), BTreeSet::from([2]), "{samples:?}");
    assert_eq!(open_in(1), BTreeSet::from([6]), "{samples:?}");
    assert_eq!(open_in(2), BTreeSet::from([3]), "{samples:?}");
}

/// A staged query run against PostgreSQL: an open-loop step with a warm-up, then a closed-loop
/// stage of two workers.
#[test]
fn a_staged_query_run_works_against_postgres() {
    if !servers::pg_up() {
        return;
    }
    let text = format!(
        "workload w {{ seed 1 }}\ntarget db {{ dialect postgres  pg \"{}\" }}\nquery one {{ sql \"SELECT 1\" }}\nrun q {{\n  against db.pg\n  queries one\n  stage 1s rate 200/s warmup 250ms\n  stage 1s workers 2\n}}\n",
        servers::pg_url()
    );
    let (code, report, err) = cli::run_json(&text, &[], &[]);
    assert_eq!(code, 0, "{err}\n{report:#}");
    let run = &report["cells"][0]["phases"][0];
    assert_eq!(run["phase"], "queries");
    let stages = run["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 2);
    check_accounting(run);
    // The open stage's warm-up: its first quarter second (50 slots) is sent and not counted.
    assert_eq!(u(&stages[0]["warmup_excluded"]), 50, "{:#}", stages[0]);
    assert_eq!(u(&stages[0]["scheduled"]), 150, "{:#}", stages[0]);
    assert_eq!(stages[0]["kept_schedule"], true);
    assert_eq!(u(&stages[1]["workers"]), 2);
    assert!(u(&stages[1]["ok"]) > 50, "{:#}", stages[1]);
    assert_eq!(u(&run["failed"]), 0, "{run:#}");
}
