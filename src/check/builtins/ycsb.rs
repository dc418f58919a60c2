//! YCSB's key choosers, key names and field values (docs/rng.md §4.5): each checks its
//! parameters against what YCSB's generator can draw with, and returns the plan `Gen`.
//! `issued(q)` reads its query from the syntax, like `sample` reads a series column.

use super::{gen, num, Args, Call};
use crate::check::eval::{Ev, RunQueries};
use crate::check::program::Decl;
use crate::diag::{Code, Diagnostic};
use crate::plan::Gen;
use crate::span::Span;
use crate::syntax::ast;
use crate::value::Value;

/// `[lo, hi)`: integers, lo < hi, and at most `most` of them.
fn key_range(c: &Call, a: &Args, most: i64, why: Option<&str>) -> Ev<(i64, i64)> {
    let (lo, hi) = (c.int(a[0])?, c.int(a[1])?);
    let span = a[0]
        .expect("required")
        .span
        .to(a[1].expect("required").span);
    if lo >= hi {
        return c.ev.fail(
            Diagnostic::error(
                Code::E0203,
                span,
                format!("{}({lo}, {hi}) is empty", c.name),
            )
            .label("`lo` must be less than `hi` (the keys are [lo, hi))"),
        );
    }
    if hi.checked_sub(lo).is_none_or(|n| n > most) {
        let mut d = Diagnostic::error(
            Code::E0203,
            span,
            format!("{}({lo}, {hi}) has more than {most} keys", c.name),
        )
        .label("too many keys");
        if let Some(why) = why {
            d = d.note(why.to_string());
        }
        return c.ev.fail(d);
    }
    Some((lo, hi))
}

/// A number in `[0, 1]`, or a percentage; `default` when not given.
fn fraction(c: &Call, e: Option<&ast::Expr>, default: f64) -> Ev<f64> {
    let Some(e) = e else {
        return Some(default);
    };
    let v = match c.ev.eval(e, c.scope)? {
        Value::Percent(p) => p / 100.0,
        v @ (Value::Int(_) | Value::Float(_)) => num(&v),
        other => {
            return c
                .ev
                .fail(c.ev.mismatch(e.span, "a fraction or a percentage", &other, c.scope))
        }
    };
    if !(0.0..=1.0).contains(&v) {
        return c.ev.fail(
            Diagnostic::error(Code::E0203, e.span, format!("{v} is outside [0, 1]"))
                .label("a fraction in [0, 1] or a percentage"),
        );
    }
    Some(v)
}

fn invalid(c: &Call, span: Span, message: String, label: &str) -> Ev<Value> {
    c.ev.fail(Diagnostic::error(Code::E0203, span, message).label(label.to_string()))
}

/// `scrambled_zipfian(lo, hi, last?)`: YCSB's `zipfian` request distribution.
pub(super) fn scrambled_zipfian(c: &Call, a: &Args) -> Ev<Value> {
    let (lo, hi) = key_range(c, a, i64::MAX, None)?;
    let last = match a[2] {
        Some(e) => Some(Box::new(c.gen_int(Some(e))?)),
        None => None,
    };
    gen(Gen::ScrambledZipfian { lo, hi, last })
}

/// `zipfian(lo, hi, theta?, last?)`: YCSB's ZipfianGenerator; ζ is summed over every key.
pub(super) fn zipfian(c: &Call, a: &Args) -> Ev<Value> {
    let (lo, hi) = key_range(
        c,
        a,
        Gen::MAX_ZETA_ITEMS,
        Some("zipfian's zeta sums a term per key when the run starts; scrambled_zipfian's is precomputed"),
    )?;
    let theta = match a[2] {
        Some(e) => c.number(Some(e))?,
        None => Gen::ZIPFIAN_CONSTANT,
    };
    if !(theta > 0.0 && theta < 1.0) {
        return invalid(
            c,
            a[2].expect("given").span,
            format!("zipfian's theta {theta} is outside (0, 1)"),
            "Gray's algorithm takes 0 < theta < 1 (YCSB's is 0.99)",
        );
    }
    let last = match a[3] {
        Some(e) => Some(Box::new(c.gen_int(Some(e))?)),
        None => None,
    };
    gen(Gen::Zipfian {
        lo,
        hi,
        theta,
        last,
    })
}

/// `latest(record_count, inserted)`: YCSB's `latest`, the newest key `record_count - 1 +
/// inserted` the most popular.
pub(super) fn latest(c: &Call, a: &Args) -> Ev<Value> {
    let records = c.int(a[0])?;
    if !(Gen::MIN_LATEST_RECORDS..=Gen::MAX_ZETA_ITEMS).contains(&records) {
        return invalid(
            c,
            a[0].expect("required").span,
            format!(
                "latest needs {} to {} records, found {records}",
                Gen::MIN_LATEST_RECORDS,
                Gen::MAX_ZETA_ITEMS
            ),
            "YCSB's zipfian over record_count - 1 keys degenerates below 3",
        );
    }
    let inserted = c.gen_int(a[1])?;
    gen(Gen::Latest {
        records,
        inserted: Box::new(inserted),
    })
}

/// `hotspot(lo, hi, hot_data?, hot_ops?)`: YCSB's HotspotIntegerGenerator.
pub(super) fn hotspot(c: &Call, a: &Args) -> Ev<Value> {
    let (lo, hi) = key_range(c, a, i64::MAX, None)?;
    let hot_data = fraction(c, a[2], 0.2)?;
    let hot_ops = fraction(c, a[3], 0.8)?;
    if let Err(why) = Gen::hotspot_fits(lo, hi, hot_data, hot_ops) {
        return invalid(
            c,
            c.span,
            format!("hotspot({lo}, {hi}, {hot_data}, {hot_ops}): {why}"),
            "YCSB divides by the size of each set it draws from",
        );
    }
    gen(Gen::Hotspot {
        lo,
        hi,
        hot_data,
        hot_ops,
    })
}

/// `exponential_key(last, range, percentile?)`: YCSB's `exponential`.
pub(super) fn exponential_key(c: &Call, a: &Args) -> Ev<Value> {
    let last = c.gen_int(a[0])?;
    let range = c.number(a[1])?;
    if !(range.is_finite() && range > 0.0) {
        return invalid(
            c,
            a[1].expect("required").span,
            format!("exponential_key's range {range} is not a positive number"),
            "percentile % of the draws fall within `range` keys below `last`",
        );
    }
    let percentile = match a[2] {
        None => 95.0,
        Some(e) => match c.ev.eval(e, c.scope)? {
            Value::Percent(p) => p,
            v @ (Value::Int(_) | Value::Float(_)) => num(&v),
            other => {
                return c
                    .ev
                    .fail(c.ev.mismatch(e.span, "a percentile", &other, c.scope))
            }
        },
    };
    if !(percentile > 0.0 && percentile < 100.0) {
        return invalid(
            c,
            a[2].expect("given").span,
            format!("percentile {percentile} is outside (0, 100)"),
            "YCSB's default is 95",
        );
    }
    gen(Gen::ExponentialKey {
        last: Box::new(last),
        range,
        percentile,
    })
}

/// `sequential(lo, hi)`: `lo + i mod (hi - lo)`.
pub(super) fn sequential(c: &Call, a: &Args) -> Ev<Value> {
    let (lo, hi) = key_range(c, a, i64::MAX, None)?;
    gen(Gen::Sequential { lo, hi })
}

/// `ycsb_key(key, ordered?, zero_padding?, prefix?)`: YCSB's key name.
pub(super) fn ycsb_key(c: &Call, a: &Args) -> Ev<Value> {
    let key = c.gen_int(a[0])?;
    let ordered = match a[1] {
        None => false,
        Some(e) => match c.ev.eval(e, c.scope)? {
            Value::Bool(b) => b,
            other => {
                return c
                    .ev
                    .fail(c.ev.mismatch(e.span, "true or false", &other, c.scope))
            }
        },
    };
    let zero_padding = c.opt_int(a[2], 1)?;
    if !(0..=i64::from(Gen::MAX_ZERO_PADDING)).contains(&zero_padding) {
        return invalid(
            c,
            a[2].expect("given").span,
            format!(
                "zero_padding {zero_padding} is outside 0..={}",
                Gen::MAX_ZERO_PADDING
            ),
            "the key number's width in digits",
        );
    }
    let prefix = match a[3] {
        None => "user".to_string(),
        Some(e) => c.text(Some(e))?,
    };
    gen(Gen::YcsbKey {
        key: Box::new(key),
        ordered,
        zero_padding: zero_padding as u32,
        prefix,
    })
}

/// `ycsb_value(len)`: `len` bytes as YCSB's RandomByteIterator makes them.
pub(super) fn ycsb_value(c: &Call, a: &Args) -> Ev<Value> {
    let len = c.int(a[0])?;
    if !(0..=i64::from(Gen::MAX_VALUE_LEN)).contains(&len) {
        return invalid(
            c,
            a[0].expect("required").span,
            format!(
                "ycsb_value({len}): the length is outside 0..={}",
                Gen::MAX_VALUE_LEN
            ),
            "a field's length in bytes",
        );
    }
    gen(Gen::YcsbValue { len: len as u32 })
}

/// `issued(q)`: how many instances of the run's query `q` its order issued before this one.
/// `q` is a query's name (through import aliases), read from the syntax.
pub(super) fn issued(c: &Call, a: &Args) -> Ev<Value> {
    let ev = c.ev;
    let e = a[0].expect("required");
    if c.scope.binds.is_none() || matches!(c.scope.run, RunQueries::None) {
        return ev.fail(
            Diagnostic::error(
                Code::E0204,
                c.name.span,
                "`issued(...)` is only valid in a query of a query run",
            )
            .label("it counts the instances a query run issued")
            .note("a schema column's rows and a request template's requests have no query order"),
        );
    }
    let ast::ExprKind::Path(path) = &e.kind else {
        return ev.fail(
            Diagnostic::error(Code::E0201, e.span, "`issued` takes a query's name")
                .label("expected a query, such as `issued(insert)`"),
        );
    };
    let (inst, q) = match ev.resolve_decl(path, c.scope.inst) {
        Ok((inst, Decl::Query(q), used)) if used == path.len() => (inst, q),
        Ok((_, d, _)) => {
            return ev.fail(
                Diagnostic::error(
                    Code::E0201,
                    e.span,
                    format!("`{}` is a {}, not a query", join(path), d.kind()),
                )
                .label("expected a query of this run"),
            )
        }
        Err(d) => return ev.fail(d),
    };
    let counted = match &c.scope.run {
        RunQueries::Of(queries) => {
            match queries
                .iter()
                .position(|(i, n)| *i == inst && *n == q.name.name)
            {
                Some(p) => p,
                None => {
                    let names: Vec<&str> = queries.iter().map(|(_, n)| n.as_str()).collect();
                    return ev.fail(
                        Diagnostic::error(
                            Code::E0701,
                            e.span,
                            format!("`{}` is not a query of this run", join(path)),
                        )
                        .label("issued counts the instances of a query the run sends")
                        .note(format!("the run's queries: {}", names.join(", "))),
                    );
                }
            }
        }
        // Checked outside a run, the query's plan is not run: any query will do.
        _ => 0,
    };
    gen(Gen::Issued {
        query: join(path),
        counted,
    })
}

fn join(path: &[crate::span::Ident]) -> String {
    path.iter()
        .map(|p| p.name.as_str())
        .collect::<Vec<_>>()
        .join(".")
}
