//! The page's "Environment" table: wlrun's build, the machine, the load average at the start
//! and the end, and each server's version, from report.json's `environment`. A report without
//! one (format 2, merged, rebuilt from a killed run's series) shows none.

use std::fmt::Write;

use super::esc;
use crate::report::environment::{gib, Environment};

pub fn table(out: &mut String, env: Option<&Environment>) {
    let Some(e) = env else { return };
    let load = |v: Option<f64>| v.map(|v| format!("{v:.2}"));
    let mut rows: Vec<(String, Option<String>)> = vec![
        ("wlrun".into(), Some(e.build())),
        ("host".into(), e.host.clone()),
        ("kernel".into(), e.kernel.clone()),
        ("CPU".into(), e.cpu_model.clone()),
        ("cores".into(), e.cores.map(|c| c.to_string())),
        ("memory".into(), e.memory_bytes.map(gib)),
        (
            "load average at the start".into(),
            load(e.load_average_start),
        ),
        ("load average at the end".into(), load(e.load_average_end)),
    ];
    for s in &e.servers {
        let version = s.version.clone().or(Some("unknown (not answered)".into()));
        rows.push((format!("server {}", s.name()), version));
    }
    // Folded under its one-line summary, so the table does not push the charts down.
    let summary = e.lines();
    let summary = summary.lines().next().unwrap_or_default();
    let _ = write!(
        out,
        "<details class=\"env\"><summary>Environment: {}</summary>\
         <table><caption>Environment</caption>",
        esc(summary)
    );
    for (name, value) in rows {
        if let Some(v) = value {
            let _ = write!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(&name), esc(&v));
        }
    }
    out.push_str("</table></details>");
}
