//! `wlrun k8s` from outside. No cluster is available here, so the manifests are checked the
//! ways that do not need one:
//!
//! - against the Kubernetes API's schema, offline, by PyPI's kubernetes-validate in strict
//!   mode (scripts/test installs it in target/pyenv; under CI=true a missing validator fails);
//! - as goldens of shipped workloads, with each ConfigMap value compared with its file;
//! - by doing what the kubelet would: laying the projected volume's files out under a
//!   directory, expanding `$(JOB_COMPLETION_INDEX)`, and running the container's command
//!   there with the real wlrun, and its shard script with a stand-in that is killed.

#[path = "common/servers.rs"]
mod servers;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde::Deserialize as _;
use yaml_serde::Value;

/// The newest Kubernetes schema kubernetes-validate 1.37.0 ships.
const K8S_VERSION: &str = "1.37.0";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The barrier token the manifests carry in these tests (else a fresh one each time).
const TOKEN: &str = "k8s-test-barrier-token-5f0e";

/// `wlrun ARGS` in `dir`, with none of the environment variables the shipped workloads read
/// and the test's barrier token.
fn wlrun(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wlrun"));
    c.current_dir(dir)
        .args(args)
        .env_remove("PGPASSWORD")
        .env("WLRUN_BARRIER_TOKEN", TOKEN);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// The manifests `wlrun k8s` printed; any other exit fails the test with its message.
fn manifests(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (String, String) {
    let mut all = vec!["k8s"];
    all.extend_from_slice(args);
    let out = wlrun(dir, &all, env);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "wlrun k8s {args:?}: {stderr}");
    (String::from_utf8(out.stdout).unwrap(), stderr)
}

/// What `wlrun k8s FILE --shards 2` says when it refuses the workload: exit 2, no manifest.
fn refused(file: &str) -> String {
    let out = wlrun(
        &repo(),
        &["k8s", file, "--shards", "2", "--image", "w:1"],
        &[],
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{file}: {err}");
    assert!(out.stdout.is_empty());
    err
}

fn docs(yaml: &str) -> Vec<Value> {
    yaml_serde::Deserializer::from_str(yaml)
        .map(|d| Value::deserialize(d).unwrap())
        .collect()
}

fn kind<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"].as_str() == Some(kind))
        .unwrap_or_else(|| panic!("no {kind}"))
}

fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v:?}"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_sequence()
        .unwrap()
        .iter()
        .map(|s| str_of(s).to_string())
        .collect()
}

/// The Job's one container.
fn container(docs: &[Value]) -> &Value {
    &kind(docs, "Job")["spec"]["template"]["spec"]["containers"][0]
}

/// Every file the pod sees under /workload: its path there and its bytes, from the projected
/// volume's items and the ConfigMap's and Secret's data.
fn projected_files(docs: &[Value]) -> Vec<(String, Vec<u8>)> {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.decode(s).unwrap();
    let volumes = kind(docs, "Job")["spec"]["template"]["spec"]["volumes"]
        .as_sequence()
        .unwrap();
    let workload = volumes.iter().find(|v| v["name"] == "workload").unwrap();
    let mut out = Vec::new();
    for source in workload["projected"]["sources"].as_sequence().unwrap() {
        let (object, items) = match (source.get("configMap"), source.get("secret")) {
            (Some(c), _) => (kind(docs, "ConfigMap"), &c["items"]),
            (_, Some(s)) => (kind(docs, "Secret"), &s["items"]),
            _ => panic!("unknown projection {source:?}"),
        };
        for item in items.as_sequence().unwrap() {
            let key = str_of(&item["key"]);
            let bytes = if let Some(text) = object.get("data").and_then(|d| d.get(key)) {
                if object["kind"] == "Secret" {
                    b64(str_of(text))
                } else {
                    str_of(text).as_bytes().to_vec()
                }
            } else {
                b64(str_of(&object["binaryData"][key]))
            };
            out.push((str_of(&item["path"]).to_string(), bytes));
        }
    }
    out
}

/// kubernetes-validate from target/pyenv (or WLRUN_K8S_VALIDATE); `None` when it is missing
/// and CI is not set.
fn validator() -> Option<PathBuf> {
    let path = std::env::var_os("WLRUN_K8S_VALIDATE")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/pyenv/bin/kubernetes-validate"));
    let runs = Command::new(&path)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if runs {
        Some(path)
    } else {
        servers::missing("kubernetes-validate in target/pyenv (scripts/test installs it)");
        None
    }
}

/// Every document passes the schema, strictly (no field the API does not have), and none is
/// of a kind the validator has no schema for (which it only warns about).
fn validate(yaml: &str) {
    let Some(validator) = validator() else { return };
    let mut child = Command::new(validator)
        .args(["--strict", "-k", K8S_VERSION, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(yaml.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}\n{yaml}");
    let passed = text.lines().filter(|l| l.starts_with("INFO ")).count();
    assert_eq!(passed, docs(yaml).len(), "{text}");
    assert!(!text.contains("WARN") && !text.contains("ERROR"), "{text}");
}

/// The manifests with the ConfigMap's and Secret's values shortened to their sizes, once each
/// has been compared with the file it came from: the golden then holds the structure, and a
/// comment edited in a shipped workload does not change it.
fn golden_text(yaml: &str, dir: &Path) -> String {
    let mut all = docs(yaml);
    let files = projected_files(&all);
    for (path, bytes) in &files {
        let on_disk = std::fs::read(dir.join(path)).unwrap();
        assert!(on_disk == *bytes, "{path} differs from the file");
    }
    for d in &mut all {
        for field in ["data", "binaryData"] {
            if let Some(map) = d.get_mut(field).and_then(Value::as_mapping_mut) {
                for (_, v) in map.iter_mut() {
                    *v = Value::String(format!("<{} bytes>", str_of(v).len()));
                }
            }
        }
    }
    all.iter()
        .map(|d| format!("---\n{}", yaml_serde::to_string(d).unwrap()))
        .collect()
}

#[test]
fn shipped_workloads_give_these_manifests() {
    for (file, name, extra) in [
        // A Rhai hook beside the workload; its deadline derived from the plan.
        ("workloads/ksql-pull.wl", "ksql_pull", &[][..]),
        // A CSV of query parameters, and an env("PGPASSWORD", ...) that is not set; loads as
        // fast as the server takes the rows, so it needs a deadline.
        (
            "workloads/pgbench-timeseries.wl",
            "pgbench_timeseries",
            &["--deadline", "2h"][..],
        ),
    ] {
        let mut args = vec![
            file,
            "--shards",
            "4",
            "--image",
            "registry.example/wlrun:0.1.0",
        ];
        args.extend_from_slice(extra);
        let (yaml, stderr) = manifests(&repo(), &args, &[]);
        assert!(stderr.contains("names this machine"), "{stderr}");
        validate(&yaml);
        insta::assert_snapshot!(format!("k8s_{name}.yaml"), golden_text(&yaml, &repo()));
    }
}

#[test]
fn the_job_runs_n_indexed_shards_that_never_retry_and_find_shard_0() {
    let (yaml, _) = manifests(
        &repo(),
        &[
            "workloads/pgbench-timeseries.wl",
            "--shards",
            "16",
            "--image",
            "wlrun:test",
            "--name",
            "homework",
            "--namespace",
            "bench",
            "--barrier-port",
            "9100",
            "--param",
            "hosts=40",
            "--cpu",
            "2",
            "--memory",
            "2Gi",
            "--deadline",
            "90m",
        ],
        &[],
    );
    let all = docs(&yaml);
    for d in &all {
        assert_eq!(d["metadata"]["name"], "homework");
        assert_eq!(d["metadata"]["namespace"], "bench");
    }
    let job = &kind(&all, "Job")["spec"];
    assert_eq!(job["completionMode"], "Indexed");
    assert_eq!(job["completions"].as_u64(), Some(16));
    assert_eq!(job["parallelism"].as_u64(), Some(16));
    assert_eq!(job["backoffLimit"].as_u64(), Some(0));
    let pod = &job["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    assert_eq!(pod["subdomain"], "homework");
    let service = kind(&all, "Service");
    assert_eq!(service["spec"]["clusterIP"], "None");
    assert_eq!(
        service["spec"]["publishNotReadyAddresses"].as_bool(),
        Some(true)
    );
    assert_eq!(
        service["spec"]["selector"],
        job["template"]["metadata"]["labels"]
    );
    assert_eq!(service["spec"]["ports"][0]["port"].as_u64(), Some(9100));
    let term =
        &pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(
        term["podAffinityTerm"]["topologyKey"],
        "kubernetes.io/hostname"
    );
    assert_eq!(
        term["podAffinityTerm"]["labelSelector"]["matchLabels"],
        job["template"]["metadata"]["labels"]
    );
    let c = container(&all);
    let env: Vec<(String, String)> = c["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|e| Some((str_of(&e["name"]).into(), e.get("value")?.as_str()?.into())))
        .collect();
    assert!(
        env.contains(&("WLRUN_SHARDS".into(), "16".into())),
        "{env:?}"
    );
    assert!(
        env.contains(&("WLRUN_BARRIER".into(), "homework-0.homework:9100".into())),
        "{env:?}"
    );
    assert_eq!(
        strings(&c["args"]),
        [
            "run",
            "workloads/pgbench-timeseries.wl",
            "--out",
            "/results/shard-$(JOB_COMPLETION_INDEX)",
            "--param",
            "hosts=40",
            "--metrics-listen",
            "0.0.0.0:9464",
            "--metrics-linger",
            "30s"
        ]
    );
    assert_eq!(c["resources"]["requests"]["cpu"], "2");
    assert_eq!(c["resources"]["requests"]["memory"], "2Gi");
    // The memory limit is the request unless told; no CPU limit unless told.
    assert_eq!(c["resources"]["limits"]["memory"], "2Gi");
    assert!(c["resources"]["limits"].get("cpu").is_none());
    assert_eq!(job["activeDeadlineSeconds"].as_u64(), Some(5400));
    assert_eq!(job["ttlSecondsAfterFinished"].as_u64(), Some(86_400));
    validate(&yaml);
}

/// A workload in `bench/` importing a schema from `../lib/cpu.wl`, drawing a column from a
/// CSV in `bench/data/`, and replaying a binary row file made from the imported schema: runnable against the `null` sink, so the pod's
/// command can be run for real.
fn runnable_fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::create_dir_all(p.join("bench/data")).unwrap();
    std::fs::create_dir_all(p.join("lib/data")).unwrap();
    std::fs::write(p.join("bench/data/sites.csv"), "site\nalpha\nbeta\ngamma\n").unwrap();
    std::fs::write(
        p.join("lib/cpu.wl"),
        r#"
schema cpu {
  series host: symbol = format("h%d", n) for n in 0..3
  field v: long = uniform(0, 100)
  timestamp ts = every 1s from 2024-01-01T00:00:00Z for 20s
}
"#,
    )
    .unwrap();
    std::fs::write(
        p.join("bench/w.wl"),
        r#"
workload fixture { seed 7 }
import "../lib/cpu.wl" as lib
target sink { null }
schema sited {
  series host: symbol = format("h%d", n) for n in 0..3
  field site: varchar = csv("data/sites.csv", "site")
  timestamp ts = every 1s from 2024-01-01T00:00:00Z for 20s
}
ingest load { into sink via null  rows lib.cpu  batch 10 rows }
ingest sites { into sink via null  rows sited  batch 10 rows }
ingest replay { into sink via null  table "cpu"  rows from file "data/rows.wlb"  batch 10 rows }
"#,
    )
    .unwrap();
    let gen = wlrun(
        p,
        &[
            "gen",
            "lib/cpu.wl",
            "--format",
            "bin",
            "-o",
            "bench/data/rows.wlb",
        ],
        &[],
    );
    assert!(
        gen.status.success(),
        "{}",
        String::from_utf8_lossy(&gen.stderr)
    );
    dir
}

#[test]
fn the_files_keep_their_places_relative_to_the_current_directory() {
    let dir = runnable_fixture();
    let p = dir.path();
    let (yaml, _) = manifests(
        p,
        &[
            "bench/w.wl",
            "--shards",
            "2",
            "--image",
            "w:1",
            "--deadline",
            "1h",
        ],
        &[],
    );
    let all = docs(&yaml);
    let mut files = projected_files(&all);
    files.sort();
    let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "bench/data/rows.wlb",
            "bench/data/sites.csv",
            "bench/w.wl",
            "lib/cpu.wl"
        ]
    );
    for (path, bytes) in &files {
        assert!(std::fs::read(p.join(path)).unwrap() == *bytes, "{path}");
    }
    // The binary file is binaryData; the text files are data.
    let cm = kind(&all, "ConfigMap");
    assert_eq!(cm["binaryData"].as_mapping().unwrap().len(), 1);
    assert_eq!(cm["data"].as_mapping().unwrap().len(), 3);
    assert_eq!(container(&all)["workingDir"], "/workload");
    assert_eq!(strings(&container(&all)["args"])[1], "bench/w.wl");
    validate(&yaml);

    // From inside bench/, the pod works in /workload/bench and names the file as typed; an
    // absolute path is taken relative to the current directory.
    let bench = p.join("bench");
    let abs = bench.join("w.wl");
    for file in ["w.wl", abs.to_str().unwrap()] {
        let (yaml, _) = manifests(
            &bench,
            &[file, "--shards", "2", "--image", "w:1", "--deadline", "1h"],
            &[],
        );
        let all = docs(&yaml);
        assert_eq!(container(&all)["workingDir"], "/workload/bench");
        assert_eq!(strings(&container(&all)["args"])[1], "w.wl");
        let mut again = projected_files(&all);
        again.sort();
        assert_eq!(again, files);
    }
}

#[test]
fn tls_files_and_environment_values_go_into_the_secret() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::create_dir_all(p.join("certs")).unwrap();
    for (name, text) in [
        (
            "certs/ca.pem",
            "-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n",
        ),
        (
            "certs/client.pem",
            "-----BEGIN CERTIFICATE-----\nme\n-----END CERTIFICATE-----\n",
        ),
        (
            "certs/client.key",
            "-----BEGIN PRIVATE KEY-----\nk\n-----END PRIVATE KEY-----\n",
        ),
    ] {
        std::fs::write(p.join(name), text).unwrap();
    }
    std::fs::write(
        p.join("w.wl"),
        r#"
workload tls { seed 1 }
schema cpu {
  series host: symbol = format("h%d", n) for n in 0..4
  field v: long = uniform(0, 9)
  timestamp ts = every 1s from 2024-01-01T00:00:00Z for 10s
}
target db {
  qwp "wss://db.example.com:9000" {
    tls_ca "certs/ca.pem"  tls_cert "certs/client.pem"  tls_key "certs/client.key"
    password env("WL_K8S_TEST_PASSWORD")
  }
}
ingest load { into db via qwp  rows cpu }
"#,
    )
    .unwrap();
    let (yaml, stderr) = manifests(
        p,
        &[
            "w.wl",
            "--shards",
            "3",
            "--image",
            "w:1",
            "--deadline",
            "1h",
        ],
        &[("WL_K8S_TEST_PASSWORD", "hunter2")],
    );
    assert!(
        stderr.contains("carries the values of WL_K8S_TEST_PASSWORD"),
        "{stderr}"
    );
    assert!(
        !yaml.contains("hunter2"),
        "the value is base64 in the Secret"
    );
    let all = docs(&yaml);
    let secret = kind(&all, "Secret");
    let files = projected_files(&all);
    for name in ["certs/ca.pem", "certs/client.pem", "certs/client.key"] {
        let (_, bytes) = files.iter().find(|(p, _)| p == name).unwrap();
        assert_eq!(*bytes, std::fs::read(p.join(name)).unwrap());
        // Not in the ConfigMap.
        assert!(kind(&all, "ConfigMap")["data"].as_mapping().unwrap().len() == 1);
    }
    let c = container(&all);
    let from = c["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "WL_K8S_TEST_PASSWORD")
        .expect("the variable is set in the pod");
    let key = str_of(&from["valueFrom"]["secretKeyRef"]["key"]);
    let value = base64::engine::general_purpose::STANDARD
        .decode(str_of(&secret["data"][key]))
        .unwrap();
    assert_eq!(value, b"hunter2");
    // The barrier token, from the Secret's own key, never in clear.
    let from = c["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "WLRUN_BARRIER_TOKEN")
        .expect("the pods say the barrier token");
    assert_eq!(
        str_of(&from["valueFrom"]["secretKeyRef"]["key"]),
        "barrier-token"
    );
    let token = base64::engine::general_purpose::STANDARD
        .decode(str_of(&secret["data"]["barrier-token"]))
        .unwrap();
    assert_eq!(token, TOKEN.as_bytes());
    assert!(!yaml.contains(TOKEN) && !stderr.contains(TOKEN));
    validate(&yaml);

    // Without a token here, each manifest gets a fresh one: 32 random bytes in hex.
    let fresh = |_: ()| {
        let mut all = vec!["k8s", "w.wl", "--shards", "3", "--image", "w:1"];
        all.extend(["--deadline", "1h"]);
        let mut c = Command::new(env!("CARGO_BIN_EXE_wlrun"));
        let out = c
            .current_dir(p)
            .args(&all)
            .env_remove("WLRUN_BARRIER_TOKEN")
            .output();
        let docs = docs(&String::from_utf8(out.unwrap().stdout).unwrap());
        let secret = kind(&docs, "Secret");
        let t = base64::engine::general_purpose::STANDARD
            .decode(str_of(&secret["data"]["barrier-token"]))
            .unwrap();
        String::from_utf8(t).unwrap()
    };
    let (a, b) = (fresh(()), fresh(()));
    assert!(
        a.len() == 64 && a.chars().all(|c| c.is_ascii_hexdigit()),
        "{a}"
    );
    assert_ne!(a, b);

    // Without the variable here, the pods get none and the person is told.
    let (yaml, stderr) = manifests(
        p,
        &[
            "w.wl",
            "--shards",
            "3",
            "--image",
            "w:1",
            "--deadline",
            "1h",
        ],
        &[],
    );
    assert!(
        stderr.contains("$WL_K8S_TEST_PASSWORD, which is not set here"),
        "{stderr}"
    );
    let all = docs(&yaml);
    assert!(all
        .iter()
        .all(|d| d["kind"] != "Secret" || d["data"].as_mapping().unwrap().len() == 4));
    let env = &container(&all)["env"];
    assert!(env
        .as_sequence()
        .unwrap()
        .iter()
        .all(|e| e["name"] != "WL_K8S_TEST_PASSWORD"));
    validate(&yaml);
}

#[test]
fn a_results_claim_replaces_lingering_with_a_collector_pod() {
    let (yaml, _) = manifests(
        &repo(),
        &[
            "workloads/ksql-pull.wl",
            "--shards",
            "2",
            "--image",
            "w:1",
            "--results-claim",
            "wlrun-results",
        ],
        &[],
    );
    let all = docs(&yaml);
    let c = container(&all);
    assert_eq!(strings(&c["command"]), ["wlrun"]);
    assert_eq!(
        strings(&c["args"])[3],
        "/results/ksql-pull/shard-$(JOB_COMPLETION_INDEX)"
    );
    // Ready once the run has started: its directory is on the claim.
    assert_eq!(
        strings(&c["readinessProbe"]["exec"]["command"]),
        [
            "sh",
            "-c",
            "test -e /results/ksql-pull/shard-\"$JOB_COMPLETION_INDEX\"/shard.json"
        ]
    );
    // No linger in the deadline: 5 s at 5,000/s, one phase.
    assert_eq!(
        kind(&all, "Job")["spec"]["activeDeadlineSeconds"].as_u64(),
        Some(300 + 60 + 7)
    );
    let pod = kind(&all, "Pod");
    assert_eq!(pod["metadata"]["name"], "ksql-pull-results");
    assert_eq!(
        pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
        "wlrun-results"
    );
    validate(&yaml);

    // --files-claim: the files come from a claim, and no ConfigMap is made.
    let (yaml, stderr) = manifests(
        &repo(),
        &[
            "workloads/ksql-pull.wl",
            "--shards",
            "2",
            "--image",
            "w:1",
            "--files-claim",
            "wl-inputs",
        ],
        &[],
    );
    assert!(stderr.contains("workloads/ksql-pull.rhai"), "{stderr}");
    let all = docs(&yaml);
    assert!(all.iter().all(|d| d["kind"] != "ConfigMap"));
    validate(&yaml);
}

#[test]
fn inputs_over_the_configmap_limit_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let workload = |csvs: &[&str]| {
        let mut text = String::from("workload big { seed 1 }\ntarget sink { null }\n");
        for (i, csv) in csvs.iter().enumerate() {
            text += &format!(
                "schema s{i} {{ series host: symbol = format(\"h%d\", n) for n in 0..2  \
                 field site: varchar = csv(\"{csv}\", \"hostname\")  timestamp ts = every 1s from \
                 2024-01-01T00:00:00Z for 2s }}\ningest l{i} {{ into sink via null  rows s{i} }}\n"
            );
        }
        std::fs::write(p.join("w.wl"), text).unwrap();
    };
    let csv = |name: &str, rows: usize| {
        let mut s = String::from("hostname\n");
        while s.len() < rows {
            s += "host_000000000000\n";
        }
        std::fs::write(p.join(name), s).unwrap();
    };
    // One file over the limit.
    csv("hosts.csv", 1_100_000);
    workload(&["hosts.csv"]);
    let out = wlrun(
        p,
        &[
            "k8s",
            "w.wl",
            "--shards",
            "2",
            "--image",
            "w:1",
            "--deadline",
            "1h",
        ],
        &[],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty());
    assert!(err.contains("`hosts.csv` (1,100,0"), "{err}");
    assert!(
        err.contains("1,048,576 bytes Kubernetes allows in one ConfigMap in total"),
        "{err}"
    );
    assert!(err.contains("--files-claim"), "{err}");

    // Two files under it, together over: both named, the total said.
    csv("a.csv", 600_000);
    csv("b.csv", 500_000);
    workload(&["a.csv", "b.csv"]);
    let out = wlrun(
        p,
        &[
            "k8s",
            "w.wl",
            "--shards",
            "2",
            "--image",
            "w:1",
            "--deadline",
            "1h",
        ],
        &[],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`a.csv` (600,0") && err.contains("`b.csv` (500,0"),
        "{err}"
    );
    assert!(err.contains("in total"), "{err}");

    // On a claim, size is the claim's business.
    let out = wlrun(
        p,
        &[
            "k8s",
            "w.wl",
            "--shards",
            "2",
            "--image",
            "w:1",
            "--files-claim",
            "inputs",
            "--deadline",
            "1h",
        ],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn what_shards_cannot_coordinate_or_share_is_refused() {
    for (file, says) in [
        (
            "workloads/ksql-pull-max.wl",
            "cannot search for the highest rate of `pull_max_rate`",
        ),
        (
            "workloads/questdb-fresh-max.wl",
            "cannot search for the highest row rate of `fresh_max`",
        ),
        ("tests/golden/plan/stages.wl", "cannot run the stages of"),
        (
            "tests/golden/plan/concurrent.wl",
            "cannot run the concurrent group",
        ),
        (
            "examples/quickstart.wl",
            "`local.sqlite` is SQLite, a file in each pod",
        ),
    ] {
        let err = refused(file);
        assert!(err.contains(says), "{file}: {err}");
    }
}

#[test]
fn bad_options_are_usage_errors_before_anything_is_printed() {
    for (args, says) in [
        (&["--name", "Bad_Name"][..], "not a DNS label"),
        (&["--cpu", "2 cores"][..], "not a Kubernetes quantity"),
        (&["--namespace", "Bench.NS"][..], "not a DNS label"),
        (
            &["--results-claim", "r", "--linger", "5"][..],
            "cannot be used with",
        ),
        (&["--deadline", "0s"][..], "--deadline `0s` is out of range"),
        (
            &["--deadline", "soon"][..],
            "--deadline `soon` is not a duration",
        ),
        (
            &["--memory-limit", "512Mi"][..],
            "--memory-limit 512Mi is less than the request (1Gi)",
        ),
        (
            &["--cpu", "2", "--cpu-limit", "1500m"][..],
            "--cpu-limit 1500m is less than the request (2)",
        ),
        (&["--cpu-limit", "lots"][..], "not a Kubernetes quantity"),
        (
            &["--node-selector", "pool"][..],
            "--node-selector `pool` is not key=value",
        ),
        (
            &["--toleration", "dedicated=loaders"][..],
            "--toleration `dedicated=loaders` names no effect",
        ),
        (
            &["--toleration", "dedicated:NoSchedul"][..],
            "`NoSchedul` is not a taint effect",
        ),
        (
            &["--image-pull-secret", "Reg_Cred"][..],
            "--image-pull-secret `Reg_Cred` is not a DNS subdomain",
        ),
        (
            &["--service-account", "Loader"][..],
            "--service-account `Loader` is not a DNS subdomain",
        ),
        (
            &["--metrics-port", "7471"][..],
            "the metrics port and the barrier port are both 7471",
        ),
        (&["--metrics-port", "0"][..], "--metrics-port"),
        (
            &["--ttl-after-finished", "forever"][..],
            "--ttl-after-finished",
        ),
    ] {
        let mut all = vec![
            "k8s",
            "workloads/ksql-pull.wl",
            "--shards",
            "2",
            "--image",
            "w:1",
        ];
        all.extend_from_slice(args);
        let out = wlrun(&repo(), &all, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(out.stdout.is_empty());
    }
}

/// Lays the projected volume out under `pod/workload`, makes `pod/results`, and gives the
/// container's command, arguments, working directory and environment with `/workload` and
/// `/results` moved there and `$(JOB_COMPLETION_INDEX)` expanded, as the kubelet would.
fn pod_command(docs: &[Value], pod: &Path, index: u32) -> Command {
    for (path, bytes) in projected_files(docs) {
        let at = pod.join("workload").join(path);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, bytes).unwrap();
    }
    std::fs::create_dir_all(pod.join("results")).unwrap();
    let local = |s: &str| {
        s.replace("/workload", &pod.join("workload").display().to_string())
            .replace("/results", &pod.join("results").display().to_string())
            .replace("$(JOB_COMPLETION_INDEX)", &index.to_string())
    };
    let c = container(docs);
    let argv: Vec<String> = strings(&c["command"])
        .iter()
        .chain(strings(&c["args"]).iter())
        .map(|s| local(s))
        .collect();
    // Metrics on loopback and a free port, with no linger: nothing scrapes them here.
    let mut argv = argv;
    for k in 1..argv.len() {
        match argv[k - 1].as_str() {
            "--metrics-listen" => argv[k] = "127.0.0.1:0".into(),
            "--metrics-linger" => argv[k] = "0s".into(),
            _ => {}
        }
    }
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .current_dir(local(str_of(&c["workingDir"])))
        .env("JOB_COMPLETION_INDEX", index.to_string());
    for e in c["env"].as_sequence().unwrap() {
        let name = str_of(&e["name"]);
        if let Some(v) = e.get("value") {
            cmd.env(name, str_of(v));
        }
    }
    // Shard 0's stable host name exists only in the cluster: here the barrier is on loopback.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    cmd.env("WLRUN_BARRIER", format!("127.0.0.1:{port}"));
    cmd
}

/// Whether the container's readiness probe passes in `pod` for shard `index`, run as the
/// kubelet would (in the container's environment, /results moved into `pod`).
fn ready(docs: &[Value], pod: &Path, index: u32) -> bool {
    let probe = strings(&container(docs)["readinessProbe"]["exec"]["command"]);
    let local: Vec<String> = probe
        .iter()
        .map(|s| s.replace("/results", &pod.join("results").display().to_string()))
        .collect();
    Command::new(&local[0])
        .args(&local[1..])
        .env("JOB_COMPLETION_INDEX", index.to_string())
        .status()
        .unwrap()
        .success()
}

/// A directory whose `wlrun` is `target`, put first on PATH.
fn path_with_wlrun(dir: &Path, target: &Path) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(target, bin.join("wlrun")).unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn the_pod_runs_its_command_on_the_files_where_the_manifest_puts_them() {
    let dir = runnable_fixture();
    let (yaml, _) = manifests(
        dir.path(),
        &[
            "bench/w.wl",
            "--shards",
            "1",
            "--image",
            "w:1",
            "--linger",
            "0",
            "--deadline",
            "1h",
        ],
        &[],
    );
    let pod = tempfile::tempdir().unwrap();
    let path = path_with_wlrun(pod.path(), Path::new(env!("CARGO_BIN_EXE_wlrun")));
    let out = pod_command(&docs(&yaml), pod.path(), 0)
        .env("PATH", path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let results = pod.path().join("results");
    assert_eq!(
        std::fs::read_to_string(results.join("exit-code")).unwrap(),
        "0\n"
    );
    // The run is over: not ready any more, though its directory is there.
    assert!(results.join("shard-0/shard.json").exists());
    assert!(!ready(&docs(&yaml), pod.path(), 0));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(results.join("shard-0/report.json")).unwrap())
            .unwrap();
    // Each phase sent its 3 hosts x 20 timestamps: generated from the imported schema, with
    // the CSV's column, and replayed from the binary file.
    let phases = report["cells"][0]["phases"].as_array().unwrap();
    let got: Vec<(&str, &str, u64)> = phases
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap(),
                p["status"].as_str().unwrap(),
                p["rows_sent"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("load", "ok", 60),
            ("sites", "ok", 60),
            ("replay", "ok", 60)
        ]
    );
}

/// A stand-in for wlrun: starts its run directory (`--out`, its 4th argument) with a
/// `shard.json` as wlrun does, records its arguments, exits with `FAKE_EXIT` at once, or
/// (without it) waits for SIGTERM and exits 143 as wlrun does.
const FAKE_WLRUN: &str = r#"#!/bin/sh
trap 'echo term > "$FAKE_DIR/term"; exit 143' TERM
mkdir -p "$4" && echo '{}' > "$4/shard.json"
echo "$@" > "$FAKE_DIR/args"
if [ -n "$FAKE_EXIT" ]; then exit "$FAKE_EXIT"; fi
sleep 60 &
wait $!
"#;

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "waited for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_shard_script_passes_sigterm_on_keeps_the_status_and_lingers() {
    let (yaml, _) = manifests(
        &repo(),
        &[
            "workloads/ksql-pull.wl",
            "--shards",
            "2",
            "--image",
            "w:1",
            "--linger",
            "60",
        ],
        &[],
    );
    let all = docs(&yaml);
    let pod = tempfile::tempdir().unwrap();
    let fake = pod.path().join("fake-wlrun");
    std::fs::write(&fake, FAKE_WLRUN).unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = path_with_wlrun(pod.path(), &fake);
    let exit_file = pod.path().join("results/exit-code");
    // The shell's own `kill`: no procps needed.
    let kill = |pid: u32| {
        let ok = Command::new("sh")
            .args(["-c", &format!("kill -TERM {pid}")])
            .status()
            .unwrap();
        assert!(ok.success());
    };

    // The run ends with 3: the status is recorded, the pod lingers, SIGTERM ends the wait
    // with the run's status.
    let mut sh = pod_command(&all, pod.path(), 1)
        .env("PATH", &path)
        .env("FAKE_DIR", pod.path())
        .env("FAKE_EXIT", "3")
        .spawn()
        .unwrap();
    wait_for("the exit status", || exit_file.exists());
    assert_eq!(std::fs::read_to_string(&exit_file).unwrap(), "3\n");
    // Lingering is not ready.
    assert!(!ready(&all, pod.path(), 1));
    let args = std::fs::read_to_string(pod.path().join("args")).unwrap();
    assert!(
        args.starts_with("run workloads/ksql-pull.wl --out "),
        "{args}"
    );
    assert!(args.contains("/results/shard-1 --metrics-listen"), "{args}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(sh.try_wait().unwrap().is_none(), "lingers");
    kill(sh.id());
    wait_for("the script's end", || sh.try_wait().unwrap().is_some());
    assert_eq!(sh.wait().unwrap().code(), Some(3));

    // Stopped while running: wlrun gets the SIGTERM, and the script ends as it did, at once.
    std::fs::remove_file(&exit_file).unwrap();
    std::fs::remove_file(pod.path().join("args")).unwrap();
    std::fs::remove_dir_all(pod.path().join("results/shard-1")).unwrap();
    assert!(!ready(&all, pod.path(), 1), "not started");
    let mut sh = pod_command(&all, pod.path(), 1)
        .env("PATH", &path)
        .env("FAKE_DIR", pod.path())
        .spawn()
        .unwrap();
    wait_for("the run's start", || pod.path().join("args").exists());
    // Running: ready.
    assert!(ready(&all, pod.path(), 1));
    assert!(!ready(&all, pod.path(), 0), "another shard's directory");
    // The script sets its trap right after starting wlrun.
    std::thread::sleep(Duration::from_millis(500));
    let stopped = Instant::now();
    kill(sh.id());
    wait_for("the script's end", || sh.try_wait().unwrap().is_some());
    assert_eq!(sh.wait().unwrap().code(), Some(143));
    assert!(stopped.elapsed() < Duration::from_secs(10));
    assert_eq!(
        std::fs::read_to_string(pod.path().join("term")).unwrap(),
        "term\n"
    );
    assert_eq!(std::fs::read_to_string(&exit_file).unwrap(), "143\n");
}

#[test]
fn the_job_has_a_deadline_a_ttl_limits_and_runs_where_it_is_told() {
    let (yaml, stderr) = manifests(
        &repo(),
        &[
            "workloads/ksql-pull.wl",
            "--shards",
            "3",
            "--image",
            "registry.example/wlrun:0.1.0",
            "--linger",
            "600",
            "--ttl-after-finished",
            "3600",
            "--memory",
            "512Mi",
            "--memory-limit",
            "2Gi",
            "--cpu-limit",
            "2",
            "--node-selector",
            "pool=loaders",
            "--node-selector",
            "kubernetes.io/arch=amd64",
            "--toleration",
            "dedicated=loaders:NoSchedule",
            "--toleration",
            "example.com/bench:NoExecute",
            "--image-pull-secret",
            "regcred",
            "--image-pull-secret",
            "mirror.creds",
            "--service-account",
            "loader",
        ],
        &[],
    );
    // 5 s at 5,000/s: 300 s to start, 60 s for the phase, 5 s x 1.25 rounded up, and the
    // 600 s linger.
    assert!(
        stderr.contains("the Job's deadline is 967 s (16m7s) (derived from the plan"),
        "{stderr}"
    );
    let all = docs(&yaml);
    let job = &kind(&all, "Job")["spec"];
    assert_eq!(job["activeDeadlineSeconds"].as_u64(), Some(967));
    assert_eq!(job["ttlSecondsAfterFinished"].as_u64(), Some(3600));
    let pod = &job["template"]["spec"];
    assert_eq!(pod["nodeSelector"]["pool"], "loaders");
    assert_eq!(pod["nodeSelector"]["kubernetes.io/arch"], "amd64");
    let tolerations = pod["tolerations"].as_sequence().unwrap();
    assert_eq!(tolerations.len(), 2);
    assert_eq!(tolerations[0]["key"], "dedicated");
    assert_eq!(tolerations[0]["operator"], "Equal");
    assert_eq!(tolerations[0]["value"], "loaders");
    assert_eq!(tolerations[0]["effect"], "NoSchedule");
    assert_eq!(tolerations[1]["operator"], "Exists");
    assert!(tolerations[1].get("value").is_none());
    assert_eq!(pod["imagePullSecrets"][0]["name"], "regcred");
    assert_eq!(pod["imagePullSecrets"][1]["name"], "mirror.creds");
    assert_eq!(pod["serviceAccountName"], "loader");
    // A chosen account keeps its token; without one, none is mounted.
    assert!(pod.get("automountServiceAccountToken").is_none());
    let c = container(&all);
    assert_eq!(c["resources"]["requests"]["memory"], "512Mi");
    assert_eq!(c["resources"]["limits"]["memory"], "2Gi");
    assert_eq!(c["resources"]["limits"]["cpu"], "2");
    assert_eq!(c["terminationMessagePolicy"], "FallbackToLogsOnError");
    validate(&yaml);

    // --deadline wins over the plan's; the default account gets no token.
    let (yaml, stderr) = manifests(
        &repo(),
        &[
            "workloads/ksql-pull.wl",
            "--shards",
            "3",
            "--image",
            "w:1",
            "--deadline",
            "1h30m",
        ],
        &[],
    );
    assert!(
        stderr.contains("the Job's deadline is 5400 s (1h30m) (--deadline)"),
        "{stderr}"
    );
    let all = docs(&yaml);
    let job = &kind(&all, "Job")["spec"];
    assert_eq!(job["activeDeadlineSeconds"].as_u64(), Some(5400));
    assert_eq!(
        job["template"]["spec"]["automountServiceAccountToken"].as_bool(),
        Some(false)
    );
    assert!(job["template"]["spec"].get("nodeSelector").is_none());
    validate(&yaml);

    // Shorter than the plan allows for: taken, and said.
    let (yaml, stderr) = manifests(
        &repo(),
        &[
            "workloads/ksql-pull.wl",
            "--shards",
            "3",
            "--image",
            "w:1",
            "--deadline",
            "10m",
        ],
        &[],
    );
    assert!(
        stderr.contains("note: --deadline is 600 s (10m), less than the 3967 s (1h6m7s)"),
        "{stderr}"
    );
    assert_eq!(
        kind(&docs(&yaml), "Job")["spec"]["activeDeadlineSeconds"].as_u64(),
        Some(600)
    );
}

#[test]
fn a_workload_no_plan_can_bound_needs_a_deadline_and_is_told_which_phase() {
    for (file, says) in [
        (
            "workloads/pgbench-timeseries.wl",
            "phase `load` sends its rows as fast as the server takes them",
        ),
        (
            "workloads/questdb-queries.wl",
            "phase `queries` (cell queries.via=pg) runs 16000 instances in a closed loop",
        ),
    ] {
        let err = refused(file);
        assert!(err.contains(says), "{file}: {err}");
        assert!(err.contains("pass --deadline DURATION"), "{file}: {err}");
    }
}

#[test]
fn metrics_are_announced_and_served_on_the_port_asked() {
    let annotations = |all: &[Value]| {
        let meta = &kind(all, "Job")["spec"]["template"]["metadata"];
        ["scrape", "port", "path"]
            .map(|k| str_of(&meta["annotations"][format!("prometheus.io/{k}")]).to_string())
    };
    let metrics_port = |all: &[Value]| {
        container(all)["ports"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "metrics")
            .and_then(|p| p["containerPort"].as_u64())
    };
    let base = ["workloads/ksql-pull.wl", "--shards", "2", "--image", "w:1"];
    let (yaml, _) = manifests(&repo(), &base, &[]);
    let all = docs(&yaml);
    assert_eq!(annotations(&all), ["true", "9464", "/metrics"]);
    assert_eq!(metrics_port(&all), Some(9464));
    let args = strings(&container(&all)["args"]).join(" ");
    assert!(
        args.contains("--metrics-listen 0.0.0.0:9464 --metrics-linger 30s"),
        "{args}"
    );

    let mut args = base.to_vec();
    args.extend(["--metrics-port", "9500"]);
    let (yaml, _) = manifests(&repo(), &args, &[]);
    let all = docs(&yaml);
    assert_eq!(annotations(&all), ["true", "9500", "/metrics"]);
    assert_eq!(metrics_port(&all), Some(9500));
    let run = strings(&container(&all)["args"]).join(" ");
    assert!(run.contains("--metrics-listen 0.0.0.0:9500 "), "{run}");
    validate(&yaml);
}

/// Every shipped workload that runs as shards, with a spread of the Job's options, against
/// the API schema in one go.
#[test]
fn shipped_workloads_validate_with_the_jobs_options() {
    let mut all = String::new();
    for (i, file) in [
        "workloads/ksql-pull.wl",
        "workloads/pgbench-timeseries.wl",
        "workloads/questdb-ingest.wl",
        "workloads/questdb-queries.wl",
        "workloads/tsbs-iot-postgres.wl",
        "workloads/tsbs-postgres.wl",
        "workloads/ycsb-postgres.wl",
    ]
    .into_iter()
    .enumerate()
    {
        let mut args = vec![
            file,
            "--shards",
            "8",
            "--image",
            "registry.example/wlrun:0.1.0",
            "--deadline",
            "3h",
            "--node-selector",
            "pool=loaders",
            "--toleration",
            "dedicated=loaders:NoSchedule",
            "--toleration",
            "bench:NoExecute",
            "--image-pull-secret",
            "regcred",
        ];
        // Every other one: a claim, a CPU limit, an account, metrics served.
        if i % 2 == 1 {
            args.extend([
                "--results-claim",
                "wlrun-results",
                "--cpu-limit",
                "4",
                "--memory-limit",
                "4Gi",
                "--service-account",
                "loader",
                "--metrics-port",
                "9100",
                "--ttl-after-finished",
                "0",
            ]);
        }
        let (yaml, _) = manifests(&repo(), &args, &[]);
        all.push_str(&yaml);
    }
    validate(&all);
}
