//! TLS end to end through the `wlrun` binary, as a user points it at a TLS server: `https://`
//! request runs and ILP/HTTP, `wss://` QWP ingest and queries, `tcps://` ILP/TCP.
//!
//! The servers: the in-test plain servers (HTTP, QWP ingest, QWP queries, an ILP/TCP sink)
//! behind the TLS front of tests/common/tls.rs, and Debian's nginx serving HTTPS itself; the
//! certificates are a PKI made for the test (tests/common/tls.rs). Each secure run is checked
//! against what the server received (the same rows as the same run in clear) and against the
//! phase's `connecting` in report.json (handshakes, verification, socket bytes). Then the
//! failures a user meets: an unknown or wrong CA, a wrong name, an expired certificate, a
//! plain client on a TLS port and a TLS client on a plain one, a server wanting a client
//! certificate; each fails fast with the endpoint's name and an actionable reason. And the
//! client key never lands in a run directory; reconnects resume their TLS sessions.
//!
//! nginx and PostgreSQL (for the QWP query server) are skipped when missing, except under
//! CI=true (tests/common/servers.rs).

#[path = "common/cli.rs"]
mod cli;
#[path = "common/http_server.rs"]
mod http_server;
#[path = "common/nginx.rs"]
mod nginx;
#[path = "common/qwp_ingest_server.rs"]
mod qwp_ingest_server;
#[path = "common/qwp_query_server.rs"]
mod qwp_query_server;
#[path = "common/servers.rs"]
mod servers;
#[path = "common/tls.rs"]
mod tls;

use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use http_server::{Behaviour, ServerHandle};
use qwp_ingest_server::{same_tables, QwpServer};
use tls::{Pki, Server, TlsFront};

/// Generous, so that a failure that waits for a timeout shows as slow rather than passing.
const TIMEOUT: &str = "20s";
/// How fast a refused handshake must fail the whole run (process start included): far below
/// `TIMEOUT`, so no failure here may wait for one.
const FAST: Duration = Duration::from_secs(8);

// ------------------------------------------------------------------------------------------
// Running wlrun
// ------------------------------------------------------------------------------------------

/// One `wlrun run w.wl` in its own directory.
struct Run {
    dir: tempfile::TempDir,
    wl: String,
    code: Option<i32>,
    /// The JSON report (`--json`), or Null when none was printed.
    report: Value,
    stdout: String,
    stderr: String,
    took: Duration,
}

fn run_args(wl: &str, args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), wl).unwrap();
    let mut all = vec!["run", "w.wl"];
    all.extend_from_slice(args);
    let started = Instant::now();
    let out: Output = cli::wlrun(dir.path(), &all);
    let took = started.elapsed();
    Run {
        dir,
        wl: wl.to_string(),
        code: out.status.code(),
        report: serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took,
    }
}

/// `wlrun run w.wl --json --quiet`.
fn run(wl: &str) -> Run {
    run_args(wl, &["--json", "--quiet"])
}

impl Run {
    fn phase(&self) -> &Value {
        &self.report["cells"][0]["phases"][0]
    }

    fn u(&self, field: &str) -> u64 {
        self.phase()[field]
            .as_u64()
            .unwrap_or_else(|| panic!("{field} is not a count\n{}", self.context()))
    }

    /// The phase's `connecting.tls`.
    fn tls(&self) -> &Value {
        let t = &self.phase()["connecting"]["tls"];
        assert!(t.is_object(), "no connecting.tls\n{}", self.context());
        t
    }

    fn context(&self) -> String {
        format!(
            "exit {:?} after {:?}\n--- phase\n{:#}\n--- stdout\n{}\n--- stderr\n{}\n--- workload\n{}",
            self.code,
            self.took,
            self.phase(),
            if self.report.is_null() {
                self.stdout.as_str()
            } else {
                ""
            },
            self.stderr,
            self.wl
        )
    }

    fn assert_ok(&self) {
        assert_eq!(self.code, Some(0), "{}", self.context());
    }

    /// Everything the run said: where a user looks for the reason.
    fn said(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }

    /// The run failed fast, saying `endpoint` and each of `reasons`, and could not measure
    /// (exit 3: the environment, not the server's figures, stopped it).
    fn assert_refused(&self, endpoint: &str, reasons: &[&str]) {
        assert_eq!(self.code, Some(3), "{}", self.context());
        assert!(
            self.took < FAST,
            "a refused handshake took {:?}\n{}",
            self.took,
            self.context()
        );
        let said = self.said();
        assert!(
            said.contains(endpoint),
            "the message names {endpoint}\n{}",
            self.context()
        );
        for r in reasons {
            assert!(
                said.contains(r),
                "the message says {r:?}\n{}",
                self.context()
            );
        }
    }
}

fn path_text(p: &Path) -> String {
    p.display().to_string()
}

// ------------------------------------------------------------------------------------------
// Workloads
// ------------------------------------------------------------------------------------------

/// A request run of `count` GETs of `path` over `connections` to `url`, its endpoint having
/// `options` besides its timeouts.
fn requests(url: &str, options: &str, path: &str, connections: u32, count: u32) -> String {
    format!(
        r#"workload w {{ seed 1 }}
target svc {{
  http "{url}" {{
    timeout {TIMEOUT}
    connect_timeout {TIMEOUT}
    {options}
  }}
}}
run r {{
  against svc.http
  request GET "{path}"
  connections {connections}
  count {count}
  expect status 200
}}
"#
    )
}

fn tls_ca(pki: &Pki) -> String {
    format!("tls_ca \"{}\"", path_text(&pki.ca()))
}

/// The TSBS-like rows of tests/ingest.rs: 5 hosts x 60 minutes, 300 rows.
fn ingest(kind: &str, url: &str, options: &str, workers: u32) -> String {
    format!(
        r#"workload t {{ seed 7 }}
param hosts = 5
target db {{ {kind} "{url}" {{ timeout {TIMEOUT}  connect_timeout {TIMEOUT}  {options} }} }}
schema cpu {{
  series hostname: symbol = format("host_%d", n) for n in 0..hosts
  tag    region: symbol   = pick(["eu-west-1", "us-east-1"]) per series
  field  usage: long      = walk(uniform(0.0, 100.0), normal(0.0, 1.0), clamp = 0..100)
  field  load: double     = uniform(0.0, 4.0)
  timestamp ts = every 1m from 2016-01-01T00:00:00Z for 1h
}}
ingest load {{ into db via {kind}  rows cpu  batch 40 rows  workers {workers} }}
"#
    )
}

// ------------------------------------------------------------------------------------------
// HTTPS request runs and ILP/HTTP
// ------------------------------------------------------------------------------------------

#[test]
fn https_request_runs_through_the_front_verify_chain_and_name() {
    let pki = Pki::new();
    let server = ServerHandle::start(Behaviour::ok().with_body("hello"));
    let front = TlsFront::start(server.addr, pki.server_config(Server::Valid, false));
    let url = format!("https://127.0.0.1:{}", front.port());
    let r = run(&requests(&url, &tls_ca(&pki), "/x", 2, 200));
    r.assert_ok();
    assert_eq!((r.u("ok"), r.u("failed")), (200, 0), "{}", r.context());
    assert_eq!(
        server.count(),
        200,
        "every request reached the server in clear"
    );
    assert!(server.requests().iter().all(|q| q.path == "/x"));
    // One keep-alive connection per worker; the second may resume the first's session.
    assert!(front.full_handshakes() >= 1);
    assert_eq!(
        front.full_handshakes() + front.resumed_handshakes(),
        2,
        "one keep-alive connection per worker"
    );
    assert!(front.failures().is_empty(), "{:?}", front.failures());

    let c = &r.phase()["connecting"];
    let t = r.tls();
    assert_eq!(c["opened"], 2, "{c:#}");
    assert_eq!(t["verification"], "chain and name", "{t:#}");
    assert_eq!(t["server_name"], "127.0.0.1", "{t:#}");
    assert!(
        t["trust"].as_str().unwrap().contains("ca.pem"),
        "the CA file is named: {t:#}"
    );
    assert_eq!(t["alpn"], "http/1.1", "{t:#}");
    assert_eq!(t["version"], "TLSv1.3", "{t:#}");
    assert_eq!(t["client_certificate"], false, "{t:#}");
    assert_two_handshakes(t);
    assert_eq!(c["handshake"]["count"], 2, "{c:#}");
    // Socket bytes count the TLS records (and the handshakes) below the HTTP bytes.
    let written = c["socket_bytes_written"].as_u64().unwrap();
    let read = c["socket_bytes_read"].as_u64().unwrap();
    assert!(
        written > r.u("bytes_sent"),
        "{written} socket bytes out\n{}",
        r.context()
    );
    assert!(
        read > 200 * "hello".len() as u64 + 2 * 1000,
        "{read} socket bytes in: {c:#}"
    );

    // The name to verify can be another than the URL's host.
    let r = run(&requests(
        &format!("https://localhost:{}", front.port()),
        &tls_ca(&pki),
        "/y",
        1,
        10,
    ));
    r.assert_ok();
    assert_eq!(r.tls()["server_name"], "localhost");
    let wrong = TlsFront::start(server.addr, pki.server_config(Server::WrongName, false));
    let options = format!(
        "{}\n    tls_server_name \"{}\"",
        tls_ca(&pki),
        tls::OTHER_NAME
    );
    let r = run(&requests(
        &format!("https://127.0.0.1:{}", wrong.port()),
        &options,
        "/z",
        1,
        10,
    ));
    r.assert_ok();
    assert_eq!(r.tls()["server_name"], tls::OTHER_NAME);
    assert_eq!(r.tls()["verification"], "chain and name");
}

#[test]
fn nginx_serves_https_request_runs_and_ilp_http() {
    let Some(program) = nginx::program() else {
        return servers::missing(nginx::MISSING);
    };
    let pki = Pki::new();
    let nginx = nginx::Nginx::start_tls(
        &program,
        &pki.server_cert(Server::Valid),
        &pki.server_key(Server::Valid),
    );
    let r = run(&requests(
        &nginx.https_url(),
        &tls_ca(&pki),
        "/query",
        4,
        400,
    ));
    r.assert_ok();
    assert_eq!(
        (r.u("ok"), r.u("failed")),
        (400, 0),
        "{}\n{}",
        r.context(),
        nginx.logs()
    );
    let t = r.tls();
    assert_eq!(r.phase()["connecting"]["opened"], 4, "keep-alive: {t:#}");
    assert_eq!(t["alpn"], "http/1.1");
    assert_eq!(t["verification"], "chain and name");

    let wl = ingest("ilp_http", &nginx.https_url(), &tls_ca(&pki), 2);
    let r = run(&wl);
    r.assert_ok();
    assert_eq!(r.u("rows_sent"), 300, "{}", r.context());
    assert_eq!(r.u("rows_acked"), 300, "{}", r.context());
    let t = r.tls();
    // One connection per worker; the second may resume the first's session.
    assert_two_handshakes(t);
    let c = &r.phase()["connecting"];
    assert!(
        c["socket_bytes_written"].as_u64().unwrap() > r.u("payload_bytes"),
        "TLS records and HTTP heads on top of the lines: {c:#}\n{}",
        r.context()
    );
}

// ------------------------------------------------------------------------------------------
// QWP over wss:// and ILP over tcps://
// ------------------------------------------------------------------------------------------

#[test]
fn qwp_ingest_over_wss_delivers_the_rows_of_ws() {
    let pki = Pki::new();
    let plain = QwpServer::start(qwp_ingest_server::Config::default());
    let behind = QwpServer::start(qwp_ingest_server::Config::default());
    let front = TlsFront::start(behind.addr(), pki.server_config(Server::Valid, false));
    let wl = |url: &str, options: &str| {
        format!(
            r#"workload qwp_ingest {{ seed 1 }}
import "std/tsbs/cpu-only.wl" as tsbs (hosts = 20, end = 2016-01-01T00:00:00Z + 10m)
target db {{ qwp "{url}" {{ connect_timeout {TIMEOUT}  {options} }} }}
ingest load {{ into db via qwp  rows tsbs.cpu  batch 100 rows  workers 2 }}
"#
        )
    };
    let clear = run(&wl(&plain.url(), ""));
    clear.assert_ok();
    let secure = run(&wl(
        &format!("wss://127.0.0.1:{}", front.port()),
        &tls_ca(&pki),
    ));
    secure.assert_ok();
    assert_eq!(secure.u("rows_acked"), 1200, "{}", secure.context());
    let a = plain
        .wait_rows("cpu", 1200, Duration::from_secs(5))
        .expect("the table over ws://");
    let b = behind
        .wait_rows("cpu", 1200, Duration::from_secs(5))
        .expect("the table over wss://");
    same_tables(&a, &b).unwrap_or_else(|e| panic!("wss:// rows differ from ws://: {e}"));
    assert!(behind.malformed().is_empty(), "{:?}", behind.malformed());
    assert!(front.full_handshakes() >= 1);
    assert_eq!(front.full_handshakes() + front.resumed_handshakes(), 2);

    let t = secure.tls();
    assert_two_handshakes(t);
    assert_eq!(t["alpn"], "http/1.1", "{t:#}");
    let c = &secure.phase()["connecting"];
    assert!(
        c["socket_bytes_written"].as_u64().unwrap() > secure.u("payload_bytes"),
        "{c:#}\n{}",
        secure.context()
    );
    // In clear there is no handshake and nothing about TLS.
    let c = &clear.phase()["connecting"];
    assert!(c["tls"].is_null() && c["handshake"].is_null(), "{c:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qwp_queries_over_wss_answer_as_over_ws() {
    let Some(pg) = servers::pg_server().await else {
        return;
    };
    let pki = Pki::new();
    let server = qwp_query_server::QwpQueryServer::start(
        Some(pg),
        qwp_query_server::Options {
            batch_rows: 64,
            ..qwp_query_server::Options::default()
        },
    )
    .await;
    let front = TlsFront::start(server.addr, pki.server_config(Server::Valid, false));
    // Both endpoints reach the same server, one in clear and one through the front: the
    // cross-check compares every instance's rows and checksum.
    let wl = format!(
        r#"workload w {{ seed 3 }}
target db {{
  qwp "{ws}" as plain {{ connect_timeout {TIMEOUT} }}
  qwp "wss://127.0.0.1:{port}" as secure {{ connect_timeout {TIMEOUT}  {ca} }}
}}
query series {{
  sql "SELECT k, md5(k::text) AS h, k * 0.5 AS f FROM generate_series(1, $1) AS k"
  bind $1 = uniform(100, 3000)
}}
run r {{ against db via [plain, secure]  queries series  count 20 per query  workers 2  check same results across endpoints }}
"#,
        ws = server.url(),
        port = front.port(),
        ca = tls_ca(&pki),
    );
    let r = tokio::task::spawn_blocking(move || run(&wl)).await.unwrap();
    r.assert_ok();
    let phases: Vec<&Value> = r.report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["phases"].as_array().into_iter().flatten())
        .collect();
    let checks: Vec<&Value> = phases
        .iter()
        .flat_map(|p| p["cross_checks"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(checks.len(), 1, "{:#}", r.report);
    assert!(
        checks[0]["compared"].as_u64().unwrap_or(0) > 0,
        "{:#}",
        checks[0]
    );
    assert_eq!(checks[0]["mismatches"], 0, "{:#}", checks[0]);
    let secure = phases
        .iter()
        .find(|p| p["endpoint"] == "db.secure")
        .unwrap_or_else(|| panic!("no db.secure phase: {:#}", r.report));
    assert_eq!(
        (secure["ok"].as_u64(), secure["failed"].as_u64()),
        (Some(20), Some(0))
    );
    assert_eq!(
        secure["connecting"]["tls"]["verification"], "chain and name",
        "{secure:#}"
    );
    // Two workers, two connections through the front; the second may resume the first's
    // session when it connects after that handshake ended, so only one must be full.
    assert!(
        front.full_handshakes() >= 1 && front.full_handshakes() + front.resumed_handshakes() >= 2,
        "the secure cell went through the front: {} full, {} resumed",
        front.full_handshakes(),
        front.resumed_handshakes()
    );
}

/// A TCP server that keeps what every connection sent (tests/ingest.rs's sink).
struct Sink {
    addr: SocketAddr,
    received: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Sink {
    fn start() -> Sink {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let rec = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let rec = rec.clone();
                std::thread::spawn(move || {
                    let mut data = Vec::new();
                    let _ = stream.read_to_end(&mut data);
                    rec.lock().unwrap().push(data);
                });
            }
        });
        Sink { addr, received }
    }

    /// The connections once `n` have ended (or what there is after 5 s), sorted.
    fn wait_for(&self, n: usize) -> Vec<Vec<u8>> {
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.received.lock().unwrap().len() < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut got = self.received.lock().unwrap().clone();
        got.sort();
        got
    }
}

#[test]
fn ilp_tcp_over_tcps_sends_the_bytes_of_tcp() {
    let pki = Pki::new();
    let plain = Sink::start();
    let behind = Sink::start();
    let front = TlsFront::start(behind.addr, pki.server_config(Server::Valid, false));
    let clear = run(&ingest("ilp_tcp", &format!("tcp://{}", plain.addr), "", 2));
    clear.assert_ok();
    let secure = run(&ingest(
        "ilp_tcp",
        &format!("tcps://127.0.0.1:{}", front.port()),
        &tls_ca(&pki),
        2,
    ));
    secure.assert_ok();
    assert_eq!(secure.u("rows_sent"), 300, "{}", secure.context());
    let (a, b) = (plain.wait_for(2), behind.wait_for(2));
    assert_eq!(b.len(), 2, "one connection per worker");
    assert!(
        a == b,
        "the lines over tcps:// differ from those over tcp://"
    );
    let payload: u64 = b.iter().map(|c| c.len() as u64).sum();
    assert_eq!(secure.u("payload_bytes"), payload);
    assert!(
        secure.u("socket_bytes") > payload,
        "socket bytes count the TLS records\n{}",
        secure.context()
    );
    let t = secure.tls();
    assert_two_handshakes(t);
    assert!(t["alpn"].is_null(), "no ALPN for ILP: {t:#}");
    assert!(front.full_handshakes() >= 1);
    assert_eq!(front.full_handshakes() + front.resumed_handshakes(), 2);
}

// ------------------------------------------------------------------------------------------
// Refusals
// ------------------------------------------------------------------------------------------

#[test]
fn refused_certificates_fail_fast_with_the_reason() {
    let pki = Pki::new();
    let server = ServerHandle::start(Behaviour::ok());
    let valid = TlsFront::start(server.addr, pki.server_config(Server::Valid, false));
    let wrong = TlsFront::start(server.addr, pki.server_config(Server::WrongName, false));
    let expired = TlsFront::start(server.addr, pki.server_config(Server::Expired, false));
    let https = |f: &TlsFront| format!("https://127.0.0.1:{}", f.port());
    let other_ca = format!("tls_ca \"{}\"", path_text(&pki.other_ca()));
    let cases: [(&str, String, &str, &[&str]); 4] = [
        (
            "no tls_ca: the system's store does not know the test CA",
            https(&valid),
            "",
            &[
                "not signed by a CA trusted here",
                "system's trust store",
                "tls_ca",
            ],
        ),
        (
            "the wrong CA",
            https(&valid),
            &other_ca,
            &["not signed by a CA trusted here", "other-ca.pem"],
        ),
        (
            "a certificate for another name",
            https(&wrong),
            &tls_ca(&pki),
            &[
                "not valid for `127.0.0.1`",
                tls::OTHER_NAME,
                "tls_server_name",
            ],
        ),
        (
            "an expired certificate",
            https(&expired),
            &tls_ca(&pki),
            &["expired"],
        ),
    ];
    for (what, url, options, reasons) in cases {
        let r = run(&requests(&url, options, "/", 2, 10));
        eprintln!("{what}: {}", r.said());
        r.assert_refused("svc.http", reasons);
    }
    assert_eq!(server.count(), 0, "no request got through");
    assert_eq!(valid.full_handshakes() + wrong.full_handshakes(), 0);
}

/// A plain server that reads what a connection sends first, answers `answer` (nothing when
/// empty) and closes: what HTTP servers (nginx, hyper: 400) and line-protocol servers (a
/// parse error: close) do with the bytes of a TLS ClientHello.
struct Refuser {
    addr: SocketAddr,
}

impl Refuser {
    fn start(answer: &'static [u8]) -> Refuser {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf);
                let _ = std::io::Write::write_all(&mut stream, answer);
            }
        });
        Refuser { addr }
    }
}

#[test]
fn a_tls_client_on_a_plain_port_fails_fast_with_the_reason() {
    let pki = Pki::new();
    let http = Refuser::start(
        b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    );
    let r = run(&requests(
        &format!("https://{}", http.addr),
        &tls_ca(&pki),
        "/",
        1,
        5,
    ));
    eprintln!("https:// to a plain HTTP port: {}", r.said());
    r.assert_refused("svc.http", &["does not speak TLS", "http://"]);

    // A QWP server in clear: its HTTP upgrade parser refuses the ClientHello.
    let qwp = QwpServer::start(qwp_ingest_server::Config::default());
    let r = run(&ingest(
        "qwp",
        &format!("wss://{}", qwp.addr()),
        &tls_ca(&pki),
        1,
    ));
    eprintln!("wss:// to a plain QWP port: {}", r.said());
    r.assert_refused("db.qwp", &["TLS", "ws://"]);

    let ilp = Refuser::start(b"");
    let r = run(&ingest(
        "ilp_tcp",
        &format!("tcps://{}", ilp.addr),
        &tls_ca(&pki),
        1,
    ));
    eprintln!("tcps:// to a plain ILP port: {}", r.said());
    r.assert_refused("db.ilp_tcp", &["TLS", "tcp://"]);

    // nginx's plain port, when there is an nginx.
    let Some(program) = nginx::program() else {
        return servers::missing(nginx::MISSING);
    };
    let nginx = nginx::Nginx::start(&program);
    let url = nginx.url().replace("http://", "https://");
    let r = run(&requests(&url, &tls_ca(&pki), "/query", 1, 5));
    eprintln!("https:// to nginx's plain port: {}", r.said());
    r.assert_refused("svc.http", &["does not speak TLS", "http://"]);
}

#[test]
fn a_plain_client_on_a_tls_port_fails_fast_with_the_reason() {
    let pki = Pki::new();
    let server = ServerHandle::start(Behaviour::ok());
    let front = TlsFront::start(server.addr, pki.server_config(Server::Valid, false));
    let r = run(&requests(
        &format!("http://127.0.0.1:{}", front.port()),
        "",
        "/",
        1,
        5,
    ));
    eprintln!("http:// to a TLS port: {}", r.said());
    // A TLS port answering in TLS is remembered: one request in clear, not one per request.
    let asked = front.failures().len();
    assert!(asked <= 1, "{asked} plain requests for 5 on 1 worker");
    r.assert_refused("svc.http", &["TLS", "https://"]);
    assert_eq!(server.count(), 0, "no request got through");

    let Some(program) = nginx::program() else {
        return servers::missing(nginx::MISSING);
    };
    let nginx = nginx::Nginx::start_tls(
        &program,
        &pki.server_cert(Server::Valid),
        &pki.server_key(Server::Valid),
    );
    // nginx answers plain HTTP on its TLS port itself, with a 400 ("The plain HTTP request
    // was sent to HTTPS port"): an HTTP status, not a connection error.
    let url = nginx.https_url().replace("https://", "http://");
    let r = run(&requests(&url, "", "/query", 1, 5));
    assert_eq!(r.code, Some(1), "{}", r.context());
    assert_eq!(r.phase()["statuses"]["400"], 5, "{}", r.context());
}

#[test]
fn mutual_tls_sends_the_client_certificate_and_keeps_the_key_out_of_the_run() {
    let pki = Pki::new();
    let server = ServerHandle::start(Behaviour::ok());
    let front = TlsFront::start(server.addr, pki.server_config(Server::Valid, true));
    let url = format!("https://127.0.0.1:{}", front.port());
    // Without a client certificate the server ends the handshake.
    let r = run(&requests(&url, &tls_ca(&pki), "/", 1, 5));
    eprintln!("no client certificate: {}", r.said());
    // The refusal is remembered: one worker asked once, not once per request (before: 5).
    // (`<=`: the front notes a failure after its alert, which may be after wlrun has ended.)
    let asked = front.failures().len();
    assert!(asked <= 1, "{asked} handshakes for 5 requests on 1 worker");
    r.assert_refused("svc.http", &["requires a client certificate", "tls_cert"]);

    let options = format!(
        "{}\n    tls_cert \"{}\"\n    tls_key \"{}\"",
        tls_ca(&pki),
        path_text(&pki.client_cert()),
        path_text(&pki.client_key())
    );
    let wl = requests(&url, &options, "/", 2, 50);
    let r = run_args(&wl, &["--json", "--out", "res"]);
    r.assert_ok();
    assert_eq!(r.u("ok"), 50);
    assert_eq!(r.tls()["client_certificate"], true);
    // Two connections, each with the certificate: the second may resume the first's session
    // when the scheduler lets the first finish its handshake before the second starts.
    assert!(front.full_handshakes() >= 1);
    assert_eq!(front.full_handshakes() + front.resumed_handshakes(), 2);

    // The key's PEM body, line by line: no file of the run directory has any of it, nor what
    // the run printed.
    let body: Vec<&str> = pki
        .client_key_pem
        .lines()
        .filter(|l| !l.starts_with("-----") && l.len() > 16)
        .collect();
    assert!(!body.is_empty());
    let res = r.dir.path().join("res");
    let mut files = Vec::new();
    let mut dirs = vec![res.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                files.push(p);
            }
        }
    }
    for want in ["report.json", "plan.json", "sources/w.wl"] {
        assert!(files.contains(&res.join(want)), "{want} in {files:?}");
    }
    for f in files.iter() {
        let text = String::from_utf8_lossy(&std::fs::read(f).unwrap()).into_owned();
        for line in &body {
            assert!(!text.contains(line), "{} holds the client key", f.display());
        }
        assert!(!text.contains("PRIVATE KEY"), "{} holds a key", f.display());
    }
    for line in &body {
        assert!(!r.said().contains(line), "the run printed the client key");
    }
}

#[test]
fn tls_verify_false_takes_any_certificate_and_says_so() {
    let pki = Pki::new();
    let server = ServerHandle::start(Behaviour::ok());
    let wrong = TlsFront::start(server.addr, pki.server_config(Server::WrongName, false));
    let url = format!("https://127.0.0.1:{}", wrong.port());
    // No CA either: nothing is checked.
    let wl = requests(&url, "tls_verify false", "/", 1, 20);
    let r = run_args(&wl, &["--json", "--out", "res"]);
    r.assert_ok();
    assert_eq!(r.u("ok"), 20);
    let t = r.tls();
    assert_eq!(t["verification"], "off", "{t:#}");
    assert_eq!(t["trust"], "none", "{t:#}");
    let plan = std::fs::read_to_string(r.dir.path().join("res/plan.json")).unwrap();
    assert!(
        plan.contains("tls_verify"),
        "the plan keeps the endpoint's tls_verify: {plan}"
    );
    // So do the page and the phase's warnings.
    let page = std::fs::read_to_string(r.dir.path().join("res/report.html")).unwrap();
    assert!(page.contains("NOT VERIFIED"), "report.html says so");
    let warned = r.phase()["warnings"].as_array().unwrap();
    assert!(
        warned
            .iter()
            .any(|w| w.as_str().unwrap().contains("TLS without verification")),
        "{warned:?}"
    );
    // The human output says it loudly.
    let human = run_args(&wl, &[]);
    human.assert_ok();
    // The phase's block (on stderr, beside the table on stdout) says it loudly.
    assert!(human.said().contains("NOT VERIFIED"), "{}", human.said());
}

// ------------------------------------------------------------------------------------------
// Session resumption
// ------------------------------------------------------------------------------------------

#[test]
fn reconnects_resume_their_tls_sessions() {
    let pki = Pki::new();
    // Every answer closes its connection, so every request after a worker's first reconnects.
    let server = ServerHandle::start(Behaviour::raw(
        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
        true,
    ));
    let front = TlsFront::start(server.addr, pki.server_config(Server::Valid, false));
    let url = format!("https://127.0.0.1:{}", front.port());
    let r = run(&requests(&url, &tls_ca(&pki), "/", 2, 40));
    r.assert_ok();
    assert_eq!(r.u("ok"), 40, "{}", r.context());
    let c = &r.phase()["connecting"];
    let t = r.tls();
    let opened = c["opened"].as_u64().unwrap();
    let (full, resumed) = (
        t["full_handshakes"].as_u64().unwrap(),
        t["resumed_handshakes"].as_u64().unwrap(),
    );
    assert_eq!(opened, 40, "one connection per request: {c:#}");
    assert_eq!(full + resumed, opened, "{c:#}");
    // Each worker's first connection is a full handshake; the others resume a ticket.
    assert!(full <= 2 + 2, "{full} full handshakes: {c:#}");
    assert_eq!(
        (front.full_handshakes(), front.resumed_handshakes()),
        (full, resumed),
        "the server counted the same"
    );

    // nginx, with keepalive_timeout 0 on /close, does the same with OpenSSL's tickets.
    let Some(program) = nginx::program() else {
        return servers::missing(nginx::MISSING);
    };
    let nginx = nginx::Nginx::start_tls(
        &program,
        &pki.server_cert(Server::Valid),
        &pki.server_key(Server::Valid),
    );
    let r = run(&requests(
        &nginx.https_url(),
        &tls_ca(&pki),
        "/close",
        1,
        20,
    ));
    r.assert_ok();
    let t = r.tls();
    assert_eq!(r.phase()["connecting"]["opened"], 20, "{t:#}");
    assert_eq!(t["full_handshakes"], 1, "{t:#}\n{}", nginx.logs());
    assert_eq!(t["resumed_handshakes"], 19, "{t:#}");
}

/// Two workers, two connections: the first a full handshake, the second full or resumed from
/// the first's session (which one depends on which finishes its handshake first).
fn assert_two_handshakes(t: &serde_json::Value) {
    let full = t["full_handshakes"].as_u64().unwrap();
    let resumed = t["resumed_handshakes"].as_u64().unwrap_or(0);
    assert!(full >= 1 && full + resumed == 2, "{t:#}");
}
