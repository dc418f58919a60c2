//! wrk run from a bench, side by side with wlrun: its requests/s and its client CPU per request
//! (user + system of the shell's children, from `times`), so both tools' figures come from one
//! round.

use std::path::Path;
use std::process::Command;

pub struct Measured {
    pub rps: f64,
    pub cpu_us_per_request: f64,
}

/// A peer's command run by bash with the shell's `times` after it, so that its output ends
/// with the CPU of the shell's children (`children_cpu_s`).
pub struct Timed {
    command: String,
    pub stdout: String,
    stderr: String,
}

impl Timed {
    /// Stops the bench, showing the command and all it printed.
    pub fn fail(&self, what: &str) -> ! {
        panic!(
            "{}: {what} in its output:\n{}\n{}",
            self.command, self.stdout, self.stderr
        )
    }
}

/// Runs `command; times` in bash (in `dir` if given).
pub fn run_timed(command: &str, dir: Option<&Path>) -> Timed {
    let mut bash = Command::new("bash");
    bash.args(["-c", &format!("{command}; times")]);
    if let Some(dir) = dir {
        bash.current_dir(dir);
    }
    let out = bash.output().expect("bash runs");
    Timed {
        command: command.to_string(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// wrk's figures: requests/s, and its CPU (user + system, from the shell's `times`) over its
/// request count. Warns about non-2xx answers and socket errors.
pub fn run_wrk(dir: &Path, command: &str) -> Measured {
    let out = run_timed(command, Some(dir));
    let (text, fail) = (&out.stdout, |what: &str| -> ! { out.fail(what) });
    let requests: f64 = text
        .lines()
        .find(|l| l.contains(" requests in "))
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| fail("no `N requests in`"));
    let rps: f64 = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| fail("no `Requests/sec:`"));
    for l in text.lines() {
        let l = l.trim();
        if l.starts_with("Non-2xx or 3xx responses") || l.starts_with("Socket errors") {
            println!("  warning: {command}: {l}");
        }
    }
    let cpu = children_cpu_s(text).unwrap_or_else(|| fail("no `times`"));
    Measured {
        rps,
        cpu_us_per_request: cpu * 1e6 / requests.max(1.0),
    }
}

/// The children's CPU seconds (user + system) that the shell's `times`, run last, printed at
/// the end of `text`: its own times, then its children's, `0m1.230s 0m0.450s`.
pub fn children_cpu_s(text: &str) -> Option<f64> {
    let secs = |t: &str| -> Option<f64> {
        let (m, s) = t.trim_end_matches('s').split_once('m')?;
        Some(m.parse::<f64>().ok()? * 60.0 + s.parse::<f64>().ok()?)
    };
    let children = text.lines().rfind(|l| !l.trim().is_empty())?;
    let mut parts = children.split_whitespace();
    Some(secs(parts.next()?)? + secs(parts.next()?)?)
}
