//! The table an ingest's setup creates and the statements its setup runs, lowered into
//! `IngestPhase::setup_ddl`: the schema's column types as declared, its `primary key` and
//! `index` clauses, checked against the dialect of the cell's DDL endpoint (a type or key the
//! dialect cannot take is refused at its span, never widened), and the `setup sql` statements
//! written for that dialect. `plan::table` writes the SQL.

use super::values::single;
use crate::check::{Ev, Eval, InstanceId, Scope};
use crate::diag::{Code, Diagnostic};
use crate::plan::setup::{self, Admin};
use crate::plan::table::{
    self, Dialect, IndexDef, SetupStatement, SqlType, StatementKind, TableDef,
};
use crate::plan::{ColumnPlan, IngestPhase, RowSource, SchemaPlan, Setup};
use crate::span::Span;
use crate::syntax::ast;
use crate::value::{Gen, Ty, Value};

/// The dialects a `setup sql` statement may name.
const SQL_DIALECTS: &[&str] = &["postgres", "timescaledb", "questdb", "sqlite"];

/// A schema's table: each column's SQL type, its primary key and indexes, their names
/// checked against the columns. `None` after reporting a mistake.
pub(super) fn schema_table(ev: &Eval<'_>, s: &ast::Schema, plan: &SchemaPlan) -> Ev<TableDef> {
    let mut ok = true;
    let mut columns = Vec::new();
    for (c, p) in s.columns.iter().zip(&plan.columns) {
        let ty = sql_type(c, p);
        ok &= fits_length(ev, c, p, ty);
        columns.push((p.name.clone(), ty));
    }
    let mut def = TableDef {
        columns,
        timestamp: plan.time.as_ref().map(|t| t.column.clone()),
        ..TableDef::default()
    };
    if let Some(pk) = single(ev, &s.primary_key, |k| k.span, "primary key") {
        match key_columns(ev, s, pk) {
            Some(cols) => def.primary_key = cols.into_iter().map(|(c, _)| c).collect(),
            None => ok = false,
        }
        for k in &pk.columns {
            if let Some((true, span)) = k.order {
                ev.error(
                    Diagnostic::error(Code::E0501, span, "a primary key has no order")
                        .label("remove this")
                        .note("an ordered index is `index (COLUMN desc)`"),
                );
                ok = false;
            }
            let nullable = plan
                .columns
                .iter()
                .find(|c| c.name == k.name.name)
                .filter(|c| c.null_probability > 0.0);
            if let Some(c) = nullable {
                ev.error(
                    Diagnostic::error(
                        Code::E0501,
                        k.name.span,
                        format!("primary key column `{}` is sometimes null", c.name),
                    )
                    .label("a primary key column holds a value in every row")
                    .note("remove its `null` clause, or the column from the key"),
                );
                ok = false;
            }
        }
    }
    let mut names: Vec<(String, Span)> = Vec::new();
    for index in &s.indexes {
        let Some(columns) = key_columns(ev, s, index) else {
            ok = false;
            continue;
        };
        let def_index = IndexDef {
            name: index.name.as_ref().map(|n| n.name.clone()),
            columns,
        };
        let name = table::index_name(&plan.table, &def_index);
        let name = def_index.name.clone().unwrap_or(name);
        if let Some((_, first)) = names.iter().find(|(n, _)| *n == name) {
            ev.error(
                Diagnostic::error(
                    Code::E0103,
                    index.name.as_ref().map_or(index.span, |n| n.span),
                    format!("index `{name}` is declared twice"),
                )
                .label("a second index of this name")
                .also(*first, "first declared here"),
            );
            ok = false;
        }
        names.push((name, index.name.as_ref().map_or(index.span, |n| n.span)));
        def.indexes.push(def_index);
    }
    ok.then_some(def)
}

/// The SQL type of a column: as declared, else from what its generator yields.
fn sql_type(c: &ast::Column, p: &ColumnPlan) -> SqlType {
    let declared = c.ty.as_ref().and_then(|t| {
        let length = match &t.arg {
            Some(ast::TypeArg::Length(n, _)) => Some(u32::try_from(*n).unwrap_or(u32::MAX)),
            _ => None,
        };
        SqlType::declared(&t.name.name, length)
    });
    declared.unwrap_or(match p.ty.as_str() {
        "varchar" => SqlType::Text,
        "long" => SqlType::Bigint,
        "double" => SqlType::Double,
        "boolean" => SqlType::Boolean,
        _ => SqlType::Timestamp,
    })
}

/// A `varchar(N)` or `char(N)` column whose generator's longest text is known (a constant,
/// a pick of constants, a UUID) must hold it; other generators are the server's to refuse,
/// row by row, at run time.
fn fits_length(ev: &Eval<'_>, c: &ast::Column, p: &ColumnPlan, ty: SqlType) -> bool {
    let (Some(max), Some(longest)) = (ty.max_chars(), longest_text(&p.gen)) else {
        return true;
    };
    if longest <= max as usize {
        return true;
    }
    let at = c.ty.as_ref().map_or(c.name.span, |t| t.span);
    let gen = match &c.gen {
        ast::ColumnGen::Expr(e) | ast::ColumnGen::Series { expr: e, .. } => e.span,
        ast::ColumnGen::Every { step, .. } => step.span,
    };
    ev.error(
        Diagnostic::error(
            Code::E0201,
            gen,
            format!(
                "column `{}` is {ty} but its generator yields texts of up to {longest} characters",
                c.name
            ),
        )
        .label(format!("up to {longest} characters"))
        .also(at, "declared here"),
    );
    false
}

/// The most characters a generator's text can have, where that is known.
fn longest_text(g: &Gen) -> Option<usize> {
    let text = |v: &Value| match v {
        Value::Str(t) => t.as_lit().map(|s| s.chars().count()),
        Value::Symbol(s) => Some(s.chars().count()),
        _ => None,
    };
    let most = |values: &[Value]| values.iter().map(text).collect::<Option<Vec<_>>>();
    match g {
        Gen::Const { value } => text(value),
        Gen::Uuid => Some(36),
        Gen::Pick { values } | Gen::Weighted { values, .. } => most(values)?.into_iter().max(),
        Gen::PickBy { choices, .. } => choices
            .iter()
            .map(|(_, v)| most(v).map(|l| l.into_iter().max().unwrap_or(0)))
            .collect::<Option<Vec<_>>>()?
            .into_iter()
            .max(),
        _ => None,
    }
}

/// A key's columns, each a column of the schema, none twice.
fn key_columns(ev: &Eval<'_>, s: &ast::Schema, k: &ast::Key) -> Option<Vec<(String, bool)>> {
    let mut ok = true;
    let mut out: Vec<(String, bool)> = Vec::new();
    for c in &k.columns {
        if !s.columns.iter().any(|x| x.name.name == c.name.name) {
            let names: Vec<&str> = s.columns.iter().map(|x| x.name.name.as_str()).collect();
            let mut d = Diagnostic::error(
                Code::E0502,
                c.name.span,
                format!("schema `{}` has no column `{}`", s.name, c.name),
            )
            .label("unknown column")
            .note(format!("its columns: {}", names.join(", ")));
            if let Some(x) = crate::diag::suggest(&c.name.name, names.iter().copied()) {
                d = d.note(format!("did you mean `{x}`?"));
            }
            ev.error(d);
            ok = false;
        } else if out.iter().any(|(n, _)| *n == c.name.name) {
            ev.error(
                Diagnostic::error(
                    Code::E0103,
                    c.name.span,
                    format!("column `{}` is named twice", c.name),
                )
                .label("a second time"),
            );
            ok = false;
        }
        out.push((c.name.name.clone(), matches!(c.order, Some((true, _)))));
    }
    ok.then_some(out)
}

/// A `setup sql` statement of the ingest block, evaluated: its dialect and its text.
pub(super) struct UserSql {
    dialect: String,
    sql: String,
}

/// The `setup sql` clauses: a dialect wlrun knows, a statement that is not empty and holds no
/// `env(...)` value (it is printed in the plan and in a failure). `${table}` is the phase's
/// table name, as written.
pub(super) fn user_sql(ev: &Eval<'_>, i: &ast::Ingest, table: &str) -> Ev<Vec<UserSql>> {
    let mut scope = Scope::new(InstanceId::ROOT);
    scope.push_local(
        "table".into(),
        Value::Str(crate::value::Text::lit(table)),
        Some(Ty::Str),
    );
    let mut out = Vec::new();
    let mut ok = true;
    for q in &i.setup_sql {
        let dialect = q.dialect.name.as_str();
        if !SQL_DIALECTS.contains(&dialect) {
            let mut d = Diagnostic::error(
                Code::E0307,
                q.dialect.span,
                format!("`setup sql` for unknown dialect `{dialect}`"),
            )
            .label("not a dialect wlrun writes DDL for")
            .note(format!("dialects: {}", SQL_DIALECTS.join(", ")));
            if let Some(s) = crate::diag::suggest(dialect, SQL_DIALECTS.iter().copied()) {
                d = d.note(format!("did you mean `{s}`?"));
            }
            ev.error(d);
            ok = false;
            continue;
        }
        let Some(text) = ev.string(&q.sql, &scope) else {
            ok = false;
            continue;
        };
        match text.as_lit() {
            Some(sql) if !sql.trim().is_empty() => out.push(UserSql {
                dialect: dialect.to_string(),
                sql,
            }),
            Some(_) => {
                ev.error(
                    Diagnostic::error(Code::E0203, q.sql.span, "an empty `setup sql` statement")
                        .label("write the statement here"),
                );
                ok = false;
            }
            None => {
                ev.error(
                    Diagnostic::error(
                        Code::E0203,
                        q.sql.span,
                        "a `setup sql` statement cannot contain env(...) values",
                    )
                    .label("write it literally")
                    .note("the statement is shown by `wlrun plan` and in a failure"),
                );
                ok = false;
            }
        }
    }
    ok.then_some(out)
}

/// Whether a statement written for `wrote` runs where the DDL dialect is `cell`: TimescaleDB
/// takes PostgreSQL's statements too.
fn runs_on(wrote: &str, cell: &str) -> bool {
    wrote == cell || (wrote == "postgres" && cell == "timescaledb")
}

/// The dialect of the cell's DDL: its DDL endpoint's, else the ingest endpoint's.
fn cell_dialect(phase: &IngestPhase) -> Option<&'static str> {
    phase
        .ddl
        .as_ref()
        .and_then(setup::ddl_dialect)
        .or_else(|| setup::ddl_dialect(&phase.endpoint))
}

/// Puts the `setup sql` statements of the cell's dialect into the phase, before `admin` is
/// asked where the setup runs (they make `setup shared` act). A phase whose statements are all
/// for other dialects, and that has no setup of its own, sets nothing up: a warning says so.
pub(super) fn user_statements(
    ev: &Eval<'_>,
    phase: &mut IngestPhase,
    user: &[UserSql],
    into: Span,
) {
    let cell = cell_dialect(phase);
    phase.setup_ddl = user
        .iter()
        .filter(|u| cell.is_some_and(|c| runs_on(&u.dialect, c)))
        .map(|u| SetupStatement::new(StatementKind::Sql, u.sql.clone()))
        .collect();
    if phase.setup == Setup::Sql && phase.setup_ddl.is_empty() && phase.endpoint.kind != "null" {
        let wrote: Vec<&str> = user.iter().map(|u| u.dialect.as_str()).collect();
        ev.error(
            Diagnostic::warning(
                Code::W0004,
                into,
                format!(
                    "no `setup sql` statement is for dialect `{}` (they are for {})",
                    cell.unwrap_or(phase.endpoint.dialect.as_str()),
                    wrote.join(", ")
                ),
            )
            .label("this cell sets nothing up: its rows add to the table as it is")
            .note("add `setup sql DIALECT \"...\"` for it, or `setup recreate`"),
        );
    }
}

/// Puts the statements wlrun writes for the table before the user's, where the setup runs
/// SQL: `setup recreate`'s `DROP TABLE` and `CREATE TABLE` (from a schema with its types and
/// keys, checked against the dialect; from a file once it is read), or `setup truncate`'s
/// `TRUNCATE`. `schema` is the AST and table of a schema source.
pub(super) fn table_statements(
    ev: &Eval<'_>,
    phase: &mut IngestPhase,
    schema: Option<(&ast::Schema, &TableDef)>,
    into: Span,
) -> Ev<()> {
    let Admin::Sql { dialect, .. } = setup::admin(phase) else {
        return Some(());
    };
    let d = Dialect::of(dialect)?;
    let ours = match (phase.setup, &phase.source, schema) {
        (Setup::Recreate, RowSource::Schema(_), Some((s, def))) => {
            refused(ev, d, s, def, into)?;
            let mut out = vec![SetupStatement::new(
                StatementKind::Drop,
                table::drop_table(&phase.table),
            )];
            // `refused` has reported what the dialect cannot take; whatever else `plan::table`
            // refuses is said at the phase rather than dropped.
            let made = match table::create_table(d, &phase.table, def) {
                Ok(made) => made,
                Err(why) => {
                    return ev.fail(
                        Diagnostic::error(Code::E0503, into, format!("{}: {why}", d.server()))
                            .label("the table is created here"),
                    )
                }
            };
            let (create, indexes) = made.split_at(made.len() - def.indexes.len());
            out.extend(
                create
                    .iter()
                    .map(|c| SetupStatement::new(StatementKind::Create, c.clone())),
            );
            out.extend(
                indexes
                    .iter()
                    .map(|c| SetupStatement::new(StatementKind::Index, c.clone())),
            );
            out
        }
        (Setup::Recreate, _, _) => vec![
            SetupStatement::new(StatementKind::Drop, table::drop_table(&phase.table)),
            SetupStatement::new(StatementKind::CreateFromFile, String::new()),
        ],
        (Setup::Truncate, _, _) => vec![SetupStatement::new(
            StatementKind::Truncate,
            table::truncate_table(d, &phase.table),
        )],
        (Setup::Shared | Setup::Sql, _, _) => Vec::new(),
    };
    let user = std::mem::take(&mut phase.setup_ddl);
    phase.setup_ddl = ours.into_iter().chain(user).collect();
    Some(())
}

/// Refuses what the dialect cannot create as declared (E0503), at the column's type, the
/// primary key or the index; `into` says which cell's endpoint it is.
fn refused(ev: &Eval<'_>, d: Dialect, s: &ast::Schema, def: &TableDef, into: Span) -> Ev<()> {
    let mut ok = true;
    let mut refuse = |span: Span, label: &str, why: String| {
        ev.error(
            Diagnostic::error(
                Code::E0503,
                span,
                format!("{} cannot create this table as declared: {why}", d.server()),
            )
            .label(label.to_string())
            .also(into, format!("the table is created on {} here", d.server())),
        );
        ok = false;
    };
    for (c, (_, ty)) in s.columns.iter().zip(&def.columns) {
        if let Err(why) = ty.in_dialect(d) {
            let at = c.ty.as_ref().map_or(c.name.span, |t| t.span);
            refuse(at, &format!("not a {} type", d.server()), why);
        }
    }
    if let (Some(pk), Dialect::QuestDb) = (s.primary_key.first(), d) {
        refuse(pk.span, "no primary key here", table::no_primary_key(d));
    }
    if let (Some(pk), Dialect::Postgres { hypertable: true }, Some(ts)) =
        (s.primary_key.first(), d, &def.timestamp)
    {
        if !def.primary_key.contains(ts) {
            refuse(
                pk.span,
                &format!("add `{ts}` to the key"),
                format!("a hypertable's primary key includes its time column `{ts}`"),
            );
        }
    }
    if d == Dialect::QuestDb {
        for (k, index) in s.indexes.iter().zip(&def.indexes) {
            if let Err(why) = table::questdb_index(index, def) {
                refuse(k.span, "not an index QuestDB has", why);
            }
        }
    }
    ok.then_some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_runs_on_its_dialect_and_postgres_ones_on_timescaledb_too() {
        assert!(runs_on("postgres", "postgres"));
        assert!(runs_on("postgres", "timescaledb"));
        assert!(runs_on("timescaledb", "timescaledb"));
        assert!(!runs_on("timescaledb", "postgres"));
        assert!(!runs_on("questdb", "postgres"));
        assert!(!runs_on("postgres", "sqlite"));
    }

    #[test]
    fn the_longest_text_is_known_for_constants_picks_and_uuids_only() {
        let s = |t: &str| Value::Str(crate::value::Text::lit(t));
        assert_eq!(longest_text(&Gen::Const { value: s("héllo") }), Some(5));
        assert_eq!(longest_text(&Gen::Uuid), Some(36));
        let pick = Gen::Pick {
            values: vec![s("a"), s("abcd")],
        };
        assert_eq!(longest_text(&pick), Some(4));
        let pattern = Gen::Pattern {
            pattern: "[a-z]{9}".into(),
        };
        assert_eq!(longest_text(&pattern), None);
    }
}
