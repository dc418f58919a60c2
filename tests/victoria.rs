//! The HTTP drivers and admin clients against a real VictoriaMetrics (started here as a child
//! process on loopback ports) and against tiny in-test HTTP servers that answer like QuestDB.
//!
//! Without the `victoria-metrics` binary the VictoriaMetrics tests print a note and pass,
//! unless `CI=true`, where they fail: see `victoria_binary`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::header::HeaderMap;
use hyper::Method;
use indexmap::IndexMap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use wlrun::check::Options;
use wlrun::client::http_sql::HttpSql;
use wlrun::client::metrics::{self, InfluxColumns, MetricsClient};
use wlrun::compile::{check_text, schema_plan};
use wlrun::driver::ilp_http::IlpHttp;
use wlrun::driver::{Chunk, DriverConfig};
use wlrun::encode::IlpEncoder;
use wlrun::gen::batch::{Batch, BatchSchema};
use wlrun::gen::Columnar;
use wlrun::net::error::{DriverError, ErrorClass};
use wlrun::net::http::HttpClient;
use wlrun::plan::EndpointPlan;
use wlrun::value::{Text, Value};

// ---------------------------------------------------------------------------------------------
// VictoriaMetrics as a child process
// ---------------------------------------------------------------------------------------------

/// The `victoria-metrics` binary, or `None` (after a note) when it is not installed. Under
/// `CI=true` a missing binary is a failure: a CI run must not pass by skipping.
fn victoria_binary() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("victoria-metrics"))
            .find(|p| p.is_file())
    });
    match found {
        Some(p) => Some(p),
        None if std::env::var("CI").is_ok_and(|v| v == "true") => panic!(
            "VictoriaMetrics is missing: no `victoria-metrics` on PATH, and CI=true requires it \
             (install it with `apt-get install -y victoria-metrics`)"
        ),
        None => {
            eprintln!(
                "note: VictoriaMetrics is not installed (`victoria-metrics` is not on PATH); \
                 skipping this test. Install it with `apt-get install -y victoria-metrics`."
            );
            None
        }
    }
}

/// Two distinct free loopback ports (both listeners are held until both are known).
fn free_ports() -> (u16, u16) {
    let a = std::net::TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
    let b = std::net::TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
    let ports = (
        a.local_addr().expect("bound").port(),
        b.local_addr().expect("bound").port(),
    );
    drop((a, b));
    ports
}

/// One VictoriaMetrics process with its own data directory; killed when dropped.
struct Victoria {
    child: Child,
    http_port: u16,
    dir: tempfile::TempDir,
}

impl Victoria {
    async fn start(bin: &Path) -> Victoria {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (http_port, influx_port) = free_ports();
        let log = std::fs::File::create(dir.path().join("vm.log")).expect("a log file");
        let child = Command::new(bin)
            .arg(format!(
                "-storageDataPath={}",
                dir.path().join("data").display()
            ))
            .arg(format!("-httpListenAddr=127.0.0.1:{http_port}"))
            .arg(format!("-influxListenAddr=127.0.0.1:{influx_port}"))
            // TSBS data starts in 2016; the default retention (1 month) would drop it.
            .arg("-retentionPeriod=100y")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log file"))
            .stderr(log)
            .spawn()
            .expect("victoria-metrics starts");
        let mut vm = Victoria {
            child,
            http_port,
            dir,
        };
        vm.wait_healthy().await;
        vm
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.http_port)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("vm.log")).unwrap_or_default()
    }

    async fn wait_healthy(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("victoria-metrics exited ({status}):\n{}", self.log());
            }
            if let Ok(mut c) = HttpClient::connect(
                &self.url(),
                HeaderMap::new(),
                Duration::from_secs(1),
                Duration::from_secs(2),
            )
            .await
            {
                if let Ok(r) = c
                    .request(Method::GET, "/health", &HeaderMap::new(), Bytes::new())
                    .await
                {
                    if r.status == 200 {
                        return;
                    }
                }
            }
            assert!(
                Instant::now() < deadline,
                "victoria-metrics did not answer /health within 30s:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A counter from `/metrics`, e.g. `vm_rows_invalid_total{type="influx"}`.
    async fn metric(&self, name: &str) -> u64 {
        let mut c = HttpClient::connect(
            &self.url(),
            HeaderMap::new(),
            Duration::from_secs(2),
            Duration::from_secs(10),
        )
        .await
        .expect("connects");
        let r = c
            .request(Method::GET, "/metrics", &HeaderMap::new(), Bytes::new())
            .await
            .expect("/metrics answers");
        let text = String::from_utf8_lossy(&r.body).into_owned();
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no `{name}` in /metrics"))
    }
}

impl Drop for Victoria {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------------------
// Endpoints, configs and rows
// ---------------------------------------------------------------------------------------------

fn endpoint(kind: &str, url: &str, options: &[(&str, Value)]) -> EndpointPlan {
    let mut opts = IndexMap::new();
    for (k, v) in options {
        opts.insert(k.to_string(), v.clone());
    }
    EndpointPlan {
        target: "db".to_string(),
        name: kind.to_string(),
        kind: kind.to_string(),
        dialect: "victoriametrics".to_string(),
        url: Some(Text::lit(url)),
        options: opts,
    }
}

fn config(url: &str, schema: Arc<BatchSchema>, options: &[(&str, Value)]) -> DriverConfig {
    DriverConfig {
        endpoint: endpoint("ilp_http", url, options),
        url: Some(url.to_string()),
        table: "cpu".to_string(),
        schema,
        timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(2),
        base_dir: PathBuf::from("."),
        worker: 0,
        ack: wlrun::plan::Ack::None,
        commit_every: None,
        connector: None,
    }
}

/// TSBS cpu-only rows from 2016-01-01T00:00:00Z, `minutes` long, ILP-encoded in chunks of
/// `batch` rows.
fn tsbs_chunks(hosts: u64, minutes: u64, batch: usize) -> (Arc<BatchSchema>, Vec<Chunk>) {
    let text = format!(
        "import \"std/tsbs/cpu-only.wl\" as tsbs (hosts = {hosts}, end = 2016-01-01T00:00:00Z + {minutes}m)\nschema unused {{ rows 1 field a: long = 1 }}"
    );
    let out = check_text("victoria.wl", &text, &Options::default());
    let checked = out.checked.expect("the TSBS schema checks");
    let plan = schema_plan(&checked, Some("tsbs.cpu")).expect("tsbs.cpu lowers");
    let mut g = Columnar::new(&plan, 7, None, &|p| std::fs::read(p)).expect("a generator");
    let schema = g.schema();
    let mut enc = IlpEncoder::new(schema.clone()).expect("an ILP encoder");
    let mut chunks = Vec::new();
    loop {
        let mut b = g.new_batch();
        let n = g.fill(&mut b, batch);
        if n == 0 {
            break;
        }
        let mut bytes = Vec::new();
        enc.encode(&b, &mut bytes);
        chunks.push(Chunk {
            rows: n as u64,
            generated: n as u64,
            bytes,
            frames: Vec::new(),
            batch: b,
        });
    }
    (schema, chunks)
}

fn raw_chunk(schema: &Arc<BatchSchema>, rows: u64, text: &str) -> Chunk {
    Chunk {
        rows,
        generated: rows,
        bytes: text.as_bytes().to_vec(),
        frames: Vec::new(),
        batch: Batch::new(schema.clone()),
    }
}

const START_MS: i64 = 1_451_606_400_000; // 2016-01-01T00:00:00Z

async fn metrics_client(url: &str) -> MetricsClient {
    MetricsClient::connect(&endpoint("http", url, &[]), url, Duration::from_secs(10))
        .await
        .expect("the metrics client connects")
}

fn expect_err<T>(r: Result<T, DriverError>, what: &str) -> DriverError {
    match r {
        Ok(_) => panic!("{what}: expected an error"),
        Err(e) => e,
    }
}

// ---------------------------------------------------------------------------------------------
// Against VictoriaMetrics
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn ilp_http_chunks_become_samples() {
    let Some(bin) = victoria_binary() else { return };
    let vm = Victoria::start(&bin).await;
    // 3 hosts x 12 epochs (10 s apart) = 36 rows, in two chunks of 18.
    let (schema, chunks) = tsbs_chunks(3, 2, 18);
    assert_eq!(chunks.len(), 2);
    let rows: u64 = chunks.iter().map(|c| c.rows).sum();
    assert_eq!(rows, 36);

    let mut driver = IlpHttp::connect(&config(&vm.url(), schema, &[]))
        .await
        .expect("the driver connects");
    for c in &chunks {
        let sent = driver
            .send(c)
            .await
            .expect("VictoriaMetrics takes the chunk");
        assert!(sent.acked);
        // The body plus a request line and a handful of headers.
        let framing = sent.socket_bytes - c.bytes.len() as u64;
        assert!((60..400).contains(&framing), "framing of {framing} bytes");
    }
    assert_eq!(driver.reconnects(), 0);

    let mut m = metrics_client(&vm.url()).await;
    metrics::victoria_force_flush(&mut m)
        .await
        .expect("force_flush");
    // As `exec::admin` asks: one millisecond before the (exclusive) end of the time range,
    // with a window reaching back past its start.
    let end_ms = START_MS + 2 * 60_000;
    let query = r#"sum(count_over_time({__name__=~"cpu_.*"}[1h]))"#;
    let samples = metrics::promql_count(&mut m, query, end_ms - 1)
        .await
        .expect("the count");
    assert_eq!(samples, rows * 10, "one sample per field per row");

    // Each field is its own series: cpu_usage_user has one sample per row.
    let user = metrics::promql_count(
        &mut m,
        r#"sum(count_over_time(cpu_usage_user[1h]))"#,
        end_ms - 1,
    )
    .await
    .expect("the count");
    assert_eq!(user, rows);

    // What `setup recreate` does on VictoriaMetrics: delete the measurement's series.
    metrics::victoria_delete_series(&mut m, r#"{__name__=~"cpu_.*"}"#)
        .await
        .expect("delete_series");
    let after = metrics::promql_count(&mut m, query, end_ms - 1)
        .await
        .expect("the count");
    assert_eq!(after, 0);
}

/// `wlrun run` of the same file twice: `setup recreate` deletes the table's series first, so
/// each run counts from 0, and `teardown drop` deletes them after. Both touch exactly the
/// table's `<table>_<field>` series: `cpu_extra`'s survive, although `cpu_.*` matches them.
#[tokio::test]
async fn setup_and_teardown_delete_exactly_the_tables_series() {
    let Some(bin) = victoria_binary() else { return };
    let vm = Victoria::start(&bin).await;
    let (schema, _) = tsbs_chunks(1, 1, 10);
    let mut driver = IlpHttp::connect(&config(&vm.url(), schema.clone(), &[]))
        .await
        .expect("the driver connects");
    let neighbour = raw_chunk(
        &schema,
        1,
        "cpu_extra,hostname=x note=1i 1451606400000000000\n",
    );
    assert!(driver.send(&neighbour).await.expect("a 204").acked);
    let mut m = metrics_client(&vm.url()).await;
    // Searchable before the setup's delete, which sees only what is.
    metrics::victoria_force_flush(&mut m)
        .await
        .expect("force_flush");

    let dir = tempfile::tempdir().expect("a temporary directory");
    let text = format!(
        r#"import "std/tsbs/cpu-only.wl" as tsbs (hosts = 3, end = 2016-01-01T00:10:00Z)
target victoria {{
  dialect victoriametrics
  ilp_http "{url}"
  http     "{url}" as api
  count rows via api promql "sum(count_over_time(${{table}}_usage_user[${{end - start}}]))"
}}
ingest load {{
  into victoria via ilp_http
  rows tsbs.cpu
  verify visible within 30s
  teardown drop
}}
"#,
        url = vm.url()
    );
    std::fs::write(dir.path().join("w.wl"), text).expect("the workload");
    let at = START_MS + 10 * 60_000 - 1;
    for round in 1..=2 {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_wlrun"))
            .current_dir(dir.path())
            .args(["run", "w.wl", "--json", "--quiet"])
            .output()
            .expect("wlrun runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "round {round}: {err}");
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
        let p = &r["cells"][0]["phases"][0];
        // 3 hosts x 60 timestamps.
        assert_eq!(p["rows_visible"], 180, "round {round}: {p}");
        assert_eq!(p["visible_baseline"], 0, "round {round}: {p}");
        metrics::victoria_force_flush(&mut m)
            .await
            .expect("force_flush");
        let left = metrics::promql_count(
            &mut m,
            r#"sum(count_over_time({__name__=~"cpu_.*"}[1h]))"#,
            at,
        )
        .await
        .expect("the count");
        assert_eq!(left, 1, "round {round}: only cpu_extra's sample is left");
    }
}

/// VictoriaMetrics answers 204 to a body it cannot parse and stores nothing: an ack is no
/// proof of storage, which is why ingest phases count visible rows.
#[tokio::test]
async fn garbage_is_acknowledged_but_stores_nothing() {
    let Some(bin) = victoria_binary() else { return };
    let vm = Victoria::start(&bin).await;
    let (schema, _) = tsbs_chunks(1, 1, 10);
    let mut driver = IlpHttp::connect(&config(&vm.url(), schema.clone(), &[]))
        .await
        .expect("the driver connects");
    let invalid_before = vm.metric(r#"vm_rows_invalid_total{type="influx"}"#).await;

    let garbage = raw_chunk(&schema, 2, "this is not line protocol at all\n===\n");
    let sent = driver.send(&garbage).await.expect("garbage gets a 2xx");
    assert!(sent.acked, "VictoriaMetrics acknowledges what it drops");

    let mut m = metrics_client(&vm.url()).await;
    metrics::victoria_force_flush(&mut m)
        .await
        .expect("force_flush");
    // A line without a timestamp gets the server's clock: look from a minute ahead, an hour
    // back.
    let later_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as i64
        + 60_000;
    let everything = r#"sum(count_over_time({__name__=~".+"}[1h]))"#;
    assert_eq!(
        metrics::promql_count(&mut m, everything, later_ms)
            .await
            .expect("the count"),
        0,
        "nothing was stored"
    );
    // The metric lags the answer by up to a second (VictoriaMetrics 1.79 publishes it late).
    let deadline = Instant::now() + Duration::from_secs(10);
    let invalid = loop {
        let n = vm.metric(r#"vm_rows_invalid_total{type="influx"}"#).await - invalid_before;
        if n >= 2 || Instant::now() > deadline {
            break n;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        invalid, 2,
        "both lines were counted as invalid, and only there"
    );

    // The same count does see a line that parses (stamped with the server's clock), so the
    // zero above is not a query that could never see anything.
    let valid = raw_chunk(&schema, 1, "cpu,hostname=x usage_user=1i\n");
    assert!(driver.send(&valid).await.expect("a valid line").acked);
    metrics::victoria_force_flush(&mut m)
        .await
        .expect("force_flush");
    assert_eq!(
        metrics::promql_count(&mut m, everything, later_ms)
            .await
            .expect("the count"),
        1
    );
}

#[tokio::test]
async fn promql_errors_quote_victoria_metrics() {
    let Some(bin) = victoria_binary() else { return };
    let vm = Victoria::start(&bin).await;
    let mut m = metrics_client(&vm.url()).await;
    let e = expect_err(
        metrics::promql_count(&mut m, "sum(count_over_time(", START_MS).await,
        "an unparsable query",
    );
    assert_eq!(e.class, ErrorClass::Server);
    assert!(!e.fatal);
    // VictoriaMetrics 1.79 answers 422 with {"status":"error","errorType":"422","error":...}.
    assert!(e.message.contains("HTTP 422"), "{}", e.message);
    assert!(e.message.contains("unexpected token"), "{}", e.message);
    // The connection is still good for the next query.
    assert_eq!(
        metrics::promql_count(&mut m, "sum(count_over_time(nothing[1h]))", START_MS)
            .await
            .expect("an empty vector"),
        0
    );
    // A range query result is not a count.
    let e = expect_err(
        metrics::promql_count(&mut m, "vector(1)[5m:1m]", START_MS).await,
        "a range vector",
    );
    assert!(e.message.contains("matrix"), "{}", e.message);
}

// ---------------------------------------------------------------------------------------------
// Against in-test servers
// ---------------------------------------------------------------------------------------------

/// What the fake server does with the next request it reads.
enum Reply {
    Answer {
        status: u16,
        body: &'static str,
        close: Close,
    },
    /// Reads the request and closes the connection without answering.
    Drop,
    /// Reads the request and never answers.
    Hang,
}

/// What the fake server does with the connection after an answer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Close {
    Keep,
    /// Says `Connection: close`, then closes (VictoriaMetrics every `-http.connTimeout`).
    Announced,
    /// Closes without saying so (a server dropping an idle connection).
    Silently,
}

fn answer(status: u16, body: &'static str) -> Reply {
    Reply::Answer {
        status,
        body,
        close: Close::Keep,
    }
}

/// A request as the server received it.
#[derive(Debug)]
struct Seen {
    connection: usize,
    /// Request line and headers, as text.
    head: String,
    body: Vec<u8>,
    /// Every byte of the request: head, blank line and body.
    raw_len: usize,
}

impl Seen {
    fn target(&self) -> &str {
        self.head.split(' ').nth(1).unwrap_or("")
    }
}

/// A loopback HTTP/1.1 server that answers requests, in order, with `replies`, over as many
/// connections as the client opens. Returns its URL and what it received.
async fn fake_server(replies: Vec<Reply>) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let url = format!("http://{}", listener.local_addr().expect("bound"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        let mut replies = replies.into_iter();
        let mut connection = 0;
        while let Ok((mut stream, _)) = listener.accept().await {
            connection += 1;
            let mut buf = Vec::new();
            'requests: loop {
                let (head_len, body_len) = loop {
                    if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..end]).to_string();
                        let len = head
                            .lines()
                            .find_map(|l| {
                                let (k, v) = l.split_once(':')?;
                                k.eq_ignore_ascii_case("content-length")
                                    .then(|| v.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        break (end + 4, len);
                    }
                    let mut chunk = [0u8; 4096];
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => break 'requests,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                };
                while buf.len() < head_len + body_len {
                    let mut chunk = [0u8; 4096];
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => break 'requests,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let rest = buf.split_off(head_len + body_len);
                log.lock().expect("the log").push(Seen {
                    connection,
                    head: String::from_utf8_lossy(&buf[..head_len - 4]).to_string(),
                    body: buf[head_len..].to_vec(),
                    raw_len: buf.len(),
                });
                buf = rest;
                match replies.next() {
                    Some(Reply::Answer {
                        status,
                        body,
                        close,
                    }) => {
                        let reason = match status {
                            200 => "OK",
                            204 => "No Content",
                            400 => "Bad Request",
                            _ => "Status",
                        };
                        let mut out = format!("HTTP/1.1 {status} {reason}\r\n");
                        if status != 204 {
                            out.push_str(&format!(
                                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                                body.len()
                            ));
                        }
                        if close == Close::Announced {
                            out.push_str("Connection: close\r\n");
                        }
                        out.push_str("\r\n");
                        if status != 204 {
                            out.push_str(body);
                        }
                        if stream.write_all(out.as_bytes()).await.is_err() || close != Close::Keep {
                            break 'requests;
                        }
                    }
                    Some(Reply::Hang) => std::future::pending::<()>().await,
                    Some(Reply::Drop) | None => break 'requests,
                }
            }
        }
    });
    (url, seen)
}

fn schema_only() -> Arc<BatchSchema> {
    tsbs_chunks(1, 1, 10).0
}

#[tokio::test]
async fn connection_refused_fails_fast_and_names_the_endpoint() {
    let (port, _) = free_ports();
    let url = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    let e = expect_err(
        IlpHttp::connect(&config(&url, schema_only(), &[])).await,
        "nothing listens there",
    );
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(e.class, ErrorClass::Connect);
    assert!(e.fatal);
    assert!(
        e.message.contains(&format!("127.0.0.1:{port}")),
        "{}",
        e.message
    );
    assert!(e.message.contains("db.ilp_http"), "{}", e.message);
}

#[tokio::test]
async fn rejected_batches_quote_the_server_and_the_connection_carries_on() {
    let (url, seen) = fake_server(vec![
        answer(
            400,
            r#"{"code":"invalid","message":"failed to parse line protocol: invalid field value","line":1,"errorId":"a1-1"}"#,
        ),
        answer(204, ""),
    ])
    .await;
    let schema = schema_only();
    let mut driver = IlpHttp::connect(&config(&url, schema.clone(), &[]))
        .await
        .expect("connects");
    let bad = raw_chunk(&schema, 1, "cpu usage_user=oops\n");
    let e = expect_err(driver.send(&bad).await, "a 400");
    assert_eq!(e.class, ErrorClass::Server);
    assert!(!e.fatal, "a rejected batch does not stop the worker");
    assert!(e.message.contains("400 Bad Request"), "{}", e.message);
    assert!(
        e.message
            .contains("failed to parse line protocol: invalid field value (line 1)"),
        "{}",
        e.message
    );

    let good = raw_chunk(&schema, 1, "cpu usage_user=1i 1451606400000000000\n");
    let sent = driver.send(&good).await.expect("a 204");
    assert!(sent.acked);

    let seen = seen.lock().expect("the log");
    assert_eq!(seen.len(), 2);
    assert!(
        seen.iter().all(|s| s.connection == 1),
        "one keep-alive connection"
    );
    assert_eq!(seen[1].target(), "/write?precision=ns");
    assert_eq!(seen[1].body, good.bytes);
    assert!(seen[1]
        .head
        .to_ascii_lowercase()
        .contains("content-type: text/plain; charset=utf-8"));
    assert_eq!(
        sent.socket_bytes, seen[1].raw_len as u64,
        "socket bytes are exactly what the server received"
    );
}

#[tokio::test]
async fn options_shape_the_request() {
    let (url, seen) = fake_server(vec![answer(204, "")]).await;
    let schema = schema_only();
    let options = [
        ("path", Value::Str(Text::lit("/api/v2/write?bucket=b"))),
        ("user", Value::Str(Text::lit("admin"))),
        ("password", Value::Str(Text::lit("quest"))),
        (
            "headers",
            Value::Map(vec![(
                "X-Bench".to_string(),
                Value::Str(Text::lit("wlrun")),
            )]),
        ),
        ("precision", Value::Symbol("ns".to_string())),
    ];
    let mut driver = IlpHttp::connect(&config(&url, schema.clone(), &options))
        .await
        .expect("connects");
    let chunk = raw_chunk(&schema, 1, "cpu usage_user=1i 1451606400000000000\n");
    driver.send(&chunk).await.expect("a 204");
    let seen = seen.lock().expect("the log");
    assert_eq!(seen[0].target(), "/api/v2/write?bucket=b&precision=ns");
    let head = seen[0].head.to_ascii_lowercase();
    // base64("admin:quest")
    assert!(
        head.contains("authorization: basic ywrtaw46cxvlc3q="),
        "{head}"
    );
    assert!(head.contains("x-bench: wlrun"), "{head}");
    assert!(
        head.contains(&format!("host: {}", &url["http://".len()..])),
        "{head}"
    );
}

#[tokio::test]
async fn unsupported_options_are_refused_at_connect() {
    // No server: the options are refused before any connection is attempted.
    let (port, _) = free_ports();
    let url = format!("http://127.0.0.1:{port}");
    let schema = schema_only();
    for (option, says) in [
        (
            ("gzip", Value::Bool(true)),
            "`gzip true` is not supported yet",
        ),
        (
            ("precision", Value::Symbol("us".to_string())),
            "`precision us` is not supported",
        ),
    ] {
        let e = expect_err(
            IlpHttp::connect(&config(&url, schema.clone(), &[option])).await,
            says,
        );
        assert_eq!(e.class, ErrorClass::Connect);
        assert!(e.message.contains(says), "{}", e.message);
    }
}

#[tokio::test]
async fn a_connection_that_breaks_mid_request_is_an_error_and_stays_broken() {
    let (url, seen) = fake_server(vec![Reply::Drop, answer(204, "")]).await;
    let schema = schema_only();
    let mut driver = IlpHttp::connect(&config(&url, schema.clone(), &[]))
        .await
        .expect("connects");
    let chunk = raw_chunk(&schema, 1, "cpu usage_user=1i 1451606400000000000\n");
    let e = expect_err(driver.send(&chunk).await, "the server hung up");
    assert_eq!(e.class, ErrorClass::Connection);
    assert!(e.fatal);
    assert!(e.message.contains("closed the connection"), "{}", e.message);
    // Never silently resent on a new connection.
    let again = expect_err(driver.send(&chunk).await, "the connection is broken");
    assert_eq!(again.class, ErrorClass::Connection);
    assert!(
        again.message.contains("earlier request"),
        "{}",
        again.message
    );
    assert_eq!(seen.lock().expect("the log").len(), 1);
}

#[tokio::test]
async fn a_close_announced_between_requests_reopens_the_connection() {
    let (url, seen) = fake_server(vec![
        Reply::Answer {
            status: 204,
            body: "",
            close: Close::Announced,
        },
        answer(204, ""),
    ])
    .await;
    let schema = schema_only();
    let mut driver = IlpHttp::connect(&config(&url, schema.clone(), &[]))
        .await
        .expect("connects");
    let chunk = raw_chunk(&schema, 1, "cpu usage_user=1i 1451606400000000000\n");
    assert!(driver.send(&chunk).await.expect("first").acked);
    assert!(driver.send(&chunk).await.expect("second").acked);
    assert_eq!(driver.reconnects(), 1);
    let seen = seen.lock().expect("the log");
    assert_eq!(
        seen.iter().map(|s| s.connection).collect::<Vec<_>>(),
        vec![1, 2]
    );
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let (url, _seen) = fake_server(vec![Reply::Hang]).await;
    let schema = schema_only();
    let mut cfg = config(&url, schema.clone(), &[]);
    cfg.timeout = Duration::from_millis(300);
    let mut driver = IlpHttp::connect(&cfg).await.expect("connects");
    let chunk = raw_chunk(&schema, 1, "cpu usage_user=1i\n");
    let started = Instant::now();
    let e = expect_err(driver.send(&chunk).await, "no answer");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(e.class, ErrorClass::Timeout);
    assert!(e.fatal);
}

#[tokio::test]
async fn http_sql_reads_questdb_answers() {
    let (url, seen) = fake_server(vec![
        answer(
            200,
            r#"{"query":"SELECT count() FROM cpu","columns":[{"name":"count","type":"LONG"}],"timestamp":-1,"dataset":[[42]],"count":1}"#,
        ),
        answer(
            400,
            r#"{"query":"SELECT count() FROM nope","error":"table does not exist [table=nope]","position":20}"#,
        ),
        answer(200, r#"{"ddl":"OK"}"#),
        answer(
            200,
            r#"{"query":"SELECT count() FROM cpu WHERE 1=0","columns":[{"name":"count","type":"LONG"}],"timestamp":-1,"dataset":[],"count":0}"#,
        ),
    ])
    .await;
    let ep = EndpointPlan {
        dialect: "questdb".to_string(),
        ..endpoint("http", &url, &[])
    };
    let mut sql = HttpSql::connect(&ep, &url, Duration::from_secs(5))
        .await
        .expect("connects");
    assert_eq!(
        sql.count("SELECT count() FROM cpu").await.expect("a count"),
        42
    );

    let e = expect_err(sql.count("SELECT count() FROM nope").await, "no such table");
    assert_eq!(e.class, ErrorClass::Server);
    assert!(!e.fatal);
    assert!(
        e.message
            .contains("table does not exist [table=nope] (at position 20: `nope`)"),
        "{}",
        e.message
    );
    assert!(e.message.contains("HTTP 400"), "{}", e.message);

    sql.execute("DROP TABLE IF EXISTS cpu").await.expect("DDL");

    let e = expect_err(
        sql.count("SELECT count() FROM cpu WHERE 1=0").await,
        "no rows",
    );
    assert!(e.message.contains("no rows"), "{}", e.message);

    let seen = seen.lock().expect("the log");
    assert_eq!(
        seen[0].target(),
        "/exec?query=SELECT%20count%28%29%20FROM%20cpu"
    );
    assert!(seen.iter().all(|s| s.head.starts_with("GET ")));
}

#[tokio::test]
async fn influxql_counts_sum_series() {
    let (url, seen) = fake_server(vec![
        answer(
            200,
            r#"{"results":[{"statement_id":0,"series":[{"name":"cpu","tags":{"hostname":"a"},"columns":["time","count"],"values":[["1970-01-01T00:00:00Z",30]]},{"name":"cpu","tags":{"hostname":"b"},"columns":["time","count"],"values":[["1970-01-01T00:00:00Z",12]]}]}]}"#,
        ),
        answer(200, r#"{"results":[{"statement_id":0}]}"#),
        answer(
            200,
            r#"{"results":[{"statement_id":0,"error":"database not found: nope"}]}"#,
        ),
    ])
    .await;
    let ep = endpoint(
        "http",
        &url,
        &[("path", Value::Str(Text::lit("/query?db=bench")))],
    );
    let mut m = MetricsClient::connect(&ep, &url, Duration::from_secs(5))
        .await
        .expect("connects");
    let q = "SELECT count(usage_user) FROM cpu GROUP BY hostname";
    assert_eq!(
        metrics::influxql_count(&mut m, q, InfluxColumns::One)
            .await
            .expect("a count"),
        42
    );
    assert_eq!(
        metrics::influxql_count(&mut m, q, InfluxColumns::One)
            .await
            .expect("no series"),
        0
    );
    let e = expect_err(
        metrics::influxql_count(&mut m, q, InfluxColumns::One).await,
        "an error result",
    );
    assert_eq!(e.class, ErrorClass::Server);
    assert!(
        e.message.contains("database not found: nope"),
        "{}",
        e.message
    );
    let seen = seen.lock().expect("the log");
    assert!(seen[0]
        .target()
        .starts_with("/query?db=bench&q=SELECT%20count"));
}

/// InfluxQL's `count(*)` answers one column per field; where fields are sparse they differ,
/// and taking the first (as wlrun once did) reported 73 of 7,200 rows visible.
#[tokio::test]
async fn influxql_counts_with_several_value_columns() {
    const SPARSE: &str = r#"{"results":[{"statement_id":0,"series":[{"name":"cpu","columns":["time","count_a","count_b"],"values":[["1970-01-01T00:00:00Z",73,7200]]}]}]}"#;
    let (url, _seen) = fake_server(vec![
        answer(200, SPARSE),
        answer(200, SPARSE),
        answer(
            200,
            r#"{"results":[{"statement_id":0,"series":[{"name":"cpu","columns":["time"],"values":[["1970-01-01T00:00:00Z"]]}]}]}"#,
        ),
        answer(
            200,
            r#"{"results":[{"statement_id":0,"series":[{"name":"cpu","columns":["count"],"values":[[5]]}]}]}"#,
        ),
    ])
    .await;
    let ep = endpoint(
        "http",
        &url,
        &[("path", Value::Str(Text::lit("/query?db=b")))],
    );
    let mut m = MetricsClient::connect(&ep, &url, Duration::from_secs(5))
        .await
        .expect("connects");
    let q = "SELECT count(*) FROM cpu";
    let e = expect_err(
        metrics::influxql_count(&mut m, q, InfluxColumns::One).await,
        "two value columns for a row count",
    );
    assert_eq!(e.class, ErrorClass::Server);
    assert!(e.fatal, "asking again gets the same columns");
    assert!(
        e.message
            .contains("returned 2 value columns (count_a, count_b), and a row count needs one"),
        "{}",
        e.message
    );
    assert!(e.message.contains(r#"SELECT count("a")"#), "{}", e.message);
    // Samples: every column counts the values of one field.
    assert_eq!(
        metrics::influxql_count(&mut m, q, InfluxColumns::All)
            .await
            .expect("a sample count"),
        7273
    );
    let e = expect_err(
        metrics::influxql_count(&mut m, q, InfluxColumns::All).await,
        "no value column",
    );
    assert!(
        e.message.contains("without a value column"),
        "{}",
        e.message
    );
    // A column is found by its name, not its place: an answer without `time` still counts.
    assert_eq!(
        metrics::influxql_count(&mut m, q, InfluxColumns::One)
            .await
            .expect("one column"),
        5
    );
}

#[tokio::test]
async fn an_idle_connection_the_server_dropped_is_reopened() {
    let (url, seen) = fake_server(vec![
        Reply::Answer {
            status: 204,
            body: "",
            close: Close::Silently,
        },
        answer(204, ""),
    ])
    .await;
    let schema = schema_only();
    let mut driver = IlpHttp::connect(&config(&url, schema.clone(), &[]))
        .await
        .expect("connects");
    let chunk = raw_chunk(&schema, 1, "cpu usage_user=1i 1451606400000000000\n");
    assert!(driver.send(&chunk).await.expect("first").acked);
    // Idle long enough for the server's FIN to arrive before the next batch.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(driver.send(&chunk).await.expect("second").acked);
    assert_eq!(driver.reconnects(), 1);
    let seen = seen.lock().expect("the log");
    assert_eq!(
        seen.iter().map(|s| s.connection).collect::<Vec<_>>(),
        vec![1, 2]
    );
}
