//! `cargo bench --bench ingest`: the ingest runner's own ceiling, medians of interleaved runs.
//!
//! - TSBS cpu-only (4,000 hosts) into the `null` driver, one worker: generate + encode + hand
//!   over, against a plain generate + ILP-encode loop (the target: within 10%);
//! - the same over ILP/TCP into a discarding TCP sink on 127.0.0.1 (a thread of this process,
//!   so on the other core), one worker: target 3 M rows/s;
//! - PostgreSQL binary COPY, one worker, batches of 10,000 rows, into the local server
//!   (`WLRUN_TEST_PG`, default postgres://wlrun:wlrun@127.0.0.1:5432/wlrun): target 300 k
//!   rows/s, and its ratios to `psql \copy` of the same rows as CSV and of the same rows
//!   pre-encoded in binary COPY format (the server's ceiling: no client work). Skipped when
//!   no server answers.

#[path = "common/run.rs"]
mod run;

#[path = "common/stats.rs"]
mod stats;
#[path = "common/tsbs.rs"]
mod tsbs;
use stats::median;

use std::io::Read;
use std::net::TcpListener;
use std::time::Instant;

use wlrun::check::Options;
use wlrun::compile::{check_text, schema_plan};
use wlrun::encode::IlpEncoder;
use wlrun::gen::Columnar;
use wlrun::report::PhaseReport;

const RUNS: usize = 5;

/// Send rate of the single ingest phase of `text`, run through the library as `wlrun run`
/// would.
fn ingest_rate(text: &str) -> f64 {
    let report = run::run_text(text);
    match &report.cells[0].phases[0] {
        PhaseReport::Ingest(r) => {
            assert!(
                r.failures.is_empty(),
                "the bench phase failed: {:?}",
                r.failures
            );
            r.send_rows_per_s
                .expect("the bench phase runs long enough to be a rate")
        }
        PhaseReport::NotRun { reason, .. } => panic!("not run: {reason}"),
        PhaseReport::Queries(_) | PhaseReport::Requests(_) => {
            panic!("the bench workload has only an ingest phase")
        }
    }
}

/// The generate + ILP encode loop of `benches/gen.rs`, for the null driver's ratio.
fn gen_ilp_rate(text: &str) -> f64 {
    let out = check_text("bench.wl", text, &Options::default());
    let checked = out.checked.expect("checks");
    let plan = schema_plan(&checked, Some("tsbs.cpu")).expect("schema");
    let mut g = Columnar::new(&plan, checked.seed, None, &|p| std::fs::read(p)).expect("gen");
    let mut enc = IlpEncoder::new(g.schema()).expect("encoder");
    let mut b = g.new_batch();
    let mut buf = Vec::with_capacity(8 << 20);
    let started = Instant::now();
    let mut rows = 0;
    loop {
        let n = g.fill(&mut b, 2048);
        if n == 0 {
            break;
        }
        buf.clear();
        enc.encode(&b, &mut buf);
        rows += n;
    }
    rows as f64 / started.elapsed().as_secs_f64()
}

/// A TCP server on 127.0.0.1 that reads and discards everything, on its own threads.
fn discarding_sink() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 1 << 20];
                while matches!(stream.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    port
}

fn pg_url() -> String {
    std::env::var("WLRUN_TEST_PG")
        .unwrap_or_else(|_| "postgres://wlrun:wlrun@127.0.0.1:5432/wlrun".into())
}

/// Runs psql against the bench server; `None` when psql is missing or fails.
fn psql(args: &[&str]) -> Option<std::process::Output> {
    std::process::Command::new("psql")
        .arg(pg_url())
        .args(["-v", "ON_ERROR_STOP=1", "-q"])
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
}

const PSQL_TABLE: &str = "DROP TABLE IF EXISTS bench_psql; CREATE TABLE bench_psql (hostname text, region text, datacenter text, rack text, os text, arch text, team text, service text, service_version text, service_environment text, usage_user bigint, usage_system bigint, usage_idle bigint, usage_nice bigint, usage_iowait bigint, usage_irq bigint, usage_softirq bigint, usage_steal bigint, usage_guest bigint, usage_guest_nice bigint, timestamp timestamptz)";

/// Seconds `psql \copy` takes to load `file` (`format`: `csv, HEADER true` or `binary`)
/// into a fresh table like wlrun's.
fn psql_copy_seconds(file: &std::path::Path, format: &str, rows: u64) -> Option<f64> {
    psql(&["-c", PSQL_TABLE])?;
    let copy = format!(
        "\\copy bench_psql FROM '{}' WITH (FORMAT {format})",
        file.display()
    );
    let started = Instant::now();
    psql(&["-c", &copy])?;
    let secs = started.elapsed().as_secs_f64();
    let count = psql(&["-tAc", "SELECT count(*) FROM bench_psql"])?;
    let n: u64 = String::from_utf8_lossy(&count.stdout).trim().parse().ok()?;
    psql(&["-c", "DROP TABLE bench_psql"])?;
    (n == rows).then_some(secs)
}

/// The rows of `csv` in PostgreSQL's binary COPY format, written by the server itself.
fn binary_copy_file(csv: &std::path::Path, bin: &std::path::Path) -> Option<()> {
    psql(&["-c", PSQL_TABLE])?;
    psql(&[
        "-c",
        &format!(
            "\\copy bench_psql FROM '{}' WITH (FORMAT csv, HEADER true)",
            csv.display()
        ),
    ])?;
    psql(&[
        "-c",
        &format!(
            "\\copy bench_psql TO '{}' WITH (FORMAT binary)",
            bin.display()
        ),
    ])?;
    psql(&["-c", "DROP TABLE bench_psql"])?;
    Some(())
}

fn main() {
    println!("ingest runner, TSBS cpu-only at 4,000 hosts, one worker, medians of {RUNS} interleaved runs");
    let base = tsbs::cpu_4000_hosts(60);
    let null = format!("{base}target t {{ null }}\ningest load {{ into t via null  rows tsbs.cpu  batch 2048 rows }}\n");
    let port = discarding_sink();
    let tcp = format!("{base}target t {{ ilp_tcp \"tcp://127.0.0.1:{port}\" }}\ningest load {{ into t via ilp_tcp  rows tsbs.cpu  batch 10_000 rows }}\n");
    let (mut gen, mut nul, mut ilp) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        gen.push(gen_ilp_rate(&base));
        nul.push(ingest_rate(&null));
        ilp.push(ingest_rate(&tcp));
    }
    let (gen, nul, ilp) = (median(gen), median(nul), median(ilp));
    println!(
        "{:<44} {:>12.0} rows/s",
        "generate + ILP encode (wlrun gen loop, 2048)", gen
    );
    println!(
        "{:<44} {:>12.0} rows/s  {:.2}x of the loop (target >= 0.90x)",
        "null driver",
        nul,
        nul / gen
    );
    println!(
        "{:<44} {:>12.0} rows/s  {:.2}x of 3 M rows/s",
        "ILP/TCP into a discarding sink",
        ilp,
        ilp / 3e6
    );

    if std::net::TcpStream::connect("127.0.0.1:5432").is_err() {
        println!("PostgreSQL: no server on 127.0.0.1:5432, COPY figures skipped");
        return;
    }
    let pg_base = tsbs::cpu_4000_hosts(30);
    let copy = format!(
        "{pg_base}target db {{ dialect postgres\n pg \"{}\" }}\ningest load {{ into db via pg table \"bench_copy\"  rows tsbs.cpu  batch 10_000 rows  teardown drop }}\n",
        pg_url()
    );
    let dir = std::env::temp_dir().join(format!("wlrun-bench-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let csv = dir.join("cpu.csv");
    std::fs::write(dir.join("w.wl"), &pg_base).expect("temp workload");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .args(["gen"])
        .arg(dir.join("w.wl"))
        .args([
            "--schema",
            "tsbs.cpu",
            "--format",
            "csv",
            "--timestamps",
            "sql",
            "-o",
        ])
        .arg(&csv)
        .output()
        .expect("wlrun gen");
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let rows = 4000 * 180;
    let bin = dir.join("cpu.bin");
    let have_bin = binary_copy_file(&csv, &bin).is_some();
    let (mut copies, mut psqls, mut ceilings) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        copies.push(ingest_rate(&copy));
        if let Some(s) = psql_copy_seconds(&csv, "csv, HEADER true", rows) {
            psqls.push(rows as f64 / s);
        }
        if have_bin {
            if let Some(s) = psql_copy_seconds(&bin, "binary", rows) {
                ceilings.push(rows as f64 / s);
            }
        }
    }
    let copy = median(copies);
    println!(
        "{:<44} {:>12.0} rows/s  {:.2}x of 300 k rows/s",
        "PostgreSQL binary COPY, 10,000-row batches",
        copy,
        copy / 3e5
    );
    if psqls.is_empty() {
        println!("psql \\copy: could not run psql, no ratio");
    } else {
        let p = median(psqls);
        println!(
            "{:<44} {:>12.0} rows/s  wlrun COPY is {:.2}x of it",
            "psql \\copy of the same rows as CSV",
            p,
            copy / p
        );
    }
    // The server's own ceiling over the wire: the same rows already in binary COPY format,
    // sent by psql in one COPY, so the client does no work at all.
    if !ceilings.is_empty() {
        let c = median(ceilings);
        println!(
            "{:<44} {:>12.0} rows/s  wlrun COPY is {:.2}x of it",
            "psql \\copy of pre-encoded binary rows",
            c,
            copy / c
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
