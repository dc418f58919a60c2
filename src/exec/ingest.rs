//! One ingest phase: set the table up, run N workers (a producer thread and a sender task
//! each, one connection each, each owning the series that route to it), then count what the
//! server shows and tear down. Everything measured is kept, whatever fails.
//!
//! This file runs the phase and its workers' send loop; `feed` is what the workers send and
//! where their chunks come from, `rate` and `staged` the schedule of a rate-controlled or
//! staged send and its accounting, `verdict` the visibility count and the judging at the end.

pub(super) mod empty;
mod failed;
mod feed;
mod fresh;
mod limit;
mod live;
mod rate;
mod staged;
mod verdict;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::admin;
use super::end::{End, Member};
use super::pace::Pacer;
use super::producer::{self, Produced};
use super::series::{Recorder, Slot};
use super::{cpu, progress, resolve_url, timeouts, RunEnv, STOP_GRACE};
use crate::driver::{Driver, DriverConfig, Encoding};
use crate::net::error::{DriverError, ErrorClass};
use crate::plan::{EndpointPlan, IngestPhase};
use crate::report::{rate, Calibration, ErrorCount, IngestReport, Latency, RateCounts, Status};
use crate::value::Value;
pub(super) use empty::empty_report;
use feed::{preencode_all, Feed, Rows};
use limit::{within, Halt, Limit};
use live::Counters;
pub use live::Live;
use rate::{Kept, Schedule};
use staged::{Parts, Tally};
use verdict::{judge, verify};

/// What one worker measured.
struct Worker {
    rows_generated: u64,
    rows_dropped: u64,
    payload_bytes: u64,
    rows_sent: u64,
    rows_acked: u64,
    socket_bytes: u64,
    latency: Histogram<u64>,
    errors: BTreeMap<ErrorClass, ErrorCount>,
    /// When the first batch went out and when the worker was done, each with the process's
    /// CPU clock read at that moment: the phase's CPU is measured over exactly its span.
    first_send: Option<(Instant, Option<f64>)>,
    done: Option<(Instant, Option<f64>)>,
    /// `rate R`: where the slots of the rows this worker took end (the slot its next batch
    /// would have had).
    slots_end: Option<Instant>,
    /// Every chunk the producer made was sent, or every chunk until the phase's duration.
    complete: bool,
    /// The phase's duration stopped this worker (before its rows ran out, or at the hard
    /// stop).
    at_duration: bool,
    /// Rows of the batch abandoned at the hard stop.
    rows_cut_off: u64,
    /// Closing the connection (a flush, QWP's last acknowledgements) ran into the hard stop.
    close_cut_off: bool,
    /// `rate R`: how this worker's schedule was kept.
    kept: Kept,
    /// QWP: the commits its connection asked for.
    commits: Option<u64>,
}

impl Worker {
    fn new() -> Worker {
        Worker {
            rows_generated: 0,
            rows_dropped: 0,
            payload_bytes: 0,
            rows_sent: 0,
            rows_acked: 0,
            socket_bytes: 0,
            latency: new_histogram(),
            errors: BTreeMap::new(),
            first_send: None,
            done: None,
            slots_end: None,
            complete: false,
            at_duration: false,
            rows_cut_off: 0,
            close_cut_off: false,
            kept: Kept::default(),
            commits: None,
        }
    }

    fn error(&mut self, live: &Counters, e: &DriverError) {
        live.live.errors.fetch_add(1, Ordering::Relaxed);
        live.series.error(Instant::now());
        let entry = self.errors.entry(e.class).or_default();
        if entry.count == 0 {
            entry.first = e.message.clone();
        }
        entry.count += 1;
    }
}

/// Microseconds up to one hour, 3 significant digits: the same histogram everywhere.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("static histogram bounds are valid")
}

/// Runs one ingest phase; never panics on a server's behaviour, always returns what it
/// measured.
pub async fn run(
    env: &RunEnv,
    label: &str,
    phase: &IngestPhase,
    series: &Recorder,
    mut member: Member,
) -> IngestReport {
    // A shard's part: its share of a rate; setup, teardown and the count on shard 0 only.
    let whole = phase;
    let part = super::shards::ingest_part(env, phase);
    let phase: &IngestPhase = &part;
    let mut report = empty_report(phase);
    if !Driver::can_ingest(&phase.endpoint.kind) {
        report.status = Status::NotRun;
        report.failures.push(format!(
            "ingesting over `{}` is not built yet",
            phase.endpoint.kind
        ));
        return report;
    }
    let schema = match Rows::of(env, phase) {
        Ok(r) => r,
        Err(e) => {
            report.status = Status::Failed;
            report.failures.push(e);
            return report;
        }
    };
    let schema = &schema;
    if phase.calibrate {
        let mut null = phase.clone();
        null.endpoint = EndpointPlan {
            target: phase.endpoint.target.clone(),
            name: "null".into(),
            kind: "null".into(),
            dialect: phase.endpoint.dialect.clone(),
            url: None,
            options: Default::default(),
        };
        null.verify = None;
        null.calibrate = false;
        null.probe = None;
        // The ceiling is the client's unpaced speed: a schedule would only measure itself.
        null.rate = None;
        null.stages.clear();
        let encoding = Driver::encoding(&phase.endpoint);
        let (ceiling, _) = send_all(
            env,
            &format!("{label} (calibrating)"),
            &null,
            schema,
            encoding,
            (&Recorder::none(), &mut Member::alone()),
            None,
        )
        .await;
        if ceiling.rows_sent > 0 {
            report.calibration = Some(Calibration {
                null_rows_per_s: ceiling.send_rows_per_s,
                ratio: None,
            });
        }
    }
    let encoding = Driver::encoding(&phase.endpoint);
    // Setup, and the baseline of what the count sees before anything is sent.
    let mut visibility = match admin::prepare(env, phase, &schema.layout(), schema.end_ms()).await {
        Ok(v) => v,
        Err(e) => {
            report.status = Status::Failed;
            report.failures.push(format!("setup: {e}"));
            *report
                .errors
                .entry(e.class.as_str().to_string())
                .or_default() = ErrorCount {
                count: 1,
                first: e.message,
            };
            return report;
        }
    };
    member.setup.pass().await;
    let (timeline, probe, unprepared) = fresh::prepare(env, phase, schema, series.slot()).await;
    let (sent, workers) = send_all(
        env,
        label,
        phase,
        schema,
        encoding,
        (series, &mut member),
        timeline,
    )
    .await;
    // A send that failed before the start: the others need not wait for this one's teardown.
    member.start.give_up();
    member.ended();
    let calibration = report.calibration.take();
    report = sent;
    if let Some(mut c) = calibration {
        c.ratio = match (report.send_rows_per_s, c.null_rows_per_s) {
            (Some(r), Some(null)) if null > 0.0 => Some(r / null),
            _ => None,
        };
        report.calibration = Some(c);
    }
    let interrupted = env.stop.load(Ordering::Relaxed);
    // Sharded: every shard's rows, summed at the end barrier; shard 0 counts against them.
    let totals = super::shards::ingest_end(env, &report).await;
    let target = match &totals {
        Ok(Some(t)) => t.acked.unwrap_or(t.sent),
        _ => report.rows_acked.unwrap_or(report.rows_sent),
    };
    // The probe goes on beside verify, which keeps its own timing.
    let probing = async {
        match probe {
            Some(p) => p.finish(target).await,
            None => unprepared,
        }
    };
    let verifying = async {
        if let Some(v) = visibility.as_mut() {
            if !interrupted && totals.is_ok() {
                verify(env, v, &mut report, target).await;
            }
        }
    };
    let (freshness, ()) = tokio::join!(probing, verifying);
    report.freshness = freshness;
    if let Err(e) = admin::teardown(env, phase, &schema.layout(), visibility.as_mut()).await {
        report.failures.push(format!("teardown: {e}"));
    }
    if let Err(e) = &totals {
        report.failures.push(format!("shards: {e}"));
    }
    super::shards::judge_union(env, &mut report, whole, totals.ok().flatten().as_ref());
    judge(&mut report, phase, workers, interrupted, target);
    fresh::judge(&mut report, interrupted);
    report
}

/// Whether every worker sent everything it generated (or everything until the phase's
/// duration), and what the duration cut short.
#[derive(Default)]
struct WorkersDone {
    complete: bool,
    /// The phase's duration, when it stopped a worker.
    at_duration: Option<Duration>,
    /// A connection's close (its flush, QWP's last acknowledgements) ran into the hard stop.
    close_cut_off: bool,
    /// The end of its `concurrent` group stopped it (`at_duration` is the span until then).
    by_group: bool,
}

/// The measured part: workers connect, then send their shards; returns the report's
/// counting fields.
async fn send_all(
    env: &RunEnv,
    label: &str,
    phase: &IngestPhase,
    schema: &Rows<'_>,
    encoding: Encoding,
    (series, member): (&Recorder, &mut Member),
    timeline: Option<Arc<fresh::Timeline>>,
) -> (IngestReport, WorkersDone) {
    let mut report = empty_report(phase);
    let n = phase.workers.max(1);
    let url = match phase.endpoint.url.as_ref().map(resolve_url).transpose() {
        Ok(u) => u,
        Err(e) => {
            report.failures.push(e.clone());
            report
                .errors
                .insert("connect".into(), ErrorCount { count: 1, first: e });
            return (report, WorkersDone::default());
        }
    };
    let connector =
        match crate::net::connect::connector(&phase.endpoint, url.as_deref().unwrap_or("")) {
            Ok(c) => c,
            Err(e) => {
                report.failures.push(e.message.clone());
                report.errors.insert(
                    "connect".into(),
                    ErrorCount {
                        count: 1,
                        first: e.message,
                    },
                );
                return (report, WorkersDone::default());
            }
        };
    let (timeout, connect_timeout) = timeouts(&phase.endpoint);
    let live = Arc::new(Live {
        timeline: timeline.clone(),
        ..Live::default()
    });
    let mut sources = Vec::new();
    for w in 0..n {
        let (part, parts) = super::shards::worker_part(env, w, n);
        match schema.source(env, phase, part, parts) {
            Ok(s) => sources.push(s),
            Err(e) => {
                report.failures.push(e);
                return (report, WorkersDone::default());
            }
        }
    }
    let feeds = match phase.replay_budget {
        None => {
            let mut feeds = Vec::new();
            for (w, rows) in sources.into_iter().enumerate() {
                match producer::start(
                    rows,
                    encoding,
                    &phase.table,
                    phase.batch_rows as usize,
                    env.stop.clone(),
                    format!("wlrun-gen-{w}"),
                ) {
                    Ok(p) => feeds.push(Feed::Live(p)),
                    Err(e) => {
                        report.failures.push(format!("encoder: {e}"));
                        return (report, WorkersDone::default());
                    }
                }
            }
            feeds
        }
        Some(budget) => match preencode_all(env, phase, sources, encoding, budget).await {
            Ok(feeds) => feeds,
            Err(e) => {
                report.failures.push(format!("replay: {e}"));
                return (report, WorkersDone::default());
            }
        },
    };
    // Nothing is timed before this: with `replay`, the encoding is done; in a group, every
    // member is ready.
    member.start.pass().await;
    if let Err(e) = super::shards::start(env).await {
        report.failures.push(e);
        return (report, WorkersDone::default());
    }
    let started = Instant::now();
    let started_cpu = cpu::process_cpu_seconds();
    let limit = Limit::of(phase, started);
    let rows_per_s = match phase.rate {
        Some(Value::Rate(r)) if r > 0.0 => Some(r),
        _ => None,
    };
    let stages = super::stages::Stage::all(&phase.stages);
    let (schedule, parts) = if stages.is_empty() {
        (rows_per_s.map(|r| Schedule::new(started, r, n)), None)
    } else {
        let (s, parts) = Parts::schedule(started, &stages, n);
        parts.mark(series, started);
        (Some(s), Some(parts))
    };
    series.measure(started);
    if let Some(t) = &timeline {
        t.begin(started);
    }
    let halt = Halt::watch(env.stop.clone());
    let mut tasks = Vec::new();
    for (w, feed) in feeds.into_iter().enumerate() {
        let cfg = DriverConfig {
            endpoint: phase.endpoint.clone(),
            url: url.clone(),
            table: phase.table.clone(),
            schema: feed.schema(),
            timeout,
            connect_timeout,
            base_dir: env.base_dir.clone(),
            worker: w,
            ack: phase.ack,
            commit_every: phase.commit.and_then(|c| c.every_rows()),
            connector: Some(connector.clone()),
        };
        let tally = parts.as_ref().map(|p| Tally::new(p, phase.ack));
        tasks.push(tokio::spawn(worker(
            cfg,
            feed,
            (live.clone(), series.slot()),
            env.stop.clone(),
            (
                limit,
                schedule.clone(),
                member.end.clone(),
                halt.end.clone(),
            ),
            tally,
        )));
    }
    let acks = Driver::acknowledges(&phase.endpoint.kind);
    let total = super::shards::progress_total(env, phase.rows_expected);
    let ticker = progress::start(env, label.to_string(), total, "rows", {
        let live = live.clone();
        Box::new(move || {
            let mut extra = String::new();
            if acks {
                extra += &format!(
                    "{} acked, ",
                    crate::plan::thousands(live.rows_acked.load(Ordering::Relaxed))
                );
            }
            extra += &format!("{} errors", live.errors.load(Ordering::Relaxed));
            (live.rows_sent.load(Ordering::Relaxed), extra)
        })
    });
    let mut results: Vec<Worker> = Vec::new();
    for t in tasks {
        match t.await {
            Ok(w) => results.push(w),
            Err(e) => {
                report
                    .failures
                    .push(format!("a worker stopped unexpectedly: {e}"));
            }
        }
    }
    series.pause(Instant::now());
    ticker.finish().await;
    super::connections::attach(&connector, &mut report.connecting, &mut report.warnings);
    let mut latency = new_histogram();
    let mut first: Option<(Instant, Option<f64>)> = None;
    let mut last: Option<(Instant, Option<f64>)> = None;
    let mut slots_end: Option<Instant> = None;
    let mut complete = results.len() as u64 == n;
    let mut at_duration = false;
    let mut close_cut_off = false;
    let mut acked = 0;
    for w in &results {
        report.rows_generated += w.rows_generated;
        report.rows_dropped += w.rows_dropped;
        report.payload_bytes += w.payload_bytes;
        report.rows_sent += w.rows_sent;
        acked += w.rows_acked;
        report.socket_bytes += w.socket_bytes;
        let _ = latency.add(&w.latency);
        for (class, e) in &w.errors {
            let entry = report.errors.entry(class.as_str().to_string()).or_default();
            if entry.count == 0 {
                entry.first = e.first.clone();
            }
            entry.count += e.count;
        }
        first = match (first, w.first_send) {
            (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
            (a, b) => a.or(b),
        };
        last = match (last, w.done) {
            (Some(a), Some(b)) => Some(if b.0 > a.0 { b } else { a }),
            (a, b) => a.or(b),
        };
        slots_end = slots_end.max(w.slots_end);
        complete &= w.complete;
        at_duration |= w.at_duration;
        close_cut_off |= w.close_cut_off;
        report.rows_cut_off += w.rows_cut_off;
        report.rows_per_worker.push(w.rows_sent);
        if let (Some(t), Some(c)) = (report.commits.as_mut(), w.commits) {
            *t += c;
        }
    }
    // Stopped by the group's end: judged as a duration that ended then.
    let span = member
        .end
        .at()
        .map(|e| e.saturating_duration_since(started));
    let by_group = at_duration && span.is_some_and(|s| limit.is_none_or(|l| s < l.duration));
    let done = WorkersDone {
        complete,
        at_duration: at_duration
            .then(|| span.into_iter().chain(limit.map(|l| l.duration)).min())
            .flatten(),
        close_cut_off,
        by_group,
    };
    report.rows_acked = acks.then_some(acked);
    // With stages, the rate asked is their mean over the span.
    if let Some(r) = rows_per_s.or(parts.as_ref().map(|p| p.mean_rate())) {
        let kept: Vec<Kept> = results
            .iter_mut()
            .map(|w| std::mem::take(&mut w.kept))
            .collect();
        let planned = report
            .rows_expected
            .map(|p| p.saturating_sub(report.rows_dropped));
        let schedule = rate::account(
            r,
            &kept,
            report.rows_sent + report.rows_cut_off,
            report.rows_cut_off,
            planned,
        );
        if let Some(parts) = &parts {
            report.stages = staged::reports(staged::Phase {
                stages: &stages,
                parts,
                workers: staged::counts(kept),
                scheduled: schedule.scheduled_rows,
                ended_s: staged::ended_s(done.at_duration, last.map(|l| l.0), started),
                acks,
            });
        }
        report.schedule = Some(schedule);
    }
    // A paced ingest is measured over the span its schedule covers: from its first slot to
    // the later of its last answer and the end of the slots of the rows it took. From first
    // send to last answer instead, a batch of 2,500 rows at 5,000/s (one every 0.5 s) would
    // leave its last 0.5 s out and report 9-14% above the rate. A server slower than the
    // schedule still ends the span at its last answer: its own rate.
    let paced = report.schedule.is_some();
    let (from, to) = match (first, last) {
        (Some(_), Some(b)) if paced => (
            (started, started_cpu),
            b.0.max(slots_end.unwrap_or(started)).max(started),
        ),
        (Some(a), Some(b)) => (a, b.0.max(a.0)),
        _ => ((started, None), started),
    };
    let (from, from_cpu) = from;
    // The series places the same span on the wall clock, for `wlrun merge`.
    series.span(from, to);
    let elapsed = to.duration_since(from);
    report.elapsed_s = elapsed.as_secs_f64();
    report.send_rows_per_s = rate(report.rows_sent, report.elapsed_s);
    report.ack_rows_per_s = report.rows_acked.and_then(|a| rate(a, report.elapsed_s));
    report.rows_per_s = match report.rate_counts {
        RateCounts::Acked => report.ack_rows_per_s,
        RateCounts::Sent => report.send_rows_per_s,
    };
    if report.rows_sent > 0 && report.payload_bytes > 0 {
        report.payload_bytes_per_row = Some(report.payload_bytes as f64 / report.rows_sent as f64);
        if report.socket_bytes > 0 {
            report.socket_bytes_per_row =
                Some(report.socket_bytes as f64 / report.rows_sent as f64);
        }
    }
    report.metrics_per_s = report
        .rows_per_s
        .zip(report.fields_per_row)
        .map(|(r, f)| r * f as f64);
    if let Some(l) = &mut report.link {
        *l = crate::report::link::LinkCeiling::of(l.bits_per_s, report.socket_bytes_per_row);
    }
    report.batch_latency = Latency::of(&latency);
    report.client_cpu_s = match (from_cpu, last) {
        (Some(a), Some((_, Some(b)))) => Some((b - a).max(0.0)),
        _ => None,
    };
    (report, done)
}

/// One worker's sender: connects, then sends whatever its producer makes until the producer
/// ends, the run is stopped, the phase's duration is reached, or the connection is lost.
async fn worker(
    cfg: DriverConfig,
    mut feed: Feed,
    (live, series): (Arc<Live>, Slot),
    stop: Arc<AtomicBool>,
    (limit, schedule, end, halt): (Option<Limit>, Option<Schedule>, End, End),
    tally: Option<Tally>,
) -> Worker {
    let mut w = Worker::new();
    w.kept.stages = tally;
    let live = &Counters {
        live: &live,
        series: &series,
    };
    let mut driver = match within((limit, &end, &halt), Driver::connect(&cfg)).await {
        Some(Ok(d)) => Some(d),
        Some(Err(e)) => {
            w.error(live, &e);
            None
        }
        // Stopped while connecting: nothing failed.
        None if halt.ended() => None,
        None => {
            let e = DriverError::timeout(
                format!(
                    "{}.{}: connecting, within the phase's duration",
                    cfg.endpoint.target, cfg.endpoint.name
                ),
                limit.map_or(STOP_GRACE, |l| l.duration + STOP_GRACE),
            );
            w.error(live, &e);
            None
        }
    };
    // Rows put into batches so far (sent, rejected or cut off): the next batch's slot.
    let mut taken = 0u64;
    // The producer ran out of rows: the schedule held no more than were taken.
    let mut data_ended = false;
    if let Some(d) = driver.as_mut() {
        let mut healthy = true;
        // A batch abandoned at the hard stop leaves the connection mid-request: it is dropped,
        // not closed.
        let mut abandoned = false;
        let mut pacer = Pacer::default();
        loop {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            if !d.usable() {
                healthy = false;
                break;
            }
            let slot = schedule.as_ref().map(|s| s.at(taken));
            if slot.is_some_and(|at| end.past(at) || limit.is_some_and(|l| at >= l.deadline)) {
                // The schedule's last slot inside the span has gone.
                w.at_duration = true;
                w.complete = healthy;
                break;
            }
            let deadline = async {
                match limit {
                    Some(l) => tokio::time::sleep_until(l.deadline.into()).await,
                    None => std::future::pending().await,
                }
            };
            let next = tokio::select! {
                biased;
                _ = deadline => None,
                _ = end.wait() => None,
                _ = halt.wait() => None,
                p = feed.next() => Some(p),
            };
            if halt.ended() {
                // A stop: the batch being made, and the rest, stay unsent.
                break;
            }
            let Some(next) = next.filter(|_| !end.ended()) else {
                // The duration (or the group's end) is reached: what was sent is what the span
                // allowed.
                w.at_duration = true;
                w.complete = healthy;
                break;
            };
            let Some(produced) = next else {
                if stop.load(Ordering::Relaxed) {
                    // The producer stopped mid-batch: not the end of the rows.
                    break;
                }
                w.complete = healthy;
                data_ended = true;
                break;
            };
            let chunk = match produced {
                Produced::Chunk(c) => c,
                Produced::Failed(m) => {
                    w.error(live, &DriverError::new(ErrorClass::Encode, m, true));
                    break;
                }
            };
            if let Some(at) = slot {
                if !pacer.until(at, &stop, &end).await && !end.ended() {
                    break;
                }
                let now = Instant::now();
                if limit.is_some_and(|l| now >= l.deadline) || end.past(now) {
                    // Behind schedule past the span: these rows stay unsent.
                    w.at_duration = true;
                    w.complete = healthy;
                    break;
                }
            }
            w.rows_generated += chunk.generated;
            w.rows_dropped += chunk.generated - chunk.rows;
            w.kept.take(taken, chunk.rows, chunk.generated - chunk.rows);
            taken += chunk.rows;
            let started = Instant::now();
            w.kept.start(started, slot);
            w.first_send
                .get_or_insert_with(|| (started, cpu::process_cpu_seconds()));
            let result = within((limit, &end, &halt), d.send(&chunk)).await;
            let acked = d.take_acked();
            w.rows_acked += acked;
            live.acked(acked);
            w.kept.acked_later(acked);
            let Some(result) = result else {
                // Unanswered at the hard stop: neither sent nor acknowledged.
                w.at_duration = !halt.ended();
                w.rows_cut_off += chunk.rows;
                w.kept.cut_off();
                abandoned = true;
                break;
            };
            match result {
                Ok(sent) => {
                    w.rows_sent += chunk.rows;
                    w.payload_bytes += chunk.bytes.len() as u64;
                    w.socket_bytes += sent.socket_bytes;
                    let now = Instant::now();
                    let payload = chunk.bytes.len() as u64;
                    live.sent(now, chunk.rows, payload, sent.socket_bytes);
                    live.mark(started, chunk.rows);
                    if sent.acked {
                        w.rows_acked += chunk.rows;
                        live.acked(chunk.rows);
                    }
                    let took = now - started;
                    let us = took.as_micros().max(1) as u64;
                    let _ = w.latency.record(us.min(3_600_000_000));
                    w.kept.sent(now, took, slot, sent.acked);
                    live.series.written(now, took);
                }
                Err(e) => {
                    healthy = false;
                    if !w.failed(live, &chunk, started, &e) {
                        break;
                    }
                }
            }
            feed.give_back(chunk).await;
        }
        if !abandoned {
            // Closing flushes what the kernel still holds (and for QWP waits for the last
            // acknowledgements); a failure there loses rows.
            let finished = within((limit, &end, &halt), d.finish()).await;
            w.commits = d.commits();
            let acked = d.take_acked();
            w.rows_acked += acked;
            live.acked(acked);
            w.kept.acked_later(acked);
            match finished {
                Some(Ok(bytes)) => w.socket_bytes += bytes,
                Some(Err(e)) => {
                    w.error(live, &e);
                    w.complete = false;
                }
                None => {
                    w.at_duration = !halt.ended();
                    w.close_cut_off = true;
                }
            }
        }
        // Only a clean run leaves `complete` set: a rejected batch clears it above.
        if !healthy || abandoned {
            w.complete = false;
        }
    }
    if let Some(s) = &schedule {
        // Stopped by the span: every slot inside it was due. Otherwise the data ended first
        // and the schedule held what was taken. A stop ends the span where it came: the slots
        // due until then that were not sent are unsent.
        let stopped = (!data_ended && stop.load(Ordering::Relaxed))
            .then(|| halt.at().unwrap_or_else(Instant::now));
        let by_end = end.min(stopped);
        let by_end = by_end.map(|e| e.saturating_duration_since(s.at(0)));
        let span = by_end.into_iter().chain(limit.map(|l| l.duration)).min();
        w.slots_end = Some(s.at(taken));
        w.kept.scheduled_rows = match span {
            // A failure that stopped a worker inside the span (its connection lost), or a
            // worker that never connected, left its later slots unsent: the schedule keeps
            // them, so the phase is judged on the whole span, not on what the worker took
            // before it died (and a staged send's stages say where).
            Some(d) if w.at_duration || driver.is_none() || !data_ended => {
                s.rows_within(d).max(taken)
            }
            _ => taken,
        };
        let held = w.kept.scheduled_rows;
        if let Some(t) = w.kept.stages.as_mut() {
            t.finish(taken, held);
        }
    }
    w.done = Some((Instant::now(), cpu::process_cpu_seconds()));
    // An abandoned connection is dropped here, before the producer is joined.
    drop(driver);
    feed.close().await;
    w
}
