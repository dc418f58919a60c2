//! report.html in a real browser: a real run (the quickstart on SQLite as a 2-cell matrix,
//! plus an open-loop request run against an HTTP server started here) writes its directory;
//! headless Chromium opens the page from disk over the DevTools protocol; every chart must
//! have a size and drawn marks, and the console must stay free of errors. The full-page
//! screenshot goes to `$WLRUN_SCREENSHOT_DIR` when set, for a person to look at.
//!
//! Needs Debian's `chromium` (scripts/test installs it); without it the test skips, and fails
//! under CI=true.

#[path = "common/http_server.rs"]
mod http_server;
#[path = "common/servers.rs"]
mod servers;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

const MISSING: &str = "Chromium (no `chromium` on PATH; apt-get install chromium)";

/// The laptop screen the page is judged on.
const WIDTH: u64 = 1366;
const HEIGHT: u64 = 900;

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n)))
        .find(|p| p.is_file())
}

/// Chromium, killed when dropped: also when an assertion fails half-way.
struct Browser {
    child: Child,
    _profile: tempfile::TempDir,
    /// The DevTools port and the browser's endpoint path, from `DevToolsActivePort`.
    port: u16,
    path: String,
}

impl Browser {
    fn start(program: &Path) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let child = Command::new(program)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                "--no-default-browser-check",
                "--remote-debugging-port=0",
                &format!("--window-size={WIDTH},{HEIGHT}"),
                &format!("--user-data-dir={}", profile.path().display()),
                "about:blank",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(profile.path().join("stderr.log")).unwrap())
            .spawn()
            .expect("chromium starts");
        let mut browser = Browser {
            child,
            _profile: profile,
            port: 0,
            path: String::new(),
        };
        // Port 0: Chromium picks a free port and writes it (then the browser's path) here.
        let file = browser._profile.path().join("DevToolsActivePort");
        // A cold start on a loaded 2-core machine took 11 s; 90 s is a hung browser.
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            if let Ok(text) = std::fs::read_to_string(&file) {
                let mut lines = text.lines();
                let port = lines.next().and_then(|l| l.trim().parse().ok());
                if let (Some(port), Some(path)) = (port, lines.next()) {
                    browser.port = port;
                    browser.path = path.trim().to_string();
                    return browser;
                }
            }
            if let Ok(Some(status)) = browser.child.try_wait() {
                panic!("chromium exited before it listened: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "chromium wrote no DevToolsActivePort within 90 s; its stderr:\n{}",
                std::fs::read_to_string(browser._profile.path().join("stderr.log"))
                    .unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// One DevTools connection: commands by id, and the events that arrived meanwhile.
struct Cdp {
    ws: Ws,
    next: u64,
    events: Vec<Value>,
}

impl Cdp {
    async fn connect(url: &str) -> Cdp {
        let (ws, _) = tokio_tungstenite::connect_async(url)
            .await
            .unwrap_or_else(|e| panic!("DevTools at {url}: {e}"));
        Cdp {
            ws,
            next: 0,
            events: Vec::new(),
        }
    }

    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let msg = json!({ "id": id, "method": method, "params": params }).to_string();
        self.ws.send(Message::text(msg)).await.unwrap();
        let answer = tokio::time::timeout(Duration::from_secs(60), async {
            loop {
                let msg = self.ws.next().await.expect("DevTools stayed open").unwrap();
                let Ok(text) = msg.to_text() else { continue };
                let v: Value = serde_json::from_str(text).unwrap();
                if v["id"].as_u64() == Some(id) {
                    return v;
                }
                if v.get("method").is_some() {
                    self.events.push(v);
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no answer to {method} within 60 s"));
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }

    /// Waits for the event `method`, keeping the others.
    async fn event(&mut self, method: &str) -> Value {
        if let Some(i) = self.events.iter().position(|e| e["method"] == method) {
            return self.events[i].clone();
        }
        tokio::time::timeout(Duration::from_secs(60), async {
            loop {
                let msg = self.ws.next().await.expect("DevTools stayed open").unwrap();
                let Ok(text) = msg.to_text() else { continue };
                let v: Value = serde_json::from_str(text).unwrap();
                if v.get("method").is_some() {
                    self.events.push(v.clone());
                    if v["method"] == method {
                        return v;
                    }
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no {method} within 60 s"))
    }

    /// Console errors, uncaught exceptions and browser log errors seen so far.
    fn errors(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| match e["method"].as_str() {
                Some("Runtime.exceptionThrown") => true,
                Some("Runtime.consoleAPICalled") => {
                    matches!(e["params"]["type"].as_str(), Some("error" | "assert"))
                }
                Some("Log.entryAdded") => e["params"]["entry"]["level"] == "error",
                _ => false,
            })
            .map(|e| e.to_string())
            .collect()
    }
}

/// For each `svg.chart`: its rendered size and its drawn marks (`.m`) that have a size.
const CHECK: &str = r#"(() => {
  const charts = [...document.querySelectorAll('svg.chart')].map((svg, i) => {
    const r = svg.getBoundingClientRect();
    const marks = [...svg.querySelectorAll('.m')];
    const drawn = marks.filter(m => { const b = m.getBBox(); return b.width + b.height > 0; });
    return { i, title: svg.getAttribute('aria-label'), width: r.width, height: r.height,
             marks: marks.length, drawn: drawn.length };
  });
  const numbers = [...document.querySelectorAll('table.numbers')].map(t => ({
    header: [...t.querySelectorAll('th')].map(th => th.textContent),
    rows: [...t.querySelectorAll('tr[data-cell]')].map(tr => ({
      cell: Number(tr.dataset.cell), phase: tr.dataset.phase, query: tr.dataset.query ?? null,
      cells: [...tr.querySelectorAll('td')].map(td => td.textContent) })) }));
  return { charts, numbers, width: document.documentElement.scrollWidth,
           height: document.documentElement.scrollHeight };
})()"#;

/// A page as the browser laid it out: the full-page screenshot and the first screens of it
/// (PNG), and the numbers tables as the DOM holds them.
struct Checked {
    png: Vec<Vec<u8>>,
    numbers: Value,
}

/// Opens `page` and checks every chart.
async fn check_page(port: u16, browser_path: &str, page: &Path, min_charts: usize) -> Checked {
    // The browser's own endpoint makes a tab; the tab's endpoint is then driven directly.
    let mut browser = Cdp::connect(&format!("ws://127.0.0.1:{port}{browser_path}")).await;
    let target = browser
        .call("Target.createTarget", json!({ "url": "about:blank" }))
        .await;
    let id = target["targetId"]
        .as_str()
        .expect("a target id")
        .to_string();
    let ws_url = format!("ws://127.0.0.1:{port}/devtools/page/{id}");
    let mut cdp = Cdp::connect(&ws_url).await;
    cdp.call("Runtime.enable", json!({})).await;
    cdp.call("Log.enable", json!({})).await;
    cdp.call("Page.enable", json!({})).await;
    cdp.call(
        "Emulation.setDeviceMetricsOverride",
        json!({ "width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": false }),
    )
    .await;
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    cdp.events.clear();
    let nav = cdp.call("Page.navigate", json!({ "url": url })).await;
    assert!(nav.get("errorText").is_none(), "navigate: {nav}");
    cdp.event("Page.loadEventFired").await;
    let got = cdp
        .call(
            "Runtime.evaluate",
            json!({ "expression": CHECK, "returnByValue": true }),
        )
        .await;
    let v = &got["result"]["value"];
    let charts = v["charts"].as_array().expect("the check ran");
    let in_file = std::fs::read_to_string(page)
        .unwrap()
        .matches("<svg class=\"chart\"")
        .count();
    assert_eq!(charts.len(), in_file, "charts in the DOM and in the file");
    assert!(
        charts.len() >= min_charts,
        "{} charts, expected at least {min_charts}: {:?}",
        charts.len(),
        charts.iter().map(|c| &c["title"]).collect::<Vec<_>>()
    );
    for c in charts {
        assert!(
            c["width"].as_f64().unwrap() > 100.0 && c["height"].as_f64().unwrap() > 50.0,
            "a chart without a size: {c}"
        );
        assert!(
            c["marks"].as_u64().unwrap() > 0 && c["drawn"] == c["marks"],
            "a chart without drawn marks: {c}"
        );
    }
    // Readable on a laptop: nothing wider than the screen.
    assert!(
        v["width"].as_u64().unwrap() <= WIDTH,
        "the page scrolls sideways: {v}"
    );
    let errors = cdp.errors();
    assert!(errors.is_empty(), "console errors: {errors:?}");
    let height = v["height"].as_u64().unwrap();
    // The whole page, then screen by screen as a laptop shows it (the first dozen).
    let mut shots = vec![screenshot(&mut cdp, 0, height).await];
    for top in (0..height).step_by(HEIGHT as usize).take(12) {
        shots.push(screenshot(&mut cdp, top, HEIGHT.min(height - top)).await);
    }
    Checked {
        png: shots,
        numbers: v["numbers"].clone(),
    }
}

/// The phase of report.json a numbers row names: `(phase, query type)`.
fn phase_of<'a>(report: &'a Value, row: &Value) -> (&'a Value, Option<&'a Value>) {
    let cell = report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["index"] == row["cell"])
        .unwrap_or_else(|| panic!("no cell of {row}"));
    let phase = cell["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == row["phase"])
        .unwrap_or_else(|| panic!("no phase of {row}"));
    let query = row["query"].as_str().map(|q| {
        phase["query_types"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == q)
            .unwrap_or_else(|| panic!("no query type of {row}"))
    });
    (phase, query)
}

/// What report.json says for the column `column` of a numbers row; `None` for a label column,
/// `Some(Null)` for a figure the report does not have (the page shows `-`).
fn expected(column: &str, phase: &Value, query: Option<&Value>) -> Option<Value> {
    let o = query.unwrap_or(phase);
    let n = |v: &Value| v.as_f64();
    let ok = n(&o["ok"]);
    let failed = n(&o["failed"]);
    let latency = if o["latency"].is_object() {
        &o["latency"]
    } else {
        &o["batch_latency"]
    };
    let ms = |key: &str| json!(n(&latency[key]).map(|us| us / 1000.0));
    Some(match column {
        "ok" | "failed" | "rows sent" | "rows acked" | "rows visible" | "rows/s" => {
            let key = match column {
                "rows sent" => "rows_sent",
                "rows acked" => "rows_acked",
                "rows visible" => "rows_visible",
                "rows/s" => "rows_per_s",
                k => k,
            };
            o[key].clone()
        }
        "error %" => match (ok, failed) {
            (Some(ok), Some(failed)) if ok + failed > 0.0 => json!(100.0 * failed / (ok + failed)),
            _ => Value::Null,
        },
        "ok/s" => [&o["qps"], &o["rps"]]
            .into_iter()
            .find(|v| !v.is_null())
            .cloned()
            .unwrap_or(Value::Null),
        "rows/q" => match query {
            Some(t) => t["rows_per_query"].clone(),
            None => {
                let rows = n(&phase["rows"]).unwrap();
                let ok = ok.unwrap();
                // A request run without rows (HTTP) shows none rather than 0 per request.
                if ok == 0.0 || (rows == 0.0 && phase["phase"] == "requests") {
                    Value::Null
                } else {
                    json!(rows / ok)
                }
            }
        },
        "batches" => latency["count"].clone(),
        "errors" => json!(phase["errors"]
            .as_object()
            .unwrap()
            .values()
            .map(|e| e["count"].as_u64().unwrap())
            .sum::<u64>()),
        "min ms" => ms("min_us"),
        "mean ms" => ms("mean_us"),
        "p50 ms" => ms("p50_us"),
        "p90 ms" => ms("p90_us"),
        "p95 ms" => ms("p95_us"),
        "p99 ms" => ms("p99_us"),
        "max ms" => ms("max_us"),
        _ => return None,
    })
}

/// Every figure of the page's numbers tables equals report.json's, to the digits shown; and
/// every phase that ran, and every query type, has its row.
fn numbers_equal_the_report(numbers: &Value, report: &Value) {
    let tables = numbers.as_array().expect("the numbers tables");
    let mut rows_seen = 0;
    let mut figures_seen = 0;
    for t in tables {
        let header: Vec<&str> = t["header"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h.as_str().unwrap())
            .collect();
        for row in t["rows"].as_array().unwrap() {
            rows_seen += 1;
            let (phase, query) = phase_of(report, row);
            let cells = row["cells"].as_array().unwrap();
            assert_eq!(cells.len(), header.len(), "{row}");
            for (column, text) in header.iter().zip(cells) {
                let Some(want) = expected(column, phase, query) else {
                    continue;
                };
                let text = text.as_str().unwrap();
                let here = format!("{column} of {row}: page {text:?}, report.json {want}");
                if want.is_null() {
                    assert_eq!(text, "-", "{here}");
                    continue;
                }
                let want = want.as_f64().unwrap();
                let got: f64 = text.replace(',', "").parse().expect(&here);
                let decimals = text.split_once('.').map_or(0, |(_, f)| f.len());
                let tolerance = 0.5 * 10f64.powi(-(decimals as i32)) + 1e-9 * want.abs();
                assert!((got - want).abs() <= tolerance, "{here}");
                figures_seen += 1;
            }
        }
    }
    let mut rows_expected = 0;
    for p in report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["phases"].as_array().unwrap())
    {
        if p["phase"] == "not_run" {
            continue;
        }
        rows_expected += 1 + p["query_types"].as_array().map_or(0, |t| t.len());
    }
    assert_eq!(rows_seen, rows_expected, "rows in the numbers tables");
    assert!(
        figures_seen > 10 * rows_seen,
        "{figures_seen} figures compared"
    );
}

async fn screenshot(cdp: &mut Cdp, top: u64, height: u64) -> Vec<u8> {
    let shot = cdp
        .call(
            "Page.captureScreenshot",
            json!({
                "format": "png",
                "captureBeyondViewport": true,
                "clip": { "x": 0, "y": top, "width": WIDTH, "height": height, "scale": 1 }
            }),
        )
        .await;
    let png = base64::Engine::decode(
        &base64::engine::general_purpose::STANDARD,
        shot["data"].as_str().expect("screenshot data"),
    )
    .unwrap();
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    png
}

fn wlrun(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn every_chart_of_a_real_runs_page_renders_in_chromium_without_console_errors() {
    let Some(program) = chromium() else {
        return servers::missing(MISSING);
    };
    let server = http_server::start(http_server::Behaviour::ok());
    let work = tempfile::tempdir().unwrap();
    let quickstart = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/quickstart.wl"),
    )
    .unwrap();
    // Two cells by `hosts`, and an open-loop request run, so every kind of phase and chart
    // is on the page. Enough hosts that each cell's load outlasts a few 50 ms intervals: a
    // phase shorter than a quarter of each of its intervals draws no rate over time.
    let workload = quickstart.replacen(
        "param hosts = 10\n",
        "param hosts = 10\nmatrix { hosts in [40, 80] }\n",
        1,
    ) + &format!(
        "\ntarget svc {{ http \"{}\" }}\nrun hits {{\n  against svc.http\n  request GET \"/x\"\n  \
         connections 2\n  duration 1500ms\n  rate 100/s\n}}\n",
        server.url()
    );
    assert!(
        workload.contains("matrix {"),
        "the quickstart still has `param hosts`"
    );
    std::fs::write(work.path().join("w.wl"), workload).unwrap();
    let out = wlrun(
        work.path(),
        &["run", "w.wl", "--out", "out", "-q", "--interval", "0.05"],
    );
    // 1 is a phase that failed (an open-loop run that fell behind on a loaded machine): its
    // page is written all the same, and is what this test is about.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "the run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run_dir = work.path().join("out");
    let page = run_dir.join("report.html");
    assert!(page.is_file(), "the run wrote report.html");
    let text = std::fs::read_to_string(&page).unwrap();
    // The parameters: the matrix axis, then the others.
    assert!(
        text.contains("<th>cell</th><th>hosts</th><th>start</th>"),
        "parameters"
    );
    assert!(text.contains("<td class=\"n\">2</td><td>80</td><td>2016-01-01T00:00:00Z</td>"));

    // `wlrun report --html` gives the same page from the directory.
    let again = wlrun(work.path(), &["report", "out", "--html"]);
    assert!(again.status.success());
    assert_eq!(
        String::from_utf8_lossy(&again.stdout),
        std::fs::read_to_string(&page).unwrap()
    );

    let browser = Browser::start(&program);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // The matrix: per phase (3 phases) a rate chart when some cell's span was long enough to
    // be a rate (on a fast machine neither cell's load is, nor perhaps the queries), a latency
    // chart and a distribution; per cell and phase 3 charts over time and a distribution.
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("report.json")).unwrap())
            .unwrap();
    let phases = |name: &str| -> Vec<&Value> {
        report["cells"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["phases"].as_array().unwrap())
            .filter(|p| p["name"] == name)
            .collect()
    };
    let rated = |name: &str, keys: &[&str]| {
        phases(name)
            .iter()
            .any(|p| keys.iter().any(|k| !p[*k].is_null()))
    };
    let rate_charts = [
        rated("load", &["send_rows_per_s", "ack_rows_per_s"]),
        rated("explore", &["qps"]),
        rated("hits", &["rps"]),
    ]
    .iter()
    .filter(|r| **r)
    .count();
    // Per cell and phase a distribution, and 3 charts over time when it lasted at least 3
    // intervals; a shorter phase's intervals are a table (a fast machine loads 40 hosts into
    // SQLite in under 150 ms).
    let over_time: usize = phases("load")
        .into_iter()
        .chain(phases("explore"))
        .chain(phases("hits"))
        .map(|p| {
            let n = p["series"]["intervals"].as_u64().expect("a series");
            if n >= 3 {
                4
            } else {
                assert!(
                    text.contains(&format!(
                        "<caption>Over time: {n} interval{} of 0.05s, too few to draw",
                        if n == 1 { "" } else { "s" }
                    )),
                    "the intervals of a short phase as a table"
                );
                1
            }
        })
        .sum();
    // The start to the second: report.json keeps the nanoseconds, a reader wants the minute.
    let started = report["started"].as_str().unwrap();
    assert!(
        text.contains(&format!(" · started {} ", started[..19].replace('T', " "))),
        "the start to the second"
    );
    assert!(!text.contains(started), "the start with its fraction");
    let checked = runtime.block_on(check_page(
        browser.port,
        &browser.path,
        &page,
        rate_charts + 2 * 3 + over_time,
    ));
    // The numbers a reader copies from the page are report.json's.
    numbers_equal_the_report(&checked.numbers, &report);
    let png = checked.png;
    if let Some(dir) = std::env::var_os("WLRUN_SCREENSHOT_DIR") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("report.png"), &png[0]).unwrap();
        for (i, screen) in png[1..].iter().enumerate() {
            std::fs::write(dir.join(format!("report-screen-{}.png", i + 1)), screen).unwrap();
        }
    }

    // `wlrun compare --html` of the checked-in runs, in the same browser: a throughput and a
    // latency chart for each of the 2 phases both runs have.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let diff = wlrun(
        root,
        &[
            "compare",
            "tests/golden/compare/base",
            "tests/golden/compare/new",
            "--html",
        ],
    );
    assert_eq!(
        diff.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&diff.stderr)
    );
    let diff_page = work.path().join("compare.html");
    std::fs::write(&diff_page, &diff.stdout).unwrap();
    let png = runtime
        .block_on(check_page(browser.port, &browser.path, &diff_page, 4))
        .png;
    if let Some(dir) = std::env::var_os("WLRUN_SCREENSHOT_DIR") {
        std::fs::write(PathBuf::from(dir).join("compare.png"), &png[0]).unwrap();
    }
    drop(browser);
}

/// The sections of issue 19's load shapes, in the browser: a probed ingest beside a staged
/// request run in a `concurrent` group (its end ends the group), then a `find max rate`
/// search. Every chart drawn, the lag over time among them, the stage boundaries on the staged
/// run's charts, the stages' and the steps' tables, and the group said once.
#[test]
fn a_probe_stages_a_search_and_a_group_render_in_chromium() {
    let Some(program) = chromium() else {
        return servers::missing(MISSING);
    };
    let server = http_server::start(http_server::Behaviour::ok());
    let work = tempfile::tempdir().unwrap();
    let workload = format!(
        r#"
workload shapes {{ seed 5 }}
target local {{ sqlite "db.sqlite" {{ journal wal }} }}
target svc {{ http "{url}" }}
schema cpu {{ rows 100000  field v: long = uniform(0, 100) }}
ingest fill {{
  into local via sqlite  rows cpu  batch 50 rows  rate 2000/s  duration 1500ms
  probe visible every 25ms
}}
run staged {{
  against svc.http
  request GET "/s"
  connections 2
  stage 700ms rate 40/s
  stage 5s rate 80/s
}}
concurrent mixed {{ phases fill, staged  until fill }}
run max {{
  against svc.http
  request GET "/m"
  connections 2
  duration 300ms
  find max rate from 50/s where p99 < 500ms up to 200/s samples 20
}}
"#,
        url = server.url()
    );
    std::fs::write(work.path().join("w.wl"), workload).unwrap();
    let out = wlrun(
        work.path(),
        &["run", "w.wl", "--out", "out", "-q", "--interval", "0.05"],
    );
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "the run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = work.path().join("out/report.html");
    let text = std::fs::read_to_string(&page).unwrap();
    for needle in [
        "aria-label=\"Visibility lag over time\"",
        "aria-label=\"Rows sent and seen visible\"",
        "aria-label=\"Visibility lag distribution\"",
        "<b>Freshness</b> · lag p50 ",
        "<caption>Stages (each after its warm-up",
        "class=\"sb\"",
        ">stage 2</text>",
        "<caption>find max rate from 50/s where p99 &lt; 500ms",
        "<b>find max rate: ",
        "concurrent mixed: fill, staged ran together; ended when fill ended",
        "· in concurrent mixed (its end ends the group)</h4>",
        // One cell: its headline figures are a table, not bar charts of one bar each.
        "<table class=\"one-cell\">",
        "<table class=\"numbers\">",
        "<summary>Environment: ",
        "aria-label=\"find max rate: latency against rate\"",
        "<title>SLA p99 &lt; 500ms</title>",
    ] {
        assert!(text.contains(needle), "no `{needle}` on the page");
    }
    let browser = Browser::start(&program);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Per phase: fill 3 over time, 2 of its lag over time, the lag's and the batches'
    // distributions; staged and max 3 over time and a distribution each, max its curve of
    // latency against rate. The matrix of one cell is a table.
    let png = runtime
        .block_on(check_page(
            browser.port,
            &browser.path,
            &page,
            7 + 4 + 4 + 1,
        ))
        .png;
    if let Some(dir) = std::env::var_os("WLRUN_SCREENSHOT_DIR") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("shapes.png"), &png[0]).unwrap();
        for (i, screen) in png[1..].iter().enumerate() {
            std::fs::write(dir.join(format!("shapes-screen-{}.png", i + 1)), screen).unwrap();
        }
    }
    drop(browser);
}
