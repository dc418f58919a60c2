//! Evaluation of expressions to values, for one matrix cell. Names resolve in this order: locals
//! (the series variable, columns, lets), matrix axes (root file only), params, then anything else
//! is a bare word such as `qwp`, which the consumer accepts or reports as an unknown name.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use super::builtins;
use super::cells::CellEnv;
use super::program::{Decl, InstanceId, Program};
use crate::diag::{suggest, Code, Diagnostic};
use crate::plan::{Gen, Ty};
use crate::span::{Ident, Span};
use crate::syntax::ast::{self, BinOp, ExprKind, UnOp};
use crate::value::{Text, TextPart, Value};

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

    /// The value of a param in an instance: a `--param` override (root), an import argument,
    /// or its declared value.
    pub fn param(&self, inst: InstanceId, p: &ast::Param) -> Ev<Value> {
        let key = (inst, p.name.name.clone());
        if let Some(v) = self.memo.borrow().get(&key) {
            return v.clone();
        }
        if self.active.borrow().contains(&key) {
            return self.fail(
                Diagnostic::error(
                    Code::E0208,
                    p.name.span,
                    format!("param `{}` depends on itself", p.name),
                )
                .label("this definition refers back to itself"),
            );
        }
        self.active.borrow_mut().push(key.clone());
        let value = if let Some(e) = self.cell.override_for(inst, &p.name.name) {
            self.eval(e, &Scope::new(InstanceId::ROOT))
        } else if let Some((e, parent)) = self.prog.import_arg(inst, &p.name.name) {
            self.eval(e, &Scope::new(parent))
        } else {
            self.eval(&p.value, &Scope::new(inst))
        };
        let value = value.and_then(|v| self.check_param_type(p, v));
        self.active.borrow_mut().pop();
        self.memo.borrow_mut().insert(key, value.clone());
        value
    }

    fn check_param_type(&self, p: &ast::Param, v: Value) -> Ev<Value> {
        let Some(ty) = &p.ty else { return Some(v) };
        let ok = match ty.name.name.as_str() {
            "int" | "long" | "short" | "byte" => matches!(v, Value::Int(_)),
            "double" | "float" => matches!(v, Value::Float(_) | Value::Int(_)),
            "varchar" | "string" | "symbol" => matches!(v, Value::Str(_) | Value::Symbol(_)),
            "boolean" | "bool" => matches!(v, Value::Bool(_)),
            "timestamp" => matches!(v, Value::Timestamp(_)),
            "duration" => matches!(v, Value::Duration(_)),
            "rate" => matches!(v, Value::Rate(_)),
            "size" => matches!(v, Value::Size(_)),
            "percent" => matches!(v, Value::Percent(_)),
            "list" => matches!(v, Value::List(_)),
            other => {
                return self.fail(
                    Diagnostic::error(Code::E0206, ty.span, format!("unknown param type `{other}`"))
                        .label("not a type")
                        .note("param types: int, long, double, varchar, boolean, timestamp, duration, rate, size, percent, list"),
                );
            }
        };
        if ok {
            Some(match (ty.name.name.as_str(), v) {
                ("double" | "float", Value::Int(i)) => Value::Float(i as f64),
                (_, v) => v,
            })
        } else {
            self.fail(
                Diagnostic::error(
                    Code::E0201,
                    p.value.span,
                    format!(
                        "param `{}` is declared `{}` but its value is {}",
                        p.name,
                        ty.name,
                        v.kind()
                    ),
                )
                .label(format!("expected {}", ty.name)),
            )
        }
    }

    /// Looks a single name up; `None` when it names nothing (a bare word).
    pub fn lookup(&self, name: &Ident, scope: &Scope) -> Option<Ev<Value>> {
        if let Some((_, v, _)) = scope.local(&name.name) {
            return Some(Some(v.clone()));
        }
        if scope.inst == InstanceId::ROOT {
            if let Some(v) = self.cell.axes.get(&name.name) {
                self.mark_used(InstanceId::ROOT, &name.name);
                return Some(Some(v.clone()));
            }
        }
        match self.prog.module_of(scope.inst).decls.get(&name.name) {
            Some(Decl::Param(p)) => {
                self.mark_used(scope.inst, &name.name);
                Some(self.param(scope.inst, p))
            }
            // A target's name is a word like any other, so a param or axis can name the
            // target an `into` uses (`param db = questdb`, `--param db=victoria`).
            Some(Decl::Target(_)) => None,
            Some(other) => Some(
                self.fail(
                    Diagnostic::error(
                        Code::E0201,
                        name.span,
                        format!("`{}` is a {}, not a value", name, other.kind()),
                    )
                    .label(format!("a {} cannot be used here", other.kind())),
                ),
            ),
            None => None,
        }
    }

    /// Resolves `alias.alias.name` to the instance and declaration it names.
    pub fn resolve_decl<'a>(
        &'a self,
        path: &[Ident],
        scope_inst: InstanceId,
    ) -> Result<(InstanceId, &'p Decl, usize), Diagnostic> {
        let mut inst = scope_inst;
        for (i, part) in path.iter().enumerate() {
            let module = self.prog.module_of(inst);
            match module.decls.get(&part.name) {
                Some(Decl::Import(_)) if i + 1 < path.len() => {
                    inst = self.prog.instance(inst).imports[&part.name];
                }
                Some(d) => return Ok((inst, d, i + 1)),
                None => {
                    let candidates: Vec<&str> = module.decls.keys().map(String::as_str).collect();
                    let mut d = Diagnostic::error(
                        Code::E0104,
                        part.span,
                        if i == 0 {
                            format!("unknown name `{part}`")
                        } else {
                            format!("`{}` has no member `{part}`", path[i - 1])
                        },
                    )
                    .label("not declared");
                    if let Some(s) = suggest(&part.name, candidates.iter().copied()) {
                        d = d.note(format!("did you mean `{s}`?"));
                    }
                    return Err(d);
                }
            }
        }
        Err(Diagnostic::error(
            Code::E0105,
            path.last().map_or(Span::default(), |p| p.span),
            "an import alias names a module, not a value",
        )
        .label("name one of its declarations: `alias.name`"))
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
            ExprKind::Env { name, default } => {
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
                                    format!(
                                        "an env default must be a string, found {}",
                                        other.kind()
                                    ),
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
            ExprKind::List(items) => {
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
            ExprKind::Map(entries) => {
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
            ExprKind::Placeholder(n) => match &scope.binds {
                Some(binds) => match binds.iter().find(|(i, _)| i == n) {
                    Some(_) => Some(Value::Gen(Box::new(Gen::Bind { index: *n }))),
                    None => self.fail(
                        Diagnostic::error(
                            Code::E0601,
                            e.span,
                            format!("`${n}` is not bound before this point"),
                        )
                        .label("a bind may only use binds declared above it"),
                    ),
                },
                None => self.fail(
                    Diagnostic::error(Code::E0601, e.span, format!("`${n}` outside a query bind"))
                        .label(
                            "placeholders name binds; they are only valid in `bind` and `route by`",
                        ),
                ),
            },
            ExprKind::Path(path) => self.path(path, e.span, scope),
            ExprKind::Call { callee, args } => builtins::call(self, callee, args, e.span, scope),
            ExprKind::Unary(op, x) => {
                let v = self.eval(x, scope)?;
                match (op, v) {
                    (UnOp::Neg, Value::Int(i)) => match i.checked_neg() {
                        Some(n) => Some(Value::Int(n)),
                        None => self.fail(
                            Diagnostic::error(Code::E0203, e.span, "arithmetic overflow")
                                .label("the negation of the smallest integer does not fit"),
                        ),
                    },
                    (UnOp::Neg, Value::Float(f)) => Some(Value::Float(-f)),
                    (UnOp::Neg, Value::Duration(d)) => Some(Value::Duration(-d)),
                    (UnOp::Not, Value::Bool(b)) => Some(Value::Bool(!b)),
                    (op, v) => self.fail(
                        Diagnostic::error(
                            Code::E0201,
                            x.span,
                            format!(
                                "`{}` does not apply to {}",
                                if *op == UnOp::Neg { "-" } else { "not" },
                                v.kind()
                            ),
                        )
                        .label(self.found(&v)),
                    ),
                }
            }
            ExprKind::Binary(op, a, b) => {
                // `and`/`or` short-circuit so that `when` filters can guard later tests.
                let va = self.eval(a, scope)?;
                if let (BinOp::And | BinOp::Or, Value::Bool(x)) = (op, &va) {
                    if (*op == BinOp::And && !x) || (*op == BinOp::Or && *x) {
                        return Some(Value::Bool(*x));
                    }
                }
                let vb = self.eval(b, scope)?;
                self.binary(*op, va, vb, a, b, scope)
            }
        }
    }

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
            names.extend(scope.locals.iter().map(|(n, _, _)| n.clone()));
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

    fn path(&self, path: &[Ident], span: Span, scope: &Scope) -> Ev<Value> {
        let first = &path[0];
        if scope.poisoned.contains(&first.name) {
            return None;
        }
        if path.len() == 1 {
            return match self.lookup(first, scope) {
                Some(v) => v,
                None => Some(Value::Symbol(first.name.clone())),
            };
        }
        // `load.via`: the implicit axis a `via [a, b]` list adds.
        if path.len() == 2 && path[1].name == "via" && scope.inst == InstanceId::ROOT {
            let axis = format!("{}.via", first.name);
            if let Some(v) = self.cell.axes.get(&axis) {
                return Some(v.clone());
            }
        }
        // `w.start`: a field of a local.
        if let Some((_, v, ty)) = scope.local(&first.name) {
            if path.len() == 2 && matches!(ty, Some(Ty::Window)) {
                let field = &path[1];
                if field.name == "start" || field.name == "end" {
                    return Some(Value::Gen(Box::new(Gen::Field {
                        of: Box::new(match v {
                            Value::Gen(g) => (**g).clone(),
                            _ => unreachable!("window locals are generators"),
                        }),
                        field: field.name.clone(),
                    })));
                }
                return self.fail(
                    Diagnostic::error(
                        Code::E0105,
                        field.span,
                        format!("a window has no field `{}`", field.name),
                    )
                    .label("expected `start` or `end`"),
                );
            }
            return self.fail(
                Diagnostic::error(
                    Code::E0105,
                    path[1].span,
                    format!("`{}` has no fields", first.name),
                )
                .label("not a window"),
            );
        }
        match self.resolve_decl(path, scope.inst) {
            Ok((inst, Decl::Param(p), used)) if used == path.len() => {
                self.mark_used(inst, &p.name.name);
                self.param(inst, p)
            }
            Ok((_, d, used)) if used == path.len() => self.fail(
                Diagnostic::error(
                    Code::E0201,
                    span,
                    format!("`{}` is a {}, not a value", join(path), d.kind()),
                )
                .label(format!("a {} cannot be used here", d.kind())),
            ),
            Ok((_, d, used)) => self.fail(
                Diagnostic::error(
                    Code::E0105,
                    path[used].span,
                    format!("a {} has no member `{}` here", d.kind(), path[used]),
                )
                .label("unexpected member"),
            ),
            Err(d) => self.fail(d),
        }
    }

    /// A string literal as a value: text, or a `format` generator when an interpolation is
    /// generated (`"host_${n}"` in a series column).
    fn string_or_format(&self, s: &ast::StrLit, scope: &Scope) -> Ev<Value> {
        let mut generated = false;
        let mut parts: Vec<Result<String, Gen>> = Vec::new();
        for p in &s.parts {
            match p {
                ast::StrPart::Text(t) => parts.push(Ok(t.clone())),
                ast::StrPart::Interp(e) => {
                    let v = self.eval(e, scope)?;
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
                    Some(Value::Str(x)) => t.append(x),
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
        scope.locals.iter().any(|(n, _, _)| n == w)
    }

    fn binary(
        &self,
        op: BinOp,
        a: Value,
        b: Value,
        ea: &ast::Expr,
        eb: &ast::Expr,
        scope: &Scope,
    ) -> Ev<Value> {
        use Value::*;
        let span = ea.span.to(eb.span);
        let overflow = || {
            Diagnostic::error(Code::E0203, span, "arithmetic overflow")
                .label("the result does not fit")
        };
        if let (Gen(_), _) | (_, Gen(_)) = (&a, &b) {
            return self.gen_arith(op, a, b, ea, eb, scope);
        }
        let bad = |this: &Self| {
            let (which, v) = if matches!(a, Symbol(_)) {
                (ea, &a)
            } else {
                (eb, &b)
            };
            if matches!(v, Symbol(_)) && !matches!(op, BinOp::Eq | BinOp::Ne | BinOp::In) {
                return this.fail(this.mismatch(which.span, "a value", v, scope));
            }
            this.fail(
                Diagnostic::error(
                    Code::E0201,
                    span,
                    format!(
                        "`{}` does not apply to {} and {}",
                        op.as_str(),
                        a.kind(),
                        b.kind()
                    ),
                )
                .label(format!("{} {} {}", a.kind(), op.as_str(), b.kind())),
            )
        };
        let r = match op {
            BinOp::And | BinOp::Or => match (&a, &b) {
                (Bool(x), Bool(y)) => Bool(if op == BinOp::And { *x && *y } else { *x || *y }),
                _ => return bad(self),
            },
            BinOp::Eq | BinOp::Ne => {
                let eq = values_equal(&a, &b);
                if eq.is_none() {
                    return bad(self);
                }
                Bool(eq == Some(op == BinOp::Eq))
            }
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                let Some(ord) = compare(&a, &b) else {
                    return bad(self);
                };
                Bool(match op {
                    BinOp::Lt => ord.is_lt(),
                    BinOp::Le => ord.is_le(),
                    BinOp::Gt => ord.is_gt(),
                    _ => ord.is_ge(),
                })
            }
            BinOp::In => match &b {
                List(items) => Bool(items.iter().any(|x| values_equal(&a, x) == Some(true))),
                Range(lo, hi) => match a {
                    Int(i) => Bool(*lo <= i && i < *hi),
                    _ => return bad(self),
                },
                _ => return bad(self),
            },
            BinOp::Range => match (&a, &b) {
                (Int(x), Int(y)) => Range(*x, *y),
                _ => return bad(self),
            },
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => {
                match arith(op, &a, &b) {
                    Ok(Some(v)) => v,
                    Ok(Option::None) => return bad(self),
                    Err(Arith::Overflow) => return self.fail(overflow()),
                    Err(Arith::DivZero) => {
                        return self.fail(
                            Diagnostic::error(Code::E0203, eb.span, "division by zero")
                                .label("this is zero"),
                        )
                    }
                }
            }
        };
        Some(r)
    }

    fn gen_arith(
        &self,
        op: BinOp,
        a: Value,
        b: Value,
        ea: &ast::Expr,
        eb: &ast::Expr,
        scope: &Scope,
    ) -> Ev<Value> {
        let span = ea.span.to(eb.span);
        if !matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div) {
            return self.fail(
                Diagnostic::error(
                    Code::E0201,
                    span,
                    format!("`{}` does not apply to generators", op.as_str()),
                )
                .label("only + - * / combine generated values"),
            );
        }
        let ta = self.value_ty(&a, scope);
        let tb = self.value_ty(&b, scope);
        let (Some(ta), Some(tb)) = (ta, tb) else {
            let (e, v) = if self.value_ty(&a, scope).is_none() {
                (ea, &a)
            } else {
                (eb, &b)
            };
            return self.fail(self.mismatch(e.span, "a number, duration or timestamp", v, scope));
        };
        if arith_ty(op, &ta, &tb).is_none() {
            return self.fail(
                Diagnostic::error(
                    Code::E0201,
                    span,
                    format!("`{}` does not apply to {ta} and {tb}", op.as_str()),
                )
                .label("incompatible generated values"),
            );
        }
        let to_gen = |v: Value| match v {
            Value::Gen(g) => *g,
            v => Gen::Const { value: v },
        };
        Some(Value::Gen(Box::new(Gen::Arith {
            op: op.as_str().to_string(),
            lhs: Box::new(to_gen(a)),
            rhs: Box::new(to_gen(b)),
        })))
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
            Gen::SeriesIndex | Gen::Seq { .. } | Gen::Zipf { .. } => Ty::Long,
            Gen::Uniform { lo, .. } => return self.value_ty(lo, scope),
            Gen::Normal { .. } | Gen::Walk { .. } => Ty::Double,
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

fn join(path: &[Ident]) -> String {
    path.iter()
        .map(|p| p.name.as_str())
        .collect::<Vec<_>>()
        .join(".")
}

/// The result type of generated arithmetic.
pub fn arith_ty(op: BinOp, a: &Ty, b: &Ty) -> Option<Ty> {
    use Ty::*;
    Some(match (op, a, b) {
        (_, Long, Long) => Long,
        (_, Long | Double, Long | Double) => Double,
        (BinOp::Add | BinOp::Sub, Timestamp, Duration) => Timestamp,
        (BinOp::Add, Duration, Timestamp) => Timestamp,
        (BinOp::Sub, Timestamp, Timestamp) => Duration,
        (BinOp::Add | BinOp::Sub, Duration, Duration) => Duration,
        (BinOp::Mul | BinOp::Div, Duration, Long | Double) => Duration,
        (BinOp::Add, Str, Str) => Str,
        _ => return None,
    })
}

/// Equality across kinds: a bare word equals a string with the same text; `none` equals only
/// itself. `None` when the two kinds cannot be compared.
pub fn values_equal(a: &Value, b: &Value) -> Option<bool> {
    use Value::*;
    Some(match (a, b) {
        (None, None) => true,
        (None, _) | (_, None) => false,
        (Symbol(x), Symbol(y)) => x == y,
        (Symbol(x), Str(t)) | (Str(t), Symbol(x)) => t.as_lit().as_deref() == Some(x.as_str()),
        (Str(x), Str(y)) => x == y,
        (Int(x), Int(y)) => x == y,
        (Int(x), Float(y)) | (Float(y), Int(x)) => (*x as f64) == *y,
        (Float(x), Float(y)) => x == y,
        (Bool(x), Bool(y)) => x == y,
        (Duration(x), Duration(y)) | (Timestamp(x), Timestamp(y)) => x == y,
        (Size(x), Size(y)) => x == y,
        (Rate(x), Rate(y)) | (Percent(x), Percent(y)) => x == y,
        (List(x), List(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(p, q)| values_equal(p, q) == Some(true))
        }
        _ => return Option::None,
    })
}

pub fn compare(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    use Value::*;
    match (a, b) {
        (Int(x), Int(y)) => Some(x.cmp(y)),
        (Int(x), Float(y)) => (*x as f64).partial_cmp(y),
        (Float(x), Int(y)) => x.partial_cmp(&(*y as f64)),
        (Float(x), Float(y)) => x.partial_cmp(y),
        (Duration(x), Duration(y)) | (Timestamp(x), Timestamp(y)) => Some(x.cmp(y)),
        (Size(x), Size(y)) => Some(x.cmp(y)),
        (Rate(x), Rate(y)) | (Percent(x), Percent(y)) => x.partial_cmp(y),
        _ => Option::None,
    }
}

enum Arith {
    Overflow,
    DivZero,
}

fn arith(op: BinOp, a: &Value, b: &Value) -> Result<Option<Value>, Arith> {
    use Value::*;
    let float = |x: f64, y: f64| -> Result<f64, Arith> {
        let r = match op {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            BinOp::Div if y == 0.0 => return Err(Arith::DivZero),
            BinOp::Div => x / y,
            _ if y == 0.0 => return Err(Arith::DivZero),
            _ => x % y,
        };
        if r.is_finite() {
            Ok(r)
        } else {
            Err(Arith::Overflow)
        }
    };
    let iop = |x: i64, y: i64| -> Result<i64, Arith> {
        match op {
            BinOp::Add => x.checked_add(y).ok_or(Arith::Overflow),
            BinOp::Sub => x.checked_sub(y).ok_or(Arith::Overflow),
            BinOp::Mul => x.checked_mul(y).ok_or(Arith::Overflow),
            BinOp::Div if y == 0 => Err(Arith::DivZero),
            BinOp::Div => x.checked_div(y).ok_or(Arith::Overflow),
            _ if y == 0 => Err(Arith::DivZero),
            _ => x.checked_rem(y).ok_or(Arith::Overflow),
        }
    };
    Ok(Some(match (op, a, b) {
        (_, Int(x), Int(y)) => Int(iop(*x, *y)?),
        (_, Int(_) | Float(_), Int(_) | Float(_)) => Float(float(num(a), num(b))?),
        (BinOp::Add, Str(x), Str(y)) => {
            let mut t = x.clone();
            t.append(y.clone());
            Str(t)
        }
        (BinOp::Add | BinOp::Sub, Duration(x), Duration(y)) => Duration(iop(*x, *y)?),
        (BinOp::Mul | BinOp::Div, Duration(x), Int(y)) => Duration(iop(*x, *y)?),
        (BinOp::Mul, Int(x), Duration(y)) => Duration(iop(*x, *y)?),
        (BinOp::Mul | BinOp::Div, Duration(x), Float(y)) => {
            Duration(float(*x as f64, *y)?.round() as i64)
        }
        (BinOp::Div, Duration(x), Duration(y)) => Float(float(*x as f64, *y as f64)?),
        (BinOp::Add | BinOp::Sub, Timestamp(x), Duration(y)) => Timestamp(iop(*x, *y)?),
        (BinOp::Add, Duration(x), Timestamp(y)) => Timestamp(iop(*x, *y)?),
        (BinOp::Sub, Timestamp(x), Timestamp(y)) => Duration(iop(*x, *y)?),
        (BinOp::Add | BinOp::Sub, Size(x), Size(y)) => {
            let r = if op == BinOp::Add {
                x.checked_add(*y)
            } else {
                x.checked_sub(*y)
            };
            Size(r.ok_or(Arith::Overflow)?)
        }
        (BinOp::Mul, Size(x), Int(y)) | (BinOp::Mul, Int(y), Size(x)) => Size(
            x.checked_mul(u64::try_from(*y).map_err(|_| Arith::Overflow)?)
                .ok_or(Arith::Overflow)?,
        ),
        (BinOp::Mul, Rate(x), Int(_) | Float(_)) => Rate(float(*x, num(b))?),
        (BinOp::Mul, Int(_) | Float(_), Rate(y)) => Rate(float(num(a), *y)?),
        (BinOp::Div, Rate(x), Int(_) | Float(_)) => Rate(float(*x, num(b))?),
        (BinOp::Add | BinOp::Sub, Rate(x), Rate(y)) => Rate(float(*x, *y)?),
        (BinOp::Mul, Percent(x), Int(_) | Float(_)) => Percent(float(*x, num(b))?),
        _ => return Ok(Option::None),
    }))
}

fn num(v: &Value) -> f64 {
    match v {
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        _ => f64::NAN,
    }
}
