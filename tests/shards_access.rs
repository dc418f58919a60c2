//! Who may join a sharded run's barrier, with real `wlrun run` processes on 127.0.0.1: a
//! stranger that knows the plan's hash but not `WLRUN_BARRIER_TOKEN` (or has a wrong one) is
//! refused and logged by shard 0, and the run with the right token passes; the token never
//! shows in what the shards print or write. Over TLS the run passes, and a shard dialing the
//! TLS barrier in clear is refused while the run goes on.

#[path = "common/http_server.rs"]
mod http_server;
#[path = "common/shard_procs.rs"]
mod shard_procs;
#[path = "common/tls.rs"]
mod tls;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use http_server::{Behaviour, ServerHandle};
use shard_procs::{finish, free_port, wlrun, Ran};

const TOKEN: &str = "wl-barrier-secret-5f0c2a9e71";

fn workload(server: &ServerHandle) -> String {
    format!(
        r#"workload w {{ seed 5 }}
target svc {{ http "{}" {{ timeout 5s }} }}
run reqs {{
  against svc.http
  request GET "/x"
  connections 1
  count 40
  expect status 200
}}
"#,
        server.url()
    )
}

/// Shard `i` of 2 on the barrier at `barrier`, writing `out/shard-i`, with `env` and `args`.
fn shard(dir: &Path, i: u64, barrier: &str, env: &[(&str, &str)], args: &[&str]) -> Child {
    let out = format!("out/shard-{i}");
    let spec = format!("{i}/2");
    let mut all = vec![
        "run",
        "w.wl",
        "--json",
        "--quiet",
        "--shard",
        &spec,
        "--barrier",
        barrier,
        "--barrier-timeout",
        "20s",
        "--out",
        &out,
    ];
    all.extend_from_slice(args);
    let mut c = wlrun(dir, &all);
    c.env_remove("WLRUN_BARRIER_TOKEN");
    for (k, v) in env {
        c.env(k, v);
    }
    c.spawn().unwrap()
}

/// The plan's hash, as shard 0 wrote it into its run directory when it started: what a
/// stranger who can read a shared run directory knows.
fn plan_of(dir: &Path) -> String {
    let file = dir.join("out/shard-0/shard.json");
    let t0 = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(&file) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
                return v["plan"].as_str().unwrap().to_string();
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no {}",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A hello as a shard says it, with `token`: shard 0's answer line.
fn stranger(port: u16, plan: &str, token: Option<&str>) -> String {
    let t0 = Instant::now();
    // Shard 0 writes its run directory before it listens.
    let mut sock = loop {
        match std::net::TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => break s,
            Err(e) if t0.elapsed() > Duration::from_secs(20) => panic!("shard 0: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    sock.set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    let mut hello = serde_json::json!({
        "t": "hello", "shard": 1, "count": 2, "plan": plan, "version": env!("CARGO_PKG_VERSION"),
    });
    if let Some(t) = token {
        hello["token"] = t.into();
    }
    sock.write_all(format!("{hello}\n").as_bytes()).unwrap();
    let mut line = String::new();
    BufReader::new(sock).read_line(&mut line).unwrap();
    line
}

/// Every byte a run left: its output and every file under its run directories.
fn everything(dir: &Path, ran: &[&Ran]) -> String {
    let mut all = String::new();
    for r in ran {
        all.push_str(&r.err);
        all.push_str(&r.report.as_ref().map(|v| v.to_string()).unwrap_or_default());
    }
    let mut stack = vec![dir.join("out")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                all.push_str(&String::from_utf8_lossy(&std::fs::read(&p).unwrap()));
            }
        }
    }
    all
}

#[test]
fn strangers_without_the_token_are_refused_and_the_run_with_it_passes() {
    let server = ServerHandle::start(Behaviour::ok());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), workload(&server)).unwrap();
    let port = free_port();
    let barrier = format!("127.0.0.1:{port}");
    let token = [("WLRUN_BARRIER_TOKEN", TOKEN)];
    let t0 = Instant::now();
    let zero = shard(dir.path(), 0, &barrier, &token, &[]);
    let plan = plan_of(dir.path());
    assert!(plan.starts_with("sha256:"), "{plan}");
    let none = stranger(port, &plan, None);
    assert!(
        none.contains(r#""t":"refuse""#) && none.contains("needs a token"),
        "{none}"
    );
    let wrong = stranger(port, &plan, Some("wl-barrier-secret-000000000"));
    assert!(wrong.contains("wrong barrier token"), "{wrong}");
    // A shard of the run without the token: refused, it says why and fails; the run goes on.
    let tokenless = finish(shard(dir.path(), 1, &barrier, &[], &[]));
    assert_eq!(tokenless.code, 1, "{}", tokenless.err);
    assert!(
        tokenless.err.contains("refused this shard") && tokenless.err.contains("needs a token"),
        "{}",
        tokenless.err
    );
    std::fs::remove_dir_all(dir.path().join("out/shard-1")).unwrap();
    let one = finish(shard(dir.path(), 1, &barrier, &token, &[]));
    let zero = finish(zero);
    eprintln!("the run with two strangers took {:?}", t0.elapsed());
    assert_eq!(zero.code, 0, "{}", zero.err);
    assert_eq!(one.code, 0, "{}", one.err);
    assert_eq!(server.count(), 40);
    // Shard 0 said whom it refused, by address, three times.
    let refusals: Vec<&str> = zero
        .err
        .lines()
        .filter(|l| l.contains("shard 0: refused a connection from 127.0.0.1:"))
        .collect();
    assert_eq!(refusals.len(), 3, "{}", zero.err);
    let all = everything(dir.path(), &[&zero, &one, &tokenless]);
    assert!(!all.contains(TOKEN), "the token leaked");
    assert!(!all.contains("wl-barrier-secret"), "a token leaked");
}

#[test]
fn a_reachable_shard_0_without_a_token_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerHandle::start(Behaviour::ok());
    std::fs::write(dir.path().join("w.wl"), workload(&server)).unwrap();
    let barrier = format!("127.0.0.1:{}", free_port());
    let r = finish(shard(
        dir.path(),
        0,
        &barrier,
        &[],
        &["--barrier-bind", "0.0.0.0"],
    ));
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(
        r.err.contains("WLRUN_BARRIER_TOKEN is not set") && r.err.contains("--barrier-insecure"),
        "{}",
        r.err
    );
    let short = [("WLRUN_BARRIER_TOKEN", "short-one")];
    let r = finish(shard(dir.path(), 0, &barrier, &short, &[]));
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(r.err.contains("at least 16"), "{}", r.err);
    assert_eq!(server.count(), 0);
}

#[test]
fn a_tls_barrier_passes_and_refuses_a_shard_dialing_it_in_clear() {
    let pki = tls::Pki::new();
    let server = ServerHandle::start(Behaviour::ok());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), workload(&server)).unwrap();
    let port = free_port();
    let barrier = format!("127.0.0.1:{port}");
    let cert = pki.server_cert(tls::Server::Valid);
    let key = pki.server_key(tls::Server::Valid);
    let ca = pki.ca();
    let (cert, key, ca) = (
        cert.to_str().unwrap(),
        key.to_str().unwrap(),
        ca.to_str().unwrap(),
    );
    let token = [("WLRUN_BARRIER_TOKEN", TOKEN)];
    let t0 = Instant::now();
    let zero = shard(
        dir.path(),
        0,
        &barrier,
        &token,
        &["--barrier-tls-cert", cert, "--barrier-tls-key", key],
    );
    let clear = finish(shard(dir.path(), 1, &barrier, &token, &[]));
    assert_eq!(clear.code, 1, "{}", clear.err);
    assert!(clear.err.contains("--barrier-tls-ca"), "{}", clear.err);
    std::fs::remove_dir_all(dir.path().join("out/shard-1")).unwrap();
    let one = finish(shard(
        dir.path(),
        1,
        &barrier,
        &token,
        &["--barrier-tls-ca", ca],
    ));
    let zero = finish(zero);
    eprintln!("the TLS run took {:?}", t0.elapsed());
    assert_eq!(zero.code, 0, "{}", zero.err);
    assert_eq!(one.code, 0, "{}", one.err);
    assert_eq!(server.count(), 40);
    assert!(
        zero.err.contains("refused a connection from 127.0.0.1:")
            && zero.err.contains("no TLS handshake"),
        "{}",
        zero.err
    );
    let all = everything(dir.path(), &[&zero, &one, &clear]);
    assert!(!all.contains(TOKEN), "the token leaked");
}
