//! The shipped TSBS iot workload (std/tsbs/iot.wl, workloads/tsbs-iot-postgres.wl) against the
//! real PostgreSQL: it loads the tags, readings and diagnostics tables, every one of its query
//! types runs, and the three tables agree on every truck's tags (one tag set per truck, the
//! same in all three), which independent draws per table would not.

#[path = "common/servers.rs"]
mod servers;

use std::path::Path;

use tokio_postgres::NoTls;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_iot_tables_load_agree_on_every_trucks_tags_and_answer_every_query() {
    let Some(url) = servers::pg_server().await else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .current_dir(dir.path())
        .envs(servers::pg_env())
        .args([
            "run",
            &root
                .join("workloads/tsbs-iot-postgres.wl")
                .display()
                .to_string(),
            "--param",
            "trucks=20",
            "--param",
            "per_query=1",
            "--json",
            "--quiet",
        ])
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{printed}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let phases = report["cells"][0]["phases"].as_array().unwrap();
    let run = phases.iter().find(|p| p["phase"] == "queries").unwrap();
    assert_eq!(run["ok"], 13, "every query type once: {run}");
    let (c, conn) = tokio_postgres::connect(&url, NoTls).await.unwrap();
    tokio::spawn(conn);
    let count = |sql: &'static str| {
        let c = &c;
        async move { c.query_one(sql, &[]).await.unwrap().get::<_, i64>(0) }
    };
    assert_eq!(count("SELECT count(*) FROM tags").await, 20);
    assert_eq!(count("SELECT count(*) FROM readings").await, 20 * 8640);
    assert_eq!(count("SELECT count(*) FROM diagnostics").await, 20 * 8640);
    // One tag set per truck across the three tables, in the rows whose tags are all there.
    let tag_sets = count(
        "SELECT count(*) FROM (
           SELECT DISTINCT name, fleet, driver, model, device_version, load_capacity FROM readings
             WHERE num_nulls(name, fleet, driver, model, device_version, load_capacity) = 0
           UNION SELECT DISTINCT name, fleet, driver, model, device_version, load_capacity FROM diagnostics
             WHERE num_nulls(name, fleet, driver, model, device_version, load_capacity) = 0
           UNION SELECT name, fleet, driver, model, device_version, load_capacity FROM tags) t",
    )
    .await;
    assert_eq!(tag_sets, 20);
    // TSBS's nulls: one field of 10% of the rows, never two; one tag of 1%.
    let rows = 20.0 * 8640.0;
    let share = |n: i64| n as f64 / rows;
    let fields =
        "num_nulls(latitude, longitude, elevation, velocity, heading, grade, fuel_consumption)";
    let tags =
        "num_nulls(name, fleet, driver, model, device_version, load_capacity, fuel_capacity, \
                nominal_fuel_consumption)";
    let one_field = c
        .query_one(
            &format!("SELECT count(*) FROM readings WHERE {fields} = 1"),
            &[],
        )
        .await
        .unwrap()
        .get::<_, i64>(0);
    assert!((0.095..0.105).contains(&share(one_field)), "{one_field}");
    let two = c
        .query_one(
            &format!("SELECT count(*) FROM readings WHERE {fields} > 1"),
            &[],
        )
        .await
        .unwrap()
        .get::<_, i64>(0);
    assert_eq!(two, 0);
    let one_tag = c
        .query_one(
            &format!("SELECT count(*) FROM diagnostics WHERE {tags} = 1"),
            &[],
        )
        .await
        .unwrap()
        .get::<_, i64>(0);
    assert!((0.008..0.012).contains(&share(one_tag)), "{one_tag}");
    // Diagnostics: TSBS's slot in 0..7 modulo 3 fields puts fuel_state at 3/7 of its nulls.
    let fuel = count("SELECT count(*) FROM diagnostics WHERE fuel_state IS NULL").await as f64;
    let any = count(
        "SELECT count(*) FROM diagnostics WHERE num_nulls(fuel_state, current_load, status) = 1",
    )
    .await as f64;
    assert!((fuel / any - 3.0 / 7.0).abs() < 0.02, "{fuel} of {any}");
    // And not all alike: drawn per truck.
    assert!(count("SELECT count(DISTINCT driver) FROM tags").await > 1);
}
