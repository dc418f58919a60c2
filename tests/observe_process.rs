//! `observe process`: the server's figures checked against servers that know the truth.
//!
//! The oracle is a small HTTP server (python3) that burns CPU on every request, in itself and
//! in a child that burns, exits and is reaped between two samples, and writes its own
//! getrusage (self + reaped children, nanosecond-exact) when it is ready and after every
//! answer: the CPU it spent over the run is known without /proc. PostgreSQL is the system's
//! cluster; its backends' CPU is read from /proc by the test itself, independently.

#[path = "common/cli.rs"]
mod cli;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A process name (comm, at most 15 bytes) only this test's oracle has, for `named`.
fn oracle_name() -> String {
    format!("wlo-{}", std::process::id())
}

const ORACLE: &str = r#"
import os, resource, socket, sys, time
parent_ms, child_ms, truth = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
with open("/proc/self/comm", "w") as f:
    f.write(sys.argv[4])
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
}

impl Oracle {
    fn start(dir: &Path, parent_ms: u32, child_ms: u32) -> Oracle {
        let truth = dir.join("truth");
        let mut child = Command::new("python3")
            .args(["-c", ORACLE, &parent_ms.to_string(), &child_ms.to_string()])
            .arg(&truth)
            .arg(oracle_name())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs (scripts/test installs it)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the oracle's port");
        Oracle { child, port, truth }
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
            _ => format!("observe process named {:?}", oracle_name()),
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
