//! Lowering one cell: schemas into generator programs, queries into templates with binds, and
//! ingest and run blocks into plan phases. Every check that needs the cell's values is here.

use crate::check::targets::{self, Operation};
use crate::check::{Decl, Ev, Eval, Hooks, InstanceId, Scope};
use crate::diag::{Code, Diagnostic};
use crate::plan::*;
use crate::span::{Ident, Span};
use crate::syntax::ast::{self, BinOp, ColumnGen, ColumnRole, ExprKind, Per, TimeEnd};
use crate::value::{Text, Value};

/// The first of a repeated clause; later ones are errors.
fn single<'a, T>(
    ev: &Eval<'_>,
    items: &'a [T],
    span: impl Fn(&T) -> Span,
    what: &str,
) -> Option<&'a T> {
    let first = items.first()?;
    for extra in items.iter().skip(1) {
        ev.error(
            Diagnostic::error(Code::E0108, span(extra), format!("`{what}` is given twice"))
                .label(format!("a second `{what}`"))
                .also(span(first), "the first one is here"),
        );
    }
    Some(first)
}

fn positive_int(ev: &Eval<'_>, e: &ast::Expr, scope: &Scope, what: &str) -> Ev<u64> {
    match ev.eval(e, scope)? {
        Value::Int(i) if i > 0 => Some(i as u64),
        Value::Int(i) => ev.fail(
            Diagnostic::error(
                Code::E0203,
                e.span,
                format!("{what} must be at least 1, found {i}"),
            )
            .label("expected a positive integer"),
        ),
        other => ev.fail(ev.mismatch(
            e.span,
            &format!("{what} (a positive integer)"),
            &other,
            scope,
        )),
    }
}

/// The most workers a phase may have: each holds a connection and its buffers, allocated when
/// the phase starts, so `workers 1_000_000_000` asked for 700 GB before anything was sent.
pub const MAX_WORKERS: u64 = 100_000;
/// The most rows a batch may have: a batch's columns are allocated whole, two per worker.
pub const MAX_BATCH_ROWS: u64 = 1_000_000;

/// A positive count that sizes an allocation at run time, at most `max`.
fn bounded_int(ev: &Eval<'_>, e: &ast::Expr, scope: &Scope, what: &str, max: u64) -> Ev<u64> {
    let n = positive_int(ev, e, scope, what)?;
    if n > max {
        return ev.fail(
            Diagnostic::error(
                Code::E0203,
                e.span,
                format!("{what} may be at most {max}, found {n}"),
            )
            .label(format!("expected 1 to {max}")),
        );
    }
    Some(n)
}

/// A duration, with a unit hint when a bare number was written.
fn duration(ev: &Eval<'_>, e: &ast::Expr, scope: &Scope, allow_zero: bool) -> Ev<i64> {
    match ev.eval(e, scope)? {
        Value::Duration(d) if d > 0 || (allow_zero && d == 0) => Some(d),
        Value::Duration(_) => ev.fail(
            Diagnostic::error(Code::E0203, e.span, "a duration here must be positive")
                .label("expected more than 0s"),
        ),
        Value::Int(i) => ev.fail(
            Diagnostic::error(
                Code::E0202,
                e.span,
                format!("`{i}` has no unit; a duration is expected"),
            )
            .label(format!("write `{i}s`, `{i}ms`, `{i}m` or `{i}h`")),
        ),
        other => ev.fail(ev.mismatch(e.span, "a duration such as `10s`", &other, scope)),
    }
}

fn rate(ev: &Eval<'_>, e: &ast::Expr, scope: &Scope) -> Ev<f64> {
    match ev.eval(e, scope)? {
        Value::Rate(r) if r > 0.0 => Some(r),
        Value::Rate(_) => ev.fail(
            Diagnostic::error(Code::E0203, e.span, "a rate must be positive")
                .label("expected more than 0/s"),
        ),
        Value::Int(i) => ev.fail(
            Diagnostic::error(
                Code::E0202,
                e.span,
                format!("`{i}` has no unit; a rate is expected"),
            )
            .label(format!("write `{i}/s`, `{i}/m` or `{i}/h`")),
        ),
        other => ev.fail(ev.mismatch(e.span, "a rate such as `500/s`", &other, scope)),
    }
}

fn missing(span: Span, what: &str, example: &str) -> Diagnostic {
    Diagnostic::error(Code::E0109, span, format!("missing `{what}`"))
        .label(format!("this block needs `{what}`"))
        .note(format!("for example: {example}"))
}

pub fn lower_cell(ev: &Eval<'_>, hooks: &Hooks) -> Vec<Phase> {
    let mut out = Vec::new();
    for decl in ev.prog.root().decls.values() {
        let phase = match decl {
            Decl::Ingest(i) => lower_ingest(ev, i).map(|p| Phase::Ingest(Box::new(p))),
            Decl::Run(r) => lower_run(ev, r, hooks),
            _ => continue,
        };
        if let Some(p) = phase {
            out.push(p);
        }
    }
    out
}

/// Lowers what no block refers to, so that a module's mistakes show even when it is checked on
/// its own or only partly used.
pub fn check_all_decls(ev: &Eval<'_>, _hooks: &Hooks) {
    for (i, inst) in ev.prog.instances.iter().enumerate() {
        let id = InstanceId(i);
        // A module imported twice is checked once, in its first instance.
        if ev.prog.instances[..i]
            .iter()
            .any(|x| x.module == inst.module)
        {
            continue;
        }
        let module = &ev.prog.modules[inst.module];
        for decl in module.decls.values() {
            match decl {
                Decl::Param(p) => {
                    let was_used = ev.used.borrow().contains(&(id, p.name.name.clone()));
                    let _ = ev.param(id, p);
                    if !was_used {
                        ev.used.borrow_mut().remove(&(id, p.name.name.clone()));
                    }
                }
                Decl::Schema(s) => {
                    let _ = lower_schema(ev, id, s);
                }
                Decl::Query(q) => {
                    let _ = lower_query(ev, id, q, 1.0);
                }
                Decl::Target(t) => {
                    for ep in &t.endpoints {
                        let _ = targets::endpoint_plan(ev, id, t, ep);
                    }
                    for c in &t.counts {
                        let _ = count_endpoint(ev, id, t, c);
                    }
                    if t.endpoints.is_empty() {
                        ev.error(
                            Diagnostic::error(
                                Code::E0109,
                                t.name.span,
                                format!("target `{}` has no endpoint", t.name),
                            )
                            .label("declare at least one endpoint")
                            .note(
                                "for example: pg \"postgres://postgres@127.0.0.1:5432/postgres\"",
                            ),
                        );
                    }
                    let mut seen: Vec<&ast::Endpoint> = Vec::new();
                    for ep in &t.endpoints {
                        if let Some(first) = seen.iter().find(|e| e.name() == ep.name()) {
                            ev.error(
                                Diagnostic::error(
                                    Code::E0103,
                                    ep.kind_span,
                                    format!("endpoint `{}` is declared twice", ep.name()),
                                )
                                .label("give one of them a name with `as NAME`")
                                .also(first.kind_span, "the first one is here"),
                            );
                        }
                        seen.push(ep);
                    }
                }
                _ => {}
            }
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Schemas

const COLUMN_TYPES: &[&str] = &[
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

fn column_type(ev: &Eval<'_>, t: &ast::ColType, role: ColumnRole) -> Ev<(String, Option<String>)> {
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
fn fits(col: &str, ty: &Ty) -> bool {
    match col {
        "symbol" | "varchar" | "uuid" => *ty == Ty::Str,
        "long" | "int" | "short" | "byte" => matches!(ty, Ty::Long | Ty::Double),
        "double" | "float" => matches!(ty, Ty::Long | Ty::Double),
        "boolean" => *ty == Ty::Bool,
        "timestamp" => *ty == Ty::Timestamp,
        _ => false,
    }
}

fn col_type_of(ty: &Ty) -> &'static str {
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

fn lower_schema_once(ev: &Eval<'_>, inst: InstanceId, s: &ast::Schema) -> Ev<SchemaPlan> {
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
fn check_column_refs(ev: &Eval<'_>, s: &ast::Schema, columns: &[ColumnPlan]) -> bool {
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

fn as_gen(v: &Value) -> Gen {
    match v {
        Value::Gen(g) => (**g).clone(),
        v => Gen::Const { value: v.clone() },
    }
}

fn text_value(ev: &Eval<'_>, e: &ast::Expr, scope: &Scope, what: &str) -> Ev<String> {
    match ev.eval(e, scope)? {
        Value::Str(t) => match t.as_lit() {
            Some(s) if !s.is_empty() => Some(s),
            _ => ev.fail(
                Diagnostic::error(Code::E0203, e.span, format!("invalid {what}"))
                    .label("expected literal text"),
            ),
        },
        Value::Symbol(s) => Some(s),
        other => ev.fail(ev.mismatch(e.span, what, &other, scope)),
    }
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

// ------------------------------------------------------------------------------------------------
// Queries

/// The largest placeholder number. A number sizes a query's bind slots, so it must not come
/// from the text unbounded (`$99999999` took 22 GB); 65,535 is as many parameters as
/// PostgreSQL's Bind message can count.
pub const MAX_PLACEHOLDER: u32 = 65_535;

/// `$n` tokens of SQL text that are not placeholders: `$0` or past [`MAX_PLACEHOLDER`].
pub fn bad_placeholders(sql: &str) -> Vec<String> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"') => {
                i += 1;
                while i < b.len() && b[i] != q {
                    i += 1;
                }
            }
            b'$' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                let start = i + 1;
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                if !matches!(sql[start..i].parse::<u32>(), Ok(n) if (1..=MAX_PLACEHOLDER).contains(&n))
                {
                    out.push(sql[start - 1..i].to_string());
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// `$n` placeholders of SQL text, outside quotes and comments.
pub fn placeholders(sql: &str) -> Vec<u32> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"') => {
                i += 1;
                while i < b.len() && b[i] != q {
                    i += 1;
                }
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'$' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                let start = i + 1;
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                if let Ok(n) = sql[start..i].parse::<u32>() {
                    if (1..=MAX_PLACEHOLDER).contains(&n) {
                        out.push(n);
                    }
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

const CSV_TYPES: &[&str] = &[
    "text",
    "varchar",
    "int",
    "bigint",
    "long",
    "double",
    "float8",
    "bool",
    "boolean",
    "timestamp",
    "timestamptz",
];

fn csv_type_ty(t: &str) -> Ty {
    match t {
        "int" | "bigint" | "long" => Ty::Long,
        "double" | "float8" => Ty::Double,
        "bool" | "boolean" => Ty::Bool,
        "timestamp" | "timestamptz" => Ty::Timestamp,
        _ => Ty::Str,
    }
}

pub fn lower_query(ev: &Eval<'_>, inst: InstanceId, q: &ast::Query, weight: f64) -> Ev<QueryPlan> {
    let mut scope = Scope::new(inst);
    scope.binds = Some(Vec::new());
    let mut ok = true;
    let Some(sql_clause) = single(ev, &q.sql, |c| c.span, "sql") else {
        return ev.fail(missing(
            q.name.span,
            "sql",
            "sql \"SELECT count(*) FROM cpu WHERE hostname = $1\"",
        ));
    };
    let sql = match ev.string(&sql_clause.value, &Scope::new(inst)) {
        Some(t) => match t.as_lit() {
            Some(s) => s,
            None => {
                return ev.fail(
                    Diagnostic::error(
                        Code::E0203,
                        sql_clause.value.span,
                        "SQL cannot contain env(...) values",
                    )
                    .label("secrets do not belong in SQL text"),
                )
            }
        },
        None => return None,
    };
    let used = placeholders(&sql);
    // A set, so that the checks below cost the numbers used, not their product.
    let used_set: std::collections::BTreeSet<u32> = used.iter().copied().collect();
    let mut seen = std::collections::HashSet::new();
    let bad: Vec<String> = bad_placeholders(&sql)
        .into_iter()
        .filter(|b| seen.insert(b.clone()))
        .collect();
    if !bad.is_empty() {
        // One diagnostic for the whole SQL, however many there are.
        let shown: Vec<String> = bad.iter().take(3).map(|b| format!("`{b}`")).collect();
        let more = match bad.len() - shown.len() {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        let is = if bad.len() == 1 {
            "is not a placeholder"
        } else {
            "are not placeholders"
        };
        ev.error(
            Diagnostic::error(
                Code::E0601,
                sql_clause.value.span,
                format!("{}{more} {is}", shown.join(", ")),
            )
            .label(format!(
                "placeholders run $1, $2, ... up to ${MAX_PLACEHOLDER}"
            )),
        );
        ok = false;
    }
    let max = used_set.last().copied().unwrap_or(0);
    let gaps = number_ranges((1..=max).filter(|n| !used_set.contains(n)));
    if !gaps.is_empty() {
        ev.error(
            Diagnostic::error(
                Code::E0601,
                sql_clause.value.span,
                format!("the SQL uses ${max} but not {}", describe_ranges(&gaps)),
            )
            .label("placeholders must run $1, $2, ... without gaps"),
        );
        ok = false;
    }
    let label = match single(ev, &q.label, |c| c.span, "label") {
        Some(c) => match ev.eval(&c.value, &scope) {
            Some(Value::Str(t)) => t.redacted(),
            Some(other) => {
                ev.error(ev.mismatch(c.value.span, "a string", &other, &scope));
                ok = false;
                String::new()
            }
            None => {
                ok = false;
                String::new()
            }
        },
        None => q.name.name.clone(),
    };
    let mut lets = Vec::new();
    for l in &q.lets {
        if scope.local(&l.name.name).is_some() {
            ev.error(
                Diagnostic::error(
                    Code::E0103,
                    l.name.span,
                    format!("`{}` is defined twice", l.name),
                )
                .label("duplicate let"),
            );
            ok = false;
            continue;
        }
        let Some(v) = ev.eval(&l.value, &scope) else {
            scope.poisoned.push(l.name.name.clone());
            ok = false;
            continue;
        };
        let Some(ty) = ev.value_ty(&v, &scope) else {
            ev.error(ev.mismatch(l.value.span, "a value or a generator", &v, &scope));
            scope.poisoned.push(l.name.name.clone());
            ok = false;
            continue;
        };
        lets.push((l.name.name.clone(), as_gen(&v)));
        scope.locals.push((
            l.name.name.clone(),
            Value::Gen(Box::new(Gen::Let {
                name: l.name.name.clone(),
            })),
            Some(ty),
        ));
    }
    let mut binds: Vec<BindPlan> = Vec::new();
    let mut csv_plan = None;
    if let Some(c) = single(ev, &q.csv, |c| c.span, "binds from csv") {
        match lower_csv(ev, inst, c) {
            Some(plan) => {
                for (i, (name, t)) in plan.columns.iter().enumerate() {
                    let index = i as u32 + 1;
                    scope.binds.as_mut().unwrap().push((index, csv_type_ty(t)));
                    let _ = name;
                }
                csv_plan = Some(plan);
            }
            None => {
                // Keep the declared columns bound so one CSV problem does not cascade into
                // "no bind" errors for every placeholder.
                for (i, (_, t)) in c.columns.iter().enumerate() {
                    scope
                        .binds
                        .as_mut()
                        .unwrap()
                        .push((i as u32 + 1, csv_type_ty(&t.name)));
                }
                ok = false;
            }
        }
    }
    for b in &q.binds {
        if !used.contains(&b.index) {
            ev.error(
                Diagnostic::error(
                    Code::E0601,
                    b.index_span,
                    format!("the SQL has no `${}`", b.index),
                )
                .label("this bind is never used")
                .also(
                    sql_clause.value.span,
                    format!("placeholders in this SQL: {}", describe_placeholders(&used)),
                ),
            );
            ok = false;
            continue;
        }
        if scope
            .binds
            .as_ref()
            .unwrap()
            .iter()
            .any(|(i, _)| *i == b.index)
        {
            ev.error(
                Diagnostic::error(
                    Code::E0601,
                    b.index_span,
                    format!("`${}` is bound twice", b.index),
                )
                .label(if csv_plan.is_some() {
                    "already bound by a CSV column or an earlier bind"
                } else {
                    "already bound above"
                }),
            );
            ok = false;
            continue;
        }
        // A bind that fails still counts as bound, so one mistake is reported once.
        let Some(v) = ev.eval(&b.value, &scope) else {
            scope.binds.as_mut().unwrap().push((b.index, Ty::Str));
            ok = false;
            continue;
        };
        let Some(ty) = ev.value_ty(&v, &scope) else {
            ev.error(ev.mismatch(b.value.span, "a value or a generator", &v, &scope));
            scope.binds.as_mut().unwrap().push((b.index, Ty::Str));
            ok = false;
            continue;
        };
        if ty == Ty::Window {
            ev.error(
                Diagnostic::error(Code::E0201, b.value.span, "a window is not a bind value")
                    .label("bind its `.start` or `.end`"),
            );
            ok = false;
            continue;
        }
        scope.binds.as_mut().unwrap().push((b.index, ty));
        binds.push(BindPlan {
            index: b.index,
            gen: as_gen(&v),
        });
    }
    let bound: std::collections::BTreeSet<u32> = scope
        .binds
        .as_ref()
        .unwrap()
        .iter()
        .map(|(i, _)| *i)
        .collect();
    let unbound = number_ranges(used_set.iter().copied().filter(|n| !bound.contains(n)));
    if let Some(&(first, _)) = unbound.first() {
        let message = match unbound[..] {
            [(a, b)] if a == b => format!("`${a}` has no bind"),
            _ => format!("binds {} are missing", describe_ranges(&unbound)),
        };
        ev.error(
            Diagnostic::error(Code::E0601, sql_clause.value.span, message)
                .label(format!("add `bind ${first} = ...`"))
                .also(q.name.span, "in this query"),
        );
        ok = false;
    }
    if let Some(plan) = &csv_plan {
        if plan.columns.len() as u32 > max {
            ev.error(
                Diagnostic::error(
                    Code::E0601,
                    q.csv[0].span,
                    format!(
                        "{} CSV columns but the SQL has {} placeholder{}",
                        plan.columns.len(),
                        max,
                        if max == 1 { "" } else { "s" }
                    ),
                )
                .label("CSV columns bind $1, $2, ... in order"),
            );
            ok = false;
        }
    }
    let route = match single(ev, &q.route, |c| c.span, "route by") {
        Some(c) => match ev.eval(&c.value, &scope) {
            Some(v @ Value::Gen(_)) => Some(as_gen(&v)),
            Some(other) => {
                ev.error(
                    Diagnostic::error(
                        Code::E0603,
                        c.value.span,
                        format!("`route by` needs a bind, found {}", other.kind()),
                    )
                    .label("route by a value that changes per query, such as `$1`"),
                );
                ok = false;
                None
            }
            None => {
                ok = false;
                None
            }
        },
        None => None,
    };
    let expects = thresholds(ev, &q.expects, &scope, true);
    ok.then_some(QueryPlan {
        name: q.name.name.clone(),
        label,
        sql,
        placeholders: max,
        lets,
        binds,
        csv: csv_plan,
        route,
        weight,
        expects: expects?,
    })
}

/// Increasing numbers as runs of consecutive ones: 2, 3, 4, 7 is (2, 4), (7, 7).
fn number_ranges(numbers: impl Iterator<Item = u32>) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for n in numbers {
        match out.last_mut() {
            Some((_, hi)) if hi.checked_add(1) == Some(n) => *hi = n,
            _ => out.push((n, n)),
        }
    }
    out
}

/// `$2`, `$4..$9`, ...: a handful of runs, then how many more, so a message stays one line.
fn describe_ranges(ranges: &[(u32, u32)]) -> String {
    const SHOWN: usize = 5;
    let mut parts: Vec<String> = ranges
        .iter()
        .take(SHOWN)
        .map(|&(a, b)| match b - a {
            0 => format!("${a}"),
            1 => format!("${a}, ${b}"),
            _ => format!("${a}..${b}"),
        })
        .collect();
    if ranges.len() > SHOWN {
        parts.push(format!("{} more", ranges.len() - SHOWN));
    }
    match &parts[..] {
        [init @ .., last] if !init.is_empty() => format!("{} and {last}", init.join(", ")),
        _ => parts.join(""),
    }
}

fn describe_placeholders(used: &[u32]) -> String {
    if used.is_empty() {
        return "none".to_string();
    }
    let mut u = used.to_vec();
    u.sort_unstable();
    u.dedup();
    describe_ranges(&number_ranges(u.into_iter()))
}

fn lower_csv(ev: &Eval<'_>, inst: InstanceId, c: &ast::CsvBinds) -> Ev<CsvPlan> {
    let Some(path) = c.path.as_plain() else {
        return ev.fail(
            Diagnostic::error(Code::E0602, c.path.span, "CSV paths cannot interpolate")
                .label("write the path literally"),
        );
    };
    let table = crate::check::read_csv_header(ev, inst, &path, c.path.span)?;
    let mut ok = true;
    let mut columns = Vec::new();
    for (name, ty) in &c.columns {
        if !CSV_TYPES.contains(&ty.name.as_str()) {
            ev.error(
                Diagnostic::error(
                    Code::E0602,
                    ty.span,
                    format!("unknown CSV column type `{ty}`"),
                )
                .label("not a CSV bind type")
                .note(format!("types: {}", CSV_TYPES.join(", "))),
            );
            ok = false;
        }
        if !table.header.contains(&name.name) {
            let mut d = Diagnostic::error(
                Code::E0602,
                name.span,
                format!("`{path}` has no column `{name}`"),
            )
            .label("not in the CSV header")
            .note(format!("the header is: {}", table.header.join(",")));
            if let Some(s) =
                crate::diag::suggest(&name.name, table.header.iter().map(String::as_str))
            {
                d = d.note(format!("did you mean `{s}`?"));
            }
            ev.error(d);
            ok = false;
        }
        columns.push((name.name.clone(), ty.name.clone()));
    }
    if table.rows == 0 {
        ev.error(
            Diagnostic::error(
                Code::E0602,
                c.path.span,
                format!("`{path}` has a header but no rows"),
            )
            .label("nothing to bind"),
        );
        ok = false;
    }
    ok.then_some(CsvPlan {
        path,
        columns,
        rows: table.rows,
    })
}

// ------------------------------------------------------------------------------------------------
// Thresholds and guards

const DURATION_METRICS: &[&str] = &[
    "min", "mean", "median", "p50", "p90", "p95", "p99", "p999", "p9999", "max",
];
const OTHER_METRICS: &[&str] = &[
    "error_rate",
    "achieved_rate",
    "errors",
    "rows",
    "qps",
    "rps",
];

fn thresholds(
    ev: &Eval<'_>,
    expects: &[ast::Expect],
    scope: &Scope,
    in_query: bool,
) -> Ev<Vec<Threshold>> {
    let mut out = Vec::new();
    let mut ok = true;
    for e in expects {
        match e {
            ast::Expect::Status(v, _) => {
                if in_query {
                    ev.error(
                        Diagnostic::error(
                            Code::E0702,
                            e.span(),
                            "`expect status` belongs to request runs",
                        )
                        .label("queries have no HTTP status to expect"),
                    );
                    ok = false;
                    continue;
                }
                let (codes, value) = match ev.eval(v, scope) {
                    Some(Value::Int(c)) => (vec![Value::Int(c)], Value::List(vec![Value::Int(c)])),
                    Some(Value::List(l)) if !l.is_empty() => (l.clone(), Value::List(l)),
                    // A range is half-open, as everywhere: `200..300` is every 2xx.
                    Some(Value::Range(lo, hi)) if lo < hi => (
                        vec![Value::Int(lo), Value::Int(hi - 1)],
                        Value::Range(lo, hi),
                    ),
                    Some(other) => {
                        ev.error(ev.mismatch(
                            v.span,
                            "an HTTP status, a list of them or a range such as `200..300`",
                            &other,
                            scope,
                        ));
                        ok = false;
                        continue;
                    }
                    None => {
                        ok = false;
                        continue;
                    }
                };
                if codes
                    .iter()
                    .any(|c| !matches!(c, Value::Int(x) if (100..=599).contains(x)))
                {
                    ev.error(
                        Diagnostic::error(Code::E0702, v.span, "an HTTP status is 100..599")
                            .label("invalid status"),
                    );
                    ok = false;
                    continue;
                }
                out.push(Threshold {
                    metric: "status".into(),
                    op: "in".into(),
                    value,
                });
            }
            // Body checks are not thresholds: `body_checks` collects them for request runs.
            ast::Expect::Body(..) => {
                if in_query {
                    ev.error(
                        Diagnostic::error(
                            Code::E0702,
                            e.span(),
                            "`expect body` belongs to request runs",
                        )
                        .label("queries have no HTTP body to check"),
                    );
                    ok = false;
                }
            }
            ast::Expect::Condition(cond, _) => {
                let ExprKind::Binary(op, lhs, rhs) = &cond.kind else {
                    ev.error(bad_threshold(cond.span));
                    ok = false;
                    continue;
                };
                let ExprKind::Path(p) = &lhs.kind else {
                    ev.error(bad_threshold(cond.span));
                    ok = false;
                    continue;
                };
                if p.len() != 1
                    || !matches!(
                        op,
                        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne
                    )
                {
                    ev.error(bad_threshold(cond.span));
                    ok = false;
                    continue;
                }
                let metric = p[0].name.as_str();
                if !DURATION_METRICS.contains(&metric) && !OTHER_METRICS.contains(&metric) {
                    let all: Vec<&str> = DURATION_METRICS
                        .iter()
                        .chain(OTHER_METRICS)
                        .copied()
                        .collect();
                    let mut d = Diagnostic::error(
                        Code::E0702,
                        p[0].span,
                        format!("unknown metric `{metric}`"),
                    )
                    .label("not a metric")
                    .note(format!("metrics: {}", all.join(", ")));
                    if let Some(s) = crate::diag::suggest(metric, all.iter().copied()) {
                        d = d.note(format!("did you mean `{s}`?"));
                    }
                    ev.error(d);
                    ok = false;
                    continue;
                }
                let Some(v) = ev.eval(rhs, scope) else {
                    ok = false;
                    continue;
                };
                let value = match (metric, v) {
                    (m, Value::Duration(d)) if DURATION_METRICS.contains(&m) && d >= 0 => {
                        Value::Duration(d)
                    }
                    ("error_rate" | "achieved_rate", Value::Percent(p))
                        if (0.0..=100.0).contains(&p) =>
                    {
                        Value::Percent(p)
                    }
                    ("errors" | "rows", Value::Int(i)) if i >= 0 => Value::Int(i),
                    ("qps" | "rps", Value::Rate(r)) => Value::Rate(r),
                    ("qps" | "rps", Value::Int(i)) => Value::Rate(i as f64),
                    ("qps" | "rps", Value::Float(f)) => Value::Rate(f),
                    (m, other) => {
                        let want = match m {
                            "error_rate" => "a percentage such as `0.1%`",
                            "achieved_rate" => "a percentage such as `80%`",
                            "errors" | "rows" => "a count",
                            "qps" | "rps" => "a rate such as `100/s`",
                            _ => "a duration such as `20ms`",
                        };
                        ev.error(
                            Diagnostic::error(
                                Code::E0202,
                                rhs.span,
                                format!("`{m}` is compared with {want}, found {}", other.kind()),
                            )
                            .label(format!("expected {want}")),
                        );
                        ok = false;
                        continue;
                    }
                };
                out.push(Threshold {
                    metric: metric.to_string(),
                    op: op.as_str().to_string(),
                    value,
                });
            }
        }
    }
    ok.then_some(out)
}

fn bad_threshold(span: Span) -> Diagnostic {
    Diagnostic::error(Code::E0702, span, "a threshold is `METRIC OP VALUE`")
        .label("cannot read this threshold")
        .note("for example: expect p99 < 20ms, expect error_rate < 0.1%, expect rows > 0, expect status 200")
}

fn require(ev: &Eval<'_>, c: &ast::Clause<ast::Expr>, scope: &Scope) -> Ev<Require> {
    let bad = || {
        Diagnostic::error(Code::E0701, c.value.span, "a guard is `rows(TABLE) OP N`")
            .label("cannot read this guard")
            .note("for example: require rows(cpu) > 0")
    };
    let ExprKind::Binary(op, lhs, rhs) = &c.value.kind else {
        return ev.fail(bad());
    };
    let ExprKind::Call { callee, args } = &lhs.kind else {
        return ev.fail(bad());
    };
    if callee.len() != 1 || callee[0].name != "rows" || args.len() != 1 || args[0].name.is_some() {
        return ev.fail(bad());
    }
    if !matches!(
        op,
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne
    ) {
        return ev.fail(bad());
    }
    let a = &args[0].value;
    let table = match &a.kind {
        ExprKind::Path(p) => match ev.resolve_decl(p, scope.inst) {
            Ok((inst, Decl::Schema(s), used)) if used == p.len() => {
                lower_schema(ev, inst, s).map(|s| s.table)?
            }
            _ if p.len() == 1 => {
                // Not a schema: a table by name. Close to a schema's name, it is likely a typo.
                let schemas: Vec<&str> = ev
                    .prog
                    .module_of(scope.inst)
                    .decls
                    .iter()
                    .filter(|(_, d)| matches!(d, Decl::Schema(_)))
                    .map(|(k, _)| k.as_str())
                    .collect();
                if let Some(s) = crate::diag::suggest(&p[0].name, schemas.iter().copied()) {
                    ev.error(
                        Diagnostic::warning(
                            Code::W0004,
                            p[0].span,
                            format!("no schema `{}`; taken as a table name", p[0].name),
                        )
                        .label("counted as the table of this name")
                        .note(format!("did you mean the schema `{s}`?")),
                    );
                }
                p[0].name.clone()
            }
            Ok(_) | Err(_) => {
                return ev.fail(
                    Diagnostic::error(
                        Code::E0104,
                        a.span,
                        format!("`{}` is not a schema", join(p)),
                    )
                    .label("name a schema or write the table as a string"),
                )
            }
        },
        _ => text_value(ev, a, scope, "a table name")?,
    };
    let value = match ev.eval(rhs, scope)? {
        Value::Int(i) => i,
        other => return ev.fail(ev.mismatch(rhs.span, "a row count", &other, scope)),
    };
    Some(Require {
        table,
        op: op.as_str().to_string(),
        value,
    })
}

fn join(p: &[Ident]) -> String {
    p.iter()
        .map(|i| i.name.as_str())
        .collect::<Vec<_>>()
        .join(".")
}

// ------------------------------------------------------------------------------------------------
// Endpoints of blocks

/// The endpoint name a `via` names in this cell.
fn via_name(ev: &Eval<'_>, via: &ast::Via, block: &Ident, scope: &Scope) -> Ev<(String, Span)> {
    match via {
        ast::Via::List(_, span) => {
            let axis = format!("{}.via", block.name);
            match ev.cell.axes.get(&axis) {
                Some(Value::Symbol(s)) => Some((s.clone(), *span)),
                _ => None,
            }
        }
        // Only axes, locals and params stand for an endpoint name; any other name (even one that
        // is also a target's) is the endpoint itself.
        ast::Via::Name(n) => match via_lookup(ev, n, scope) {
            None => Some((n.name.clone(), n.span)),
            Some(Some(Value::Symbol(s))) => Some((s, n.span)),
            Some(Some(Value::Str(t))) => match t.as_lit() {
                Some(s) => Some((s, n.span)),
                None => ev.fail(
                    Diagnostic::error(Code::E0301, n.span, "an endpoint name cannot come from env")
                        .label("not an endpoint"),
                ),
            },
            Some(Some(Value::None)) => ev.fail(
                Diagnostic::error(Code::E0301, n.span, format!("`{n}` is `none` in this cell"))
                    .label("no endpoint to use in the cells where it is filtered out"),
            ),
            Some(Some(other)) => ev.fail(ev.mismatch(n.span, "an endpoint name", &other, scope)),
            Some(None) => None,
        },
    }
}

/// The target an `into` names: the target itself, or an axis, local or param whose value is
/// a target's name (`param db = "questdb"`, then `--param db=victoria`), so one workload can
/// be pointed at another server from the command line.
fn target_name(ev: &Eval<'_>, n: &Ident, scope: &Scope) -> Ev<Ident> {
    let named = |name: String| Some(Ident { name, span: n.span });
    match via_lookup(ev, n, scope) {
        None => named(n.name.clone()),
        Some(Some(Value::Symbol(s))) => named(s),
        Some(Some(Value::Str(t))) => match t.as_lit() {
            Some(s) => named(s),
            None => ev.fail(
                Diagnostic::error(Code::E0201, n.span, "a target name cannot come from env")
                    .label("not a target"),
            ),
        },
        Some(Some(other)) => ev.fail(ev.mismatch(n.span, "a target name", &other, scope)),
        Some(None) => None,
    }
}

fn via_lookup(ev: &Eval<'_>, n: &Ident, scope: &Scope) -> Option<Ev<Value>> {
    let is_value = scope.local(&n.name).is_some()
        || (scope.inst == InstanceId::ROOT && ev.cell.axes.contains_key(&n.name))
        || matches!(
            ev.prog.module_of(scope.inst).decls.get(&n.name),
            Some(Decl::Param(_))
        );
    if is_value {
        ev.lookup(n, scope)
    } else {
        None
    }
}

fn count_endpoint(
    ev: &Eval<'_>,
    tinst: InstanceId,
    t: &ast::Target,
    c: &ast::CountRule,
) -> Ev<(EndpointPlan, String)> {
    let ep = targets::find_endpoint(ev, t, &c.endpoint.name, c.endpoint.span)?;
    let op = match c.language {
        ast::CountLanguage::Sql => Operation::CountSql,
        _ => Operation::CountMetrics,
    };
    targets::check_fit(ev, ep, op, c.endpoint.span)?;
    let plan = targets::endpoint_plan(ev, tinst, t, ep)?;
    let lang = match c.language {
        ast::CountLanguage::Sql => "sql",
        ast::CountLanguage::PromQl => "promql",
        ast::CountLanguage::InfluxQl => "influxql",
    };
    Some((plan, lang.to_string()))
}

/// The count query with `${table}`, `${start}` and `${end}` filled in for this phase.
fn count_query(
    ev: &Eval<'_>,
    tinst: InstanceId,
    q: &ast::StrLit,
    table: &str,
    range: Option<(i64, i64)>,
) -> Ev<String> {
    let mut scope = Scope::new(tinst);
    scope
        .locals
        .push(("table".into(), Value::Str(Text::lit(table)), Some(Ty::Str)));
    let (start, end) = range.unwrap_or((0, 0));
    scope
        .locals
        .push(("start".into(), Value::Timestamp(start), Some(Ty::Timestamp)));
    scope
        .locals
        .push(("end".into(), Value::Timestamp(end), Some(Ty::Timestamp)));
    let t = ev.string(q, &scope)?;
    match t.as_lit() {
        Some(s) => Some(s),
        None => ev.fail(
            Diagnostic::error(
                Code::E0203,
                q.span,
                "a count query cannot contain env(...) values",
            )
            .label("write it literally"),
        ),
    }
}

fn lower_ingest(ev: &Eval<'_>, i: &ast::Ingest) -> Ev<IngestPhase> {
    let scope = Scope::new(InstanceId::ROOT);
    let into = single(ev, &i.into, |x| x.span, "into");
    let rows_clause = single(ev, &i.rows, |x| x.span, "rows");
    let Some(into) = into else {
        return ev.fail(missing(i.name.span, "into", "into questdb via ilp_tcp"));
    };
    let Some(rows_clause) = rows_clause else {
        return ev.fail(missing(i.name.span, "rows", "rows tsbs.cpu"));
    };
    let target_name = target_name(ev, &into.target, &scope)?;
    let (tinst, target, _) =
        targets::resolve_target(ev, InstanceId::ROOT, std::slice::from_ref(&target_name))?;
    let (ep_name, ep_span) = via_name(ev, &into.via, &i.name, &scope)?;
    let ep = targets::find_endpoint(ev, target, &ep_name, ep_span)?;
    targets::check_fit(ev, ep, Operation::Ingest, ep_span)?;
    let endpoint = targets::endpoint_plan(ev, tinst, target, ep)?;

    let (source, schema_rows, range, series_col) = match &rows_clause.source {
        ast::RowsSource::Schema(path) => match ev.resolve_decl(path, InstanceId::ROOT) {
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
                (RowSource::Schema(plan), Some(rows), range, series_col)
            }
            Ok((_, d, _)) => {
                return ev.fail(
                    Diagnostic::error(
                        Code::E0201,
                        path[0].span.to(path[path.len() - 1].span),
                        format!("`{}` is a {}, not a schema", join(path), d.kind()),
                    )
                    .label("expected a schema"),
                )
            }
            Err(d) => return ev.fail(d),
        },
        ast::RowsSource::File(f) => {
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
            let bytes = std::fs::metadata(dir.join(&rel)).ok().map(|m| m.len());
            if bytes.is_some() {
                ev.prog
                    .inputs
                    .record(crate::source::Origin::Disk(dir.join(&rel)));
            }
            if bytes.is_none() {
                ev.error(
                    Diagnostic::warning(Code::W0004, f.span, format!("`{rel}` does not exist yet"))
                        .label("the run will fail unless it is generated first")
                        .note("generate it with `wlrun gen`"),
                );
            }
            (
                RowSource::File {
                    path: rel,
                    format: format.to_string(),
                    bytes,
                },
                None,
                None,
                None,
            )
        }
    };
    let limit = match &rows_clause.limit {
        Some(e) => Some(positive_int(ev, e, &scope, "limit")?),
        None => None,
    };
    let rows_expected = match (schema_rows, limit) {
        (Some(r), Some(l)) => Some(r.min(l)),
        (Some(r), None) => Some(r),
        (None, l) => l,
    };
    let table = match (&into.table, &source) {
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
    let kind = ep.kind;
    let ack = (|| match single(ev, &i.ack, |c| c.span, "ack") {
        None => Some(default_ack(kind)),
        Some(c) => match ev.eval(&c.value, &scope)? {
            Value::None => Some(default_ack(kind)),
            Value::Symbol(s) if s == "publish" || s == "per_batch" => {
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
                            ast::EndpointKind::IlpTcp => {
                                "ILP over TCP has no acknowledgements".to_string()
                            }
                            ast::EndpointKind::Null => {
                                "the null sink acknowledges nothing".to_string()
                            }
                            _ => "only qwp publishes without waiting per batch".to_string(),
                        }),
                    );
                }
                Some(ack)
            }
            other => {
                let d = if let Value::Symbol(w) = &other {
                    Diagnostic::error(
                        Code::E0203,
                        c.value.span,
                        format!("unknown ack policy `{w}`"),
                    )
                    .label("expected publish, per_batch or none")
                } else {
                    ev.mismatch(
                        c.value.span,
                        "an ack policy (publish, per_batch or none)",
                        &other,
                        &scope,
                    )
                };
                ev.fail(d)
            }
        },
    })();
    let setup = match single(ev, &i.setup, |c| c.span, "setup") {
        None => Some(Setup::Recreate),
        Some(c) => word(ev, &c.value, &scope, &["recreate", "truncate", "shared"]).map(|w| match w
            .as_str()
        {
            "truncate" => Setup::Truncate,
            "shared" => Setup::Shared,
            _ => Setup::Recreate,
        }),
    };
    let teardown = match single(ev, &i.teardown, |c| c.span, "teardown") {
        None => Some(Teardown::Keep),
        Some(c) => word(ev, &c.value, &scope, &["keep", "drop"]).map(|w| match w.as_str() {
            "drop" => Teardown::Drop,
            _ => Teardown::Keep,
        }),
    };
    // Default budget: 2 GiB of pre-encoded batches, across all workers of the cell.
    let replay_budget = match single(ev, &i.replay, |r| r.span, "replay") {
        None => Some(None),
        Some(r) => match &r.budget {
            None => Some(Some(2u64 << 30)),
            Some(e) => match ev.eval(e, &scope) {
                Some(Value::Size(b)) if b > 0 => Some(Some(b)),
                Some(Value::Int(i)) => ev.fail(
                    Diagnostic::error(
                        Code::E0202,
                        e.span,
                        format!("`{i}` has no unit; a size is expected"),
                    )
                    .label(format!("write e.g. `{i}MiB` or `{i}GiB`")),
                ),
                Some(other) => {
                    ev.fail(ev.mismatch(e.span, "a size such as `4GiB`", &other, &scope))
                }
                None => None,
            },
        },
    };
    let verify = match single(ev, &i.verify, |v| v.span, "verify") {
        None => Some(None),
        Some(v) => lower_verify(ev, v, tinst, target, ep, &endpoint, &table, range).map(Some),
    };
    let ingest_duration = match single(ev, &i.duration, |c| c.span, "duration") {
        None => Some(None),
        Some(c) => duration(ev, &c.value, &scope, false).map(|d| Some(Value::Duration(d))),
    };
    // Every clause above is checked before giving up, so all their mistakes show at once.
    let (
        Some(batch_rows),
        Some(workers),
        Some(ack),
        Some(setup),
        Some(teardown),
        Some(verify),
        Some(ingest_duration),
    ) = (
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
    let routing = match (&series_col, &source) {
        (Some(c), _) => format!("fnv1a64({c}) % workers"),
        (None, RowSource::File { .. }) => "fnv1a64(first tag) % workers".to_string(),
        (None, RowSource::Schema(_)) => "fnv1a64(row index) % workers".to_string(),
    };
    if setup == Setup::Shared && range.is_none() {
        ev.error(
            Diagnostic::error(
                Code::E0501,
                i.setup[0].value.span,
                "`setup shared` counts rows inside the cell's time range",
            )
            .label("the rows have no timestamp progression")
            .note("use `setup recreate` or `setup truncate`"),
        );
        return None;
    }
    let phase = IngestPhase {
        name: i.name.name.clone(),
        endpoint,
        table,
        source,
        rows_expected,
        bytes_expected: None,
        batch_rows,
        workers,
        routing,
        ack,
        setup,
        teardown,
        verify,
        calibrate: !i.calibrate.is_empty(),
        replay_budget: replay_budget?,
        duration: ingest_duration,
    };
    targets::check_store_admin(
        ev,
        &phase,
        i.setup.first().map(|c| c.value.span),
        i.teardown.first().map(|c| c.value.span),
        into.span,
    )?;
    Some(phase)
}

fn default_ack(kind: ast::EndpointKind) -> Ack {
    match kind {
        ast::EndpointKind::IlpTcp | ast::EndpointKind::Null => Ack::None,
        ast::EndpointKind::Qwp => Ack::Publish,
        _ => Ack::PerBatch,
    }
}

fn word(ev: &Eval<'_>, e: &ast::Expr, scope: &Scope, words: &[&str]) -> Ev<String> {
    match ev.eval(e, scope)? {
        Value::Symbol(s) if words.contains(&s.as_str()) => Some(s),
        Value::Symbol(s) => {
            let mut d = Diagnostic::error(
                Code::E0203,
                e.span,
                format!("`{s}` is not one of {}", words.join(", ")),
            )
            .label(format!("expected {}", words.join(", ")));
            if let Some(w) = crate::diag::suggest(&s, words.iter().copied()) {
                d = d.note(format!("did you mean `{w}`?"));
            }
            ev.fail(d)
        }
        other => ev.fail(ev.mismatch(
            e.span,
            &format!("one of {}", words.join(", ")),
            &other,
            scope,
        )),
    }
}

#[allow(clippy::too_many_arguments)]
fn lower_verify(
    ev: &Eval<'_>,
    v: &ast::Verify,
    tinst: InstanceId,
    target: &ast::Target,
    ingest_ep: &ast::Endpoint,
    ingest_plan: &EndpointPlan,
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
        query: format!("SELECT count(*) FROM {table}"),
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
                        "name an endpoint: `verify visible via TARGET.ENDPOINT`",
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
                        .label("remove `verify visible` for null cells"),
                );
            }
            ev.fail(
                Diagnostic::error(Code::E0306, v.span, format!("target `{}` has no way to count rows", target.name))
                    .label("nothing to verify with")
                    .also(target.name.span, "add a count rule to this target")
                    .note("for example: count rows via pg sql \"SELECT count(*) FROM ${table}\", or count samples via http promql \"...\""),
            )
        }
    }
}

fn lower_run(ev: &Eval<'_>, r: &ast::Run, hooks: &Hooks) -> Option<Phase> {
    let scope = Scope::new(InstanceId::ROOT);
    let Some(against) = single(ev, &r.against, |a| a.span, "against") else {
        return ev.fail(missing(r.name.span, "against", "against questdb via pg"));
    };
    let queries = single(ev, &r.queries, |c| c.span, "queries");
    let request = single(ev, &r.request, |c| c.span, "request");
    let op = match (queries, request) {
        (Some(_), Some(rq)) => {
            return ev.fail(
                Diagnostic::error(
                    Code::E0701,
                    rq.span,
                    "a run has either `queries` or `request`, not both",
                )
                .label("split this into two runs"),
            )
        }
        (None, None) => {
            return ev.fail(
                Diagnostic::error(
                    Code::E0109,
                    r.name.span,
                    "a run needs `queries` or `request`",
                )
                .label("nothing to run")
                .note("for example: queries tsbsq.*   or   request pull.request"),
            )
        }
        (Some(_), None) => Operation::Queries,
        (None, Some(_)) => Operation::Requests,
    };
    let (tinst, target, used) = targets::resolve_target(ev, InstanceId::ROOT, &against.target)?;
    let (ep_name, ep_span) = match (&against.via, used == against.target.len()) {
        (Some(via), true) => via_name(ev, via, &r.name, &scope)?,
        (None, false) if used == against.target.len() - 1 => {
            let last = &against.target[against.target.len() - 1];
            (last.name.clone(), last.span)
        }
        (Some(_), false) => {
            return ev.fail(
                Diagnostic::error(
                    Code::E0701,
                    against.span,
                    "name the endpoint once: `against T.E` or `against T via E`",
                )
                .label("endpoint given twice"),
            )
        }
        _ => {
            return ev.fail(
                Diagnostic::error(Code::E0109, against.span, "which endpoint?")
                    .label("add `via ENDPOINT` or write `against TARGET.ENDPOINT`"),
            )
        }
    };
    let ep = targets::find_endpoint(ev, target, &ep_name, ep_span)?;
    targets::check_fit(ev, ep, op, ep_span)?;
    let endpoint = targets::endpoint_plan(ev, tinst, target, ep)?;

    // Each clause is checked even when an earlier one failed, so every mistake shows at once.
    let workers = match single(ev, &r.workers, |c| c.span, "workers") {
        Some(c) => bounded_int(ev, &c.value, &scope, "workers", MAX_WORKERS),
        None => Some(1),
    };
    let count = single(ev, &r.count, |c| c.span, "count");
    let run_duration = single(ev, &r.duration, |c| c.span, "duration");
    let stop = match (count, run_duration) {
        (Some(c), None) => {
            positive_int(ev, &c.value.count, &scope, "the count").map(|n| Stop::Count {
                count: n,
                per_query: c.value.per_query,
            })
        }
        (None, Some(d)) => duration(ev, &d.value, &scope, false).map(|x| Stop::Duration {
            duration: Value::Duration(x),
        }),
        (Some(_), Some(d)) => ev.fail(
            Diagnostic::error(
                Code::E0701,
                d.span,
                "a run stops after a `count` or a `duration`, not both",
            )
            .label("remove one"),
        ),
        (None, None) => ev.fail(missing(
            r.name.span,
            "count",
            "count 1000 per query   or   duration 60s",
        )),
    };
    let stop = match (stop, op) {
        (
            Some(Stop::Count {
                per_query: true, ..
            }),
            Operation::Requests,
        ) => ev.fail(
            Diagnostic::error(
                Code::E0701,
                r.count[0].span,
                "`per query` needs a query run",
            )
            .label("request runs have no queries"),
        ),
        (s, _) => s,
    };
    let warmup = match single(ev, &r.warmup, |c| c.span, "warmup") {
        None => Some(None),
        Some(c) => match ev.eval(&c.value, &scope) {
            Some(v @ Value::Int(i)) if i >= 0 => Some(Some(v)),
            Some(v @ Value::Duration(d)) if d >= 0 => Some(Some(v)),
            Some(other) => {
                ev.fail(ev.mismatch(c.value.span, "a warm-up count or duration", &other, &scope))
            }
            None => None,
        },
    };
    let repeat = match single(ev, &r.repeat, |c| c.span, "repeat") {
        Some(c) => positive_int(ev, &c.value, &scope, "repeat"),
        None => Some(1),
    };
    let stop_after_errors = match single(ev, &r.stop_after, |c| c.span, "stop after") {
        Some(c) => positive_int(ev, &c.value, &scope, "`stop after N errors`").map(Some),
        None => Some(None),
    };
    let load = match single(ev, &r.rate, |c| c.span, "rate") {
        None => Some(Load::Closed),
        Some(c) => rate(ev, &c.value.rate, &scope).map(|x| Load::Open {
            rate: Value::Rate(x),
            arrival: match c.value.arrival {
                Some(ast::Arrival::Poisson) => "poisson".into(),
                _ => "fixed".into(),
            },
        }),
    };
    let expects = thresholds(ev, &r.expects, &scope, false);
    let (
        Some(workers),
        Some(stop),
        Some(warmup),
        Some(repeat),
        Some(stop_after_errors),
        Some(load),
        Some(expects),
    ) = (
        workers,
        stop,
        warmup,
        repeat,
        stop_after_errors,
        load,
        expects,
    )
    else {
        // Still check the queries, so their mistakes show too.
        if let Some(sel) = queries {
            for s in &sel.value {
                if let Some(qs) = select_queries(ev, s) {
                    for (qi, q) in qs {
                        let _ = lower_query(ev, qi, q, 1.0);
                    }
                }
            }
        }
        return None;
    };
    let list_via = matches!(against.via, Some(ast::Via::List(..)));
    if let Some(span) = r.check_same.first() {
        if !list_via {
            ev.error(
                Diagnostic::error(
                    Code::E0701,
                    *span,
                    "`check same results across endpoints` needs several endpoints",
                )
                .label("this run uses one endpoint")
                .note("write `against T via [pg, http, qwp]`"),
            );
            return None;
        }
        if op == Operation::Requests {
            ev.error(
                Diagnostic::error(Code::E0701, *span, "result checks apply to query runs")
                    .label("not a query run"),
            );
            return None;
        }
    }
    match op {
        Operation::Queries => {
            if let Some(e) = r
                .expects
                .iter()
                .find(|e| matches!(e, ast::Expect::Body(..)))
            {
                ev.error(
                    Diagnostic::error(
                        Code::E0702,
                        e.span(),
                        "`expect body` belongs to request runs",
                    )
                    .label("queries have no HTTP body to check"),
                );
                return None;
            }
            if expects.iter().any(|t| t.metric == "status") {
                ev.error(
                    Diagnostic::error(
                        Code::E0702,
                        r.expects
                            .iter()
                            .find(|e| matches!(e, ast::Expect::Status(..)))
                            .map_or(r.name.span, |e| e.span()),
                        "`expect status` belongs to request runs",
                    )
                    .label("queries have no HTTP status to expect"),
                );
                return None;
            }
            let sel = queries.expect("query run");
            let mut plans = Vec::new();
            let mut weighted = false;
            let mut ok = true;
            for s in &sel.value {
                let weight = match &s.weight {
                    Some(w) => {
                        weighted = true;
                        match ev.eval(w, &scope) {
                            Some(Value::Int(i)) if i > 0 => i as f64,
                            Some(Value::Float(f)) if f > 0.0 => f,
                            Some(other) => {
                                ev.error(ev.mismatch(w.span, "a positive weight", &other, &scope));
                                ok = false;
                                continue;
                            }
                            None => {
                                ok = false;
                                continue;
                            }
                        }
                    }
                    None => 1.0,
                };
                for (qinst, q) in select_queries(ev, s)? {
                    match lower_query(ev, qinst, q, weight) {
                        Some(p) => plans.push(p),
                        None => ok = false,
                    }
                }
            }
            let mut require_plans = Vec::new();
            for c in &r.require {
                match require(ev, c, &scope) {
                    Some(x) => require_plans.push(x),
                    None => ok = false,
                }
            }
            if !ok {
                return None;
            }
            Some(Phase::Queries(QueryPhase {
                name: r.name.name.clone(),
                endpoint,
                queries: plans,
                mix: if weighted {
                    "weighted".into()
                } else {
                    "round_robin".into()
                },
                workers,
                load,
                stop,
                warmup,
                repeat,
                stop_after_errors,
                require: require_plans,
                expects,
                check_same_results: !r.check_same.is_empty(),
            }))
        }
        _ => {
            let rq = request.expect("request run");
            let mut require_plans = Vec::new();
            for c in &r.require {
                require_plans.push(require(ev, c, &scope)?);
            }
            let body = body_checks(ev, &r.expects, &scope)?;
            let request = match &rq.value {
                ast::RequestSpec::Hook(path) => hook_request(ev, rq.span, path, hooks)?,
                ast::RequestSpec::Fixed { method, path, body } => {
                    if endpoint.kind != "http" {
                        return ev.fail(
                            Diagnostic::error(
                                Code::E0302,
                                rq.span,
                                format!(
                                    "a fixed HTTP request needs an `http` endpoint, not `{}`",
                                    endpoint.kind
                                ),
                            )
                            .label("an HTTP request")
                            .note("SQL endpoints take requests from a hook: `#{sql, binds}`"),
                        );
                    }
                    let path = match ev.eval(path, &scope)? {
                        Value::Str(t) if t.as_lit().is_some_and(|p| p.starts_with('/')) => {
                            t.as_lit().unwrap_or_default().to_string()
                        }
                        Value::Str(_) => {
                            return ev.fail(
                                Diagnostic::error(
                                    Code::E0202,
                                    path.span,
                                    "a request path starts with `/`",
                                )
                                .label("for example \"/query\""),
                            )
                        }
                        other => {
                            return ev.fail(ev.mismatch(path.span, "a path string", &other, &scope))
                        }
                    };
                    let body =
                        match body {
                            None => None,
                            Some(b) => match ev.eval(b, &scope)? {
                                Value::Str(t) => match t.as_lit() {
                                    Some(p) => Some(p.to_string()),
                                    None => return ev.fail(
                                        Diagnostic::error(
                                            Code::E0202,
                                            b.span,
                                            "a request body cannot carry a secret from `env(...)`",
                                        )
                                        .label("bodies are printed in plans"),
                                    ),
                                },
                                other => {
                                    return ev.fail(ev.mismatch(
                                        b.span,
                                        "a body string",
                                        &other,
                                        &scope,
                                    ))
                                }
                            },
                        };
                    RequestPlan::Fixed {
                        method: method.clone(),
                        path,
                        body,
                    }
                }
            };
            Some(Phase::Requests(RequestPhase {
                name: r.name.name.clone(),
                endpoint,
                request,
                workers,
                load,
                stop,
                warmup,
                repeat,
                stop_after_errors,
                require: require_plans,
                expects,
                body,
            }))
        }
    }
}

/// `expect body ...` of a request run.
fn body_checks(ev: &Eval<'_>, expects: &[ast::Expect], scope: &Scope) -> Ev<Vec<BodyExpect>> {
    let mut out = Vec::new();
    for e in expects {
        let ast::Expect::Body(check, _) = e else {
            continue;
        };
        out.push(match check {
            ast::BodyCheck::Json(None) => BodyExpect::Json,
            ast::BodyCheck::Json(Some(s)) if s == "array" => BodyExpect::JsonArray,
            ast::BodyCheck::Json(Some(_)) => BodyExpect::JsonObject,
            ast::BodyCheck::Contains(x) => match ev.eval(x, scope)? {
                Value::Str(t) if t.as_lit().is_some_and(|p| !p.is_empty()) => {
                    BodyExpect::Contains(t.as_lit().unwrap_or_default().to_string())
                }
                other => return ev.fail(ev.mismatch(x.span, "a non-empty string", &other, scope)),
            },
        });
    }
    Some(out)
}

/// `request HOOK.FUNCTION`: the hook, checked to define the function with one parameter.
fn hook_request(ev: &Eval<'_>, span: Span, path: &[Ident], hooks: &Hooks) -> Ev<RequestPlan> {
    if path.len() < 2 {
        return ev.fail(
            Diagnostic::error(
                Code::E0105,
                span,
                "name a hook function: `request HOOK.FUNCTION`",
            )
            .label("expected HOOK.FUNCTION"),
        );
    }
    let (hook_path, func) = path.split_at(path.len() - 1);
    let func = &func[0];
    let (hinst, hook) = match ev.resolve_decl(hook_path, InstanceId::ROOT) {
        Ok((hi, Decl::Hook(h), used)) if used == hook_path.len() => (hi, h),
        Ok((_, d, _)) => {
            return ev.fail(
                Diagnostic::error(
                    Code::E0201,
                    hook_path[0].span,
                    format!("`{}` is a {}, not a hook", join(hook_path), d.kind()),
                )
                .label("expected a hook"),
            )
        }
        Err(d) => return ev.fail(d),
    };
    let module = ev.prog.instance(hinst).module;
    let info = hooks.get(&(module, hook.name.name.clone()))?;
    let Some((_, arity)) = info.functions.iter().find(|(n, _)| *n == func.name) else {
        return ev.fail(
            Diagnostic::error(
                Code::E0802,
                func.span,
                format!("hook `{}` defines no function `{}`", hook.name, func.name),
            )
            .label("not in the script")
            .note(format!(
                "its functions: {}",
                info.functions
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        );
    };
    if *arity != 1 {
        return ev.fail(
            Diagnostic::error(
                Code::E0802,
                func.span,
                format!(
                    "`{}` takes {arity} parameters; a request function takes one (ctx)",
                    func.name
                ),
            )
            .label("wrong number of parameters"),
        );
    }
    Some(RequestPlan::Hook {
        hook: HookPlan {
            name: hook.name.name.clone(),
            path: info.path.clone(),
            functions: info.functions.iter().map(|(n, _)| n.clone()).collect(),
            file: info.file.clone(),
            source: info.source.clone(),
        },
        function: func.name.clone(),
        response: info
            .functions
            .iter()
            .any(|(n, a)| n == "response" && *a == 2),
    })
}

/// The queries a selector names: one query, or every query of a module with `alias.*`.
fn select_queries<'p>(
    ev: &Eval<'p>,
    s: &ast::QuerySelector,
) -> Ev<Vec<(InstanceId, &'p ast::Query)>> {
    if s.glob {
        let mut inst = InstanceId::ROOT;
        for part in &s.path {
            match ev.prog.module_of(inst).decls.get(&part.name) {
                Some(Decl::Import(_)) => inst = ev.prog.instance(inst).imports[&part.name],
                Some(d) => {
                    return ev.fail(
                        Diagnostic::error(
                            Code::E0105,
                            part.span,
                            format!("`{part}` is a {}, not an import", d.kind()),
                        )
                        .label("`.*` takes every query of an imported module"),
                    )
                }
                None => {
                    return ev.fail(
                        Diagnostic::error(
                            Code::E0104,
                            part.span,
                            format!("unknown import `{part}`"),
                        )
                        .label("not declared"),
                    )
                }
            }
        }
        let qs: Vec<(InstanceId, &ast::Query)> = ev
            .prog
            .module_of(inst)
            .decls
            .values()
            .filter_map(|d| match d {
                Decl::Query(q) => Some((inst, q)),
                _ => None,
            })
            .collect();
        if qs.is_empty() {
            return ev.fail(
                Diagnostic::error(Code::E0701, s.span, "this module declares no query")
                    .label("nothing to run"),
            );
        }
        return Some(qs);
    }
    match ev.resolve_decl(&s.path, InstanceId::ROOT) {
        Ok((qi, Decl::Query(q), used)) if used == s.path.len() => Some(vec![(qi, q)]),
        Ok((_, d, _)) => ev.fail(
            Diagnostic::error(
                Code::E0201,
                s.span,
                format!("`{}` is a {}, not a query", join(&s.path), d.kind()),
            )
            .label("expected a query"),
        ),
        Err(d) => ev.fail(d),
    }
}
