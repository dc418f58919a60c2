//! A phase's time series, recorded while it runs and written an interval at a time
//! (`report::series` has the files' format). Each worker records into a slot of its own — a
//! mutex only the series writer ever contends for, once per interval — and a writer thread
//! takes every closed interval from the slots, merges them and appends one CSV row and its
//! histograms to the interval log. Memory holds the open intervals only, whatever the run's
//! length, and a killed run keeps what was written.
//!
//! An interval closes `grace` after its end: a worker that took its timestamp just before the
//! boundary has that long to record it. A record later still (a worker descheduled for longer)
//! goes into the next interval not yet written, and the writer counts it (`late_records`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;

use crate::report::series::{
    interval_histogram, AnnouncedGroup, AnnouncedProbe, Measured, SeriesRef,
};

pub mod fault;
mod rows;
mod writer;
use writer::{announce, write_loop, Files};

/// `--out DIR` and `--interval`: where and how finely a run's series are written.
#[derive(Clone, Debug)]
pub struct SeriesOut {
    pub dir: PathBuf,
    pub interval: Duration,
    /// Rung by the first write to `dir` that fails: the run stops.
    pub fault: Arc<fault::Fault>,
}

/// What a phase's series holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `acks`: the protocol acknowledges rows (not ILP over TCP, not null); `probe`: the phase
    /// has `probe visible`, whose lag gets a tag of its own in the interval log.
    Ingest { acks: bool, probe: bool },
    /// A query or request run; `service`: open loop, where service time is kept apart.
    Run { service: bool },
}

/// Which phase a series belongs to, for `series/phases.jsonl` (what `wlrun report` reads of a
/// killed run, which never wrote report.json).
pub struct PhaseId<'a> {
    pub cell: usize,
    pub key: &'a str,
    pub phase: &'a str,
    /// `ingest`, `queries` or `requests`: the report's `phase` tag.
    pub kind: &'static str,
    pub endpoint: String,
    /// Workers, or a request run's connections.
    pub workers: u64,
    /// A query or request run's load (`closed`, `open 200/s poisson`); `None` for ingest.
    pub load: Option<String>,
    /// The `concurrent` group the phase runs in, if any.
    pub concurrent: Option<AnnouncedGroup>,
    /// An ingest's `probe visible`, if any.
    pub probe: Option<AnnouncedProbe>,
}

// Counter positions of an interval. Run: ok, failed, cut off, unsent. Ingest: rows sent,
// rows acked, payload bytes, socket bytes, batches, errors, probes answered, probes failed.
const OK: usize = 0;
const FAILED: usize = 1;
const CUT_OFF: usize = 2;
const UNSENT: usize = 3;
const ROWS_SENT: usize = 0;
const ROWS_ACKED: usize = 1;
const PAYLOAD: usize = 2;
const SOCKET: usize = 3;
const BATCHES: usize = 4;
const ERRORS: usize = 5;
const PROBES: usize = 6;
const PROBES_FAILED: usize = 7;
const COUNTERS: usize = 8;

/// Unix time of `Instant`s, from one reading of both clocks at the phase's start: intervals
/// follow the monotonic clock (no jumps), aligned to the wall clock's boundaries.
#[derive(Clone, Copy)]
struct Clock {
    at: Instant,
    unix_ns: u128,
    interval_ns: u128,
}

impl Clock {
    fn unix_ns(&self, t: Instant) -> u128 {
        self.unix_ns + t.saturating_duration_since(self.at).as_nanos()
    }

    fn index(&self, t: Instant) -> u64 {
        (self.unix_ns(t) / self.interval_ns) as u64
    }
}

/// One worker's figures of one interval.
struct Acc {
    index: u64,
    counts: [u64; COUNTERS],
    /// Runs: latency. Ingest: batch latency.
    latency: Histogram<u64>,
    service: Histogram<u64>,
    /// Open loop with live metrics: actual minus intended send time of the answers.
    send_lag: Histogram<u64>,
    /// Ingest with `probe visible`: the lag of the batches the interval's probes saw first.
    lag: Histogram<u64>,
    /// The highest count a probe answered (counts only grow, so it is the last one's).
    visible: Option<u64>,
}

impl Acc {
    fn new(index: u64) -> Acc {
        Acc {
            index,
            counts: [0; COUNTERS],
            latency: interval_histogram(),
            service: interval_histogram(),
            send_lag: interval_histogram(),
            lag: interval_histogram(),
            visible: None,
        }
    }

    fn merge(&mut self, other: &Acc) {
        for (a, b) in self.counts.iter_mut().zip(other.counts) {
            *a += b;
        }
        // Auto-resizing histograms of the same precision always add.
        let _ = self.latency.add(&other.latency);
        let _ = self.service.add(&other.service);
        let _ = self.send_lag.add(&other.send_lag);
        let _ = self.lag.add(&other.lag);
        self.visible = self.visible.max(other.visible);
    }

    fn reset(&mut self, index: u64) {
        self.index = index;
        self.counts = [0; COUNTERS];
        self.latency.reset();
        self.service.reset();
        self.send_lag.reset();
        self.lag.reset();
        self.visible = None;
    }

    /// A probe answered or failed in this interval.
    fn probed(&self) -> bool {
        self.counts[PROBES] + self.counts[PROBES_FAILED] > 0
    }
}

#[derive(Default)]
struct SlotState {
    open: Vec<Acc>,
    /// Accumulators the writer has emptied, reused so that recording allocates nothing once
    /// the run is going.
    spare: Vec<Acc>,
}

/// A worker's handle on its phase's series; recording on a run without `--out` does nothing.
#[derive(Clone)]
pub struct Slot {
    state: Option<Link>,
}

#[derive(Clone)]
struct Link {
    state: Arc<Mutex<SlotState>>,
    clock: Clock,
    /// The writer failed.
    dead: Arc<AtomicBool>,
    /// Live metrics want the send lag (only they read it: without them it costs nothing).
    send_lag: bool,
}

impl Slot {
    /// A slot that records nothing (a run without `--out`, or a unit test).
    pub fn none() -> Slot {
        Slot { state: None }
    }

    fn with(&self, at: Instant, f: impl FnOnce(&mut Acc)) {
        let Some(Link {
            state, clock, dead, ..
        }) = &self.state
        else {
            return;
        };
        // A writer that failed (a full disk) takes nothing more: recording stops, so that
        // memory stays flat for the rest of the run.
        if dead.load(Ordering::Relaxed) {
            return;
        }
        let index = clock.index(at);
        let mut s = lock(state);
        let s = &mut *s;
        let i = match s.open.iter().rposition(|a| a.index == index) {
            Some(i) => i,
            None => {
                let acc = match s.spare.pop() {
                    Some(mut a) => {
                        a.reset(index);
                        a
                    }
                    None => Acc::new(index),
                };
                s.open.push(acc);
                s.open.len() - 1
            }
        };
        f(&mut s.open[i]);
    }

    /// A query or request answered at `done`.
    pub fn ok(&self, done: Instant, latency: Duration, service: Option<Duration>) {
        let send_lag = self.state.as_ref().is_some_and(|s| s.send_lag);
        self.with(done, |a| {
            a.counts[OK] += 1;
            put(&mut a.latency, latency);
            if let Some(s) = service {
                put(&mut a.service, s);
                // Open loop: latency runs from the intended time, service from the send.
                if send_lag {
                    put(&mut a.send_lag, latency.saturating_sub(s));
                }
            }
        });
    }

    pub fn failed(&self, done: Instant) {
        self.with(done, |a| a.counts[FAILED] += 1);
    }

    pub fn cut_off(&self, at: Instant, n: u64) {
        self.with(at, |a| a.counts[CUT_OFF] += n);
    }

    /// `n` units whose intended send time was `intended` were never sent.
    pub fn unsent(&self, intended: Instant, n: u64) {
        self.with(intended, |a| a.counts[UNSENT] += n);
    }

    /// A batch of `rows` handed to the socket at `at`.
    pub fn sent(&self, at: Instant, rows: u64, payload_bytes: u64, socket_bytes: u64) {
        self.with(at, |a| {
            a.counts[ROWS_SENT] += rows;
            a.counts[PAYLOAD] += payload_bytes;
            a.counts[SOCKET] += socket_bytes;
            a.counts[BATCHES] += 1;
        });
    }

    /// `rows` acknowledged at `at`, the batch `latency` after it was sent.
    pub fn acked(&self, at: Instant, rows: u64, latency: Option<Duration>) {
        self.with(at, |a| {
            a.counts[ROWS_ACKED] += rows;
            if let Some(l) = latency {
                put(&mut a.latency, l);
            }
        });
    }

    /// A batch written where the protocol has no acknowledgements, `latency` after its send
    /// began.
    pub fn written(&self, at: Instant, latency: Duration) {
        self.with(at, |a| put(&mut a.latency, latency));
    }

    pub fn error(&self, at: Instant) {
        self.with(at, |a| a.counts[ERRORS] += 1);
    }

    /// A `probe visible` count answered at `at`: it saw `visible` of the phase's rows, and
    /// `lags` are those of the batches it was the first to include (one sample per batch,
    /// none when it found nothing new), so the interval's lag is the report's, batch by batch.
    pub fn probe_answered(&self, at: Instant, visible: u64, lags: &[Duration]) {
        self.with(at, |a| {
            a.counts[PROBES] += 1;
            a.visible = a.visible.max(Some(visible));
            for &l in lags {
                put(&mut a.lag, l);
            }
        });
    }

    /// A `probe visible` count failed at `at`.
    pub fn probe_failed(&self, at: Instant) {
        self.with(at, |a| a.counts[PROBES_FAILED] += 1);
    }
}

/// Records `d` in microseconds, growing the histogram (`saturating_record` would clamp at
/// its current top instead).
fn put(h: &mut Histogram<u64>, d: Duration) {
    let us = micros(d);
    if h.record(us).is_err() {
        h.saturating_record(us);
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the phase tells the writer: the measured windows (unix ns; the last may be open) and
/// whether the phase has ended.
#[derive(Default)]
struct Control {
    windows: Vec<(u128, Option<u128>)>,
    finished: bool,
    /// A staged run's or ingest's stages: (Unix ns of its start, its number).
    stages: Vec<(u128, u64)>,
    /// The phase's own measured span (unix ns), where it is not the windows': an ingest's,
    /// from its first batch sent to its last answer.
    span: Option<(u128, u128)>,
}

struct Shared {
    clock: Clock,
    kind: Kind,
    slots: Mutex<Vec<Arc<Mutex<SlotState>>>>,
    control: Mutex<Control>,
    wake: Condvar,
    /// Set when the writer failed: slots stop recording.
    dead: Arc<AtomicBool>,
    fault: Arc<fault::Fault>,
    /// `--metrics-listen`/`--metrics-push`: each closed interval is added to the phase's
    /// live figures too.
    live: Option<super::live::Phase>,
}

/// A phase's series being recorded: `slot()` per worker, `measure`/`pause` around the
/// measured rounds, `finish` when the phase is over.
pub struct Recorder {
    running: Option<Running>,
    /// The observed server's sampler (`observe process`), told where the measured span
    /// begins and ends.
    marks: Option<super::observe::Marks>,
}

struct Running {
    shared: Arc<Shared>,
    writer: JoinHandle<Result<Written, String>>,
    /// `None` without `--out`: the writer only feeds live metrics.
    reference: Option<SeriesRef>,
}

struct Written {
    intervals: u64,
    late_records: u64,
}

impl Recorder {
    /// A recorder that records nothing: a run without `--out`.
    pub fn none() -> Recorder {
        Recorder {
            running: None,
            marks: None,
        }
    }

    /// Starts the series of `id` under `out` (`None`: the run keeps no series), feeding
    /// `live` metrics too; with neither it records nothing. A series that cannot be written
    /// does not stop the phase; `finish` says why it is missing.
    pub fn start(
        out: Option<&SeriesOut>,
        live: Option<super::live::Phase>,
        id: &PhaseId,
        kind: Kind,
    ) -> Result<Recorder, String> {
        let interval = match (out, &live) {
            (Some(out), _) => out.interval,
            (None, Some(l)) => l.interval(),
            (None, None) => return Ok(Recorder::none()),
        };
        let (counts, hlog) = SeriesRef::paths(id.cell, id.phase);
        let interval_ms = interval.as_millis().max(1) as u64;
        let reference = SeriesRef {
            interval_ms,
            counts,
            hlog,
            intervals: 0,
            measured: Vec::new(),
        };
        let now = SystemTime::now();
        let clock = Clock {
            at: Instant::now(),
            unix_ns: now
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
            interval_ns: u128::from(interval_ms) * 1_000_000,
        };
        let files = match out {
            Some(out) => {
                let dir = out.dir.clone();
                std::fs::create_dir_all(dir.join(crate::report::series::DIR))
                    .map_err(|e| format!("cannot create {}: {e}", dir.join("series").display()))?;
                announce(&dir, id, kind, &reference, now)?;
                // HdrHistogram's log readers skip intervals that begin before the log's
                // StartTime: it is the start of the first (wall-clock aligned) interval, not
                // the phase's.
                let first_ns = clock.unix_ns / clock.interval_ns * clock.interval_ns;
                let log_start = UNIX_EPOCH + Duration::from_nanos(first_ns as u64);
                Some(Files::create(&dir, &reference, id, log_start)?)
            }
            None => None,
        };
        let shared = Arc::new(Shared {
            clock,
            kind,
            slots: Mutex::new(Vec::new()),
            control: Mutex::new(Control::default()),
            wake: Condvar::new(),
            dead: Arc::new(AtomicBool::new(false)),
            fault: out.map(|o| o.fault.clone()).unwrap_or_default(),
            live,
        });
        let writer = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("wlrun-series".into())
                .spawn(move || write_loop(&shared, files))
                .map_err(|e| format!("cannot start the series writer: {e}"))?
        };
        Ok(Recorder {
            running: Some(Running {
                shared,
                writer,
                reference: out.map(|_| reference),
            }),
            marks: None,
        })
    }

    /// The phase's live metrics, if the run has them.
    pub fn live(&self) -> Option<super::live::Phase> {
        self.running.as_ref()?.shared.live.clone()
    }

    /// A `find max rate` search measures step `n` (from 1): live metrics say so.
    pub fn step(&self, n: u64) {
        if let Some(l) = self.running.as_ref().and_then(|r| r.shared.live.as_ref()) {
            l.step(n);
        }
    }

    /// A worker's slot.
    pub fn slot(&self) -> Slot {
        let Some(r) = &self.running else {
            return Slot::none();
        };
        let state = Arc::new(Mutex::new(SlotState::default()));
        lock(&r.shared.slots).push(state.clone());
        Slot {
            state: Some(Link {
                state,
                clock: r.shared.clock,
                dead: r.shared.dead.clone(),
                send_lag: r.shared.live.is_some(),
            }),
        }
    }

    /// `n` units were never sent, known when the round that scheduled them ended at `at`.
    pub fn unsent_at(&self, at: Instant, n: u64) {
        if n > 0 {
            self.slot().unsent(at, n);
        }
    }

    /// Measured time begins at `at` (a measured round starts).
    /// The server observed beside this phase: its samples follow the measured span.
    pub fn observed(mut self, marks: super::observe::Marks) -> Recorder {
        self.marks = Some(marks);
        self
    }

    pub fn measure(&self, at: Instant) {
        self.marks.iter().for_each(super::observe::Marks::begin);
        if let Some(r) = &self.running {
            let ns = r.shared.clock.unix_ns(at);
            let mut c = lock(&r.shared.control);
            if !matches!(c.windows.last(), Some((_, None))) {
                c.windows.push((ns, None));
            }
        }
    }

    /// Stage `number` of a staged run or ingest begins at `at`: the intervals from there on say
    /// so.
    pub fn stage(&self, at: Instant, number: u64) {
        if let Some(r) = &self.running {
            let ns = r.shared.clock.unix_ns(at);
            lock(&r.shared.control).stages.push((ns, number));
        }
    }

    /// Measured time ends at `at` (the round is over; a warm-up may follow).
    pub fn pause(&self, at: Instant) {
        self.marks.iter().for_each(super::observe::Marks::end);
        if let Some(r) = &self.running {
            let ns = r.shared.clock.unix_ns(at);
            let mut c = lock(&r.shared.control);
            if let Some((start, end @ None)) = c.windows.last_mut() {
                *end = Some(ns.max(*start));
            }
        }
    }

    /// The phase's measured span, from `from` to `to`, when it is not its measured windows (an
    /// ingest measures from its first batch sent to its last answer, or its last slot's end):
    /// what the report's `measured` says, and what the intervals' spans add up to.
    pub fn span(&self, from: Instant, to: Instant) {
        self.marks.iter().for_each(super::observe::Marks::end);
        if let Some(r) = &self.running {
            let c = r.shared.clock;
            let (from, to) = (c.unix_ns(from), c.unix_ns(to).max(c.unix_ns(from)));
            let mut control = lock(&r.shared.control);
            (control.span, control.windows) = (Some((from, to)), vec![(from, Some(to))]);
        }
    }

    /// Ends the series at the end of its last measured window and writes what is left: the
    /// reference for the phase's report (`None` without `--out`, or when the writer failed) and
    /// a warning for it (records that came late, or why the series is missing or incomplete;
    /// the phase's own figures are never affected).
    pub fn finish(self) -> (Option<SeriesRef>, Option<String>) {
        let Some(r) = self.running else {
            return (None, None);
        };
        let measured = {
            let now = r.shared.clock.unix_ns(Instant::now());
            let mut c = lock(&r.shared.control);
            if let Some((start, end @ None)) = c.windows.last_mut() {
                *end = Some(now.max(*start));
            }
            c.finished = true;
            r.shared.wake.notify_all();
            match c.span {
                Some((from, to)) => vec![Measured::of_ns(from, to)],
                None => c
                    .windows
                    .iter()
                    .map(|&(from, to)| Measured::of_ns(from, to.unwrap_or(from)))
                    .collect(),
            }
        };
        let written = match r.writer.join() {
            Ok(Ok(w)) => w,
            Ok(Err(e)) => return (None, Some(e)),
            Err(_) => return (None, Some("the series writer failed".into())),
        };
        let Some(mut reference) = r.reference else {
            return (None, None);
        };
        reference.intervals = written.intervals;
        reference.measured = measured;
        let late = (written.late_records > 0).then(|| {
            format!(
                "{} records of the time series arrived after their interval was written and \
                 were counted in the next one",
                written.late_records
            )
        });
        (Some(reference), late)
    }
}

#[cfg(test)]
mod tests {
    use super::writer::span_ns;
    use super::*;
    use crate::report::series::{
        merged, read, read_hlog, Series, TAG_BATCH, TAG_LAG, TAG_LATENCY, TAG_SERVICE,
    };

    fn id() -> PhaseId<'static> {
        PhaseId {
            cell: 1,
            key: "k=1",
            phase: "q",
            kind: "queries",
            endpoint: "db.sql (pg)".into(),
            workers: 2,
            load: Some("closed".into()),
            concurrent: None,
            probe: None,
        }
    }

    #[test]
    fn every_record_lands_in_one_aligned_interval_and_the_log_holds_the_same_histograms() {
        let dir = tempfile::tempdir().unwrap();
        let out = SeriesOut {
            dir: dir.path().to_path_buf(),
            interval: Duration::from_millis(50),
            fault: Default::default(),
        };
        let rec = Recorder::start(Some(&out), None, &id(), Kind::Run { service: true }).unwrap();
        let (a, b) = (rec.slot(), rec.slot());
        rec.measure(Instant::now());
        for i in 0..30u64 {
            let now = Instant::now();
            a.ok(
                now,
                Duration::from_micros(100 + i),
                Some(Duration::from_micros(50)),
            );
            if i % 3 == 0 {
                b.failed(now);
            }
            std::thread::sleep(Duration::from_millis(7));
        }
        b.cut_off(Instant::now(), 2);
        let r = rec.finish().0.unwrap();
        assert_eq!(r.interval_ms, 50);
        let Series::Run(rows) = read(dir.path(), &r, false).unwrap() else {
            panic!("a run series")
        };
        assert_eq!(rows.len() as u64, r.intervals);
        assert!(rows.len() >= 4, "{rows:?}");
        assert_eq!(rows.iter().map(|r| r.ok).sum::<u64>(), 30);
        assert_eq!(rows.iter().map(|r| r.failed).sum::<u64>(), 10);
        assert_eq!(rows.iter().map(|r| r.cut_off).sum::<u64>(), 2);
        for (x, y) in rows.iter().zip(rows.iter().skip(1)) {
            assert_eq!(y.start_ms - x.start_ms, 50, "consecutive intervals");
        }
        assert!(rows.iter().all(|r| r.start_ms % 50 == 0 && r.span_ms <= 50));
        assert!(rows[1..rows.len() - 1].iter().all(|r| r.span_ms == 50));
        let total_span: u64 = rows.iter().map(|r| r.span_ms).sum();
        assert!(
            (200..=400).contains(&total_span),
            "{total_span} ms measured"
        );
        let logged = read_hlog(&dir.path().join(&r.hlog)).unwrap();
        assert_eq!(
            logged.len(),
            rows.len() * 2,
            "latency and service per interval"
        );
        let latency = merged(&logged, TAG_LATENCY).unwrap();
        assert_eq!(latency.len(), 30);
        assert_eq!(latency.min(), 100);
        assert_eq!(merged(&logged, TAG_SERVICE).unwrap().len(), 30);
        for (row, h) in rows.iter().zip(
            logged
                .iter()
                .filter(|l| l.tag.as_deref() == Some(TAG_LATENCY)),
        ) {
            assert_eq!(h.start_ms, row.start_ms);
            assert_eq!(h.histogram.len(), row.ok);
            assert_eq!(
                row.p50_us,
                (row.ok > 0).then(|| h.histogram.value_at_quantile(0.5))
            );
        }
        let phases = std::fs::read_to_string(dir.path().join("series/phases.jsonl")).unwrap();
        let line: serde_json::Value = serde_json::from_str(phases.trim()).unwrap();
        assert_eq!(line["series"]["counts"], "series/1-q.csv");
        assert_eq!(line["open_loop"], true);
    }

    #[test]
    fn intervals_are_written_while_the_phase_runs() {
        let dir = tempfile::tempdir().unwrap();
        let out = SeriesOut {
            dir: dir.path().to_path_buf(),
            interval: Duration::from_millis(20),
            fault: Default::default(),
        };
        let rec = Recorder::start(
            Some(&out),
            None,
            &id(),
            Kind::Ingest {
                acks: false,
                probe: false,
            },
        )
        .unwrap();
        let s = rec.slot();
        rec.measure(Instant::now());
        s.sent(Instant::now(), 10, 100, 120);
        std::thread::sleep(Duration::from_millis(120));
        let text = std::fs::read_to_string(dir.path().join("series/1-q.csv")).unwrap();
        assert!(
            text.lines().count() >= 3,
            "header and closed intervals: {text}"
        );
        assert!(
            text.lines().nth(1).unwrap().contains(",10,,100,120,1,0"),
            "{text}"
        );
        let r = rec.finish().0.unwrap();
        let Series::Ingest(rows) = read(dir.path(), &r, true).unwrap() else {
            panic!("an ingest series")
        };
        assert_eq!(rows.iter().map(|r| r.rows_sent).sum::<u64>(), 10);
        assert!(rows.iter().all(|r| r.rows_acked.is_none()));
    }

    #[test]
    fn probes_land_where_they_were_answered_also_after_sending_ended() {
        let dir = tempfile::tempdir().unwrap();
        let out = SeriesOut {
            dir: dir.path().to_path_buf(),
            interval: Duration::from_millis(20),
            fault: Default::default(),
        };
        let id = PhaseId {
            kind: "ingest",
            load: None,
            concurrent: Some(AnnouncedGroup {
                group: "mixed".into(),
                phases: vec!["q".into(), "reads".into()],
                until: Some("q".into()),
            }),
            probe: Some(AnnouncedProbe {
                endpoint: "db.sql (pg)".into(),
                language: "sql".into(),
                query: "SELECT count(*) FROM t".into(),
                every_s: 0.02,
                within_s: 60.0,
            }),
            ..id()
        };
        let kind = Kind::Ingest {
            acks: true,
            probe: true,
        };
        let rec = Recorder::start(Some(&out), None, &id, kind).unwrap();
        let (worker, probe) = (rec.slot(), rec.slot());
        rec.measure(Instant::now());
        worker.sent(Instant::now(), 100, 1000, 1100);
        worker.acked(Instant::now(), 100, Some(Duration::from_micros(900)));
        std::thread::sleep(Duration::from_millis(30));
        probe.probe_answered(Instant::now(), 0, &[]);
        probe.probe_failed(Instant::now());
        std::thread::sleep(Duration::from_millis(30));
        probe.probe_answered(Instant::now(), 40, &[Duration::from_millis(300)]);
        // A probe that finds nothing new counts, and adds no lag.
        probe.probe_answered(Instant::now(), 40, &[]);
        rec.pause(Instant::now());
        // Sending is over; the probe goes on until the rows show, intervals later, and its
        // last answer is the first to include two batches: a sample each.
        std::thread::sleep(Duration::from_millis(70));
        let two = [Duration::from_millis(310), Duration::from_millis(290)];
        probe.probe_answered(Instant::now(), 100, &two);
        let r = rec.finish().0.unwrap();
        let Series::Ingest(rows) = read(dir.path(), &r, true).unwrap() else {
            panic!("an ingest series")
        };
        assert_eq!(rows.iter().map(|r| r.probes).sum::<u64>(), 4, "{rows:?}");
        assert_eq!(rows.iter().map(|r| r.probes_failed).sum::<u64>(), 1);
        let last = rows.last().unwrap();
        assert_eq!(last.span_ms, 0, "after the measured span: {rows:?}");
        assert_eq!(last.probes, 1);
        assert_eq!(last.visible, Some(100));
        assert!(
            (310_000..=310_500).contains(&last.lag_max_us.unwrap()),
            "{last:?}"
        );
        // An interval without an answered probe leaves the probe's figures empty, its counts 0.
        assert!(rows
            .iter()
            .filter(|r| r.probes == 0)
            .all(|r| r.visible.is_none() && r.lag_p50_us.is_none() && r.lag_max_us.is_none()));
        let with_lag = rows.iter().filter(|r| r.lag_p50_us.is_some()).count();
        assert_eq!(with_lag, 2, "{rows:?}");
        let logged = read_hlog(&dir.path().join(&r.hlog)).unwrap();
        // Every interval has its batch and its lag histogram, empty or not.
        assert_eq!(logged.len(), rows.len() * 2);
        assert_eq!(merged(&logged, TAG_LAG).unwrap().len(), 3);
        assert_eq!(merged(&logged, TAG_BATCH).unwrap().len(), 1);
        let line: crate::report::series::Announced = serde_json::from_str(
            std::fs::read_to_string(dir.path().join("series/phases.jsonl"))
                .unwrap()
                .trim(),
        )
        .unwrap();
        assert_eq!(line.concurrent, id.concurrent);
        assert_eq!(line.probe, id.probe);
    }

    #[test]
    fn a_writer_that_fails_stops_the_slots_so_memory_stays_flat() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("series")).unwrap();
        // Every write to /dev/full fails with ENOSPC: a full disk.
        std::os::unix::fs::symlink("/dev/full", dir.path().join("series/1-q.csv")).unwrap();
        let out = SeriesOut {
            dir: dir.path().to_path_buf(),
            interval: Duration::from_millis(20),
            fault: Default::default(),
        };
        let rec = Recorder::start(Some(&out), None, &id(), Kind::Run { service: false }).unwrap();
        let slot = rec.slot();
        rec.measure(Instant::now());
        let deadline = Instant::now() + Duration::from_secs(10);
        let open = |slot: &Slot| lock(&slot.state.as_ref().unwrap().state).open.len();
        loop {
            slot.ok(Instant::now(), Duration::from_micros(100), None);
            std::thread::sleep(Duration::from_millis(5));
            if rec
                .running
                .as_ref()
                .unwrap()
                .shared
                .dead
                .load(Ordering::Relaxed)
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the write to /dev/full never failed"
            );
        }
        for _ in 0..50 {
            slot.ok(Instant::now(), Duration::from_micros(100), None);
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(open(&slot), 0, "a dead series keeps nothing");
        let e = rec.finish().1.unwrap();
        assert!(e.contains("cannot write") && e.contains("1-q.csv"), "{e}");
    }

    #[test]
    fn a_run_without_out_records_nothing() {
        let rec = Recorder::start(None, None, &id(), Kind::Run { service: false }).unwrap();
        let s = rec.slot();
        s.ok(Instant::now(), Duration::from_millis(1), None);
        assert_eq!(rec.finish(), (None, None));
    }

    #[test]
    fn the_reference_places_each_measured_round_on_the_wall_clock() {
        let dir = tempfile::tempdir().unwrap();
        let out = SeriesOut {
            dir: dir.path().to_path_buf(),
            interval: Duration::from_millis(10),
            fault: Default::default(),
        };
        let unix_ms = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64() * 1e3;
        let before = unix_ms(SystemTime::now());
        let rec = Recorder::start(Some(&out), None, &id(), Kind::Run { service: false }).unwrap();
        let t0 = Instant::now();
        rec.measure(t0);
        rec.pause(t0 + Duration::from_millis(30));
        rec.measure(t0 + Duration::from_millis(50));
        rec.pause(t0 + Duration::from_millis(70));
        std::thread::sleep(Duration::from_millis(80));
        let r = rec.finish().0.unwrap();
        assert_eq!(r.measured.len(), 2, "{:?}", r.measured);
        let (a, b) = (r.measured[0], r.measured[1]);
        assert!((a.span_s() - 0.030).abs() < 1e-6, "{a:?}");
        assert!((b.span_s() - 0.020).abs() < 1e-6, "{b:?}");
        assert!(
            (b.from_unix_ms - a.from_unix_ms - 50.0).abs() < 1e-3,
            "{a:?} {b:?}"
        );
        assert!(a.from_unix_ms >= before - 1.0 && a.from_unix_ms < before + 1000.0);
        // Kept to the microsecond.
        assert_eq!(a.from_unix_ms * 1000.0, (a.from_unix_ms * 1000.0).round());

        // An ingest says its own span: first batch sent to last answer.
        let rec = Recorder::start(
            Some(&out),
            None,
            &id(),
            Kind::Ingest {
                acks: true,
                probe: false,
            },
        )
        .unwrap();
        let t0 = Instant::now();
        rec.measure(t0);
        rec.span(
            t0 + Duration::from_millis(5),
            t0 + Duration::from_millis(25),
        );
        rec.pause(t0 + Duration::from_millis(30));
        let r = rec.finish().0.unwrap();
        assert_eq!(r.measured.len(), 1);
        assert!(
            (r.measured[0].span_s() - 0.020).abs() < 1e-6,
            "{:?}",
            r.measured
        );
    }

    #[test]
    fn an_ingest_span_past_its_last_send_is_the_series_span() {
        let dir = tempfile::tempdir().unwrap();
        let out = SeriesOut {
            dir: dir.path().to_path_buf(),
            interval: Duration::from_millis(10),
            fault: Default::default(),
        };
        let kind = Kind::Ingest {
            acks: false,
            probe: false,
        };
        let rec = Recorder::start(Some(&out), None, &id(), kind).unwrap();
        let t0 = Instant::now();
        rec.measure(t0);
        // The last batch left at 30 ms; its slot, and the schedule, end at 45 ms.
        rec.pause(t0 + Duration::from_millis(30));
        rec.span(t0, t0 + Duration::from_millis(45));
        std::thread::sleep(Duration::from_millis(60));
        let r = rec.finish().0.unwrap();
        let Series::Ingest(rows) = read(dir.path(), &r, true).unwrap() else {
            panic!("an ingest series")
        };
        let total: u64 = rows.iter().map(|r| r.span_ms).sum();
        // Whole milliseconds per interval: at most one lost to rounding in each.
        assert!(
            (45 - rows.len() as u64..=45).contains(&total),
            "{total} ms over {} intervals",
            rows.len()
        );
    }

    #[test]
    fn a_measured_span_counts_only_its_windows() {
        let w = [(10, Some(25)), (40, Some(45))];
        assert_eq!(span_ns(&w, 0, 20), 10);
        assert_eq!(span_ns(&w, 1, 20), 5);
        assert_eq!(span_ns(&w, 2, 20), 5);
        assert_eq!(span_ns(&[(30, None)], 1, 20), 10);
    }
}
