//! Schemas: columns, their generators and types, cardinality and time, lowered into the
//! generator's programs.

use super::column::{declared_types, lower_column, Shape};
use super::column_refs::check_column_refs;
use super::values::{positive_int, single, text_value};
use crate::check::{Ev, Eval, InstanceId, Scope};
use crate::diag::{Code, Diagnostic};
use crate::plan::*;
use crate::span::Ident;
use crate::syntax::ast::{self, ColumnRole};

pub fn lower_schema(ev: &Eval<'_>, inst: InstanceId, s: &ast::Schema) -> Ev<SchemaPlan> {
    let key = (inst, s.name.name.clone());
    if let Some(done) = ev.schemas.borrow().get(&key) {
        return done.clone();
    }
    let plan = lower_schema_once(ev, inst, s);
    ev.schemas.borrow_mut().insert(key, plan.clone());
    plan
}

pub(super) fn lower_schema_once(
    ev: &Eval<'_>,
    inst: InstanceId,
    s: &ast::Schema,
) -> Ev<SchemaPlan> {
    // Columns inside `for` loops, one per value: the rest sees the schema as if written out.
    let (expanded, mut ok) = super::series_from::written_out(ev, inst, s);
    let s: &ast::Schema = &expanded;
    let mut scope = Scope::new(inst);
    ok &= unique_columns(ev, s);
    let table = match single(ev, &s.table, |e| e.span, "table") {
        Some(e) => text_value(ev, e, &scope, "a table name")?,
        None => s.name.name.clone(),
    };
    ok &= one_key_each(ev, s);
    let types = declared_types(ev, s, &mut scope, &mut ok);
    let mut shape = Shape {
        series: 1,
        time: None,
    };
    let mut columns = Vec::new();
    for (c, declared) in s.columns.iter().zip(&types) {
        if let Some(col) = lower_column(ev, c, declared, &scope, &mut shape, &mut ok) {
            columns.push(col);
        }
    }
    if ok && !check_column_refs(ev, s, &columns) {
        ok = false;
    }
    let rows = schema_rows(ev, s, &shape, &scope, &mut ok);
    let disorder = super::disorder::lower_disorder(ev, s, &columns, &scope, &mut ok);
    if s.columns.is_empty() {
        ev.error(
            Diagnostic::error(
                Code::E0501,
                s.name.span,
                format!("schema `{}` has no columns", s.name),
            )
            .label("empty schema"),
        );
        ok = false;
    }
    let Some(rows) = rows else {
        if ok {
            ev.error(
                Diagnostic::error(Code::E0203, s.name.span, "the row count overflows")
                    .label("too many rows"),
            );
        }
        return None;
    };
    ok.then(|| SchemaPlan {
        name: s.name.name.clone(),
        table,
        series: shape.series,
        time: shape.time,
        rows,
        columns,
        disorder,
    })
}

/// Column names are unique.
fn unique_columns(ev: &Eval<'_>, s: &ast::Schema) -> bool {
    let mut ok = true;
    let mut seen: std::collections::HashMap<&str, &Ident> = std::collections::HashMap::new();
    for c in &s.columns {
        if let Some(first) = seen.get(c.name.name.as_str()) {
            ev.error(
                Diagnostic::error(
                    Code::E0103,
                    c.name.span,
                    format!("column `{}` is declared twice", c.name),
                )
                .label("duplicate column")
                .also(first.span, "first declared here"),
            );
            ok = false;
        }
        seen.entry(&c.name.name).or_insert(&c.name);
    }
    ok
}

/// At most one series key and one designated timestamp.
fn one_key_each(ev: &Eval<'_>, s: &ast::Schema) -> bool {
    let mut ok = true;
    let keys = [
        (
            ColumnRole::Series,
            "series column",
            "a schema has one series key",
            "the series key",
        ),
        (
            ColumnRole::Timestamp,
            "timestamp column",
            "a schema has one designated timestamp",
            "the timestamp",
        ),
    ];
    for (role, what, why, first) in keys {
        let cols: Vec<&ast::Column> = s.columns.iter().filter(|c| c.role == role).collect();
        for extra in cols.iter().skip(1) {
            ev.error(
                Diagnostic::error(Code::E0501, extra.name.span, format!("a second {what}"))
                    .label(why)
                    .also(cols[0].name.span, format!("{first} is declared here")),
            );
            ok = false;
        }
    }
    ok
}

/// Rows are series x timestamps with a time axis, `rows N` without one, or one per series.
fn schema_rows(
    ev: &Eval<'_>,
    s: &ast::Schema,
    shape: &Shape,
    scope: &Scope,
    ok: &mut bool,
) -> Option<u64> {
    let rows_clause = single(ev, &s.rows, |e| e.span, "rows");
    match (&shape.time, rows_clause) {
        (Some(t), None) => shape.series.checked_mul(t.count),
        (Some(_), Some(r)) => {
            ev.error(
                Diagnostic::error(Code::E0501, r.span, "`rows` with a timestamp progression")
                    .label("rows are series x timestamps here; remove this")
                    .note("use `limit` on the ingest block to load fewer rows"),
            );
            *ok = false;
            None
        }
        (None, Some(r)) => {
            let n = positive_int(ev, r, scope, "rows");
            *ok &= n.is_some();
            n
        }
        (None, None) => {
            if !s.columns.iter().any(|c| c.role == ColumnRole::Series) {
                ev.error(
                    Diagnostic::error(
                        Code::E0109,
                        s.name.span,
                        format!("schema `{}` does not say how many rows", s.name),
                    )
                    .label("add `rows N`, or a series key and a timestamp progression"),
                );
                *ok = false;
            }
            Some(shape.series)
        }
    }
}

/// The values `sample(schema.column, k)` draws from: the series key's, drawn by series index
/// (like TSBS's random hosts), or, for any other column, the values its generator can give when
/// they are known when checking (`pick`, `weighted`, `pick_by`, a constant), each once.
pub fn series_domain(ev: &Eval<'_>, inst: InstanceId, s: &ast::Schema, col: &Ident) -> Ev<Domain> {
    let plan = lower_schema(ev, inst, s)?;
    let Some(column) = plan.columns.iter().find(|c| c.name == col.name) else {
        let names: Vec<&str> = plan.columns.iter().map(|c| c.name.as_str()).collect();
        let mut d = Diagnostic::error(
            Code::E0502,
            col.span,
            format!("schema `{}` has no column `{col}`", s.name),
        )
        .label("unknown column")
        .note(format!("its columns: {}", names.join(", ")));
        if let Some(x) = crate::diag::suggest(&col.name, names.iter().copied()) {
            d = d.note(format!("did you mean `{x}`?"));
        }
        return ev.fail(d);
    };
    if column.role == "series" {
        return Some(Domain::Series {
            schema: s.name.name.clone(),
            column: col.name.clone(),
            value: Box::new(column.gen.clone()),
            count: plan.series,
        });
    }
    let values: Option<Vec<crate::value::Value>> = match &column.gen {
        Gen::Pick { values } | Gen::Weighted { values, .. } => Some(values.clone()),
        Gen::PickBy { choices, .. } => Some(choices.iter().flat_map(|(_, v)| v.clone()).collect()),
        Gen::Const { value } if !matches!(value, crate::value::Value::Gen(_)) => {
            Some(vec![value.clone()])
        }
        _ => None,
    };
    let Some(values) = values else {
        return ev.fail(
            Diagnostic::error(
                Code::E0502,
                col.span,
                format!("the values of `{col}` are not known when checking"),
            )
            .label("sample draws from a series key, or a column of `pick`, `weighted`, `pick_by` or a constant")
            .note(format!("`{col}` is {}", column.gen)),
        );
    };
    // Each value once: `pick_by` lists and `weighted` may repeat one.
    let mut distinct: Vec<crate::value::Value> = Vec::with_capacity(values.len());
    for v in values {
        if !distinct.contains(&v) {
            distinct.push(v);
        }
    }
    Some(Domain::List { values: distinct })
}
