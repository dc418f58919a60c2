//! Live metrics (`--metrics-listen`, `--metrics-push`): each phase's figures so far, for a
//! Prometheus to scrape or a Pushgateway to hold while the run goes on (docs/metrics.md).
//!
//! Nothing here is on the workers' path: the series writer thread, which already merges the
//! workers' slots once per interval, adds each closed interval to its phase (`Phase::add`), and
//! the phase's end sets the report's own figures (`Phase::finish`). A scrape or a push reads a
//! snapshot under one mutex that only those, once per interval, contend for.

pub mod push;
pub mod serve;
pub mod text;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::report::PhaseReport;

/// Upper bounds of the latency histograms' buckets, seconds: 50 µs to 60 s, about three to a
/// decade, so a p99 reads within a bucket from a cache hit to a timeout.
pub const BUCKETS: [f64; 19] = [
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 5.0, 10.0, 30.0, 60.0,
];

/// A histogram of fixed buckets (`BUCKETS`, then +Inf), counts not cumulative.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Buckets {
    pub counts: [u64; BUCKETS.len() + 1],
    pub sum_s: f64,
}

impl Buckets {
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Adds an HDR histogram of microseconds: each recorded value in its bucket, at its
    /// equivalence range's midpoint (the histogram's own precision).
    pub fn add_micros(&mut self, h: &Histogram<u64>) {
        for v in h.iter_recorded() {
            let s = h.median_equivalent(v.value_iterated_to()) as f64 / 1e6;
            let n = v.count_at_value();
            let i = BUCKETS
                .iter()
                .position(|&le| s <= le)
                .unwrap_or(BUCKETS.len());
            self.counts[i] += n;
            self.sum_s += s * n as f64;
        }
    }
}

/// Which phase a family of samples belongs to: their labels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Labels {
    pub cell: usize,
    pub key: String,
    pub phase: String,
    /// `ingest`, `queries` or `requests`.
    pub kind: &'static str,
    pub endpoint: String,
}

/// One phase's figures so far. Counters only grow: an interval adds, the end sets the
/// report's figure where it is higher.
#[derive(Clone, Debug, Default)]
pub struct Figures {
    /// An ingest (rows), not a query or request run (answers).
    pub ingest: bool,
    pub ok: u64,
    pub failed: u64,
    pub cut_off: u64,
    pub unsent: u64,
    pub rows_sent: u64,
    /// `None` where the protocol has no acknowledgements.
    pub rows_acked: Option<u64>,
    pub ingest_errors: u64,
    /// `probe visible`: the highest count a probe answered.
    pub rows_visible: Option<u64>,
    /// Runs: latency; ingest: batch latency.
    pub latency: Buckets,
    /// Open loop only.
    pub service: Option<Buckets>,
    pub send_lag: Option<Buckets>,
    /// `probe visible` only.
    pub visibility_lag: Option<Buckets>,
    pub client_cpu_s: f64,
    pub stage: Option<u64>,
    pub findmax_step: Option<u64>,
    /// The phase is over and its figures are the report's.
    pub finished: bool,
}

/// What one closed interval adds (the series writer's merged slots).
pub struct Interval<'a> {
    pub ok: u64,
    pub failed: u64,
    pub cut_off: u64,
    pub unsent: u64,
    pub rows_sent: u64,
    pub rows_acked: u64,
    pub ingest_errors: u64,
    pub visible: Option<u64>,
    pub latency: &'a Histogram<u64>,
    pub service: &'a Histogram<u64>,
    pub send_lag: &'a Histogram<u64>,
    pub visibility_lag: &'a Histogram<u64>,
    pub stage: Option<u64>,
}

/// Every phase's figures, in the order the phases started.
pub struct Live {
    phases: Mutex<Vec<(Labels, Figures)>>,
    /// How often a phase's figures move on: the series' `--interval`.
    interval: Duration,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Live {
    pub fn new(interval: Duration) -> Arc<Live> {
        Arc::new(Live {
            phases: Mutex::new(Vec::new()),
            interval,
        })
    }

    /// A phase begins: its families show from now on, at zero. `open_loop` gives it service
    /// time and send lag, `acks` acknowledged rows, `probe` visibility.
    pub fn phase(
        self: &Arc<Live>,
        labels: Labels,
        open_loop: bool,
        acks: bool,
        probe: bool,
    ) -> Phase {
        let run = labels.kind != "ingest";
        let figures = Figures {
            ingest: !run,
            rows_acked: (!run && acks).then_some(0),
            rows_visible: (!run && probe).then_some(0),
            service: (run && open_loop).then(Buckets::default),
            send_lag: (run && open_loop).then(Buckets::default),
            visibility_lag: (!run && probe).then(Buckets::default),
            ..Figures::default()
        };
        let mut phases = lock(&self.phases);
        phases.push((labels, figures));
        Phase {
            live: self.clone(),
            at: phases.len() - 1,
            cpu_at_start: super::cpu::process_cpu_seconds(),
        }
    }

    /// Every phase's labels and figures, now.
    pub fn snapshot(&self) -> Vec<(Labels, Figures)> {
        lock(&self.phases).clone()
    }
}

/// A phase's place in `Live`, held by its series recorder.
#[derive(Clone)]
pub struct Phase {
    live: Arc<Live>,
    at: usize,
    cpu_at_start: Option<f64>,
}

impl Phase {
    pub fn interval(&self) -> Duration {
        self.live.interval
    }

    fn with(&self, f: impl FnOnce(&mut Figures)) {
        if let Some((_, fig)) = lock(&self.live.phases).get_mut(self.at) {
            f(fig);
        }
    }

    /// A closed interval, from the series writer thread. Histograms are bucketed before the
    /// lock is taken, so a scrape never waits for that.
    pub fn add(&self, i: &Interval) {
        let bucketed = |h: &Histogram<u64>| {
            let mut b = Buckets::default();
            b.add_micros(h);
            b
        };
        let (latency, service, send_lag, visibility_lag) = (
            bucketed(i.latency),
            bucketed(i.service),
            bucketed(i.send_lag),
            bucketed(i.visibility_lag),
        );
        let cpu = self
            .cpu_at_start
            .zip(super::cpu::process_cpu_seconds())
            .map(|(a, b)| (b - a).max(0.0));
        self.with(|f| {
            if f.finished {
                return;
            }
            f.ok += i.ok;
            f.failed += i.failed;
            f.cut_off += i.cut_off;
            f.unsent += i.unsent;
            f.rows_sent += i.rows_sent;
            f.ingest_errors += i.ingest_errors;
            if let Some(a) = &mut f.rows_acked {
                *a += i.rows_acked;
            }
            if let (Some(v), Some(seen)) = (&mut f.rows_visible, i.visible) {
                *v = (*v).max(seen);
            }
            add(&mut f.latency, &latency);
            for (to, from) in [
                (&mut f.service, &service),
                (&mut f.send_lag, &send_lag),
                (&mut f.visibility_lag, &visibility_lag),
            ] {
                if let Some(to) = to {
                    add(to, from);
                }
            }
            if let Some(c) = cpu {
                f.client_cpu_s = c;
            }
            if i.stage.is_some() {
                f.stage = i.stage;
            }
        });
    }

    /// A `find max rate` search begins step `n` (from 1).
    pub fn step(&self, n: u64) {
        self.with(|f| f.findmax_step = Some(n));
    }

    /// The phase is over: its counters take the report's figures (the intervals add up to
    /// them; a counter the intervals took higher, as a search's every step, stays), its CPU
    /// the report's.
    pub fn finish(&self, report: &PhaseReport) {
        self.finish_with(&Final::of(report));
    }

    fn finish_with(&self, end: &Final) {
        self.with(|f| {
            f.finished = true;
            let up = |v: &mut u64, to: u64| *v = (*v).max(to);
            up(&mut f.ok, end.ok);
            up(&mut f.failed, end.failed);
            up(&mut f.cut_off, end.cut_off);
            up(&mut f.unsent, end.unsent);
            up(&mut f.rows_sent, end.rows_sent);
            if let (Some(a), Some(to)) = (&mut f.rows_acked, end.rows_acked) {
                up(a, to);
            }
            f.client_cpu_s = end.client_cpu_s.unwrap_or(f.client_cpu_s);
        });
    }
}

/// The report's figures a phase's end sets.
#[derive(Default)]
struct Final {
    ok: u64,
    failed: u64,
    cut_off: u64,
    unsent: u64,
    rows_sent: u64,
    rows_acked: Option<u64>,
    client_cpu_s: Option<f64>,
}

impl Final {
    fn of(report: &PhaseReport) -> Final {
        match report {
            PhaseReport::Queries(r) => Final {
                ok: r.ok,
                failed: r.failed,
                cut_off: r.accounting.cut_off,
                unsent: r.accounting.unsent,
                client_cpu_s: r.client_cpu_s,
                ..Final::default()
            },
            PhaseReport::Requests(r) => Final {
                ok: r.ok,
                failed: r.failed,
                cut_off: r.accounting.cut_off,
                unsent: r.accounting.unsent,
                client_cpu_s: r.client_cpu_s,
                ..Final::default()
            },
            PhaseReport::Ingest(r) => Final {
                rows_sent: r.rows_sent,
                rows_acked: r.rows_acked,
                client_cpu_s: r.client_cpu_s,
                ..Final::default()
            },
            PhaseReport::NotRun { .. } => Final::default(),
        }
    }
}

fn add(to: &mut Buckets, from: &Buckets) {
    for (a, b) in to.counts.iter_mut().zip(from.counts) {
        *a += b;
    }
    to.sum_s += from.sum_s;
}

/// Where the live figures go: the server of `--metrics-listen`, the pusher of
/// `--metrics-push`.
pub struct Outputs {
    server: Option<serve::Server>,
    pusher: Option<push::Pusher>,
}

impl Outputs {
    pub fn start(
        listen: Option<&str>,
        push: Option<(push::Target, Duration)>,
        live: &Arc<Live>,
    ) -> Result<Outputs, String> {
        let server = match listen {
            Some(addr) => Some(serve::Server::start(addr, live.clone())?),
            None => None,
        };
        let pusher = push.map(|(target, every)| push::Pusher::start(target, live.clone(), every));
        Ok(Outputs { server, pusher })
    }

    /// The address the server is bound to.
    pub fn addr(&self) -> Option<std::net::SocketAddr> {
        self.server.as_ref().map(|s| s.addr)
    }

    /// The run is over and every phase's figures are final: the last push, then `linger` of
    /// serving for the scrape that reads them.
    pub fn finish(self, linger: Duration) {
        if let Some(p) = self.pusher {
            p.finish();
        }
        if let Some(s) = self.server {
            if !linger.is_zero() {
                sayln!("metrics: serving the final figures for {linger:?} more (Ctrl-C ends it)");
                linger_for(linger);
            }
            s.stop();
        }
    }
}

/// Waits `linger`, or less when SIGINT or SIGTERM comes. The run's runtime, whose handlers
/// stopped the run, is gone by now while its handlers are still installed: without a wait of
/// our own a Ctrl-C would do nothing until the linger ends.
fn linger_for(linger: Duration) {
    use tokio::signal::unix::{signal, SignalKind};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let Ok(runtime) = runtime else {
        std::thread::sleep(linger);
        return;
    };
    runtime.block_on(async {
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            tokio::time::sleep(linger).await;
            return;
        };
        tokio::select! {
            _ = tokio::time::sleep(linger) => {}
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
    });
}

/// `250ms`, `5s`, `2m`, `1h`, or plain seconds: a flag's duration.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, unit) = match t.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => t.split_at(i),
        None => (t, "s"),
    };
    let scale = match unit {
        "ms" => 1e-3,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => {
            return Err(format!(
                "`{s}` is not a duration: write 500ms, 10s, 2m or 1h"
            ))
        }
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && v * scale <= 86_400.0 => {
            Ok(Duration::from_secs_f64(v * scale))
        }
        _ => Err(format!(
            "`{s}` is not a duration from 0 to 24h: write 500ms, 10s, 2m or 1h"
        )),
    }
}

#[cfg(test)]
mod tests;
