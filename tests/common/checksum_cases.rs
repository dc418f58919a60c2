//! Test tables shared by tests/query_transports.rs and tests/qwp_queries.rs: the bind table,
//! and the typed table with the queries whose results every query transport must checksum
//! alike (docs/checksum.md). Use with
//! `#[path = "common/checksum_cases.rs"] mod checksum_cases;`.

#![allow(dead_code)]

use std::sync::Arc;

use tokio_postgres::Client;
use wlrun::query::Instance;
use wlrun::value::BindValue;

/// 2016-01-01T00:00:00Z in nanoseconds, and a second.
pub const T0: i64 = 1_451_606_400_000_000_000;
pub const SEC: i64 = 1_000_000_000;

pub fn inst(sql: &str, binds: Vec<BindValue>) -> Instance {
    Instance {
        query: 0,
        index: 0,
        sql: Arc::from(sql),
        binds,
        route: None,
        then: Vec::new(),
    }
}

/// Ten rows, k = 0..9: i4 = k, i8 = k * 10^12, f8 = k + 0.5, t = 'row{k}' (NULL for k = 9),
/// ts = T0 + 10 k seconds, b = k is even.
pub async fn make_table(admin: &Client, table: &str) {
    let sql = format!(
        "DROP TABLE IF EXISTS {table};
         CREATE TABLE {table} (i4 int4, i8 int8, f8 float8, t text, ts timestamptz, b bool);
         INSERT INTO {table}
           SELECT k, k * 1000000000000::int8, k + 0.5,
                  CASE WHEN k < 9 THEN 'row' || k END,
                  '2016-01-01T00:00:00Z'::timestamptz + k * interval '10 seconds',
                  k % 2 = 0
           FROM generate_series(0, 9) AS k;"
    );
    admin.batch_execute(&sql).await.expect("the test table");
}

/// Twenty rows, k = 0..19: i4 = k, i8 = k * 10^12 + k, f8 = k / 3, n = k * 1.25 (numeric),
/// r = k * 1.1 (float4), t = 'row{k}', b = k % 3 = 0, ts = T0 + k * 10.5 s, d = 2016-01-01 + k
/// days, c = 'h{k % 4}' in char(5), u = a uuid from k; NULLs: t for k = 7, b for k = 11, ts for
/// k = 13, f8 for k = 17.
pub async fn make_typed_table(admin: &Client, table: &str) {
    let sql = format!(
        "DROP TABLE IF EXISTS {table};
         CREATE TABLE {table} (i4 int4, i8 int8, f8 float8, n numeric(12, 4), r float4, t text,
                               b bool, ts timestamptz, d date, c char(5), u uuid);
         INSERT INTO {table}
           SELECT k, k * 1000000000000::int8 + k,
                  CASE WHEN k <> 17 THEN k / 3.0::float8 END,
                  k * 1.25, k * 1.1::float4,
                  CASE WHEN k <> 7 THEN 'row' || k END,
                  CASE WHEN k <> 11 THEN k % 3 = 0 END,
                  CASE WHEN k <> 13
                       THEN '2016-01-01T00:00:00Z'::timestamptz + k * interval '10.5 seconds' END,
                  date '2016-01-01' + k, 'h' || k % 4, md5(k::text)::uuid
           FROM generate_series(0, 19) AS k;"
    );
    admin
        .batch_execute(&sql)
        .await
        .expect("the typed test table");
}

/// Queries whose results every transport must checksum alike, with their row counts.
pub fn checksum_cases(table: &str) -> Vec<(Instance, u64)> {
    use BindValue::*;
    let q = |sql: &str| sql.replace("{T}", table);
    vec![
        (inst(&q("SELECT * FROM {T}"), vec![]), 20),
        (
            inst(&q("SELECT * FROM {T} WHERE i4 >= $1"), vec![Int(12)]),
            8,
        ),
        (
            inst(
                &q("SELECT t, ts, f8 FROM {T} WHERE ts >= $1 AND ts < $2"),
                vec![Timestamp(T0 + 20 * SEC), Timestamp(T0 + 100 * SEC)],
            ),
            8,
        ),
        (
            inst(
                &q("SELECT i4, f8 * 3 AS x, r FROM {T} WHERE f8 < $1"),
                vec![Float(2.5)],
            ),
            8,
        ),
        (
            inst(
                &q("SELECT * FROM {T} WHERE t = $1"),
                vec![Text("row4".into())],
            ),
            1,
        ),
        (
            inst(&q("SELECT * FROM {T} WHERE b = $1"), vec![Bool(true)]),
            7,
        ),
        (inst(&q("SELECT * FROM {T} WHERE i4 < 0"), vec![]), 0),
        // Aggregates: numeric sums and averages, float sums, counts, timestamp extremes.
        (
            inst(
                &q(
                    "SELECT sum(i8), sum(i4), avg(i4), avg(i8), avg(f8), sum(f8), count(*),
                           count(t), max(ts), min(ts), sum(n), avg(n), max(d), min(r),
                           sum(i8) * 1000 AS big
                    FROM {T}",
                ),
                vec![],
            ),
            1,
        ),
        (
            inst(
                &q(
                    "SELECT b, count(*), sum(i8), avg(f8), max(ts), min(c), max(u::text)
                    FROM {T} GROUP BY b",
                ),
                vec![],
            ),
            3,
        ),
        (
            inst(
                &q(
                    "SELECT date_trunc('minute', ts) AS bucket, count(*), max(f8), sum(n),
                           avg(i4)
                    FROM {T} WHERE ts IS NOT NULL AND i4 < $1 GROUP BY 1",
                ),
                vec![Int(15)],
            ),
            3,
        ),
        (
            // Without zone, as UTC (`ts::timestamp` would be the session's local time).
            inst(
                &q(
                    "SELECT date_trunc('day', ts AT TIME ZONE 'UTC')::date AS day,
                            ts AT TIME ZONE 'UTC' AS naive
                     FROM {T} WHERE i4 < $1",
                ),
                vec![Int(3)],
            ),
            3,
        ),
    ]
}
