//! Secrets never come out of wlrun: the values `env()` read (4 characters or more) and the
//! passwords of endpoints, in the forms it could print them (plain, percent-encoded, base64,
//! inside a Basic authorization), in anything it prints or writes. The oracle
//! (`oracles::echo`) answers every request with 401 and the request's secrets in all those
//! forms, so they are in every error wlrun keeps.

#[path = "common/oracles/mod.rs"]
mod oracles;

use std::path::Path;
use std::process::{Command, Output};

use base64::Engine as _;
use oracles::echo::{percent_encoded, EchoServer};

/// Read by `env("WL_SECRETS_TEST_TOKEN")`: `/`, `+` and `=` change under percent-encoding.
const TOKEN: &str = "tok/en+Secret=42";
/// The URL's password, read by `env("WL_SECRETS_TEST_PASSWORD")`.
const PASSWORD: &str = "pa$$word-9";
const USER: &str = "alice";
/// A password written in the file: the file says it (and the workload is copied beside the
/// report), but it never goes out as the credentials it is.
const LITERAL: (&str, &str) = ("bob", "Lit-pass-77");
/// Under 4 characters: too short to mask without masking ordinary words.
const SHORT: &str = "abc";
/// A default written in the file is no secret: the file says it to anyone who reads it.
const DEFAULT: &str = "written-default";

fn wlrun(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .current_dir(dir)
        .args(args)
        .env("WL_SECRETS_TEST_TOKEN", TOKEN)
        .env("WL_SECRETS_TEST_PASSWORD", PASSWORD)
        .env("WL_SECRETS_TEST_SHORT", SHORT)
        .env_remove("WL_SECRETS_TEST_UNSET")
        .output()
        .unwrap()
}

/// Every form of the secrets a server or wlrun could show.
fn forms() -> Vec<String> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let (lit_user, lit_password) = LITERAL;
    vec![
        TOKEN.to_string(),
        percent_encoded(TOKEN),
        b64.encode(TOKEN),
        PASSWORD.to_string(),
        percent_encoded(PASSWORD),
        b64.encode(format!("{USER}:{PASSWORD}")),
        format!("{lit_user}:{lit_password}"),
        b64.encode(format!("{lit_user}:{lit_password}")),
    ]
}

fn assert_masked(what: &str, text: &str) {
    for f in forms() {
        assert!(!text.contains(&f), "{what} shows the secret `{f}`:\n{text}");
    }
}

#[test]
fn secrets_a_server_echoes_are_masked_in_everything_wlrun_prints_and_writes() {
    let server = EchoServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (lit_user, lit_password) = LITERAL;
    let addr = server.addr;
    let text = format!(
        r#"workload w {{ seed 1 }}
target svc {{
  http "http://{USER}:${{env("WL_SECRETS_TEST_PASSWORD")}}@{addr}" {{
    headers {{ "X-Token": env("WL_SECRETS_TEST_TOKEN"), "X-Short": env("WL_SECRETS_TEST_SHORT"), "X-Default": env("WL_SECRETS_TEST_UNSET", "{DEFAULT}") }}
  }}
}}
target lit {{
  http "http://{lit_user}:{lit_password}@{addr}"
}}
run from_env {{
  against svc.http
  request GET "/q"
  connections 1
  count 3
}}
run written {{
  against lit.http
  request GET "/q"
  connections 1
  count 3
}}
"#
    );
    std::fs::write(dir.path().join("w.wl"), text).unwrap();
    let out = wlrun(dir.path(), &["run", "w.wl", "--out", "res"]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert_eq!(server.answered(), 6, "the server echoed every request");

    let res = dir.path().join("res");
    let read = |name: &str| {
        std::fs::read_to_string(res.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let report: serde_json::Value = serde_json::from_str(&read("report.json")).unwrap();
    let first = |phase: usize| {
        report["cells"][0]["phases"][phase]["errors"]["http_status"]["first"]
            .as_str()
            .unwrap_or_else(|| panic!("no first error: {report}"))
            .to_string()
    };
    // The answers were kept, their secrets masked; what is no secret is kept as it came.
    let (from_env, written) = (first(0), first(1));
    assert!(from_env.contains("***"), "{from_env}");
    assert!(written.contains("***"), "{written}");
    for visible in [SHORT, DEFAULT] {
        assert!(
            from_env.contains(visible),
            "`{visible}` is no secret: {from_env}"
        );
    }
    assert_masked("stdout", &stdout);
    assert_masked("stderr", &stderr);
    for name in [
        "report.json",
        "report.csv",
        "report.html",
        "plan.json",
        "series/phases.jsonl",
    ] {
        assert_masked(name, &read(name));
    }
}

/// Passwords written in the file: in a URL and in a `password` option.
const LITERAL_WORKLOAD: &str = r#"workload w { seed 1 }
schema cpu {
  series host: symbol = format("h%d", n) for n in 0..4
  field v: long = uniform(0, 9)
  timestamp ts = every 1s from 2024-01-01T00:00:00Z for 10s
}
target db {
  pg "postgres://wlrun:UrlPass-1234@127.0.0.1:5432/db"
  http "http://127.0.0.1:9000" { user "bob"  password "OptionPass-77" }
}
ingest load { into db via pg  rows cpu }
run r { against db.http  request GET "/q"  count 1 }
"#;

const LITERALS: [&str; 2] = ["UrlPass-1234", "OptionPass-77"];

#[test]
fn a_password_written_in_the_file_is_not_shown_by_wlrun_plan_nor_its_json() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), LITERAL_WORKLOAD).unwrap();
    for args in [&["plan", "w.wl"][..], &["plan", "w.wl", "--json"]] {
        let out = wlrun(dir.path(), args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stdout}");
        for secret in LITERALS {
            assert!(
                !stdout.contains(secret),
                "{args:?} shows `{secret}`:\n{stdout}"
            );
        }
        // Masked, not dropped: the reader still sees that there is one.
        assert!(
            stdout.contains("wlrun:***@127.0.0.1"),
            "{args:?}:\n{stdout}"
        );
    }
}

#[test]
fn the_k8s_note_on_an_endpoint_of_this_machine_shows_no_password() {
    let dir = tempfile::tempdir().unwrap();
    let ingest_only = LITERAL_WORKLOAD.replace("run r {", "// run r {");
    std::fs::write(dir.path().join("w.wl"), ingest_only).unwrap();
    let out = wlrun(
        dir.path(),
        // The ingest runs as fast as the server takes it: no plan bounds the Job's deadline.
        &[
            "k8s",
            "w.wl",
            "--shards",
            "2",
            "--image",
            "w:1",
            "--deadline",
            "1h",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("names this machine"), "{stderr}");
    assert!(!stderr.contains("UrlPass-1234"), "{stderr}");
    assert!(stderr.contains("wlrun:***@127.0.0.1"), "{stderr}");
}
