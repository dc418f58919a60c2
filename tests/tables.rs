//! Tables you control (docs/language.md, "Tables: types, keys, indexes, `setup sql`"), against
//! the real PostgreSQL: `setup recreate` creates the declared types, the primary key and the
//! indexes, and the catalogue shows exactly that; rows load into it by COPY and by INSERT; a
//! plain lower-case name is written bare and any other quoted, so a user's unquoted SQL finds
//! the first; a `setup sql` index makes a point query use it (EXPLAIN), and without it the
//! query scans; a failing `setup sql` statement fails the run before any row is sent; under
//! shards only shard 0 runs the statements.
//!
//! PostgreSQL is `WLRUN_TEST_PG` or `postgres://wlrun:wlrun@127.0.0.1:5432/wlrun`; without it
//! each test is skipped with a note (it fails under CI=true). Table names carry the process id,
//! so runs of this file beside other test runs on the same server do not meet.

#[path = "common/cli.rs"]
mod cli;
#[path = "common/servers.rs"]
mod servers;
#[path = "common/shard_procs.rs"]
mod shard_procs;

use serde_json::Value;
use tokio_postgres::{Client, NoTls};

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// A runtime, the test server's URL and a client on it; `None` (skipped) without a server.
fn server() -> Option<(tokio::runtime::Runtime, String, Client)> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let url = rt.block_on(servers::pg_server())?;
    let client = rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(&url, NoTls).await.unwrap();
        tokio::spawn(conn);
        client
    });
    Some((rt, url, client))
}

fn name(what: &str) -> String {
    format!("tables_{what}_{}", std::process::id())
}

/// Runs `text` as `w.wl` in a fresh directory: exit code, the report's first phase, stderr.
fn run(text: &str) -> (i32, Value, String) {
    let (code, report, err) = cli::run_json(text, &[], &[]);
    (code, report["cells"][0]["phases"][0].clone(), err)
}

fn strings(rt: &tokio::runtime::Runtime, c: &Client, sql: &str, table: &str) -> Vec<String> {
    rt.block_on(c.query(sql, &[&table]))
        .unwrap()
        .iter()
        .map(|r| r.get::<_, String>(0))
        .collect()
}

/// `information_schema.columns` of `table`: each column as `name type[(length)]`, in order.
fn columns(rt: &tokio::runtime::Runtime, c: &Client, table: &str) -> Vec<String> {
    strings(
        rt,
        c,
        "SELECT column_name || ' ' || data_type \
           || coalesce('(' || character_maximum_length || ')', '') \
         FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position",
        table,
    )
}

/// `pg_indexes` of `table`: each index's definition, by name.
fn indexes(rt: &tokio::runtime::Runtime, c: &Client, table: &str) -> Vec<String> {
    strings(
        rt,
        c,
        "SELECT indexdef FROM pg_indexes WHERE tablename = $1 ORDER BY indexname",
        table,
    )
}

fn drop_table(rt: &tokio::runtime::Runtime, c: &Client, table: &str) {
    let sql = format!(
        "DROP TABLE IF EXISTS {}",
        wlrun::sql_text::quote_ident(table)
    );
    rt.block_on(c.batch_execute(&sql)).unwrap();
}

const YCSB: &str = r#"
schema usertable {
  table "TABLE"
  rows 1_000
  field ycsb_key: varchar(24) = format("user%d", seq())
  field field0:   text        = pattern("[a-z]{10}")
  field n:        integer     = uniform(0, 1000)
  field s:        smallint    = uniform(0, 100)
  field b:        bigint      = seq()
  field r:        real        = uniform(0.0, 1.0)
  field d:        double      = uniform(0.0, 1.0)
  field flag:     boolean     = chance(0.5)
  field code:     char(2)     = pick(["ab", "cd"])
  field at:       timestamptz = uniform(2024-01-01T00:00:00Z, 2024-01-02T00:00:00Z)
  primary key (ycsb_key)
  index (n, at desc)
  index by_s_PID (s)
}
"#;

#[test]
fn setup_recreate_creates_the_declared_types_keys_and_indexes_and_rows_load_by_copy_and_insert() {
    let Some((rt, url, c)) = server() else {
        return;
    };
    for mode in ["copy", "insert"] {
        let table = name(&format!("ycsb_{mode}"));
        let text = format!(
            "{}
target db {{ dialect postgres  pg \"{url}\" {{ insert {mode} }} }}
ingest load {{ into db via pg  rows usertable  batch 300 rows  verify visible within 10s }}
",
            YCSB.replace("TABLE", &table)
                .replace("PID", &std::process::id().to_string())
        );
        let (code, p, err) = run(&text);
        assert_eq!(code, 0, "{mode}: {err}\n{p:#}");
        assert_eq!(
            (u(&p["rows_sent"]), u(&p["rows_visible"])),
            (1000, 1000),
            "{p}"
        );
        assert_eq!(
            columns(&rt, &c, &table),
            [
                "ycsb_key character varying(24)",
                "field0 text",
                "n integer",
                "s smallint",
                "b bigint",
                "r real",
                "d double precision",
                "flag boolean",
                "code character(2)",
                "at timestamp with time zone",
            ],
            "{mode}"
        );
        assert_eq!(
            indexes(&rt, &c, &table),
            [
                format!(
                    "CREATE INDEX by_s_{} ON public.{table} USING btree (s)",
                    std::process::id()
                ),
                format!("CREATE INDEX {table}_n_at_idx ON public.{table} USING btree (n, at DESC)"),
                format!(
                    "CREATE UNIQUE INDEX {table}_pkey ON public.{table} USING btree (ycsb_key)"
                ),
            ],
            "{mode}"
        );
        // The values are what the types hold: the keys distinct, the codes two characters.
        let row = rt
            .block_on(c.query_one(
                &format!(
                    "SELECT count(DISTINCT ycsb_key), max(length(code)), min(s), \
                     max(at) < '2024-01-02' FROM {table}"
                ),
                &[],
            ))
            .unwrap();
        assert_eq!(row.get::<_, i64>(0), 1000);
        assert_eq!(row.get::<_, i32>(1), 2);
        assert!(row.get::<_, i16>(2) >= 0);
        assert!(row.get::<_, bool>(3));
        drop_table(&rt, &c, &table);
    }
}

#[test]
fn plain_names_are_bare_and_any_other_is_quoted_so_unquoted_sql_finds_the_plain_ones() {
    let Some((rt, url, c)) = server() else {
        return;
    };
    let table = format!("Tables Odd {}", std::process::id());
    let text = format!(
        r#"
target db {{ dialect postgres  pg "{url}" }}
schema odd {{
  table "{table}"
  rows 50
  field YCSB_KEY: varchar(20) = format("user%d", seq())
  field order:    integer     = seq()
  field plain:    integer     = seq()
  index (YCSB_KEY)
}}
ingest load {{ into db via pg  rows odd  verify visible within 10s }}
query point {{
  sql "SELECT plain FROM \"{table}\" WHERE plain = $1"
  bind $1 = uniform(0, 50)
}}
run q {{ against db.pg  queries point  count 20 }}
"#
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), &text).unwrap();
    let plan = cli::wlrun(dir.path(), &["plan", "w.wl"]);
    let listing = String::from_utf8_lossy(&plan.stdout);
    assert!(
        listing.contains(&format!(
            "ddl: CREATE TABLE \"{table}\" (\"YCSB_KEY\" varchar(20), \"order\" integer, \
             plain integer)"
        )),
        "{listing}"
    );
    let (code, report, err) = cli::run_json_in(dir.path(), &text, &[]);
    assert_eq!(code, 0, "{err}\n{report:#}");
    let q = &report["cells"][0]["phases"][1];
    assert_eq!((u(&q["ok"]), u(&q["failed"])), (20, 0), "{q}");
    assert_eq!(
        columns(&rt, &c, &table),
        [
            "YCSB_KEY character varying(20)",
            "order integer",
            "plain integer"
        ]
    );
    // The quoted name keeps its case: unquoted it folds to lower case and is not found.
    let quoted = format!("SELECT count(*) FROM \"{table}\" WHERE \"YCSB_KEY\" = 'user1'");
    assert_eq!(
        rt.block_on(c.query_one(&quoted, &[]))
            .unwrap()
            .get::<_, i64>(0),
        1
    );
    let folded = format!("SELECT count(*) FROM \"{table}\" WHERE YCSB_KEY = 'user1'");
    let e = rt.block_on(c.query_one(&folded, &[])).unwrap_err();
    assert!(
        e.as_db_error().unwrap().message().contains("ycsb_key"),
        "{e:?}"
    );
    drop_table(&rt, &c, &table);
}

/// 200,000 rows keyed `user0`..: a point query's plan with or without the `setup sql` index.
fn point_query_plan(rt: &tokio::runtime::Runtime, c: &Client, url: &str, index: bool) -> String {
    let table = name("point");
    let clause = if index {
        format!("setup sql postgres \"CREATE INDEX {table}_key ON ${{table}} (ycsb_key)\"")
    } else {
        String::new()
    };
    let text = format!(
        r#"
target db {{ dialect postgres  pg "{url}" }}
schema usertable {{
  table "{table}"
  rows 200_000
  field ycsb_key: varchar(24) = format("user%d", seq())
  field field0:   text        = pattern("[a-z]{{20}}")
}}
ingest load {{
  into db via pg
  rows usertable
  batch 20_000 rows
  setup recreate
  {clause}
  verify visible within 30s
}}
"#
    );
    let (code, p, err) = run(&text);
    assert_eq!(code, 0, "{err}\n{p:#}");
    assert_eq!(u(&p["rows_visible"]), 200_000, "{p}");
    rt.block_on(c.batch_execute(&format!("ANALYZE {table}")))
        .unwrap();
    let plan = rt
        .block_on(c.query(
            &format!("EXPLAIN SELECT * FROM {table} WHERE ycsb_key = 'user123456'"),
            &[],
        ))
        .unwrap()
        .iter()
        .map(|r| r.get::<_, String>(0))
        .collect::<Vec<_>>()
        .join("\n");
    drop_table(rt, c, &table);
    plan
}

#[test]
fn a_setup_sql_index_makes_the_point_query_use_it() {
    let Some((rt, url, c)) = server() else {
        return;
    };
    let table = name("point");
    let with = point_query_plan(&rt, &c, &url, true);
    let scans = ["Index Scan", "Index Only Scan", "Bitmap Index Scan"];
    assert!(
        scans.iter().any(|s| with.contains(s)) && with.contains(&format!("{table}_key")),
        "{with}"
    );
    let without = point_query_plan(&rt, &c, &url, false);
    assert!(
        !scans.iter().any(|s| without.contains(s)) && without.contains("Seq Scan"),
        "{without}"
    );
}

#[test]
fn a_failing_setup_sql_statement_fails_the_run_before_any_row_is_sent() {
    let Some((rt, url, c)) = server() else {
        return;
    };
    let table = name("failing");
    let text = format!(
        r#"
target db {{ dialect postgres  pg "{url}" }}
schema t {{ table "{table}"  rows 100  field k: bigint = seq() }}
ingest load {{
  into db via pg
  rows t
  setup sql postgres "CREATE INDEX ON {table}_missing (k)"
  setup sql questdb "this is not for PostgreSQL and never runs"
}}
"#
    );
    let (code, p, err) = run(&text);
    assert_eq!(code, 1, "{err}\n{p:#}");
    assert_eq!(u(&p["rows_sent"]), 0, "{p}");
    let failure = p["failures"][0].as_str().unwrap_or_default();
    assert!(
        failure.contains(&format!(
            "`setup sql` statement `CREATE INDEX ON {table}_missing (k)` failed"
        )) && failure.contains("does not exist"),
        "{p:#}"
    );
    // `setup sql` alone is the whole setup: wlrun created no table of its own.
    assert!(columns(&rt, &c, &table).is_empty());
}

#[test]
fn setup_sql_alone_is_the_whole_setup_and_runs_once_under_shards() {
    let Some((rt, url, c)) = server() else {
        return;
    };
    let table = name("own");
    let log = name("own_log");
    rt.block_on(c.batch_execute(&format!(
        "DROP TABLE IF EXISTS {log}; CREATE TABLE {log} (at timestamptz DEFAULT now())"
    )))
    .unwrap();
    let text = format!(
        r#"
target db {{ dialect postgres  pg "{url}" }}
schema t {{
  table "{table}"
  series k: symbol = format("k%d", n) for n in 0..40
  field v: integer = uniform(0, 10)
}}
ingest load {{
  into db via pg
  rows t
  batch 5 rows
  setup sql postgres "DROP TABLE IF EXISTS {table}"
  setup sql postgres "CREATE TABLE {table} (k text PRIMARY KEY, v int4 NOT NULL)"
  setup sql postgres "INSERT INTO {log} DEFAULT VALUES"
  setup sql sqlite "CREATE TABLE never (x INTEGER)"
}}
"#
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), &text).unwrap();
    let (ran, _) = shard_procs::shards(dir.path(), shard_procs::Plan::all(2));
    for r in &ran {
        assert_eq!(r.code, 0, "{}\n{:#?}", r.err, r.report);
    }
    let sent: u64 = ran
        .iter()
        .map(|r| u(&r.report()["cells"][0]["phases"][0]["rows_sent"]))
        .sum();
    assert_eq!(sent, 40);
    assert_eq!(columns(&rt, &c, &table), ["k text", "v integer"]);
    let logged = rt
        .block_on(c.query_one(&format!("SELECT count(*) FROM {log}"), &[]))
        .unwrap();
    assert_eq!(
        logged.get::<_, i64>(0),
        1,
        "shard 0 alone ran the statements"
    );
    let rows = rt
        .block_on(c.query_one(&format!("SELECT count(*) FROM {table}"), &[]))
        .unwrap();
    assert_eq!(rows.get::<_, i64>(0), 40);
    drop_table(&rt, &c, &table);
    drop_table(&rt, &c, &log);
}
