//! The random generators: sequences, distributions and draws from lists, each checking its
//! parameters and returning the plan `Gen` with every parameter resolved.

use super::{gen, num, Args, Call};
use crate::check::eval::Ev;
use crate::diag::{Code, Diagnostic};
use crate::plan::Gen;
use crate::value::Value;

/// The most values one `sample` draws: every query allocates them and writes them into its SQL
/// as a list, so the count must not come from the text unbounded.
pub const MAX_SAMPLE: u64 = 10_000;

/// `seq(start?, step?)`: `start + step * i`.
pub(super) fn seq(c: &Call, a: &Args) -> Ev<Value> {
    let start = c.opt_int(a[0], 0)?;
    let step = c.opt_int(a[1], 1)?;
    gen(Gen::Seq { start, step })
}

/// `uniform(lo, hi)`: integers, numbers or timestamps in `[lo, hi)`; mixed integer and number
/// bounds make a number range.
pub(super) fn uniform(c: &Call, a: &Args) -> Ev<Value> {
    let (ev, scope) = (c.ev, c.scope);
    let (lo, hi) = (c.value(a[0])?, c.value(a[1])?);
    let (e0, e1) = (a[0].expect("required"), a[1].expect("required"));
    let ok_order = match (&lo, &hi) {
        (Value::Int(x), Value::Int(y)) => x < y,
        (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => num(&lo) < num(&hi),
        (Value::Timestamp(x), Value::Timestamp(y)) => x < y,
        (Value::Int(_) | Value::Float(_) | Value::Timestamp(_), _) => {
            return ev.fail(ev.mismatch(
                e1.span,
                &format!("the same kind as `lo` ({})", lo.kind()),
                &hi,
                scope,
            ))
        }
        _ => {
            return ev.fail(ev.mismatch(e0.span, "an integer, a number or a timestamp", &lo, scope))
        }
    };
    if !ok_order {
        return ev.fail(
            Diagnostic::error(
                Code::E0203,
                e0.span.to(e1.span),
                format!("uniform({lo}, {hi}) is empty"),
            )
            .label("`lo` must be less than `hi` (the range is [lo, hi))"),
        );
    }
    // Mixed integer and float bounds make a float range.
    let (lo, hi) = match (&lo, &hi) {
        (Value::Int(_), Value::Float(_)) | (Value::Float(_), Value::Int(_)) => {
            (Value::Float(num(&lo)), Value::Float(num(&hi)))
        }
        _ => (lo, hi),
    };
    gen(Gen::Uniform { lo, hi })
}

/// `normal(mean, stddev)`.
pub(super) fn normal(c: &Call, a: &Args) -> Ev<Value> {
    let ev = c.ev;
    let mean = c.number(a[0])?;
    let stddev = c.number(a[1])?;
    if stddev < 0.0 {
        return ev.fail(
            Diagnostic::error(
                Code::E0203,
                a[1].expect("required").span,
                "a negative standard deviation",
            )
            .label("must be 0 or more"),
        );
    }
    gen(Gen::Normal { mean, stddev })
}

/// The most decimals a walk's values keep: beyond 15, a double has no more digits to cut.
const MAX_DECIMALS: i64 = 15;

/// `walk(start, step, clamp?, decimals?)`: a random walk, clamped to `lo..hi` or `[lo, hi]`,
/// its values emitted truncated toward zero to `decimals` (TSBS writes its walks so).
pub(super) fn walk(c: &Call, a: &Args) -> Ev<Value> {
    let (ev, scope) = (c.ev, c.scope);
    let start = c.gen_numeric(a[0])?;
    let step = c.gen_numeric(a[1])?;
    let (min, max) = match a[2] {
        None => (f64::NEG_INFINITY, f64::INFINITY),
        Some(e) => match ev.eval(e, scope)? {
            Value::Range(lo, hi) if lo < hi => (lo as f64, hi as f64),
            Value::List(v) if v.len() == 2 && num(&v[0]) < num(&v[1]) => (num(&v[0]), num(&v[1])),
            other => {
                return ev.fail(
                    Diagnostic::error(Code::E0203, e.span, format!("invalid clamp {other}"))
                        .label("expected `lo..hi` or `[lo, hi]` with lo < hi"),
                )
            }
        },
    };
    let decimals = match a[3] {
        None => None,
        Some(e) => match ev.eval(e, scope)? {
            Value::Int(d) if (0..=MAX_DECIMALS).contains(&d) => Some(d as u32),
            other => {
                return ev.fail(ev.mismatch(
                    e.span,
                    &format!("a number of decimals, 0 to {MAX_DECIMALS}"),
                    &other,
                    scope,
                ))
            }
        },
    };
    let refill = match a[4] {
        None => None,
        Some(e) if min.is_finite() => match c.number(Some(e))? {
            r if (min..=max).contains(&r) => Some(r),
            r => {
                return ev.fail(
                    Diagnostic::error(
                        Code::E0203,
                        e.span,
                        format!("refill {r} is outside the clamp"),
                    )
                    .label(format!("expected a value from {min} to {max}")),
                )
            }
        },
        Some(e) => {
            return ev.fail(
                Diagnostic::error(
                    Code::E0203,
                    e.span,
                    "a refill without a low end to refill at",
                )
                .label("add `clamp = lo..hi`"),
            )
        }
    };
    gen(Gen::Walk {
        start: Box::new(start),
        step: Box::new(step),
        min,
        max,
        decimals,
        refill,
    })
}

/// `hold(start, value, change)`: TSBS's "lazy" value, per series.
pub(super) fn hold(c: &Call, a: &Args) -> Ev<Value> {
    let (ev, scope) = (c.ev, c.scope);
    let start = c.gen_numeric(a[0])?;
    let value = c.gen_numeric(a[1])?;
    let e = a[2].expect("required");
    let change = match ev.eval(e, scope)? {
        Value::Percent(p) if (0.0..=100.0).contains(&p) => p / 100.0,
        Value::Float(f) if (0.0..=1.0).contains(&f) => f,
        other => return ev.fail(ev.mismatch(e.span, "a probability such as `5%`", &other, scope)),
    };
    gen(Gen::Hold {
        start: Box::new(start),
        value: Box::new(value),
        change,
    })
}

/// `zipf(n, s?)`: Zipf over `[0, n)`.
pub(super) fn zipf(c: &Call, a: &Args) -> Ev<Value> {
    let (ev, span) = (c.ev, c.span);
    let n = c.int(a[0])?;
    let s = match a[1] {
        Some(e) => c.number(Some(e))?,
        None => 1.0,
    };
    if n <= 0 || s <= 0.0 {
        return ev.fail(
            Diagnostic::error(
                Code::E0203,
                span,
                format!("zipf({n}, {s}) needs n > 0 and s > 0"),
            )
            .label("invalid parameters"),
        );
    }
    gen(Gen::Zipf { n, s })
}

/// `chance(p)`: a number or a percentage in `[0, 1]`.
pub(super) fn chance(c: &Call, a: &Args) -> Ev<Value> {
    let (ev, scope) = (c.ev, c.scope);
    let e = a[0].expect("required");
    let p = match ev.eval(e, scope)? {
        Value::Percent(p) => p / 100.0,
        Value::Float(f) => f,
        Value::Int(i) => i as f64,
        other => return ev.fail(ev.mismatch(e.span, "a probability", &other, scope)),
    };
    if !(0.0..=1.0).contains(&p) {
        return ev.fail(
            Diagnostic::error(
                Code::E0203,
                e.span,
                format!("probability {p} is outside [0, 1]"),
            )
            .label("invalid probability"),
        );
    }
    gen(Gen::Chance { p })
}

/// `pick(values)`: one of a list of plain values.
pub(super) fn pick(c: &Call, a: &Args) -> Ev<Value> {
    let values = c.list(a[0], true)?;
    gen(Gen::Pick { values })
}

/// `weighted(values, weights)`: one weight per value, all `>= 0` with a positive sum.
pub(super) fn weighted(c: &Call, a: &Args) -> Ev<Value> {
    let ev = c.ev;
    let values = c.list(a[0], true)?;
    let we = a[1].expect("required");
    let weights: Vec<f64> = c.list(a[1], false)?.iter().map(num).collect();
    if weights.len() != values.len() {
        return ev.fail(
            Diagnostic::error(
                Code::E0205,
                we.span,
                format!("{} weights for {} values", weights.len(), values.len()),
            )
            .label("one weight per value"),
        );
    }
    if weights.iter().any(|w| w.is_nan() || *w < 0.0) || weights.iter().sum::<f64>() <= 0.0 {
        return ev.fail(
            Diagnostic::error(
                Code::E0203,
                we.span,
                "weights must be numbers >= 0 with a positive sum",
            )
            .label("invalid weights"),
        );
    }
    gen(Gen::Weighted { values, weights })
}

/// `pick_by(column, choices)`: the list a column of this schema selects from a map.
pub(super) fn pick_by(c: &Call, a: &Args) -> Ev<Value> {
    let (ev, scope) = (c.ev, c.scope);
    let ce = a[0].expect("required");
    let column = match ev.eval(ce, scope)? {
        Value::Gen(g) => match *g {
            Gen::Column { name } => name,
            _ => {
                return ev.fail(
                    Diagnostic::error(
                        Code::E0502,
                        ce.span,
                        "pick_by needs a column of this schema",
                    )
                    .label("not a column"),
                )
            }
        },
        other => return ev.fail(ev.mismatch(ce.span, "a column of this schema", &other, scope)),
    };
    let me = a[1].expect("required");
    let Value::Map(entries) = ev.eval(me, scope)? else {
        return ev.fail(
            Diagnostic::error(
                Code::E0201,
                me.span,
                "pick_by needs a map from values to lists",
            )
            .label("expected `{ \"key\": [values], ... }`"),
        );
    };
    let mut choices = Vec::new();
    for (k, v) in entries {
        match v {
            Value::List(vs) if !vs.is_empty() => choices.push((k, vs)),
            _ => {
                return ev.fail(
                    Diagnostic::error(
                        Code::E0203,
                        me.span,
                        format!("the choices for `{k}` must be a non-empty list"),
                    )
                    .label("invalid choices"),
                )
            }
        }
    }
    if choices.is_empty() {
        return ev.fail(
            Diagnostic::error(Code::E0203, me.span, "pick_by needs at least one key")
                .label("empty map"),
        );
    }
    gen(Gen::PickBy { column, choices })
}

/// `sample(from, k)`: `k` distinct values, at most the domain holds and at most [`MAX_SAMPLE`].
pub(super) fn sample(c: &Call, a: &Args) -> Ev<Value> {
    let ev = c.ev;
    let de = a[0].expect("required");
    let from = c.domain(de)?;
    let k = c.int(a[1])?;
    if k < 1 || k as u64 > from.len() {
        return ev.fail(
            Diagnostic::error(
                Code::E0203,
                a[1].expect("required").span,
                format!("cannot sample {k} distinct values out of {}", from.len()),
            )
            .label(format!("expected 1..={}", from.len())),
        );
    }
    if k as u64 > MAX_SAMPLE {
        return ev.fail(
            Diagnostic::error(
                Code::E0203,
                a[1].expect("required").span,
                format!("cannot sample more than {MAX_SAMPLE} values, found {k}"),
            )
            .label(format!("expected 1..={MAX_SAMPLE}")),
        );
    }
    gen(Gen::Sample { from, k: k as u64 })
}

/// `uuid()`.
pub(super) fn uuid(_c: &Call, _a: &Args) -> Ev<Value> {
    gen(Gen::Uuid)
}
