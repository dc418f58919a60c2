//! What a person watching sees while a phase runs: a line every N seconds (TSBS prints one
//! every 10 s) and, on a terminal, a progress bar.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use tokio::sync::watch;

use super::RunEnv;
use crate::plan::thousands;

pub struct Ticker {
    done: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Ticker {
    pub async fn finish(self) {
        let _ = self.done.send(true);
        let _ = self.task.await;
    }
}

/// What the ticker shows: how many units are done so far, and the rest of the line.
pub type Status = Box<dyn Fn() -> (u64, String) + Send + Sync>;

/// What a query or request run counts while it goes on: answers that succeeded and failed, and
/// whether it is warming up (those are not measured, and the line says so).
#[derive(Default)]
pub struct RunCounts {
    pub ok: AtomicU64,
    pub failed: AtomicU64,
    pub warmup: AtomicBool,
}

/// The progress of a query or request run: the line shows ok and failed per second apart (a
/// run whose every query fails is not "7 queries/s") and names the warm-up.
pub fn start_run(
    env: &RunEnv,
    label: String,
    expected: Option<u64>,
    unit: &'static str,
    counts: Arc<RunCounts>,
) -> Ticker {
    let last = std::sync::Mutex::new((0u64, 0u64, Instant::now()));
    let line = Box::new(move || {
        let ok = counts.ok.load(Ordering::Relaxed);
        let failed = counts.failed.load(Ordering::Relaxed);
        let now = Instant::now();
        let Ok(mut last) = last.lock() else {
            return (ok + failed, String::new());
        };
        let secs = now.duration_since(last.2).as_secs_f64().max(1e-9);
        let per = |n: u64, was: u64| thousands((n.saturating_sub(was) as f64 / secs) as u64);
        let text = format!(
            "{}{} ok ({}/s), {} failed ({}/s)",
            if counts.warmup.load(Ordering::Relaxed) {
                "warm-up (not measured), "
            } else {
                ""
            },
            thousands(ok),
            per(ok, last.0),
            thousands(failed),
            per(failed, last.1)
        );
        *last = (ok, failed, now);
        (ok + failed, text)
    });
    spawn(env, label, expected, unit, Line::Whole(line))
}

/// What a line says after the elapsed time.
enum Line {
    /// Units done so far, their rate, then the rest of the line.
    Units(Status, &'static str),
    /// Units done (for the bar), and the whole rest of the line; called once per line.
    Whole(Box<dyn Fn() -> (u64, String) + Send + Sync>),
}

/// Starts the progress of a phase that does `expected` `unit`s (rows, queries) in all, if known.
pub fn start(
    env: &RunEnv,
    label: String,
    expected: Option<u64>,
    unit: &'static str,
    status: Status,
) -> Ticker {
    spawn(env, label, expected, unit, Line::Units(status, unit))
}

fn spawn(
    env: &RunEnv,
    label: String,
    expected: Option<u64>,
    unit: &'static str,
    source: Line,
) -> Ticker {
    let (done, mut done_rx) = watch::channel(false);
    let every = env.progress_every;
    let quiet = env.quiet;
    let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::new(expected.unwrap_or(0));
        bar.set_style(
            ProgressStyle::with_template(
                &format!("{{prefix}} [{{bar:30}}] {{human_pos}}/{{human_len}} {unit}, {{per_sec}}, eta {{eta}}"),
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.set_prefix(label.clone());
        bar
    });
    let task = tokio::spawn(async move {
        let started = Instant::now();
        let mut next_line = started + every;
        let mut last_rows = 0u64;
        let mut last_at = started;
        loop {
            let tick = if bar.is_some() {
                Duration::from_millis(200)
            } else if every.is_zero() || quiet {
                // Nothing to show: wait for the end without waking up.
                Duration::from_secs(3600)
            } else {
                every
            };
            tokio::select! {
                _ = tokio::time::sleep(tick) => {}
                _ = done_rx.changed() => break,
            }
            let now = Instant::now();
            let due = now >= next_line && !quiet && !every.is_zero();
            let (sent, text) = match &source {
                Line::Units(status, unit) => {
                    let (sent, extra) = status();
                    let rate =
                        (sent - last_rows) as f64 / now.duration_since(last_at).as_secs_f64();
                    (
                        sent,
                        format!(
                            "{} {unit} ({} {unit}/s), {extra}",
                            thousands(sent),
                            thousands(rate as u64)
                        ),
                    )
                }
                // Its own rates run from its last call: called only when a line is due.
                Line::Whole(line) if due => line(),
                Line::Whole(_) => (last_rows, String::new()),
            };
            if let Some(bar) = &bar {
                bar.set_position(sent);
            }
            if due {
                next_line = now + every;
                last_rows = sent;
                last_at = now;
                let line = format!(
                    "{label}: {:.0}s, {text}",
                    now.duration_since(started).as_secs_f64(),
                );
                match &bar {
                    Some(bar) => bar.println(line),
                    None => sayln!("{line}"),
                }
            }
        }
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
    });
    Ticker { done, task }
}
