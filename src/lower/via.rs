//! Endpoints of blocks: which target endpoint a `via` names, and a target's count rules.

use super::target::{self as targets, Operation};
use crate::check::{Decl, Ev, Eval, InstanceId, Scope};
use crate::diag::{Code, Diagnostic};
use crate::plan::*;
use crate::span::{Ident, Span};
use crate::syntax::ast;
use crate::value::{Text, Value};

/// The endpoint name a `via` names in this cell.
pub(super) fn via_name(
    ev: &Eval<'_>,
    via: &ast::Via,
    block: &Ident,
    scope: &Scope,
) -> Ev<(String, Span)> {
    match via {
        ast::Via::List(_, span) => {
            let axis = format!("{}.via", block.name);
            match ev.cell.axes.get(&axis) {
                Some(Value::Symbol(s)) => Some((s.clone(), *span)),
                _ => None,
            }
        }
        // Only axes, locals and params stand for an endpoint name; any other name (even one that
        // is also a target's) is the endpoint itself.
        ast::Via::Name(n) => match via_lookup(ev, n, scope) {
            None => Some((n.name.clone(), n.span)),
            Some(Some(Value::Symbol(s))) => Some((s, n.span)),
            Some(Some(Value::Str(t))) => match t.as_lit() {
                Some(s) => Some((s, n.span)),
                None => ev.fail(
                    Diagnostic::error(Code::E0301, n.span, "an endpoint name cannot come from env")
                        .label("not an endpoint"),
                ),
            },
            Some(Some(Value::None)) => ev.fail(
                Diagnostic::error(Code::E0301, n.span, format!("`{n}` is `none` in this cell"))
                    .label("no endpoint to use in the cells where it is filtered out"),
            ),
            Some(Some(other)) => ev.fail(ev.mismatch(n.span, "an endpoint name", &other, scope)),
            Some(None) => None,
        },
    }
}

/// The target an `into` names: the target itself, or an axis, local or param whose value is
/// a target's name (`param db = "questdb"`, then `--param db=victoria`), so one workload can
/// be pointed at another server from the command line.
pub(super) fn target_name(ev: &Eval<'_>, n: &Ident, scope: &Scope) -> Ev<Ident> {
    let named = |name: String| Some(Ident { name, span: n.span });
    match via_lookup(ev, n, scope) {
        None => named(n.name.clone()),
        Some(Some(Value::Symbol(s))) => named(s),
        Some(Some(Value::Str(t))) => match t.as_lit() {
            Some(s) => named(s),
            None => ev.fail(
                Diagnostic::error(Code::E0201, n.span, "a target name cannot come from env")
                    .label("not a target"),
            ),
        },
        Some(Some(other)) => ev.fail(ev.mismatch(n.span, "a target name", &other, scope)),
        Some(None) => None,
    }
}

pub(super) fn via_lookup(ev: &Eval<'_>, n: &Ident, scope: &Scope) -> Option<Ev<Value>> {
    let is_value = scope.local(&n.name).is_some()
        || (scope.inst == InstanceId::ROOT && ev.cell.axes.contains_key(&n.name))
        || matches!(
            ev.prog.module_of(scope.inst).decls.get(&n.name),
            Some(Decl::Param(_))
        );
    if is_value {
        ev.lookup(n, scope)
    } else {
        None
    }
}

pub(super) fn count_endpoint(
    ev: &Eval<'_>,
    tinst: InstanceId,
    t: &ast::Target,
    c: &ast::CountRule,
) -> Ev<(EndpointPlan, String)> {
    let ep = targets::find_endpoint(ev, t, &c.endpoint.name, c.endpoint.span)?;
    let op = match c.language {
        ast::CountLanguage::Sql => Operation::CountSql,
        _ => Operation::CountMetrics,
    };
    targets::check_fit(ev, ep, op, c.endpoint.span)?;
    let plan = targets::endpoint_plan(ev, tinst, t, ep)?;
    let lang = match c.language {
        ast::CountLanguage::Sql => "sql",
        ast::CountLanguage::PromQl => "promql",
        ast::CountLanguage::InfluxQl => "influxql",
    };
    Some((plan, lang.to_string()))
}

/// The count query with `${table}`, `${start}` and `${end}` filled in for this phase.
pub(super) fn count_query(
    ev: &Eval<'_>,
    tinst: InstanceId,
    q: &ast::StrLit,
    table: &str,
    range: Option<(i64, i64)>,
) -> Ev<String> {
    let mut scope = Scope::new(tinst);
    scope.push_local("table".into(), Value::Str(Text::lit(table)), Some(Ty::Str));
    let (start, end) = range.unwrap_or((0, 0));
    scope.push_local("start".into(), Value::Timestamp(start), Some(Ty::Timestamp));
    scope.push_local("end".into(), Value::Timestamp(end), Some(Ty::Timestamp));
    let t = ev.string(q, &scope)?;
    match t.as_lit() {
        Some(s) => Some(s),
        None => ev.fail(
            Diagnostic::error(
                Code::E0203,
                q.span,
                "a count query cannot contain env(...) values",
            )
            .label("write it literally"),
        ),
    }
}
