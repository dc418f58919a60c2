//! `cargo bench --bench tls`: what TLS costs wlrun, against the tools and the runs in clear.
//!
//! 1. HTTPS request runs against nginx (tests/common/nginx.rs started with `start_tls`, one
//!    worker process, keep-alive, a certificate of the test PKI of tests/common/tls.rs), wlrun
//!    against `wrk` (Debian's, OpenSSL), both POSTing the fixed ksqlDB pull query of
//!    benches/requests/ (`post.lua`, `plain.wl` with an `https://` URL and `tls_ca`), at 1
//!    connection and at 32 (wrk with 2 threads). Requests/s of both, alternating which goes
//!    first, medians of `WLRUN_BENCH_RUNS` (5) rounds of `WLRUN_BENCH_SECONDS` (5) each; and the
//!    client CPU per request of both (wrk: user + system from the shell's `times`; wlrun: the
//!    report's `client_cpu_s`). Target: wlrun at least 0.95x wrk.
//! 2. QWP ingest, TSBS cpu-only at 4,000 hosts (`WLRUN_BENCH_MINUTES`, 5: 120,000 rows),
//!    pre-encoded (`replay`), one worker, into the in-test QWP ingest server of
//!    tests/common/qwp_ingest_server.rs (which decodes every message), three ways: `ws://`
//!    straight to it, `ws://` through a relay in clear (`TlsFront::relay`), and `wss://` through
//!    the TLS front. The relay and the front run in this process on a thread of their own,
//!    sharing the machine's cores with the client and the server: `wss`/`ws relay` is TLS's own
//!    cost, `wss`/`ws` what a user sees, relay included. Target: wss at least 0.8x ws in rows/s.
//!
//! Without nginx or wrk the first part says so and is skipped.

#[path = "common/run.rs"]
mod run;

#[path = "common/stats.rs"]
mod stats;

#[path = "common/wrk.rs"]
mod wrk;
use wrk::{run_wrk, Measured};
#[path = "common/tsbs.rs"]
mod tsbs;
use stats::median;

#[path = "../tests/common/nginx.rs"]
mod nginx;
#[path = "../tests/common/qwp_ingest_server.rs"]
mod qwp_ingest_server;
#[path = "../tests/common/tls.rs"]
mod tls;

use std::path::Path;

use nginx::{find_program, Nginx};
use qwp_ingest_server::QwpServer;
use tls::{Pki, Server, TlsFront};
use wlrun::report::PhaseReport;

const POST_LUA: &str = include_str!("requests/post.lua");
const PLAIN_WL: &str = include_str!("requests/plain.wl");

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .ok()
            .filter(|n| *n > 0)
            .unwrap_or_else(|| panic!("{name}={v}: expected a whole number above 0")),
        Err(_) => default,
    }
}

/// plain.wl over `https://` to `port`, trusting `ca`, run in this process.
fn run_wlrun(port: u16, ca: &Path, connections: u64, seconds: u64) -> Measured {
    let text = PLAIN_WL
        .replace(
            "http \"http://127.0.0.1:@PORT@\" {",
            &format!(
                "http \"https://127.0.0.1:{port}\" {{\n    tls_ca \"{}\"",
                ca.display()
            ),
        )
        .replace("@CONNECTIONS@", &connections.to_string())
        .replace("@SECONDS@", &seconds.to_string())
        .replace("@LOAD@", "");
    let report = run::run_text(&text);
    let r = match report
        .cells
        .into_iter()
        .next()
        .and_then(|c| c.phases.into_iter().next())
    {
        Some(PhaseReport::Requests(r)) => r,
        Some(PhaseReport::NotRun { name, reason }) => panic!("{name} was not run: {reason}"),
        _ => panic!("no request phase in the bench's report"),
    };
    assert!(
        r.failures.is_empty() && r.failed == 0,
        "the bench run failed: {:?} (statuses {:?}, errors {:?})",
        r.failures,
        r.traffic.statuses,
        r.errors
    );
    let tls = r.connecting.as_ref().and_then(|c| c.tls.as_ref());
    assert!(
        tls.is_some_and(|t| t.full_handshakes + t.resumed_handshakes == connections),
        "one TLS connection per worker: {:?}",
        r.connecting
    );
    Measured {
        rps: r.output.rps.unwrap_or(f64::NAN),
        cpu_us_per_request: r.client_cpu_s.unwrap_or(f64::NAN) * 1e6 / r.ok.max(1) as f64,
    }
}

fn https_vs_wrk(runs: usize, seconds: u64) {
    let (Some(nginx), Some(wrk)) = (find_program("nginx"), find_program("wrk")) else {
        println!("https: nginx or wrk not found (Debian: apt-get install nginx wrk), skipped");
        return;
    };
    let pki = Pki::new();
    let server = Nginx::start_tls(
        &nginx,
        &pki.server_cert(Server::Valid),
        &pki.server_key(Server::Valid),
    );
    let port = server.tls_port().expect("started with TLS");
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(dir.path().join("post.lua"), POST_LUA).expect("post.lua");
    println!(
        "HTTPS: POST /query to nginx (1 worker, keep-alive, TLS 1.3) on 127.0.0.1:{port}; \
         {runs} alternating rounds of {seconds} s, medians"
    );
    println!(
        "{:>5}  {:>12} {:>12} {:>7}  {:>14} {:>14}",
        "conns", "wlrun req/s", "wrk req/s", "ratio", "wlrun cpu/req", "wrk cpu/req"
    );
    for (connections, threads) in [(1u64, 1u64), (32, 2)] {
        let command = format!(
            "{} -t{threads} -c{connections} -d{seconds}s -s post.lua https://127.0.0.1:{port}/query",
            wrk.display()
        );
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for round in 0..runs {
            if round % 2 == 0 {
                theirs.push(run_wrk(dir.path(), &command));
                ours.push(run_wlrun(port, &pki.ca(), connections, seconds));
            } else {
                ours.push(run_wlrun(port, &pki.ca(), connections, seconds));
                theirs.push(run_wrk(dir.path(), &command));
            }
        }
        let m = |v: &[Measured], f: fn(&Measured) -> f64| median(v.iter().map(f).collect());
        let (a, b) = (m(&ours, |x| x.rps), m(&theirs, |x| x.rps));
        println!(
            "{connections:>5}  {a:>12.0} {b:>12.0} {:>6.3}x  {:>11.1} us {:>11.1} us   (target 0.95x: {})",
            a / b,
            m(&ours, |x| x.cpu_us_per_request),
            m(&theirs, |x| x.cpu_us_per_request),
            if a / b >= 0.95 { "met" } else { "MISSED" }
        );
    }
}

/// Rows/s (the report's send rate), socket bytes per row and CPU per row (ns) of one replayed
/// QWP ingest to `url`. The CPU is the bench process's: the client, and the in-test server and
/// the TLS front that run in it.
fn qwp_ingest(url: &str, options: &str, minutes: u64) -> (f64, f64, f64) {
    let text = format!(
        "{}target t {{ qwp \"{url}\" {{ {options} }} }}\n\
         ingest load {{ into t via qwp table \"cpu\" rows tsbs.cpu batch 10_000 rows workers 1 replay }}\n",
        tsbs::cpu_4000_hosts(minutes)
    );
    let report = run::run_text(&text);
    match &report.cells[0].phases[0] {
        PhaseReport::Ingest(r) => {
            assert!(r.failures.is_empty(), "the bench failed: {:?}", r.failures);
            assert_eq!(
                r.rows_acked,
                Some(minutes * 24_000),
                "every row acknowledged"
            );
            (
                r.send_rows_per_s.expect("long enough to be a rate"),
                r.socket_bytes_per_row.unwrap_or(f64::NAN),
                r.client_cpu_s.unwrap_or(f64::NAN) * 1e9 / r.rows_sent.max(1) as f64,
            )
        }
        PhaseReport::NotRun { reason, .. } => panic!("not run: {reason}"),
        _ => panic!("the bench workload has only an ingest phase"),
    }
}

fn wss_vs_ws(runs: usize, minutes: u64) {
    let pki = Pki::new();
    let config = pki.server_config(Server::Valid, false);
    let ca = format!("tls_ca \"{}\"", pki.ca().display());
    println!(
        "QWP: TSBS cpu-only 4,000 hosts, {} rows pre-encoded, 1 worker, into the in-test QWP \
         server; {runs} rounds, medians",
        minutes * 24_000
    );
    let (mut ws, mut relay, mut wss) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ws_bytes, mut wss_bytes) = (0.0, 0.0);
    let (mut ws_cpu, mut wss_cpu) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        // A fresh server each run: it keeps every row it decoded.
        {
            let server = QwpServer::start(qwp_ingest_server::Config::default());
            let (r, b, cpu) = qwp_ingest(&server.url(), "", minutes);
            ws.push(r);
            ws_bytes = b;
            ws_cpu.push(cpu);
        }
        {
            let server = QwpServer::start(qwp_ingest_server::Config::default());
            let front = TlsFront::relay(server.addr());
            let url = format!("ws://127.0.0.1:{}", front.port());
            relay.push(qwp_ingest(&url, "", minutes).0);
        }
        {
            let server = QwpServer::start(qwp_ingest_server::Config::default());
            let front = TlsFront::start(server.addr(), config.clone());
            let url = format!("wss://127.0.0.1:{}", front.port());
            let (r, b, cpu) = qwp_ingest(&url, &ca, minutes);
            wss.push(r);
            wss_bytes = b;
            wss_cpu.push(cpu);
        }
    }
    let (a, b, c) = (median(ws), median(relay), median(wss));
    let (ws_cpu, wss_cpu) = (median(ws_cpu), median(wss_cpu));
    println!(
        "  ws://          {:>6.3} M rows/s  {ws_bytes:.1} B/row on the socket  process {ws_cpu:.0} ns CPU/row",
        a / 1e6
    );
    println!("  ws:// relay    {:>6.3} M rows/s", b / 1e6);
    println!(
        "  wss:// front   {:>6.3} M rows/s  {wss_bytes:.1} B/row on the socket  process {wss_cpu:.0} ns CPU/row",
        c / 1e6
    );
    println!(
        "  wss/ws {:.3}x (target 0.8x: {}), wss/ws relay {:.3}x",
        c / a,
        if c / a >= 0.8 { "met" } else { "MISSED" },
        c / b
    );
}

fn main() {
    let runs = env_number("WLRUN_BENCH_RUNS", 5) as usize;
    let seconds = env_number("WLRUN_BENCH_SECONDS", 5);
    let minutes = env_number("WLRUN_BENCH_MINUTES", 5);
    https_vs_wrk(runs, seconds);
    wss_vs_ws(runs, minutes);
}
