//! `wlrun run` ingest phases end to end against real servers: PostgreSQL (the system cluster
//! that scripts/test starts) and VictoriaMetrics (started here, one process per test, on
//! loopback ports). Without a server the test says so and passes, except under CI=true, where
//! a missing server fails it.

#[path = "common/cli.rs"]
mod cli;
#[path = "common/oracles/mod.rs"]
mod oracles;
#[path = "common/servers.rs"]
mod servers;
#[path = "common/vm_process.rs"]
mod vm_process;

use std::process::Command;

use serde_json::Value;

use oracles::pg_stall::{PgStall, COPY_DONE, EXECUTE};
use servers::{pg_up, pg_url};
use vm_process::Victoria;

fn run_json(text: &str, extra: &[&str]) -> (i32, Value, String) {
    cli::run_json(text, &[], extra)
}

/// The TSBS cpu-only schema from the stdlib at a small scale.
const TSBS: &str = "import \"std/tsbs/cpu-only.wl\" as tsbs (hosts = 20, end = 2016-01-01T01:00:00Z)\nworkload w { seed 5 }\n";

fn victoria_workload(vm: &Victoria) -> String {
    format!(
        r#"{TSBS}
target victoria {{
  dialect victoriametrics
  ilp_tcp  "tcp://127.0.0.1:{influx}"
  ilp_http "http://127.0.0.1:{http}"
  http     "http://127.0.0.1:{http}" as api
  count samples via api promql "sum(count_over_time({{__name__=~\"cpu_.*\"}}[${{end - start}}]))"
}}
matrix {{ protocol in [ilp_tcp, ilp_http] }}
ingest load {{
  into victoria via protocol table "cpu"
  rows tsbs.cpu
  batch 1000 rows
  workers 2
  verify visible via victoria.api within 30s
}}
"#,
        influx = vm.influx,
        http = vm.http
    )
}

#[test]
fn victoria_metrics_rows_sent_acknowledged_and_visible_reconcile() {
    let Some(vm) = Victoria::start("100y") else {
        return;
    };
    let (code, r, err) = run_json(&victoria_workload(&vm), &[]);
    assert_eq!(code, 0, "{err}");
    // 20 hosts x 360 timestamps per cell.
    for (cell, kind) in [(0, "ilp_tcp"), (1, "ilp_http")] {
        let p = &r["cells"][cell]["phases"][0];
        assert_eq!(p["kind"], kind);
        assert_eq!(p["status"], "ok", "{p}");
        assert_eq!(p["rows_sent"], 7200);
        assert_eq!(p["rows_visible"], 7200, "{p}");
        if kind == "ilp_http" {
            assert_eq!(p["rows_acked"], 7200);
            // HTTP framing is counted on the socket, not in the payload.
            assert!(
                p["socket_bytes"].as_u64() > p["payload_bytes"].as_u64(),
                "{p}"
            );
        } else {
            assert_eq!(p["rows_acked"], Value::Null);
        }
    }
}

#[test]
fn victoria_metrics_dropping_old_samples_fails_the_run() {
    // The trap the visible count exists for: TSBS data is from 2016, and with a one-month
    // retention VictoriaMetrics answers 204 to every batch and keeps nothing.
    let Some(vm) = Victoria::start("1") else {
        return;
    };
    let text = victoria_workload(&vm).replace("within 30s", "within 3s");
    let (code, r, err) = run_json(&text, &["--only", "protocol=ilp_http"]);
    assert_eq!(code, 1, "{err}");
    let p = &r["cells"][0]["phases"][0];
    assert_eq!(p["status"], "failed");
    assert_eq!(p["rows_acked"], 7200);
    assert_eq!(p["rows_visible"], 0);
    let failures = p["failures"].to_string();
    assert!(
        failures.contains("7200 rows acknowledged but never visible"),
        "{failures}"
    );
    assert!(err.contains("acknowledged but never visible"), "{err}");
}

#[test]
fn questdb_ingest_workload_runs_against_victoria_metrics() {
    // The shipped workload's line-protocol cells, pointed at VictoriaMetrics and scaled down,
    // as its header comment says.
    let Some(vm) = Victoria::start("100y") else {
        return;
    };
    let root = env!("CARGO_MANIFEST_DIR");
    let http = vm.http.to_string();
    let ilp = vm.influx.to_string();
    let args = [
        "run",
        "workloads/questdb-ingest.wl",
        "--json",
        "--quiet",
        "--param",
        "db=victoria",
        "--param",
        "hosts=1000",
        "--param",
        "duration=10m",
        "--only",
        "protocol=ilp_tcp",
        "--only",
        "protocol=ilp_http",
        "--only",
        "workers=4",
    ];
    let mut args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    args.extend(["--param".into(), format!("vm_http_port={http}")]);
    args.extend(["--param".into(), format!("vm_ilp_port={ilp}")]);
    let out = Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .current_dir(root)
        .args(&args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let cells = r["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    for c in cells {
        let p = &c["phases"][0];
        // 1,000 hosts x 60 timestamps, every one sent and counted back from the server.
        assert_eq!(p["rows_sent"], 60_000, "{p}");
        assert_eq!(p["rows_visible"], 60_000, "{p}");
    }
}

fn pg_workload(mode: &str) -> String {
    format!(
        r#"{TSBS}
target db {{
  dialect postgres
  pg "{url}" {{ insert {mode} }}
}}
ingest load {{
  into db via pg table "cpu_{mode}"
  rows tsbs.cpu
  batch 1000 rows
  workers 2
  teardown drop
  verify visible within 10s
}}
"#,
        url = pg_url()
    )
}

#[test]
fn postgres_copy_and_insert_reconcile() {
    if !pg_up() {
        return;
    }
    for mode in ["copy", "insert"] {
        let (code, r, err) = run_json(&pg_workload(mode), &[]);
        assert_eq!(code, 0, "{mode}: {err}");
        let p = &r["cells"][0]["phases"][0];
        assert_eq!(p["status"], "ok", "{p}");
        assert_eq!(p["rows_sent"], 7200);
        assert_eq!(p["rows_acked"], 7200);
        assert_eq!(p["rows_visible"], 7200);
        assert_eq!(p["batch_latency"]["count"], 8, "{p}");
    }
}

#[test]
fn postgres_errors_carry_the_servers_message() {
    if !pg_up() {
        return;
    }
    // `setup shared` leaves the (missing) table alone, so COPY fails on the server.
    let text = pg_workload("copy")
        .replace("teardown drop", "setup shared")
        .replace("verify visible within 10s", "")
        .replace("cpu_copy", "wlrun_no_such_table");
    let (code, r, err) = run_json(&text, &[]);
    assert_eq!(code, 1, "{err}");
    let p = &r["cells"][0]["phases"][0];
    let first = p["errors"]["server"]["first"].as_str().unwrap_or_default();
    assert!(first.contains("42P01"), "{p}");
    assert!(first.contains("wlrun_no_such_table"), "{p}");
    assert_eq!(p["rows_acked"], 0);
}

/// `url` with one more query parameter.
fn with_param(url: &str, param: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{param}")
}

/// A COPY (an INSERT) the server committed, whose answer never came (a proxy in front of
/// PostgreSQL swallows everything after the third batch's end): its rows were written, so
/// they are sent and not acknowledged. They once counted as not sent (`rows_sent` 0 while the
/// server had committed 500 rows), and the count above the rows acknowledged is no failure of
/// its own.
#[test]
fn postgres_batches_answered_after_the_timeout_are_sent_not_acknowledged() {
    if !pg_up() {
        return;
    }
    let url = pg_url();
    let Some(host) = url
        .split_once('@')
        .and_then(|(_, rest)| rest.split(['/', '?']).next())
    else {
        panic!("no host:port in {url}");
    };
    for (mode, end) in [("copy", COPY_DONE), ("insert", EXECUTE)] {
        let proxy = PgStall::start(host, end, 3);
        let through = with_param(
            &url.replacen(host, &proxy.addr.to_string(), 1),
            "sslmode=disable",
        );
        let text = format!(
            r#"{TSBS}
target db {{
  dialect postgres
  pg "{through}" {{ timeout 1s  insert {mode} }}
  pg "{url}" as direct
}}
ingest load {{
  into db via pg table "cpu_stalled_{mode}"
  rows tsbs.cpu
  batch 1000 rows
  verify visible via db.direct within 10s
}}
"#
        );
        let (code, r, err) = run_json(&text, &[]);
        let p = &r["cells"][0]["phases"][0];
        eprintln!(
            "{mode}: batches the server was given whole: {}; sent {} acked {} visible {}",
            proxy.batches(),
            p["rows_sent"],
            p["rows_acked"],
            p["rows_visible"]
        );
        assert_eq!(code, 1, "{mode}: {err}");
        assert_eq!(proxy.batches(), 3, "{mode}: {p}");
        assert_eq!(p["rows_sent"], 3000, "{mode}: {p}");
        assert_eq!(p["rows_acked"], 2000, "{mode}: {p}");
        // The server's own count: the third batch committed.
        assert_eq!(p["rows_visible"], 3000, "{mode}: {p}");
        assert_eq!(p["errors"]["timeout"]["count"], 1, "{mode}: {p}");
        let failures: Vec<&str> = p["failures"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            failures
                .iter()
                .all(|f| !f.contains("never visible") && !f.contains("could not be counted")),
            "{mode}: {failures:?}"
        );
    }
}

/// The server closes the count's connection while the rows go out (its
/// `idle_session_timeout`, 200 ms, is shorter than the 1.8 s the rows take): the count
/// reconnects and finds every row, where it once failed the phase with "connection closed
/// ... the visible rows could not be counted".
#[test]
fn verify_reconnects_when_the_server_closed_the_count_connection() {
    if !pg_up() {
        return;
    }
    let url = pg_url();
    let counting = with_param(&url, "options=-c%20idle_session_timeout%3D200");
    let text = format!(
        r#"{TSBS}
target db {{
  dialect postgres
  pg "{url}"
  pg "{counting}" as counter
}}
ingest load {{
  into db via pg table "cpu_count_reconnects"
  rows tsbs.cpu
  batch 1000 rows
  rate 4000/s
  teardown drop
  verify visible via db.counter within 10s
}}
"#
    );
    let (code, r, err) = run_json(&text, &[]);
    let p = &r["cells"][0]["phases"][0];
    assert_eq!(code, 0, "{err}\n{p}");
    assert_eq!(p["rows_acked"], 7200, "{p}");
    assert_eq!(p["rows_visible"], 7200, "{p}");
    let warnings = p["warnings"].to_string();
    assert!(warnings.contains("reconnect"), "{warnings}");
}
