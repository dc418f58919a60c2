//! A comparison as people read it: the two runs, then per cell and phase one line per
//! headline metric with both whole-run values, their change, the per-interval test's change
//! with its confidence interval, the sample sizes and the verdict. Nothing here reads the
//! clock: the same two runs render the same text.

use super::plans::{short, PlanCheck, PlanVerdict};
use super::{
    metric_name, CellComparison, Comparison, MetricComparison, PhaseComparison, RunInfo,
    ShownValue, Unit,
};
use crate::plan::thousands;
use crate::report::render::fmt_latency;

/// The whole comparison as text, ending in a newline.
pub fn text(c: &Comparison) -> String {
    let mut out = String::new();
    out += &run_line("base", &c.base);
    out += &run_line("new ", &c.new);
    out += &plans_text(&c.plans);
    out += &super::environment::text(&c.environment);
    out += &format!(
        "tests: Welch's t on per-interval means, effective sample sizes for autocorrelation, \
         alpha {}, {:.0}% confidence intervals\n",
        pct_plain(c.alpha),
        (1.0 - c.alpha) * 100.0
    );
    for cell in &c.cells {
        out += &cell_text(cell);
    }
    if !c.only_in_base.is_empty() {
        out += &format!(
            "\ncells only in the base run: {}\n",
            c.only_in_base.join(", ")
        );
    }
    if !c.only_in_new.is_empty() {
        out += &format!(
            "\ncells only in the new run: {}\n",
            c.only_in_new.join(", ")
        );
    }
    out += &summary(c);
    out
}

fn run_line(side: &str, r: &RunInfo) -> String {
    format!(
        "{side}: {}  ({} from {}, seed {}, started {}{})\n",
        r.path,
        r.workload,
        r.file,
        r.seed,
        r.started,
        match (r.killed, r.interrupted) {
            (true, _) => ", killed: its report rebuilt from its time series",
            (false, true) => ", interrupted",
            _ => "",
        }
    )
}

/// Whether both ran the same plan: a line, or what differs.
fn plans_text(p: &PlanCheck) -> String {
    match p.verdict {
        PlanVerdict::Same => match &p.base {
            Some(d) => format!("plan: the same in both runs ({})\n", short(d)),
            None => "plan: the same in both runs\n".into(),
        },
        PlanVerdict::Different => {
            let mut out = "plans differ (compared with --allow-different):\n".to_string();
            for d in &p.differences {
                out += &format!("  {d}\n");
            }
            out
        }
        PlanVerdict::Unknown => format!("{}\n", p.note.as_deref().unwrap_or("plans not checked")),
    }
}

fn cell_text(c: &CellComparison) -> String {
    let mut out = if c.key.is_empty() {
        "\ncell (the workload has no matrix)\n".to_string()
    } else {
        format!("\ncell {}\n", c.key)
    };
    for p in &c.phases {
        out += &phase_text(p);
    }
    if !c.only_in_base.is_empty() {
        out += &format!(
            "  phases only in the base run: {}\n",
            c.only_in_base.join(", ")
        );
    }
    if !c.only_in_new.is_empty() {
        out += &format!(
            "  phases only in the new run: {}\n",
            c.only_in_new.join(", ")
        );
    }
    out
}

fn phase_text(p: &PhaseComparison) -> String {
    let kind = if p.base_kind == p.new_kind {
        p.base_kind.clone()
    } else {
        format!("{} / {}", p.base_kind, p.new_kind)
    };
    use crate::report::render::status;
    let mut out = format!(
        "  {} ({kind}): {} / {}\n",
        p.name,
        status(p.base_status),
        status(p.new_status)
    );
    if let Some(note) = &p.note {
        out += &format!("    {note}\n");
    }
    for w in &p.warnings {
        out += &format!("    warning: {w}\n");
    }
    if p.metrics.is_empty() && p.shown.is_empty() {
        return out;
    }
    let mut rows = vec![[
        "metric",
        "base",
        "new",
        "change",
        "per-interval change [95% CI]",
        "intervals (effective)",
        "verdict",
    ]
    .map(String::from)
    .to_vec()];
    rows.extend(p.metrics.iter().map(metric_row));
    for s in &p.shown {
        let v = |x: Option<f64>| x.map_or("-".into(), |x| shown_value(s, x));
        rows.push(vec![
            s.label.clone(),
            v(s.base),
            v(s.new),
            shown_change(s),
            String::new(),
            String::new(),
            "(not tested)".into(),
        ]);
    }
    out += &grid(&rows, &[false, true, true, true, false, true, false]);
    out
}

fn metric_row(m: &MetricComparison) -> Vec<String> {
    let v = |x: Option<f64>| x.map_or("-".into(), |x| value(x, m.unit));
    let interval = match &m.test {
        Some(t) => format!(
            "{} [{}, {}]",
            pct_signed(t.change),
            pct_signed(t.ci_low),
            pct_signed(t.ci_high)
        ),
        None => String::new(),
    };
    let sizes = match (&m.base_samples, &m.new_samples) {
        (Some(b), Some(n)) => format!("{}/{} ({:.0}/{:.0})", b.n, n.n, b.n_eff, n.n_eff),
        (Some(b), None) => format!("{}/-", b.n),
        (None, Some(n)) => format!("-/{}", n.n),
        (None, None) => String::new(),
    };
    let mut verdict = m.verdict.as_str().to_string();
    if m.exceeds_threshold {
        verdict += ", beyond the threshold";
    }
    if m.inconclusive {
        verdict += ", inconclusive at the threshold";
    }
    vec![
        m.label.clone(),
        v(m.base),
        v(m.new),
        m.change.map_or("-".into(), pct_signed),
        interval,
        sizes,
        verdict,
    ]
}

fn summary(c: &Comparison) -> String {
    let metrics = || {
        c.cells
            .iter()
            .flat_map(|c| &c.phases)
            .flat_map(|p| &p.metrics)
    };
    let count = |v| metrics().filter(|m| m.verdict == v).count();
    use super::Verdict::*;
    let mut out = format!(
        "\n{} metrics: {} worse, {} better, {} no significant change, {} too few samples, {} \
         without per-interval samples\n",
        metrics().count(),
        count(Worse),
        count(Better),
        count(NoSignificantChange),
        count(TooFewSamples),
        count(NoSamples),
    );
    if let Some(th) = c.threshold {
        if c.regressions.is_empty() && c.inconclusive.is_empty() {
            out += &format!(
                "threshold {}: no metric is significantly worse by more than it\n",
                pct_plain(th)
            );
        } else if c.regressions.is_empty() {
            out += &format!(
                "threshold {}: inconclusive: no metric is significantly worse by more than it, \
                 but {} could not be tested and changed for the worse by more than it over the \
                 whole run:\n",
                pct_plain(th),
                c.inconclusive.len(),
            );
            out += &inconclusive_lines(c);
        } else {
            out += &format!(
                "threshold {}: {} significantly worse by more than it:\n",
                pct_plain(th),
                c.regressions.len(),
            );
            for r in &c.regressions {
                out += &format!("  {r}\n");
            }
            if !c.inconclusive.is_empty() {
                out += &format!(
                    "and {} could not be tested and changed for the worse by more than it over \
                     the whole run:\n",
                    c.inconclusive.len()
                );
                out += &inconclusive_lines(c);
            }
        }
    }
    out
}

/// Each inconclusive metric, named, with its whole-run change and why it was not tested.
fn inconclusive_lines(c: &Comparison) -> String {
    let mut out = String::new();
    for cell in &c.cells {
        for p in &cell.phases {
            for m in p.metrics.iter().filter(|m| m.inconclusive) {
                let sizes = match (&m.base_samples, &m.new_samples) {
                    (Some(b), Some(n)) => format!(", {}/{} intervals", b.n, n.n),
                    _ => String::new(),
                };
                out += &format!(
                    "  {} ({}): {} over the whole run; {}{sizes}\n",
                    metric_name(&cell.key, &p.name, &m.metric),
                    m.label,
                    m.change.map_or("-".into(), pct_signed),
                    m.verdict.as_str(),
                );
            }
        }
    }
    out
}

pub(super) fn value(x: f64, unit: Unit) -> String {
    match unit {
        Unit::PerSecond if x >= 100.0 => thousands(x.round() as u64),
        Unit::PerSecond => format!("{x:.2}"),
        Unit::Micros => fmt_latency(x, 1000.0, 10_000.0),
        Unit::Count => thousands(x.round() as u64),
    }
}

/// A shown figure: CPU per unit (`1.23us/row`, `2.70ms/query`), or a fraction as a percentage.
pub(super) fn shown_value(s: &ShownValue, x: f64) -> String {
    match &s.per {
        Some(unit) if x >= 1000.0 => format!("{:.2}ms/{unit}", x / 1000.0),
        Some(unit) if x >= 100.0 => format!("{x:.0}us/{unit}"),
        Some(unit) if x >= 10.0 => format!("{x:.1}us/{unit}"),
        Some(unit) => format!("{x:.2}us/{unit}"),
        None => pct_plain(x),
    }
}

/// A CPU-per-unit figure's whole-run change, `new / base - 1`; none for a fraction (the error
/// rate's change from 0 has no ratio).
pub(super) fn shown_change(s: &ShownValue) -> String {
    match (&s.per, s.base, s.new) {
        (Some(_), Some(b), Some(n)) if b > 0.0 => pct_signed(n / b - 1.0),
        _ => String::new(),
    }
}

/// A fraction as a signed percentage: `+3.2%`, `-10.0%`.
pub(super) fn pct_signed(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    // -0.0 after rounding reads as a change in the wrong direction.
    let r = (x * 1000.0).round() / 10.0;
    if r == 0.0 {
        "+0.0%".into()
    } else {
        format!("{r:+.1}%")
    }
}

/// A fraction as a percentage without a sign, as few decimals as it needs: `5%`, `0.1%`.
pub(super) fn pct_plain(x: f64) -> String {
    let p = x * 100.0;
    let s = format!("{p:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// Rows aligned in columns (`right` per column), two spaces apart, indented by four.
fn grid(rows: &[Vec<String>], right: &[bool]) -> String {
    let cols = right.len();
    let width: Vec<usize> = (0..cols)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::from("   ");
        for i in 0..cols {
            let pad = width[i] - r[i].chars().count();
            line.push(' ');
            if i > 0 {
                line.push(' ');
            }
            if right[i] {
                line += &" ".repeat(pad);
                line += &r[i];
            } else {
                line += &r[i];
                line += &" ".repeat(pad);
            }
        }
        out += line.trim_end();
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_read_as_people_write_them() {
        assert_eq!(pct_signed(-0.1), "-10.0%");
        assert_eq!(pct_signed(0.0321), "+3.2%");
        assert_eq!(pct_signed(-0.0001), "+0.0%");
        assert_eq!(pct_signed(f64::NAN), "-");
        assert_eq!(pct_plain(0.05), "5%");
        assert_eq!(pct_plain(0.001), "0.1%");
        assert_eq!(pct_plain(0.0), "0%");
        assert_eq!(value(1234567.4, Unit::PerSecond), "1,234,567");
        assert_eq!(value(2.5, Unit::PerSecond), "2.50");
        assert_eq!(value(850.0, Unit::Micros), "850us");
        assert_eq!(value(1500.0, Unit::Micros), "1.50ms");
    }
}
