//! DML measured honestly, against the real PostgreSQL (and embedded SQLite): the rows each
//! INSERT, UPDATE and DELETE changed, as the server counted them, per query type; `expect
//! affected == 1` making an UPDATE of a missing key an error, never throughput; a read that
//! finds no row counted apart as not found (YCSB's NOT_FOUND); and a read-modify-write as one
//! instance with one latency and each statement's own. PostgreSQL's own statistics, read after
//! wlrun has exited, are the oracle for the counts.

#[path = "common/cli.rs"]
mod cli;
#[path = "common/servers.rs"]
mod servers;

use std::time::Duration;

use serde_json::Value;
use tokio_postgres::{Client, NoTls};

use wlrun::check::Options;
use wlrun::compile::check_text;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn types(report: &Value) -> Vec<Value> {
    report["cells"][0]["phases"][0]["query_types"]
        .as_array()
        .unwrap_or_else(|| panic!("no query types: {report}"))
        .clone()
}

fn of_type<'a>(types: &'a [Value], name: &str) -> &'a Value {
    types.iter().find(|t| t["name"] == name).unwrap()
}

async fn pg() -> Option<Client> {
    let url = servers::pg_server().await?;
    let (client, conn) = tokio_postgres::connect(&url, NoTls).await.unwrap();
    tokio::spawn(conn);
    Some(client)
}

/// A table of `rows` keys 0..rows (primary key), analysed so that a point query uses its index.
async fn keyed_table(c: &Client, table: &str, rows: i64) {
    c.batch_execute(&format!(
        "DROP TABLE IF EXISTS {table};
         CREATE TABLE {table} (k integer PRIMARY KEY, v integer NOT NULL DEFAULT 0);
         INSERT INTO {table} (k) SELECT g FROM generate_series(0, {}) g;
         ANALYZE {table};",
        rows - 1
    ))
    .await
    .unwrap();
}

/// (n_tup_upd, idx_scan) of `table`, as the statistics system has them now.
async fn table_stats(c: &Client, table: &str) -> (i64, i64) {
    c.batch_execute("SELECT pg_stat_clear_snapshot()")
        .await
        .unwrap();
    let row = c
        .query_one(
            "SELECT n_tup_upd, coalesce(idx_scan, 0) FROM pg_stat_user_tables WHERE relname = $1",
            &[&table],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

/// The statistics once every session that touched `table` has reported: a backend sends its
/// counts when it exits, so they settle shortly after wlrun's connections close.
async fn settled_stats(c: &Client, table: &str, want_upd: i64) -> (i64, i64) {
    let mut last = table_stats(c, table).await;
    for _ in 0..50 {
        if last.0 >= want_upd {
            // One more look: nothing still arriving.
            tokio::time::sleep(Duration::from_millis(200)).await;
            let again = table_stats(c, table).await;
            if again == last {
                return last;
            }
            last = again;
            continue;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        last = table_stats(c, table).await;
    }
    last
}

fn workload(url: &str, table: &str, body: &str) -> String {
    format!(
        r#"
workload dml {{ seed 7 }}
target pg {{
  dialect postgres
  pg "{url}"
}}
{}
"#,
        body.replace("TABLE", table)
    )
}

/// Reads over twice the keys there are, updates and read-modify-writes over the keys there
/// are: PostgreSQL's `n_tup_upd` is the rows wlrun says its updates changed, and `idx_scan`
/// one per read, update and statement of a read-modify-write; the reads of missing keys are
/// not found, neither ok nor failed, and every instance is accounted for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_changed_and_not_found_agree_with_postgresql() {
    let Some(c) = pg().await else { return };
    let table = format!("dml_stats_{}", std::process::id());
    keyed_table(&c, &table, 20_000).await;
    let before = table_stats(&c, &table).await;
    let text = workload(
        &servers::pg_url(),
        &table,
        r#"
query read {
  sql "SELECT v FROM TABLE WHERE k = $1"
  bind $1 = uniform(0, 40000)
  not found when rows == 0
}
query update {
  sql "UPDATE TABLE SET v = v + 1 WHERE k = $1"
  bind $1 = uniform(0, 20000)
  expect affected == 1
}
query rmw {
  sql "SELECT v FROM TABLE WHERE k = $1"
  then sql "UPDATE TABLE SET v = $2 WHERE k = $1"
  bind $1 = uniform(0, 20000)
  bind $2 = uniform(0, 1000)
  expect affected == 1
}
run r {
  against pg.pg
  queries read, update, rmw
  workers 4
  count 3000
}
"#,
    );
    let (code, report, err) = cli::run_json(&text, &[], &[]);
    assert_eq!(code, 0, "{err}");
    let phase = &report["cells"][0]["phases"][0];
    // The report keeps the accounting's figures beside the phase's own.
    let a = phase;
    let (ok, failed) = (u(&phase["ok"]), u(&phase["failed"]));
    let not_found = u(&a["not_found"]);
    assert_eq!(failed, 0, "{err}");
    assert_eq!(u(&a["scheduled"]), 3000);
    assert_eq!(
        ok + not_found + failed + u(&a["cut_off"]) + u(&a["unsent"]),
        3000
    );
    let t = types(&report);
    let (read, update, rmw) = (
        of_type(&t, "read"),
        of_type(&t, "update"),
        of_type(&t, "rmw"),
    );
    // Half the read keys do not exist: not found, and kept out of ok and of the rate.
    let read_nf = u(&read["not_found"]);
    assert!((400..600).contains(&read_nf), "{read}");
    assert_eq!(u(&read["ok"]) + read_nf, 1000, "{read}");
    assert_eq!(not_found, read_nf);
    assert!(
        read.get("affected").is_none(),
        "a SELECT changes no rows: {read}"
    );
    // Every update and read-modify-write changed its one row.
    assert_eq!(u(&update["ok"]), 1000);
    assert_eq!(u(&update["affected"]), 1000);
    assert_eq!(u(&rmw["ok"]), 1000);
    assert_eq!(u(&rmw["affected"]), 1000);
    // One latency per read-modify-write, and each of its statements' own.
    let steps = rmw["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{rmw}");
    assert_eq!(steps[0]["statement"], "1 SELECT");
    assert_eq!(steps[1]["statement"], "2 UPDATE");
    for s in steps {
        assert_eq!(u(&s["latency"]["count"]), 1000, "{s}");
        assert!(
            s["latency"]["p50_us"].as_f64().unwrap() <= rmw["latency"]["p50_us"].as_f64().unwrap()
        );
    }
    // The oracle: PostgreSQL's own counts, once wlrun's sessions have reported them.
    let after = settled_stats(&c, &table, before.0 + 2000).await;
    assert_eq!(
        after.0 - before.0,
        2000,
        "n_tup_upd: {before:?} -> {after:?}"
    );
    // An UPDATE by key is an index scan too; a read-modify-write makes two.
    assert_eq!(
        after.1 - before.1,
        1000 + 1000 + 2 * 1000,
        "idx_scan: {before:?} -> {after:?}"
    );
    c.batch_execute(&format!("DROP TABLE {table}"))
        .await
        .unwrap();
}

/// An UPDATE of a key that is not there changes nothing: with `expect affected == 1` it is an
/// error, never throughput, and the run fails saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_of_a_missing_key_fails_the_run() {
    let Some(c) = pg().await else { return };
    let table = format!("dml_missing_{}", std::process::id());
    keyed_table(&c, &table, 100).await;
    let text = workload(
        &servers::pg_url(),
        &table,
        r#"
query update {
  sql "UPDATE TABLE SET v = v + 1 WHERE k = $1"
  bind $1 = uniform(0, 200)
  expect affected == 1
}
run r {
  against pg.pg
  queries update
  count 400
}
"#,
    );
    let dir = tempfile::tempdir().unwrap();
    let out = cli::run_out(dir.path(), &text, &[]);
    assert_eq!(out.code, 1, "{}", out.printed());
    let phase = out.phase();
    let t = types(&out.report);
    let update = of_type(&t, "update");
    let failed = u(&update["failed"]);
    assert!((120..280).contains(&failed), "{update}");
    assert_eq!(u(&update["errors"]["affected"]["count"]), failed);
    assert_eq!(u(&update["ok"]) + failed, 400);
    assert_eq!(u(&update["affected"]), u(&update["ok"]), "{update}");
    // Failed updates are never throughput.
    let qps = phase["qps"].as_f64().unwrap();
    let elapsed = phase["elapsed_s"].as_f64().unwrap();
    assert!(
        (qps * elapsed - u(&update["ok"]) as f64).abs() < 1.0,
        "{phase}"
    );
    let printed = out.printed();
    assert!(
        printed.contains("0 rows changed where `expect affected == 1`"),
        "{printed}"
    );
    assert!(printed.contains("failed"), "{printed}");
    c.batch_execute(&format!("DROP TABLE {table}"))
        .await
        .unwrap();
}

/// Under `transaction` a read-modify-write is one transaction; a failing second statement
/// rolls the first back and leaves the connection usable for the next instance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_rolls_back_and_the_connection_goes_on() {
    let Some(c) = pg().await else { return };
    let table = format!("dml_tx_{}", std::process::id());
    keyed_table(&c, &table, 10).await;
    let text = workload(
        &servers::pg_url(),
        &table,
        r#"
query bump {
  sql "UPDATE TABLE SET v = v + 1 WHERE k = $1"
  then sql "SELECT 1 / (k - 3) FROM TABLE WHERE k = $1"
  bind $1 = seq()
  transaction
}
run r {
  against pg.pg
  queries bump
  count 10
}
"#,
    );
    let (code, report, err) = cli::run_json(&text, &[], &[]);
    assert_eq!(code, 1, "{err}");
    let t = types(&report);
    let bump = of_type(&t, "bump");
    // Key 3 divides by zero: that instance fails, the nine others commit.
    assert_eq!((u(&bump["ok"]), u(&bump["failed"])), (9, 1), "{bump}");
    assert_eq!(u(&bump["errors"]["sql"]["count"]), 1);
    let rows = c
        .query(&format!("SELECT k, v FROM {table} ORDER BY k"), &[])
        .await
        .unwrap();
    for r in rows {
        let (k, v): (i32, i32) = (r.get(0), r.get(1));
        assert_eq!(
            v,
            i32::from(k != 3),
            "key {k}: the failed instance's UPDATE is rolled back"
        );
    }
    c.batch_execute(&format!("DROP TABLE {table}"))
        .await
        .unwrap();
}

/// SQLite counts rows changed too (`changes()`), and only for statements that write.
#[test]
fn sqlite_counts_the_rows_a_statement_changed() {
    let dir = tempfile::tempdir().unwrap();
    let db = rusqlite::Connection::open(dir.path().join("db.sqlite")).unwrap();
    db.execute_batch(
        "CREATE TABLE t (k INTEGER PRIMARY KEY, v INTEGER NOT NULL DEFAULT 0);
         WITH RECURSIVE g(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM g WHERE k < 49)
         INSERT INTO t (k) SELECT k FROM g;",
    )
    .unwrap();
    drop(db);
    let text = r#"
workload dml { seed 7 }
target local { sqlite "db.sqlite" }
query read {
  sql "SELECT v FROM t WHERE k = $1"
  bind $1 = uniform(0, 100)
  not found when rows == 0
}
query bump {
  sql "UPDATE t SET v = v + 1 WHERE k < $1"
  bind $1 = 2
  expect affected == 2
}
run r {
  against local.sqlite
  queries read, bump
  count 200
}
"#;
    let (code, report, err) = cli::run_json_in(dir.path(), text, &[]);
    assert_eq!(code, 0, "{err}");
    let t = types(&report);
    let (read, bump) = (of_type(&t, "read"), of_type(&t, "bump"));
    assert_eq!(u(&bump["ok"]), 100);
    assert_eq!(u(&bump["affected"]), 200);
    let nf = u(&read["not_found"]);
    assert!((30..70).contains(&nf), "{read}");
    assert_eq!(u(&read["ok"]) + nf, 100);
    assert!(read.get("affected").is_none(), "{read}");
}

fn errors_of(text: &str) -> Vec<String> {
    check_text("w.wl", text, &Options::default())
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.message.clone())
        .collect()
}

/// The clauses' mistakes are the checker's, with the clause's place.
#[test]
fn mistaken_instance_rules_are_refused_when_checking() {
    let head = r#"
target q { dialect questdb  http "http://127.0.0.1:9000"  pg "postgres://u@127.0.0.1:8812/qdb" }
"#;
    let e = errors_of(&format!(
        "{head}
query a {{ sql \"UPDATE t SET v = 1\"  expect affected == 1.5 }}
run r {{ against q.pg  queries a  count 1 }}"
    ));
    assert!(e.iter().any(|m| m.contains("expected a count")), "{e:?}");
    let e = errors_of(&format!(
        "{head}
query a {{ sql \"SELECT 1\"  not found when p99 > 1 }}
run r {{ against q.pg  queries a  count 1 }}"
    ));
    assert!(
        e.iter()
            .any(|m| m.contains("`p99` is not a count of one instance")),
        "{e:?}"
    );
    let e = errors_of(&format!(
        "{head}
query a {{ sql \"SELECT 1\"  then sql \"UPDATE t SET v = 1\"  transaction }}
run r {{ against q.http  queries a  count 1 }}"
    ));
    assert!(
        e.iter().any(|m| m.contains("no transaction over `http`")),
        "{e:?}"
    );
    let e = errors_of(&format!(
        "{head}
query a {{ sql \"SELECT $1\"  then sql \"UPDATE t SET v = $3\"  bind $1 = 1  bind $3 = 2 }}
run r {{ against q.pg  queries a  count 1 }}"
    ));
    assert!(e.iter().any(|m| m.contains("but not $2")), "{e:?}");
    assert!(errors_of(&format!(
        "{head}
query a {{ sql \"SELECT $1\"  then sql \"UPDATE t SET v = $2 WHERE k = $1\"  bind $1 = 1  bind $2 = 2  transaction  expect affected >= 0  not found when rows == 0 }}
run r {{ against q.pg  queries a  count 1 }}"
    ))
    .is_empty());
}

/// A query family (`query update for f in 0..3`) is one query per field: each member writes
/// its own column, the family's weight is shared among them, and each reports its own counts.
#[test]
fn a_query_family_writes_one_field_per_member() {
    let dir = tempfile::tempdir().unwrap();
    let db = rusqlite::Connection::open(dir.path().join("db.sqlite")).unwrap();
    db.execute_batch(
        "CREATE TABLE u (k INTEGER PRIMARY KEY, field0 TEXT, field1 TEXT, field2 TEXT);
         WITH RECURSIVE g(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM g WHERE k < 99)
         INSERT INTO u (k) SELECT k FROM g;",
    )
    .unwrap();
    drop(db);
    let text = r#"
workload fam { seed 3 }
param fields = 3
target local { sqlite "db.sqlite" }
query read {
  sql "SELECT * FROM u WHERE k = $1"
  bind $1 = uniform(0, 100)
}
query update for f in 0..fields {
  sql "UPDATE u SET field${f} = $2 WHERE k = $1"
  bind $1 = uniform(0, 100)
  bind $2 = format("v%d", f)
  expect affected == 1
}
run r {
  against local.sqlite
  queries read weight 1, update weight 1
  count 6000
}
"#;
    let (code, report, err) = cli::run_json_in(dir.path(), text, &[]);
    assert_eq!(code, 0, "{err}");
    let t = types(&report);
    let names: Vec<&str> = t.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["read", "update[0]", "update[1]", "update[2]"]);
    // Half the mix reads, the other half is shared by the three members.
    let read = u(&of_type(&t, "read")["ok"]);
    assert!((2800..3200).contains(&read), "{read}");
    for m in &t[1..] {
        let ok = u(&m["ok"]);
        assert!((900..1100).contains(&ok), "{m}");
        assert_eq!(u(&m["affected"]), ok);
    }
    let db = rusqlite::Connection::open(dir.path().join("db.sqlite")).unwrap();
    for f in 0..3 {
        let wrong: i64 = db
            .query_row(
                &format!(
                    "SELECT count(*) FROM u WHERE field{f} IS NOT NULL AND field{f} != 'v{f}'"
                ),
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(wrong, 0, "field{f} holds another member's value");
    }
}
