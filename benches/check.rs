//! `cargo bench --bench check`: how long `check_file` + `lower` take on every shipped workload.
//!
//! For each `.wl` under `stdlib/` and `workloads/`, and for all of them in one loop, it runs a few
//! warm-up iterations and then N timed ones, and prints the median and p90 in milliseconds with
//! their ratio to the 100 ms budget for checking a file (a budget of its own for the whole set).

#[path = "common/stats.rs"]
mod stats;
use stats::{percentile_ms, time};

use std::path::{Path, PathBuf};
use std::time::Duration;

use wlrun::check::Options;
use wlrun::compile::check_file;

const WARMUP: usize = 3;
const ITERATIONS: usize = 30;
const BUDGET_MS: f64 = 100.0;

fn wl_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            wl_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "wl") {
            out.push(path);
        }
    }
}

/// One check + lower; returns whether the file checked (a failing file is still timed).
fn once(file: &Path) -> bool {
    let out = check_file(file, &Options::default());
    match &out.checked {
        Some(checked) => {
            let plan = wlrun::lower::lower(checked);
            std::hint::black_box(&plan);
            true
        }
        None => false,
    }
}

fn report(name: &str, samples: &[Duration], note: &str) {
    let (median, p90) = (percentile_ms(samples, 50.0), percentile_ms(samples, 90.0));
    println!(
        "{name:<40} {median:>9.2} {p90:>9.2} {:>9.2}x {note}",
        p90 / BUDGET_MS
    );
}

fn main() {
    // `cargo bench` runs from the crate root; relative paths keep the output short.
    std::env::set_current_dir(env!("CARGO_MANIFEST_DIR")).expect("crate root");
    let mut files = Vec::new();
    for dir in ["stdlib", "workloads"] {
        wl_files(Path::new(dir), &mut files);
    }
    files.sort();
    // Harness flags such as `--bench` are ignored; a plain argument filters files by name.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    files.retain(|f| {
        filter.is_empty() || filter.iter().any(|x| f.display().to_string().contains(x))
    });

    println!(
        "check + lower, {ITERATIONS} iterations after {WARMUP} warm-up, times in ms, budget {BUDGET_MS} ms"
    );
    println!(
        "{:<40} {:>9} {:>9} {:>10}",
        "file", "median", "p90", "p90/budget"
    );
    for file in &files {
        let ok = once(file);
        let samples = time(WARMUP, ITERATIONS, || {
            once(file);
        });
        report(
            &file.display().to_string(),
            &samples,
            if ok { "" } else { "(does not check)" },
        );
    }
    let samples = time(WARMUP, ITERATIONS, || {
        for file in &files {
            once(file);
        }
    });
    report(&format!("all {} files", files.len()), &samples, "");
}
