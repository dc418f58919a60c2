//! The syntax tree: plain owned data with spans, no pest types. One struct per construct of the
//! language; the checker turns these into the checked model.

use crate::span::{Ident, Span};

#[derive(Clone, Debug, PartialEq)]
pub struct File {
    pub items: Vec<Item>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Import(Import),
    Workload(Workload),
    Param(Param),
    Target(Target),
    Matrix(Matrix),
    Schema(Schema),
    Ingest(Ingest),
    Query(Query),
    Hook(Hook),
    Run(Run),
    Concurrent(Concurrent),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Import {
    pub path: StrLit,
    pub alias: Ident,
    pub args: Vec<NamedArg>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct NamedArg {
    pub name: Ident,
    pub value: Expr,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub name: Ident,
    pub seed: Vec<Expr>,
    pub description: Vec<StrLit>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: Ident,
    pub ty: Option<ColType>,
    pub value: Expr,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    pub name: Ident,
    pub dialect: Vec<Ident>,
    pub counts: Vec<CountRule>,
    pub endpoints: Vec<Endpoint>,
    pub span: Span,
    /// `observe process ...` clauses, in order.
    pub observe_process: Vec<ObserveProcess>,
    /// `observe metrics "URL" ...`, in the order written.
    pub observe_metrics: Vec<ObserveMetrics>,
}

/// `observe process pidfile EXPR | listening ENDPOINT | named EXPR`: which local process (with
/// its tree) is the target's server.
#[derive(Clone, Debug, PartialEq)]
pub struct ObserveProcess {
    pub how: ObserveHow,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ObserveHow {
    /// A file holding the root's pid on its first line.
    Pidfile(Expr),
    /// The process listening on the TCP port of this endpoint of the target.
    Listening(Ident),
    /// The oldest process of this name (comm or argv[0]) whose parent is not of that name.
    Named(Expr),
}

/// `observe metrics "URL" every D keep "re", ... cpu "selector"`: each option as written (a
/// repeated one is the checker's to refuse, at its place).
#[derive(Clone, Debug, PartialEq)]
pub struct ObserveMetrics {
    pub url: StrLit,
    pub every: Vec<Expr>,
    /// Each `keep` clause's patterns.
    pub keep: Vec<Vec<StrLit>>,
    pub cpu: Vec<StrLit>,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountUnit {
    Rows,
    Samples,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountLanguage {
    Sql,
    PromQl,
    InfluxQl,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CountRule {
    pub unit: CountUnit,
    pub endpoint: Ident,
    pub language: CountLanguage,
    pub query: StrLit,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EndpointKind {
    Pg,
    Http,
    IlpTcp,
    IlpHttp,
    Qwp,
    Sqlite,
    Null,
}

impl EndpointKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EndpointKind::Pg => "pg",
            EndpointKind::Http => "http",
            EndpointKind::IlpTcp => "ilp_tcp",
            EndpointKind::IlpHttp => "ilp_http",
            EndpointKind::Qwp => "qwp",
            EndpointKind::Sqlite => "sqlite",
            EndpointKind::Null => "null",
        }
    }

    pub fn parse(s: &str) -> Option<EndpointKind> {
        Some(match s {
            "pg" => EndpointKind::Pg,
            "http" => EndpointKind::Http,
            "ilp_tcp" => EndpointKind::IlpTcp,
            "ilp_http" => EndpointKind::IlpHttp,
            "qwp" => EndpointKind::Qwp,
            "sqlite" => EndpointKind::Sqlite,
            "null" => EndpointKind::Null,
            _ => return None,
        })
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Endpoint {
    pub kind: EndpointKind,
    pub kind_span: Span,
    pub url: Option<StrLit>,
    pub alias: Option<Ident>,
    pub options: Vec<EndpointOption>,
    pub span: Span,
}

impl Endpoint {
    /// The name the endpoint is referred to by: its alias, or its kind.
    pub fn name(&self) -> &str {
        self.alias
            .as_ref()
            .map_or(self.kind.as_str(), |a| a.name.as_str())
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct EndpointOption {
    pub name: Ident,
    pub value: Expr,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Matrix {
    pub axes: Vec<Axis>,
    pub excludes: Vec<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub name: Ident,
    pub values: Expr,
    pub when: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Schema {
    pub name: Ident,
    pub table: Vec<Expr>,
    pub rows: Vec<Expr>,
    /// `series from SCHEMA`: the series key and per-series columns of another schema.
    pub series_from: Vec<(Vec<Ident>, Span)>,
    pub columns: Vec<Column>,
    /// `primary key (COLUMN, ...)`: at most one, which the lowering checks.
    pub primary_key: Vec<Key>,
    /// `index [NAME] (COLUMN [asc|desc], ...)`, in order.
    pub indexes: Vec<Key>,
    /// `null one of [COLUMN, ...] SHARE`: the columns, the share.
    pub null_one: Vec<(Vec<Ident>, Expr)>,
    /// `late SHARE by N rows` (at most one, which the lowering checks), with its span.
    pub late: Vec<(Expr, Expr, Span)>,
    pub span: Span,
}

/// A primary key or an index of a schema: its columns, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Key {
    /// An index's name; a primary key has none.
    pub name: Option<Ident>,
    pub columns: Vec<KeyColumn>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct KeyColumn {
    pub name: Ident,
    /// `desc` (true) or `asc` as written, with its span.
    pub order: Option<(bool, Span)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColumnRole {
    Series,
    Tag,
    Field,
    Timestamp,
}

impl ColumnRole {
    pub fn as_str(self) -> &'static str {
        match self {
            ColumnRole::Series => "series",
            ColumnRole::Tag => "tag",
            ColumnRole::Field => "field",
            ColumnRole::Timestamp => "timestamp",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ColType {
    pub name: Ident,
    pub arg: Option<TypeArg>,
    pub span: Span,
}

/// What a column type takes in parentheses.
#[derive(Clone, Debug, PartialEq)]
pub enum TypeArg {
    /// `timestamp(ns)`
    Unit(Ident),
    /// `varchar(255)`; a number too large for a `u64` is `u64::MAX`.
    Length(u64, Span),
}

impl TypeArg {
    pub fn span(&self) -> Span {
        match self {
            TypeArg::Unit(i) => i.span,
            TypeArg::Length(_, s) => *s,
        }
    }
}

impl std::fmt::Display for TypeArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TypeArg::Unit(i) => write!(f, "{i}"),
            TypeArg::Length(n, _) => write!(f, "{n}"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Per {
    Series,
    Row,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ColumnGen {
    /// `= expr`, with modifiers.
    Expr(Expr),
    /// `series ... = expr for n in range`
    Series {
        expr: Expr,
        var: Ident,
        domain: Expr,
    },
    /// `timestamp ... = every D from T (for D | to T)?`
    Every {
        step: Expr,
        from: Expr,
        end: Option<TimeEnd>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum TimeEnd {
    For(Expr),
    To(Expr),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub role: ColumnRole,
    /// As written: inside `for`, `${VAR}` in it stands for the loop's value.
    pub name: Ident,
    /// The `for VAR in VALUES` this column is inside of: one column per value.
    pub repeat: Option<Repeat>,
    /// The schema whose column this is, taken by `series from`: it draws from that schema's
    /// streams. `None` for a column written in its schema.
    pub owner: Option<String>,
    pub ty: Option<ColType>,
    pub gen: ColumnGen,
    pub per: Vec<(Per, Span)>,
    pub null: Vec<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Via {
    /// One endpoint name, or an axis/param whose values name endpoints.
    Name(Ident),
    /// A list of endpoints: one more matrix axis.
    List(Vec<Ident>, Span),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Into {
    pub target: Ident,
    pub via: Via,
    pub table: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum RowsSource {
    Schema(Vec<Ident>),
    File(StrLit),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Rows {
    pub source: RowsSource,
    pub limit: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Verify {
    pub via: Option<Vec<Ident>>,
    pub within: Option<Expr>,
    pub span: Span,
}

/// A clause with its keyword's span, for "duplicate clause" and "missing clause" diagnostics.
#[derive(Clone, Debug, PartialEq)]
pub struct Clause<T> {
    pub value: T,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Ingest {
    pub name: Ident,
    /// `ingest NAME when CONDITION { ... }`: the cells the phase runs in (all without one).
    pub when: Option<Expr>,
    pub into: Vec<Into>,
    pub rows: Vec<Rows>,
    pub batch: Vec<Clause<Expr>>,
    pub workers: Vec<Clause<Expr>>,
    pub ack: Vec<Clause<Expr>>,
    pub setup: Vec<Clause<Expr>>,
    /// `setup sql DIALECT "STATEMENT"`, in order.
    pub setup_sql: Vec<SetupSql>,
    pub teardown: Vec<Clause<Expr>>,
    pub verify: Vec<Verify>,
    pub calibrate: Vec<Span>,
    pub replay: Vec<Replay>,
    /// `duration D`: sending stops after `D`, whatever is left.
    pub duration: Vec<Clause<Expr>>,
    /// `rate R`: rows per second, sent on a fixed schedule (open loop).
    pub rate: Vec<Clause<Rate>>,
    /// `probe visible every I [via T.E] [within D]`: the visibility lag, probed while sending.
    pub probe: Vec<Probe>,
    /// `find max rate from R where CONDITION ...`: the highest row rate that meets an SLA.
    pub find_max: Vec<Clause<FindMax>>,
    /// `warmup D`: each search step's first `D`, not judged (with `find max rate` only).
    pub warmup: Vec<Clause<Expr>>,
    /// `stage D rate R [to R2] [warmup W]`, in order: they replace `rate` and `duration`.
    pub stages: Vec<Stage>,
    /// `commit per_batch | every N rows` (QWP's FLAG_DEFER_COMMIT).
    pub commit: Vec<Clause<CommitPolicy>>,
    /// `link BANDWIDTH`: the rows/s a link of that bandwidth would carry, computed in the report.
    pub link: Vec<Clause<Expr>>,
    pub span: Span,
}

/// `setup sql DIALECT "STATEMENT"`: a statement of the user's setup, for one dialect.
#[derive(Clone, Debug, PartialEq)]
pub struct SetupSql {
    pub dialect: Ident,
    pub sql: StrLit,
    pub span: Span,
}

/// What a `commit` clause says: `every N rows`, or a value (`per_batch`, `none`, an axis).
#[derive(Clone, Debug, PartialEq)]
pub enum CommitPolicy {
    EveryRows(Expr),
    Value(Expr),
}

/// `probe visible every I [via TARGET.ENDPOINT] [within D]` in an ingest block.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    pub every: Expr,
    pub via: Option<Vec<Ident>>,
    pub within: Option<Expr>,
    pub span: Span,
}

/// `replay [when CONDITION] [budget SIZE]`: encode every batch before the clock starts, in the
/// cells where the condition holds (all without one).
#[derive(Clone, Debug, PartialEq)]
pub struct Replay {
    pub when: Option<Expr>,
    pub budget: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    pub name: Ident,
    /// `for VAR in VALUES`: the query is a family, one member per value.
    pub repeat: Option<Repeat>,
    pub label: Vec<Clause<Expr>>,
    pub sql: Vec<Clause<StrLit>>,
    /// `then sql "..."`: the instance's further statements, in order.
    pub then: Vec<Clause<StrLit>>,
    /// `transaction`: the statements run between BEGIN and COMMIT.
    pub transaction: Vec<Span>,
    pub lets: Vec<Let>,
    pub binds: Vec<Bind>,
    pub csv: Vec<CsvBinds>,
    pub route: Vec<Clause<Expr>>,
    pub expects: Vec<Expect>,
    /// `not found when CONDITION`.
    pub not_found: Vec<Clause<Expr>>,
    pub span: Span,
}

/// `for VAR in VALUES`: what is repeated, once per value, with `VAR` bound to it.
#[derive(Clone, Debug, PartialEq)]
pub struct Repeat {
    pub var: Ident,
    pub values: Expr,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Let {
    pub name: Ident,
    pub value: Expr,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Bind {
    pub index: u32,
    pub index_span: Span,
    pub value: Expr,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CsvBinds {
    pub path: StrLit,
    pub columns: Vec<(Ident, Ident)>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Hook {
    pub name: Ident,
    pub path: StrLit,
    pub entries: Vec<Ident>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Against {
    pub target: Vec<Ident>,
    pub via: Option<Via>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct QuerySelector {
    pub path: Vec<Ident>,
    pub glob: bool,
    pub weight: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RunCount {
    pub count: Expr,
    pub per_query: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    Fixed,
    Poisson,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Rate {
    pub rate: Expr,
    pub arrival: Option<Arrival>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expect {
    Status(Expr, Span),
    Body(BodyCheck, Span),
    Condition(Expr, Span),
}

impl Expect {
    pub fn span(&self) -> Span {
        match self {
            Expect::Status(_, s) | Expect::Body(_, s) | Expect::Condition(_, s) => *s,
        }
    }
}

/// `expect body ...`: what every answer's body must be.
#[derive(Clone, Debug, PartialEq)]
pub enum BodyCheck {
    /// `json`, `json array`, `json object`: the shape's name, if any.
    Json(Option<String>),
    Contains(Expr),
}

/// What a request run sends: a hook function's requests, or one fixed request.
#[derive(Clone, Debug, PartialEq)]
pub enum RequestSpec {
    Hook(Vec<Ident>),
    Fixed {
        method: String,
        path: Expr,
        body: Option<Expr>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    pub name: Ident,
    /// `run NAME when CONDITION { ... }`: the cells the phase runs in (all without one).
    pub when: Option<Expr>,
    pub against: Vec<Against>,
    pub queries: Vec<Clause<Vec<QuerySelector>>>,
    pub request: Vec<Clause<RequestSpec>>,
    /// `let` and `bind $N = ...` of a request template: the fixed request's path and body
    /// draw `$N` per request, as a query's SQL does.
    pub lets: Vec<Let>,
    pub binds: Vec<Bind>,
    pub workers: Vec<Clause<Expr>>,
    pub count: Vec<Clause<RunCount>>,
    pub duration: Vec<Clause<Expr>>,
    pub warmup: Vec<Clause<Expr>>,
    pub repeat: Vec<Clause<Expr>>,
    /// `stop after N errors`.
    pub stop_after: Vec<Clause<Expr>>,
    pub rate: Vec<Clause<Rate>>,
    pub require: Vec<Clause<Expr>>,
    pub expects: Vec<Expect>,
    pub check_same: Vec<Span>,
    /// `stage D [rate R [to R2]] [workers N] [warmup W]`, in order: they replace `duration`,
    /// `count`, `rate` and `repeat`.
    pub stages: Vec<Stage>,
    /// `find max rate from R where CONDITION ...`.
    pub find_max: Vec<Clause<FindMax>>,
    pub span: Span,
}

/// One stage of a staged run.
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    pub duration: Expr,
    /// `rate R [to R2] [poisson|fixed]`: absent in a closed-loop stage.
    pub rate: Option<StageRate>,
    pub workers: Option<Expr>,
    pub warmup: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StageRate {
    pub from: Expr,
    /// A linear ramp of the arrival rate from `from` to this.
    pub to: Option<Expr>,
    pub arrival: Option<Arrival>,
    pub span: Span,
}

/// `concurrent NAME { phases A, B  until A }`: ingest and run blocks that run at the same time.
#[derive(Clone, Debug, PartialEq)]
pub struct Concurrent {
    pub name: Ident,
    /// Every `phases` clause, each a list of block names.
    pub phases: Vec<Clause<Vec<Ident>>>,
    pub until: Vec<Clause<Ident>>,
    pub span: Span,
}

/// `find max rate from R [up to R] where CONDITION [samples N] [growth G] [resolution P%]`.
/// Each option is a list so that a repeated one is refused with its position.
#[derive(Clone, Debug, PartialEq)]
pub struct FindMax {
    pub from: Expr,
    pub condition: Expr,
    pub up_to: Vec<Expr>,
    pub samples: Vec<Expr>,
    pub growth: Vec<Expr>,
    pub resolution: Vec<Expr>,
    /// `confirm true|false`: measure the answer's rate again before answering (default true).
    pub confirm: Vec<Expr>,
}

/// A string literal: its parts (text and `${expr}` interpolations) and its span.
#[derive(Clone, Debug, PartialEq)]
pub struct StrLit {
    pub parts: Vec<StrPart>,
    pub span: Span,
}

impl StrLit {
    /// The text when the literal has no interpolation.
    pub fn as_plain(&self) -> Option<String> {
        let mut s = String::new();
        for p in &self.parts {
            match p {
                StrPart::Text(t) => s.push_str(t),
                StrPart::Interp(_) => return None,
            }
        }
        Some(s)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum StrPart {
    Text(String),
    Interp(Expr),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    Range,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl BinOp {
    pub fn as_str(self) -> &'static str {
        match self {
            BinOp::Or => "or",
            BinOp::And => "and",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::In => "in",
            BinOp::Range => "..",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateUnit {
    Second,
    Minute,
    Hour,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Int(i64),
    Float(f64),
    /// Nanoseconds.
    Duration(i64),
    /// Bytes.
    Size(u64),
    /// Events per second.
    Rate(f64),
    /// Bits per second (`14.7gbit`).
    Bandwidth(f64),
    /// A percentage as written (`0.1%` is 0.1).
    Percent(f64),
    /// Nanoseconds since the Unix epoch, UTC.
    Timestamp(i64),
    Bool(bool),
    None,
    Str(StrLit),
    Env {
        name: StrLit,
        default: Option<Box<Expr>>,
    },
    List(Vec<Expr>),
    Map(Vec<(MapKey, Expr)>),
    Placeholder(u32),
    Path(Vec<Ident>),
    Call {
        callee: Vec<Ident>,
        args: Vec<CallArg>,
    },
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
}

#[derive(Clone, Debug, PartialEq)]
pub enum MapKey {
    Str(String, Span),
    Ident(Ident),
}

impl MapKey {
    pub fn text(&self) -> &str {
        match self {
            MapKey::Str(s, _) => s,
            MapKey::Ident(i) => &i.name,
        }
    }

    pub fn span(&self) -> Span {
        match self {
            MapKey::Str(_, s) => *s,
            MapKey::Ident(i) => i.span,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct CallArg {
    pub name: Option<Ident>,
    pub value: Expr,
}
