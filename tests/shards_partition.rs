//! A network partition in the middle of a phase: two shards, each in its own network
//! namespace, joined by a veth pair; the link is set down while they send. Neither connection
//! closes (nothing crosses the link, not even a reset), so only the barrier's heartbeats can
//! tell: with a barrier timeout of 120 s, both shards must end by themselves, naming each
//! other, within 30 s of the link going down, each with what it measured written.
//!
//! Needs root and `ip` (iproute2). Without them the test is skipped with a note; under
//! CI=true it fails instead. The namespaces are removed even when the test fails (`Netns`).
//! The target is an HTTP responder in each namespace: this test binary, started again inside
//! it (`serve_in_namespace`), on the same loopback port, so both shards run one plan.

#[path = "common/shard_procs.rs"]
mod shard_procs;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shard_procs::{finish, Ran};

const SERVE_VAR: &str = "WLRUN_TEST_NS_SERVE_PORT";
const TARGET_PORT: u16 = 18080;
const BARRIER_PORT: u16 = 7471;
const TOKEN: &str = "partition-test-token-7d1e";

/// Not a test of its own: the HTTP responder started inside a namespace by the test below
/// (`--ignored`, with `WLRUN_TEST_NS_SERVE_PORT`). 200 `ok` to every request, keep-alive.
#[test]
#[ignore]
fn serve_in_namespace() {
    let Ok(port) = std::env::var(SERVE_VAR) else {
        return;
    };
    let l = std::net::TcpListener::bind(("127.0.0.1", port.parse::<u16>().unwrap())).unwrap();
    println!("listening");
    let started = Instant::now();
    for conn in l.incoming() {
        // However the test ends, the responder does not outlive it by much.
        if started.elapsed() > Duration::from_secs(300) {
            return;
        }
        let Ok(mut c) = conn else { continue };
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            loop {
                let n = match c.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                buf.extend_from_slice(&chunk[..n]);
                while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    buf.drain(..end + 4);
                    let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                    if c.write_all(answer).is_err() {
                        return;
                    }
                }
            }
        });
    }
}

/// `ip ARGS`, which must succeed.
fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Two namespaces joined by a veth pair, and the processes started in them: all removed when
/// dropped, the test passed or not.
struct Netns {
    names: [String; 2],
    veth: [String; 2],
    children: Vec<Child>,
}

impl Netns {
    fn new() -> Netns {
        let id = std::process::id();
        let n = Netns {
            names: [format!("wlr-{id}-0"), format!("wlr-{id}-1")],
            veth: [format!("wv{id}a"), format!("wv{id}b")],
            children: Vec::new(),
        };
        for name in &n.names {
            ip(&["netns", "add", name]);
        }
        ip(&[
            "link", "add", &n.veth[0], "type", "veth", "peer", "name", &n.veth[1],
        ]);
        for i in 0..2 {
            let (ns, dev) = (&n.names[i], &n.veth[i]);
            ip(&["link", "set", dev, "netns", ns]);
            let a = format!("{}/30", n.addr(i));
            ip(&["-n", ns, "addr", "add", &a, "dev", dev]);
            ip(&["-n", ns, "link", "set", dev, "up"]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        n
    }

    fn addr(&self, i: usize) -> String {
        format!("10.200.0.{}", i + 1)
    }

    /// `program args` in namespace `i`.
    fn command(&self, i: usize, program: &Path, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.names[i]])
            .arg(program)
            .args(args);
        c
    }

    /// The link between the namespaces goes down: no packet crosses, no connection closes.
    fn partition(&self) {
        ip(&["-n", &self.names[0], "link", "set", &self.veth[0], "down"]);
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for name in &self.names {
            let _ = Command::new("ip").args(["netns", "del", name]).status();
        }
    }
}

/// A shard's process, killed if the test fails before it is waited for.
struct Reaped(Option<Child>);

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Root and a working `ip netns`, or why not.
fn missing() -> Option<String> {
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Some("not root".into());
    }
    match Command::new("ip").args(["netns", "list"]).output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "`ip netns` fails: {}",
            String::from_utf8_lossy(&o.stderr)
        )),
        Err(e) => Some(format!("no `ip`: {e}")),
    }
}

#[test]
fn a_partition_mid_phase_ends_both_shards_naming_each_other() {
    if let Some(why) = missing() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true and {why}: this test needs root and iproute2"
        );
        eprintln!("skipped: {why} (the partition test needs root and iproute2)");
        return;
    }
    let mut ns = Netns::new();
    let me = std::env::current_exe().unwrap();
    for i in 0..2 {
        let mut server = ns
            .command(
                i,
                &me,
                &["--exact", "serve_in_namespace", "--ignored", "--nocapture"],
            )
            .env(SERVE_VAR, TARGET_PORT.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Its first line: it listens.
        let mut out = server.stdout.take().unwrap();
        let mut seen = Vec::new();
        let mut b = [0u8; 1];
        while !String::from_utf8_lossy(&seen).contains("listening") {
            assert_eq!(
                out.read(&mut b).unwrap(),
                1,
                "the responder in namespace {i} died"
            );
            seen.push(b[0]);
        }
        ns.children.push(server);
    }

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("w.wl"),
        format!(
            r#"workload w {{ seed 9 }}
target svc {{ http "http://127.0.0.1:{TARGET_PORT}" {{ timeout 5s }} }}
run reqs {{
  against svc.http
  request GET "/x"
  connections 2
  rate 40/s
  duration 60s
  expect status 200
}}
"#
        ),
    )
    .unwrap();
    let barrier = format!("{}:{BARRIER_PORT}", ns.addr(0));
    let wlrun = Path::new(env!("CARGO_BIN_EXE_wlrun"));
    let t0 = Instant::now();
    let mut shards = Vec::new();
    for i in 0..2 {
        let spec = format!("{i}/2");
        let out = dir.path().join(format!("shard-{i}"));
        let child = ns
            .command(
                i,
                wlrun,
                &[
                    "run",
                    "w.wl",
                    "--json",
                    "--quiet",
                    "--shard",
                    &spec,
                    "--barrier",
                    &barrier,
                    "--barrier-timeout",
                    "120s",
                    "--out",
                    out.to_str().unwrap(),
                ],
            )
            .current_dir(dir.path())
            .env("WLRUN_BARRIER_TOKEN", TOKEN)
            .env_remove("JOB_COMPLETION_INDEX")
            .env_remove("WLRUN_SHARDS")
            .env_remove("WLRUN_BARRIER")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        shards.push(Reaped(Some(child)));
    }
    // Both are well into the phase: joined, started, sending.
    std::thread::sleep(Duration::from_secs(5));
    ns.partition();
    let cut = Instant::now();
    // A watchdog: past 90 s the shards hang, and are killed so that the test can say so.
    let pids: Vec<u32> = shards.iter().map(|c| c.0.as_ref().unwrap().id()).collect();
    let done = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let done = done.clone();
        std::thread::spawn(move || {
            while cut.elapsed() < Duration::from_secs(90) {
                if done.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            for p in pids {
                let _ = Command::new("kill").args(["-9", &p.to_string()]).status();
            }
        })
    };
    let ran: Vec<(Ran, Duration)> = shards
        .iter_mut()
        .map(|c| {
            let r = finish(c.0.take().unwrap());
            (r, cut.elapsed())
        })
        .collect();
    done.store(true, Ordering::SeqCst);
    watchdog.join().unwrap();
    eprintln!(
        "partition after {:?}; shards ended {:?} after it",
        cut.duration_since(t0),
        ran.iter().map(|r| r.1).collect::<Vec<_>>()
    );
    let names = [
        "shard 1 went silent".to_string(),
        format!("shard 0 at {barrier} went silent"),
    ];
    for (i, (r, took)) in ran.iter().enumerate() {
        assert!(
            *took < Duration::from_secs(30),
            "shard {i} took {took:?}: {}",
            r.err
        );
        assert_eq!(r.code, 1, "shard {i}: {}", r.err);
        assert!(r.err.contains(&names[i]), "shard {i}: {}", r.err);
        let failure = r.report()["shard"]["failure"].as_str().unwrap().to_string();
        assert!(
            failure.contains(if i == 0 { "shard 1" } else { "shard 0" }),
            "shard {i}: {failure}"
        );
        let phase = &r.report()["cells"][0]["phases"][0];
        assert_eq!(phase["status"], "failed", "shard {i}: {phase}");
        // What it measured before the partition is kept, and the phase stopped long before
        // its 60 s.
        assert!(phase["ok"].as_u64().unwrap() > 0, "shard {i}: {phase}");
        let elapsed = phase["elapsed_s"].as_f64().unwrap();
        assert!(
            elapsed < 30.0,
            "shard {i}: the phase went on for {elapsed} s"
        );
        let written = dir.path().join(format!("shard-{i}/report.json"));
        assert!(written.is_file(), "shard {i} wrote no report");
        assert!(!r.err.contains(TOKEN));
    }
}
