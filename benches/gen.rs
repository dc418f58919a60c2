//! `cargo bench --bench gen`: rows per second on one core for TSBS cpu-only, generate-only and
//! generate + encode in each format (CSV, ILP, the binary file format), at 4,000 and 100,000
//! hosts. Prints medians of several runs and the ratio to the targets
//! (15 M rows/s generate-only, 5 M rows/s generate + ILP).

use std::sync::Arc;
use std::time::Instant;

use wlrun::check::{check_text, schema_plan, Options};
use wlrun::encode::csv::CsvBatchEncoder;
use wlrun::encode::{BinWriter, IlpEncoder, TimestampStyle};
use wlrun::gen::batch::{Batch, BatchSchema};
use wlrun::gen::Columnar;
use wlrun::plan::SchemaPlan;

const RUNS: usize = 5;
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

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

type Consumer = Box<dyn FnMut(&Batch) -> usize>;

/// Rows/s and bytes/row of one way of consuming the generated batches; `make` builds the
/// consumer for each run from that run's batch layout (encoders cache per-dictionary bytes).
fn measure(plan: &SchemaPlan, mut make: impl FnMut(Arc<BatchSchema>) -> Consumer) -> (f64, f64) {
    let mut rates = Vec::new();
    let mut bytes_per_row = 0.0;
    for _ in 0..RUNS {
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
        rates.push(rows as f64 / started.elapsed().as_secs_f64());
        bytes_per_row = bytes as f64 / rows as f64;
    }
    (median(rates), bytes_per_row)
}

fn main() {
    println!(
        "TSBS cpu-only, one core, median of {RUNS} runs, batches of {} rows",
        batch_rows()
    );
    println!(
        "{:<10} {:<18} {:>14} {:>10} {:>8}",
        "hosts", "path", "rows/s", "bytes/row", "target"
    );
    for (hosts, minutes) in [(4_000u64, 30u64), (100_000, 2)] {
        let plan = tsbs(hosts, minutes);
        let (gen_rate, _) = measure(&plan, |_| Box::new(|_: &Batch| 0));
        println!(
            "{hosts:<10} {:<18} {:>14.0} {:>10} {:>7.2}x",
            "generate",
            gen_rate,
            "-",
            gen_rate / 15e6
        );
        let (csv_rate, csv_bpr) = measure(&plan, |_| {
            let mut enc = CsvBatchEncoder::new(TimestampStyle::Rfc3339);
            let mut buf = Vec::with_capacity(8 << 20);
            Box::new(move |b: &Batch| {
                buf.clear();
                enc.encode(b, &mut buf);
                buf.len()
            })
        });
        println!(
            "{hosts:<10} {:<18} {:>14.0} {:>10.1} {:>8}",
            "generate+csv", csv_rate, csv_bpr, "-"
        );
        let (ilp_rate, ilp_bpr) = measure(&plan, |schema| {
            let mut enc = IlpEncoder::new(schema).expect("ilp encoder");
            let mut buf = Vec::with_capacity(8 << 20);
            Box::new(move |b: &Batch| {
                buf.clear();
                enc.encode(b, &mut buf);
                buf.len()
            })
        });
        println!(
            "{hosts:<10} {:<18} {:>14.0} {:>10.1} {:>7.2}x",
            "generate+ilp",
            ilp_rate,
            ilp_bpr,
            ilp_rate / 5e6
        );
        let (bin_rate, _) = measure(&plan, |schema| {
            let mut w = BinWriter::new(std::io::sink(), &schema, 123, None).expect("bin writer");
            Box::new(move |b: &Batch| {
                w.write(b).expect("the sink accepts");
                0
            })
        });
        println!(
            "{hosts:<10} {:<18} {:>14.0} {:>10} {:>8}",
            "generate+bin", bin_rate, "-", "-"
        );
    }
}
