//! A phase's time series: one row of counts per interval in a small CSV file, and the
//! interval's latency histograms in an HDR interval log (`.hlog`, the format HdrHistogram's own
//! log processors read), both beside report.json in `series/`. Both are written while the run
//! goes (`exec::series`), an interval at a time, so memory stays flat however long the run and
//! a killed run keeps every interval that had closed. docs/report-format.md, "Time series".
//!
//! Intervals are aligned to wall-clock boundaries (`start_ms` is a multiple of `interval_ms`
//! in Unix time), so runs on several machines line up. `span_ms` is the measured time inside
//! the interval: less than `interval_ms` for the first and last, and 0 while a warm-up round
//! runs; a rate of one interval is its count over its span.

use std::path::Path;

use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// The folder of a run directory the series files go to.
pub const DIR: &str = "series";

/// The `.hlog` tags: a query or request run's latency (from the intended send time in open
/// loop) and, in open loop, its service time; an ingest phase's batch latency and, with
/// `probe visible`, the visibility lag of its probes.
pub const TAG_LATENCY: &str = "latency";
pub const TAG_SERVICE: &str = "service";
pub const TAG_BATCH: &str = "batch";
pub const TAG_LAG: &str = "lag";

/// Where a phase's series is, in its report: paths relative to the run directory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeriesRef {
    pub interval_ms: u64,
    /// The counts, one CSV row per interval (`IngestInterval` or `RunInterval`).
    pub counts: String,
    /// The interval histograms, microseconds, tagged `TAG_*`.
    pub hlog: String,
    /// Rows in `counts`.
    pub intervals: u64,
    /// The phase's measured time on the wall clock, one span per measured round (a run's
    /// repetition; an ingest's one span, from its first batch sent to its last answer): what
    /// `elapsed_s` adds up, placed in time so that `wlrun merge` can take the shards' rates
    /// over the union of their spans. Absent from older reports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measured: Vec<Measured>,
}

/// A measured span on the wall clock: Unix milliseconds, to the microsecond.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    pub from_unix_ms: f64,
    pub to_unix_ms: f64,
}

impl Measured {
    /// The span from `from_ns` to `to_ns`, Unix nanoseconds, kept to the microsecond (an f64
    /// holds today's Unix time in microseconds exactly).
    pub fn of_ns(from_ns: u128, to_ns: u128) -> Measured {
        let ms = |ns: u128| (ns / 1000) as f64 / 1000.0;
        Measured {
            from_unix_ms: ms(from_ns),
            to_unix_ms: ms(to_ns.max(from_ns)),
        }
    }

    pub fn span_s(&self) -> f64 {
        (self.to_unix_ms - self.from_unix_ms).max(0.0) / 1000.0
    }
}

impl SeriesRef {
    /// The file names of cell `cell`'s phase `phase` (phase names are identifiers).
    pub fn paths(cell: usize, phase: &str) -> (String, String) {
        (
            format!("{DIR}/{cell}-{phase}.csv"),
            format!("{DIR}/{cell}-{phase}.hlog"),
        )
    }
}

/// A line of `series/phases.jsonl`, written when a phase starts: what `wlrun report` needs to
/// render a killed run, which never wrote report.json.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Announced {
    pub cell: usize,
    pub key: String,
    pub phase: String,
    /// `ingest`, `queries` or `requests`.
    pub kind: String,
    /// `target.endpoint (kind)`.
    pub endpoint: String,
    pub workers: u64,
    /// Query and request runs: `closed`, `open 200/s poisson`.
    pub load: Option<String>,
    /// Ingest: the protocol acknowledges rows. Runs: true.
    pub acks: bool,
    /// Runs: open loop, where service time is kept apart.
    pub open_loop: bool,
    /// Unix milliseconds when the phase started.
    pub started_ms: u64,
    pub series: SeriesRef,
    /// The `concurrent` group the phase runs in; absent when it runs on its own (and in lines
    /// of older runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent: Option<AnnouncedGroup>,
    /// An ingest's `probe visible`: what its count is; absent without a probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<AnnouncedProbe>,
}

/// The group of an announced phase, as its plan has it: enough to rebuild the report's
/// `concurrent` object but for what only the end of the group knows (who stopped whom, when).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnnouncedGroup {
    pub group: String,
    /// The members, in the group's order.
    pub phases: Vec<String>,
    /// The member whose end ends the group; absent: the group ends with its last member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
}

/// An ingest's probe, as the report's `freshness` names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnnouncedProbe {
    /// `target.endpoint (kind)` the count runs on, its language and query.
    pub endpoint: String,
    pub language: String,
    pub query: String,
    pub every_s: f64,
    pub within_s: f64,
}

/// One interval of an ingest phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IngestInterval {
    /// Unix milliseconds of the interval's start: a multiple of the interval.
    pub start_ms: u64,
    /// Measured milliseconds inside the interval.
    pub span_ms: u64,
    /// Rows whose batch was handed to the socket in this interval.
    pub rows_sent: u64,
    /// Rows acknowledged in this interval; empty where the protocol has no acknowledgements.
    pub rows_acked: Option<u64>,
    pub payload_bytes: u64,
    pub socket_bytes: u64,
    /// Batches sent in this interval.
    pub batches: u64,
    /// Batches that failed (rejected, a broken connection) in this interval.
    pub errors: u64,
    /// Batch latency of the batches answered (or written) in this interval; empty without any.
    pub batch_p50_us: Option<u64>,
    pub batch_p99_us: Option<u64>,
    pub batch_max_us: Option<u64>,
    /// `probe visible`: probes answered in this interval (a probe counts where its answer
    /// arrived), and probes that failed in it. 0 without a probe; absent from older series.
    #[serde(default)]
    pub probes: u64,
    #[serde(default)]
    pub probes_failed: u64,
    /// The highest count (baseline subtracted) a probe answered in this interval; empty
    /// without an answered probe.
    #[serde(default)]
    pub visible: Option<u64>,
    /// The visibility lag of this interval's answered probes that saw rows; empty without any.
    #[serde(default)]
    pub lag_p50_us: Option<u64>,
    #[serde(default)]
    pub lag_max_us: Option<u64>,
    /// A staged ingest: the stage the interval's start falls in (from 1; an interval that
    /// starts before the first stage, the first). The column is absent without stages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<u64>,
}

/// One interval of a query or request run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunInterval {
    pub start_ms: u64,
    pub span_ms: u64,
    /// Answers that arrived in this interval, successful and failed.
    pub ok: u64,
    pub failed: u64,
    /// Units in flight when the phase ended, counted in the interval it ended in.
    pub cut_off: u64,
    /// Units whose intended send time fell in this interval and that were never sent.
    pub unsent: u64,
    /// Latency of this interval's successful answers; empty without any.
    pub p50_us: Option<u64>,
    pub p90_us: Option<u64>,
    pub p99_us: Option<u64>,
    pub p999_us: Option<u64>,
    pub max_us: Option<u64>,
    /// Open loop: service time (send to answer) of the same answers.
    pub service_p50_us: Option<u64>,
    pub service_p99_us: Option<u64>,
    /// A staged run: the stage the interval's start falls in (from 1; an interval that starts
    /// before the first stage, the first). The column is absent from a run without stages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<u64>,
}

impl IngestInterval {
    /// The batch-latency columns, from the interval's batch histogram (empty when it is).
    pub fn set_batch_latency(&mut self, h: &Histogram<u64>) {
        self.batch_p50_us = quantile(h, 0.5);
        self.batch_p99_us = quantile(h, 0.99);
        self.batch_max_us = max(h);
    }
}

impl RunInterval {
    /// The latency columns, from the interval's latency histogram and, in open loop, its
    /// service-time histogram (empty where a histogram is, or is absent).
    pub fn set_latency(&mut self, latency: &Histogram<u64>, service: Option<&Histogram<u64>>) {
        self.p50_us = quantile(latency, 0.5);
        self.p90_us = quantile(latency, 0.9);
        self.p99_us = quantile(latency, 0.99);
        self.p999_us = quantile(latency, 0.999);
        self.max_us = max(latency);
        self.service_p50_us = service.and_then(|h| quantile(h, 0.5));
        self.service_p99_us = service.and_then(|h| quantile(h, 0.99));
    }
}

/// An interval's histogram as the recorder starts one and the merge adds into: microseconds,
/// 3 significant digits like the whole-run histograms, growing with the largest value seen so
/// that a quiet interval costs little.
pub fn interval_histogram() -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 1_000, 3).expect("static histogram bounds are valid");
    h.auto(true);
    h
}

/// A percentile of an interval's histogram; none of an empty one.
pub fn quantile(h: &Histogram<u64>, q: f64) -> Option<u64> {
    (!h.is_empty()).then(|| h.value_at_quantile(q))
}

fn max(h: &Histogram<u64>) -> Option<u64> {
    (!h.is_empty()).then(|| h.max())
}

/// A phase's series read back.
#[derive(Clone, Debug, PartialEq)]
pub enum Series {
    Ingest(Vec<IngestInterval>),
    Run(Vec<RunInterval>),
}

impl Series {
    pub fn len(&self) -> usize {
        match self {
            Series::Ingest(v) => v.len(),
            Series::Run(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Reads the counts of `r` under the run directory `dir`. `ingest` says which rows to expect
/// (the phase's report knows its kind). A last row cut short by a kill is dropped, not an
/// error: the run was killed while writing it.
pub fn read(dir: &Path, r: &SeriesRef, ingest: bool) -> Result<Series, String> {
    let path = dir.join(&r.counts);
    let text = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let complete = whole_lines(&text);
    fn rows<T: for<'de> Deserialize<'de>>(bytes: &[u8], path: &Path) -> Result<Vec<T>, String> {
        csv::Reader::from_reader(bytes)
            .deserialize()
            .enumerate()
            .map(|(i, row)| row.map_err(|e| format!("{} row {}: {e}", path.display(), i + 2)))
            .collect()
    }
    Ok(if ingest {
        Series::Ingest(rows(complete, &path)?)
    } else {
        Series::Run(rows(complete, &path)?)
    })
}

/// Whether the counts of `r` end inside a row: a write that stopped midway (a full disk) left
/// it, and `read` drops it.
pub fn cut_short(dir: &Path, r: &SeriesRef) -> bool {
    std::fs::read(dir.join(&r.counts)).is_ok_and(|t| !t.is_empty() && !t.ends_with(b"\n"))
}

/// The text up to its last newline: a line a kill cut short is not part of the file's data.
fn whole_lines(text: &[u8]) -> &[u8] {
    match text.iter().rposition(|&b| b == b'\n') {
        Some(i) => &text[..=i],
        None => &text[..0],
    }
}

/// One histogram of an interval log.
pub struct LoggedHistogram {
    pub tag: Option<String>,
    /// Unix milliseconds of the interval's start.
    pub start_ms: u64,
    pub histogram: Histogram<u64>,
}

/// Every histogram of the interval log at `path`, in order. A last line cut short by a kill is
/// dropped.
pub fn read_hlog(path: &Path) -> Result<Vec<LoggedHistogram>, String> {
    let text = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let complete = whole_lines(&text);
    let mut out = Vec::new();
    let mut decoder = Deserializer::new();
    for entry in IntervalLogIterator::new(complete) {
        let entry =
            entry.map_err(|e| format!("{} is not an interval log: {e:?}", path.display()))?;
        if let LogEntry::Interval(h) = entry {
            let bytes = base64::Engine::decode(
                &base64::engine::general_purpose::STANDARD,
                h.encoded_histogram(),
            )
            .map_err(|e| format!("{}: a histogram is not base64: {e}", path.display()))?;
            let histogram: Histogram<u64> = decoder
                .deserialize(&mut &bytes[..])
                .map_err(|e| format!("{}: a histogram does not decode: {e:?}", path.display()))?;
            out.push(LoggedHistogram {
                tag: h.tag().map(|t| t.as_str().to_string()),
                start_ms: h.start_timestamp().as_millis() as u64,
                histogram,
            });
        }
    }
    Ok(out)
}

/// The interval log's histograms of one tag, merged: the whole span's distribution.
pub fn merged(logged: &[LoggedHistogram], tag: &str) -> Option<Histogram<u64>> {
    let mut it = logged
        .iter()
        .filter(|l| l.tag.as_deref() == Some(tag))
        .peekable();
    it.peek()?;
    // Decoded histograms do not grow: the sum starts from one that does, so that an interval
    // with a larger maximum than the first still adds.
    let mut total = Histogram::new(3).expect("3 significant digits are valid");
    for l in it {
        let _ = total.add(&l.histogram);
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference() -> SeriesRef {
        SeriesRef {
            interval_ms: 1000,
            counts: "series/1-load.csv".into(),
            hlog: "series/1-load.hlog".into(),
            intervals: 2,
            measured: Vec::new(),
        }
    }

    /// A series written before the probe's columns existed still reads: they come back empty,
    /// as for a phase without a probe.
    #[test]
    fn an_older_ingest_series_without_the_probe_columns_reads() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(DIR)).unwrap();
        std::fs::write(
            dir.path().join("series/1-load.csv"),
            "start_ms,span_ms,rows_sent,rows_acked,payload_bytes,socket_bytes,batches,errors,\
             batch_p50_us,batch_p99_us,batch_max_us\n\
             1000,400,10,10,100,120,1,0,50,60,70\n\
             2000,1000,20,,200,240,2,1,,,\n",
        )
        .unwrap();
        let Series::Ingest(rows) = read(dir.path(), &reference(), true).unwrap() else {
            panic!("an ingest series")
        };
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].rows_acked, None);
        assert_eq!(rows[1].errors, 1);
        for r in &rows {
            assert_eq!((r.probes, r.probes_failed), (0, 0));
            assert_eq!((r.visible, r.lag_p50_us, r.lag_max_us), (None, None, None));
        }
    }

    #[test]
    fn the_probe_columns_read_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(DIR)).unwrap();
        let rows = vec![
            IngestInterval {
                start_ms: 1000,
                span_ms: 1000,
                rows_sent: 10,
                probes: 3,
                probes_failed: 1,
                visible: Some(7),
                lag_p50_us: Some(300_000),
                lag_max_us: Some(310_000),
                ..IngestInterval::default()
            },
            IngestInterval {
                start_ms: 2000,
                ..IngestInterval::default()
            },
        ];
        let mut w = csv::Writer::from_path(dir.path().join("series/1-load.csv")).unwrap();
        for r in &rows {
            w.serialize(r).unwrap();
        }
        drop(w);
        let text = std::fs::read_to_string(dir.path().join("series/1-load.csv")).unwrap();
        assert!(
            text.starts_with(
                "start_ms,span_ms,rows_sent,rows_acked,payload_bytes,socket_bytes,batches,errors,\
                 batch_p50_us,batch_p99_us,batch_max_us,probes,probes_failed,visible,lag_p50_us,\
                 lag_max_us\n"
            ),
            "{text}"
        );
        assert!(
            text.ends_with(",0,0,,,\n"),
            "an interval without probes: {text}"
        );
        assert_eq!(
            read(dir.path(), &reference(), true).unwrap(),
            Series::Ingest(rows)
        );
    }
}
