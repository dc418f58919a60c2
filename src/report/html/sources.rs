//! The plan's parameters (plan.json) and the workload's sources (`sources/`) on the page.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use super::esc;

/// A source file is shown in full up to this size; a larger one (a CSV table, a file to
/// replay) is listed with its size.
const SHOWN_FILE: u64 = 64 * 1024;
/// All shown sources together at most, so the page stays small whatever the workload read.
const SHOWN_TOTAL: u64 = 512 * 1024;

/// A plan value as a person writes it: a timestamp or a duration by its text, a symbol by its
/// name, a list or record as compact JSON.
fn value_text(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::String(s) => s.clone(),
        Value::Object(m) => {
            for k in ["timestamp", "duration", "symbol"] {
                if let Some(Value::String(s)) = m.get(k) {
                    return s.clone();
                }
            }
            short(v.to_string())
        }
        other => short(other.to_string()),
    }
}

fn short(mut s: String) -> String {
    const MAX: usize = 120;
    if s.len() > MAX {
        let mut end = MAX;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}

/// One row per cell, one column per parameter, from plan.json.
pub fn params(out: &mut String, plan: Option<&serde_json::Value>) {
    let Some(cells) = plan.and_then(|p| p.get("cells")).and_then(|c| c.as_array()) else {
        out.push_str("<p class=\"meta\">No plan.json beside the report.</p>");
        return;
    };
    // A matrix axis is a parameter too, held in the cell's `axes`: those columns first.
    const PLACES: [&str; 2] = ["axes", "params"];
    let mut names: Vec<String> = Vec::new();
    for place in PLACES {
        for c in cells {
            if let Some(m) = c.get(place).and_then(|p| p.as_object()) {
                for k in m.keys() {
                    if !names.contains(k) {
                        names.push(k.clone());
                    }
                }
            }
        }
    }
    if names.is_empty() {
        out.push_str("<p class=\"meta\">The workload has no parameters.</p>");
        return;
    }
    out.push_str("<div class=\"scroll\"><table><tr><th>cell</th>");
    for n in &names {
        let _ = write!(out, "<th>{}</th>", esc(n));
    }
    out.push_str("</tr>");
    for c in cells {
        let index = c.get("index").and_then(|i| i.as_u64()).unwrap_or(0);
        let _ = write!(out, "<tr><td class=\"n\">{index}</td>");
        for n in &names {
            let v = PLACES
                .iter()
                .find_map(|place| c.get(place).and_then(|p| p.get(n)))
                .map(value_text)
                .unwrap_or_default();
            let _ = write!(out, "<td>{}</td>", esc(&v));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table></div>");
}

/// Every file under `dir/sources/`, in path order: the workload's own first, the stdlib's
/// copies (`std/`) after.
fn listing(root: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(p),
                Ok(m) => {
                    if let Ok(rel) = p.strip_prefix(root) {
                        out.push((rel.to_path_buf(), m.len()));
                    }
                }
                Err(_) => {}
            }
        }
    }
    out.sort_by_key(|(p, _)| (p.starts_with("std"), p.clone()));
    out
}

pub fn files(out: &mut String, dir: Option<&Path>) {
    let root = dir.map(|d| d.join("sources"));
    let list = root.as_deref().map(listing).unwrap_or_default();
    let Some(root) = root.filter(|_| !list.is_empty()) else {
        out.push_str("<p class=\"meta\">No sources/ beside the report.</p>");
        return;
    };
    out.push_str(
        "<p class=\"meta\">As the run read them, copied into <code>sources/</code> beside this \
         page.</p>",
    );
    let mut shown = 0u64;
    for (i, (rel, size)) in list.iter().enumerate() {
        let name = rel.display().to_string();
        let text = (*size <= SHOWN_FILE && shown + size <= SHOWN_TOTAL)
            .then(|| std::fs::read(root.join(rel)).ok())
            .flatten()
            .and_then(|b| String::from_utf8(b).ok());
        let size_text = super::svg::num(*size as f64);
        match text {
            Some(t) => {
                shown += size;
                let _ = write!(
                    out,
                    "<details{}><summary><code>{}</code> ({size_text} bytes)</summary><pre>{}</pre></details>",
                    if i == 0 { " open" } else { "" },
                    esc(&name),
                    esc(&t)
                );
            }
            None => {
                let _ = write!(
                    out,
                    "<p><code>{}</code> ({size_text} bytes, not shown here)</p>",
                    esc(&name)
                );
            }
        }
    }
}
