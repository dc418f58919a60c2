//! The page of a run: a header, the matrix as one chart per headline metric with the cells
//! grouped by their axes, each phase over time, the plan's parameters and the workload's
//! sources.

use std::fmt::Write;
use std::path::Path;

use super::esc;
use super::svg::{self, Bars, Paint, Unit};
use super::{freshness, phase, tables};
use crate::report::series::{self, Series};
use crate::report::{CellReport, Latency, PhaseReport, Report, Status};

pub fn body(report: &Report, dir: Option<&Path>) -> String {
    let mut out = String::new();
    header(&mut out, report);
    super::environment::table(&mut out, report.environment.as_ref());
    out.push_str(
        "<nav><a href=\"#numbers\">Numbers</a><a href=\"#matrix\">Matrix</a><a href=\"#time\">Over time</a>\
         <a href=\"#plan\">Parameters</a><a href=\"#sources\">Sources</a></nav>",
    );
    out.push_str("<section id=\"numbers\"><h2>Numbers</h2>");
    super::numbers::section(&mut out, report);
    out.push_str("</section><section id=\"matrix\"><h2>The matrix</h2>");
    matrix(&mut out, report);
    out.push_str("</section><section id=\"time\"><h2>Over time, per phase</h2>");
    for cell in &report.cells {
        cell_section(&mut out, cell, dir);
    }
    out.push_str("</section>");
    let plan = dir.and_then(|d| std::fs::read_to_string(d.join("plan.json")).ok());
    let plan: Option<serde_json::Value> = plan.and_then(|t| serde_json::from_str(&t).ok());
    out.push_str("<section id=\"plan\"><h2>The plan's parameters</h2>");
    super::sources::params(&mut out, plan.as_ref());
    out.push_str("</section><section id=\"sources\"><h2>The workload's sources</h2>");
    super::sources::files(&mut out, dir);
    out.push_str("</section>");
    out
}

fn header(out: &mut String, r: &Report) {
    let _ = write!(out, "<h1>{}</h1>", esc(&r.workload));
    let not_ok = r.cells.iter().filter(|c| !c.ok()).count();
    let status = if r.interrupted {
        format!(
            "<span class=\"warn\">stopped{}</span>",
            r.signal
                .as_deref()
                .map(|s| format!(" by {}", esc(s)))
                .unwrap_or_default()
        )
    } else if not_ok > 0 {
        format!("<span class=\"bad\">{not_ok} not ok</span>")
    } else {
        "<span class=\"ok\">all ok</span>".into()
    };
    let _ = write!(
        out,
        "<p class=\"meta\"><b>{}</b> · started {} · {} · seed {} · {} cell{} · {status}</p>",
        esc(&r.file),
        esc(&to_the_second(&r.started)),
        esc(&svg::Unit::Seconds.show(r.elapsed_s)),
        r.seed,
        r.cells.len(),
        if r.cells.len() == 1 { "" } else { "s" }
    );
    let mut msgs = Vec::new();
    for cell in &r.cells {
        for p in &cell.phases {
            let (name, failures, warnings): (&str, &[String], &[String]) = match p {
                PhaseReport::Ingest(i) => (&i.name, &i.failures, &i.warnings),
                PhaseReport::Queries(q) => (&q.name, &q.failures, &q.warnings),
                PhaseReport::Requests(q) => (&q.name, &q.failures, &q.warnings),
                PhaseReport::NotRun { name, reason } => {
                    msgs.push((
                        "warn",
                        format!("cell {} {name}: not run: {reason}", cell.index),
                    ));
                    continue;
                }
            };
            for f in failures {
                msgs.push(("bad", format!("cell {} {name}: {f}", cell.index)));
            }
            for w in warnings {
                msgs.push(("warn", format!("cell {} {name}: {w}", cell.index)));
            }
        }
    }
    // A few lines above the charts; the rest folded, so a matrix failing in every cell does
    // not push its charts off the first screen.
    const SHOWN: usize = 5;
    const LISTED: usize = 200;
    let li = |out: &mut String, (class, m): &(&str, String)| {
        let _ = write!(out, "<li class=\"{class}\">{}</li>", esc(m));
    };
    if !msgs.is_empty() {
        out.push_str("<ul class=\"msgs\">");
        for m in msgs.iter().take(SHOWN) {
            li(out, m);
        }
        out.push_str("</ul>");
    }
    if msgs.len() > SHOWN {
        let _ = write!(
            out,
            "<details><summary>{} more</summary><ul class=\"msgs\">",
            msgs.len() - SHOWN
        );
        for m in msgs.iter().skip(SHOWN).take(LISTED) {
            li(out, m);
        }
        if msgs.len() > SHOWN + LISTED {
            let _ = write!(
                out,
                "<li>and {} more in report.json</li>",
                msgs.len() - SHOWN - LISTED
            );
        }
        out.push_str("</ul></details>");
    }
}

/// An RFC 3339 time as a reader reads it, to the second: `2026-12-07 06:14:55 UTC`. The
/// report keeps the nanoseconds; a page showing them buries the minute a reader looks for.
/// A text that is not such a time is shown as it is.
pub fn to_the_second(t: &str) -> String {
    let Some((date, time)) = t.split_once('T') else {
        return t.to_string();
    };
    let (clock, zone) = match time.find(['Z', 'z', '+', '-']) {
        Some(i) => time.split_at(i),
        None => (time, ""),
    };
    let clock = clock.split_once('.').map_or(clock, |(whole, _)| whole);
    let zone = if zone.eq_ignore_ascii_case("z") {
        " UTC"
    } else {
        zone
    };
    format!("{date} {clock}{zone}")
}

/// A cell's axes from its key (`protocol=qwp hosts=1000`); a value holding a space stays
/// whole, since only a word with `=` starts a new axis.
pub fn axes(key: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for word in key.split_whitespace() {
        match word.split_once('=') {
            Some((a, v)) => out.push((a.to_string(), v.to_string())),
            None => match out.last_mut() {
                Some(last) => {
                    last.1.push(' ');
                    last.1.push_str(word);
                }
                None => out.push((String::new(), word.to_string())),
            },
        }
    }
    out
}

/// How the matrix's cells are laid out in a grouped chart: x groups by one axis's values,
/// and one bar per combination of the other axes' values.
struct Layout {
    /// The axis along x, named in the chart's title; its values label the groups.
    x_axis: Option<String>,
    groups: Vec<String>,
    series: Vec<String>,
    /// Per cell (by position in the report): (group, series).
    at: Vec<(usize, usize)>,
}

fn layout(cells: &[CellReport]) -> Layout {
    let per_cell: Vec<Vec<(String, String)>> = cells.iter().map(|c| axes(&c.key)).collect();
    let mut names: Vec<String> = Vec::new();
    for a in per_cell.iter().flatten() {
        if !names.contains(&a.0) {
            names.push(a.0.clone());
        }
    }
    let value = |cell: &[(String, String)], axis: &str| {
        cell.iter()
            .find(|a| a.0 == axis)
            .map(|a| a.1.clone())
            .unwrap_or_default()
    };
    let distinct = |axis: &str| {
        let mut seen: Vec<String> = Vec::new();
        for c in &per_cell {
            let v = value(c, axis);
            if !seen.contains(&v) {
                seen.push(v);
            }
        }
        seen
    };
    // The axis of the most values runs along x ("at 1,000 / 4,000 / 100,000 hosts"); the
    // later one on a tie, since a matrix usually names what it compares first.
    let x_axis = names
        .iter()
        .enumerate()
        .max_by_key(|(i, n)| (distinct(n).len(), *i))
        .map(|(_, n)| n.clone());
    let mut groups: Vec<String> = Vec::new();
    let mut series: Vec<String> = Vec::new();
    let mut at = Vec::new();
    for (i, c) in per_cell.iter().enumerate() {
        let g = match &x_axis {
            Some(x) => value(c, x),
            None => format!("cell {}", cells[i].index),
        };
        let rest: Vec<String> = c
            .iter()
            .filter(|a| Some(&a.0) != x_axis.as_ref())
            .map(|a| format!("{}={}", a.0, a.1))
            .collect();
        let s = rest.join(" ");
        let gi = groups.iter().position(|x| *x == g).unwrap_or_else(|| {
            groups.push(g);
            groups.len() - 1
        });
        let si = series.iter().position(|x| *x == s).unwrap_or_else(|| {
            series.push(s);
            series.len() - 1
        });
        at.push((gi, si));
    }
    Layout {
        x_axis,
        groups,
        series,
        at,
    }
}

/// One headline metric of one phase: its title, unit and per-cell variants.
struct Metric {
    title: String,
    unit: Unit,
    variants: Vec<&'static str>,
    /// Per cell: one value per variant.
    values: Vec<Vec<Option<f64>>>,
}

fn phase_name(p: &PhaseReport) -> &str {
    match p {
        PhaseReport::Ingest(r) => &r.name,
        PhaseReport::Queries(r) => &r.name,
        PhaseReport::Requests(r) => &r.name,
        PhaseReport::NotRun { name, .. } => name,
    }
}

fn ran(p: &PhaseReport) -> bool {
    p.status() != Status::NotRun
}

fn pcts(l: &Latency) -> Vec<Option<f64>> {
    if l.count == 0 {
        return vec![None, None];
    }
    vec![Some(l.p50_us as f64), Some(l.p99_us as f64)]
}

/// The headline metrics of the phase named `name`, over every cell.
fn metrics(cells: &[CellReport], name: &str) -> Vec<Metric> {
    fn of<'a>(c: &'a CellReport, name: &str) -> Option<&'a PhaseReport> {
        c.phases.iter().find(|p| phase_name(p) == name && ran(p))
    }
    let first = cells.iter().find_map(|c| of(c, name));
    let with = |title: String,
                unit,
                variants: Vec<&'static str>,
                f: &dyn Fn(&PhaseReport) -> Vec<Option<f64>>| {
        let n = variants.len();
        Metric {
            title,
            unit,
            variants,
            values: cells
                .iter()
                .map(|c| of(c, name).map_or_else(|| vec![None; n], f))
                .collect(),
        }
    };
    let probed = cells.iter().any(|c| {
        matches!(of(c, name), Some(PhaseReport::Ingest(r)) if r.freshness.as_ref().is_some_and(|f| f.lag.count > 0))
    });
    match first {
        Some(PhaseReport::Ingest(_)) => {
            let mut m = vec![
                with(
                    format!("{name}: rows/s sent, acknowledged, visible"),
                    Unit::Per("rows/s"),
                    vec!["sent", "acked", "visible"],
                    &|p| match p {
                        PhaseReport::Ingest(r) => {
                            // Visible: the rows counted over the time from the first send until
                            // the count reached them.
                            let visible = match (r.rows_visible, r.visible_after_s) {
                                (Some(v), Some(after)) => {
                                    crate::report::rate(v, r.elapsed_s + after)
                                }
                                _ => None,
                            };
                            vec![r.send_rows_per_s, r.ack_rows_per_s, visible]
                        }
                        _ => vec![None; 3],
                    },
                ),
                with(
                    format!("{name}: batch latency p50, p99"),
                    Unit::Micros,
                    vec!["p50", "p99"],
                    &|p| match p {
                        PhaseReport::Ingest(r) => pcts(&r.batch_latency),
                        _ => vec![None; 2],
                    },
                ),
            ];
            if probed {
                m.push(with(
                    format!("{name}: visibility lag p50, p99"),
                    Unit::Micros,
                    vec!["p50", "p99"],
                    &|p| match p {
                        PhaseReport::Ingest(r) => {
                            r.freshness.as_ref().map_or(vec![None; 2], |f| pcts(&f.lag))
                        }
                        _ => vec![None; 2],
                    },
                ));
            }
            m
        }
        Some(PhaseReport::Queries(_)) | Some(PhaseReport::Requests(_)) => {
            let (unit, what) = match first {
                Some(PhaseReport::Queries(_)) => ("queries/s", "ok queries/s"),
                _ => ("requests/s", "ok requests/s"),
            };
            vec![
                with(
                    format!("{name}: {what}"),
                    Unit::Per(unit),
                    vec![what],
                    &|p| match p {
                        PhaseReport::Queries(r) => vec![r.output.qps],
                        PhaseReport::Requests(r) => vec![r.output.rps],
                        _ => vec![None],
                    },
                ),
                with(
                    format!("{name}: latency p50, p99"),
                    Unit::Micros,
                    vec!["p50", "p99"],
                    &|p| match p {
                        PhaseReport::Queries(r) => pcts(&r.latency),
                        PhaseReport::Requests(r) => pcts(&r.latency),
                        _ => vec![None; 2],
                    },
                ),
            ]
        }
        _ => Vec::new(),
    }
}

fn matrix(out: &mut String, report: &Report) {
    let cells = &report.cells;
    let mut names: Vec<&str> = Vec::new();
    for p in cells.iter().flat_map(|c| &c.phases) {
        if !names.contains(&phase_name(p)) {
            names.push(phase_name(p));
        }
    }
    if let [cell] = &cells[..] {
        one_cell(out, cell, &names);
        return;
    }
    let lay = layout(cells);
    let mut charts = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    for name in &names {
        for m in metrics(cells, name) {
            let mut series = Vec::new();
            let mut paints = Vec::new();
            for (si, s) in lay.series.iter().enumerate() {
                for (vi, v) in m.variants.iter().enumerate() {
                    let label = match (s.is_empty(), m.variants.len()) {
                        (true, _) => v.to_string(),
                        (false, 1) => s.clone(),
                        (false, _) => format!("{s} · {v}"),
                    };
                    let mut per_group = vec![None; lay.groups.len()];
                    for (ci, &(g, cs)) in lay.at.iter().enumerate() {
                        if cs == si {
                            per_group[g] = m.values[ci].get(vi).copied().flatten();
                        }
                    }
                    series.push((label, per_group));
                    // One hue per combination of the other axes, lighter per variant; one
                    // colour per variant when there is no other axis.
                    paints.push(if lay.series.len() > 1 {
                        Paint {
                            colour: si,
                            shade: vi,
                        }
                    } else {
                        Paint::nth(vi)
                    });
                }
            }
            // A variant no cell has (acked without acknowledgements) is left out of the legend.
            let keep: Vec<bool> = series
                .iter()
                .map(|s| s.1.iter().any(Option::is_some))
                .collect();
            let mut k = keep.iter();
            series.retain(|_| *k.next().unwrap_or(&false));
            let mut k = keep.iter();
            paints.retain(|_| *k.next().unwrap_or(&false));
            let bars = Bars {
                groups: lay.groups.clone(),
                series,
                paints,
            };
            let title = match &lay.x_axis {
                Some(x) => format!("{} · by {x}", m.title),
                None => m.title.clone(),
            };
            match svg::bars(&title, m.unit, &bars, "") {
                Some(c) => charts.push(c),
                None => notes.push(format!(
                    "{}: no cell has the figure (too short to be a rate, or not measured)",
                    m.title
                )),
            }
        }
        // One distribution chart per combination of the other axes, one line per x value:
        // 24 lines in one chart would repeat the palette's colours.
        if cells.len() > 1 {
            for (si, s) in lay.series.iter().enumerate() {
                let lat: Vec<(String, &Latency)> = cells
                    .iter()
                    .zip(&lay.at)
                    .filter(|(_, at)| at.1 == si)
                    .filter_map(|(c, at)| {
                        let p = c.phases.iter().find(|p| phase_name(p) == *name)?;
                        let l = headline_latency(p)?;
                        let label = match &lay.x_axis {
                            Some(x) => format!("{x}={}", lay.groups[at.0]),
                            None => format!("cell {}", c.index),
                        };
                        Some((label, l))
                    })
                    .collect();
                let title = if s.is_empty() {
                    format!("{name}: latency distribution per cell")
                } else {
                    format!("{name}: latency distribution, {s}")
                };
                charts.extend(phase::distribution(&title, &lat));
            }
        }
    }
    for n in &notes {
        let _ = write!(out, "<p class=\"meta\">{}</p>", esc(n));
    }
    if charts.is_empty() {
        out.push_str("<p class=\"meta\">No phase ran: nothing was measured.</p>");
        return;
    }
    let _ = write!(out, "<div class=\"grid\">{}</div>", charts.concat());
}

/// A matrix of one cell has nothing to compare: a bar chart of one bar says less than its
/// figure, so its headline figures are a table.
fn one_cell(out: &mut String, cell: &CellReport, names: &[&str]) {
    let cells = std::slice::from_ref(cell);
    let mut rows = String::new();
    for name in names {
        for m in metrics(cells, name) {
            for (vi, v) in m.variants.iter().enumerate() {
                let value = match m.values[0].get(vi).copied().flatten() {
                    Some(x) => m.unit.show(x),
                    None => "- (too short to be a rate, or not measured)".into(),
                };
                let _ = write!(
                    rows,
                    "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td></tr>",
                    esc(&m.title),
                    esc(v),
                    esc(&value)
                );
            }
        }
    }
    if rows.is_empty() {
        out.push_str("<p class=\"meta\">No phase ran: nothing was measured.</p>");
        return;
    }
    let _ = write!(
        out,
        "<div class=\"scroll\"><table class=\"one-cell\"><caption>One cell{}: its headline \
         figures (the numbers above hold the rest)</caption><tr><th>figure</th><th>of</th>\
         <th>value</th></tr>{rows}</table></div>",
        if cell.key.is_empty() {
            String::new()
        } else {
            format!(" ({})", esc(&cell.key))
        }
    );
}

fn headline_latency(p: &PhaseReport) -> Option<&Latency> {
    match p {
        PhaseReport::Ingest(r) => Some(&r.batch_latency),
        PhaseReport::Queries(r) => Some(&r.latency),
        PhaseReport::Requests(r) => Some(&r.latency),
        PhaseReport::NotRun { .. } => None,
    }
}

fn cell_section(out: &mut String, cell: &CellReport, dir: Option<&Path>) {
    let key = if cell.key.is_empty() {
        String::new()
    } else {
        format!(" · {}", esc(&cell.key))
    };
    let _ = write!(
        out,
        "<h3 id=\"cell-{}\">Cell {}{key}</h3>",
        cell.index, cell.index
    );
    for p in &cell.phases {
        tables::group(out, cell, p);
        let (endpoint, series, ingest, unit, connecting) = match p {
            PhaseReport::Ingest(r) => (&r.endpoint, &r.series, true, "rows/s", &r.connecting),
            PhaseReport::Queries(r) => (&r.endpoint, &r.series, false, "queries/s", &r.connecting),
            PhaseReport::Requests(r) => {
                (&r.endpoint, &r.series, false, "requests/s", &r.connecting)
            }
            PhaseReport::NotRun { name, reason } => {
                let _ = write!(
                    out,
                    "<h4>{}: not run</h4><p class=\"meta\">{}</p>",
                    esc(name),
                    esc(reason)
                );
                continue;
            }
        };
        let status = format!("{:?}", p.status()).to_lowercase();
        let class = if p.status() == Status::Ok {
            "ok"
        } else {
            "bad"
        };
        let group = match p {
            PhaseReport::Ingest(r) => r.concurrent.as_ref(),
            PhaseReport::Queries(r) => r.concurrent.as_ref(),
            PhaseReport::Requests(r) => r.concurrent.as_ref(),
            PhaseReport::NotRun { .. } => None,
        }
        .map(|c| {
            format!(
                " · in concurrent {} ({})",
                esc(&c.group),
                esc(tables::member_end(c, p.status()))
            )
        })
        .unwrap_or_default();
        let _ = write!(
            out,
            "<h4>{} → {} · <span class=\"{class}\">{status}</span>{group}</h4>",
            esc(phase_name(p)),
            esc(endpoint)
        );
        // TLS as the terminal shows it: what was negotiated and verified, and the handshakes.
        if let Some(c) = connecting {
            for line in c.tls_lines().lines() {
                let _ = write!(
                    out,
                    "<p class=\"meta\">{}</p>",
                    esc(line.trim_start().trim_start_matches("tls "))
                );
            }
        }
        let mut charts = Vec::new();
        let mut note = None;
        let mut read = None;
        let mut few = String::new();
        match (series, dir) {
            (Some(s), Some(d)) => match series::read(d, s, ingest) {
                Ok(rows) => {
                    if rows.len() < phase::FEW {
                        tables::intervals(&mut few, s, &rows);
                    } else {
                        charts = phase::over_time(s, &rows, unit);
                    }
                    read = Some((s, rows));
                }
                Err(e) => note = Some(format!("the series could not be read: {e}")),
            },
            (Some(_), None) => note = Some("no run directory: the series is not shown".into()),
            (None, _) => note = Some("this run kept no series (run with --out)".into()),
        }
        if let Some(d) = dir {
            match super::cpu::chart(d, cell.index, phase_name(p)) {
                Ok(c) => charts.extend(c),
                Err(e) => note = Some(format!("the server's series could not be read: {e}")),
            }
        }
        if let PhaseReport::Ingest(r) = p {
            if let Some(f) = &r.freshness {
                freshness::figures(out, f, r.status == Status::Interrupted);
                let rows = match &read {
                    Some((s, Series::Ingest(rows))) => Some((*s, &rows[..])),
                    _ => None,
                };
                charts.extend(freshness::charts(f, rows));
            }
        }
        let mut lat: Vec<(String, &Latency)> = Vec::new();
        match p {
            PhaseReport::Ingest(r) => lat.push(("batch latency".into(), &r.batch_latency)),
            PhaseReport::Queries(r) => {
                lat.push(("all queries".into(), &r.latency));
                if let Some(s) = &r.service {
                    lat.push(("service time".into(), s));
                }
                if r.detail.labels.len() > 1 {
                    lat.extend(
                        r.detail
                            .labels
                            .iter()
                            .map(|l| (l.label.clone(), &l.latency)),
                    );
                }
            }
            PhaseReport::Requests(r) => {
                lat.push(("latency".into(), &r.latency));
                if let Some(s) = &r.service {
                    lat.push(("service time".into(), s));
                }
            }
            PhaseReport::NotRun { .. } => {}
        }
        charts.extend(phase::distribution("Latency distribution", &lat));
        let search = match p {
            PhaseReport::Ingest(r) => r.findmax.as_ref(),
            PhaseReport::Queries(r) => r.findmax.as_ref(),
            PhaseReport::Requests(r) => r.findmax.as_ref(),
            PhaseReport::NotRun { .. } => None,
        };
        charts.extend(search.and_then(super::findmax::chart));
        if let Some(n) = note {
            let _ = write!(out, "<p class=\"meta\">{}</p>", esc(&n));
        }
        out.push_str(&few);
        if !charts.is_empty() {
            let _ = write!(out, "<div class=\"grid\">{}</div>", charts.concat());
        }
        match p {
            PhaseReport::Ingest(r) => {
                tables::ingest_stages(out, &r.stages);
                if let Some(f) = &r.findmax {
                    tables::findmax(out, f);
                }
            }
            PhaseReport::Queries(r) => {
                tables::stages(out, &r.stages, "q/s");
                if let Some(f) = &r.findmax {
                    tables::findmax(out, f);
                }
            }
            PhaseReport::Requests(r) => {
                tables::stages(out, &r.stages, "req/s");
                if let Some(f) = &r.findmax {
                    tables::findmax(out, f);
                }
            }
            _ => {}
        }
    }
}
