//! `wlrun init`: every starter is written where asked, never over a file without `--force`,
//! checks and plans as written; the PostgreSQL, HTTP and SQLite starters also run as written
//! against local servers (the test PostgreSQL, an in-test HTTP server, SQLite embedded).
//!
//! The runs lift the starters' latency threshold (`--param p99_limit=1h`): a shared CI machine
//! must not fail a test on a slow millisecond. Everything else is the file as `init` wrote it.

#[path = "common/cli.rs"]
mod cli;
#[path = "common/http_server.rs"]
mod http_server;
#[path = "common/servers.rs"]
mod servers;

use std::path::Path;
use std::process::{Command, Output};

use cli::wlrun;
use http_server::{Behaviour, ServerHandle};

const KINDS: [&str; 4] = ["postgres", "questdb", "http", "sqlite"];

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn said(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

/// `wlrun ARGS` in `dir` with `env` set, and the PostgreSQL and HTTP variables of the starters
/// removed otherwise, so the machine's own settings do not steer a test.
fn wlrun_env(dir: &Path, args: &[&str], env: &[(&str, String)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wlrun"));
    cmd.current_dir(dir).args(args);
    for name in [
        "PGHOST",
        "PGPORT",
        "PGUSER",
        "PGPASSWORD",
        "PGDATABASE",
        "HTTP_HOST",
        "HTTP_PORT",
        "SQLITE_DB",
    ] {
        cmd.env_remove(name);
    }
    for (name, value) in env {
        cmd.env(name, value);
    }
    cmd.output().unwrap()
}

#[test]
fn every_kind_writes_a_starter_that_checks_and_plans() {
    for kind in KINDS {
        let dir = tempfile::tempdir().unwrap();
        let out = wlrun(dir.path(), &["init", "--kind", kind]);
        assert_eq!(out.status.code(), Some(0), "{kind}: {}", said(&out));
        let file = format!("{kind}.wl");
        let written = std::fs::read_to_string(dir.path().join(&file)).unwrap();
        assert!(
            written.starts_with("// A starter benchmark for "),
            "{kind}: {written}"
        );
        // It says what it wrote and the command to run next.
        let err = text(&out.stderr);
        assert!(err.contains(&format!("wrote {file}")), "{err}");
        assert!(err.contains(&format!("wlrun check {file}")), "{err}");

        let check = wlrun(dir.path(), &["check", &file]);
        assert_eq!(check.status.code(), Some(0), "{kind}: {}", said(&check));
        // No warning either: a starter teaches what a clean file looks like.
        assert_eq!(
            text(&check.stderr),
            format!("{file}: ok\n"),
            "{kind} checks with diagnostics"
        );
        let plan = wlrun(dir.path(), &["plan", &file]);
        assert_eq!(plan.status.code(), Some(0), "{kind}: {}", said(&plan));
        let listing = text(&plan.stdout);
        assert!(
            listing.starts_with(&format!("workload {kind}_starter")),
            "{listing}"
        );
        assert!(listing.contains("cells 1"), "{listing}");
    }
}

/// `new` is `init`, and the file's place can be a folder or a file name.
#[test]
fn the_starter_goes_into_a_folder_or_to_the_file_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("bench")).unwrap();
    let out = wlrun(dir.path(), &["new", "--kind", "sqlite", "bench"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    assert!(dir.path().join("bench/sqlite.wl").is_file());
    assert!(text(&out.stderr).contains("wlrun check bench/sqlite.wl"));

    // A name with a space: the commands printed quote it, so they paste into a shell.
    let out = wlrun(dir.path(), &["init", "--kind", "http", "my bench.wl"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    assert!(dir.path().join("my bench.wl").is_file());
    assert!(
        text(&out.stderr).contains("wlrun check 'my bench.wl'"),
        "{}",
        said(&out)
    );

    // A folder that does not exist is the command's mistake.
    let out = wlrun(dir.path(), &["init", "--kind", "http", "nowhere/w.wl"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(text(&out.stderr).contains("nowhere/w.wl"), "{}", said(&out));
}

#[test]
fn an_existing_file_is_kept_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("postgres.wl");
    std::fs::write(&mine, "// my own workload\n").unwrap();
    let out = wlrun(dir.path(), &["init", "--kind", "postgres"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(text(&out.stderr).contains("--force"), "{}", said(&out));
    assert_eq!(
        std::fs::read_to_string(&mine).unwrap(),
        "// my own workload\n"
    );

    let out = wlrun(dir.path(), &["init", "--kind", "postgres", "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    assert!(std::fs::read_to_string(&mine)
        .unwrap()
        .starts_with("// A starter benchmark for PostgreSQL"));
}

/// A kind with no starter is a usage error that lists the kinds there are.
#[test]
fn an_unknown_kind_lists_the_kinds() {
    let dir = tempfile::tempdir().unwrap();
    let out = wlrun(dir.path(), &["init", "--kind", "mysql"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    let err = text(&out.stderr);
    for kind in KINDS {
        assert!(err.contains(kind), "{err}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// Runs `init --kind KIND` in a fresh folder, then the starter with `env`: its exit code, its
/// JSON report and what it printed.
fn init_and_run(kind: &str, env: &[(&str, String)]) -> (i32, serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = wlrun(dir.path(), &["init", "--kind", kind]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let file = format!("{kind}.wl");
    let args = ["run", &file, "--json", "--quiet", "--param", "p99_limit=1h"];
    let out = wlrun_env(dir.path(), &args, env);
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{kind}: no JSON report ({e}): {}", said(&out)));
    (out.status.code().unwrap_or(-1), report, said(&out))
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// The ingest loaded and showed every row, and the query run answered every query it sent.
fn loaded_and_queried(report: &serde_json::Value, rows: u64) {
    let phases = &report["cells"][0]["phases"];
    let load = &phases[0];
    assert_eq!(load["status"], "ok", "{load}");
    assert_eq!(u(&load["rows_acked"]), rows, "{load}");
    assert_eq!(u(&load["rows_visible"]), rows, "{load}");
    let queries = &phases[1];
    assert_eq!(queries["status"], "ok", "{queries}");
    assert_eq!(u(&queries["failed"]), 0, "{queries}");
    assert!(u(&queries["ok"]) > 0, "{queries}");
}

#[test]
fn the_postgres_starter_runs_against_the_test_server() {
    if !servers::pg_up() {
        return;
    }
    // The starter reads libpq's variables: the test server's URL, taken apart into them.
    let url = servers::pg_url();
    let rest = url
        .split_once("://")
        .map(|(_, r)| r)
        .expect("a postgres:// URL");
    let (login, place) = rest.rsplit_once('@').expect("a URL with user@host");
    let (user, password) = login.split_once(':').unwrap_or((login, ""));
    let (host_port, db) = place.split_once('/').expect("a URL with a database");
    let db = db.split('?').next().unwrap();
    let (host, port) = host_port.rsplit_once(':').unwrap_or((host_port, "5432"));
    let env = [
        ("PGHOST", host.to_string()),
        ("PGPORT", port.to_string()),
        ("PGUSER", user.to_string()),
        ("PGPASSWORD", password.to_string()),
        ("PGDATABASE", db.to_string()),
    ];
    let (code, report, said) = init_and_run("postgres", &env);
    assert_eq!(code, 0, "{said}");
    loaded_and_queried(&report, 216_000);
}

#[test]
fn the_http_starter_runs_against_an_in_test_server() {
    let server = ServerHandle::start(Behaviour::ok());
    let port = server.url().rsplit_once(':').unwrap().1.to_string();
    let (code, report, said) = init_and_run("http", &[("HTTP_PORT", port)]);
    assert_eq!(code, 0, "{said}");
    let run = &report["cells"][0]["phases"][0];
    assert_eq!(run["status"], "ok", "{run}");
    assert_eq!(u(&run["failed"]), 0, "{run}");
    // Every request the run counted reached the server, as the starter wrote it.
    let recorded = server.requests();
    assert!(recorded.len() as u64 >= u(&run["ok"]) && u(&run["ok"]) > 0);
    for r in &recorded {
        assert_eq!((r.method.as_str(), r.path.as_str()), ("GET", "/"));
        assert_eq!(r.header("accept"), Some("application/json"));
    }
}

#[test]
fn the_sqlite_starter_runs_embedded() {
    let (code, report, said) = init_and_run("sqlite", &[]);
    assert_eq!(code, 0, "{said}");
    loaded_and_queried(&report, 172_800);
}
