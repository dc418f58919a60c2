//! What ran, where: a run's report.json, terminal header, `wlrun report` and report.html say
//! wlrun's version, the machine (read back here from /proc, the truth), the load, and each SQL
//! endpoint's server version as the server itself gives it (asked here over a connection of
//! the test's own); `wlrun compare` shows where two runs' environments differ.

#[path = "common/cli.rs"]
mod cli;
#[path = "common/http_server.rs"]
mod http_server;
#[path = "common/oracles/mod.rs"]
mod oracles;
#[path = "common/servers.rs"]
mod servers;

use std::path::Path;

use serde_json::{json, Value};

use cli::{run_out, wlrun};
use http_server::{Behaviour, ServerHandle};

fn pg_workload() -> String {
    format!(
        "workload w {{ seed 1 }}\n\
         target db {{ pg \"{}\" }}\n\
         target lite {{ sqlite \":memory:\" }}\n\
         query one {{ sql \"SELECT 1\" }}\n\
         run over_pg {{\n  against db.pg\n  queries one\n  count 5\n}}\n\
         run again {{\n  against db.pg\n  queries one\n  count 5\n}}\n\
         run over_sqlite {{\n  against lite.sqlite\n  queries one\n  count 5\n}}\n",
        servers::pg_url()
    )
}

/// What PostgreSQL says its version is, over the test's own connection.
async fn pg_version() -> String {
    let (client, conn) = tokio_postgres::connect(&servers::pg_url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client
        .query_one("SELECT version()", &[])
        .await
        .unwrap()
        .get(0)
}

fn proc(path: &str) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// MemTotal of /proc/meminfo in bytes.
fn mem_total() -> u64 {
    let text = proc("/proc/meminfo");
    let line = text.lines().find(|l| l.starts_with("MemTotal:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

fn asked_of<'a>(env: &'a Value, name: &str) -> &'a Value {
    let (target, endpoint) = name.split_once('.').unwrap();
    env["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["target"] == target && s["endpoint"] == endpoint)
        .unwrap_or_else(|| panic!("no server {name} in {env:#}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_says_what_ran_where_and_which_postgresql_answered() {
    if !servers::pg_up() {
        return;
    }
    let truth = pg_version().await;
    let dir = tempfile::tempdir().unwrap();
    let run = tokio::task::spawn_blocking({
        let dir = dir.path().to_path_buf();
        move || run_out(&dir, &pg_workload(), &[])
    })
    .await
    .unwrap();
    assert_eq!(run.code, 0, "{}", run.printed());
    let env = &run.report["environment"];

    // The machine, as /proc has it.
    assert_eq!(env["wlrun_version"], env!("CARGO_PKG_VERSION"));
    let host = proc("/proc/sys/kernel/hostname").trim().to_string();
    assert_eq!(env["host"], host.as_str(), "{env:#}");
    let release = proc("/proc/sys/kernel/osrelease").trim().to_string();
    assert_eq!(env["kernel"], format!("Linux {release}"), "{env:#}");
    let processors = proc("/proc/cpuinfo")
        .lines()
        .filter(|l| l.split(':').next().unwrap().trim() == "processor")
        .count();
    assert_eq!(env["cores"], processors, "{env:#}");
    assert_eq!(env["memory_bytes"], mem_total(), "{env:#}");
    for load in ["load_average_start", "load_average_end"] {
        assert!(env[load].as_f64().is_some_and(|l| l >= 0.0), "{env:#}");
    }
    // Built from this checkout: the commit git names.
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if let Some(head) = head {
        assert_eq!(env["commit"], head.as_str(), "{env:#}");
    }

    // The servers, as they say it: PostgreSQL asked once though two runs use it.
    let servers = env["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 2, "{env:#}");
    assert_eq!(asked_of(env, "db.pg")["version"], truth.as_str());
    let sqlite: String = rusqlite::Connection::open_in_memory()
        .unwrap()
        .query_row("SELECT sqlite_version()", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        asked_of(env, "lite.sqlite")["version"],
        format!("SQLite {sqlite}")
    );

    // The terminal's header before the first cell, `wlrun report`, and report.html.
    let first = run.stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!("wlrun {}", env!("CARGO_PKG_VERSION")))
            && first.contains(&format!(" on {host}: Linux {release}")),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(&format!("  server db.pg: {truth}\n")),
        "{}",
        run.stderr
    );
    let report = wlrun(dir.path(), &["report", "res"]);
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.starts_with(first), "{text}");
    assert!(text.contains(" at the end\n"), "{text}");
    let page = std::fs::read_to_string(dir.path().join("res/report.html")).unwrap();
    assert!(page.contains("<caption>Environment</caption>"), "{page}");
    assert!(
        page.contains(&format!("<th>server db.pg</th><td>{truth}</td>")),
        "{page}"
    );

    // --quiet: no header; the report still has it.
    let quiet = tempfile::tempdir().unwrap();
    let q = tokio::task::spawn_blocking({
        let dir = quiet.path().to_path_buf();
        move || run_out(&dir, &pg_workload(), &["--quiet"])
    })
    .await
    .unwrap();
    assert!(!q.stderr.contains("server db.pg"), "{}", q.stderr);
    assert_eq!(
        asked_of(&q.report["environment"], "db.pg")["version"],
        truth.as_str()
    );

    compare_shows_a_different_host(dir.path(), &host);
}

/// The run compared with a copy of itself whose report says another host: the host, side by
/// side; with itself, nothing.
fn compare_shows_a_different_host(dir: &Path, host: &str) {
    let copy = dir.join("copy");
    std::fs::create_dir(&copy).unwrap();
    let mut report: Value =
        serde_json::from_slice(&std::fs::read(dir.join("res/report.json")).unwrap()).unwrap();
    report["environment"]["host"] = json!("elsewhere-42");
    std::fs::write(copy.join("report.json"), report.to_string()).unwrap();

    let same = wlrun(dir, &["compare", "res", "res"]);
    let text = String::from_utf8_lossy(&same.stdout);
    assert_eq!(same.status.code(), Some(0), "{text}");
    assert!(!text.contains("different environments"), "{text}");

    let out = wlrun(dir, &["compare", "res", "copy/report.json"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("the runs ran in different environments:\n"),
        "{text}"
    );
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("host "))
        .unwrap_or_else(|| panic!("no host line: {text}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words, ["host", host, "elsewhere-42"], "{text}");

    let json = wlrun(dir, &["compare", "res", "copy/report.json", "--json"]);
    let c: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        c["environment"],
        json!([{"field": "host", "base": host, "new": "elsewhere-42"}])
    );
    let page = wlrun(dir, &["compare", "res", "copy/report.json", "--html"]);
    let page = String::from_utf8_lossy(&page.stdout);
    assert!(
        page.contains(&format!(
            "<th>host</th><td>{host}</td><td>elsewhere-42</td>"
        )),
        "{page}"
    );
}

/// QuestDB says which build it is to `SELECT build()` over /exec: the server here answers
/// every request with a build line the test chose.
const BUILD: &str = "Build Information: QuestDB 9.4.4 (oracle), JDK 17, Commit Hash 0123abc";

fn questdb_http() -> ServerHandle {
    ServerHandle::start(Behaviour::ok().with_json(&json!({
        "query": "SELECT build()",
        "columns": [{"name": "build", "type": "STRING"}],
        "timestamp": -1,
        "dataset": [[BUILD]],
        "count": 1
    })))
}

fn questdb_workload(url: &str) -> String {
    format!(
        "workload w {{ seed 1 }}\n\
         target qdb {{\n  dialect questdb\n  http \"{url}\"\n}}\n\
         query one {{ sql \"SELECT 1\" }}\n\
         run a {{\n  against qdb.http\n  queries one\n  count 3\n}}\n\
         run b {{\n  against qdb.http\n  queries one\n  count 3\n}}\n"
    )
}

fn asked_build(server: &ServerHandle) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.path.contains("build"))
        .count()
}

#[test]
fn questdb_over_http_gives_its_build_once_per_run() {
    let server = questdb_http();
    let dir = tempfile::tempdir().unwrap();
    let run = run_out(dir.path(), &questdb_workload(&server.url()), &["--quiet"]);
    assert_eq!(run.code, 0, "{}", run.printed());
    let env = &run.report["environment"];
    assert_eq!(env["servers"].as_array().unwrap().len(), 1, "{env:#}");
    assert_eq!(asked_of(env, "qdb.http")["version"], BUILD, "{env:#}");
    assert_eq!(asked_build(&server), 1);
    // 6 queries and the one question.
    assert_eq!(server.count(), 7);
}

#[test]
fn no_server_versions_opens_no_connection_of_its_own() {
    let server = questdb_http();
    let dir = tempfile::tempdir().unwrap();
    let run = run_out(
        dir.path(),
        &questdb_workload(&server.url()),
        &["--quiet", "--no-server-versions"],
    );
    assert_eq!(run.code, 0, "{}", run.printed());
    assert_eq!(run.report["environment"]["servers"], json!([]));
    assert!(run.report["environment"]["host"].is_string());
    assert_eq!(asked_build(&server), 0);
    assert_eq!(server.count(), 6);
}

#[test]
fn a_server_that_cannot_be_asked_leaves_its_version_out_and_the_run_goes_on() {
    // A port nothing listens on: the run fails its phase, the report still says the rest.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let dir = tempfile::tempdir().unwrap();
    let run = run_out(dir.path(), &questdb_workload(&url), &["--quiet"]);
    assert_ne!(run.code, 0, "{}", run.printed());
    let asked = asked_of(&run.report["environment"], "qdb.http");
    assert_eq!(asked, &json!({"target": "qdb", "endpoint": "http"}));
}

#[test]
fn a_line_protocol_ingest_asks_the_sql_endpoint_of_its_count() {
    // ILP over HTTP in, counts over the target's /exec: only the latter takes SQL.
    let server = oracles::fresh::FreshServer::start(std::time::Duration::ZERO, 0);
    let text = format!(
        "{}{}\ningest load {{\n  into fake via ilp_http\n  rows s limit 200\n  batch 100 rows\n  \
         verify visible within 10s\n}}\n",
        oracles::fresh::SCHEMA,
        server.target()
    );
    let dir = tempfile::tempdir().unwrap();
    let run = run_out(dir.path(), &text, &["--quiet"]);
    assert_eq!(run.code, 0, "{}", run.printed());
    assert_eq!(
        run.report["environment"]["servers"],
        json!([{"target": "fake", "endpoint": "http", "version": oracles::fresh::BUILD}])
    );
}
