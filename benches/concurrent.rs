//! `cargo bench --bench concurrent`: what a query run at a fixed low rate costs an ingest
//! running beside it in a `concurrent` group. The target (issue 19): under 5% fewer rows per
//! ingest CPU-second. Rows per CPU-second of the ingest's own threads, not rows per second, so
//! that this measures contention (locks, the shared runtime, caches), not the CPU the other
//! phase takes on these 2 shared cores.
//!
//! An unpaced ingest into the `null` sink for a fixed span, alone and then beside a request run
//! at 10/s (`GET /` against an HTTP server on a thread of this process), alternating rounds;
//! medians. The ingest's threads are its producers (`wlrun-gen-*`) and the runtime's I/O
//! threads (`wlrun-io`, which carry its sender); the request run has threads of its own
//! (`wlrun-req-*`), as have the server and the sampler. A sampler reads every thread's CPU
//! from /proc/self/task, so threads that have exited are still counted (to one sample).

#[path = "common/run.rs"]
mod run;
#[path = "common/stats.rs"]
mod stats;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use stats::median;
use wlrun::report::PhaseReport;

const ROUNDS: usize = 5;
const SPAN: &str = "3s";
const SAMPLE: Duration = Duration::from_millis(20);

/// An HTTP/1.1 server that answers every request with an empty 200, keep-alive, one thread
/// per connection.
fn http_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::Builder::new()
        .name("bench-http".into())
        .spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let _ = std::thread::Builder::new()
                    .name("bench-http".into())
                    .spawn(move || {
                        let mut buf = Vec::new();
                        let mut chunk = [0u8; 4096];
                        while let Ok(n) = conn.read(&mut chunk) {
                            if n == 0 {
                                break;
                            }
                            buf.extend_from_slice(&chunk[..n]);
                            while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                                buf.drain(..end + 4);
                                let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
                                if conn.write_all(ok).is_err() {
                                    return;
                                }
                            }
                        }
                    });
            }
        })
        .expect("server thread");
    port
}

/// CPU seconds of this process's threads, by thread id: the latest reading of each, so a
/// thread that exited keeps its last one.
#[derive(Default)]
struct Cpu {
    seen: HashMap<u32, (String, f64)>,
}

fn read_threads(into: &mut Cpu) {
    let tick = 100.0; // USER_HZ on Linux
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return;
    };
    for e in dir.flatten() {
        let Ok(tid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ...`: comm may hold spaces, so split after its closing paren.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat[open + 1..close].to_string();
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        // utime and stime are fields 14 and 15 of stat, 12 and 13 after `state`.
        let (Some(u), Some(s)) = (fields.get(11), fields.get(12)) else {
            continue;
        };
        let cpu = (u.parse::<f64>().unwrap_or(0.0) + s.parse::<f64>().unwrap_or(0.0)) / tick;
        into.seen.insert(tid, (name, cpu));
    }
}

/// Runs `text` with a sampler beside it: the report and the CPU of the ingest's threads
/// (only those that started during the run).
fn run_sampled(text: &str) -> (wlrun::report::Report, f64) {
    let mut before = Cpu::default();
    read_threads(&mut before);
    let cpu = Arc::new(Mutex::new(Cpu::default()));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (cpu, done) = (cpu.clone(), done.clone());
        std::thread::Builder::new()
            .name("bench-sampler".into())
            .spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    if let Ok(mut c) = cpu.lock() {
                        read_threads(&mut c);
                    }
                    std::thread::sleep(SAMPLE);
                }
            })
            .expect("sampler")
    };
    let report = run::run_text(text);
    done.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    let c = cpu.lock().expect("cpu");
    let ingest: f64 = c
        .seen
        .iter()
        .filter(|(tid, _)| !before.seen.contains_key(tid))
        .filter(|(_, (name, _))| name.starts_with("wlrun-gen") || name.starts_with("wlrun-io"))
        .map(|(_, (_, s))| s)
        .sum();
    (report, ingest)
}

fn workload(port: u16, beside: bool) -> String {
    let group = if beside {
        "run reads { against t.http  request GET \"/\"  rate 10/s  duration 1h }\n\
         concurrent mixed { phases load, reads  until load }"
    } else {
        ""
    };
    format!(
        r#"
workload b {{ seed 1 }}
target t {{ null  http "http://127.0.0.1:{port}" }}
schema s {{
  series host: symbol = format("h%d", n) for n in 0..1000
  field usage: double = uniform(0, 100)
  field v: long = uniform(0, 1000)
  timestamp ts = every 10s from 2016-01-01T00:00:00Z for 1000d
}}
ingest load {{ into t via null  rows s  batch 5000 rows  duration {SPAN} }}
{group}
"#
    )
}

/// Rows the ingest sent and its rows per ingest CPU-second.
fn round(text: &str, beside: bool) -> (f64, f64) {
    let (report, cpu) = run_sampled(text);
    let cell = &report.cells[0];
    for p in &cell.phases {
        let (status, failures) = match p {
            PhaseReport::Ingest(r) => (r.status, &r.failures),
            PhaseReport::Requests(r) => (r.status, &r.failures),
            PhaseReport::Queries(r) => (r.status, &r.failures),
            PhaseReport::NotRun { reason, .. } => panic!("not run: {reason}"),
        };
        assert!(
            status == wlrun::report::Status::Ok,
            "a bench phase failed: {failures:?}"
        );
    }
    if beside {
        let Some(PhaseReport::Requests(r)) = cell.phases.get(1) else {
            panic!("no request run beside the ingest");
        };
        assert!(r.ok >= 20, "the request run sent {} requests", r.ok);
    }
    let Some(PhaseReport::Ingest(r)) = cell.phases.first() else {
        panic!("the ingest is the first phase");
    };
    let rows = r.rows_sent as f64;
    (rows / r.elapsed_s.max(1e-9), rows / cpu.max(1e-9))
}

fn main() {
    let port = http_server();
    let (alone_text, beside_text) = (workload(port, false), workload(port, true));
    // One untimed round of each: page cache, the allocator, the server's first connection.
    round(&alone_text, false);
    round(&beside_text, true);
    let (mut alone, mut beside) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        alone.push(round(&alone_text, false));
        beside.push(round(&beside_text, true));
    }
    let med = |v: &[(f64, f64)], i: usize| {
        median(v.iter().map(|x| if i == 0 { x.0 } else { x.1 }).collect())
    };
    let (a_rate, a_cpu) = (med(&alone, 0), med(&alone, 1));
    let (b_rate, b_cpu) = (med(&beside, 0), med(&beside, 1));
    println!(
        "ingest into null for {SPAN}, {ROUNDS} alternating rounds, medians (rows per CPU-second of the ingest's own threads: wlrun-gen-*, wlrun-io)"
    );
    println!("  alone:                        {a_rate:>12.0} rows/s  {a_cpu:>12.0} rows per ingest CPU-s");
    println!("  beside requests at 10/s:      {b_rate:>12.0} rows/s  {b_cpu:>12.0} rows per ingest CPU-s");
    let cost = 1.0 - b_cpu / a_cpu;
    println!(
        "  cost to the ingest: {:.1}% of its rows per ingest CPU-second (target: under 5%): {}",
        100.0 * cost,
        if cost < 0.05 { "met" } else { "NOT met" }
    );
    println!(
        "  each round, rows per ingest CPU-s: alone {:?}",
        alone.iter().map(|x| x.1 as u64).collect::<Vec<_>>()
    );
    println!(
        "                                     beside {:?}",
        beside.iter().map(|x| x.1 as u64).collect::<Vec<_>>()
    );
}
