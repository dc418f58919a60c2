//! The QWP query transport (`query::transport::qwp`) against a QWP server that runs each query
//! on the real PostgreSQL the tests use (`common/qwp_query_server.rs`, which decodes requests
//! and encodes results on its own, from the spec): row counts for every bind kind with and
//! without the `query_flags` trailer, results over many batches sharing a symbol dictionary
//! (and CACHE_RESET), checksums equal to those of the PostgreSQL and HTTP `/exec` transports
//! for the same instances, QUERY_ERROR as a SQL error on a connection that goes on, servers
//! that misbehave (a malformed frame, a close mid-result, a stall, a terminator for another
//! request, no SERVER_INFO) as errors rather than hangs, flow control (`credit`: the server,
//! strict about its budget, never runs more than one batch past the credit the client has
//! given back, and a 1-byte credit still completes; a raw client that gives none stalls the
//! server), and one `wlrun run` cross-checking pg, http and qwp endpoints. Then the statements
//! wlrun runs itself over qwp: DDL and counts, `require` on every endpoint of a run (and in
//! the shipped workloads/questdb-queries.wl, pointed at these servers with `--param`), and an
//! ingest phase's `verify visible` counted over qwp.
//!
//! The PostgreSQL server is `postgres://wlrun:wlrun@127.0.0.1:5432/wlrun`, or `WLRUN_TEST_PG`;
//! tests that need it are skipped without it, except under `CI=true` (see `common/servers.rs`).

#[path = "common/checksum_cases.rs"]
mod checksum_cases;
#[path = "common/endpoints.rs"]
mod endpoints;
#[path = "common/exec_server.rs"]
mod exec_server;
#[path = "common/query_setup.rs"]
mod query_setup;
#[path = "common/qwp_query_server.rs"]
mod qwp_query_server;
#[path = "common/servers.rs"]
mod servers;

use std::path::Path;
use std::time::{Duration, Instant};

use checksum_cases::{checksum_cases, make_table, make_typed_table};
use endpoints::{endpoint, secs};
use exec_server::ExecServer;
use futures_util::{SinkExt, StreamExt};
use query_setup::{
    admin, bind_kind_cases, bind_placement_cases, connect, drop_table, inst, rows,
    server_and_table, summed, summing, unique, SEC, T0,
};
use qwp_query_server::{Bind, Flow, Mode, Options, QwpQueryServer, CAP_QUERY_FLAGS, CAP_ZONE};
use tokio_tungstenite::tungstenite::Message;
use wlrun::plan::EndpointPlan;
use wlrun::query::transport::Transport;
use wlrun::query::{Instance, Outcome, QueryError, QueryErrorClass};
use wlrun::value::BindValue;
use wlrun::value::Value;

fn qwp_endpoint(timeout: f64) -> EndpointPlan {
    endpoint(
        "qwp",
        "generic",
        &[
            ("timeout", secs(timeout)),
            ("connect_timeout", secs(timeout)),
        ],
    )
}

/// Instances with every kind of bind, and the rows each returns.
fn cases(table: &str) -> Vec<(Instance, u64)> {
    use BindValue::*;
    let q = |sql: &str| sql.replace("{T}", table);
    let mut cases = vec![
        (inst(&q("SELECT * FROM {T}"), vec![]), 10),
        (
            inst(&q("SELECT * FROM {T} WHERE i4 >= $1"), vec![Int(3)]),
            7,
        ),
    ];
    cases.extend(bind_kind_cases(table));
    // Nanoseconds below the microsecond are floored, as QuestDB's TIMESTAMP keeps them.
    cases.push((
        inst(
            &q("SELECT * FROM {T} WHERE ts = $1"),
            vec![Timestamp(T0 + 30 * SEC + 999)],
        ),
        1,
    ));
    cases.extend(bind_placement_cases(table));
    cases
}

#[tokio::test]
async fn rows_are_counted_for_every_bind_kind_with_and_without_query_flags() {
    let Some((url, admin, table)) = server_and_table("qwp", "binds").await else {
        return;
    };
    make_table(&admin, &table).await;
    for caps in [CAP_QUERY_FLAGS, 0, CAP_ZONE | CAP_QUERY_FLAGS] {
        let options = Options {
            caps,
            batch_rows: 3,
            ..Options::default()
        };
        let server = QwpQueryServer::start(Some(url.clone()), options).await;
        let mut t = connect(&qwp_endpoint(10.0), &server.url()).await;
        let cases = cases(&table);
        for (i, want) in &cases {
            let got = rows(&mut t, i).await;
            assert_eq!(got, Ok(*want), "caps {caps}: {} with {:?}", i.sql, i.binds);
        }
        // One connection; requests numbered from 1; the trailer only where advertised.
        assert_eq!(server.connections(), 1);
        let seen = server.seen();
        assert_eq!(seen.len(), cases.len());
        for (k, s) in seen.iter().enumerate() {
            assert_eq!(s.request_id, k as i64 + 1);
            assert_eq!(s.initial_credit, 0);
            let flags = (caps & CAP_QUERY_FLAGS != 0).then_some(1);
            assert_eq!(s.query_flags, flags, "caps {caps}");
        }
        // Binds as QuestDB wants them: typed, in `$n` order, timestamps in microseconds.
        assert_eq!(seen[4].binds, [Bind::Varchar("row4".into())]);
        assert_eq!(seen[7].binds, [Bind::Null(0x0F)]);
        assert_eq!(
            seen[9].binds,
            [Bind::Timestamp((T0 + 30 * SEC) / 1000)],
            "floored"
        );
        assert_eq!(
            seen[11].binds,
            [
                Bind::Timestamp((T0 + 80 * SEC) / 1000),
                Bind::Long(1),
                Bind::Long(4)
            ]
        );
        assert_eq!(seen[3].binds, [Bind::Double(2.75)]);
        assert_eq!(seen[6].binds, [Bind::Boolean(true)]);
        // The server PINGs before each answer; the PONGs came back.
        assert!(server.pongs() > 0, "no PONG");
    }
    drop_table(&admin, &table).await;
}

/// Twenty thousand rows over many batches: symbols (char(4)) from a dictionary that grows
/// across batches, irregular timestamps (every Gorilla bucket) with NULLs, dates, texts with
/// NULLs, booleans, doubles, numerics.
const MANY: &str = "
    SELECT k, k * 1.5::float8 AS f, ('s' || (k % 37))::char(4) AS sym,
           CASE WHEN k % 11 = 0 THEN NULL ELSE 'row' || k END AS t,
           CASE WHEN k % 13 = 0 THEN NULL
                ELSE '2016-01-01'::timestamptz
                     + (k * 1000 + (k * 7919) % 5000 + (k % 97) * (k % 89) * 4)
                       * interval '1 millisecond' END AS ts,
           k % 3 = 0 AS b, '2016-01-01'::date + (k % 400)::int AS d, k / 8.0 AS n
    FROM generate_series(1, $1) AS k";

#[tokio::test]
async fn results_over_many_batches_sum_as_on_postgresql() {
    let Some(url) = servers::pg_server().await else {
        return;
    };
    let many = inst(MANY, vec![BindValue::Int(20_000)]);
    let mut pg = summing(&endpoint("pg", "generic", &[("timeout", secs(20.0))]), &url).await;
    let want = summed(&mut pg, &many, "pg").await;
    assert_eq!(want.0, 20_000);

    let server = QwpQueryServer::start(Some(url.clone()), Options::default()).await;
    let mut t = summing(&qwp_endpoint(20.0), &server.url()).await;
    assert_eq!(summed(&mut t, &many, "qwp").await, want);
    assert_eq!(server.batches(), 20);
    // Without checksums, the same rows are counted.
    t.set_checksums(false);
    assert_eq!(rows(&mut t, &many).await, Ok(20_000));

    // No reset flag (caps 0): the dictionary lives across queries until the server's
    // CACHE_RESET, which a tiny soft cap makes it send after each.
    let options = Options {
        caps: 0,
        batch_rows: 777,
        dict_soft_cap: 10,
        ..Options::default()
    };
    let server = QwpQueryServer::start(Some(url.clone()), options).await;
    let mut t = summing(&qwp_endpoint(20.0), &server.url()).await;
    let few = inst(MANY, vec![BindValue::Int(3_000)]);
    let few_want = summed(&mut pg, &few, "pg").await;
    for _ in 0..2 {
        assert_eq!(summed(&mut t, &few, "qwp").await, few_want);
    }
    assert_eq!(server.cache_resets(), 2);
    // A soft cap that is never reached: the second query reuses the first one's symbols.
    let options = Options {
        caps: 0,
        batch_rows: 500,
        ..Options::default()
    };
    let server = QwpQueryServer::start(Some(url.clone()), options).await;
    let mut t = summing(&qwp_endpoint(20.0), &server.url()).await;
    for _ in 0..2 {
        assert_eq!(summed(&mut t, &few, "qwp").await, few_want);
    }
    assert_eq!(server.cache_resets(), 0);
}

#[tokio::test]
async fn checksums_agree_with_the_pg_and_http_transports() {
    let Some((url, admin, table)) = server_and_table("qwp", "sums").await else {
        return;
    };
    make_typed_table(&admin, &table).await;
    let exec = ExecServer::start(Some(url.clone())).await;
    let qwp = QwpQueryServer::start(Some(url.clone()), Options::default()).await;
    // Tiny batches, no reset flag and a dictionary reset after every query.
    let small = Options {
        caps: 0,
        batch_rows: 3,
        dict_soft_cap: 2,
        ..Options::default()
    };
    let qwp_small = QwpQueryServer::start(Some(url.clone()), small).await;
    let http = endpoint("http", "generic", &[("timeout", secs(10.0))]);
    let mut transports = vec![
        (
            "pg",
            summing(&endpoint("pg", "generic", &[("timeout", secs(10.0))]), &url).await,
        ),
        ("http", summing(&http, &exec.url()).await),
        ("qwp", summing(&qwp_endpoint(10.0), &qwp.url()).await),
        (
            "qwp (3-row batches)",
            summing(&qwp_endpoint(10.0), &qwp_small.url()).await,
        ),
    ];
    for pass in 0..2 {
        for (i, expected_rows) in checksum_cases(&table) {
            let mut first: Option<(&str, (u64, u64))> = None;
            for (name, t) in &mut transports {
                let got = summed(t, &i, name).await;
                assert_eq!(got.0, expected_rows, "{name}: rows of {}", i.sql);
                match first {
                    None => first = Some((name, got)),
                    Some((first_name, want)) => assert_eq!(
                        got.1, want.1,
                        "pass {pass}: checksum of {} with {:?}: {name} {:016x} vs \
                         {first_name} {:016x}",
                        i.sql, i.binds, got.1, want.1
                    ),
                }
            }
        }
    }
    assert!(qwp_small.cache_resets() > 0);
    drop_table(&admin, &table).await;
}

#[tokio::test]
async fn query_errors_are_sql_errors_and_the_connection_goes_on() {
    let Some(url) = servers::pg_server().await else {
        return;
    };
    let server = QwpQueryServer::start(Some(url.clone()), Options::default()).await;
    let mut t = summing(&qwp_endpoint(10.0), &server.url()).await;
    let missing = unique("qwp", "missing");
    let e = t
        .run(&inst(&format!("SELECT * FROM {missing}"), vec![]))
        .await
        .unwrap_err();
    assert_eq!(e.class, QueryErrorClass::Sql, "{e}");
    assert_eq!(e.code.as_deref(), Some("PARSE_ERROR"));
    assert!(e.message.contains("does not exist"), "{e}");
    assert!(!e.broken);
    // The same connection answers the next query.
    let one = inst("SELECT 1::int8 AS one", vec![]);
    assert_eq!(t.run(&one).await.map(|o| o.rows), Ok(1));
    // Statements without rows: EXEC_DONE, no rows, checksum 0, and the rows it changed.
    let table = unique("qwp", "ddl");
    for (sql, changed) in [
        (format!("CREATE TABLE {table} (a int8)"), 0),
        (format!("INSERT INTO {table} VALUES (1), (2)"), 2),
        (format!("DROP TABLE {table}"), 0),
    ] {
        assert_eq!(
            t.run(&inst(&sql, vec![])).await,
            Ok(Outcome {
                rows: 0,
                checksum: Some(0),
                affected: Some(changed),
            }),
            "{sql}"
        );
    }
    // A column the server cannot send is its refusal too.
    let e = t
        .run(&inst("SELECT interval '1 day' AS i", vec![]))
        .await
        .unwrap_err();
    assert_eq!(e.class, QueryErrorClass::Sql, "{e}");
    assert!(e.message.contains("interval"), "{e}");
    // Too many binds: refused before sending, the connection untouched.
    let binds = vec![BindValue::Int(1); 1025];
    let e = t.run(&inst("SELECT 1", binds)).await.unwrap_err();
    assert_eq!(e.class, QueryErrorClass::Client, "{e}");
    assert!(!e.broken);
    assert_eq!(t.run(&one).await.map(|o| o.rows), Ok(1));
    assert_eq!(server.connections(), 1);
}

/// A server in `mode`, the error of one query on it, and how long that took.
async fn failure(mode: Mode, timeout: f64) -> (QueryError, Duration) {
    let options = Options {
        mode,
        ..Options::default()
    };
    let server = QwpQueryServer::start(None, options).await;
    let mut t = connect(&qwp_endpoint(timeout), &server.url()).await;
    let started = Instant::now();
    let e = t
        .run(&inst("SELECT 1", vec![]))
        .await
        .expect_err("the server misbehaves");
    (e, started.elapsed())
}

#[tokio::test]
async fn servers_that_misbehave_give_errors_not_hangs() {
    for (mode, says) in [
        (Mode::Malformed, "protocol error"),
        (Mode::CloseMidResult, "closing mid-result"),
        (Mode::WrongId, "for request 1001 while request 1 runs"),
    ] {
        let (e, took) = failure(mode, 5.0).await;
        assert_eq!(e.class, QueryErrorClass::Connection, "{mode:?}: {e}");
        assert!(e.broken, "{mode:?}");
        assert!(e.message.contains(says), "{mode:?}: {e}");
        assert!(took < Duration::from_secs(2), "{mode:?} took {took:?}");
    }
    let (e, took) = failure(Mode::Stall, 0.3).await;
    assert_eq!(e.class, QueryErrorClass::Timeout, "{e}");
    assert!(e.broken);
    assert!(took < Duration::from_secs(2), "{took:?}");

    // No SERVER_INFO: connecting gives up after connect_timeout.
    let options = Options {
        mode: Mode::NoServerInfo,
        ..Options::default()
    };
    let server = QwpQueryServer::start(None, options).await;
    let started = Instant::now();
    let e = Transport::connect(&qwp_endpoint(0.3), &server.url(), Path::new("."))
        .await
        .err()
        .expect("no SERVER_INFO");
    assert_eq!(e.class, QueryErrorClass::Timeout, "{e}");
    assert!(e.message.contains("SERVER_INFO"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(2));
    // Not a QWP path, and nothing listening.
    let e = Transport::connect(
        &qwp_endpoint(2.0),
        &format!("{}/nope", server.url()),
        Path::new("."),
    )
    .await
    .err()
    .expect("a 404");
    assert_eq!(e.class, QueryErrorClass::Connect, "{e}");
    assert!(e.message.contains("404"), "{e}");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = Transport::connect(
        &qwp_endpoint(2.0),
        &format!("ws://127.0.0.1:{port}"),
        Path::new("."),
    )
    .await
    .err()
    .expect("nothing listens");
    assert_eq!(e.class, QueryErrorClass::Connect, "{e}");
    assert!(e.broken);
}

/// `wlrun run` with one target reached three ways, all executing on the same PostgreSQL:
/// every instance's rows and checksum agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wlrun_cross_checks_pg_http_and_qwp() {
    let Some((url, admin, table)) = server_and_table("qwp", "e2e").await else {
        return;
    };
    admin
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {table};
             CREATE TABLE {table} (k int8, f8 float8, t text, ts timestamptz, b bool,
                                   c char(3), n numeric(10, 2));
             INSERT INTO {table}
               SELECT k, k / 7.0::float8, CASE WHEN k % 10 <> 0 THEN 'row' || k END,
                      '2016-01-01T00:00:00Z'::timestamptz + k * interval '13 seconds',
                      k % 2 = 0, 'h' || k % 5, k * 0.25
               FROM generate_series(0, 299) AS k;"
        ))
        .await
        .expect("the e2e table");
    let exec = ExecServer::start(Some(url.clone())).await;
    let qwp = QwpQueryServer::start(
        Some(url.clone()),
        Options {
            batch_rows: 16,
            ..Options::default()
        },
    )
    .await;
    let text = format!(
        r#"workload w {{ seed 5 }}
target db {{
  pg "{url}"
  http "{http}"
  qwp "{ws}"
}}
query by_range {{
  sql "SELECT k, f8, t, ts, b, c, n FROM {table} WHERE k >= $1 AND k < $1 + 40"
  bind $1 = uniform(0, 260)
}}
query by_window {{
  sql "SELECT c, count(*), max(f8), min(ts), sum(n) FROM {table} WHERE ts >= $1 AND ts < $2 GROUP BY c"
  let w = window(2016-01-01T00:00:00Z, 2016-01-01T01:00:00Z, 10m)
  bind $1 = w.start
  bind $2 = w.end
}}
run r {{ against db via [pg, http, qwp]  queries by_range, by_window  count 10 per query  workers 2  check same results across endpoints }}
"#,
        http = exec.url(),
        ws = qwp.url(),
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), text).unwrap();
    let cwd = dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_wlrun"))
            .current_dir(cwd)
            .args(["run", "w.wl", "--json", "--quiet"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON report ({e}): {err}"));
    assert_eq!(out.status.code(), Some(0), "{err}\n{report:#}");
    let checks: Vec<&serde_json::Value> = report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["phases"].as_array().into_iter().flatten())
        .flat_map(|p| p["cross_checks"].as_array().into_iter().flatten())
        .collect();
    // http against pg, qwp against pg and against http.
    assert_eq!(checks.len(), 3, "{report:#}");
    for c in &checks {
        assert!(c["compared"].as_u64().unwrap_or(0) > 0, "{c:#}");
        assert_eq!(c["mismatches"].as_u64(), Some(0), "{c:#}");
    }
    let qwp_phase = report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["phases"].as_array().into_iter().flatten())
        .find(|p| p["endpoint"] == "db.qwp")
        .unwrap_or_else(|| panic!("no qwp phase: {report:#}"));
    assert_eq!(qwp_phase["ok"].as_u64(), Some(20), "{qwp_phase:#}");
    assert_eq!(qwp_phase["failed"].as_u64(), Some(0), "{qwp_phase:#}");
    assert!(qwp.connections() >= 2, "the qwp cell ran with 2 workers");
    drop_table(&admin, &table).await;
}

fn qwp_credit_endpoint(timeout: f64, credit: u64) -> EndpointPlan {
    endpoint(
        "qwp",
        "generic",
        &[
            ("timeout", secs(timeout)),
            ("connect_timeout", secs(timeout)),
            ("credit", Value::Size(credit)),
        ],
    )
}

/// The server's view of connection `k` once every CREDIT the client sent has been read: the
/// client sends the last ones as it reads the last batches, just before the terminator, so
/// the server may read them a moment after the query returned (bounded wait).
async fn settled_flow(server: &QwpQueryServer, k: usize) -> Flow {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let flow = server.flows()[k].clone();
        if flow.credits.len() >= flow.batches.len() || Instant::now() > deadline {
            return flow;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn credit_keeps_the_server_within_the_window() {
    let Some(url) = servers::pg_server().await else {
        return;
    };
    let many = inst(MANY, vec![BindValue::Int(20_000)]);
    let mut pg = summing(&endpoint("pg", "generic", &[("timeout", secs(20.0))]), &url).await;
    let want = summed(&mut pg, &many, "pg").await;
    // 100-row batches (about 4 KiB each): a 16 KiB window holds a few of them.
    let options = Options {
        batch_rows: 100,
        ..Options::default()
    };
    let server = QwpQueryServer::start(Some(url.clone()), options).await;
    const WINDOW: u64 = 16 * 1024;
    let mut credited = summing(&qwp_credit_endpoint(20.0, WINDOW), &server.url()).await;
    assert_eq!(
        summed(&mut credited, &many, "qwp, credit 16KiB").await,
        want
    );
    // What the server saw the moment the query returned: credit given back for all but
    // at most the last window (and the batch its row floor let it add).
    let now = server.flows()[0].clone();
    let sent: u64 = now.batches.iter().sum();
    let max_batch = now.batches.iter().copied().max().unwrap_or(0);
    let given: u64 = now.credits.iter().map(|c| c.1).sum();
    assert!(
        given <= sent && sent - given <= WINDOW + max_batch,
        "sent {sent}, credited {given}"
    );

    let mut unbounded = summing(&qwp_endpoint(20.0), &server.url()).await;
    assert_eq!(summed(&mut unbounded, &many, "qwp").await, want);

    let flow = settled_flow(&server, 0).await;
    assert_eq!(flow.initial_credits, [WINDOW]);
    assert_eq!(flow.batches.len(), 200);
    // One CREDIT per batch, for that batch's wire size, in order: exactly what was sent.
    let want_credits: Vec<(i64, u64)> = flow.batches.iter().map(|&b| (1, b)).collect();
    assert_eq!(flow.credits, want_credits);
    // The window held: never more than one batch past the credit granted, and the server
    // did have to wait for credit (200 batches of ~4 KiB through a 16 KiB window).
    assert!(
        flow.max_overrun < max_batch,
        "overran by {} with batches up to {max_batch}",
        flow.max_overrun
    );
    assert!(flow.pauses > 0, "{flow:?}");
    eprintln!(
        "credit 16KiB: {} batches ({sent} bytes, largest {max_batch}), {} CREDITs, \
         {} pauses, max overrun {} bytes",
        flow.batches.len(),
        flow.credits.len(),
        flow.pauses,
        flow.max_overrun
    );

    // Without the option: initial_credit 0 and no CREDIT.
    let plain = settled_flow(&server, 1).await;
    assert_eq!(plain.initial_credits, [0]);
    assert_eq!(plain.batches.len(), 200);
    assert!(plain.credits.is_empty(), "{:?}", plain.credits);
    assert_eq!((plain.pauses, plain.max_overrun), (0, 0));
    // Credit is per request: the next query asks again and is credited under its own id.
    assert_eq!(
        summed(&mut credited, &many, "qwp, credit 16KiB").await,
        want
    );
    let flow = settled_flow(&server, 0).await;
    assert_eq!(flow.initial_credits, [WINDOW, WINDOW]);
    assert!(flow.credits[200..].iter().all(|c| c.0 == 2));
    assert_eq!(flow.credits.len(), 400);
}

/// The smallest credit: the server sends one batch (the row floor), waits, and the client's
/// CREDIT for it lets the next go; the query completes, one batch at a time.
#[tokio::test]
async fn a_one_byte_credit_still_completes() {
    let Some(url) = servers::pg_server().await else {
        return;
    };
    let few = inst(MANY, vec![BindValue::Int(3_000)]);
    let mut pg = summing(&endpoint("pg", "generic", &[("timeout", secs(20.0))]), &url).await;
    let want = summed(&mut pg, &few, "pg").await;
    let options = Options {
        batch_rows: 500,
        ..Options::default()
    };
    let server = QwpQueryServer::start(Some(url.clone()), options).await;
    let mut t = summing(&qwp_credit_endpoint(10.0, 1), &server.url()).await;
    assert_eq!(summed(&mut t, &few, "qwp, credit 1").await, want);
    let flow = settled_flow(&server, 0).await;
    assert_eq!(flow.initial_credits, [1]);
    assert_eq!(flow.batches.len(), 6);
    // A wait before every batch but the first; each overran by its own size less the 1 byte.
    assert_eq!(flow.pauses, 5);
    let max_batch = flow.batches.iter().copied().max().unwrap_or(0);
    assert_eq!(flow.max_overrun, max_batch - 1);
    assert_eq!(flow.credits.len(), 6);
    eprintln!(
        "credit 1: {} batches, {} CREDITs, {} pauses, max overrun {}",
        flow.batches.len(),
        flow.credits.len(),
        flow.pauses,
        flow.max_overrun
    );
}

/// A raw client that asks for 1 byte of credit and gives none: the server sends one batch
/// and stalls until CREDIT comes, then sends the next.
#[tokio::test]
async fn without_credit_given_back_the_server_stalls() {
    let Some(url) = servers::pg_server().await else {
        return;
    };
    let options = Options {
        batch_rows: 10,
        ..Options::default()
    };
    let server = QwpQueryServer::start(Some(url.clone()), options).await;
    let (mut ws, _) = tokio::time::timeout(
        Duration::from_secs(5),
        tokio_tungstenite::connect_async(format!("{}/read/v1", server.url())),
    )
    .await
    .expect("connecting in time")
    .expect("the upgrade");
    let wait = Duration::from_secs(5);
    // The next binary message, PINGs skipped; `None` if nothing came within `within`.
    async fn next_binary(
        ws: &mut tokio_tungstenite::WebSocketStream<
            tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
        >,
        within: Duration,
    ) -> Option<Vec<u8>> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match tokio::time::timeout_at(deadline, ws.next()).await {
                Err(_) => return None,
                Ok(Some(Ok(Message::Binary(b)))) => return Some(b.to_vec()),
                Ok(Some(Ok(_))) => {}
                Ok(other) => panic!("the connection ended: {other:?}"),
            }
        }
    }
    let info = next_binary(&mut ws, wait).await.expect("SERVER_INFO");
    assert_eq!(info[12], 0x18);
    // QUERY_REQUEST (§5.3): id 1, the SQL, initial_credit 1, no binds, no flags.
    let sql = b"SELECT k FROM generate_series(1, 30) AS k";
    let mut req = vec![0x10];
    req.extend_from_slice(&1i64.to_le_bytes());
    req.push(sql.len() as u8);
    req.extend_from_slice(sql);
    req.extend_from_slice(&[1, 0]);
    ws.send(Message::Binary(req.into())).await.unwrap();
    let first = next_binary(&mut ws, wait).await.expect("batch 0");
    assert_eq!(first[12], 0x11);
    // Budget spent, no CREDIT: nothing more.
    assert_eq!(next_binary(&mut ws, Duration::from_millis(300)).await, None);
    assert_eq!(server.batches(), 1);
    // CREDIT (§5.6) for the batch read: the next one comes.
    let credit = |bytes: usize| {
        let mut c = vec![0x15];
        c.extend_from_slice(&1i64.to_le_bytes());
        let mut v = bytes as u64;
        while v >= 0x80 {
            c.push((v as u8) | 0x80);
            v >>= 7;
        }
        c.push(v as u8);
        Message::Binary(c.into())
    };
    ws.send(credit(first.len())).await.unwrap();
    let second = next_binary(&mut ws, wait).await.expect("batch 1");
    assert_eq!(second[12], 0x11);
    assert_eq!(next_binary(&mut ws, Duration::from_millis(300)).await, None);
    // A generous CREDIT: the rest, and RESULT_END.
    ws.send(credit(1 << 20)).await.unwrap();
    let mut batches = 2;
    loop {
        let m = next_binary(&mut ws, wait).await.expect("the rest");
        match m[12] {
            0x11 => batches += 1,
            0x12 => break,
            k => panic!("message kind 0x{k:02x}"),
        }
    }
    assert_eq!(batches, 3);
    let flow = server.flows()[0].clone();
    assert_eq!(flow.initial_credits, [1]);
    assert_eq!(flow.pauses, 2);
    assert_eq!(flow.credits.len(), 2);
}

// ------------------------------------------------------------------------------------------------
// The statements wlrun runs itself (require, counts, setup, teardown), over qwp too

/// `wlrun ARGS` in `dir`: exit code, JSON report (`--json` must be among `args`), stderr.
async fn wlrun_json(dir: &Path, args: Vec<String>) -> (Option<i32>, serde_json::Value, String) {
    let cwd = dir.to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_wlrun"))
            .current_dir(cwd)
            .args(args)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON report ({e}): {err}"));
    (out.status.code(), report, err)
}

fn query_phases(report: &serde_json::Value) -> Vec<&serde_json::Value> {
    report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["phases"].as_array().into_iter().flatten())
        .collect()
}

/// The one-statement client over QWP: DDL and DML as EXEC_DONE, counts read from the first
/// value, and every answer that is not a count an error that says why. Before, a `qwp`
/// endpoint took no SQL at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_statements_run_over_qwp() {
    let Some(url) = servers::pg_server().await else {
        return;
    };
    let server = QwpQueryServer::start(Some(url.clone()), Options::default()).await;
    let ep = qwp_endpoint(10.0);
    let mut c = wlrun::client::SqlClient::connect(
        &ep,
        &server.url(),
        Path::new("."),
        Duration::from_secs(10),
    )
    .await
    .unwrap_or_else(|e| panic!("connecting: {}", e.message));
    let table = unique("qwp", "stmt");
    for sql in [
        format!("CREATE TABLE {table} (k int8)"),
        format!("INSERT INTO {table} SELECT generate_series(1, 42)"),
    ] {
        c.execute(&sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {}", e.message));
    }
    let count = format!("SELECT count(*) FROM {table}");
    assert_eq!(c.count(&count).await.map_err(|e| e.message), Ok(42));
    for (sql, says) in [
        (
            format!("SELECT count(*) FROM {table}_missing"),
            "does not exist",
        ),
        (format!("SELECT k FROM {table} WHERE k < 0"), "no row"),
        ("SELECT NULL::int8".to_string(), "NULL"),
        (
            "SELECT 'many'::text".to_string(),
            "not a non-negative integer",
        ),
        ("SELECT -1::int8".to_string(), "not a non-negative integer"),
    ] {
        let e = c.count(&sql).await.unwrap_err();
        assert!(e.message.contains(says), "{sql}: {}", e.message);
    }
    // The connection goes on after the errors.
    assert_eq!(c.count(&count).await.map_err(|e| e.message), Ok(42));
    c.execute(&format!("DROP TABLE {table}")).await.unwrap();
}

/// `require` is checked over each cell's own endpoint, pg, http and qwp alike: met, the
/// queries run; not met, the cell is refused with the count it saw. Before, the qwp cell
/// failed with "`qwp` endpoints do not take SQL".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_is_counted_over_pg_http_and_qwp() {
    let Some((url, admin, table)) = server_and_table("qwp", "req").await else {
        return;
    };
    admin
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {table};
             CREATE TABLE {table} AS SELECT k FROM generate_series(1, 300) AS k;"
        ))
        .await
        .unwrap();
    let exec = ExecServer::start(Some(url.clone())).await;
    let qwp = QwpQueryServer::start(Some(url.clone()), Options::default()).await;
    let dir = tempfile::tempdir().unwrap();
    for (condition, met) in [("== 300", true), ("> 300", false)] {
        let text = format!(
            r#"workload w {{ seed 5 }}
target db {{
  pg "{url}"
  http "{http}"
  qwp "{ws}"
}}
query q {{ sql "SELECT max(k) FROM {table}" }}
run r {{ against db via [pg, http, qwp]  queries q  count 3  require rows({table}) {condition} }}
"#,
            http = exec.url(),
            ws = qwp.url(),
        );
        std::fs::write(dir.path().join("w.wl"), text).unwrap();
        let args = ["run", "w.wl", "--json", "--quiet"]
            .map(String::from)
            .to_vec();
        let (code, report, err) = wlrun_json(dir.path(), args).await;
        let phases = query_phases(&report);
        assert_eq!(phases.len(), 3, "{report:#}");
        for p in phases {
            if met {
                assert_eq!(p["status"], "ok", "{p:#}\n{err}");
                assert_eq!(p["ok"].as_u64(), Some(3), "{p:#}");
            } else {
                assert_eq!(p["status"], "failed", "{p:#}");
                let f = p["failures"][0].as_str().unwrap_or_default();
                assert!(
                    f.contains("refusing to measure") && f.contains("has 300 rows"),
                    "{}: {f}",
                    p["endpoint"]
                );
            }
        }
        assert_eq!(code, Some(if met { 0 } else { 1 }), "{err}");
    }
    drop_table(&admin, &table).await;
}

/// The shipped workloads/questdb-queries.wl, its URLs pointed at the in-test servers with
/// `--param`: every cell checks `require rows(cpu) > 0` over its own endpoint and refuses the
/// empty table. The servers run on a schema of their own (`search_path`), so the `cpu` table
/// is this test's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shipped_queries_workload_checks_require_on_every_endpoint() {
    let Some(url) = servers::pg_server().await else {
        return;
    };
    let admin = admin(&url).await;
    let schema = unique("qwp", "qdb");
    admin
        .batch_execute(&format!(
            "CREATE SCHEMA {schema};
             CREATE TABLE {schema}.cpu (hostname text, usage_user float8, timestamp timestamptz);"
        ))
        .await
        .unwrap();
    let sep = if url.contains('?') { '&' } else { '?' };
    let scoped = format!("{url}{sep}options=-c%20search_path%3D{schema}");
    let exec = ExecServer::start(Some(scoped.clone())).await;
    let qwp = QwpQueryServer::start(Some(scoped.clone()), Options::default()).await;
    // The quoted form of a text param, which `--param` takes today.
    let param = |name: &str, value: &str| ["--param".to_string(), format!("{name}=\"{value}\"")];
    let mut args = ["run", "workloads/questdb-queries.wl", "--json", "--quiet"]
        .map(String::from)
        .to_vec();
    args.extend(param("pg_url", &scoped));
    args.extend(param("http_url", &exec.url()));
    args.extend(param("qwp_url", &qwp.url()));
    args.extend(["--param".to_string(), "hosts=100".to_string()]);
    let (code, report, err) = wlrun_json(Path::new(env!("CARGO_MANIFEST_DIR")), args).await;
    let phases = query_phases(&report);
    let endpoints: Vec<&str> = phases
        .iter()
        .map(|p| p["endpoint"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        endpoints,
        ["questdb.pg", "questdb.http", "questdb.qwp"],
        "{report:#}"
    );
    for p in phases {
        assert_eq!(p["status"], "failed", "{p:#}");
        let f = p["failures"][0].as_str().unwrap_or_default();
        assert!(
            f.contains("require rows(cpu) > 0, but the table has 0 rows"),
            "{}: {f}",
            p["endpoint"]
        );
    }
    assert_eq!(code, Some(1), "{err}");
    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}

/// `verify visible` counts over a `qwp` endpoint: rows written over PostgreSQL wire, counted
/// back through the QWP query server on the same database. Before, the check refused a SQL
/// count over `qwp`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingest_rows_are_counted_over_qwp() {
    let Some(url) = servers::pg_server().await else {
        return;
    };
    let qwp = QwpQueryServer::start(Some(url.clone()), Options::default()).await;
    let table = unique("qwp", "vis");
    let text = format!(
        r#"import "std/tsbs/cpu-only.wl" as tsbs (hosts = 10, end = 2016-01-01T00:10:00Z)
workload w {{ seed 3 }}
target db {{
  dialect postgres
  pg "{url}"
  qwp "{ws}"
}}
ingest load {{
  into db via pg table "{table}"
  rows tsbs.cpu
  batch 500 rows
  teardown drop
  verify visible via db.qwp within 10s
}}
"#,
        ws = qwp.url(),
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), text).unwrap();
    let args = ["run", "w.wl", "--json", "--quiet"]
        .map(String::from)
        .to_vec();
    let (code, report, err) = wlrun_json(dir.path(), args).await;
    let p = &report["cells"][0]["phases"][0];
    assert_eq!(code, Some(0), "{err}\n{p:#}");
    // 10 hosts x 60 timestamps, every one counted back over qwp.
    assert_eq!(p["rows_visible"].as_u64(), Some(600), "{p:#}");
    assert!(qwp.connections() >= 1);
}

/// The shipped ingest workload takes its URLs as params too, with QuestDB's usual addresses
/// as defaults: `--param` points each endpoint elsewhere.
#[test]
fn the_shipped_ingest_workload_takes_its_urls_as_params() {
    let plan = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec![
            "plan",
            "workloads/questdb-ingest.wl",
            "--json",
            "--only",
            "protocol=qwp",
            "--only",
            "hosts=1000",
            "--only",
            "workers=4",
            "--only",
            "ack=publish",
        ];
        args.extend_from_slice(extra);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_wlrun"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let urls = |p: &serde_json::Value| {
        let phase = &p["cells"][0]["phases"][0];
        (
            phase["endpoint"]["url"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            phase["verify"]["endpoint"]["url"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        )
    };
    assert_eq!(
        urls(&plan(&[])),
        (
            "ws://127.0.0.1:9000".to_string(),
            "postgres://admin:${env:QDB_PASSWORD}@127.0.0.1:8812/qdb".to_string()
        )
    );
    assert_eq!(
        urls(&plan(&[
            "--param",
            "qwp_url=\"ws://127.0.0.1:1\"",
            "--param",
            "pg_url=\"postgres://u@127.0.0.1:2/db\"",
        ])),
        (
            "ws://127.0.0.1:1".to_string(),
            "postgres://u@127.0.0.1:2/db".to_string()
        )
    );
}
