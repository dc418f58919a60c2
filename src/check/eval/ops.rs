//! The operators: unary and binary on plain values (checked arithmetic, comparisons, `in`,
//! ranges) and on generators, which build a `Gen::Arith` when the types combine.

use super::{Ev, Eval, Scope};
use crate::diag::{Code, Diagnostic};
use crate::plan::{Gen, Ty};
use crate::span::Span;
use crate::syntax::ast::{self, BinOp, UnOp};
use crate::value::Value;

impl Eval<'_> {
    pub(super) fn unary_expr(
        &self,
        op: &UnOp,
        x: &ast::Expr,
        span: Span,
        scope: &Scope,
    ) -> Ev<Value> {
        let v = self.eval(x, scope)?;
        match (op, v) {
            (UnOp::Neg, Value::Int(i)) => match i.checked_neg() {
                Some(n) => Some(Value::Int(n)),
                None => self.fail(
                    Diagnostic::error(Code::E0203, span, "arithmetic overflow")
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

    pub(super) fn binary_expr(
        &self,
        op: &BinOp,
        a: &ast::Expr,
        b: &ast::Expr,
        scope: &Scope,
    ) -> Ev<Value> {
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
        (Rate(x), Rate(y)) | (Percent(x), Percent(y)) | (Bandwidth(x), Bandwidth(y)) => x == y,
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
        (Rate(x), Rate(y)) | (Percent(x), Percent(y)) | (Bandwidth(x), Bandwidth(y)) => {
            x.partial_cmp(y)
        }
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

pub(in crate::check) fn num(v: &Value) -> f64 {
    match v {
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        _ => f64::NAN,
    }
}
