//! Whether two runs ran the same plan, and if not, what differs. Figures of two runs of
//! different params, cells or phases differ for reasons no test of them can tell apart from a
//! regression, so `wlrun compare` refuses such runs unless `--allow-different` says the
//! difference is the point, and then shows it.
//!
//! The plan is what the workload's text lowers to (every cell's params and phases, the seed):
//! a comment or a reformatting changes nothing, anything that changes what runs does. The
//! workload's path does not count (each machine may keep the file elsewhere), as for shards.
//! What differs is read off the two runs' plan.json; a report.json named alone has only the
//! plan's digest (`report.plan`), which says whether, not what.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

/// What the plans of the two runs are to each other.
#[derive(Clone, Debug, Serialize)]
pub struct PlanCheck {
    pub verdict: PlanVerdict,
    /// Each run's plan digest (`sha256:...`, report.json's `plan`); `None` for a report that
    /// does not carry one (format 2, a killed run's rebuilt report).
    pub base: Option<String>,
    pub new: Option<String>,
    /// What differs, one line each (`param workers: 4 vs 1`); at most `SHOWN`, then a line
    /// saying how many more.
    pub differences: Vec<String>,
    /// Why the verdict is `unknown`.
    pub note: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanVerdict {
    Same,
    /// Compared anyway: `--allow-different`.
    Different,
    /// Neither plan.json beside both reports nor a digest in both: not checked.
    Unknown,
}

/// The differences listed before the rest are counted.
const SHOWN: usize = 12;

/// One run's plan as far as it can be known: its plan.json (without the workload's path) and
/// its report's digest.
pub struct PlanOf {
    pub json: Option<Value>,
    pub digest: Option<String>,
}

/// The plan of the run in `dir` whose report carries `digest`: plan.json beside it, if it is
/// there and reads.
pub fn plan_of(dir: &Path, digest: Option<String>) -> PlanOf {
    let json = std::fs::read(dir.join("plan.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .map(|mut v| {
            if let Some(w) = v.get_mut("workload").and_then(Value::as_object_mut) {
                w.remove("file");
            }
            v
        });
    PlanOf { json, digest }
}

/// The two plans checked against each other.
pub fn check(base: &PlanOf, new: &PlanOf) -> PlanCheck {
    let mut out = PlanCheck {
        verdict: PlanVerdict::Same,
        base: base.digest.clone(),
        new: new.digest.clone(),
        differences: Vec::new(),
        note: None,
    };
    if let (Some(b), Some(n)) = (&base.json, &new.json) {
        let mut lines = Vec::new();
        differences(b, n, &mut lines);
        if !lines.is_empty() {
            out.verdict = PlanVerdict::Different;
            let more = lines.len().saturating_sub(SHOWN);
            lines.truncate(SHOWN);
            if more > 0 {
                lines.push(format!("and {more} more"));
            }
            out.differences = lines;
        }
        return out;
    }
    match (&base.digest, &new.digest) {
        (Some(b), Some(n)) if b == n => {}
        (Some(b), Some(n)) => {
            out.verdict = PlanVerdict::Different;
            out.differences.push(format!(
                "the plans' digests differ ({} vs {}); plan.json is not beside both reports, so \
                 what differs is not known",
                short(b),
                short(n)
            ));
        }
        _ => {
            let which = match (&base.digest, &new.digest) {
                (None, None) => "neither run's report says",
                (None, _) => "the base run's report does not say",
                _ => "the new run's report does not say",
            };
            out.verdict = PlanVerdict::Unknown;
            out.note = Some(format!(
                "plans not checked: {which} which plan it ran (a format 2 report does not), and \
                 plan.json is not beside both"
            ));
        }
    }
    out
}

/// `sha256:0123456789ab…`: enough of a digest to tell two apart.
pub fn short(digest: &str) -> String {
    match digest.char_indices().nth("sha256:".len() + 12) {
        Some((i, _)) => format!("{}…", &digest[..i]),
        None => digest.to_string(),
    }
}

/// Every difference between two plans as JSON, for people: the seed and the workload's fields
/// by name, cells matched by key and their params by name, phases by name; a difference that
/// every cell both plans have shares is said once, for every cell.
fn differences(b: &Value, n: &Value, out: &mut Vec<String>) {
    for (k, bv) in obj(b) {
        if k == "cells" {
            continue;
        }
        walk(k, bv, n.get(k).unwrap_or(&Value::Null), out);
    }
    for (k, nv) in obj(n) {
        if k != "cells" && b.get(k).is_none() {
            walk(k, &Value::Null, nv, out);
        }
    }
    let cells = |v: &Value| -> Vec<(String, Value)> {
        v.get("cells")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|c| (str_at(c, "key"), c.clone()))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    let (bc, nc) = (cells(b), cells(n));
    let only = |a: &[(String, Value)], other: &[(String, Value)]| -> Vec<String> {
        a.iter()
            .filter(|(k, _)| !other.iter().any(|(o, _)| o == k))
            .map(|(k, _)| match k.as_str() {
                "" => "the one cell of a workload without a matrix".to_string(),
                k => k.to_string(),
            })
            .collect()
    };
    let (ob, on) = (only(&bc, &nc), only(&nc, &bc));
    if !ob.is_empty() {
        out.push(format!("cells only in the base plan: {}", ob.join(", ")));
    }
    if !on.is_empty() {
        out.push(format!("cells only in the new plan: {}", on.join(", ")));
    }
    // Per common cell, its differences; those every common cell has are said once.
    let mut per_cell: Vec<(String, Vec<String>)> = Vec::new();
    for (key, cb) in &bc {
        let Some((_, cn)) = nc.iter().find(|(k, _)| k == key) else {
            continue;
        };
        let mut lines = Vec::new();
        cell_differences(cb, cn, &mut lines);
        per_cell.push((key.clone(), lines));
    }
    let shared: Vec<String> = match per_cell.split_first() {
        Some((first, rest)) if !rest.is_empty() => first
            .1
            .iter()
            .filter(|l| rest.iter().all(|(_, ls)| ls.contains(l)))
            .cloned()
            .collect(),
        _ => Vec::new(),
    };
    for l in &shared {
        out.push(format!("every cell: {l}"));
    }
    for (key, lines) in per_cell {
        for l in lines.into_iter().filter(|l| !shared.contains(l)) {
            out.push(match key.as_str() {
                "" => l,
                _ => format!("{}: {l}", cell_name(&key)),
            });
        }
    }
}

fn cell_name(key: &str) -> String {
    if key.is_empty() {
        "the cell".into()
    } else {
        format!("cell {key}")
    }
}

/// A cell's params by name, its phases by name, the rest by field.
fn cell_differences(b: &Value, n: &Value, out: &mut Vec<String>) {
    for (k, bv) in obj(b) {
        let nv = n.get(k).unwrap_or(&Value::Null);
        match k.as_str() {
            // The key matched the cells; the index only numbers them.
            "key" | "index" | "axes" => {}
            "params" => {
                for (name, pb) in obj(bv) {
                    walk(
                        &format!("param {name}"),
                        pb,
                        nv.get(name).unwrap_or(&Value::Null),
                        out,
                    );
                }
                for (name, pn) in obj(nv) {
                    if bv.get(name).is_none() {
                        walk(&format!("param {name}"), &Value::Null, pn, out);
                    }
                }
            }
            "phases" => phase_differences(bv, nv, out),
            _ => walk(k, bv, nv, out),
        }
    }
}

fn phase_differences(b: &Value, n: &Value, out: &mut Vec<String>) {
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    let (bp, np) = (list(b), list(n));
    let names = |ps: &[Value]| ps.iter().map(|p| str_at(p, "name")).collect::<Vec<_>>();
    let (bn, nn) = (names(&bp), names(&np));
    if bn != nn {
        out.push(format!(
            "phases: {} vs {}",
            if bn.is_empty() {
                "none".into()
            } else {
                bn.join(", ")
            },
            if nn.is_empty() {
                "none".into()
            } else {
                nn.join(", ")
            }
        ));
    }
    for p in &bp {
        let name = str_at(p, "name");
        if let Some(q) = np.iter().find(|q| str_at(q, "name") == name) {
            for (k, pv) in obj(p) {
                if k != "name" {
                    walk(
                        &format!("phase {name}: {k}"),
                        pv,
                        q.get(k).unwrap_or(&Value::Null),
                        out,
                    );
                }
            }
            for (k, qv) in obj(q) {
                if p.get(k).is_none() {
                    walk(&format!("phase {name}: {k}"), &Value::Null, qv, out);
                }
            }
        }
    }
}

/// The differences of two values at `path`: objects field by field, arrays of the same length
/// item by item, anything else as a whole.
fn walk(path: &str, b: &Value, n: &Value, out: &mut Vec<String>) {
    match (b, n) {
        (Value::Object(bo), Value::Object(no)) if !is_duration(b) && !is_duration(n) => {
            for (k, bv) in bo {
                walk(
                    &format!("{path}.{k}"),
                    bv,
                    no.get(k).unwrap_or(&Value::Null),
                    out,
                );
            }
            for (k, nv) in no {
                if !bo.contains_key(k) {
                    walk(&format!("{path}.{k}"), &Value::Null, nv, out);
                }
            }
        }
        (Value::Array(ba), Value::Array(na)) if ba.len() == na.len() => {
            for (i, (bv, nv)) in ba.iter().zip(na).enumerate() {
                walk(&format!("{path}[{i}]"), bv, nv, out);
            }
        }
        _ if b != n => out.push(format!("{path}: {} vs {}", shown(b), shown(n))),
        _ => {}
    }
}

/// A duration as the plan writes it: `{"duration": "5s", "ns": 5000000000}`, one value said
/// as its text.
fn is_duration(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|o| o.len() == 2 && o.contains_key("ns") && o.contains_key("duration"))
}

/// A value in a line: JSON, cut short.
fn shown(v: &Value) -> String {
    const MAX: usize = 60;
    if v.is_null() {
        return "(none)".into();
    }
    if is_duration(v) {
        return str_at(v, "duration");
    }
    let s = v.to_string();
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

fn obj(v: &Value) -> Vec<(&String, &Value)> {
    v.as_object()
        .map(|o| o.iter().collect())
        .unwrap_or_default()
}

fn str_at(v: &Value, field: &str) -> String {
    v.get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan(seed: u64, cells: Value) -> PlanOf {
        PlanOf {
            json: Some(json!({
                "format": 1,
                "workload": {"name": "w", "description": null, "seed": seed},
                "axes": [],
                "cells": cells,
            })),
            digest: None,
        }
    }

    fn cell(key: &str, workers: i64, rows: i64) -> Value {
        json!({
            "index": 1, "key": key, "axes": {}, "params": {"workers": workers},
            "phases": [{"phase": "requests", "name": "r", "connections": workers,
                        "endpoint": {"url": "http://h/"}, "count": rows,
                        "stop": {"duration": {"duration": "5s", "ns": 5_000_000_000_u64}}}],
        })
    }

    #[test]
    fn the_same_plan_is_the_same_and_differences_are_named() {
        let a = plan(1, json!([cell("", 4, 10)]));
        let c = check(&a, &plan(1, json!([cell("", 4, 10)])));
        assert_eq!(c.verdict, PlanVerdict::Same);
        assert!(c.differences.is_empty());

        let mut other = cell("", 1, 10);
        other["phases"][0]["stop"]["duration"] = json!({"duration": "4s", "ns": 4_000_000_000_u64});
        let c = check(&a, &plan(2, json!([other])));
        assert_eq!(c.verdict, PlanVerdict::Different);
        assert_eq!(
            c.differences,
            [
                "workload.seed: 1 vs 2",
                "param workers: 4 vs 1",
                "phase r: connections: 4 vs 1",
                "phase r: stop.duration: 5s vs 4s"
            ]
        );
    }

    #[test]
    fn cells_are_matched_by_key_and_a_difference_of_every_cell_is_said_once() {
        let a = plan(1, json!([cell("k=1", 4, 10), cell("k=2", 4, 10)]));
        let b = plan(
            1,
            json!([cell("k=1", 4, 20), cell("k=2", 4, 20), cell("k=3", 4, 20)]),
        );
        let c = check(&a, &b);
        assert_eq!(
            c.differences,
            [
                "cells only in the new plan: k=3",
                "every cell: phase r: count: 10 vs 20"
            ]
        );
        let b = plan(1, json!([cell("k=1", 4, 10), cell("k=2", 1, 10)]));
        assert_eq!(
            check(&a, &b).differences,
            [
                "cell k=2: param workers: 4 vs 1",
                "cell k=2: phase r: connections: 4 vs 1"
            ]
        );
    }

    #[test]
    fn without_plan_json_the_digests_decide_or_nothing_is_checked() {
        let d = |s: &str| PlanOf {
            json: None,
            digest: Some(s.into()),
        };
        assert_eq!(
            check(&d("sha256:aa"), &d("sha256:aa")).verdict,
            PlanVerdict::Same
        );
        let c = check(&d("sha256:aa"), &d("sha256:bb"));
        assert_eq!(c.verdict, PlanVerdict::Different);
        assert!(
            c.differences[0].contains("what differs is not known"),
            "{c:?}"
        );
        let none = PlanOf {
            json: None,
            digest: None,
        };
        let c = check(&none, &d("sha256:aa"));
        assert_eq!(c.verdict, PlanVerdict::Unknown);
        assert!(
            c.note
                .as_deref()
                .unwrap()
                .contains("the base run's report does not say"),
            "{c:?}"
        );
    }

    #[test]
    fn a_long_list_is_cut_and_counted() {
        let many: Vec<Value> = (0..20).map(|i| cell(&format!("k={i}"), 4, 10)).collect();
        let mut other = many.clone();
        for c in &mut other[..15] {
            c["phases"][0]["count"] = json!(11);
        }
        let c = check(&plan(1, Value::Array(many)), &plan(1, Value::Array(other)));
        assert_eq!(c.differences.len(), SHOWN + 1);
        assert_eq!(c.differences[SHOWN], "and 3 more");
    }
}
