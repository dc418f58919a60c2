//! A merged phase's time series. Every shard's intervals are aligned to the same wall-clock
//! boundaries (`start_ms` is a multiple of `interval_ms` in Unix time), so the merge is exact
//! interval by interval: counts add, `span_ms` is the longest shard's (they measure at once),
//! and each interval's histograms (the `.hlog`) add per tag, its percentile columns taken
//! again from the sum. Intervals between the first and last that no shard wrote are written
//! empty (`span_ms` 0), so the merged series stays one row per interval.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use hdrhistogram::serialization::interval_log::{
    IntervalLogIterator, IntervalLogWriterBuilder, LogEntry, Tag,
};
use hdrhistogram::Histogram;

use crate::report::series::{
    self, interval_histogram, IngestInterval, Measured, RunInterval, Series, SeriesRef, TAG_BATCH,
    TAG_LATENCY, TAG_SERVICE,
};

/// One shard's series of the phase.
pub struct Part<'a> {
    pub index: u64,
    pub dir: &'a Path,
    pub series: &'a SeriesRef,
}

/// The merged series' two files, in memory until the run directory is written.
#[derive(Clone, Debug)]
pub struct Files {
    pub counts: String,
    pub counts_bytes: Vec<u8>,
    pub hlog: String,
    pub hlog_bytes: Vec<u8>,
}

/// What the merged phase's report says of its series.
pub struct Merged {
    pub reference: SeriesRef,
    pub files: Files,
}

/// The merged series of cell `cell`'s phase `phase`. `ingest` and `service` say which columns
/// and tags it has (an open-loop run keeps service time apart); `measured` is the merged
/// phase's union span, round by round.
pub fn merge(
    parts: &[Part],
    (cell, phase): (usize, &str),
    ingest: bool,
    service: bool,
    measured: Vec<Measured>,
) -> Result<Merged, String> {
    let interval_ms = parts.first().map_or(1000, |p| p.series.interval_ms);
    if let Some(p) = parts.iter().find(|p| p.series.interval_ms != interval_ms) {
        return Err(format!(
            "shard {} wrote {} ms intervals, shard {} {interval_ms} ms (--interval differs): \
             the series do not line up and are not merged",
            p.index, p.series.interval_ms, parts[0].index
        ));
    }
    let tags: &[&str] = match (ingest, service) {
        (true, _) => &[TAG_BATCH],
        (false, true) => &[TAG_LATENCY, TAG_SERVICE],
        (false, false) => &[TAG_LATENCY],
    };
    // Per interval start: the counts of every shard, and per tag the histograms to add.
    let mut ingest_rows: BTreeMap<u64, IngestInterval> = BTreeMap::new();
    let mut run_rows: BTreeMap<u64, RunInterval> = BTreeMap::new();
    let mut logs: Vec<Vec<u8>> = Vec::new();
    for p in parts {
        match series::read(p.dir, p.series, ingest)? {
            Series::Ingest(rows) => {
                for r in rows {
                    add_ingest(ingest_rows.entry(r.start_ms).or_default(), &r);
                }
            }
            Series::Run(rows) => {
                for r in rows {
                    add_run(run_rows.entry(r.start_ms).or_default(), &r);
                }
            }
        }
        logs.push(read_log(&p.dir.join(&p.series.hlog))?);
    }
    // Per interval and tag, the shards' serialized histograms: added one interval at a time
    // into the same few histograms, which stay in cache, rather than a histogram of each.
    let mut logged: BTreeMap<(u64, usize), Vec<&str>> = BTreeMap::new();
    for (p, text) in parts.iter().zip(&logs) {
        for entry in IntervalLogIterator::new(text) {
            let entry = entry.map_err(|e| {
                format!(
                    "{} is not an interval log: {e:?}",
                    p.dir.join(&p.series.hlog).display()
                )
            })?;
            let LogEntry::Interval(h) = entry else {
                continue;
            };
            if let Some(t) = tags
                .iter()
                .position(|t| h.tag().map(|x| x.as_str()) == Some(*t))
            {
                let start_ms = h.start_timestamp().as_millis() as u64;
                logged
                    .entry((start_ms, t))
                    .or_default()
                    .push(h.encoded_histogram());
            }
        }
    }
    let mut adder = super::codec::Adder::default();
    let mut sums: Vec<Option<Histogram<u64>>> =
        tags.iter().map(|_| Some(interval_histogram())).collect();
    let starts: Vec<u64> = if ingest {
        ingest_rows.keys().copied().collect()
    } else {
        run_rows.keys().copied().collect()
    };
    let (first, last) = match (starts.first(), starts.last()) {
        (Some(a), Some(b)) => (*a, *b),
        _ => (0, 0),
    };
    // A protocol with acknowledgements has the column filled in every row.
    let acks = ingest_rows.values().any(|r| r.rows_acked.is_some());
    let (counts, hlog) = SeriesRef::paths(cell, phase);
    let mut csv = csv::Writer::from_writer(Vec::new());
    let mut hlog_bytes = Vec::new();
    let mut serializer = super::codec::Deflater::default();
    let fail = |e: &dyn std::fmt::Debug| format!("the merged series of {phase}: {e:?}");
    let comment = format!(
        "wlrun merge: cell {cell} phase {phase}, {} shards, microseconds, {interval_ms} ms \
         intervals",
        parts.len()
    );
    let mut intervals = 0;
    {
        let mut log = IntervalLogWriterBuilder::new()
            .add_comment(&comment)
            .with_start_time(UNIX_EPOCH + Duration::from_millis(first))
            .with_max_value_divisor(1000.0)
            .begin_log_with(&mut hlog_bytes, &mut serializer)
            .map_err(|e| fail(&e))?;
        let mut start = first;
        while !starts.is_empty() && start <= last {
            for (t, sum) in sums.iter_mut().enumerate() {
                sum.get_or_insert_with(interval_histogram).reset();
                for text in logged.remove(&(start, t)).unwrap_or_default() {
                    adder.add_base64(sum, text).map_err(|e| fail(&e))?;
                }
            }
            let merged: Vec<&Histogram<u64>> = sums.iter().flatten().collect();
            if ingest {
                let mut row = ingest_rows.remove(&start).unwrap_or_default();
                row.start_ms = start;
                if acks {
                    row.rows_acked.get_or_insert(0);
                }
                row.set_batch_latency(merged[0]);
                csv.serialize(row).map_err(|e| fail(&e))?;
            } else {
                let mut row = run_rows.remove(&start).unwrap_or_default();
                row.start_ms = start;
                row.set_latency(merged[0], merged.get(1).filter(|_| service).copied());
                csv.serialize(row).map_err(|e| fail(&e))?;
            }
            for (h, tag) in merged.iter().zip(tags) {
                log.write_histogram(
                    *h,
                    Duration::from_millis(start),
                    Duration::from_millis(interval_ms),
                    Tag::new(tag),
                )
                .map_err(|e| fail(&e))?;
            }
            intervals += 1;
            start += interval_ms;
        }
    }
    let counts_bytes = csv.into_inner().map_err(|e| fail(&e))?;
    Ok(Merged {
        reference: SeriesRef {
            interval_ms,
            counts: counts.clone(),
            hlog: hlog.clone(),
            intervals,
            measured,
        },
        files: Files {
            counts,
            counts_bytes,
            hlog,
            hlog_bytes,
        },
    })
}

/// The interval log at `path`, up to its last whole line: a line a kill cut short is not part
/// of the log.
fn read_log(path: &Path) -> Result<Vec<u8>, String> {
    let mut text =
        std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let whole = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    text.truncate(whole);
    Ok(text)
}

/// Adds a shard's interval into the merged one (percentiles are taken later, from the
/// histograms). Every column is named, so that a new one cannot be left out unnoticed.
fn add_ingest(into: &mut IngestInterval, r: &IngestInterval) {
    let IngestInterval {
        start_ms: _,
        span_ms,
        rows_sent,
        rows_acked,
        payload_bytes,
        socket_bytes,
        batches,
        errors,
        batch_p50_us: _,
        batch_p99_us: _,
        batch_max_us: _,
        probes,
        probes_failed,
        visible,
        lag_p50_us: _,
        lag_max_us: _,
        stage,
    } = r;
    into.span_ms = into.span_ms.max(*span_ms);
    into.rows_sent += rows_sent;
    into.rows_acked = match (into.rows_acked, rows_acked) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    into.payload_bytes += payload_bytes;
    into.socket_bytes += socket_bytes;
    into.batches += batches;
    into.errors += errors;
    // A sharded run refuses `probe visible` and stages: these stay empty, summed in case.
    into.probes += probes;
    into.probes_failed += probes_failed;
    into.visible = match (into.visible, visible) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    into.stage = into.stage.or(*stage);
}

fn add_run(into: &mut RunInterval, r: &RunInterval) {
    let RunInterval {
        start_ms: _,
        span_ms,
        ok,
        failed,
        cut_off,
        unsent,
        p50_us: _,
        p90_us: _,
        p99_us: _,
        p999_us: _,
        max_us: _,
        service_p50_us: _,
        service_p99_us: _,
        stage,
    } = r;
    into.span_ms = into.span_ms.max(*span_ms);
    into.ok += ok;
    into.failed += failed;
    into.cut_off += cut_off;
    into.unsent += unsent;
    into.stage = into.stage.or(*stage);
}
