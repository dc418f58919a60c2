//! A query run's breakdowns merged: per query type (by name) and per label, in the order the
//! shards list them; counts add, histograms add, rates are over the merged span, and each
//! query's own thresholds are judged again on its merged figures.

use super::histo;
use super::thresholds::{self, Figures, Planned};
use crate::report::{rate, LabelReport, QueryDetail, QueryTypeReport};

/// The query types of `details` (one per shard), merged by name.
pub fn query_types(
    details: &[&QueryDetail],
    planned: Option<&Planned>,
    elapsed_s: f64,
) -> Result<Vec<QueryTypeReport>, String> {
    let mut names: Vec<&str> = Vec::new();
    for d in details {
        for t in &d.query_types {
            if !names.contains(&t.name.as_str()) {
                names.push(&t.name);
            }
        }
    }
    names
        .into_iter()
        .map(|name| {
            let parts: Vec<&QueryTypeReport> = details
                .iter()
                .flat_map(|d| d.query_types.iter().filter(|t| t.name == name))
                .collect();
            one_type(&parts, planned, elapsed_s)
        })
        .collect()
}

fn one_type(
    parts: &[&QueryTypeReport],
    planned: Option<&Planned>,
    elapsed_s: f64,
) -> Result<QueryTypeReport, String> {
    let first = parts[0];
    let ok = parts.iter().map(|t| t.ok).sum();
    let rows = parts.iter().map(|t| t.rows).sum();
    let sum_us = parts.iter().map(|t| t.sum_us).sum();
    let latency = histo::merge_all(parts.iter().map(|t| &t.latency))?;
    let errors = super::errors(parts.iter().map(|t| &t.errors));
    let thresholds = match planned {
        Some(p) => {
            let own = p.queries.get(&first.name).map_or(&[][..], Vec::as_slice);
            thresholds::matching(own, &first.thresholds)
                .map_err(|e| format!("query {}: {e}", first.name))?;
            thresholds::judge_all(
                own,
                &Figures {
                    ok,
                    rows,
                    sum_us,
                    latency: &latency,
                    errors: &errors,
                    elapsed_s,
                },
                None,
            )?
        }
        // Not judged: the caller says why, and marks them.
        None => first
            .thresholds
            .iter()
            .map(|t| crate::report::ThresholdReport {
                actual: "not judged on the merged figures".into(),
                ok: false,
                ..t.clone()
            })
            .collect(),
    };
    Ok(QueryTypeReport {
        name: first.name.clone(),
        label: first.label.clone(),
        ok,
        failed: parts.iter().map(|t| t.failed).sum(),
        rows,
        rows_per_query: (ok > 0).then(|| rows as f64 / ok as f64),
        qps: rate(ok, elapsed_s),
        sum_us,
        latency,
        service: histo::merge(parts.iter().map(|t| t.service.as_ref()))?,
        errors,
        thresholds,
        streaming: super::streaming::merge(parts.iter().map(|t| t.streaming.as_ref()))?,
        outcomes: outcomes(parts)?,
    })
}

/// Not found and rows changed, summed; each statement's latencies merged.
fn outcomes(parts: &[&QueryTypeReport]) -> Result<crate::report::TypeOutcomes, String> {
    let counted: Vec<u64> = parts.iter().filter_map(|t| t.outcomes.affected).collect();
    let most = parts
        .iter()
        .map(|t| t.outcomes.steps.len())
        .max()
        .unwrap_or(0);
    let mut steps = Vec::with_capacity(most);
    for i in 0..most {
        let of_step: Vec<&crate::report::StepReport> = parts
            .iter()
            .filter_map(|t| t.outcomes.steps.get(i))
            .collect();
        steps.push(crate::report::StepReport {
            statement: of_step[0].statement.clone(),
            latency: histo::merge_all(of_step.iter().map(|s| &s.latency))?,
        });
    }
    Ok(crate::report::TypeOutcomes {
        not_found: parts.iter().map(|t| t.outcomes.not_found).sum(),
        affected: (!counted.is_empty()).then(|| counted.iter().sum()),
        steps,
    })
}

/// The labels of `details`, merged by label.
pub fn labels(details: &[&QueryDetail], elapsed_s: f64) -> Result<Vec<LabelReport>, String> {
    let mut order: Vec<&str> = Vec::new();
    for d in details {
        for l in &d.labels {
            if !order.contains(&l.label.as_str()) {
                order.push(&l.label);
            }
        }
    }
    order
        .into_iter()
        .map(|label| {
            let parts: Vec<&LabelReport> = details
                .iter()
                .flat_map(|d| d.labels.iter().filter(|l| l.label == label))
                .collect();
            let ok = parts.iter().map(|l| l.ok).sum();
            Ok(LabelReport {
                label: label.to_string(),
                queries: parts[0].queries.clone(),
                ok,
                failed: parts.iter().map(|l| l.failed).sum(),
                rows: parts.iter().map(|l| l.rows).sum(),
                qps: rate(ok, elapsed_s),
                latency: histo::merge_all(parts.iter().map(|l| &l.latency))?,
                service: histo::merge(parts.iter().map(|l| l.service.as_ref()))?,
            })
        })
        .collect()
}
