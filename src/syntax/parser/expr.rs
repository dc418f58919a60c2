//! Walkers of expressions (precedence by a Pratt parser), primaries and string literals.

use std::sync::LazyLock;

use pest::iterators::Pair;
use pest::pratt_parser::{Assoc, Op, PrattParser};

use super::{is_operand, last, unexpected, Res, Rule, Walker};
use crate::diag::{Code, Diagnostic};
use crate::span::Span;
use crate::syntax::ast::*;
use crate::syntax::literal;

static PRATT: LazyLock<PrattParser<Rule>> = LazyLock::new(|| {
    PrattParser::new()
        .op(Op::infix(Rule::or, Assoc::Left))
        .op(Op::infix(Rule::and, Assoc::Left))
        .op(Op::prefix(Rule::not))
        .op(Op::infix(Rule::eq, Assoc::Left)
            | Op::infix(Rule::ne, Assoc::Left)
            | Op::infix(Rule::lt, Assoc::Left)
            | Op::infix(Rule::le, Assoc::Left)
            | Op::infix(Rule::gt, Assoc::Left)
            | Op::infix(Rule::ge, Assoc::Left)
            | Op::infix(Rule::member, Assoc::Left))
        .op(Op::infix(Rule::range, Assoc::Left))
        .op(Op::infix(Rule::add, Assoc::Left) | Op::infix(Rule::sub, Assoc::Left))
        .op(Op::infix(Rule::mul, Assoc::Left)
            | Op::infix(Rule::div, Assoc::Left)
            | Op::infix(Rule::rem, Assoc::Left))
        .op(Op::prefix(Rule::neg))
});

impl Walker {
    pub fn expr(&self, p: Pair<'_, Rule>) -> Res<Expr> {
        debug_assert_eq!(p.as_rule(), Rule::expr);
        // `2016-01-01` parses as 2016 - 1 - 1; nobody means that.
        let text = p.as_str().trim_end();
        let b = text.as_bytes();
        if b.len() == 10
            && b[4] == b'-'
            && b[7] == b'-'
            && b.iter()
                .enumerate()
                .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
        {
            return Err(Diagnostic::error(
                Code::E0005,
                self.span(&p),
                format!("`{text}` is a date without a time"),
            )
            .label(format!("write `{text}T00:00:00Z`"))
            .note(
                "timestamps are RFC 3339 with a time and a zone; a bare date would be subtraction",
            ));
        }
        // Pest's Pratt parser recurses on prefix operators and the tree recurses on every operator;
        // bounding both here keeps every later walk over the tree shallow.
        let operators = p
            .clone()
            .into_inner()
            .filter(|c| !is_operand(c.as_rule()))
            .count();
        if operators > crate::syntax::MAX_EXPR_OPERATORS {
            return Err(Diagnostic::error(
                Code::E0002,
                self.span(&p),
                format!(
                    "expression has {operators} operators; at most {} are allowed",
                    crate::syntax::MAX_EXPR_OPERATORS
                ),
            )
            .label("split this expression into params"));
        }
        PRATT
            .map_primary(|prim| self.primary(prim))
            .map_prefix(|op, rhs| {
                let rhs = rhs?;
                let span = self.span(&op).to(rhs.span);
                let op = match op.as_rule() {
                    Rule::neg => UnOp::Neg,
                    Rule::not => UnOp::Not,
                    r => unexpected(r, "prefix"),
                };
                Ok(Expr {
                    kind: ExprKind::Unary(op, Box::new(rhs)),
                    span,
                })
            })
            .map_infix(|lhs, op, rhs| {
                let (lhs, rhs) = (lhs?, rhs?);
                let span = lhs.span.to(rhs.span);
                let op = match op.as_rule() {
                    Rule::or => BinOp::Or,
                    Rule::and => BinOp::And,
                    Rule::eq => BinOp::Eq,
                    Rule::ne => BinOp::Ne,
                    Rule::lt => BinOp::Lt,
                    Rule::le => BinOp::Le,
                    Rule::gt => BinOp::Gt,
                    Rule::ge => BinOp::Ge,
                    Rule::member => BinOp::In,
                    Rule::range => BinOp::Range,
                    Rule::add => BinOp::Add,
                    Rule::sub => BinOp::Sub,
                    Rule::mul => BinOp::Mul,
                    Rule::div => BinOp::Div,
                    Rule::rem => BinOp::Rem,
                    r => unexpected(r, "infix"),
                };
                Ok(Expr {
                    kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                    span,
                })
            })
            .parse(p.into_inner())
    }

    pub(super) fn primary(&self, p: Pair<'_, Rule>) -> Res<Expr> {
        let span = self.span(&p);
        let s = p.as_str();
        let lit = |r: Result<ExprKind, String>| r.map_err(|m| self.invalid(&p, m));
        let kind = match p.as_rule() {
            Rule::int => lit(literal::int(s).map(ExprKind::Int))?,
            Rule::float => lit(literal::float(s).map(ExprKind::Float))?,
            Rule::duration => lit(literal::duration(s).map(ExprKind::Duration))?,
            Rule::size => lit(literal::size(s).map(ExprKind::Size))?,
            Rule::rate => lit(literal::rate(s).map(|r| ExprKind::Rate(r.0)))?,
            Rule::bandwidth => lit(literal::bandwidth(s).map(ExprKind::Bandwidth))?,
            Rule::percent => lit(literal::percent(s).map(ExprKind::Percent))?,
            Rule::timestamp => lit(literal::timestamp(s).map(ExprKind::Timestamp))?,
            Rule::boolean => ExprKind::Bool(s == "true"),
            Rule::none => ExprKind::None,
            Rule::string => ExprKind::Str(self.string(p)?),
            Rule::env_call => {
                let mut it = p.into_inner().skip(1);
                let name = self.string(it.next().expect("grammar: env name"))?;
                let default = match it.next() {
                    Some(d) => Some(Box::new(self.expr(d)?)),
                    None => None,
                };
                ExprKind::Env { name, default }
            }
            Rule::list => ExprKind::List(
                p.into_inner()
                    .map(|e| self.expr(e))
                    .collect::<Res<Vec<_>>>()?,
            ),
            Rule::map => {
                let mut entries = Vec::new();
                for e in p.into_inner() {
                    let mut it = e.into_inner();
                    let k = it.next().expect("grammar: map key");
                    let key = match k.as_rule() {
                        Rule::ident => MapKey::Ident(self.ident(k)),
                        Rule::string => {
                            let lit = self.string(k)?;
                            let text = lit.as_plain().ok_or_else(|| {
                                self.invalid_span(lit.span, "map keys cannot interpolate")
                            })?;
                            MapKey::Str(text, lit.span)
                        }
                        r => unexpected(r, "map key"),
                    };
                    entries.push((key, self.expr(it.next().expect("grammar: map value"))?));
                }
                ExprKind::Map(entries)
            }
            Rule::expr => return self.expr(p),
            Rule::placeholder => ExprKind::Placeholder(self.placeholder(&p)?),
            Rule::path => ExprKind::Path(self.path(p)),
            Rule::call => {
                let mut it = p.into_inner();
                let callee = self.path(it.next().expect("grammar: callee"));
                let mut args = Vec::new();
                for a in it {
                    let mut name = None;
                    let mut value = None;
                    for i in a.into_inner() {
                        match i.as_rule() {
                            Rule::ident => name = Some(self.ident(i)),
                            Rule::expr => value = Some(self.expr(i)?),
                            r => unexpected(r, "call_arg"),
                        }
                    }
                    args.push(CallArg {
                        name,
                        value: value.expect("grammar: argument value"),
                    });
                }
                ExprKind::Call { callee, args }
            }
            r => unexpected(r, "primary"),
        };
        Ok(Expr { kind, span })
    }

    pub(super) fn invalid_span(&self, span: Span, message: &str) -> Diagnostic {
        Diagnostic::error(Code::E0005, span, message)
    }

    pub fn string(&self, p: Pair<'_, Rule>) -> Res<StrLit> {
        let span = self.span(&p);
        let mut parts: Vec<StrPart> = Vec::new();
        let push_text = |parts: &mut Vec<StrPart>, t: &str| match parts.last_mut() {
            Some(StrPart::Text(s)) => s.push_str(t),
            _ => parts.push(StrPart::Text(t.to_string())),
        };
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::str_text => push_text(&mut parts, c.as_str()),
                Rule::str_escape => {
                    let t = match &c.as_str()[1..] {
                        "n" => "\n",
                        "t" => "\t",
                        "r" => "\r",
                        other => other,
                    };
                    push_text(&mut parts, t);
                }
                Rule::interp => parts.push(StrPart::Interp(self.expr(last(c))?)),
                r => unexpected(r, "string"),
            }
        }
        Ok(StrLit { parts, span })
    }
}
