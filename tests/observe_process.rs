//! `observe process`: the server's figures checked against servers that know the truth.
//!
//! The oracle is a small HTTP server (python3) that burns CPU on every request, in itself and
//! in a child that burns, exits and is reaped between two samples, and writes its own
//! getrusage (self + reaped children, nanosecond-exact) when it is ready and after every
//! answer: the CPU it spent over the run is known without /proc. PostgreSQL is the system's
//! cluster; its backends' CPU is read from /proc by the test itself, independently.

#[path = "common/cli.rs"]
mod cli;
#[path = "common/servers.rs"]
mod servers;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A process name (comm, at most 15 bytes) only this oracle has, for `named`: the tests of
/// this file run their oracles at the same time, so the test process's id alone is not enough.
fn oracle_name() -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("wlo-{}-{n}", std::process::id() % 10_000_000)
}

const ORACLE: &str = r#"
import os, resource, socket, sys, time
parent_ms, child_ms, truth = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
with open("/proc/self/comm", "w") as f:
    f.write(sys.argv[4])
# Idle children forked first: the working children's pids come after theirs, so /proc is read
# a while between the oracle and a working child, the span in which a reaping races a reading.
me = os.getpid()
for _ in range(int(sys.argv[5])):
    if os.fork() == 0:
        while os.getppid() == me:
            time.sleep(0.2)
        os._exit(0)
def burn(ms):
    end = time.process_time() + ms / 1000.0
    while time.process_time() < end:
        pass
def used():
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
def record(first, n):
    with open(truth + ".tmp", "w") as f:
        f.write("%r %r %d\n" % (first, used(), n))
    os.replace(truth + ".tmp", truth)
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(16)
first = used()
record(first, 0)
print(srv.getsockname()[1], flush=True)
n = 0
while True:
    conn, _ = srv.accept()
    f = conn.makefile("rb")
    while True:
        line = f.readline()
        if not line:
            break
        while f.readline() not in (b"\r\n", b"\n", b""):
            pass
        burn(parent_ms)
        pid = os.fork()
        if pid == 0:
            burn(child_ms)
            os._exit(0)
        os.waitpid(pid, 0)
        n += 1
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        record(first, n)
    conn.close()
"#;

struct Oracle {
    child: Child,
    port: u16,
    truth: std::path::PathBuf,
    name: String,
}

impl Oracle {
    fn start(dir: &Path, parent_ms: u32, child_ms: u32) -> Oracle {
        Oracle::with_idle(dir, parent_ms, child_ms, 0)
    }

    /// An oracle with `idle` children that only wait, forked before it serves.
    fn with_idle(dir: &Path, parent_ms: u32, child_ms: u32, idle: u32) -> Oracle {
        let truth = dir.join("truth");
        let name = oracle_name();
        let mut child = Command::new("python3")
            .args(["-c", ORACLE, &parent_ms.to_string(), &child_ms.to_string()])
            .arg(&truth)
            .arg(&name)
            .arg(idle.to_string())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs (scripts/test installs it)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the oracle's port");
        Oracle {
            child,
            port,
            truth,
            name,
        }
    }

    /// CPU seconds the oracle spent from ready to its last answer, and the requests answered.
    fn truth(&self) -> (f64, u64) {
        let text = std::fs::read_to_string(&self.truth).unwrap();
        let v: Vec<&str> = text.split_whitespace().collect();
        let first: f64 = v[0].parse().unwrap();
        let last: f64 = v[1].parse().unwrap();
        (last - first, v[2].parse().unwrap())
    }
}

impl Drop for Oracle {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn workload(port: u16, observe: &str) -> String {
    format!(
        r#"
target oracle {{
  http "http://127.0.0.1:{port}"
  {observe}
}}
run burn {{
  against oracle.http
  request GET "/"
  connections 1
  count 40
  expect status 200
}}
"#
    )
}

fn server_of(phase: &serde_json::Value) -> &serde_json::Value {
    let s = &phase["server"];
    assert!(s.is_object(), "no server object in {phase:#}");
    s
}

/// The CPU the oracle's own getrusage counted (its children, each reaped before the next
/// sample, included) is what the report says, within 5%, by each way of finding the process.
#[test]
fn the_oracle_s_cpu_is_reported_within_five_percent() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("oracle.pid");
    for how in ["listening", "pidfile", "named"] {
        let oracle = Oracle::start(dir.path(), 10, 30);
        std::fs::write(&pidfile, format!("{}\n", oracle.child.id())).unwrap();
        let clause = match how {
            "listening" => "observe process listening http".to_string(),
            "pidfile" => format!(
                "observe process pidfile {:?}",
                pidfile.display().to_string()
            ),
            // Its children carry the name too: the root is the one whose parent does not.
            _ => format!("observe process named {:?}", oracle.name),
        };
        let (code, report, err) =
            cli::run_json_in(dir.path(), &workload(oracle.port, &clause), &[]);
        assert_eq!(code, 0, "{err}");
        let phase = &report["cells"][0]["phases"][0];
        let server = server_of(phase);
        let (truth, answered) = oracle.truth();
        assert_eq!(answered, 40);
        assert!(truth > 1.0, "the oracle burned {truth}s");
        let cpu = server["cpu_s"].as_f64().unwrap();
        eprintln!("{how}: reported {cpu:.4}s, the oracle's getrusage {truth:.4}s");
        assert!(
            (cpu - truth).abs() <= 0.05 * truth,
            "{how}: reported {cpu}s, the oracle's getrusage says {truth}s\n{server:#}"
        );
        let user = server["cpu_user_s"].as_f64().unwrap();
        let system = server["cpu_system_s"].as_f64().unwrap();
        assert!((user + system - cpu).abs() < 1e-9);
        assert_eq!(server["observed"][0]["pid"], oracle.child.id(), "{how}");
        assert_eq!(server["unit"], "request");
        let per = server["cpu_us_per_unit"].as_f64().unwrap();
        assert!((per - cpu * 1e6 / 40.0).abs() < 1e-6 * per.max(1.0));
        assert!(server["threads_max"].as_u64().unwrap() >= 1);
        assert!(server["rss_peak_bytes"].as_u64().unwrap() > 1_000_000);
        // Root: the IO counters are readable.
        assert!(server["read_bytes"].is_u64(), "{server:#}");
    }
}

/// A server whose children (100 ms of CPU each) end all the time, read every 10 ms: a child reaped while /proc is
/// being read (its parent read before, itself after) is in no counter of that reading and in
/// its parent's `cutime` in the next. Its time counts once: the oracle's getrusage is what the
/// report says, within 5%. (Counting only the rises counted such children twice: PostgreSQL's
/// CPU was reported 0.98 s against 0.59 s spent, with other clients' backends ending.)
#[test]
fn children_reaped_while_proc_is_read_count_once() {
    let dir = tempfile::tempdir().unwrap();
    let oracle = Oracle::with_idle(dir.path(), 0, 100, 300);
    let text =
        workload(oracle.port, "observe process listening http").replace("count 40", "count 30");
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    let (code, report, err) =
        cli::run_json_in(dir.path(), &text, &["--out", out, "--interval", "0.01"]);
    assert_eq!(code, 0, "{err}");
    let server = server_of(&report["cells"][0]["phases"][0]);
    let (truth, answered) = oracle.truth();
    assert_eq!(answered, 30);
    let cpu = server["cpu_s"].as_f64().unwrap();
    eprintln!(
        "reported {cpu:.3}s over {} samples, the oracle's getrusage {truth:.3}s",
        server["samples"]
    );
    assert!(
        server["processes_max"].as_u64().unwrap() > 300,
        "{server:#}"
    );
    assert!(
        (cpu - truth).abs() <= 0.05 * truth,
        "reported {cpu}s, the oracle's getrusage says {truth}s\n{server:#}"
    );
}

/// A member of a `concurrent` group is observed over its own span as a phase alone is: the
/// oracle's getrusage is what the report says, within 5%, and the report says that the server's
/// CPU is shared with the members beside it.
#[test]
fn a_concurrent_member_s_server_is_observed() {
    let dir = tempfile::tempdir().unwrap();
    let oracle = Oracle::start(dir.path(), 10, 30);
    let text = format!(
        r#"{}
target local {{
  sqlite "side.db"
}}
query one {{ sql "SELECT 1" }}
run side {{
  against local.sqlite
  queries one
  workers 1
  duration 1h
}}
concurrent mixed {{ phases burn, side  until burn }}
"#,
        workload(oracle.port, "observe process listening http")
    );
    let (code, report, err) = cli::run_json_in(dir.path(), &text, &[]);
    assert_eq!(code, 0, "{err}");
    let phases = report["cells"][0]["phases"].as_array().unwrap();
    let burn = phases.iter().find(|p| p["name"] == "burn").unwrap();
    let server = server_of(burn);
    let (truth, answered) = oracle.truth();
    assert_eq!(answered, 40);
    let cpu = server["cpu_s"].as_f64().unwrap();
    assert!(
        (cpu - truth).abs() <= 0.05 * truth,
        "reported {cpu}s, the oracle's getrusage says {truth}s\n{server:#}"
    );
    let warnings = burn["warnings"].to_string();
    assert!(
        warnings
            .contains("the observed server's whole CPU over this phase's span, shared with side"),
        "{warnings}"
    );
    // The member beside it observes nothing: its target names no server.
    let side = phases.iter().find(|p| p["name"] == "side").unwrap();
    assert!(side["server"].is_null(), "{side:#}");
}

/// A process that cannot be found leaves a warning, the phase's figures, and no failure.
#[test]
fn a_process_not_found_is_a_warning_not_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let oracle = Oracle::start(dir.path(), 0, 0);
    let clause = "observe process pidfile \"/nonexistent/wlrun.pid\"";
    let (code, report, err) = cli::run_json_in(dir.path(), &workload(oracle.port, clause), &[]);
    assert_eq!(code, 0, "{err}");
    let phase = &report["cells"][0]["phases"][0];
    assert_eq!(phase["ok"], 40);
    let warnings = phase["warnings"].to_string();
    assert!(
        warnings.contains("cannot read the pid file /nonexistent/wlrun.pid"),
        "{warnings}"
    );
}

/// One process's line of /proc/PID/stat: its parent, start time and CPU ticks (own and
/// reaped children's).
struct ProcStat {
    pid: u32,
    ppid: u32,
    start: u64,
    ticks: u64,
}

fn proc_stats() -> Vec<ProcStat> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the command's closing parenthesis, from field 3 (state) on.
        let rest: Vec<&str> = text[text.rfind(')').unwrap() + 2..]
            .split_whitespace()
            .collect();
        let n = |field: usize| -> u64 { rest[field - 3].parse().unwrap() };
        all.push(ProcStat {
            pid,
            ppid: n(4) as u32,
            start: n(22),
            ticks: n(14) + n(15) + n(16) + n(17),
        });
    }
    all
}

/// The tree under `root` (itself included): (pid, start) of each, and its CPU ticks summed,
/// utime + stime + cutime + cstime, so that a backend that exits keeps counting in its parent.
fn tree_ticks(root: u32) -> (Vec<(u32, u64)>, u64) {
    let all = proc_stats();
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(all.iter().filter(|p| p.ppid == parent).map(|p| p.pid));
        i += 1;
    }
    let members: Vec<&ProcStat> = all.iter().filter(|p| tree.contains(&p.pid)).collect();
    (
        members.iter().map(|p| (p.pid, p.start)).collect(),
        members.iter().map(|p| p.ticks).sum(),
    )
}

fn readings(root: u32) -> Vec<(Vec<(u32, u64)>, u64)> {
    (0..3)
        .map(|_| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            tree_ticks(root)
        })
        .collect()
}

/// The postmaster of the test server, found without wlrun: the parent of this connection's
/// backend. `None` (a failure under CI=true) when PostgreSQL cannot be reached.
fn postmaster() -> Option<u32> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let url = servers::pg_server().await?;
        let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        let row = client
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap();
        let backend = row.get::<_, i32>(0) as u32;
        let ppid = proc_stats()
            .into_iter()
            .find(|p| p.pid == backend)
            .expect("the backend is on this machine")
            .ppid;
        Some(ppid)
    })
}

/// A real PostgreSQL COPY ingest, observed by the port its endpoint names: the server's CPU is
/// above zero and at most what the test reads from /proc over a span containing the run's (the
/// cluster is shared with tests running at once, so never compared the other way), and its
/// processes are the postmaster, its workers and the ingest's backends.
#[test]
fn a_postgresql_ingest_shows_its_backends_cpu() {
    let Some(postmaster) = postmaster() else {
        return;
    };
    let url = servers::pg_url();
    let dir = tempfile::tempdir().unwrap();
    for workers in [1u64, 4] {
        let table = format!("wlrun_observe_{}_{workers}", std::process::id());
        let text = format!(
            r#"
workload w {{ seed 7 }}
target db {{
  pg "{url}"
  observe process listening pg
}}
schema s {{
  table "{table}"
  series host: symbol = format("h%d", n) for n in 0..100
  field usage_user: double = uniform(0, 100)
  field usage_system: double = uniform(0, 100)
  field v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 400s
}}
ingest load {{
  into db via pg  rows s  batch 1000 rows  workers {workers}  rate 16000/s  teardown drop
}}
"#
        );
        // A reading racing a backend's reaping misses that backend (see
        // children_reaped_while_proc_is_read_count_once): the span's ends are the lowest of
        // three readings before and the highest of three after, so the bound only widens.
        let (before_procs, before) = readings(postmaster)
            .into_iter()
            .min_by_key(|r| r.1)
            .unwrap();
        let (code, report, err) = cli::run_json_in(dir.path(), &text, &[]);
        let (after_procs, after) = readings(postmaster)
            .into_iter()
            .max_by_key(|r| r.1)
            .unwrap();
        assert_eq!(code, 0, "{err}");
        let phase = &report["cells"][0]["phases"][0];
        assert_eq!(phase["rows_sent"], 40_000, "{phase:#}");
        let server = server_of(phase);
        assert_eq!(server["observed"][0]["pid"], postmaster, "{server:#}");
        assert_eq!(server["unit"], "row");
        let cpu = server["cpu_s"].as_f64().unwrap();
        let tck = 100.0; // USER_HZ on Linux
        let seen = (after - before) as f64 / tck;
        let client = phase["client_cpu_s"].as_f64().unwrap() * 1e6 / 40_000.0;
        eprintln!(
            "workers {workers}: server cpu {cpu:.3}s ({} us/row), /proc around the run {seen:.3}s; \
             client {client:.2} us/row",
            server["cpu_us_per_unit"]
        );
        assert!(cpu > 0.0, "{server:#}");
        // The report's ticks are the same counters read within the test's span; a process
        // that ended between wlrun's listing and its read may count once more, a tick or two.
        assert!(
            cpu <= seen + 0.05,
            "workers {workers}: wlrun says the server spent {cpu}s, /proc says {seen}s over a \
             span containing the run\n{server:#}"
        );
        // The postmaster's own workers (checkpointer, background writer, ...) that lived
        // through the run, the postmaster, and the ingest's backends, one per worker: the
        // schedule (2.5 s) keeps them open across a sample taken between the span's ends,
        // which are taken before they connect and after they close.
        let lasting = before_procs
            .iter()
            .filter(|p| p.0 != postmaster && after_procs.contains(p))
            .count() as u64;
        let processes = server["processes_max"].as_u64().unwrap();
        assert!(
            processes >= lasting + 1 + workers,
            "workers {workers}: {processes} processes, the postmaster has {lasting} lasting \
             children\n{server:#}"
        );
    }
}

/// With `--out`, the server's samples over the measured span are a series file: one line per
/// interval, its CPU adding up to report.json's `server.cpu_s` and to the oracle's own
/// getrusage (each within 10%), this client's CPU on the same lines, and the page drawing both.
#[test]
fn the_server_series_file_adds_up_to_the_reported_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let oracle = Oracle::start(dir.path(), 10, 30);
    let text = workload(oracle.port, "observe process listening http");
    let out = cli::run_out(dir.path(), &text, &["--interval", "0.2"]);
    assert_eq!(out.code, 0, "{}", out.printed());
    let phase = out.phase();
    let cpu = server_of(&phase)["cpu_s"].as_f64().unwrap();
    let series = std::fs::read_to_string(dir.path().join("res/series/1-burn.server.csv"))
        .unwrap_or_else(|e| panic!("no server series ({e}): {}", out.printed()));
    let mut lines = series.lines();
    assert_eq!(
        lines.next(),
        Some("t_s,span_s,server_cores,client_cores,rss_bytes,processes")
    );
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    // 40 requests of 40 ms of the oracle's CPU each: 1.6 s, several 0.2 s intervals.
    assert!(rows.len() >= 4, "{series}");
    let mut t = 0.0;
    for r in &rows {
        assert!(
            (r[0] - (t + r[1])).abs() < 1e-5,
            "t_s is the interval's end: {series}"
        );
        t = r[0];
        assert!(r[4] > 1_000_000.0 && r[5] >= 1.0, "{series}");
    }
    let summed: f64 = rows.iter().map(|r| r[2] * r[1]).sum();
    assert!(
        (summed - cpu).abs() <= 0.1 * cpu,
        "the series sums to {summed}s, report.json says {cpu}s\n{series}"
    );
    // And to what the oracle's getrusage says it spent: the lines measure the server.
    let (truth, answered) = oracle.truth();
    assert_eq!(answered, 40);
    eprintln!(
        "server series: {summed:.4}s over {} intervals, report {cpu:.4}s, oracle {truth:.4}s",
        rows.len()
    );
    assert!(
        (summed - truth).abs() <= 0.1 * truth,
        "the series sums to {summed}s, the oracle's getrusage says {truth}s\n{series}"
    );
    assert!(rows.iter().any(|r| r[2] > 0.2), "{series}");
    assert!(
        rows.iter().any(|r| r[3] > 0.0),
        "the client's CPU: {series}"
    );
    let page = std::fs::read_to_string(dir.path().join("res/report.html")).unwrap();
    assert!(page.contains("aria-label=\"Client and server CPU over time\""));
}
