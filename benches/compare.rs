//! `cargo bench --bench compare`: `wlrun compare` of two synthetic run directories of 24 cells,
//! each an ingest phase and a query run of 600 intervals (benches/common/synthetic.rs), the new
//! one 10% slower; and `wlrun report` of one of them. Each is timed in this process as the
//! command runs it (read, compare or render, serialize), a few warm-up iterations then N timed
//! ones, printing the median and p90 in milliseconds against the 200 ms budget.
//!
//! `WLRUN_BENCH_DIR=DIR` writes the two runs to `DIR/base` and `DIR/new` and keeps them, to time
//! the binary itself (`time wlrun compare DIR/base DIR/new`).

#[path = "common/stats.rs"]
mod stats;
use stats::{percentile_ms, time};

use std::time::Duration;

#[path = "common/synthetic.rs"]
mod synthetic;

use synthetic::{write_run, Synthetic};

const WARMUP: usize = 3;
const ITERATIONS: usize = 20;
const BUDGET_MS: f64 = 200.0;
/// A 5% gate; the synthetic runs carry no plan, so there is nothing to allow.
const OPTIONS: wlrun::compare::Options = wlrun::compare::Options {
    threshold: Some(0.05),
    allow_different: false,
};

fn report(name: &str, samples: &[Duration]) {
    let (median, p90) = (percentile_ms(samples, 50.0), percentile_ms(samples, 90.0));
    println!(
        "{name:<44} median {median:>8.2} ms  p90 {p90:>8.2} ms  {:>5.2}x of {BUDGET_MS} ms",
        p90 / BUDGET_MS
    );
}

fn main() {
    let temp = tempfile::tempdir().expect("a temporary directory");
    let dir = std::env::var_os("WLRUN_BENCH_DIR")
        .map_or_else(|| temp.path().to_path_buf(), std::path::PathBuf::from);
    let (base, new) = (dir.join("base"), dir.join("new"));
    let s = Synthetic::default();
    write_run(&base, &s);
    write_run(
        &new,
        &Synthetic {
            seed: 2,
            speed: 0.9,
            ..s.clone()
        },
    );

    let mut regressions = 0;
    let samples = time(WARMUP, ITERATIONS, || {
        let c = wlrun::compare::compare(&base, &new, OPTIONS).expect("the runs compare");
        let text = wlrun::compare::render::text(&c);
        let json = serde_json::to_string_pretty(&c).expect("the comparison serializes");
        regressions = c.regressions.len();
        std::hint::black_box((text, json));
    });
    report(
        &format!("compare {}x2 phases x {} intervals", s.cells, s.intervals),
        &samples,
    );
    // The new run is 10% slower everywhere: every one of the 7 metrics of every cell should
    // be found worse by more than 5%.
    println!(
        "  {regressions} of {} metrics beyond a 5% threshold",
        s.cells * 7
    );

    let samples = time(WARMUP, ITERATIONS, || {
        let run = wlrun::report::read::read_run(&base).expect("the run reads");
        std::hint::black_box(wlrun::report::render::run_text(&run.report));
    });
    report(&format!("report {}x2 phases", s.cells), &samples);

    let samples = time(WARMUP, ITERATIONS, || {
        let run = wlrun::report::read::read_run(&base).expect("the run reads");
        std::hint::black_box(wlrun::report::csv::csv(&run.report).expect("the CSV"));
    });
    report(&format!("report --csv {}x2 phases", s.cells), &samples);

    let mut size = 0;
    let samples = time(WARMUP, ITERATIONS, || {
        let run = wlrun::report::read::read_run(&base).expect("the run reads");
        let page = wlrun::report::html::page(&run.report, Some(&base));
        size = page.len();
        std::hint::black_box(page);
    });
    report(
        &format!(
            "report --html {}x2 phases x {} intervals",
            s.cells, s.intervals
        ),
        &samples,
    );
    println!(
        "  report.html: {:.2} MB (target: under 2 MB)",
        size as f64 / 1e6
    );

    let samples = time(WARMUP, ITERATIONS, || {
        let c = wlrun::compare::compare(&base, &new, OPTIONS).expect("the runs compare");
        std::hint::black_box(wlrun::compare::html::page(&c));
    });
    report(&format!("compare --html {}x2 phases", s.cells), &samples);
}
