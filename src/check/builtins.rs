//! The built-in functions: generators for columns and binds, and their argument checks. Each
//! returns a plan `Gen` (or a plain value) with every parameter resolved.

use std::path::PathBuf;

use super::eval::{Ev, Eval, Scope};
use crate::diag::{suggest, Code, Diagnostic};
use crate::plan::{Domain, Gen, Ty};
use crate::span::{Ident, Span};
use crate::syntax::ast::{self, CallArg};
use crate::value::Value;

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
        &["start", "step", "clamp?"],
        "random walk: first value from start, then + step each row, clamped",
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
    let gen = |g: Gen| Some(Value::Gen(Box::new(g)));
    match name.name.as_str() {
        "seq" => {
            let start = c.opt_int(a[0], 0)?;
            let step = c.opt_int(a[1], 1)?;
            gen(Gen::Seq { start, step })
        }
        "uniform" => {
            let (lo, hi) = (c.value(a[0])?, c.value(a[1])?);
            let (e0, e1) = (a[0].expect("required"), a[1].expect("required"));
            let ok_order = match (&lo, &hi) {
                (Value::Int(x), Value::Int(y)) => x < y,
                (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => {
                    num(&lo) < num(&hi)
                }
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
                    return ev.fail(ev.mismatch(
                        e0.span,
                        "an integer, a number or a timestamp",
                        &lo,
                        scope,
                    ))
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
        "normal" => {
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
        "walk" => {
            let start = c.gen_numeric(a[0])?;
            let step = c.gen_numeric(a[1])?;
            let (min, max) = match a[2] {
                None => (f64::NEG_INFINITY, f64::INFINITY),
                Some(e) => match ev.eval(e, scope)? {
                    Value::Range(lo, hi) if lo < hi => (lo as f64, hi as f64),
                    Value::List(v) if v.len() == 2 && num(&v[0]) < num(&v[1]) => {
                        (num(&v[0]), num(&v[1]))
                    }
                    other => {
                        return ev.fail(
                            Diagnostic::error(
                                Code::E0203,
                                e.span,
                                format!("invalid clamp {other}"),
                            )
                            .label("expected `lo..hi` or `[lo, hi]` with lo < hi"),
                        )
                    }
                },
            };
            gen(Gen::Walk {
                start: Box::new(start),
                step: Box::new(step),
                min,
                max,
            })
        }
        "pick" => {
            let values = c.list(a[0], true)?;
            gen(Gen::Pick { values })
        }
        "weighted" => {
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
            if weights.iter().any(|w| w.is_nan() || *w < 0.0) || weights.iter().sum::<f64>() <= 0.0
            {
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
        "pick_by" => {
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
                other => {
                    return ev.fail(ev.mismatch(ce.span, "a column of this schema", &other, scope))
                }
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
        "zipf" => {
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
        "format" => {
            let fe = a[0].expect("required");
            let Value::Str(t) = ev.eval(fe, scope)? else {
                return ev.fail(
                    Diagnostic::error(Code::E0201, fe.span, "format needs a format string")
                        .label("expected a string"),
                );
            };
            let Some(format) = t.as_lit() else {
                return ev.fail(
                    Diagnostic::error(Code::E0207, fe.span, "a format string cannot come from env")
                        .label("write it literally"),
                );
            };
            let specs = match parse_format(&format) {
                Ok(s) => s,
                Err(m) => {
                    return ev.fail(
                        Diagnostic::error(Code::E0207, fe.span, m).label("invalid format string"),
                    )
                }
            };
            let rest: Vec<&ast::Expr> = a[1..].iter().flatten().copied().collect();
            if specs.len() != rest.len() {
                return ev.fail(
                    Diagnostic::error(
                        Code::E0205,
                        span,
                        format!(
                            "the format has {} conversion{} but {} argument{} follow{}",
                            specs.len(),
                            if specs.len() == 1 { "" } else { "s" },
                            rest.len(),
                            if rest.len() == 1 { "" } else { "s" },
                            if rest.len() == 1 { "s" } else { "" }
                        ),
                    )
                    .label("one argument per %-conversion"),
                );
            }
            let mut args = Vec::new();
            for (spec, e) in specs.iter().zip(rest) {
                let v = ev.eval(e, scope)?;
                let ty = ev.value_ty(&v, scope);
                let ok = match spec {
                    'd' | 'x' => matches!(ty, Some(Ty::Long)),
                    'f' => matches!(ty, Some(Ty::Long | Ty::Double)),
                    _ => ty.is_some() && !matches!(ty, Some(Ty::List(_) | Ty::Window)),
                };
                if !ok {
                    return ev.fail(ev.mismatch(
                        e.span,
                        if *spec == 'f' {
                            "a number"
                        } else if *spec == 's' {
                            "a value"
                        } else {
                            "an integer"
                        },
                        &v,
                        scope,
                    ));
                }
                args.push(match v {
                    Value::Gen(g) => *g,
                    v => Gen::Const { value: v },
                });
            }
            gen(Gen::Format { format, args })
        }
        "pattern" => {
            let pattern = c.text(a[0])?;
            if let Err(m) = check_pattern(&pattern) {
                return ev.fail(
                    Diagnostic::error(Code::E0207, a[0].expect("required").span, m)
                        .label("invalid pattern"),
                );
            }
            gen(Gen::Pattern { pattern })
        }
        "csv" => {
            let path = c.text(a[0])?;
            let column = c.text(a[1])?;
            let pe = a[0].expect("required");
            let table = c.csv_table(&path, pe.span)?;
            if !table.header.contains(&column) {
                return ev.fail(
                    Diagnostic::error(
                        Code::E0602,
                        a[1].expect("required").span,
                        format!("`{path}` has no column `{column}`"),
                    )
                    .label("not in the CSV header")
                    .note(format!("the header is: {}", table.header.join(","))),
                );
            }
            if table.rows == 0 {
                return ev.fail(
                    Diagnostic::error(Code::E0602, pe.span, format!("`{path}` has no rows"))
                        .label("empty CSV"),
                );
            }
            gen(Gen::Csv {
                path,
                column,
                rows: table.rows,
            })
        }
        "uuid" => gen(Gen::Uuid),
        "chance" => {
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
        "string" => {
            let e = a[0].expect("required");
            let v = ev.eval(e, scope)?;
            match ev.value_ty(&v, scope) {
                Some(Ty::Long) => match v {
                    Value::Int(i) => Some(Value::Str(crate::value::Text::lit(i.to_string()))),
                    Value::Gen(g) => gen(Gen::ToStr { of: g }),
                    _ => unreachable!("long values are ints or generators"),
                },
                _ => ev.fail(ev.mismatch(e.span, "an integer", &v, scope)),
            }
        }
        "window" => {
            let from = c.timestamp(a[0])?;
            let to = c.timestamp(a[1])?;
            let le = a[2].expect("required");
            let length = match ev.eval(le, scope)? {
                Value::Duration(d) if d > 0 => d,
                other => {
                    return ev.fail(ev.mismatch(le.span, "a positive duration", &other, scope))
                }
            };
            if to.checked_sub(length).is_none_or(|last| last <= from) {
                return ev.fail(
                    Diagnostic::error(
                        Code::E0203,
                        span,
                        format!(
                            "a {} window does not fit between {} and {}",
                            crate::value::fmt_duration(length),
                            crate::value::fmt_timestamp(from),
                            crate::value::fmt_timestamp(to)
                        ),
                    )
                    .label("`to - length` must be after `from`"),
                );
            }
            gen(Gen::Window {
                from: Value::Timestamp(from),
                to: Value::Timestamp(to),
                length: Value::Duration(length),
            })
        }
        "sample" => {
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
        "rows" => ev.fail(
            Diagnostic::error(
                Code::E0204,
                name.span,
                "`rows(...)` is only valid in `require`",
            )
            .label("not a value here"),
        ),
        other => unreachable!("function {other} is listed but not implemented"),
    }
}

fn num(v: &Value) -> f64 {
    match v {
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        _ => f64::NAN,
    }
}

struct Call<'a, 'p> {
    ev: &'a Eval<'p>,
    scope: &'a Scope,
    span: Span,
    name: &'a Ident,
}

pub struct CsvTable {
    pub header: Vec<String>,
    pub rows: u64,
}

impl Call<'_, '_> {
    fn value(&self, e: Option<&ast::Expr>) -> Ev<Value> {
        self.ev.eval(e.expect("required argument"), self.scope)
    }

    fn opt_int(&self, e: Option<&ast::Expr>, default: i64) -> Ev<i64> {
        match e {
            None => Some(default),
            Some(_) => self.int(e),
        }
    }

    fn int(&self, e: Option<&ast::Expr>) -> Ev<i64> {
        let e = e.expect("required argument");
        match self.ev.eval(e, self.scope)? {
            Value::Int(i) => Some(i),
            other => self
                .ev
                .fail(self.ev.mismatch(e.span, "an integer", &other, self.scope)),
        }
    }

    fn number(&self, e: Option<&ast::Expr>) -> Ev<f64> {
        let e = e.expect("required argument");
        match self.ev.eval(e, self.scope)? {
            Value::Int(i) => Some(i as f64),
            Value::Float(f) => Some(f),
            other => self
                .ev
                .fail(self.ev.mismatch(e.span, "a number", &other, self.scope)),
        }
    }

    fn timestamp(&self, e: Option<&ast::Expr>) -> Ev<i64> {
        let e = e.expect("required argument");
        match self.ev.eval(e, self.scope)? {
            Value::Timestamp(t) => Some(t),
            other => self
                .ev
                .fail(self.ev.mismatch(e.span, "a timestamp", &other, self.scope)),
        }
    }

    fn text(&self, e: Option<&ast::Expr>) -> Ev<String> {
        let e = e.expect("required argument");
        match self.ev.eval(e, self.scope)? {
            Value::Str(t) => match t.as_lit() {
                Some(s) => Some(s),
                None => self.ev.fail(
                    Diagnostic::error(
                        Code::E0203,
                        e.span,
                        format!("`{}` cannot take a value from env", self.name),
                    )
                    .label("write it literally"),
                ),
            },
            other => self
                .ev
                .fail(self.ev.mismatch(e.span, "a string", &other, self.scope)),
        }
    }

    /// A numeric generator: a generator yielding numbers, or a constant number.
    fn gen_numeric(&self, e: Option<&ast::Expr>) -> Ev<Gen> {
        let e = e.expect("required argument");
        let v = self.ev.eval(e, self.scope)?;
        match self.ev.value_ty(&v, self.scope) {
            Some(Ty::Long | Ty::Double) => Some(match v {
                Value::Gen(g) => *g,
                v => Gen::Const { value: v },
            }),
            _ => self.ev.fail(self.ev.mismatch(
                e.span,
                "a number or a numeric generator",
                &v,
                self.scope,
            )),
        }
    }

    /// A non-empty list of plain values of one kind (or numbers, for weights).
    fn list(&self, e: Option<&ast::Expr>, same_kind: bool) -> Ev<Vec<Value>> {
        let e = e.expect("required argument");
        let v = self.ev.eval(e, self.scope)?;
        let Value::List(items) = v else {
            return self
                .ev
                .fail(self.ev.mismatch(e.span, "a list", &v, self.scope));
        };
        if items.is_empty() {
            return self.ev.fail(
                Diagnostic::error(Code::E0203, e.span, "an empty list")
                    .label("needs at least one value"),
            );
        }
        for it in &items {
            if matches!(it, Value::Gen(_) | Value::List(_) | Value::Map(_)) {
                return self.ev.fail(
                    Diagnostic::error(
                        Code::E0201,
                        e.span,
                        format!("a list of plain values cannot hold {}", it.kind()),
                    )
                    .label("expected plain values"),
                );
            }
            if let Value::Symbol(_) = it {
                return self.ev.fail(self.ev.mismatch(
                    e.span,
                    "plain values (quote strings)",
                    it,
                    self.scope,
                ));
            }
            let kind_ok = if same_kind {
                std::mem::discriminant(it) == std::mem::discriminant(&items[0])
            } else {
                matches!(it, Value::Int(_) | Value::Float(_))
            };
            if !kind_ok {
                return self.ev.fail(
                    Diagnostic::error(
                        Code::E0201,
                        e.span,
                        if same_kind {
                            format!("the list mixes {} and {}", items[0].kind(), it.kind())
                        } else {
                            format!("weights must be numbers, found {}", it.kind())
                        },
                    )
                    .label("one kind of value per list"),
                );
            }
        }
        Some(items)
    }

    /// `sample`'s domain: `schema.column` (a series column, through import aliases) or a list.
    fn domain(&self, e: &ast::Expr) -> Ev<Domain> {
        if let ast::ExprKind::Path(path) = &e.kind {
            if path.len() >= 2 && self.scope.local(&path[0].name).is_none() {
                let (schema_path, col) = path.split_at(path.len() - 1);
                match self.ev.resolve_decl(schema_path, self.scope.inst) {
                    Ok((inst, super::program::Decl::Schema(s), used))
                        if used == schema_path.len() =>
                    {
                        return (self.ev.prog.schema_domain)(self.ev, inst, s, &col[0]);
                    }
                    Ok(_) | Err(_) => {}
                }
            }
        }
        match self.ev.eval(e, self.scope)? {
            Value::List(values) if !values.is_empty() => Some(Domain::List { values }),
            other => self.ev.fail(self.ev.mismatch(
                e.span,
                "a series column (`schema.column`) or a non-empty list",
                &other,
                self.scope,
            )),
        }
    }

    fn csv_table(&self, path: &str, span: Span) -> Ev<CsvTable> {
        read_csv_header(self.ev, self.scope.inst, path, span)
    }

    #[allow(dead_code)]
    fn span(&self) -> Span {
        self.span
    }
}

/// Reads a CSV's header and counts its rows; the path is relative to the module's file.
pub fn read_csv_header(
    ev: &Eval<'_>,
    inst: super::program::InstanceId,
    path: &str,
    span: Span,
) -> Ev<CsvTable> {
    let module = ev.prog.module_of(inst);
    let bytes: Vec<u8> = match &module.dir {
        Some(dir) => {
            let full: PathBuf = dir.join(path);
            match std::fs::read(&full) {
                Ok(b) => {
                    ev.prog.inputs.record(crate::source::Origin::Disk(full));
                    b
                }
                Err(e)
                    if e.kind() == std::io::ErrorKind::NotFound && ev.cell.csv_may_be_missing =>
                {
                    ev.error(
                        Diagnostic::warning(
                            Code::W0004,
                            span,
                            format!("`{}` does not exist yet", full.display()),
                        )
                        .label("queries that bind from it are left out"),
                    );
                    return None;
                }
                Err(e) => {
                    return ev.fail(
                        Diagnostic::error(
                            Code::E0602,
                            span,
                            format!("cannot read `{}`: {e}", full.display()),
                        )
                        .label("CSV file not found")
                        .note("CSV paths are relative to the .wl file that names them"),
                    )
                }
            }
        }
        None => match crate::source::stdlib_file(path) {
            Some(b) => {
                ev.prog
                    .inputs
                    .record(crate::source::Origin::Stdlib(path.to_string()));
                b.to_vec()
            }
            None => {
                return ev.fail(
                    Diagnostic::error(Code::E0602, span, format!("no stdlib data file `{path}`"))
                        .label("CSV file not found"),
                )
            }
        },
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let Some(header) = lines.next() else {
        return ev.fail(
            Diagnostic::error(Code::E0602, span, format!("`{path}` is empty"))
                .label("no header line"),
        );
    };
    let header: Vec<String> = header
        .split(',')
        .map(|h| h.trim().trim_matches('"').to_string())
        .collect();
    let rows = lines.count() as u64;
    Some(CsvTable { header, rows })
}

/// The widest field a format may ask for.
pub const MAX_FORMAT_WIDTH: u64 = 256;

/// The most values one `sample` draws: every query allocates them and writes them into its SQL
/// as a list, so the count must not come from the text unbounded.
pub const MAX_SAMPLE: u64 = 10_000;

/// Parses a printf-style format into its conversion letters.
pub fn parse_format(f: &str) -> Result<Vec<char>, String> {
    let mut out = Vec::new();
    let mut chars = f.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            continue;
        }
        // flags and width: [0-][digits][.digits]
        while matches!(chars.peek(), Some('0' | '-')) {
            chars.next();
        }
        // Widths and precisions are bounded so that no format can ask for gigabytes per value.
        let number = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| -> Result<(), String> {
            let mut n: u64 = 0;
            while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                n = n.saturating_mul(10).saturating_add(u64::from(d));
                chars.next();
            }
            if n > MAX_FORMAT_WIDTH {
                return Err(format!(
                    "a width or precision of {n}; at most {MAX_FORMAT_WIDTH} is allowed"
                ));
            }
            Ok(())
        };
        number(&mut chars)?;
        if chars.peek() == Some(&'.') {
            chars.next();
            number(&mut chars)?;
        }
        match chars.next() {
            Some(conv @ ('d' | 's' | 'f' | 'x')) => out.push(conv),
            Some(other) => {
                return Err(format!(
                    "unknown conversion `%{other}`; use %d, %s, %f, %x or %%"
                ))
            }
            None => return Err("the format ends inside a `%` conversion".to_string()),
        }
    }
    Ok(out)
}

/// Checks a generator pattern: literals (`\` escapes), `[...]` classes with ranges, and the
/// bounded quantifiers `{n}`, `{m,n}` and `?`.
pub fn check_pattern(p: &str) -> Result<(), String> {
    let chars: Vec<char> = p.chars().collect();
    let mut i = 0;
    let mut have_atom = false;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                if i + 1 >= chars.len() {
                    return Err("the pattern ends with `\\`".into());
                }
                i += 2;
                have_atom = true;
            }
            '[' => {
                let close = chars[i + 1..]
                    .iter()
                    .position(|&c| c == ']')
                    .ok_or("unclosed `[`")?;
                let class = &chars[i + 1..i + 1 + close];
                if class.is_empty() {
                    return Err("an empty class `[]`".into());
                }
                let mut j = 0;
                while j < class.len() {
                    if j + 2 < class.len() && class[j + 1] == '-' {
                        if class[j] > class[j + 2] {
                            return Err(format!(
                                "the range `{}-{}` is reversed",
                                class[j],
                                class[j + 2]
                            ));
                        }
                        j += 3;
                    } else {
                        j += 1;
                    }
                }
                i += close + 2;
                have_atom = true;
            }
            '{' => {
                if !have_atom {
                    return Err("`{` must follow a character or a class".into());
                }
                let close = chars[i + 1..]
                    .iter()
                    .position(|&c| c == '}')
                    .ok_or("unclosed `{`")?;
                let body: String = chars[i + 1..i + 1 + close].iter().collect();
                let (m, n) = match body.split_once(',') {
                    Some((m, n)) => (m.trim().parse::<u32>(), n.trim().parse::<u32>()),
                    None => (body.trim().parse::<u32>(), body.trim().parse::<u32>()),
                };
                match (m, n) {
                    (Ok(m), Ok(n)) if m <= n && n <= 1000 => {}
                    _ => {
                        return Err(format!(
                        "invalid repetition `{{{body}}}`; use {{n}} or {{m,n}} with m <= n <= 1000"
                    ))
                    }
                }
                i += close + 2;
                have_atom = false;
            }
            '?' => {
                if !have_atom {
                    return Err("`?` must follow a character or a class".into());
                }
                i += 1;
                have_atom = false;
            }
            '*' | '+' => return Err(format!("`{}` is unbounded; use {{m,n}}", chars[i])),
            '(' | ')' | '|' => {
                return Err(format!(
                    "`{}` (groups and alternation) is not supported",
                    chars[i]
                ))
            }
            _ => {
                i += 1;
                have_atom = true;
            }
        }
    }
    Ok(())
}
