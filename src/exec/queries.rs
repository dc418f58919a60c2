//! A query run: `require` guards, then for each repetition an optional warm-up and the measured
//! phase. The run's order (`query::schedule`) says which query each instance is; workers own
//! one connection each and their own statistics, merged at the end. Without `route by` each
//! free worker takes the next instance itself; with it, one dispatcher hands each instance to
//! the worker its key hashes to, through a short queue.
//!
//! Open loop (`rate R`): the order also carries each instance's intended send time from a
//! computed schedule (`slots::Schedule`, wrk2's model: nothing is dropped or queued without
//! bound). The worker connects first, waits precisely until that time (`pace::Pacer`), sends,
//! and the latency counts from the intended time. Every scheduled instance ends as ok, failed,
//! cut off (in flight when the phase ended) or unsent (`account`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::account::{Cutoff, Sends};
use super::judge::{self, errors, failed_thresholds, judge, Units};
use super::link::Link;
use super::pace::Pacer;
use super::progress::RunCounts;
use super::require::requirements;
use super::slots::{Schedule, Slot};
use super::spans;
use super::{latency, resolve_url, RunEnv};
use crate::gen::route::shard_of;
use crate::plan::{EndpointPlan, Load, QueryPhase};
use crate::query::binds::BindProgram;
use crate::query::schedule::{Arrivals, Mix};
use crate::query::sql::Dialect;
use crate::query::stats::TypeStats;
use crate::query::transport::Transport;
use crate::query::{Instance, QueryError, QueryErrorClass};
use crate::report::{CrossCheck, LabelReport, QueryOutput, QueryReport, QueryTypeReport, Status};

/// Instances queued per worker ahead of it (routed runs). Enough to keep a worker busy between
/// two wake-ups of the dispatcher; the dispatcher waits when it is full, so memory stays small
/// and nothing is dropped (open-loop instances carry their intended time with them).
const QUEUE: usize = 256;

struct Job {
    inst: Instance,
    /// Open loop: when it is meant to be sent.
    slot: Option<Slot>,
}

enum Queue {
    /// Routed: what the dispatcher hands this worker.
    Own(mpsc::Receiver<Job>),
    /// Unrouted: each worker takes the next instance of the order itself, which saves a
    /// hand-over between threads per query (a wake-up costs more client CPU than building the
    /// instance).
    Pull(Arc<Puller>),
}

/// The order of a round, and (open loop) its schedule, under one lock so that the k-th slot
/// always carries the k-th instance.
struct Order {
    mix: Mix,
    schedule: Option<Schedule>,
}

impl Order {
    /// The next (query, index) and its slot; `None` at the end of the order or the schedule.
    fn next(&mut self) -> Option<(usize, u64, Option<Slot>)> {
        let slot = match &mut self.schedule {
            Some(s) => Some(s.take()?),
            None => None,
        };
        let (q, index) = self.mix.next_instance()?;
        Some((q, index, slot))
    }

    /// Ends the order and the schedule now (a stop, or an instance that cannot be built).
    fn close(&mut self) {
        if let Some(s) = &mut self.schedule {
            s.close(Instant::now());
        }
        while self.mix.next_instance().is_some() {}
    }
}

struct Puller {
    order: std::sync::Mutex<Order>,
    programs: Arc<Vec<BindProgram>>,
    /// The first instance that could not be built; it ends the round.
    error: std::sync::Mutex<Option<String>>,
}

impl Queue {
    async fn recv(&mut self, until: &Until) -> Option<Job> {
        match self {
            Queue::Own(rx) => rx.recv().await,
            Queue::Pull(p) => {
                let next = {
                    let mut order = p.order.lock().ok()?;
                    if until.halted() {
                        order.close();
                        return None;
                    }
                    order.next()
                };
                let (q, index, slot) = next?;
                match p.programs[q].instance(q, index) {
                    Ok(inst) => Some(Job { inst, slot }),
                    Err(e) => {
                        if let Ok(mut first) = p.error.lock() {
                            first.get_or_insert(e);
                        }
                        // Every worker stops: the order cannot go on without this instance.
                        if let Ok(mut order) = p.order.lock() {
                            order.close();
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
    pacer: Pacer,
    stats: Vec<TypeStats>,
    sends: Sends,
    /// `check same results across endpoints`: ask for checksums and keep each measured
    /// instance's (query, index, rows, checksum) of the first repetition.
    checksums: bool,
    results: Vec<(usize, u64, u64, u64)>,
}

impl Worker {
    async fn connect(
        link: &mut Link<Transport>,
        endpoint: &EndpointPlan,
        url: &str,
        base_dir: &Path,
        checksums: bool,
    ) -> Result<(), QueryError> {
        link.get(|| async move {
            let mut t = Transport::connect(endpoint, url, base_dir).await?;
            if checksums {
                t.set_checksums(true);
            }
            Ok(t)
        })
        .await
        .map(|_| ())
    }

    async fn round(mut self, mut queue: Queue, record: Record, until: Until) -> Worker {
        while let Some(job) = queue.recv(&until).await {
            // Connected before the wait, so that the send itself leaves on time. A connect
            // still pending when the phase ends sent nothing: the instance is not sent.
            let connected = if self.link.conn.is_some() {
                Ok(())
            } else {
                let connect = Self::connect(
                    &mut self.link,
                    &self.endpoint,
                    &self.url,
                    &self.base_dir,
                    self.checksums,
                );
                let Some(connected) = until.cutoff.bound(connect).await else {
                    break;
                };
                connected
            };
            if let Some(slot) = job.slot {
                if !self.pacer.until(slot.at, &until.cutoff.stop).await {
                    break;
                }
            }
            let sent = Instant::now();
            // Nothing starts after the end of a timed round or after a stop: what is left of
            // the order is unsent (open loop) or was never scheduled (closed loop).
            if until.halted() || until.end.is_some_and(|d| sent >= d) {
                break;
            }
            let intended = job.slot.map(|s| s.at);
            if record != Record::No {
                self.sends.start(sent, intended);
            }
            let result = match (connected, self.link.conn.as_mut()) {
                (Ok(()), Some(conn)) => until.cutoff.bound(conn.run(&job.inst)).await,
                (Err(e), _) => Some(Err(e)),
                (Ok(()), None) => Some(Err(QueryError {
                    class: QueryErrorClass::Connection,
                    message: "no connection".into(),
                    code: None,
                    broken: true,
                })),
            };
            let done = Instant::now();
            let Some(result) = result else {
                // Cut off: the phase ended with this query in flight; its connection is in an
                // unknown state and is not used again.
                self.link.conn = None;
                if record != Record::No {
                    self.sends.cut_off += 1;
                }
                break;
            };
            if let Err(e) = &result {
                if e.broken {
                    self.link.conn = None;
                }
            }
            if record == Record::No {
                continue;
            }
            let stats = &mut self.stats[job.inst.query];
            match result {
                Ok(out) => {
                    if let (Record::WithResults, Some(sum)) = (record, out.checksum) {
                        let i = &job.inst;
                        self.results.push((i.query, i.index, out.rows, sum));
                    }
                    let from = intended.unwrap_or(sent);
                    let service = intended.map(|_| done - sent);
                    stats.record_ok(done.saturating_duration_since(from), service, out.rows);
                    until.counts.ok.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    stats.record_error(&e);
                    let failed = until.counts.failed.fetch_add(1, Ordering::Relaxed) + 1;
                    if until.max_errors.is_some_and(|n| failed >= n) {
                        until.abort.store(true, Ordering::Relaxed);
                    }
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
    /// No send starts at or after this.
    end: Option<Instant>,
    cutoff: Cutoff,
    counts: Arc<RunCounts>,
    /// `stop after N errors` (or `--fail-fast`): set at the N-th failed query; the round stops
    /// sending, and what was not sent is unsent.
    max_errors: Option<u64>,
    abort: Arc<std::sync::atomic::AtomicBool>,
}

impl Until {
    /// Stopped (Ctrl-C) or aborted (too many errors): nothing more is sent.
    fn halted(&self) -> bool {
        self.cutoff.stop.load(Ordering::Relaxed) || self.abort.load(Ordering::Relaxed)
    }
}

/// Everything a round needs.
struct Round<'a> {
    programs: Arc<Vec<BindProgram>>,
    mix: Mix,
    arrivals: Option<Arrivals>,
    /// How long the round lasts, when timed.
    span: Option<Duration>,
    env: &'a RunEnv,
    /// The phase's error limit, and its flag (shared by its rounds).
    max_errors: Option<u64>,
    abort: Arc<std::sync::atomic::AtomicBool>,
}

/// What a round did besides its workers' own counts.
struct Ended {
    errors: Vec<String>,
    /// Open loop: the slots due in the round's span; closed loop: the order's bound, if any.
    scheduled: Option<u64>,
    elapsed: Duration,
}

/// Routed: feeds the round's instances to the workers their keys hash to; returns when the
/// order or the schedule ends or the run is stopped, with the order (and its schedule) back.
/// Dropping the senders ends the workers' round.
async fn dispatch(
    mut order: Order,
    programs: &[BindProgram],
    own: Vec<mpsc::Sender<Job>>,
    until: &Until,
) -> (Order, Vec<String>) {
    let mut errors = Vec::new();
    let workers = own.len().max(1) as u64;
    let mut turn = 0u64;
    loop {
        if until.halted() {
            order.close();
            break;
        }
        if order.schedule.is_none() && until.end.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let Some((q, index, slot)) = order.next() else {
            break;
        };
        let inst = match programs[q].instance(q, index) {
            Ok(i) => i,
            Err(e) => {
                errors.push(e);
                order.close();
                break;
            }
        };
        // A routed instance goes to the worker its key hashes to (FNV-1a, as ingest routes
        // series); the others take turns.
        let to = match &inst.route {
            Some(key) => &own[shard_of(key, workers) as usize],
            None => {
                turn += 1;
                &own[((turn - 1) % workers) as usize]
            }
        };
        if to.send(Job { inst, slot }).await.is_err() {
            break;
        }
    }
    (order, errors)
}

/// A report for a phase that could not start.
fn refused(phase: &QueryPhase, status: Status, why: String) -> QueryReport {
    let mut r = QueryReport::empty(phase);
    r.status = status;
    r.failures.push(why);
    r
}
/// Runs one round (a warm-up or a measured repetition) and gives the workers back.
async fn round(
    workers: Vec<Worker>,
    routed: bool,
    record: Record,
    r: Round<'_>,
    counts: &Arc<RunCounts>,
) -> (Vec<Worker>, Ended) {
    let started = Instant::now();
    let bound = r.mix.bound();
    let schedule = r.arrivals.map(|a| Schedule::new(a, started, r.span, bound));
    let open = schedule.is_some();
    let end = match &schedule {
        Some(s) => s.end(),
        None => r.span.map(|d| started + d),
    };
    let until = Until {
        end,
        cutoff: Cutoff::after(end, r.env.stop.clone()),
        counts: counts.clone(),
        max_errors: if record == Record::No {
            None
        } else {
            r.max_errors
        },
        abort: r.abort.clone(),
    };
    let order = Order {
        mix: r.mix,
        schedule,
    };
    let mut handles = Vec::new();
    let mut errors = Vec::new();
    let mut routed_order = None;
    let mut puller = None;
    if routed {
        let mut own = Vec::new();
        for w in workers {
            let (tx, rx) = mpsc::channel(QUEUE);
            own.push(tx);
            handles.push(tokio::spawn(w.round(Queue::Own(rx), record, until.clone())));
        }
        let (order, e) = dispatch(order, &r.programs, own, &until).await;
        routed_order = Some(order);
        errors = e;
    } else {
        let p = Arc::new(Puller {
            order: std::sync::Mutex::new(order),
            programs: r.programs.clone(),
            error: std::sync::Mutex::new(None),
        });
        for w in workers {
            let q = Queue::Pull(p.clone());
            handles.push(tokio::spawn(w.round(q, record, until.clone())));
        }
        puller = Some(p);
    }
    let mut back = Vec::new();
    for h in handles {
        match h.await {
            Ok(w) => back.push(w),
            // A worker that panicked takes its measurements with it; the report says so.
            Err(e) => sayln!("wlrun: a query worker failed: {e}"),
        }
    }
    let elapsed = started.elapsed();
    let ended_at = Instant::now();
    let scheduled_of = |order: &Order| match &order.schedule {
        Some(s) => Some(s.scheduled(ended_at)),
        None => bound,
    };
    let mut scheduled = routed_order.as_ref().and_then(scheduled_of);
    if let Some(p) = puller {
        if let Some(e) = p.error.lock().ok().and_then(|mut e| e.take()) {
            errors.push(e);
        }
        if let Ok(order) = p.order.lock() {
            scheduled = scheduled_of(&order);
        }
    }
    debug_assert!(!open || scheduled.is_some());
    (
        back,
        Ended {
            errors,
            scheduled,
            elapsed,
        },
    )
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
            pacer: Pacer::default(),
            stats: vec![TypeStats::default(); phase.queries.len()],
            sends: Sends::default(),
            checksums: phase.check_same_results,
            results: Vec::new(),
        })
        .collect();
    let routed = phase.queries.iter().any(|q| q.route.is_some());
    let counts = Arc::new(RunCounts::default());
    let mut report = QueryReport::empty(phase);
    let (warm_count, warm_time) = spans::warmup(&phase.warmup);
    let measured_for = spans::measured(&phase.stop);
    let ticker = super::progress::start_run(
        env,
        label.to_string(),
        Mix::measured(phase, env.seed)
            .bound()
            .map(|n| n * phase.repeat.max(1)),
        "queries",
        counts.clone(),
    );
    let mut scheduled = 0u64;
    let max_errors = super::max_errors(env, phase.stop_after_errors);
    let abort = Arc::new(std::sync::atomic::AtomicBool::new(false));
    for rep in 0..phase.repeat.max(1) {
        if env.stop.load(Ordering::Relaxed) || abort.load(Ordering::Relaxed) {
            break;
        }
        if warm_count.is_some() || warm_time.is_some() {
            counts.warmup.store(true, Ordering::Relaxed);
            let r = Round {
                programs: programs.clone(),
                mix: Mix::warmup(phase, env.seed, warm_count),
                arrivals: None,
                span: warm_time,
                env,
                max_errors,
                abort: abort.clone(),
            };
            let (back, ended) = round(workers, routed, Record::No, r, &counts).await;
            counts.warmup.store(false, Ordering::Relaxed);
            workers = back;
            report.failures.extend(ended.errors);
        }
        let r = Round {
            programs: programs.clone(),
            mix: Mix::measured(phase, env.seed),
            arrivals: Arrivals::new(&phase.load, env.seed),
            span: measured_for,
            env,
            max_errors,
            abort: abort.clone(),
        };
        let sent = |ws: &[Worker]| ws.iter().map(|w| w.sends.sent).sum::<u64>();
        let answered = |ws: &[Worker]| {
            ws.iter()
                .flat_map(|w| &w.stats)
                .map(|s| s.ok + s.failed())
                .sum::<u64>()
        };
        let (sent_before, answered_before) = (sent(&workers), answered(&workers));
        let cpu_before = super::cpu::process_cpu_seconds();
        let record = if phase.check_same_results && rep == 0 {
            Record::WithResults
        } else {
            Record::Measure
        };
        let (back, ended) = round(workers, routed, record, r, &counts).await;
        let queries = answered(&back) - answered_before;
        judge::repeat(&mut report, rep + 1, queries, ended.elapsed, cpu_before);
        workers = back;
        // Closed loop without a count: what was scheduled is what was sent.
        scheduled += ended
            .scheduled
            .unwrap_or_else(|| sent(&workers) - sent_before);
        report.failures.extend(ended.errors);
    }
    ticker.finish().await;
    judge::stopped(
        &mut report,
        abort.load(Ordering::Relaxed),
        max_errors,
        Units::QUERIES,
    );
    finish(&mut report, phase, workers, scheduled, env);
    report
}

/// Merges the workers' measurements into the report and judges the thresholds.
fn finish(
    report: &mut QueryReport,
    phase: &QueryPhase,
    workers: Vec<Worker>,
    scheduled: u64,
    env: &RunEnv,
) {
    let mut types = vec![TypeStats::default(); phase.queries.len()];
    let mut sends = Sends::default();
    for w in &workers {
        for (t, s) in types.iter_mut().zip(&w.stats) {
            t.merge(s);
        }
        sends.merge(&w.sends);
    }
    let mut per_worker = vec![0; workers.len()];
    for w in &workers {
        if let Some(slot) = per_worker.get_mut(w.id) {
            *slot = w.stats.iter().map(|s| s.ok + s.failed()).sum();
        }
    }
    report.traffic.queries_per_worker = per_worker;
    if phase.check_same_results {
        let mut results = BTreeMap::new();
        for w in &workers {
            for &(q, index, rows, sum) in &w.results {
                results.insert((q, index), (rows, sum));
            }
        }
        report.detail.results = Some(Arc::new(results));
    }
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
            qps: crate::report::rate(s.ok, elapsed),
            sum_us: s.sum_us as u64,
            latency: latency(&s.latency),
            service: open.then(|| latency(&s.service)),
            errors: errors(s),
            thresholds: Vec::new(),
        };
        t.thresholds = q.expects.iter().map(|th| judge(th, s, elapsed)).collect();
        report.detail.query_types.push(t);
    }
    report.detail.labels = labels(phase, &types, elapsed, open);
    let rules = judge::Rules::new(&phase.expects, &phase.load, &phase.stop, Units::QUERIES);
    judge::figures(report, &rules, &all, scheduled, &sends);
    report.output = QueryOutput {
        rows: all.rows,
        qps: crate::report::rate(all.ok, elapsed),
    };
    report.detail.thresholds = judge::thresholds(report, &rules, &all);
    let per_type = report.detail.query_types.iter().flat_map(|t| &t.thresholds);
    let unmet = failed_thresholds(report.detail.thresholds.iter().chain(per_type), env);
    judge::verdict(report, &rules, &all, unmet, env);
}

/// One latency histogram per label (a label defaults to the query's name), with its queries.
fn labels(phase: &QueryPhase, types: &[TypeStats], elapsed: f64, open: bool) -> Vec<LabelReport> {
    let mut order: Vec<&str> = Vec::new();
    for q in &phase.queries {
        if !order.contains(&q.label.as_str()) {
            order.push(&q.label);
        }
    }
    order
        .into_iter()
        .map(|label| {
            let mut s = TypeStats::default();
            let mut queries = Vec::new();
            for (q, t) in phase.queries.iter().zip(types) {
                if q.label == label {
                    s.merge(t);
                    queries.push(q.name.clone());
                }
            }
            LabelReport {
                label: label.to_string(),
                queries,
                ok: s.ok,
                failed: s.failed(),
                rows: s.rows,
                qps: crate::report::rate(s.ok, elapsed),
                latency: latency(&s.latency),
                service: open.then(|| latency(&s.service)),
            }
        })
        .collect()
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
    let (Some(a), Some(b)) = (&earlier.detail.results, &later.detail.results) else {
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
    later.detail.cross_checks.push(check);
}
