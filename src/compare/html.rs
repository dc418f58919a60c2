//! `wlrun compare BASE NEW --html`: the comparison as a page in the style of report.html
//! (`report::html`): the two runs, what was matched, and per cell and phase both runs' values
//! of every headline metric side by side as bars, with the per-interval test's change, its
//! confidence interval and the verdict in a table. Like the run's page it fetches nothing and
//! runs no script; like the terminal table it never reads the clock.

use super::plans::{PlanCheck, PlanVerdict};
use super::render::{pct_plain, pct_signed, shown_change, shown_value, value};
use super::{CellComparison, Comparison, MetricComparison, PhaseComparison, Unit, Verdict};
use crate::report::html::svg::{self, Bars, Paint};
use crate::report::html::{esc, shell};

pub fn page(c: &Comparison) -> String {
    let mut b = String::new();
    b += &format!(
        "<h1>wlrun compare: {}</h1>",
        esc(if c.base.workload == c.new.workload {
            &c.base.workload
        } else {
            "two workloads"
        })
    );
    for (side, r) in [("base", &c.base), ("new", &c.new)] {
        b += &format!(
            "<p class=\"meta\"><b>{side}</b> {} · {} from {} · seed {} · started {}{}</p>",
            esc(&r.path),
            esc(&r.workload),
            esc(&r.file),
            r.seed,
            esc(&r.started),
            match (r.killed, r.interrupted) {
                (true, _) => " · <span class=\"warn\">killed: rebuilt from its time series</span>",
                (false, true) => " · <span class=\"warn\">interrupted</span>",
                _ => "",
            }
        );
    }
    b += &plans(&c.plans);
    b += &super::environment::html(&c.environment);
    b += &format!(
        "<p class=\"meta\">Welch's t on per-interval means, sample sizes corrected for \
         autocorrelation, alpha {}, {:.0}% confidence intervals (docs/compare.md)</p>",
        pct_plain(c.alpha),
        (1.0 - c.alpha) * 100.0
    );
    b += &verdicts(c);
    for cell in &c.cells {
        b += &cell_section(cell);
    }
    for (side, only) in [("base", &c.only_in_base), ("new", &c.only_in_new)] {
        if !only.is_empty() {
            b += &format!(
                "<p class=\"warn\">Cells only in the {side} run: {}</p>",
                esc(&only.join(", "))
            );
        }
    }
    shell(&format!("wlrun compare: {}", c.base.workload), &b)
}

/// Whether both runs ran the same plan, or what differs.
fn plans(p: &PlanCheck) -> String {
    match p.verdict {
        PlanVerdict::Same => "<p class=\"meta\">The same plan in both runs.</p>".into(),
        PlanVerdict::Different => {
            let mut out =
                "<p class=\"warn\">The plans differ (compared with --allow-different):</p>\
                           <ul class=\"msgs\">"
                    .to_string();
            for d in &p.differences {
                out += &format!("<li>{}</li>", esc(d));
            }
            out + "</ul>"
        }
        PlanVerdict::Unknown => format!(
            "<p class=\"warn\">{}</p>",
            esc(p.note.as_deref().unwrap_or("plans not checked"))
        ),
    }
}

/// The headline: how many metrics went which way, and the threshold's verdict.
fn verdicts(c: &Comparison) -> String {
    let all: Vec<&MetricComparison> = c
        .cells
        .iter()
        .flat_map(|cell| &cell.phases)
        .flat_map(|p| &p.metrics)
        .collect();
    let count = |v: Verdict| all.iter().filter(|m| m.verdict == v).count();
    let mut out = format!(
        "<p>{} metrics: <span class=\"bad\">{} worse</span>, <span class=\"ok\">{} better</span>, \
         {} no significant change, {} too few samples, {} without per-interval samples</p>",
        all.len(),
        count(Verdict::Worse),
        count(Verdict::Better),
        count(Verdict::NoSignificantChange),
        count(Verdict::TooFewSamples),
        count(Verdict::NoSamples),
    );
    if let Some(th) = c.threshold {
        if c.regressions.is_empty() && c.inconclusive.is_empty() {
            out += &format!(
                "<p class=\"ok\">Threshold {}: no metric is significantly worse by more than it.</p>",
                pct_plain(th)
            );
        } else if c.regressions.is_empty() {
            out += &format!(
                "<p class=\"warn\">Threshold {}: inconclusive: {} could not be tested and changed \
                 for the worse by more than it over the whole run:</p><ul class=\"msgs\">",
                pct_plain(th),
                c.inconclusive.len()
            );
            for r in &c.inconclusive {
                out += &format!("<li>{}</li>", esc(r));
            }
            out += "</ul>";
        } else {
            out += &format!(
                "<p class=\"bad\">Threshold {}: {} significantly worse by more than it:</p>\
                 <ul class=\"msgs\">",
                pct_plain(th),
                c.regressions.len()
            );
            for r in &c.regressions {
                out += &format!("<li>{}</li>", esc(r));
            }
            for r in &c.inconclusive {
                out += &format!("<li>{} (not tested; worse over the whole run)</li>", esc(r));
            }
            out += "</ul>";
        }
    }
    out
}

fn cell_section(cell: &CellComparison) -> String {
    let mut out = format!(
        "<h2>{}</h2>",
        esc(if cell.key.is_empty() {
            "the run"
        } else {
            &cell.key
        })
    );
    for p in &cell.phases {
        out += &phase_section(p);
    }
    for (side, only) in [("base", &cell.only_in_base), ("new", &cell.only_in_new)] {
        if !only.is_empty() {
            out += &format!(
                "<p class=\"warn\">Phases only in the {side} run: {}</p>",
                esc(&only.join(", "))
            );
        }
    }
    out
}

fn phase_section(p: &PhaseComparison) -> String {
    let kind = if p.base_kind == p.new_kind {
        p.base_kind.clone()
    } else {
        format!("{} / {}", p.base_kind, p.new_kind)
    };
    let mut out = format!(
        "<h3>{} <span class=\"meta\">({}): {} / {}</span></h3>",
        esc(&p.name),
        esc(&kind),
        crate::report::render::status(p.base_status),
        crate::report::render::status(p.new_status),
    );
    if let Some(note) = &p.note {
        out += &format!("<p class=\"warn\">{}</p>", esc(note));
    }
    for w in &p.warnings {
        out += &format!("<p class=\"warn\">{}</p>", esc(w));
    }
    if p.metrics.is_empty() {
        return out;
    }
    let per_second = match p.base_kind.as_str() {
        "ingest" => "rows/s",
        "requests" => "requests/s",
        _ => "queries/s",
    };
    let mut charts = String::new();
    for (unit, title, y) in [
        (Unit::PerSecond, "throughput", svg::Unit::Per(per_second)),
        (Unit::Micros, "latency", svg::Unit::Micros),
    ] {
        let ms: Vec<&MetricComparison> = p
            .metrics
            .iter()
            .filter(|m| m.unit == unit && super::secondary::charted(&m.metric))
            .collect();
        let bars = Bars {
            groups: ms.iter().map(|m| m.label.clone()).collect(),
            series: vec![
                ("base".into(), ms.iter().map(|m| m.base).collect()),
                ("new".into(), ms.iter().map(|m| m.new).collect()),
            ],
            paints: vec![Paint::nth(0), Paint::nth(1)],
        };
        let title = format!("{}: {title}, base vs new", p.name);
        if let Some(chart) = svg::bars(&title, y, &bars, "whole-run values") {
            charts += &chart;
        }
    }
    if !charts.is_empty() {
        out += &format!("<div class=\"grid\">{charts}</div>");
    }
    out += &table(p);
    out
}

fn table(p: &PhaseComparison) -> String {
    let mut out = String::from(
        "<div class=\"scroll\"><table><tr><th>metric</th><th>base</th><th>new</th>\
         <th>change</th><th>per-interval change [95% CI]</th><th>intervals (effective)</th>\
         <th>p</th><th>verdict</th></tr>",
    );
    for m in &p.metrics {
        let show = |v: Option<f64>| v.map_or("-".into(), |x| value(x, m.unit));
        let test = m.test.as_ref().map_or(String::new(), |t| {
            format!(
                "{} [{}, {}]",
                pct_signed(t.change),
                pct_signed(t.ci_low),
                pct_signed(t.ci_high)
            )
        });
        let n = |s: &Option<super::Samples>| {
            s.as_ref()
                .map_or("-".into(), |s| format!("{} ({:.0})", s.n, s.n_eff))
        };
        let class = match m.verdict {
            Verdict::Worse => " class=\"bad\"",
            Verdict::Better => " class=\"ok\"",
            _ => "",
        };
        out +=
            &format!(
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{} / {}</td><td class=\"n\">{}</td>\
             <td{class}>{}{}</td></tr>",
            esc(&m.label),
            show(m.base),
            show(m.new),
            m.change.map_or("-".into(), pct_signed),
            test,
            n(&m.base_samples),
            n(&m.new_samples),
            m.test.as_ref().map_or(String::new(), |t| format!("{:.3}", t.p)),
            m.verdict.as_str(),
            if m.exceeds_threshold {
                " · beyond the threshold"
            } else if m.inconclusive {
                " · inconclusive at the threshold"
            } else {
                ""
            },
        );
    }
    for s in &p.shown {
        let pct = |v: Option<f64>| v.map_or("-".into(), |x| shown_value(s, x));
        out += &format!(
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td></td><td></td><td></td><td>(not tested)</td></tr>",
            esc(&s.label),
            pct(s.base),
            pct(s.new),
            shown_change(s)
        );
    }
    out + "</table></div>"
}
