//! Runs that say why they failed, and stop at their first errors when told to: the first
//! message of every error class is in the human output of query runs (as of ingest and request
//! runs), and `stop after N errors` or `--fail-fast` ends a run at its N-th failure instead of
//! sending thousands of failing queries a second.

#[path = "common/cli.rs"]
mod cli;
use cli::wlrun;

#[path = "common/http_server.rs"]
mod http_server;
#[path = "common/servers.rs"]
mod servers;

use serde_json::Value;

use http_server::{Behaviour, ServerHandle};

fn run(text: &str, extra: &[&str]) -> (i32, Value, String) {
    cli::run_json(text, &[], extra)
}

/// The exit code and the human output (stdout + stderr) of a run as a person starts it.
fn human(text: &str, extra: &[&str]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), text).unwrap();
    let mut args = vec!["run", "w.wl", "--quiet"];
    args.extend_from_slice(extra);
    let out = wlrun(dir.path(), &args);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

const MIXED: &str = "workload w { seed 1 }\ntarget db { sqlite \"f.db\" }\n\
    query good { sql \"SELECT 1\" }\n\
    query bad { sql \"SELECT * FROM no_such_table\" }\n\
    run q {\n  against db.sqlite\n  queries good, bad\n  count 1000\nSTOP}\n";

#[test]
fn a_failed_query_run_says_why_in_its_human_output() {
    let (code, out) = human(&MIXED.replace("STOP", ""), &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("sql errors: 500 (first: "), "{out}");
    assert!(out.contains("no such table"), "{out}");
}

#[test]
fn a_wrong_password_is_named_not_just_counted() {
    if !servers::pg_up() {
        return;
    }
    let text = "workload w { seed 1 }\n\
        target db { pg \"postgres://wlrun:not-the-password@127.0.0.1:5432/wlrun\" }\n\
        query q { sql \"SELECT 1\" }\n\
        run r {\n  against db.pg\n  queries q\n  count 5\n}\n";
    let (code, out) = human(text, &[]);
    // The server refused the login: the run could not measure (tests/exit_codes.rs).
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("password authentication failed"), "{out}");
    assert!(out.contains("could not measure"), "{out}");
}

#[test]
fn stop_after_n_errors_ends_a_query_run_at_its_nth_failure() {
    let (code, report, err) = run(&MIXED.replace("STOP", "  stop after 3 errors\n"), &[]);
    let p = &report["cells"][0]["phases"][0];
    assert_eq!(code, 1, "{err}\n{p}");
    assert_eq!(u(&p["failed"]), 3, "{p}");
    assert_eq!(u(&p["scheduled"]), 1000, "{p}");
    let sent = u(&p["ok"]) + u(&p["failed"]) + u(&p["cut_off"]);
    assert_eq!(u(&p["unsent"]), 1000 - sent, "{p}");
    assert!(u(&p["unsent"]) > 900, "{p}");
    assert!(p["failures"].to_string().contains("error limit"), "{p}");

    // --fail-fast: the first error, whatever the file says.
    let (code, report, _) = run(&MIXED.replace("STOP", ""), &["--fail-fast"]);
    let p = &report["cells"][0]["phases"][0];
    assert_eq!(code, 1);
    assert_eq!(u(&p["failed"]), 1, "{p}");
}

#[test]
fn stop_after_n_errors_ends_a_request_run_too() {
    let server = ServerHandle::start(Behaviour::ok().with_status(500));
    let text = format!(
        "workload w {{ seed 1 }}\ntarget svc {{ http \"{}\" }}\nrun r {{\n  against svc.http\n  request GET \"/\"\n  connections 1\n  duration 10s\n  stop after 2 errors\n}}\n",
        server.url()
    );
    let t = std::time::Instant::now();
    let (code, report, err) = run(&text, &[]);
    let p = &report["cells"][0]["phases"][0];
    assert_eq!(code, 1, "{err}\n{p}");
    assert_eq!(u(&p["failed"]), 2, "{p}");
    assert!(
        t.elapsed().as_secs() < 5,
        "stopped at the errors, not at 10 s"
    );
    assert_eq!(server.count(), 2);
}

#[test]
fn stop_after_takes_a_positive_count() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("w.wl"),
        MIXED.replace("STOP", "  stop after 0 errors\n"),
    )
    .unwrap();
    let out = wlrun(dir.path(), &["check", "w.wl"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("w.wl:9:14"), "{err}");
    assert!(
        err.contains("`stop after N errors` must be at least 1"),
        "{err}"
    );
}
