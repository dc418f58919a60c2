//! Request templates (`request POST "/q" body "...$1..."` with `bind $1 = ...`): the values of
//! each request drawn by the bind program of queries, checked on what an HTTP server started in
//! the test received.

#[path = "common/cli.rs"]
mod cli;

#[path = "common/http_server.rs"]
mod http_server;

use std::collections::BTreeSet;

use http_server::{Behaviour, ServerHandle};
use serde_json::json;

fn target(server: &ServerHandle) -> String {
    format!(
        "target svc {{\n  http \"{}\" {{ headers {{ \"Content-Type\": \"application/json\" }} }}\n}}\n",
        server.url()
    )
}

fn template_run(server: &ServerHandle, seed: u64, connections: u64) -> String {
    format!(
        r#"workload w {{ seed {seed} }}
{}
run pulls {{
  against svc.http
  request POST "/q/$2" body "{{\"ksql\":\"SELECT * FROM ORDERS WHERE ORDERID = $1;\",\"even\":$3}}"
  let h = uniform(0, 9)
  bind $1 = uniform(0, 999)
  bind $2 = format("h%d", h)
  bind $3 = h * 2
  connections {connections}
  count 300
  expect status 200
}}
"#,
        target(server)
    )
}

/// (host, key, even) of each request the server received, in the order received.
fn sent(server: &ServerHandle) -> Vec<(u64, u64, u64)> {
    server
        .requests()
        .iter()
        .map(|r| {
            assert_eq!(r.method, "POST");
            assert_eq!(r.header("content-type"), Some("application/json"));
            let host: u64 = r.path.strip_prefix("/q/h").unwrap().parse().unwrap();
            let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            let ksql = body["ksql"].as_str().unwrap();
            let key = ksql
                .strip_prefix("SELECT * FROM ORDERS WHERE ORDERID = ")
                .and_then(|k| k.strip_suffix(';'))
                .unwrap()
                .parse()
                .unwrap();
            (host, key, body["even"].as_u64().unwrap())
        })
        .collect()
}

#[test]
fn each_request_draws_its_values_and_the_same_seed_sends_the_same_ones() {
    let server = ServerHandle::start(Behaviour::ok());
    let (code, report, err) = cli::run_json(&template_run(&server, 11, 4), &[], &[]);
    assert_eq!(code, 0, "{err}");
    let p = &report["cells"][0]["phases"][0];
    assert_eq!(
        (p["ok"].as_u64(), p["failed"].as_u64()),
        (Some(300), Some(0))
    );
    assert_eq!(p["request"], "POST /q/$2");
    let four = sent(&server);
    assert_eq!(four.len(), 300);
    // The let is drawn once per request and read by two binds.
    assert!(four.iter().all(|(h, _, even)| *h < 10 && *even == 2 * h));
    assert!(four.iter().all(|(_, k, _)| *k < 1000));
    let keys: BTreeSet<u64> = four.iter().map(|s| s.1).collect();
    assert!(keys.len() > 200, "{} distinct keys of 300", keys.len());
    let hosts: BTreeSet<u64> = four.iter().map(|s| s.0).collect();
    assert_eq!(hosts.len(), 9, "uniform(0, 9) draws from [0, 9)");

    // Request i's values are a function of (seed, run, i): four connections send the same
    // set as one, one connection sends it in order every time, another seed sends others.
    let one = |seed| {
        let s = ServerHandle::start(Behaviour::ok());
        let (code, _, err) = cli::run_json(&template_run(&s, seed, 1), &[], &[]);
        assert_eq!(code, 0, "{err}");
        sent(&s)
    };
    let first = one(11);
    assert_eq!(first, one(11), "one connection: the same stream, in order");
    let (mut a, mut b) = (four.clone(), first.clone());
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b, "four connections send the same requests as one");
    assert_ne!(first, one(12), "another seed, other values");
}

/// The template draws with the evaluator of query binds: a query named as the run, with the
/// same binds, sent over HTTP as `/exec?query=...` in another workload, sends the same keys in
/// the same order.
#[test]
fn a_template_draws_what_a_query_with_the_same_binds_draws() {
    let server = ServerHandle::start(Behaviour::ok());
    let (code, _, err) = cli::run_json(&template_run(&server, 5, 1), &[], &[]);
    assert_eq!(code, 0, "{err}");
    let templated: Vec<u64> = sent(&server).iter().map(|s| s.1).collect();

    let exec = ServerHandle::start(Behaviour::ok().with_json(&json!({
        "query": "SELECT 1",
        "columns": [{"name": "k", "type": "LONG"}],
        "dataset": [[1]],
        "count": 1
    })));
    let text = format!(
        r#"workload w {{ seed 5 }}
{}
query pulls {{
  sql "SELECT $1, $2"
  let h = uniform(0, 9)
  bind $1 = uniform(0, 999)
  bind $2 = h
}}
run exec {{
  against svc.http
  queries pulls
  workers 1
  count 300
}}
"#,
        target(&exec)
    );
    let (code, _, err) = cli::run_json(&text, &[], &[]);
    assert_eq!(code, 0, "{err}");
    let queried: Vec<u64> = exec
        .requests()
        .iter()
        .filter_map(|r| {
            let q = r.path.split_once("query=")?.1.split('&').next()?;
            let sql = percent_decoded(q);
            let key = sql.strip_prefix("SELECT ")?.split(',').next()?.trim();
            key.parse().ok()
        })
        .collect();
    assert_eq!(
        queried.len(),
        300,
        "{:?}",
        exec.requests().first().map(|r| &r.path)
    );
    assert_eq!(templated, queried);
}

fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap()
}

/// A drawn value that cannot go in a path (a space) fails its request, named, and the run.
#[test]
fn a_value_that_breaks_the_path_fails_its_request() {
    let server = ServerHandle::start(Behaviour::ok());
    let text = format!(
        r#"{}
run pulls {{
  against svc.http
  request GET "/q/$1"
  bind $1 = format("a b%d", uniform(0, 9))
  connections 1
  count 5
}}
"#,
        target(&server)
    );
    let (code, report, err) = cli::run_json(&text, &[], &[]);
    assert_eq!(code, 1, "{err}");
    let p = &report["cells"][0]["phases"][0];
    assert_eq!(p["failed"], 5, "{p}");
    assert!(
        p.to_string().contains("has spaces or control characters"),
        "{p}"
    );
    assert!(server.requests().is_empty());
}
