//! The cookbook (docs/cookbook/): every page is listed in its index and names a workload the
//! corpus tests check and plan, and the recipes a local server allows run as their pages say,
//! kept to seconds with `--param`. A recipe that drifts from its page (a renamed param, a
//! command that no longer works) fails here rather than in a newcomer's first hour.

#[path = "common/cli.rs"]
mod cli;
#[path = "common/servers.rs"]
mod servers;
#[path = "common/shard_procs.rs"]
mod shard_procs;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use servers::{pg_up, pg_url};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn root() -> &'static Path {
    Path::new(ROOT)
}

/// The pages of docs/cookbook/, the index (README.md) left out, sorted.
fn pages() -> Vec<PathBuf> {
    let dir = root().join("docs/cookbook");
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .filter(|p| p.file_name().is_some_and(|n| n != "README.md"))
        .collect();
    pages.sort();
    pages
}

/// The `.wl` paths a page names under `examples/` or `workloads/` (the folders
/// tests/corpus.rs checks and plans), as written.
fn named_workloads(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for start in ["examples/", "workloads/"] {
        let mut rest = text;
        while let Some(at) = rest.find(start) {
            let tail = &rest[at..];
            let end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || "/._-".contains(c)))
                .unwrap_or(tail.len());
            let path = &tail[..end];
            if path.ends_with(".wl") && !out.iter().any(|p| p == path) {
                out.push(path.to_string());
            }
            rest = &tail[end..];
        }
    }
    out
}

#[test]
fn every_page_is_indexed_and_names_a_checked_workload() {
    let index = std::fs::read_to_string(root().join("docs/cookbook/README.md")).unwrap();
    let pages = pages();
    assert!(
        pages.len() >= 7,
        "the issue asks for seven recipes: {pages:?}"
    );
    let mut failures = Vec::new();
    for page in &pages {
        let name = page.file_name().unwrap().to_str().unwrap();
        if !index.contains(&format!("({name})")) {
            failures.push(format!("docs/cookbook/README.md does not link {name}"));
        }
        let text = std::fs::read_to_string(page).unwrap();
        let named = named_workloads(&text);
        if named.is_empty() {
            failures.push(format!(
                "{name} names no file under examples/ or workloads/"
            ));
        }
        for path in named {
            if !root().join(&path).is_file() {
                failures.push(format!("{name} names {path}, which does not exist"));
            }
        }
    }
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    if !readme.contains("(docs/cookbook/README.md)") {
        failures.push("README.md does not link the cookbook".into());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn page_paths_are_read_as_written() {
    let text = "Run `wlrun examples/cookbook/a-b.wl --out x`, see workloads/k.wl and \
                examples/cookbook/a-b.wl again; not examples/notes.md.";
    assert_eq!(
        named_workloads(text),
        vec!["examples/cookbook/a-b.wl", "workloads/k.wl"]
    );
}

/// `wlrun ARGS` from the repository root, the recipe pointed at the test server.
fn wlrun(args: &[&str]) -> Output {
    cli::wlrun(root(), args)
}

fn code_and_err(out: &Output) -> (i32, String) {
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn phase<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["cells"][0]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no phase {name}: {report:#}"))
}

/// The test server's URL as the `PG*` variables the recipes read.
fn pg_env() -> Vec<(&'static str, String)> {
    let url = pg_url();
    let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
    let (auth, place) = rest.split_once('@').unwrap_or(("", rest));
    let (user, pass) = auth.split_once(':').unwrap_or((auth, ""));
    let db = place.split_once('/').map_or("", |(_, d)| d);
    vec![
        ("PGUSER", user.into()),
        ("PGPASSWORD", pass.into()),
        ("PGDATABASE", db.split('?').next().unwrap_or(db).into()),
    ]
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// docs/cookbook/find-max-rate.md: with an SLA no step can break, the search climbs to the cap
/// and confirms it.
#[test]
fn find_max_recipe_runs_against_postgres() {
    if !pg_up() {
        return;
    }
    let url = format!("pg_url={}", pg_url());
    let out = wlrun(&[
        "run",
        "examples/cookbook/pg-find-max.wl",
        "--json",
        "--quiet",
        "--no-server-versions",
        "--param",
        &url,
        "--param",
        "hosts=5",
        "--param",
        "span=10m",
        "--param",
        "first=20/s",
        "--param",
        "cap=40/s",
        "--param",
        "sla_p99=5s",
        "--param",
        "samples=20",
        "--param",
        "settle=100ms",
    ]);
    let (code, err) = code_and_err(&out);
    assert_eq!(code, 0, "{err}");
    let report = cli::report_of(&out);
    assert_eq!(u(&phase(&report, "load")["rows_visible"]), 5 * 60);
    let f = &phase(&report, "max_rate")["findmax"];
    assert_eq!(f["outcome"], "cap", "{f:#}");
    assert_eq!(f["answer_per_s"].as_f64(), Some(40.0), "{f:#}");
}

/// docs/cookbook/ingest-and-query.md: the ingest and the query run share one span, and the
/// probe measured the lag while rows arrived.
#[test]
fn ingest_and_query_recipe_runs_against_postgres() {
    if !pg_up() {
        return;
    }
    let url = format!("pg_url={}", pg_url());
    let out = wlrun(&[
        "run",
        "examples/cookbook/pg-ingest-and-query.wl",
        "--json",
        "--quiet",
        "--no-server-versions",
        "--param",
        &url,
        "--param",
        "hosts=5",
        "--param",
        "rows_rate=1000/s",
        "--param",
        "span=2s",
        "--param",
        "reads=20/s",
    ]);
    let (code, err) = code_and_err(&out);
    assert_eq!(code, 0, "{err}");
    let report = cli::report_of(&out);
    let load = phase(&report, "load");
    assert!(u(&load["rows_sent"]) > 0, "{load:#}");
    assert_eq!(load["rows_visible"], load["rows_sent"], "{load:#}");
    let fresh = &load["freshness"];
    assert!(u(&fresh["probes_sent"]) > 0, "{fresh:#}");
    let reads = phase(&report, "dashboard");
    assert!(u(&reads["ok"]) > 0, "{reads:#}");
    assert_eq!(u(&reads["failed"]), 0, "{reads:#}");
    assert!(reads["concurrent"].is_object(), "{reads:#}");
}

/// docs/cookbook/shards-and-kubernetes.md: two shards on this machine, then merged: together
/// they loaded every row and sent every query once.
#[test]
fn sharded_recipe_runs_as_two_shards_and_merges() {
    if !pg_up() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let wl = root().join("examples/cookbook/pg-sharded.wl");
    let wl = wl.to_str().unwrap();
    let barrier = format!("127.0.0.1:{}", shard_procs::free_port());
    let shard = |i: u64| {
        let spec = format!("{i}/2");
        let out = format!("s{i}");
        let mut cmd = shard_procs::wlrun(
            dir.path(),
            &[
                "run",
                wl,
                "--quiet",
                "--no-server-versions",
                "--shard",
                &spec,
                "--barrier",
                &barrier,
                "--out",
                &out,
                "--param",
                "hosts=10",
                "--param",
                "span=2h",
                "--param",
                "queries=40",
            ],
        );
        // As on Kubernetes: the server's credentials from the environment, not the arguments.
        cmd.envs(pg_env()).spawn().unwrap()
    };
    let shards = [shard(0), shard(1)];
    for ran in shards.map(shard_procs::finish) {
        assert_eq!(ran.code, 0, "{}", ran.err);
    }
    let out = cli::wlrun(dir.path(), &["merge", "s0", "s1", "--out", "merged"]);
    let (code, err) = code_and_err(&out);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(dir.path().join("merged/report.json")).unwrap();
    let report: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(u(&phase(&report, "load")["rows_sent"]), 10 * 720);
    assert_eq!(u(&phase(&report, "lookups")["ok"]), 40);
}

/// docs/cookbook/compare-in-ci.md: two runs of the recipe, compared as the CI step does. The
/// threshold is wide: this tests the commands, not the machine's steadiness.
#[test]
fn compare_recipe_runs_twice_and_compares() {
    let dir = tempfile::tempdir().unwrap();
    let wl = root().join("examples/cookbook/ci-compare.wl");
    let wl = wl.to_str().unwrap();
    for out in ["base", "new"] {
        let ran = cli::wlrun(
            dir.path(),
            &[
                "run",
                wl,
                "--quiet",
                "--no-server-versions",
                "--out",
                out,
                "--param",
                "hosts=5",
                "--param",
                "length=2s",
                "--param",
                "rows_rate=5000/s",
                "--param",
                "reads=20/s",
                "--param",
                "sla_p99=10s",
            ],
        );
        let (code, err) = code_and_err(&ran);
        assert_eq!(code, 0, "{err}");
    }
    let out = cli::wlrun(
        dir.path(),
        &["compare", "base", "new", "--threshold", "1000%"],
    );
    let (code, printed) = code_and_err(&out);
    assert_eq!(code, 0, "{printed}");
    assert!(printed.contains("timed (queries)"), "{printed}");
}
