//! The built-in functions: generators for columns and binds, and their argument checks. Each
//! returns a plan `Gen` (or a plain value) with every parameter resolved.
//!
//! This file owns the table of functions, the binding of call arguments to parameters and the
//! dispatch from a name to its function; the functions live by what they make: [`random`]
//! (sequences, distributions, draws), [`text`] (formats and patterns), [`csv`] and [`time`].
//! [`Call`] holds the argument readers they share.

mod call;
mod csv;
mod random;
mod text;
mod time;
mod ycsb;

use self::call::Call;
use super::eval::{num, Ev, Eval, Scope};
use crate::diag::{suggest, Code, Diagnostic};
use crate::plan::Gen;
use crate::span::{Ident, Span};
use crate::syntax::ast::{self, CallArg};
use crate::value::Value;

pub use self::csv::{read_csv_header, root_relative};

/// Every function, its parameters (`?` marks optional ones) and a one-line summary; the
/// language reference lists the same table.
pub const FUNCTIONS: &[(&str, &[&str], &str)] = &[
    (
        "seq",
        &["start?", "step?"],
        "start + step * i for the i-th row (or query instance)",
    ),
    (
        "uniform",
        &["lo", "hi"],
        "uniform over [lo, hi): integers, numbers or timestamps",
    ),
    ("normal", &["mean", "stddev"], "normal distribution"),
    (
        "walk",
        &["start", "step", "clamp?", "decimals?", "refill?"],
        "random walk: first value from start, then + step each row, clamped; emitted truncated to `decimals`; a state left at the clamp's low end set to `refill`",
    ),
    (
        "hold",
        &["start", "value", "change"],
        "per series: start on the first row, then each row a fresh value with probability `change`, else the row before's",
    ),
    ("pick", &["values"], "one of the values, uniformly"),
    (
        "weighted",
        &["values", "weights"],
        "one of the values, with the given weights",
    ),
    (
        "pick_by",
        &["column", "choices"],
        "uniform pick from the list another column's value selects",
    ),
    (
        "zipf",
        &["n", "s?"],
        "Zipf over [0, n) with exponent s (default 1.0); 0 is the most frequent",
    ),
    (
        "format",
        &["format", "args..."],
        "printf-style text: %d, %06d, %s, %.2f, %x, %%",
    ),
    (
        "pattern",
        &["pattern"],
        "text from a small regular language: literals, [a-z] classes, {m,n}, ?",
    ),
    (
        "csv",
        &["path", "column"],
        "the values of a CSV column, in file order, cycling",
    ),
    ("uuid", &[], "a random UUID (version 4)"),
    (
        "chance",
        &["p"],
        "true with probability p (a number in [0, 1] or a percentage)",
    ),
    ("string", &["value"], "decimal text of an integer"),
    (
        "window",
        &["from", "to", "length"],
        "a time window of `length` starting uniformly in [from, to - length], whole seconds",
    ),
    (
        "sample",
        &["from", "k"],
        "k distinct values of a series column or a list, in draw order",
    ),
    (
        "scrambled_zipfian",
        &["lo", "hi", "last?"],
        "YCSB's `zipfian` keys over [lo, hi): hot ranks hashed across the range; redrawn while above last",
    ),
    (
        "zipfian",
        &["lo", "hi", "theta?", "last?"],
        "YCSB's ZipfianGenerator over [lo, hi), lo the most popular (theta 0.99); redrawn while above last",
    ),
    (
        "latest",
        &["record_count", "inserted"],
        "YCSB's `latest`: keys skewed toward the newest, record_count - 1 + inserted",
    ),
    (
        "hotspot",
        &["lo", "hi", "hot_data?", "hot_ops?"],
        "YCSB's `hotspot` over [lo, hi): the lowest hot_data (0.2) of the keys take hot_ops (0.8) of the draws",
    ),
    (
        "exponential_key",
        &["last", "range", "percentile?"],
        "YCSB's `exponential`: last minus an exponential draw, percentile (95) % of them below range",
    ),
    (
        "sequential",
        &["lo", "hi"],
        "lo + i mod (hi - lo) for the i-th row (or query instance)",
    ),
    (
        "issued",
        &["query"],
        "how many instances of the run's query its order issued before this one (binds only)",
    ),
    (
        "ycsb_key",
        &["key", "ordered?", "zero_padding?", "prefix?"],
        "YCSB's key name: prefix (\"user\") + the key number, FNV-hashed unless ordered, zero-padded",
    ),
    (
        "ycsb_value",
        &["len"],
        "len bytes of printable text as YCSB's RandomByteIterator makes them",
    ),
    ("rows", &["table"], "rows in a table (only in `require`)"),
];

/// Matches call arguments to parameter names: positional first, then named.
fn bind_args<'a>(
    ev: &Eval<'_>,
    name: &Ident,
    params: &[&str],
    args: &'a [CallArg],
    span: Span,
) -> Option<Vec<Option<&'a ast::Expr>>> {
    let variadic = params.last().is_some_and(|p| p.ends_with("..."));
    let fixed = if variadic {
        params.len() - 1
    } else {
        params.len()
    };
    let mut out: Vec<Option<&ast::Expr>> = vec![None; fixed];
    let mut extra = Vec::new();
    let mut ok = true;
    let mut positional = 0;
    let mut named_seen = false;
    for a in args {
        match &a.name {
            None if named_seen => {
                ev.error(
                    Diagnostic::error(
                        Code::E0205,
                        a.value.span,
                        "a positional argument after a named one",
                    )
                    .label("name this argument too, or move it before the named ones")
                    .note(signature(name.as_str(), params)),
                );
                ok = false;
            }
            None => {
                if positional < fixed {
                    out[positional] = Some(&a.value);
                } else if variadic {
                    extra.push(Some(&a.value));
                } else {
                    ev.error(
                        Diagnostic::error(
                            Code::E0205,
                            a.value.span,
                            format!(
                                "`{name}` takes at most {fixed} argument{}",
                                if fixed == 1 { "" } else { "s" }
                            ),
                        )
                        .label("unexpected argument")
                        .note(signature(name.as_str(), params)),
                    );
                    ok = false;
                }
                positional += 1;
            }
            Some(n) => match {
                named_seen = true;
                &params[..fixed]
            }
            .iter()
            .position(|p| p.trim_end_matches('?') == n.name)
            {
                Some(i) if out[i].is_none() => out[i] = Some(&a.value),
                Some(_) => {
                    ev.error(
                        Diagnostic::error(Code::E0205, n.span, format!("`{n}` is given twice"))
                            .label("duplicate argument"),
                    );
                    ok = false;
                }
                None => {
                    ev.error(
                        Diagnostic::error(
                            Code::E0205,
                            n.span,
                            format!("`{name}` has no parameter `{n}`"),
                        )
                        .label("unknown argument")
                        .note(signature(name.as_str(), params)),
                    );
                    ok = false;
                }
            },
        }
    }
    for (i, p) in params[..fixed].iter().enumerate() {
        if out[i].is_none() && !p.ends_with('?') {
            ev.error(
                Diagnostic::error(
                    Code::E0205,
                    span,
                    format!("`{name}` needs the argument `{p}`"),
                )
                .label("missing argument")
                .note(signature(name.as_str(), params)),
            );
            ok = false;
        }
    }
    out.extend(extra);
    ok.then_some(out)
}

fn signature(name: &str, params: &[&str]) -> String {
    format!("usage: {name}({})", params.join(", "))
}

/// A call's arguments in parameter order (`None` for an optional one not given), then the
/// variadic ones.
type Args<'e> = [Option<&'e ast::Expr>];

/// What a built-in is: it reads its bound arguments and reports its own mistakes.
type Builtin = fn(&Call, &Args) -> Ev<Value>;

pub fn call(
    ev: &Eval<'_>,
    callee: &[Ident],
    args: &[CallArg],
    span: Span,
    scope: &Scope,
) -> Ev<Value> {
    if callee.len() != 1 {
        return ev.fail(
            Diagnostic::error(
                Code::E0204,
                callee[0].span.to(callee[callee.len() - 1].span),
                "unknown function",
            )
            .label("functions are built in; there are no module functions"),
        );
    }
    let name = &callee[0];
    if name.name == "env" {
        return ev.fail(
            Diagnostic::error(
                Code::E0204,
                name.span,
                "`env` takes the variable name in quotes",
            )
            .label("write env(\"NAME\") or env(\"NAME\", \"default\")"),
        );
    }
    let Some((_, params, _)) = FUNCTIONS.iter().find(|(n, _, _)| *n == name.name) else {
        let mut d = Diagnostic::error(Code::E0204, name.span, format!("unknown function `{name}`"))
            .label("not a built-in function");
        if let Some(s) = suggest(&name.name, FUNCTIONS.iter().map(|f| f.0)) {
            d = d.note(format!("did you mean `{s}`?"));
        }
        return ev.fail(d);
    };
    let a = bind_args(ev, name, params, args, span)?;
    let c = Call {
        ev,
        scope,
        span,
        name,
    };
    implementation(&name.name)(&c, &a)
}

/// The function a name in [`FUNCTIONS`] runs.
fn implementation(name: &str) -> Builtin {
    match name {
        "seq" => random::seq,
        "uniform" => random::uniform,
        "normal" => random::normal,
        "walk" => random::walk,
        "hold" => random::hold,
        "pick" => random::pick,
        "weighted" => random::weighted,
        "pick_by" => random::pick_by,
        "zipf" => random::zipf,
        "format" => text::format,
        "pattern" => text::pattern,
        "csv" => csv::csv,
        "uuid" => random::uuid,
        "chance" => random::chance,
        "string" => text::string,
        "window" => time::window,
        "sample" => random::sample,
        "scrambled_zipfian" => ycsb::scrambled_zipfian,
        "zipfian" => ycsb::zipfian,
        "latest" => ycsb::latest,
        "hotspot" => ycsb::hotspot,
        "exponential_key" => ycsb::exponential_key,
        "sequential" => ycsb::sequential,
        "issued" => ycsb::issued,
        "ycsb_key" => ycsb::ycsb_key,
        "ycsb_value" => ycsb::ycsb_value,
        "rows" => rows,
        other => unreachable!("function {other} is listed but not implemented"),
    }
}

/// `rows(table)` anywhere but `require`, which reads the call from the syntax itself
/// (`lower::expect`).
fn rows(c: &Call, _a: &Args) -> Ev<Value> {
    let ev = c.ev;
    ev.fail(
        Diagnostic::error(
            Code::E0204,
            c.name.span,
            "`rows(...)` is only valid in `require`",
        )
        .label("not a value here"),
    )
}

fn gen(g: Gen) -> Ev<Value> {
    Some(Value::Gen(Box::new(g)))
}
