//! Run blocks: query runs (mix, weights, load model, stop rules) and request runs (hooks and
//! their bodies), lowered into run phases.

use super::expect::{require, thresholds};
use super::query::lower_family;
use super::target::{self as targets, Operation};
use super::values::{
    bounded_int, duration, join, missing, positive_int, rate, single, MAX_WORKERS,
};
use super::via::via_name;
use crate::check::{Decl, Ev, Eval, Hooks, InstanceId, RunQueries, Scope};
use crate::diag::{Code, Diagnostic};
use crate::plan::*;
use crate::span::{Ident, Span};
use crate::syntax::ast;
use crate::value::{TextPart, Value};

pub(super) fn lower_run(ev: &Eval<'_>, r: &ast::Run, hooks: &Hooks) -> Option<Phase> {
    let scope = Scope::new(InstanceId::ROOT);
    let Some(against) = single(ev, &r.against, |a| a.span, "against") else {
        return ev.fail(missing(r.name.span, "against", "against questdb via pg"));
    };
    let queries = single(ev, &r.queries, |c| c.span, "queries");
    let request = single(ev, &r.request, |c| c.span, "request");
    let op = run_operation(ev, r, queries.is_some(), request)?;
    // A bad endpoint (an unknown scheme, a URL that does not parse) is the target's mistake:
    // the run's own clauses and queries are still checked, so that one round shows them all.
    let endpoint = run_endpoint(ev, r, against, op, &scope);
    let (Some(endpoint), Some(common)) = (endpoint, run_clauses(ev, r, op, &scope)) else {
        // Still check the queries, so their mistakes show too.
        let _ = check_same_fits(ev, r, against, op);
        if let Some(sel) = queries {
            for s in &sel.value {
                if let Some(qs) = select_queries(ev, s) {
                    for (qi, q) in qs {
                        let _ = lower_family(ev, qi, q, 1.0, &RunQueries::Any);
                    }
                }
            }
        }
        return None;
    };
    check_same_fits(ev, r, against, op)?;
    match op {
        Operation::Queries => {
            let sel = queries.expect("query run");
            if !super::template::misplaced(ev, r, false) {
                return None;
            }
            query_run(ev, r, sel, endpoint, common, &scope).map(Phase::Queries)
        }
        _ => {
            let rq = request.expect("request run");
            request_run(ev, r, rq, endpoint, common, hooks, &scope).map(Phase::Requests)
        }
    }
}

/// A run has `queries` or `request`, exactly one.
fn run_operation(
    ev: &Eval<'_>,
    r: &ast::Run,
    queries: bool,
    request: Option<&ast::Clause<ast::RequestSpec>>,
) -> Option<Operation> {
    match (queries, request) {
        (true, Some(rq)) => ev.fail(
            Diagnostic::error(
                Code::E0701,
                rq.span,
                "a run has either `queries` or `request`, not both",
            )
            .label("split this into two runs"),
        ),
        (false, None) => ev.fail(
            Diagnostic::error(
                Code::E0109,
                r.name.span,
                "a run needs `queries` or `request`",
            )
            .label("nothing to run")
            .note("for example: queries tsbsq.*   or   request pull.request"),
        ),
        (true, None) => Some(Operation::Queries),
        (false, Some(_)) => Some(Operation::Requests),
    }
}

/// The endpoint `against T via E` or `against T.E` names, fit for the run's operation.
fn run_endpoint(
    ev: &Eval<'_>,
    r: &ast::Run,
    against: &ast::Against,
    op: Operation,
    scope: &Scope,
) -> Option<EndpointPlan> {
    let (tinst, target, used) = targets::resolve_target(ev, InstanceId::ROOT, &against.target)?;
    let (ep_name, ep_span) = match (&against.via, used == against.target.len()) {
        (Some(via), true) => via_name(ev, via, &r.name, scope)?,
        (None, false) if used == against.target.len() - 1 => {
            let last = &against.target[against.target.len() - 1];
            (last.name.clone(), last.span)
        }
        (Some(_), false) => {
            return ev.fail(
                Diagnostic::error(
                    Code::E0701,
                    against.span,
                    "name the endpoint once: `against T.E` or `against T via E`",
                )
                .label("endpoint given twice"),
            )
        }
        _ => {
            return ev.fail(
                Diagnostic::error(Code::E0109, against.span, "which endpoint?")
                    .label("add `via ENDPOINT` or write `against TARGET.ENDPOINT`"),
            )
        }
    };
    let ep = targets::find_endpoint(ev, target, &ep_name, ep_span)?;
    targets::check_fit(ev, ep, op, ep_span)?;
    targets::endpoint_plan(ev, tinst, target, ep)
}

/// The clauses query and request runs share, but `require`. Each clause is checked even when an
/// earlier one failed, so every mistake shows at once.
fn run_clauses(ev: &Eval<'_>, r: &ast::Run, op: Operation, scope: &Scope) -> Option<RunClauses> {
    let workers = match single(ev, &r.workers, |c| c.span, "workers") {
        Some(c) => bounded_int(ev, &c.value, scope, "workers", MAX_WORKERS),
        None => Some(1),
    };
    if let (Some(stage), Some(find)) = (r.stages.first(), r.find_max.first()) {
        ev.error(
            Diagnostic::error(
                Code::E0701,
                find.span,
                "`find max rate` and stages do not go together",
            )
            .label("the search sets each step's rate and length")
            .also(stage.span, "a stage"),
        );
    }
    let staged = match (&workers, r.stages.is_empty()) {
        (_, true) => Some(Vec::new()),
        (Some(w), false) => super::stages::lower_stages(ev, r, *w, scope),
        (None, false) => None,
    };
    let findmax = super::findmax::find_max(ev, r, scope);
    let stop = match &staged {
        Some(st) if !st.is_empty() => Some(super::stages::summary(st).1),
        _ if !r.stages.is_empty() => None,
        _ if !r.find_max.is_empty() => super::findmax::step_stop(ev, r, scope),
        _ => run_stop(ev, r, op, scope),
    };
    let warmup = match single(ev, &r.warmup, |c| c.span, "warmup") {
        None => Some(None),
        Some(c) => match ev.eval(&c.value, scope) {
            Some(v @ Value::Int(i)) if i >= 0 => Some(Some(v)),
            Some(v @ Value::Duration(d)) if d >= 0 => Some(Some(v)),
            Some(other) => {
                ev.fail(ev.mismatch(c.value.span, "a warm-up count or duration", &other, scope))
            }
            None => None,
        },
    };
    let repeat = match single(ev, &r.repeat, |c| c.span, "repeat") {
        Some(c) => positive_int(ev, &c.value, scope, "repeat"),
        None => Some(1),
    };
    let stop_after_errors = match single(ev, &r.stop_after, |c| c.span, "stop after") {
        Some(c) => positive_int(ev, &c.value, scope, "`stop after N errors`").map(Some),
        None => Some(None),
    };
    let load = match single(ev, &r.rate, |c| c.span, "rate") {
        _ if !r.stages.is_empty() => staged
            .as_ref()
            .map(|st| super::stages::summary(st).0)
            .or(Some(Load::Closed)),
        None => Some(Load::Closed),
        Some(c) => rate(ev, &c.value.rate, scope).map(|x| Load::Open {
            rate: Value::Rate(x),
            arrival: match c.value.arrival {
                Some(ast::Arrival::Poisson) => "poisson".into(),
                _ => "fixed".into(),
            },
        }),
    };
    let expects = thresholds(ev, &r.expects, scope, false);
    Some(RunClauses {
        workers: workers?,
        stop: stop?,
        warmup: warmup?,
        repeat: repeat?,
        stop_after_errors: stop_after_errors?,
        load: match findmax.as_ref()? {
            Some(f) => super::findmax::first_load(f),
            None => load?,
        },
        // Lowered by each kind of run: a query run reports every guard's mistake, a request
        // run stops at the first.
        require: Vec::new(),
        expects: expects?,
        stages: staged?,
        findmax: findmax?,
        warmup_at_rate: false,
    })
}

/// `count N [per query]` or `duration D`, exactly one.
fn run_stop(ev: &Eval<'_>, r: &ast::Run, op: Operation, scope: &Scope) -> Option<Stop> {
    let count = single(ev, &r.count, |c| c.span, "count");
    let run_duration = single(ev, &r.duration, |c| c.span, "duration");
    let stop = match (count, run_duration) {
        (Some(c), None) => {
            positive_int(ev, &c.value.count, scope, "the count").map(|n| Stop::Count {
                count: n,
                per_query: c.value.per_query,
            })
        }
        (None, Some(d)) => duration(ev, &d.value, scope, false).map(|x| Stop::Duration {
            duration: Value::Duration(x),
        }),
        (Some(_), Some(d)) => ev.fail(
            Diagnostic::error(
                Code::E0701,
                d.span,
                "a run stops after a `count` or a `duration`, not both",
            )
            .label("remove one"),
        ),
        (None, None) => ev.fail(missing(
            r.name.span,
            "count",
            "count 1000 per query   or   duration 60s",
        )),
    };
    match (stop, op) {
        (
            Some(Stop::Count {
                per_query: true, ..
            }),
            Operation::Requests,
        ) => ev.fail(
            Diagnostic::error(
                Code::E0701,
                r.count[0].span,
                "`per query` needs a query run",
            )
            .label("request runs have no queries"),
        ),
        (s, _) => s,
    }
}

/// `check same results across endpoints` needs a query run over a list of endpoints.
fn check_same_fits(
    ev: &Eval<'_>,
    r: &ast::Run,
    against: &ast::Against,
    op: Operation,
) -> Option<()> {
    let Some(span) = r.check_same.first() else {
        return Some(());
    };
    if !matches!(against.via, Some(ast::Via::List(..))) {
        return ev.fail(
            Diagnostic::error(
                Code::E0701,
                *span,
                "`check same results across endpoints` needs several endpoints",
            )
            .label("this run uses one endpoint")
            .note("write `against T via [pg, http, qwp]`"),
        );
    }
    if op == Operation::Requests {
        return ev.fail(
            Diagnostic::error(Code::E0701, *span, "result checks apply to query runs")
                .label("not a query run"),
        );
    }
    Some(())
}

/// A query run: the selected queries with their weights, and its `require` guards.
fn query_run(
    ev: &Eval<'_>,
    r: &ast::Run,
    sel: &ast::Clause<Vec<ast::QuerySelector>>,
    endpoint: EndpointPlan,
    common: RunClauses,
    scope: &Scope,
) -> Option<QueryPhase> {
    if let Some(e) = r
        .expects
        .iter()
        .find(|e| matches!(e, ast::Expect::Body(..)))
    {
        return ev.fail(
            Diagnostic::error(
                Code::E0702,
                e.span(),
                "`expect body` belongs to request runs",
            )
            .label("queries have no HTTP body to check"),
        );
    }
    if common.expects.iter().any(|t| t.metric == "status") {
        return ev.fail(
            Diagnostic::error(
                Code::E0702,
                r.expects
                    .iter()
                    .find(|e| matches!(e, ast::Expect::Status(..)))
                    .map_or(r.name.span, |e| e.span()),
                "`expect status` belongs to request runs",
            )
            .label("queries have no HTTP status to expect"),
        );
    }
    let mut selected = Vec::new();
    let mut weighted = false;
    let mut ok = true;
    for s in &sel.value {
        let weight = match &s.weight {
            Some(w) => {
                weighted = true;
                match ev.eval(w, scope) {
                    Some(Value::Int(i)) if i > 0 => i as f64,
                    Some(Value::Float(f)) if f > 0.0 => f,
                    Some(other) => {
                        ev.error(ev.mismatch(w.span, "a positive weight", &other, scope));
                        ok = false;
                        continue;
                    }
                    None => {
                        ok = false;
                        continue;
                    }
                }
            }
            None => 1.0,
        };
        for (qinst, q) in select_queries(ev, s)? {
            selected.push((qinst, q, weight));
        }
    }
    // Every query of the run is known before any is lowered: `issued(q)` may name a later one.
    let run = RunQueries::Of(
        selected
            .iter()
            .map(|(i, q, _)| (*i, q.name.name.clone()))
            .collect(),
    );
    let mut plans = Vec::new();
    for (qinst, q, weight) in selected {
        let Some(members) = lower_family(ev, qinst, q, weight, &run) else {
            ok = false;
            continue;
        };
        for p in members {
            if p.instance.transaction && matches!(endpoint.kind.as_str(), "http" | "qwp") {
                ev.error(
                    Diagnostic::error(
                        Code::E0701,
                        q.transaction.first().copied().unwrap_or(q.name.span),
                        format!("no transaction over `{}`", endpoint.kind),
                    )
                    .label("QuestDB's HTTP and QWP endpoints run each statement on its own")
                    .also(sel.span, "run against this endpoint"),
                );
                ok = false;
            } else {
                plans.push(p);
            }
        }
    }
    let mut require_plans = Vec::new();
    for c in &r.require {
        match require(ev, c, scope) {
            Some(x) => require_plans.push(x),
            None => ok = false,
        }
    }
    if !ok {
        return None;
    }
    Some(QueryPhase {
        name: r.name.name.clone(),
        endpoint,
        queries: plans,
        mix: if weighted {
            "weighted".into()
        } else {
            "round_robin".into()
        },
        run: RunClauses {
            require: require_plans,
            ..common
        },
        check_same_results: !r.check_same.is_empty(),
    })
}

/// A request run: a hook's requests or one fixed HTTP request, with its guards and body checks.
fn request_run(
    ev: &Eval<'_>,
    r: &ast::Run,
    rq: &ast::Clause<ast::RequestSpec>,
    endpoint: EndpointPlan,
    common: RunClauses,
    hooks: &Hooks,
    scope: &Scope,
) -> Option<RequestPhase> {
    let mut require_plans = Vec::new();
    for c in &r.require {
        require_plans.push(require(ev, c, scope)?);
    }
    let body = body_checks(ev, &r.expects, scope)?;
    let fixed = matches!(rq.value, ast::RequestSpec::Fixed { .. });
    let placed = super::template::misplaced(ev, r, fixed);
    let request = match &rq.value {
        ast::RequestSpec::Hook(path) => hook_request(ev, rq.span, path, hooks)?,
        ast::RequestSpec::Fixed { method, path, body } => {
            let plan = fixed_request(ev, rq.span, method, path, body.as_ref(), &endpoint, scope)?;
            match plan {
                RequestPlan::Fixed { method, path, body }
                    if !r.lets.is_empty() || !r.binds.is_empty() =>
                {
                    super::template::request_template(ev, r, rq.span, &method, path, body)?
                }
                plan => plan,
            }
        }
    };
    if !placed {
        return None;
    }
    Some(RequestPhase {
        name: r.name.name.clone(),
        endpoint,
        request,
        run: RunClauses {
            require: require_plans,
            ..common
        },
        body,
    })
}

/// `request GET "/path" [body "..."]` over an `http` endpoint.
fn fixed_request(
    ev: &Eval<'_>,
    span: Span,
    method: &str,
    path: &ast::Expr,
    body: Option<&ast::Expr>,
    endpoint: &EndpointPlan,
    scope: &Scope,
) -> Option<RequestPlan> {
    if endpoint.kind != "http" {
        return ev.fail(
            Diagnostic::error(
                Code::E0302,
                span,
                format!(
                    "a fixed HTTP request needs an `http` endpoint, not `{}`",
                    endpoint.kind
                ),
            )
            .label("an HTTP request")
            .note("SQL endpoints take requests from a hook: `#{sql, binds}`"),
        );
    }
    let path = match ev.eval(path, scope)? {
        Value::Str(t) if t.as_lit().is_some_and(|p| p.starts_with('/')) => {
            t.as_lit().unwrap_or_default().to_string()
        }
        // The value is a secret: name the variable, never what it holds.
        Value::Str(t) if t.as_lit().is_none() => {
            let vars: Vec<String> = t
                .parts
                .iter()
                .filter_map(|p| match p {
                    TextPart::Env { name, .. } => Some(format!("`{name}`")),
                    TextPart::Lit(_) => None,
                })
                .collect();
            return ev.fail(
                Diagnostic::error(
                    Code::E0202,
                    path.span,
                    format!(
                        "a request path cannot take a value from `env(...)`: it reads {}",
                        vars.join(", ")
                    ),
                )
                .label("paths are printed in plans and reports, environment values are not")
                .note("write the path literally; a secret goes in a header of the endpoint"),
            );
        }
        Value::Str(_) => {
            return ev.fail(
                Diagnostic::error(Code::E0202, path.span, "a request path starts with `/`")
                    .label("for example \"/query\""),
            )
        }
        other => return ev.fail(ev.mismatch(path.span, "a path string", &other, scope)),
    };
    let body = match body {
        None => None,
        Some(b) => match ev.eval(b, scope)? {
            Value::Str(t) => match t.as_lit() {
                Some(p) => Some(p.to_string()),
                None => {
                    return ev.fail(
                        Diagnostic::error(
                            Code::E0202,
                            b.span,
                            "a request body cannot carry a secret from `env(...)`",
                        )
                        .label("bodies are printed in plans"),
                    )
                }
            },
            other => return ev.fail(ev.mismatch(b.span, "a body string", &other, scope)),
        },
    };
    Some(RequestPlan::Fixed {
        method: method.to_string(),
        path,
        body,
    })
}

/// `expect body ...` of a request run.
pub(super) fn body_checks(
    ev: &Eval<'_>,
    expects: &[ast::Expect],
    scope: &Scope,
) -> Ev<Vec<BodyExpect>> {
    let mut out = Vec::new();
    for e in expects {
        let ast::Expect::Body(check, _) = e else {
            continue;
        };
        out.push(match check {
            ast::BodyCheck::Json(None) => BodyExpect::Json,
            ast::BodyCheck::Json(Some(s)) if s == "array" => BodyExpect::JsonArray,
            ast::BodyCheck::Json(Some(_)) => BodyExpect::JsonObject,
            ast::BodyCheck::Contains(x) => match ev.eval(x, scope)? {
                Value::Str(t) if t.as_lit().is_some_and(|p| !p.is_empty()) => {
                    BodyExpect::Contains(t.as_lit().unwrap_or_default().to_string())
                }
                other => return ev.fail(ev.mismatch(x.span, "a non-empty string", &other, scope)),
            },
        });
    }
    Some(out)
}

/// `request HOOK.FUNCTION`: the hook, checked to define the function with one parameter.
pub(super) fn hook_request(
    ev: &Eval<'_>,
    span: Span,
    path: &[Ident],
    hooks: &Hooks,
) -> Ev<RequestPlan> {
    if path.len() < 2 {
        return ev.fail(
            Diagnostic::error(
                Code::E0105,
                span,
                "name a hook function: `request HOOK.FUNCTION`",
            )
            .label("expected HOOK.FUNCTION"),
        );
    }
    let (hook_path, func) = path.split_at(path.len() - 1);
    let func = &func[0];
    let (hinst, hook) = match ev.resolve_decl(hook_path, InstanceId::ROOT) {
        Ok((hi, Decl::Hook(h), used)) if used == hook_path.len() => (hi, h),
        Ok((_, d, _)) => {
            return ev.fail(
                Diagnostic::error(
                    Code::E0201,
                    hook_path[0].span,
                    format!("`{}` is a {}, not a hook", join(hook_path), d.kind()),
                )
                .label("expected a hook"),
            )
        }
        Err(d) => return ev.fail(d),
    };
    let module = ev.prog.instance(hinst).module;
    let info = hooks.get(&(module, hook.name.name.clone()))?;
    let Some((_, arity)) = info.functions.iter().find(|(n, _)| *n == func.name) else {
        return ev.fail(
            Diagnostic::error(
                Code::E0802,
                func.span,
                format!("hook `{}` defines no function `{}`", hook.name, func.name),
            )
            .label("not in the script")
            .note(format!(
                "its functions: {}",
                info.functions
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        );
    };
    if *arity != 1 {
        return ev.fail(
            Diagnostic::error(
                Code::E0802,
                func.span,
                format!(
                    "`{}` takes {arity} parameters; a request function takes one (ctx)",
                    func.name
                ),
            )
            .label("wrong number of parameters"),
        );
    }
    Some(RequestPlan::Hook {
        hook: HookPlan {
            name: hook.name.name.clone(),
            path: info.path.clone(),
            functions: info.functions.iter().map(|(n, _)| n.clone()).collect(),
            file: info.file.clone(),
            source: info.source.clone(),
        },
        function: func.name.clone(),
        response: info
            .functions
            .iter()
            .any(|(n, a)| n == "response" && *a == 2),
    })
}

/// The queries a selector names: one query, or every query of a module with `alias.*`.
pub(super) fn select_queries<'p>(
    ev: &Eval<'p>,
    s: &ast::QuerySelector,
) -> Ev<Vec<(InstanceId, &'p ast::Query)>> {
    if s.glob {
        let mut inst = InstanceId::ROOT;
        for part in &s.path {
            match ev.prog.module_of(inst).decls.get(&part.name) {
                Some(Decl::Import(_)) => inst = ev.prog.instance(inst).imports[&part.name],
                Some(d) => {
                    return ev.fail(
                        Diagnostic::error(
                            Code::E0105,
                            part.span,
                            format!("`{part}` is a {}, not an import", d.kind()),
                        )
                        .label("`.*` takes every query of an imported module"),
                    )
                }
                None => {
                    return ev.fail(
                        Diagnostic::error(
                            Code::E0104,
                            part.span,
                            format!("unknown import `{part}`"),
                        )
                        .label("not declared"),
                    )
                }
            }
        }
        let qs: Vec<(InstanceId, &ast::Query)> = ev
            .prog
            .module_of(inst)
            .decls
            .values()
            .filter_map(|d| match d {
                Decl::Query(q) => Some((inst, q)),
                _ => None,
            })
            .collect();
        if qs.is_empty() {
            return ev.fail(
                Diagnostic::error(Code::E0701, s.span, "this module declares no query")
                    .label("nothing to run"),
            );
        }
        return Some(qs);
    }
    match ev.resolve_decl(&s.path, InstanceId::ROOT) {
        Ok((qi, Decl::Query(q), used)) if used == s.path.len() => Some(vec![(qi, q)]),
        Ok((_, d, _)) => ev.fail(
            Diagnostic::error(
                Code::E0201,
                s.span,
                format!("`{}` is a {}, not a query", join(&s.path), d.kind()),
            )
            .label("expected a query"),
        ),
        Err(d) => ev.fail(d),
    }
}
