//! Evaluation of expressions to values, for one matrix cell. Names resolve in this order: locals
//! (the series variable, columns, lets), matrix axes (root file only), params, then anything else
//! is a bare word such as `qwp`, which the consumer accepts or reports as an unknown name.
//!
//! The evaluator is split by what it handles: this file holds the state of one cell's
//! evaluation and the dispatch over expression kinds; [`names`] resolves names, params and
//! import paths, [`text`] strings, interpolation and `env(...)`, [`ops`] the operators and their
//! arithmetic, and [`types`] the type a value yields and how a wrong one is described.

mod names;
mod ops;
mod text;
mod types;

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use super::builtins;
use super::cells::CellEnv;
use super::program::{InstanceId, Program};
use crate::diag::{Code, Diagnostic};
use crate::plan::{Gen, Ty};
use crate::span::Span;
use crate::syntax::ast::{self, ExprKind};
use crate::value::Value;

pub(super) use self::ops::num;

/// Names visible inside a schema or a query, besides params.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub inst: InstanceId,
    /// Name -> value (usually a generator reference) and the type it yields.
    pub locals: Vec<(String, Value, Option<Ty>)>,
    /// Bind placeholders visible so far, with their types (queries only).
    pub binds: Option<Vec<(u32, Ty)>>,
    /// Locals whose definition failed: using them fails quietly, the first error says why.
    pub poisoned: Vec<String>,
}

impl Scope {
    pub fn new(inst: InstanceId) -> Scope {
        Scope {
            inst,
            ..Scope::default()
        }
    }

    pub fn local(&self, name: &str) -> Option<&(String, Value, Option<Ty>)> {
        self.locals.iter().rev().find(|(n, _, _)| n == name)
    }
}

pub struct Eval<'p> {
    pub prog: &'p Program,
    pub cell: &'p CellEnv,
    memo: RefCell<HashMap<(InstanceId, String), Option<Value>>>,
    /// Lowered schemas of this cell: an ingest, every `sample` and every `require` of a query
    /// run name the same schema, which is lowered (and reported on) once.
    pub schemas: RefCell<HashMap<(InstanceId, String), Option<crate::plan::SchemaPlan>>>,
    active: RefCell<Vec<(InstanceId, String)>>,
    /// Params and axes looked up while evaluating, for the unused-name warnings.
    pub used: RefCell<HashSet<(InstanceId, String)>>,
    pub diags: RefCell<Vec<Diagnostic>>,
}

pub type Ev<T> = Option<T>;

impl<'p> Eval<'p> {
    pub fn new(prog: &'p Program, cell: &'p CellEnv) -> Eval<'p> {
        Eval {
            prog,
            cell,
            memo: RefCell::default(),
            schemas: RefCell::default(),
            active: RefCell::default(),
            used: RefCell::default(),
            diags: RefCell::default(),
        }
    }

    pub fn error(&self, d: Diagnostic) {
        self.diags.borrow_mut().push(d);
    }

    /// Reports and returns `None`, for `?` chains.
    pub fn fail<T>(&self, d: Diagnostic) -> Ev<T> {
        self.error(d);
        None
    }

    pub fn mark_used(&self, inst: InstanceId, name: &str) {
        self.used.borrow_mut().insert((inst, name.to_string()));
    }

    pub fn eval(&self, e: &ast::Expr, scope: &Scope) -> Ev<Value> {
        match &e.kind {
            ExprKind::Int(v) => Some(Value::Int(*v)),
            ExprKind::Float(v) => Some(Value::Float(*v)),
            ExprKind::Duration(v) => Some(Value::Duration(*v)),
            ExprKind::Size(v) => Some(Value::Size(*v)),
            ExprKind::Rate(v) => Some(Value::Rate(*v)),
            ExprKind::Percent(v) => Some(Value::Percent(*v)),
            ExprKind::Timestamp(v) => Some(Value::Timestamp(*v)),
            ExprKind::Bool(b) => Some(Value::Bool(*b)),
            ExprKind::None => Some(Value::None),
            ExprKind::Str(s) => self.string_or_format(s, scope),
            ExprKind::Env { name, default } => self.env(name, default.as_deref(), scope),
            ExprKind::List(items) => self.list(items, scope),
            ExprKind::Map(entries) => self.map(entries, scope),
            ExprKind::Placeholder(n) => self.placeholder(n, e.span, scope),
            ExprKind::Path(path) => self.path(path, e.span, scope),
            ExprKind::Call { callee, args } => builtins::call(self, callee, args, e.span, scope),
            ExprKind::Unary(op, x) => self.unary_expr(op, x, e.span, scope),
            ExprKind::Binary(op, a, b) => self.binary_expr(op, a, b, scope),
        }
    }

    /// A list literal: every item is evaluated (and reported on) even after one fails.
    fn list(&self, items: &[ast::Expr], scope: &Scope) -> Ev<Value> {
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for i in items {
            match self.eval(i, scope) {
                Some(v) => out.push(v),
                None => ok = false,
            }
        }
        ok.then_some(Value::List(out))
    }

    /// A map literal: a duplicate key is reported, and every value evaluated.
    fn map(&self, entries: &[(ast::MapKey, ast::Expr)], scope: &Scope) -> Ev<Value> {
        let mut out: Vec<(String, Value)> = Vec::with_capacity(entries.len());
        let mut ok = true;
        for (k, v) in entries {
            if out.iter().any(|(n, _)| n == k.text()) {
                self.error(
                    Diagnostic::error(
                        Code::E0103,
                        k.span(),
                        format!("key `{}` appears twice", k.text()),
                    )
                    .label("duplicate key"),
                );
                ok = false;
                continue;
            }
            match self.eval(v, scope) {
                Some(v) => out.push((k.text().to_string(), v)),
                None => ok = false,
            }
        }
        ok.then_some(Value::Map(out))
    }

    /// `$n`: a bind declared above this one, inside a query's `bind` or `route by`.
    fn placeholder(&self, n: &u32, span: Span, scope: &Scope) -> Ev<Value> {
        match &scope.binds {
            Some(binds) => match binds.iter().find(|(i, _)| i == n) {
                Some(_) => Some(Value::Gen(Box::new(Gen::Bind { index: *n }))),
                None => self.fail(
                    Diagnostic::error(
                        Code::E0601,
                        span,
                        format!("`${n}` is not bound before this point"),
                    )
                    .label("a bind may only use binds declared above it"),
                ),
            },
            None => self.fail(
                Diagnostic::error(Code::E0601, span, format!("`${n}` outside a query bind"))
                    .label("placeholders name binds; they are only valid in `bind` and `route by`"),
            ),
        }
    }
}
