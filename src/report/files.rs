//! `--out DIR`: everything needed to reproduce and re-render a run. report.json (versioned),
//! report.csv (one row per phase), plan.json, and the workload's source files as they were.

use std::path::Path;

use super::{PhaseReport, Report};
use crate::plan::Plan;

/// One CSV row per phase: the figures people chart.
pub fn csv(report: &Report) -> Result<Vec<u8>, String> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let header = [
        "cell",
        "key",
        "phase",
        "kind",
        "endpoint",
        "status",
        "workers",
        "batch_rows",
        "rows_expected",
        "rows_generated",
        "rows_sent",
        "rows_acked",
        "rows_cut_off",
        "rows_visible",
        "visible_after_s",
        "elapsed_s",
        "rows_per_s",
        "rate_counts",
        "send_rows_per_s",
        "ack_rows_per_s",
        "payload_bytes",
        "socket_bytes",
        "payload_bytes_per_row",
        "socket_bytes_per_row",
        "batch_p50_us",
        "batch_p99_us",
        "batch_max_us",
        "client_cpu_s",
        "errors",
    ];
    w.write_record(header).map_err(|e| e.to_string())?;
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| x.to_string());
    let optu = |v: Option<u64>| v.map_or(String::new(), |x| x.to_string());
    for cell in &report.cells {
        for phase in &cell.phases {
            let record: Vec<String> = match phase {
                PhaseReport::Ingest(r) => vec![
                    cell.index.to_string(),
                    cell.key.clone(),
                    r.name.clone(),
                    "ingest".into(),
                    r.endpoint.clone(),
                    format!("{:?}", r.status).to_lowercase(),
                    r.workers.to_string(),
                    r.batch_rows.to_string(),
                    optu(r.rows_expected),
                    r.rows_generated.to_string(),
                    r.rows_sent.to_string(),
                    optu(r.rows_acked),
                    r.rows_cut_off.to_string(),
                    optu(r.rows_visible),
                    opt(r.visible_after_s),
                    r.elapsed_s.to_string(),
                    opt(r.rows_per_s),
                    r.rate_counts.as_str().into(),
                    opt(r.send_rows_per_s),
                    opt(r.ack_rows_per_s),
                    r.payload_bytes.to_string(),
                    r.socket_bytes.to_string(),
                    opt(r.payload_bytes_per_row),
                    opt(r.socket_bytes_per_row),
                    r.batch_latency.p50_us.to_string(),
                    r.batch_latency.p99_us.to_string(),
                    r.batch_latency.max_us.to_string(),
                    opt(r.client_cpu_s),
                    r.errors.values().map(|e| e.count).sum::<u64>().to_string(),
                ],
                // The per-query-type figures are in report.json; this row says the phase ran.
                PhaseReport::Queries(r) => {
                    let mut v = vec![
                        cell.index.to_string(),
                        cell.key.clone(),
                        r.name.clone(),
                        "queries".into(),
                        r.endpoint.clone(),
                        format!("{:?}", r.status).to_lowercase(),
                        r.workers.to_string(),
                    ];
                    v.resize(header.len(), String::new());
                    let at = |name: &str| header.iter().position(|h| *h == name);
                    if let Some(i) = at("elapsed_s") {
                        v[i] = r.elapsed_s.to_string();
                    }
                    if let Some(i) = at("errors") {
                        v[i] = r.failed.to_string();
                    }
                    v
                }
                PhaseReport::Requests(r) => {
                    let mut v = vec![
                        cell.index.to_string(),
                        cell.key.clone(),
                        r.name.clone(),
                        "requests".into(),
                        r.endpoint.clone(),
                        format!("{:?}", r.status).to_lowercase(),
                        r.connections.to_string(),
                    ];
                    v.resize(header.len(), String::new());
                    let at = |name: &str| header.iter().position(|h| *h == name);
                    if let Some(i) = at("elapsed_s") {
                        v[i] = r.elapsed_s.to_string();
                    }
                    if let Some(i) = at("client_cpu_s") {
                        v[i] = opt(r.client_cpu_s);
                    }
                    if let Some(i) = at("errors") {
                        v[i] = r.failed.to_string();
                    }
                    v
                }
                PhaseReport::NotRun { name, .. } => {
                    let mut v = vec![
                        cell.index.to_string(),
                        cell.key.clone(),
                        name.clone(),
                        String::new(),
                        String::new(),
                        "not_run".into(),
                    ];
                    v.resize(header.len(), String::new());
                    v
                }
            };
            w.write_record(&record).map_err(|e| e.to_string())?;
        }
    }
    w.into_inner().map_err(|e| e.to_string())
}

/// Writes the run's files into `dir` (created if needed). `sources` are (name, text) of the
/// workload file and every file it imported; stdlib modules go under `std/`.
pub fn write(
    dir: &Path,
    report: &Report,
    plan: &Plan,
    sources: &[(String, String)],
) -> Result<(), String> {
    let fail =
        |what: &str, e: std::io::Error| format!("cannot write {what} in {}: {e}", dir.display());
    std::fs::create_dir_all(dir).map_err(|e| fail("the directory", e))?;
    let json = serde_json::to_string_pretty(report).map_err(|e| e.to_string())? + "\n";
    std::fs::write(dir.join("report.json"), json).map_err(|e| fail("report.json", e))?;
    std::fs::write(dir.join("report.csv"), csv(report)?).map_err(|e| fail("report.csv", e))?;
    let plan_json = serde_json::to_string_pretty(plan).map_err(|e| e.to_string())? + "\n";
    std::fs::write(dir.join("plan.json"), plan_json).map_err(|e| fail("plan.json", e))?;
    let src = dir.join("sources");
    for (name, text) in sources {
        // Keep relative structure, but never escape the output directory.
        let rel: std::path::PathBuf = Path::new(name)
            .components()
            .filter(|c| matches!(c, std::path::Component::Normal(_)))
            .collect();
        let path = src.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| fail("sources", e))?;
        }
        std::fs::write(&path, text).map_err(|e| fail(name, e))?;
    }
    Ok(())
}
