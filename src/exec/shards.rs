//! What a shard does in each phase (docs/language.md, "Shards"), and the barriers around it.
//!
//! Every shard runs every phase of every cell, in the plan's order, and passes the same
//! numbered barriers: a phase's start (shard 0 arrives after its table setup and `require`
//! guards, so nothing is sent into a table not yet made) and its end (every shard brings what
//! it sent; shard 0 takes the sum to count the visible rows against, then tears down). A
//! shard whose phase fails before its start still arrives, saying why, and then no shard runs
//! the phase; a barrier that fails (a shard missing, dead, late or running another plan)
//! fails the phase and stops the run on every shard.
//!
//! The parts: an ingest's rows by series (`worker_part`: the split of `wlrun gen --shard`,
//! then the shard's workers by the next digit of the same hash); a query or request run's
//! instances by index (`stride`: i, i + n, i + 2n, ... of the single process's order, and the
//! same of its open-loop arrivals, so the union of the shards' schedules is the single one).

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::RunEnv;
use crate::plan::{Cell, IngestPhase, Phase, Require, Setup, Teardown};
use crate::report::shard::{ShardPhase, ShardReport};
use crate::report::{IngestReport, PhaseReport, Status};
use crate::shard::{Address, Alarm, Arrival, Barrier, Figures, Release, Spec};
use crate::value::Value;

/// This process's shard of the run, and its barriers.
pub struct ShardRun {
    pub spec: Spec,
    /// The plan's identity (`shard::identity`), which every shard must share.
    pub plan: String,
    address: Address,
    timeout: Duration,
    /// The run's stop (Ctrl-C, SIGTERM): a shard waiting at a barrier leaves at once.
    stop: Arc<AtomicBool>,
    /// Sets `stop` when another shard is lost in the middle of a phase.
    alarm: Arc<Alarm>,
    barrier: tokio::sync::Mutex<Option<Barrier>>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The last barrier passed (0: joining).
    seq: u64,
    phases: Vec<ShardPhase>,
    /// The phase under way: its entry in `phases`, and how far through its barriers it is.
    current: Option<Current>,
    /// A barrier failed: the run cannot go on.
    failure: Option<String>,
    /// This shard was stopped (a signal) and left the others: no barrier is passed after.
    left: bool,
}

#[derive(Clone, Copy)]
struct Current {
    at: usize,
    started: bool,
    ended: bool,
}

impl ShardRun {
    pub fn new(
        spec: Spec,
        address: Address,
        plan: String,
        timeout: Duration,
        stop: Arc<AtomicBool>,
    ) -> ShardRun {
        ShardRun {
            spec,
            plan,
            address,
            timeout,
            alarm: Arc::new(Alarm::new(stop.clone())),
            stop,
            barrier: tokio::sync::Mutex::new(None),
            state: Mutex::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Joins the other shards (shard 0 waits for them all); an error is recorded, and the run
    /// runs nothing.
    pub async fn join(&self) -> Result<(), String> {
        let what = if self.spec.leads() {
            format!(
                "listening on {} for the other {}",
                self.address.bind(),
                self.spec.count - 1
            )
        } else {
            format!("joining shard 0 at {}", self.address)
        };
        if self.spec.count > 1 {
            sayln!(
                "wlrun: shard {} of {}: {what}",
                self.spec.index,
                self.spec.count
            );
        }
        let t0 = Instant::now();
        let joined = tokio::select! {
            j = Barrier::join(self.spec, &self.address, &self.plan, self.timeout, self.alarm.clone()) => j,
            _ = stopped(&self.stop) => Err("stopped by a signal while joining the other shards".into()),
        };
        match joined {
            Ok(b) => {
                *self.barrier.lock().await = Some(b);
                if self.spec.leads() && self.spec.count > 1 {
                    sayln!(
                        "wlrun: shard 0 of {}: every shard joined after {:.1} s",
                        self.spec.count,
                        t0.elapsed().as_secs_f64()
                    );
                }
                Ok(())
            }
            Err(e) => {
                self.state().failure = Some(e.clone());
                Err(e)
            }
        }
    }

    /// Another shard was lost in the middle of a phase and this one stopped it: the run's
    /// stop is set, but no signal stopped the run; it failed.
    pub fn stopped_by_alarm(&self) -> bool {
        self.alarm.rang().is_some()
    }

    /// The run cannot go on: a barrier failed, or this shard left.
    pub fn broken(&self) -> bool {
        let s = self.state();
        s.failure.is_some() || s.left
    }

    /// `phase` of `cell` begins.
    pub fn begin(&self, cell: &Cell, phase: &Phase) {
        let mut s = self.state();
        let kind = match phase {
            Phase::Ingest(_) => "ingest",
            Phase::Queries(_) => "queries",
            Phase::Requests(_) => "requests",
        };
        s.phases.push(ShardPhase {
            cell: cell.index,
            phase: phase.name().to_string(),
            kind: kind.into(),
            start_barrier: None,
            start_skew_ms: None,
            skew_error_ms: None,
            waited_start_ms: None,
            own: Figures::default(),
            all: None,
        });
        let at = s.phases.len() - 1;
        s.current = Some(Current {
            at,
            started: false,
            ended: false,
        });
    }

    /// Passes the next barrier of the current phase; `what` is `start` or `end`.
    async fn pass(&self, what: &str, arrival: Arrival) -> Result<Release, String> {
        let (seq, point, at) = {
            let mut s = self.state();
            if let Some(f) = &s.failure {
                return Err(f.clone());
            }
            if s.left {
                return Err("this shard left the run".into());
            }
            s.seq += 1;
            let point = match s.current.and_then(|c| s.phases.get(c.at)) {
                Some(p) => format!("cell {} {}: {what}", p.cell, p.phase),
                None => what.to_string(),
            };
            (s.seq, point, s.current.map(|c| c.at))
        };
        let mut guard = self.barrier.lock().await;
        let Some(barrier) = guard.as_mut() else {
            return Err("the shards never joined".into());
        };
        // A stopped shard does not wait for the others (they may have a long phase left): it
        // leaves, and they fail at their next barrier naming it. Stopped by the alarm, it
        // passes: the barrier fails at once on what rang it (a closed connection, an abort),
        // and shard 0 tells the others.
        let result = if self.alarm.rang().is_some() {
            Some(barrier.pass(seq, &point, arrival).await)
        } else if self.stop.load(Ordering::Relaxed) {
            None
        } else {
            tokio::select! {
                r = barrier.pass(seq, &point, arrival) => Some(r),
                _ = stopped(&self.stop) => None,
            }
        };
        let Some(result) = result else {
            barrier.leave("stopped by a signal").await;
            drop(guard);
            self.state().left = true;
            return Err(format!("stopped by a signal before `{point}`"));
        };
        drop(guard);
        let mut s = self.state();
        match result {
            Ok(r) => {
                // The skew measured at the barrier before: a phase's start, if that is what
                // it was.
                if let Some(skew) = r.skew {
                    if let Some(p) = s
                        .phases
                        .iter_mut()
                        .find(|p| p.start_barrier == Some(seq - 1))
                    {
                        p.start_skew_ms = Some(skew.spread_ms);
                        p.skew_error_ms = Some(skew.error_ms);
                    }
                }
                if what == "start" {
                    if let Some(p) = at.and_then(|a| s.phases.get_mut(a)) {
                        p.start_barrier = Some(seq);
                        p.waited_start_ms = Some(r.waited.as_secs_f64() * 1000.0);
                    }
                }
                Ok(r)
            }
            Err(e) => {
                s.failure.get_or_insert(e.clone());
                Err(e)
            }
        }
    }

    /// The start barrier: every shard is ready (shard 0 has set its table up). An error when
    /// a barrier failed, or when a shard's phase cannot start, which no shard then runs.
    pub async fn start(&self, failure: Option<String>) -> Result<(), String> {
        if let Some(c) = self.state().current.as_mut() {
            c.started = true;
        }
        let r = self
            .pass(
                "start",
                Arrival {
                    failure,
                    figures: None,
                },
            )
            .await?;
        if r.refusals.is_empty() {
            let s = self.state();
            if let Some(p) = s.current.and_then(|c| s.phases.get(c.at)) {
                self.alarm.arm(&format!("cell {} {}", p.cell, p.phase));
            }
            return Ok(());
        }
        let why: Vec<String> = r
            .refusals
            .iter()
            .map(|f| format!("shard {}: {}", f.shard, f.failure))
            .collect();
        Err(format!(
            "not run: the phase could not start on every shard ({})",
            why.join("; ")
        ))
    }

    /// The end barrier: every shard brings what it sent; the sum comes back (to every shard).
    pub async fn end(&self, own: Figures) -> Result<Option<Figures>, String> {
        self.alarm.disarm();
        let at = {
            let mut s = self.state();
            let c = s.current.as_mut().map(|c| {
                c.ended = true;
                c.at
            });
            if let Some(p) = c.and_then(|a| s.phases.get_mut(a)) {
                p.own = own.clone();
            }
            c
        };
        let r = self
            .pass(
                "end",
                Arrival {
                    failure: None,
                    figures: Some(own),
                },
            )
            .await?;
        let mut s = self.state();
        if let Some(p) = at.and_then(|a| s.phases.get_mut(a)) {
            p.all = r.totals.clone();
        }
        Ok(r.totals)
    }

    /// After the phase's runner: the barriers it did not pass are passed for it (a phase that
    /// failed before its start says so at the start barrier), and a failed barrier fails the
    /// phase.
    pub async fn finish(&self, report: &mut PhaseReport) {
        self.alarm.disarm();
        let current = self.state().current;
        let Some(c) = current else { return };
        if !c.started {
            let why = failures(report)
                .and_then(|f| f.first().cloned())
                .unwrap_or_else(|| "it failed before its start".into());
            // Its own refusal comes back; only a failed barrier matters here.
            let _ = self.start(Some(why)).await;
        }
        if !c.ended && !self.broken() {
            let _ = self.end(figures_of(report)).await;
        }
        if let Some(p) = self.state().phases.get_mut(c.at) {
            p.own = figures_of(report);
        }
        let failure = self.state().failure.clone();
        if let (Some(f), Some(list)) = (failure, failures(report)) {
            let line = format!("shards: {f}");
            if !list.iter().any(|l| l.contains(&f)) {
                list.push(line);
            }
            set_failed(report);
        }
        self.state().current = None;
    }

    /// The end of the run: a last barrier (every shard is done, shard 0 has torn down), or,
    /// when this shard was stopped by `signal`, the others are told. The shard's part of the
    /// report.
    pub async fn close(&self, signal: Option<&str>) -> ShardReport {
        if !self.broken() {
            match signal {
                Some(sig) => {
                    if let Some(b) = self.barrier.lock().await.as_mut() {
                        b.leave(&format!("stopped by {sig}")).await;
                    }
                    self.state().left = true;
                }
                None => {
                    let _ = self.pass("the end of the run", Arrival::default()).await;
                }
            }
        }
        let s = self.state();
        ShardReport {
            index: self.spec.index,
            count: self.spec.count,
            plan: self.plan.clone(),
            barrier: self.address.to_string(),
            timeout_s: self.timeout.as_secs_f64(),
            phases: s.phases.clone(),
            failure: s.failure.clone(),
        }
    }
}

/// Returns once the run is stopped (checked every 50 ms: a barrier wait is not a send).
async fn stopped(stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn failures(report: &mut PhaseReport) -> Option<&mut Vec<String>> {
    match report {
        PhaseReport::Ingest(r) => Some(&mut r.failures),
        PhaseReport::Queries(r) => Some(&mut r.failures),
        PhaseReport::Requests(r) => Some(&mut r.failures),
        PhaseReport::NotRun { .. } => None,
    }
}

fn set_failed(report: &mut PhaseReport) {
    match report {
        PhaseReport::Ingest(r) => r.status = Status::Failed,
        PhaseReport::Queries(r) => r.status = Status::Failed,
        PhaseReport::Requests(r) => r.status = Status::Failed,
        PhaseReport::NotRun { .. } => {}
    }
}

/// What a shard sent in a phase: rows (acknowledged, where the protocol says), or queries and
/// requests (answered without error).
pub fn figures_of(report: &PhaseReport) -> Figures {
    match report {
        PhaseReport::Ingest(r) => Figures {
            sent: r.rows_sent,
            acked: r.rows_acked,
            ok: None,
            dropped: r.rows_dropped,
        },
        PhaseReport::Queries(r) => Figures {
            sent: r.ok + r.failed + r.accounting.cut_off,
            acked: None,
            ok: Some(r.ok),
            dropped: 0,
        },
        PhaseReport::Requests(r) => Figures {
            sent: r.ok + r.failed + r.accounting.cut_off,
            acked: None,
            ok: Some(r.ok),
            dropped: 0,
        },
        PhaseReport::NotRun { .. } => Figures::default(),
    }
}

// The hooks the runners call; each is a no-op in an unsharded run.

/// This process sets tables up and tears them down, reads `require` guards and counts the
/// visible rows: shard 0, or the only process.
pub fn leads(env: &RunEnv) -> bool {
    env.shard.as_ref().is_none_or(|s| s.spec.leads())
}

/// `(i, n)`: this shard takes instances i, i + n, i + 2n, ... of a run's order and arrivals;
/// `None` in an unsharded run (or a run of one shard).
pub fn stride(env: &RunEnv) -> Option<(u64, u64)> {
    env.shard
        .as_ref()
        .filter(|s| s.spec.count > 1)
        .map(|s| (s.spec.index, s.spec.count))
}

/// The start barrier of the phase under way.
pub async fn start(env: &RunEnv) -> Result<(), String> {
    match &env.shard {
        Some(s) => s.start(None).await,
        None => Ok(()),
    }
}

/// The series worker `w` of `n` sends: of the routing hash h, shard i of N owns h mod N = i
/// (what `wlrun gen --shard i/N` writes) and its worker w the next digit, (h div N) mod n = w.
/// Together that is h mod (N n) = i + N w: a plain shard of N n parts, so the generator and
/// the file readers need nothing new, every worker gets work whatever N and n are (h mod n
/// alone would leave workers idle when N and n share a factor), and the workers of one shard
/// together send exactly that shard's rows.
pub fn worker_part(env: &RunEnv, w: u64, n: u64) -> (u64, u64) {
    match stride(env) {
        Some((i, shards)) => (i + shards * w, shards * n),
        None => (w, n),
    }
}

/// The ingest phase as this shard runs it: its share of a `rate`; on every shard but 0 no
/// setup (not its `setup sql` statements either), teardown or count of the visible rows
/// (shard 0 does them once for all, before the start barrier the others wait at).
pub fn ingest_part<'p>(env: &RunEnv, phase: &'p IngestPhase) -> Cow<'p, IngestPhase> {
    let Some((_, n)) = stride(env) else {
        return Cow::Borrowed(phase);
    };
    let mut p = phase.clone();
    if let Some(Value::Rate(r)) = &mut p.rate {
        *r /= n as f64;
    }
    if !leads(env) {
        p.setup = Setup::Shared;
        p.setup_ddl.clear();
        p.teardown = Teardown::Keep;
        p.verify = None;
    }
    Cow::Owned(p)
}

/// The total a shard's progress line counts towards: unknown for a shard (its share of the
/// series is known only once they are generated).
pub fn progress_total(env: &RunEnv, whole: Option<u64>) -> Option<u64> {
    match stride(env) {
        Some(_) => None,
        None => whole,
    }
}

/// An ingest's end barrier: every shard's rows sent and acknowledged, summed. `Ok(None)` in
/// an unsharded run.
pub async fn ingest_end(env: &RunEnv, report: &IngestReport) -> Result<Option<Figures>, String> {
    let Some(s) = &env.shard else {
        return Ok(None);
    };
    let own = Figures {
        sent: report.rows_sent,
        acked: report.rows_acked,
        ok: None,
        dropped: report.rows_dropped,
    };
    s.end(own).await
}

/// Shard 0 judges the union of the shards' rows against the plan, fewer rows than planned
/// or more; no shard judges its own count against the plan (its share of the series is not
/// known before it runs), so a shard's `rows_expected` is absent.
pub fn judge_union(
    env: &RunEnv,
    report: &mut IngestReport,
    phase: &IngestPhase,
    totals: Option<&Figures>,
) {
    if stride(env).is_some() {
        report.rows_expected = None;
    }
    let (Some(s), Some(t)) = (&env.shard, totals) else {
        return;
    };
    // A run of one shard is judged as an unsharded one already is.
    if !s.spec.leads() || s.spec.count == 1 {
        return;
    }
    let n = s.spec.count;
    if let Some(visible) = report.rows_visible {
        report.warnings.push(format!(
            "shard 0 of {n}: the {} rows visible are every shard's, counted against the {} all {n} shards {}",
            crate::plan::thousands(visible),
            crate::plan::thousands(t.acked.unwrap_or(t.sent)),
            if t.acked.is_some() { "acknowledged" } else { "sent" }
        ));
    }
    // A duration is a stop, not a shortfall: each shard is judged on what its span allowed.
    let (Some(expected), None) = (phase.rows_expected, &phase.duration) else {
        return;
    };
    let carried = t.sent + t.dropped;
    if carried < expected {
        report.failures.push(format!(
            "the {n} shards sent {} of the {} rows expected",
            crate::plan::thousands(t.sent),
            crate::plan::thousands(expected)
        ));
    } else if carried > expected {
        report.failures.push(format!(
            "the {n} shards sent {} rows, more than the {} expected",
            crate::plan::thousands(carried),
            crate::plan::thousands(expected)
        ));
    }
}

/// The `require` guards this shard reads: shard 0 reads them for all, and a failed guard
/// keeps every shard from running the phase (through the start barrier).
pub fn guards<'a>(env: &RunEnv, require: &'a [Require]) -> &'a [Require] {
    if leads(env) {
        require
    } else {
        &[]
    }
}

/// A request hook's `ctx.worker` and `ctx.workers`: connection `id` of `n` numbered across
/// every shard (shard i's connections are i n .. i n + n - 1), so a hook that splits its keys
/// by worker splits them across the shards too.
pub fn hook_worker(env: &RunEnv, id: u64, n: u64) -> (u64, u64) {
    match stride(env) {
        Some((i, shards)) => (i * n + id, shards * n),
        None => (id, n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::route::shard_of;

    fn env(spec: Option<Spec>) -> RunEnv {
        let stop = Arc::new(AtomicBool::new(false));
        RunEnv {
            seed: 1,
            base_dir: ".".into(),
            stop: stop.clone(),
            progress_every: Duration::ZERO,
            quiet: true,
            max_error_rate: None,
            fail_fast: false,
            series: None,
            live: None,
            shard: spec.map(|spec| {
                let addr = Address {
                    host: None,
                    port: 1,
                    ..Address::default()
                };
                Arc::new(ShardRun::new(
                    spec,
                    addr,
                    "p".into(),
                    Duration::from_secs(1),
                    stop,
                ))
            }),
        }
    }

    /// 2 shards of 4 workers: a shard's workers together send exactly the series of
    /// `gen --shard`, and every worker has some, where `h mod 4` would leave half idle.
    #[test]
    fn a_shards_workers_split_its_series_and_none_idles() {
        let keys: Vec<String> = (0..2000).map(|n| format!("host_{n}")).collect();
        for i in 0..2u64 {
            let e = env(Some(Spec { index: i, count: 2 }));
            let mine: Vec<&String> = keys.iter().filter(|k| shard_of(k, 2) == i).collect();
            let mut union = Vec::new();
            for w in 0..4 {
                let (part, parts) = worker_part(&e, w, 4);
                let got: Vec<&String> =
                    keys.iter().filter(|k| shard_of(k, parts) == part).collect();
                assert!(
                    got.len() > 150,
                    "shard {i} worker {w}: {} series",
                    got.len()
                );
                union.extend(got);
                // The plain split inside the shard: two of its four workers get nothing.
                let plain = mine.iter().filter(|k| shard_of(k, 4) == w).count();
                assert_eq!(plain == 0, w % 2 != i, "worker {w} of shard {i}");
            }
            union.sort();
            let mut mine = mine;
            mine.sort();
            assert_eq!(union, mine);
        }
        assert_eq!(worker_part(&env(None), 3, 4), (3, 4));
        assert_eq!(stride(&env(Some(Spec { index: 0, count: 1 }))), None);
    }

    fn ingest(rows: u64) -> (IngestPhase, IngestReport) {
        let phase = IngestPhase {
            name: "load".into(),
            endpoint: crate::plan::EndpointPlan {
                target: "t".into(),
                name: "null".into(),
                kind: "null".into(),
                dialect: "generic".into(),
                url: None,
                options: Default::default(),
            },
            table: "cpu".into(),
            source: crate::plan::RowSource::File {
                path: "rows.ilp".into(),
                format: "ilp".into(),
                bytes: None,
            },
            rows_expected: Some(rows),
            bytes_expected: None,
            batch_rows: 10,
            workers: 1,
            routing: "fnv1a64".into(),
            ack: crate::plan::Ack::None,
            setup: Setup::Recreate,
            teardown: Teardown::Drop,
            ddl: None,
            setup_ddl: Vec::new(),
            verify: None,
            calibrate: false,
            replay_budget: None,
            duration: None,
            rate: Some(Value::Rate(900.0)),
            probe: None,
            findmax: None,
            warmup: None,
            stages: Vec::new(),
            commit: None,
            replay_when: None,
            link: None,
        };
        let report = super::super::ingest::empty::empty_report(&phase);
        (phase, report)
    }

    #[test]
    fn shard_0_judges_the_union_of_the_rows_against_the_plan() {
        let lead = env(Some(Spec { index: 0, count: 3 }));
        let sent = |n| Figures {
            sent: n,
            acked: None,
            ok: None,
            dropped: 0,
        };
        let (phase, mut r) = ingest(100);
        judge_union(&lead, &mut r, &phase, Some(&sent(100)));
        assert!(r.failures.is_empty(), "{:?}", r.failures);
        assert_eq!(r.rows_expected, None);
        let (phase, mut r) = ingest(100);
        judge_union(&lead, &mut r, &phase, Some(&sent(90)));
        assert_eq!(
            r.failures,
            ["the 3 shards sent 90 of the 100 rows expected"]
        );
        let (phase, mut r) = ingest(100);
        judge_union(&lead, &mut r, &phase, Some(&sent(101)));
        assert!(r.failures[0].contains("more than the 100 expected"));
        // Another shard judges nothing but its own report's completeness.
        let other = env(Some(Spec { index: 2, count: 3 }));
        let (phase, mut r) = ingest(100);
        judge_union(&other, &mut r, &phase, Some(&sent(90)));
        assert!(r.failures.is_empty());
        // Its part: a third of the rate, no setup (not its `setup sql` either), teardown or
        // count.
        let mut phase = phase;
        phase
            .setup_ddl
            .push(crate::plan::table::SetupStatement::new(
                crate::plan::table::StatementKind::Sql,
                "CREATE INDEX ON cpu (v)".into(),
            ));
        let part = ingest_part(&other, &phase);
        assert_eq!(part.rate, Some(Value::Rate(300.0)));
        assert_eq!((part.setup, part.teardown), (Setup::Shared, Teardown::Keep));
        assert!(part.setup_ddl.is_empty());
        let part = ingest_part(&lead, &phase);
        assert_eq!(
            (part.setup, part.teardown),
            (Setup::Recreate, Teardown::Drop)
        );
        assert_eq!(part.setup_ddl, phase.setup_ddl);
        assert!(matches!(ingest_part(&env(None), &phase), Cow::Borrowed(_)));
        assert_eq!(hook_worker(&other, 1, 4), (9, 12));
    }
}
