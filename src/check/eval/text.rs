//! Strings: literals with `${...}` interpolation (text, or a `format` generator when an
//! interpolation is generated) and `env("NAME", default)`.

use super::{Ev, Eval, Scope};
use crate::check::limits::MAX_VALUE_LEN;
use crate::diag::{Code, Diagnostic};
use crate::plan::{Gen, Ty};
use crate::syntax::ast;
use crate::value::{Text, TextPart, Value};

impl Eval<'_> {
    /// `env("NAME", default?)`: a literal variable name and a literal (or integer) default; the
    /// variable itself is read later, from the `TextPart::Env` this returns.
    pub(super) fn env(
        &self,
        name: &ast::StrLit,
        default: Option<&ast::Expr>,
        scope: &Scope,
    ) -> Ev<Value> {
        let Some(n) = name.as_plain() else {
            return self.fail(
                Diagnostic::error(Code::E0203, name.span, "env names cannot interpolate")
                    .label("write the variable name literally"),
            );
        };
        if n.is_empty() || !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return self.fail(
                Diagnostic::error(
                    Code::E0203,
                    name.span,
                    format!("`{n}` is not an environment variable name"),
                )
                .label("letters, digits and `_` only"),
            );
        }
        let default = match default {
            Some(d) => match self.eval(d, scope)? {
                Value::Str(t) => match t.as_lit() {
                    Some(s) => Some(s),
                    None => {
                        return self.fail(
                            Diagnostic::error(
                                Code::E0203,
                                d.span,
                                "an env default cannot come from another env",
                            )
                            .label("write the default literally"),
                        )
                    }
                },
                Value::Int(i) => Some(i.to_string()),
                other => {
                    return self.fail(
                        Diagnostic::error(
                            Code::E0201,
                            d.span,
                            format!("an env default must be a string, found {}", other.kind()),
                        )
                        .label("expected a string"),
                    )
                }
            },
            None => None,
        };
        Some(Value::Str(Text {
            parts: vec![TextPart::Env { name: n, default }],
        }))
    }

    /// A string literal as a value: text, or a `format` generator when an interpolation is
    /// generated (`"host_${n}"` in a series column).
    pub(super) fn string_or_format(&self, s: &ast::StrLit, scope: &Scope) -> Ev<Value> {
        let mut generated = false;
        let mut parts: Vec<Result<String, Gen>> = Vec::new();
        let mut len = 0;
        for p in &s.parts {
            match p {
                ast::StrPart::Text(t) => parts.push(Ok(t.clone())),
                ast::StrPart::Interp(e) => {
                    let v = self.eval(e, scope)?;
                    self.grow(&mut len, &v, s.span)?;
                    if let Value::Gen(g) = v {
                        match self.gen_ty(&g, scope) {
                            Some(Ty::List(_) | Ty::Window) | None => {
                                return self.fail(
                                    Diagnostic::error(
                                        Code::E0201,
                                        e.span,
                                        "this value cannot be interpolated",
                                    )
                                    .label("interpolate a single value"),
                                )
                            }
                            Some(_) => {}
                        }
                        generated = true;
                        parts.push(Err(*g));
                    } else {
                        parts.push(Ok(String::new()));
                    }
                }
            }
        }
        if !generated {
            return self.string(s, scope).map(Value::Str);
        }
        // Plain interpolations are evaluated again as text; generated ones become `%s`.
        let mut format = String::new();
        let mut args = Vec::new();
        for (p, part) in s.parts.iter().zip(parts) {
            match (p, part) {
                (ast::StrPart::Text(t), _) => format.push_str(&t.replace('%', "%%")),
                (ast::StrPart::Interp(_), Err(g)) => {
                    format.push_str("%s");
                    args.push(g);
                }
                (ast::StrPart::Interp(e), Ok(_)) => {
                    let one = ast::StrLit {
                        parts: vec![ast::StrPart::Interp(e.clone())],
                        span: e.span,
                    };
                    let t = self.string(&one, scope)?;
                    match t.as_lit() {
                        Some(x) => format.push_str(&x.replace('%', "%%")),
                        None => {
                            return self.fail(
                                Diagnostic::error(
                                    Code::E0203,
                                    e.span,
                                    "env(...) cannot mix with generated text",
                                )
                                .label("not allowed here"),
                            )
                        }
                    }
                }
            }
        }
        Some(Value::Gen(Box::new(Gen::Format { format, args })))
    }

    pub fn string(&self, s: &ast::StrLit, scope: &Scope) -> Ev<Text> {
        let mut t = Text { parts: Vec::new() };
        let mut ok = true;
        for p in &s.parts {
            match p {
                ast::StrPart::Text(x) => t.push_lit(x),
                ast::StrPart::Interp(e) => match self.eval(e, scope) {
                    Some(Value::Str(x)) => {
                        t.append(x);
                        if t.len() > MAX_VALUE_LEN {
                            return self.fail(super::too_long(s.span));
                        }
                    }
                    Some(Value::Gen(_)) => {
                        self.error(
                            Diagnostic::error(
                                Code::E0201,
                                e.span,
                                "a generator cannot be interpolated into a string",
                            )
                            .label("use format(\"...\", generator) instead"),
                        );
                        ok = false;
                    }
                    Some(Value::List(_) | Value::Map(_)) => {
                        self.error(
                            Diagnostic::error(
                                Code::E0201,
                                e.span,
                                "a list or map cannot be interpolated",
                            )
                            .label("interpolate a single value"),
                        );
                        ok = false;
                    }
                    Some(Value::Timestamp(ns)) => t.push_lit(&crate::value::fmt_timestamp(ns)),
                    Some(Value::Symbol(w)) => {
                        if scope.local(&w).is_none() && !self.interp_word_ok(&w, scope) {
                            self.error(self.mismatch(e.span, "a value", &Value::Symbol(w), scope));
                            ok = false;
                        } else {
                            t.push_lit(&w);
                        }
                    }
                    Some(v) => t.push_lit(&v.to_string()),
                    None => ok = false,
                },
            }
        }
        ok.then_some(t)
    }

    /// Words that may appear in `${...}` without being declared: the count-query context.
    fn interp_word_ok(&self, w: &str, scope: &Scope) -> bool {
        scope.local(w).is_some()
    }
}
