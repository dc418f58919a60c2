//! The report as people read it: one line per finished cell while the run goes on, and a
//! table of every cell at the end.

use super::{CellReport, IngestReport, PhaseReport, QueryReport, Report, RequestReport, Status};
use crate::plan::thousands;

fn opt_rows(v: Option<u64>) -> String {
    v.map_or("-".into(), thousands)
}

fn status(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Failed => "FAILED",
        Status::Interrupted => "interrupted",
        Status::NotRun => "not run",
    }
}

fn ms(us: u64) -> String {
    if us >= 10_000 {
        format!("{:.0}ms", us as f64 / 1000.0)
    } else {
        format!("{:.2}ms", us as f64 / 1000.0)
    }
}

/// A rate with its unit, or why there is none.
pub(crate) fn fmt_rate(rate: Option<f64>, unit: &str) -> String {
    match rate {
        Some(r) if r >= 100.0 => format!("{} {unit}", thousands(r.round() as u64)),
        Some(r) => format!("{r:.1} {unit}"),
        None => "too short to be a rate".into(),
    }
}

/// Microseconds below a millisecond, milliseconds above: a send lag is a few microseconds.
fn fine(us: u64) -> String {
    if us < 1000 {
        format!("{us}us")
    } else {
        ms(us)
    }
}

/// Where every scheduled query or request went: one line, whose parts add up.
fn accounting_line(a: &super::Accounting, ok: u64, failed: u64, unit: &str) -> String {
    let mut out = format!(
        "  {} scheduled = {} ok + {} failed + {} cut off + {} unsent\n",
        thousands(a.scheduled),
        thousands(ok),
        thousands(failed),
        thousands(a.cut_off),
        thousands(a.unsent),
    );
    if let Some(r) = a.achieved_rate {
        out += &format!(
            "  open loop: reached {} of {} scheduled {unit} ({:.1}%)\n",
            thousands(a.scheduled - a.unsent),
            thousands(a.scheduled),
            100.0 * r
        );
    }
    out
}

/// The lines printed when a cell completes: a summary per phase, then every failure.
pub fn cell_lines(cell: &CellReport, total: usize) -> String {
    let mut out = String::new();
    let label = if cell.key.is_empty() {
        format!("cell {}/{total}", cell.index)
    } else {
        format!("cell {}/{total} {}", cell.index, cell.key)
    };
    for phase in &cell.phases {
        match phase {
            PhaseReport::Ingest(r) if r.status == Status::NotRun => {
                out += &format!(
                    "{label}: ingest {} -> {}: not run: {}\n",
                    r.name,
                    r.endpoint,
                    r.failures.join("; ")
                );
            }
            PhaseReport::Ingest(r) => {
                out += &format!(
                    "{label}: ingest {} -> {}: {}\n",
                    r.name,
                    r.endpoint,
                    status(r.status)
                );
                out += &format!("  {}\n", ingest_summary(r));
                for f in &r.failures {
                    out += &format!("  {f}\n");
                }
            }
            PhaseReport::Queries(r) => {
                out += &format!(
                    "{label}: queries {} -> {}: {}\n",
                    r.name,
                    r.endpoint,
                    status(r.status)
                );
                out += &query_lines(r);
                for w in &r.warnings {
                    out += &format!("  warning: {w}\n");
                }
                for f in &r.failures {
                    out += &format!("  {f}\n");
                }
            }
            PhaseReport::Requests(r) => {
                out += &format!(
                    "{label}: requests {} -> {}: {}\n",
                    r.name,
                    r.endpoint,
                    status(r.status)
                );
                out += &request_lines(r);
                for w in &r.warnings {
                    out += &format!("  warning: {w}\n");
                }
                for f in &r.failures {
                    out += &format!("  {f}\n");
                }
            }
            PhaseReport::NotRun { name, reason } => {
                out += &format!("{label}: {name}: not run: {reason}\n");
            }
        }
    }
    out
}

/// A request phase: counts and rate, latency, statuses, errors and counters.
fn request_lines(r: &RequestReport) -> String {
    if r.ok + r.failed == 0 {
        return String::new();
    }
    let mut out = format!(
        "  {} requests ok, {} failed, in {:.2}s: {} ({}, {} connections, {})\n",
        thousands(r.ok),
        thousands(r.failed),
        r.elapsed_s,
        fmt_rate(r.rps, "ok requests/s"),
        r.request,
        r.connections,
        r.load,
    );
    out += &accounting_line(&r.accounting, r.ok, r.failed, "requests");
    out += &format!(
        "  latency mean {} p50 {} p90 {} p99 {} p99.9 {} max {}\n",
        ms(r.latency.mean_us as u64),
        ms(r.latency.p50_us),
        ms(r.latency.p90_us),
        ms(r.latency.p99_us),
        ms(r.latency.p999_us),
        ms(r.latency.max_us),
    );
    out += &service_line(r.service.as_ref(), &r.accounting);
    if !r.statuses.is_empty() {
        let codes: Vec<String> = r
            .statuses
            .iter()
            .map(|(code, n)| format!("{code}: {}", thousands(*n)))
            .collect();
        out += &format!("  statuses {}\n", codes.join(", "));
    }
    for (class, e) in &r.errors {
        out += &format!(
            "  {class} errors: {} (first: {})\n",
            thousands(e.count),
            e.first
        );
    }
    if !r.counters.is_empty() {
        let counters: Vec<String> = r.counters.iter().map(|(k, v)| format!("{k} {v}")).collect();
        out += &format!("  counters {}\n", counters.join(", "));
    }
    out += &cpu_line(r.client_cpu_s, r.ok + r.failed, r.elapsed_s, "request", 1);
    out
}

/// The client's CPU per query or request, with `decimals` after the point; empty when unknown.
fn cpu_line(cpu: Option<f64>, n: u64, elapsed_s: f64, unit: &str, decimals: usize) -> String {
    match cpu {
        Some(cpu) if n > 0 && elapsed_s > 0.0 => format!(
            "  client cpu {:.decimals$}us per {unit} ({:.2} cores)\n",
            cpu * 1e6 / n as f64,
            cpu / elapsed_s
        ),
        _ => String::new(),
    }
}

/// Open loop: service time, and how close to their intended times the sends left; empty in
/// closed loop.
fn service_line(service: Option<&super::Latency>, a: &super::Accounting) -> String {
    let Some(s) = service else {
        return String::new();
    };
    let mut out = format!(
        "  service time (from the actual send) p50 {} p99 {}",
        fine(s.p50_us),
        fine(s.p99_us)
    );
    if let Some(lag) = &a.send_lag {
        out += &format!(
            "; send lag p50 {} p99 {} max {}",
            fine(lag.p50_us),
            fine(lag.p99_us),
            fine(lag.max_us)
        );
    }
    out += &format!(
        "; {} sent more than 1ms late ({:.2}%)\n",
        thousands(a.late),
        100.0 * a.late_share.unwrap_or(0.0)
    );
    out
}

/// A query phase: the overall line, then a table of its query types.
fn query_lines(r: &QueryReport) -> String {
    if r.ok + r.failed == 0 {
        return String::new();
    }
    let mut out = format!(
        "  {} queries ok, {} failed, in {:.2}s: {} ({}, {} workers); latency p50 {} p99 {} max {}\n",
        thousands(r.ok),
        thousands(r.failed),
        r.elapsed_s,
        fmt_rate(r.qps, "ok queries/s"),
        r.load,
        r.workers,
        ms(r.latency.p50_us),
        ms(r.latency.p99_us),
        ms(r.latency.max_us),
    );
    out += &cpu_line(r.client_cpu_s, r.ok + r.failed, r.elapsed_s, "query", 0);
    out += &accounting_line(&r.accounting, r.ok, r.failed, "queries");
    out += &service_line(r.service.as_ref(), &r.accounting);
    out += &label_lines(r);
    let header = [
        "query", "ok", "failed", "q/s", "rows/q", "mean", "p50", "p95", "p99", "max",
    ];
    let rows: Vec<Vec<String>> = r
        .query_types
        .iter()
        .map(|t| {
            vec![
                t.name.clone(),
                thousands(t.ok),
                thousands(t.failed),
                t.qps.map_or("-".into(), |q| format!("{q:.1}")),
                t.rows_per_query.map_or("-".into(), |v| format!("{v:.1}")),
                ms(t.latency.mean_us as u64),
                ms(t.latency.p50_us),
                ms(t.latency.p95_us),
                ms(t.latency.p99_us),
                ms(t.latency.max_us),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::from("  ");
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
                s += &format!("{c:>w$}");
            } else {
                s += &format!("{c:<w$}");
            }
        }
        s.trim_end().to_string() + "\n"
    };
    out += &line(&header.map(String::from));
    for row in &rows {
        out += &line(row);
    }
    for c in &r.cross_checks {
        out += &format!(
            "  results against {}: {} instances compared, {} differ{}\n",
            c.against,
            thousands(c.compared),
            thousands(c.mismatches),
            if c.not_compared.is_empty() {
                String::new()
            } else {
                format!(
                    "; not compared (LIMIT without ORDER BY): {}",
                    c.not_compared.join(", ")
                )
            }
        );
    }
    for t in r
        .thresholds
        .iter()
        .chain(r.query_types.iter().flat_map(|t| &t.thresholds))
    {
        out += &format!(
            "  expect {}: {} ({})\n",
            t.expect,
            if t.ok { "ok" } else { "NOT MET" },
            t.actual
        );
    }
    out
}

/// Queries that share a label, measured together: shown when a label groups several queries
/// (otherwise the per-query table below says the same).
fn label_lines(r: &QueryReport) -> String {
    if r.labels.iter().all(|l| l.queries.len() < 2) {
        return String::new();
    }
    let mut out = String::from("  by label:\n");
    for l in &r.labels {
        out += &format!(
            "    {}: {} ok, {} failed, {}; latency p50 {} p95 {} p99 {} max {} ({})\n",
            l.label,
            thousands(l.ok),
            thousands(l.failed),
            fmt_rate(l.qps, "q/s"),
            ms(l.latency.p50_us),
            ms(l.latency.p95_us),
            ms(l.latency.p99_us),
            ms(l.latency.max_us),
            l.queries.join(", ")
        );
    }
    out
}

fn ingest_summary(r: &IngestReport) -> String {
    let mut parts = vec![format!(
        "{} rows sent in {:.2}s = {} rows/s",
        thousands(r.rows_sent),
        r.elapsed_s,
        thousands(r.send_rows_per_s as u64)
    )];
    match r.rows_acked {
        Some(a) => parts.push(format!("{} acked", thousands(a))),
        None => parts.push("no acks (protocol has none)".into()),
    }
    if let Some(v) = r.rows_visible {
        let after = r
            .visible_after_s
            .map_or(" (never complete)".to_string(), |s| {
                format!(" after {s:.2}s")
            });
        parts.push(format!("{} visible{after}", thousands(v)));
    }
    if let Some(b) = r.socket_bytes_per_row {
        parts.push(format!("{b:.1} B/row on the socket"));
    } else if let Some(b) = r.payload_bytes_per_row {
        parts.push(format!("{b:.1} B/row payload"));
    }
    if r.batch_latency.count > 0 {
        parts.push(format!(
            "batch p50 {} p99 {}",
            ms(r.batch_latency.p50_us),
            ms(r.batch_latency.p99_us)
        ));
    }
    if let Some(cpu) = r.client_cpu_s {
        if r.elapsed_s > 0.0 {
            parts.push(format!("client cpu {:.2} cores", cpu / r.elapsed_s));
        }
    }
    if let Some(c) = &r.calibration {
        parts.push(format!(
            "{:.2}x of the null-sink ceiling ({} rows/s)",
            c.ratio,
            thousands(c.null_rows_per_s as u64)
        ));
    }
    parts.join(", ")
}

/// The final table: one row per phase of every cell.
pub fn table(report: &Report) -> String {
    let header = [
        "cell", "phase", "endpoint", "status", "sent", "acked", "visible", "rows/s", "B/row",
        "p99", "errors",
    ];
    let mut rows: Vec<Vec<String>> = Vec::new();
    for cell in &report.cells {
        let name = if cell.key.is_empty() {
            format!("{}", cell.index)
        } else {
            format!("{} {}", cell.index, cell.key)
        };
        for phase in &cell.phases {
            match phase {
                PhaseReport::Ingest(r) => rows.push(vec![
                    name.clone(),
                    r.name.clone(),
                    r.endpoint.clone(),
                    status(r.status).into(),
                    thousands(r.rows_sent),
                    opt_rows(r.rows_acked),
                    opt_rows(r.rows_visible),
                    thousands(r.send_rows_per_s as u64),
                    r.socket_bytes_per_row
                        .or(r.payload_bytes_per_row)
                        .map_or("-".into(), |b| format!("{b:.1}")),
                    if r.batch_latency.count > 0 {
                        ms(r.batch_latency.p99_us)
                    } else {
                        "-".into()
                    },
                    r.errors.values().map(|e| e.count).sum::<u64>().to_string(),
                ]),
                // Queries: "sent" is queries sent, "rows/s" is queries per second.
                PhaseReport::Queries(r) => rows.push(vec![
                    name.clone(),
                    r.name.clone(),
                    r.endpoint.clone(),
                    status(r.status).into(),
                    thousands(r.ok + r.failed),
                    "-".into(),
                    "-".into(),
                    fmt_rate(r.qps, "q/s"),
                    "-".into(),
                    if r.latency.count > 0 {
                        ms(r.latency.p99_us)
                    } else {
                        "-".into()
                    },
                    r.failed.to_string(),
                ]),
                // Requests: "sent" is requests sent, "rows/s" successful requests per second.
                PhaseReport::Requests(r) => rows.push(vec![
                    name.clone(),
                    r.name.clone(),
                    r.endpoint.clone(),
                    status(r.status).into(),
                    thousands(r.ok + r.failed),
                    "-".into(),
                    "-".into(),
                    fmt_rate(r.rps, "req/s"),
                    "-".into(),
                    if r.latency.count > 0 {
                        ms(r.latency.p99_us)
                    } else {
                        "-".into()
                    },
                    r.failed.to_string(),
                ]),
                PhaseReport::NotRun { name: phase, .. } => rows.push(vec![
                    name.clone(),
                    phase.clone(),
                    "-".into(),
                    "not run".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                ]),
            }
        }
    }
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    // Text columns left-aligned, figures right-aligned.
    let right = |i: usize| i >= 4;
    let line = |cells: Vec<String>| -> String {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if right(i) {
                s += &format!("{c:>w$}");
            } else {
                s += &format!("{c:<w$}");
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(header.iter().map(|h| h.to_string()).collect());
    for r in rows {
        out += &line(r);
    }
    let failed = report.cells.iter().filter(|c| !c.ok()).count();
    out += &format!(
        "{} cell{}, {} not ok, {:.1}s{}\n",
        report.cells.len(),
        if report.cells.len() == 1 { "" } else { "s" },
        failed,
        report.elapsed_s,
        if report.interrupted {
            ", interrupted"
        } else {
            ""
        }
    );
    out
}
