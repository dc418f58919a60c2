//! `cargo bench --bench gen`: rows per second on one core for TSBS cpu-only, generate-only and
//! generate + encode in each format (CSV, ILP, the binary file format), at 4,000 and 100,000
//! hosts. Prints medians of several runs and the ratio to the targets
//! (15 M rows/s generate-only, 5 M rows/s generate + ILP).
//!
//! Then the peak resident memory of `wlrun gen` in each format at 4,000 and 1,000,000 hosts
//! (10 s of readings, to /dev/null), each run in a process of its own (this binary, which
//! reads its own VmHWM), and what a series costs above the 4,000-host run (target: at most
//! 200 bytes). `WLRUN_BENCH_MEMORY=0` skips that part.

#[path = "common/stats.rs"]
mod stats;
use stats::median;

#[path = "../tests/common/peak_rss.rs"]
mod peak_rss;

use std::sync::Arc;
use std::time::Instant;

use wlrun::check::Options;
use wlrun::compile::{check_text, schema_plan};
use wlrun::encode::csv::CsvBatchEncoder;
use wlrun::encode::{BinWriter, IlpEncoder, TimestampStyle};
use wlrun::gen::batch::{Batch, BatchSchema};
use wlrun::gen::Columnar;
use wlrun::plan::SchemaPlan;

const RUNS: usize = 7;
/// Rows per batch; `WLRUN_BENCH_BATCH` overrides it.
fn batch_rows() -> usize {
    std::env::var("WLRUN_BENCH_BATCH")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2048)
}

fn tsbs(hosts: u64, minutes: u64) -> SchemaPlan {
    let text = format!(
        "import \"std/tsbs/cpu-only.wl\" as tsbs (hosts = {hosts}, end = 2016-01-01T00:00:00Z + {minutes}m)\nschema unused {{ rows 1 field a: long = 1 }}"
    );
    let out = check_text("bench.wl", &text, &Options::default());
    let checked = out.checked.expect("the bench schema checks");
    schema_plan(&checked, Some("tsbs.cpu")).expect("tsbs.cpu lowers")
}

type Consumer = Box<dyn FnMut(&Batch) -> usize>;
type MakeConsumer = Box<dyn Fn(Arc<BatchSchema>) -> Consumer>;

/// Rows/s and bytes/row of one run of one way of consuming the generated batches; `make`
/// builds the consumer from the run's batch layout (encoders cache per-dictionary bytes).
fn run_once(plan: &SchemaPlan, make: &MakeConsumer) -> (f64, f64) {
    let mut g = Columnar::new(plan, 123, None, &|p| std::fs::read(p)).expect("generator");
    let mut consume = make(g.schema());
    let mut b = g.new_batch();
    let started = Instant::now();
    let (mut rows, mut bytes) = (0usize, 0usize);
    loop {
        let n = g.fill(&mut b, batch_rows());
        if n == 0 {
            break;
        }
        rows += n;
        bytes += consume(&b);
    }
    (
        rows as f64 / started.elapsed().as_secs_f64(),
        bytes as f64 / rows as f64,
    )
}

fn encoder(mut f: impl FnMut(&Batch, &mut Vec<u8>) + 'static) -> Consumer {
    let mut buf = Vec::with_capacity(8 << 20);
    Box::new(move |b: &Batch| {
        buf.clear();
        f(b, &mut buf);
        buf.len()
    })
}

fn paths() -> Vec<(&'static str, Option<f64>, MakeConsumer)> {
    vec![
        (
            "generate",
            Some(15e6),
            Box::new(|_| Box::new(|_: &Batch| 0)),
        ),
        (
            "generate+csv",
            None,
            Box::new(|_| {
                let mut enc = CsvBatchEncoder::new(TimestampStyle::Rfc3339);
                encoder(move |b, buf| enc.encode(b, buf))
            }),
        ),
        (
            "generate+ilp",
            Some(5e6),
            Box::new(|schema| {
                let mut enc = IlpEncoder::new(schema).expect("ilp encoder");
                encoder(move |b, buf| {
                    enc.encode(b, buf);
                })
            }),
        ),
        (
            "generate+bin",
            None,
            Box::new(|schema| {
                let mut w =
                    BinWriter::new(std::io::sink(), &schema, 123, None).expect("bin writer");
                Box::new(move |b: &Batch| {
                    w.write(b).expect("the sink accepts");
                    0
                })
            }),
        ),
    ]
}

/// The peak resident memory of `wlrun gen` per format at 4,000 and 1,000,000 hosts, and the
/// bytes a series costs above the 4,000-host run.
fn memory() {
    const SMALL: u64 = 4_000;
    const LARGE: u64 = 1_000_000;
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/golden/gen/tsbs_hosts.wl"
    );
    println!("peak resident memory of `wlrun gen`, TSBS cpu-only, 10 s of readings, to /dev/null");
    println!(
        "{:<8} {:>14} {:>14} {:>14} {:>8}",
        "format", "4,000 hosts", "1,000,000 hosts", "bytes/series", "target"
    );
    for format in ["csv", "ilp", "bin"] {
        let at = |hosts: u64| {
            let exe = std::env::current_exe().expect("the bench binary");
            peak_rss::gen_peak_rss(std::process::Command::new(exe), file, format, hosts)
        };
        let (small, large) = (at(SMALL), at(LARGE));
        let per_series = large.saturating_sub(small) as f64 / (LARGE - SMALL) as f64;
        println!(
            "{format:<8} {:>11.1} MB {:>12.1} MB {per_series:>14.0} {:>7.2}x",
            small as f64 / 1e6,
            large as f64 / 1e6,
            per_series / 200.0
        );
    }
}

fn main() {
    // This binary is also the child whose memory `memory` measures.
    if let Some(code) = peak_rss::child_main() {
        std::process::exit(code);
    }
    println!(
        "TSBS cpu-only, one core, median of {RUNS} interleaved runs, batches of {} rows",
        batch_rows()
    );
    println!(
        "{:<10} {:<18} {:>14} {:>10} {:>8}",
        "hosts", "path", "rows/s", "bytes/row", "target"
    );
    let paths = paths();
    let mut ilp_per_row = Vec::new();
    for (hosts, minutes) in [(4_000u64, 30u64), (100_000, 4)] {
        let plan = tsbs(hosts, minutes);
        // Runs of every path interleaved, so that a noisy neighbour hurts all paths alike.
        let mut rates = vec![Vec::new(); paths.len()];
        let mut bytes = vec![0.0; paths.len()];
        // One untimed round first: the first path measured would otherwise pay for the
        // allocator's and the CPU's warm-up alone.
        for (_, _, make) in &paths {
            run_once(&plan, make);
        }
        for _ in 0..RUNS {
            for (k, (_, _, make)) in paths.iter().enumerate() {
                let (rate, bpr) = run_once(&plan, make);
                rates[k].push(rate);
                bytes[k] = bpr;
            }
        }
        for (k, (name, target, _)) in paths.iter().enumerate() {
            let rate = median(rates[k].clone());
            let bpr = if bytes[k] > 0.0 {
                format!("{:.1}", bytes[k])
            } else {
                "-".into()
            };
            let vs = target.map_or("-".into(), |t| format!("{:.2}x", rate / t));
            println!("{hosts:<10} {name:<18} {rate:>14.0} {bpr:>10} {vs:>8}");
            if *name == "generate+ilp" {
                ilp_per_row.push(1.0 / rate);
            }
        }
    }
    if let [small, large] = ilp_per_row[..] {
        println!(
            "cost per row, generate+ilp, 100,000 vs 4,000 hosts: {:.2}x (target at most 1.50x)",
            large / small
        );
    }
    if std::env::var("WLRUN_BENCH_MEMORY").as_deref() != Ok("0") {
        memory();
    }
}
