//! Ingest blocks: source, endpoint, batching, workers, ack, stop rules and `verify visible`,
//! lowered into an ingest phase.

use super::schema::lower_schema;
use super::target::{self as targets, Operation};
use super::values::{
    bounded_int, duration, join, missing, not_unit, positive_int, rate, single, text_value, word,
    MAX_BATCH_ROWS, MAX_WORKERS, SIZE,
};
use super::via::{count_endpoint, count_query, target_name, via_name};
use crate::check::{Decl, Ev, Eval, InstanceId, Scope};
use crate::diag::{Code, Diagnostic};
use crate::plan::table::TableDef;
use crate::plan::*;
use crate::syntax::ast;
use crate::value::Value;

pub(super) fn lower_ingest(ev: &Eval<'_>, i: &ast::Ingest) -> Ev<IngestPhase> {
    let scope = Scope::new(InstanceId::ROOT);
    let into = single(ev, &i.into, |x| x.span, "into");
    let rows_clause = single(ev, &i.rows, |x| x.span, "rows");
    let Some(into) = into else {
        return ev.fail(missing(i.name.span, "into", "into questdb via ilp_tcp"));
    };
    let Some(rows_clause) = rows_clause else {
        return ev.fail(missing(i.name.span, "rows", "rows tsbs.cpu"));
    };
    // The rows are checked even when the endpoint is wrong: one round shows both mistakes.
    let endpoint = ingest_endpoint(ev, i, into, &scope);
    let rows = row_source(ev, &rows_clause.source);
    let (
        Some(Endpoint {
            tinst,
            target,
            ep,
            plan: endpoint,
        }),
        Some(rows),
    ) = (endpoint, rows)
    else {
        endpoint_free_clauses(ev, i, rows_clause, &scope);
        return None;
    };
    let limit = match &rows_clause.limit {
        Some(e) => Some(positive_int(ev, e, &scope, "limit")?),
        None => None,
    };
    let rows_expected = match (rows.schema_rows, limit) {
        (Some(r), Some(l)) => Some(r.min(l)),
        (Some(r), None) => Some(r),
        (None, l) => l,
    };
    let table = match (&into.table, &rows.source) {
        (Some(e), _) => text_value(ev, e, &scope, "a table name")?,
        (None, RowSource::Schema(s)) => s.table.clone(),
        (None, RowSource::File { .. }) => {
            return ev.fail(
                Diagnostic::error(Code::E0109, into.span, "rows from a file need a table name")
                    .label("add `table \"name\"` to this clause"),
            )
        }
    };
    let batch_rows = match single(ev, &i.batch, |c| c.span, "batch") {
        Some(c) => bounded_int(ev, &c.value, &scope, "the batch size", MAX_BATCH_ROWS),
        None => Some(10_000),
    };
    let workers = match single(ev, &i.workers, |c| c.span, "workers") {
        Some(c) => bounded_int(ev, &c.value, &scope, "workers", MAX_WORKERS),
        None => Some(1),
    };
    let ack = ingest_ack(ev, i, ep, &scope);
    let (setup, teardown) = setup_and_teardown(ev, i, &scope);
    let user_sql = super::table::user_sql(ev, i, &table);
    let (replay_when, replay_budget) = replay_budget(ev, i, &scope);
    let link = link(ev, i, &scope);
    let verify = match single(ev, &i.verify, |v| v.span, "verify") {
        None => Some(None),
        Some(v) => lower_verify(
            ev,
            v,
            "verify visible",
            (tinst, target, ep, &endpoint),
            &table,
            rows.range,
        )
        .map(Some),
    };
    let ingest_duration = match single(ev, &i.duration, |c| c.span, "duration") {
        None => Some(None),
        Some(c) => duration(ev, &c.value, &scope, false).map(|d| Some(Value::Duration(d))),
    };
    let ingest_rate = ingest_rate(ev, i, &scope);
    let findmax = super::findmax::find_max_ingest(ev, i, &scope);
    let warmup = match single(ev, &i.warmup, |c| c.span, "warmup") {
        None => Some(None),
        Some(c) => duration(ev, &c.value, &scope, false).map(|d| Some(Value::Duration(d))),
    };
    let stages = super::stages::lower_ingest_stages(ev, i, workers.unwrap_or(1), &scope);
    let commit =
        super::commit::lower_commit(ev, i, (ep, &endpoint), batch_rows.unwrap_or(10_000), &scope);
    let probe =
        super::probe::lower_probe(ev, i, (tinst, target, ep, &endpoint), &table, rows.range);
    // Every clause above is checked before giving up, so all their mistakes show at once.
    let (
        Some(stages),
        Some(probe),
        Some(ingest_rate),
        Some(batch_rows),
        Some(workers),
        Some(ack),
        Some(setup),
        Some(teardown),
        Some(verify),
        Some(ingest_duration),
    ) = (
        stages,
        probe,
        ingest_rate,
        batch_rows,
        workers,
        ack,
        setup,
        teardown,
        verify,
        ingest_duration,
    )
    else {
        return None;
    };
    let (findmax, warmup, commit) = (findmax?, warmup?, commit?);
    let (replay_when, link) = (replay_when?, link?);
    let user_sql = user_sql?;
    let schema_table = match rows.table {
        Some((s, Some(def))) => Some((s, def)),
        Some((_, None)) => return None,
        None => None,
    };
    let routing = match (&rows.series_col, &rows.source) {
        (Some(c), _) => format!("fnv1a64({c}) % workers"),
        (None, RowSource::File { .. }) => "fnv1a64(first tag) % workers".to_string(),
        (None, RowSource::Schema(_)) => "fnv1a64(row index) % workers".to_string(),
    };
    // Without a count, `shared` only leaves the table alone: no time range is needed.
    let counts = verify.is_some() || probe.is_some();
    if setup == Setup::Shared && rows.range.is_none() && counts {
        return ev.fail(
            Diagnostic::error(
                Code::E0501,
                i.setup[0].value.span,
                "`setup shared` counts rows inside the cell's time range",
            )
            .label("the rows have no timestamp progression")
            .note("use `setup recreate` or `setup truncate`"),
        );
    }
    // With stages, the phase's span is theirs: its `duration` is their sum.
    let ingest_duration = if stages.is_empty() {
        ingest_duration
    } else {
        let total = stages
            .iter()
            .map(|s| match s.duration {
                Value::Duration(d) => d,
                _ => 0,
            })
            .fold(0i64, i64::saturating_add);
        Some(Value::Duration(total))
    };
    if let Some(rows) = rows_expected {
        super::stages::warn_unreached(ev, i, &stages, rows);
    }
    let ddl = super::setup::ddl_endpoint(
        ev,
        (tinst, target, ep, &endpoint),
        verify.as_ref(),
        probe.as_ref(),
    );
    let mut phase = IngestPhase {
        name: i.name.name.clone(),
        endpoint,
        table,
        source: rows.source,
        rows_expected,
        bytes_expected: None,
        batch_rows,
        workers,
        routing,
        ack,
        setup,
        teardown,
        ddl,
        setup_ddl: Vec::new(),
        verify,
        calibrate: !i.calibrate.is_empty(),
        replay_budget: replay_budget?,
        duration: ingest_duration,
        rate: ingest_rate,
        probe,
        findmax,
        warmup,
        stages,
        commit,
        replay_when,
        link,
    };
    super::findmax::rows_fit(ev, i, &phase)?;
    super::table::user_statements(ev, &mut phase, &user_sql, into.span);
    targets::check_store_admin(
        ev,
        &phase,
        i.setup.first().map(|c| c.value.span),
        i.teardown.first().map(|c| c.value.span),
        into.span,
    )?;
    if crate::plan::store::store(&phase).is_some() {
        phase.ddl = None;
    }
    super::setup::check_setup(
        ev,
        &mut phase,
        (
            i.setup.first().map(|c| c.value.span),
            i.setup_sql.first().map(|c| c.span),
            i.teardown.first().map(|c| c.value.span),
        ),
        into.span,
        rows.range.is_some(),
    )?;
    super::table::table_statements(
        ev,
        &mut phase,
        schema_table.as_ref().map(|(s, d)| (&**s, d)),
        into.span,
    )?;
    Some(phase)
}

/// The clauses that need neither the endpoint nor the rows, checked when one of those failed,
/// so that their mistakes show in the same round.
fn endpoint_free_clauses(ev: &Eval<'_>, i: &ast::Ingest, rows_clause: &ast::Rows, scope: &Scope) {
    if let Some(e) = &rows_clause.limit {
        let _ = positive_int(ev, e, scope, "limit");
    }
    if let Some(c) = single(ev, &i.batch, |c| c.span, "batch") {
        let _ = bounded_int(ev, &c.value, scope, "the batch size", MAX_BATCH_ROWS);
    }
    if let Some(c) = single(ev, &i.workers, |c| c.span, "workers") {
        let _ = bounded_int(ev, &c.value, scope, "workers", MAX_WORKERS);
    }
    for (clause, name) in [(&i.duration, "duration"), (&i.warmup, "warmup")] {
        if let Some(c) = single(ev, clause, |c| c.span, name) {
            let _ = duration(ev, &c.value, scope, false);
        }
    }
    let _ = ingest_rate(ev, i, scope);
    let _ = replay_budget(ev, i, scope);
    let _ = link(ev, i, scope);
}

/// The endpoint an ingest sends to, with the target it belongs to.
struct Endpoint<'p> {
    tinst: InstanceId,
    target: &'p ast::Target,
    ep: &'p ast::Endpoint,
    plan: EndpointPlan,
}

/// `into TARGET via ENDPOINT`, fit for ingest.
fn ingest_endpoint<'p>(
    ev: &Eval<'p>,
    i: &ast::Ingest,
    into: &ast::Into,
    scope: &Scope,
) -> Option<Endpoint<'p>> {
    let target_name = target_name(ev, &into.target, scope)?;
    let (tinst, target, _) =
        targets::resolve_target(ev, InstanceId::ROOT, std::slice::from_ref(&target_name))?;
    let (ep_name, ep_span) = via_name(ev, &into.via, &i.name, scope)?;
    let ep = targets::find_endpoint(ev, target, &ep_name, ep_span)?;
    targets::check_fit(ev, ep, Operation::Ingest, ep_span)?;
    let plan = targets::endpoint_plan(ev, tinst, target, ep)?;
    Some(Endpoint {
        tinst,
        target,
        ep,
        plan,
    })
}

/// Where the rows come from, and what the source tells about them.
struct Rows<'p> {
    source: RowSource,
    /// A schema's declaration and the table it makes (`None` after a mistake in its keys).
    /// With its `for` loops expanded (`repeat::expand`), as its columns are in the plan.
    table: Option<(std::borrow::Cow<'p, ast::Schema>, Option<TableDef>)>,
    /// A schema's row count; a file's is not known before reading it.
    schema_rows: Option<u64>,
    /// A schema's time range `[start, end)`, in nanoseconds.
    range: Option<(i64, i64)>,
    series_col: Option<String>,
}

/// `rows SCHEMA` or `rows "FILE"`.
fn row_source<'p>(ev: &Eval<'p>, source: &ast::RowsSource) -> Option<Rows<'p>> {
    let path = match source {
        ast::RowsSource::Schema(path) => path,
        ast::RowsSource::File(f) => return file_source(ev, f),
    };
    match ev.resolve_decl(path, InstanceId::ROOT) {
        Ok((sinst, Decl::Schema(s), used)) if used == path.len() => {
            let plan = lower_schema(ev, sinst, s)?;
            let rows = plan.rows;
            let range = plan.time.as_ref().map(|t| match (&t.start, &t.step) {
                (Value::Timestamp(s), Value::Duration(d)) => (*s, s + d * t.count as i64),
                _ => (0, 0),
            });
            let series_col = plan
                .columns
                .iter()
                .find(|c| c.role == "series")
                .map(|c| c.name.clone());
            // The table's columns are the plan's: a loop's columns expanded.
            let (s, _) = super::series_from::written_out(ev, sinst, s);
            let def = super::table::schema_table(ev, &s, &plan);
            Some(Rows {
                table: Some((s, def)),
                source: RowSource::Schema(plan),
                schema_rows: Some(rows),
                range,
                series_col,
            })
        }
        Ok((_, d, _)) => ev.fail(
            Diagnostic::error(
                Code::E0201,
                path[0].span.to(path[path.len() - 1].span),
                format!("`{}` is a {}, not a schema", join(path), d.kind()),
            )
            .label("expected a schema"),
        ),
        Err(d) => ev.fail(d),
    }
}

/// `rows "FILE"`: the format from the extension; a file not there yet is a warning.
fn file_source(ev: &Eval<'_>, f: &ast::StrLit) -> Option<Rows<'static>> {
    let Some(rel) = f.as_plain() else {
        return ev.fail(
            Diagnostic::error(Code::E0203, f.span, "file paths cannot interpolate")
                .label("write the path literally"),
        );
    };
    let format = match rel.rsplit('.').next() {
        Some("ilp" | "lp") => "ilp",
        Some("csv") => "csv",
        Some("wlb" | "bin") => "bin",
        Some("qwp") => "tsbs-qwp",
        _ => {
            return ev.fail(
                Diagnostic::error(
                    Code::E0203,
                    f.span,
                    format!("cannot tell the format of `{rel}`"),
                )
                .label("expected a .ilp, .lp, .csv, .wlb or .qwp file"),
            )
        }
    };
    let dir = ev.prog.root().dir.clone().unwrap_or_default();
    let meta = std::fs::metadata(dir.join(&rel)).ok();
    // A stream (a FIFO of generated rows) has no size. Nor is it an input: inputs are copied
    // into the run directory, and that copy would drain the rows the ingest is to read.
    let bytes = meta.as_ref().filter(|m| m.is_file()).map(|m| m.len());
    if bytes.is_some() {
        ev.prog
            .inputs
            .record(crate::source::Origin::Disk(dir.join(&rel)));
    }
    if meta.is_none() {
        ev.error(
            Diagnostic::warning(Code::W0004, f.span, format!("`{rel}` does not exist yet"))
                .label("the run will fail unless it is generated first")
                .note("generate it with `wlrun gen`"),
        );
    }
    Some(Rows {
        table: None,
        source: RowSource::File {
            path: rel,
            format: format.to_string(),
            bytes,
        },
        schema_rows: None,
        range: None,
        series_col: None,
    })
}

/// `ack publish | per_batch | none`, where the endpoint kind can honour it.
fn ingest_ack(ev: &Eval<'_>, i: &ast::Ingest, ep: &ast::Endpoint, scope: &Scope) -> Option<Ack> {
    let kind = ep.kind;
    let Some(c) = single(ev, &i.ack, |c| c.span, "ack") else {
        return Some(default_ack(kind));
    };
    let s = match ev.eval(&c.value, scope)? {
        Value::None => return Some(default_ack(kind)),
        Value::Symbol(s) if s == "publish" || s == "per_batch" => s,
        Value::Symbol(w) => {
            return ev.fail(
                Diagnostic::error(
                    Code::E0203,
                    c.value.span,
                    format!("unknown ack policy `{w}`"),
                )
                .label("expected publish, per_batch or none"),
            )
        }
        other => {
            return ev.fail(ev.mismatch(
                c.value.span,
                "an ack policy (publish, per_batch or none)",
                &other,
                scope,
            ))
        }
    };
    let ack = if s == "publish" {
        Ack::Publish
    } else {
        Ack::PerBatch
    };
    let fits = match ack {
        Ack::Publish => kind == ast::EndpointKind::Qwp,
        _ => !matches!(kind, ast::EndpointKind::IlpTcp | ast::EndpointKind::Null),
    };
    if !fits {
        return ev.fail(
            Diagnostic::error(
                Code::E0302,
                c.value.span,
                format!(
                    "`ack {s}` does not fit the {} endpoint `{}`",
                    kind.as_str(),
                    ep.name()
                ),
            )
            .label(match kind {
                ast::EndpointKind::IlpTcp => "ILP over TCP has no acknowledgements".to_string(),
                ast::EndpointKind::Null => "the null sink acknowledges nothing".to_string(),
                _ => "only qwp publishes without waiting per batch".to_string(),
            }),
        );
    }
    Some(ack)
}

/// `rate R [fixed]`: rows per second, `Some(None)` without it. Batches leave on a fixed
/// schedule only: a Poisson schedule of batches would make the row rate depend on the batch
/// size, so it is refused.
fn ingest_rate(ev: &Eval<'_>, i: &ast::Ingest, scope: &Scope) -> Option<Option<Value>> {
    let Some(c) = single(ev, &i.rate, |c| c.span, "rate") else {
        return Some(None);
    };
    if c.value.arrival == Some(ast::Arrival::Poisson) {
        return ev.fail(
            Diagnostic::error(
                Code::E0203,
                c.span,
                "an ingest's rate is a fixed schedule of rows",
            )
            .label("`poisson` arrivals are for query and request runs")
            .note("write `rate 50_000/s` (or `rate 50_000/s fixed`)"),
        );
    }
    rate(ev, &c.value.rate, scope).map(|r| Some(Value::Rate(r)))
}

/// `setup recreate | truncate | shared` (`sql` without one, when there are `setup sql`
/// statements) and `teardown keep | drop`.
fn setup_and_teardown(
    ev: &Eval<'_>,
    i: &ast::Ingest,
    scope: &Scope,
) -> (Option<Setup>, Option<Teardown>) {
    let setup = match single(ev, &i.setup, |c| c.span, "setup") {
        // `setup sql` alone: the user's statements are the whole setup.
        None if !i.setup_sql.is_empty() => Some(Setup::Sql),
        None => Some(Setup::Recreate),
        Some(c) => word(ev, &c.value, scope, &["recreate", "truncate", "shared"]).map(|w| match w
            .as_str()
        {
            "truncate" => Setup::Truncate,
            "shared" => Setup::Shared,
            _ => Setup::Recreate,
        }),
    };
    let teardown = match single(ev, &i.teardown, |c| c.span, "teardown") {
        None => Some(Teardown::Keep),
        Some(c) => word(ev, &c.value, scope, &["keep", "drop"]).map(|w| match w.as_str() {
            "drop" => Teardown::Drop,
            _ => Teardown::Keep,
        }),
    };
    (setup, teardown)
}

/// `replay [when CONDITION] [BUDGET]`: whether a condition held (`None` without one), and the
/// budget (`None` in a cell that does not replay). Default budget: 2 GiB of pre-encoded
/// batches, across all workers of the cell. The budget is checked in every cell, replayed or
/// not, so a mistake in it does not wait for the cell that replays.
#[allow(clippy::type_complexity)]
fn replay_budget(
    ev: &Eval<'_>,
    i: &ast::Ingest,
    scope: &Scope,
) -> (Option<Option<bool>>, Option<Option<u64>>) {
    let Some(r) = single(ev, &i.replay, |r| r.span, "replay") else {
        return (Some(None), Some(None));
    };
    let when = match &r.when {
        None => Some(None),
        Some(e) => replay_condition(ev, e, scope).map(Some),
    };
    let budget = match &r.budget {
        None => Some(2u64 << 30),
        Some(e) => match ev.eval(e, scope) {
            Some(Value::Size(b)) if b > 0 => Some(b),
            Some(v) => {
                let of_kind = matches!(v, Value::Size(_));
                not_unit(ev, e, scope, v, of_kind, &SIZE)
            }
            None => None,
        },
    };
    let on = when.map(|w| w != Some(false));
    let budget = match (on, budget) {
        (Some(true), Some(b)) => Some(Some(b)),
        (Some(false), Some(_)) => Some(None),
        _ => None,
    };
    (when, budget)
}

/// `replay when CONDITION` in this cell: a boolean, over the matrix's axes. A bare word (an
/// axis holding `replay`) is refused with the comparison it likely meant.
fn replay_condition(ev: &Eval<'_>, e: &ast::Expr, scope: &Scope) -> Option<bool> {
    match ev.eval(e, scope)? {
        Value::Bool(b) => Some(b),
        Value::Symbol(w) => ev.fail(replay_word(e, &w)),
        Value::Str(t) => ev.fail(replay_word(e, &format!("{:?}", t.redacted()))),
        other => ev.fail(ev.mismatch(e.span, "a condition (true or false)", &other, scope)),
    }
}

/// An axis's value where `replay when` wants a condition: the comparison it likely meant.
fn replay_word(e: &ast::Expr, w: &str) -> Diagnostic {
    Diagnostic::error(
        Code::E0201,
        e.span,
        format!("`replay when` needs a condition, not the value `{w}`"),
    )
    .label("expected true or false in each cell")
    .note("compare the axis with its value, e.g. `replay when input == replay` for `input in [live, replay]`")
}

/// Whether an ingest replays in this cell, for the refusals that concern only a replaying
/// ingest (`concurrent`, `find max rate`). The condition's own mistakes are reported by
/// `replay_budget`, once: here they are taken back and the replay counts as on.
pub(super) fn replays_here(ev: &Eval<'_>, r: &ast::Replay) -> bool {
    let Some(e) = &r.when else { return true };
    let before = ev.diags.borrow().len();
    let v = ev.eval(e, &Scope::new(InstanceId::ROOT));
    ev.diags.borrow_mut().truncate(before);
    !matches!(v, Some(Value::Bool(false)))
}

/// `link BANDWIDTH`: bits per second, above zero.
fn link(ev: &Eval<'_>, i: &ast::Ingest, scope: &Scope) -> Option<Option<Value>> {
    let Some(c) = single(ev, &i.link, |c| c.span, "link") else {
        return Some(None);
    };
    match ev.eval(&c.value, scope)? {
        Value::Bandwidth(b) if b > 0.0 => Some(Some(Value::Bandwidth(b))),
        Value::Bandwidth(_) => ev.fail(
            Diagnostic::error(
                Code::E0203,
                c.value.span,
                "a link's bandwidth must be above zero",
            )
            .label("no rows cross a link of no bandwidth"),
        ),
        other => ev.fail(ev.mismatch(
            c.value.span,
            "a bandwidth like `14.7gbit` or `10Gbit/s`",
            &other,
            scope,
        )),
    }
}

pub(super) fn default_ack(kind: ast::EndpointKind) -> Ack {
    match kind {
        ast::EndpointKind::IlpTcp | ast::EndpointKind::Null => Ack::None,
        ast::EndpointKind::Qwp => Ack::Publish,
        _ => Ack::PerBatch,
    }
}

/// The ingest's target and endpoint, as `lower_verify` needs them.
pub(super) type IngestTarget<'a> = (
    InstanceId,
    &'a ast::Target,
    &'a ast::Endpoint,
    &'a EndpointPlan,
);

/// `clause` names the clause in messages: `verify visible`, or `probe visible` whose count is
/// chosen the same way.
pub(super) fn lower_verify(
    ev: &Eval<'_>,
    v: &ast::Verify,
    clause: &str,
    (tinst, target, ingest_ep, ingest_plan): IngestTarget<'_>,
    table: &str,
    range: Option<(i64, i64)>,
) -> Ev<VerifyPlan> {
    let within = match &v.within {
        Some(e) => Value::Duration(duration(ev, e, &Scope::new(InstanceId::ROOT), false)?),
        None => Value::Duration(60_000_000_000),
    };
    let default_sql = |ep: EndpointPlan| VerifyPlan {
        endpoint: ep,
        language: "sql".into(),
        unit: "rows".into(),
        query: format!(
            "SELECT count(*) FROM {}",
            crate::sql_text::quote_ident(table)
        ),
        within: within.clone(),
    };
    let from_rule = |rule: &ast::CountRule| -> Ev<VerifyPlan> {
        let (ep, lang) = count_endpoint(ev, tinst, target, rule)?;
        let query = count_query(ev, tinst, &rule.query, table, range)?;
        Some(VerifyPlan {
            endpoint: ep,
            language: lang,
            unit: match rule.unit {
                ast::CountUnit::Rows => "rows".into(),
                ast::CountUnit::Samples => "samples".into(),
            },
            query,
            within: within.clone(),
        })
    };
    match &v.via {
        Some(path) => {
            let (vt_inst, vt, used) = targets::resolve_target(ev, InstanceId::ROOT, path)?;
            if used != path.len() - 1 {
                return ev.fail(
                    Diagnostic::error(
                        Code::E0301,
                        path[0].span.to(path[path.len() - 1].span),
                        format!("name an endpoint: `{clause} via TARGET.ENDPOINT`"),
                    )
                    .label("expected TARGET.ENDPOINT"),
                );
            }
            let last = &path[path.len() - 1];
            let ep = targets::find_endpoint(ev, vt, &last.name, last.span)?;
            if let Some(rule) = vt.counts.iter().find(|c| c.endpoint.name == ep.name()) {
                return from_rule(rule);
            }
            targets::check_fit(ev, ep, Operation::CountSql, last.span)?;
            Some(default_sql(targets::endpoint_plan(ev, vt_inst, vt, ep)?))
        }
        None => {
            if let Some(rule) = target.counts.first() {
                return from_rule(rule);
            }
            if matches!(
                ingest_ep.kind,
                ast::EndpointKind::Pg | ast::EndpointKind::Sqlite
            ) {
                return Some(default_sql(ingest_plan.clone()));
            }
            if let Some(sql_ep) = target
                .endpoints
                .iter()
                .find(|e| matches!(e.kind, ast::EndpointKind::Pg | ast::EndpointKind::Sqlite))
            {
                return Some(default_sql(targets::endpoint_plan(
                    ev, tinst, target, sql_ep,
                )?));
            }
            if ingest_ep.kind == ast::EndpointKind::Null {
                return ev.fail(
                    Diagnostic::error(Code::E0306, v.span, "the null sink keeps no rows to count")
                        .label(format!("remove `{clause}` for null cells")),
                );
            }
            ev.fail(
                Diagnostic::error(Code::E0306, v.span, format!("target `{}` has no way to count rows", target.name))
                    .label(format!("nothing to {} with", clause.split(' ').next().unwrap_or(clause)))
                    .also(target.name.span, "add a count rule to this target")
                    .note("for example: count rows via pg sql \"SELECT count(*) FROM ${table}\", or count samples via http promql \"...\""),
            )
        }
    }
}
