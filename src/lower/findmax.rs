//! `find max rate from R [up to R] where CONDITION [samples N] [growth G] [resolution P%]`:
//! the search's values checked and lowered (docs/language.md, "find max rate"), for a query or
//! request run (requests per second, latency terms) and for an ingest (rows per second, terms
//! on the visibility lag its `probe visible` measures).

use super::expect::condition_threshold;
use super::values::{duration, positive_int, rate, single};
use crate::check::{Eval, Scope};
use crate::diag::{Code, Diagnostic};
use crate::plan::{thousands, FindMaxPlan, IngestPhase, Load, Stop, Threshold, MAX_STEPS};
use crate::span::Span;
use crate::syntax::ast::{self, BinOp, ExprKind};
use crate::value::Value;

/// Metrics that say nothing of one step: the search sets each step's rate (`qps`, `rps`) and
/// already requires it kept (`achieved_rate`, 95%).
const NOT_PER_STEP: &[&str] = &["qps", "rps", "achieved_rate"];

/// An ingest's SLA terms: the visibility lag's percentiles (`probe visible`), the time from the
/// end of sending until every row showed, and errors.
pub const INGEST_LAG_METRICS: &[&str] = &[
    "lag_p50",
    "lag_p90",
    "lag_p95",
    "lag_p99",
    "lag_p999",
    "lag_max",
    "visible_after",
];

/// Whom the SLA is about.
#[derive(Clone, Copy)]
enum Of {
    Run,
    /// An ingest; `probe` says whether it has `probe visible`.
    Ingest {
        probe: bool,
    },
}

/// The run's search: `Some(None)` without `find max`, `None` after a mistake (reported).
pub(super) fn find_max(ev: &Eval<'_>, r: &ast::Run, scope: &Scope) -> Option<Option<FindMaxPlan>> {
    let Some(c) = single(ev, &r.find_max, |c| c.span, "find max") else {
        return Some(None);
    };
    let ok = conflicts(ev, r, c.span);
    lower(ev, c, scope, Of::Run, ok).map(Some)
}

/// An ingest's search: rows per second; its steps last at least `samples` probe intervals.
pub(super) fn find_max_ingest(
    ev: &Eval<'_>,
    i: &ast::Ingest,
    scope: &Scope,
) -> Option<Option<FindMaxPlan>> {
    let Some(c) = single(ev, &i.find_max, |c| c.span, "find max") else {
        if let Some(w) = i.warmup.first() {
            return ev.fail(
                Diagnostic::error(
                    Code::E0701,
                    w.span,
                    "an ingest's `warmup` belongs to `find max rate`",
                )
                .label("only a search's steps have a warm-up on an ingest")
                .note("an ingest is measured from its first row; to leave out a start, send it in a phase of its own before"),
            );
        }
        return Some(None);
    };
    let mut ok = ingest_conflicts(ev, i, c.span);
    if let Some(stage) = i.stages.first() {
        ok = false;
        ev.error(
            Diagnostic::error(
                Code::E0701,
                c.span,
                "`find max rate` and stages do not go together",
            )
            .label("the search sets each step's rate and length")
            .also(stage.span, "a stage"),
        );
    }
    let probe = !i.probe.is_empty();
    let plan = lower(ev, c, scope, Of::Ingest { probe }, ok)?;
    if !probe && i.duration.is_empty() {
        return ev.fail(
            Diagnostic::error(Code::E0701, c.span, "an ingest's search needs its steps' length")
                .label("no `duration` and no `probe visible` to count samples with")
                .note("give each step a span with `duration 30s`, or probe the visibility lag with `probe visible every 100ms` and bound it in the SLA"),
        );
    }
    Some(Some(plan))
}

/// An ingest's steps take `rate × length` rows from its source: a first step the rows cannot
/// fill is an error, a cap (or no cap) above what they can fill a warning, at the search.
pub(super) fn rows_fit(ev: &Eval<'_>, i: &ast::Ingest, phase: &IngestPhase) -> Option<()> {
    let (Some(f), Some(c), Some(rows)) = (&phase.findmax, i.find_max.first(), phase.rows_expected)
    else {
        return Some(());
    };
    let ns = |v: &Option<Value>| match v {
        Some(Value::Duration(ns)) => *ns as f64 / 1e9,
        _ => 0.0,
    };
    let every = phase.probe.as_ref().map(|p| p.every.clone());
    let span = ns(&phase.duration).max(ns(&every) * f.samples as f64);
    let length = ns(&phase.warmup) + span;
    if length <= 0.0 {
        return Some(());
    }
    let fits = rows as f64 / length;
    let need = |rate: f64| thousands((rate * length).ceil() as u64);
    let secs = crate::value::fmt_rate;
    if f.from_per_s > fits {
        return ev.fail(
            Diagnostic::error(
                Code::E0203,
                c.value.from.span,
                format!(
                    "the first step needs {} rows and the ingest's rows hold {}",
                    need(f.from_per_s),
                    thousands(rows)
                ),
            )
            .label(format!("{} for {length}s", secs(f.from_per_s)))
            .note("give the schema more rows (a longer time range, more series), or shorten the steps (`duration`, `samples`, `warmup`)"),
        );
    }
    if f.up_to_per_s.is_none_or(|cap| cap > fits) {
        let at = f
            .up_to_per_s
            .map_or(c.span, |_| c.value.up_to.first().map_or(c.span, |e| e.span));
        ev.error(
            Diagnostic::warning(
                Code::W0004,
                at,
                format!(
                    "steps above {} cannot be filled by the ingest's {} rows",
                    secs(fits.floor()),
                    thousands(rows)
                ),
            )
            .label(format!("each step sends for {length}s"))
            .note("a step the rows cannot fill ends the search, failed; cap it with `up to`, or give the schema more rows"),
        );
    }
    Some(())
}

fn lower(
    ev: &Eval<'_>,
    c: &ast::Clause<ast::FindMax>,
    scope: &Scope,
    of: Of,
    mut ok: bool,
) -> Option<FindMaxPlan> {
    let f = &c.value;
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
    let sla = sla_terms(ev, &f.condition, scope, of);
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
    let confirm = match single(ev, &f.confirm, |e| e.span, "confirm") {
        None => Some(true),
        Some(e) => match ev.eval(e, scope)? {
            Value::Bool(b) => Some(b),
            other => ev.fail(ev.mismatch(e.span, "`true` or `false`", &other, scope)),
        },
    };
    ok &= f.up_to.len() <= 1
        && f.samples.len() <= 1
        && f.growth.len() <= 1
        && f.resolution.len() <= 1
        && f.confirm.len() <= 1;
    let (from, up_to, sla, samples, growth, resolution, confirm) = (
        from?,
        up_to?,
        sla?,
        samples?,
        growth?,
        resolution?,
        confirm?,
    );
    if !ok {
        return None;
    }
    let derived = sla
        .iter()
        .filter_map(|t| quantile(t.metric.strip_prefix("lag_").unwrap_or(&t.metric)))
        .fold(0.0, f64::max);
    let derived = match of {
        Of::Run => FindMaxPlan::samples_for(derived),
        Of::Ingest { probe: true } => FindMaxPlan::probes_for(derived),
        Of::Ingest { probe: false } => 0,
    };
    Some(FindMaxPlan {
        from_per_s: from,
        up_to_per_s: up_to,
        sla_text: sla
            .iter()
            .map(|t| format!("{} {} {}", t.metric, t.op, t.value))
            .collect::<Vec<_>>()
            .join(" and "),
        sla,
        samples: samples.unwrap_or(derived),
        samples_from: if samples.is_some() {
            "given".into()
        } else {
            "derived".into()
        },
        growth,
        resolution,
        max_steps: MAX_STEPS,
        probes: matches!(of, Of::Ingest { .. }),
        confirm,
    })
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

/// A clause refused beside the search at `at`: E0701 at the clause; always `false`.
fn refused(ev: &Eval<'_>, at: Span, span: Span, what: &str, why: &str) -> bool {
    ev.error(
        Diagnostic::error(
            Code::E0701,
            span,
            format!("`{what}` and `find max rate` do not go together"),
        )
        .label(why.to_string())
        .also(at, "the search is here"),
    );
    false
}

/// `rate`, `count` and `repeat` are the search's to set: each is refused where it stands.
fn conflicts(ev: &Eval<'_>, r: &ast::Run, at: Span) -> bool {
    let mut ok = true;
    let mut refuse = |span: Span, what: &str, why: &str| ok &= refused(ev, at, span, what, why);
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

/// `rate`, `calibrate` and `replay` do not go with an ingest's search: each is refused where
/// it stands.
fn ingest_conflicts(ev: &Eval<'_>, i: &ast::Ingest, at: Span) -> bool {
    let mut ok = true;
    let mut refuse = |span: Span, what: &str, why: &str| ok &= refused(ev, at, span, what, why);
    for c in &i.rate {
        refuse(c.span, "rate", "the search sets each step's rate");
    }
    for s in &i.calibrate {
        refuse(
            *s,
            "calibrate",
            "calibrate the client's ceiling in a phase of its own: each step would measure it again",
        );
    }
    for r in i
        .replay
        .iter()
        .filter(|r| super::ingest::replays_here(ev, r))
    {
        refuse(
            r.span,
            "replay",
            "replay encodes every row before the clock starts; a step sends only what its span needs",
        );
    }
    ok
}

/// `TERM and TERM ...`: for a run, each a threshold `expect` knows; for an ingest, a bound on
/// its visibility lag or its errors.
fn sla_terms(ev: &Eval<'_>, cond: &ast::Expr, scope: &Scope, of: Of) -> Option<Vec<Threshold>> {
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
        let term = match of {
            Of::Run => run_term(ev, t, scope),
            Of::Ingest { probe } => ingest_term(ev, t, scope, probe),
        };
        match term {
            Some(th) => out.push(th),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

fn metric_of(t: &ast::Expr) -> Option<&crate::span::Ident> {
    match &t.kind {
        ExprKind::Binary(_, lhs, _) => match &lhs.kind {
            ExprKind::Path(p) if p.len() == 1 => Some(&p[0]),
            _ => None,
        },
        _ => None,
    }
}

fn run_term(ev: &Eval<'_>, t: &ast::Expr, scope: &Scope) -> Option<Threshold> {
    if let Some(m) = metric_of(t).filter(|m| NOT_PER_STEP.contains(&m.name.as_str())) {
        return ev.fail(
            Diagnostic::error(
                Code::E0702,
                m.span,
                format!("`{}` is not a term of a search's SLA", m.name),
            )
            .label("the search sets each step's rate")
            .note("a step must send 95% of its schedule anyway; the SLA is about latency and errors: p50..p9999, max, mean, error_rate, errors"),
        );
    }
    condition_threshold(ev, t, scope)
}

/// `lag_p99 < 2s`, `visible_after < 10s`, `errors == 0`.
fn ingest_term(ev: &Eval<'_>, t: &ast::Expr, scope: &Scope, probe: bool) -> Option<Threshold> {
    let terms = "lag_p50, lag_p90, lag_p95, lag_p99, lag_p999, lag_max, visible_after (with `probe visible`), errors";
    let (ExprKind::Binary(op, _, rhs), Some(m)) = (&t.kind, metric_of(t)) else {
        return ev.fail(
            Diagnostic::error(Code::E0702, t.span, "an SLA term is `METRIC OP VALUE`")
                .label("not a term")
                .note(format!("an ingest's terms: {terms}")),
        );
    };
    let op = match op {
        BinOp::Lt => "<",
        BinOp::Le => "<=",
        BinOp::Gt => ">",
        BinOp::Ge => ">=",
        BinOp::Eq => "==",
        BinOp::Ne => "!=",
        _ => {
            return ev.fail(
                Diagnostic::error(Code::E0702, t.span, "an SLA term compares")
                    .label("expected <, <=, >, >=, == or !=")
                    .note(format!("an ingest's terms: {terms}")),
            )
        }
    };
    let name = m.name.as_str();
    let lag = INGEST_LAG_METRICS.contains(&name);
    if !lag && name != "errors" {
        let mut d = Diagnostic::error(
            Code::E0702,
            m.span,
            format!("`{name}` is not a term of an ingest's SLA"),
        )
        .label("an ingest's search bounds its visibility lag and its errors")
        .note(format!("an ingest's terms: {terms}"));
        let all = INGEST_LAG_METRICS.iter().copied().chain(["errors"]);
        if let Some(s) = crate::diag::suggest(name, all) {
            d = d.note(format!("did you mean `{s}`?"));
        }
        return ev.fail(d);
    }
    if lag && !probe {
        return ev.fail(
            Diagnostic::error(
                Code::E0702,
                m.span,
                format!("`{name}` needs the ingest's `probe visible`"),
            )
            .label("the visibility lag is what a freshness probe measures")
            .note("add, for example, `probe visible every 100ms` to the ingest"),
        );
    }
    let value = match (lag, ev.eval(rhs, scope)?) {
        (true, Value::Duration(d)) if d >= 0 => Value::Duration(d),
        (false, Value::Int(n)) if n >= 0 => Value::Int(n),
        (lag, other) => {
            let want = if lag {
                "a duration such as `2s`"
            } else {
                "a count"
            };
            return ev.fail(
                Diagnostic::error(
                    Code::E0202,
                    rhs.span,
                    format!("`{name}` is compared with {want}, found {}", other.kind()),
                )
                .label(format!("expected {want}")),
            );
        }
    };
    Some(Threshold {
        metric: name.to_string(),
        op: op.to_string(),
        value,
    })
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
