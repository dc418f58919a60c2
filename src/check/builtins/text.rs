//! The text generators (`format`, `pattern`, `string`) and the checks of their format and
//! pattern languages. The generator trusts what passes here: widths and repetitions are bounded
//! at check time so that no value can ask for unbounded memory.

use super::{gen, Args, Call};
use crate::check::eval::Ev;
use crate::diag::{Code, Diagnostic};
use crate::plan::{Gen, Ty};
use crate::syntax::ast;
use crate::value::Value;

/// `format(format, args...)`: one argument per conversion, of the kind the conversion prints.
pub(super) fn format(c: &Call, a: &Args) -> Ev<Value> {
    let (ev, scope, span) = (c.ev, c.scope, c.span);
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
            return ev
                .fail(Diagnostic::error(Code::E0207, fe.span, m).label("invalid format string"))
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
    let mut len = 0;
    for (spec, e) in specs.iter().zip(rest) {
        let v = ev.eval(e, scope)?;
        ev.grow(&mut len, &v, span)?;
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

/// `pattern(pattern)`: a literal pattern that [`check_pattern`] accepts.
pub(super) fn pattern(c: &Call, a: &Args) -> Ev<Value> {
    let ev = c.ev;
    let pattern = c.text(a[0])?;
    if let Err(m) = check_pattern(&pattern) {
        return ev.fail(
            Diagnostic::error(Code::E0207, a[0].expect("required").span, m)
                .label("invalid pattern"),
        );
    }
    gen(Gen::Pattern { pattern })
}

/// `string(value)`: the decimal text of an integer or an integer generator.
pub(super) fn string(c: &Call, a: &Args) -> Ev<Value> {
    let (ev, scope) = (c.ev, c.scope);
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

/// The widest field a format may ask for.
pub const MAX_FORMAT_WIDTH: u64 = 256;

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
