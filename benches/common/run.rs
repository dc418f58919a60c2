//! A workload text run in this process as `wlrun run` would run it, for the benches that
//! measure the runners themselves.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use wlrun::check::Options;
use wlrun::compile::{check_file, check_text, Outcome};
use wlrun::exec::{run_plan, RunEnv};
use wlrun::report::Report;

#[allow(dead_code)] // benches that run with series
pub fn run_text(text: &str) -> Report {
    let out = check_text("bench.wl", text, &Options::default());
    run_checked("the bench workload", out, std::env::temp_dir(), None)
}

/// `run_text` with its time series written under `dir` at `interval`, as `--out DIR
/// --interval` would.
#[allow(dead_code)] // benches that keep no series
pub fn run_text_with_series(text: &str, dir: &Path, interval: Duration) -> Report {
    let out = check_text("bench.wl", text, &Options::default());
    let series = wlrun::exec::series::SeriesOut {
        dir: dir.to_path_buf(),
        interval,
        fault: Default::default(),
    };
    run_checked("the bench workload", out, dir.to_path_buf(), Some(series))
}

/// A workload file run in this process as `wlrun run FILE` would run it: its imports and
/// `hook NAME from "x.rhai"` resolve relative to its directory, which is also the run's base
/// directory.
#[allow(dead_code)] // benches that only run text
pub fn run_file(path: &Path) -> Report {
    let out = check_file(path, &Options::default());
    let what = format!("the bench workload {}", path.display());
    run_checked(
        &what,
        out,
        path.parent().unwrap_or(Path::new("")).to_path_buf(),
        None,
    )
}

/// Lowers and runs a workload that must have checked, quietly, with `base_dir` for its paths.
fn run_checked(
    what: &str,
    out: Outcome,
    base_dir: PathBuf,
    series: Option<wlrun::exec::series::SeriesOut>,
) -> Report {
    let checked = out.checked.unwrap_or_else(|| {
        panic!(
            "{what} checks: {:?}",
            out.diagnostics
                .iter()
                .map(|d| d.message.clone())
                .collect::<Vec<_>>()
        )
    });
    let plan = wlrun::lower::lower(&checked);
    let env = RunEnv {
        seed: checked.seed,
        base_dir,
        stop: Arc::new(AtomicBool::new(false)),
        progress_every: Duration::ZERO,
        quiet: true,
        max_error_rate: None,
        fail_fast: false,
        series,
        live: None,
        shard: None,
    };
    run_plan(&plan, &env, |_| {})
}
