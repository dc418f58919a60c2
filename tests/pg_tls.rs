//! PostgreSQL under TLS against real servers, `sslmode` as libpq has it.
//!
//! - The default cluster (`WLRUN_TEST_PG` or `postgres://wlrun:wlrun@127.0.0.1:5432/wlrun`)
//!   serves Debian's self-signed snakeoil certificate: `require` and `prefer` encrypt without
//!   verifying, `verify-full` fails with a reason, `disable` stays in clear.
//! - The second cluster scripts/test makes (`WLRUN_TEST_PG_TLS`, certificates in
//!   `WLRUN_TEST_PG_TLS_DIR`) accepts only TLS, with a CA of its own and `cert` logins for
//!   the role wlrun_cert: verify-ca and verify-full succeed, a wrong name or CA fails, a
//!   plain login is refused with a hint, mutual TLS.
//! - An in-test server that answers 'N' to the SSLRequest and then relays to the default
//!   cluster in clear: `require` must fail rather than go on in plaintext, `prefer` falls
//!   back and the connector counts it.
//!
//! Missing servers skip with a note, or fail under CI=true (see `servers`).

#[path = "common/cli.rs"]
mod cli;
#[path = "common/endpoints.rs"]
mod endpoints;
#[path = "common/servers.rs"]
mod servers;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use wlrun::check::Options;
use wlrun::client::pg::PgClient;
use wlrun::compile::{check_text, schema_plan};
use wlrun::driver::pg::{CopyEncoder, PgWriter};
use wlrun::driver::{Chunk, DriverConfig};
use wlrun::exec::ddl;
use wlrun::gen::batch::BatchSchema;
use wlrun::gen::Columnar;
use wlrun::net::error::{DriverError, ErrorClass};
use wlrun::net::tls::{Connector, Verify};
use wlrun::plan::EndpointPlan;
use wlrun::value::Value;

use endpoints::{text, word};

const TIMEOUT: Duration = Duration::from_secs(10);
/// Failures a user can act on come back at once; this only catches a hang (CI is noisy).
const QUICK: Duration = Duration::from_secs(5);

fn endpoint(options: &[(&str, Value)]) -> EndpointPlan {
    endpoints::endpoint("pg", "postgres", options)
}

fn sslmode(mode: &str) -> (&'static str, Value) {
    ("sslmode", word(mode))
}

/// The second cluster's URL and certificate directory, or `None` (skipped, or failed under
/// CI) when scripts/test did not make it.
fn tls_cluster() -> Option<(String, PathBuf)> {
    match (
        std::env::var("WLRUN_TEST_PG_TLS"),
        std::env::var("WLRUN_TEST_PG_TLS_DIR"),
    ) {
        (Ok(url), Ok(dir)) => Some((url, PathBuf::from(dir))),
        _ => {
            servers::missing(
                "the TLS-only PostgreSQL cluster (WLRUN_TEST_PG_TLS and WLRUN_TEST_PG_TLS_DIR, \
                 set by scripts/test as root)",
            );
            None
        }
    }
}

fn file(dir: &std::path::Path, name: &str) -> Value {
    text(dir.join(name).to_str().unwrap())
}

/// `url` with its user replaced by `user` (and no password).
fn as_user(url: &str, user: &str) -> String {
    let rest = url.split_once('@').map_or(url, |(_, r)| r);
    format!("postgres://{user}@{rest}")
}

/// Connects an admin client, and says whether the session is encrypted (the server's view).
async fn session_ssl(ep: &EndpointPlan, url: &str) -> Result<bool, DriverError> {
    let mut c = PgClient::connect(ep, url, TIMEOUT).await?;
    let n = c
        .count("SELECT count(*) FROM pg_stat_ssl WHERE pid = pg_backend_pid() AND ssl")
        .await?;
    Ok(n == 1)
}

/// A connect that must fail: its error, after checking it came quickly, names the endpoint
/// and holds no password.
async fn refused(ep: &EndpointPlan, url: &str) -> DriverError {
    let started = Instant::now();
    let e = match PgClient::connect(ep, url, TIMEOUT).await {
        Ok(_) => panic!("connected, but should not have"),
        Err(e) => e,
    };
    eprintln!("refused after {:?}: {e}", started.elapsed());
    assert!(
        started.elapsed() < QUICK,
        "took {:?}: {e}",
        started.elapsed()
    );
    assert!(e.message.contains("db.pg (127.0.0.1:"), "{e}");
    assert!(!e.message.contains(":wlrun@"), "{e}");
    e
}

/// A small generated table, for sends through the driver.
fn probe_schema() -> wlrun::plan::SchemaPlan {
    let text = r#"
schema probe {
  table "probe"
  series host: symbol = format("host_%d", n) for n in 0..3
  field v: double = uniform(0, 100)
  field n: long = uniform(-1000, 1000)
  timestamp ts: timestamp(ns) = every 1s from 2024-01-01T00:00:00Z for 200s
}
"#;
    let out = check_text("pg_tls.wl", text, &Options::default());
    let checked = out.checked.expect("the test schema checks");
    schema_plan(&checked, Some("probe")).expect("the test schema lowers")
}

fn probe_chunk() -> (Arc<BatchSchema>, Chunk) {
    let plan = probe_schema();
    let mut g = Columnar::new(&plan, 1, None, &|p| std::fs::read(p)).expect("generator");
    let schema = g.schema();
    let mut b = g.new_batch();
    let rows = g.fill(&mut b, 200);
    let mut bytes = Vec::new();
    CopyEncoder::new(Arc::clone(&schema))
        .unwrap()
        .encode(&b, &mut bytes)
        .unwrap();
    let chunk = Chunk {
        rows: rows as u64,
        generated: rows as u64,
        bytes,
        frames: Vec::new(),
        batch: b,
    };
    (schema, chunk)
}

/// A COPY writer on `table` (dropped and created first) through `connector`.
async fn writer(
    ep: &EndpointPlan,
    url: &str,
    table: &str,
    connector: &Connector,
) -> Result<(PgWriter, Chunk), DriverError> {
    let (schema, chunk) = probe_chunk();
    let mut admin = PgClient::connect(ep, url, TIMEOUT).await?;
    let drop = ddl::drop_table("postgres", table).unwrap();
    let create = ddl::create_table("postgres", table, &schema)
        .unwrap()
        .unwrap()
        .join("; ");
    admin.execute(&format!("{drop}; {create}")).await?;
    let cfg = DriverConfig {
        endpoint: ep.clone(),
        url: Some(url.to_string()),
        table: table.to_string(),
        schema,
        timeout: TIMEOUT,
        connect_timeout: TIMEOUT,
        base_dir: PathBuf::from("."),
        worker: 0,
        ack: wlrun::plan::Ack::None,
        commit_every: None,
        connector: Some(connector.clone()),
    };
    Ok((PgWriter::connect(&cfg).await?, chunk))
}

fn connector(ep: &EndpointPlan, url: &str) -> Connector {
    wlrun::net::connect::connector(ep, url).expect("the connector builds")
}

// The default cluster: snakeoil certificate, TLS and plaintext both accepted.

#[tokio::test]
async fn require_encrypts_without_verifying_and_counts_what_went_over_the_socket() {
    let Some(url) = servers::pg_server().await else {
        return;
    };
    let ep = endpoint(&[sslmode("require")]);
    assert!(session_ssl(&ep, &url).await.unwrap());
    let c = connector(&ep, &url);
    let setup = c.setup().expect("require speaks TLS");
    assert_eq!(setup.verify, Verify::Off);
    assert_eq!(setup.trust, "none");
    let (mut w, chunk) = writer(&ep, &url, "wlrun_test_tls_copy", &c).await.unwrap();
    let sent = w.send(&chunk).await.unwrap();
    // TLS records add a header and a tag to each message: more than the framing in clear.
    assert!(
        sent.socket_bytes > chunk.bytes.len() as u64 + 48,
        "{} for {} payload bytes",
        sent.socket_bytes,
        chunk.bytes.len()
    );
    assert!(w.finish().await.unwrap() > 0);
    let s = c.summary();
    assert_eq!(s.opened, 1);
    assert_eq!(s.full_handshakes + s.resumed_handshakes, 1);
    assert_eq!(s.plaintext_fallbacks, 0);
    assert_eq!(s.handshake.len(), 1);
    assert_eq!(s.first_byte.len(), 1);
    let n = s.negotiated.expect("a negotiated TLS version");
    assert!(n.version.starts_with("TLSv1."), "{n:?}");
}

#[tokio::test]
async fn prefer_is_the_default_and_takes_tls_when_offered() {
    let Some(url) = servers::pg_server().await else {
        return;
    };
    let ep = endpoint(&[]);
    assert!(session_ssl(&ep, &url).await.unwrap());
    let c = connector(&ep, &url);
    assert_eq!(c.setup().map(|s| s.verify), Some(Verify::Off));
    let (mut w, _) = writer(&ep, &url, "wlrun_test_tls_prefer", &c)
        .await
        .unwrap();
    w.finish().await.unwrap();
    let s = c.summary();
    assert_eq!((s.full_handshakes, s.plaintext_fallbacks), (1, 0));
}

#[tokio::test]
async fn disable_stays_in_clear() {
    let Some(url) = servers::pg_server().await else {
        return;
    };
    let ep = endpoint(&[sslmode("disable")]);
    assert!(!session_ssl(&ep, &url).await.unwrap());
    let c = connector(&ep, &url);
    assert!(c.setup().is_none());
    let (mut w, chunk) = writer(&ep, &url, "wlrun_test_tls_clear", &c).await.unwrap();
    // In clear the framing estimate: Bind, Execute, Sync, CopyData, CopyDone, Sync.
    let sent = w.send(&chunk).await.unwrap();
    assert_eq!(sent.socket_bytes, chunk.bytes.len() as u64 + 48);
    w.finish().await.unwrap();
    let s = c.summary();
    assert_eq!((s.opened, s.full_handshakes), (1, 0));
    assert_eq!(s.first_byte.len(), 1);
    // The URL says the same as the option.
    let ep = endpoint(&[]);
    assert!(!session_ssl(&ep, &format!("{url}?sslmode=disable"))
        .await
        .unwrap());
}

#[tokio::test]
async fn verify_full_against_a_self_signed_certificate_fails_with_the_reason() {
    let Some(url) = servers::pg_server().await else {
        return;
    };
    // Debian links the snakeoil certificate into /etc/ssl/certs, so the system's store may
    // trust it as a root: then the chain passes and the name (localhost, not 127.0.0.1)
    // fails; elsewhere the issuer is unknown.
    let e = refused(&endpoint(&[sslmode("verify-full")]), &url).await;
    assert_eq!(e.class, ErrorClass::Connect, "{e}");
    assert!(
        e.message.contains("not signed by a CA trusted here")
            || e.message.contains("is not valid for `127.0.0.1`"),
        "{e}"
    );
    // From the URL too, with libpq's name for the CA file.
    let e = refused(
        &endpoint(&[]),
        &format!("{url}?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem"),
    )
    .await;
    assert!(e.message.contains("/nonexistent/ca.pem"), "{e}");
}

#[tokio::test]
async fn hosts_are_tried_in_order() {
    let Some(url) = servers::pg_server().await else {
        return;
    };
    let config: tokio_postgres::Config = url.parse().unwrap();
    let Some(tokio_postgres::config::Host::Tcp(host)) = config.get_hosts().first() else {
        eprintln!("note: skipping: the test server is not on TCP");
        return;
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = closed.local_addr().unwrap().port();
    drop(closed);
    let (creds, rest) = url.split_once('@').unwrap();
    let db = rest.split_once('/').map_or("", |(_, d)| d);
    let two = format!("{creds}@127.0.0.1:{dead},{host}:{port}/{db}");
    let ep = endpoint(&[sslmode("require")]);
    assert!(session_ssl(&ep, &two).await.unwrap());
    let c = connector(&ep, &two);
    let (mut w, _) = writer(&ep, &two, "wlrun_test_tls_hosts", &c).await.unwrap();
    w.finish().await.unwrap();
    // The refused host opened nothing.
    assert_eq!(c.summary().opened, 1);
}

// The TLS-only cluster with its own CA.

#[tokio::test]
async fn verify_ca_and_verify_full_succeed_with_the_ca() {
    let Some((url, dir)) = tls_cluster() else {
        return;
    };
    for mode in ["verify-ca", "verify-full"] {
        let ep = endpoint(&[sslmode(mode), ("tls_ca", file(&dir, "ca.pem"))]);
        assert!(session_ssl(&ep, &url).await.unwrap(), "{mode}");
        let setup = connector(&ep, &url).setup().unwrap();
        assert_ne!(setup.verify, Verify::Off);
        assert!(setup.trust.contains("ca.pem"), "{setup:?}");
    }
    // The URL's libpq parameters, percent-encoded path and all.
    let ca = dir.join("ca.pem").to_str().unwrap().replace('/', "%2F");
    let ep = endpoint(&[]);
    assert!(
        session_ssl(&ep, &format!("{url}?sslmode=verify-full&sslrootcert={ca}"))
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn a_wrong_name_or_ca_is_refused_with_the_reason() {
    let Some((url, dir)) = tls_cluster() else {
        return;
    };
    let ep = endpoint(&[
        sslmode("verify-full"),
        ("tls_ca", file(&dir, "ca.pem")),
        ("tls_server_name", text("wrong.example")),
    ]);
    let e = refused(&ep, &url).await;
    assert!(e.message.contains("not valid for `wrong.example`"), "{e}");
    // verify-ca does not check the name.
    let ep = endpoint(&[
        sslmode("verify-ca"),
        ("tls_ca", file(&dir, "ca.pem")),
        ("tls_server_name", text("wrong.example")),
    ]);
    assert!(session_ssl(&ep, &url).await.unwrap());
    let ep = endpoint(&[sslmode("verify-ca"), ("tls_ca", file(&dir, "other-ca.pem"))]);
    let e = refused(&ep, &url).await;
    assert!(e.message.contains("not signed by a CA trusted here"), "{e}");
}

#[tokio::test]
async fn a_server_that_requires_tls_refuses_disable_with_a_hint() {
    let Some((url, _)) = tls_cluster() else {
        return;
    };
    let e = refused(&endpoint(&[sslmode("disable")]), &url).await;
    assert!(e.message.contains("no pg_hba.conf entry"), "{e}");
    assert!(e.message.contains("no encryption"), "{e}");
    assert!(
        e.message
            .contains("the server requires TLS: set sslmode=require"),
        "{e}"
    );
}

#[tokio::test]
async fn mutual_tls_logs_the_certificate_role_in() {
    let Some((url, dir)) = tls_cluster() else {
        return;
    };
    let url = as_user(&url, "wlrun_cert");
    let ep = endpoint(&[
        sslmode("verify-full"),
        ("tls_ca", file(&dir, "ca.pem")),
        ("tls_cert", file(&dir, "client.pem")),
        ("tls_key", file(&dir, "client.key")),
    ]);
    assert!(session_ssl(&ep, &url).await.unwrap());
    assert!(connector(&ep, &url).setup().unwrap().client_cert);
    // Without a certificate the server's `cert` rule refuses the login.
    let ep = endpoint(&[sslmode("verify-full"), ("tls_ca", file(&dir, "ca.pem"))]);
    let e = refused(&ep, &url).await;
    assert!(
        e.message
            .contains("connection requires a valid client certificate"),
        "{e}"
    );
    assert!(e.message.contains("give `tls_cert` and `tls_key`"), "{e}");
    // A certificate from a CA the server does not trust is refused in the handshake.
    let ep = endpoint(&[
        sslmode("verify-full"),
        ("tls_ca", file(&dir, "ca.pem")),
        ("tls_cert", file(&dir, "other-client.pem")),
        ("tls_key", file(&dir, "other-client.key")),
    ]);
    let e = refused(&ep, &url).await;
    assert!(
        e.message
            .contains("the server refused wlrun's client certificate"),
        "{e}"
    );
}

// Client-side enforcement: a server that does not speak TLS.

/// A server on a free loopback port that answers 'N' to every SSLRequest and relays the
/// rest of each connection, in clear, to `upstream` (`host:port`).
async fn refusing_tls(upstream: String) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let upstream = upstream.clone();
            tokio::spawn(async move {
                let mut head = [0u8; 8];
                if client.read_exact(&mut head).await.is_err() {
                    return;
                }
                let mut server = TcpStream::connect(&upstream).await.unwrap();
                // SSLRequest: length 8, code 80877103.
                if head == [0, 0, 0, 8, 4, 210, 22, 47] {
                    if client.write_all(b"N").await.is_err() {
                        return;
                    }
                } else {
                    server.write_all(&head).await.unwrap();
                }
                let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
            });
        }
    });
    port
}

/// The default cluster's URL pointed at a refusing relay, if the default cluster is on TCP.
async fn through_refusing_relay() -> Option<String> {
    let url = servers::pg_server().await?;
    let config: tokio_postgres::Config = url.parse().unwrap();
    let Some(tokio_postgres::config::Host::Tcp(host)) = config.get_hosts().first() else {
        eprintln!("note: skipping: the test server is not on TCP");
        return None;
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let relay = refusing_tls(format!("{host}:{port}")).await;
    let user = config.get_user().unwrap_or("wlrun");
    let password = config
        .get_password()
        .map(|p| format!(":{}", String::from_utf8_lossy(p)))
        .unwrap_or_default();
    let db = config.get_dbname().unwrap_or(user);
    Some(format!(
        "postgres://{user}{password}@127.0.0.1:{relay}/{db}"
    ))
}

#[tokio::test]
async fn require_never_goes_on_in_plaintext() {
    let Some(url) = through_refusing_relay().await else {
        return;
    };
    for mode in ["require", "verify-ca", "verify-full"] {
        let e = refused(&endpoint(&[sslmode(mode)]), &url).await;
        assert!(
            e.message
                .contains("the server does not accept TLS (it answered 'N' to SSLRequest)"),
            "{mode}: {e}"
        );
        assert!(e.message.contains("sslmode=disable or prefer"), "{e}");
    }
}

#[tokio::test]
async fn prefer_falls_back_to_plaintext_and_says_so() {
    let Some(url) = through_refusing_relay().await else {
        return;
    };
    let ep = endpoint(&[sslmode("prefer")]);
    assert!(!session_ssl(&ep, &url).await.unwrap());
    let c = connector(&ep, &url);
    let (mut w, chunk) = writer(&ep, &url, "wlrun_test_tls_fallback", &c)
        .await
        .unwrap();
    // In clear, the framing estimate again.
    let sent = w.send(&chunk).await.unwrap();
    assert_eq!(sent.socket_bytes, chunk.bytes.len() as u64 + 48);
    w.finish().await.unwrap();
    let s = c.summary();
    assert_eq!(s.plaintext_fallbacks, 1);
    assert_eq!(s.full_handshakes + s.resumed_handshakes, 0);
    assert_eq!(s.first_byte.len(), 1, "the session's first byte is timed");
}

// The binary, as a user runs it.

#[test]
fn a_run_over_tls_ingests_and_queries() {
    if !servers::pg_up() {
        return;
    }
    let text = format!(
        r#"import "std/tsbs/cpu-only.wl" as tsbs (hosts = 2, end = 2016-01-01T00:10:00Z)
workload w {{ seed 5 }}
target db {{ pg "{}" {{ sslmode require }} }}
ingest load {{ into db via pg table "cpu_tls"  rows tsbs.cpu  batch 500 rows  teardown keep }}
query q {{ sql "SELECT count(*) FROM cpu_tls WHERE usage_user > $1"  bind $1 = uniform(0, 100) }}
run r {{ against db.pg  queries q  count 20 per query  workers 2 }}
"#,
        servers::pg_url()
    );
    let (code, report, err) = cli::run_json(&text, &[], &[]);
    assert_eq!(code, 0, "{err}\n{report:#}");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let stored = rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(&servers::pg_url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        let row = client
            .query_one("SELECT count(*) FROM cpu_tls", &[])
            .await
            .unwrap();
        row.get::<_, i64>(0)
    });
    assert!(stored > 0);
}
