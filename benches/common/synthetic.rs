//! A seeded synthetic run directory, as `wlrun run --out DIR` leaves it (report.json, the
//! series CSVs and interval logs), at a size no test server can produce quickly: for timing
//! `wlrun report` and `wlrun compare` on a long run of many cells.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use wlrun::report::series::{
    IngestInterval, Measured, RunInterval, SeriesRef, DIR, TAG_BATCH, TAG_LATENCY,
};
use wlrun::report::{
    Accounting, CellReport, IngestReport, PhaseReport, QueryReport, QuerySetup, RateCounts, Report,
    RunReport, Status, REPORT_FORMAT,
};

/// What to generate.
#[derive(Clone, Debug)]
pub struct Synthetic {
    pub cells: usize,
    /// Intervals per phase.
    pub intervals: usize,
    pub interval_ms: u64,
    pub seed: u64,
    /// Multiplies every throughput (0.9: a 10% drop); latencies are divided by it.
    pub speed: f64,
    /// Relative noise of an interval's rate (0.03: 3%), AR(1) with `phi` between intervals.
    pub noise: f64,
    pub phi: f64,
}

impl Default for Synthetic {
    fn default() -> Synthetic {
        Synthetic {
            cells: 24,
            intervals: 600,
            interval_ms: 1000,
            seed: 1,
            speed: 1.0,
            noise: 0.03,
            phi: 0.5,
        }
    }
}

/// SplitMix64 with Box–Muller normals: reproducible noise without a dependency.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// An AR(1) multiplier around 1: `1 + noise * x`, `x` of unit variance.
struct Wobble {
    x: f64,
    phi: f64,
    noise: f64,
}

impl Wobble {
    fn next(&mut self, rng: &mut Rng) -> f64 {
        self.x = self.phi * self.x + (1.0 - self.phi * self.phi).sqrt() * rng.normal();
        (1.0 + self.noise * self.x).max(0.05)
    }
}

fn histogram() -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 1_000, 3).expect("static bounds");
    h.auto(true);
    h
}

/// Writes a run directory of `s.cells` cells, each an ingest phase `load` and a query run
/// `explore` of `s.intervals` intervals, into `dir` (created), and returns its report.
pub fn write_run(dir: &Path, s: &Synthetic) -> Report {
    std::fs::create_dir_all(dir.join(DIR)).expect("the run directory");
    let mut rng = Rng(s.seed);
    let start_ms: u64 = 1_796_000_000_000;
    let cells = (1..=s.cells)
        .map(|cell| {
            let ingest = ingest_phase(dir, s, &mut rng, cell, start_ms);
            let queries = query_phase(dir, s, &mut rng, cell, start_ms);
            CellReport {
                index: cell,
                key: format!("shard={cell}"),
                phases: vec![
                    PhaseReport::Ingest(Box::new(ingest)),
                    PhaseReport::Queries(Box::new(queries)),
                ],
            }
        })
        .collect();
    let report = Report {
        format: REPORT_FORMAT,
        workload: "synthetic".into(),
        file: "synthetic.wl".into(),
        seed: s.seed,
        plan: None,
        started: "2026-12-01T00:00:00Z".into(),
        elapsed_s: (s.cells * 2 * s.intervals) as f64 * s.interval_ms as f64 / 1000.0,
        interrupted: false,
        signal: None,
        environment: None,
        cells,
        shard: None,
        merged: None,
    };
    let text = serde_json::to_string_pretty(&report).expect("the report serializes") + "\n";
    std::fs::write(dir.join("report.json"), text).expect("report.json");
    report
}

/// The series files of one phase, and their reference.
struct Files {
    sref: SeriesRef,
    csv: csv::Writer<File>,
    hlog: File,
}

/// The series of a phase measured from `start_ms` through its intervals.
fn files(dir: &Path, s: &Synthetic, cell: usize, phase: &str, start_ms: u64) -> Files {
    let (counts, hlog) = SeriesRef::paths(cell, phase);
    let end_ms = start_ms + s.intervals as u64 * s.interval_ms;
    Files {
        csv: csv::Writer::from_path(dir.join(&counts)).expect("a series CSV"),
        hlog: File::create(dir.join(&hlog)).expect("an interval log"),
        sref: SeriesRef {
            interval_ms: s.interval_ms,
            counts,
            hlog,
            intervals: s.intervals as u64,
            measured: vec![Measured {
                from_unix_ms: start_ms as f64,
                to_unix_ms: end_ms as f64,
            }],
        },
    }
}

fn write_log(
    hlog: &mut File,
    start_ms: u64,
    interval_ms: u64,
    tag: &str,
    hists: &[Histogram<u64>],
) {
    let mut serializer = V2DeflateSerializer::new();
    let mut log = IntervalLogWriterBuilder::new()
        .add_comment("wlrun: synthetic, microseconds")
        .with_start_time(UNIX_EPOCH + Duration::from_millis(start_ms))
        .with_max_value_divisor(1000.0)
        .begin_log_with(hlog, &mut serializer)
        .expect("the log header");
    for (i, h) in hists.iter().enumerate() {
        // Unix time, as the runner writes it: the log's StartTime is only a comment.
        let at = Duration::from_millis(start_ms + i as u64 * interval_ms);
        log.write_histogram(h, at, Duration::from_millis(interval_ms), Tag::new(tag))
            .expect("an interval");
    }
}

fn ingest_phase(
    dir: &Path,
    s: &Synthetic,
    rng: &mut Rng,
    cell: usize,
    start_ms: u64,
) -> IngestReport {
    let mut f = files(dir, s, cell, "load", start_ms);
    let mut wobble = Wobble {
        x: 0.0,
        phi: s.phi,
        noise: s.noise,
    };
    let batch_rows = 10_000u64;
    let base_rate = 200_000.0 * (1.0 + cell as f64 / 10.0);
    let mut total = histogram();
    let mut hists = Vec::with_capacity(s.intervals);
    let mut rows = 0u64;
    for i in 0..s.intervals {
        let w = wobble.next(rng);
        let span_s = s.interval_ms as f64 / 1000.0;
        let sent = (base_rate * s.speed * w * span_s) as u64;
        let mut h = histogram();
        for _ in 0..20 {
            let us = 5_000.0 / s.speed / w * (1.0 + 0.3 * rng.uniform());
            h.record(us as u64).expect("auto-resized");
        }
        total.add(&h).expect("same bounds");
        let mut row = IngestInterval {
            start_ms: start_ms + i as u64 * s.interval_ms,
            span_ms: s.interval_ms,
            rows_sent: sent,
            rows_acked: Some(sent),
            payload_bytes: sent * 100,
            socket_bytes: sent * 100,
            batches: sent.div_ceil(batch_rows),
            errors: 0,
            ..IngestInterval::default()
        };
        row.set_batch_latency(&h);
        f.csv.serialize(row).expect("a CSV row");
        hists.push(h);
        rows += sent;
    }
    f.csv.flush().expect("the CSV");
    write_log(&mut f.hlog, start_ms, s.interval_ms, TAG_BATCH, &hists);
    let elapsed_s = (s.intervals as u64 * s.interval_ms) as f64 / 1000.0;
    let rate = rows as f64 / elapsed_s;
    IngestReport {
        server: None,
        server_metrics: Vec::new(),
        name: "load".into(),
        endpoint: "db.qwp (qwp)".into(),
        kind: "qwp".into(),
        table: "cpu".into(),
        workers: 4,
        batch_rows,
        status: Status::Ok,
        failures: Vec::new(),
        warnings: Vec::new(),
        rows_expected: Some(rows),
        rows_generated: rows,
        rows_dropped: 0,
        payload_bytes: rows * 100,
        rows_sent: rows,
        rows_acked: Some(rows),
        rows_cut_off: 0,
        rows_visible: None,
        visible_baseline: None,
        visible_after_s: None,
        socket_bytes: rows * 100,
        payload_bytes_per_row: Some(100.0),
        socket_bytes_per_row: Some(100.0),
        elapsed_s,
        rows_per_s: Some(rate),
        rate_counts: RateCounts::Acked,
        send_rows_per_s: Some(rate),
        ack_rows_per_s: Some(rate),
        batch_latency: wlrun::report::Latency::of(&total),
        client_cpu_s: Some(elapsed_s * 0.5),
        errors: BTreeMap::new(),
        rows_per_worker: vec![rows / 4; 4],
        calibration: None,
        series: Some(f.sref),
        connecting: None,
        schedule: None,
        concurrent: None,
        freshness: None,
        findmax: None,
        stages: Vec::new(),
        commits: None,
        input: None,
        link: None,
        fields_per_row: None,
        metrics_per_s: None,
    }
}

fn query_phase(
    dir: &Path,
    s: &Synthetic,
    rng: &mut Rng,
    cell: usize,
    start_ms: u64,
) -> QueryReport {
    // The query run follows the ingest phase.
    let start_ms = start_ms + s.intervals as u64 * s.interval_ms;
    let mut f = files(dir, s, cell, "explore", start_ms);
    let mut wobble = Wobble {
        x: 0.0,
        phi: s.phi,
        noise: s.noise,
    };
    let base_qps = 400.0 + cell as f64 * 10.0;
    let mut total = histogram();
    let mut hists = Vec::with_capacity(s.intervals);
    let mut ok = 0u64;
    for i in 0..s.intervals {
        let w = wobble.next(rng);
        let n = (base_qps * s.speed * w * s.interval_ms as f64 / 1000.0) as u64;
        let mut h = histogram();
        for _ in 0..20 {
            let us = 2_000.0 / s.speed / w * (1.0 + rng.uniform());
            h.record(us as u64).expect("auto-resized");
        }
        total.add(&h).expect("same bounds");
        let mut row = RunInterval {
            start_ms: start_ms + i as u64 * s.interval_ms,
            span_ms: s.interval_ms,
            ok: n,
            ..RunInterval::default()
        };
        row.set_latency(&h, None);
        f.csv.serialize(row).expect("a CSV row");
        hists.push(h);
        ok += n;
    }
    f.csv.flush().expect("the CSV");
    write_log(&mut f.hlog, start_ms, s.interval_ms, TAG_LATENCY, &hists);
    let elapsed_s = (s.intervals as u64 * s.interval_ms) as f64 / 1000.0;
    let latency = wlrun::report::Latency::of(&total);
    RunReport {
        server: None,
        server_metrics: Vec::new(),
        name: "explore".into(),
        endpoint: "db.pg".into(),
        kind: "pg".into(),
        setup: QuerySetup { workers: 4 },
        load: "closed".into(),
        status: Status::Ok,
        failures: Vec::new(),
        warnings: Vec::new(),
        elapsed_s,
        ok,
        failed: 0,
        error_rate: 0.0,
        output: wlrun::report::QueryOutput {
            rows: ok,
            qps: Some(ok as f64 / elapsed_s),
        },
        sum_us: (latency.mean_us * ok as f64) as u64,
        latency,
        service: None,
        errors: BTreeMap::new(),
        traffic: wlrun::report::QueryTraffic {
            queries_per_worker: vec![ok / 4; 4],
            routed: false,
        },
        client_cpu_s: Some(elapsed_s * 0.2),
        client_wait_s: None,
        accounting: Accounting {
            scheduled: ok,
            ..Accounting::default()
        },
        repeats: Vec::new(),
        detail: Default::default(),
        series: Some(f.sref),
        connecting: None,
        stages: Vec::new(),
        concurrent: None,
        findmax: None,
    }
}
