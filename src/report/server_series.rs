//! `series/CELL-PHASE.server.csv` (`observe process` with `--out`): the observed server's and
//! this client's CPU per sampling interval over the measured span, its memory and processes,
//! so that a server that saturates partway through a phase shows where.

use std::path::Path;

/// The first line of the file: its columns.
pub const HEADER: &str = "t_s,span_s,server_cores,client_cores,rss_bytes,processes";

/// One interval between two samples.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerInterval {
    /// Seconds from the phase's measured start to the interval's end.
    pub t_s: f64,
    /// The interval's length in seconds: samples taken where the span begins and ends make
    /// the first and last ones shorter than the series' interval.
    pub span_s: f64,
    /// CPU seconds of the observed trees over the interval, per second of it.
    pub server_cores: f64,
    /// This process's CPU over the same interval, per second of it; empty when unknown.
    pub client_cores: Option<f64>,
    /// The trees' resident memory at the interval's end.
    pub rss_bytes: u64,
    /// Processes in the trees at the interval's end.
    pub processes: u64,
}

/// The file's name under the run directory, beside the phase's other series.
pub fn path(cell: usize, phase: &str) -> String {
    format!("{}/{cell}-{phase}.server.csv", super::series::DIR)
}

impl ServerInterval {
    pub fn line(&self) -> String {
        let client = self
            .client_cores
            .map(|c| format!("{c:.6}"))
            .unwrap_or_default();
        format!(
            "{:.6},{:.6},{:.6},{client},{},{}",
            self.t_s, self.span_s, self.server_cores, self.rss_bytes, self.processes
        )
    }
}

/// The intervals of `dir`'s file for the phase; `Ok(None)` when there is none (the phase
/// observed no process, or the run is older than the file).
pub fn read(dir: &Path, cell: usize, phase: &str) -> Result<Option<Vec<ServerInterval>>, String> {
    let file = dir.join(path(cell, phase));
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", file.display())),
    };
    let mut lines = text.lines();
    if lines.next() != Some(HEADER) {
        return Err(format!(
            "{}: not a server series (its header differs)",
            file.display()
        ));
    }
    let mut out = Vec::new();
    for (i, line) in lines.enumerate() {
        let bad = || {
            format!(
                "{}:{}: not a server interval: {line}",
                file.display(),
                i + 2
            )
        };
        let v: Vec<&str> = line.split(',').collect();
        if v.len() != 6 {
            return Err(bad());
        }
        let f = |s: &str| s.parse::<f64>().map_err(|_| bad());
        let n = |s: &str| s.parse::<u64>().map_err(|_| bad());
        out.push(ServerInterval {
            t_s: f(v[0])?,
            span_s: f(v[1])?,
            server_cores: f(v[2])?,
            client_cores: if v[3].is_empty() {
                None
            } else {
                Some(f(v[3])?)
            },
            rss_bytes: n(v[4])?,
            processes: n(v[5])?,
        });
    }
    Ok(Some(out))
}
