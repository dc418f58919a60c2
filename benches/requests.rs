//! `cargo bench --bench requests`: the request runner against `wrk`, both POSTing a ksqlDB
//! pull query to nginx on 127.0.0.1 (`location = /query { return 200 '[]'; }`: a static file
//! would answer a POST with 405).
//!
//! Six comparisons, each wrk against wlrun, interleaved, medians of 5 runs of 10 s
//! (`WLRUN_BENCH_RUNS`, `WLRUN_BENCH_SECONDS` override both):
//!
//! 1. no hook, 1 connection: a fixed request (`post.lua` against `plain.wl`),
//! 2. no hook, 32 connections (wrk with 2 threads),
//! 3. a hook building each request for a random key, 1 connection (`pull.lua`, whose Lua
//!    `request()` calls `wrk.format`, against `hooked.wl`, whose Rhai `request()` builds it),
//! 4. the hook, 32 connections,
//! 5. a request template drawing the random key, 1 connection (`pull.lua` against
//!    `templated.wl`, whose `bind $1` draws it without a script),
//! 6. the template, 32 connections.
//!
//! Targets (issue 33): wlrun at least 0.95x wrk's requests/s in every row, at most 1.1x its
//! client CPU per request (wrk: user + system from the shell's `times` over its request count;
//! wlrun: the report's `client_cpu_s` over its requests); a template at most 0.5 us of CPU per
//! request above the fixed request at the same connections.
//!
//! Then "template cost": the fixed request and the template at 32 connections back to back in
//! each round, the median of the rounds' differences in CPU per request (target <= 0.5 us).
//!
//! Then "open loop", wlrun alone: `plain.wl` at `rate 1000/s fixed` and at `rate 10000/s
//! fixed`, 8 connections, the two rates interleaved, medians of the same runs and seconds. How
//! close to its schedule the runner sends, from the report of each run:
//!
//! - latency p50 − service p50 (µs): the queueing the intended send time adds to the answer,
//! - send lag p50 and p99 (µs): actual send time − intended send time (`send_lag`),
//! - `late_share`: sends more than 1 ms after their intended time, over all sends,
//! - `achieved_rate`: sends over scheduled sends,
//! - client CPU in cores: `client_cpu_s` over `elapsed_s`,
//! - host steal: the share of the machine's CPU time the hypervisor took during the run
//!   (`/proc/stat`): on a VM, a vCPU taken away for milliseconds makes each send due meanwhile
//!   late, so the late share is read against it.
//!
//! A figure the runner does not report (`null` in its JSON) shows as `-`.
//!
//! The fixtures are in benches/requests/: the wrk scripts, the workloads and the Rhai hook; the
//! bench writes them with the port filled in into a temporary directory. nginx is the tests' own
//! (tests/common/nginx.rs and its nginx.conf): one worker process, in its own temporary prefix,
//! on a port it reserves, stopped at the end, also on a panic. Without nginx or wrk, or when
//! 127.0.0.1 cannot be bound, the bench says so and measures nothing.

#[allow(dead_code)] // run_text
#[path = "common/run.rs"]
mod run;

#[path = "common/stats.rs"]
mod stats;

#[path = "common/wrk.rs"]
mod wrk;

#[path = "common/pin.rs"]
mod pin;

#[path = "common/oha.rs"]
mod oha;
use stats::median;
use wrk::{run_wrk, Measured};

#[path = "../tests/common/nginx.rs"]
mod nginx;
use nginx::{find_program, Nginx};

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::time::Duration;

use wlrun::report::{PhaseReport, RequestReport};

const POST_LUA: &str = include_str!("requests/post.lua");
const PULL_LUA: &str = include_str!("requests/pull.lua");
const PULL_RHAI: &str = include_str!("requests/pull.rhai");
const PLAIN_WL: &str = include_str!("requests/plain.wl");
const HOOKED_WL: &str = include_str!("requests/hooked.wl");
const TEMPLATED_WL: &str = include_str!("requests/templated.wl");

/// The body of the fixed request, as post.lua and plain.wl send it.
const BODY: &str =
    r#"{"ksql":"SELECT * FROM ORDERS_TABLE WHERE ORDERID = 42;","streamsProperties":{}}"#;

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

/// One POST /query on a fresh connection: nginx answers it with 200, not 405.
fn check_server(port: u16) -> Result<(), String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    let request = format!(
        "POST /query HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/vnd.ksql.v1+json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{BODY}",
        BODY.len()
    );
    s.write_all(request.as_bytes()).map_err(|e| e.to_string())?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).map_err(|e| e.to_string())?;
    match answer.lines().next() {
        Some(l) if l.starts_with("HTTP/1.1 200") => Ok(()),
        first => Err(format!("POST /query answered {first:?}")),
    }
}

/// The request phase of the workload file, run in this process as `wlrun run` would; says what
/// went wrong in it, and panics on a failed run.
fn run_requests(path: &Path) -> Box<RequestReport> {
    let report = run::run_file(path);
    let r = match report
        .cells
        .into_iter()
        .next()
        .and_then(|c| c.phases.into_iter().next())
    {
        Some(PhaseReport::Requests(r)) => r,
        Some(PhaseReport::NotRun { name, reason }) => {
            panic!("the request run {name} was not run: {reason}")
        }
        _ => panic!("no request phase in the report of {}", path.display()),
    };
    assert!(
        r.failures.is_empty(),
        "the bench run failed: {:?} (statuses {:?}, errors {:?})",
        r.failures,
        r.traffic.statuses,
        r.errors.keys().collect::<Vec<_>>()
    );
    for w in &r.warnings {
        println!("  warning: wlrun {}: {w}", path.display());
    }
    if r.traffic.statuses.keys().any(|s| *s != 200) || r.failed > 0 {
        println!(
            "  warning: wlrun {}: statuses {:?}, {} failed",
            path.display(),
            r.traffic.statuses,
            r.failed
        );
    }
    r
}

/// A closed-loop run's figures, to set beside wrk's.
fn run_wlrun(path: &Path) -> Measured {
    let r = run_requests(path);
    let cpu = r.client_cpu_s.unwrap_or(f64::NAN);
    Measured {
        rps: r.output.rps.unwrap_or(f64::NAN),
        cpu_us_per_request: cpu * 1e6 / (r.ok + r.failed).max(1) as f64,
    }
}

/// How near its schedule an open-loop run sent, from its report; `None`: not reported.
struct OpenLoop {
    /// Latency from the intended send time (what oha's `--latency-correction` reports).
    latency_us: [f64; 3],
    queueing_us: Option<f64>,
    lag_p50_us: Option<f64>,
    lag_p99_us: Option<f64>,
    late_share: Option<f64>,
    achieved_rate: Option<f64>,
    cpu_cores: Option<f64>,
    /// The share of the machine's CPU time the hypervisor took away during the run (steal):
    /// a vCPU taken for milliseconds makes every send due meanwhile late, whatever the client.
    steal: Option<f64>,
}

fn run_open(path: &Path) -> OpenLoop {
    let before = wlrun::exec::observe::proc::machine_steal();
    let r = run_requests(path);
    let steal = match (before, wlrun::exec::observe::proc::machine_steal()) {
        (Some((s0, t0)), Some((s1, t1))) if t1 > t0 => Some((s1 - s0) as f64 / (t1 - t0) as f64),
        _ => None,
    };
    let a = &r.accounting;
    OpenLoop {
        latency_us: [
            r.latency.p50_us as f64,
            r.latency.p99_us as f64,
            r.latency.p999_us as f64,
        ],
        queueing_us: r
            .service
            .as_ref()
            .map(|s| r.latency.p50_us as f64 - s.p50_us as f64),
        lag_p50_us: a.send_lag.as_ref().map(|l| l.p50_us as f64),
        lag_p99_us: a.send_lag.as_ref().map(|l| l.p99_us as f64),
        late_share: a.late_share,
        achieved_rate: a.achieved_rate,
        cpu_cores: r
            .client_cpu_s
            .filter(|_| r.elapsed_s > 0.0)
            .map(|cpu| cpu / r.elapsed_s),
        steal,
    }
}

/// The median over runs that all reported the figure: one run without it leaves it unknown.
fn median_reported(v: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    v.collect::<Option<Vec<f64>>>().map(median)
}

fn show(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.decimals$}"))
}

/// A workload template of benches/requests/ with its placeholders filled in.
fn fill(template: &str, port: u16, connections: u64, seconds: u64, load: &str) -> String {
    template
        .replace("@PORT@", &port.to_string())
        .replace("@CONNECTIONS@", &connections.to_string())
        .replace("@SECONDS@", &seconds.to_string())
        .replace("@LOAD@", load)
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Plain,
    Hook,
    Template,
}

struct Comparison {
    label: &'static str,
    kind: Kind,
    connections: u64,
    wrk_threads: u64,
}

/// Throughput at least this share of wrk's, CPU per request at most this multiple of its.
const RATE_TARGET: f64 = 0.95;
const CPU_TARGET: f64 = 1.1;
/// A template's CPU per request above the fixed request's, microseconds.
const TEMPLATE_TARGET_US: f64 = 0.5;

/// This thread's CPU seconds: what a call costs whatever else the machine runs.
fn thread_cpu_s() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// The CPU cost of one `request(ctx)` call of pull.rhai, in-process: medians of 5 rounds of
/// 100,000 calls (the issue's "about 3.7 µs in Rhai here").
fn hook_call_cost() -> f64 {
    let script = wlrun::hook::Script::compile("pull.rhai", PULL_RHAI).expect("pull.rhai compiles");
    let mut worker = script
        .worker(wlrun::hook::WorkerSpec {
            seed: 7,
            hook: "pull".into(),
            worker: 0,
            workers: 1,
            params: Vec::new(),
        })
        .expect("a hook worker");
    let mut rounds = Vec::new();
    let mut index = 0u64;
    for _ in 0..5 {
        let started = thread_cpu_s();
        for _ in 0..100_000 {
            let built = worker
                .request("request", index, Duration::ZERO)
                .expect("request() runs");
            std::hint::black_box(built);
            index += 1;
        }
        rounds.push((thread_cpu_s() - started) * 1e6 / 100_000.0);
    }
    rounds.sort_by(f64::total_cmp);
    rounds[rounds.len() / 2]
}

fn main() {
    println!(
        "pull.rhai request(ctx), in-process: {:.2} us of CPU per call (median of 5 x 100,000 calls)",
        hook_call_cost()
    );
    let (Some(nginx), Some(wrk)) = (find_program("nginx"), find_program("wrk")) else {
        let missing: Vec<&str> = [
            ("nginx", find_program("nginx")),
            ("wrk", find_program("wrk")),
        ]
        .into_iter()
        .filter(|(_, p)| p.is_none())
        .map(|(n, _)| n)
        .collect();
        println!(
            "requests bench: {} not found (Debian: apt-get install nginx wrk), nothing measured",
            missing.join(" and ")
        );
        return;
    };
    // nginx reserves its own port; this only tells a machine without loopback from a failure.
    if let Err(e) = TcpListener::bind("127.0.0.1:0") {
        println!("requests bench: cannot bind 127.0.0.1 ({e}), nothing measured");
        return;
    }
    let runs = (env_number("WLRUN_BENCH_RUNS", 5) as usize).max(1);
    let seconds = env_number("WLRUN_BENCH_SECONDS", 10);

    let tmp = tempfile::Builder::new()
        .prefix("wlrun-requests-bench")
        .tempdir()
        .expect("a temporary directory");
    let dir = tmp.path().to_path_buf();
    let write = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text).unwrap_or_else(|e| panic!("cannot write {name}: {e}"));
    };
    write("post.lua", POST_LUA);
    write("pull.lua", PULL_LUA);
    write("pull.rhai", PULL_RHAI);

    let server = Nginx::start(&nginx);
    let port = server.port();
    if let Err(e) = check_server(port) {
        panic!("nginx on 127.0.0.1:{port}: {e}\n{}", server.logs());
    }

    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    // Client (this process, wrk and the run) on core 0, nginx on core 1.
    println!("{}", pin::pin(0, server.pid(), 1));
    println!(
        "POST /query (a ksqlDB pull query) to nginx {} on 127.0.0.1:{port}, 1 worker process, return 200 '[]'",
        nginx.display()
    );
    println!("{cores} cores; {seconds} s per run, medians of {runs} interleaved runs");
    println!(
        "fixtures: benches/requests/ (written with the port filled in to {}), nginx prefix {}",
        dir.display(),
        server.prefix().display()
    );

    let comparison = |label, kind, connections, wrk_threads| Comparison {
        label,
        kind,
        connections,
        wrk_threads,
    };
    let comparisons = [
        comparison("no hook, 1 connection", Kind::Plain, 1, 1),
        comparison("no hook, 32 connections", Kind::Plain, 32, 2),
        comparison("hook, 1 connection", Kind::Hook, 1, 1),
        comparison("hook, 32 connections", Kind::Hook, 32, 2),
        comparison("template, 1 connection", Kind::Template, 1, 1),
        comparison("template, 32 connections", Kind::Template, 32, 2),
    ];
    let url = format!("http://127.0.0.1:{port}/query");
    let mut rows = Vec::new();
    let mut commands = Vec::new();
    for (i, c) in comparisons.iter().enumerate() {
        let (template, script) = match c.kind {
            Kind::Plain => (PLAIN_WL, "post.lua"),
            Kind::Hook => (HOOKED_WL, "pull.lua"),
            Kind::Template => (TEMPLATED_WL, "pull.lua"),
        };
        let workload = dir.join(format!("run{}.wl", i + 1));
        std::fs::write(&workload, fill(template, port, c.connections, seconds, ""))
            .expect("the workload is written");
        let command = format!(
            "{} -t{} -c{} -d{seconds}s -s {script} {url}",
            wrk.display(),
            c.wrk_threads,
            c.connections
        );
        println!("{}: {command}  |  wlrun {}", c.label, workload.display());
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for run in 0..runs {
            // Alternate which goes first, so that neither always runs on a warmer machine.
            if run % 2 == 0 {
                ours.push(run_wlrun(&workload));
                theirs.push(run_wrk(&dir, &command));
            } else {
                theirs.push(run_wrk(&dir, &command));
                ours.push(run_wlrun(&workload));
            }
            let (o, t) = (ours.last().unwrap(), theirs.last().unwrap());
            println!(
                "  run {}: wlrun {:.0} req/s {:.1} us CPU/req, wrk {:.0} req/s {:.1} us CPU/req",
                run + 1,
                o.rps,
                o.cpu_us_per_request,
                t.rps,
                t.cpu_us_per_request
            );
        }
        let m = |v: &[Measured], f: fn(&Measured) -> f64| median(v.iter().map(f).collect());
        rows.push((
            c,
            m(&ours, |x| x.rps),
            m(&ours, |x| x.cpu_us_per_request),
            m(&theirs, |x| x.rps),
            m(&theirs, |x| x.cpu_us_per_request),
        ));
        commands.push(command);
    }

    println!();
    println!(
        "{:<26} {:>12} {:>12} {:>12} {:>12} {:>9} {:>9}",
        "", "wlrun req/s", "wlrun us/req", "wrk req/s", "wrk us/req", "req/s", "CPU/req"
    );
    for (c, o_rps, o_cpu, t_rps, t_cpu) in &rows {
        let (rate, cpu) = (o_rps / t_rps, o_cpu / t_cpu);
        let mut below = Vec::new();
        if rate < RATE_TARGET {
            below.push(format!("req/s below {RATE_TARGET}x"));
        }
        if cpu > CPU_TARGET {
            below.push(format!("CPU above {CPU_TARGET}x"));
        }
        println!(
            "{:<26} {o_rps:>12.0} {o_cpu:>12.1} {t_rps:>12.0} {t_cpu:>12.1} {rate:>8.2}x {cpu:>8.2}x  {}",
            c.label,
            below.join(", ")
        );
    }
    println!("(us/req: client CPU microseconds per request, user + system)");
    println!("wrk commands (run in {}):", dir.display());
    for c in &commands {
        println!("  {c}");
    }

    // run2.wl and run6.wl: the fixed request and the template, 32 connections.
    template_cost(&dir.join("run2.wl"), &dir.join("run6.wl"), runs);
    open_loop(&dir, port, seconds, runs, &url);
    drop(server);
}

/// What a template costs above the fixed request: the two run back to back in each round (the
/// machine's load moves CPU per request more between the comparisons above than a template
/// adds), the median of the rounds' differences.
fn template_cost(plain: &Path, templated: &Path, runs: usize) {
    println!();
    println!(
        "template cost: {} then {} (alternating), 32 connections",
        plain.display(),
        templated.display()
    );
    let mut diffs = Vec::new();
    for run in 0..runs {
        let (p, t) = if run % 2 == 0 {
            let p = run_wlrun(plain);
            (p, run_wlrun(templated))
        } else {
            let t = run_wlrun(templated);
            (run_wlrun(plain), t)
        };
        let d = t.cpu_us_per_request - p.cpu_us_per_request;
        println!(
            "  run {}: fixed {:.2} us CPU/req ({:.0} req/s), template {:.2} ({:.0} req/s): {d:+.2} us",
            run + 1,
            p.cpu_us_per_request,
            p.rps,
            t.cpu_us_per_request,
            t.rps
        );
        diffs.push(d);
    }
    let d = median(diffs);
    println!(
        "template above the fixed request: {d:+.2} us CPU/req, median of {runs} rounds (target <= {TEMPLATE_TARGET_US}){}",
        if d > TEMPLATE_TARGET_US { "  ABOVE" } else { "" }
    );
}

/// The "open loop" section: plain.wl at two fixed rates on 8 connections (oha's comparison),
/// interleaved.
fn open_loop(dir: &Path, port: u16, seconds: u64, runs: usize, url: &str) {
    const RATES: [u64; 2] = [1000, 10_000];
    let oha = oha::find_oha();
    println!();
    match &oha {
        Some(p) => println!(
            "oha: {} (the same rate, 8 connections, --latency-correction)",
            p.display()
        ),
        None => {
            println!("oha: not found (cargo install oha --locked --root target/oha), wlrun alone")
        }
    }
    println!(
        "open loop: plain.wl at a fixed rate, 8 connections, {seconds} s per run, medians of {runs} interleaved runs"
    );
    let workloads: Vec<_> = RATES
        .iter()
        .map(|rate| {
            let path = dir.join(format!("open{rate}.wl"));
            let load = format!("rate {rate}/s fixed");
            std::fs::write(&path, fill(PLAIN_WL, port, 8, seconds, &load))
                .expect("the workload is written");
            println!("  {load}: wlrun {}", path.display());
            path
        })
        .collect();
    let mut measured: Vec<Vec<OpenLoop>> = RATES.iter().map(|_| Vec::new()).collect();
    let mut peer: Vec<Vec<oha::OhaMeasured>> = RATES.iter().map(|_| Vec::new()).collect();
    for run in 0..runs {
        // Alternate which rate goes first, so that neither always runs on a warmer machine.
        let mut order: Vec<usize> = (0..RATES.len()).collect();
        if run % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let oha_run = || {
                oha.as_ref()
                    .map(|p| oha::run_oha(p, url, BODY, RATES[i], 8, seconds))
            };
            let before = if run % 2 == 1 { oha_run() } else { None };
            let m = run_open(&workloads[i]);
            if let Some(o) = before.or_else(|| if run % 2 == 0 { oha_run() } else { None }) {
                println!(
                    "  run {} at {}/s: oha latency p50 {:.0} p99 {:.0} p99.9 {:.0} us, {:.0} requests, {:.3} cores",
                    run + 1,
                    RATES[i],
                    o.p50_us,
                    o.p99_us,
                    o.p999_us,
                    o.requests,
                    o.cores
                );
                peer[i].push(o);
            }
            println!(
                "  run {} at {}/s: latency-service p50 {} us, send lag p50 {} p99 {} us, late {}, achieved {}, {} cores, host steal {}",
                run + 1,
                RATES[i],
                show(m.queueing_us, 0),
                show(m.lag_p50_us, 0),
                show(m.lag_p99_us, 0),
                show(m.late_share, 4),
                show(m.achieved_rate, 4),
                show(m.cpu_cores, 3),
                show(m.steal, 4)
            );
            measured[i].push(m);
        }
    }

    println!();
    println!(
        "{:<12} {:>16} {:>12} {:>12} {:>11} {:>14} {:>8} {:>8}",
        "rate",
        "lat-svc p50 us",
        "lag p50 us",
        "lag p99 us",
        "late_share",
        "achieved_rate",
        "cores",
        "steal"
    );
    for (rate, runs) in RATES.iter().zip(&measured) {
        let m = |f: fn(&OpenLoop) -> Option<f64>| median_reported(runs.iter().map(f));
        println!(
            "{:<12} {:>16} {:>12} {:>12} {:>11} {:>14} {:>8} {:>8}",
            format!("{rate}/s"),
            show(m(|x| x.queueing_us), 0),
            show(m(|x| x.lag_p50_us), 0),
            show(m(|x| x.lag_p99_us), 0),
            show(m(|x| x.late_share), 4),
            show(m(|x| x.achieved_rate), 4),
            show(m(|x| x.cpu_cores), 3),
            show(m(|x| x.steal), 4)
        );
    }
    for (i, rate) in RATES.iter().enumerate() {
        let ours = &measured[i];
        let lag99 = median_reported(ours.iter().map(|x| x.lag_p99_us));
        let late = median_reported(ours.iter().map(|x| x.late_share));
        if *rate == 10_000 {
            println!(
                "targets at 10000/s (issue 33): send lag p99 {} us (< 1000){}, late {} (<= 0.01){}",
                show(lag99, 0),
                if lag99.is_some_and(|v| v < 1000.0) {
                    ""
                } else {
                    "  MISSED"
                },
                show(late, 4),
                if late.is_some_and(|v| v <= 0.01) {
                    ""
                } else {
                    "  MISSED"
                }
            );
        }
        if peer[i].is_empty() {
            continue;
        }
        let theirs = &peer[i];
        let m_ours = |k: usize| median(ours.iter().map(|x| x.latency_us[k]).collect());
        let m_theirs = |f: fn(&oha::OhaMeasured) -> f64| median(theirs.iter().map(f).collect());
        let cores = median_reported(ours.iter().map(|x| x.cpu_cores));
        let oha_cores = m_theirs(|x| x.cores);
        println!(
            "{rate}/s vs oha: latency p50 {:.0} vs {:.0} us ({:.2}x), p99 {:.0} vs {:.0} ({:.2}x), p99.9 {:.0} vs {:.0} ({:.2}x); cores {} vs {oha_cores:.3} ({})",
            m_ours(0),
            m_theirs(|x| x.p50_us),
            m_ours(0) / m_theirs(|x| x.p50_us),
            m_ours(1),
            m_theirs(|x| x.p99_us),
            m_ours(1) / m_theirs(|x| x.p99_us),
            m_ours(2),
            m_theirs(|x| x.p999_us),
            m_ours(2) / m_theirs(|x| x.p999_us),
            show(cores, 3),
            cores.map_or("-".into(), |c| format!("{:.2}x", c / oha_cores)),
        );
    }
    println!("(lat-svc: latency p50 minus service p50; lag: actual minus intended send time;");
    println!(
        " late_share: sends over 1 ms late; achieved_rate: sent over scheduled; cores: client CPU s/s;"
    );
    println!(
        " steal: the share of the machine's CPU time the hypervisor took during the run, late sends whatever the client; -: not reported)"
    );
}
