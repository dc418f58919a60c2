//! Live metrics (`--metrics-listen`, `--metrics-push`, docs/metrics.md) read by the real
//! consumers: Debian's Prometheus scraping a run, its `promtool` linting a scraped body, and
//! its Pushgateway holding the final push; the final figures are report.json's. Each server is
//! started by the test on a free port of its own; missing, the test skips, or fails under
//! CI=true (scripts/test installs them).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const PROMETHEUS: &str = "/usr/bin/prometheus";
const PROMTOOL: &str = "/usr/bin/promtool";
const PUSHGATEWAY: &str = "/usr/bin/prometheus-pushgateway";

/// A 3 s open-loop query run on SQLite after a 2 s paced ingest into `null`: both kinds of
/// phase, and unsent queries are possible (the report's figure is what must show).
const WORKLOAD: &str = r#"
workload live { seed 7 }
schema s {
  series host: symbol = format("h%d", n) for n in 0..10
  field  v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1d
}
target sink { null }
target db { sqlite "db.sqlite" }
ingest load { into sink via null  rows s  batch 100 rows  rate 2000/s  duration 2s }
query one { sql "SELECT 1" }
run reads { against db.sqlite  queries one  workers 1  duration 3s  rate 200/s }
"#;

fn present(binary: &str) -> bool {
    if Path::new(binary).exists() {
        return true;
    }
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "{binary} is missing, and CI=true requires it (scripts/test installs it)"
    );
    eprintln!("skipped: {binary} is missing (scripts/test installs it)");
    false
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Kills the child when the test ends, passed or not.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_listening(port: u16, what: &str) {
    let up = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(up, "{what} did not listen on {port}");
}

/// A GET with `accept`: the status line's code, the content type and the body.
fn get(port: u16, path: &str, accept: Option<&str>) -> (u16, String, String) {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    write!(
        c,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{accept}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    c.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let code = head.split(' ').nth(1).unwrap().parse().unwrap();
    let ctype = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-type:")
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_default();
    (code, ctype, body.to_string())
}

/// `wlrun run` of `WORKLOAD` in `dir` with `--out dir/run` and `flags`, started; its standard
/// error's lines come through the receiver as they are printed.
fn start_wlrun(dir: &Path, flags: &[&str]) -> (Killed, mpsc::Receiver<String>) {
    std::fs::write(dir.join("w.wl"), WORKLOAD).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .current_dir(dir)
        .args([
            "run",
            "w.wl",
            "--quiet",
            "--out",
            "run",
            "--interval",
            "0.2",
        ])
        .args(flags)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (Killed(child), rx)
}

/// Waits for a line of standard error holding `needle` and returns it.
fn line_with(rx: &mpsc::Receiver<String>, needle: &str, seen: &mut Vec<String>) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        seen.push(line.clone());
        if line.contains(needle) {
            return line;
        }
    }
    panic!("no line with `{needle}` on standard error: {seen:#?}");
}

fn port_of(line: &str) -> u16 {
    line.rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/metrics")
        .parse()
        .unwrap()
}

fn finish(child: Killed) {
    let mut child = child;
    let status = child.0.wait().unwrap();
    assert!(status.success(), "wlrun exited with {status}");
}

fn report(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("run/report.json")).unwrap()).unwrap()
}

/// (ok of the query run, rows_sent of the ingest) in report.json.
fn report_figures(r: &serde_json::Value) -> (u64, u64) {
    let phases = &r["cells"][0]["phases"];
    let find = |name: &str| {
        phases
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()
            .clone()
    };
    (
        find("reads")["ok"].as_u64().unwrap(),
        find("load")["rows_sent"].as_u64().unwrap(),
    )
}

/// The value of the sample of `name` whose labels include `phase="PHASE"`, in a text body.
fn sample(body: &str, name: &str, phase: &str) -> Option<f64> {
    body.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .find(|l| l.contains(&format!("phase=\"{phase}\"")))
        .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
}

#[test]
fn the_last_scrape_serves_report_figures_in_both_formats_and_promtool_finds_nothing() {
    if !present(PROMTOOL) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (child, rx) = start_wlrun(
        dir.path(),
        &["--metrics-listen", "127.0.0.1:0", "--metrics-linger", "3s"],
    );
    let mut seen = Vec::new();
    let port = port_of(&line_with(&rx, "metrics: serving http://", &mut seen));
    // While the run goes on: OpenMetrics by default.
    std::thread::sleep(Duration::from_millis(1500));
    let (code, ctype, live) = get(port, "/metrics", None);
    assert_eq!(code, 200);
    assert_eq!(
        ctype,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    assert!(live.ends_with("# EOF\n"), "{live}");
    assert_eq!(get(port, "/nothing", None).0, 404);
    line_with(&rx, "serving the final figures", &mut seen);
    let (_, _, om) = get(port, "/metrics", Some("application/openmetrics-text"));
    let (_, ctype, text) = get(port, "/metrics", Some("text/plain;version=0.0.4"));
    assert_eq!(ctype, "text/plain; version=0.0.4; charset=utf-8");
    assert!(!text.contains("# EOF"));
    finish(child);
    let (ok, rows_sent) = report_figures(&report(dir.path()));
    for body in [&om, &text] {
        assert_eq!(
            sample(body, "wlrun_requests_ok_total", "reads"),
            Some(ok as f64)
        );
        assert_eq!(
            sample(body, "wlrun_rows_sent_total", "load"),
            Some(rows_sent as f64)
        );
        assert_eq!(sample(body, "wlrun_phase_finished", "reads"), Some(1.0));
    }
    assert_eq!(
        sample(&text, "wlrun_latency_seconds_count", "reads"),
        Some(ok as f64),
        "every successful query in the histogram"
    );
    let mut lint = Command::new(PROMTOOL)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    lint.stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = lint.wait_with_output().unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn prometheus_scrapes_a_run_and_its_last_ok_is_the_reports() {
    if !present(PROMETHEUS) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (child, rx) = start_wlrun(
        dir.path(),
        &["--metrics-listen", "127.0.0.1:0", "--metrics-linger", "3s"],
    );
    let mut seen = Vec::new();
    let target = port_of(&line_with(&rx, "metrics: serving http://", &mut seen));
    let prom_port = free_port();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 250ms\n  scrape_timeout: 200ms\n\
             scrape_configs:\n  - job_name: wlrun\n    static_configs:\n      \
             - targets: ['127.0.0.1:{target}']\n"
        ),
    )
    .unwrap();
    let prometheus = Killed(
        Command::new(PROMETHEUS)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_listening(prom_port, "prometheus");
    line_with(&rx, "serving the final figures", &mut seen);
    finish(child);
    let (ok, rows_sent) = report_figures(&report(dir.path()));
    // The target is gone by now and its series marked stale: the last sample of each is
    // read over a range, which skips the staleness markers.
    let query = |q: &str| -> Option<f64> {
        let path = format!(
            "/api/v1/query?query={}",
            q.replace('[', "%5B")
                .replace(']', "%5D")
                .replace('{', "%7B")
                .replace('}', "%7D")
                .replace('"', "%22")
                .replace('=', "%3D")
        );
        let (code, _, body) = get(prom_port, &path, None);
        assert_eq!(code, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        v["data"]["result"][0]["value"][1]
            .as_str()
            .map(|s| s.parse().unwrap())
    };
    assert_eq!(
        query("last_over_time(wlrun_phase_finished{phase=\"reads\"}[5m])"),
        Some(1.0),
        "a scrape after the end"
    );
    assert_eq!(
        query("last_over_time(wlrun_requests_ok_total{phase=\"reads\"}[5m])"),
        Some(ok as f64)
    );
    assert_eq!(
        query("last_over_time(wlrun_rows_sent_total{phase=\"load\"}[5m])"),
        Some(rows_sent as f64)
    );
    drop(prometheus);
}

#[test]
fn the_pushgateway_holds_the_final_push() {
    if !present(PUSHGATEWAY) {
        return;
    }
    let port = free_port();
    let gateway = Killed(
        Command::new(PUSHGATEWAY)
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_listening(port, "prometheus-pushgateway");
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let (child, rx) = start_wlrun(
        dir.path(),
        &["--metrics-push", &url, "--metrics-push-interval", "500ms"],
    );
    // Pushes go on while the run does: one lands before the end.
    std::thread::sleep(Duration::from_millis(2500));
    let (_, _, midway) = get(port, "/metrics", None);
    assert!(
        midway.contains("wlrun_rows_sent_total{"),
        "a push while the run goes on: {midway}"
    );
    finish(child);
    let warnings: Vec<String> = rx.try_iter().filter(|l| l.contains("push")).collect();
    assert!(warnings.is_empty(), "{warnings:?}");
    let (ok, rows_sent) = report_figures(&report(dir.path()));
    let (_, _, body) = get(port, "/metrics", None);
    let line = body
        .lines()
        .find(|l| l.starts_with("wlrun_requests_ok_total{"))
        .unwrap_or_else(|| panic!("no ok counter pushed: {body}"));
    assert!(line.contains("job=\"wlrun\""), "{line}");
    assert_eq!(
        sample(&body, "wlrun_requests_ok_total", "reads"),
        Some(ok as f64)
    );
    assert_eq!(
        sample(&body, "wlrun_rows_sent_total", "load"),
        Some(rows_sent as f64)
    );
    assert_eq!(sample(&body, "wlrun_phase_finished", "reads"), Some(1.0));
    drop(gateway);
}

#[test]
fn bad_metrics_flags_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), WORKLOAD).unwrap();
    for (flags, says) in [
        (&["--metrics-linger", "soon"][..], "--metrics-linger"),
        (&["--metrics-push", "https://gw:9091"][..], "https"),
        (&["--metrics-listen", "nowhere"][..], "--metrics-listen"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_wlrun"))
            .current_dir(dir.path())
            .args(["run", "w.wl", "--quiet"])
            .args(flags)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {err}");
        assert!(err.contains(says), "{flags:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}
