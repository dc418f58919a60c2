//! `observe metrics` against a metrics endpoint that knows the truth: an in-test oracle whose
//! counter grows at a rate the test sets (and whose CPU counter grows at a set number of
//! seconds per second), which records every value it served; and against Debian's real
//! `prometheus-node-exporter`, checked loosely against /proc/stat.

#[path = "common/cli.rs"]
mod cli;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cli::run_out;

/// What the oracle does with its n-th request (0-based).
#[derive(Clone, Copy)]
enum Answer {
    Metrics,
    Status500,
    /// Says nothing for this long.
    Hang(Duration),
}

struct Oracle {
    port: u16,
    /// (seconds since start, counter value, cpu seconds) of every answer served.
    served: Arc<Mutex<Vec<(f64, f64, f64)>>>,
}

/// Counter `requests_total` grows at `rate`/s of wall time, `process_cpu_seconds_total` at
/// `cpu` s/s; from `reset_at` on both count again from 0 (a restart). `answers(n)` says what
/// the n-th request gets.
fn oracle(rate: f64, cpu: f64, reset_at: Option<Duration>, answers: fn(usize) -> Answer) -> Oracle {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    let count = Arc::new(Mutex::new(0usize));
    let log = served.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let (log, count) = (log.clone(), count.clone());
            std::thread::spawn(move || {
                serve(conn, start, rate, cpu, reset_at, answers, log, count)
            });
        }
    });
    Oracle { port, served }
}

#[allow(clippy::too_many_arguments)]
fn serve(
    conn: TcpStream,
    start: Instant,
    rate: f64,
    cpu: f64,
    reset_at: Option<Duration>,
    answers: fn(usize) -> Answer,
    log: Arc<Mutex<Vec<(f64, f64, f64)>>>,
    count: Arc<Mutex<usize>>,
) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut conn = conn;
    loop {
        // One request: its head up to the empty line (a GET has no body).
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) if line == "\r\n" => break,
                Ok(_) => {}
            }
        }
        let n = {
            let mut c = count.lock().unwrap();
            *c += 1;
            *c - 1
        };
        match answers(n) {
            Answer::Hang(d) => {
                std::thread::sleep(d);
                return;
            }
            Answer::Status500 => {
                let _ = conn.write_all(
                    b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 4\r\n\r\noops",
                );
            }
            Answer::Metrics => {
                let t = start.elapsed();
                let since = match reset_at {
                    Some(r) if t >= r => t - r,
                    _ => t,
                }
                .as_secs_f64();
                let (value, seconds) = (rate * since, cpu * since);
                log.lock().unwrap().push((t.as_secs_f64(), value, seconds));
                let body = format!(
                    "# HELP requests_total Requests.\n# TYPE requests_total counter\n\
                     requests_total{{path=\"/q\"}} {value}\n\
                     # TYPE process_cpu_seconds_total counter\n\
                     process_cpu_seconds_total {seconds}\n\
                     # TYPE open_connections gauge\nopen_connections {}\n",
                    3 + n % 2
                );
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                if conn.write_all(head.as_bytes()).is_err()
                    || conn.write_all(body.as_bytes()).is_err()
                {
                    return;
                }
            }
        }
    }
}

/// A query run of `SELECT 1` on SQLite for `duration`, its target observed at `port`.
fn workload(port: u16, every: &str, duration: &str) -> String {
    format!(
        r#"
target t {{
  sqlite "db.sqlite"
  observe metrics "http://127.0.0.1:{port}/metrics" every {every}
    keep "requests_total", "open_connections"
    cpu "process_cpu_seconds_total"
}}
query one {{ sql "SELECT 1" }}
run reads {{ against t.sqlite  queries one  workers 1  duration {duration} }}
"#
    )
}

fn series<'a>(m: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    m["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no series {name} in {m}"))
}

fn within(got: f64, want: f64, share: f64) -> bool {
    (got - want).abs() <= want.abs() * share
}

#[test]
fn a_counter_growing_at_a_known_rate_is_reported_at_it_and_cpu_per_query_is_the_oracles() {
    let o = oracle(1000.0, 0.5, None, |_| Answer::Metrics);
    let dir = tempfile::tempdir().unwrap();
    let out = run_out(dir.path(), &workload(o.port, "200ms", "2s"), &[]);
    assert_eq!(out.code, 0, "{}", out.printed());
    let phase = out.phase();
    let m = &phase["server_metrics"][0];
    assert_eq!(m["scrapes_failed"], 0, "{m}");
    let ok = m["scrapes_ok"].as_u64().unwrap();
    // Start, end, and about one every 200 ms in between.
    assert!(ok >= 5, "{m}");
    let served = o.served.lock().unwrap().clone();
    assert_eq!(served.len() as u64, ok);
    let requests = series(m, "requests_total");
    assert_eq!(requests["kind"], "counter");
    assert_eq!(requests["labels"]["path"], "/q");
    let rate = requests["rate_per_s"].as_f64().unwrap();
    assert!(within(rate, 1000.0, 0.05), "rate {rate} vs 1000/s: {m}");
    // The increase is exactly what the oracle served between the first and last scrape.
    let (first, last) = (served[0], served[served.len() - 1]);
    let increase = requests["increase"].as_f64().unwrap();
    assert!(
        within(increase, last.1 - first.1, 1e-9),
        "{increase} {first:?} {last:?}"
    );
    let gauge = series(m, "open_connections");
    assert_eq!(gauge["kind"], "gauge");
    assert_eq!(
        (gauge["min"].as_f64(), gauge["max"].as_f64()),
        (Some(3.0), Some(4.0))
    );
    // CPU: 0.5 s/s of wall time, per query answered.
    let cpu = &m["cpu"];
    let cpu_s = cpu["cpu_s"].as_f64().unwrap();
    assert!(within(cpu_s, last.2 - first.2, 1e-9), "{cpu}");
    assert!(within(cpu["cores"].as_f64().unwrap(), 0.5, 0.05), "{cpu}");
    let queries = phase["ok"].as_u64().unwrap() + phase["failed"].as_u64().unwrap();
    assert_eq!(cpu["unit"], "query");
    assert_eq!(cpu["units"].as_u64(), Some(queries));
    let per = cpu["us_per_unit"].as_f64().unwrap();
    assert!(
        within(per, (last.2 - first.2) * 1e6 / queries as f64, 1e-9),
        "{cpu}"
    );
    // The terminal says it, report.csv carries the aggregates, the series file the rates.
    assert!(
        out.printed().contains("server cpu") && out.printed().contains("us per query"),
        "{}",
        out.printed()
    );
    let csv = std::fs::read_to_string(dir.path().join("res/report.csv")).unwrap();
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert!(head.contains(&"metrics_scrapes_failed"), "{csv}");
    let rates =
        std::fs::read_to_string(dir.path().join("res/series/1-reads.server-metrics.csv")).unwrap();
    let per_interval: Vec<f64> = rates
        .lines()
        .skip(1)
        .filter(|l| l.contains(",requests_total,"))
        .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(per_interval.len() as u64, ok - 1, "{rates}");
}

#[test]
fn a_counter_reset_mid_phase_counts_from_the_reset() {
    let o = oracle(1000.0, 0.5, Some(Duration::from_millis(900)), |_| {
        Answer::Metrics
    });
    let dir = tempfile::tempdir().unwrap();
    let out = run_out(dir.path(), &workload(o.port, "200ms", "2s"), &[]);
    assert_eq!(out.code, 0, "{}", out.printed());
    let m = &out.phase()["server_metrics"][0];
    let requests = series(m, "requests_total");
    assert_eq!(requests["resets"], 1, "{m}");
    // The increase across the restart: the climb before it, then all of the value after it.
    let rate = requests["rate_per_s"].as_f64().unwrap();
    assert!(within(rate, 1000.0, 0.05), "rate {rate}: {m}");
    assert!(
        within(m["cpu"]["cores"].as_f64().unwrap(), 0.5, 0.05),
        "{m}"
    );
}

#[test]
fn failed_scrapes_are_counted_and_the_run_goes_on() {
    // The 2nd answer is a 500, the 4th hangs past the 300 ms interval; the rest are good.
    let o = oracle(1000.0, 0.5, None, |n| match n {
        1 => Answer::Status500,
        3 => Answer::Hang(Duration::from_secs(2)),
        _ => Answer::Metrics,
    });
    let dir = tempfile::tempdir().unwrap();
    let out = run_out(dir.path(), &workload(o.port, "300ms", "2s"), &[]);
    assert_eq!(out.code, 0, "{}", out.printed());
    let phase = out.phase();
    assert!(phase["ok"].as_u64().unwrap() > 0);
    let m = &phase["server_metrics"][0];
    assert_eq!(m["scrapes_failed"], 2, "{m}");
    let failures = m["failures"].to_string();
    assert!(
        failures.contains("HTTP 500") && failures.contains("no answer within"),
        "{m}"
    );
    assert!(m["scrapes_ok"].as_u64().unwrap() >= 3, "{m}");
    let rate = series(m, "requests_total")["rate_per_s"].as_f64().unwrap();
    assert!(within(rate, 1000.0, 0.05), "rate {rate}: {m}");
    assert!(out.printed().contains("2 failed"), "{}", out.printed());
}

/// /proc/stat's busy CPU seconds of the whole box (every mode but idle and iowait).
fn proc_busy_s() -> f64 {
    let mut text = String::new();
    std::fs::File::open("/proc/stat")
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let fields: Vec<f64> = text
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap())
        .collect();
    // user nice system idle iowait irq softirq steal (guest is inside user).
    let busy: f64 = fields[..8]
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .map(|(_, v)| v)
        .sum();
    busy / 100.0
}

const NODE_EXPORTER: &str = "/usr/bin/prometheus-node-exporter";

#[test]
fn a_real_node_exporter_is_scraped_and_its_busy_cpu_is_the_boxs() {
    if !std::path::Path::new(NODE_EXPORTER).exists() {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "{NODE_EXPORTER} is missing, and CI=true requires it (scripts/test installs it)"
        );
        eprintln!("skipped: {NODE_EXPORTER} is missing (scripts/test installs it)");
        return;
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut exporter = std::process::Command::new(NODE_EXPORTER)
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let up = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(up, "node exporter did not listen on {port}");
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
target t {{
  sqlite "db.sqlite"
  observe metrics "http://127.0.0.1:{port}/metrics" every 500ms
    keep "node_cpu_seconds_total", "node_memory_MemAvailable_bytes"
    cpu "node_cpu_seconds_total{{mode!~'idle|iowait'}}"
}}
query one {{ sql "SELECT 1" }}
run reads {{ against t.sqlite  queries one  workers 1  duration 2s }}
"#
    );
    let before = proc_busy_s();
    let started = Instant::now();
    let out = run_out(dir.path(), &text, &[]);
    let (after, wall) = (proc_busy_s(), started.elapsed().as_secs_f64());
    let _ = exporter.kill();
    let _ = exporter.wait();
    assert_eq!(out.code, 0, "{}", out.printed());
    let m = &out.phase()["server_metrics"][0];
    assert!(m["scrapes_ok"].as_u64().unwrap() > 0, "{m}");
    assert_eq!(m["scrapes_failed"], 0, "{m}");
    assert!(
        series(m, "node_cpu_seconds_total")["rate_per_s"].is_number(),
        "{m}"
    );
    assert_eq!(series(m, "node_memory_MemAvailable_bytes")["kind"], "gauge");
    // Loosely: the exporter reads the same /proc/stat; the spans differ by the run's start
    // and end, so the cores agree within a core's fraction and the bounds of the box.
    let cores = m["cpu"]["cores"].as_f64().unwrap();
    let proc_cores = (after - before) / wall;
    let n = std::thread::available_parallelism().unwrap().get() as f64;
    assert!(cores > 0.0 && cores <= n + 0.1, "{cores} of {n}: {m}");
    assert!(
        (cores - proc_cores).abs() < 0.5 + 0.25 * proc_cores,
        "{cores} vs /proc {proc_cores}: {m}"
    );
}
