//! [`Call`]: one call being checked, and the argument readers every built-in shares, each
//! reporting the argument's mistake against its own span.

use super::csv::{read_csv_header, CsvTable};
use crate::check::eval::{Ev, Eval, Scope};
use crate::check::program::Decl;
use crate::diag::{Code, Diagnostic};
use crate::plan::{Domain, Gen, Ty};
use crate::span::{Ident, Span};
use crate::syntax::ast;
use crate::value::Value;

pub(super) struct Call<'a, 'p> {
    pub(super) ev: &'a Eval<'p>,
    pub(super) scope: &'a Scope,
    pub(super) span: Span,
    pub(super) name: &'a Ident,
}

impl Call<'_, '_> {
    pub(super) fn value(&self, e: Option<&ast::Expr>) -> Ev<Value> {
        self.ev.eval(e.expect("required argument"), self.scope)
    }

    pub(super) fn opt_int(&self, e: Option<&ast::Expr>, default: i64) -> Ev<i64> {
        match e {
            None => Some(default),
            Some(_) => self.int(e),
        }
    }

    pub(super) fn int(&self, e: Option<&ast::Expr>) -> Ev<i64> {
        let e = e.expect("required argument");
        match self.ev.eval(e, self.scope)? {
            Value::Int(i) => Some(i),
            other => self
                .ev
                .fail(self.ev.mismatch(e.span, "an integer", &other, self.scope)),
        }
    }

    pub(super) fn number(&self, e: Option<&ast::Expr>) -> Ev<f64> {
        let e = e.expect("required argument");
        match self.ev.eval(e, self.scope)? {
            Value::Int(i) => Some(i as f64),
            Value::Float(f) => Some(f),
            other => self
                .ev
                .fail(self.ev.mismatch(e.span, "a number", &other, self.scope)),
        }
    }

    pub(super) fn timestamp(&self, e: Option<&ast::Expr>) -> Ev<i64> {
        let e = e.expect("required argument");
        match self.ev.eval(e, self.scope)? {
            Value::Timestamp(t) => Some(t),
            other => self
                .ev
                .fail(self.ev.mismatch(e.span, "a timestamp", &other, self.scope)),
        }
    }

    pub(super) fn text(&self, e: Option<&ast::Expr>) -> Ev<String> {
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
    pub(super) fn gen_numeric(&self, e: Option<&ast::Expr>) -> Ev<Gen> {
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

    /// An integer generator: a generator yielding integers, or a constant integer.
    pub(super) fn gen_int(&self, e: Option<&ast::Expr>) -> Ev<Gen> {
        let e = e.expect("required argument");
        let v = self.ev.eval(e, self.scope)?;
        match self.ev.value_ty(&v, self.scope) {
            Some(Ty::Long) => Some(match v {
                Value::Gen(g) => *g,
                v => Gen::Const { value: v },
            }),
            _ => self.ev.fail(self.ev.mismatch(
                e.span,
                "an integer or an integer generator",
                &v,
                self.scope,
            )),
        }
    }

    /// A non-empty list of plain values of one kind (or numbers, for weights).
    pub(super) fn list(&self, e: Option<&ast::Expr>, same_kind: bool) -> Ev<Vec<Value>> {
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
    pub(super) fn domain(&self, e: &ast::Expr) -> Ev<Domain> {
        if let ast::ExprKind::Path(path) = &e.kind {
            if path.len() >= 2 && self.scope.local(&path[0].name).is_none() {
                let (schema_path, col) = path.split_at(path.len() - 1);
                match self.ev.resolve_decl(schema_path, self.scope.inst) {
                    Ok((inst, Decl::Schema(s), used)) if used == schema_path.len() => {
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

    pub(super) fn csv_table(&self, path: &str, span: Span) -> Ev<CsvTable> {
        read_csv_header(self.ev, self.scope.inst, path, span)
    }
}
