//! What a person watching sees while a phase runs: a line every N seconds (TSBS prints one
//! every 10 s) and, on a terminal, a progress bar.

use std::io::IsTerminal;
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

/// Starts the progress of a phase that does `expected` `unit`s (rows, queries) in all, if known.
pub fn start(
    env: &RunEnv,
    label: String,
    expected: Option<u64>,
    unit: &'static str,
    status: Status,
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
            let (sent, extra) = status();
            if let Some(bar) = &bar {
                bar.set_position(sent);
            }
            let now = Instant::now();
            if now >= next_line && !quiet && !every.is_zero() {
                next_line = now + every;
                let rate = (sent - last_rows) as f64 / now.duration_since(last_at).as_secs_f64();
                last_rows = sent;
                last_at = now;
                let line = format!(
                    "{label}: {:.0}s, {} {unit} ({} {unit}/s), {extra}",
                    now.duration_since(started).as_secs_f64(),
                    thousands(sent),
                    thousands(rate as u64)
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
