//! The tables under a phase's charts, as the terminal lists them: a staged run's stages, a
//! `find max rate` search's steps, the `concurrent` group a phase ran in, and the intervals
//! of a phase too short to chart.

use std::fmt::Write;

use super::esc;
use super::svg::{micros, num};
use crate::report::findmax::{answer_line, FindMaxReport};
use crate::report::series::{Series, SeriesRef};
use crate::report::stages::{IngestStageReport, StageReport};
use crate::report::together::ConcurrentMember;
use crate::report::{CellReport, PhaseReport, Status};

/// A cell of a table: its text, and whether it is a figure (right-aligned).
struct Td(String, bool);

fn text(s: impl Into<String>) -> Td {
    Td(s.into(), false)
}

fn fig(s: impl Into<String>) -> Td {
    Td(s.into(), true)
}

fn count(n: u64) -> Td {
    fig(crate::plan::thousands(n))
}

fn opt(v: Option<String>) -> Td {
    fig(v.unwrap_or_else(|| "-".into()))
}

fn table(out: &mut String, caption: &str, header: &[&str], rows: &[Vec<Td>]) {
    let _ = write!(
        out,
        "<div class=\"scroll\"><table><caption>{}</caption><tr>",
        esc(caption)
    );
    for h in header {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr>");
    for row in rows {
        out.push_str("<tr>");
        for Td(t, n) in row {
            let class = if *n { " class=\"n\"" } else { "" };
            let _ = write!(out, "<td{class}>{}</td>", esc(t));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table></div>");
}

fn pct(x: f64) -> String {
    format!("{}%", num(100.0 * x))
}

/// A staged run's stages, each measured on its own (`unit`: `q/s` or `req/s`).
pub fn stages(out: &mut String, stages: &[StageReport], unit: &str) {
    if stages.is_empty() {
        return;
    }
    let header = [
        "stage",
        "start",
        "gap before",
        "span",
        "load",
        "workers",
        "scheduled",
        "ok",
        "failed",
        "cut off",
        "unsent",
        "achieved",
        unit,
        "p50",
        "p99",
        "warm-up excluded",
        "kept schedule",
    ];
    let rows: Vec<Vec<Td>> = stages
        .iter()
        .map(|s| {
            let lat = |us: u64| {
                if s.latency.count == 0 {
                    fig("-")
                } else {
                    fig(micros(us as f64))
                }
            };
            vec![
                count(s.stage),
                fig(format!("{}s", num(s.start_s))),
                fig(format!("{}s", num(s.gap_before_s))),
                fig(format!("{}s", num(s.span_s))),
                text(&s.load),
                count(s.workers),
                count(s.accounting.scheduled),
                count(s.ok),
                count(s.failed),
                count(s.accounting.cut_off),
                count(s.accounting.unsent),
                opt(s.accounting.achieved_rate.map(pct)),
                opt(s.ok_per_s.map(num)),
                lat(s.latency.p50_us),
                lat(s.latency.p99_us),
                count(s.warmup_excluded),
                text(match s.kept_schedule {
                    Some(true) => "yes",
                    Some(false) => "no",
                    None => "-",
                }),
            ]
        })
        .collect();
    table(
        out,
        "Stages (each after its warm-up; the run's figures are their sums)",
        &header,
        &rows,
    );
}

/// A staged ingest's stages, each measured on its own after its warm-up, in rows.
pub fn ingest_stages(out: &mut String, stages: &[IngestStageReport]) {
    if stages.is_empty() {
        return;
    }
    let header = [
        "stage",
        "start",
        "span",
        "load",
        "scheduled",
        "sent",
        "acked",
        "failed",
        "cut off",
        "unsent",
        "achieved",
        "rows/s",
        "batch p50",
        "batch p99",
        "send lag p99",
        "warm-up rows",
        "kept schedule",
    ];
    let rows: Vec<Vec<Td>> = stages
        .iter()
        .map(|s| {
            let lat = |l: &crate::report::Latency, us: u64| {
                if l.count == 0 {
                    fig("-")
                } else {
                    fig(micros(us as f64))
                }
            };
            vec![
                count(s.stage),
                fig(format!("{}s", num(s.start_s))),
                fig(format!("{}s", num(s.span_s))),
                text(&s.load),
                count(s.rows.scheduled),
                count(s.rows.sent),
                opt(s.rows.acked.map(crate::plan::thousands)),
                count(s.rows.failed),
                count(s.rows.cut_off),
                count(s.rows.unsent),
                opt(s.achieved_rate.map(pct)),
                opt(s.rows_per_s.map(num)),
                lat(&s.batch_latency, s.batch_latency.p50_us),
                lat(&s.batch_latency, s.batch_latency.p99_us),
                lat(&s.send_lag, s.send_lag.p99_us),
                count(s.warmup.sent),
                text(match (s.reached, s.kept_schedule) {
                    (false, _) => "not reached",
                    (_, Some(true)) => "yes",
                    (_, Some(false)) => "no",
                    (_, None) => "-",
                }),
            ]
        })
        .collect();
    table(
        out,
        "Stages (one continuous send; each after its warm-up, whose rows count in the phase's totals)",
        &header,
        &rows,
    );
}

/// A `find max rate` search's steps, in the order they ran, and its answer. An ingest's steps
/// (`probes`) give their batch p99 and visibility lag where a run's give its latency.
pub fn findmax(out: &mut String, f: &FindMaxReport) {
    let mut header = vec![
        "step",
        "phase",
        "rate",
        "span",
        "scheduled",
        "ok",
        "failed",
        "cut off",
        "unsent",
        "achieved/s",
    ];
    header.extend(if f.probes {
        ["batch p99", "lag p50", "lag p99", "lag max", "all seen"]
    } else {
        ["p50", "p90", "p99", "p99.9", "errors"]
    });
    header.push("verdict");
    let lag = |us: Option<u64>| opt(us.map(|us| micros(us as f64)));
    let rows: Vec<Vec<Td>> = f
        .steps
        .iter()
        .map(|s| {
            let verdict = if s.broke.is_empty() {
                s.verdict.clone()
            } else {
                format!("{}: {}", s.verdict, s.broke.join("; "))
            };
            let mut row = vec![
                count(s.step),
                text(&s.phase),
                fig(format!("{}/s", num(s.rate_per_s))),
                fig(format!("{}s", num(s.elapsed_s))),
                count(s.scheduled),
                count(s.ok),
                count(s.failed),
                count(s.cut_off),
                count(s.unsent),
                opt(s.achieved_per_s.map(num)),
            ];
            row.extend(if f.probes {
                [
                    fig(micros(s.p99_us as f64)),
                    lag(s.lag_p50_us),
                    lag(s.lag_p99_us),
                    lag(s.lag_max_us),
                    opt(s.visible_after_s.map(|v| format!("{}s", num(v)))),
                ]
            } else {
                [
                    fig(micros(s.p50_us as f64)),
                    fig(micros(s.p90_us as f64)),
                    fig(micros(s.p99_us as f64)),
                    fig(micros(s.p999_us as f64)),
                    fig(pct(s.error_rate)),
                ]
            });
            row.push(text(verdict));
            row
        })
        .collect();
    let caption = format!(
        "find max rate from {}/s where {}: steps of at least {} {} ({})",
        num(f.from_per_s),
        f.sla,
        crate::plan::thousands(f.samples),
        if f.probes { "probes" } else { "samples" },
        f.samples_from
    );
    table(out, &caption, &header, &rows);
    let _ = write!(out, "<p><b>{}</b></p>", esc(&answer_line(f)));
}

/// A phase of fewer intervals than `phase::FEW`, as a table of its intervals: one or two
/// points are dots on a chart, which show no trend and hide their figures.
pub fn intervals(out: &mut String, r: &SeriesRef, s: &Series) {
    let t0 = match s {
        Series::Ingest(rows) => rows.first().map(|i| i.start_ms),
        Series::Run(rows) => rows.first().map(|i| i.start_ms),
    }
    .unwrap_or(0);
    let at = |start: u64| {
        fig(format!(
            "{}s",
            num(start.saturating_sub(t0) as f64 / 1000.0)
        ))
    };
    let span = |ms: u64| fig(format!("{}s", num(ms as f64 / 1000.0)));
    let lat = |us: Option<u64>| opt(us.map(|us| micros(us as f64)));
    let (header, rows): (&[&str], Vec<Vec<Td>>) = match s {
        Series::Ingest(rows) => (
            &[
                "from",
                "span",
                "rows sent",
                "rows acked",
                "batches",
                "errors",
                "batch p50",
                "batch p99",
                "batch max",
            ],
            rows.iter()
                .map(|i| {
                    vec![
                        at(i.start_ms),
                        span(i.span_ms),
                        count(i.rows_sent),
                        opt(i.rows_acked.map(crate::plan::thousands)),
                        count(i.batches),
                        count(i.errors),
                        lat(i.batch_p50_us),
                        lat(i.batch_p99_us),
                        lat(i.batch_max_us),
                    ]
                })
                .collect(),
        ),
        Series::Run(rows) => (
            &[
                "from", "span", "ok", "failed", "cut off", "unsent", "p50", "p99", "max",
            ],
            rows.iter()
                .map(|i| {
                    vec![
                        at(i.start_ms),
                        span(i.span_ms),
                        count(i.ok),
                        count(i.failed),
                        count(i.cut_off),
                        count(i.unsent),
                        lat(i.p50_us),
                        lat(i.p99_us),
                        lat(i.max_us),
                    ]
                })
                .collect(),
        ),
    };
    let n = s.len();
    let caption = format!(
        "Over time: {n} interval{} of {}s, too few to draw (run with a finer --interval for charts)",
        if n == 1 { "" } else { "s" },
        num(r.interval_ms as f64 / 1000.0)
    );
    table(out, &caption, header, &rows);
}

fn member(p: &PhaseReport) -> Option<(&str, &ConcurrentMember)> {
    match p {
        PhaseReport::Ingest(r) => r.concurrent.as_ref().map(|c| (r.name.as_str(), c)),
        PhaseReport::Queries(r) => r.concurrent.as_ref().map(|c| (r.name.as_str(), c)),
        PhaseReport::Requests(r) => r.concurrent.as_ref().map(|c| (r.name.as_str(), c)),
        PhaseReport::NotRun { .. } => None,
    }
}

/// How a member ended in its group, in words.
pub fn member_end(c: &ConcurrentMember, status: Status) -> &'static str {
    if c.set_end {
        "its end ends the group"
    } else if c.stopped_by_group {
        "stopped by the group's end"
    } else if status == Status::Interrupted {
        "interrupted"
    } else {
        "ended on its own terms"
    }
}

/// Before a group's first member: which phases ran together, what ended the group, and each
/// member's span from the common start.
pub fn group(out: &mut String, cell: &CellReport, phase: &PhaseReport) {
    let Some(line) = crate::report::together::group_line(cell, phase) else {
        return;
    };
    let Some((_, me)) = member(phase) else {
        return;
    };
    let ms = |v: Option<f64>| opt(v.map(|v| crate::plan::thousands(v as u64)));
    let rows: Vec<Vec<Td>> = cell
        .phases
        .iter()
        .filter_map(|p| member(p).map(|(name, c)| (name, c, p.status())))
        .filter(|(_, c, _)| c.group == me.group)
        .map(|(name, c, status)| {
            vec![
                text(name),
                ms(c.started_at_offset_ms),
                ms(c.ended_at_offset_ms),
                text(member_end(c, status)),
            ]
        })
        .collect();
    let _ = write!(out, "<p class=\"meta\">{}</p>", esc(line.trim_end()));
    table(
        out,
        &format!("concurrent {}", me.group),
        &["member", "started (ms)", "ended (ms)", "how it ended"],
        &rows,
    );
}
