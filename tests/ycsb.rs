//! The shipped YCSB workloads (std/ycsb/core.wl, workloads/ycsb-postgres.wl) against the real
//! PostgreSQL: workload A's read/update split is YCSB's 50/50 over 100,000 operations, and
//! PostgreSQL's own statistics, read after wlrun has exited, agree with wlrun's per-type counts
//! (`n_tup_upd` = updates; `idx_scan` = reads + updates, an UPDATE by key being an index scan
//! too); workload D's reads find the latest keys.

#[path = "common/cli.rs"]
mod cli;
#[path = "common/servers.rs"]
mod servers;

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use tokio_postgres::{Client, NoTls};

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// `wlrun run workloads/ycsb-postgres.wl --only workload=W ...` from the repository root: the
/// exit code and report.json.
fn run_workload(w: &str, params: &[&str]) -> (i32, Value, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("res");
    let only = format!("workload={w}");
    let mut args = vec![
        "run".to_string(),
        root.join("workloads/ycsb-postgres.wl")
            .display()
            .to_string(),
        "--only".into(),
        only,
        "--out".into(),
        out_dir.display().to_string(),
    ];
    for p in params {
        args.push("--param".into());
        args.push((*p).into());
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .current_dir(dir.path())
        .envs(servers::pg_env())
        .args(&args)
        .output()
        .unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let report = std::fs::read(out_dir.join("report.json"))
        .unwrap_or_else(|e| panic!("no report.json ({e}): {printed}"));
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_slice(&report).unwrap(),
        printed,
    )
}

/// The run phase of the first cell (after its load).
fn run_phase(report: &Value) -> Value {
    report["cells"][0]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == "queries")
        .cloned()
        .unwrap_or_else(|| panic!("no run phase: {report}"))
}

fn label<'a>(phase: &'a Value, name: &str) -> &'a Value {
    phase["labels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["label"] == name)
        .unwrap_or_else(|| panic!("no label {name}: {}", phase["labels"]))
}

async fn pg() -> Option<Client> {
    let url = servers::pg_server().await?;
    let (client, conn) = tokio_postgres::connect(&url, NoTls).await.unwrap();
    tokio::spawn(conn);
    Some(client)
}

/// (n_tup_upd, idx_scan) of usertable, from a fresh statistics snapshot.
async fn usertable_stats(c: &Client) -> (i64, i64) {
    c.batch_execute("SELECT pg_stat_clear_snapshot()")
        .await
        .unwrap();
    let row = c
        .query_one(
            "SELECT n_tup_upd, coalesce(idx_scan, 0) FROM pg_stat_user_tables
             WHERE relname = 'usertable'",
            &[],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

/// The two YCSB tests share the table `usertable`: they take turns.
static USERTABLE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workload_a_splits_50_50_and_postgresql_counts_what_wlrun_counts() {
    let Some(c) = pg().await else { return };
    let _turn = USERTABLE.lock().await;
    let (code, report, printed) =
        run_workload("a", &["records=1000", "operations=100000", "workers=4"]);
    assert_eq!(code, 0, "{printed}");
    let phase = run_phase(&report);
    let (read, update) = (label(&phase, "READ"), label(&phase, "UPDATE"));
    let (reads, updates) = (u(&read["ok"]), u(&update["ok"]));
    assert_eq!(u(&phase["failed"]), 0, "{printed}");
    // Every key exists: no read is not found, every update changed its row.
    assert!(phase.get("not_found").is_none(), "{printed}");
    assert_eq!(reads + updates, 100_000);
    let share = reads as f64 / 100_000.0;
    assert!((share - 0.5).abs() < 0.01, "reads {share}");
    let types = phase["query_types"].as_array().unwrap();
    let changed: u64 = types
        .iter()
        .filter(|t| t["name"].as_str().unwrap().starts_with("update["))
        .map(|t| u(&t["affected"]))
        .sum();
    assert_eq!(changed, updates);
    // The oracle: PostgreSQL's statistics of the table the run's load made, once every
    // session of wlrun has reported (a backend sends its counts as it exits).
    let mut stats = usertable_stats(&c).await;
    for _ in 0..50 {
        if stats.0 >= updates as i64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        stats = usertable_stats(&c).await;
    }
    assert_eq!(stats.0, updates as i64, "n_tup_upd");
    assert_eq!(stats.1, (reads + updates) as i64, "idx_scan");
}

/// D's reads draw the latest keys: with inserts going on, the newest keys are read most, and
/// the reads of keys whose insert another worker still has in flight are not found, apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workload_d_reads_the_latest_keys() {
    let Some(c) = pg().await else { return };
    let _turn = USERTABLE.lock().await;
    let (code, report, printed) =
        run_workload("d", &["records=1000", "operations=20000", "workers=2"]);
    assert_eq!(code, 0, "{printed}");
    let phase = run_phase(&report);
    let types = phase["query_types"].as_array().unwrap();
    let of = |n: &str| types.iter().find(|t| t["name"] == n).unwrap();
    let (read, insert) = (of("read_latest"), of("insert"));
    let inserts = u(&insert["ok"]);
    assert_eq!(u(&insert["affected"]), inserts);
    let reads = u(&read["ok"]) + read["not_found"].as_u64().unwrap_or(0);
    assert_eq!(reads + inserts, 20_000);
    // The table holds the load's keys and every insert's.
    let rows: i64 = c
        .query_one("SELECT count(*) FROM usertable", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(rows, 1000 + inserts as i64);
    // Most reads find their key: only those racing an insert in flight do not.
    let nf = read["not_found"].as_u64().unwrap_or(0);
    assert!(nf < reads / 10, "{nf} of {reads} reads not found");
}
