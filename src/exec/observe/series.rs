//! The observer's samples over the measured span written as `series/CELL-PHASE.server.csv`:
//! one line per interval between two samples, from the same counters the report's figures
//! sum, so that the lines' CPU adds up to `server.cpu_s`.

use std::io::Write;
use std::path::Path;

use super::Sample;
use crate::report::server_series::{ServerInterval, HEADER};

/// The intervals between consecutive samples of `window` (the measured span's), `tck` ticks
/// a second.
pub fn intervals(window: &[Sample], tck: f64) -> Vec<ServerInterval> {
    let Some(first) = window.first() else {
        return Vec::new();
    };
    window
        .windows(2)
        .map(|w| {
            let span_s = w[1].at.duration_since(w[0].at).as_secs_f64();
            let ticks = |s: &Sample| s.user_ticks + s.system_ticks;
            let cpu = ticks(&w[1]).saturating_sub(ticks(&w[0])) as f64 / tck;
            let per_s = |v: f64| if span_s > 0.0 { v / span_s } else { 0.0 };
            ServerInterval {
                t_s: w[1].at.duration_since(first.at).as_secs_f64(),
                span_s,
                server_cores: per_s(cpu),
                client_cores: match (w[0].client_cpu_s, w[1].client_cpu_s) {
                    (Some(a), Some(b)) if span_s > 0.0 => Some((b - a).max(0.0) / span_s),
                    _ => None,
                },
                rss_bytes: w[1].rss_bytes,
                processes: w[1].processes,
            }
        })
        .collect()
}

/// Writes the file; a failure is said in the phase's warnings, the run goes on.
pub fn write(path: &Path, rows: &[ServerInterval]) -> Result<(), String> {
    let shown = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).map_err(shown)?);
    writeln!(w, "{HEADER}").map_err(shown)?;
    for r in rows {
        writeln!(w, "{}", r.line()).map_err(shown)?;
    }
    w.flush().map_err(shown)
}
