//! A query run: `require` guards, then for each repetition an optional warm-up and the measured
//! phase. One dispatcher walks the run's order (`query::schedule`), builds each instance from
//! its bind program and hands it to a worker: to the worker its `route by` key hashes to, or
//! to whichever worker is free. Workers own one connection each and their own statistics,
//! merged at the end. In open loop the dispatcher also keeps the schedule: each instance
//! carries its intended send time, latency counts from there, and an instance that finds its
//! worker's queue full is dropped and counted.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, Mutex};

use super::link::Link;
use super::{fmt_duration, latency, resolve_url, timeouts, RunEnv};
use crate::client::SqlClient;
use crate::gen::route::shard_of;
use crate::plan::{EndpointPlan, Load, QueryPhase, Require, Stop, Threshold};
use crate::query::binds::BindProgram;
use crate::query::schedule::{Arrivals, Mix};
use crate::query::sql::Dialect;
use crate::query::stats::TypeStats;
use crate::query::transport::Transport;
use crate::query::{Instance, QueryError, QueryErrorClass};
use crate::report::{
    CrossCheck, ErrorCount, QueryReport, QueryTypeReport, RepeatReport, Status, ThresholdReport,
};
use crate::value::Value;

/// Instances queued per worker ahead of it. Enough to keep a worker busy between two wake-ups
/// of the dispatcher; small, so an open-loop backlog shows as drops rather than as memory.
const QUEUE: usize = 256;

/// An open-loop send later than this after its intended time counts as late. Well above the
/// timer's 1 ms resolution, so only a real backlog counts.
const LATE: Duration = Duration::from_millis(10);

struct Job {
    inst: Instance,
    /// Open loop: when it was meant to be sent.
    intended: Option<Instant>,
}

enum Queue {
    Own(mpsc::Receiver<Job>),
    Shared(Arc<Mutex<mpsc::Receiver<Job>>>),
    /// Closed loop without routing: each worker takes the next instance of the order itself,
    /// which saves a hand-over between threads per query (a wake-up costs more client CPU
    /// than building the instance).
    Pull(Arc<Puller>),
}

struct Puller {
    mix: std::sync::Mutex<Mix>,
    programs: Arc<Vec<BindProgram>>,
    /// The first instance that could not be built; it ends the round.
    error: std::sync::Mutex<Option<String>>,
}

impl Queue {
    async fn recv(&mut self) -> Option<Job> {
        match self {
            Queue::Own(rx) => rx.recv().await,
            Queue::Shared(rx) => rx.lock().await.recv().await,
            Queue::Pull(p) => {
                let (q, index) = p.mix.lock().ok()?.next_instance()?;
                match p.programs[q].instance(q, index) {
                    Ok(inst) => Some(Job {
                        inst,
                        intended: None,
                    }),
                    Err(e) => {
                        if let Ok(mut first) = p.error.lock() {
                            first.get_or_insert(e);
                        }
                        // Every worker stops: the order cannot go on without this instance.
                        if let Ok(mut mix) = p.mix.lock() {
                            while mix.next_instance().is_some() {}
                        }
                        None
                    }
                }
            }
        }
    }
}

/// One connection and what it measured.
struct Worker {
    id: usize,
    endpoint: Arc<EndpointPlan>,
    url: Arc<str>,
    base_dir: Arc<Path>,
    link: Link<Transport>,
    stats: Vec<TypeStats>,
    measured: u64,
    late: u64,
    /// `check same results across endpoints`: ask for checksums and keep each measured
    /// instance's (query, index, rows, checksum) of the first repetition.
    checksums: bool,
    results: Vec<(usize, u64, u64, u64)>,
}

impl Worker {
    async fn connection(&mut self) -> Result<&mut Transport, QueryError> {
        let (endpoint, url, base_dir) = (&self.endpoint, &self.url, &self.base_dir);
        let checksums = self.checksums;
        self.link
            .get(|| async move {
                let mut t = Transport::connect(endpoint, url, base_dir).await?;
                if checksums {
                    t.set_checksums(true);
                }
                Ok(t)
            })
            .await
    }

    async fn round(
        mut self,
        mut queue: Queue,
        record: Record,
        until: Until,
        live: Arc<Live>,
    ) -> Worker {
        while let Some(job) = queue.recv().await {
            let sent = Instant::now();
            // Queued work past the end of a timed round, or after Ctrl-C, is not sent.
            if until.stop.load(Ordering::Relaxed) || until.deadline.is_some_and(|d| sent >= d) {
                break;
            }
            if record != Record::No {
                if let Some(t) = job.intended {
                    if sent.saturating_duration_since(t) > LATE {
                        self.late += 1;
                    }
                }
            }
            let result = match self.connection().await {
                Ok(conn) => conn.run(&job.inst).await,
                Err(e) => Err(e),
            };
            let done = Instant::now();
            if let Err(e) = &result {
                if e.broken {
                    self.link.conn = None;
                }
            }
            if record == Record::No {
                continue;
            }
            let stats = &mut self.stats[job.inst.query];
            self.measured += 1;
            match result {
                Ok(out) => {
                    if let (Record::WithResults, Some(sum)) = (record, out.checksum) {
                        let i = &job.inst;
                        self.results.push((i.query, i.index, out.rows, sum));
                    }
                    let from = job.intended.unwrap_or(sent);
                    let service = job.intended.map(|_| done - sent);
                    stats.record_ok(done.saturating_duration_since(from), service, out.rows);
                    live.ok.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    stats.record_error(&e);
                    live.failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        self
    }
}

/// What a round keeps: nothing (warm-up), the measurements, or those and every result's
/// checksum (the first measured repetition of a cross-checked run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Record {
    No,
    Measure,
    WithResults,
}

/// When a round ends besides the end of its order.
#[derive(Clone)]
struct Until {
    deadline: Option<Instant>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

/// Counters the progress line reads while the run goes on.
#[derive(Default)]
pub struct Live {
    pub ok: AtomicU64,
    pub failed: AtomicU64,
}

/// What a measured round of the dispatcher saw.
#[derive(Default)]
struct Dispatched {
    dropped: u64,
    /// Instances the dispatcher itself handed over more than `LATE` behind schedule.
    behind: u64,
    errors: Vec<String>,
}

/// Everything a round of the dispatcher needs.
struct Round<'a> {
    programs: Arc<Vec<BindProgram>>,
    mix: Mix,
    arrivals: Option<Arrivals>,
    deadline: Option<Instant>,
    env: &'a RunEnv,
}

/// Feeds one round's instances to the workers; returns when the order ends, the deadline
/// passes or the run is stopped. Dropping the senders ends the workers' round.
async fn dispatch(
    mut round: Round<'_>,
    own: Vec<mpsc::Sender<Job>>,
    shared: Option<mpsc::Sender<Job>>,
) -> Dispatched {
    let mut out = Dispatched::default();
    let start = Instant::now();
    let workers = own.len().max(1) as u64;
    let mut turn = 0u64;
    while let Some((q, index)) = round.mix.next_instance() {
        if round.env.stop.load(Ordering::Relaxed)
            || round.deadline.is_some_and(|d| Instant::now() >= d)
        {
            break;
        }
        let inst = match round.programs[q].instance(q, index) {
            Ok(i) => i,
            Err(e) => {
                out.errors.push(e);
                break;
            }
        };
        let intended = match &mut round.arrivals {
            Some(a) => {
                let at = start + a.next_offset();
                if round.deadline.is_some_and(|d| at >= d) {
                    break;
                }
                tokio::time::sleep_until(at.into()).await;
                if Instant::now().saturating_duration_since(at) > LATE {
                    out.behind += 1;
                }
                Some(at)
            }
            None => None,
        };
        // A routed instance goes to the worker its key hashes to (FNV-1a, as ingest routes
        // series); others in a routed run take turns; an unrouted run shares one queue.
        let to = match (&shared, &inst.route) {
            (Some(tx), _) => tx,
            (None, Some(key)) => &own[shard_of(key, workers) as usize],
            (None, None) => {
                turn += 1;
                &own[((turn - 1) % workers) as usize]
            }
        };
        let job = Job { inst, intended };
        if intended.is_some() {
            // Open loop: a queue that is full means the workers cannot keep up; the instance
            // is dropped and counted, not waited for (waiting would bend the schedule).
            if let Err(e) = to.try_send(job) {
                match e {
                    mpsc::error::TrySendError::Full(_) => out.dropped += 1,
                    mpsc::error::TrySendError::Closed(_) => break,
                }
            }
        } else if to.send(job).await.is_err() {
            break;
        }
    }
    out
}

/// A report for a phase that could not start.
fn refused(phase: &QueryPhase, status: Status, why: String) -> QueryReport {
    let mut r = QueryReport::empty(phase);
    r.status = status;
    r.failures.push(why);
    r
}

/// Checks `require rows(T) OP N` on a connection of the phase's endpoint.
pub(super) async fn requirements(
    env: &RunEnv,
    require: &[Require],
    endpoint: &EndpointPlan,
    url: &str,
) -> Result<(), String> {
    if require.is_empty() {
        return Ok(());
    }
    let (timeout, _) = timeouts(endpoint);
    let mut client = SqlClient::connect(endpoint, url, &env.base_dir, timeout)
        .await
        .map_err(|e| format!("cannot check `require`: {}", e.message))?;
    for r in require {
        let sql = format!(
            "SELECT count(*) FROM {}",
            crate::exec::ddl::quote_ident(&r.table)
        );
        let n = client.count(&sql).await.map_err(|e| {
            format!(
                "cannot check `require rows({}) {} {}`: {}",
                r.table, r.op, r.value, e.message
            )
        })?;
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        if !compare(n as f64, &r.op, r.value as f64) {
            return Err(format!(
                "refusing to measure: require rows({}) {} {}, but the table has {n} rows",
                r.table, r.op, r.value
            ));
        }
    }
    Ok(())
}

pub(super) fn compare(actual: f64, op: &str, want: f64) -> bool {
    match op {
        "<" => actual < want,
        "<=" => actual <= want,
        ">" => actual > want,
        ">=" => actual >= want,
        "==" => actual == want,
        "!=" => actual != want,
        _ => false,
    }
}

fn warmup_of(phase: &QueryPhase) -> (Option<u64>, Option<Duration>) {
    match &phase.warmup {
        Some(Value::Int(n)) if *n > 0 => (Some(*n as u64), None),
        Some(Value::Duration(ns)) if *ns > 0 => (None, Some(Duration::from_nanos(*ns as u64))),
        _ => (None, None),
    }
}

fn duration_of(stop: &Stop) -> Option<Duration> {
    match stop {
        Stop::Duration {
            duration: Value::Duration(ns),
        } => Some(Duration::from_nanos((*ns).max(0) as u64)),
        _ => None,
    }
}

/// Runs one round (a warm-up or a measured repetition) and gives the workers back.
async fn round(
    workers: Vec<Worker>,
    routed: bool,
    record: Record,
    r: Round<'_>,
    live: &Arc<Live>,
) -> (Vec<Worker>, Dispatched, Duration) {
    let started = Instant::now();
    let until = Until {
        deadline: r.deadline,
        stop: r.env.stop.clone(),
    };
    let mut handles = Vec::new();
    let mut puller = None;
    let mut dispatched = Dispatched::default();
    if routed {
        let mut own = Vec::new();
        for w in workers {
            let (tx, rx) = mpsc::channel(QUEUE);
            own.push(tx);
            let q = Queue::Own(rx);
            handles.push(tokio::spawn(w.round(
                q,
                record,
                until.clone(),
                live.clone(),
            )));
        }
        dispatched = dispatch(r, own, None).await;
    } else if r.arrivals.is_none() {
        let p = Arc::new(Puller {
            mix: std::sync::Mutex::new(r.mix),
            programs: r.programs.clone(),
            error: std::sync::Mutex::new(None),
        });
        for w in workers {
            let q = Queue::Pull(p.clone());
            handles.push(tokio::spawn(w.round(
                q,
                record,
                until.clone(),
                live.clone(),
            )));
        }
        puller = Some(p);
    } else {
        let (tx, rx) = mpsc::channel(QUEUE * workers.len().max(1));
        let rx = Arc::new(Mutex::new(rx));
        for w in workers {
            let q = Queue::Shared(rx.clone());
            handles.push(tokio::spawn(w.round(
                q,
                record,
                until.clone(),
                live.clone(),
            )));
        }
        dispatched = dispatch(r, Vec::new(), Some(tx)).await;
    }
    let mut back = Vec::new();
    for h in handles {
        match h.await {
            Ok(w) => back.push(w),
            // A worker that panicked takes its measurements with it; the report says so.
            Err(e) => sayln!("wlrun: a query worker failed: {e}"),
        }
    }
    if let Some(e) = puller.and_then(|p| p.error.lock().ok().and_then(|mut e| e.take())) {
        dispatched.errors.push(e);
    }
    (back, dispatched, started.elapsed())
}

pub async fn run(env: &RunEnv, label: &str, phase: &QueryPhase) -> QueryReport {
    let url = match phase.endpoint.url.as_ref().map(resolve_url) {
        Some(Ok(u)) => u,
        Some(Err(e)) => return refused(phase, Status::Failed, e),
        None => String::new(),
    };
    // Inlined lists are written in the endpoint's SQL dialect.
    let dialect = Dialect::of_endpoint(&phase.endpoint.kind, &phase.endpoint.dialect);
    let mut programs = Vec::with_capacity(phase.queries.len());
    for q in &phase.queries {
        match BindProgram::compile(q, env.seed, &env.base_dir) {
            Ok(p) => programs.push(p.with_dialect(dialect)),
            Err(e) => return refused(phase, Status::Failed, format!("query {}: {e}", q.name)),
        }
    }
    let programs = Arc::new(programs);
    if let Err(e) = requirements(env, &phase.require, &phase.endpoint, &url).await {
        return refused(phase, Status::Failed, e);
    }

    let endpoint = Arc::new(phase.endpoint.clone());
    let url: Arc<str> = url.into();
    let base_dir: Arc<Path> = env.base_dir.clone().into();
    let mut workers: Vec<Worker> = (0..phase.workers.max(1) as usize)
        .map(|id| Worker {
            id,
            endpoint: endpoint.clone(),
            url: url.clone(),
            base_dir: base_dir.clone(),
            link: Link::default(),
            stats: vec![TypeStats::default(); phase.queries.len()],
            measured: 0,
            late: 0,
            checksums: phase.check_same_results,
            results: Vec::new(),
        })
        .collect();
    let routed = phase.queries.iter().any(|q| q.route.is_some());
    let live = Arc::new(Live::default());
    let mut report = QueryReport::empty(phase);
    let (warm_count, warm_time) = warmup_of(phase);
    let measured_for = duration_of(&phase.stop);
    let ticker = super::progress::start(
        env,
        label.to_string(),
        Mix::measured(phase, env.seed)
            .bound()
            .map(|n| n * phase.repeat.max(1)),
        "queries",
        {
            let live = live.clone();
            Box::new(move || {
                let ok = live.ok.load(Ordering::Relaxed);
                let failed = live.failed.load(Ordering::Relaxed);
                (ok + failed, format!("{failed} failed"))
            })
        },
    );
    let mut dropped = 0;
    let mut behind = 0;
    for rep in 0..phase.repeat.max(1) {
        if env.stop.load(Ordering::Relaxed) {
            break;
        }
        if warm_count.is_some() || warm_time.is_some() {
            let r = Round {
                programs: programs.clone(),
                mix: Mix::warmup(phase, env.seed, warm_count),
                arrivals: None,
                deadline: warm_time.map(|d| Instant::now() + d),
                env,
            };
            let (back, d, _) = round(workers, routed, Record::No, r, &live).await;
            workers = back;
            report.failures.extend(d.errors);
        }
        let r = Round {
            programs: programs.clone(),
            mix: Mix::measured(phase, env.seed),
            arrivals: Arrivals::new(&phase.load, env.seed),
            deadline: measured_for.map(|d| Instant::now() + d),
            env,
        };
        let before: u64 = workers.iter().map(|w| w.measured).sum();
        let cpu_before = super::cpu::process_cpu_seconds();
        let record = if phase.check_same_results && rep == 0 {
            Record::WithResults
        } else {
            Record::Measure
        };
        let (back, d, elapsed) = round(workers, routed, record, r, &live).await;
        if let (Some(a), Some(b)) = (cpu_before, super::cpu::process_cpu_seconds()) {
            *report.client_cpu_s.get_or_insert(0.0) += b - a;
        }
        workers = back;
        let queries: u64 = workers.iter().map(|w| w.measured).sum::<u64>() - before;
        report.repeats.push(RepeatReport {
            repeat: rep + 1,
            elapsed_s: elapsed.as_secs_f64(),
            queries,
            qps: queries as f64 / elapsed.as_secs_f64().max(1e-9),
        });
        report.failures.extend(d.errors);
        dropped += d.dropped;
        behind += d.behind;
    }
    ticker.finish().await;
    finish(&mut report, phase, workers, dropped, behind, env);
    report
}

/// Merges the workers' measurements into the report and judges the thresholds.
fn finish(
    report: &mut QueryReport,
    phase: &QueryPhase,
    workers: Vec<Worker>,
    dropped: u64,
    behind: u64,
    env: &RunEnv,
) {
    let mut types = vec![TypeStats::default(); phase.queries.len()];
    for w in &workers {
        for (t, s) in types.iter_mut().zip(&w.stats) {
            t.merge(s);
        }
    }
    let mut per_worker = vec![0; workers.len()];
    for w in &workers {
        if let Some(slot) = per_worker.get_mut(w.id) {
            *slot = w.measured;
        }
    }
    report.queries_per_worker = per_worker;
    if phase.check_same_results {
        let mut results = BTreeMap::new();
        for w in &workers {
            for &(q, index, rows, sum) in &w.results {
                results.insert((q, index), (rows, sum));
            }
        }
        report.results = Some(Arc::new(results));
    }
    report.accounting.late = workers.iter().map(|w| w.late).sum();
    report.accounting.unsent = dropped;
    let open = matches!(phase.load, Load::Open { .. });
    let elapsed: f64 = report.repeats.iter().map(|r| r.elapsed_s).sum();
    report.elapsed_s = elapsed;
    let mut all = TypeStats::default();
    for (q, s) in phase.queries.iter().zip(&types) {
        all.merge(s);
        let failed = s.failed();
        let mut t = QueryTypeReport {
            name: q.name.clone(),
            label: q.label.clone(),
            ok: s.ok,
            failed,
            rows: s.rows,
            rows_per_query: (s.ok > 0).then(|| s.rows as f64 / s.ok as f64),
            qps: s.ok as f64 / elapsed.max(1e-9),
            sum_us: s.sum_us as u64,
            latency: latency(&s.latency),
            service: open.then(|| latency(&s.service)),
            errors: errors(s),
            thresholds: Vec::new(),
        };
        t.thresholds = q.expects.iter().map(|th| judge(th, s, elapsed)).collect();
        report.query_types.push(t);
    }
    report.ok = all.ok;
    report.failed = all.failed();
    report.rows = all.rows;
    report.qps = all.ok as f64 / elapsed.max(1e-9);
    report.sum_us = all.sum_us as u64;
    report.latency = latency(&all.latency);
    report.service = open.then(|| latency(&all.service));
    report.errors = errors(&all);
    report.error_rate = all.error_rate();
    report.thresholds = phase
        .expects
        .iter()
        .map(|th| judge(th, &all, elapsed))
        .collect();

    report
        .failures
        .extend(error_policy(&phase.expects, env, &all, "queries"));
    let failed = failed_thresholds(
        report
            .thresholds
            .iter()
            .chain(report.query_types.iter().flat_map(|t| &t.thresholds)),
        env,
    );
    report.failures.extend(failed);
    if report.ok + report.failed == 0 && report.failures.is_empty() {
        report.failures.push("no query was measured".into());
    }
    if open {
        let sent = report.ok + report.failed;
        report
            .warnings
            .extend(open_loop_warnings(sent, dropped, behind, "queries"));
    }
    report.status = if env.stop.load(Ordering::Relaxed) {
        Status::Interrupted
    } else if report.failures.is_empty() {
        Status::Ok
    } else {
        Status::Failed
    };
}

/// Open loop: scheduled sends that were dropped, and a dispatcher that fell behind its own
/// schedule for more than 1% of them. `unit`: `queries` or `requests`.
pub(super) fn open_loop_warnings(sent: u64, dropped: u64, behind: u64, unit: &str) -> Vec<String> {
    let mut out = Vec::new();
    if dropped > 0 {
        out.push(format!(
            "{dropped} scheduled {unit} were dropped: the queues were full (the server or the client cannot keep the rate)"
        ));
    }
    let scheduled = sent + dropped;
    if scheduled > 0 && behind * 100 > scheduled {
        out.push(format!(
            "the client could not keep its own schedule: {behind} of {scheduled} {unit} were handed over more than {} late; the figures measure the client too",
            fmt_duration(LATE)
        ));
    }
    out
}

/// Errors fail the run unless a threshold allows them: `--max-error-rate`, else the file's
/// `expect error_rate` (or `errors`), else none at all. `unit` names what failed: `queries`.
pub(super) fn error_policy(
    expects: &[Threshold],
    env: &RunEnv,
    all: &TypeStats,
    unit: &str,
) -> Option<String> {
    let file_rate = expects
        .iter()
        .any(|t| t.metric == "error_rate" || t.metric == "errors");
    match env.max_error_rate {
        Some(max) if all.error_rate() > max => Some(format!(
            "error rate {:.4}% is over --max-error-rate {:.4}%",
            100.0 * all.error_rate(),
            100.0 * max
        )),
        None if !file_rate && all.failed() > 0 => Some(format!(
            "{} of {} {unit} failed (no `expect error_rate` allows errors)",
            all.failed(),
            all.failed() + all.ok
        )),
        _ => None,
    }
}

/// One failure line per threshold not met; `--max-error-rate` replaces the file's own
/// error-rate threshold, so that one is not judged.
pub(super) fn failed_thresholds<'a>(
    thresholds: impl Iterator<Item = &'a ThresholdReport>,
    env: &RunEnv,
) -> Vec<String> {
    let overridden = |t: &ThresholdReport| env.max_error_rate.is_some() && t.metric == "error_rate";
    thresholds
        .filter(|t| !t.ok && !overridden(t))
        .map(|t| format!("threshold not met: {} (measured {})", t.expect, t.actual))
        .collect()
}

pub(super) fn errors(s: &TypeStats) -> std::collections::BTreeMap<String, ErrorCount> {
    s.errors
        .iter()
        .map(|(class, e)| {
            (
                class_name(*class).to_string(),
                ErrorCount {
                    count: e.count,
                    first: e.first.clone(),
                },
            )
        })
        .collect()
}

fn class_name(c: QueryErrorClass) -> &'static str {
    match c {
        QueryErrorClass::Sql => "sql",
        QueryErrorClass::HttpStatus => "http_status",
        QueryErrorClass::Timeout => "timeout",
        QueryErrorClass::Connection => "connection",
        QueryErrorClass::Client => "client",
        QueryErrorClass::Body => "body",
        QueryErrorClass::Hook => "hook",
    }
}

/// Measures a threshold's metric and compares it.
pub(super) fn judge(th: &Threshold, s: &TypeStats, elapsed_s: f64) -> ThresholdReport {
    let us = |q: f64| -> f64 {
        if s.latency.is_empty() {
            0.0
        } else {
            s.latency.value_at_quantile(q) as f64
        }
    };
    // (measured, wanted) in the metric's unit: microseconds, a fraction, a count, per second.
    let (actual, want, shown) = match th.metric.as_str() {
        m @ ("min" | "mean" | "median" | "p50" | "p90" | "p95" | "p99" | "p999" | "p9999"
        | "max") => {
            let v = match m {
                "min" => s.latency.min() as f64,
                "mean" => s.latency.mean(),
                "median" | "p50" => us(0.5),
                "p90" => us(0.9),
                "p95" => us(0.95),
                "p99" => us(0.99),
                "p999" => us(0.999),
                "p9999" => us(0.9999),
                _ => s.latency.max() as f64,
            };
            let want = match &th.value {
                Value::Duration(ns) => *ns as f64 / 1000.0,
                other => other_number(other),
            };
            (v, want, fmt_us(v))
        }
        "error_rate" => {
            let want = match &th.value {
                Value::Percent(p) => p / 100.0,
                other => other_number(other),
            };
            (
                s.error_rate(),
                want,
                format!("{:.4}%", 100.0 * s.error_rate()),
            )
        }
        "errors" => (
            s.failed() as f64,
            other_number(&th.value),
            s.failed().to_string(),
        ),
        "rows" => (s.rows as f64, other_number(&th.value), s.rows.to_string()),
        "qps" | "rps" => {
            let qps = s.ok as f64 / elapsed_s.max(1e-9);
            let want = match &th.value {
                Value::Rate(r) => *r,
                other => other_number(other),
            };
            (qps, want, format!("{qps:.1}/s"))
        }
        _ => (f64::NAN, 0.0, "not measured".to_string()),
    };
    ThresholdReport {
        metric: th.metric.clone(),
        expect: format!("{} {} {}", th.metric, th.op, th.value),
        actual: shown,
        ok: compare(actual, &th.op, want),
    }
}

fn other_number(v: &Value) -> f64 {
    match v {
        Value::Int(n) => *n as f64,
        Value::Float(f) | Value::Percent(f) | Value::Rate(f) => *f,
        _ => f64::NAN,
    }
}

fn fmt_us(us: f64) -> String {
    if us >= 1000.0 {
        format!("{:.2}ms", us / 1000.0)
    } else {
        format!("{us:.0}us")
    }
}

/// Whether a query's result rows may legitimately differ between servers: a LIMIT without an
/// ORDER BY keeps whichever rows come first. Such queries are flagged, not compared. (A LIMIT
/// under an ORDER BY with ties can differ too; that is not detected.)
pub fn unordered_limit(sql: &str) -> bool {
    let upper = sql.to_ascii_uppercase();
    let words: Vec<&str> = upper
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .collect();
    let limit = words.contains(&"LIMIT");
    let ordered = words.windows(2).any(|w| w == ["ORDER", "BY"]);
    limit && !ordered
}

/// Compares the results of `later` with those of `earlier` (the same run over another
/// endpoint), per query instance both measured, and records the outcome on `later`.
pub fn cross_check(earlier: &QueryReport, later: &mut QueryReport, phase: &QueryPhase) {
    let (Some(a), Some(b)) = (&earlier.results, &later.results) else {
        return;
    };
    let skip: Vec<usize> = phase
        .queries
        .iter()
        .enumerate()
        .filter(|(_, q)| unordered_limit(&q.sql))
        .map(|(i, _)| i)
        .collect();
    let mut check = CrossCheck {
        against: earlier.endpoint.clone(),
        compared: 0,
        mismatches: 0,
        first_mismatches: Vec::new(),
        not_compared: skip
            .iter()
            .map(|&i| phase.queries[i].name.clone())
            .collect(),
    };
    for (key, (rows_b, sum_b)) in b.iter() {
        if skip.contains(&key.0) {
            continue;
        }
        let Some((rows_a, sum_a)) = a.get(key) else {
            continue;
        };
        check.compared += 1;
        if rows_a != rows_b || sum_a != sum_b {
            check.mismatches += 1;
            if check.first_mismatches.len() < 10 {
                check.first_mismatches.push(format!(
                    "{} instance {}: {} rows, checksum {sum_a:016x} on {}; {} rows, checksum {sum_b:016x} on {}",
                    phase.queries[key.0].name, key.1, rows_a, earlier.endpoint, rows_b, later.endpoint
                ));
            }
        }
    }
    if check.mismatches > 0 {
        later.failures.push(format!(
            "results differ from {}: {} of {} query instances (first: {})",
            earlier.endpoint, check.mismatches, check.compared, check.first_mismatches[0]
        ));
        if later.status == Status::Ok {
            later.status = Status::Failed;
        }
    } else if check.compared == 0 && !b.is_empty() {
        later.warnings.push(format!(
            "no query instance was measured on both {} and {}: nothing compared",
            earlier.endpoint, later.endpoint
        ));
    }
    later.cross_checks.push(check);
}
