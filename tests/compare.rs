//! `wlrun compare` from outside: golden renders (terminal and JSON) of the two checked-in run
//! directories under tests/golden/compare/ (tests/golden/compare/compare.wl says how they were
//! made), the exit codes of `--threshold`, and the messages of bad input; then real runs
//! against a server whose capacity the test sets (`oracles::load`, `Work::Serial`): a known
//! drop found, a change too short to test made inconclusive, runs of different plans refused,
//! a killed run compared.
//!
//! Update snapshots with `INSTA_UPDATE=always cargo test --test compare` and read every changed
//! `.snap` before committing it.

#[path = "common/cli.rs"]
mod cli;
#[path = "common/oracles/mod.rs"]
mod oracles;

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use cli::wlrun;
use oracles::load::{LoadServer, Work};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const BASE: &str = "tests/golden/compare/base";
const NEW: &str = "tests/golden/compare/new";

fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path("snapshots/compare");
    s.set_prepend_module_to_snapshot(false);
    s.set_omit_expression(true);
    s
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = wlrun(Path::new(ROOT), args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn golden_terminal_and_json_renders() {
    let (code, text, err) = run(&["compare", BASE, NEW]);
    assert_eq!(code, 0, "{err}");
    let (code, json, err) = run(&["compare", BASE, NEW, "--json"]);
    assert_eq!(code, 0, "{err}");
    // Deterministic: the same two runs give the same bytes.
    assert_eq!(run(&["compare", BASE, NEW]).1, text);
    settings().bind(|| {
        insta::assert_snapshot!("base_vs_new.txt", text);
        insta::assert_snapshot!("base_vs_new.json", json);
    });
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["only_in_base"], serde_json::json!(["workers=1"]));
    assert_eq!(v["only_in_new"], serde_json::json!([]));
    assert_eq!(v["cells"][0]["key"], "workers=2");
}

#[test]
fn golden_report_renders_of_the_same_runs() {
    for dir in [BASE, NEW] {
        let (code, text, err) = run(&["report", dir]);
        assert_eq!(code, 0, "{err}");
        let (code, json, err) = run(&["report", dir, "--json"]);
        assert_eq!(code, 0, "{err}");
        let (code, csv, err) = run(&["report", dir, "--csv"]);
        assert_eq!(code, 0, "{err}");
        let name = dir.rsplit('/').next().unwrap();
        settings().bind(|| {
            insta::assert_snapshot!(format!("report_{name}.txt"), text);
            insta::assert_snapshot!(format!("report_{name}.csv"), csv);
        });
        // --json gives report.json back as written.
        let written = std::fs::read_to_string(Path::new(ROOT).join(dir).join("report.json"));
        assert_eq!(json, written.unwrap());
    }
}

/// The base run as a killed run leaves it (everything but report.json and report.csv),
/// rendered from its time series.
#[test]
fn golden_report_of_a_killed_run() {
    let tmp = tempfile::tempdir().unwrap();
    let killed = tmp.path().join("base");
    std::fs::create_dir_all(killed.join("series")).unwrap();
    let src = Path::new(ROOT).join(BASE);
    std::fs::copy(src.join("plan.json"), killed.join("plan.json")).ok();
    for f in std::fs::read_dir(src.join("series")).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), killed.join("series").join(f.file_name())).unwrap();
    }
    let out = wlrun(tmp.path(), &["report", "base"]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the run was killed"), "{err}");
    let out_csv = wlrun(tmp.path(), &["report", "base", "--csv"]);
    assert_eq!(out_csv.status.code(), Some(0));
    settings().bind(|| {
        insta::assert_snapshot!(
            "report_base_killed.txt",
            String::from_utf8_lossy(&out.stdout)
        );
        insta::assert_snapshot!(
            "report_base_killed.csv",
            String::from_utf8_lossy(&out_csv.stdout)
        );
    });
}

#[test]
fn the_html_page_has_both_runs_charts_and_verdicts_and_the_threshold_exit_code() {
    let (code, html, err) = run(&["compare", BASE, NEW, "--html", "--threshold", "5%"]);
    assert_eq!(code, 1, "{err}");
    assert!(html.starts_with("<!DOCTYPE html>"));
    // A throughput and a latency chart per phase both runs have (2).
    assert_eq!(html.matches("<svg class=\"chart\"").count(), 4, "{html}");
    assert!(html.contains("worse · beyond the threshold"));
    assert!(html.contains("Cells only in the base run: workers=1"));
    // Nothing is fetched when it is opened.
    assert!(!html.contains("http://") && !html.contains("https://") && !html.contains("<script"));
    let (code, _, err) = run(&["compare", BASE, NEW, "--html", "--json"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn the_threshold_sets_the_exit_code() {
    // The new run's queries are about twice as slow.
    let (code, text, _) = run(&["compare", BASE, NEW, "--threshold", "5%"]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(
            "threshold 5%: 2 significantly worse by more than it:
  workers=2 / explore / qps
"
        ),
        "{text}"
    );
    let (code, _, _) = run(&["compare", BASE, NEW, "--threshold", "0.05"]);
    assert_eq!(code, 1);
    // Worse, but not by more than 1000%.
    let (code, text, _) = run(&["compare", BASE, NEW, "--threshold", "1000%"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("threshold 1000%: no metric is significantly worse by more than it"));
    // A run compared with itself changes nothing, however small the threshold.
    let (code, text, _) = run(&["compare", BASE, BASE, "--threshold", "0%"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains(": 0 worse, 0 better, "), "{text}");
    assert!(!text.contains("beyond"), "{text}");
    let (code, json, _) = run(&["compare", BASE, NEW, "--threshold", "5%", "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["threshold"], 0.05);
    assert_eq!(v["regressions"].as_array().unwrap().len(), 2);
}

#[test]
fn bad_input_exits_2_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let path = |name: &str| d.join(name).display().to_string();

    let (code, _, err) = run(&["compare", BASE, &path("nowhere")]);
    assert_eq!(code, 2);
    assert!(err.contains("wlrun compare: cannot read"), "{err}");

    std::fs::write(d.join("plan.json"), "{\"format\": 1, \"cells\": []}").unwrap();
    let (code, _, err) = run(&["compare", &path("plan.json"), NEW]);
    assert_eq!(code, 2);
    assert!(err.contains("is not a wlrun report"), "{err}");

    let old = std::fs::read_to_string(Path::new(ROOT).join(BASE).join("report.json"))
        .unwrap()
        .replacen("\"format\": 2", "\"format\": 1", 1);
    std::fs::write(d.join("old.json"), old).unwrap();
    let (code, _, err) = run(&["compare", BASE, &path("old.json")]);
    assert_eq!(code, 2);
    assert!(
        err.contains("is report format 1; this wlrun reads formats 2 to 3"),
        "{err}"
    );

    for bad in ["five", "-5%", "inf"] {
        let (code, _, err) = run(&["compare", BASE, NEW, &format!("--threshold={bad}")]);
        assert_eq!(code, 2, "{bad}");
        assert!(err.contains(&format!("`{bad}` is not")), "{err}");
    }
}

#[test]
fn a_report_json_alone_is_compared_without_samples_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("report.json");
    std::fs::copy(Path::new(ROOT).join(NEW).join("report.json"), &copy).unwrap();
    let copy = copy.display().to_string();
    let (code, text, err) = run(&["compare", BASE, &copy, "--threshold", "5%"]);
    // Without samples nothing is tested, so nothing fails; but queries/s is down by half over
    // the whole run, and that is not a pass either.
    assert_eq!(code, 4, "{err}\n{text}");
    assert!(
        text.contains("threshold 5%: inconclusive: ")
            && text.contains("  workers=2 / explore / qps (queries/s): -52.3% over the whole run; no per-interval samples\n"),
        "{text}"
    );
    assert!(
        text.contains("is missing: compared without its per-interval samples"),
        "{text}"
    );
    assert!(text.contains("no per-interval samples"), "{text}");
    // Both whole-run values are still shown.
    // (Columns as wide as their widest row: compared word by word.)
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("queries/s 332 159 -52.3%"), "{text}");
    // And the CPU per unit, shown, not tested.
    assert!(
        words.contains("client cpu per query 2.70ms/query 6.09ms/query +125.8% (not tested)"),
        "{text}"
    );
}

#[test]
fn phases_of_another_kind_or_name_are_reported_not_crashed_on() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(Path::new(ROOT).join(NEW).join("report.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    // `load` becomes a query run named like it; `explore` is renamed.
    let phases = v["cells"][0]["phases"].as_array_mut().unwrap();
    let explore = phases[1].clone();
    phases[0] = explore.clone();
    phases[0]["name"] = "load".into();
    phases[1]["name"] = "explore2".into();
    v["cells"][0]["phases"][0]["series"] = serde_json::Value::Null;
    let path = dir.path().join("report.json");
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    let (code, out, err) = run(&["compare", BASE, &path.display().to_string()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("ingest in the base run, queries in the new one: not compared"),
        "{out}"
    );
    assert!(
        out.contains("phases only in the base run: explore"),
        "{out}"
    );
    assert!(
        out.contains("phases only in the new run: explore2"),
        "{out}"
    );
}

/// The golden new run with its ingest's series gone: the ingest's metrics cannot be tested,
/// and its batch p50 is up 11% over the whole run, while the queries are measured worse. The
/// measured regression sets the exit code; the untested change is named beside it.
#[test]
fn a_measured_regression_wins_over_an_inconclusive_metric() {
    let dir = tempfile::tempdir().unwrap();
    let new = dir.path().join("new");
    std::fs::create_dir_all(new.join("series")).unwrap();
    let src = Path::new(ROOT).join(NEW);
    std::fs::copy(src.join("report.json"), new.join("report.json")).unwrap();
    for f in std::fs::read_dir(src.join("series")).unwrap() {
        let f = f.unwrap();
        if !f.file_name().to_string_lossy().contains("load") {
            std::fs::copy(f.path(), new.join("series").join(f.file_name())).unwrap();
        }
    }
    let new = new.display().to_string();
    let (code, text, err) = run(&["compare", BASE, &new, "--threshold", "5%"]);
    assert_eq!(code, 1, "{err}\n{text}");
    assert!(text.contains("  workers=2 / explore / qps\n"), "{text}");
    assert!(
        text.contains(
            "and 1 could not be tested and changed for the worse by more than it over the whole \
             run:\n  workers=2 / load / batch_p50_us (batch p50): +11.3% over the whole run; no \
             per-interval samples\n"
        ),
        "{text}"
    );
    let (_, json, _) = run(&["compare", BASE, &new, "--threshold", "5%", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        v["inconclusive"],
        serde_json::json!(["workers=2 / load / batch_p50_us"])
    );
}

/// The runs against the oracles measure rates: one at a time, so that another test's client
/// does not share the cores with theirs.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A closed-loop request run, one connection (`conns`), against the server on `SVC_PORT`: the
/// port comes from the environment, so two runs against two servers run the same plan.
fn requests_workload(stop: &str) -> String {
    format!(
        "workload w {{ seed 1 }}\nparam conns = 1\ntarget svc {{ http \"http://127.0.0.1:${{env(\"SVC_PORT\")}}\" {{ timeout 60s }} }}\nrun r {{\n  against svc.http\n  request GET \"/q\"\n  connections conns\n  {stop}\n}}\n"
    )
}

/// `wlrun run w.wl --out NAME -q EXTRA` in `dir` against `server`: the exit code and what it
/// printed.
fn run_against(dir: &Path, name: &str, server: &LoadServer, extra: &[&str]) -> (i32, String) {
    let url = server.url();
    let port = url.rsplit(':').next().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .current_dir(dir)
        .env("SVC_PORT", port)
        .args(["run", "w.wl", "--out", name, "-q"])
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// `wlrun compare ARGS` in `dir`: exit code, standard output, standard error.
fn compare_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["compare"];
    all.extend_from_slice(args);
    let out = wlrun(dir, &all);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The truth: a server serving one request at a time in 2 ms, then one taking 6 ms. One
/// closed-loop connection gets at most 1/d answers a second, so the new run's throughput is a
/// third of the base's, a little more when the client's own time per request counts (the
/// ratio `(2 + o) / (6 + o)` for an overhead `o` of up to 2 ms stays under a half). At the
/// default 1 s interval a 4-second run has four intervals measured over at least half their
/// length (a 5-second run five or six): the two 4-second runs were "too few samples".
#[test]
fn a_threefold_drop_between_two_4_second_runs_fails_the_gate_and_so_does_a_killed_run() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("w.wl"), requests_workload("duration 4s")).unwrap();
    let fast = LoadServer::start(Work::Serial(Duration::from_millis(2)));
    let slow = LoadServer::start(Work::Serial(Duration::from_millis(6)));
    let (code, out) = run_against(d, "base", &fast, &[]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = run_against(d, "new", &slow, &[]);
    assert_eq!(code, 0, "{out}");

    let (code, text, err) = compare_in(d, &["base", "new", "--threshold", "5%"]);
    eprintln!("{text}");
    assert_eq!(code, 1, "{err}\n{text}");
    assert!(
        text.contains("significantly worse by more than it:\n  r / rps\n"),
        "{text}"
    );
    assert!(
        text.contains("plan: the same in both runs (sha256:"),
        "{text}"
    );
    let (_, json, _) = compare_in(d, &["base", "new", "--threshold", "5%", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rps = &v["cells"][0]["phases"][0]["metrics"][0];
    assert_eq!(rps["metric"], "rps", "{rps}");
    assert_eq!(rps["verdict"], "worse", "{rps}");
    let change = rps["test"]["change"].as_f64().unwrap();
    let whole = rps["change"].as_f64().unwrap();
    eprintln!(
        "requests/s {} -> {} (whole run {whole:+.3}, per interval {change:+.3}; truth -0.667 \
         without the client's overhead, above -0.5 with 2 ms of it); intervals {}/{}",
        rps["base"], rps["new"], rps["base_samples"]["n"], rps["new_samples"]["n"]
    );
    for c in [change, whole] {
        assert!((-0.68..=-0.5).contains(&c), "{c}: {rps}");
    }
    assert_eq!(v["plans"]["verdict"], "same");

    // The base run as a SIGKILL leaves it: no report.json, its series and plan.json there.
    let killed = d.join("killed");
    std::fs::create_dir_all(killed.join("series")).unwrap();
    std::fs::copy(d.join("base/plan.json"), killed.join("plan.json")).unwrap();
    for f in std::fs::read_dir(d.join("base/series")).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), killed.join("series").join(f.file_name())).unwrap();
    }
    let (code, text, err) = compare_in(d, &["killed", "new", "--threshold", "5%"]);
    assert_eq!(code, 1, "{err}\n{text}");
    assert!(
        text.contains("base: killed  (w from w.wl, seed 1, started ")
            && text.contains(", killed: its report rebuilt from its time series)"),
        "{text}"
    );
    assert!(text.contains("plan: the same in both runs\n"), "{text}");
    assert!(text.contains("  r / rps\n"), "{text}");
}

/// Two runs too short for a test (one 2 s interval each at most) of the same two servers:
/// three times slower over the whole run, so the gate cannot pass, and nothing measured says
/// it failed.
#[test]
fn a_drop_too_short_to_test_is_inconclusive_never_a_pass() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("w.wl"), requests_workload("duration 1500ms")).unwrap();
    let fast = LoadServer::start(Work::Serial(Duration::from_millis(2)));
    let slow = LoadServer::start(Work::Serial(Duration::from_millis(6)));
    for (name, server) in [("base", &fast), ("new", &slow)] {
        let (code, out) = run_against(d, name, server, &["--interval", "2"]);
        assert_eq!(code, 0, "{out}");
    }
    let (code, text, err) = compare_in(d, &["base", "new", "--threshold", "5%"]);
    eprintln!("{text}");
    assert_eq!(code, 4, "{err}\n{text}");
    assert!(
        text.contains(
            "threshold 5%: inconclusive: no metric is significantly worse by more than it, but "
        ),
        "{text}"
    );
    assert!(text.contains("\n  r / rps (requests/s): -"), "{text}");
    assert!(text.contains("inconclusive at the threshold"), "{text}");
    let (code, json, _) = compare_in(d, &["base", "new", "--threshold", "5%", "--json"]);
    assert_eq!(code, 4);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(v["regressions"].as_array().unwrap().is_empty(), "{v}");
    let named: Vec<&str> = v["inconclusive"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert!(named.contains(&"r / rps"), "{named:?}");
    // Without a threshold there is no gate to be inconclusive about.
    let (code, _, err) = compare_in(d, &["base", "new"]);
    assert_eq!(code, 0, "{err}");
}

/// The same workload run with `--param conns=4` and without: the figures differ because the
/// plans do, so compare refuses, saying what differs, unless told the difference is the point.
#[test]
fn runs_of_different_plans_are_refused_unless_allowed_and_the_difference_is_shown() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("w.wl"), requests_workload("count 40")).unwrap();
    let server = LoadServer::start(Work::Serial(Duration::from_millis(1)));
    let (code, out) = run_against(d, "four", &server, &["--param", "conns=4"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = run_against(d, "one", &server, &[]);
    assert_eq!(code, 0, "{out}");

    let (code, text, err) = compare_in(d, &["four", "one", "--threshold", "5%"]);
    assert_eq!(code, 2, "{text}{err}");
    assert!(
        err.contains(
            "wlrun compare: four and one ran different plans, so their figures may differ for \
             reasons no test tells from a regression:\n  param conns: 4 vs 1\n  phase r: \
             workers: 4 vs 1\npass --allow-different to compare them anyway"
        ),
        "{err}"
    );
    assert!(text.is_empty(), "{text}");

    let (code, text, err) = compare_in(d, &["four", "one", "--allow-different"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains(
            "plans differ (compared with --allow-different):\n  param conns: 4 vs 1\n  phase r: \
             workers: 4 vs 1\n"
        ),
        "{text}"
    );
    let (_, json, _) = compare_in(d, &["four", "one", "--allow-different", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["plans"]["verdict"], "different");
    assert_ne!(v["plans"]["base"], v["plans"]["new"]);
    // A run against itself is the same plan, digest and all.
    let (code, text, err) = compare_in(d, &["one", "one/report.json"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("plan: the same in both runs (sha256:"),
        "{text}"
    );

    // report.json alone: no plan.json beside it, its digest still tells the plans apart.
    std::fs::create_dir(d.join("alone")).unwrap();
    std::fs::copy(d.join("four/report.json"), d.join("alone/report.json")).unwrap();
    let (code, _, err) = compare_in(d, &["alone/report.json", "one"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("the plans' digests differ (sha256:")
            && err.contains("what differs is not known"),
        "{err}"
    );
}

/// Copies the checked-in run `from` into `to`: its load series' socket bytes set to
/// `bytes_per_row` (+0, +1, +2 by interval) per row sent, its report.json with `edit` applied
/// to the `workers=2` cell's phases (`load`, `explore`).
fn edited_run(
    from: &str,
    to: &Path,
    bytes_per_row: u64,
    edit: impl Fn(&str, &mut serde_json::Value),
) {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                copy(&e.path(), &to.join(e.file_name()));
            } else {
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    }
    copy(&Path::new(ROOT).join(from), to);
    let path = to.join("report.json");
    let mut r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let cell = r["cells"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| c["key"] == "workers=2")
        .unwrap();
    for p in cell["phases"].as_array_mut().unwrap() {
        let name = p["name"].as_str().unwrap().to_string();
        edit(&name, p);
        if name == "load" {
            set_socket_bytes(
                &to.join(p["series"]["counts"].as_str().unwrap()),
                bytes_per_row,
            );
        }
    }
    std::fs::write(&path, serde_json::to_string_pretty(&r).unwrap()).unwrap();
}

fn set_socket_bytes(series: &Path, bytes_per_row: u64) {
    let text = std::fs::read_to_string(series).unwrap();
    let mut lines = text.lines();
    let mut out = format!("{}\n", lines.next().unwrap());
    for (i, line) in lines.enumerate() {
        let mut cols: Vec<String> = line.split(',').map(str::to_string).collect();
        let rows: u64 = cols[2].parse().unwrap();
        cols[5] = (rows * (bytes_per_row + i as u64 % 3)).to_string();
        out += &format!("{}\n", cols.join(","));
    }
    std::fs::write(series, out).unwrap();
}

/// A result-streaming object whose first results are `first_us` and whose stream ran at
/// `rows_per_s`.
fn streaming(first_us: impl IntoIterator<Item = u64>, rows_per_s: f64) -> serde_json::Value {
    let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    for us in first_us {
        h.record(us).unwrap();
    }
    serde_json::json!({
        "first_result": wlrun::report::Latency::of(&h),
        "streamed_queries": 10, "single_piece_queries": 0,
        "streamed_rows": (rows_per_s * 0.5) as u64, "streamed_bytes": 1_000, "streaming_s": 0.5,
        "rows_per_s": rows_per_s, "bytes_per_s": 2_000.0,
        "egress_bytes": 5_000, "egress_rows": 100, "egress_bytes_per_row": 50.0
    })
}

/// Where both runs have them, an ingest's metrics/s, link ceiling and commits and a query
/// type's time to first result and stream rate are compared with their directions: metrics/s
/// tested on the per-interval rows/s times the fields, the link ceiling on each interval's
/// socket bytes per row, the rest untested (no per-interval samples) and so inconclusive under
/// `--threshold` when worse by more than it; a type only one run streamed is not compared, and
/// the page's charts keep only the headline figures.
#[test]
fn streaming_commits_metrics_and_the_link_ceiling_are_compared_where_both_runs_have_them() {
    let tmp = tempfile::tempdir().unwrap();
    let (base, new) = (tmp.path().join("base"), tmp.path().join("new"));
    let edit = |commits: u64, bytes_per_row: f64, first: std::ops::Range<u64>, rows_per_s: f64| {
        move |name: &str, p: &mut serde_json::Value| match name {
            "load" => {
                let rate = p["rows_per_s"].as_f64().unwrap();
                p["fields_per_row"] = 10.into();
                p["metrics_per_s"] = (rate * 10.0).into();
                p["commits"] = commits.into();
                p["link"] = serde_json::json!({
                    "link": "10Gbit/s", "bits_per_s": 1e10,
                    "socket_bytes_per_row": bytes_per_row,
                    "rows_per_s": 1e10 / 8.0 / bytes_per_row, "computed": "computed"
                });
            }
            "explore" => {
                let types = p["query_types"].as_array_mut().unwrap();
                types[0]["streaming"] = streaming(first.clone(), rows_per_s);
                if commits == 50 {
                    // Only the base run streamed the second type.
                    types[1]["streaming"] = streaming(first.clone(), rows_per_s);
                }
            }
            _ => {}
        }
    };
    edited_run(BASE, &base, 110, edit(50, 111.0, 1_000..2_000, 50_000.0));
    edited_run(NEW, &new, 100, edit(200, 101.0, 3_000..5_000, 20_000.0));
    let out = wlrun(
        tmp.path(),
        &["compare", "base", "new", "--json", "--threshold", "5%"],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: {text}{}", String::from_utf8_lossy(&out.stderr)));
    let phases = &v["cells"][0]["phases"];
    let metric = |phase: usize, name: &str| -> serde_json::Value {
        phases[phase]["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["metric"] == name)
            .unwrap_or_else(|| panic!("no {name} in {}", phases[phase]))
            .clone()
    };
    let close = |a: &serde_json::Value, b: f64| {
        let a = a.as_f64().unwrap_or_else(|| panic!("not a number: {a}"));
        assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{a} != {b}");
    };

    // metrics/s: the rows/s figures times 10 fields, tested alike.
    let rows = metric(0, "rows_per_s");
    let m = metric(0, "metrics_per_s");
    assert_eq!(
        (m["better"].clone(), m["unit"].clone()),
        ("higher".into(), "per_second".into())
    );
    close(&m["base"], rows["base"].as_f64().unwrap() * 10.0);
    close(
        &m["base_samples"]["mean"],
        rows["base_samples"]["mean"].as_f64().unwrap() * 10.0,
    );
    close(
        &m["new_samples"]["mean"],
        rows["new_samples"]["mean"].as_f64().unwrap() * 10.0,
    );
    assert_eq!(m["base_samples"]["n"], rows["base_samples"]["n"]);
    assert_eq!(m["verdict"], rows["verdict"]);

    // The link ceiling: from each interval's socket bytes per row (110..112 against 100..102).
    let l = metric(0, "link_rows_per_s");
    assert_eq!(l["better"], "higher");
    assert_eq!(l["label"], "link 10Gbit/s rows/s (computed)");
    close(&l["base"], 1e10 / 8.0 / 111.0);
    close(&l["new"], 1e10 / 8.0 / 101.0);
    let ceiling = |bpr: u64| 1e10 / 8.0 / bpr as f64;
    let mean = l["base_samples"]["mean"].as_f64().unwrap();
    assert!(mean < ceiling(110) && mean > ceiling(112), "{l}");
    let mean = l["new_samples"]["mean"].as_f64().unwrap();
    assert!(mean < ceiling(100) && mean > ceiling(102), "{l}");

    // Commits: fewer is better, a count, no per-interval samples: 4x more is inconclusive.
    let c = metric(0, "commits");
    assert_eq!(
        (c["better"].clone(), c["unit"].clone()),
        ("lower".into(), "count".into())
    );
    assert_eq!(
        (c["base"].clone(), c["new"].clone()),
        (50.0.into(), 200.0.into())
    );
    close(&c["change"], 3.0);
    assert_eq!(c["verdict"], "no_samples");
    assert_eq!(c["inconclusive"], true);

    // Streaming, per type both runs streamed.
    let p99 = metric(1, "first_result_p99_us[busiest_hosts]");
    assert_eq!(
        (p99["better"].clone(), p99["unit"].clone()),
        ("lower".into(), "micros".into())
    );
    assert!(p99["base"].as_f64().unwrap() < 2_000.0 && p99["new"].as_f64().unwrap() > 4_000.0);
    assert_eq!(p99["verdict"], "no_samples");
    assert_eq!(p99["inconclusive"], true);
    let p50 = metric(1, "first_result_p50_us[busiest_hosts]");
    assert!(p50["base"].as_f64().unwrap() < p99["base"].as_f64().unwrap());
    let s = metric(1, "stream_rows_per_s[busiest_hosts]");
    assert_eq!(s["better"], "higher");
    close(&s["change"], 20_000.0 / 50_000.0 - 1.0);
    let names = phases[1]["metrics"].to_string();
    assert!(!names.contains("over_threshold"), "{names}");
    let inconclusive = v["inconclusive"].to_string();
    for name in [
        "workers=2 / load / commits",
        "workers=2 / explore / first_result_p99_us[busiest_hosts]",
        "workers=2 / explore / stream_rows_per_s[busiest_hosts]",
    ] {
        assert!(inconclusive.contains(name), "{name}: {inconclusive}");
    }

    let out = wlrun(tmp.path(), &["compare", "base", "new"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("busiest_hosts: first result p99"), "{text}");
    assert!(text.contains("link 10Gbit/s rows/s (computed)"), "{text}");
    let out = wlrun(tmp.path(), &["compare", "base", "new", "--html"]);
    let html = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        html.matches("<svg class=\"chart\"").count(),
        4,
        "headline charts only"
    );
}
