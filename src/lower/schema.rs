//! Schemas: columns, their generators and types, cardinality and time, lowered into the
//! generator's programs.

use super::values::{as_gen, duration, positive_int, single, text_value};
use crate::check::{Ev, Eval, InstanceId, Scope};
use crate::diag::{Code, Diagnostic};
use crate::plan::*;
use crate::span::Ident;
use crate::syntax::ast::{self, ColumnGen, ColumnRole, Per, TimeEnd};
use crate::value::Value;

pub(super) const COLUMN_TYPES: &[&str] = &[
    "symbol",
    "varchar",
    "string",
    "long",
    "int",
    "short",
    "byte",
    "double",
    "float",
    "boolean",
    "bool",
    "timestamp",
    "uuid",
];

pub(super) fn column_type(
    ev: &Eval<'_>,
    t: &ast::ColType,
    role: ColumnRole,
) -> Ev<(String, Option<String>)> {
    let name = t.name.name.as_str();
    if !COLUMN_TYPES.contains(&name) {
        let mut d = Diagnostic::error(
            Code::E0206,
            t.name.span,
            format!("unknown column type `{name}`"),
        )
        .label("not a column type")
        .note(format!("column types: {}", COLUMN_TYPES.join(", ")));
        if let Some(s) = crate::diag::suggest(name, COLUMN_TYPES.iter().copied()) {
            d = d.note(format!("did you mean `{s}`?"));
        }
        return ev.fail(d);
    }
    let canonical = match name {
        "string" => "varchar",
        "bool" => "boolean",
        n => n,
    };
    let unit = match (canonical, &t.arg) {
        ("timestamp", None) => Some("us".to_string()),
        ("timestamp", Some(u)) if ["ns", "us", "ms"].contains(&u.name.as_str()) => {
            Some(u.name.clone())
        }
        ("timestamp", Some(u)) => {
            return ev.fail(
                Diagnostic::error(Code::E0206, u.span, format!("unknown timestamp unit `{u}`"))
                    .label("expected ns, us or ms"),
            )
        }
        (_, Some(u)) => {
            return ev.fail(
                Diagnostic::error(Code::E0206, u.span, format!("`{name}` takes no argument"))
                    .label("only timestamp(ns|us|ms) has one"),
            )
        }
        _ => None,
    };
    if role == ColumnRole::Timestamp && canonical != "timestamp" {
        return ev.fail(
            Diagnostic::error(
                Code::E0206,
                t.span,
                "a timestamp column must have type timestamp",
            )
            .label("expected timestamp(ns), timestamp(us) or timestamp(ms)"),
        );
    }
    Some((canonical.to_string(), unit))
}

/// Whether a generated type can fill a column type.
pub(super) fn fits(col: &str, ty: &Ty) -> bool {
    match col {
        "symbol" | "varchar" | "uuid" => *ty == Ty::Str,
        "long" | "int" | "short" | "byte" => matches!(ty, Ty::Long | Ty::Double),
        "double" | "float" => matches!(ty, Ty::Long | Ty::Double),
        "boolean" => *ty == Ty::Bool,
        "timestamp" => *ty == Ty::Timestamp,
        _ => false,
    }
}

pub(super) fn col_type_of(ty: &Ty) -> &'static str {
    match ty {
        Ty::Long => "long",
        Ty::Double => "double",
        Ty::Bool => "boolean",
        Ty::Timestamp => "timestamp",
        _ => "varchar",
    }
}

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
    let mut scope = Scope::new(inst);
    let mut ok = true;
    // Every column is visible to every other one (pick_by), typed by its declaration.
    let mut seen: Vec<&Ident> = Vec::new();
    for c in &s.columns {
        if let Some(first) = seen.iter().find(|i| i.name == c.name.name) {
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
        seen.push(&c.name);
    }
    let table = match single(ev, &s.table, |e| e.span, "table") {
        Some(e) => text_value(ev, e, &scope, "a table name")?,
        None => s.name.name.clone(),
    };
    let series_cols: Vec<&ast::Column> = s
        .columns
        .iter()
        .filter(|c| c.role == ColumnRole::Series)
        .collect();
    let ts_cols: Vec<&ast::Column> = s
        .columns
        .iter()
        .filter(|c| c.role == ColumnRole::Timestamp)
        .collect();
    for extra in series_cols.iter().skip(1) {
        ev.error(
            Diagnostic::error(Code::E0501, extra.name.span, "a second series column")
                .label("a schema has one series key")
                .also(series_cols[0].name.span, "the series key is declared here"),
        );
        ok = false;
    }
    for extra in ts_cols.iter().skip(1) {
        ev.error(
            Diagnostic::error(Code::E0501, extra.name.span, "a second timestamp column")
                .label("a schema has one designated timestamp")
                .also(ts_cols[0].name.span, "the timestamp is declared here"),
        );
        ok = false;
    }
    // Declared column types first, so generators can refer to columns declared later.
    let mut types: Vec<Option<(String, Option<String>)>> = Vec::new();
    for c in &s.columns {
        let t = match &c.ty {
            Some(t) => column_type(ev, t, c.role),
            None if c.role == ColumnRole::Timestamp => {
                Some(("timestamp".to_string(), Some("us".to_string())))
            }
            None => None,
        };
        if t.is_none() && c.ty.is_some() {
            ok = false;
        }
        types.push(t);
        let ty = types
            .last()
            .unwrap()
            .as_ref()
            .map(|(t, _)| match t.as_str() {
                "symbol" | "varchar" | "uuid" => Ty::Str,
                "long" | "int" | "short" | "byte" => Ty::Long,
                "double" | "float" => Ty::Double,
                "boolean" => Ty::Bool,
                _ => Ty::Timestamp,
            });
        scope.locals.push((
            c.name.name.clone(),
            Value::Gen(Box::new(Gen::Column {
                name: c.name.name.clone(),
            })),
            ty,
        ));
    }

    let mut series: u64 = 1;
    let mut time: Option<TimeAxis> = None;
    let mut columns = Vec::new();
    for (c, declared) in s.columns.iter().zip(&types) {
        // Tags and the series key are drawn once per series; fields and the timestamp per row.
        let per_default = match c.role {
            ColumnRole::Field | ColumnRole::Timestamp => Per::Row,
            ColumnRole::Series | ColumnRole::Tag => Per::Series,
        };
        let per = match single(ev, &c.per, |(_, s)| *s, "per") {
            Some((p, span)) => {
                if matches!(c.role, ColumnRole::Series | ColumnRole::Timestamp) {
                    ev.error(
                        Diagnostic::error(
                            Code::E0501,
                            *span,
                            format!("a {} column has no `per`", c.role.as_str()),
                        )
                        .label("remove this"),
                    );
                    ok = false;
                }
                *p
            }
            None => per_default,
        };
        let null_probability = match single(ev, &c.null, |e| e.span, "null") {
            Some(e) => match ev.eval(e, &scope) {
                Some(Value::Percent(p)) if (0.0..=100.0).contains(&p) => p / 100.0,
                Some(Value::Float(f)) if (0.0..=1.0).contains(&f) => f,
                Some(other) => {
                    ev.error(ev.mismatch(e.span, "a probability such as `5%`", &other, &scope));
                    ok = false;
                    0.0
                }
                None => {
                    ok = false;
                    0.0
                }
            },
            None => 0.0,
        };
        if null_probability > 0.0 && matches!(c.role, ColumnRole::Series | ColumnRole::Timestamp) {
            ev.error(
                Diagnostic::error(
                    Code::E0501,
                    c.null[0].span,
                    format!("a {} column cannot be null", c.role.as_str()),
                )
                .label("remove this"),
            );
            ok = false;
        }
        let (gen, ty) = match &c.gen {
            ColumnGen::Expr(e) => {
                let Some(v) = ev.eval(e, &scope) else {
                    ok = false;
                    continue;
                };
                let Some(ty) = ev.value_ty(&v, &scope) else {
                    ev.error(ev.mismatch(e.span, "a generator or a plain value", &v, &scope));
                    ok = false;
                    continue;
                };
                if matches!(ty, Ty::List(_) | Ty::Window | Ty::Duration) {
                    ev.error(
                        Diagnostic::error(
                            Code::E0201,
                            e.span,
                            format!("a column cannot hold {ty}"),
                        )
                        .label("not a column value"),
                    );
                    ok = false;
                    continue;
                }
                if let Gen::Column { name } = as_gen(&v) {
                    ev.error(
                        Diagnostic::error(
                            Code::E0201,
                            e.span,
                            format!("a column cannot copy column `{name}`"),
                        )
                        .label("use pick_by(column, {...}) to depend on another column"),
                    );
                    ok = false;
                    continue;
                }
                (as_gen(&v), ty)
            }
            ColumnGen::Series { expr, var, domain } => {
                let count = match ev.eval(domain, &scope) {
                    Some(Value::Range(lo, hi)) if lo >= 0 && hi > lo => (hi - lo) as u64,
                    Some(Value::Range(lo, hi)) => {
                        ev.error(
                            Diagnostic::error(
                                Code::E0203,
                                domain.span,
                                format!("the series range {lo}..{hi} is empty or negative"),
                            )
                            .label("expected `0..N` with N >= 1"),
                        );
                        ok = false;
                        continue;
                    }
                    Some(other) => {
                        ev.error(ev.mismatch(domain.span, "a range `0..N`", &other, &scope));
                        ok = false;
                        continue;
                    }
                    None => {
                        ok = false;
                        continue;
                    }
                };
                series = count;
                let mut inner = scope.clone();
                let offset = match ev.eval(domain, &scope) {
                    Some(Value::Range(lo, _)) => lo,
                    _ => 0,
                };
                let index = if offset == 0 {
                    Gen::SeriesIndex
                } else {
                    Gen::Arith {
                        op: "+".into(),
                        lhs: Box::new(Gen::SeriesIndex),
                        rhs: Box::new(Gen::Const {
                            value: Value::Int(offset),
                        }),
                    }
                };
                inner.locals.push((
                    var.name.clone(),
                    Value::Gen(Box::new(index)),
                    Some(Ty::Long),
                ));
                let Some(v) = ev.eval(expr, &inner) else {
                    ok = false;
                    continue;
                };
                let Some(ty) = ev.value_ty(&v, &inner) else {
                    ev.error(ev.mismatch(expr.span, "a value per series", &v, &inner));
                    ok = false;
                    continue;
                };
                (as_gen(&v), ty)
            }
            ColumnGen::Every { step, from, end } => {
                let Some(step_v) = duration(ev, step, &scope, false) else {
                    ok = false;
                    continue;
                };
                let start = match ev.eval(from, &scope) {
                    Some(Value::Timestamp(t)) => t,
                    Some(other) => {
                        ev.error(ev.mismatch(from.span, "a timestamp", &other, &scope));
                        ok = false;
                        continue;
                    }
                    None => {
                        ok = false;
                        continue;
                    }
                };
                let span_ns = match end {
                    None => {
                        ev.error(
                            Diagnostic::error(
                                Code::E0109,
                                c.span,
                                "the timestamp progression has no end",
                            )
                            .label("add `for DURATION` or `to TIMESTAMP`"),
                        );
                        ok = false;
                        continue;
                    }
                    Some(TimeEnd::For(d)) => match duration(ev, d, &scope, false) {
                        Some(x) => x,
                        None => {
                            ok = false;
                            continue;
                        }
                    },
                    Some(TimeEnd::To(t)) => match ev.eval(t, &scope) {
                        Some(Value::Timestamp(x)) if x > start => match x.checked_sub(start) {
                            Some(d) => d,
                            None => {
                                ev.error(
                                    Diagnostic::error(
                                        Code::E0203,
                                        t.span,
                                        "the time range is too long",
                                    )
                                    .label("more than about 292 years between start and end"),
                                );
                                ok = false;
                                continue;
                            }
                        },
                        Some(Value::Timestamp(_)) => {
                            ev.error(
                                Diagnostic::error(
                                    Code::E0203,
                                    t.span,
                                    "the end is not after the start",
                                )
                                .label("expected a later timestamp"),
                            );
                            ok = false;
                            continue;
                        }
                        Some(other) => {
                            ev.error(ev.mismatch(t.span, "a timestamp", &other, &scope));
                            ok = false;
                            continue;
                        }
                        None => {
                            ok = false;
                            continue;
                        }
                    },
                };
                // TSBS: epochs = floor((end - start) / interval).
                let count = (span_ns / step_v) as u64;
                if count == 0 {
                    ev.error(
                        Diagnostic::error(
                            Code::E0203,
                            c.span,
                            "the time range is shorter than one interval",
                        )
                        .label("no timestamp would be generated"),
                    );
                    ok = false;
                    continue;
                }
                time = Some(TimeAxis {
                    column: c.name.name.clone(),
                    start: Value::Timestamp(start),
                    step: Value::Duration(step_v),
                    count,
                });
                (
                    Gen::Arith {
                        op: "+".into(),
                        lhs: Box::new(Gen::Const {
                            value: Value::Timestamp(start),
                        }),
                        rhs: Box::new(Gen::Arith {
                            op: "*".into(),
                            lhs: Box::new(Gen::Seq { start: 0, step: 1 }),
                            rhs: Box::new(Gen::Const {
                                value: Value::Duration(step_v),
                            }),
                        }),
                    },
                    Ty::Timestamp,
                )
            }
        };
        let (ty_name, unit) = match declared {
            Some((t, u)) => {
                if !fits(t, &ty) {
                    let span = match &c.gen {
                        ColumnGen::Expr(e) | ColumnGen::Series { expr: e, .. } => e.span,
                        ColumnGen::Every { step, .. } => step.span,
                    };
                    ev.error(
                        Diagnostic::error(
                            Code::E0201,
                            span,
                            format!("column `{}` is {t} but its generator yields {ty}", c.name),
                        )
                        .label(format!("yields {ty}"))
                        .also(
                            c.ty.as_ref().map_or(c.name.span, |t| t.span),
                            "declared here",
                        ),
                    );
                    ok = false;
                }
                (t.clone(), u.clone())
            }
            None => (col_type_of(&ty).to_string(), None),
        };
        columns.push(ColumnPlan {
            name: c.name.name.clone(),
            role: c.role.as_str().to_string(),
            ty: ty_name,
            unit,
            gen,
            per: match per {
                Per::Series => "series".into(),
                Per::Row => "row".into(),
            },
            null_probability,
        });
    }
    if ok && !check_column_refs(ev, s, &columns) {
        ok = false;
    }
    let rows_clause = single(ev, &s.rows, |e| e.span, "rows");
    let rows = match (&time, rows_clause) {
        (Some(t), None) => series.checked_mul(t.count),
        (Some(_), Some(r)) => {
            ev.error(
                Diagnostic::error(Code::E0501, r.span, "`rows` with a timestamp progression")
                    .label("rows are series x timestamps here; remove this")
                    .note("use `limit` on the ingest block to load fewer rows"),
            );
            ok = false;
            None
        }
        (None, Some(r)) => {
            let n = positive_int(ev, r, &scope, "rows");
            ok &= n.is_some();
            n
        }
        (None, None) => {
            if series_cols.is_empty() {
                ev.error(
                    Diagnostic::error(
                        Code::E0109,
                        s.name.span,
                        format!("schema `{}` does not say how many rows", s.name),
                    )
                    .label("add `rows N`, or a series key and a timestamp progression"),
                );
                ok = false;
            }
            Some(series)
        }
    };
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
        series,
        time,
        rows,
        columns,
    })
}

/// Columns may read other columns of the same row, but not themselves (directly or through
/// others), and a column drawn once per series cannot read one drawn per row.
pub(super) fn check_column_refs(ev: &Eval<'_>, s: &ast::Schema, columns: &[ColumnPlan]) -> bool {
    let refs: Vec<Vec<String>> = columns
        .iter()
        .map(|c| {
            let mut v = Vec::new();
            c.gen.columns_used(&mut v);
            v
        })
        .collect();
    let span_of = |name: &str| {
        s.columns
            .iter()
            .find(|c| c.name.name == name)
            .map_or(s.name.span, |c| c.name.span)
    };
    let mut ok = true;
    for (i, c) in columns.iter().enumerate() {
        // Depth-first from this column; a path back to it is a cycle.
        let mut stack: Vec<(usize, Vec<String>)> = vec![(i, vec![c.name.clone()])];
        let mut seen = vec![false; columns.len()];
        while let Some((at, path)) = stack.pop() {
            for r in &refs[at] {
                if *r == c.name {
                    let mut chain = path.clone();
                    chain.push(r.clone());
                    ev.error(
                        Diagnostic::error(
                            Code::E0208,
                            span_of(&c.name),
                            format!("column `{}` depends on itself", c.name),
                        )
                        .label("this column's value needs its own value")
                        .note(format!("the chain: {}", chain.join(" -> "))),
                    );
                    ok = false;
                    stack.clear();
                    break;
                }
                if let Some(j) = columns.iter().position(|x| x.name == *r) {
                    if !seen[j] {
                        seen[j] = true;
                        let mut p = path.clone();
                        p.push(r.clone());
                        stack.push((j, p));
                    }
                }
            }
        }
        if c.per == "series" {
            for r in &refs[i] {
                if let Some(other) = columns.iter().find(|x| x.name == *r && x.per == "row") {
                    ev.error(
                        Diagnostic::error(
                            Code::E0501,
                            span_of(&c.name),
                            format!("`{}` is drawn once per series but reads `{}`, which changes every row", c.name, other.name),
                        )
                        .label("a per-series value cannot depend on a per-row one")
                        .also(span_of(&other.name), "drawn per row")
                        .note(format!("make `{}` per row, or `{}` per series", c.name, other.name)),
                    );
                    ok = false;
                }
            }
        }
    }
    ok
}

/// The values of a series column, for `sample(schema.column, k)`.
pub fn series_domain(ev: &Eval<'_>, inst: InstanceId, s: &ast::Schema, col: &Ident) -> Ev<Domain> {
    let Some(c) = s.columns.iter().find(|c| c.name.name == col.name) else {
        let names: Vec<&str> = s.columns.iter().map(|c| c.name.name.as_str()).collect();
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
    if c.role != ColumnRole::Series {
        return ev.fail(
            Diagnostic::error(
                Code::E0502,
                col.span,
                format!(
                    "`{col}` is a {} column, not the series key",
                    c.role.as_str()
                ),
            )
            .label("sample draws from the series key's values"),
        );
    }
    let plan = lower_schema(ev, inst, s)?;
    let column = plan.columns.iter().find(|x| x.name == col.name)?;
    Some(Domain::Series {
        schema: s.name.name.clone(),
        column: col.name.clone(),
        value: Box::new(column.gen.clone()),
        count: plan.series,
    })
}
