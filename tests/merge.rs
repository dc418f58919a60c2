//! `wlrun merge` from outside, on synthetic shard directories whose samples are known
//! (tests/common/shard_dirs.rs): the merged run directory holds the sums, the histogram of
//! every shard's samples, rates over the union of the shards' spans, thresholds judged on all
//! samples, and series merged interval by interval; a missing, duplicated, foreign, failed or
//! killed shard fails the merged report naming it (exit 1); what cannot be read exits 2.
//! `wlrun report` of a directory of shards prints the merged view, and `wlrun report` and
//! `wlrun compare` read the merged directory as any run's. Last, real shards: three `wlrun run`
//! processes as a Kubernetes Indexed Job runs them, against PostgreSQL (`WLRUN_TEST_PG`, or
//! skipped with a note), merged: the counts one process gives.

#[path = "common/cli.rs"]
mod cli;
#[path = "common/http_server.rs"]
mod http_server;
#[path = "common/servers.rs"]
mod servers;
#[path = "common/shard_dirs.rs"]
mod shard_dirs;
#[path = "common/shard_procs.rs"]
mod shard_procs;

use std::path::{Path, PathBuf};

use serde_json::Value;

use shard_dirs::{
    batch_samples, first_result_samples, histogram, ingest_span, query_samples, query_span, rows,
    write_run, write_shard, Spec,
};
use wlrun::report::series::{read, read_hlog, Series};
use wlrun::report::Latency;

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = cli::wlrun(dir, args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `wlrun merge DIRS --out merged` in `parent`: the exit code, the merged report.json and
/// what was printed.
fn merge(parent: &Path, dirs: &[&str]) -> (i32, Value, String) {
    let _ = std::fs::remove_dir_all(parent.join("merged"));
    let mut args = vec!["merge"];
    args.extend_from_slice(dirs);
    args.extend_from_slice(&["--out", "merged"]);
    let (code, out, err) = run(parent, &args);
    let text = std::fs::read_to_string(parent.join("merged/report.json"))
        .unwrap_or_else(|e| panic!("no merged report.json ({e}): {out}\n{err}"));
    (
        code,
        serde_json::from_str(&text).unwrap(),
        format!("{out}{err}"),
    )
}

fn phase<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["cells"][0]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no phase {name}"))
}

fn latency_of(samples: impl IntoIterator<Item = u64>) -> Value {
    let all: Vec<u64> = samples.into_iter().collect();
    serde_json::to_value(Latency::of(&histogram(&all))).unwrap()
}

fn close(a: &Value, b: f64) {
    let a = a.as_f64().unwrap_or_else(|| panic!("not a number: {a}"));
    assert!((a - b).abs() < 1e-6 * b.abs().max(1.0), "{a} != {b}");
}

#[test]
fn two_shards_merge_into_one_run_directory_of_their_sums() {
    let parent = tempfile::tempdir().unwrap();
    write_run(parent.path(), 2);
    let (code, r, printed) = merge(parent.path(), &["shard-1", "shard-0"]);
    assert_eq!(code, 0, "{printed}");
    assert!(r.get("shard").is_none());
    let m = &r["merged"];
    assert_eq!(m["count"], 2);
    assert_eq!(m["plan"], shard_dirs::PLAN);
    assert_eq!(m["failures"], serde_json::json!([]));
    let dirs: Vec<&str> = m["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["dir"].as_str().unwrap())
        .collect();
    assert_eq!(dirs, ["shard-0", "shard-1"], "in shard order");
    let skews = &m["phases"][0];
    assert_eq!(
        (skews["cell"].clone(), skews["phase"].clone()),
        (1.into(), "load".into())
    );
    assert_eq!(skews["shards"][1]["waited_start_ms"], 2.0);

    // The ingest: sums, shard 0's visible count, the histogram of every batch, rates over
    // the union of the spans.
    let load = phase(&r, "load");
    assert_eq!(load["status"], "ok", "{load}");
    assert_eq!(load["rows_sent"], rows(0) + rows(1));
    assert_eq!(load["rows_acked"], rows(0) + rows(1));
    assert_eq!(load["rows_visible"], 3_000);
    assert_eq!(load["workers"], 4);
    assert_eq!(
        load["rows_per_worker"],
        serde_json::json!([500, 500, 1000, 1000])
    );
    assert_eq!(load["socket_bytes"], 3_000 * 110);
    assert_eq!(load["rows_expected"], 3_000, "the plan's rows");
    assert_eq!(
        load["batch_latency"],
        latency_of(batch_samples(0).into_iter().chain(batch_samples(1)))
    );
    let union_s = (ingest_span(1).1 - ingest_span(0).0) / 1000.0;
    close(&load["elapsed_s"], union_s);
    close(&load["rows_per_s"], 3_000.0 / union_s);
    close(&load["client_cpu_s"], 1.0);
    let measured = &load["series"]["measured"][0];
    close(&measured["from_unix_ms"], ingest_span(0).0);
    close(&measured["to_unix_ms"], ingest_span(1).1);

    // The query run: judged on all samples over the union span, where each shard alone
    // failed `qps > 150/s`.
    let q = phase(&r, "q");
    assert_eq!(q["status"], "ok", "{q}");
    assert_eq!(q["ok"], 210);
    assert_eq!(q["rows"], 630);
    let all = latency_of(query_samples(0).into_iter().chain(query_samples(1)));
    assert_eq!(q["latency"], all);
    assert_eq!(q["query_types"][0]["latency"], all);
    assert_eq!(q["labels"][0]["latency"], all);
    let union_s = (query_span(1).1 - query_span(0).0) / 1000.0;
    close(&q["elapsed_s"], union_s);
    close(&q["qps"], 210.0 / union_s);
    close(&q["repeats"][0]["elapsed_s"], union_s);
    let thresholds = q["thresholds"].as_array().unwrap();
    assert!(thresholds.iter().all(|t| t["ok"] == true), "{thresholds:?}");
    assert_eq!(thresholds[1]["actual"], format!("{:.1}/s", 210.0 / union_s));
    assert_eq!(q["failures"], serde_json::json!([]));
    assert_eq!(q["warnings"], serde_json::json!(["every shard says this"]));
    assert_eq!(q["queries_per_worker"], serde_json::json!([50, 50, 55, 55]));

    // Result streaming, the run's and its type's: first results' histograms add, counts,
    // bytes and spans add, rates come from the sums (9,600 rows/s: shard 0 alone streamed
    // 8,000/s and shard 1 10,667/s, whose average is 9,333/s).
    let first = latency_of(
        first_result_samples(0)
            .into_iter()
            .chain(first_result_samples(1)),
    );
    for s in [&q["streaming"], &q["query_types"][0]["streaming"]] {
        assert_eq!(s["first_result"], first, "{s}");
        assert_eq!(s["streamed_queries"], 81);
        assert_eq!(s["single_piece_queries"], 24);
        assert_eq!(s["streamed_rows"], 12_000);
        assert_eq!(s["streamed_bytes"], 360_000);
        close(&s["streaming_s"], 1.25);
        close(&s["rows_per_s"], 9_600.0);
        close(&s["bytes_per_s"], 288_000.0);
        assert_eq!(s["egress_bytes"], 452_000);
        assert_eq!(s["egress_rows"], 15_000);
        close(&s["egress_bytes_per_row"], 452_000.0 / 15_000.0);
    }

    // The series, interval by interval: counts add, histograms add.
    let dir = parent.path().join("merged");
    let sref: wlrun::report::series::SeriesRef =
        serde_json::from_value(load["series"].clone()).unwrap();
    assert_eq!(sref.intervals, 3);
    let Series::Ingest(rows_) = read(&dir, &sref, true).unwrap() else {
        panic!("an ingest series")
    };
    let sent: Vec<u64> = rows_.iter().map(|r| r.rows_sent).collect();
    assert_eq!(sent, [250 + 500, 500 + 1000, 250 + 500]);
    assert_eq!(rows_[2].span_ms, 650, "the longest shard's span");
    let logged = read_hlog(&dir.join(&sref.hlog)).unwrap();
    assert_eq!(logged.len(), 3);
    let second: Vec<u64> = batch_samples(0)[50..100]
        .iter()
        .chain(&batch_samples(1)[50..100])
        .copied()
        .collect();
    assert_eq!(logged[1].histogram.len(), 100);
    assert_eq!(
        logged[1].histogram.value_at_quantile(0.99),
        histogram(&second).value_at_quantile(0.99)
    );
    assert_eq!(
        rows_[1].batch_p99_us,
        Some(logged[1].histogram.value_at_quantile(0.99))
    );

    // A run directory like any: the CSV, the page, the plan and the sources.
    for f in ["report.csv", "report.html", "plan.json", "sources/w.wl"] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    assert!(printed.contains("merged 2 of 2 shards"), "{printed}");

    // `wlrun report` reads it as any run, and says it was merged.
    let (code, text, err) = run(parent.path(), &["report", "merged"]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("merged 2 of 2 shards"), "{text}");
    assert!(
        text.contains("start skew at most 0.60 ms over 2 phase starts"),
        "{text}"
    );
    let (code, csv, err) = run(parent.path(), &["report", "merged", "--csv"]);
    assert_eq!(code, 0, "{err}");
    assert!(csv.lines().count() >= 4, "{csv}");
}

#[test]
fn three_shards_are_judged_on_all_their_samples() {
    let parent = tempfile::tempdir().unwrap();
    write_run(parent.path(), 3);
    let (code, r, printed) = merge(parent.path(), &["shard-0", "shard-1", "shard-2"]);
    assert_eq!(code, 1, "{printed}");
    let q = phase(&r, "q");
    assert_eq!(q["status"], "failed");
    let all: Vec<u64> = (0..3).flat_map(query_samples).collect();
    let p99 = histogram(&all).value_at_quantile(0.99);
    assert_eq!(q["latency"]["p99_us"], p99);
    assert!(p99 > 20_000);
    // Shard 2 measured no streaming: the merged figures are shards 0 and 1's, as one process
    // adds nothing for queries without rows.
    let first = latency_of(
        first_result_samples(0)
            .into_iter()
            .chain(first_result_samples(1)),
    );
    assert_eq!(q["streaming"]["first_result"], first);
    assert_eq!(q["query_types"][0]["streaming"]["streamed_rows"], 12_000);
    let failures: Vec<&str> = q["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    // The merged verdicts only: shard 2's own p99 line and every shard's qps line are gone.
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0].starts_with("threshold not met: p99 < 20ms (measured")
            && failures[0].ends_with(", all shards)"),
        "{failures:?}"
    );
    // Shards that failed only thresholds are not failed shards.
    assert_eq!(r["merged"]["failures"], serde_json::json!([]));
    assert!(
        printed.contains("threshold not met: p99 < 20ms"),
        "{printed}"
    );
}

/// The merged report's failures, checked to name `what`, and its exit code 1.
fn fails_naming(parent: &Path, dirs: &[&str], what: &[&str]) -> Value {
    let (code, r, printed) = merge(parent, dirs);
    assert_eq!(code, 1, "{printed}");
    let failures = r["merged"]["failures"].to_string();
    for w in what {
        assert!(failures.contains(w), "{w} not in {failures}");
        assert!(printed.contains(w), "{w} not printed: {printed}");
    }
    r
}

#[test]
fn a_missing_shard_fails_the_merged_report_naming_it() {
    let parent = tempfile::tempdir().unwrap();
    write_run(parent.path(), 3);
    let r = fails_naming(
        parent.path(),
        &["shard-0", "shard-2"],
        &["shard 1 of 3 is missing"],
    );
    let load = phase(&r, "load");
    assert_eq!(load["status"], "failed");
    assert_eq!(
        load["rows_sent"],
        rows(0) + rows(2),
        "what was given, never more"
    );
    assert!(load["failures"]
        .to_string()
        .contains("shard 1 of the run has no part"));
}

#[test]
fn a_shard_given_twice_fails_naming_both_directories() {
    let parent = tempfile::tempdir().unwrap();
    write_run(parent.path(), 2);
    write_shard(&parent.path().join("again"), &Spec::new(1, 2));
    let r = fails_naming(
        parent.path(),
        &["shard-0", "shard-1", "again"],
        &["shard 1 (again) is given twice: shard-1 holds shard 1 too"],
    );
    // Counted once.
    assert_eq!(phase(&r, "load")["rows_sent"], rows(0) + rows(1));
    let refused = &r["merged"]["shards"][2];
    assert_eq!(
        (refused["dir"].clone(), refused["merged"].clone()),
        ("again".into(), false.into())
    );
}

#[test]
fn a_shard_of_another_plan_seed_or_count_fails_naming_it() {
    let parent = tempfile::tempdir().unwrap();
    write_run(parent.path(), 3);
    let foreign = Spec {
        plan: "sha256:0ther0000000000000000000000000000000000000000000000000000000000".into(),
        ..Spec::new(1, 3)
    };
    write_shard(&parent.path().join("other-plan"), &foreign);
    write_shard(
        &parent.path().join("other-seed"),
        &Spec {
            seed: 7,
            ..Spec::new(1, 3)
        },
    );
    write_shard(&parent.path().join("other-count"), &Spec::new(1, 4));
    fails_naming(
        parent.path(),
        &["shard-0", "other-plan", "shard-2"],
        &[
            "shard 1 (other-plan) ran another plan",
            "shard 1 of 3 is missing",
        ],
    );
    fails_naming(
        parent.path(),
        &["shard-0", "other-seed", "shard-2"],
        &["shard 1 (other-seed) ran with seed 7, not 42"],
    );
    fails_naming(
        parent.path(),
        &["shard-0", "other-count", "shard-2"],
        &["shard 1 (other-count) is shard 1 of 4, not of 3"],
    );
}

#[test]
fn a_failed_or_killed_shard_fails_naming_it() {
    let parent = tempfile::tempdir().unwrap();
    write_run(parent.path(), 3);
    let failed = Spec {
        failure: Some("shard 2 did not reach barrier 3 within 120 s".into()),
        errors: vec![("sql", 2, "relation \"cpu\" does not exist (42P01)".into())],
        ..Spec::new(1, 3)
    };
    write_shard(&parent.path().join("shard-1"), &failed);
    let r = fails_naming(
        parent.path(),
        &["shard-0", "shard-1", "shard-2"],
        &["shard 1 (shard-1) failed: shard 2 did not reach barrier 3"],
    );
    let q = phase(&r, "q");
    assert_eq!(q["failed"], 2);
    assert_eq!(
        q["errors"]["sql"]["first"],
        "relation \"cpu\" does not exist (42P01)"
    );
    assert!(q["failures"]
        .to_string()
        .contains("shard 1: shards: shard 2 did not reach barrier 3"));

    // Killed: no report.json, its intervals and the shard.json it wrote when it started.
    let dir = parent.path().join("shard-1");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    std::fs::remove_file(dir.join("report.json")).unwrap();
    let mut which = report["shard"].clone();
    which["phases"] = serde_json::json!([]);
    which.as_object_mut().unwrap().remove("failure");
    std::fs::write(dir.join("shard.json"), which.to_string()).unwrap();
    let mut lines = String::new();
    for (p, kind) in [("load", "ingest"), ("q", "queries")] {
        let ph = phase(&report, p);
        lines += &serde_json::json!({
            "cell": 1, "key": "", "phase": p, "kind": kind, "endpoint": "db.pg (pg)",
            "workers": 2, "load": if kind == "ingest" { Value::Null } else { "closed".into() },
            "acks": true, "open_loop": false, "started_ms": shard_dirs::BASE_MS,
            "series": ph["series"],
        })
        .to_string();
        lines.push('\n');
    }
    std::fs::write(dir.join("series/phases.jsonl"), lines).unwrap();
    let r = fails_naming(
        parent.path(),
        &["shard-0", "shard-1", "shard-2"],
        &["shard 1 (shard-1) was killed"],
    );
    // Its intervals are still counted.
    assert_eq!(phase(&r, "load")["rows_sent"], rows(0) + rows(1) + rows(2));
    assert_eq!(r["merged"]["shards"][1]["killed"], true);
}

#[test]
fn what_is_not_a_shards_run_directory_exits_2_naming_it() {
    let parent = tempfile::tempdir().unwrap();
    write_run(parent.path(), 2);
    let (code, _, err) = run(
        parent.path(),
        &["merge", "shard-0", "nowhere", "--out", "m"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("nowhere is not a directory"), "{err}");

    let plain = parent.path().join("plain");
    write_shard(&plain, &Spec::new(0, 1));
    let text = std::fs::read_to_string(plain.join("report.json")).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v.as_object_mut().unwrap().remove("shard");
    std::fs::write(plain.join("report.json"), v.to_string()).unwrap();
    let (code, _, err) = run(parent.path(), &["merge", "shard-0", "plain", "--out", "m"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("plain is not a shard's run directory"),
        "{err}"
    );

    std::fs::write(parent.path().join("shard-1/report.json"), "{ not json").unwrap();
    let (code, _, err) = run(
        parent.path(),
        &["merge", "shard-0", "shard-1", "--out", "m"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("shard-1/report.json is not JSON"), "{err}");
    assert!(!parent.path().join("m").exists(), "nothing written");

    // An --out that holds something else.
    write_run(parent.path(), 2);
    let (code, _, err) = run(
        parent.path(),
        &["merge", "shard-0", "shard-1", "--out", "shard-0"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not empty"), "{err}");
}

#[test]
fn report_of_a_directory_of_shards_prints_the_merged_view() {
    let parent = tempfile::tempdir().unwrap();
    let shards = parent.path().join("job");
    write_run(&shards, 2);
    let (code, text, err) = run(parent.path(), &["report", "job"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("holds the run directories of 2 shards"),
        "{err}"
    );
    assert!(text.contains("merged 2 of 2 shards"), "{text}");
    let (code, json, err) = run(parent.path(), &["report", "job", "--json"]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(phase(&r, "q")["ok"], 210);
    assert_eq!(r["merged"]["count"], 2);
    // The same as `wlrun merge` writes.
    merge(&shards, &["shard-0", "shard-1"]);
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(shards.join("merged/report.json")).unwrap())
            .unwrap();
    assert_eq!(phase(&written, "q"), phase(&r, "q"));
    std::fs::remove_dir_all(shards.join("merged")).unwrap();
    let (code, html, err) = run(parent.path(), &["report", "job", "--html"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        html.contains("<svg") && html.contains("Over time"),
        "{}",
        &html[..200]
    );
    let (code, csv, err) = run(parent.path(), &["report", "job", "--csv"]);
    assert_eq!(code, 0, "{err}");
    assert!(csv.starts_with("cell,"), "{csv}");
    let leftovers: Vec<PathBuf> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("wlrun-merge-"))
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn compare_reads_a_merged_directory_against_a_single_process_run() {
    let parent = tempfile::tempdir().unwrap();
    write_run(parent.path(), 2);
    let (code, _, printed) = merge(parent.path(), &["shard-0", "shard-1"]);
    assert_eq!(code, 0, "{printed}");
    // One process: a run of one shard, its `shard` object taken out.
    let single = parent.path().join("single");
    write_shard(&single, &Spec::new(0, 1));
    let text = std::fs::read_to_string(single.join("report.json")).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v.as_object_mut().unwrap().remove("shard");
    std::fs::write(single.join("report.json"), v.to_string()).unwrap();
    // The fixture's one process loads shard 0's rows only: its plan expects fewer rows than
    // the 2-shard run's, and compare says so rather than compare them unasked.
    let (code, _, err) = run(parent.path(), &["compare", "single", "merged"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("ran different plans") && err.contains("phase load: rows_expected: "),
        "{err}"
    );
    let (code, text, err) = run(
        parent.path(),
        &["compare", "single", "merged", "--allow-different"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("q"), "{text}");
    let (code, json, err) = run(
        parent.path(),
        &["compare", "single", "merged", "--json", "--allow-different"],
    );
    assert_eq!(code, 0, "{err}");
    let c: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(c["only_in_base"], serde_json::json!([]));
    assert_eq!(c["only_in_new"], serde_json::json!([]));
}

/// The `n` shards of a Job run to their end, each with `--out job/shard-I`, shard `kill.0`
/// killed with SIGKILL `kill.1` after they start.
fn run_shards(
    dir: &Path,
    n: u64,
    kill: Option<(u64, std::time::Duration)>,
) -> Vec<shard_procs::Ran> {
    let plan = shard_procs::Plan {
        kill: kill.map(|(k, after)| (k, after, "KILL")),
        args: &["--barrier-timeout", "30s"],
        out: Some("job"),
        ..shard_procs::Plan::all(n)
    };
    shard_procs::shards(dir, plan).0
}

/// A shard SIGKILLed in the middle of a phase leaves its shard.json and the intervals that had
/// closed: the merge rebuilds its part as far as they go and fails naming it; the other shards
/// failed at the end barrier, and say so too.
#[test]
fn a_shard_killed_mid_phase_fails_the_merged_report_naming_it() {
    use http_server::{Behaviour, ServerHandle};
    let server =
        ServerHandle::start(Behaviour::ok().with_delay(std::time::Duration::from_millis(5)));
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"workload w {{ seed 3 }}
target svc {{ http "{}" {{ timeout 5s }} }}
run reqs {{
  against svc.http
  request GET "/x"
  connections 1
  duration 4s
  expect status 200
}}
"#,
        server.url()
    );
    std::fs::write(dir.path().join("w.wl"), text).unwrap();
    let ran = run_shards(
        dir.path(),
        3,
        Some((2, std::time::Duration::from_millis(2_000))),
    );
    assert_eq!(ran[2].signal, Some(9), "killed by SIGKILL: {}", ran[2].err);
    assert!(!dir.path().join("job/shard-2/report.json").exists());
    let job = dir.path().join("job");
    let r = fails_naming(
        &job,
        &["shard-0", "shard-1", "shard-2"],
        &["shard 2 (shard-2) was killed", "shard 0 (shard-0) failed: "],
    );
    let reqs = phase(&r, "reqs");
    assert_eq!(reqs["status"], "interrupted", "{reqs}");
    // Shard 2's closed intervals are in: more requests than shards 0 and 1 answered alone.
    let alone: u64 = (0..2)
        .map(|i| {
            let text = std::fs::read_to_string(job.join(format!("shard-{i}/report.json")));
            let v: Value = serde_json::from_str(&text.unwrap()).unwrap();
            count(&phase(&v, "reqs")["ok"])
        })
        .sum();
    assert!(count(&reqs["ok"]) > alone, "{} <= {alone}", reqs["ok"]);
    assert_eq!(r["merged"]["shards"][2]["killed"], true);
}

fn count(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn three_real_shards_merge_into_what_one_process_measures() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some(url) = rt.block_on(servers::pg_server()) else {
        return;
    };
    let table = format!("merge_cpu_{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    // 37 series (no shard gets a round share) x 60 timestamps.
    let text = format!(
        r#"import "std/tsbs/cpu-only.wl" as tsbs (hosts = 37, end = 2016-01-01T00:10:00Z)
workload w {{ seed 7 }}
target db {{ pg "{url}" }}
ingest load {{
  into db via pg table "{table}"
  rows tsbs.cpu
  batch 100 rows
  workers 2
  verify visible within 10s
}}
query busy {{
  sql "SELECT count(*) FROM {table} WHERE usage_user > $1"
  bind $1 = uniform(0, 100)
}}
run q {{
  against db.pg
  queries busy
  workers 2
  count 61
  expect p99 < 10s
}}
"#
    );
    std::fs::write(dir.path().join("w.wl"), text).unwrap();
    let (code, _, err) = run(dir.path(), &["run", "w.wl", "--quiet", "--out", "single"]);
    assert_eq!(code, 0, "{err}");

    for r in run_shards(dir.path(), 3, None) {
        assert_eq!(r.code, 0, "{}", r.err);
    }

    let job = dir.path().join("job");
    let (code, r, printed) = merge(&job, &["shard-0", "shard-1", "shard-2"]);
    assert_eq!(code, 0, "{printed}");
    let single: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("single/report.json")).unwrap(),
    )
    .unwrap();
    let shards: Vec<Value> = (0..3)
        .map(|i| {
            let text = std::fs::read_to_string(job.join(format!("shard-{i}/report.json")));
            serde_json::from_str(&text.unwrap()).unwrap()
        })
        .collect();
    let (load, one) = (phase(&r, "load"), phase(&single, "load"));
    for f in ["rows_sent", "rows_acked", "rows_visible", "rows_generated"] {
        assert_eq!(load[f], one[f], "{f}");
    }
    assert_eq!(count(&load["rows_sent"]), 2_220);
    assert_eq!(load["status"], "ok", "{load}");
    let (q, one) = (phase(&r, "q"), phase(&single, "q"));
    assert_eq!(
        (q["ok"].clone(), q["failed"].clone()),
        (one["ok"].clone(), 0.into())
    );
    assert_eq!(count(&q["ok"]), 61);
    assert_eq!(q["status"], "ok", "{q}");
    assert_eq!(q["thresholds"][0]["ok"], true);
    // Every histogram holds every shard's samples, and every shard's span is in the union.
    let sum = |name: &str, field: &str| -> u64 {
        shards
            .iter()
            .map(|s| count(&phase(s, name)[field]["count"]))
            .sum()
    };
    assert_eq!(
        count(&load["batch_latency"]["count"]),
        sum("load", "batch_latency")
    );
    assert_eq!(count(&q["latency"]["count"]), sum("q", "latency"));
    assert_eq!(count(&q["latency"]["count"]), 61);
    let longest = shards
        .iter()
        .map(|s| phase(s, "q")["elapsed_s"].as_f64().unwrap())
        .fold(0.0, f64::max);
    // The union is read from wall-clock instants, a shard's own span from its monotonic clock:
    // they may differ by the conversion's microseconds, never by a millisecond.
    assert!(q["elapsed_s"].as_f64().unwrap() >= longest - 0.001, "{q}");
    // The series add up to the report, and the merged run compares with the single one.
    let rows: u64 = std::fs::read_to_string(job.join("merged/series/1-load.csv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(2).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(rows, 2_220);
    let (code, _, err) = run(dir.path(), &["compare", "single", "job/merged"]);
    assert_eq!(code, 0, "{err}");
    let (code, text, err) = run(dir.path(), &["report", "job"]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("merged 3 of 3 shards"), "{text}");

    let (client, conn) = rt
        .block_on(tokio_postgres::connect(&url, tokio_postgres::NoTls))
        .unwrap();
    rt.spawn(conn);
    rt.block_on(client.execute(&format!("DROP TABLE IF EXISTS {table}"), &[]))
        .unwrap();
}
