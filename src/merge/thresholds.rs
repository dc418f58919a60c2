//! Thresholds judged again on the merged figures: a p99 over every shard's samples is no
//! shard's p99, and a run's qps is its shards' queries over the union of their spans.
//!
//! The thresholds come from the plan that ran (plan.json, which every shard of the run wrote
//! and whose digest they share), not from the `expect` text of the reports: the plan holds the
//! values exactly (nanoseconds, fractions, rates), and the text of each is checked against the
//! shard's report, so a plan.json that does not match the reports is never judged by. They are
//! measured by the runner's own judge (`exec::judge`), so a merged run passes and fails by the
//! same rules as one process.

use std::collections::BTreeMap;

use crate::exec::judge;
use crate::plan::Threshold;
use crate::query::stats::TypeStats;
use crate::query::QueryErrorClass;
use crate::report::{Accounting, ErrorCount, Latency, ThresholdReport};
use crate::value::Value;

/// The thresholds of a run, as planned: the run's own and each query's.
#[derive(Clone, Debug, Default)]
pub struct Planned {
    pub run: Vec<Threshold>,
    pub queries: BTreeMap<String, Vec<Threshold>>,
}

/// The plan of the run, read from a shard's plan.json.
pub struct PlanThresholds(serde_json::Value);

impl PlanThresholds {
    pub fn read(dir: &std::path::Path) -> Result<PlanThresholds, String> {
        let path = dir.join("plan.json");
        let bytes =
            std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        serde_json::from_slice(&bytes)
            .map(PlanThresholds)
            .map_err(|e| format!("{} is not JSON: {e}", path.display()))
    }

    #[cfg(test)]
    pub fn from_value(plan: serde_json::Value) -> PlanThresholds {
        PlanThresholds(plan)
    }

    fn phase(&self, cell: usize, phase: &str) -> Option<&serde_json::Value> {
        self.0["cells"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["index"].as_u64() == Some(cell as u64))
            .flat_map(|c| c["phases"].as_array().into_iter().flatten())
            .find(|p| p["name"].as_str() == Some(phase))
    }

    /// An ingest phase's planned rows, when it has no `duration` (which would stop it first).
    pub fn ingest_rows(&self, cell: usize, phase: &str) -> Option<u64> {
        let p = self.phase(cell, phase)?;
        p["duration"]
            .is_null()
            .then(|| p["rows_expected"].as_u64())?
    }

    /// The thresholds of run `phase` of cell `cell`.
    pub fn of(&self, cell: usize, phase: &str) -> Result<Planned, String> {
        let p = self
            .phase(cell, phase)
            .ok_or_else(|| format!("plan.json has no phase {phase} in cell {cell}"))?;
        let list = |v: &serde_json::Value| -> Result<Vec<Threshold>, String> {
            v.as_array()
                .into_iter()
                .flatten()
                .map(threshold)
                .collect::<Result<Vec<_>, _>>()
        };
        let mut planned = Planned {
            run: list(&p["expects"])?,
            queries: BTreeMap::new(),
        };
        for q in p["queries"].as_array().into_iter().flatten() {
            let name = q["name"].as_str().unwrap_or_default().to_string();
            planned.queries.insert(name, list(&q["expects"])?);
        }
        Ok(planned)
    }
}

/// A plan.json threshold: `{"metric", "op", "value"}`, the value as the plan writes values.
fn threshold(v: &serde_json::Value) -> Result<Threshold, String> {
    let text = |k: &str| v[k].as_str().map(str::to_string);
    let (Some(metric), Some(op)) = (text("metric"), text("op")) else {
        return Err(format!(
            "plan.json has a threshold without metric or op: {v}"
        ));
    };
    Ok(Threshold {
        value: value(&v["value"]).ok_or_else(|| {
            format!("plan.json threshold `{metric} {op}` has a value wlrun merge does not read")
        })?,
        metric,
        op,
    })
}

/// The plan's JSON of a threshold's value (`value::Value`'s serialization), read back.
/// Lists and ranges (`expect status`) are not thresholds a merge judges: `None`.
fn value(v: &serde_json::Value) -> Option<Value> {
    use serde_json::Value as J;
    match v {
        J::Number(n) => match n.as_i64() {
            Some(i) => Some(Value::Int(i)),
            None => n.as_f64().map(Value::Float),
        },
        J::Object(m) => {
            if let Some(ns) = m.get("ns").filter(|_| m.contains_key("duration")) {
                ns.as_i64().map(Value::Duration)
            } else if let Some(p) = m.get("percent") {
                p.as_f64().map(Value::Percent)
            } else if let Some(r) = m.get("per_second") {
                r.as_f64().map(Value::Rate)
            } else if let Some(b) = m.get("bytes") {
                b.as_u64().map(Value::Size)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// The planned thresholds whose text is the reports': each `expect` of `reported` (a shard's
/// list, `status` left out as the runner leaves it out) must be the plan's, in order.
pub fn matching(planned: &[Threshold], reported: &[ThresholdReport]) -> Result<(), String> {
    let judged: Vec<&Threshold> = planned.iter().filter(|t| t.metric != "status").collect();
    let texts: Vec<String> = judged
        .iter()
        .map(|t| format!("{} {} {}", t.metric, t.op, t.value))
        .collect();
    let reported: Vec<&str> = reported.iter().map(|t| t.expect.as_str()).collect();
    if texts != reported {
        return Err(format!(
            "plan.json's thresholds ({}) are not the report's ({})",
            texts.join(", "),
            reported.join(", ")
        ));
    }
    Ok(())
}

/// A run's merged figures, as the judge measures them.
pub struct Figures<'a> {
    pub ok: u64,
    pub rows: u64,
    pub sum_us: u64,
    pub latency: &'a Latency,
    pub errors: &'a BTreeMap<String, ErrorCount>,
    /// The merged measured time: what `qps` and `rps` are over.
    pub elapsed_s: f64,
}

/// `thresholds` measured on `f` (and `accounting`, for `achieved_rate`).
pub fn judge_all(
    thresholds: &[Threshold],
    f: &Figures,
    accounting: Option<&Accounting>,
) -> Result<Vec<ThresholdReport>, String> {
    let stats = stats(f)?;
    Ok(thresholds
        .iter()
        .filter(|t| t.metric != "status")
        .map(|th| match (th.metric.as_str(), accounting) {
            ("achieved_rate", Some(a)) => crate::exec::account::judge_achieved(th, a),
            _ => judge::judge(th, &stats, f.elapsed_s),
        })
        .collect())
}

/// The figures as the runner's `TypeStats`: the merged histogram, the counts. The judge reads
/// the errors only as a count, so every failure goes under one class.
fn stats(f: &Figures) -> Result<TypeStats, String> {
    let mut s = TypeStats {
        ok: f.ok,
        rows: f.rows,
        sum_us: u128::from(f.sum_us),
        ..TypeStats::default()
    };
    if let Some(h) = super::histo::decode(f.latency)? {
        s.latency = h;
    }
    let failed: u64 = f.errors.values().map(|e| e.count).sum();
    if failed > 0 {
        s.errors.insert(
            QueryErrorClass::Client,
            crate::query::stats::ErrorStats {
                count: failed,
                first: String::new(),
            },
        );
    }
    Ok(s)
}
