//! Execution: runs the cells of a plan one after another against real servers and measures
//! them. A failed cell is reported and the next one still runs; Ctrl-C or SIGTERM stops sending
//! and keeps what was measured.

pub mod account;
mod admin;
pub mod client_bound;
mod connections;
mod cpu;
pub mod ddl;
pub mod end;
pub mod environment;
pub mod findmax;
pub mod ingest;
pub mod judge;
mod link;
pub mod live;
pub mod observe;
mod pace;
mod producer;
pub mod progress;
pub mod queries;
pub mod requests;
mod require;
pub mod scrape;
pub mod secrets;
pub mod series;
pub mod shards;
mod slots;
mod spans;
mod stages;
mod together;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::plan::{EndpointPlan, Phase, Plan};
use crate::report::{CellReport, PhaseReport, Report, REPORT_FORMAT};
use crate::value::{Text, Value};

/// What every phase of a run shares.
pub struct RunEnv {
    pub seed: u64,
    /// The workload file's directory: `csv(...)` and data files are relative to it.
    pub base_dir: PathBuf,
    /// Set by Ctrl-C or SIGTERM: workers stop sending, the report is still written.
    pub stop: Arc<AtomicBool>,
    pub progress_every: Duration,
    pub quiet: bool,
    /// `--max-error-rate` (a fraction): overrides the workload's `expect error_rate`.
    pub max_error_rate: Option<f64>,
    /// `--fail-fast`: every query and request run stops at its first error.
    pub fail_fast: bool,
    /// `--out DIR` and `--interval`: each phase's time series is written there as it runs.
    pub series: Option<series::SeriesOut>,
    /// `--metrics-listen`, `--metrics-push`: each phase's figures as the run goes on.
    pub live: Option<Arc<live::Live>>,
    /// `--shard I/N`: this process runs one shard of every phase (`shards`).
    pub shard: Option<Arc<shards::ShardRun>>,
}

/// How long work still in flight when a phase ends (its duration, the end of its open-loop
/// schedule, or a stop) may take to finish (an answer, a flush, the last acknowledgements)
/// before it is cut off: a phase ends at its end plus this, never at the endpoint's timeout.
pub const STOP_GRACE: Duration = Duration::from_secs(1);

/// The error limit of a query or request run: `--fail-fast` (the first error) over the run's
/// own `stop after N errors`.
pub fn max_errors(env: &RunEnv, own: Option<u64>) -> Option<u64> {
    if env.fail_fast {
        Some(1)
    } else {
        own
    }
}

/// The failure line of a run stopped by its error limit.
pub fn stopped_after(limit: Option<u64>, unit: &str) -> String {
    let n = limit.unwrap_or(1);
    format!(
        "stopped sending at its error limit ({n}: `stop after {n} error{}` or --fail-fast); the {unit} left were not sent",
        if n == 1 { "" } else { "s" }
    )
}

/// The URL with `env(...)` parts filled in from the environment, now.
pub fn resolve_url(t: &Text) -> Result<String, String> {
    t.resolve_env()
}

/// The endpoint's `timeout` (every wait on the server; default 60 s) and `connect_timeout`
/// (default 10 s).
pub fn timeouts(ep: &EndpointPlan) -> (Duration, Duration) {
    let get = |name: &str, default: u64| match ep.options.get(name) {
        Some(Value::Duration(ns)) if *ns > 0 => Duration::from_nanos(*ns as u64),
        _ => Duration::from_secs(default),
    };
    (get("timeout", 60), get("connect_timeout", 10))
}

/// Runs every cell of `plan` and returns the report; `on_cell` sees each cell's report as it
/// completes (the terminal table grows while the run goes on).
pub fn run_plan(plan: &Plan, env: &RunEnv, mut on_cell: impl FnMut(&CellReport)) -> Report {
    secrets::remember(plan);
    let started_wall = time::OffsetDateTime::now_utc();
    let started = Instant::now();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = io_threads() {
        builder.worker_threads(n);
    }
    let runtime = match builder.enable_all().thread_name("wlrun-io").build() {
        Ok(r) => r,
        Err(e) => {
            sayln!("wlrun: cannot start the async runtime: {e}");
            return Report {
                format: REPORT_FORMAT,
                workload: plan.workload.name.clone(),
                file: plan.workload.file.clone(),
                seed: env.seed,
                plan: Some(crate::shard::plan_identity(plan)),
                started: rfc3339(started_wall),
                elapsed_s: 0.0,
                interrupted: false,
                signal: None,
                environment: None,
                cells: Vec::new(),
                shard: None,
                merged: None,
            };
        }
    };
    let signal = watch_signals(&runtime, env.stop.clone());
    if let Some(s) = &env.shard {
        if let Err(e) = runtime.block_on(s.join()) {
            sayln!("wlrun: shard {} of {}: {e}", s.spec.index, s.spec.count);
        }
    }
    let total = plan.cells.len();
    let mut cells = Vec::new();
    // What the run said once and will not say again (`connections::once_per_run`).
    let mut said = std::collections::HashSet::new();
    for cell in &plan.cells {
        if env.stop.load(Ordering::Relaxed) || env.shard.as_ref().is_some_and(|s| s.broken()) {
            break;
        }
        let label = if cell.key.is_empty() {
            format!("[{}/{total}]", cell.index)
        } else {
            format!("[{}/{total} {}]", cell.index, cell.key)
        };
        let mut phases = Vec::new();
        for phase in &cell.phases {
            match together::place(cell, phase) {
                together::Place::Alone => {
                    phases.push(run_phase(env, &runtime, cell, phase, &label))
                }
                together::Place::First(g) => {
                    phases.extend(together::run(env, &runtime, cell, g, &label));
                }
                together::Place::Later => continue,
            }
            if env.stop.load(Ordering::Relaxed) || env.shard.as_ref().is_some_and(|s| s.broken()) {
                break;
            }
        }
        // Cross-checked runs compare their results with the same run in every earlier cell.
        // (A group's reports are in its own order, so each finds its phase by name.)
        for report in phases.iter_mut() {
            let phase = match &*report {
                PhaseReport::Queries(r) => cell.phases.iter().find(|p| p.name() == r.name),
                _ => None,
            };
            if let (Some(Phase::Queries(q)), PhaseReport::Queries(r)) = (phase, report) {
                if !q.check_same_results {
                    continue;
                }
                for earlier in &cells {
                    let earlier: &CellReport = earlier;
                    for p in &earlier.phases {
                        if let PhaseReport::Queries(e) = p {
                            if e.name == r.name && e.endpoint != r.endpoint {
                                queries::cross_check(e, r, q);
                            }
                        }
                    }
                }
            }
        }
        connections::once_per_run(&mut phases, &mut said);
        if let Some(why) = env.series.as_ref().and_then(|s| s.fault.why()) {
            for p in &mut phases {
                series::fault::fail_stopped(p, why);
            }
        }
        let report = CellReport {
            index: cell.index,
            key: cell.key.clone(),
            phases,
        };
        on_cell(&report);
        cells.push(report);
    }
    let signal = signal.get().map(|s| s.to_string());
    let shard = env
        .shard
        .as_ref()
        .map(|s| runtime.block_on(s.close(signal.as_deref())));
    // Workers may still hold sockets being closed: give them a moment, not forever.
    runtime.shutdown_timeout(Duration::from_secs(2));
    Report {
        format: REPORT_FORMAT,
        workload: plan.workload.name.clone(),
        file: plan.workload.file.clone(),
        seed: env.seed,
        plan: Some(crate::shard::plan_identity(plan)),
        started: rfc3339(started_wall),
        elapsed_s: started.elapsed().as_secs_f64(),
        // A shard that stopped because another was lost failed, as a run whose directory could
        // not be written did; nobody interrupted them.
        interrupted: env.stop.load(Ordering::Relaxed)
            && !env.shard.as_ref().is_some_and(|s| s.stopped_by_alarm())
            && env.series.as_ref().is_none_or(|s| s.fault.why().is_none()),
        signal,
        environment: None,
        cells,
        shard,
        merged: None,
    }
}

/// Runs one phase of `cell`, with its time series when the run has `--out`.
fn run_phase(
    env: &RunEnv,
    runtime: &tokio::runtime::Runtime,
    cell: &crate::plan::Cell,
    phase: &Phase,
    label: &str,
) -> PhaseReport {
    let (recorder, warning, label) = start_series(env, cell, phase, label);
    if let Some(why) = env.series.as_ref().and_then(|s| s.fault.why()) {
        // Its series could not be started: nothing is sent, not even its setup.
        return PhaseReport::NotRun {
            name: phase.name().to_string(),
            reason: why.to_string(),
        };
    }
    if let Some(s) = &env.shard {
        s.begin(cell, phase);
    }
    let observer = start_observer(env, cell, phase);
    let recorder = match &observer {
        Some(o) => recorder.observed(o.marks()),
        None => recorder,
    };
    let scrapers = runtime.block_on(scrape::start(
        cell,
        phase_target(phase),
        metrics_series(env, cell, phase),
    ));
    let mut report = runtime.block_on(phase_future(
        env,
        cell,
        phase,
        (&label, &recorder),
        end::Member::alone(),
    ));
    if let Some(o) = observer {
        observed(&mut report, o);
    }
    runtime.block_on(scrapers.finish(&mut report));
    if let Some(s) = &env.shard {
        runtime.block_on(s.finish(&mut report));
    }
    finish_series(report, recorder, warning)
}

/// The server the phase's target names (`observe process`), sampled at the series' interval
/// (1 s without `--out`).
fn start_observer(
    env: &RunEnv,
    cell: &crate::plan::Cell,
    phase: &Phase,
) -> Option<observe::Observer> {
    let target = phase_target(phase);
    let every = env
        .series
        .as_ref()
        .map_or(Duration::from_secs(1), |s| s.interval);
    let observer = observe::Observer::start(cell, target, every)?;
    // `series/CELL-PHASE.server.csv` with `--out`: the server's CPU over the measured span.
    Some(match &env.series {
        Some(out) => observer.series_to(
            out.dir
                .join(crate::report::server_series::path(cell.index, phase.name())),
        ),
        None => observer,
    })
}

/// The server's figures put in the phase's report, in the unit of the client's CPU, and the
/// warning of a run that kept the whole machine busy.
fn observed(report: &mut PhaseReport, observer: observe::Observer) {
    let Some((unit, units)) = report.cpu_unit() else {
        return;
    };
    let (client_cpu, elapsed) = match &*report {
        PhaseReport::Ingest(r) => (r.client_cpu_s, r.elapsed_s),
        PhaseReport::Queries(r) => (r.client_cpu_s, r.elapsed_s),
        PhaseReport::Requests(r) => (r.client_cpu_s, r.elapsed_s),
        PhaseReport::NotRun { .. } => return,
    };
    let server = observer.finish(unit, units);
    let client_cores = client_cpu
        .filter(|_| crate::report::rate(0, elapsed).is_some())
        .map(|c| c / elapsed);
    let busy = match (client_cores, server.cores) {
        (Some(c), Some(s)) => {
            client_bound::box_bound(c, s, server.machine_busy_cores, server.machine_cores)
        }
        _ => None,
    };
    let (slot, warnings) = match report {
        PhaseReport::Ingest(r) => (&mut r.server, &mut r.warnings),
        PhaseReport::Queries(r) => (&mut r.server, &mut r.warnings),
        PhaseReport::Requests(r) => (&mut r.server, &mut r.warnings),
        PhaseReport::NotRun { .. } => return,
    };
    warnings.extend(server.notes.iter().cloned());
    warnings.extend(busy);
    *slot = Some(server);
}

/// The target a phase runs against: the one whose `observe metrics` watch it.
fn phase_target(phase: &Phase) -> &str {
    match phase {
        Phase::Ingest(p) => &p.endpoint.target,
        Phase::Queries(q) => &q.endpoint.target,
        Phase::Requests(r) => &r.endpoint.target,
    }
}

/// `series/CELL-PHASE.server-metrics.csv` with `--out` when the phase's target observes
/// metrics: each kept counter's rate per interval between scrapes.
fn metrics_series(env: &RunEnv, cell: &crate::plan::Cell, phase: &Phase) -> Option<PathBuf> {
    let target = phase_target(phase);
    if !cell.observe_metrics.iter().any(|m| m.target == target) {
        return None;
    }
    let out = env.series.as_ref()?;
    Some(out.dir.join("series").join(format!(
        "{}-{}.server-metrics.csv",
        cell.index,
        phase.name()
    )))
}

/// A phase's time series started (when the run has `--out`), a warning if it could not be,
/// and the phase's progress label.
fn start_series(
    env: &RunEnv,
    cell: &crate::plan::Cell,
    phase: &Phase,
    label: &str,
) -> (series::Recorder, Option<String>, String) {
    let (name, kind, endpoint, series_kind, workers, load) = match phase {
        Phase::Ingest(p) => (
            &p.name,
            "ingest",
            &p.endpoint,
            series::Kind::Ingest {
                acks: crate::driver::Driver::acknowledges(&p.endpoint.kind),
                probe: p.probe.is_some(),
            },
            p.workers,
            None,
        ),
        Phase::Queries(q) => (
            &q.name,
            "queries",
            &q.endpoint,
            run_kind(&q.run.load),
            q.run.workers,
            Some(crate::report::load_text(&q.run.load)),
        ),
        Phase::Requests(r) => (
            &r.name,
            "requests",
            &r.endpoint,
            run_kind(&r.run.load),
            r.run.workers,
            Some(crate::report::load_text(&r.run.load)),
        ),
    };
    let id = series::PhaseId {
        cell: cell.index,
        key: &cell.key,
        phase: name,
        kind,
        endpoint: format!("{}.{} ({})", endpoint.target, endpoint.name, endpoint.kind),
        workers,
        load,
        // What a killed run's report is rebuilt with: its group and its probe.
        concurrent: cell
            .groups
            .iter()
            .find(|g| g.phases.iter().any(|m| m == name))
            .map(|g| crate::report::series::AnnouncedGroup {
                group: g.name.clone(),
                phases: g.phases.clone(),
                until: g.until.clone(),
            }),
        probe: match phase {
            Phase::Ingest(p) => p
                .probe
                .as_ref()
                .map(|probe| crate::report::freshness::Freshness::planned(probe).announced()),
            _ => None,
        },
    };
    let live = env.live.as_ref().map(|l| {
        let labels = live::Labels {
            cell: cell.index,
            key: cell.key.clone(),
            phase: name.clone(),
            kind,
            endpoint: id.endpoint.clone(),
        };
        let (open_loop, acks, probe) = match series_kind {
            series::Kind::Run { service } => (service, false, false),
            series::Kind::Ingest { acks, probe } => (false, acks, probe),
        };
        l.phase(labels, open_loop, acks, probe)
    });
    let started = series::Recorder::start(env.series.as_ref(), live, &id, series_kind);
    let (recorder, warning) = match started {
        Ok(r) => (r, None),
        Err(e) => {
            if let Some(out) = &env.series {
                out.fault.ring(&e);
            }
            (
                series::Recorder::none(),
                Some(format!("no time series: {e}")),
            )
        }
    };
    (recorder, warning, format!("{label} {name}"))
}

/// One phase run, as one member of a group or on its own (`Member::alone`).
async fn phase_future(
    env: &RunEnv,
    cell: &crate::plan::Cell,
    phase: &Phase,
    (label, recorder): (&str, &series::Recorder),
    member: end::Member,
) -> PhaseReport {
    match phase {
        Phase::Ingest(p) => PhaseReport::Ingest(Box::new(match &p.findmax {
            Some(f) => findmax::search(env, label, &findmax::IngestSteps(p), f, recorder).await,
            None => ingest::run(env, label, p, recorder, member).await,
        })),
        // A search runs its steps on its own: the checker refuses it in a group.
        Phase::Queries(q) => PhaseReport::Queries(Box::new(match &q.run.findmax {
            Some(f) => findmax::search(env, label, &findmax::QuerySteps(q), f, recorder).await,
            None => queries::run(env, label, q, recorder, member).await,
        })),
        Phase::Requests(r) => PhaseReport::Requests(Box::new(match &r.run.findmax {
            Some(f) => {
                let steps = findmax::RequestSteps(r, &cell.params);
                findmax::search(env, label, &steps, f, recorder).await
            }
            None => requests::run(env, label, r, &cell.params, recorder, member).await,
        })),
    }
}

/// The phase's time series closed and referenced from its report.
fn finish_series(
    mut report: PhaseReport,
    recorder: series::Recorder,
    mut warning: Option<String>,
) -> PhaseReport {
    let live = recorder.live();
    let (series, note) = recorder.finish();
    // After the writer's last intervals: the end's figures are the report's.
    if let Some(l) = live {
        l.finish(&report);
    }
    if let Some(e) = note {
        warning.get_or_insert(format!("time series: {e}"));
    }
    let (slot, warnings) = match &mut report {
        PhaseReport::Ingest(r) => (&mut r.series, &mut r.warnings),
        PhaseReport::Queries(r) => (&mut r.series, &mut r.warnings),
        PhaseReport::Requests(r) => (&mut r.series, &mut r.warnings),
        PhaseReport::NotRun { .. } => return report,
    };
    *slot = series;
    warnings.extend(warning);
    report
}

fn run_kind(load: &crate::plan::Load) -> series::Kind {
    series::Kind::Run {
        service: matches!(load, crate::plan::Load::Open { .. }),
    }
}

/// SIGINT (Ctrl-C) and SIGTERM (what containers, CI runners and Kubernetes send) both stop
/// sending and keep what was measured; the returned cell says which came first, for the exit
/// status. The handlers are registered before this returns, so a signal that arrives while the
/// first phase starts is not lost to the default action (which would end the process with
/// nothing written).
fn watch_signals(
    runtime: &tokio::runtime::Runtime,
    stop: Arc<AtomicBool>,
) -> Arc<std::sync::OnceLock<&'static str>> {
    use tokio::signal::unix::{signal, SignalKind};
    let first = Arc::new(std::sync::OnceLock::new());
    let _context = runtime.enter();
    let (int, term) = match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(int), Ok(term)) => (int, term),
        (Err(e), _) | (_, Err(e)) => {
            sayln!("wlrun: cannot watch for SIGINT and SIGTERM ({e}); a signal ends the run without a report");
            return first;
        }
    };
    let seen = first.clone();
    runtime.spawn(async move {
        let (mut int, mut term) = (int, term);
        let name = tokio::select! {
            _ = int.recv() => "SIGINT",
            _ = term.recv() => "SIGTERM",
        };
        let _ = seen.set(name);
        stop.store(true, Ordering::Relaxed);
        sayln!("wlrun: {name}; stopping the workers and writing the report");
    });
    first
}

/// Threads for the senders' I/O (generation has a thread per worker of its own): one per
/// core unless `WLRUN_IO_THREADS` says otherwise. Medians of interleaved runs on these
/// 2-core machines showed no clear winner between 1 and 2 for one worker, so the override
/// exists to measure it on other machines.
fn io_threads() -> Option<usize> {
    std::env::var("WLRUN_IO_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
}

fn rfc3339(t: time::OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
