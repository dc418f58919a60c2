//! `wlrun compare` from outside: golden renders (terminal and JSON) of the two checked-in run
//! directories under tests/golden/compare/ (tests/golden/compare/compare.wl says how they were
//! made), the exit codes of `--threshold`, and the messages of bad input.
//!
//! Update snapshots with `INSTA_UPDATE=always cargo test --test compare` and read every changed
//! `.snap` before committing it.

#[path = "common/cli.rs"]
mod cli;

use std::path::Path;

use cli::wlrun;

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
    // Without samples nothing is significant: the threshold cannot fail.
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("is missing: compared without its per-interval samples"),
        "{text}"
    );
    assert!(text.contains("no per-interval samples"), "{text}");
    // Both whole-run values are still shown.
    assert!(
        text.contains("queries/s      332     159   -52.3%"),
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
