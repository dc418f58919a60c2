//! `observe metrics "URL" every D keep "re", ... cpu "selector"` of a target: checked (the URL
//! as an `http` endpoint's, each pattern compiled, the selector read) and lowered for the cells
//! whose phases use the target.

use std::collections::HashSet;

use crate::check::{Decl, Eval, InstanceId, Scope};
use crate::diag::{Code, Diagnostic};
use crate::plan::metrics::{MatchOp, MetricsPlan, Selector};
use crate::plan::Phase;
use crate::span::Span;
use crate::syntax::ast::{self, EndpointKind};
use crate::value::Value;

/// Without `every`: once a second, Prometheus's usual resolution for a benchmark's span.
const DEFAULT_EVERY_NS: u64 = 1_000_000_000;
/// A scrape is a request and a parse: more often than this it measures the scraping.
const MIN_EVERY_NS: u64 = 10_000_000;

/// The observations of the targets `phases` use, each target once (by name, as phases name
/// it), in the order of the program's instances.
pub fn lower_for_cell(ev: &Eval<'_>, phases: &[Phase]) -> Vec<MetricsPlan> {
    let used: HashSet<&str> = phases.iter().map(endpoint_target).collect();
    let mut done = HashSet::new();
    let mut out = Vec::new();
    for (id, t) in targets(ev) {
        if t.observe_metrics.is_empty() || !used.contains(t.name.name.as_str()) {
            continue;
        }
        if !done.insert(t.name.name.clone()) {
            continue;
        }
        out.extend(lower_target(ev, id, t));
    }
    out
}

/// Checks every target's observations, used or not, so that a module's mistakes show.
pub fn check_all(ev: &Eval<'_>) {
    for (id, t) in targets(ev) {
        let _ = lower_target(ev, id, t);
    }
}

fn endpoint_target(p: &Phase) -> &str {
    match p {
        Phase::Ingest(i) => &i.endpoint.target,
        Phase::Queries(q) => &q.endpoint.target,
        Phase::Requests(r) => &r.endpoint.target,
    }
}

/// Every target of the program with its instance; a module imported twice, once.
fn targets<'p>(ev: &Eval<'p>) -> Vec<(InstanceId, &'p ast::Target)> {
    let mut out = Vec::new();
    for (i, inst) in ev.prog.instances.iter().enumerate() {
        if ev.prog.instances[..i]
            .iter()
            .any(|x| x.module == inst.module)
        {
            continue;
        }
        for decl in ev.prog.modules[inst.module].decls.values() {
            if let Decl::Target(t) = decl {
                out.push((InstanceId(i), t));
            }
        }
    }
    out
}

fn lower_target(ev: &Eval<'_>, id: InstanceId, t: &ast::Target) -> Vec<MetricsPlan> {
    t.observe_metrics
        .iter()
        .filter_map(|m| lower_one(ev, id, t, m))
        .collect()
}

/// One clause; every mistake in it is reported, not only the first.
fn lower_one(
    ev: &Eval<'_>,
    id: InstanceId,
    t: &ast::Target,
    m: &ast::ObserveMetrics,
) -> Option<MetricsPlan> {
    let scope = Scope::new(id);
    let url = ev.string(&m.url, &scope).and_then(|u| {
        super::target::check_url(ev, EndpointKind::Http, &u, m.url.span)?;
        Some(u)
    });
    let every = every(ev, m, &scope);
    let mut ok = true;
    let mut keep = Vec::new();
    for p in m.keep.iter().flatten() {
        match pattern(ev, p, &scope) {
            Some(text) => keep.push(text),
            None => ok = false,
        }
    }
    for extra in m.cpu.iter().skip(1) {
        ev.error(second(extra.span, "cpu", m.cpu[0].span));
        ok = false;
    }
    let cpu = match m.cpu.first() {
        Some(c) => {
            let s = selector(ev, c, &scope);
            ok &= s.is_some();
            s
        }
        None => None,
    };
    if m.keep.is_empty() && m.cpu.is_empty() {
        ev.error(
            Diagnostic::error(Code::E0109, m.span, "`observe metrics` keeps nothing")
                .label("add `keep \"PATTERN\", ...` or `cpu \"SELECTOR\"`")
                .note(
                    "for example: keep \"process_.*\" cpu \"process_cpu_seconds_total\" \
                     (node_exporter: cpu \"node_cpu_seconds_total{mode!='idle'}\")",
                ),
        );
        ok = false;
    }
    let (url, every_ns) = (url?, every?);
    ok.then(|| MetricsPlan {
        target: t.name.name.clone(),
        url,
        every_ns,
        keep,
        cpu,
    })
}

fn second(span: Span, what: &str, first: Span) -> Diagnostic {
    Diagnostic::error(Code::E0108, span, format!("a second `{what}`"))
        .label(format!("`observe metrics` takes one `{what}`"))
        .also(first, "the first one is here")
}

fn every(ev: &Eval<'_>, m: &ast::ObserveMetrics, scope: &Scope) -> Option<u64> {
    for extra in m.every.iter().skip(1) {
        ev.error(second(extra.span, "every", m.every[0].span));
    }
    let Some(e) = m.every.first() else {
        return (m.every.len() <= 1).then_some(DEFAULT_EVERY_NS);
    };
    let v = ev.eval(e, scope)?;
    match v {
        Value::Duration(ns) if ns >= MIN_EVERY_NS as i64 => {
            (m.every.len() == 1).then_some(ns as u64)
        }
        Value::Duration(_) => ev.fail(
            Diagnostic::error(
                Code::E0203,
                e.span,
                "scrapes this often measure the scraping",
            )
            .label("at least 10ms between scrapes"),
        ),
        other => ev.fail(
            Diagnostic::error(
                Code::E0202,
                e.span,
                format!("`every` takes a duration, not {other}"),
            )
            .label("expected e.g. `1s`"),
        ),
    }
}

/// The literal text of a pattern or selector: it is read at check time, so no `env()`.
fn literal(ev: &Eval<'_>, s: &ast::StrLit, scope: &Scope, what: &str) -> Option<String> {
    let text = ev.string(s, scope)?;
    match text.as_lit() {
        Some(t) => Some(t),
        None => ev.fail(
            Diagnostic::error(
                Code::E0207,
                s.span,
                format!("a {what} cannot come from `env()`"),
            )
            .label("write it in the file"),
        ),
    }
}

/// A `keep` pattern: a regular expression matching a whole metric name.
fn pattern(ev: &Eval<'_>, s: &ast::StrLit, scope: &Scope) -> Option<String> {
    let text = literal(ev, s, scope, "`keep` pattern")?;
    compiles(ev, &text, s.span, "a `keep` pattern")?;
    Some(text)
}

fn compiles(ev: &Eval<'_>, re: &str, span: Span, what: &str) -> Option<()> {
    match regex::Regex::new(&format!("^(?:{re})$")) {
        Ok(_) => Some(()),
        Err(e) => {
            let why = e.to_string();
            // The crate's message quotes the pattern over several lines; its last line says
            // what is wrong.
            let last = why.lines().last().unwrap_or("").trim();
            let last = last.strip_prefix("error: ").unwrap_or(last);
            ev.fail(
                Diagnostic::error(
                    Code::E0207,
                    span,
                    format!("{what} is not a regular expression: {last}"),
                )
                .label("not a regular expression")
                .note("a pattern matches a whole metric name, as in PromQL: \"process_.*\""),
            )
        }
    }
}

fn selector(ev: &Eval<'_>, s: &ast::StrLit, scope: &Scope) -> Option<Selector> {
    let text = literal(ev, s, scope, "`cpu` selector")?;
    let sel = match Selector::parse(&text) {
        Ok(sel) => sel,
        Err(e) => {
            // Inside the quotes, when the literal is written plainly (no escapes before it).
            let at = if s.span.end - s.span.start == text.len() as u32 + 2 {
                let start = s.span.start as usize + 1 + e.at.min(text.len());
                Span::new(s.span.file, start, (start + 1).min(s.span.end as usize - 1))
            } else {
                s.span
            };
            return ev.fail(
                Diagnostic::error(
                    Code::E0207,
                    at,
                    format!("the `cpu` selector cannot be read: {}", e.message),
                )
                .label(e.message)
                .note(
                    "a counter and label matchers, as in PromQL: \
                     \"node_cpu_seconds_total{mode!='idle'}\"",
                ),
            );
        }
    };
    let mut ok = true;
    for m in &sel.matchers {
        if matches!(m.op, MatchOp::Re | MatchOp::NotRe) {
            ok &= compiles(ev, &m.value, s.span, "a label matcher").is_some();
        }
    }
    ok.then_some(sel)
}
