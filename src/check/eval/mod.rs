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

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};

use super::builtins;
use super::cells::CellEnv;
use super::limits::{MAX_DEPTH, MAX_VALUE_LEN};
use super::program::{InstanceId, Program};
use crate::diag::{Code, Diagnostic};
use crate::plan::{Gen, Ty};
use crate::span::Span;
use crate::syntax::ast::{self, ExprKind};
use crate::value::{Excess, Value};

pub(super) use self::ops::num;

/// Names visible inside a schema or a query, besides params.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub inst: InstanceId,
    /// Name -> value (usually a generator reference) and the type it yields.
    locals: Vec<(String, Value, Option<Ty>)>,
    /// Name -> its last place in `locals`: a schema's columns are all locals, and a search
    /// through them for every name made checking a long schema quadratic.
    index: HashMap<String, usize>,
    /// Bind placeholders visible so far, with their types (queries only).
    pub binds: Option<Vec<(u32, Ty)>>,
    /// Locals whose definition failed: using them fails quietly, the first error says why.
    pub poisoned: Vec<String>,
    /// The queries `issued(q)` may count (queries only).
    pub run: RunQueries,
}

/// Which queries a query's `issued(q)` may name.
#[derive(Clone, Debug, Default)]
pub enum RunQueries {
    /// Not in a query of a query run (a schema, a request template): `issued` is refused.
    #[default]
    None,
    /// A query checked on its own, outside any run: any query may be named.
    Any,
    /// A query lowered for a query run: the run's queries, in order, by the module instance
    /// they are declared in and their name.
    Of(Vec<(InstanceId, String)>),
}

impl Scope {
    pub fn new(inst: InstanceId) -> Scope {
        Scope {
            inst,
            ..Scope::default()
        }
    }

    pub fn local(&self, name: &str) -> Option<&(String, Value, Option<Ty>)> {
        self.index.get(name).map(|&i| &self.locals[i])
    }

    /// Adds a local; it hides an earlier one of the same name.
    pub fn push_local(&mut self, name: String, value: Value, ty: Option<Ty>) {
        self.index.insert(name.clone(), self.locals.len());
        self.locals.push((name, value, ty));
    }

    pub fn locals(&self) -> &[(String, Value, Option<Ty>)] {
        &self.locals
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
    /// How deeply evaluation nests now (see [`MAX_DEPTH`]).
    depth: Cell<usize>,
    /// Whether a nesting limit was reported: evaluation unwinds from the first quietly.
    deep_reported: Cell<bool>,
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
            depth: Cell::new(0),
            deep_reported: Cell::new(false),
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

    /// Evaluates one expression. Evaluation nests (an expression inside another, a param read
    /// while evaluating one) at most [`MAX_DEPTH`] levels, and a value built from others is at
    /// most [`MAX_VALUE_LEN`] long and [`MAX_DEPTH`] deep: each passes a positioned error.
    pub fn eval(&self, e: &ast::Expr, scope: &Scope) -> Ev<Value> {
        let depth = self.depth.get();
        if depth >= MAX_DEPTH {
            return self.too_deep(
                Diagnostic::error(
                    Code::E0209,
                    e.span,
                    format!("evaluation nests more than {MAX_DEPTH} levels deep here"),
                )
                .label("too deep")
                .note("expressions inside expressions and params read while evaluating a param all count"),
            );
        }
        self.depth.set(depth + 1);
        let v = self.eval_kind(e, scope);
        self.depth.set(depth);
        match e.kind {
            ExprKind::Str(_)
            | ExprKind::List(_)
            | ExprKind::Map(_)
            | ExprKind::Call { .. }
            | ExprKind::Binary(..) => self.bounded(v?, e.span),
            _ => v,
        }
    }

    /// `v` if it is within the length and depth a value may have; otherwise an error at `span`,
    /// where it was built.
    pub fn bounded(&self, v: Value, span: Span) -> Ev<Value> {
        match v.measure(MAX_VALUE_LEN, MAX_DEPTH) {
            Ok(_) => Some(v),
            Err(Excess::Long) => self.fail(too_long(span)),
            Err(Excess::Deep) => self.fail(
                Diagnostic::error(
                    Code::E0209,
                    span,
                    format!("this value nests more than {MAX_DEPTH} levels deep"),
                )
                .label("lists, maps and generators built on each other")
                .note("every later step walks a value level by level"),
            ),
        }
    }

    /// Adds a part's length to `len`; an error at `span` once the whole passes the limit.
    pub fn grow(&self, len: &mut u64, part: &Value, span: Span) -> Ev<()> {
        let n = part
            .measure(MAX_VALUE_LEN, MAX_DEPTH)
            .unwrap_or(MAX_VALUE_LEN + 1);
        *len = len.saturating_add(n);
        if *len > MAX_VALUE_LEN {
            return self.fail(too_long(span));
        }
        Some(())
    }

    /// Reports the first nesting error of this evaluation only: everything above it fails
    /// with it, quietly.
    fn too_deep<T>(&self, d: Diagnostic) -> Ev<T> {
        if !self.deep_reported.replace(true) {
            self.error(d);
        }
        None
    }

    fn eval_kind(&self, e: &ast::Expr, scope: &Scope) -> Ev<Value> {
        match &e.kind {
            ExprKind::Int(v) => Some(Value::Int(*v)),
            ExprKind::Float(v) => Some(Value::Float(*v)),
            ExprKind::Duration(v) => Some(Value::Duration(*v)),
            ExprKind::Size(v) => Some(Value::Size(*v)),
            ExprKind::Rate(v) => Some(Value::Rate(*v)),
            ExprKind::Percent(v) => Some(Value::Percent(*v)),
            ExprKind::Bandwidth(v) => Some(Value::Bandwidth(*v)),
            ExprKind::Timestamp(v) => Some(Value::Timestamp(*v)),
            ExprKind::Bool(b) => Some(Value::Bool(*b)),
            ExprKind::None => Some(Value::None),
            ExprKind::Str(s) => self.string_or_format(s, scope),
            ExprKind::Env { name, default } => self.env(name, default.as_deref(), scope),
            ExprKind::List(items) => self.list(items, e.span, scope),
            ExprKind::Map(entries) => self.map(entries, e.span, scope),
            ExprKind::Placeholder(n) => self.placeholder(n, e.span, scope),
            ExprKind::Path(path) => self.path(path, e.span, scope),
            ExprKind::Call { callee, args } => builtins::call(self, callee, args, e.span, scope),
            ExprKind::Unary(op, x) => self.unary_expr(op, x, e.span, scope),
            ExprKind::Binary(op, a, b) => self.binary_expr(op, a, b, scope),
        }
    }

    /// A list literal: every item is evaluated (and reported on) even after one fails.
    fn list(&self, items: &[ast::Expr], span: Span, scope: &Scope) -> Ev<Value> {
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        let mut len = 0;
        for i in items {
            match self.eval(i, scope) {
                Some(v) => {
                    self.grow(&mut len, &v, span)?;
                    out.push(v);
                }
                None => ok = false,
            }
        }
        ok.then_some(Value::List(out))
    }

    /// A map literal: a duplicate key is reported, and every value evaluated.
    fn map(&self, entries: &[(ast::MapKey, ast::Expr)], span: Span, scope: &Scope) -> Ev<Value> {
        let mut out: Vec<(String, Value)> = Vec::with_capacity(entries.len());
        let mut ok = true;
        let mut len = 0;
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
                Some(v) => {
                    self.grow(&mut len, &v, span)?;
                    out.push((k.text().to_string(), v));
                }
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

fn too_long(span: Span) -> Diagnostic {
    Diagnostic::error(
        Code::E0210,
        span,
        format!("this value takes more than {MAX_VALUE_LEN} bytes"),
    )
    .label("built here")
    .note("a value may take at most 16 MiB, its text and every item counted")
}
