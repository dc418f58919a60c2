//! The query runner's transports against real servers: PostgreSQL in each statement mode
//! (prepared, unnamed, simple) with every kind of bind, embedded SQLite with timestamp binds
//! against stored DDL text, and HTTP `/exec` served by a test server that executes the SQL on
//! the same PostgreSQL, so that every transport's row counts come from real executions and
//! must agree. Errors: SQLSTATEs, binds that do not fit, a terminated backend (broken, then a
//! reconnect works), timeouts that return instead of hanging, HTTP error answers and bodies
//! cut short.
//!
//! The PostgreSQL server is `postgres://wlrun:wlrun@127.0.0.1:5432/wlrun`, or `WLRUN_TEST_PG`.
//! Where it cannot be reached the tests that need it are skipped with a note, except under
//! `CI=true`, where they fail (see `server`).

#[path = "common/checksum_cases.rs"]
mod checksum_cases;
#[path = "common/endpoints.rs"]
mod endpoints;
#[path = "common/exec_server.rs"]
mod exec_server;
#[path = "common/query_setup.rs"]
mod query_setup;
#[path = "common/servers.rs"]
mod servers;

use std::path::Path;
use std::time::{Duration, Instant};

use tokio_postgres::Client;

use checksum_cases::{checksum_cases, make_table, make_typed_table};
use endpoints::{endpoint, secs, text, word};
use exec_server::ExecServer;
use query_setup::{
    admin, bind_kind_cases, bind_placement_cases, connect, drop_table, inst, rows,
    server_and_table, summed, summing, unique, SEC, T0,
};
use wlrun::plan::EndpointPlan;
use wlrun::query::transport::Transport;
use wlrun::query::{Instance, QueryError, QueryErrorClass};
use wlrun::value::BindValue;
use wlrun::value::Value;

const WAIT: Duration = Duration::from_secs(10);

async fn server() -> Option<String> {
    servers::pg_server().await
}

const MODES: [&str; 3] = ["prepared", "unnamed", "simple"];

fn pg_endpoint(mode: &str, extra: &[(&str, Value)]) -> EndpointPlan {
    let mut options = vec![("statements", word(mode)), ("timeout", secs(10.0))];
    options.extend(extra.iter().cloned());
    endpoint("pg", "postgres", &options)
}

/// The instances every transport must count alike, with the rows each returns.
fn cases(table: &str) -> Vec<(Instance, u64)> {
    use BindValue::*;
    let q = |sql: &str| sql.replace("{T}", table);
    let mut cases = vec![
        (inst(&q("SELECT * FROM {T} "), vec![]), 10),
        (
            inst(&q("SELECT * FROM {T} WHERE i4 >= $1"), vec![Int(3)]),
            7,
        ),
        (
            inst(&q("SELECT * FROM {T} WHERE i4 > $1"), vec![Int(-1)]),
            10,
        ),
    ];
    cases.extend(bind_kind_cases(table));
    cases.push((
        inst(
            &q("SELECT * FROM {T} WHERE ts = $1"),
            vec![Timestamp(T0 + 30 * SEC)],
        ),
        1,
    ));
    cases.extend(bind_placement_cases(table));
    cases.push((
        inst(
            &q("SELECT count(*) FROM {T} WHERE i4 < $1 AND f8 > $2 AND b = $3"),
            vec![Int(8), Float(0.25), Bool(false)],
        ),
        1,
    ));
    cases
}

#[tokio::test]
async fn pg_every_mode_counts_rows_for_every_bind_kind() {
    let Some((url, admin, table)) = server_and_table("qt", "binds").await else {
        return;
    };
    make_table(&admin, &table).await;
    for mode in MODES {
        let mut t = connect(&pg_endpoint(mode, &[]), &url).await;
        // Twice: the second pass runs prepared statements from the cache.
        for pass in 0..2 {
            for (i, expected) in cases(&table) {
                let got = rows(&mut t, &i).await;
                assert_eq!(
                    got,
                    Ok(expected),
                    "mode {mode}, pass {pass}: {} with {:?}",
                    i.sql,
                    i.binds
                );
            }
        }
        if let Transport::Pg(p) = &t {
            let mut texts: Vec<_> = cases(&table).into_iter().map(|(i, _)| i.sql).collect();
            texts.sort();
            texts.dedup();
            let expected = if mode == "prepared" { texts.len() } else { 0 };
            assert_eq!(p.prepared_statements(), expected, "mode {mode}");
        } else {
            panic!("a pg endpoint gave another transport");
        }
    }
    drop_table(&admin, &table).await;
}

#[tokio::test]
async fn pg_large_results_are_read_to_the_last_row() {
    let Some(url) = server().await else { return };
    for mode in MODES {
        let mut t = connect(&pg_endpoint(mode, &[]), &url).await;
        let i = inst(
            "SELECT g, repeat('x', 100) FROM generate_series(1, $1) AS g",
            vec![BindValue::Int(200_000)],
        );
        assert_eq!(rows(&mut t, &i).await, Ok(200_000), "mode {mode}");
    }
}

#[tokio::test]
async fn pg_sql_errors_carry_the_sqlstate_and_keep_the_connection() {
    let Some(url) = server().await else { return };
    let missing = unique("qt", "missing");
    for mode in MODES {
        let mut t = connect(&pg_endpoint(mode, &[]), &url).await;
        let e = rows_of(
            &mut t,
            &format!("SELECT * FROM {missing} WHERE x = $1"),
            vec![BindValue::Int(1)],
        )
        .await
        .unwrap_err();
        assert_eq!(e.class, QueryErrorClass::Sql, "mode {mode}: {e}");
        assert_eq!(e.code.as_deref(), Some("42P01"), "mode {mode}: {e}");
        assert!(e.message.contains(&missing), "mode {mode}: {e}");
        assert!(e.message.contains("does not exist"), "mode {mode}: {e}");
        assert!(!e.broken, "mode {mode}");

        // An error raised while rows stream: division by zero on the third row.
        let e = rows(
            &mut t,
            &inst(
                "SELECT 10 / (g - $1) FROM generate_series(1, 5) AS g",
                vec![BindValue::Int(3)],
            ),
        )
        .await
        .unwrap_err();
        assert_eq!(e.class, QueryErrorClass::Sql, "mode {mode}: {e}");
        assert_eq!(e.code.as_deref(), Some("22012"), "mode {mode}: {e}");
        assert!(!e.broken, "mode {mode}");

        // The session took both and goes on.
        assert_eq!(
            rows(&mut t, &inst("SELECT 1", vec![])).await,
            Ok(1),
            "mode {mode}"
        );
    }
}

#[tokio::test]
async fn pg_binds_that_do_not_fit_are_client_errors() {
    let Some((url, admin, table)) = server_and_table("qt", "fit").await else {
        return;
    };
    make_table(&admin, &table).await;
    let sql = format!("SELECT * FROM {table} WHERE i4 = $1");
    let mut t = connect(&pg_endpoint("prepared", &[]), &url).await;
    for (bind, says) in [
        (BindValue::Bool(true), "bool"),
        (BindValue::Float(1.5), "float 1.5"),
        (BindValue::Int(1 << 40), "out of range"),
        (BindValue::Timestamp(T0), "timestamp"),
    ] {
        let e = rows(&mut t, &inst(&sql, vec![bind.clone()]))
            .await
            .unwrap_err();
        assert_eq!(e.class, QueryErrorClass::Client, "{bind:?}: {e}");
        assert!(!e.broken, "{bind:?}");
        assert!(e.message.contains("$1"), "{bind:?}: {e}");
        assert!(e.message.contains("int4"), "{bind:?}: {e}");
        assert!(e.message.contains(says), "{bind:?}: {e}");
    }
    // Too many binds for the statement's parameters.
    let e = rows(
        &mut t,
        &inst(&sql, vec![BindValue::Int(1), BindValue::Int(2)]),
    )
    .await
    .unwrap_err();
    assert_eq!(e.class, QueryErrorClass::Client, "{e}");
    // A text goes to the server's input function: one that does not parse is its error.
    let e = rows(&mut t, &inst(&sql, vec![BindValue::Text("abc".into())]))
        .await
        .unwrap_err();
    assert_eq!(e.class, QueryErrorClass::Sql, "{e}");
    assert_eq!(e.code.as_deref(), Some("22P02"), "{e}");
    // Still usable.
    assert_eq!(
        rows(&mut t, &inst(&sql, vec![BindValue::Text("4".into())])).await,
        Ok(1)
    );

    // Unnamed: the bind's own type reaches the server, which refuses the comparison.
    let mut t = connect(&pg_endpoint("unnamed", &[]), &url).await;
    let e = rows(&mut t, &inst(&sql, vec![BindValue::Bool(true)]))
        .await
        .unwrap_err();
    assert_eq!(e.class, QueryErrorClass::Sql, "{e}");
    assert_eq!(e.code.as_deref(), Some("42883"), "{e}");
    assert!(!e.broken);
    assert_eq!(
        rows(&mut t, &inst(&sql, vec![BindValue::Int(4)])).await,
        Ok(1)
    );
    drop_table(&admin, &table).await;
}

/// Waits until no backend with `app` as application_name is left.
async fn wait_gone(admin: &Client, app: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        let row = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                &[&app],
            )
            .await
            .unwrap();
        if row.get::<_, i64>(0) == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "backend {app} still there");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn pg_a_terminated_backend_breaks_the_connection_and_a_reconnect_works() {
    let Some(url) = server().await else { return };
    let admin = admin(&url).await;
    for mode in MODES {
        let app = unique("qt", &format!("kill_{mode}"));
        let ep = pg_endpoint(mode, &[("application_name", text(&app))]);
        let probe = inst(
            "SELECT g FROM generate_series(1, $1) AS g",
            vec![BindValue::Int(3)],
        );
        let mut t = connect(&ep, &url).await;
        assert_eq!(rows(&mut t, &probe).await, Ok(3), "mode {mode}");

        let killed = admin
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                 WHERE application_name = $1",
                &[&app],
            )
            .await
            .unwrap();
        assert_eq!(killed.get::<_, i64>(0), 1, "mode {mode}");
        wait_gone(&admin, &app).await;

        let started = Instant::now();
        let e = rows(&mut t, &probe).await.unwrap_err();
        assert!(
            started.elapsed() < WAIT,
            "mode {mode}: took {:?}",
            started.elapsed()
        );
        assert_eq!(e.class, QueryErrorClass::Connection, "mode {mode}: {e}");
        assert!(e.broken, "mode {mode}: {e}");
        // The same connection stays broken.
        let again = rows(&mut t, &probe).await.unwrap_err();
        assert!(again.broken, "mode {mode}: {again}");

        let mut t = connect(&ep, &url).await;
        assert_eq!(
            rows(&mut t, &probe).await,
            Ok(3),
            "mode {mode} after reconnecting"
        );
    }
}

#[tokio::test]
async fn pg_a_query_past_the_timeout_returns_and_is_cancelled() {
    let Some(url) = server().await else { return };
    let admin = admin(&url).await;
    for mode in MODES {
        let app = unique("qt", &format!("slow_{mode}"));
        let ep = pg_endpoint(
            mode,
            &[("application_name", text(&app)), ("timeout", secs(0.3))],
        );
        let mut t = connect(&ep, &url).await;
        let started = Instant::now();
        let e = rows(
            &mut t,
            &inst("SELECT pg_sleep($1)", vec![BindValue::Float(5.0)]),
        )
        .await
        .unwrap_err();
        let took = started.elapsed();
        assert_eq!(e.class, QueryErrorClass::Timeout, "mode {mode}: {e}");
        assert!(e.broken, "mode {mode}");
        assert!(
            took >= Duration::from_millis(300) && took < Duration::from_secs(3),
            "mode {mode}: took {took:?}"
        );
        // The transport is still alive here, so an idle backend means the cancel arrived.
        let deadline = Instant::now() + Duration::from_secs(4);
        loop {
            let active = admin
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE application_name = $1 AND state = 'active'",
                    &[&app],
                )
                .await
                .unwrap()
                .get::<_, i64>(0);
            if active == 0 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "mode {mode}: the timed-out query still runs on the server"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        drop(t);
    }
}

#[tokio::test]
async fn pg_the_statement_cache_is_capped() {
    let Some(url) = server().await else { return };
    let mut t = connect(&pg_endpoint("prepared", &[]), &url).await;
    let cap = wlrun::query::transport::pg::MAX_STATEMENTS;
    for k in 0..cap + 10 {
        let i = inst(
            &format!("SELECT {k} WHERE $1::int4 > 0"),
            vec![BindValue::Int(1)],
        );
        assert_eq!(rows(&mut t, &i).await, Ok(1), "statement {k}");
    }
    let Transport::Pg(p) = &t else {
        panic!("not a pg transport")
    };
    assert!(
        p.prepared_statements() <= cap,
        "{}",
        p.prepared_statements()
    );
    assert!(p.prepared_statements() >= 10, "{}", p.prepared_statements());
}

/// A local port nothing listens on.
async fn closed_port() -> u16 {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    port
}

/// The error of connecting `ep` to `url`, where nothing listens.
async fn refused(ep: &EndpointPlan, url: &str) -> QueryError {
    let Err(e) = Transport::connect(ep, url, Path::new(".")).await else {
        panic!("connected to a closed port");
    };
    e
}

#[tokio::test]
async fn connecting_to_nothing_is_a_connection_error() {
    let port = closed_port().await;
    let started = Instant::now();
    let e = refused(
        &pg_endpoint("prepared", &[("connect_timeout", secs(2.0))]),
        &format!("postgres://u:secret@127.0.0.1:{port}/db"),
    )
    .await;
    assert_eq!(e.class, QueryErrorClass::Connect, "{e}");
    assert!(e.broken);
    assert!(!e.message.contains("secret"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(5));

    let e = refused(
        &endpoint("http", "questdb", &[("connect_timeout", secs(2.0))]),
        &format!("http://127.0.0.1:{port}"),
    )
    .await;
    assert_eq!(e.class, QueryErrorClass::Connect, "{e}");
    assert!(e.broken);

    // The closed port, not QuestDB's 9000: where QuestDB runs, qwp would connect there.
    for kind in ["qwp", "ilp_tcp"] {
        let Err(e) = Transport::connect(
            &endpoint(kind, "questdb", &[]),
            &format!("ws://127.0.0.1:{port}"),
            Path::new("."),
        )
        .await
        else {
            panic!("a {kind} transport");
        };
        assert!(e.message.contains(kind), "{e}");
    }
}

// ------------------------------------------------------------------------------------------------
// HTTP /exec

fn http_endpoint(path: Option<&str>, timeout: f64) -> EndpointPlan {
    let mut options = vec![("timeout", secs(timeout))];
    if let Some(p) = path {
        options.push(("path", text(p)));
    }
    endpoint("http", "postgres", &options)
}

#[tokio::test]
async fn http_and_every_pg_mode_count_the_same_rows() {
    let Some((url, admin, table)) = server_and_table("qt", "http").await else {
        return;
    };
    make_table(&admin, &table).await;
    let exec = ExecServer::start(Some(url.clone())).await;
    let mut http = connect(&http_endpoint(None, 10.0), &exec.url()).await;
    let mut pgs = Vec::new();
    for mode in MODES {
        pgs.push((mode, connect(&pg_endpoint(mode, &[]), &url).await));
    }
    for (i, expected) in cases(&table) {
        let over_http = rows(&mut http, &i).await;
        assert_eq!(
            over_http,
            Ok(expected),
            "http: {} with {:?}",
            i.sql,
            i.binds
        );
        for (mode, t) in &mut pgs {
            assert_eq!(
                rows(t, &i).await,
                over_http,
                "pg {mode} vs http: {} with {:?}",
                i.sql,
                i.binds
            );
        }
    }
    // One keep-alive connection carried every request.
    assert_eq!(exec.connections(), 1);
    drop_table(&admin, &table).await;
}

#[tokio::test]
async fn http_sql_errors_are_400_with_the_servers_text() {
    let Some(url) = server().await else { return };
    let exec = ExecServer::start(Some(url)).await;
    let mut t = connect(&http_endpoint(Some("/exec"), 10.0), &exec.url()).await;
    let missing = unique("qt", "missing");
    let e = rows_of(
        &mut t,
        &format!("SELECT * FROM {missing} WHERE x = $1"),
        vec![BindValue::Int(1)],
    )
    .await
    .unwrap_err();
    assert_eq!(e.class, QueryErrorClass::HttpStatus, "{e}");
    assert_eq!(e.code.as_deref(), Some("400"), "{e}");
    assert!(e.message.contains("does not exist"), "{e}");
    assert!(e.message.contains("at position 14"), "{e}");
    assert!(!e.broken);
    // The connection goes on.
    assert_eq!(rows(&mut t, &inst("SELECT 1", vec![])).await, Ok(1));
    assert_eq!(exec.connections(), 1);
}

#[tokio::test]
async fn http_bad_answers_are_errors_not_hangs() {
    // These paths need no database.
    let exec = ExecServer::start(None).await;
    let q = inst("SELECT 1", vec![]);

    let mut t = connect(&http_endpoint(Some("/text500"), 10.0), &exec.url()).await;
    let e = rows(&mut t, &q).await.unwrap_err();
    assert_eq!(e.class, QueryErrorClass::HttpStatus, "{e}");
    assert_eq!(e.code.as_deref(), Some("500"), "{e}");
    assert!(e.message.contains("disk on fire"), "{e}");
    assert!(!e.broken);

    let mut t = connect(&http_endpoint(Some("/notjson"), 10.0), &exec.url()).await;
    let e = rows(&mut t, &q).await.unwrap_err();
    assert_eq!(e.class, QueryErrorClass::HttpStatus, "{e}");
    assert_eq!(e.code.as_deref(), Some("200"), "{e}");
    assert!(e.message.contains("not the expected JSON"), "{e}");

    let mut t = connect(&http_endpoint(Some("/cut"), 10.0), &exec.url()).await;
    let started = Instant::now();
    let e = rows(&mut t, &q).await.unwrap_err();
    assert_eq!(e.class, QueryErrorClass::Connection, "{e}");
    assert!(e.broken, "{e}");
    assert!(
        e.message.contains("end of file before message length"),
        "{e}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));

    let mut t = connect(&http_endpoint(Some("/close"), 10.0), &exec.url()).await;
    let e = rows(&mut t, &q).await.unwrap_err();
    assert_eq!(e.class, QueryErrorClass::Connection, "{e}");
    assert!(e.broken, "{e}");

    let mut t = connect(&http_endpoint(Some("/slow"), 0.3), &exec.url()).await;
    let started = Instant::now();
    let e = rows(&mut t, &q).await.unwrap_err();
    let took = started.elapsed();
    assert_eq!(e.class, QueryErrorClass::Timeout, "{e}");
    assert!(e.broken, "{e}");
    assert!(
        took >= Duration::from_millis(300) && took < exec_server::SLOW,
        "took {took:?}"
    );

    let mut t = connect(&http_endpoint(Some("/exec"), 10.0), &exec.url()).await;
    let e = rows(&mut t, &q).await.unwrap_err();
    assert_eq!(e.code.as_deref(), Some("503"), "{e}");
}

#[tokio::test]
async fn http_a_count_that_disagrees_with_the_dataset_is_an_error() {
    let Some(url) = server().await else { return };
    let exec = ExecServer::start(Some(url)).await;
    let mut t = connect(&http_endpoint(Some("/badcount"), 10.0), &exec.url()).await;
    let e = rows(
        &mut t,
        &inst(
            "SELECT * FROM generate_series(1, $1)",
            vec![BindValue::Int(3)],
        ),
    )
    .await
    .unwrap_err();
    assert_eq!(e.class, QueryErrorClass::HttpStatus, "{e}");
    assert!(e.message.contains("count"), "{e}");
}

/// A result of about 40 MB, as QuestDB's high-cpu-all gives over `/exec`: read as a stream,
/// its rows counted and its values hashed as they arrive, equal to PostgreSQL's own. Before,
/// every answer was held whole and one over 16 MiB failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_answers_larger_than_16_mib_are_read_as_they_arrive() {
    let Some(url) = server().await else { return };
    const ROWS: u64 = 300_000;
    let big = inst(
        "SELECT k, 'host_' || k AS hostname, md5(k::text) AS digest, repeat('x', 40) AS pad,
                k / 7.0::float8 AS f, '2016-01-01T00:00:00Z'::timestamptz + k * interval '1 second' AS ts
         FROM generate_series(1, $1) AS k",
        vec![BindValue::Int(ROWS as i64)],
    );
    let exec = ExecServer::start(Some(url.clone())).await;
    let mut http = summing(&http_endpoint(None, 60.0), &exec.url()).await;
    let (got, sum) = summed(&mut http, &big, "http").await;
    let sent = exec.json_bytes_sent();
    assert!(sent > 40_000_000, "the answer was only {sent} bytes");
    assert_eq!(got, ROWS);
    let mut pg = summing(&pg_endpoint("prepared", &[]), &url).await;
    assert_eq!(summed(&mut pg, &big, "pg").await, (ROWS, sum));
    // Without checksums the rows are counted all the same, on the same connection.
    let mut plain = connect(&http_endpoint(None, 60.0), &exec.url()).await;
    assert_eq!(rows(&mut plain, &big).await, Ok(ROWS));
    // `max_answer` is the safety valve: a larger answer fails, and its connection is given
    // up (the rest of the body is unread).
    let mut opts = vec![("timeout", secs(60.0))];
    opts.push(("max_answer", Value::Size(1 << 20)));
    let mut capped = connect(&endpoint("http", "postgres", &opts), &exec.url()).await;
    let e = rows(&mut capped, &big).await.unwrap_err();
    assert_eq!(e.class, QueryErrorClass::HttpStatus, "{e}");
    assert!(e.message.contains("`max_answer` (1MiB)"), "{e}");
    assert!(e.broken, "{e}");
}

// ------------------------------------------------------------------------------------------------
// SQLite

fn ts_text(ns: i64) -> String {
    let mut out = Vec::new();
    wlrun::encode::sqlite_time::sqlite_timestamp_text(ns, &mut out);
    String::from_utf8(out).unwrap()
}

fn sqlite_endpoint(timeout: f64) -> EndpointPlan {
    endpoint("sqlite", "sqlite", &[("timeout", secs(timeout))])
}

/// A database file with `cpu`: 20 rows, k = 0..19, host 'host_{k % 4}', usage k * 1.5,
/// n = k, flag = k is odd, ts = T0 + k * 0.5 s stored as DDL text, note NULL for k >= 18.
fn sqlite_db(dir: &Path) -> String {
    let path = dir.join("q.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE cpu (host TEXT, usage REAL, n INTEGER, flag INTEGER, ts TEXT, note TEXT)",
    )
    .unwrap();
    for k in 0..20i64 {
        conn.execute(
            "INSERT INTO cpu VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            rusqlite::params![
                format!("host_{}", k % 4),
                k as f64 * 1.5,
                k,
                k % 2,
                ts_text(T0 + k * SEC / 2),
                (k < 18).then_some("x"),
            ],
        )
        .unwrap();
    }
    path.to_string_lossy().into_owned()
}

/// A transport on a fresh `sqlite_db` in a temporary directory, which lives as long as the
/// `TempDir` returned with it.
async fn sqlite_transport(timeout: f64) -> (tempfile::TempDir, Transport) {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_db(dir.path());
    let t = connect(&sqlite_endpoint(timeout), &db).await;
    (dir, t)
}

/// `rows` of the instance of `sql` with `binds`.
async fn rows_of(t: &mut Transport, sql: &str, binds: Vec<BindValue>) -> Result<u64, QueryError> {
    rows(t, &inst(sql, binds)).await
}

#[tokio::test]
async fn sqlite_timestamp_binds_compare_with_stored_text() {
    use BindValue::*;
    let (_dir, mut t) = sqlite_transport(10.0).await;
    let cases = [
        (
            "SELECT * FROM cpu WHERE ts >= $1 AND ts < $2",
            vec![Timestamp(T0 + SEC), Timestamp(T0 + 3 * SEC)],
            4, // k = 2..5
        ),
        // Half seconds: the fixed-width text keeps sub-second order.
        (
            "SELECT * FROM cpu WHERE ts > $1",
            vec![Timestamp(T0 + 8 * SEC + SEC / 2)],
            2, // k = 18, 19
        ),
        (
            "SELECT * FROM cpu WHERE ts = $1",
            vec![Timestamp(T0 + 5 * SEC)],
            1,
        ),
        // Placeholders out of order.
        (
            "SELECT * FROM cpu WHERE ts < $2 AND host = $1",
            vec![Text("host_1".into()), Timestamp(T0 + 5 * SEC)],
            3, // k = 1, 5, 9
        ),
        ("SELECT * FROM cpu WHERE n >= $1", vec![Int(15)], 5),
        ("SELECT * FROM cpu WHERE usage < $1", vec![Float(4.6)], 4),
        ("SELECT * FROM cpu WHERE flag = $1", vec![Bool(true)], 10),
        ("SELECT * FROM cpu WHERE note IS $1", vec![Null], 2),
        (
            "SELECT host, count(*) FROM cpu WHERE ts >= $1 GROUP BY host",
            vec![Timestamp(T0)],
            4,
        ),
        ("SELECT * FROM cpu", vec![], 20),
    ];
    for pass in 0..2 {
        for (sql, binds, expected) in &cases {
            let i = inst(sql, binds.clone());
            assert_eq!(
                rows(&mut t, &i).await,
                Ok(*expected),
                "pass {pass}: {sql} with {binds:?}"
            );
        }
    }
}

#[tokio::test]
async fn sqlite_errors() {
    let (_dir, mut t) = sqlite_transport(10.0).await;
    let e = rows_of(
        &mut t,
        "SELECT * FROM nope WHERE x = $1",
        vec![BindValue::Int(1)],
    )
    .await
    .unwrap_err();
    assert_eq!(e.class, QueryErrorClass::Sql, "{e}");
    assert_eq!(e.code.as_deref(), Some("SQLITE_ERROR"), "{e}");
    assert!(e.message.contains("no such table: nope"), "{e}");
    assert!(!e.broken);

    let e = rows_of(
        &mut t,
        "SELECT * FROM cpu WHERE n = $2",
        vec![BindValue::Int(1)],
    )
    .await
    .unwrap_err();
    assert_eq!(e.class, QueryErrorClass::Client, "{e}");
    assert!(e.message.contains("$2"), "{e}");
    let e = rows_of(
        &mut t,
        "SELECT * FROM cpu WHERE n = $1",
        vec![BindValue::Int(1), BindValue::Int(2)],
    )
    .await
    .unwrap_err();
    assert_eq!(e.class, QueryErrorClass::Client, "{e}");
    let e = rows_of(
        &mut t,
        "SELECT * FROM cpu WHERE n = :n",
        vec![BindValue::Int(1)],
    )
    .await
    .unwrap_err();
    assert_eq!(e.class, QueryErrorClass::Client, "{e}");

    let n = rows_of(
        &mut t,
        "SELECT * FROM cpu WHERE n = $1",
        vec![BindValue::Int(1)],
    )
    .await;
    assert_eq!(n, Ok(1));
}

#[tokio::test]
async fn sqlite_a_query_past_the_timeout_is_interrupted() {
    let (_dir, mut t) = sqlite_transport(0.3).await;
    let endless = inst(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < $1) \
         SELECT count(*) FROM c",
        vec![BindValue::Int(i64::MAX)],
    );
    let started = Instant::now();
    let e = rows(&mut t, &endless).await.unwrap_err();
    let took = started.elapsed();
    assert_eq!(e.class, QueryErrorClass::Timeout, "{e}");
    assert!(took < Duration::from_secs(3), "took {took:?}");
    // Interrupted, the connection came back and takes the next query.
    assert!(!e.broken, "{e}");
    let n = rows_of(
        &mut t,
        "SELECT * FROM cpu WHERE n < $1",
        vec![BindValue::Int(3)],
    )
    .await;
    assert_eq!(n, Ok(3));
}

#[tokio::test]
async fn sqlite_a_missing_directory_is_a_connection_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no/such/dir/q.db");
    let Err(e) = Transport::connect(
        &sqlite_endpoint(1.0),
        &path.to_string_lossy(),
        Path::new("."),
    )
    .await
    else {
        panic!("opened a database in a missing directory");
    };
    assert_eq!(e.class, QueryErrorClass::Connect, "{e}");
    assert!(e.broken);
}

// ------------------------------------------------------------------------------------------------
// Checksums (docs/checksum.md): the same instances over every transport give the same checksum

use wlrun::query::checksum::ResultHasher;

/// `url` with session settings for the server: a time zone other than UTC (timestamptz texts
/// carry an offset) and doubles printed with 15 significant digits, not exactly.
fn with_session_options(url: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}options=-c%20TimeZone%3DAsia%2FKolkata%20-c%20extra_float_digits%3D0")
}

/// Transports with checksums on, named: HTTP through `exec`, then each pg mode on `url`, each
/// followed (with `odd_sessions`) by the same mode on `with_session_options(url)`.
async fn summing_http_and_pg(
    exec: &ExecServer,
    url: &str,
    odd_sessions: bool,
) -> Vec<(String, Transport)> {
    let mut all = vec![(
        "http".to_string(),
        summing(&http_endpoint(None, 10.0), &exec.url()).await,
    )];
    for mode in MODES {
        all.push((
            mode.to_string(),
            summing(&pg_endpoint(mode, &[]), url).await,
        ));
        if odd_sessions {
            let odd = with_session_options(url);
            all.push((
                format!("{mode} (Asia/Kolkata, extra_float_digits 0)"),
                summing(&pg_endpoint(mode, &[]), &odd).await,
            ));
        }
    }
    all
}

#[tokio::test]
async fn checksums_agree_across_pg_modes_and_http() {
    let Some((url, admin, table)) = server_and_table("qt", "sums").await else {
        return;
    };
    make_typed_table(&admin, &table).await;
    let exec = ExecServer::start(Some(url.clone())).await;
    // Each pg mode also with timestamptz printed at +05:30 and doubles printed with 15 digits.
    let mut transports = summing_http_and_pg(&exec, &url, true).await;
    let mut seen = std::collections::HashSet::new();
    // Twice: prepared statements from the cache the second time.
    for pass in 0..2 {
        for (i, expected_rows) in checksum_cases(&table) {
            let mut first: Option<(String, (u64, u64))> = None;
            for (name, t) in &mut transports {
                let got = summed(t, &i, name).await;
                assert_eq!(got.0, expected_rows, "{name}: rows of {}", i.sql);
                match &first {
                    None => first = Some((name.clone(), got)),
                    Some((first_name, want)) => assert_eq!(
                        got.1, want.1,
                        "pass {pass}: checksum of {} with {:?}: \
                         {name} {:016x} vs {first_name} {:016x}",
                        i.sql, i.binds, got.1, want.1
                    ),
                }
            }
            if let Some((_, (rows, sum))) = first {
                if rows > 0 && pass == 0 {
                    // Different results have different checksums.
                    assert!(
                        seen.insert(sum),
                        "{}: checksum {sum:016x} seen before",
                        i.sql
                    );
                }
            }
        }
    }
    drop_table(&admin, &table).await;
}

#[tokio::test]
async fn checksums_are_of_the_values() {
    let Some((url, admin, table)) = server_and_table("qt", "values").await else {
        return;
    };
    make_typed_table(&admin, &table).await;
    let exec = ExecServer::start(Some(url.clone())).await;
    // What the checksum must be, from the values the table was built with.
    let mut h = ResultHasher::new();
    let t0_us = T0 / 1_000;
    for k in [0i64, 7, 13] {
        h.begin_row();
        h.push_i64(k);
        h.push_i64(k * 1_000_000_000_000 + k);
        h.push_f64(k as f64 / 3.0);
        h.push_f64(k as f64 * 1.25);
        if k == 7 {
            h.push_null();
        } else {
            h.push_text(&format!("row{k}"));
        }
        h.push_bool(k % 3 == 0);
        if k == 13 {
            h.push_null();
        } else {
            h.push_timestamp_us(t0_us + k * 10_500_000);
        }
        h.push_timestamp_us(t0_us + k * 86_400_000_000);
        h.push_text(&format!("h{}", k % 4));
        h.end_row();
    }
    let want = h.finish();
    let i = inst(
        &format!(
            "SELECT i4, i8, f8, n, t, b, ts, d, c FROM {table} WHERE i4 = ANY($1::int4[]) \
             OR i4 = $2 OR i4 = $3"
        ),
        vec![
            BindValue::Text("{0}".into()),
            BindValue::Int(7),
            BindValue::Int(13),
        ],
    );
    let mut all = summing_http_and_pg(&exec, &url, false).await;
    for (name, t) in &mut all {
        assert_eq!(summed(t, &i, name).await, (3, want), "{name}");
    }
    drop_table(&admin, &table).await;
}

#[tokio::test]
async fn one_different_value_gives_another_checksum() {
    let Some((url, admin, table)) = server_and_table("qt", "differ").await else {
        return;
    };
    make_typed_table(&admin, &table).await;
    let exec = ExecServer::start(Some(url.clone())).await;
    let mut all = summing_http_and_pg(&exec, &url, false).await;
    let q = |sql: &str| inst(&sql.replace("{T}", &table), vec![]);
    let base = q("SELECT i4, i8, f8, n, t, b, ts FROM {T}");
    let variants = [
        // Row order is not part of the checksum.
        (
            q("SELECT i4, i8, f8, n, t, b, ts FROM {T} ORDER BY i4 DESC"),
            true,
        ),
        // One value differs: by one, by 10^-4, by one microsecond, by one character, NULL.
        (
            q("SELECT i4, i8 + (i4 = 5)::int, f8, n, t, b, ts FROM {T}"),
            false,
        ),
        (
            q("SELECT i4, i8, f8, n + CASE WHEN i4 = 5 THEN 0.0001 ELSE 0 END, t, b, ts FROM {T}"),
            false,
        ),
        (
            q("SELECT i4, i8, f8 + CASE WHEN i4 = 5 THEN 0.0001 ELSE 0 END, n, t, b, ts FROM {T}"),
            false,
        ),
        (
            q("SELECT i4, i8, f8, n, t, b,
                      ts + CASE WHEN i4 = 5 THEN interval '1 microsecond' ELSE interval '0' END
               FROM {T}"),
            false,
        ),
        (
            q("SELECT i4, i8, f8, n, CASE WHEN i4 = 5 THEN 'row5 ' ELSE t END, b, ts FROM {T}"),
            false,
        ),
        (
            q("SELECT i4, i8, f8, n, CASE WHEN i4 = 5 THEN NULL ELSE t END, b, ts FROM {T}"),
            false,
        ),
        (
            q("SELECT i4, i8, f8, n, CASE WHEN i4 = 5 THEN '' ELSE t END, b, ts FROM {T}"),
            false,
        ),
        // Values swapped between two rows.
        (
            q("SELECT i4, i8, f8, n,
                      CASE i4 WHEN 1 THEN 'row2' WHEN 2 THEN 'row1' ELSE t END, b, ts
               FROM {T}"),
            false,
        ),
        // A duplicated row is not a missing one: 21 rows, and not 20 + 0.
        (
            q("SELECT i4, i8, f8, n, t, b, ts FROM {T}
               UNION ALL SELECT i4, i8, f8, n, t, b, ts FROM {T} WHERE i4 = 3"),
            false,
        ),
    ];
    for (name, t) in &mut all {
        let (rows, sum) = summed(t, &base, name).await;
        assert_eq!(rows, 20);
        for (v, same) in &variants {
            let (_, other) = summed(t, v, name).await;
            assert_eq!(other == sum, *same, "{name}: {}", v.sql);
        }
    }
    // Checksums are off unless asked for.
    let mut plain = connect(&pg_endpoint("prepared", &[]), &url).await;
    assert_eq!(plain.run(&base).await.map(|o| o.checksum), Ok(None));
    plain.set_checksums(true);
    assert!(plain.run(&base).await.unwrap().checksum.is_some());
    plain.set_checksums(false);
    assert_eq!(plain.run(&base).await.map(|o| o.checksum), Ok(None));
    drop_table(&admin, &table).await;
}

#[tokio::test]
async fn types_without_an_encoding_are_client_errors_in_binary_results() {
    let Some(url) = server().await else { return };
    let i = inst(
        "SELECT g, g * interval '1 second' AS iv FROM generate_series(1, $1) AS g",
        vec![BindValue::Int(3)],
    );
    for mode in ["prepared", "unnamed"] {
        let mut t = summing(&pg_endpoint(mode, &[]), &url).await;
        let e = t.run(&i).await.unwrap_err();
        assert_eq!(e.class, QueryErrorClass::Client, "{mode}: {e}");
        assert!(e.message.contains("`iv` (interval)"), "{mode}: {e}");
        assert!(!e.broken, "{mode}");
        // The session goes on.
        assert_eq!(
            summed(&mut t, &inst("SELECT 1", vec![]), mode).await.0,
            1,
            "{mode}"
        );
    }
    // In text, an interval is its text.
    let mut t = summing(&pg_endpoint("simple", &[]), &url).await;
    let (rows, sum) = summed(&mut t, &i, "simple").await;
    let mut h = ResultHasher::new();
    for (g, text) in [(1, "00:00:01"), (2, "00:00:02"), (3, "00:00:03")] {
        h.begin_row();
        h.push_i64(g);
        h.push_text(text);
        h.end_row();
    }
    assert_eq!((rows, sum), (3, h.finish()));
    // Several statements in one simple query cannot be described.
    let e = t
        .run(&inst("SELECT 1; SELECT 2", vec![]))
        .await
        .unwrap_err();
    assert_eq!(e.class, QueryErrorClass::Client, "{e}");
    assert!(e.message.contains("describing"), "{e}");
}

/// TSBS-like rows for both PostgreSQL and SQLite: hostname k % 5, usage_user and usage_system
/// bigints, ts = T0 + k * 7.25 s.
const TSBS_ROWS: i64 = 60;

fn tsbs_row(k: i64) -> (String, i64, i64, i64) {
    (
        format!("host_{}", k % 5),
        (k * 37) % 101,
        (k * k) % 17,
        T0 + k * 7_250_000_000,
    )
}

#[tokio::test]
async fn sqlite_and_pg_checksum_the_same_rows_alike() {
    let Some((url, admin, table)) = server_and_table("qt", "tsbs").await else {
        return;
    };
    let mut values = Vec::new();
    for k in 0..TSBS_ROWS {
        let (h, u, s, ts) = tsbs_row(k);
        values.push(format!(
            "('{h}', {u}, {s}, to_timestamp({}) )",
            ts as f64 / 1e9
        ));
    }
    admin
        .batch_execute(&format!(
            "CREATE TABLE {table} (hostname text, usage_user bigint, usage_system bigint,
                                   ts timestamptz);
             INSERT INTO {table} VALUES {};",
            values.join(", ")
        ))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tsbs.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        // As wlrun's DDL creates it: timestamps as fixed-width TEXT.
        conn.execute_batch(&format!(
            "CREATE TABLE {table} (hostname TEXT, usage_user INTEGER, usage_system INTEGER, \
             ts TEXT)"
        ))
        .unwrap();
        for k in 0..TSBS_ROWS {
            let (h, u, s, ts) = tsbs_row(k);
            conn.execute(
                &format!("INSERT INTO {table} VALUES (?1, ?2, ?3, ?4)"),
                rusqlite::params![h, u, s, ts_text(ts)],
            )
            .unwrap();
        }
    }
    let mut lite = summing(&sqlite_endpoint(10.0), &path.to_string_lossy()).await;
    let mut pg = summing(&pg_endpoint("prepared", &[]), &url).await;
    let mut simple = summing(&pg_endpoint("simple", &[]), &url).await;
    use BindValue::*;
    let window = vec![Timestamp(T0 + 60 * SEC), Timestamp(T0 + 300 * SEC)];
    // (SQL on PostgreSQL, SQL on SQLite, binds, rows)
    let cases: Vec<(String, String, Vec<BindValue>, u64)> = vec![
        (
            "SELECT * FROM {T} WHERE hostname IN ('host_1', 'host_3') AND ts >= $1 AND ts < $2"
                .into(),
            String::new(),
            window.clone(),
            13,
        ),
        (
            "SELECT hostname, max(usage_user), min(usage_system), sum(usage_user),
                    avg(usage_user), count(*), max(ts), min(ts)
             FROM {T} WHERE ts >= $1 AND ts < $2 GROUP BY hostname"
                .into(),
            String::new(),
            window.clone(),
            5,
        ),
        (
            "SELECT date_trunc('minute', ts) AS minute, max(usage_user), avg(usage_system)
             FROM {T} GROUP BY 1"
                .into(),
            "SELECT strftime('%Y-%m-%d %H:%M:00.000000', ts) AS minute, max(usage_user),
                    avg(usage_system)
             FROM {T} GROUP BY 1"
                .into(),
            vec![],
            8,
        ),
        (
            "SELECT * FROM {T} WHERE usage_user > $1 ORDER BY ts DESC LIMIT 5".into(),
            String::new(),
            vec![Int(90)],
            5,
        ),
        (
            "SELECT max(ts), sum(usage_user * usage_system), avg(usage_user) FROM {T}".into(),
            String::new(),
            vec![],
            1,
        ),
    ];
    for (on_pg, on_lite, binds, rows) in cases {
        let on_lite = if on_lite.is_empty() {
            on_pg.clone()
        } else {
            on_lite
        };
        let pi = inst(&on_pg.replace("{T}", &table), binds.clone());
        let li = inst(&on_lite.replace("{T}", &table), binds);
        let p = summed(&mut pg, &pi, "pg").await;
        let s = summed(&mut simple, &pi, "pg simple").await;
        let l = summed(&mut lite, &li, "sqlite").await;
        assert_eq!(p.0, rows, "{on_pg}");
        assert_eq!(p, s, "pg prepared vs simple: {on_pg}");
        assert_eq!(p, l, "pg {:016x} vs sqlite {:016x}: {on_pg}", p.1, l.1);
    }
    // One value changed on one side: the checksums differ.
    let all = format!("SELECT * FROM {table}");
    let before = summed(&mut lite, &inst(&all, vec![]), "sqlite").await;
    assert_eq!(before, summed(&mut pg, &inst(&all, vec![]), "pg").await);
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            &format!("UPDATE {table} SET usage_user = usage_user + 1 WHERE rowid = 10"),
            [],
        )
        .unwrap();
    let after = summed(&mut lite, &inst(&all, vec![]), "sqlite").await;
    assert_eq!(after.0, before.0);
    assert_ne!(after.1, before.1);
    drop_table(&admin, &table).await;
}
