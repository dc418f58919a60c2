//! One worker of a query run and where its instances come from: unrouted, each worker takes
//! the next instance of the round's order itself; routed, a dispatcher hands each to the
//! worker its key hashes to. A worker connects, waits for the instance's time (open loop),
//! sends, reads to the last row and records it.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;

use super::statements::{self, Rules, Verdict};
use crate::exec::account::{Cutoff, Sends};
use crate::exec::link::Link;
use crate::exec::pace::Pacer;
use crate::exec::progress::RunCounts;
use crate::exec::slots::{Schedule, Slot};
use crate::gen::route::shard_of;
use crate::net::tls::Connector;
use crate::plan::EndpointPlan;
use crate::query::binds::BindProgram;
use crate::query::schedule::Mix;
use crate::query::stats::TypeStats;
use crate::query::transport::Transport;
use crate::query::{Instance, QueryError, QueryErrorClass};

/// Instances queued per worker ahead of it (routed runs). Enough to keep a worker busy between
/// two wake-ups of the dispatcher; the dispatcher waits when it is full, so memory stays small
/// and nothing is dropped (open-loop instances carry their intended time with them).
pub(super) const QUEUE: usize = 256;

pub(super) struct Job {
    pub(super) inst: Instance,
    /// Open loop: when it is meant to be sent.
    pub(super) slot: Option<Slot>,
}

pub(super) enum Queue {
    /// Routed: what the dispatcher hands this worker.
    Own(mpsc::Receiver<Job>),
    /// Unrouted: each worker takes the next instance of the order itself, which saves a
    /// hand-over between threads per query (a wake-up costs more client CPU than building the
    /// instance).
    Pull(Arc<Puller>),
}

/// The order of a round, and (open loop) its schedule, under one lock so that the k-th slot
/// always carries the k-th instance.
pub(super) struct Order {
    pub(super) mix: Mix,
    pub(super) schedule: Option<Schedule>,
    /// Set by `close`: the order hands out nothing more.
    pub(super) closed: bool,
}

impl Order {
    /// The next (query, index) and its slot; `None` at the end of the order or the schedule.
    pub(super) fn next(&mut self) -> Option<(usize, u64, Option<Slot>)> {
        if self.closed {
            return None;
        }
        let slot = match &mut self.schedule {
            Some(s) => Some(s.take()?),
            None => None,
        };
        let (q, index) = self.mix.next_instance()?;
        Some((q, index, slot))
    }

    /// Ends the order and the schedule now (a stop, or an instance that cannot be built). A
    /// flag, not a drain: a run stopped by its duration has an order without end, and draining
    /// it spun forever once a stop reached a worker here (a SIGTERM test hung in CI).
    pub(super) fn close(&mut self) {
        if let Some(s) = &mut self.schedule {
            s.close(Instant::now());
        }
        self.closed = true;
    }
}

pub(super) struct Puller {
    pub(super) order: std::sync::Mutex<Order>,
    pub(super) programs: Arc<Vec<BindProgram>>,
    /// The first instance that could not be built; it ends the round.
    pub(super) error: std::sync::Mutex<Option<String>>,
}

impl Queue {
    async fn recv(&mut self, until: &Until) -> Option<Job> {
        match self {
            Queue::Own(rx) => rx.recv().await,
            Queue::Pull(p) => {
                let next = {
                    let mut order = p.order.lock().ok()?;
                    if until.over() {
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
pub(super) struct Worker {
    pub(super) id: usize,
    pub(super) endpoint: Arc<EndpointPlan>,
    pub(super) url: Arc<str>,
    pub(super) base_dir: Arc<Path>,
    /// The phase's connector, shared by its workers.
    pub(super) connector: Connector,
    pub(super) link: Link<Transport>,
    pub(super) pacer: Pacer,
    pub(super) stats: Vec<TypeStats>,
    pub(super) sends: Sends,
    /// `check same results across endpoints`: ask for checksums and keep each measured
    /// instance's (query, index, rows, checksum) of the first repetition.
    pub(super) checksums: bool,
    pub(super) results: Vec<(usize, u64, u64, u64)>,
    /// This worker's part of the run's time series.
    pub(super) series: super::super::series::Slot,
    /// Per query type: its statements and how an answer is judged.
    pub(super) rules: Arc<Vec<Rules>>,
    /// The last instance's statements' latencies (reused).
    pub(super) steps: Vec<std::time::Duration>,
}

impl Worker {
    async fn connect(
        link: &mut Link<Transport>,
        endpoint: &EndpointPlan,
        url: &str,
        base_dir: &Path,
        connector: &Connector,
        checksums: bool,
    ) -> Result<(), QueryError> {
        link.get(connector, || async move {
            let mut t = Transport::connect_via(endpoint, url, base_dir, connector).await?;
            if checksums {
                t.set_checksums(true);
            }
            Ok(t)
        })
        .await
        .map(|_| ())
    }

    pub(super) async fn round(mut self, mut queue: Queue, record: Record, until: Until) -> Worker {
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
                    &self.connector,
                    self.checksums,
                );
                let Some(connected) = until.cutoff.bound(connect).await else {
                    break;
                };
                connected
            };
            if let Some(slot) = job.slot {
                if !self
                    .pacer
                    .until(slot.at, &until.cutoff.stop, &until.group)
                    .await
                {
                    break;
                }
            }
            let sent = Instant::now();
            // Nothing starts after the end of a timed round or after a stop: what is left of
            // the order is unsent (open loop) or was never scheduled (closed loop).
            if until.halted() || until.end.is_some_and(|d| sent >= d) || until.group.past(sent) {
                break;
            }
            let intended = job.slot.map(|s| s.at);
            // A stage's warm-up is sent as scheduled and not counted.
            let record = match &until.stage {
                Some(s) if record != Record::No && !s.counts(intended.unwrap_or(sent)) => {
                    Record::No
                }
                _ => record,
            };
            if record != Record::No {
                self.sends.start(sent, intended);
            }
            let rules = &self.rules[job.inst.query];
            let result = match (connected, self.link.conn.as_mut()) {
                (Ok(()), Some(conn)) => {
                    let run = statements::run(conn, &job.inst, rules, &mut self.steps);
                    until.cutoff.bound(run).await
                }
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
                    self.series.cut_off(done, 1);
                }
                break;
            };
            if let Err(e) = &result {
                if e.broken {
                    self.link.conn = None;
                }
            }
            // Refused (a password, a certificate): this one failure says it; asking again per
            // query would only be refused again. What is left of the order goes unsent.
            let refused = self.link.refused();
            if record == Record::No {
                if refused {
                    break;
                }
                continue;
            }
            let stats = &mut self.stats[job.inst.query];
            let result = result.and_then(|out| match rules.judge(&out) {
                Verdict::Ok => Ok((out, true)),
                Verdict::NotFound => Ok((out, false)),
                Verdict::Failed(e) => Err(e),
            });
            match result {
                Ok((out, false)) => {
                    // Answered, and found nothing: neither throughput nor a failure.
                    stats.record_not_found();
                    stats.record_affected(out.affected);
                }
                Ok((out, true)) => {
                    if let Some(conn) = &self.link.conn {
                        stats.stream.record(sent, out.rows, &conn.streamed());
                    }
                    if let (Record::WithResults, Some(sum)) = (record, out.checksum) {
                        let i = &job.inst;
                        self.results.push((i.query, i.index, out.rows, sum));
                    }
                    let from = intended.unwrap_or(sent);
                    let service = intended.map(|_| done - sent);
                    let latency = done.saturating_duration_since(from);
                    stats.record_ok(latency, service, out.rows);
                    stats.record_affected(out.affected);
                    if rules.several() {
                        stats.record_steps(&self.steps);
                    }
                    self.series.ok(done, latency, service);
                    until.counts.ok.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    stats.record_error(&e);
                    self.series.failed(done);
                    let failed = until.counts.failed.fetch_add(1, Ordering::Relaxed) + 1;
                    if until.max_errors.is_some_and(|n| failed >= n) {
                        until.abort.store(true, Ordering::Relaxed);
                    }
                }
            }
            if refused {
                break;
            }
        }
        self
    }
}

/// What a round keeps: nothing (warm-up), the measurements, or those and every result's
/// checksum (the first measured repetition of a cross-checked run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Record {
    No,
    Measure,
    WithResults,
}

/// When a round ends besides the end of its order.
#[derive(Clone)]
pub(super) struct Until {
    /// No send starts at or after this.
    pub(super) end: Option<Instant>,
    pub(super) cutoff: Cutoff,
    pub(super) counts: Arc<RunCounts>,
    /// `stop after N errors` (or `--fail-fast`): set at the N-th failed query; the round stops
    /// sending, and what was not sent is unsent.
    pub(super) max_errors: Option<u64>,
    pub(super) abort: Arc<std::sync::atomic::AtomicBool>,
    /// A round measuring one stage of a staged run (`staged`).
    pub(super) stage: Option<Arc<crate::exec::stages::StageCtl>>,
    /// A group's end (`until P`): reached as the end of a timed round is.
    pub(super) group: crate::exec::end::End,
}

impl Until {
    /// Stopped (Ctrl-C) or aborted (too many errors): nothing more is sent.
    pub(super) fn halted(&self) -> bool {
        self.cutoff.stop.load(Ordering::Relaxed) || self.abort.load(Ordering::Relaxed)
    }

    /// Halted, or ended by the group: the order hands out nothing more.
    pub(super) fn over(&self) -> bool {
        self.halted() || self.group.ended()
    }
}

/// Routed: feeds the round's instances to the workers their keys hash to; returns when the
/// order or the schedule ends or the run is stopped, with the order (and its schedule) back.
/// Dropping the senders ends the workers' round.
pub(super) async fn dispatch(
    mut order: Order,
    programs: &[BindProgram],
    own: Vec<mpsc::Sender<Job>>,
    until: &Until,
) -> (Order, Vec<String>) {
    let mut errors = Vec::new();
    let workers = own.len().max(1) as u64;
    let mut turn = 0u64;
    loop {
        if until.over() {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Stop;
    use crate::value::Value;

    /// A stop that reaches a worker while it takes the next instance closes the order. A run
    /// bounded by its duration has an order without end: closing it must not try to use it up.
    #[test]
    fn closing_an_order_without_end_ends_it_at_once() {
        let stop = Stop::Duration {
            duration: Value::Duration(1_000_000_000),
        };
        let phase = crate::query::schedule::tests::phase(&[1.0, 2.0], "round_robin", stop);
        let mix = Mix::measured(&phase, 7);
        assert_eq!(mix.bound(), None);
        let mut order = Order {
            mix,
            schedule: None,
            closed: false,
        };
        assert!(order.next().is_some());
        order.close();
        assert!(order.next().is_none());
        assert!(order.next().is_none());
    }
}
