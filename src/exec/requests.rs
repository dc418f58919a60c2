//! A request run: wrk's model — N connections, each sending a request, reading the whole
//! answer and sending the next — measured as the query runner measures. Each request is the
//! run's fixed request or is built by a Rhai hook (`hook::HookWorker`), then judged: a status
//! outside `expect status` (2xx by default), a body failing `expect body`, or a response hook
//! saying so makes it an error, and errors are never throughput.
//!
//! Request numbering: in closed loop the connections take the next index from one counter; in
//! open loop a free connection takes the next slot of the round's computed schedule
//! (`slots::Schedule`), connects if it must, waits precisely until the slot's time
//! (`pace::Pacer`) and sends; latency counts from that time, and nothing is dropped or queued.
//! Either way a hook sees the index and an offset from the start of the round, never the wall
//! clock, so the same seed builds the same requests. Every scheduled request ends as ok,
//! failed, cut off or unsent (`account`).
//!
//! This file sets a run up (endpoint, request source, hooks, connections), runs its rounds and
//! assembles its report; `worker` is one connection's loop, `pool` the threads the connections
//! live on, and `checks` the status and body checks of an answer.

mod checks;
mod pool;
mod staged;
mod template;
mod worker;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::account::{Cutoff, Sends};
use super::end::Member;
use super::judge::{self, failed_thresholds, Units};
use super::link::{refused_line, Link};
use super::pace::Pacer;
use super::progress::RunCounts;
use super::require::requirements;
use super::series::Recorder;
use super::slots::Schedule;
use super::spans;
use super::stages::{schedule_failures as stage_failures, Stage};
use super::{resolve_url, timeouts, RunEnv};
use crate::hook::{Script, WorkerSpec};
use crate::net::http::HttpUrl;
use crate::net::http1;
use crate::net::tls::Connector;
use crate::plan::{RequestPhase, RequestPlan, Stop};
use crate::query::schedule::{share, Arrivals, WARMUP_BASE};
use crate::query::stats::TypeStats;
use crate::report::{RequestOutput, RequestReport, Status};
use crate::value::Value;
use checks::StatusSet;
use hyper::{HeaderMap, Method};
use indexmap::IndexMap;
use pool::Pool;
use worker::{Conn, Feed, RoundCtl, Worker};

/// What every connection of the run shares.
struct Shared {
    phase: RequestPhase,
    url: String,
    base_dir: Arc<Path>,
    /// HTTP endpoints: where requests go and the headers every request carries.
    target: Option<http1::Target>,
    /// The phase's connector (for HTTP, the target's), shared by the workers.
    connector: Connector,
    source: Source,
    statuses: StatusSet,
    seed: u64,
}

enum Source {
    /// The fixed request, rendered once; `bool`: it is a HEAD.
    Fixed(Vec<u8>, bool),
    /// A fixed request whose `$N` are drawn per request.
    Template(Box<template::Template>),
    Hook {
        script: Script,
        hook: String,
        function: String,
        response: bool,
    },
}

fn refused(phase: &RequestPhase, why: String) -> RequestReport {
    let mut r = RequestReport::empty(phase);
    r.status = Status::Failed;
    r.failures.push(why);
    r
}

/// Where an `http` endpoint's requests go, and the headers each carries.
fn http_target(phase: &RequestPhase, url: &str) -> Result<http1::Target, String> {
    let ep = &phase.endpoint;
    let parsed =
        HttpUrl::parse(url).map_err(|e| format!("endpoint {}.{}: {e}", ep.target, ep.name))?;
    let headers = crate::net::http::endpoint_headers(ep, &parsed).map_err(|e| e.message)?;
    let (timeout, connect_timeout) = timeouts(ep);
    let connector =
        crate::net::connect::http_connector(Some(ep), &parsed).map_err(|e| e.message)?;
    Ok(http1::Target {
        connector,
        name: format!("{}.{} ({})", ep.target, ep.name, parsed.display()),
        url: parsed,
        headers,
        connect_timeout,
        timeout,
    })
}

pub async fn run(
    env: &RunEnv,
    label: &str,
    phase: &RequestPhase,
    params: &IndexMap<String, Value>,
    series: &Recorder,
    mut member: Member,
) -> RequestReport {
    let url = match phase.endpoint.url.as_ref().map(resolve_url) {
        Some(Ok(u)) => u,
        Some(Err(e)) => return refused(phase, e),
        None => String::new(),
    };
    let target = if phase.endpoint.kind == "http" {
        match http_target(phase, &url) {
            Ok(t) => Some(t),
            Err(e) => return refused(phase, e),
        }
    } else {
        None
    };
    let source = match (&phase.request, &target) {
        (RequestPlan::Fixed { method, path, body }, Some(t)) => {
            let Ok(m) = Method::from_bytes(method.as_bytes()) else {
                return refused(phase, format!("`{method}` is not an HTTP method"));
            };
            let mut bytes = Vec::new();
            let body = body.as_deref().unwrap_or("").as_bytes();
            if let Err(e) = t.render(&mut bytes, &m, path, &HeaderMap::new(), body) {
                return refused(phase, e);
            }
            Source::Fixed(bytes, m == Method::HEAD)
        }
        (
            RequestPlan::Template {
                method,
                path,
                body,
                placeholders,
                lets,
                binds,
            },
            Some(_),
        ) => {
            let parts = template::Parts {
                run: &phase.name,
                method,
                path,
                body: body.as_deref(),
                placeholders: *placeholders,
                lets,
                binds,
            };
            match template::Template::new(parts, env.seed, &env.base_dir) {
                Ok(t) => Source::Template(Box::new(t)),
                Err(e) => return refused(phase, e),
            }
        }
        (RequestPlan::Fixed { .. } | RequestPlan::Template { .. }, None) => {
            return refused(phase, "a fixed request needs an `http` endpoint".into())
        }
        (
            RequestPlan::Hook {
                hook,
                function,
                response,
            },
            _,
        ) => match Script::compile(&hook.file, &hook.source) {
            Ok(script) => Source::Hook {
                script,
                hook: hook.name.clone(),
                function: function.clone(),
                response: *response,
            },
            Err(e) => return refused(phase, format!("hook `{}`: {e}", hook.name)),
        },
    };
    // In a group, guards read the tables once every ingest beside this run has set its up.
    member.setup.pass().await;
    // Sharded, shard 0 reads the guards for all (a failed one stops every shard at the start).
    let guards = super::shards::guards(env, &phase.run.require);
    if let Err(unmet) = requirements(env, guards, &phase.endpoint, &url).await {
        let mut r = RequestReport::empty(phase);
        r.status = Status::Failed;
        let why = unmet.failure(&mut r.errors);
        r.failures.push(why);
        return r;
    }
    let connector = match &target {
        Some(t) => t.connector.clone(),
        None => match crate::net::connect::connector(&phase.endpoint, &url) {
            Ok(c) => c,
            Err(e) => return refused(phase, e.message),
        },
    };
    let shared = Arc::new(Shared {
        phase: phase.clone(),
        url,
        base_dir: env.base_dir.clone().into(),
        target,
        connector,
        source,
        statuses: StatusSet::of(&phase.run.expects),
        seed: env.seed,
    });
    // A staged run opens the most connections any stage uses; each stage uses its first N.
    let n =
        (phase.run.workers.max(1) as usize).max(Stage::max_workers(&Stage::all(&phase.run.stages)));
    let mut workers = Vec::with_capacity(n);
    for id in 0..n {
        let hook = match &shared.source {
            Source::Hook { script, hook, .. } => {
                let (worker, workers) = super::shards::hook_worker(env, id as u64, n as u64);
                let spec = WorkerSpec {
                    seed: shared.seed,
                    hook: hook.clone(),
                    worker,
                    workers,
                    params: params.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                };
                match script.worker(spec) {
                    Ok(h) => Some(h),
                    Err(e) => return refused(phase, e.to_string()),
                }
            }
            Source::Fixed(..) | Source::Template(_) => None,
        };
        workers.push(Worker {
            id,
            shared: shared.clone(),
            link: Link::default(),
            reopened: 0,
            hook,
            out: Vec::new(),
            scratch: template::Scratch::default(),
            stats: TypeStats::default(),
            statuses: Vec::new(),
            warmup_statuses: Vec::new(),
            series: series.slot(),
            bytes_sent: 0,
            bytes_received: 0,
            measured: 0,
            pacer: Pacer::default(),
            sends: Sends::default(),
            fatal: None,
        });
    }

    let counts = Arc::new(RunCounts::default());
    // Sharded: this shard's requests, indices i, i + n, ... of the whole run's (and of its
    // open-loop arrivals), and so its share of a count.
    let part = super::shards::stride(env);
    let stride = part.unwrap_or((0, 1));
    let count = match phase.run.stop {
        Stop::Count { count, .. } => Some(share(stride, count)),
        Stop::Duration { .. } => None,
    };
    let measured_for = spans::measured(&phase.run.stop);
    let ticker = super::progress::start_run(
        env,
        label.to_string(),
        count.map(|c| c * phase.run.repeat.max(1)),
        "requests",
        counts.clone(),
    );
    let mut report = RequestReport::empty(phase);
    let pool = match Pool::start(workers) {
        Ok(p) => p,
        Err(e) => {
            ticker.finish().await;
            return refused(phase, e);
        }
    };
    let abort = Arc::new(AtomicBool::new(false));
    let max_errors = super::max_errors(env, phase.run.stop_after_errors);
    let limited = Arc::new(AtomicBool::new(false));
    let (warm_count, warm_time) = spans::warmup(&phase.run.warmup);
    let warm_count = warm_count.map(|c| share(stride, c));
    // A measured round from `start` until `end`; a warm-up is one that records nothing.
    let measured = |start: Instant, end: Option<Instant>| RoundCtl {
        start,
        end,
        cutoff: Cutoff::after(end, env.stop.clone()).ending(&member.end),
        stop: env.stop.clone(),
        abort: abort.clone(),
        record: true,
        counts: counts.clone(),
        max_errors,
        limited: limited.clone(),
        stage: None,
        group: member.end.clone(),
    };
    // `None` once a round had no count to schedule by (closed loop, timed): then what was
    // scheduled is what was sent.
    let mut scheduled = Some(0u64);
    let mut workers_end = None;
    let stages = Stage::all(&phase.run.stages);
    member.start.pass().await;
    if let Err(e) = super::shards::start(env).await {
        let _ = pool.finish();
        ticker.finish().await;
        return refused(phase, e);
    }
    for rep in 0..phase.run.repeat.max(1) {
        if env.stop.load(Ordering::Relaxed) || abort.load(Ordering::Relaxed) || member.end.ended() {
            break;
        }
        if warm_count.is_some() || warm_time.is_some() {
            counts.warmup.store(true, Ordering::Relaxed);
            let start = Instant::now();
            let end = warm_time.map(|d| start + d);
            let ctl = RoundCtl {
                record: false,
                max_errors: None,
                // Before the first stage: on that stage's connections.
                stage: stages
                    .first()
                    .map(|s| Arc::new(super::stages::StageCtl::new(start, s.workers))),
                ..measured(start, end)
            };
            // Warm-up requests have indices of their own: they never repeat measured ones. A
            // warm-up at the run's rate takes its slots' indices (the round's first requests).
            let feed = match Arrivals::new(&phase.run.load, env.seed) {
                Some(a) if phase.run.warmup_at_rate => {
                    Feed::Slots(Arc::new(std::sync::Mutex::new(Schedule::new(
                        a.sharded(part),
                        start,
                        warm_time,
                        warm_count,
                    ))))
                }
                _ => Feed::Counter {
                    next: Arc::new(AtomicU64::new(0)),
                    base: WARMUP_BASE,
                    end: warm_count,
                    stride,
                },
            };
            pool.round(feed, warm_count, ctl).await;
            counts.warmup.store(false, Ordering::Relaxed);
            if abort.load(Ordering::Relaxed) {
                break;
            }
        }
        if !stages.is_empty() {
            let cpu_before = super::cpu::mark();
            let halted = || {
                env.stop.load(Ordering::Relaxed)
                    || abort.load(Ordering::Relaxed)
                    || member.end.ended()
            };
            let done = staged::run(&pool, &stages, env.seed, series, halted, &measured).await;
            judge::repeat(&mut report, 1, done.answered, done.span, cpu_before);
            scheduled = Some(done.scheduled);
            workers_end = done.last_end;
            report.stages = done.reports();
            break;
        }
        let start = Instant::now();
        let schedule = Arrivals::new(&phase.run.load, env.seed)
            .map(|a| Schedule::new(a.sharded(part), start, measured_for, count));
        let end = match &schedule {
            Some(s) => s.end(),
            None => measured_for.map(|d| start + d),
        };
        let ctl = measured(start, end);
        series.measure(start);
        let answered =
            |l: &RunCounts| l.ok.load(Ordering::Relaxed) + l.failed.load(Ordering::Relaxed);
        let before = answered(&counts);
        let cpu_before = super::cpu::mark();
        let feed = match schedule {
            Some(s) => Feed::Slots(Arc::new(std::sync::Mutex::new(s))),
            None => Feed::Counter {
                next: Arc::new(AtomicU64::new(0)),
                base: 0,
                end: count,
                stride,
            },
        };
        let round_scheduled = pool.round(feed, count, ctl).await;
        let elapsed = start.elapsed();
        series.pause(start + elapsed);
        workers_end = Some(start + elapsed);
        let requests = answered(&counts) - before;
        judge::repeat(&mut report, rep + 1, requests, elapsed, cpu_before);
        scheduled = scheduled.zip(round_scheduled).map(|(a, b)| a + b);
    }
    member.ended();
    let workers = pool.finish();
    ticker.finish().await;
    let limited = limited.load(Ordering::Relaxed);
    judge::stopped(&mut report, limited, max_errors, Units::REQUESTS);
    report.failures.extend(stage_failures(
        &report.stages,
        &phase.run.expects,
        "requests",
    ));
    if workers.iter().any(|w| w.link.refused()) {
        report.failures.push(refused_line(Units::REQUESTS.many));
    }
    finish(&mut report, phase, workers, scheduled, env);
    super::connections::attach(
        &shared.connector,
        &mut report.connecting,
        &mut report.warnings,
    );
    // The units never sent are known once the run is over: counted at its end.
    if let Some(last) = workers_end {
        series.unsent_at(last, report.accounting.unsent);
    }
    report
}

/// Merges the connections' measurements and judges the run.
fn finish(
    report: &mut RequestReport,
    phase: &RequestPhase,
    workers: Vec<Worker>,
    scheduled: Option<u64>,
    env: &RunEnv,
) {
    let mut all = TypeStats::default();
    let mut sends = Sends::default();
    let mut per_worker = vec![0; workers.len()];
    for w in &workers {
        all.merge(&w.stats);
        sends.merge(&w.sends);
        for (code, n) in &w.statuses {
            *report.traffic.statuses.entry(*code).or_default() += n;
        }
        for (code, n) in &w.warmup_statuses {
            *report.traffic.warmup_statuses.entry(*code).or_default() += n;
        }
        if let Some(h) = &w.hook {
            for (k, v) in h.counters() {
                *report.traffic.counters.entry(k).or_default() += v;
            }
        }
        report.traffic.bytes_sent += w.bytes_sent;
        report.traffic.bytes_received += w.bytes_received;
        report.traffic.reconnects += w.link.connects.saturating_sub(1) + w.reopened;
        if let Some(Conn::Http(c)) = &w.link.conn {
            report.traffic.reconnects += c.reopened;
        }
        if let Some(slot) = per_worker.get_mut(w.id) {
            *slot = w.measured;
        }
        if let Some(f) = &w.fatal {
            if !report.failures.contains(f) {
                report.failures.push(f.clone());
            }
        }
    }
    report.traffic.requests_per_worker = per_worker;
    let rules = judge::Rules::new(
        &phase.run.expects,
        &phase.run.load,
        &phase.run.stop,
        Units::REQUESTS,
    );
    let elapsed: f64 = report.repeats.iter().map(|r| r.elapsed_s).sum();
    report.elapsed_s = elapsed;
    judge::figures(
        report,
        &rules,
        &all,
        scheduled.unwrap_or(sends.sent),
        &sends,
    );
    report.output = RequestOutput {
        rps: crate::report::rate(all.ok, elapsed),
        rows: all.rows,
    };
    report.detail.thresholds = judge::thresholds(report, &rules, &all);
    let unmet = failed_thresholds(report.detail.thresholds.iter(), env);
    judge::verdict(report, &rules, &all, unmet, env);
    // A client using (nearly) every core measures itself as much as the server.
    if let (Some(cpu), Ok(cores)) = (report.client_cpu_s, std::thread::available_parallelism()) {
        let used = cpu / elapsed.max(1e-9);
        if elapsed >= crate::report::MIN_RATE_SPAN_S && used > 0.9 * cores.get() as f64 {
            report.warnings.push(format!(
                "the client used {used:.2} of {} cores: it may have set the figures, not the server",
                cores.get()
            ));
        }
    }
}
