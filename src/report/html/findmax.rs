//! A `find max rate` search as a curve: each step's latency against its rate, the SLA's bound
//! as a line across, and the answer marked. The steps' table says the same in figures; the
//! curve shows where the latency bends and how far under the bound the answer stayed.

use crate::report::findmax::{FindMaxReport, FindMaxStep};

use super::svg::{self, Dot, Limit, Line, Mark, Unit};

/// The latency figures a step keeps, by the name an SLA term gives them.
fn figure(metric: &str) -> Option<fn(&FindMaxStep) -> Option<u64>> {
    let f: fn(&FindMaxStep) -> Option<u64> = match metric {
        "p50" | "median" => |s| Some(s.p50_us),
        "p90" => |s| Some(s.p90_us),
        "p99" => |s| Some(s.p99_us),
        "p999" => |s| Some(s.p999_us),
        "max" => |s| Some(s.max_us),
        "lag_p50" => |s| s.lag_p50_us,
        "lag_p99" => |s| s.lag_p99_us,
        "lag_max" => |s| s.lag_max_us,
        _ => return None,
    };
    Some(f)
}

/// A duration as an SLA writes it (`20ms`, `1.5s`, `500us`), in microseconds.
fn micros(text: &str) -> Option<f64> {
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))?;
    let (n, unit) = text.split_at(split);
    let n: f64 = n.replace('_', "").parse().ok()?;
    let scale = match unit {
        "ns" => 1e-3,
        "us" | "µs" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "m" => 60e6,
        "h" => 3600e6,
        _ => return None,
    };
    Some(n * scale)
}

/// The SLA's latency terms the steps have a figure for: (metric, bound in µs if an upper
/// one, the term as written). The SLA is kept as text in report.json, so it is read back
/// from its `METRIC OP VALUE and ...` form; a term of another shape draws no bound.
fn latency_terms(sla: &str) -> Vec<(String, Option<f64>, String)> {
    let mut out: Vec<(String, Option<f64>, String)> = Vec::new();
    for term in sla.split(" and ") {
        let words: Vec<&str> = term.split_whitespace().collect();
        let [metric, op, value] = words[..] else {
            continue;
        };
        if figure(metric).is_none() {
            continue;
        }
        let bound = matches!(op, "<" | "<=").then(|| micros(value)).flatten();
        if !out.iter().any(|t| t.0 == metric) {
            out.push((metric.to_string(), bound, term.trim().to_string()));
        }
    }
    out
}

/// The chart, or `None` when no step has a figure to draw. Without a latency term (an SLA on
/// errors only) the steps' p99 is drawn, with no bound.
pub fn chart(f: &FindMaxReport) -> Option<String> {
    let mut terms = latency_terms(&f.sla);
    if terms.is_empty() {
        let name = if f.probes { "lag_p99" } else { "p99" };
        terms.push((name.to_string(), None, String::new()));
    }
    let mut steps: Vec<&FindMaxStep> = f.steps.iter().collect();
    steps.sort_by(|a, b| {
        a.rate_per_s
            .total_cmp(&b.rate_per_s)
            .then(a.step.cmp(&b.step))
    });
    let mut lines = Vec::new();
    let mut limits = Vec::new();
    let mut dots = Vec::new();
    for (i, (metric, bound, term)) in terms.iter().enumerate() {
        let Some(value) = figure(metric) else {
            continue;
        };
        let points: Vec<(f64, f64)> = steps
            .iter()
            .filter_map(|s| value(s).map(|v| (s.rate_per_s, v as f64)))
            .collect();
        if points.is_empty() {
            continue;
        }
        for s in &steps {
            if let Some(v) = value(s) {
                dots.push(Dot {
                    x: s.rate_per_s,
                    y: v as f64,
                    met: s.verdict == "met",
                    colour: i,
                    title: format!(
                        "step {} ({}) at {}/s: {metric} {}, {}",
                        s.step,
                        s.phase,
                        svg::num(s.rate_per_s),
                        svg::micros(v as f64),
                        s.verdict
                    ),
                });
            }
        }
        lines.push(Line {
            name: metric.clone(),
            points,
        });
        if let Some(b) = bound {
            limits.push(Limit {
                y: *b,
                label: format!("SLA {term}"),
                colour: i,
            });
        }
    }
    let marks: Vec<Mark> = f
        .answer_per_s
        .map(|a| Mark {
            x: a,
            label: format!("answer {}/s", svg::num(a)),
        })
        .into_iter()
        .collect();
    let (unit, what) = if f.probes {
        ("rows/s", "lag")
    } else {
        ("per second", "latency")
    };
    svg::curve(
        &format!("find max rate: {what} against rate"),
        (Unit::Per(unit), Unit::Micros),
        &lines,
        &limits,
        &marks,
        &dots,
        &format!(
            "x: the step's rate, {unit}; one dot per step: filled met the SLA, hollow broke it; \
             the dashed line across is the SLA's bound"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::{latency_terms, micros};

    #[test]
    fn an_slas_latency_terms_and_their_bounds_are_read_back_from_its_text() {
        assert_eq!(micros("20ms"), Some(20_000.0));
        assert_eq!(micros("1.5s"), Some(1_500_000.0));
        assert_eq!(micros("500us"), Some(500.0));
        assert_eq!(micros("2%"), None);
        let t = latency_terms("p99 < 20ms and error_rate < 0.1% and p50 <= 5ms");
        assert_eq!(
            t,
            vec![
                ("p99".into(), Some(20_000.0), "p99 < 20ms".into()),
                ("p50".into(), Some(5_000.0), "p50 <= 5ms".into()),
            ]
        );
        assert!(latency_terms("errors == 0").is_empty());
    }
}
