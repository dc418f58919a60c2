//! What the query-transport tests (tests/query_transports.rs, tests/qwp_queries.rs) set up the
//! same way: an admin connection and a fresh table on the test server, transports, instances,
//! and the bind cases both count on `checksum_cases::make_table`'s table. Use with
//! `#[path = "common/query_setup.rs"] mod query_setup;` beside `servers` and `checksum_cases`.

#![allow(dead_code)] // each test file uses its own subset

use std::path::Path;

use tokio_postgres::{Client, NoTls};
use wlrun::plan::EndpointPlan;
use wlrun::query::transport::Transport;
use wlrun::query::{Instance, Outcome, QueryError};
use wlrun::value::BindValue;

pub use crate::checksum_cases::{inst, SEC, T0};

/// A plain tokio-postgres client on `url`, for making and dropping tables.
pub async fn admin(url: &str) -> Client {
    let (client, conn) = tokio_postgres::connect(url, NoTls)
        .await
        .expect("the test server accepts an admin connection");
    tokio::spawn(conn);
    client
}

/// The test server's URL, an admin connection on it and a table name no other test uses
/// (`unique(tag, prefix)`); `None` without a server (see `servers::pg_server`).
pub async fn server_and_table(tag: &str, prefix: &str) -> Option<(String, Client, String)> {
    let url = crate::servers::pg_server().await?;
    let admin = admin(&url).await;
    Some((url, admin, unique(tag, prefix)))
}

pub async fn drop_table(admin: &Client, table: &str) {
    admin
        .batch_execute(&format!("DROP TABLE {table}"))
        .await
        .unwrap();
}

/// A table name no other test (or concurrent run) uses: `tag` names the test file.
pub fn unique(tag: &str, prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("wlrun_{tag}_{prefix}_{}_{nanos}", std::process::id())
}

pub async fn connect(ep: &EndpointPlan, url: &str) -> Transport {
    match Transport::connect(ep, url, Path::new(".")).await {
        Ok(t) => t,
        Err(e) => panic!("connecting {} ({}): {e}", ep.name, ep.kind),
    }
}

/// `connect`, with checksums on.
pub async fn summing(ep: &EndpointPlan, url: &str) -> Transport {
    let mut t = connect(ep, url).await;
    t.set_checksums(true);
    t
}

pub async fn rows(t: &mut Transport, i: &Instance) -> Result<u64, QueryError> {
    t.run(i).await.map(|o: Outcome| o.rows)
}

/// Rows and checksum of `i` on `t`, which must have checksums on.
pub async fn summed(t: &mut Transport, i: &Instance, on: &str) -> (u64, u64) {
    match t.run(i).await {
        Ok(Outcome {
            rows,
            checksum: Some(sum),
            ..
        }) => (rows, sum),
        Ok(o) => panic!("{on}: no checksum for {} ({o:?})", i.sql),
        Err(e) => panic!("{on}: {} with {:?}: {e}", i.sql, i.binds),
    }
}

/// Bind cases on `checksum_cases::make_table`'s table that every transport counts alike, with
/// the rows each returns: one bind of each kind (integer, double, text, boolean, NULL,
/// timestamps) in a comparison.
pub fn bind_kind_cases(table: &str) -> Vec<(Instance, u64)> {
    use BindValue::*;
    let q = |sql: &str| sql.replace("{T}", table);
    vec![
        (
            inst(
                &q("SELECT * FROM {T} WHERE i8 > $1"),
                vec![Int(4_000_000_000_000)],
            ),
            5,
        ),
        (
            inst(&q("SELECT * FROM {T} WHERE f8 < $1"), vec![Float(2.75)]),
            3,
        ),
        (
            inst(
                &q("SELECT * FROM {T} WHERE t = $1"),
                vec![Text("row4".into())],
            ),
            1,
        ),
        (
            inst(
                &q("SELECT * FROM {T} WHERE t = $1"),
                vec![Text("it's".into())],
            ),
            0,
        ),
        (
            inst(&q("SELECT * FROM {T} WHERE b = $1"), vec![Bool(true)]),
            5,
        ),
        (
            inst(
                &q("SELECT * FROM {T} WHERE t IS NOT DISTINCT FROM $1"),
                vec![Null],
            ),
            1,
        ),
        (
            inst(
                &q("SELECT * FROM {T} WHERE ts >= $1 AND ts < $2"),
                vec![Timestamp(T0 + 20 * SEC), Timestamp(T0 + 60 * SEC)],
            ),
            4,
        ),
    ]
}

/// Bind cases on the same table where placement matters: a text compared with a timestamptz
/// column, placeholders out of order, one placeholder used twice.
pub fn bind_placement_cases(table: &str) -> Vec<(Instance, u64)> {
    use BindValue::*;
    let q = |sql: &str| sql.replace("{T}", table);
    vec![
        // A text bind compared with a timestamptz column.
        (
            inst(
                &q("SELECT * FROM {T} WHERE ts >= $1"),
                vec![Text("2016-01-01T00:01:00Z".into())],
            ),
            4,
        ),
        // Placeholders out of order, an int bind for a LIMIT: binds go by position.
        (
            inst(
                &q("SELECT * FROM {T} WHERE i4 > $2 AND ts < $1 LIMIT $3"),
                vec![Timestamp(T0 + 80 * SEC), Int(1), Int(4)],
            ),
            4,
        ),
        // One placeholder used twice.
        (
            inst(
                &q("SELECT * FROM {T} WHERE i4 = $1 OR i4 = $1 + 5"),
                vec![Int(2)],
            ),
            2,
        ),
    ]
}
