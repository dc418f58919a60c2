//! `cargo bench --bench series`: resident memory of a long query run that writes its time
//! series, at 1 s intervals. The series keep only the open intervals in memory (a slot per
//! worker, recycled), so the process's resident set must be the same after 1 minute and after
//! 10 (`WLRUN_BENCH_MINUTES`, default 10). An open-loop run at 2,000 queries/s against SQLite,
//! in this process; it prints the resident set (VmRSS) and its peak (VmHWM) at each minute.

#[path = "common/run.rs"]
mod run;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wlrun::report::PhaseReport;

/// (VmRSS, VmHWM) of this process, KiB.
fn rss_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn main() {
    let minutes: u64 = std::env::var("WLRUN_BENCH_MINUTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let dir = tempfile::tempdir().unwrap();
    let workload = format!(
        r#"workload b {{ seed 7 }}
target local {{ sqlite "bench.db" {{ journal wal }} }}
schema t {{ rows 1000  field id: long = seq()  field v: long = uniform(0, 100) }}
ingest make {{ into local via sqlite  rows t  batch 1000 rows  teardown keep }}
query q {{ sql "SELECT v FROM t WHERE id = $1"  bind $1 = uniform(0, 999) }}
run long {{ against local.sqlite  queries q  workers 2  duration {minutes}m  rate 2000/s }}
"#
    );
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            let mut samples = Vec::new();
            let mut next = Duration::from_secs(60);
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                if start.elapsed() >= next {
                    let (rss, hwm) = rss_kib();
                    println!(
                        "  {:>2} min: resident {:.1} MiB, peak {:.1} MiB",
                        next.as_secs() / 60,
                        rss as f64 / 1024.0,
                        hwm as f64 / 1024.0
                    );
                    samples.push((rss, hwm));
                    next += Duration::from_secs(60);
                }
            }
            samples
        })
    };
    println!("series: {minutes}-minute open-loop query run at 2,000/s, 1 s intervals");
    let report = run::run_text_with_series(&workload, dir.path(), Duration::from_secs(1));
    done.store(true, Ordering::Relaxed);
    let samples = sampler.join().unwrap();
    let q = report.cells[0]
        .phases
        .iter()
        .find_map(|p| match p {
            PhaseReport::Queries(q) => Some(q),
            _ => None,
        })
        .expect("the query run");
    let intervals = q.series.as_ref().map_or(0, |s| s.intervals);
    println!(
        "  {} queries ok, {} failed, {intervals} intervals written",
        q.ok, q.failed
    );
    if let (Some(first), Some(last)) = (samples.first(), samples.last()) {
        println!(
            "  peak resident at 1 min {:.1} MiB, at {} min {:.1} MiB ({:+.1}%)",
            first.1 as f64 / 1024.0,
            samples.len(),
            last.1 as f64 / 1024.0,
            (last.1 as f64 / first.1 as f64 - 1.0) * 100.0
        );
    }
}
