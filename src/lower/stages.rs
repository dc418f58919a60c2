//! `stage D [rate R [to R2]] [workers N] [warmup W]` clauses of a run, lowered into the plan's
//! stages, and what the run's summary `load` and `stop` are with them. Stages replace the
//! run's `duration`, `count`, `rate` and `repeat`; the run's `warmup` (before the first stage)
//! keeps its meaning. An ingest's stages (`stage D rate R [to R2] [warmup W]`) replace its
//! `rate` and `duration`: one continuous send whose schedule of rows follows their rates.

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
    let mut spans: Vec<(&str, Span)> = Vec::new();
    spans.extend(r.duration.iter().map(|c| ("duration", c.span)));
    spans.extend(r.count.iter().map(|c| ("count", c.span)));
    spans.extend(r.rate.iter().map(|c| ("rate", c.span)));
    spans.extend(r.repeat.iter().map(|c| ("repeat", c.span)));
    refuse_beside(ev, ("a run", "load", "500/s"), r.stages[0].span, &spans)
}

/// Each clause of `spans` refused beside the stages, the first of which is at `first`; the
/// first three say `a run` or `an ingest`, what the stages set and an example rate.
fn refuse_beside(
    ev: &Eval<'_>,
    (block, sets, example): (&str, &str, &str),
    first: Span,
    spans: &[(&str, Span)],
) -> bool {
    for (what, span) in spans {
        ev.error(
            Diagnostic::error(
                Code::E0701,
                *span,
                format!("{block} with stages has no `{what}` of its own"),
            )
            .label(format!(
                "the stages set the {}'s span and {sets}",
                block.rsplit(' ').next().unwrap_or(block)
            ))
            .also(first, "its first stage")
            .note(format!(
                "give each stage its duration and rate: `stage 30s rate {example}`"
            )),
        );
    }
    spans.is_empty()
}

/// An ingest's stages, every mistake reported. An ingest's connections are its series routing
/// (each series stays on one connection, in order), so a stage keeps the phase's `workers`
/// and takes none of its own; its rate is a fixed schedule of rows, so it needs one and takes
/// no `poisson`.
pub(super) fn lower_ingest_stages(
    ev: &Eval<'_>,
    i: &ast::Ingest,
    workers: u64,
    scope: &Scope,
) -> Option<Vec<StagePlan>> {
    let Some(first) = i.stages.first() else {
        return Some(Vec::new());
    };
    let mut spans: Vec<(&str, Span)> = Vec::new();
    spans.extend(i.rate.iter().map(|c| ("rate", c.span)));
    spans.extend(i.duration.iter().map(|c| ("duration", c.span)));
    let mut ok = refuse_beside(ev, ("an ingest", "rate", "50_000/s"), first.span, &spans);
    let mut out = Vec::with_capacity(i.stages.len());
    for s in &i.stages {
        let mut fits = true;
        if let Some(w) = &s.workers {
            fits = false;
            ev.error(
                Diagnostic::error(Code::E0701, w.span, "an ingest's stage has no `workers`")
                    .label("an ingest's connections are its series routing")
                    .note("each series stays on one connection, in order, for the whole send: set `workers N` on the ingest, and let its stages change the rate"),
            );
        }
        let poisson = match &s.rate {
            None => {
                fits = false;
                ev.error(
                    Diagnostic::error(Code::E0701, s.span, "an ingest's stage needs a rate")
                        .label("rows per second, sent on a fixed schedule")
                        .note("write `stage 30s rate 50_000/s`, or `stage 30s rate 10_000/s to 50_000/s` for a ramp"),
                );
                false
            }
            Some(rt) if rt.arrival == Some(ast::Arrival::Poisson) => {
                fits = false;
                ev.error(
                    Diagnostic::error(
                        Code::E0203,
                        rt.span,
                        "an ingest's rate is a fixed schedule of rows",
                    )
                    .label("`poisson` arrivals are for query and request runs")
                    .note("drop `poisson`"),
                );
                true
            }
            Some(_) => false,
        };
        // The stage's own values are checked whatever was refused, so every mistake shows
        // (its refused `workers` once).
        let own = ast::Stage {
            workers: None,
            ..s.clone()
        };
        let lowered = if poisson {
            duration(ev, &s.duration, scope, false).and(None)
        } else {
            stage(ev, &own, workers, scope)
        };
        match lowered {
            Some(p) if fits => out.push(p),
            _ => ok = false,
        }
    }
    ok.then_some(out)
}

/// Warns at the first stage whose start the rows of the data cannot reach: every row is due
/// before it begins (`rows` across all workers; routing may give a worker more than its share,
/// which then reaches a little further).
pub(super) fn warn_unreached(ev: &Eval<'_>, i: &ast::Ingest, stages: &[StagePlan], rows: u64) {
    let mut due = 0.0;
    let mut start = 0i64;
    for (k, s) in stages.iter().enumerate() {
        if k > 0 && rows as f64 <= due {
            let left = stages.len() - k;
            ev.error(
                Diagnostic::warning(
                    Code::W0004,
                    i.stages[k].span,
                    "the rows run out before this stage",
                )
                .label(format!(
                    "it starts at {}, when {} rows are due; the data holds {}",
                    Value::Duration(start),
                    crate::plan::thousands(due.ceil() as u64),
                    crate::plan::thousands(rows)
                ))
                .note(format!(
                    "the ingest ends when its rows run out: {} reported as not reached; give it more rows or shorter stages",
                    if left == 1 {
                        "this stage will be".to_string()
                    } else {
                        format!("this stage and the {} after it will be", left - 1)
                    }
                )),
            );
            return;
        }
        due += s.scheduled();
        if let Value::Duration(d) = s.duration {
            start = start.saturating_add(d);
        }
    }
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
