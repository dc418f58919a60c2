//! `wlrun run` against a real InfluxDB 1.x (started here, one `influxd` per test, see
//! common/influx.rs): setup and teardown through InfluxQL, and counts that read InfluxQL's
//! answers only where they are unambiguous.

#[path = "common/cli.rs"]
mod cli;
#[path = "common/influx.rs"]
mod influx;
#[path = "common/servers.rs"]
mod servers;

use serde_json::Value;

use influx::Influx;

/// 20 hosts x 360 timestamps = 7,200 rows of TSBS cpu-only (10 fields each).
const TSBS: &str = "import \"std/tsbs/cpu-only.wl\" as tsbs (hosts = 20, end = 2016-01-01T01:00:00Z)\nworkload w { seed 5 }\n";

/// A workload into database `bench`, measurement `diagnostics` (an InfluxQL keyword, so
/// every statement must quote it), counted with `count` and with the ingest clauses `extra`.
fn workload(server: &Influx, count: &str, extra: &str) -> String {
    let url = server.url();
    format!(
        r#"{TSBS}
target influx {{
  dialect influxdb
  ilp_http "{url}" {{ path "/write?db=bench" }}
  http     "{url}" as api {{ path "/query?db=bench" }}
  {count}
}}
ingest load {{
  into influx via ilp_http table "diagnostics"
  rows tsbs.cpu
  batch 1000 rows
  workers 2
  verify visible within 30s
  {extra}
}}
"#
    )
}

const COUNT_ONE_FIELD: &str =
    r#"count rows via api influxql "SELECT count(\"usage_user\") FROM \"${table}\"""#;

/// Runs `text` from a fresh directory: exit code, JSON report, standard error.
fn run(text: &str) -> (i32, Value, String) {
    cli::run_json(text, &[], &[])
}

fn phase(report: &Value) -> &Value {
    &report["cells"][0]["phases"][0]
}

#[test]
fn the_same_file_runs_twice_from_an_empty_measurement() {
    let Some(server) = Influx::start() else {
        return;
    };
    // Another measurement of the database: setup must leave it alone.
    server.influxql("", "CREATE DATABASE bench");
    server.write("bench", "other,host=a v=1i 1451606400000000000\n");
    let text = workload(&server, COUNT_ONE_FIELD, "");
    for round in 1..=2 {
        let (code, r, err) = run(&text);
        assert_eq!(code, 0, "round {round}: {err}\n{}", server.log());
        let p = phase(&r);
        assert_eq!(p["status"], "ok", "round {round}: {p}");
        assert_eq!(p["rows_acked"], 7200, "round {round}: {p}");
        assert_eq!(p["rows_visible"], 7200, "round {round}: {p}");
        // `setup recreate` (the default) dropped the first round's points: nothing to
        // subtract, and rewriting them is not mistaken for rows that never arrived.
        assert_eq!(p["visible_baseline"], 0, "round {round}: {p}");
    }
    assert_eq!(server.measurements("bench"), ["diagnostics", "other"]);
}

#[test]
fn setup_creates_the_database() {
    let Some(server) = Influx::start() else {
        return;
    };
    let (code, r, err) = run(&workload(&server, COUNT_ONE_FIELD, "setup truncate"));
    assert_eq!(code, 0, "{err}");
    assert_eq!(phase(&r)["rows_visible"], 7200);
    assert_eq!(server.measurements("bench"), ["diagnostics"]);
}

#[test]
fn teardown_drop_leaves_no_measurement() {
    let Some(server) = Influx::start() else {
        return;
    };
    server.influxql("", "CREATE DATABASE bench");
    server.write("bench", "other,host=a v=1i 1451606400000000000\n");
    let (code, r, err) = run(&workload(&server, COUNT_ONE_FIELD, "teardown drop"));
    assert_eq!(code, 0, "{err}");
    assert_eq!(phase(&r)["rows_visible"], 7200, "{}", phase(&r));
    assert_eq!(server.measurements("bench"), ["other"]);
}

#[test]
fn a_row_count_with_several_field_columns_is_an_error() {
    let Some(server) = Influx::start() else {
        return;
    };
    // `count(*)` answers `count_usage_guest`, `count_usage_guest_nice`, ...: one column per
    // field, and which of them counts rows is not for wlrun to guess.
    let count = r#"count rows via api influxql "SELECT count(*) FROM \"${table}\"""#;
    let (code, r, err) = run(&workload(&server, count, ""));
    assert_eq!(code, 1, "{err}");
    let p = phase(&r);
    assert_eq!(p["status"], "failed", "{p}");
    let verify = &p["errors"]["verify"];
    assert!(
        verify["first"].as_str().is_some_and(|m| m
            .contains("returned 10 value columns (count_usage_guest, ")
            && m.contains("a row count needs one")),
        "{p}"
    );
    // Asking again would get the same columns: one attempt, not a retry for 30 s.
    assert_eq!(verify["count"], 1, "{p}");
}

#[test]
fn a_sample_count_adds_every_field_column() {
    let Some(server) = Influx::start() else {
        return;
    };
    let count = r#"count samples via api influxql "SELECT count(*) FROM \"${table}\"""#;
    let (code, r, err) = run(&workload(&server, count, ""));
    assert_eq!(code, 0, "{err}");
    let p = phase(&r);
    assert_eq!(p["rows_visible"], 7200, "{p}");
    assert_eq!(p["visible_baseline"], 0, "{p}");
}

#[test]
fn without_a_count_setup_goes_through_the_ingest_endpoint() {
    let Some(server) = Influx::start() else {
        return;
    };
    // A point of an earlier run, at a time this run does not write: `setup recreate` must
    // drop it although no `http` endpoint is declared (`/query` is on the `/write` server).
    server.influxql("", "CREATE DATABASE bench");
    server.write(
        "bench",
        "diagnostics,hostname=old usage_user=1i 1420070400000000000\n",
    );
    let url = server.url();
    let text = format!(
        r#"{TSBS}
target influx {{
  dialect influxdb
  ilp_http "{url}" {{ path "/write?db=bench" }}
}}
ingest load {{
  into influx via ilp_http table "diagnostics"
  rows tsbs.cpu
  batch 1000 rows
}}
"#
    );
    let (code, r, err) = run(&text);
    assert_eq!(code, 0, "{err}");
    assert_eq!(phase(&r)["rows_acked"], 7200);
    let json = server.influxql("bench", r#"SELECT count("usage_user") FROM "diagnostics""#);
    assert_eq!(
        json["results"][0]["series"][0]["values"][0][1], 7200,
        "{json}"
    );
}
