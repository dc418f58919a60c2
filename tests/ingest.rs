//! `wlrun run` ingest phases end to end, against servers that need no installation: embedded
//! SQLite, the null sink, and TCP servers started here on 127.0.0.1 that record what they
//! receive. (PostgreSQL and VictoriaMetrics: tests/ingest_servers.rs.)

use std::io::Read;
use std::net::TcpListener;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

#[path = "common/cli.rs"]
mod cli;
use cli::wlrun;

/// 5 hosts x 60 minutes at 1 minute: 300 rows, a long and a double field.
fn schema() -> &'static str {
    r#"
schema cpu {
  series hostname: symbol = format("host_%d", n) for n in 0..hosts
  tag    region: symbol   = pick(["eu-west-1", "us-east-1"]) per series
  field  usage: long      = walk(uniform(0.0, 100.0), normal(0.0, 1.0), clamp = 0..100)
  field  load: double     = uniform(0.0, 4.0)
  timestamp ts = every 1m from 2016-01-01T00:00:00Z for 1h
}
"#
}

fn workload(target: &str, ingest: &str) -> String {
    format!(
        "workload t {{ seed 7 }}\nparam hosts = 5\n{target}\n{}\n{ingest}\n",
        schema()
    )
}

fn report(out: &Output) -> Value {
    cli::report_of(out)
}

fn phase(r: &Value, cell: usize) -> &Value {
    &r["cells"][cell]["phases"][0]
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A TCP server on 127.0.0.1 that keeps what every connection sent, in connection order;
/// `close_after` bytes makes it hang up mid-stream.
struct Sink {
    port: u16,
    received: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Sink {
    fn start(close_after: Option<usize>) -> Sink {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let rec = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let rec = rec.clone();
                std::thread::spawn(move || {
                    let mut data = Vec::new();
                    let mut buf = vec![0u8; 1 << 16];
                    loop {
                        match stream.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => data.extend_from_slice(&buf[..n]),
                        }
                        if close_after.is_some_and(|c| data.len() >= c) {
                            break;
                        }
                    }
                    rec.lock().unwrap().push(data);
                });
            }
        });
        Sink { port, received }
    }

    fn connections(&self) -> Vec<Vec<u8>> {
        self.received.lock().unwrap().clone()
    }

    /// The connections once `n` have ended, or what there is after 5 s.
    fn wait_for(&self, n: usize) -> Vec<Vec<u8>> {
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.connections().len() < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.connections()
    }
}

#[test]
fn sqlite_rows_are_sent_acknowledged_and_visible() {
    let dir = tempfile::tempdir().unwrap();
    let wl = workload(
        "target local { sqlite \"bench.db\" }",
        "ingest load { into local via sqlite  rows cpu  batch 70 rows  verify visible within 10s }",
    );
    std::fs::write(dir.path().join("w.wl"), wl).unwrap();
    let out = wlrun(dir.path(), &["run", "w.wl", "--json", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = report(&out);
    let p = phase(&r, 0);
    assert_eq!(p["status"], "ok", "{p}");
    assert_eq!(p["rows_expected"], 300);
    assert_eq!(p["rows_sent"], 300);
    assert_eq!(p["rows_acked"], 300);
    assert_eq!(p["rows_visible"], 300);
    // 300 rows in batches of 70: five batches, each acknowledged by its commit.
    assert_eq!(p["batch_latency"]["count"], 5);

    // The table holds exactly the generated rows: compare with `wlrun gen`'s CSV.
    let gen = wlrun(dir.path(), &["gen", "w.wl", "--format", "csv"]);
    assert!(gen.status.success(), "{}", stderr(&gen));
    let csv = String::from_utf8(gen.stdout).unwrap();
    let db = rusqlite::Connection::open(dir.path().join("bench.db")).unwrap();
    let mut stmt = db
        .prepare("SELECT hostname, region, usage, load, ts FROM cpu ORDER BY rowid")
        .unwrap();
    let rows: Vec<String> = stmt
        .query_map([], |r| {
            Ok(format!(
                "{},{},{},{},{}",
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, f64>(3)?,
                r.get::<_, String>(4)?
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let expected: Vec<String> = csv
        .lines()
        .skip(1)
        .map(|l| {
            // CSV timestamps are RFC 3339; SQLite keeps fixed-width UTC text.
            let (rest, ts) = l.rsplit_once(',').unwrap();
            let ts = ts.replace('T', " ").replace('Z', ".000000");
            format!("{rest},{ts}")
        })
        .collect();
    assert_eq!(rows, expected);
}

#[test]
fn a_second_run_recreates_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let wl = workload(
        "target local { sqlite \"bench.db\" }",
        "ingest load { into local via sqlite  rows cpu  verify visible }",
    );
    std::fs::write(dir.path().join("w.wl"), wl).unwrap();
    for _ in 0..2 {
        let out = wlrun(dir.path(), &["run", "w.wl", "--json", "--quiet"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(phase(&report(&out), 0)["rows_visible"], 300);
    }
}

#[test]
fn ilp_tcp_workers_send_exactly_their_shards() {
    let sink = Sink::start(None);
    let dir = tempfile::tempdir().unwrap();
    let wl = workload(
        &format!(
            "target sink {{ ilp_tcp \"tcp://127.0.0.1:{}\" }}",
            sink.port
        ),
        "ingest load { into sink via ilp_tcp  rows cpu  batch 40 rows  workers 2 }",
    );
    std::fs::write(dir.path().join("w.wl"), wl).unwrap();
    let out = wlrun(dir.path(), &["run", "w.wl", "--json", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = report(&out);
    let p = phase(&r, 0);
    assert_eq!(p["rows_sent"], 300);
    // ILP over TCP has no acknowledgements, and the report says so rather than inventing any.
    assert_eq!(p["rows_acked"], Value::Null);
    let per_worker: Vec<u64> = p["rows_per_worker"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(per_worker.iter().sum::<u64>(), 300);

    // Each connection carried one shard, byte for byte what `gen --shard i/2` writes.
    let mut got = sink.wait_for(2);
    got.sort();
    let mut want: Vec<Vec<u8>> = (0..2)
        .map(|i| {
            let shard = format!("{i}/2");
            let g = wlrun(
                dir.path(),
                &["gen", "w.wl", "--format", "ilp", "--shard", &shard],
            );
            assert!(g.status.success());
            g.stdout
        })
        .collect();
    want.sort();
    assert_eq!(got.len(), 2);
    assert!(
        got == want,
        "the connections' bytes differ from gen's shards"
    );
    let total: usize = want.iter().map(Vec::len).sum();
    assert_eq!(p["payload_bytes"], total as u64);
    assert_eq!(p["socket_bytes"], total as u64);
}

#[test]
fn replay_sends_the_same_bytes_and_refuses_what_does_not_fit() {
    let sink = Sink::start(None);
    let dir = tempfile::tempdir().unwrap();
    let wl = workload(
        &format!(
            "target sink {{ ilp_tcp \"tcp://127.0.0.1:{}\" }}",
            sink.port
        ),
        "ingest load { into sink via ilp_tcp  rows cpu  batch 40 rows  replay }",
    );
    std::fs::write(dir.path().join("w.wl"), wl).unwrap();
    let out = wlrun(dir.path(), &["run", "w.wl", "--json", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(phase(&report(&out), 0)["rows_sent"], 300);
    let got = sink.wait_for(1);
    let gen = wlrun(dir.path(), &["gen", "w.wl", "--format", "ilp"]);
    assert_eq!(got, vec![gen.stdout]);

    // 300 rows of ~100 bytes cannot fit in 1 KiB: refused with the reason, nothing sent.
    let wl = workload(
        &format!(
            "target sink {{ ilp_tcp \"tcp://127.0.0.1:{}\" }}",
            sink.port
        ),
        "ingest load { into sink via ilp_tcp  rows cpu  batch 40 rows  replay budget 1KiB }",
    );
    std::fs::write(dir.path().join("w.wl"), wl).unwrap();
    let out = wlrun(dir.path(), &["run", "w.wl", "--json", "--quiet"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = report(&out);
    let p = phase(&r, 0);
    assert_eq!(p["rows_sent"], 0);
    assert!(
        p["failures"]
            .to_string()
            .contains("over the replay budget of 1 KiB"),
        "{p}"
    );
}

#[test]
fn the_table_clause_names_the_measurement() {
    let sink = Sink::start(None);
    let dir = tempfile::tempdir().unwrap();
    let wl = workload(
        &format!(
            "target sink {{ ilp_tcp \"tcp://127.0.0.1:{}\" }}",
            sink.port
        ),
        "ingest load { into sink via ilp_tcp table \"cpu_copy\"  rows cpu }",
    );
    std::fs::write(dir.path().join("w.wl"), wl).unwrap();
    let out = wlrun(dir.path(), &["run", "w.wl", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let got = String::from_utf8(sink.wait_for(1).concat()).unwrap();
    assert_eq!(got.lines().count(), 300);
    assert!(
        got.lines().all(|l| l.starts_with("cpu_copy,hostname=")),
        "{got}"
    );
}

#[test]
fn pre_generated_files_feed_any_protocol() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gen.wl"),
        workload(
            "target t { null }",
            "ingest load { into t via null  rows cpu }",
        ),
    )
    .unwrap();
    for (format, file) in [("ilp", "cpu.ilp"), ("bin", "cpu.wlb")] {
        let g = wlrun(
            dir.path(),
            &["gen", "gen.wl", "--format", format, "-o", file],
        );
        assert!(g.status.success(), "{}", stderr(&g));
    }
    // Line protocol into SQLite: every row lands and is counted back.
    let wl = workload(
        "target local { sqlite \"files.db\" }",
        "ingest load { into local via sqlite table \"cpu\"  rows from file \"cpu.ilp\"  batch 64 rows  verify visible }",
    );
    std::fs::write(dir.path().join("w.wl"), wl).unwrap();
    let out = wlrun(dir.path(), &["run", "w.wl", "--json", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let p = phase(&report(&out), 0).clone();
    assert_eq!(p["rows_sent"], 300, "{p}");
    assert_eq!(p["rows_visible"], 300, "{p}");

    // The binary file over ILP/TCP with two workers: each connection carries exactly the
    // shard `gen --shard i/2` writes, as if the rows had been generated.
    let sink = Sink::start(None);
    let wl = workload(
        &format!("target sink {{ ilp_tcp \"tcp://127.0.0.1:{}\" }}", sink.port),
        "ingest load { into sink via ilp_tcp table \"cpu\"  rows from file \"cpu.wlb\"  batch 40 rows  workers 2 }",
    );
    std::fs::write(dir.path().join("w.wl"), wl).unwrap();
    let out = wlrun(dir.path(), &["run", "w.wl", "--json", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut got = sink.wait_for(2);
    got.sort();
    let mut want: Vec<Vec<u8>> = (0..2)
        .map(|i| {
            let shard = format!("{i}/2");
            wlrun(
                dir.path(),
                &["gen", "gen.wl", "--format", "ilp", "--shard", &shard],
            )
            .stdout
        })
        .collect();
    want.sort();
    assert!(
        got == want,
        "the connections' bytes differ from gen's shards"
    );

    // `limit` loads the first rows of the file, whatever the number of workers.
    let wl = workload(
        "target t { null }",
        "ingest load { into t via null table \"cpu\"  rows from file \"cpu.ilp\" limit 101  workers 3 }",
    );
    std::fs::write(dir.path().join("w.wl"), wl).unwrap();
    let out = wlrun(dir.path(), &["run", "w.wl", "--json", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(phase(&report(&out), 0)["rows_sent"], 101);

    // So does a schema's: the first rows in the generator's order, cut at the same global
    // row by every worker's shard (it once sent the whole schema and called it a limit).
    let wl = workload(
        "target t { null }",
        "ingest load { into t via null  rows cpu limit 101  workers 3 }",
    );
    std::fs::write(dir.path().join("w.wl"), wl).unwrap();
    let out = wlrun(dir.path(), &["run", "w.wl", "--json", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = report(&out);
    let p = phase(&r, 0);
    assert_eq!(p["rows_expected"], 101, "{p}");
    assert_eq!(p["rows_generated"], 101, "{p}");
    assert_eq!(p["rows_sent"], 101, "{p}");
}

#[test]
fn connection_refused_fails_fast_naming_the_endpoint() {
    // A port nothing listens on: bind, note it, close.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let wl = workload(
        &format!("target db {{ ilp_tcp \"tcp://127.0.0.1:{port}\" }}"),
        "ingest load { into db via ilp_tcp  rows cpu }",
    );
    std::fs::write(dir.path().join("w.wl"), wl).unwrap();
    let started = Instant::now();
    let out = wlrun(dir.path(), &["run", "w.wl", "--quiet"]);
    assert!(started.elapsed() < Duration::from_secs(5));
    // Nothing was sent: the run could not measure.
    assert_eq!(out.status.code(), Some(3));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "cannot connect to db.ilp_tcp (tcp://127.0.0.1:{port})"
        )),
        "{err}"
    );
}

#[test]
fn a_server_closing_mid_run_fails_its_cell_and_the_next_cell_runs() {
    let sink = Sink::start(Some(64 * 1024));
    let dir = tempfile::tempdir().unwrap();
    let wl = format!(
        "workload t {{ seed 7 }}\nparam hosts = 200\nmatrix {{ n in [1, 2] }}\ntarget sink {{ ilp_tcp \"tcp://127.0.0.1:{}\" {{ timeout 5s }} }}\n{}\ningest load {{ into sink via ilp_tcp  rows cpu  batch 1000 rows  workers n }}\n",
        sink.port,
        schema().replace("for 1h", "for 1d")
    );
    std::fs::write(dir.path().join("w.wl"), wl).unwrap();
    let out = wlrun(dir.path(), &["run", "w.wl", "--json", "--quiet"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = report(&out);
    assert_eq!(r["cells"].as_array().unwrap().len(), 2);
    for cell in 0..2 {
        let p = phase(&r, cell);
        assert_eq!(p["status"], "failed", "{p}");
        assert!(
            p["errors"]["connection"]["count"].as_u64().unwrap() >= 1,
            "{p}"
        );
        // What was sent before the server hung up is kept.
        assert!(p["rows_sent"].as_u64().unwrap() < 288_000, "{p}");
    }
}

#[test]
fn null_sink_and_calibration() {
    let sink = Sink::start(None);
    let dir = tempfile::tempdir().unwrap();
    let wl = workload(
        &format!(
            "target t {{ null\n ilp_tcp \"tcp://127.0.0.1:{}\" }}",
            sink.port
        ),
        "ingest a { into t via null  rows cpu }\ningest b { into t via ilp_tcp  rows cpu  calibrate }",
    );
    std::fs::write(dir.path().join("w.wl"), wl).unwrap();
    let out = wlrun(dir.path(), &["run", "w.wl", "--json", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = report(&out);
    let null = &r["cells"][0]["phases"][0];
    assert_eq!(null["rows_sent"], 300);
    assert!(null["payload_bytes"].as_u64().unwrap() > 0);
    let real = &r["cells"][0]["phases"][1];
    let c = &real["calibration"];
    assert!(c.is_object(), "{real}");
    // 300 rows take microseconds: each rate is there only when its span was long enough.
    let null_rate = c["null_rows_per_s"].as_f64();
    assert!(null_rate.is_none_or(|r| r > 0.0), "{real}");
    match (real["send_rows_per_s"].as_f64(), null_rate) {
        (Some(rate), Some(null)) => {
            assert!(
                (c["ratio"].as_f64().unwrap() - rate / null).abs() < 1e-9,
                "{real}"
            )
        }
        _ => assert_eq!(c["ratio"], Value::Null, "{real}"),
    }
}

#[test]
fn ctrl_c_stops_and_keeps_the_report() {
    let dir = tempfile::tempdir().unwrap();
    // Far more rows than can be generated in the test's lifetime.
    let wl = format!(
        "workload t {{ seed 7 }}\nparam hosts = 100000\ntarget t {{ null }}\n{}\ningest load {{ into t via null  rows cpu }}\n",
        schema().replace("for 1h", "for 3650d")
    );
    std::fs::write(dir.path().join("w.wl"), wl).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .current_dir(dir.path())
        .args(["run", "w.wl", "--json", "--progress-every", "0.1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Rows on their way: a stop abandons a batch still being made, so a signal before the
    // first was sent would leave nothing to keep. The deadline only bounds a run that never
    // sends.
    let (tx, rx) = std::sync::mpsc::channel();
    let err_pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufRead::lines(std::io::BufReader::new(err_pipe)) {
            let Ok(line) = line else { break };
            let _ = tx.send(line.clone());
            all += &line;
            all.push('\n');
        }
        all
    });
    let sending = |line: &str| {
        line.contains("load: ")
            && line
                .split(", ")
                .nth(1)
                .and_then(|rows| rows.split(' ').next())
                .is_some_and(|n| n != "0")
    };
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(60)) {
        if sending(&line) {
            break;
        }
    }
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let err = reader.join().unwrap();
    assert_eq!(out.status.code(), Some(130), "{err}");
    let r = report(&out);
    assert_eq!(r["interrupted"], true);
    let p = phase(&r, 0);
    assert_eq!(p["status"], "interrupted");
    assert!(p["rows_sent"].as_u64().unwrap() > 0, "{p}");
}

#[test]
fn out_dir_keeps_report_plan_and_sources() {
    let dir = tempfile::tempdir().unwrap();
    let wl = workload(
        "target t { null }",
        "ingest load { into t via null  rows cpu }",
    );
    std::fs::write(dir.path().join("w.wl"), wl).unwrap();
    let out = wlrun(dir.path(), &["run", "w.wl", "--quiet", "--out", "res"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let res = dir.path().join("res");
    let r: Value =
        serde_json::from_slice(&std::fs::read(res.join("report.json")).unwrap()).unwrap();
    assert_eq!(r["format"], 3);
    let plan: Value =
        serde_json::from_slice(&std::fs::read(res.join("plan.json")).unwrap()).unwrap();
    assert_eq!(plan["format"], 1);
    let csv = std::fs::read_to_string(res.join("report.csv")).unwrap();
    assert!(csv.starts_with("cell,key,phase,kind"), "{csv}");
    assert_eq!(csv.lines().count(), 2);
    assert!(res.join("sources/w.wl").exists());
}

/// Runs `ingest` (reading `rows from file "cpu.ilp"`) with `data` written into `cpu.ilp`, a
/// FIFO, by a thread that opens it when the run does.
fn run_from_fifo(dir: &std::path::Path, ingest: &str, data: Vec<u8>) -> Output {
    let fifo = dir.join("cpu.ilp");
    let _ = std::fs::remove_file(&fifo);
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    // The writer blocks in `open` until the run opens the FIFO for reading; a run that stops
    // reading early leaves it a broken pipe, which ends it too.
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .open(&fifo)
            .and_then(|mut f| f.write_all(&data));
    });
    let wl = workload("target local { sqlite \"fifo.db\" }", ingest);
    std::fs::write(dir.join("w.wl"), wl).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .args(["run", "w.wl", "--json", "--quiet"])
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A hang guard only: a run that opens the FIFO twice waits for a writer that is gone.
    let pid = child.id();
    let (done, guard) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if matches!(
            guard.recv_timeout(Duration::from_secs(120)),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout)
        ) {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    });
    let out = child.wait_with_output().unwrap();
    let _ = done.send(());
    watchdog.join().unwrap();
    writer.join().unwrap();
    out
}

/// `rows from file` streams: a FIFO (TSBS users pipe generated data in) is read once, as the
/// rows arrive, while the files `check` reads whole are refused when they are not regular. It
/// hung: the run directory's copy of the inputs and a second open for the worker each waited
/// for (or drained) the FIFO. Several workers cannot share one: refused, saying so.
#[test]
fn rows_from_a_fifo_stream_into_the_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gen.wl"),
        workload(
            "target t { null }",
            "ingest load { into t via null  rows cpu }",
        ),
    )
    .unwrap();
    let g = wlrun(dir.path(), &["gen", "gen.wl", "--format", "ilp"]);
    assert!(g.status.success(), "{}", stderr(&g));
    let out = run_from_fifo(
        dir.path(),
        "ingest load { into local via sqlite table \"cpu\"  rows from file \"cpu.ilp\"  batch 64 rows  verify visible }",
        g.stdout.clone(),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "the run hung or failed: {}",
        stderr(&out)
    );
    let p = phase(&report(&out), 0).clone();
    assert_eq!(p["rows_sent"], 300, "{p}");
    assert_eq!(p["rows_visible"], 300, "{p}");

    let out = run_from_fifo(
        dir.path(),
        "ingest load { into local via sqlite table \"cpu2\"  rows from file \"cpu.ilp\"  batch 64 rows  workers 2 }",
        g.stdout,
    );
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    let p = phase(&report(&out), 0).clone();
    assert!(
        p.to_string()
            .contains("it can feed one worker, and this ingest has 2"),
        "{p}"
    );
}
