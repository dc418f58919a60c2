//! An ingest's table setup (docs/language.md, "Setup and teardown") against an oracle that
//! knows which tables exist and logs every DDL statement it receives, with the rows it had
//! received by then: a line-protocol ingest sets its table up over the SQL endpoint of its
//! count, before its first row; a first run against a table that does not exist yet counts
//! a baseline of 0; a phase with no way to set its table up is refused before anything is
//! sent. PostgreSQL and SQLite say "no such table" in their own ways, asked of their clients.

use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

#[path = "common/cli.rs"]
mod cli;
#[path = "common/oracles/mod.rs"]
mod oracles;
#[path = "common/servers.rs"]
mod servers;

use oracles::fresh::{FreshServer, SCHEMA};
use wlrun::client::SqlClient;
use wlrun::plan::EndpointPlan;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Runs `text` with `--out`: the exit code, report.json's first phase, and what was printed.
fn run(dir: &Path, text: &str) -> (i32, Value, String) {
    let o = cli::run_out(dir, text, &["-q", "--replace"]);
    (o.code, o.phase(), o.printed())
}

/// The DDL statements the oracle received, each as its first two words (`DROP TABLE`,
/// `CREATE TABLE`, `TRUNCATE TABLE`) and the rows it had received before it.
fn ddl(server: &FreshServer) -> Vec<(String, u64)> {
    server
        .ddl()
        .into_iter()
        .map(|(sql, rows)| {
            let words: Vec<&str> = sql.split_whitespace().take(2).collect();
            (words.join(" "), rows)
        })
        .collect()
}

fn pair(rows: u64) -> Vec<(String, u64)> {
    vec![("DROP TABLE".into(), rows), ("CREATE TABLE".into(), rows)]
}

#[test]
fn a_line_protocol_ingest_sets_up_over_its_probes_sql_endpoint_before_its_rows() {
    // The shape of workloads/questdb-fresh-max.wl: line protocol in, `probe visible` over the
    // target's count rule, `setup recreate`, no `verify visible`; the table does not exist.
    let server = FreshServer::start_with_tables(Duration::ZERO, &[]);
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{SCHEMA}{}
ingest load {{
  into fake via ilp_http
  rows s limit 2000
  batch 200 rows
  rate 20_000/s
  setup recreate
  probe visible every 20ms within 10s
}}
",
        server.target()
    );
    let (code, p, printed) = run(dir.path(), &text);
    assert_eq!(code, 0, "{printed}\n{p:#}");
    // Truth: the table was dropped and created before the first row arrived.
    assert_eq!(ddl(&server), pair(0), "{:?}", server.ddl());
    let create = &server.ddl()[1].0;
    assert!(
        create.starts_with("CREATE TABLE s (host SYMBOL")
            && create.ends_with("timestamp(ts) PARTITION BY DAY WAL"),
        "{create}"
    );
    let f = &p["freshness"];
    assert_eq!(server.rows(), 2000);
    assert_eq!(u(&f["rows_target"]), 2000, "{f:#}");
    assert_eq!(u(&f["last_visible"]), 2000, "{f:#}");
    assert_eq!(u(&f["probes_failed"]), 0, "{f:#}");

    // A second run drops the first run's 2,000 rows before sending its own: its probe counts
    // from an empty table, not from the last run's.
    let (code, p, printed) = run(dir.path(), &text);
    assert_eq!(code, 0, "{printed}\n{p:#}");
    let mut twice = pair(0);
    twice.extend(pair(2000));
    assert_eq!(ddl(&server), twice);
    assert_eq!(u(&p["freshness"]["last_visible"]), 2000, "{p:#}");
}

#[test]
fn every_step_of_a_search_starts_from_an_empty_table() {
    let server = FreshServer::start_with_tables(Duration::ZERO, &["s"]);
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{SCHEMA}{}
ingest load {{
  into fake via ilp_http
  rows s
  batch 100 rows
  setup recreate
  probe visible every 20ms within 5s
  find max rate from 1_000/s up to 4_000/s where lag_p99 < 2s samples 10
}}
",
        server.target()
    );
    let (code, p, printed) = run(dir.path(), &text);
    assert_eq!(code, 0, "{printed}\n{p:#}");
    let steps = p["findmax"]["steps"].as_array().unwrap();
    assert!(steps.len() >= 2, "{p:#}");
    // One drop and create per step, each before the step's rows: the rows received before a
    // step's DDL are the earlier steps' rows, every one of them sent.
    let log = ddl(&server);
    // The truth next to the steps, for whoever runs this with --nocapture.
    for step in steps {
        eprintln!(
            "step {} at {}/s: {} rows ok",
            step["step"], step["rate_per_s"], step["ok"]
        );
    }
    eprintln!("DDL the oracle received (statement, rows received before it): {log:?}");
    assert_eq!(log.len(), 2 * steps.len(), "{log:?}");
    let mut before = 0;
    for (i, step) in steps.iter().enumerate() {
        assert_eq!(&log[2 * i..2 * i + 2], &pair(before)[..], "{log:?}");
        assert_eq!(u(&step["failed"]), 0, "{step:#}");
        before += u(&step["ok"]);
    }
    assert_eq!(server.rows(), before);
}

#[test]
fn a_first_run_against_a_missing_table_counts_a_baseline_of_zero() {
    // `setup shared` touches no table: the baseline count meets one that does not exist.
    let server = FreshServer::start_with_tables(Duration::ZERO, &[]);
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{SCHEMA}{}
ingest load {{
  into fake via ilp_http
  rows s limit 1000
  batch 100 rows
  setup shared
  verify visible within 10s
}}
",
        server.target()
    );
    let (code, p, printed) = run(dir.path(), &text);
    assert_eq!(code, 0, "{printed}\n{p:#}");
    assert_eq!(u(&p["visible_baseline"]), 0, "{p:#}");
    assert_eq!(u(&p["rows_visible"]), 1000, "{p:#}");
    assert!(server.ddl().is_empty(), "{:?}", server.ddl());
    // Line protocol created the table; a second run counts the first one's rows as its
    // baseline.
    assert_eq!(server.tables(), ["s"]);
    let (code, p, printed) = run(dir.path(), &text);
    assert_eq!(code, 0, "{printed}\n{p:#}");
    assert_eq!(u(&p["visible_baseline"]), 1000, "{p:#}");
    assert_eq!(u(&p["rows_visible"]), 1000, "{p:#}");
}

#[test]
fn truncating_a_missing_table_is_a_no_op() {
    let server = FreshServer::start_with_tables(Duration::ZERO, &[]);
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{SCHEMA}{}
ingest load {{
  into fake via ilp_http
  rows s limit 1000
  batch 100 rows
  setup truncate
  verify visible within 10s
}}
",
        server.target()
    );
    let (code, p, printed) = run(dir.path(), &text);
    assert_eq!(code, 0, "{printed}\n{p:#}");
    assert_eq!(ddl(&server), [("TRUNCATE TABLE".to_string(), 0)]);
    assert_eq!(u(&p["visible_baseline"]), 0, "{p:#}");
    assert_eq!(u(&p["rows_visible"]), 1000, "{p:#}");
    // The second run's truncate empties what the first one left.
    let (code, p, printed) = run(dir.path(), &text);
    assert_eq!(code, 0, "{printed}\n{p:#}");
    assert_eq!(
        ddl(&server),
        [
            ("TRUNCATE TABLE".to_string(), 0),
            ("TRUNCATE TABLE".to_string(), 1000)
        ]
    );
    assert_eq!(u(&p["visible_baseline"]), 0, "{p:#}");
    assert_eq!(u(&p["rows_visible"]), 1000, "{p:#}");
}

#[test]
fn a_baseline_that_fails_for_another_reason_still_fails_the_phase() {
    // Every count answers HTTP 500: an error, not "no rows yet".
    let server = FreshServer::start(Duration::ZERO, 1);
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{SCHEMA}{}
ingest load {{
  into fake via ilp_http
  rows s limit 1000
  batch 100 rows
  setup shared
  verify visible within 10s
}}
",
        server.target()
    );
    let (code, p, printed) = run(dir.path(), &text);
    assert_eq!(code, 1, "{printed}\n{p:#}");
    assert_eq!(server.rows(), 0, "nothing is sent after a failed baseline");
    let first = p["failures"][0].as_str().unwrap();
    assert!(
        first.starts_with("setup: ") && first.contains("500"),
        "{p:#}"
    );
}

/// A workload whose target takes line protocol or QWP only, on `port`, and an ingest with
/// `clauses`.
fn no_sql(port: u16, dialect: &str, kind: &str, clauses: &str) -> String {
    format!(
        "{SCHEMA}
target sink {{
  dialect {dialect}
  {kind} \"tcp://127.0.0.1:{port}\"
}}
ingest load {{
  into sink via {kind}
  rows s limit 100
{clauses}
}}
"
    )
    .replace(
        "\"tcp://",
        if kind == "qwp" { "\"ws://" } else { "\"tcp://" },
    )
}

/// The line of `text` holding `needle`, from 1, and the column where it starts.
fn at(text: &str, needle: &str) -> String {
    let (n, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains(needle))
        .unwrap_or_else(|| panic!("no `{needle}` in {text}"));
    format!("w.wl:{}:{}", n + 1, line.find(needle).unwrap() + 1)
}

#[test]
fn a_setup_with_no_way_to_the_server_is_refused_before_anything_is_sent() {
    // A listener that counts connections: a refused phase never connects.
    let sink = TcpListener::bind("127.0.0.1:0").unwrap();
    sink.set_nonblocking(true).unwrap();
    let port = sink.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    for (kind, clauses, word, why) in [
        (
            "ilp_tcp",
            "  setup recreate",
            "recreate",
            "`setup recreate` has nowhere to run: the phase has no endpoint that takes SQL \
             (`sink.ilp_tcp` is ilp_tcp)",
        ),
        (
            "qwp",
            "  setup truncate",
            "truncate",
            "`setup truncate` has nowhere to run: the phase has no endpoint that takes SQL \
             (`sink.qwp` is qwp)",
        ),
        (
            "ilp_tcp",
            "  setup shared\n  teardown drop",
            "drop",
            "`teardown drop` has nowhere to run",
        ),
    ] {
        let text = no_sql(port, "questdb", kind, clauses);
        std::fs::write(dir.path().join("w.wl"), &text).unwrap();
        for command in ["check", "run"] {
            let out = cli::wlrun(dir.path(), &[command, "w.wl"]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{command} {clauses}: {err}");
            assert!(
                err.contains(&format!("error[E0302]: {why}")),
                "{command} {clauses}: {err}"
            );
            let place = at(&text, &format!(" {word}"));
            let col: usize = place.rsplit(':').next().unwrap().parse().unwrap();
            let place = format!("{}:{}", place.rsplit_once(':').unwrap().0, col + 1);
            assert!(
                err.contains(&place),
                "{command} {clauses}: {place} in {err}"
            );
            assert!(err.contains("add one to target `sink`"), "{err}");
        }
    }
    // A dialect wlrun writes no DDL for, over an endpoint that takes SQL.
    let text = no_sql(port, "ksqldb", "ilp_tcp", "  setup recreate").replace(
        "target sink {",
        "target sink {\n  pg \"postgres://127.0.0.1:1/x\"",
    );
    std::fs::write(dir.path().join("w.wl"), &text).unwrap();
    let out = cli::wlrun(dir.path(), &["check", "w.wl"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "`setup recreate` has nowhere to run: wlrun writes no table DDL for dialect `ksqldb`"
        ),
        "{err}"
    );
    assert!(
        matches!(sink.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "a refused phase connected to its endpoint"
    );
}

#[test]
fn without_a_setup_clause_a_phase_with_no_way_leaves_the_table_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let text = no_sql(1, "questdb", "ilp_tcp", "");
    std::fs::write(dir.path().join("w.wl"), &text).unwrap();
    let out = cli::wlrun(dir.path(), &["plan", "w.wl"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let listing = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "warning[W0004]: the default `setup recreate` cannot run here: the phase has no \
             endpoint that takes SQL"
        ),
        "{err}"
    );
    assert!(err.contains(&at(&text, "into sink")), "{err}");
    assert!(listing.contains("setup shared  teardown keep"), "{listing}");
}

#[test]
fn the_ddl_endpoint_is_the_ingest_endpoint_or_the_counts() {
    // Listed by `wlrun plan`: the count rule's endpoint, with no count in the phase at all.
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{SCHEMA}
target q {{
  dialect questdb
  qwp  \"ws://127.0.0.1:1\"
  http \"http://127.0.0.1:2\"
  count rows via http sql \"SELECT count(*) FROM ${{table}}\"
}}
target p {{
  dialect postgres
  pg \"postgres://u@127.0.0.1:3/x\"
}}
ingest a {{ into q via qwp  rows s  setup truncate }}
ingest b {{ into p via pg  rows s }}
"
    );
    std::fs::write(dir.path().join("w.wl"), &text).unwrap();
    let out = cli::wlrun(dir.path(), &["plan", "w.wl"]);
    let listing = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        listing.contains("    ddl via q.http (http http://127.0.0.1:2)"),
        "{listing}"
    );
    // The pg ingest runs its DDL over its own endpoint: no line for it.
    assert_eq!(listing.matches("ddl via").count(), 1, "{listing}");
}

/// An endpoint of `kind` at `url`, as the plan has it.
fn endpoint(kind: &str, dialect: &str, url: &str) -> EndpointPlan {
    EndpointPlan {
        target: "t".into(),
        name: kind.into(),
        kind: kind.into(),
        dialect: dialect.into(),
        url: Some(wlrun::value::Text::lit(url)),
        options: Default::default(),
    }
}

#[test]
fn postgresql_and_sqlite_say_no_such_table_in_their_own_ways() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db").display().to_string();
    let mut clients = vec![rt
        .block_on(SqlClient::connect(
            &endpoint("sqlite", "sqlite", &db),
            &db,
            dir.path(),
            Duration::from_secs(10),
        ))
        .unwrap()];
    if let Some(url) = rt.block_on(servers::pg_server()) {
        clients.push(
            rt.block_on(SqlClient::connect(
                &endpoint("pg", "postgres", &url),
                &url,
                dir.path(),
                Duration::from_secs(10),
            ))
            .unwrap(),
        );
    }
    for mut c in clients {
        let table = "wlrun_ingest_setup_missing";
        rt.block_on(async {
            c.execute(&format!("DROP TABLE IF EXISTS {table}"))
                .await
                .unwrap();
            let count = format!("SELECT count(*) FROM {table}");
            // The missing table: no rows, and nothing to empty.
            assert_eq!(c.count_if_exists(&count).await, Ok(None));
            assert_eq!(
                c.execute_if_exists(&format!("DELETE FROM {table}")).await,
                Ok(false)
            );
            assert!(c.count(&count).await.is_err());
            // Any other error stays one.
            assert!(c
                .count_if_exists(&format!("SELECT count(nosuch) FROM {table}x WHERE"))
                .await
                .is_err());
            c.execute(&format!("CREATE TABLE {table} (v integer)"))
                .await
                .unwrap();
            assert!(c
                .count_if_exists(&format!("SELECT count(nosuch) FROM {table}"))
                .await
                .is_err());
            assert_eq!(c.count_if_exists(&count).await, Ok(Some(0)));
            assert_eq!(
                c.execute_if_exists(&format!("DELETE FROM {table}")).await,
                Ok(true)
            );
            c.execute(&format!("DROP TABLE {table}")).await.unwrap();
        });
    }
}

#[test]
fn a_probe_alone_gives_a_metric_stores_setup_its_way_to_the_api() {
    // VictoriaMetrics over ILP/TCP: setup deletes series through the `http` API that the
    // probe counts with, as it would through verify's.
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{SCHEMA}
target vm {{
  dialect victoriametrics
  ilp_tcp \"tcp://127.0.0.1:8089\"
  http    \"http://127.0.0.1:8428\" as api
  count samples via api promql \"sum(count_over_time({{__name__=~\\\"${{table}}_.*\\\"}}[1d]))\"
}}
ingest load {{
  into vm via ilp_tcp
  rows s limit 100
  probe visible every 100ms
}}
"
    );
    std::fs::write(dir.path().join("w.wl"), &text).unwrap();
    let out = cli::wlrun(dir.path(), &["check", "w.wl"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("E0302"), "{err}");
}
