//! `stage D [rate R [to R2]] [workers N] [warmup W]` clauses of a run, lowered into the plan's
//! stages, and what the run's summary `load` and `stop` are with them. Stages replace the
//! run's `duration`, `count`, `rate` and `repeat`; the run's `warmup` (before the first stage)
//! keeps its meaning.

use super::values::{bounded_int, duration, rate, MAX_WORKERS};
use crate::check::{Eval, Scope};
use crate::diag::{Code, Diagnostic};
use crate::plan::{Load, StagePlan, Stop};
use crate::span::Span;
use crate::syntax::ast;
use crate::value::Value;

/// The run's stages, every mistake reported; `default_workers` is the run's `workers`.
pub(super) fn lower_stages(
    ev: &Eval<'_>,
    r: &ast::Run,
    default_workers: u64,
    scope: &Scope,
) -> Option<Vec<StagePlan>> {
    let mut ok = refuse_replaced(ev, r);
    let mut out = Vec::with_capacity(r.stages.len());
    for s in &r.stages {
        match stage(ev, s, default_workers, scope) {
            Some(p) => out.push(p),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

/// `duration`, `count`, `rate` and `repeat` say what the stages say: refused beside them.
fn refuse_replaced(ev: &Eval<'_>, r: &ast::Run) -> bool {
    let first = r.stages[0].span;
    let mut spans: Vec<(&str, Span)> = Vec::new();
    spans.extend(r.duration.iter().map(|c| ("duration", c.span)));
    spans.extend(r.count.iter().map(|c| ("count", c.span)));
    spans.extend(r.rate.iter().map(|c| ("rate", c.span)));
    spans.extend(r.repeat.iter().map(|c| ("repeat", c.span)));
    for (what, span) in &spans {
        ev.error(
            Diagnostic::error(
                Code::E0701,
                *span,
                format!("a run with stages has no `{what}` of its own"),
            )
            .label("the stages set the run's span and load")
            .also(first, "its first stage")
            .note("give each stage its duration and rate: `stage 30s rate 500/s`"),
        );
    }
    spans.is_empty()
}

fn stage(ev: &Eval<'_>, s: &ast::Stage, default_workers: u64, scope: &Scope) -> Option<StagePlan> {
    let span = duration(ev, &s.duration, scope, false);
    let load = match &s.rate {
        None => Some((Load::Closed, None)),
        Some(rt) => stage_rate(ev, rt, scope),
    };
    let workers = match &s.workers {
        Some(w) => bounded_int(ev, w, scope, "workers", MAX_WORKERS),
        None => Some(default_workers),
    };
    let warmup = match &s.warmup {
        None => Some(None),
        Some(w) => match (duration(ev, w, scope, false), span) {
            (Some(d), Some(total)) if d >= total => ev.fail(
                Diagnostic::error(
                    Code::E0701,
                    w.span,
                    "a stage's warm-up must be shorter than the stage",
                )
                .label("nothing of the stage would be measured")
                .also(s.duration.span, "the stage's duration"),
            ),
            (Some(d), _) => Some(Some(Value::Duration(d))),
            (None, _) => None,
        },
    };
    let (load, ramp_to) = load?;
    Some(StagePlan {
        duration: Value::Duration(span?),
        load,
        ramp_to,
        workers: workers?,
        warmup: warmup?,
    })
}

fn stage_rate(ev: &Eval<'_>, rt: &ast::StageRate, scope: &Scope) -> Option<(Load, Option<Value>)> {
    let from = rate(ev, &rt.from, scope);
    let to = match &rt.to {
        Some(t) => rate(ev, t, scope).map(Some),
        None => Some(None),
    };
    if rt.to.is_some() && rt.arrival == Some(ast::Arrival::Poisson) {
        return ev.fail(
            Diagnostic::error(Code::E0701, rt.span, "a ramp's arrivals are fixed")
                .label("`poisson` with `to`")
                .note("a ramp's k-th send is where the integral of its rate reaches k; drop `poisson`"),
        );
    }
    let load = Load::Open {
        rate: Value::Rate(from?),
        arrival: match rt.arrival {
            Some(ast::Arrival::Poisson) => "poisson".into(),
            _ => "fixed".into(),
        },
    };
    Some((load, to?.map(Value::Rate)))
}

/// The run's summary load and stop with stages: open at the highest rate any stage reaches
/// if one is open (closed otherwise), and the sum of the stages' durations.
pub(super) fn summary(stages: &[StagePlan]) -> (Load, Stop) {
    let mut total = 0i64;
    let mut top: Option<(f64, String)> = None;
    for s in stages {
        if let Value::Duration(d) = s.duration {
            total = total.saturating_add(d);
        }
        if let Load::Open {
            rate: Value::Rate(r),
            arrival,
        } = &s.load
        {
            let peak = match s.ramp_to {
                Some(Value::Rate(to)) => r.max(to),
                _ => *r,
            };
            if top.as_ref().is_none_or(|(t, _)| peak > *t) {
                top = Some((peak, arrival.clone()));
            }
        }
    }
    let load = match top {
        Some((r, arrival)) => Load::Open {
            rate: Value::Rate(r),
            arrival,
        },
        None => Load::Closed,
    };
    let stop = Stop::Duration {
        duration: Value::Duration(total),
    };
    (load, stop)
}
