//! The report of a run: plain data (serde), filled by `exec`, rendered by `render` and written
//! to disk by `files`. docs/report-format.md describes every field; `REPORT_FORMAT` changes
//! whenever a field changes meaning.

pub mod accounting;
pub mod connections;
pub mod csv;
mod csv_columns;
pub mod environment;
mod error_text;
pub mod files;
pub mod findmax;
pub mod freshness;
pub mod html;
pub mod link;
pub mod merged;
pub mod outcome;
pub mod outcomes;
pub use accounting::Accounting;
pub use outcomes::{StepReport, TypeOutcomes};
pub mod read;
pub mod rebuild;
pub mod render;
pub mod series;
pub mod server;
pub mod server_metrics;
pub mod server_series;
pub mod shard;
pub mod stages;
pub mod streaming;
pub mod together;
mod workers;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Bumped whenever a field changes meaning.
pub const REPORT_FORMAT: u32 = 3;

/// The shortest span a rate is given for, in seconds. Below it the clock's granularity,
/// connection setup and the last answer dominate, and "824,302 rows/s" from a 4 ms phase says
/// nothing about the server.
pub const MIN_RATE_SPAN_S: f64 = 0.1;

/// `units` per second over `span_s`, or `None` when the span is too short to be a rate (or is
/// not a number). `units` must be what succeeded: a rejected row or a failed query is never
/// throughput.
pub fn rate(units: u64, span_s: f64) -> Option<f64> {
    (span_s >= MIN_RATE_SPAN_S).then(|| units as f64 / span_s)
}

/// What an ingest phase's `rows_per_s` counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RateCounts {
    /// Rows the server acknowledged: the protocol has acknowledgements.
    Acked,
    /// Rows handed to the socket: the protocol has no acknowledgements (ILP over TCP, null).
    Sent,
}

impl RateCounts {
    pub fn as_str(self) -> &'static str {
        match self {
            RateCounts::Acked => "acked",
            RateCounts::Sent => "sent",
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub format: u32,
    pub workload: String,
    pub file: String,
    pub seed: u64,
    /// `sha256:` of the plan that ran, as `shard.plan` (every cell's params and phases, the
    /// seed; not the workload's path): what tells `wlrun compare` whether two runs ran the
    /// same plan. Absent from a format 2 report and from a killed run's rebuilt one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    /// RFC 3339 UTC, when the run started.
    pub started: String,
    pub elapsed_s: f64,
    pub interrupted: bool,
    /// `SIGINT` or `SIGTERM`: the signal that stopped the run; absent when none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// What ran, where: wlrun's build, the machine, the load, the servers' versions. Absent
    /// from a format 2 report, a merged one and a killed run's rebuilt one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<environment::Environment>,
    pub cells: Vec<CellReport>,
    /// `wlrun run --shard I/N`: this shard of the run and what its barriers measured; absent
    /// from a run that was not sharded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<shard::ShardReport>,
    /// `wlrun merge`: the shards this report puts together and what the merge found; absent
    /// from a run's own report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<merged::MergedReport>,
}

impl Report {
    pub fn ok(&self) -> bool {
        !self.interrupted
            && self.cells.iter().all(CellReport::ok)
            && self.shard.as_ref().is_none_or(|s| s.failure.is_none())
            && self.merged.as_ref().is_none_or(|m| m.failures.is_empty())
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CellReport {
    pub index: usize,
    pub key: String,
    pub phases: Vec<PhaseReport>,
}

impl CellReport {
    pub fn ok(&self) -> bool {
        self.phases.iter().all(|p| p.status() == Status::Ok)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Failed,
    /// Stopped by Ctrl-C: what was measured is kept.
    Interrupted,
    /// This wlrun cannot run the phase (yet); nothing was measured.
    NotRun,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum PhaseReport {
    Ingest(Box<IngestReport>),
    Queries(Box<QueryReport>),
    Requests(Box<RequestReport>),
    NotRun { name: String, reason: String },
}

impl PhaseReport {
    pub fn status(&self) -> Status {
        match self {
            PhaseReport::Ingest(r) => r.status,
            PhaseReport::Queries(r) => r.status,
            PhaseReport::Requests(r) => r.status,
            PhaseReport::NotRun { .. } => Status::NotRun,
        }
    }

    /// The unit a CPU figure is divided by, and how many of them the phase did: rows sent, or
    /// queries or requests answered or failed (the client's and the server's alike, so that the
    /// two compare); `None` for a phase that did not run.
    pub fn cpu_unit(&self) -> Option<(&'static str, u64)> {
        match self {
            PhaseReport::Ingest(r) => Some(("row", r.rows_sent)),
            PhaseReport::Queries(r) => Some(("query", r.ok + r.failed)),
            PhaseReport::Requests(r) => Some(("request", r.ok + r.failed)),
            PhaseReport::NotRun { .. } => None,
        }
    }
}

/// Errors of one class: how many, and the first message (later ones usually repeat it).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ErrorCount {
    pub count: u64,
    pub first: String,
}

/// Latency percentiles in microseconds, from an HDR histogram kept whole in `histogram`.
/// Nothing measured (`count` 0) has no figures: they are `null` in JSON, never zeros
/// (`LatencyJson`), and read back as 0 beside that count.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(from = "LatencyJson", into = "LatencyJson")]
pub struct Latency {
    pub count: u64,
    pub min_us: u64,
    pub mean_us: f64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p95_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
    pub stddev_us: f64,
    /// The whole histogram, V2-deflate serialized and base64-encoded, so that runs can be
    /// merged and compared later.
    pub histogram: String,
}

/// `Latency` as JSON: each figure `null` when nothing was measured.
#[derive(Serialize, Deserialize)]
struct LatencyJson {
    count: u64,
    #[serde(default)]
    min_us: Option<u64>,
    #[serde(default)]
    mean_us: Option<f64>,
    #[serde(default)]
    p50_us: Option<u64>,
    #[serde(default)]
    p90_us: Option<u64>,
    #[serde(default)]
    p95_us: Option<u64>,
    #[serde(default)]
    p99_us: Option<u64>,
    #[serde(default)]
    p999_us: Option<u64>,
    #[serde(default)]
    max_us: Option<u64>,
    #[serde(default)]
    stddev_us: Option<f64>,
    #[serde(default)]
    histogram: String,
}

impl From<Latency> for LatencyJson {
    fn from(l: Latency) -> LatencyJson {
        let some = l.count > 0;
        LatencyJson {
            count: l.count,
            min_us: some.then_some(l.min_us),
            mean_us: some.then_some(l.mean_us),
            p50_us: some.then_some(l.p50_us),
            p90_us: some.then_some(l.p90_us),
            p95_us: some.then_some(l.p95_us),
            p99_us: some.then_some(l.p99_us),
            p999_us: some.then_some(l.p999_us),
            max_us: some.then_some(l.max_us),
            stddev_us: some.then_some(l.stddev_us),
            histogram: l.histogram,
        }
    }
}

impl From<LatencyJson> for Latency {
    fn from(j: LatencyJson) -> Latency {
        Latency {
            count: j.count,
            min_us: j.min_us.unwrap_or(0),
            mean_us: j.mean_us.unwrap_or(0.0),
            p50_us: j.p50_us.unwrap_or(0),
            p90_us: j.p90_us.unwrap_or(0),
            p95_us: j.p95_us.unwrap_or(0),
            p99_us: j.p99_us.unwrap_or(0),
            p999_us: j.p999_us.unwrap_or(0),
            max_us: j.max_us.unwrap_or(0),
            stddev_us: j.stddev_us.unwrap_or(0.0),
            histogram: j.histogram,
        }
    }
}

impl Latency {
    /// Percentiles of a microsecond histogram, and the histogram itself.
    pub fn of(h: &hdrhistogram::Histogram<u64>) -> Latency {
        use base64::Engine as _;
        use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};
        if h.is_empty() {
            return Latency::default();
        }
        let mut bytes = Vec::new();
        let histogram = match V2DeflateSerializer::new().serialize(h, &mut bytes) {
            Ok(_) => base64::engine::general_purpose::STANDARD.encode(&bytes),
            Err(_) => String::new(),
        };
        Latency {
            count: h.len(),
            min_us: h.min(),
            mean_us: h.mean(),
            p50_us: h.value_at_quantile(0.50),
            p90_us: h.value_at_quantile(0.90),
            p95_us: h.value_at_quantile(0.95),
            p99_us: h.value_at_quantile(0.99),
            p999_us: h.value_at_quantile(0.999),
            max_us: h.max(),
            stddev_us: h.stdev(),
            histogram,
        }
    }
}

/// How a query or request run's load reads in its report: `closed`, `open 200/s poisson`.
pub fn load_text(load: &crate::plan::Load) -> String {
    match load {
        crate::plan::Load::Closed => "closed".into(),
        crate::plan::Load::Open { rate, arrival } => format!("open {rate} {arrival}"),
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Calibration {
    /// Rows per second of the same cell sent to the `null` sink (generate + encode only);
    /// `None` when that run was too short to be a rate.
    pub null_rows_per_s: Option<f64>,
    /// This cell's send rate over that ceiling: near 1.0 means the generator, not the server,
    /// set the figure. `None` when either span was too short to be a rate.
    pub ratio: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IngestReport {
    pub name: String,
    /// `target.endpoint (kind)`.
    pub endpoint: String,
    pub kind: String,
    pub table: String,
    pub workers: u64,
    pub batch_rows: u64,
    pub status: Status,
    /// Why the phase failed, one line each; empty when it passed.
    pub failures: Vec<String>,
    /// What a reader must know about the figures that does not fail the phase.
    pub warnings: Vec<String>,
    /// The plan's rows; for a phase stopped at its `duration`, the rows the span allowed.
    pub rows_expected: Option<u64>,
    pub rows_generated: u64,
    /// Rows the encoding could not carry (an ILP line needs at least one field).
    pub rows_dropped: u64,
    pub payload_bytes: u64,
    pub rows_sent: u64,
    /// `None` when the protocol has no acknowledgements (ILP over TCP, null); 0, not `None`,
    /// when a protocol that has them acknowledged nothing.
    pub rows_acked: Option<u64>,
    /// Rows of the batches still unanswered (or still being written) when the phase was cut
    /// off at its `duration` plus `exec::STOP_GRACE`: neither sent nor acknowledged.
    pub rows_cut_off: u64,
    /// `None` without `verify visible`.
    pub rows_visible: Option<u64>,
    /// What the table held before the phase (shared tables), subtracted from the count.
    pub visible_baseline: Option<u64>,
    /// Seconds from the end of sending until the count reached its target.
    pub visible_after_s: Option<f64>,
    pub socket_bytes: u64,
    pub payload_bytes_per_row: Option<f64>,
    pub socket_bytes_per_row: Option<f64>,
    /// From the first chunk sent to the last answer, seconds.
    pub elapsed_s: f64,
    /// What succeeded per second: `rows_acked`, or `rows_sent` where the protocol has no
    /// acknowledgements (`rate_counts` says which). `None` below `MIN_RATE_SPAN_S`.
    pub rows_per_s: Option<f64>,
    pub rate_counts: RateCounts,
    /// `rows_sent` and `rows_acked` over `elapsed_s`; `None` below `MIN_RATE_SPAN_S` (and the
    /// latter without acknowledgements).
    pub send_rows_per_s: Option<f64>,
    pub ack_rows_per_s: Option<f64>,
    /// Batch send -> acknowledgement (or -> written, without acks).
    pub batch_latency: Latency,
    /// User + system CPU seconds of the wlrun process over `elapsed_s`.
    pub client_cpu_s: Option<f64>,
    pub errors: BTreeMap<String, ErrorCount>,
    /// Rows sent per worker, so that a skewed routing shows.
    pub rows_per_worker: Vec<u64>,
    pub calibration: Option<Calibration>,
    /// The per-interval series in the run directory; `None` without `--out`.
    pub series: Option<series::SeriesRef>,
    /// What opening the connections cost and how they were secured; `None` where nothing
    /// connected (sqlite, null, a phase refused before connecting) and in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connecting: Option<connections::ConnectionsReport>,
    /// `rate R`: how the fixed schedule of rows was kept; absent without a rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<IngestSchedule>,
    /// The `concurrent` group this phase ran in; absent for a phase that ran on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent: Option<together::ConcurrentMember>,
    /// `probe visible`: the visibility lag while sending; absent without a probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freshness: Option<freshness::Freshness>,
    /// `find max rate`: the search's steps; the phase's figures are its answer step's (without
    /// an answer, its last step's). Absent without a search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub findmax: Option<findmax::FindMaxReport>,
    /// A staged ingest's stages, each on its own (its rows with `schedule`'s totals); absent
    /// without stages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<stages::IngestStageReport>,
    /// What the observed server spent over the phase (`observe process`); absent without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<server::ServerReport>,
    /// `observe metrics` of the target: what its endpoints said over the phase; absent
    /// without it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_metrics: Vec<server_metrics::ServerMetrics>,
    /// QWP: messages sent without `FLAG_DEFER_COMMIT` (each asks the server to commit), the
    /// closing commit of deferred rows included, over all workers; absent for the protocols
    /// without deferred commits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commits: Option<u64>,
    /// `live` or `replay` (rows pre-encoded before the clock started) for an ingest with a
    /// `replay` clause; absent without one (live).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// `link BANDWIDTH`: the rows/s that link would carry at `socket_bytes_per_row`, computed;
    /// absent without `link`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<link::LinkCeiling>,
    /// Fields a row carries: the schema's `field` columns, nulls included. Absent for rows
    /// from a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields_per_row: Option<u64>,
    /// `rows_per_s` x `fields_per_row`: TSBS's headline, metrics per second. Absent where
    /// either is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_per_s: Option<f64>,
}

/// A rate-controlled ingest's open-loop accounting, in rows and batches:
/// `scheduled_rows = rows_sent + cut_off_rows + unsent_rows` (rows the encoding dropped are
/// outside the schedule, as they are outside `rows_sent`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct IngestSchedule {
    /// The asked rate, rows per second, across all workers.
    pub rate_rows_per_s: f64,
    /// Rows whose slot fell inside the phase's span (its `duration`, or the data's end).
    pub scheduled_rows: u64,
    /// Rows of batches abandoned at the hard stop (the report's `rows_cut_off`).
    pub cut_off_rows: u64,
    /// Scheduled, never sent: the client or the server fell behind.
    pub unsent_rows: u64,
    /// (rows sent + cut off) over scheduled, a fraction.
    pub achieved_rate: f64,
    /// Batches sent more than 1 ms after their slot, and their share of the batches sent.
    pub late_batches: u64,
    pub late_share: Option<f64>,
    /// Actual minus intended send time, per batch.
    pub send_lag: Latency,
    /// Intended send time -> acknowledgement (or -> written), per batch: what a steady
    /// producer would have waited, queueing included.
    pub batch_latency_intended: Latency,
}

/// What a query run and a request run report alike, in report.json's order. `K` is the kind's
/// setup (`QuerySetup`, `RequestSetup`) and brings, through `RunKind`, what only that kind
/// has: four groups flattened where their keys have always stood, so that the shared figures
/// are declared once and report.json keeps every byte (src/report/tests.rs pins them;
/// docs/report-format.md, "Query phases" and "Request phases").
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct RunReport<K: RunKind> {
    pub name: String,
    pub endpoint: String,
    pub kind: String,
    #[serde(flatten)]
    pub setup: K,
    /// `closed`, or `open 200/s poisson`.
    pub load: String,
    pub status: Status,
    pub failures: Vec<String>,
    pub warnings: Vec<String>,
    /// Measured time, all repetitions (warm-ups excluded).
    pub elapsed_s: f64,
    pub ok: u64,
    pub failed: u64,
    pub error_rate: f64,
    #[serde(flatten)]
    pub output: K::Output,
    pub sum_us: u64,
    /// From the intended send time (open loop) or the send (closed loop) to the last row or
    /// the whole answer.
    pub latency: Latency,
    /// Open loop only: from the actual send to the last row or the whole answer.
    pub service: Option<Latency>,
    pub errors: BTreeMap<String, ErrorCount>,
    #[serde(flatten)]
    pub traffic: K::Traffic,
    /// CPU seconds of the wlrun process during the measured rounds (from /proc).
    pub client_cpu_s: Option<f64>,
    /// Seconds its threads waited, runnable, for a CPU over the same rounds (summed over
    /// threads; Linux schedstat): a client its host starved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_wait_s: Option<f64>,
    /// Where every scheduled query or request went, and how close to its intended time it was
    /// sent.
    #[serde(flatten)]
    pub accounting: Accounting,
    pub repeats: Vec<RepeatReport>,
    #[serde(flatten)]
    pub detail: K::Detail,
    /// The per-interval series in the run directory; `None` without `--out`.
    pub series: Option<series::SeriesRef>,
    /// What opening the connections cost and how they were secured; `None` where nothing
    /// connected (sqlite, null, a phase refused before connecting) and in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connecting: Option<connections::ConnectionsReport>,
    /// A staged run's stages, each on its own; absent without stages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<stages::StageReport>,
    /// The `concurrent` group this run ran in; absent for a run that ran on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent: Option<together::ConcurrentMember>,
    /// `find max rate`: the search, its steps and its answer; the figures above are the
    /// answer step's (docs/report-format.md, "find max rate").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub findmax: Option<findmax::FindMaxReport>,
    /// What the observed server spent over the run (`observe process`); absent without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<server::ServerReport>,
    /// `observe metrics` of the target: what its endpoints said over the phase; absent
    /// without it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_metrics: Vec<server_metrics::ServerMetrics>,
}

/// A kind of run (queries, requests), named by the figures that set it up (the keys after
/// `kind`), with the types of the figures only it reports.
pub trait RunKind: Clone + std::fmt::Debug + Serialize + for<'de> Deserialize<'de> {
    /// Keys after `error_rate`: result rows and the rate of successes.
    type Output: Clone + std::fmt::Debug + Default + Serialize + for<'de> Deserialize<'de>;
    /// Keys after `errors`: what only this kind counts, and the work of each worker.
    type Traffic: Clone + std::fmt::Debug + Default + Serialize + for<'de> Deserialize<'de>;
    /// Keys after `repeats`: the thresholds judged, and this kind's breakdowns.
    type Detail: Clone + std::fmt::Debug + Default + Serialize + for<'de> Deserialize<'de>;
    /// Requests one in flight at a time each: query workers, request connections.
    fn lanes(&self) -> u64;
}

impl RunKind for QuerySetup {
    type Output = QueryOutput;
    type Traffic = QueryTraffic;
    type Detail = QueryDetail;
    fn lanes(&self) -> u64 {
        self.workers
    }
}

impl RunKind for RequestSetup {
    type Output = RequestOutput;
    type Traffic = RequestTraffic;
    type Detail = RequestDetail;
    fn lanes(&self) -> u64 {
        self.connections
    }
}

/// A query run (docs/report-format.md, "Query phases").
pub type QueryReport = RunReport<QuerySetup>;

/// A request run (docs/report-format.md, "Request phases").
pub type RequestReport = RunReport<RequestSetup>;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct QuerySetup {
    pub workers: u64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct QueryOutput {
    pub rows: u64,
    /// Successful queries per second; failed ones are never throughput. `None` when the span
    /// is too short to be a rate.
    pub qps: Option<f64>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct QueryTraffic {
    pub queries_per_worker: Vec<u64>,
    /// `route by` chose each query's worker (a key, not the next free worker); absent when
    /// it did not.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub routed: bool,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct QueryDetail {
    pub thresholds: Vec<ThresholdReport>,
    pub query_types: Vec<QueryTypeReport>,
    /// One latency histogram per label (queries sharing a label are grouped), with its queries.
    pub labels: Vec<LabelReport>,
    /// `check same results across endpoints`: one entry per earlier cell of the same run.
    pub cross_checks: Vec<CrossCheck>,
    /// Per measured instance of the first repetition, (query, index) -> (rows, checksum): kept
    /// in memory for the comparison, not written out.
    #[serde(skip)]
    pub results: Option<std::sync::Arc<InstanceResults>>,
    /// How the run's results arrived, all types together (`streaming`); absent where nothing
    /// was measured and in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<streaming::StreamingReport>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RequestSetup {
    /// `hook.function`, or `METHOD /path` for a fixed request.
    pub request: String,
    pub connections: u64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RequestOutput {
    /// Successful requests per second: an error is never throughput. `None` when the span is
    /// too short to be a rate.
    pub rps: Option<f64>,
    /// SQL endpoints: result rows of the successful requests.
    pub rows: u64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RequestTraffic {
    /// HTTP status code -> measured answers with it, errors included (warm-ups not: they are
    /// not in ok and failed either).
    #[serde(deserialize_with = "status_keys")]
    pub statuses: BTreeMap<u16, u64>,
    /// The same for the warm-up's answers.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "status_keys"
    )]
    pub warmup_statuses: BTreeMap<u16, u64>,
    /// `ctx.count(...)` of the response hook, summed over the workers.
    pub counters: BTreeMap<String, i64>,
    /// Request bytes written and answer body bytes read (HTTP endpoints).
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Connections opened again: after a broken one, or after the server closed one between
    /// requests (keep-alive ended). Never a silent retry of a request.
    pub reconnects: u64,
    pub requests_per_worker: Vec<u64>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RequestDetail {
    pub thresholds: Vec<ThresholdReport>,
}

/// (query type, instance index) -> (rows, checksum) of a cross-checked run.
pub type InstanceResults = BTreeMap<(usize, u64), (u64, u64)>;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CrossCheck {
    /// The endpoint whose results these were compared with.
    pub against: String,
    /// Instances both measured and compared.
    pub compared: u64,
    pub mismatches: u64,
    pub first_mismatches: Vec<String>,
    /// Queries whose results may differ legitimately (LIMIT without ORDER BY): not compared.
    pub not_compared: Vec<String>,
}

impl<K: RunKind> RunReport<K> {
    /// A report of a run with nothing measured yet.
    fn new(
        name: &str,
        endpoint: &crate::plan::EndpointPlan,
        load: &crate::plan::Load,
        setup: K,
    ) -> RunReport<K> {
        RunReport {
            server_metrics: Vec::new(),
            name: name.to_string(),
            endpoint: format!("{}.{}", endpoint.target, endpoint.name),
            kind: endpoint.kind.clone(),
            setup,
            load: load_text(load),
            status: Status::NotRun,
            failures: Vec::new(),
            warnings: Vec::new(),
            elapsed_s: 0.0,
            ok: 0,
            failed: 0,
            error_rate: 0.0,
            output: Default::default(),
            sum_us: 0,
            latency: Latency::default(),
            service: None,
            errors: BTreeMap::new(),
            traffic: Default::default(),
            client_cpu_s: None,
            client_wait_s: None,
            accounting: Accounting::default(),
            repeats: Vec::new(),
            detail: Default::default(),
            series: None,
            connecting: None,
            stages: Vec::new(),
            concurrent: None,
            findmax: None,
            server: None,
        }
    }
}

impl QueryReport {
    /// A report with nothing measured yet.
    pub fn empty(phase: &crate::plan::QueryPhase) -> QueryReport {
        let setup = QuerySetup {
            workers: phase.run.workers,
        };
        RunReport::new(&phase.name, &phase.endpoint, &phase.run.load, setup)
    }
}

impl RequestReport {
    /// A report with nothing measured yet.
    pub fn empty(phase: &crate::plan::RequestPhase) -> RequestReport {
        let setup = RequestSetup {
            request: match &phase.request {
                crate::plan::RequestPlan::Hook { hook, function, .. } => {
                    format!("{}.{function}", hook.name)
                }
                crate::plan::RequestPlan::Fixed { method, path, .. }
                | crate::plan::RequestPlan::Template { method, path, .. } => {
                    format!("{method} {path}")
                }
            },
            connections: phase.run.workers,
        };
        RunReport::new(&phase.name, &phase.endpoint, &phase.run.load, setup)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct QueryTypeReport {
    pub name: String,
    pub label: String,
    pub ok: u64,
    pub failed: u64,
    pub rows: u64,
    pub rows_per_query: Option<f64>,
    pub qps: Option<f64>,
    pub sum_us: u64,
    pub latency: Latency,
    pub service: Option<Latency>,
    pub errors: BTreeMap<String, ErrorCount>,
    pub thresholds: Vec<ThresholdReport>,
    /// How this type's results arrived (`streaming`); absent where nothing was measured
    /// (SQLite, no successful query) and in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<streaming::StreamingReport>,
    /// Not found, rows changed, each statement's latency: absent where the query has none.
    #[serde(flatten)]
    pub outcomes: TypeOutcomes,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RepeatReport {
    pub repeat: u64,
    pub elapsed_s: f64,
    pub queries: u64,
    pub qps: Option<f64>,
}

/// The queries that share a label, measured as one.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LabelReport {
    pub label: String,
    /// The member queries, by name.
    pub queries: Vec<String>,
    pub ok: u64,
    pub failed: u64,
    pub rows: u64,
    pub qps: Option<f64>,
    pub latency: Latency,
    pub service: Option<Latency>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ThresholdReport {
    pub metric: String,
    /// As written: `p99 < 20ms`.
    pub expect: String,
    pub actual: String,
    pub ok: bool,
}

#[cfg(test)]
mod tests;

/// HTTP status counts read back. A flattened struct is read through serde's buffered content,
/// where a JSON object's keys stay strings, so `u16` keys are parsed here.
fn status_keys<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BTreeMap<u16, u64>, D::Error> {
    let raw = BTreeMap::<String, u64>::deserialize(d)?;
    raw.into_iter()
        .map(|(k, v)| {
            k.parse()
                .map(|k| (k, v))
                .map_err(|_| serde::de::Error::custom(format!("`{k}` is not an HTTP status")))
        })
        .collect()
}
