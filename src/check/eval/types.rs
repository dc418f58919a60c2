//! Types and their descriptions: the type a value yields when generated, and the words a
//! mismatch diagnostic uses for what was found.

use super::ops::arith_ty;
use super::{Eval, Scope};
use crate::check::program::{Decl, InstanceId};
use crate::diag::{suggest, Code, Diagnostic};
use crate::plan::{Gen, Ty};
use crate::span::Span;
use crate::syntax::ast::BinOp;
use crate::value::Value;

impl Eval<'_> {
    /// A value's description for an underline: `found a duration` or `unknown name `x``.
    pub fn found(&self, v: &Value) -> String {
        match v {
            Value::Symbol(s) => format!("`{s}` names nothing declared"),
            v => format!("found {}", v.kind()),
        }
    }

    /// A mismatch diagnostic that says "unknown name" when a bare word was found instead.
    pub fn mismatch(&self, span: Span, expected: &str, v: &Value, scope: &Scope) -> Diagnostic {
        if let Value::Symbol(word) = v {
            let mut names: Vec<String> = self
                .prog
                .module_of(scope.inst)
                .decls
                .iter()
                .filter(|(_, d)| matches!(d, Decl::Param(_)))
                .map(|(k, _)| k.clone())
                .collect();
            if scope.inst == InstanceId::ROOT {
                names.extend(self.cell.axes.keys().cloned());
            }
            names.extend(scope.locals().iter().map(|(n, _, _)| n.clone()));
            let mut d = Diagnostic::error(Code::E0104, span, format!("unknown name `{word}`"))
                .label(format!("expected {expected}"));
            if let Some(s) = suggest(word, names.iter().map(String::as_str)) {
                d = d.note(format!("did you mean `{s}`?"));
            }
            return d;
        }
        Diagnostic::error(
            Code::E0201,
            span,
            format!("expected {expected}, found {}", v.kind()),
        )
        .label(format!("expected {expected}"))
    }

    /// The type a value yields when generated; `None` for values a generator cannot hold.
    pub fn value_ty(&self, v: &Value, scope: &Scope) -> Option<Ty> {
        match v {
            Value::Int(_) => Some(Ty::Long),
            Value::Float(_) => Some(Ty::Double),
            Value::Bool(_) => Some(Ty::Bool),
            Value::Str(_) => Some(Ty::Str),
            Value::Timestamp(_) => Some(Ty::Timestamp),
            Value::Duration(_) => Some(Ty::Duration),
            Value::Gen(g) => self.gen_ty(g, scope),
            _ => None,
        }
    }

    pub fn gen_ty(&self, g: &Gen, scope: &Scope) -> Option<Ty> {
        Some(match g {
            Gen::Const { value } => return self.value_ty(value, scope),
            Gen::SeriesIndex
            | Gen::Seq { .. }
            | Gen::Zipf { .. }
            | Gen::ScrambledZipfian { .. }
            | Gen::Zipfian { .. }
            | Gen::Latest { .. }
            | Gen::Hotspot { .. }
            | Gen::ExponentialKey { .. }
            | Gen::Sequential { .. }
            | Gen::Issued { .. } => Ty::Long,
            Gen::YcsbKey { .. } | Gen::YcsbValue { .. } => Ty::Str,
            Gen::Uniform { lo, .. } => return self.value_ty(lo, scope),
            Gen::Normal { .. } | Gen::Walk { .. } | Gen::Hold { .. } => Ty::Double,
            Gen::Pick { values } | Gen::Weighted { values, .. } => {
                return values.first().and_then(|v| self.value_ty(v, scope))
            }
            Gen::PickBy { choices, .. } => {
                return choices
                    .first()
                    .and_then(|(_, vs)| vs.first())
                    .and_then(|v| self.value_ty(v, scope))
            }
            Gen::Format { .. } | Gen::Pattern { .. } | Gen::Uuid | Gen::ToStr { .. } => Ty::Str,
            Gen::Csv { .. } => Ty::Str,
            Gen::Chance { .. } => Ty::Bool,
            Gen::Column { name } | Gen::Let { name } => {
                return scope.local(name).and_then(|(_, _, t)| t.clone())
            }
            Gen::Window { .. } => Ty::Window,
            Gen::Sample { from, .. } => Ty::List(Box::new(match from {
                crate::plan::Domain::Series { value, .. } => self.gen_ty(value, scope)?,
                crate::plan::Domain::List { values } => self.value_ty(values.first()?, scope)?,
            })),
            Gen::Field { .. } => Ty::Timestamp,
            Gen::Bind { index } => {
                return scope
                    .binds
                    .as_ref()?
                    .iter()
                    .find(|(i, _)| i == index)
                    .map(|(_, t)| t.clone())
            }
            Gen::Arith { op, lhs, rhs } => {
                let op = match op.as_str() {
                    "+" => BinOp::Add,
                    "-" => BinOp::Sub,
                    "*" => BinOp::Mul,
                    _ => BinOp::Div,
                };
                return arith_ty(op, &self.gen_ty(lhs, scope)?, &self.gen_ty(rhs, scope)?);
            }
        })
    }
}
