//! The report as people read it: one line per finished cell while the run goes on, and a
//! table of every cell at the end.

use super::error_text::{error_classes, error_lines};
use super::{
    CellReport, IngestReport, PhaseReport, QueryReport, Report, RequestReport, RunKind, RunReport,
    Status,
};
use crate::plan::thousands;

fn opt_rows(v: Option<u64>) -> String {
    v.map_or("-".into(), thousands)
}

pub(crate) fn status(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Failed => "FAILED",
        Status::Interrupted => "interrupted",
        Status::NotRun => "not run",
    }
}

/// A latency for people, in microseconds below `micros_below` and in milliseconds from it:
/// two decimals, or none from `whole_ms_from` on. Each caller keeps the style its lines
/// always had (`ms`, `fine`, and a threshold's measured figure in `exec`).
pub(crate) fn fmt_latency(us: f64, micros_below: f64, whole_ms_from: f64) -> String {
    if us >= micros_below {
        let ms = us / 1000.0;
        if us >= whole_ms_from {
            format!("{ms:.0}ms")
        } else {
            format!("{ms:.2}ms")
        }
    } else {
        format!("{us:.0}us")
    }
}

/// Microseconds below a millisecond, milliseconds above (connection set-up times).
pub(crate) fn ms_text(us: u64) -> String {
    fine(us)
}

fn ms(us: u64) -> String {
    fmt_latency(us as f64, 0.0, 10_000.0)
}

/// Microseconds below a millisecond, milliseconds above: a send lag is a few microseconds.
fn fine(us: u64) -> String {
    fmt_latency(us as f64, 1000.0, 10_000.0)
}

/// Where every scheduled query or request went: one line, whose parts add up.
fn accounting_line(a: &super::Accounting, ok: u64, failed: u64, unit: &str) -> String {
    // Not found only where a query says what not found is: the line stays as it was elsewhere.
    let not_found = match a.not_found {
        0 => String::new(),
        n => format!(" + {} not found", thousands(n)),
    };
    let mut out = format!(
        "  {} scheduled = {} ok{not_found} + {} failed + {} cut off + {} unsent\n",
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
        if let Some(line) = super::together::group_line(cell, phase) {
            out += &format!("{label}: {line}");
        }
        out += &match phase {
            PhaseReport::Ingest(r) if r.status == Status::NotRun => format!(
                "{label}: ingest {} -> {}: not run: {}\n",
                r.name,
                r.endpoint,
                r.failures.join("; ")
            ),
            PhaseReport::Ingest(r) => phase_block(
                head(&label, "ingest", &r.name, &r.endpoint, r.status),
                format!(
                    "  {}\n{}{}{}{}",
                    ingest_summary(r),
                    server_line(r.server.as_ref(), 2),
                    r.freshness.as_ref().map_or(String::new(), |f| {
                        format!("  {}\n", f.line(r.status == Status::Interrupted))
                    }) + r
                        .link
                        .as_ref()
                        .map_or(String::new(), |l| format!("  {}\n", l.line()))
                        .as_str(),
                    super::stages::ingest_table(&r.stages),
                    tls_lines(&r.connecting)
                ) + super::findmax::lines(&r.findmax).as_str(),
                &r.warnings,
                &r.failures,
            ),
            PhaseReport::Queries(r) => run_block(&label, "queries", r, query_lines),
            PhaseReport::Requests(r) => run_block(&label, "requests", r, request_lines),
            PhaseReport::NotRun { name, reason } => format!("{label}: {name}: not run: {reason}\n"),
        };
        for m in super::server_metrics::of(phase) {
            out += &format!("  {}\n", m.line());
        }
        // Why the exit code is 3, not 1 (docs/language.md, "Exit codes").
        if let Some(why) = phase.unmeasured() {
            out += &format!("  could not measure: {why}\n");
        }
    }
    out
}

/// A phase's first line: `cell 1/2 key: queries name -> endpoint: ok`.
fn head(label: &str, what: &str, name: &str, endpoint: &str, s: Status) -> String {
    format!("{label}: {what} {name} -> {endpoint}: {}\n", status(s))
}

/// A phase as the cell's lines show it: its first line, its figures, then what a reader must
/// know (warnings) and why it failed.
fn phase_block(head: String, figures: String, warnings: &[String], failures: &[String]) -> String {
    let mut out = head;
    out += &figures;
    for w in warnings {
        out += &format!("  warning: {w}\n");
    }
    for f in failures {
        out += &format!("  {f}\n");
    }
    out
}

/// A query or request run's block (`what` names the kind and its unit): the figures of its
/// kind, or only what was scheduled when nothing was answered.
fn run_block<K: RunKind>(
    label: &str,
    what: &str,
    r: &RunReport<K>,
    figures: fn(&RunReport<K>) -> String,
) -> String {
    let head = head(label, what, &r.name, &r.endpoint, r.status);
    let mut figures = nothing_answered(r, what).unwrap_or_else(|| figures(r));
    figures += &super::stages::table(&r.stages, if what == "queries" { "q" } else { "req" });
    figures += &tls_lines(&r.connecting);
    figures += &super::findmax::lines(&r.findmax);
    phase_block(head, figures, &r.warnings, &r.failures)
}

fn tls_lines(c: &Option<super::connections::ConnectionsReport>) -> String {
    c.as_ref().map(|c| c.tls_lines()).unwrap_or_default()
}

/// A run nothing answered: only what was scheduled, which still adds up (cut off, unsent).
/// `None` when something was answered.
fn nothing_answered<K: RunKind>(r: &RunReport<K>, unit: &str) -> Option<String> {
    (r.ok + r.failed == 0).then(|| {
        if r.accounting.scheduled > 0 {
            accounting_line(&r.accounting, r.ok, r.failed, unit)
        } else {
            String::new()
        }
    })
}

/// How a run's first line begins: `  92 queries ok, 3 failed, in 1.50s: 61.3 ok queries/s`.
fn counts<K: RunKind>(r: &RunReport<K>, unit: &str, rate: Option<f64>) -> String {
    format!(
        "  {} {unit} ok, {} failed, in {:.2}s: {}",
        thousands(r.ok),
        thousands(r.failed),
        r.elapsed_s,
        fmt_rate(rate, &format!("ok {unit}"))
    )
}

/// A request phase: counts and rate, latency, statuses, errors and counters.
fn request_lines(r: &RequestReport) -> String {
    let mut out = format!(
        "{} ({}, {} connections, {})\n",
        counts(r, "requests", r.output.rps),
        r.setup.request,
        r.setup.connections,
        r.load,
    );
    out += &accounting_line(&r.accounting, r.ok, r.failed, "requests");
    out += &if r.latency.count == 0 {
        "  latency: none, no request succeeded\n".to_string()
    } else {
        // SQL endpoints return rows; an HTTP answer has none to count.
        let rows = (r.output.rows > 0).then(|| r.output.rows as f64 / r.ok as f64);
        let row = figures_row(
            &r.setup.request,
            (r.ok, r.failed),
            r.output.rps,
            rows,
            &r.latency,
        );
        indented(&grid(
            &figures_header("request", "req/s", "rows/req"),
            &[row],
            FIGURES,
        ))
    };
    out += &service_line(r.service.as_ref(), &r.accounting);
    let codes = |s: &std::collections::BTreeMap<u16, u64>| {
        let codes: Vec<String> = s
            .iter()
            .map(|(code, n)| format!("{code}: {}", thousands(*n)))
            .collect();
        codes.join(", ")
    };
    if !r.traffic.statuses.is_empty() {
        out += &format!("  statuses {}", codes(&r.traffic.statuses));
        if !r.traffic.warmup_statuses.is_empty() {
            out += &format!(
                " (warm-up, not counted: {})",
                codes(&r.traffic.warmup_statuses)
            );
        }
        out += "\n";
    } else if !r.traffic.warmup_statuses.is_empty() {
        out += &format!(
            "  statuses (warm-up, not counted: {})\n",
            codes(&r.traffic.warmup_statuses)
        );
    }
    out += &error_lines(&r.errors);
    if !r.traffic.counters.is_empty() {
        let counters: Vec<String> = r
            .traffic
            .counters
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        out += &format!("  counters {}\n", counters.join(", "));
    }
    out += &cpu_line(r.client_cpu_s, r.ok + r.failed, r.elapsed_s, "request", 1);
    out += &server_line(r.server.as_ref(), 1);
    out
}

/// The client's CPU per query or request, with `decimals` after the point; empty when unknown.
fn cpu_line(cpu: Option<f64>, n: u64, elapsed_s: f64, unit: &str, decimals: usize) -> String {
    cpu_text(cpu, n, elapsed_s, unit, decimals).map_or(String::new(), |t| format!("  {t}\n"))
}

/// The observed server's line (`observe process`), under the client's cpu.
fn server_line(server: Option<&super::server::ServerReport>, decimals: usize) -> String {
    server.map_or(String::new(), |s| format!("  {}\n", s.line(decimals)))
}

/// The client's CPU, said one way everywhere: the cost per unit (`row`, `query`, `request`) and
/// the cores it kept busy over the span. Cores are CPU seconds per second, a rate: over a span
/// too short to be one, the line says so instead of a figure.
pub(crate) fn cpu_text(
    cpu: Option<f64>,
    n: u64,
    elapsed_s: f64,
    unit: &str,
    decimals: usize,
) -> Option<String> {
    let cpu = cpu?;
    let cores = match super::rate(0, elapsed_s) {
        Some(_) => format!("{:.2} cores over {elapsed_s:.2}s", cpu / elapsed_s),
        None => format!("{elapsed_s:.2}s too short for cores"),
    };
    Some(match n {
        0 => format!("client cpu ({cores})"),
        n => format!(
            "client cpu {:.decimals$}us per {unit} ({cores})",
            cpu * 1e6 / n as f64
        ),
    })
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
    let latency = if r.latency.count == 0 {
        "no latency, no query succeeded".to_string()
    } else {
        format!(
            "latency p50 {} p99 {} max {}",
            ms(r.latency.p50_us),
            ms(r.latency.p99_us),
            ms(r.latency.max_us),
        )
    };
    let mut out = format!(
        "{} ({}, {} workers); {latency}\n",
        counts(r, "queries", r.output.qps),
        r.load,
        r.setup.workers,
    );
    out += &cpu_line(r.client_cpu_s, r.ok + r.failed, r.elapsed_s, "query", 0);
    out += &server_line(r.server.as_ref(), 0);
    out += &accounting_line(&r.accounting, r.ok, r.failed, "queries");
    out += &service_line(r.service.as_ref(), &r.accounting);
    out += &label_lines(r);
    out += &super::workers::line(r);
    let rows: Vec<Vec<String>> = r
        .detail
        .query_types
        .iter()
        .map(|t| {
            figures_row(
                &t.name,
                (t.ok, t.failed),
                t.qps,
                t.rows_per_query,
                &t.latency,
            )
        })
        .collect();
    // A run rebuilt from its time series has no per-query figures, and no table.
    if !rows.is_empty() {
        out += &indented(&grid(
            &figures_header("query", "q/s", "rows/q"),
            &rows,
            FIGURES,
        ));
    }
    out += &super::outcomes::lines(&r.detail.query_types);
    out += &super::streaming::table(&r.detail.query_types);
    out += &error_lines(&r.errors);
    for c in &r.detail.cross_checks {
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
        .detail
        .thresholds
        .iter()
        .chain(r.detail.query_types.iter().flat_map(|t| &t.thresholds))
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
    if r.detail.labels.iter().all(|l| l.queries.len() < 2) {
        return String::new();
    }
    let mut header = figures_header("label", "q/s", "rows/q").to_vec();
    header.push("queries");
    let rows: Vec<Vec<String>> = r
        .detail
        .labels
        .iter()
        .map(|l| {
            let rows = (l.ok > 0).then(|| l.rows as f64 / l.ok as f64);
            let mut row = figures_row(&l.label, (l.ok, l.failed), l.qps, rows, &l.latency);
            row.push(l.queries.join(", "));
            row
        })
        .collect();
    indented(&grid(&header, &rows, FIGURES))
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
    // TSBS's headline figure: rows x fields.
    if let (Some(m), Some(f)) = (r.metrics_per_s, r.fields_per_row) {
        parts.push(format!(
            "{} ({f} fields a row)",
            fmt_rate(Some(m), "metrics")
        ));
    }
    if let Some(s) = &r.schedule {
        let asked = match r.stages.len() {
            0 => crate::value::fmt_rate(s.rate_rows_per_s),
            n => format!(
                "{n} stages (mean {})",
                fmt_rate(Some(s.rate_rows_per_s), "rows")
            ),
        };
        parts.push(format!(
            "asked {asked}: {:.1}% of {} scheduled rows sent{}, {} late (send lag p99 {})",
            100.0 * s.achieved_rate,
            thousands(s.scheduled_rows),
            if s.unsent_rows > 0 {
                format!(" ({} unsent)", thousands(s.unsent_rows))
            } else {
                String::new()
            },
            s.late_share
                .map_or_else(|| "none".to_string(), |l| format!("{:.1}%", 100.0 * l)),
            ms(s.send_lag.p99_us)
        ));
    }
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
    if let Some(c) = r.commits {
        parts.push(format!("{} commits", thousands(c)));
    }
    if r.batch_latency.count > 0 {
        parts.push(format!(
            "batch p50 {} p99 {}",
            ms(r.batch_latency.p50_us),
            ms(r.batch_latency.p99_us)
        ));
    }
    parts.extend(cpu_text(r.client_cpu_s, r.rows_sent, r.elapsed_s, "row", 2));
    // Which column of a live/replay comparison this is: with `replay`, the client's generation
    // and encoding are outside the figures.
    match r.input.as_deref() {
        Some("replay") => parts.push("replayed (encoded before the clock started)".into()),
        Some("live") => parts.push("live (generated while sending)".into()),
        _ => {}
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

/// The columns of a query type's or a request run's figures: what a user asks of a
/// benchmark (the pgbench timeseries tool's summary), `name` and `rate` and `rows` naming
/// its unit.
fn figures_header<'a>(name: &'a str, rate: &'a str, rows: &'a str) -> [&'a str; 13] {
    [
        name, "ok", "failed", "err %", rate, rows, "min", "mean", "p50", "p90", "p95", "p99", "max",
    ]
}

/// The right-aligned columns of `figures_header`: all but the name.
const FIGURES: &[usize] = &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];

/// One row under `figures_header`: counts, the share that failed, the rate of successes,
/// rows per success, then the latency from its least to its most.
fn figures_row(
    name: &str,
    (ok, failed): (u64, u64),
    rate: Option<f64>,
    rows: Option<f64>,
    l: &crate::report::Latency,
) -> Vec<String> {
    let error_share = match ok + failed {
        0 => "-".to_string(),
        n => format!("{:.2}", 100.0 * failed as f64 / n as f64),
    };
    vec![
        name.to_string(),
        thousands(ok),
        thousands(failed),
        error_share,
        rate.map_or("-".into(), rate_figure),
        rows.map_or("-".into(), |v| format!("{v:.1}")),
        of(l, l.min_us),
        of(l, l.mean_us as u64),
        of(l, l.p50_us),
        of(l, l.p90_us),
        of(l, l.p95_us),
        of(l, l.p99_us),
        of(l, l.max_us),
    ]
}

/// A table standing under a phase's lines, two spaces in.
fn indented(table: &str) -> String {
    table.lines().map(|l| format!("  {l}\n")).collect()
}

/// One figure of `l`, or `-` when it measured nothing (no figure from nothing).
fn of(l: &crate::report::Latency, us: u64) -> String {
    if l.count == 0 {
        "-".into()
    } else {
        ms(us)
    }
}

/// A latency as a bare number of milliseconds, for a column whose header says `ms`.
fn ms_figure(us: u64) -> String {
    if us >= 10_000 {
        format!("{:.0}", us as f64 / 1000.0)
    } else {
        format!("{:.2}", us as f64 / 1000.0)
    }
}

/// A table with a header: text columns left-aligned, the `figures` right-aligned.
pub(super) fn grid(header: &[&str], rows: &[Vec<String>], figures: &[usize]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if figures.contains(&i) {
                s += &format!("{c:>w$}");
            } else {
                s += &format!("{c:<w$}");
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(&header.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    for r in rows {
        out += &line(r);
    }
    out
}

/// What a run prints on the terminal, in one text: the environment's header (with the load at
/// the end too, known by now), each cell's lines as it finished (standard error during a
/// run), then the final table (standard output).
pub fn run_text(report: &Report) -> String {
    let mut text = report
        .environment
        .as_ref()
        .map_or_else(String::new, |e| e.lines());
    for cell in &report.cells {
        text += &cell_lines(cell, report.cells.len());
    }
    text += &table(report);
    if let Some(m) = &report.merged {
        text += &m.lines();
    }
    text
}

/// The final tables: one for the ingest phases, one for the query and request runs (their
/// figures are not the same figures, so they never share a column), then what did not run.
pub fn table(report: &Report) -> String {
    let mut ingest: Vec<Vec<String>> = Vec::new();
    let mut runs: Vec<Vec<String>> = Vec::new();
    let mut not_run: Vec<String> = Vec::new();
    let dash = || "-".to_string();
    for cell in &report.cells {
        let name = if cell.key.is_empty() {
            format!("{}", cell.index)
        } else {
            format!("{} {}", cell.index, cell.key)
        };
        for phase in &cell.phases {
            match phase {
                PhaseReport::Ingest(r) => ingest.push(vec![
                    name.clone(),
                    r.name.clone(),
                    r.endpoint.clone(),
                    status(r.status).into(),
                    thousands(r.rows_sent),
                    opt_rows(r.rows_acked),
                    opt_rows(r.rows_visible),
                    match r.rows_per_s {
                        Some(v) => format!("{} {}", rate_figure(v), r.rate_counts.as_str()),
                        None if r.rows_sent > 0 || r.elapsed_s > 0.0 => "too short".into(),
                        None => dash(),
                    },
                    r.socket_bytes_per_row
                        .map_or_else(dash, |b| format!("{b:.1}")),
                    if r.batch_latency.count > 0 {
                        ms_figure(r.batch_latency.p99_us)
                    } else {
                        dash()
                    },
                    r.errors.values().map(|e| e.count).sum::<u64>().to_string(),
                ]),
                PhaseReport::Queries(r) => runs.push(run_row(&name, "queries", r)),
                PhaseReport::Requests(r) => runs.push(run_row(&name, "requests", r)),
                PhaseReport::NotRun {
                    name: phase,
                    reason,
                } => not_run.push(format!("cell {name}: {phase} not run: {reason}")),
            }
        }
    }
    let mut sections = Vec::new();
    if !ingest.is_empty() {
        sections.push(grid(
            &[
                "cell",
                "ingest",
                "endpoint",
                "status",
                "rows sent",
                "rows acked",
                "rows visible",
                "acked|sent rows/s",
                "socket B/row",
                "batch p99 ms",
                "errors",
            ],
            &ingest,
            &[4, 5, 6, 7, 8, 9, 10],
        ));
    }
    if !runs.is_empty() {
        sections.push(grid(
            &[
                "cell",
                "run",
                "kind",
                "endpoint",
                "status",
                "ok",
                "failed",
                "ok q|req/s",
                "latency p50 ms",
                "latency p99 ms",
                "errors",
            ],
            &runs,
            &[5, 6, 7, 8, 9],
        ));
    }
    if !not_run.is_empty() {
        sections.push(not_run.join("\n") + "\n");
    }
    let mut out = sections.join("\n");
    let failed = report.cells.iter().filter(|c| !c.ok()).count();
    if !out.is_empty() {
        out.push('\n');
    }
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

/// One query or request run in the final table. A rate counts the successful ones only, and
/// only over a span long enough to be a rate.
fn run_row<K: RunKind>(cell: &str, kind: &str, r: &RunReport<K>) -> Vec<String> {
    let latency = |us: u64| {
        if r.latency.count > 0 {
            ms_figure(us)
        } else {
            "-".into()
        }
    };
    vec![
        cell.to_string(),
        r.name.clone(),
        kind.to_string(),
        r.endpoint.clone(),
        status(r.status).into(),
        thousands(r.ok),
        thousands(r.failed),
        match super::rate(r.ok, r.elapsed_s) {
            Some(v) => rate_figure(v),
            None if r.ok + r.failed > 0 => "too short".into(),
            None => "-".into(),
        },
        latency(r.latency.p50_us),
        latency(r.latency.p99_us),
        error_classes(&r.errors),
    ]
}
