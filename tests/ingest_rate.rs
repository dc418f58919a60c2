//! `rate R` on an ingest phase end to end: batches leave on a fixed schedule and the phase is
//! accounted as open-loop query runs are (docs/report-format.md, "Ingest phases"). The null
//! sink and embedded SQLite need no server. Timing is asserted only loosely (a shared 2-core
//! machine), and as lower bounds where the schedule guarantees them.

use std::path::Path;

use serde_json::Value;

#[path = "common/cli.rs"]
mod cli;
use cli::run_json_in;

/// 100 hosts x 1 day at 1 s: far more rows than any span here sends; `small`, 2,000 rows.
const SCHEMA: &str = r#"
workload t { seed 7 }
schema s {
  series host: symbol = format("h%d", n) for n in 0..100
  field  v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1d
}
schema small {
  series host: symbol = format("h%d", n) for n in 0..100
  field  v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 20s
}
"#;

fn workload(target: &str, ingest: &str) -> String {
    format!("{SCHEMA}\n{target}\n{ingest}\n")
}

fn ingest(r: &Value) -> &Value {
    &r["cells"][0]["phases"][0]
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// `scheduled = sent + cut off + unsent`, with the report's own counts.
fn assert_adds_up(p: &Value) {
    let s = &p["schedule"];
    assert_eq!(u(&s["cut_off_rows"]), u(&p["rows_cut_off"]));
    assert_eq!(
        u(&s["scheduled_rows"]),
        u(&p["rows_sent"]) + u(&s["cut_off_rows"]) + u(&s["unsent_rows"]),
        "{s}"
    );
}

fn column(csv: &str, name: &str) -> Vec<u64> {
    let mut lines = csv.lines();
    let at = lines
        .next()
        .unwrap()
        .split(',')
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name}"));
    lines
        .map(|l| l.split(',').nth(at).unwrap().parse().unwrap())
        .collect()
}

fn run_out(dir: &Path, text: &str) -> (i32, Value, String) {
    let o = cli::run_out(dir, text, &["--interval", "1", "-q"]);
    (o.code, o.report, o.stderr)
}

#[test]
fn a_rate_over_a_duration_sends_on_schedule_and_is_accounted() {
    let dir = tempfile::tempdir().unwrap();
    let text = workload(
        "target t { null }",
        "ingest steady { into t via null  rows s  batch 500 rows  workers 2  rate 20_000/s  duration 2s }",
    );
    let (code, r, err) = run_out(dir.path(), &text);
    assert_eq!(code, 0, "{err}");
    let p = ingest(&r);
    let s = &p["schedule"];
    assert_eq!(s["rate_rows_per_s"], 20_000.0);
    // 2 workers x 10,000 rows/s x 2 s: every slot in the span.
    assert_eq!(u(&s["scheduled_rows"]), 40_000, "{s}");
    assert_adds_up(p);
    let achieved = s["achieved_rate"].as_f64().unwrap();
    assert!(achieved >= 0.95, "{s}");
    assert!(u(&p["rows_sent"]) >= 38_000, "{p}");
    // Never more than the schedule: the span stops sending.
    assert!(u(&p["rows_sent"]) <= 40_000, "{p}");
    assert_eq!(
        u(&s["send_lag"]["count"]),
        u(&s["batch_latency_intended"]["count"])
    );
    assert!(u(&s["send_lag"]["count"]) >= 76, "{s}");
    assert!(u(&s["send_lag"]["p50_us"]) < 5_000, "{s}");
    assert!(s["late_share"].as_f64().unwrap() <= 1.0);
    assert!(err.contains("asked 20000/s: "), "{err}");

    // The per-interval series: each whole second carries about R rows.
    let counts = std::fs::read_to_string(
        dir.path()
            .join("res")
            .join(p["series"]["counts"].as_str().unwrap()),
    )
    .unwrap();
    let spans = column(&counts, "span_ms");
    let rows = column(&counts, "rows_sent");
    assert_eq!(rows.iter().sum::<u64>(), u(&p["rows_sent"]));
    // The intervals cover the phase's span, its last slot included (whole ms each).
    let covered = spans.iter().sum::<u64>() as f64;
    let elapsed_ms = p["elapsed_s"].as_f64().unwrap() * 1000.0;
    assert!(
        (covered - elapsed_ms).abs() <= spans.len() as f64,
        "{covered} ms in the series, {elapsed_ms} ms elapsed:\n{counts}"
    );
    let whole: Vec<u64> = spans
        .iter()
        .zip(&rows)
        .filter(|(s, _)| **s == 1000)
        .map(|(_, r)| *r)
        .collect();
    assert!(!whole.is_empty(), "{counts}");
    for r in whole {
        assert!(
            (14_000..=26_000).contains(&r),
            "{r} rows in a second:\n{counts}"
        );
    }
    // report.csv carries the open-loop columns on the ingest row.
    let csv = std::fs::read_to_string(dir.path().join("res/report.csv")).unwrap();
    assert_eq!(column(&csv, "scheduled"), vec![40_000]);
}

#[test]
fn a_rate_the_endpoint_cannot_keep_fails_with_its_unsent_rows() {
    let dir = tempfile::tempdir().unwrap();
    // Far beyond what SQLite (or this client) does in a second.
    let text = workload(
        "target local { sqlite \"bench.db\" }",
        "ingest flood { into local via sqlite  rows s  batch 1000 rows  rate 50_000_000/s  duration 1s }",
    );
    let (code, r, err) = run_json_in(dir.path(), &text, &[]);
    assert_eq!(code, 1, "{err}");
    let p = ingest(&r);
    assert_eq!(p["status"], "failed");
    let s = &p["schedule"];
    // The data (8,640,000 rows) caps the 50,000,000 slots of the span.
    assert_eq!(u(&s["scheduled_rows"]), 8_640_000, "{s}");
    assert!(u(&s["unsent_rows"]) > 0, "{s}");
    assert_adds_up(p);
    assert!(s["achieved_rate"].as_f64().unwrap() < 0.95, "{s}");
    assert_eq!(u(&p["rows_expected"]), 8_640_000);
    assert!(
        err.contains("scheduled rows at 50000000/s") && err.contains("fell behind"),
        "{err}"
    );
    // What was sent arrived: the shortfall is the schedule's, not lost rows.
    let db = rusqlite::Connection::open(dir.path().join("bench.db")).unwrap();
    let n: i64 = db
        .query_row("SELECT count(*) FROM s", [], |row| row.get(0))
        .unwrap();
    assert_eq!(n as u64, u(&p["rows_sent"]));
}

#[test]
fn a_rate_over_a_row_count_spans_rows_over_rate_and_sends_them_all() {
    let dir = tempfile::tempdir().unwrap();
    // 2,000 rows at 4,000 rows/s in batches of 250: the last batch's slot is 1,750 / 4,000 s
    // after the first, which no send may precede.
    let text = workload(
        "target t { null }",
        "ingest counted { into t via null  rows small  batch 250 rows  rate 4000/s }",
    );
    let (code, r, err) = run_json_in(dir.path(), &text, &[]);
    assert_eq!(code, 0, "{err}");
    let p = ingest(&r);
    let s = &p["schedule"];
    assert_eq!(u(&p["rows_sent"]), 2_000);
    assert_eq!(u(&s["scheduled_rows"]), 2_000);
    assert_eq!(u(&s["unsent_rows"]), 0);
    assert_eq!(s["achieved_rate"], 1.0);
    assert_eq!(u(&s["send_lag"]["count"]), 8);
    // `elapsed_s` is the span the schedule covers: its 8 slots of 250 rows end 2,000 / 4,000 s
    // after its start, so the rate never exceeds the one asked.
    assert!(p["elapsed_s"].as_f64().unwrap() >= 0.5, "{p}");
    assert!(p["rows_per_s"].as_f64().unwrap() <= 4_000.0, "{p}");
}

#[test]
fn without_a_rate_there_is_no_schedule_and_calibration_is_unpaced() {
    let dir = tempfile::tempdir().unwrap();
    let text = workload(
        "target t { null }",
        "ingest free { into t via null  rows small }",
    );
    let (code, r, err) = run_json_in(dir.path(), &text, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(ingest(&r).get("schedule").is_none(), "{}", ingest(&r));

    let text = workload(
        "target local { sqlite \"bench.db\" }",
        "ingest paced { into local via sqlite  rows small  batch 500 rows  rate 10_000/s  calibrate }",
    );
    let (code, r, err) = run_json_in(dir.path(), &text, &[]);
    assert_eq!(code, 0, "{err}");
    let p = ingest(&r);
    assert_eq!(u(&p["schedule"]["scheduled_rows"]), 2_000);
    // The null-sink ceiling is measured without the schedule: far above the asked rate.
    let ceiling = p["calibration"]["null_rows_per_s"].as_f64();
    assert!(ceiling.is_none_or(|c| c > 10_000.0), "{p}");
}
