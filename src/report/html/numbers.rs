//! The page's "Numbers" tables: per cell, phase and query type, the figures the terminal
//! prints, so a reader can copy them without the JSON. Latencies are in milliseconds to the
//! microsecond, the precision report.json keeps, and every figure is in one fixed unit per
//! column: the browser test reads them back and compares them with report.json.

use std::fmt::Write;

use super::esc;
use crate::plan::thousands;
use crate::report::{CellReport, IngestReport, Latency, PhaseReport, Report};

const LATENCY: [&str; 7] = [
    "min ms", "mean ms", "p50 ms", "p90 ms", "p95 ms", "p99 ms", "max ms",
];

/// Milliseconds from microseconds: three decimals keep every microsecond.
fn ms(us: f64) -> String {
    let v = us / 1000.0;
    let whole = thousands(v.trunc() as u64);
    let frac = format!("{:.3}", v.fract());
    // `0.9996` rounds to `1.000`: carried into the whole part rather than shown as `0.1000`.
    if frac.starts_with('1') {
        return format!("{}.000", thousands(v.trunc() as u64 + 1));
    }
    format!("{whole}{}", &frac[1..])
}

fn dash() -> String {
    "-".into()
}

/// The seven latency figures, or dashes when nothing was answered.
fn latencies(l: &Latency) -> Vec<String> {
    if l.count == 0 {
        return vec![dash(); LATENCY.len()];
    }
    [
        l.min_us as f64,
        l.mean_us,
        l.p50_us as f64,
        l.p90_us as f64,
        l.p95_us as f64,
        l.p99_us as f64,
        l.max_us as f64,
    ]
    .into_iter()
    .map(ms)
    .collect()
}

/// A figure to `decimals` places, its whole part grouped by thousands as the counts are.
fn fixed(v: Option<f64>, decimals: usize) -> String {
    let Some(v) = v.filter(|v| v.is_finite() && *v >= 0.0) else {
        return dash();
    };
    let text = format!("{v:.decimals$}");
    let (whole, frac) = text.split_once('.').unwrap_or((&text, ""));
    let whole = thousands(whole.parse().unwrap_or(0));
    if frac.is_empty() {
        whole
    } else {
        format!("{whole}.{frac}")
    }
}

fn error_pct(ok: u64, failed: u64) -> Option<f64> {
    let n = ok + failed;
    (n > 0).then(|| 100.0 * failed as f64 / n as f64)
}

fn per(ok: u64, rows: u64) -> Option<f64> {
    (ok > 0).then(|| rows as f64 / ok as f64)
}

/// One row: where it belongs (cell, phase, query type; `data-` attributes a reader's script
/// or the browser test can select on), its label cells, then its figures.
struct Row {
    cell: usize,
    phase: String,
    query: Option<String>,
    labels: Vec<String>,
    figures: Vec<String>,
}

fn cell_name(c: &CellReport) -> String {
    if c.key.is_empty() {
        c.index.to_string()
    } else {
        format!("{} {}", c.index, c.key)
    }
}

fn run_rows(cell: &CellReport) -> Vec<Row> {
    let mut rows = Vec::new();
    for p in &cell.phases {
        match p {
            PhaseReport::Queries(r) => {
                let mut figures = vec![
                    thousands(r.ok),
                    thousands(r.failed),
                    fixed(error_pct(r.ok, r.failed), 2),
                    fixed(r.output.qps, 1),
                    fixed(per(r.ok, r.output.rows), 1),
                ];
                figures.extend(latencies(&r.latency));
                rows.push(Row {
                    cell: cell.index,
                    phase: r.name.clone(),
                    query: None,
                    labels: vec![cell_name(cell), r.name.clone(), "all queries".into()],
                    figures,
                });
                for t in &r.detail.query_types {
                    let mut figures = vec![
                        thousands(t.ok),
                        thousands(t.failed),
                        fixed(error_pct(t.ok, t.failed), 2),
                        fixed(t.qps, 1),
                        fixed(t.rows_per_query, 1),
                    ];
                    figures.extend(latencies(&t.latency));
                    rows.push(Row {
                        cell: cell.index,
                        phase: r.name.clone(),
                        query: Some(t.name.clone()),
                        labels: vec![cell_name(cell), r.name.clone(), t.name.clone()],
                        figures,
                    });
                }
            }
            PhaseReport::Requests(r) => {
                let mut figures = vec![
                    thousands(r.ok),
                    thousands(r.failed),
                    fixed(error_pct(r.ok, r.failed), 2),
                    fixed(r.output.rps, 1),
                    // Rows are a SQL endpoint's answer; an HTTP request has none.
                    if r.output.rows > 0 {
                        fixed(per(r.ok, r.output.rows), 1)
                    } else {
                        dash()
                    },
                ];
                figures.extend(latencies(&r.latency));
                rows.push(Row {
                    cell: cell.index,
                    phase: r.name.clone(),
                    query: None,
                    labels: vec![cell_name(cell), r.name.clone(), r.setup.request.clone()],
                    figures,
                });
            }
            PhaseReport::Ingest(_) | PhaseReport::NotRun { .. } => {}
        }
    }
    rows
}

/// How the results of a query run, then of each of its types, arrived (`streaming`): only
/// where it was measured.
fn streaming_rows(cell: &CellReport) -> Vec<Row> {
    use crate::report::streaming::StreamingReport;
    let figures = |s: &StreamingReport| {
        let l = &s.first_result;
        let first = |us: u64| {
            if l.count == 0 {
                dash()
            } else {
                ms(us as f64)
            }
        };
        vec![
            thousands(l.count),
            first(l.p50_us),
            first(l.p99_us),
            first(l.max_us),
            thousands(s.streamed_queries),
            thousands(s.single_piece_queries),
            fixed(s.rows_per_s, 1),
            fixed(s.bytes_per_s, 0),
            fixed(s.egress_bytes_per_row, 1),
        ]
    };
    let mut rows = Vec::new();
    for p in &cell.phases {
        let PhaseReport::Queries(r) = p else {
            continue;
        };
        if let Some(s) = &r.detail.streaming {
            rows.push(Row {
                cell: cell.index,
                phase: r.name.clone(),
                query: None,
                labels: vec![cell_name(cell), r.name.clone(), "all queries".into()],
                figures: figures(s),
            });
        }
        for t in &r.detail.query_types {
            if let Some(s) = &t.streaming {
                rows.push(Row {
                    cell: cell.index,
                    phase: r.name.clone(),
                    query: Some(t.name.clone()),
                    labels: vec![cell_name(cell), r.name.clone(), t.name.clone()],
                    figures: figures(s),
                });
            }
        }
    }
    rows
}

fn ingest_row(cell: &CellReport, r: &IngestReport) -> Row {
    let errors: u64 = r.errors.values().map(|e| e.count).sum();
    let mut figures = vec![
        thousands(r.rows_sent),
        r.rows_acked.map_or_else(dash, thousands),
        r.rows_visible.map_or_else(dash, thousands),
        fixed(r.rows_per_s, 1),
        thousands(r.batch_latency.count),
        thousands(errors),
    ];
    figures.extend(latencies(&r.batch_latency));
    Row {
        cell: cell.index,
        phase: r.name.clone(),
        query: None,
        labels: vec![
            cell_name(cell),
            r.name.clone(),
            r.rate_counts.as_str().to_string(),
        ],
        figures,
    }
}

fn table(out: &mut String, caption: &str, header: &[&str], rows: &[Row]) {
    let _ = write!(
        out,
        "<div class=\"scroll\"><table class=\"numbers\"><caption>{}</caption><tr>",
        esc(caption)
    );
    for h in header {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr>");
    for r in rows {
        let _ = write!(
            out,
            "<tr data-cell=\"{}\" data-phase=\"{}\"",
            r.cell,
            esc(&r.phase)
        );
        if let Some(q) = &r.query {
            let _ = write!(out, " data-query=\"{}\"", esc(q));
        }
        out.push('>');
        for l in &r.labels {
            let _ = write!(out, "<td>{}</td>", esc(l));
        }
        for f in &r.figures {
            let _ = write!(out, "<td class=\"n\">{}</td>", esc(f));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table></div>");
}

/// The section's tables: query and request runs (a query phase's total, then each query
/// type), and ingests. Nothing when no phase ran.
pub fn section(out: &mut String, report: &Report) {
    let runs: Vec<Row> = report.cells.iter().flat_map(run_rows).collect();
    let ingests: Vec<Row> = report
        .cells
        .iter()
        .flat_map(|c| {
            c.phases.iter().filter_map(move |p| match p {
                PhaseReport::Ingest(r) => Some(ingest_row(c, r)),
                _ => None,
            })
        })
        .collect();
    if runs.is_empty() && ingests.is_empty() {
        out.push_str("<p class=\"meta\">No phase ran: nothing was measured.</p>");
        return;
    }
    if !runs.is_empty() {
        let mut header = vec![
            "cell", "run", "query", "ok", "failed", "error %", "ok/s", "rows/q",
        ];
        header.extend(LATENCY);
        table(
            out,
            "Query and request runs: ok/s counts the successful ones over the measured span \
             (- when too short to be a rate); latency until the last row or byte was read, from the \
             send (closed loop) or its intended time (open loop)",
            &header,
            &runs,
        );
    }
    let streaming: Vec<Row> = report.cells.iter().flat_map(streaming_rows).collect();
    if !streaming.is_empty() {
        table(
            out,
            "Result streaming: first result from the send to the first row or batch (per query \
             with rows); streamed: queries whose result came in two pieces or more, whose rows \
             and socket bytes after the first piece make rows/s and B/s over their spans; B/row: \
             socket bytes read per result row",
            &[
                "cell",
                "run",
                "query",
                "with rows",
                "first p50 ms",
                "first p99 ms",
                "first max ms",
                "streamed",
                "single piece",
                "stream rows/s",
                "stream B/s",
                "B/row",
            ],
            &streaming,
        );
    }
    if !ingests.is_empty() {
        let mut header = vec![
            "cell",
            "ingest",
            "rate of",
            "rows sent",
            "rows acked",
            "rows visible",
            "rows/s",
            "batches",
            "errors",
        ];
        header.extend(LATENCY);
        table(
            out,
            "Ingests: rows/s counts the rows named in \"rate of\"; batches: those with a latency; \
             latency per batch, from its send to its acknowledgement (or its write)",
            &header,
            &ingests,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::ms;

    #[test]
    fn milliseconds_keep_every_microsecond_and_carry_a_rounded_fraction() {
        assert_eq!(ms(0.0), "0.000");
        assert_eq!(ms(1.0), "0.001");
        assert_eq!(ms(1_234_567.0), "1,234.567");
        assert_eq!(ms(999.6), "1.000");
        assert_eq!(ms(1999.9996), "2.000");
    }

    #[test]
    fn a_rate_is_grouped_by_thousands_and_rounded_once() {
        assert_eq!(super::fixed(Some(72_638.94), 1), "72,638.9");
        assert_eq!(super::fixed(Some(999.96), 1), "1,000.0");
        assert_eq!(super::fixed(Some(3.1578), 2), "3.16");
        assert_eq!(super::fixed(None, 1), "-");
    }
}
