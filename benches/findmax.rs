//! `cargo bench --bench findmax`: the issue's target, "a findmax search against nginx from
//! 1,000/s with steps of at least 5,000 samples completes in under 2 minutes".
//!
//! nginx is the tests' own (tests/common/nginx.rs and its nginx.conf: one worker process,
//! `location = /query { return 200 '[]'; }`), on 127.0.0.1. wlrun searches in this process as
//! `wlrun run` would: `find max rate from 1_000/s where p99 < 20ms samples 5_000`, 64
//! connections, each step with a 500 ms warm-up. The bench prints the wall time of the search,
//! its table of steps and its answer, and for scale wrk's closed-loop rate against the same
//! nginx (32 connections, 2 threads, 5 s), when wrk is installed. The target is checked on the
//! wall time: over 2 minutes, the bench says so and exits 1.

#[allow(dead_code)] // run_file, run_text_with_series
#[path = "common/run.rs"]
mod run;

#[path = "common/wrk.rs"]
mod wrk;

#[path = "../tests/common/nginx.rs"]
mod nginx;
use nginx::{find_program, Nginx};

use std::time::{Duration, Instant};

use wlrun::report::PhaseReport;

const TARGET: Duration = Duration::from_secs(120);

fn workload(port: u16) -> String {
    format!(
        r#"workload findmax_bench {{ seed 7 }}

target nginx {{ http "http://127.0.0.1:{port}" }}

run search {{
  against nginx.http
  request GET "/query"
  connections 64
  warmup 500ms
  find max rate from 1_000/s where p99 < 20ms samples 5_000
  expect status 200
}}
"#
    )
}

fn main() {
    let Some(nginx) = find_program("nginx") else {
        println!(
            "findmax bench: nginx not found (Debian: apt-get install nginx), nothing measured"
        );
        return;
    };
    let server = Nginx::start(&nginx);
    let port = server.port();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "GET /query to nginx {} on 127.0.0.1:{port}, 1 worker process, return 200 '[]'; {cores} cores shared by client and server",
        nginx.display()
    );
    match find_program("wrk") {
        Some(_) => {
            let tmp = tempfile::tempdir().expect("a temporary directory");
            let m = wrk::run_wrk(
                tmp.path(),
                &format!("wrk -t2 -c32 -d5s http://127.0.0.1:{port}/query"),
            );
            println!(
                "wrk closed loop, 32 connections, 2 threads, 5 s: {:.0} requests/s (for scale), {:.1} us of wrk CPU per request",
                m.rps, m.cpu_us_per_request
            );
        }
        None => {
            println!("wrk not found (Debian: apt-get install wrk): no closed-loop rate for scale")
        }
    }
    let started = Instant::now();
    let report = run::run_text(&workload(port));
    let took = started.elapsed();
    let r = match report
        .cells
        .into_iter()
        .next()
        .and_then(|c| c.phases.into_iter().next())
    {
        Some(PhaseReport::Requests(r)) => r,
        _ => panic!("no request phase in the bench's report"),
    };
    print!("{}", wlrun::report::findmax::lines(&r.findmax));
    for f in &r.failures {
        println!("  {f}");
    }
    let steps = r.findmax.as_ref().map_or(0, |f| f.steps.len());
    println!(
        "findmax search from 1,000/s, steps of at least 5,000 samples: {:.1} s for {steps} steps (target: under {} s) {}",
        took.as_secs_f64(),
        TARGET.as_secs(),
        if took < TARGET { "MET" } else { "MISSED" }
    );
    drop(server);
    if took >= TARGET {
        std::process::exit(1);
    }
}
