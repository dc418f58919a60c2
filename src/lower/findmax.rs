//! `find max rate from R [up to R] where CONDITION [samples N] [growth G] [resolution P%]`:
//! the search's values checked and lowered (docs/language.md, "find max rate").

use super::expect::condition_threshold;
use super::values::{duration, positive_int, rate, single};
use crate::check::{Eval, Scope};
use crate::diag::{Code, Diagnostic};
use crate::plan::{FindMaxPlan, Load, Stop, Threshold, MAX_STEPS};
use crate::span::Span;
use crate::syntax::ast::{self, BinOp, ExprKind};
use crate::value::Value;

/// Metrics that say nothing of one step: the search sets each step's rate (`qps`, `rps`) and
/// already requires it kept (`achieved_rate`, 95%).
const NOT_PER_STEP: &[&str] = &["qps", "rps", "achieved_rate"];

/// The run's search: `Some(None)` without `find max`, `None` after a mistake (reported).
pub(super) fn find_max(ev: &Eval<'_>, r: &ast::Run, scope: &Scope) -> Option<Option<FindMaxPlan>> {
    let Some(c) = single(ev, &r.find_max, |c| c.span, "find max") else {
        return Some(None);
    };
    let f = &c.value;
    let mut ok = conflicts(ev, r, c.span);
    let from = rate(ev, &f.from, scope);
    let up_to = match single(ev, &f.up_to, |e| e.span, "up to") {
        None => Some(None),
        Some(e) => match (rate(ev, e, scope), from) {
            (Some(cap), Some(from)) if cap < from => ev.fail(
                Diagnostic::error(Code::E0203, e.span, "`up to` is below `from`")
                    .label(format!("a cap under the first rate, {}", Value::Rate(from)))
                    .also(f.from.span, "the search starts here"),
            ),
            (cap, _) => cap.map(Some),
        },
    };
    let sla = sla_terms(ev, &f.condition, scope);
    let samples = match single(ev, &f.samples, |e| e.span, "samples") {
        None => Some(None),
        Some(e) => positive_int(ev, e, scope, "`samples`").map(Some),
    };
    let growth = match single(ev, &f.growth, |e| e.span, "growth") {
        None => Some(2.0),
        Some(e) => factor(ev, e, scope),
    };
    let resolution = match single(ev, &f.resolution, |e| e.span, "resolution") {
        None => Some(0.05),
        Some(e) => share(ev, e, scope),
    };
    ok &= f.up_to.len() <= 1
        && f.samples.len() <= 1
        && f.growth.len() <= 1
        && f.resolution.len() <= 1;
    let (from, up_to, sla, samples, growth, resolution) =
        (from?, up_to?, sla?, samples?, growth?, resolution?);
    if !ok {
        return None;
    }
    let derived = sla
        .iter()
        .filter_map(|t| quantile(&t.metric))
        .fold(0.0, f64::max);
    Some(Some(FindMaxPlan {
        from_per_s: from,
        up_to_per_s: up_to,
        sla_text: sla
            .iter()
            .map(|t| format!("{} {} {}", t.metric, t.op, t.value))
            .collect::<Vec<_>>()
            .join(" and "),
        sla,
        samples: samples.unwrap_or_else(|| FindMaxPlan::samples_for(derived)),
        samples_from: if samples.is_some() {
            "given".into()
        } else {
            "derived".into()
        },
        growth,
        resolution,
        max_steps: MAX_STEPS,
    }))
}

/// A search's steps last at least the run's `duration` (none: what their samples need).
pub(super) fn step_stop(ev: &Eval<'_>, r: &ast::Run, scope: &Scope) -> Option<Stop> {
    let d = match single(ev, &r.duration, |c| c.span, "duration") {
        Some(c) => duration(ev, &c.value, scope, false)?,
        None => 0,
    };
    Some(Stop::Duration {
        duration: Value::Duration(d),
    })
}

/// The load a search starts with: its first rate, on a fixed schedule.
pub(super) fn first_load(f: &FindMaxPlan) -> Load {
    Load::Open {
        rate: Value::Rate(f.from_per_s),
        arrival: "fixed".into(),
    }
}

/// `rate`, `count` and `repeat` are the search's to set: each is refused where it stands.
fn conflicts(ev: &Eval<'_>, r: &ast::Run, at: Span) -> bool {
    let mut ok = true;
    let mut refuse = |span: Span, what: &str, why: &str| {
        ok = false;
        ev.error(
            Diagnostic::error(
                Code::E0701,
                span,
                format!("`{what}` and `find max rate` do not go together"),
            )
            .label(why.to_string())
            .also(at, "the search is here"),
        );
    };
    for c in &r.rate {
        refuse(c.span, "rate", "the search sets each step's rate");
    }
    for c in &r.count {
        refuse(
            c.span,
            "count",
            "the search sets each step's length (`samples`, `duration`)",
        );
    }
    for c in &r.repeat {
        refuse(c.span, "repeat", "a search is one series of steps");
    }
    ok
}

/// `TERM and TERM ...`, each a threshold `expect` knows.
fn sla_terms(ev: &Eval<'_>, cond: &ast::Expr, scope: &Scope) -> Option<Vec<Threshold>> {
    let mut terms = Vec::new();
    split_and(cond, &mut terms);
    let mut out = Vec::new();
    let mut ok = true;
    for t in terms {
        if let ExprKind::Binary(BinOp::Or, ..) = &t.kind {
            ev.error(
                Diagnostic::error(Code::E0702, t.span, "an SLA's terms are joined by `and`")
                    .label("every term must hold: `or` is not an SLA")
                    .note("for example: where p99 < 20ms and error_rate < 0.1%"),
            );
            ok = false;
            continue;
        }
        if let ExprKind::Binary(_, lhs, _) = &t.kind {
            if let ExprKind::Path(p) = &lhs.kind {
                if p.len() == 1 && NOT_PER_STEP.contains(&p[0].name.as_str()) {
                    ev.error(
                        Diagnostic::error(
                            Code::E0702,
                            p[0].span,
                            format!("`{}` is not a term of a search's SLA", p[0].name),
                        )
                        .label("the search sets each step's rate")
                        .note("a step must send 95% of its schedule anyway; the SLA is about latency and errors: p50..p9999, max, mean, error_rate, errors"),
                    );
                    ok = false;
                    continue;
                }
            }
        }
        match condition_threshold(ev, t, scope) {
            Some(th) => out.push(th),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

fn split_and<'a>(e: &'a ast::Expr, out: &mut Vec<&'a ast::Expr>) {
    match &e.kind {
        ExprKind::Binary(BinOp::And, l, r) => {
            split_and(l, out);
            split_and(r, out);
        }
        _ => out.push(e),
    }
}

/// The quantile a latency metric names; `None` for the others.
fn quantile(metric: &str) -> Option<f64> {
    match metric {
        "median" | "p50" => Some(0.5),
        "p90" => Some(0.9),
        "p95" => Some(0.95),
        "p99" => Some(0.99),
        "p999" => Some(0.999),
        "p9999" => Some(0.9999),
        _ => None,
    }
}

/// `growth G`: a number above 1.
fn factor(ev: &Eval<'_>, e: &ast::Expr, scope: &Scope) -> Option<f64> {
    let g = match ev.eval(e, scope)? {
        Value::Int(i) => i as f64,
        Value::Float(f) => f,
        other => {
            return ev.fail(ev.mismatch(e.span, "a factor such as `2` or `1.5`", &other, scope))
        }
    };
    if g > 1.0 && g.is_finite() {
        return Some(g);
    }
    ev.fail(
        Diagnostic::error(
            Code::E0203,
            e.span,
            format!("`growth` must be above 1, found {g}"),
        )
        .label("each growing step multiplies the rate by this")
        .note("for example: growth 2   or   growth 1.5"),
    )
}

/// `resolution P%`: a percentage strictly between 0 and 100%.
fn share(ev: &Eval<'_>, e: &ast::Expr, scope: &Scope) -> Option<f64> {
    match ev.eval(e, scope)? {
        Value::Percent(p) if p > 0.0 && p < 100.0 => Some(p / 100.0),
        Value::Percent(p) => ev.fail(
            Diagnostic::error(
                Code::E0203,
                e.span,
                format!("`resolution` must be between 0% and 100%, found {p}%"),
            )
            .label("the search stops when its bracket is this narrow")
            .note("for example: resolution 5%"),
        ),
        other => ev.fail(ev.mismatch(e.span, "a percentage such as `5%`", &other, scope)),
    }
}
