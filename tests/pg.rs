//! The PostgreSQL driver and admin client against a real server: tables made from the DDL,
//! rows sent by binary COPY and by INSERT read back value by value (NULLs, timestamps, every
//! column type), server errors with their SQLSTATE, and connection failures that come back
//! fast.
//!
//! The server is `postgres://wlrun:wlrun@127.0.0.1:5432/wlrun`, or `WLRUN_TEST_PG`. Where it
//! cannot be reached the tests that need it are skipped with a note, except under `CI=true`,
//! where they fail: see `server`.

#[path = "common/endpoints.rs"]
mod endpoints;
#[path = "common/pg_columns.rs"]
mod pg_columns;
#[path = "common/servers.rs"]
mod servers;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_postgres::{Client, NoTls};

use pg_columns::col;

use wlrun::check::Options;
use wlrun::client::pg::PgClient;
use wlrun::compile::{check_text, schema_plan};
use wlrun::driver::pg::{CopyEncoder, PgWriter};
use wlrun::driver::{Chunk, DriverConfig};
use wlrun::exec::ddl;
use wlrun::gen::batch::{push_str, Batch, BatchSchema, ColumnMeta, Dictionary, Physical, Values};
use wlrun::gen::Columnar;
use wlrun::net::error::ErrorClass;
use wlrun::net::sql_text::quote_ident;
use wlrun::plan::EndpointPlan;
use wlrun::value::Value;

const TIMEOUT: Duration = Duration::from_secs(10);

async fn server() -> Option<String> {
    servers::pg_server().await
}

fn endpoint(options: &[(&str, Value)]) -> EndpointPlan {
    endpoints::endpoint("pg", "postgres", options)
}

fn insert_mode() -> Vec<(&'static str, Value)> {
    vec![("insert", Value::Symbol("insert".into()))]
}

fn config(
    url: &str,
    table: &str,
    schema: Arc<BatchSchema>,
    options: &[(&str, Value)],
) -> DriverConfig {
    DriverConfig {
        endpoint: endpoint(options),
        url: Some(url.to_string()),
        table: table.to_string(),
        schema,
        timeout: TIMEOUT,
        connect_timeout: TIMEOUT,
        base_dir: PathBuf::from("."),
        worker: 0,
        ack: wlrun::plan::Ack::None,
        commit_every: None,
        connector: None,
    }
}

/// A plain tokio-postgres client, for reading back what the driver wrote.
async fn reader(url: &str) -> Client {
    let (client, conn) = tokio_postgres::connect(url, NoTls)
        .await
        .expect("the test server accepts a second connection");
    tokio::spawn(conn);
    client
}

async fn admin(url: &str) -> PgClient {
    PgClient::connect(&endpoint(&[]), url, TIMEOUT)
        .await
        .expect("the admin client connects")
}

/// Drops `table` (if it exists) through the admin client `c`.
async fn drop_table(c: &mut PgClient, table: &str) {
    c.execute(&ddl::drop_table("postgres", table).unwrap())
        .await
        .unwrap();
}

/// The server's URL and an admin client on it, `table` dropped first; `None` without a server.
async fn without_table(table: &str) -> Option<(String, PgClient)> {
    let url = server().await?;
    let mut c = admin(&url).await;
    drop_table(&mut c, table).await;
    Some((url, c))
}

/// Drops and creates `table` for `schema`, through the admin client and the DDL module.
async fn recreate(url: &str, table: &str, schema: &BatchSchema) {
    let mut c = admin(url).await;
    let drop = ddl::drop_table("postgres", table).unwrap();
    let create = ddl::create_table("postgres", table, schema)
        .unwrap()
        .unwrap()
        .join("; ");
    c.execute(&format!("{drop}; {create}"))
        .await
        .expect("DDL runs");
}

/// The edge batch and a COPY writer on `table`, created afresh for it; with the server's URL,
/// `None` without a server.
async fn edge_writer(table: &str) -> Option<(String, Batch, PgWriter)> {
    let url = server().await?;
    let b = edge_batch();
    let schema = Arc::clone(&b.schema);
    recreate(&url, table, &schema).await;
    let w = PgWriter::connect(&config(&url, table, schema, &[]))
        .await
        .unwrap();
    Some((url, b, w))
}

/// A value as compared between a batch and the table; floats by their bits, so NaN and -0.0
/// compare exactly.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum V {
    Null,
    Int(i64),
    Float(u64),
    Bool(bool),
    Text(String),
}

/// The rows of `batch` as the table should hold them: integers as they are, `float` columns
/// narrowed to f32, timestamps floored to microseconds, UUIDs in PostgreSQL's lower-case text.
fn expected(batch: &Batch) -> Vec<Vec<V>> {
    (0..batch.rows)
        .map(|r| {
            batch
                .schema
                .columns
                .iter()
                .enumerate()
                .map(|(c, meta)| {
                    if batch.is_null(c, r) {
                        return V::Null;
                    }
                    match &batch.columns[c].values {
                        Values::Long(v) => V::Int(v[r]),
                        Values::Double(v) if meta.ty == "float" => {
                            V::Float(f64::from(v[r] as f32).to_bits())
                        }
                        Values::Double(v) => V::Float(v[r].to_bits()),
                        Values::Bool(v) => V::Bool(v[r]),
                        Values::Timestamp(v) => V::Int(v[r].div_euclid(1_000)),
                        Values::Symbol(_) | Values::Varchar { .. } if meta.ty == "uuid" => {
                            V::Text(canonical_uuid(batch.text(c, r)))
                        }
                        Values::Symbol(_) | Values::Varchar { .. } => {
                            V::Text(batch.text(c, r).to_string())
                        }
                    }
                })
                .collect()
        })
        .collect()
}

/// A UUID as PostgreSQL prints it: lower case, hyphens after 8, 12, 16 and 20 digits.
fn canonical_uuid(s: &str) -> String {
    let hex: String = s
        .chars()
        .filter(char::is_ascii_hexdigit)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// Every row of `table`, read with typed gets; timestamps as microseconds since the Unix
/// epoch, UUIDs as text.
async fn actual(client: &Client, table: &str, schema: &BatchSchema) -> Vec<Vec<V>> {
    let select: Vec<String> = schema
        .columns
        .iter()
        .map(|c| {
            let q = quote_ident(&c.name);
            match (c.physical, c.ty.as_str()) {
                (Physical::Timestamp, _) => {
                    format!("(extract(epoch from {q}) * 1000000)::int8")
                }
                (_, "uuid") => format!("{q}::text"),
                _ => q,
            }
        })
        .collect();
    let sql = format!("SELECT {} FROM {}", select.join(", "), quote_ident(table));
    let rows = client.query(sql.as_str(), &[]).await.expect("read back");
    rows.iter()
        .map(|row| {
            schema
                .columns
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let v = match (c.physical, c.ty.as_str()) {
                        (Physical::Long, "int") => {
                            row.get::<_, Option<i32>>(i).map(|x| V::Int(x.into()))
                        }
                        (Physical::Long, "short" | "byte") => {
                            row.get::<_, Option<i16>>(i).map(|x| V::Int(x.into()))
                        }
                        (Physical::Long | Physical::Timestamp, _) => {
                            row.get::<_, Option<i64>>(i).map(V::Int)
                        }
                        (Physical::Double, "float") => row
                            .get::<_, Option<f32>>(i)
                            .map(|x| V::Float(f64::from(x).to_bits())),
                        (Physical::Double, _) => {
                            row.get::<_, Option<f64>>(i).map(|x| V::Float(x.to_bits()))
                        }
                        (Physical::Bool, _) => row.get::<_, Option<bool>>(i).map(V::Bool),
                        (Physical::Symbol | Physical::Varchar, _) => {
                            row.get::<_, Option<String>>(i).map(V::Text)
                        }
                    };
                    v.unwrap_or(V::Null)
                })
                .collect()
        })
        .collect()
}

fn sorted(mut rows: Vec<Vec<V>>) -> Vec<Vec<V>> {
    rows.sort();
    rows
}

/// Every column type, with edge values: NULL in every column but the timestamp, times before
/// 1970 and before 2000 with sub-microsecond parts, integer extremes, NaN and infinities,
/// empty and non-ASCII text, an upper-case UUID, and awkward column names.
fn edge_batch() -> Batch {
    let schema = Arc::new(BatchSchema {
        name: "edge".into(),
        table: "edge".into(),
        series_key: None,
        timestamp: Some(0),
        columns: vec![
            col("ts", "timestamp", Physical::Timestamp, None),
            col(
                "Host Name",
                "symbol",
                Physical::Symbol,
                Some(&["h\"1", "", "ünï"]),
            ),
            col("n", "long", Physical::Long, None),
            col("i", "int", Physical::Long, None),
            col("s", "short", Physical::Long, None),
            col("b", "byte", Physical::Long, None),
            col("d", "double", Physical::Double, None),
            col("f", "float", Physical::Double, None),
            col("ok", "boolean", Physical::Bool, None),
            col("note", "varchar", Physical::Varchar, None),
            col("id", "uuid", Physical::Varchar, None),
        ],
    });
    let mut b = Batch::new(schema);
    b.rows = 5;
    let c = &mut b.columns;
    c[0].values = Values::Timestamp(vec![
        0,
        -1,
        946_684_799_999_999_999,
        1_451_606_400_123_456_789,
        i64::MAX,
    ]);
    c[1].values = Values::Symbol(vec![0, 1, 2, 0, 1]);
    c[2].values = Values::Long(vec![i64::MIN, i64::MAX, -1, 0, 42]);
    c[3].values = Values::Long(vec![i32::MIN.into(), i32::MAX.into(), -1, 0, 7]);
    c[4].values = Values::Long(vec![i16::MIN.into(), i16::MAX.into(), -1, 0, 3]);
    c[5].values = Values::Long(vec![-128, 127, 0, 1, 2]);
    c[6].values = Values::Double(vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.1]);
    c[7].values = Values::Double(vec![0.1, f64::MAX, 1.5, -2.25, 3.0]);
    c[8].values = Values::Bool(vec![true, false, true, false, true]);
    for s in ["", "tab\there", "ünïcødé ✓", "quote ' \" \\", "x"] {
        push_str(&mut c[9].values, s);
    }
    for s in [
        "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
        "00000000-0000-0000-0000-000000000000",
        "ffffffff-ffff-ffff-ffff-ffffffffffff",
        "{a0eebc999c0b4ef8bb6d6bb9bd380a11}",
        "",
    ] {
        push_str(&mut c[10].values, s);
    }
    // Row 4 is NULL in every column but the timestamp; the others each have one NULL.
    for (k, column) in c.iter_mut().enumerate().skip(1) {
        column.nulls.set(4);
        column.nulls.set(k % 4);
    }
    b
}

/// A small generated schema over every column type, with NULLs, from the DSL.
fn generated_plan() -> wlrun::plan::SchemaPlan {
    let text = r#"
schema probe {
  table "probe"
  series host: symbol = format("host_%d", n) for n in 0..5
  tag zone: symbol = pick(["a", "b", "c"]) per series null 30%
  field v: double = uniform(0, 100) null 20%
  field n: long = uniform(-1000, 1000)
  field i: int = uniform(-5, 5) null 10%
  field s: short = uniform(0, 30000)
  field f: float = uniform(0, 1)
  field ok: boolean = chance(50%) null 10%
  field note: varchar = format("note %d", uniform(0, 100)) null 25%
  field id: uuid = uuid()
  timestamp ts: timestamp(ns) = every 1s from 1999-12-31T23:59:50Z for 20s
}
"#;
    let out = check_text("pg.wl", text, &Options::default());
    let checked = out
        .checked
        .unwrap_or_else(|| panic!("the test schema checks: {:?}", out.diagnostics));
    schema_plan(&checked, Some("probe")).expect("the test schema lowers")
}

/// Splits the generated rows into chunks of at most `rows`, each with its COPY stream.
fn generated_chunks(rows: usize) -> (Arc<BatchSchema>, Vec<Chunk>) {
    let plan = generated_plan();
    let mut g = Columnar::new(&plan, 7, None, &|p| std::fs::read(p)).expect("generator");
    let schema = g.schema();
    let mut enc = CopyEncoder::new(Arc::clone(&schema)).expect("COPY encoder");
    let mut chunks = Vec::new();
    loop {
        let mut b = g.new_batch();
        let n = g.fill(&mut b, rows);
        if n == 0 {
            break;
        }
        let mut bytes = Vec::new();
        assert_eq!(enc.encode(&b, &mut bytes), Ok(n));
        chunks.push(Chunk {
            rows: n as u64,
            generated: n as u64,
            bytes,
            frames: Vec::new(),
            batch: b,
        });
    }
    (schema, chunks)
}

fn copy_chunk(batch: Batch) -> Chunk {
    let mut enc = CopyEncoder::new(Arc::clone(&batch.schema)).expect("COPY encoder");
    let mut bytes = Vec::new();
    let rows = enc.encode(&batch, &mut bytes).expect("encodes") as u64;
    Chunk {
        rows,
        generated: rows,
        bytes,
        frames: Vec::new(),
        batch,
    }
}

/// Sends every chunk through one writer and checks that each is acknowledged, then that the
/// table holds exactly the chunks' rows.
async fn round_trip(
    url: &str,
    table: &str,
    schema: Arc<BatchSchema>,
    chunks: &[Chunk],
    options: &[(&str, Value)],
) {
    recreate(url, table, &schema).await;
    let mut w = PgWriter::connect(&config(url, table, Arc::clone(&schema), options))
        .await
        .expect("the driver connects");
    let mut want = Vec::new();
    for chunk in chunks {
        let sent = w.send(chunk).await.expect("the chunk is stored");
        assert!(sent.acked);
        assert!(sent.socket_bytes > 0);
        want.extend(expected(&chunk.batch));
    }
    let closing = w.finish().await.expect("the session closes");
    assert!(closing > 0);
    assert_eq!(
        w.finish().await,
        Ok(0),
        "a second finish has nothing to close"
    );

    let client = reader(url).await;
    let got = actual(&client, table, &schema).await;
    let rows = want.len() as u64;
    assert_eq!(got.len(), want.len());
    assert_eq!(sorted(got), sorted(want));
    let mut c = admin(url).await;
    let n = c
        .count(&format!("SELECT count(*) FROM {}", quote_ident(table)))
        .await
        .expect("count");
    assert_eq!(n, rows);
    c.execute(&ddl::drop_table("postgres", table).unwrap())
        .await
        .expect("drop");
}

#[tokio::test]
async fn copy_round_trip_of_generated_rows_in_two_chunks() {
    let Some(url) = server().await else { return };
    let (schema, chunks) = generated_chunks(60);
    assert_eq!(chunks.len(), 2, "100 rows in chunks of 60");
    assert!(
        chunks
            .iter()
            .any(|c| c.batch.columns.iter().any(|col| col.nulls.any())),
        "the generated rows have NULLs"
    );
    round_trip(&url, "wlrun_test_copy_gen", schema, &chunks, &[]).await;
}

#[tokio::test]
async fn insert_round_trip_of_generated_rows_in_two_chunks() {
    let Some(url) = server().await else { return };
    let (schema, chunks) = generated_chunks(60);
    round_trip(
        &url,
        "wlrun_test_insert_gen",
        schema,
        &chunks,
        &insert_mode(),
    )
    .await;
}

#[tokio::test]
async fn copy_round_trip_of_edge_values() {
    let Some(url) = server().await else { return };
    let b = edge_batch();
    let schema = Arc::clone(&b.schema);
    round_trip(&url, "wlrun_test_copy_edge", schema, &[copy_chunk(b)], &[]).await;
}

#[tokio::test]
async fn insert_round_trip_of_edge_values() {
    let Some(url) = server().await else { return };
    let b = edge_batch();
    let schema = Arc::clone(&b.schema);
    round_trip(
        &url,
        "wlrun_test_insert_edge",
        schema,
        &[copy_chunk(b)],
        &insert_mode(),
    )
    .await;
}

#[tokio::test]
async fn copy_socket_bytes_are_the_stream_plus_framing() {
    let table = "wlrun_test_copy_bytes";
    let Some(url) = server().await else { return };
    let b = edge_batch();
    let schema = Arc::clone(&b.schema);
    recreate(&url, table, &schema).await;
    // In clear: under TLS (the default `prefer` takes it where offered) the socket's own
    // count is reported instead, records and all (tests/pg_tls.rs).
    let clear = [("sslmode", Value::Symbol("disable".into()))];
    let mut w = PgWriter::connect(&config(&url, table, schema, &clear))
        .await
        .unwrap();
    let chunk = copy_chunk(b);
    let sent = w.send(&chunk).await.unwrap();
    // Bind, Execute, Sync, CopyData's header, CopyDone, Sync: 48 bytes with a 3-byte name.
    assert_eq!(sent.socket_bytes, chunk.bytes.len() as u64 + 48);
    w.finish().await.unwrap();
}

/// A row the server rejects inside the COPY data (a NUL byte in text) is a `Server` error
/// with its SQLSTATE, not fatal, and the next chunk goes through on the same connection; the
/// same for INSERT.
#[tokio::test]
async fn a_rejected_chunk_is_not_fatal() {
    let Some(url) = server().await else { return };
    for (table, options) in [
        ("wlrun_test_reject_copy", vec![]),
        ("wlrun_test_reject_insert", insert_mode()),
    ] {
        let good = edge_batch();
        let schema = Arc::clone(&good.schema);
        let mut bad = good.clone();
        bad.columns[9] = wlrun::gen::batch::ColumnBatch {
            values: Values::new(Physical::Varchar),
            nulls: Default::default(),
        };
        for s in ["a", "b\0c", "d", "e", "f"] {
            push_str(&mut bad.columns[9].values, s);
        }
        recreate(&url, table, &schema).await;
        let mut w = PgWriter::connect(&config(&url, table, Arc::clone(&schema), &options))
            .await
            .unwrap();
        let e = w.send(&copy_chunk(bad)).await.unwrap_err();
        assert_eq!(e.class, ErrorClass::Server, "{table}: {e}");
        assert!(!e.fatal, "{table}: {e}");
        assert!(e.message.contains("SQLSTATE 22021"), "{table}: {e}");
        assert!(e.message.contains("0x00"), "{table}: {e}");
        let sent = w
            .send(&copy_chunk(good))
            .await
            .expect("the next chunk is stored");
        assert!(sent.acked);
        w.finish().await.unwrap();
        let mut c = admin(&url).await;
        let n = c
            .count(&format!("SELECT count(*) FROM {}", quote_ident(table)))
            .await
            .unwrap();
        assert_eq!(n, 5, "{table}: only the good chunk's rows");
        drop_table(&mut c, table).await;
    }
}

/// A COPY into a table that does not exist: the server's message and SQLSTATE 42P01, class
/// `Server`. The COPY never started, which tokio-postgres cannot recover from, so it is fatal.
#[tokio::test]
async fn copy_into_a_missing_table_names_the_server_error() {
    let table = "wlrun_test_no_such_table";
    let Some((url, _c)) = without_table(table).await else {
        return;
    };
    let b = edge_batch();
    let mut w = PgWriter::connect(&config(&url, table, Arc::clone(&b.schema), &[]))
        .await
        .expect("connecting does not need the table");
    let e = w.send(&copy_chunk(b)).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Server, "{e}");
    assert!(e.fatal, "{e}");
    assert!(
        e.message.contains(&format!(
            "relation \"{table}\" does not exist (SQLSTATE 42P01)"
        )),
        "{e}"
    );
}

/// INSERT into a missing table: the server refuses to prepare the statement; not fatal, and
/// once the table exists the next chunk goes through on the same connection.
#[tokio::test]
async fn insert_into_a_missing_table_then_created() {
    let table = "wlrun_test_insert_late_table";
    let Some((url, mut c)) = without_table(table).await else {
        return;
    };
    let b = edge_batch();
    let schema = Arc::clone(&b.schema);
    let mut w = PgWriter::connect(&config(&url, table, Arc::clone(&schema), &insert_mode()))
        .await
        .expect("connecting does not need the table");
    let chunk = copy_chunk(b);
    let e = w.send(&chunk).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Server, "{e}");
    assert!(!e.fatal, "{e}");
    assert!(e.message.contains("SQLSTATE 42P01"), "{e}");
    c.execute(
        &ddl::create_table("postgres", table, &schema)
            .unwrap()
            .unwrap()
            .join("; "),
    )
    .await
    .unwrap();
    assert!(
        w.send(&chunk)
            .await
            .expect("stored once the table exists")
            .acked
    );
    w.finish().await.unwrap();
    drop_table(&mut c, table).await;
}

#[tokio::test]
async fn admin_client_errors_and_counts() {
    let Some(url) = server().await else { return };
    let mut c = admin(&url).await;
    let e = c
        .execute("SELECT * FROM wlrun_test_nothing_here")
        .await
        .unwrap_err();
    assert_eq!(e.class, ErrorClass::Server);
    assert!(!e.fatal);
    assert!(
        e.message
            .contains("relation \"wlrun_test_nothing_here\" does not exist (SQLSTATE 42P01)"),
        "{e}"
    );
    let e = c.execute("SELEC 1").await.unwrap_err();
    assert!(e.message.contains("SQLSTATE 42601"), "{e}");
    // Several statements in one call, and the session still works after the errors.
    c.execute("SELECT 1; SELECT 2").await.unwrap();
    assert_eq!(c.count("SELECT 12345678901").await, Ok(12_345_678_901));
    assert_eq!(
        c.count("SELECT count(*) FROM generate_series(1, 7)").await,
        Ok(7)
    );
    for (sql, why) in [
        ("SELECT NULL", "NULL"),
        ("SELECT 1 WHERE false", "no row"),
        ("SELECT -1", "not a non-negative integer"),
        ("SELECT 'many'", "not a non-negative integer"),
        ("SELECT 1.5", "not a non-negative integer"),
    ] {
        let e = c.count(sql).await.unwrap_err();
        assert!(e.message.contains(why), "{sql}: {e}");
    }
}

#[tokio::test]
async fn a_wrong_password_is_a_connect_error_with_the_server_message() {
    let Some(url) = server().await else { return };
    let mut config: tokio_postgres::Config = url.parse().unwrap();
    config.password("definitely-not-the-password");
    // Rebuild a URL with the wrong password from the parsed parts.
    let Some(tokio_postgres::config::Host::Tcp(host)) = config.get_hosts().first() else {
        eprintln!("note: skipping: the test server is not on TCP");
        return;
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().unwrap_or("wlrun");
    let db = config.get_dbname().unwrap_or(user);
    let bad = format!("postgres://{user}:definitely-not-the-password@{host}:{port}/{db}");
    let b = edge_batch();
    let Err(e) = PgWriter::connect(&config_for(&bad, b.schema)).await else {
        // A server that trusts loopback logins lets any password in.
        eprintln!("note: the test server does not check passwords on loopback");
        return;
    };
    assert_eq!(e.class, ErrorClass::Connect, "{e}");
    assert!(e.message.contains("SQLSTATE 28P01"), "{e}");
    assert!(!e.message.contains("definitely-not"), "{e}");
}

fn config_for(url: &str, schema: Arc<BatchSchema>) -> DriverConfig {
    config(url, "unused", schema, &[])
}

/// No server needed: an unused loopback port refuses at once.
#[tokio::test]
async fn connection_refused_fails_fast_and_names_the_endpoint() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let url = format!("postgres://wlrun:secret@127.0.0.1:{port}/wlrun");
    let b = edge_batch();
    let started = Instant::now();
    let Err(e) = PgWriter::connect(&config_for(&url, Arc::clone(&b.schema))).await else {
        panic!("connected to a closed port");
    };
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(e.class, ErrorClass::Connect, "{e}");
    assert!(e.fatal);
    assert!(
        e.message
            .starts_with(&format!("cannot connect to db.pg (127.0.0.1:{port}): ")),
        "{e}"
    );
    assert!(e.message.to_lowercase().contains("refused"), "{e}");
    assert!(!e.message.contains("secret"), "{e}");

    let Err(e) = PgClient::connect(&endpoint(&[]), &url, Duration::from_secs(1)).await else {
        panic!("the admin client connected to a closed port");
    };
    assert_eq!(e.class, ErrorClass::Connect, "{e}");
}

/// No server needed: a listener that accepts and never answers runs into the connect timeout.
#[tokio::test]
async fn a_silent_server_times_out() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            held.push(s);
        }
    });
    let url = format!("postgres://wlrun:wlrun@127.0.0.1:{port}/wlrun");
    let b = edge_batch();
    let mut cfg = config_for(&url, Arc::clone(&b.schema));
    cfg.connect_timeout = Duration::from_millis(300);
    let started = Instant::now();
    let Err(e) = PgWriter::connect(&cfg).await else {
        panic!("connected to a silent server");
    };
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(
        matches!(e.class, ErrorClass::Timeout | ErrorClass::Connect),
        "{e}"
    );
    assert!(e.message.contains("db.pg"), "{e}");
    hold.abort();
}

/// After `finish`, sending is a fatal connection error rather than a hang or a panic.
#[tokio::test]
async fn send_after_finish_is_an_error() {
    let table = "wlrun_test_after_finish";
    let Some((url, b, mut w)) = edge_writer(table).await else {
        return;
    };
    w.finish().await.unwrap();
    let e = w.send(&copy_chunk(b)).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Connection);
    assert!(e.fatal);
    drop_table(&mut admin(&url).await, table).await;
}

/// Why a refused COPY is fatal: tokio-postgres 0.7 sends a Sync with the COPY's Execute and
/// another after CopyFail, the server answers both with ReadyForQuery when the COPY fails
/// before starting, and the second one ends the connection (rust-postgres/rust-postgres#789).
/// If this test fails because the second send succeeds, tokio-postgres has fixed it, and
/// `PgWriter::send` no longer needs to make that error fatal.
#[tokio::test]
async fn the_connection_is_gone_after_a_refused_copy() {
    let table = "wlrun_test_refused_copy";
    let Some((url, mut c)) = without_table(table).await else {
        return;
    };
    let b = edge_batch();
    let schema = Arc::clone(&b.schema);
    let mut w = PgWriter::connect(&config(&url, table, Arc::clone(&schema), &[]))
        .await
        .unwrap();
    let chunk = copy_chunk(b);
    let e = w.send(&chunk).await.unwrap_err();
    assert!(e.fatal, "{e}");
    c.execute(
        &ddl::create_table("postgres", table, &schema)
            .unwrap()
            .unwrap()
            .join("; "),
    )
    .await
    .unwrap();
    let e = w.send(&chunk).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Connection, "{e}");
    assert!(e.message.contains("unexpected message from server"), "{e}");
    drop_table(&mut c, table).await;
}
