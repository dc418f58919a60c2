//! `cargo bench --bench check`: how long `check_file` + `lower` take on every shipped workload.
//!
//! For each `.wl` under `stdlib/` and `workloads/`, and for all of them in one loop, it runs a few
//! warm-up iterations and then N timed ones, and prints the median and p90 in milliseconds with
//! their ratio to the 100 ms budget for checking a file (a budget of its own for the whole set).
//!
//! Then the hostile shapes of check's limits (src/check/limits.rs), generated: at the most each
//! limit allows, where their cost is what a user can ask for, and past it, where checking must
//! refuse them quickly. Each once scaled with its size: chains of params and columns, doubled
//! values, series keys and cells x phases.

#[path = "common/stats.rs"]
mod stats;
use stats::{percentile_ms, time};

use std::path::{Path, PathBuf};
use std::time::Duration;

use wlrun::check::Options;
use wlrun::compile::{check_file, check_text, Outcome};

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
    lowered(check_file(file, &Options::default()))
}

fn lowered(out: Outcome) -> bool {
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

    println!();
    for (name, text, iterations) in shapes() {
        if !filter.is_empty() && !filter.iter().any(|x| name.contains(x.as_str())) {
            continue;
        }
        let ok = lowered(check_text("shape.wl", &text, &Options::default()));
        let samples = time(1, iterations, || {
            lowered(check_text("shape.wl", &text, &Options::default()));
        });
        report(name, &samples, if ok { "" } else { "(refused)" });
    }
}

const TAIL: &str = "target db { null }\nschema s { rows 10  field a: long = 1 }\ningest load { into db via null  rows s }\n";

/// `n` params, each reading the one before, read from the far end by a schema.
fn param_chain(n: usize) -> String {
    let mut t = format!(
        "target db {{ null }}\nschema s {{ rows p{}  field a: long = 1 }}\ningest load {{ into db via null  rows s }}\nparam p0 = 1\n",
        n - 1
    );
    for i in 1..n {
        t.push_str(&format!("param p{i} = p{} + 1\n", i - 1));
    }
    t
}

/// `n` params, each doubling the one before with `double` (`P` stands for the one before).
fn doubled(first: &str, double: &str, n: usize) -> String {
    let mut t = format!("param s0 = {first}\n");
    for i in 1..n {
        let value = double.replace('P', &format!("s{}", i - 1));
        t.push_str(&format!("param s{i} = {value}\n"));
    }
    t + TAIL
}

/// A schema of `n` columns, each reading the one before.
fn column_chain(n: usize) -> String {
    let mut t = String::from(
        "target db { null }\nschema s {\n  rows 10\n  field c0: long = uniform(0, 9)\n",
    );
    for i in 1..n {
        t.push_str(&format!("  field c{i}: long = c{} + 1\n", i - 1));
    }
    t + "}\ningest load { into db via null  rows s }\n"
}

/// One expression: `levels` parentheses, each around a chain of `ops` operators.
fn nested(levels: usize, ops: usize) -> String {
    let mut e = String::from("1");
    for _ in 0..levels {
        e = format!("({e}{})", "+1".repeat(ops));
    }
    format!("param a = {e}\n{TAIL}")
}

fn series(n: &str) -> String {
    format!("target db {{ null }}\nschema s {{\n  series host: varchar = format(\"host_%d\", n) for n in 0..{n}\n}}\ningest load {{ into db via null  rows s }}\n")
}

/// A matrix of `a` x `b` cells and `phases` ingest blocks.
fn cells(a: usize, b: usize, phases: usize) -> String {
    let mut t = format!("target db {{ null }}\nschema s {{ rows 1  field a: long = 1 }}\nmatrix {{\n  x in 0..{a}\n  y in 0..{b}\n}}\n");
    for i in 0..phases {
        t.push_str(&format!(
            "ingest l{i} {{ into db via null  rows s  workers x + y + 1 }}\n"
        ));
    }
    t
}

/// (name, text, timed iterations): the limits' shapes, at the limit and past it.
fn shapes() -> Vec<(&'static str, String, usize)> {
    vec![
        ("shape: 100 chained params", param_chain(100), ITERATIONS),
        (
            "shape: 3,000 chained params (refused)",
            param_chain(3000),
            ITERATIONS,
        ),
        ("shape: 60 x 3 nested operators", nested(60, 3), ITERATIONS),
        (
            "shape: 60 x 120 nested operators (refused)",
            nested(60, 120),
            ITERATIONS,
        ),
        (
            "shape: string doubled 22 times (8 MiB)",
            doubled("\"xy\"", "P + P", 23),
            5,
        ),
        (
            "shape: string doubled 40 times (refused)",
            doubled("\"xy\"", "P + P", 40),
            5,
        ),
        (
            "shape: list doubled 17 times (12 MiB)",
            doubled("[1]", "[P, P]", 18),
            5,
        ),
        (
            "shape: list doubled 40 times (refused)",
            doubled("[1]", "[P, P]", 40),
            5,
        ),
        ("shape: 1,000 chained columns", column_chain(1000), 10),
        ("shape: 5,000 chained columns", column_chain(5000), 3),
        (
            "shape: 100,000,000 series",
            series("100_000_000"),
            ITERATIONS,
        ),
        (
            "shape: 2^63 series (refused)",
            series("9223372036854775807"),
            ITERATIONS,
        ),
        ("shape: 10,000 cells x 2 phases", cells(100, 100, 2), 3),
        (
            "shape: 10,000 cells x 100 phases (refused)",
            cells(100, 100, 100),
            ITERATIONS,
        ),
    ]
}
