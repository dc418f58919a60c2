//! `wlrun run` split into shards, as a Kubernetes Indexed Job runs it: N processes of the
//! built binary with `JOB_COMPLETION_INDEX` and `WLRUN_SHARDS` set and the barrier on
//! loopback. The shards together must do exactly what one process does: the same rows in
//! PostgreSQL (compared as ordered dumps), the same requests at an in-test HTTP server (as
//! multisets, and in open loop at the same intended offsets), counts that add up to the
//! single run's. A shard that never comes, or that is killed midway, fails the others with its
//! name, within the timeout: never a hang.
//!
//! PostgreSQL is `WLRUN_TEST_PG` or `postgres://wlrun:wlrun@127.0.0.1:5432/wlrun`; without it
//! the PostgreSQL test is skipped with a note (it fails under CI=true).

#[path = "common/http_server.rs"]
mod http_server;
#[path = "common/servers.rs"]
mod servers;
#[path = "common/shard_procs.rs"]
mod shard_procs;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use http_server::{Behaviour, ServerHandle};
use shard_procs::{finish, free_port, shards, single, wlrun, Plan, Ran};

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn phase<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["cells"][0]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no phase {name}: {report}"))
}

fn sum(ran: &[Ran], name: &str, field: &str) -> u64 {
    ran.iter().map(|r| u(&phase(r.report(), name)[field])).sum()
}

/// The start skews the shards' reports carry (shard 0's figure, which every shard repeats),
/// milliseconds, for the record.
fn skews(ran: &[Ran]) -> Vec<f64> {
    ran[0].report()["shard"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["start_skew_ms"].as_f64())
        .collect()
}

/// Every shard's report names its shard and the same plan; the phases' summed figures agree.
fn check_shard_objects(ran: &[Ran], n: u64) {
    let plan = &ran[0].report()["shard"]["plan"];
    assert!(plan.as_str().unwrap().starts_with("sha256:"), "{plan}");
    for (i, r) in ran.iter().enumerate() {
        let s = &r.report()["shard"];
        assert_eq!((u(&s["index"]), u(&s["count"])), (i as u64, n), "{s}");
        assert_eq!(&s["plan"], plan);
        assert!(s.get("failure").is_none(), "{s}");
        for (p, p0) in s["phases"]
            .as_array()
            .unwrap()
            .iter()
            .zip(ran[0].report()["shard"]["phases"].as_array().unwrap())
        {
            assert_eq!(p["all"], p0["all"], "every shard has the same sums");
            assert_eq!(p["start_barrier"], p0["start_barrier"]);
        }
    }
}

async fn dump(url: &str, table: &str) -> String {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let row = client
        .query_one(
            &format!(
                "SELECT count(*), string_agg(t::text, E'\\n' ORDER BY t::text) FROM {table} t"
            ),
            &[],
        )
        .await
        .unwrap();
    let n: i64 = row.get(0);
    let text: Option<String> = row.get(1);
    format!("{n}\n{}", text.unwrap_or_default())
}

async fn drop_table(url: &str, table: &str) {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client
        .execute(&format!("DROP TABLE IF EXISTS {table}"), &[])
        .await
        .unwrap();
}

#[test]
fn three_shards_load_postgresql_and_query_it_exactly_as_one_process() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some(url) = rt.block_on(servers::pg_server()) else {
        return;
    };
    let table = format!("shards_cpu_{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    // 37 series (a prime: no shard gets a round share) x 60 timestamps; 3 workers per shard.
    let text = format!(
        r#"import "std/tsbs/cpu-only.wl" as tsbs (hosts = 37, end = 2016-01-01T00:10:00Z)
workload w {{ seed 7 }}
target db {{ pg "{url}" }}
ingest load {{
  into db via pg table "{table}"
  rows tsbs.cpu
  batch 100 rows
  workers 3
  verify visible within 10s
}}
query busy {{
  sql "SELECT count(*) FROM {table} WHERE usage_user > $1"
  bind $1 = uniform(0, 100)
}}
run q {{
  against db.pg
  queries busy
  workers 2
  count 61
  require rows({table}) > 0
}}
"#
    );
    std::fs::write(dir.path().join("w.wl"), text).unwrap();

    let one = single(dir.path());
    assert_eq!(one.code, 0, "{}\n{:?}", one.err, one.report);
    let whole = rt.block_on(dump(&url, &table));
    assert!(
        whole.starts_with("2220\n"),
        "{}",
        &whole[..50.min(whole.len())]
    );

    let (ran, _) = shards(dir.path(), Plan::all(3));
    for r in &ran {
        assert_eq!(r.code, 0, "{}\n{:#?}", r.err, r.report);
    }
    let sharded = rt.block_on(dump(&url, &table));
    rt.block_on(drop_table(&url, &table));
    assert!(
        sharded == whole,
        "the sharded load differs from the single one"
    );

    let load = phase(one.report(), "load");
    assert_eq!(u(&load["rows_sent"]), 2220);
    assert_eq!(sum(&ran, "load", "rows_sent"), 2220);
    assert_eq!(sum(&ran, "load", "rows_acked"), u(&load["rows_acked"]));
    // Every shard sent some rows, on all three of its workers.
    for r in &ran {
        let p = phase(r.report(), "load");
        assert!(u(&p["rows_sent"]) > 0, "{p}");
        let per_worker = p["rows_per_worker"].as_array().unwrap();
        assert_eq!(per_worker.len(), 3);
        assert!(per_worker.iter().all(|w| u(w) > 0), "{p}");
        assert!(p["rows_expected"].is_null(), "{p}");
    }
    // Shard 0 counted every shard's rows, against every shard's acknowledged rows.
    assert_eq!(u(&phase(ran[0].report(), "load")["rows_visible"]), 2220);
    assert!(phase(ran[1].report(), "load")["rows_visible"].is_null());

    let q = phase(one.report(), "q");
    assert_eq!(u(&q["ok"]), 61);
    assert_eq!(sum(&ran, "q", "ok"), 61);
    assert_eq!(sum(&ran, "q", "failed"), 0);
    // Instances i, i + 3, ... of 61: 21, 20 and 20.
    let oks: Vec<u64> = ran
        .iter()
        .map(|r| u(&phase(r.report(), "q")["ok"]))
        .collect();
    assert_eq!(oks, [21, 20, 20]);

    check_shard_objects(&ran, 3);
    let all = &ran[0].report()["shard"]["phases"][0]["all"];
    assert_eq!((u(&all["sent"]), u(&all["acked"])), (2220, 2220), "{all}");
    let skews = skews(&ran);
    assert_eq!(skews.len(), 2, "a skew per phase");
    eprintln!("start skew between 3 local shards (ms): {skews:?}");
    assert!(skews.iter().all(|&s| s < 100.0), "{skews:?}");
}

/// A hook that builds each request from its index alone (`closed`), or from its index and its
/// intended offset in the schedule (`open`): what the server receives names each request.
const HOOK: &str = r#"
fn closed(ctx) {
    #{ method: "POST", path: "/r", body: `${ctx.index} ${ctx.rng.int(0, 999999)} w${ctx.workers}` }
}
fn open(ctx) {
    #{ method: "POST", path: "/r", body: `${ctx.index} ${ctx.rng.int(0, 999999)} at ${ctx.offset_us}` }
}
"#;

fn request_workload(server: &ServerHandle, function: &str, load: &str) -> String {
    format!(
        r#"workload w {{ seed 11 }}
target svc {{ http "{}" {{ timeout 5s }} }}
hook h from "h.rhai" (closed, open)
run reqs {{
  against svc.http
  request h.{function}
  {load}
  expect status 200
}}
"#,
        server.url()
    )
}

fn bodies(server: &ServerHandle) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for r in server.requests() {
        *out.entry(r.body_text()).or_default() += 1;
    }
    out
}

/// The requests as multisets, the single run's against the shards', for closed and open loop.
#[test]
fn shards_send_the_requests_one_process_sends() {
    for (function, load, n) in [
        ("closed", "connections 2  count 301", 3u64),
        ("open", "connections 2  count 300  rate 600/s", 4),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("h.rhai"), HOOK).unwrap();
        let server = ServerHandle::start(Behaviour::ok());
        std::fs::write(
            dir.path().join("w.wl"),
            request_workload(&server, function, load),
        )
        .unwrap();
        let one = single(dir.path());
        assert_eq!(one.code, 0, "{}", one.err);
        let whole = bodies(&server);
        drop(server);

        // `ctx.workers` counts every shard's connections: the one part that differs.
        let strip = |m: &BTreeMap<String, usize>| -> BTreeMap<String, usize> {
            m.iter()
                .map(|(k, v)| (k.split(" w").next().unwrap().to_string(), *v))
                .collect()
        };

        let server = ServerHandle::start(Behaviour::ok());
        std::fs::write(
            dir.path().join("w.wl"),
            request_workload(&server, function, load),
        )
        .unwrap();
        let (ran, _) = shards(dir.path(), Plan::all(n));
        for r in &ran {
            assert_eq!(r.code, 0, "{}\n{:#?}", r.err, r.report);
        }
        let got = bodies(&server);
        let total: usize = got.values().sum();
        let expected: usize = whole.values().sum();
        assert_eq!(total, expected, "{function}");
        if function == "closed" {
            assert_eq!(strip(&got), strip(&whole), "{function}");
            assert!(got.keys().all(|k| k.ends_with(&format!(" w{}", 2 * n))));
        } else {
            assert_eq!(
                got, whole,
                "{function}: the same requests at the same offsets"
            );
        }
        assert_eq!(sum(&ran, "reqs", "ok") as usize, expected);
        check_shard_objects(&ran, n);
        eprintln!(
            "start skew between {n} local shards ({function} loop, ms): {:?}",
            skews(&ran)
        );
    }
}

fn slow_workload(server: &ServerHandle) -> String {
    format!(
        r#"workload w {{ seed 3 }}
target svc {{ http "{}" {{ timeout 5s }} }}
run reqs {{
  against svc.http
  request GET "/x"
  connections 1
  duration 4s
  expect status 200
}}
"#,
        server.url()
    )
}

#[test]
fn a_shard_that_never_arrives_fails_the_others_naming_it_within_the_timeout() {
    let server = ServerHandle::start(Behaviour::ok());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), slow_workload(&server)).unwrap();
    let (ran, took) = shards(
        dir.path(),
        Plan {
            n: 3,
            start: vec![0, 1],
            kill: None,
            args: &["--barrier-timeout", "2s"],
            out: None,
        },
    );
    assert!(took < Duration::from_secs(20), "{took:?}");
    for r in &ran {
        assert_eq!(r.code, 1, "{}", r.err);
        let f = r.report()["shard"]["failure"].as_str().unwrap().to_string();
        assert!(f.contains("shard 2"), "{f}");
        assert!(r.err.contains("shard 2"), "{}", r.err);
        assert!(r.report()["cells"].as_array().unwrap().is_empty());
    }
    assert!(ran[0].report()["shard"]["failure"]
        .as_str()
        .unwrap()
        .contains("did not join within 2 s"));
    assert_eq!(server.count(), 0, "nothing was sent");
}

#[test]
fn a_shard_killed_mid_cell_fails_the_others_naming_it() {
    let server = ServerHandle::start(Behaviour::ok().with_delay(Duration::from_millis(5)));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), slow_workload(&server)).unwrap();
    let (ran, took) = shards(
        dir.path(),
        Plan {
            n: 3,
            start: vec![0, 1, 2],
            kill: Some((2, Duration::from_millis(1500), "KILL")),
            args: &["--barrier-timeout", "30s"],
            out: None,
        },
    );
    // Shard 2 died about 1.5 s into the 4 s phase: shard 0 hears its connection close and
    // stops the phase there, fails its end barrier and tells shard 1, which stops too; long
    // before the phase's end, let alone the 30 s timeout.
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert_ne!(ran[2].code, 0);
    for r in &ran[..2] {
        assert_eq!(r.code, 1, "{}", r.err);
        let f = r.report()["shard"]["failure"].as_str().unwrap().to_string();
        assert!(f.contains("shard 2 closed its connection"), "{f}");
        assert!(
            r.err.contains("this shard stopped the phase there"),
            "{}",
            r.err
        );
        let p = phase(r.report(), "reqs");
        assert_eq!(p["status"], "failed", "{p}");
        let elapsed = p["elapsed_s"].as_f64().unwrap();
        assert!(elapsed < 3.0, "the phase went on for {elapsed} s");
        assert!(
            p["failures"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f.as_str().unwrap().contains("shard 2")),
            "{p}"
        );
    }
    assert!(server.count() > 0);
}

/// SIGTERM (what Kubernetes sends when a Job is deleted) on one shard: it stops at once with
/// its partial report (143), tells shard 0, and the others fail at their next barrier naming
/// it instead of waiting out their phase's timeout.
#[test]
fn a_shard_stopped_by_sigterm_leaves_and_the_others_fail_naming_it() {
    let server = ServerHandle::start(Behaviour::ok().with_delay(Duration::from_millis(5)));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), slow_workload(&server)).unwrap();
    let (ran, took) = shards(
        dir.path(),
        Plan {
            n: 3,
            start: vec![0, 1, 2],
            kill: Some((1, Duration::from_millis(1500), "TERM")),
            args: &["--barrier-timeout", "30s"],
            out: None,
        },
    );
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert_eq!(ran[1].code, 143, "{}", ran[1].err);
    assert_eq!(phase(ran[1].report(), "reqs")["status"], "interrupted");
    for r in [&ran[0], &ran[2]] {
        assert_eq!(r.code, 1, "{}", r.err);
        let f = r.report()["shard"]["failure"].as_str().unwrap().to_string();
        assert!(
            f.contains("shard 1 left the run") && f.contains("stopped"),
            "{f}"
        );
        // They stopped the phase when shard 1 left, not at its end.
        let elapsed = phase(r.report(), "reqs")["elapsed_s"].as_f64().unwrap();
        assert!(elapsed < 3.0, "the phase went on for {elapsed} s");
    }
}

#[test]
fn shards_refuse_what_they_cannot_coordinate_and_bad_shard_settings() {
    let dir = tempfile::tempdir().unwrap();
    let staged = r#"workload w { seed 1 }
target svc { http "http://127.0.0.1:9" }
run reqs {
  against svc.http
  request GET "/"
  connections 1
  stage 1s rate 10/s
  stage 1s rate 20/s
}
"#;
    std::fs::write(dir.path().join("w.wl"), staged).unwrap();
    let out = wlrun(
        dir.path(),
        &["run", "w.wl", "--shard", "0/2", "--barrier", "127.0.0.1"],
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("w.wl:7:") && err.contains("cannot run the stages of `reqs`"),
        "{err}"
    );
    // Without shards the same file is fine to check.
    let out = wlrun(dir.path(), &["check", "w.wl"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));

    for (args, env, says) in [
        (
            vec!["--shard", "2/2"],
            vec![],
            "shard 2 does not exist in a run of 2",
        ),
        (vec!["--shard", "x"], vec![], "write I/N"),
        (
            vec![],
            vec![("JOB_COMPLETION_INDEX", "1")],
            "WLRUN_SHARDS is not",
        ),
        (
            vec![],
            vec![("WLRUN_SHARDS", "3")],
            "JOB_COMPLETION_INDEX is not",
        ),
        (
            vec!["--shard", "1/2"],
            vec![],
            "needs to know where shard 0 listens",
        ),
        (
            vec!["--shard", "0/2", "--barrier-timeout", "soon"],
            vec![],
            "--barrier-timeout",
        ),
        (
            vec!["--shard", "0/2", "--barrier", "h:99999"],
            vec![],
            "not a port",
        ),
        // Shard 0 would listen on every interface: not without a token, or an opt-out.
        (
            vec!["--shard", "0/2"],
            vec![],
            "WLRUN_BARRIER_TOKEN is not set",
        ),
        (
            vec!["--shard", "0/2", "--barrier", "s0:7471"],
            vec![("WLRUN_BARRIER_TOKEN", "too-short")],
            "at least 16 characters",
        ),
    ] {
        let mut args2 = vec!["run", "w.wl"];
        args2.extend(args.iter().copied());
        let mut c = wlrun(dir.path(), &args2);
        for (k, v) in &env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?} {env:?}: {err}");
        assert!(err.contains(says), "{args:?} {env:?}: {err}");
    }
}

/// Every clause a sharded run cannot coordinate, refused at once with its position (golden).
#[test]
fn refusals_name_each_clause_a_sharded_run_cannot_coordinate() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/shards_refused.wl"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let out = wlrun::compile::check_text("shards_refused.wl", &text, &Default::default());
    assert!(out.diagnostics.is_empty(), "the file checks without shards");
    let refused = wlrun::lower::shards::refusals(out.checked.as_ref().unwrap());
    assert_eq!(refused.len(), 4);
    let rendered = wlrun::diag::render_all(&out.map, &refused, wlrun::diag::Style::Plain);
    insta::assert_snapshot!("refusals", rendered);
}

#[test]
fn a_shard_with_another_plan_is_refused_by_name() {
    let server = ServerHandle::start(Behaviour::ok());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), slow_workload(&server)).unwrap();
    let port = free_port();
    let barrier = format!("127.0.0.1:{port}");
    let spawn = |shard: &str, seed: &str| {
        wlrun(
            dir.path(),
            &[
                "run",
                "w.wl",
                "--json",
                "--quiet",
                "--shard",
                shard,
                "--barrier",
                &barrier,
                "--seed",
                seed,
                "--barrier-timeout",
                "10s",
            ],
        )
        .spawn()
        .unwrap()
    };
    let zero = spawn("0/2", "3");
    let one = spawn("1/2", "4");
    let (zero, one) = (finish(zero), finish(one));
    assert_eq!(zero.code, 1, "{}", zero.err);
    assert_eq!(one.code, 1, "{}", one.err);
    let f = zero.report()["shard"]["failure"].as_str().unwrap();
    assert!(f.contains("shard 1") && f.contains("another plan"), "{f}");
    assert!(one.err.contains("another plan"), "{}", one.err);
    assert_eq!(server.count(), 0);
}
