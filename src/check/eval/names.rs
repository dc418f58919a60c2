//! Names: locals, matrix axes and params of one instance, paths through import aliases, and
//! params evaluated once per instance (memoized, with cycles reported).

use super::{Ev, Eval, Scope};
use crate::check::limits::MAX_PARAM_CHAIN;
use crate::check::program::{Decl, InstanceId};
use crate::diag::{suggest, Code, Diagnostic};
use crate::plan::{Gen, Ty};
use crate::span::{Ident, Span};
use crate::syntax::ast;
use crate::value::Value;

impl<'p> Eval<'p> {
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
        if self.active.borrow().len() >= MAX_PARAM_CHAIN {
            return self.too_deep(
                Diagnostic::error(
                    Code::E0209,
                    p.name.span,
                    format!("a chain of more than {MAX_PARAM_CHAIN} params, each read by the one before"),
                )
                .label(format!("param number {} of the chain", MAX_PARAM_CHAIN + 1))
                .note(format!("the chain: {}", chain(&self.active.borrow(), &p.name.name))),
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
            "bandwidth" => matches!(v, Value::Bandwidth(_)),
            "list" => matches!(v, Value::List(_)),
            other => {
                return self.fail(
                    Diagnostic::error(Code::E0206, ty.span, format!("unknown param type `{other}`"))
                        .label("not a type")
                        .note("param types: int, long, double, varchar, boolean, timestamp, duration, rate, size, percent, bandwidth, list"),
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

    pub(super) fn path(&self, path: &[Ident], span: Span, scope: &Scope) -> Ev<Value> {
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
}

fn join(path: &[Ident]) -> String {
    path.iter()
        .map(|p| p.name.as_str())
        .collect::<Vec<_>>()
        .join(".")
}

/// A chain of params as `a -> b -> ... -> y -> z`, its middle left out.
fn chain(active: &[(InstanceId, String)], last: &str) -> String {
    let names: Vec<&str> = active
        .iter()
        .map(|(_, n)| n.as_str())
        .chain([last])
        .collect();
    if names.len() <= 8 {
        return names.join(" -> ");
    }
    format!(
        "{} -> ... -> {}",
        names[..3].join(" -> "),
        names[names.len() - 3..].join(" -> ")
    )
}
