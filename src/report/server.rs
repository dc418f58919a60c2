//! What the observed server spent during a phase (`observe process`), read from /proc
//! (docs/report-format.md, "The server's resources").

use serde::{Deserialize, Serialize};

/// One observed root and its tree.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ObservedProcess {
    pub target: String,
    /// How it was found: `pidfile "..."`, `listening pg (...)`, `named "..."`.
    pub by: String,
    pub pid: u32,
    pub name: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ServerReport {
    pub observed: Vec<ObservedProcess>,
    /// Processes in the observed trees at most (a root and its children, PostgreSQL's
    /// backends), at one sample.
    pub processes_max: u64,
    /// The span the figures cover: from the sample at the phase's measured start to the one at
    /// its measured end (the client's span, sampled at both ends), seconds.
    pub span_s: f64,
    pub samples: u64,
    /// CPU seconds of the trees over the span, children that exited in it included.
    pub cpu_s: f64,
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    /// `cpu_s / span_s`; `None` below `MIN_RATE_SPAN_S`.
    pub cores: Option<f64>,
    /// The unit the client's CPU is counted in: `row` (rows sent), `query`, `request` (answered).
    pub unit: String,
    /// `cpu_s` per unit, microseconds; `None` when no unit was counted.
    pub cpu_us_per_unit: Option<f64>,
    /// Resident memory of the trees, summed, at its highest sample.
    pub rss_peak_bytes: u64,
    /// Bytes the storage layer read and wrote for the trees over the span (/proc/PID/io);
    /// `None` (unknown) when a process's counters could not be read.
    pub read_bytes: Option<u64>,
    pub write_bytes: Option<u64>,
    pub read_bytes_per_unit: Option<f64>,
    pub write_bytes_per_unit: Option<f64>,
    /// Threads of the trees, summed, at its highest sample.
    pub threads_max: u64,
    /// The whole machine's busy CPU over the span (/proc/stat), in cores, and its cores.
    pub machine_busy_cores: Option<f64>,
    pub machine_cores: u64,
    /// What a reader must know: a root not found, a process that vanished.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl ServerReport {
    /// The terminal's line, beside the client's cpu line.
    pub fn line(&self, decimals: usize) -> String {
        let cores = match self.cores {
            Some(c) => format!("{c:.2} cores over {:.2}s", self.span_s),
            None => format!("{:.2}s too short for cores", self.span_s),
        };
        let per = match self.cpu_us_per_unit {
            Some(us) => format!(" {us:.decimals$}us per {}", self.unit),
            None => String::new(),
        };
        let io = match (self.read_bytes, self.write_bytes) {
            (Some(r), Some(w)) => format!("read {} B, written {} B", r, w),
            _ => "io unknown".to_string(),
        };
        let who: Vec<String> = self
            .observed
            .iter()
            .map(|o| format!("{} {}", o.name, o.pid))
            .collect();
        format!(
            "server cpu{per} ({cores}; user {:.2}s system {:.2}s), rss peak {:.1} MiB, {io}, \
             threads max {}, {} processes max ({})",
            self.cpu_user_s,
            self.cpu_system_s,
            self.rss_peak_bytes as f64 / (1024.0 * 1024.0),
            self.threads_max,
            self.processes_max,
            who.join(", ")
        )
    }
}
