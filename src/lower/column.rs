//! Columns: declared types, `per`, `null`, and the three generator forms (an expression, the
//! series key over a range, a timestamp progression), each lowered into a generator program.

use super::values::{as_gen, duration, single};
use crate::check::{Ev, Eval, Scope, MAX_SERIES};
use crate::diag::{Code, Diagnostic};
use crate::plan::table::MAX_LENGTH;
use crate::plan::*;
use crate::span::Ident;
use crate::syntax::ast::{self, ColumnGen, ColumnRole, Per, TimeEnd};
use crate::value::Value;

pub(super) const COLUMN_TYPES: &[&str] = &[
    "symbol",
    "varchar",
    "string",
    "text",
    "char",
    "long",
    "bigint",
    "int",
    "integer",
    "short",
    "smallint",
    "byte",
    "double",
    "float",
    "real",
    "boolean",
    "bool",
    "timestamp",
    "timestamptz",
    "uuid",
];

/// A declared type: the generator's kind (`varchar`, `long`, `int`, `short`, `float`,
/// `timestamp`, ... as `ColumnPlan::ty` has always named them, so the generator and the
/// encoders read it as before) and a timestamp's unit. The SQL type the table is created with
/// keeps what SQL tells apart (`text`, `varchar(255)`, `integer`): `lower::table`.
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
        "string" | "text" | "char" => "varchar",
        "bool" => "boolean",
        "bigint" => "long",
        "integer" => "int",
        "smallint" => "short",
        "real" => "float",
        "timestamptz" => "timestamp",
        n => n,
    };
    let unit = match (name, &t.arg) {
        ("timestamp" | "timestamptz", None) => Some("us".to_string()),
        ("timestamp", Some(ast::TypeArg::Unit(u)))
            if ["ns", "us", "ms"].contains(&u.name.as_str()) =>
        {
            Some(u.name.clone())
        }
        ("timestamp", Some(u)) => {
            return ev.fail(
                Diagnostic::error(
                    Code::E0206,
                    u.span(),
                    format!("unknown timestamp unit `{u}`"),
                )
                .label("expected ns, us or ms"),
            )
        }
        ("varchar" | "char", Some(ast::TypeArg::Length(n, span))) => {
            if !(1..=u64::from(MAX_LENGTH)).contains(n) {
                return ev.fail(
                    Diagnostic::error(Code::E0203, *span, format!("a length of {n} characters"))
                        .label(format!("expected 1 to {MAX_LENGTH}")),
                );
            }
            None
        }
        ("varchar" | "char", Some(u)) => {
            return ev.fail(
                Diagnostic::error(
                    Code::E0206,
                    u.span(),
                    format!("`{name}({u})` has no length"),
                )
                .label("expected a number of characters, as in `varchar(255)`"),
            )
        }
        (_, Some(u)) => {
            return ev.fail(
                Diagnostic::error(Code::E0206, u.span(), format!("`{name}` takes no argument"))
                    .label("only timestamp(ns|us|ms), varchar(N) and char(N) have one"),
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
            .label("expected timestamp(ns), timestamp(us), timestamp(ms) or timestamptz"),
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

/// Each column's declared type, and the scope in which every column is visible to every other
/// one (`pick_by`), typed by its declaration, so generators can refer to columns declared later.
pub(super) fn declared_types(
    ev: &Eval<'_>,
    s: &ast::Schema,
    scope: &mut Scope,
    ok: &mut bool,
) -> Vec<Option<(String, Option<String>)>> {
    let mut types = Vec::new();
    for c in &s.columns {
        let t = match &c.ty {
            Some(t) => column_type(ev, t, c.role),
            None if c.role == ColumnRole::Timestamp => {
                Some(("timestamp".to_string(), Some("us".to_string())))
            }
            None => None,
        };
        if t.is_none() && c.ty.is_some() {
            *ok = false;
        }
        let ty = t.as_ref().map(|(t, _)| match t.as_str() {
            "symbol" | "varchar" | "uuid" => Ty::Str,
            "long" | "int" | "short" | "byte" => Ty::Long,
            "double" | "float" => Ty::Double,
            "boolean" => Ty::Bool,
            _ => Ty::Timestamp,
        });
        types.push(t);
        scope.push_local(
            c.name.name.clone(),
            Value::Gen(Box::new(Gen::Column {
                name: c.name.name.clone(),
            })),
            ty,
        );
    }
    types
}

/// What a column's generator makes of the schema: its series count or its time axis.
pub(super) struct Shape {
    pub series: u64,
    pub time: Option<TimeAxis>,
}

/// One column; `None` when its generator does not lower (then `ok` is false). Errors that leave
/// the column usable clear `ok` and still return it, so later columns are checked against it.
pub(super) fn lower_column(
    ev: &Eval<'_>,
    c: &ast::Column,
    declared: &Option<(String, Option<String>)>,
    scope: &Scope,
    shape: &mut Shape,
    ok: &mut bool,
) -> Option<ColumnPlan> {
    let per = column_per(ev, c, ok);
    let null_probability = null_probability(ev, c, scope, ok);
    let made = match &c.gen {
        ColumnGen::Expr(e) => expr_gen(ev, e, scope),
        ColumnGen::Series { expr, var, domain } => {
            series_gen(ev, expr, var, domain, scope, &mut shape.series)
        }
        ColumnGen::Every { step, from, end } => {
            every_gen(ev, c, step, from, end.as_ref(), scope, &mut shape.time)
        }
    };
    let Some((gen, ty)) = made else {
        *ok = false;
        return None;
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
                *ok = false;
            }
            (t.clone(), u.clone())
        }
        None => (col_type_of(&ty).to_string(), None),
    };
    Some(ColumnPlan {
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
        from: c.owner.clone(),
    })
}

/// Tags and the series key are drawn once per series; fields and the timestamp per row.
fn column_per(ev: &Eval<'_>, c: &ast::Column, ok: &mut bool) -> Per {
    let Some((p, span)) = single(ev, &c.per, |(_, s)| *s, "per") else {
        return match c.role {
            ColumnRole::Field | ColumnRole::Timestamp => Per::Row,
            ColumnRole::Series | ColumnRole::Tag => Per::Series,
        };
    };
    if matches!(c.role, ColumnRole::Series | ColumnRole::Timestamp) {
        ev.error(
            Diagnostic::error(
                Code::E0501,
                *span,
                format!("a {} column has no `per`", c.role.as_str()),
            )
            .label("remove this"),
        );
        *ok = false;
    }
    *p
}

fn null_probability(ev: &Eval<'_>, c: &ast::Column, scope: &Scope, ok: &mut bool) -> f64 {
    let p = match single(ev, &c.null, |e| e.span, "null") {
        Some(e) => match ev.eval(e, scope) {
            Some(Value::Percent(p)) if (0.0..=100.0).contains(&p) => p / 100.0,
            Some(Value::Float(f)) if (0.0..=1.0).contains(&f) => f,
            Some(other) => {
                ev.error(ev.mismatch(e.span, "a probability such as `5%`", &other, scope));
                *ok = false;
                0.0
            }
            None => {
                *ok = false;
                0.0
            }
        },
        None => 0.0,
    };
    if p > 0.0 && matches!(c.role, ColumnRole::Series | ColumnRole::Timestamp) {
        ev.error(
            Diagnostic::error(
                Code::E0501,
                c.null[0].span,
                format!("a {} column cannot be null", c.role.as_str()),
            )
            .label("remove this"),
        );
        *ok = false;
    }
    p
}

/// `name = EXPR`: a generator or a plain value.
fn expr_gen(ev: &Eval<'_>, e: &ast::Expr, scope: &Scope) -> Option<(Gen, Ty)> {
    let v = ev.eval(e, scope)?;
    let Some(ty) = ev.value_ty(&v, scope) else {
        return ev.fail(ev.mismatch(e.span, "a generator or a plain value", &v, scope));
    };
    if matches!(ty, Ty::List(_) | Ty::Window | Ty::Duration) {
        return ev.fail(
            Diagnostic::error(Code::E0201, e.span, format!("a column cannot hold {ty}"))
                .label("not a column value"),
        );
    }
    if let Gen::Column { name } = as_gen(&v) {
        return ev.fail(
            Diagnostic::error(
                Code::E0201,
                e.span,
                format!("a column cannot copy column `{name}`"),
            )
            .label("use pick_by(column, {...}) to depend on another column"),
        );
    }
    Some((as_gen(&v), ty))
}

/// `name = EXPR for VAR in LO..HI`: the series key, which sets the schema's series count.
fn series_gen(
    ev: &Eval<'_>,
    expr: &ast::Expr,
    var: &Ident,
    domain: &ast::Expr,
    scope: &Scope,
    series: &mut u64,
) -> Option<(Gen, Ty)> {
    let (offset, count) = match ev.eval(domain, scope)? {
        Value::Range(lo, hi) if lo >= 0 && hi > lo => (lo, (hi - lo) as u64),
        Value::Range(lo, hi) => {
            return ev.fail(
                Diagnostic::error(
                    Code::E0203,
                    domain.span,
                    format!("the series range {lo}..{hi} is empty or negative"),
                )
                .label("expected `0..N` with N >= 1"),
            )
        }
        other => return ev.fail(ev.mismatch(domain.span, "a range `0..N`", &other, scope)),
    };
    // The generator computes every series' values before its first row.
    if count > MAX_SERIES {
        return ev.fail(
            Diagnostic::error(
                Code::E0203,
                domain.span,
                format!("the series range has {count} series; a schema may declare at most {MAX_SERIES}"),
            )
            .label("too many series")
            .note("every series' values are computed before the first row is generated"),
        );
    }
    *series = count;
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
    let mut inner = scope.clone();
    inner.push_local(
        var.name.clone(),
        Value::Gen(Box::new(index)),
        Some(Ty::Long),
    );
    let v = ev.eval(expr, &inner)?;
    let Some(ty) = ev.value_ty(&v, &inner) else {
        return ev.fail(ev.mismatch(expr.span, "a value per series", &v, &inner));
    };
    Some((as_gen(&v), ty))
}

/// `ts every STEP from START for SPAN | to END`: the time axis, `start + seq * step`.
fn every_gen(
    ev: &Eval<'_>,
    c: &ast::Column,
    step: &ast::Expr,
    from: &ast::Expr,
    end: Option<&TimeEnd>,
    scope: &Scope,
    time: &mut Option<TimeAxis>,
) -> Option<(Gen, Ty)> {
    let step_v = duration(ev, step, scope, false)?;
    let start = match ev.eval(from, scope)? {
        Value::Timestamp(t) => t,
        other => return ev.fail(ev.mismatch(from.span, "a timestamp", &other, scope)),
    };
    let span_ns = time_span(ev, c, start, end, scope)?;
    // TSBS: epochs = floor((end - start) / interval).
    let count = (span_ns / step_v) as u64;
    if count == 0 {
        return ev.fail(
            Diagnostic::error(
                Code::E0203,
                c.span,
                "the time range is shorter than one interval",
            )
            .label("no timestamp would be generated"),
        );
    }
    *time = Some(TimeAxis {
        column: c.name.name.clone(),
        start: Value::Timestamp(start),
        step: Value::Duration(step_v),
        count,
    });
    let gen = Gen::Arith {
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
    };
    Some((gen, Ty::Timestamp))
}

/// The length of a timestamp progression, from `for SPAN` or `to END`.
fn time_span(
    ev: &Eval<'_>,
    c: &ast::Column,
    start: i64,
    end: Option<&TimeEnd>,
    scope: &Scope,
) -> Option<i64> {
    let t = match end {
        None => {
            return ev.fail(
                Diagnostic::error(Code::E0109, c.span, "the timestamp progression has no end")
                    .label("add `for DURATION` or `to TIMESTAMP`"),
            )
        }
        Some(TimeEnd::For(d)) => return duration(ev, d, scope, false),
        Some(TimeEnd::To(t)) => t,
    };
    match ev.eval(t, scope)? {
        Value::Timestamp(x) if x > start => match x.checked_sub(start) {
            Some(d) => Some(d),
            None => ev.fail(
                Diagnostic::error(Code::E0203, t.span, "the time range is too long")
                    .label("more than about 292 years between start and end"),
            ),
        },
        Value::Timestamp(_) => ev.fail(
            Diagnostic::error(Code::E0203, t.span, "the end is not after the start")
                .label("expected a later timestamp"),
        ),
        other => ev.fail(ev.mismatch(t.span, "a timestamp", &other, scope)),
    }
}
