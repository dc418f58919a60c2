//! A sharded run's processes, started as a Kubernetes Indexed Job starts them: `wlrun run` per
//! shard with `JOB_COMPLETION_INDEX`, `WLRUN_SHARDS` and `WLRUN_BARRIER` (a free loopback port)
//! in the environment, one of them signalled on cue, and a watchdog that kills them all and
//! fails the test when they hang.
#![allow(dead_code)] // each test file uses its own subset

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A run that takes longer than this hangs: every shard is killed and the test fails.
const HANG: Duration = Duration::from_secs(90);

pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

pub fn wlrun(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wlrun"));
    c.current_dir(dir)
        .args(args)
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("WLRUN_SHARDS")
        .env_remove("WLRUN_BARRIER")
        // A tester's own barrier settings must not change what the tests run.
        .env_remove("WLRUN_BARRIER_TOKEN")
        .env_remove("WLRUN_BARRIER_TLS_CERT")
        .env_remove("WLRUN_BARRIER_TLS_KEY")
        .env_remove("WLRUN_BARRIER_TLS_CA")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// What one process left: its exit code, its JSON report (if it printed one), its stderr.
#[derive(Debug)]
pub struct Ran {
    /// -1 when a signal ended it (`signal` says which).
    pub code: i32,
    pub signal: Option<i32>,
    pub report: Option<Value>,
    pub err: String,
}

impl Ran {
    pub fn report(&self) -> &Value {
        self.report
            .as_ref()
            .unwrap_or_else(|| panic!("no report; stderr:\n{}", self.err))
    }
}

pub fn finish(child: Child) -> Ran {
    use std::os::unix::process::ExitStatusExt;
    let out = child.wait_with_output().unwrap();
    Ran {
        code: out.status.code().unwrap_or(-1),
        signal: out.status.signal(),
        report: serde_json::from_slice(&out.stdout).ok(),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// One process, unsharded.
pub fn single(dir: &Path) -> Ran {
    let child = wlrun(dir, &["run", "w.wl", "--json", "--quiet"])
        .spawn()
        .unwrap();
    finish(child)
}

/// How a sharded run is started: which of the `n` shards start at all, which one gets a
/// signal (`KILL`, `TERM`) after how long, the arguments every shard gets after `run w.wl
/// --json --quiet`, and `out`: a directory under which shard I writes `shard-I` (`--out`).
pub struct Plan<'a> {
    pub n: u64,
    pub start: Vec<u64>,
    pub kill: Option<(u64, Duration, &'static str)>,
    pub args: &'a [&'a str],
    pub out: Option<&'a str>,
}

impl Plan<'_> {
    pub fn all(n: u64) -> Plan<'static> {
        Plan {
            n,
            start: (0..n).collect(),
            kill: None,
            args: &[],
            out: None,
        }
    }
}

/// The shards as a Job runs them: each with its index and the count in the environment, the
/// barrier on a free loopback port. Returns each started shard's outcome (in `start`'s order)
/// and how long the slowest took; kills everything and fails the test past `HANG`.
pub fn shards(dir: &Path, plan: Plan) -> (Vec<Ran>, Duration) {
    let port = free_port();
    let t0 = Instant::now();
    let mut children = Vec::new();
    for &i in &plan.start {
        let mut args = vec!["run", "w.wl", "--json", "--quiet"];
        args.extend_from_slice(plan.args);
        let out = plan.out.map(|o| format!("{o}/shard-{i}"));
        if let Some(o) = &out {
            args.extend(["--out", o.as_str()]);
        }
        let child = wlrun(dir, &args)
            .env("JOB_COMPLETION_INDEX", i.to_string())
            .env("WLRUN_SHARDS", plan.n.to_string())
            .env("WLRUN_BARRIER", format!("127.0.0.1:{port}"))
            .spawn()
            .unwrap();
        children.push((i, child));
    }
    let pids: Vec<(u64, u32)> = children.iter().map(|(i, c)| (*i, c.id())).collect();
    let done = Arc::new(Mutex::new(false));
    let watchdog = {
        let done = done.clone();
        let kill = plan.kill;
        std::thread::spawn(move || {
            let mut hung = false;
            let mut signalled = false;
            loop {
                std::thread::sleep(Duration::from_millis(50));
                if *done.lock().unwrap() {
                    return hung;
                }
                if let Some((k, after, signal)) = kill {
                    if t0.elapsed() >= after && !signalled {
                        signalled = true;
                        if let Some((_, pid)) = pids.iter().find(|(i, _)| *i == k) {
                            let _ = Command::new("kill")
                                .args([&format!("-{signal}"), &pid.to_string()])
                                .status();
                        }
                    }
                }
                if t0.elapsed() > HANG && !hung {
                    hung = true;
                    for (_, pid) in &pids {
                        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
                    }
                }
            }
        })
    };
    let ran: Vec<Ran> = children.into_iter().map(|(_, c)| finish(c)).collect();
    let took = t0.elapsed();
    *done.lock().unwrap() = true;
    assert!(!watchdog.join().unwrap(), "the shards hung: {ran:#?}");
    (ran, took)
}
