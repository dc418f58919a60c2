//! The series' writer thread: it takes each closed interval from the workers' slots, merges
//! them and appends the interval's CSV row and histograms; and `series/phases.jsonl`'s line.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hdrhistogram::serialization::interval_log::{
    IntervalLogWriterBuilder, IntervalLogWriterError, Tag,
};
use hdrhistogram::serialization::V2DeflateSerializer;

use super::rows::{ingest_row, run_row, stage_at};
use super::{
    lock, Acc, Kind, PhaseId, Shared, Written, CUT_OFF, ERRORS, FAILED, OK, ROWS_ACKED, ROWS_SENT,
    UNSENT,
};
use crate::exec::live::Interval;
use crate::report::series::{
    IngestInterval, RunInterval, SeriesRef, TAG_BATCH, TAG_LAG, TAG_LATENCY, TAG_SERVICE,
};

/// Appends the phase to `series/phases.jsonl`.
pub(super) fn announce(
    dir: &Path,
    id: &PhaseId,
    kind: Kind,
    r: &SeriesRef,
    now: SystemTime,
) -> Result<(), String> {
    let line = crate::report::series::Announced {
        cell: id.cell,
        key: id.key.to_string(),
        phase: id.phase.to_string(),
        kind: id.kind.to_string(),
        endpoint: id.endpoint.clone(),
        workers: id.workers,
        load: id.load.clone(),
        acks: !matches!(kind, Kind::Ingest { acks: false, .. }),
        open_loop: matches!(kind, Kind::Run { service: true }),
        started_ms: now
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64,
        series: r.clone(),
        concurrent: id.concurrent.clone(),
        probe: id.probe.clone(),
    };
    // One write for the line and its newline: `writeln!` on a file writes them apart, and a
    // kill between the two ran the next line into this one.
    let line = serde_json::to_string(&line).map_err(|e| e.to_string())?;
    let line = crate::secrets::mask_json(&line) + "\n";
    let path = dir.join(crate::report::series::DIR).join("phases.jsonl");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    f.write_all(line.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The two files of a series, open.
pub(super) struct Files {
    counts: csv::Writer<File>,
    counts_path: PathBuf,
    hlog: File,
    hlog_path: PathBuf,
    start: SystemTime,
    comment: String,
}

impl Files {
    pub(super) fn create(
        dir: &Path,
        r: &SeriesRef,
        id: &PhaseId,
        start: SystemTime,
    ) -> Result<Files, String> {
        let counts_path = dir.join(&r.counts);
        let hlog_path = dir.join(&r.hlog);
        let counts = csv::Writer::from_path(&counts_path)
            .map_err(|e| format!("cannot create {}: {e}", counts_path.display()))?;
        let hlog = File::create(&hlog_path)
            .map_err(|e| format!("cannot create {}: {e}", hlog_path.display()))?;
        Ok(Files {
            counts,
            counts_path,
            hlog,
            hlog_path,
            start,
            comment: format!(
                "wlrun: cell {} phase {} ({}), microseconds, {} ms intervals",
                id.cell, id.phase, id.endpoint, r.interval_ms
            ),
        })
    }
}

/// The writer thread. When it fails (a full disk, a removed directory) the slots stop
/// recording and are emptied, so what was written stays and memory does not grow with what
/// nobody will write; `finish` says why the series is incomplete.
pub(super) fn write_loop(shared: &Shared, files: Option<Files>) -> Result<Written, String> {
    let result = write_intervals(shared, files);
    if let Err(e) = &result {
        shared.fault.ring(e);
        shared.dead.store(true, Ordering::Relaxed);
        for slot in lock(&shared.slots).iter() {
            let mut s = lock(slot);
            s.open.clear();
            s.spare.clear();
        }
    }
    result
}

/// Waits for each interval to close, then writes it (with `--out`) and adds it to the live
/// metrics (with them).
fn write_intervals(shared: &Shared, files: Option<Files>) -> Result<Written, String> {
    let clock = shared.clock;
    let interval_ns = clock.interval_ns;
    let grace = (interval_ns / 4).min(200_000_000);
    let mut serializer = V2DeflateSerializer::new();
    let (mut counts, mut hlog, counts_path, hlog_path, comment, start) = match files {
        Some(f) => (
            Some(f.counts),
            Some(f.hlog),
            f.counts_path,
            f.hlog_path,
            f.comment,
            f.start,
        ),
        None => (
            None,
            None,
            PathBuf::new(),
            PathBuf::new(),
            String::new(),
            UNIX_EPOCH,
        ),
    };
    // An I/O error reads as one ("No space left on device"); only a serializer's has no text.
    let hlog_fail = |e: &IntervalLogWriterError<_>| {
        let why = match e {
            IntervalLogWriterError::IoError(io) => io.to_string(),
            IntervalLogWriterError::SerializeError(e) => format!("{e:?}"),
        };
        format!("cannot write {}: {why}", hlog_path.display())
    };
    let counts_fail =
        |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", counts_path.display());
    let mut log = match hlog.as_mut() {
        Some(hlog) => Some(
            IntervalLogWriterBuilder::new()
                .add_comment(&comment)
                .with_start_time(start)
                .with_max_value_divisor(1000.0)
                .begin_log_with(hlog, &mut serializer)
                .map_err(|e| hlog_fail(&IntervalLogWriterError::IoError(e)))?,
        ),
        None => None,
    };
    let mut pending: BTreeMap<u64, Acc> = BTreeMap::new();
    // The next interval to write; `None` until measured time has begun.
    let mut next: Option<u64> = None;
    let mut written = Written {
        intervals: 0,
        late_records: 0,
    };
    loop {
        let (finished, windows, stages) = {
            let mut c = lock(&shared.control);
            if !c.finished {
                let now = clock.unix_ns(Instant::now());
                let wake_at = (now / interval_ns + 1) * interval_ns + grace;
                let wait = Duration::from_nanos((wake_at - now).min(u128::from(u64::MAX)) as u64);
                c = shared
                    .wake
                    .wait_timeout(c, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            (c.finished, c.windows.clone(), c.stages.clone())
        };
        // Intervals before `limit` are closed.
        let mut limit = if finished {
            match windows.last() {
                // The interval holding the end, unless the end is its first instant.
                Some((_, Some(end))) => end.div_ceil(interval_ns) as u64,
                _ => next.unwrap_or(0),
            }
        } else {
            ((clock.unix_ns(Instant::now()).saturating_sub(grace)) / interval_ns) as u64
        };
        collect(shared, limit, finished, next, &mut pending, &mut written);
        if finished {
            // A probe goes on after sending ended, until every row shows: its last answers
            // fall after the measured span, in intervals of span 0.
            if let Some(last) = pending.iter().rev().find(|(_, a)| a.probed()) {
                limit = limit.max(last.0 + 1);
            }
        }
        if next.is_none() {
            next = windows
                .first()
                .map(|(start, _)| (start / interval_ns) as u64)
                .or_else(|| pending.keys().next().copied());
            // Anything recorded before measured time began counts in its first interval.
            if let Some(n) = next {
                let early: Vec<u64> = pending.range(..n).map(|(k, _)| *k).collect();
                for k in early {
                    let acc = pending.remove(&k).expect("key just listed");
                    match pending.get_mut(&n) {
                        Some(p) => p.merge(&acc),
                        None => {
                            let mut p = Acc::new(n);
                            p.merge(&acc);
                            pending.insert(n, p);
                        }
                    }
                }
            }
        }
        if let Some(mut i) = next {
            while i < limit {
                let acc = pending.remove(&i).unwrap_or_else(|| Acc::new(i));
                let span_ms = (span_ns(&windows, i, interval_ns) / 1_000_000) as u64;
                let start_ms = (u128::from(i) * interval_ns / 1_000_000) as u64;
                let start = Duration::from_millis(start_ms);
                let length = Duration::from_nanos(interval_ns as u64);
                let stage = stage_at(&stages, u128::from(i) * interval_ns);
                if let Some(live) = &shared.live {
                    live.add(&live_interval(&acc, stage, shared.kind));
                }
                let (Some(counts), Some(log)) = (counts.as_mut(), log.as_mut()) else {
                    i += 1;
                    continue;
                };
                let (row, histograms) = match shared.kind {
                    Kind::Ingest { acks, probe } => (
                        counts.serialize(IngestInterval {
                            stage,
                            ..ingest_row(&acc, start_ms, span_ms, acks)
                        }),
                        [
                            Some((&acc.latency, TAG_BATCH)),
                            probe.then_some((&acc.lag, TAG_LAG)),
                        ],
                    ),
                    Kind::Run { service } => (
                        counts.serialize(RunInterval {
                            stage,
                            ..run_row(&acc, start_ms, span_ms, service)
                        }),
                        [
                            Some((&acc.latency, TAG_LATENCY)),
                            service.then_some((&acc.service, TAG_SERVICE)),
                        ],
                    ),
                };
                row.map_err(|e| counts_fail(&e))?;
                for (h, tag) in histograms.into_iter().flatten() {
                    log.write_histogram(h, start, length, Tag::new(tag))
                        .map_err(|e| hlog_fail(&e))?;
                }
                // The row reaches the file here, after its histograms: a kill between the two
                // leaves a log one interval ahead of the counts, never behind.
                counts.flush().map_err(|e| counts_fail(&e))?;
                written.intervals += 1;
                i += 1;
            }
            next = Some(i.max(limit));
        }
        if finished {
            return Ok(written);
        }
    }
}

/// A closed interval as live metrics add it: a run's counters or an ingest's, which share
/// their positions.
fn live_interval(a: &Acc, stage: Option<u64>, kind: Kind) -> Interval<'_> {
    let (run, ingest) = match kind {
        Kind::Run { .. } => (1, 0),
        Kind::Ingest { .. } => (0, 1),
    };
    Interval {
        ok: a.counts[OK] * run,
        failed: a.counts[FAILED] * run,
        cut_off: a.counts[CUT_OFF] * run,
        unsent: a.counts[UNSENT] * run,
        rows_sent: a.counts[ROWS_SENT] * ingest,
        rows_acked: a.counts[ROWS_ACKED] * ingest,
        ingest_errors: a.counts[ERRORS] * ingest,
        visible: a.visible,
        latency: &a.latency,
        service: &a.service,
        send_lag: &a.send_lag,
        visibility_lag: &a.lag,
        stage,
    }
}

/// Takes every closed accumulator from the workers' slots into `pending`; one for an interval
/// already written goes to the next one to write, and is counted late.
fn collect(
    shared: &Shared,
    limit: u64,
    all: bool,
    next: Option<u64>,
    pending: &mut BTreeMap<u64, Acc>,
    written: &mut Written,
) {
    let slots = lock(&shared.slots).clone();
    for slot in slots {
        let mut s = lock(&slot);
        let s = &mut *s;
        let mut k = 0;
        while k < s.open.len() {
            let index = s.open[k].index;
            if index >= limit && !all {
                k += 1;
                continue;
            }
            let acc = s.open.swap_remove(k);
            let into = match next {
                Some(n) if index < n => {
                    written.late_records += acc.counts.iter().sum::<u64>().max(1);
                    n
                }
                _ => index,
            };
            match pending.get_mut(&into) {
                Some(p) => p.merge(&acc),
                None => {
                    let mut p = Acc::new(into);
                    p.merge(&acc);
                    pending.insert(into, p);
                }
            }
            s.spare.push(acc);
        }
    }
}

/// Measured nanoseconds of interval `i`: the windows' overlap with it (an open window runs on
/// past the interval: `finish` closes the last one).
pub(super) fn span_ns(windows: &[(u128, Option<u128>)], i: u64, interval_ns: u128) -> u128 {
    let (a, b) = (
        u128::from(i) * interval_ns,
        (u128::from(i) + 1) * interval_ns,
    );
    windows
        .iter()
        .map(|&(s, e)| e.unwrap_or(b).min(b).saturating_sub(s.max(a)))
        .sum()
}
