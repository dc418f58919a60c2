//! The execution plan: plain data, the contract between the compiler and the runner. Every
//! param is resolved, the matrix is expanded into ordered cells, and each cell lists its phases
//! with endpoint, load model and expected row counts. No spans and no AST in here.

mod findmax;
mod listing;
pub mod metrics;
pub mod setup;
mod stages;
pub mod store;
pub mod table;
mod template;

pub use crate::value::{Domain, Gen, Ty};
pub use findmax::{short, FindMaxPlan, KEPT_SCHEDULE, MAX_STEPS, MIN_SAMPLES};
pub use listing::{listing, thousands};
pub use template::template_placeholders;

use indexmap::IndexMap;
use serde::Serialize;

use crate::value::{Text, Value};

/// Bumped whenever a field changes meaning; docs/plan-format.md describes each version.
pub const PLAN_FORMAT: u32 = 1;

#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub format: u32,
    pub workload: WorkloadInfo,
    pub axes: Vec<AxisInfo>,
    pub cells: Vec<Cell>,
}

#[derive(Clone, Debug, Serialize)]
pub struct WorkloadInfo {
    pub name: String,
    pub file: String,
    pub description: Option<String>,
    pub seed: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct AxisInfo {
    pub name: String,
    pub values: Vec<Value>,
    /// `true` for the axis a `via [a, b]` list adds.
    pub implicit: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub index: usize,
    /// `axis=value` pairs joined by spaces: stable, and what `--only` matches.
    pub key: String,
    pub axes: IndexMap<String, Value>,
    pub params: IndexMap<String, Value>,
    pub phases: Vec<Phase>,
    /// `concurrent` groups: phases of this cell that run at the same time. Absent from the
    /// plan's JSON when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<ConcurrentGroup>,
    /// The servers observed from /proc while this cell's phases run against their targets
    /// (`observe process`); absent from the plan's JSON when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub observe: Vec<ObservePlan>,
    /// `observe metrics` of the targets this cell's phases use. Absent from the plan's JSON
    /// when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub observe_metrics: Vec<metrics::MetricsPlan>,
}

/// `concurrent NAME { phases A, B  until A }`: members are phases of the same cell, run as one
/// step at the place of the first of them; `phases` stays flat so every phase keeps its own
/// report.
#[derive(Clone, Debug, Serialize)]
pub struct ConcurrentGroup {
    pub name: String,
    /// The members' phase names, in the group's order.
    pub phases: Vec<String>,
    /// The member whose end ends the group (the others are stopped as if their span had ended
    /// then); `None`: the group ends when every member has.
    pub until: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum Phase {
    Ingest(Box<IngestPhase>),
    Queries(QueryPhase),
    Requests(RequestPhase),
}

impl Phase {
    pub fn name(&self) -> &str {
        match self {
            Phase::Ingest(p) => &p.name,
            Phase::Queries(p) => &p.name,
            Phase::Requests(p) => &p.name,
        }
    }

    /// One line naming the phase and where it goes, for messages.
    pub fn describe(&self) -> String {
        match self {
            Phase::Ingest(p) => format!(
                "ingest {} into {}.{} ({})",
                p.name, p.endpoint.target, p.endpoint.name, p.endpoint.kind
            ),
            Phase::Queries(p) => format!(
                "queries {} against {}.{} ({})",
                p.name, p.endpoint.target, p.endpoint.name, p.endpoint.kind
            ),
            Phase::Requests(p) => format!(
                "requests {} against {}.{} ({})",
                p.name, p.endpoint.target, p.endpoint.name, p.endpoint.kind
            ),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct EndpointPlan {
    pub target: String,
    pub name: String,
    pub kind: String,
    pub dialect: String,
    /// Secrets from `env(...)` show as `${env:NAME}`, a password written in the file as `***`.
    #[serde(serialize_with = "shown_url")]
    pub url: Option<Text>,
    /// A `password` written in the file shows as `***`.
    #[serde(serialize_with = "shown_options")]
    pub options: IndexMap<String, Value>,
}

impl EndpointPlan {
    /// The URL as a plan shows it: `env()` parts by name, a password written in the file as
    /// `***` (a listing is shared; the file it came from need not be).
    pub fn shown_url(&self) -> Option<String> {
        self.url
            .as_ref()
            .map(|u| crate::secrets::redact_url(&u.redacted()))
    }
}

/// An option as a plan shows it: a `password` written in the file (not all `env()`) as `***`.
pub fn shown_option<'a>(name: &str, value: &'a Value) -> std::borrow::Cow<'a, Value> {
    match value {
        Value::Str(t)
            if name == "password"
                && t.parts
                    .iter()
                    .any(|p| matches!(p, crate::value::TextPart::Lit(_))) =>
        {
            std::borrow::Cow::Owned(Value::Str(Text::lit(crate::secrets::MASK)))
        }
        v => std::borrow::Cow::Borrowed(v),
    }
}

fn shown_url<S: serde::Serializer>(url: &Option<Text>, s: S) -> Result<S::Ok, S::Error> {
    let shown = url
        .as_ref()
        .map(|u| crate::secrets::redact_url(&u.redacted()));
    shown.serialize(s)
}

fn shown_options<S: serde::Serializer>(
    options: &IndexMap<String, Value>,
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(options.len()))?;
    for (k, v) in options {
        m.serialize_entry(k, &shown_option(k, v))?;
    }
    m.end()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ack {
    /// No acknowledgement: rows count as sent when written to the socket.
    None,
    /// QWP: frames are published; acknowledgements are awaited once, at close.
    Publish,
    /// Wait for the server's acknowledgement of every batch.
    PerBatch,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Setup {
    /// Drop and create the table from the schema before the cell (the default).
    Recreate,
    /// Empty the table, keep its definition.
    Truncate,
    /// The table is shared: count rows inside the cell's own time range against a baseline.
    Shared,
    /// `setup sql` without a mode: the user's statements are the whole setup (their own
    /// `CREATE TABLE`); counted as after `recreate`, against the baseline they leave.
    Sql,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Teardown {
    Keep,
    Drop,
}

impl std::fmt::Display for Ack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Ack::None => "none",
            Ack::Publish => "publish",
            Ack::PerBatch => "per_batch",
        })
    }
}

impl std::fmt::Display for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Setup::Recreate => "recreate",
            Setup::Truncate => "truncate",
            Setup::Shared => "shared",
            Setup::Sql => "sql",
        })
    }
}

impl std::fmt::Display for Teardown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Teardown::Keep => "keep",
            Teardown::Drop => "drop",
        })
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct ColumnPlan {
    pub name: String,
    pub role: String,
    /// The column type: `symbol`, `varchar`, `long`, `double`, `boolean`, `timestamp`, ...
    pub ty: String,
    /// For timestamps: `ns`, `us` or `ms`.
    pub unit: Option<String>,
    pub gen: Gen,
    /// `series` (drawn once per series) or `row`.
    pub per: String,
    pub null_probability: f64,
    /// Taken from another schema by `series from`: the schema whose streams it draws from
    /// (docs/rng.md §2), so that its values are that schema's. Absent for the schema's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct TimeAxis {
    pub column: String,
    pub start: Value,
    pub step: Value,
    pub count: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SchemaPlan {
    pub name: String,
    pub table: String,
    /// Number of series; 1 for a schema without a series column.
    pub series: u64,
    pub time: Option<TimeAxis>,
    pub rows: u64,
    pub columns: Vec<ColumnPlan>,
    /// What the generator does to its rows once drawn: nulls one column of some, sends some
    /// later (`gen::disorder`). Absent for a schema that does neither.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disorder: Option<Disorder>,
}

/// `null one of [...] P%` and `late P% by N rows` of a schema.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Disorder {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub null_one: Vec<NullOne>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late: Option<Late>,
}

/// A share of the rows with one of `columns` null (an entry listed twice, chosen twice as often).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NullOne {
    /// Column indices into the schema's columns, as listed.
    pub columns: Vec<usize>,
    pub share: f64,
}

/// A share of the rows sent later than generated, by a number of rows whose median is
/// `median_rows` (docs/rng.md, "Disorder").
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Late {
    pub share: f64,
    pub median_rows: u64,
}

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RowSource {
    Schema(SchemaPlan),
    File {
        path: String,
        format: String,
        bytes: Option<u64>,
    },
}

#[derive(Clone, Debug, Serialize)]
pub struct VerifyPlan {
    pub endpoint: EndpointPlan,
    pub language: String,
    /// `rows`, or `samples` (divided by the number of fields to give rows).
    pub unit: String,
    pub query: String,
    pub within: Value,
}

#[derive(Clone, Debug, Serialize)]
pub struct IngestPhase {
    pub name: String,
    pub endpoint: EndpointPlan,
    pub table: String,
    pub source: RowSource,
    /// series x timestamps, after `limit`; `None` for a file whose rows are not known yet.
    pub rows_expected: Option<u64>,
    pub bytes_expected: Option<u64>,
    pub batch_rows: u64,
    pub workers: u64,
    /// How rows reach workers: a hash of the series key, so each series stays on one connection.
    pub routing: String,
    pub ack: Ack,
    pub setup: Setup,
    pub teardown: Teardown,
    /// The SQL endpoint that takes the table's DDL (`setup recreate|truncate`, `teardown
    /// drop`): the ingest endpoint when it is `pg` or `sqlite`, else the SQL endpoint of
    /// `verify visible`'s count, of `probe visible`'s, of the target's first SQL count rule,
    /// else the target's first `pg` or `sqlite` endpoint (`lower::setup`). `None` for a null
    /// sink, a store with its own API (`store`), or a phase with no endpoint that takes SQL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ddl: Option<EndpointPlan>,
    /// The statements the setup runs over `ddl`, in order, in its dialect (`plan::table`):
    /// `setup recreate`'s `DROP TABLE` and `CREATE TABLE` with the schema's types, primary key
    /// and indexes, or `setup truncate`'s `TRUNCATE`, then the `setup sql` statements written
    /// for the dialect. What `wlrun plan` shows is what runs. Absent when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub setup_ddl: Vec<table::SetupStatement>,
    pub verify: Option<VerifyPlan>,
    pub calibrate: bool,
    /// `replay`: encode every batch before the clock starts, within this many bytes.
    pub replay_budget: Option<u64>,
    /// `duration D` (a `Value::Duration`): sending stops after it, whatever rows are left.
    pub duration: Option<Value>,
    /// `rate R` (a `Value::Rate`, rows per second): batches leave on a fixed schedule, each
    /// worker at R / workers. Absent from the plan's JSON without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<Value>,
    /// `probe visible every I`: the visibility lag probed while sending. Absent from the
    /// plan's JSON without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<ProbePlan>,
    /// `find max rate ...`: the phase is a search of fixed-rate steps (`rate` is each step's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub findmax: Option<FindMaxPlan>,
    /// `warmup D` (a `Value::Duration`): each step's first `D`, sent and not judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup: Option<Value>,
    /// `stage D rate R [to R2] [warmup W]` clauses, in order: one continuous send whose
    /// schedule follows their rates (each `Load::Open`, fixed; `workers` is the phase's). With
    /// stages `rate` is absent and `duration` is the sum of their durations. Absent from the
    /// plan's JSON without them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StagePlan>,
    /// QWP's commit policy (`commit per_batch | every N rows`); absent from the plan's JSON
    /// for the other protocols, which have no deferred commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Commit>,
    /// `replay when CONDITION`: whether the condition held in this cell (`replay_budget` is
    /// set exactly when it did). Absent without a condition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_when: Option<bool>,
    /// `link BANDWIDTH` (a `Value::Bandwidth`, bits per second): the report computes the rows/s
    /// such a link would carry at the measured socket bytes per row. Absent without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<Value>,
}

/// When a QWP connection's rows commit. Every message carries `FLAG_DEFER_COMMIT` except the
/// ones that commit; each worker's connection counts its own rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Commit {
    /// Each batch commits (its last message has the flag clear), as TSBS's loader does.
    PerBatch,
    /// A batch's last message commits once the rows since the last commit reach `rows`: at
    /// the first batch boundary at or after it. `cap` is the server's `qwp.max.uncommitted.rows`
    /// as the endpoint tells it (`max_uncommitted_rows`). The phase's end (or a stop) commits
    /// what is still deferred.
    EveryRows { rows: u64, cap: u64 },
    /// `commit every N rows` in a cell whose endpoint (from an axis or a list) is not QWP: no
    /// effect there, said in the plan.
    NotQwp { rows: u64 },
}

impl Commit {
    /// The rows after which a connection commits, when the policy defers.
    pub fn every_rows(self) -> Option<u64> {
        match self {
            Commit::EveryRows { rows, .. } => Some(rows),
            _ => None,
        }
    }
}

#[cfg(test)]
impl IngestPhase {
    /// A phase for unit tests: 10-row batches of a file into `cpu` through `endpoint`, one
    /// worker, `setup recreate`, nothing else; tests set what they are about.
    pub(crate) fn fixture(endpoint: EndpointPlan) -> IngestPhase {
        IngestPhase {
            name: "load".into(),
            endpoint,
            table: "cpu".into(),
            source: RowSource::File {
                path: "rows.ilp".into(),
                format: "ilp".into(),
                bytes: None,
            },
            rows_expected: None,
            bytes_expected: None,
            batch_rows: 10,
            workers: 1,
            routing: "fnv1a64".into(),
            ack: Ack::None,
            setup: Setup::Recreate,
            teardown: Teardown::Keep,
            ddl: None,
            setup_ddl: Vec::new(),
            verify: None,
            calibrate: false,
            replay_budget: None,
            duration: None,
            rate: None,
            probe: None,
            findmax: None,
            warmup: None,
            stages: Vec::new(),
            commit: None,
            replay_when: None,
            link: None,
        }
    }
}

/// `probe visible every I [via T.E] [within D]`: the count chosen as `verify visible` chooses
/// it (its `within` bounds the probing after sending ends), asked every `every`.
#[derive(Clone, Debug, Serialize)]
pub struct ProbePlan {
    pub count: VerifyPlan,
    /// A `Value::Duration`, at least 1 ms.
    pub every: Value,
}

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum Load {
    /// Each worker sends its next request when the previous one finished.
    Closed,
    /// Requests are sent on a schedule; latency counts from the intended send time.
    Open { rate: Value, arrival: String },
}

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "until", rename_all = "snake_case")]
pub enum Stop {
    Count { count: u64, per_query: bool },
    Duration { duration: Value },
}

#[derive(Clone, Debug, Serialize)]
pub struct Threshold {
    /// `p99`, `error_rate`, `rows`, `status`, ...
    pub metric: String,
    pub op: String,
    pub value: Value,
}

#[derive(Clone, Debug, Serialize)]
pub struct Require {
    pub table: String,
    pub op: String,
    pub value: i64,
}

#[derive(Clone, Debug, Serialize)]
pub struct CsvPlan {
    pub path: String,
    pub columns: Vec<(String, String)>,
    pub rows: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct BindPlan {
    pub index: u32,
    pub gen: Gen,
}

#[derive(Clone, Debug, Serialize)]
pub struct QueryPlan {
    pub name: String,
    pub label: String,
    pub sql: String,
    pub placeholders: u32,
    pub lets: Vec<(String, Gen)>,
    pub binds: Vec<BindPlan>,
    pub csv: Option<CsvPlan>,
    pub route: Option<Gen>,
    pub weight: f64,
    pub expects: Vec<Threshold>,
    /// What each instance runs beyond `sql`, and how its result is judged; flattened, and
    /// absent from the plan's JSON where a query uses none of it.
    #[serde(flatten)]
    pub instance: InstanceRules,
    /// A member of a query family (`query NAME for VAR in VALUES`): absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family: Option<Family>,
}

/// Where a member of a query family came from: `update[3]` is `update` with `f = 3`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Family {
    /// The query as written.
    pub query: String,
    pub var: String,
    pub value: i64,
    /// Members of the family: its weight is shared among them.
    pub members: u64,
}

/// A query's `then sql`, `transaction`, `expect affected` and `not found when` clauses.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct InstanceRules {
    /// Further statements of each instance, run after `sql` on the same connection, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub then: Vec<String>,
    /// The statements between BEGIN and COMMIT.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub transaction: bool,
    /// `expect affected OP N`: judged on every instance; one that fails it is an error.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<InstanceCheck>,
    /// `not found when rows == 0`: an instance that meets it is not found, neither ok nor an
    /// error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_found: Option<InstanceCheck>,
}

/// A comparison of one instance's result: `affected == 1`, `rows == 0`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InstanceCheck {
    /// `affected` (rows the instance's INSERT, UPDATE or DELETE statements changed) or `rows`
    /// (rows its statements returned).
    pub metric: String,
    pub op: String,
    pub value: u64,
}

impl InstanceCheck {
    /// Whether `n` meets the comparison.
    pub fn holds(&self, n: u64) -> bool {
        let v = self.value;
        match self.op.as_str() {
            "==" => n == v,
            "!=" => n != v,
            "<" => n < v,
            "<=" => n <= v,
            ">" => n > v,
            ">=" => n >= v,
            _ => false,
        }
    }
}

impl std::fmt::Display for InstanceCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} {}", self.metric, self.op, self.value)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct QueryPhase {
    pub name: String,
    pub endpoint: EndpointPlan,
    pub queries: Vec<QueryPlan>,
    /// `round_robin` or `weighted`.
    pub mix: String,
    /// Flattened: the plan's JSON keeps these keys where they always stood.
    #[serde(flatten)]
    pub run: RunClauses,
    pub check_same_results: bool,
}

/// The clauses query and request runs share: workers, load model, stop rules, guards and
/// thresholds.
#[derive(Clone, Debug, Serialize)]
pub struct RunClauses {
    pub workers: u64,
    pub load: Load,
    pub stop: Stop,
    pub warmup: Option<Value>,
    pub repeat: u64,
    /// `stop after N errors`: the phase stops sending at its N-th failed query or request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_after_errors: Option<u64>,
    pub require: Vec<Require>,
    /// Thresholds; on request runs also `status in [...]` / `status in lo..hi` from
    /// `expect status`.
    pub expects: Vec<Threshold>,
    /// `stage ...` clauses, run in order. With stages, `load` and `stop` summarize them (open
    /// at the highest rate if any stage is open; the sum of their durations) and `repeat` is
    /// 1. Absent from the plan's JSON without them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StagePlan>,
    /// `find max rate ...`: the run is a search of fixed-rate steps (`load` holds its first
    /// rate, `stop` its steps' least duration).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub findmax: Option<FindMaxPlan>,
    /// The warm-up is sent on the run's open-loop schedule, not as fast as it can: a search's
    /// step warms up at its own rate, on the connections it then measures with.
    #[serde(skip)]
    pub warmup_at_rate: bool,
}

/// One stage of a staged run or ingest: its span, its load (a fixed rate, a linear ramp of the
/// arrival rate, or closed loop) and its connections, and the first part of it not counted.
#[derive(Clone, Debug, Serialize)]
pub struct StagePlan {
    /// A `Value::Duration`.
    pub duration: Value,
    /// `Load::Open` with the rate at the stage's start, or `Load::Closed`.
    pub load: Load,
    /// A ramp's rate at the stage's end (a `Value::Rate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ramp_to: Option<Value>,
    pub workers: u64,
    /// A `Value::Duration`: sent as scheduled, not counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup: Option<Value>,
}

#[derive(Clone, Debug, Serialize)]
pub struct HookPlan {
    pub name: String,
    /// The script's path as written in the workload (relative to the file that names it).
    pub path: String,
    pub functions: Vec<String>,
    /// Where the script was read from (`dir/x.rhai`, or `std/x.rhai`), for messages.
    #[serde(skip)]
    pub file: String,
    /// The script's text as the checker compiled it: the runner compiles the same text, not
    /// whatever the file holds by then.
    #[serde(skip)]
    pub source: std::sync::Arc<str>,
}

/// What a request run sends.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RequestPlan {
    /// Each request is built by `function(ctx)` of the hook.
    Hook {
        hook: HookPlan,
        function: String,
        /// The script defines `response(ctx, resp)`: it sees every answer.
        response: bool,
    },
    /// The same request every time; headers come from the endpoint.
    Fixed {
        method: String,
        path: String,
        body: Option<String>,
    },
    /// A fixed request whose path and body carry `$1` .. `$placeholders`, drawn per request
    /// by `lets` and `binds` as a query's are.
    Template {
        method: String,
        path: String,
        body: Option<String>,
        placeholders: u32,
        lets: Vec<(String, Gen)>,
        binds: Vec<BindPlan>,
    },
}

/// `expect body ...`: what every answer's body must be, else the request is an error.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "check", content = "text", rename_all = "snake_case")]
pub enum BodyExpect {
    Json,
    JsonArray,
    JsonObject,
    Contains(String),
}

impl std::fmt::Display for BodyExpect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyExpect::Json => f.write_str("body json"),
            BodyExpect::JsonArray => f.write_str("body json array"),
            BodyExpect::JsonObject => f.write_str("body json object"),
            BodyExpect::Contains(t) => write!(f, "body contains {t:?}"),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct RequestPhase {
    pub name: String,
    pub endpoint: EndpointPlan,
    pub request: RequestPlan,
    #[serde(flatten)]
    pub run: RunClauses,
    pub body: Vec<BodyExpect>,
}

/// `observe process ...` of a target that a phase of the cell runs against: the local process
/// whose tree the runner samples from /proc while such a phase runs (`exec::observe`).
#[derive(Clone, Debug, Serialize)]
pub struct ObservePlan {
    /// The target's name, as `EndpointPlan::target`: a phase is observed when its endpoint's
    /// target is this one.
    pub target: String,
    #[serde(flatten)]
    pub root: ProcessRoot,
}

/// How the root of the observed tree is found, at the start of each phase.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum ProcessRoot {
    /// The pid on the first line of this file.
    Pidfile { path: Text },
    /// The process holding the socket that listens on this endpoint's TCP port.
    Listening { endpoint: String, url: Text },
    /// The oldest process of this name (comm or argv\[0\]'s file name) whose parent is not.
    Named { name: Text },
}

impl std::fmt::Display for ProcessRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProcessRoot::Pidfile { path } => write!(f, "pidfile {:?}", path.redacted()),
            ProcessRoot::Listening { endpoint, url } => write!(
                f,
                "listening {endpoint} ({})",
                crate::secrets::redact_url(&url.redacted())
            ),
            ProcessRoot::Named { name } => write!(f, "named {:?}", name.redacted()),
        }
    }
}
