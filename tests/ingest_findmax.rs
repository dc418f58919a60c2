//! `find max rate` on an ingest (docs/language.md, "find max rate"): the highest row rate whose
//! visibility lag stays within its bound, against an in-test server that makes rows visible
//! through a single applier of a fixed capacity (QuestDB's WAL apply, reduced to its rate).
//! Below the capacity the lag is the server's delay plus a batch; above it the backlog, and
//! the lag, grow for as long as the step sends, so the answer must sit near the capacity.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

#[path = "common/cli.rs"]
mod cli;
#[path = "common/oracles/mod.rs"]
mod oracles;

use oracles::fresh::{FreshServer, SCHEMA};

/// Runs `text` with `--out`: the exit code, report.json's first phase, and what was printed.
fn run(dir: &Path, text: &str) -> (i32, Value, String) {
    let o = cli::run_out(dir, text, &[]);
    (o.code, o.phase(), o.printed())
}

#[test]
fn the_answer_sits_at_the_servers_apply_capacity() {
    const CAPACITY: f64 = 20_000.0;
    let server = FreshServer::start_applying(Duration::from_millis(20), 0, CAPACITY);
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{SCHEMA}{}
ingest load {{
  into fake via ilp_http
  rows s
  batch 500 rows
  probe visible every 50ms within 15s
  warmup 500ms
  find max rate from 5_000/s where lag_p99 < 300ms samples 60 resolution 10%
}}
",
        server.target()
    );
    let (code, p, printed) = run(dir.path(), &text);
    eprintln!("{printed}");
    let f = &p["findmax"];
    assert_eq!(code, 0, "{printed}\n{f:#}");
    assert_eq!(f["outcome"], "bracketed", "{f:#}");
    assert_eq!(f["probes"], true);
    let answer = f["answer_per_s"].as_f64().unwrap();
    assert!(
        (0.8 * CAPACITY..=1.15 * CAPACITY).contains(&answer),
        "answer {answer} rows/s for an applier of {CAPACITY} rows/s: {f:#}"
    );
    let steps = f["steps"].as_array().unwrap();
    // The path: 5k, 10k, 20k doubling, then a step far above the capacity breaks on its lag.
    let rates: Vec<f64> = steps
        .iter()
        .map(|s| s["rate_per_s"].as_f64().unwrap())
        .collect();
    assert_eq!(&rates[..2], &[5_000.0, 10_000.0], "{rates:?}");
    for s in steps {
        let rate = s["rate_per_s"].as_f64().unwrap();
        if rate <= 0.6 * CAPACITY {
            assert_eq!(s["verdict"], "met", "{s:#}");
        }
        if rate >= 1.3 * CAPACITY {
            assert_eq!(s["verdict"], "broke", "{s:#}");
            let why = s["broke"][0].as_str().unwrap();
            assert!(why.starts_with("lag_p99 < 300ms (measured"), "{why}");
        }
        // Each step's accounting holds: every row due was sent, cut off or left unsent.
        let scheduled = s["scheduled"].as_u64().unwrap();
        let sent = s["ok"].as_u64().unwrap() + s["failed"].as_u64().unwrap();
        assert_eq!(
            scheduled,
            sent + s["cut_off"].as_u64().unwrap() + s["unsent"].as_u64().unwrap(),
            "{s:#}"
        );
        // 500 ms of warm-up and 60 probes of 50 ms: 3.5 s at the step's rate.
        assert!(
            (scheduled as f64 - 3.5 * rate).abs() <= 500.0 + 0.01 * 3.5 * rate,
            "{s:#}"
        );
    }
    // The phase's figures are the answer step's.
    let answer_step = steps
        .iter()
        .find(|s| s["rate_per_s"].as_f64() == Some(answer))
        .unwrap();
    assert_eq!(p["rows_sent"], answer_step["ok"], "{p:#}");
    assert!(
        p["freshness"]["probes_warmup"].as_u64().unwrap() >= 5,
        "{p:#}"
    );
    assert!(printed.contains("find max rate: "), "{printed}");
    assert!(printed.contains("lag p99"), "{printed}");
    // Every row of every step reached the server.
    let sent: u64 = steps.iter().map(|s| s["ok"].as_u64().unwrap()).sum();
    assert_eq!(sent, server.rows());
}

#[test]
fn a_step_the_rows_cannot_fill_ends_the_search_failed() {
    let server = FreshServer::start(Duration::from_millis(1), 0);
    let dir = tempfile::tempdir().unwrap();
    // 10 hosts x 5 minutes: 3,000 rows; steps of 2 s at 100/s, 200/s, 400/s and 800/s fit,
    // 1,600/s would need 3,200.
    let text = format!(
        r#"
workload t {{ seed 7 }}
schema s {{
  series host: symbol = format("h%d", n) for n in 0..10
  field  v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 5m
}}
{}
ingest load {{
  into fake via ilp_http
  rows s
  batch 50 rows
  duration 2s
  find max rate from 100/s where errors == 0
}}
"#,
        server.target()
    );
    let (code, p, printed) = run(dir.path(), &text);
    assert_eq!(code, 1, "{printed}");
    // The checker warned before the run began.
    assert!(
        printed.contains("steps above 1500/s cannot be filled by the ingest's 3,000 rows"),
        "{printed}"
    );
    let f = &p["findmax"];
    assert_eq!(f["outcome"], "refused", "{p:#}");
    assert_eq!(f["steps"].as_array().unwrap().len(), 4, "{f:#}");
    assert_eq!(f["answer_per_s"], 800.0, "{f:#}");
    assert!(
        printed.contains(
            "a step at 1600/s for 2.0s needs 3,200 rows, and the ingest's rows hold 3,000"
        ),
        "{printed}"
    );
    // The four steps' rows, and no more, reached the server.
    assert_eq!(server.rows(), 2 * (100 + 200 + 400 + 800));
}
