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
                for w in &r.warnings {
                    out += &format!("  warning: {w}\n");
                }
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
        "  {} requests ok, {} failed, in {:.2}s = {:.1} requests/s ({}, {} connections, {})\n",
        thousands(r.ok),
        thousands(r.failed),
        r.elapsed_s,
        r.rps,
        r.request,
        r.connections,
        r.load,
    );
    out += &format!(
        "  latency mean {} p50 {} p90 {} p99 {} p99.9 {} max {}\n",
        ms(r.latency.mean_us as u64),
        ms(r.latency.p50_us),
        ms(r.latency.p90_us),
        ms(r.latency.p99_us),
        ms(r.latency.p999_us),
        ms(r.latency.max_us),
    );
    out += &service_line(r.service.as_ref(), r.accounting.late, r.accounting.unsent);
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

/// Open loop: service time, late and dropped sends; empty in closed loop.
fn service_line(service: Option<&super::Latency>, late: u64, dropped: u64) -> String {
    match service {
        Some(s) => format!(
            "  service time p50 {} p99 {}; {} late, {} dropped\n",
            ms(s.p50_us),
            ms(s.p99_us),
            thousands(late),
            thousands(dropped)
        ),
        None => String::new(),
    }
}

/// A query phase: the overall line, then a table of its query types.
fn query_lines(r: &QueryReport) -> String {
    if r.ok + r.failed == 0 {
        return String::new();
    }
    let mut out = format!(
        "  {} queries ok, {} failed, in {:.2}s = {:.1} queries/s ({}, {} workers); latency p50 {} p99 {} max {}\n",
        thousands(r.ok),
        thousands(r.failed),
        r.elapsed_s,
        r.qps,
        r.load,
        r.workers,
        ms(r.latency.p50_us),
        ms(r.latency.p99_us),
        ms(r.latency.max_us),
    );
    out += &cpu_line(r.client_cpu_s, r.ok + r.failed, r.elapsed_s, "query", 0);
    out += &service_line(r.service.as_ref(), r.accounting.late, r.accounting.unsent);
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
                format!("{:.1}", t.qps),
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

/// A rate for people: `1,234 rows/s`, `12.5 q/s`, `0.42 req/s` (`unit` is what is counted,
/// before the `/s`), or, below `MIN_RATE_SPAN_S`, that the span was too short to be one.
pub(crate) fn fmt_rate(rate: Option<f64>, unit: &str) -> String {
    match rate {
        Some(r) => format!("{} {unit}/s", rate_figure(r)),
        None => "too short to be a rate".into(),
    }
}

/// The number of a rate, without its unit: whole above 100, else to 3 significant digits.
fn rate_figure(r: f64) -> String {
    if r >= 100.0 {
        thousands(r.round() as u64)
    } else if r >= 10.0 {
        format!("{r:.1}")
    } else {
        format!("{r:.2}")
    }
}

fn ingest_summary(r: &IngestReport) -> String {
    let mut head = format!(
        "{} rows sent in {:.2}s, ",
        thousands(r.rows_sent),
        r.elapsed_s
    );
    head += &match r.rows_acked {
        Some(a) => format!("{} acked", thousands(a)),
        // Only a protocol without acknowledgements leaves `rows_acked` empty.
        None => "no acks (protocol has none)".into(),
    };
    head += ": ";
    head += &fmt_rate(r.rows_per_s, "rows");
    if r.rows_per_s.is_some() {
        head += &format!(" {}", r.rate_counts.as_str());
    }
    let mut parts = vec![head];
    if r.rows_cut_off > 0 {
        parts.push(format!(
            "{} cut off in flight at the duration",
            thousands(r.rows_cut_off)
        ));
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
    // Cores are CPU seconds per second: below the minimum span, the seconds alone.
    if let Some(cpu) = r.client_cpu_s {
        match super::rate(0, r.elapsed_s) {
            Some(_) => parts.push(format!("client cpu {:.2} cores", cpu / r.elapsed_s)),
            None if r.elapsed_s > 0.0 => parts.push(format!("client cpu {:.1}ms", cpu * 1e3)),
            None => {}
        }
    }
    if let Some(c) = &r.calibration {
        parts.push(match c.ratio {
            Some(ratio) => format!(
                "{ratio:.2}x of the null-sink ceiling ({})",
                fmt_rate(c.null_rows_per_s, "rows")
            ),
            None => format!("null-sink ceiling: {}", fmt_rate(c.null_rows_per_s, "rows")),
        });
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
                    r.rows_per_s.map_or("-".into(), rate_figure),
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
                    format!("{:.1} q/s", r.qps),
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
                    format!("{:.1} req/s", r.rps),
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
