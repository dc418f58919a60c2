//! The CPU time this process has used: the report shows how many cores the loader itself
//! burned, so a client-bound figure is visible as such.
//!
//! The process CPU-time clock counts in nanoseconds. /proc/self/stat counts in 10 ms ticks,
//! which over a phase of a few milliseconds reads as 0 or as more cores than the machine has.
//! The clock is not exact either: the kernel brings the time of another thread that is
//! running up to date only at its scheduler tick (4 ms at 250 Hz), so cores over a span are
//! only shown from `report::MIN_RATE_SPAN_S` on.

/// User + system CPU seconds of the whole process (every thread) so far; the difference of
/// two readings is the CPU a phase used between them. Always `Some` on Linux; an `Option` so
/// that a caller never has to assume the clock.
pub fn process_cpu_seconds() -> Option<f64> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Some(t.tv_sec as f64 + t.tv_nsec as f64 / 1e9)
}

/// Seconds the process's threads have spent runnable but waiting for a CPU so far (Linux
/// schedstat, `/proc/self/task/*/schedstat`, second field, ns): a client starved by other work
/// on its host waits here, while its own CPU time stays low. Threads that have exited are not
/// counted, so it is read over a span its long-lived threads (the runtime's) cover.
pub fn runqueue_wait_seconds() -> Option<f64> {
    let mut ns = 0u64;
    let mut any = false;
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) else {
            continue;
        };
        if let Some(wait) = text
            .split_whitespace()
            .nth(1)
            .and_then(|w| w.parse::<u64>().ok())
        {
            ns += wait;
            any = true;
        }
    }
    any.then(|| ns as f64 / 1e9)
}

/// The CPU used and the run-queue wait so far, read together at a span's start.
#[derive(Clone, Copy, Debug)]
pub struct Mark {
    pub cpu: Option<f64>,
    pub wait: Option<f64>,
}

pub fn mark() -> Mark {
    Mark {
        cpu: process_cpu_seconds(),
        wait: runqueue_wait_seconds(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    /// Spins for `d` of wall time.
    fn busy(d: Duration) -> u64 {
        let mut x = 0u64;
        let t = Instant::now();
        while t.elapsed() < d {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        x
    }

    /// A phase of a few milliseconds has a CPU time: never 0 (a 10 ms tick would say 0 most of
    /// the time) and never more than the cores could have burned over the span (a tick that
    /// lands inside it would claim 10 ms).
    #[test]
    fn a_few_milliseconds_of_work_register() {
        // The other tests of this binary run on other threads, and the kernel brings another
        // running thread's CPU time up to date only at its scheduler tick, so their time comes
        // in 4 ms steps: the bound is checked in a process of its own.
        const CHILD: &str = "WLRUN_CPU_CLOCK_TEST_CHILD";
        if std::env::var_os(CHILD).is_none() {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "exec::cpu::tests::a_few_milliseconds_of_work_register",
                    "--exact",
                    "--test-threads=1",
                ])
                .env(CHILD, "1")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            return;
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        for round in 0..20 {
            let wall = Instant::now();
            let a = super::process_cpu_seconds().expect("process CPU time");
            let x = busy(Duration::from_millis(2));
            let b = super::process_cpu_seconds().expect("process CPU time");
            let span = wall.elapsed().as_secs_f64();
            let cpu = b - a;
            assert!(cpu > 0.0, "round {round}: {a} -> {b} over {span}s ({x})");
            assert!(
                cpu <= span * cores,
                "round {round}: {cpu}s of CPU over {span}s on {cores} cores"
            );
        }
    }
}
