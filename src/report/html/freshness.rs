//! An ingest's `probe visible` on the page: its figures as the terminal says them, the lag
//! over time and the rows sent beside the rows seen visible (from the series' probe columns,
//! or from report.json's samples when the page has no series), and the lag's distribution.

use std::fmt::Write;

use super::esc;
use super::phase;
use super::svg::{self, Line, Unit};
use crate::report::freshness::Freshness;
use crate::report::series::{IngestInterval, SeriesRef};

/// The figures: what the probe counted and the terminal's freshness line.
pub fn figures(out: &mut String, f: &Freshness, interrupted: bool) {
    let _ = write!(
        out,
        "<p class=\"meta\"><b>Freshness</b> · {} · counted with {} <code>{}</code> on {}</p>",
        esc(f.line(interrupted).trim_start_matches("freshness").trim()),
        esc(&f.language),
        esc(&f.query),
        esc(&f.endpoint)
    );
}

/// The probe's charts: from the series when its intervals hold probes, else from the samples
/// report.json keeps (at most 2,000, evenly spaced).
pub fn charts(f: &Freshness, series: Option<(&SeriesRef, &[IngestInterval])>) -> Vec<String> {
    let mut out = Vec::new();
    match series.filter(|(_, rows)| rows.iter().any(|r| r.probes > 0)) {
        Some((r, rows)) => from_series(&mut out, r, rows),
        None => from_samples(&mut out, f),
    }
    out.extend(phase::distribution(
        "Visibility lag distribution",
        &[("lag".to_string(), &f.lag)],
    ));
    out
}

fn from_series(out: &mut Vec<String>, r: &SeriesRef, rows: &[IngestInterval]) {
    let t0 = rows.first().map_or(0, |r| r.start_ms);
    let note = format!(
        "{}; a probe counts where its answer arrived",
        phase::bucket_note(r, rows.len())
    );
    let lag: Vec<Line> = [
        (
            "lag p50",
            (|r: &IngestInterval| r.lag_p50_us) as fn(&IngestInterval) -> Option<u64>,
        ),
        ("lag max", |r| r.lag_max_us),
    ]
    .into_iter()
    .filter_map(|(name, v)| phase::pct_line(name, rows, t0, |r| r.start_ms, v))
    .collect();
    out.extend(svg::over_time(
        "Visibility lag over time",
        Unit::Micros,
        &lag,
        &note,
    ));
    // Rows sent by the end of each point, and the highest count a probe saw in it: the
    // horizontal gap between the two lines is the lag.
    let mut sent_by = Vec::with_capacity(rows.len());
    let mut total = 0;
    for r in rows {
        total += r.rows_sent;
        sent_by.push(total);
    }
    // Both are figures as of a point's end.
    let length = r.interval_ms;
    let end = |i: &IngestInterval| (i.start_ms + length).saturating_sub(t0) as f64 / 1000.0;
    let (mut sent, mut visible) = (Vec::new(), Vec::new());
    for b in phase::buckets(rows.len()) {
        let last = b.end - 1;
        sent.push((end(&rows[last]), sent_by[last] as f64));
        let seen = rows[b.clone()].iter().filter_map(|r| r.visible).max();
        visible.push((end(&rows[last]), seen.map_or(f64::NAN, |v| v as f64)));
    }
    out.extend(svg::over_time(
        "Rows sent and seen visible",
        Unit::Per("rows"),
        &[
            Line {
                name: "sent (by the point's end)".into(),
                points: sent,
            },
            Line {
                name: "visible (the probes' count)".into(),
                points: visible,
            },
        ],
        &note,
    ));
}

fn from_samples(out: &mut Vec<String>, f: &Freshness) {
    if f.samples.is_empty() {
        return;
    }
    // A probe's lag is that of the oldest batch it saw first; a probe that saw nothing new
    // has none, and leaves a gap.
    let note = if f.samples_stride > 1 {
        format!(
            "one point per probe answered: the lag of the oldest batch it saw first, every {}th kept",
            f.samples_stride
        )
    } else {
        "one point per probe answered: the lag of the oldest batch it saw first".to_string()
    };
    let lag = Line {
        name: "lag".into(),
        points: f
            .samples
            .iter()
            .map(|s| (s.t_s, s.lag_s.map_or(f64::NAN, |l| l * 1e6)))
            .collect(),
    };
    out.extend(svg::over_time(
        "Visibility lag over time",
        Unit::Micros,
        &[lag],
        &note,
    ));
    let line = |name: &str, v: fn(&crate::report::freshness::FreshSample) -> u64| Line {
        name: name.into(),
        points: f.samples.iter().map(|s| (s.t_s, v(s) as f64)).collect(),
    };
    out.extend(svg::over_time(
        "Rows sent and seen visible",
        Unit::Per("rows"),
        &[
            line("sent (when the probe left)", |s| s.sent),
            line("visible (the probe's count)", |s| s.visible),
        ],
        &note,
    ));
}
