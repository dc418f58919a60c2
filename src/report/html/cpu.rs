//! The chart of a phase's client and server CPU over time, from its
//! `series/CELL-PHASE.server.csv` (`observe process` with `--out`).

use std::path::Path;

use super::phase::{buckets, MAX_POINTS};
use super::svg::{self, Line, Unit};
use crate::report::server_series::{self, ServerInterval};

pub const TITLE: &str = "Client and server CPU over time";

/// The chart of cell `cell`'s phase `phase` in `dir`, or a note why there is none; nothing
/// when the phase kept no such file.
pub fn chart(dir: &Path, cell: usize, phase: &str) -> Result<Option<String>, String> {
    let Some(rows) = server_series::read(dir, cell, phase)? else {
        return Ok(None);
    };
    let server = line("server cores", &rows, |r| Some(r.server_cores));
    let client = line("client cores", &rows, |r| r.client_cores);
    let lines: Vec<Line> = [server, client].into_iter().flatten().collect();
    let k = rows.len().div_ceil(MAX_POINTS).max(1);
    let note = if k == 1 {
        "one point per sampling interval, at its end; cores: CPU seconds per second".to_string()
    } else {
        format!("{k} sampling intervals merged per point; cores: CPU seconds per second")
    };
    Ok(svg::over_time(TITLE, Unit::Per("cores"), &lines, &note))
}

/// Each bucket's CPU seconds over its seconds, at its end; `None` when no interval has a value.
fn line(
    name: &str,
    rows: &[ServerInterval],
    v: fn(&ServerInterval) -> Option<f64>,
) -> Option<Line> {
    if rows.iter().all(|r| v(r).is_none()) {
        return None;
    }
    let points = buckets(rows.len())
        .filter_map(|b| {
            let rows = &rows[b];
            let known: Vec<&ServerInterval> = rows.iter().filter(|r| v(r).is_some()).collect();
            let span: f64 = known.iter().map(|r| r.span_s).sum();
            let cpu: f64 = known.iter().map(|r| v(r).unwrap_or(0.0) * r.span_s).sum();
            (span > 0.0).then(|| (rows[rows.len() - 1].t_s, cpu / span))
        })
        .collect();
    Some(Line {
        name: name.to_string(),
        points,
    })
}
