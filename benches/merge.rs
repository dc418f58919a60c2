//! `cargo bench --bench merge`: `wlrun merge` of 16 shard directories of a synthetic 24-cell
//! run, each cell an ingest phase and a query run of 600 one-second intervals
//! (benches/common/synthetic.rs, each shard with its own seed and a `shard` object): every
//! report read, every phase merged (its histograms decoded and added, 16 x 600 interval
//! histograms per phase for the series), and the merged run directory written. A few warm-up
//! iterations, then N timed ones; the median and p90 against the 1 s budget.
//!
//! `WLRUN_BENCH_DIR=DIR` writes the shards to `DIR/shard-I` and keeps them, to time the
//! binary itself (`time wlrun merge DIR/shard-* --out DIR/merged`).

#[path = "common/stats.rs"]
mod stats;
use stats::{percentile_ms, time};

#[path = "common/synthetic.rs"]
mod synthetic;

use synthetic::{write_run, Synthetic};
use wlrun::report::shard::ShardReport;

const SHARDS: u64 = 16;
const WARMUP: usize = 1;
const ITERATIONS: usize = 7;
const BUDGET_MS: f64 = 1000.0;

fn main() {
    let temp = tempfile::tempdir().expect("a temporary directory");
    let dir = std::env::var_os("WLRUN_BENCH_DIR")
        .map_or_else(|| temp.path().to_path_buf(), std::path::PathBuf::from);
    let s = Synthetic::default();
    let shards: Vec<std::path::PathBuf> = (0..SHARDS)
        .map(|i| {
            let d = dir.join(format!("shard-{i}"));
            let mut report = write_run(
                &d,
                &Synthetic {
                    seed: i + 1,
                    ..s.clone()
                },
            );
            // One run's shards: the same seed and plan, each its own index.
            report.seed = s.seed;
            report.shard = Some(ShardReport {
                index: i,
                count: SHARDS,
                plan: "sha256:bench".into(),
                barrier: "127.0.0.1:7471".into(),
                timeout_s: 120.0,
                phases: Vec::new(),
                failure: None,
            });
            let text = serde_json::to_string_pretty(&report).expect("the report serializes");
            std::fs::write(d.join("report.json"), text).expect("report.json");
            d
        })
        .collect();
    let out = dir.join("merged");
    let mut ok = false;
    let samples = time(WARMUP, ITERATIONS, || {
        let _ = std::fs::remove_dir_all(&out);
        let merged = wlrun::merge::merge(&shards).expect("the shards merge");
        wlrun::merge::write(&merged, &out, false, &shards).expect("the merged run is written");
        ok = merged.report.ok();
    });
    let (median, p90) = (percentile_ms(&samples, 50.0), percentile_ms(&samples, 90.0));
    println!(
        "merge {SHARDS} shards x {} cells x 2 phases x {} intervals  median {median:>8.1} ms  \
         p90 {p90:>8.1} ms  {:>5.2}x of {BUDGET_MS} ms",
        s.cells,
        s.intervals,
        median / BUDGET_MS
    );
    println!("  merged report ok: {ok}");
}
