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
//!
//! This file runs the rounds and assembles the report; `worker` is a worker's loop and where
//! its instances come from, `same_results` the comparison of results across endpoints.

mod same_results;
mod staged;
mod statements;
mod worker;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::account::{Cutoff, Sends};
use super::end::{End, Member};
use super::judge::{self, errors, failed_thresholds, judge, Units};
use super::link::{refused_line, Link};
use super::pace::Pacer;
use super::progress::RunCounts;
use super::require::requirements;
use super::series::Recorder;
use super::slots::Schedule;
use super::spans;
use super::stages::{schedule_failures as stage_failures, Stage, StageCtl};
use super::{resolve_url, RunEnv};
use crate::plan::{Load, QueryPhase};
use crate::query::binds::BindProgram;
use crate::query::schedule::{Arrivals, Mix};
use crate::query::sql::Dialect;
use crate::query::stats::TypeStats;
use crate::report::streaming::StreamingReport;
use crate::report::{LabelReport, Latency, QueryOutput, QueryReport, QueryTypeReport, Status};
pub use same_results::{cross_check, unordered_limit};
use worker::{dispatch, Order, Puller, Queue, Record, Until, Worker, QUEUE};

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
    /// A round measuring one stage of a staged run (`staged`).
    stage: Option<Arc<super::stages::StageCtl>>,
    /// A group's end, which ends the round as its span would.
    group: End,
    /// A stage's start: its schedule begins there (not when the round gets going), so the
    /// stage's warm-up is exactly its schedule's first part.
    start: Option<Instant>,
}

/// What a round did besides its workers' own counts.
struct Ended {
    errors: Vec<String>,
    /// Open loop: the slots due in the round's span (after a stage's warm-up); closed loop:
    /// the order's bound, if any.
    scheduled: Option<u64>,
    /// Open loop: the slots due in a stage's warm-up.
    warm: u64,
    elapsed: Duration,
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
    let started = r.start.unwrap_or_else(Instant::now);
    let bound = r.mix.bound();
    let schedule = r.arrivals.map(|a| Schedule::new(a, started, r.span, bound));
    let open = schedule.is_some();
    let end = match &schedule {
        Some(s) => s.end(),
        None => r.span.map(|d| started + d),
    };
    let until = Until {
        end,
        cutoff: Cutoff::after(end, r.env.stop.clone()).ending(&r.group),
        counts: counts.clone(),
        max_errors: if record == Record::No {
            None
        } else {
            r.max_errors
        },
        abort: r.abort.clone(),
        stage: r.stage.clone(),
        group: r.group.clone(),
    };
    let order = Order {
        mix: r.mix,
        schedule,
        closed: false,
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
    // Ended by the group: slots after its end were never due, and a counted closed-loop run
    // scheduled what it sent, as a timed one does.
    let ended_at = r
        .group
        .min(Some(Instant::now()))
        .unwrap_or_else(Instant::now);
    let by_group = r.group.ended();
    let warm_of = |order: &Order| match (&order.schedule, &r.stage) {
        (Some(s), Some(c)) => s.scheduled(c.measure_from),
        _ => 0,
    };
    let scheduled_of = |order: &Order| match &order.schedule {
        Some(s) => Some(s.scheduled(ended_at).saturating_sub(warm_of(order))),
        None => bound.filter(|_| !by_group),
    };
    let mut scheduled = routed_order.as_ref().and_then(scheduled_of);
    let mut warm = routed_order.as_ref().map_or(0, warm_of);
    if let Some(p) = puller {
        if let Some(e) = p.error.lock().ok().and_then(|mut e| e.take()) {
            errors.push(e);
        }
        if let Ok(order) = p.order.lock() {
            scheduled = scheduled_of(&order);
            warm = warm_of(&order);
        }
    }
    debug_assert!(!open || scheduled.is_some());
    (
        back,
        Ended {
            errors,
            scheduled,
            warm,
            elapsed,
        },
    )
}

pub async fn run(
    env: &RunEnv,
    label: &str,
    phase: &QueryPhase,
    series: &Recorder,
    mut member: Member,
) -> QueryReport {
    let url = match phase.endpoint.url.as_ref().map(resolve_url) {
        Some(Ok(u)) => u,
        Some(Err(e)) => return refused(phase, Status::Failed, e),
        None => String::new(),
    };
    // Inlined lists are written in the endpoint's SQL dialect.
    let dialect = Dialect::of_endpoint(&phase.endpoint.kind, &phase.endpoint.dialect);
    let mut programs = Vec::with_capacity(phase.queries.len());
    for (i, q) in phase.queries.iter().enumerate() {
        match BindProgram::compile(q, env.seed, &env.base_dir) {
            Ok(p) => programs.push(p.with_dialect(dialect).in_run(phase, i)),
            Err(e) => return refused(phase, Status::Failed, format!("query {}: {e}", q.name)),
        }
    }
    let programs = Arc::new(programs);
    // In a group, guards read the tables once every ingest beside this run has set its up.
    member.setup.pass().await;
    // Sharded, shard 0 reads the guards for all (a failed one stops every shard at the start).
    let guards = super::shards::guards(env, &phase.run.require);
    if let Err(unmet) = requirements(env, guards, &phase.endpoint, &url).await {
        let mut r = QueryReport::empty(phase);
        r.status = Status::Failed;
        let why = unmet.failure(&mut r.errors);
        r.failures.push(why);
        return r;
    }

    let connector = match crate::net::connect::connector(&phase.endpoint, &url) {
        Ok(c) => c,
        Err(e) => return refused(phase, Status::Failed, e.message),
    };
    let endpoint = Arc::new(phase.endpoint.clone());
    let url: Arc<str> = url.into();
    let base_dir: Arc<Path> = env.base_dir.clone().into();
    let stages = Stage::all(&phase.run.stages);
    // A staged run opens the most workers any stage uses; each stage uses its first N.
    let n = (phase.run.workers.max(1) as usize).max(Stage::max_workers(&stages));
    let rules = Arc::new(
        phase
            .queries
            .iter()
            .map(statements::Rules::of)
            .collect::<Vec<_>>(),
    );
    let mut workers: Vec<Worker> = (0..n)
        .map(|id| Worker {
            id,
            endpoint: endpoint.clone(),
            url: url.clone(),
            base_dir: base_dir.clone(),
            connector: connector.clone(),
            link: Link::default(),
            pacer: Pacer::default(),
            stats: vec![TypeStats::default(); phase.queries.len()],
            sends: Sends::default(),
            checksums: phase.check_same_results,
            results: Vec::new(),
            series: series.slot(),
            rules: rules.clone(),
            steps: Vec::new(),
        })
        .collect();
    let routed = phase.queries.iter().any(|q| q.route.is_some());
    // Sharded: this shard's instances and arrivals, every n-th of the whole's.
    let part = super::shards::stride(env);
    let counts = Arc::new(RunCounts::default());
    let mut report = QueryReport::empty(phase);
    let (warm_count, warm_time) = spans::warmup(&phase.run.warmup);
    let measured_for = spans::measured(&phase.run.stop);
    let ticker = super::progress::start_run(
        env,
        label.to_string(),
        Mix::measured(phase, env.seed)
            .sharded(part)
            .bound()
            .map(|n| n * phase.run.repeat.max(1)),
        "queries",
        counts.clone(),
    );
    let mut scheduled = 0u64;
    let max_errors = super::max_errors(env, phase.run.stop_after_errors);
    let abort = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut last_end = None;
    member.start.pass().await;
    if let Err(e) = super::shards::start(env).await {
        ticker.finish().await;
        return refused(phase, Status::Failed, e);
    }
    let group = member.end.clone();
    for rep in 0..phase.run.repeat.max(1) {
        if env.stop.load(Ordering::Relaxed) || abort.load(Ordering::Relaxed) || group.ended() {
            break;
        }
        if warm_count.is_some() || warm_time.is_some() {
            counts.warmup.store(true, Ordering::Relaxed);
            let r = Round {
                programs: programs.clone(),
                mix: Mix::warmup(phase, env.seed, warm_count).sharded(part),
                arrivals: if phase.run.warmup_at_rate {
                    Arrivals::new(&phase.run.load, env.seed).map(|a| a.sharded(part))
                } else {
                    None
                },
                span: warm_time,
                env,
                max_errors,
                abort: abort.clone(),
                // Before the first stage: on that stage's connections.
                stage: stages
                    .first()
                    .map(|s| Arc::new(StageCtl::new(Instant::now(), s.workers))),
                group: group.clone(),
                start: None,
            };
            let (back, ended) = staged::round(workers, routed, Record::No, r, &counts).await;
            counts.warmup.store(false, Ordering::Relaxed);
            workers = back;
            report.failures.extend(ended.errors);
        }
        let record = if phase.check_same_results && rep == 0 {
            Record::WithResults
        } else {
            Record::Measure
        };
        // A measured round; the stages and the plain run each give it their load and span.
        let base = || Round {
            programs: programs.clone(),
            mix: Mix::measured(phase, env.seed).sharded(part),
            arrivals: None,
            span: None,
            env,
            max_errors,
            abort: abort.clone(),
            stage: None,
            group: group.clone(),
            start: None,
        };
        if !stages.is_empty() {
            let cpu_before = super::cpu::mark();
            let (back, done, errors) =
                staged::run(workers, routed, &stages, base, record, &counts, series).await;
            workers = back;
            judge::repeat(&mut report, 1, done.answered, done.span, cpu_before);
            scheduled = done.scheduled;
            last_end = done.last_end;
            report.stages = done.reports();
            report.failures.extend(errors);
            break;
        }
        let r = Round {
            arrivals: Arrivals::new(&phase.run.load, env.seed).map(|a| a.sharded(part)),
            span: measured_for,
            ..base()
        };
        let sent = |ws: &[Worker]| ws.iter().map(|w| w.sends.sent).sum::<u64>();
        let answered = |ws: &[Worker]| {
            ws.iter()
                .flat_map(|w| &w.stats)
                .map(|s| s.answered())
                .sum::<u64>()
        };
        let (sent_before, answered_before) = (sent(&workers), answered(&workers));
        let cpu_before = super::cpu::mark();
        let started = Instant::now();
        series.measure(started);
        let (back, ended) = round(workers, routed, record, r, &counts).await;
        series.pause(started + ended.elapsed);
        last_end = Some(started + ended.elapsed);
        let queries = answered(&back) - answered_before;
        judge::repeat(&mut report, rep + 1, queries, ended.elapsed, cpu_before);
        workers = back;
        // Closed loop without a count: what was scheduled is what was sent.
        scheduled += ended
            .scheduled
            .unwrap_or_else(|| sent(&workers) - sent_before);
        report.failures.extend(ended.errors);
    }
    member.ended();
    ticker.finish().await;
    judge::stopped(
        &mut report,
        abort.load(Ordering::Relaxed),
        max_errors,
        Units::QUERIES,
    );
    report.failures.extend(stage_failures(
        &report.stages,
        &phase.run.expects,
        "queries",
    ));
    if workers.iter().any(|w| w.link.refused()) {
        report.failures.push(refused_line(Units::QUERIES.many));
    }
    finish(&mut report, phase, workers, scheduled, env);
    super::connections::attach(&connector, &mut report.connecting, &mut report.warnings);
    // The units never sent are known once the run is over: counted at its end.
    if let Some(at) = last_end {
        series.unsent_at(at, report.accounting.unsent);
    }
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
            *slot = w.stats.iter().map(|s| s.answered()).sum();
        }
    }
    report.traffic.queries_per_worker = per_worker;
    report.traffic.routed = phase.queries.iter().any(|q| q.route.is_some());
    if phase.check_same_results {
        let mut results = BTreeMap::new();
        for w in &workers {
            for &(q, index, rows, sum) in &w.results {
                results.insert((q, index), (rows, sum));
            }
        }
        report.detail.results = Some(Arc::new(results));
    }
    let open = matches!(phase.run.load, Load::Open { .. });
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
            latency: Latency::of(&s.latency),
            service: open.then(|| Latency::of(&s.service)),
            errors: errors(s),
            thresholds: Vec::new(),
            streaming: StreamingReport::of(&s.stream),
            outcomes: outcomes(q, s),
        };
        t.thresholds = q.expects.iter().map(|th| judge(th, s, elapsed)).collect();
        report.detail.query_types.push(t);
    }
    report.detail.labels = labels(phase, &types, elapsed, open);
    report.detail.streaming = StreamingReport::of(&all.stream);
    let rules = judge::Rules::new(
        &phase.run.expects,
        &phase.run.load,
        &phase.run.stop,
        Units::QUERIES,
    );
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

/// A type's not-found and rows-changed counts, and each statement's latency.
fn outcomes(q: &crate::plan::QueryPlan, s: &TypeStats) -> crate::report::TypeOutcomes {
    let names = statements::Rules::of(q).statement_names();
    crate::report::TypeOutcomes {
        not_found: s.not_found,
        affected: s.affected,
        steps: s
            .steps
            .iter()
            .zip(names)
            .map(|(h, statement)| crate::report::StepReport {
                statement,
                latency: Latency::of(h),
            })
            .collect(),
    }
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
                latency: Latency::of(&s.latency),
                service: open.then(|| Latency::of(&s.service)),
            }
        })
        .collect()
}
