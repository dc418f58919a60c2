//! Clause values every block kind evaluates: counts, durations, rates, words and text, each
//! with the diagnostic a wrong value gets.

use crate::check::{Ev, Eval, Scope};
use crate::diag::{Code, Diagnostic};
use crate::plan::*;
use crate::span::{Ident, Span};
use crate::syntax::ast;
use crate::value::Value;

/// The first of a repeated clause; later ones are errors.
pub(super) fn single<'a, T>(
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

pub(super) fn positive_int(ev: &Eval<'_>, e: &ast::Expr, scope: &Scope, what: &str) -> Ev<u64> {
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
pub(super) fn bounded_int(
    ev: &Eval<'_>,
    e: &ast::Expr,
    scope: &Scope,
    what: &str,
    max: u64,
) -> Ev<u64> {
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

/// A clause value that carries a unit: what the diagnostics of a wrong one say.
pub(super) struct Unit {
    /// "a duration": in "`5` has no unit; a duration is expected".
    name: &'static str,
    /// The error for a value of the right kind that is not positive, and its label; `None`
    /// where such a value is reported as a mismatch.
    not_positive: Option<(&'static str, &'static str)>,
    /// The units to suggest for a bare number `i`.
    write: fn(i64) -> String,
    /// What the mismatch says was expected.
    example: &'static str,
}

pub(super) const DURATION: Unit = Unit {
    name: "a duration",
    not_positive: Some(("a duration here must be positive", "expected more than 0s")),
    write: |i| format!("write `{i}s`, `{i}ms`, `{i}m` or `{i}h`"),
    example: "a duration such as `10s`",
};

pub(super) const RATE: Unit = Unit {
    name: "a rate",
    not_positive: Some(("a rate must be positive", "expected more than 0/s")),
    write: |i| format!("write `{i}/s`, `{i}/m` or `{i}/h`"),
    example: "a rate such as `500/s`",
};

pub(super) const SIZE: Unit = Unit {
    name: "a size",
    not_positive: None,
    write: |i| format!("write e.g. `{i}MiB` or `{i}GiB`"),
    example: "a size such as `4GiB`",
};

/// Reports a value that is not what `unit` wants: `of_kind` when it is of the unit's kind but
/// out of range, else a bare number (with a unit hint) or another kind of value.
pub(super) fn not_unit<T>(
    ev: &Eval<'_>,
    e: &ast::Expr,
    scope: &Scope,
    found: Value,
    of_kind: bool,
    unit: &Unit,
) -> Ev<T> {
    match (found, unit.not_positive) {
        (_, Some((message, label))) if of_kind => {
            ev.fail(Diagnostic::error(Code::E0203, e.span, message).label(label))
        }
        (Value::Int(i), _) => ev.fail(
            Diagnostic::error(
                Code::E0202,
                e.span,
                format!("`{i}` has no unit; {} is expected", unit.name),
            )
            .label((unit.write)(i)),
        ),
        (other, _) => ev.fail(ev.mismatch(e.span, unit.example, &other, scope)),
    }
}

/// A duration, with a unit hint when a bare number was written.
pub(super) fn duration(ev: &Eval<'_>, e: &ast::Expr, scope: &Scope, allow_zero: bool) -> Ev<i64> {
    match ev.eval(e, scope)? {
        Value::Duration(d) if d > 0 || (allow_zero && d == 0) => Some(d),
        v => {
            let of_kind = matches!(v, Value::Duration(_));
            not_unit(ev, e, scope, v, of_kind, &DURATION)
        }
    }
}

/// The lowest rate a clause may ask: one every 11.6 days. Below it the gap between two sends
/// (1 / rate) no longer fits a time span (`1e-300/s` panicked converting it), and no run could
/// send a second request anyway.
pub const MIN_RATE: f64 = 1e-6;

pub(super) fn rate(ev: &Eval<'_>, e: &ast::Expr, scope: &Scope) -> Ev<f64> {
    match ev.eval(e, scope)? {
        Value::Rate(r) if r >= MIN_RATE && r.is_finite() => Some(r),
        Value::Rate(r) if r > 0.0 => ev.fail(
            Diagnostic::error(
                Code::E0203,
                e.span,
                format!("a rate must be at least {MIN_RATE}/s and finite, found {r}/s"),
            )
            .label("below one send every 11.6 days, no schedule can be kept")
            .note("for example: rate 100/s   or   rate 0.5/s"),
        ),
        v => {
            let of_kind = matches!(v, Value::Rate(_));
            not_unit(ev, e, scope, v, of_kind, &RATE)
        }
    }
}

pub(super) fn missing(span: Span, what: &str, example: &str) -> Diagnostic {
    Diagnostic::error(Code::E0109, span, format!("missing `{what}`"))
        .label(format!("this block needs `{what}`"))
        .note(format!("for example: {example}"))
}

pub(super) fn as_gen(v: &Value) -> Gen {
    match v {
        Value::Gen(g) => (**g).clone(),
        v => Gen::Const { value: v.clone() },
    }
}

pub(super) fn text_value(ev: &Eval<'_>, e: &ast::Expr, scope: &Scope, what: &str) -> Ev<String> {
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

pub(super) fn join(p: &[Ident]) -> String {
    p.iter()
        .map(|i| i.name.as_str())
        .collect::<Vec<_>>()
        .join(".")
}

pub(super) fn word(ev: &Eval<'_>, e: &ast::Expr, scope: &Scope, words: &[&str]) -> Ev<String> {
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
