//! `observe metrics`: a task per endpoint that scrapes it at the phase's start, every `every`
//! while the phase runs, and at its end, folding each answer into a `Tally`. A scrape that fails
//! (no connection, a status other than 2xx, a body that is not the format, no answer within
//! `every`) is counted and said in the report; it never stops the phase.

mod tally;

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::header::HeaderMap;
use hyper::Method;
use tokio::sync::watch;

use crate::net::exposition;
use crate::net::http::HttpClient;
use crate::plan::metrics::MetricsPlan;
use crate::plan::Cell;
use crate::report::server_metrics::ServerMetrics;
use crate::report::PhaseReport;
pub use tally::Tally;

/// The scrapers of one phase; none when its target observes nothing.
pub struct Scrapers {
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<ServerMetrics>>,
}

/// Starts a scraper for each `observe metrics` of the target `phase` runs against, and waits
/// for their first scrapes: the phase's span starts after them. `series`: the file the kept
/// counters' rates per interval go to (`--out`).
pub async fn start(cell: &Cell, target: &str, series: Option<PathBuf>) -> Scrapers {
    let (stop, watching) = watch::channel(false);
    let mut tasks = Vec::new();
    let mut ready = Vec::new();
    let file = series.and_then(|p| {
        let f = std::fs::File::create(&p).ok()?;
        let mut w = std::io::BufWriter::new(f);
        writeln!(w, "t_s,endpoint,metric,labels,rate_per_s").ok()?;
        Some(std::sync::Arc::new(std::sync::Mutex::new(w)))
    });
    let origin = Instant::now();
    for plan in cell.observe_metrics.iter().filter(|m| m.target == target) {
        let (first, first_done) = tokio::sync::oneshot::channel();
        let scraper = Scraper::new(plan, origin, file.clone());
        tasks.push(tokio::spawn(scraper.run(watching.clone(), first)));
        ready.push(first_done);
    }
    for r in ready {
        let _ = r.await;
    }
    Scrapers { stop, tasks }
}

impl Scrapers {
    pub fn none() -> Scrapers {
        Scrapers {
            stop: watch::channel(false).0,
            tasks: Vec::new(),
        }
    }

    /// Takes each endpoint's last scrape and puts what they said into the phase's report,
    /// with the server's CPU per unit of the client's CPU figure.
    pub async fn finish(self, report: &mut PhaseReport) {
        if self.tasks.is_empty() {
            return;
        }
        let _ = self.stop.send(true);
        let mut all = Vec::new();
        for t in self.tasks {
            if let Ok(m) = t.await {
                all.push(m);
            }
        }
        let Some((unit, units)) = report.cpu_unit() else {
            return;
        };
        let slot = match report {
            PhaseReport::Ingest(r) => &mut r.server_metrics,
            PhaseReport::Queries(r) => &mut r.server_metrics,
            PhaseReport::Requests(r) => &mut r.server_metrics,
            PhaseReport::NotRun { .. } => return,
        };
        for m in &mut all {
            m.set_units(unit, units);
        }
        *slot = all;
    }
}

type SeriesFile = std::sync::Arc<std::sync::Mutex<std::io::BufWriter<std::fs::File>>>;

struct Scraper {
    url: Result<(String, String), String>,
    every: Duration,
    origin: Instant,
    client: Option<HttpClient>,
    tally: Tally,
    file: Option<SeriesFile>,
}

impl Scraper {
    fn new(plan: &MetricsPlan, origin: Instant, file: Option<SeriesFile>) -> Scraper {
        let url = super::resolve_url(&plan.url).and_then(|u| split(&u));
        Scraper {
            url,
            every: Duration::from_nanos(plan.every_ns),
            origin,
            client: None,
            tally: Tally::new(plan, plan.shown_url()),
            file,
        }
    }

    async fn run(
        mut self,
        mut stop: watch::Receiver<bool>,
        first: tokio::sync::oneshot::Sender<()>,
    ) -> ServerMetrics {
        self.scrape().await;
        let _ = first.send(());
        let mut ticks =
            tokio::time::interval_at(tokio::time::Instant::now() + self.every, self.every);
        // A slow scrape does not bunch the next ones up: they keep to the grid.
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                _ = ticks.tick() => self.scrape().await,
                _ = stop.changed() => break,
            }
        }
        // The phase's end: the last point of every rate.
        self.scrape().await;
        if let Some(f) = &self.file {
            if let Ok(mut w) = f.lock() {
                let _ = w.flush();
            }
        }
        self.tally.finish()
    }

    async fn scrape(&mut self) {
        let at = self.origin.elapsed().as_secs_f64();
        let every = self.every;
        let got = match tokio::time::timeout(every, self.fetch()).await {
            Ok(r) => r,
            Err(_) => Err(format!("no answer within {every:?}")),
        };
        match got.and_then(|text| exposition::parse(&text).map_err(|e| e.to_string())) {
            Ok(e) => {
                let endpoint = self.tally.endpoint.clone();
                let rates = self.tally.scraped(at, &e);
                if let Some(f) = &self.file {
                    if let Ok(mut w) = f.lock() {
                        for r in rates {
                            let labels: Vec<String> =
                                r.labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
                            let _ = writeln!(
                                w,
                                "{at:.3},{},{},\"{}\",{}",
                                endpoint,
                                r.name,
                                labels.join(",").replace('"', "\"\""),
                                r.rate_per_s
                            );
                        }
                    }
                }
            }
            Err(why) => {
                // The connection may be in any state after a failure: the next scrape opens
                // a new one.
                self.client = None;
                self.tally.failed(why);
            }
        }
    }

    async fn fetch(&mut self) -> Result<String, String> {
        let (base, path) = self.url.clone()?;
        if self.client.is_none() {
            let c = HttpClient::connect(&base, HeaderMap::new(), self.every, self.every)
                .await
                .map_err(|e| e.to_string())?;
            self.client = Some(c);
        }
        let client = self.client.as_mut().ok_or("no connection")?;
        let r = client
            .request(Method::GET, &path, &HeaderMap::new(), Bytes::new())
            .await
            .map_err(|e| e.to_string())?;
        if !r.is_success() {
            return Err(format!("HTTP {}", r.status.as_u16()));
        }
        String::from_utf8(r.body.to_vec()).map_err(|_| "the answer is not UTF-8".to_string())
    }
}

/// `http://host:port/path?q` into the part a connection goes to and the request's path.
fn split(url: &str) -> Result<(String, String), String> {
    let scheme_end = url
        .find("://")
        .ok_or_else(|| format!("`{url}` is not an http:// URL"))?
        + 3;
    Ok(match url[scheme_end..].find(['/', '?']) {
        Some(i) => {
            let (base, path) = url.split_at(scheme_end + i);
            let path = if path.starts_with('?') {
                format!("/{path}")
            } else {
                path.to_string()
            };
            (base.to_string(), path)
        }
        None => (url.to_string(), "/".to_string()),
    })
}
