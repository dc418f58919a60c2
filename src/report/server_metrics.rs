//! `server_metrics`: what a target's Prometheus/OpenMetrics endpoint said over a phase
//! (`observe metrics`), in report.json, on the terminal and in report.csv. Every rate is over
//! `span_s`, from the phase's first good scrape to its last (docs/report-format.md,
//! "server_metrics").

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

pub use crate::net::exposition::SampleKind;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerMetrics {
    /// The URL scraped (credentials and `env()` values masked).
    pub endpoint: String,
    pub every_s: f64,
    pub scrapes_ok: u64,
    /// Scrapes that failed (no connection, a status other than 2xx, a body that is not the
    /// format, no answer within `every_s`); the run went on.
    pub scrapes_failed: u64,
    /// The first few distinct reasons of failed scrapes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
    /// From the first good scrape to the last, seconds; `None` with fewer than two.
    pub span_s: Option<f64>,
    /// The kept series, in the order first seen.
    pub series: Vec<KeptSeries>,
    /// Series the `keep` patterns matched past `MAX_KEPT`: not kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub series_dropped: u64,
    /// The `cpu` selector's counters summed: the server's CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<ServerCpu>,
}

/// At most this many series are kept per endpoint: a pattern like `.*` on a big exporter
/// would keep tens of thousands.
pub const MAX_KEPT: usize = 2_000;

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeptSeries {
    pub name: String,
    pub labels: IndexMap<String, String>,
    pub kind: SampleKind,
    /// Counters: the increase over the series' span (a fall is a restart: the increase
    /// counts from 0 again), and it per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub increase: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_s: Option<f64>,
    /// Counters: how often the value fell between two scrapes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resets: u64,
    /// Gauges: the value at the last scrape, and the least and most seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerCpu {
    /// As written in `cpu "..."`.
    pub selector: String,
    /// Series the selector matched at the last good scrape.
    pub series: u64,
    /// CPU seconds: the summed increase of the matched counters over `span_s`.
    pub cpu_s: f64,
    /// `cpu_s` over `span_s`: cores kept busy; `None` over a span under 0.1 s.
    pub cores: Option<f64>,
    /// `row`, `query` or `request`: the unit of the client's CPU figure.
    pub unit: String,
    /// Rows sent, or queries or requests answered (ok + failed), over the phase.
    pub units: u64,
    /// `cpu_s` per unit, microseconds; `None` without units.
    pub us_per_unit: Option<f64>,
}

impl ServerMetrics {
    /// The server CPU per unit, once the phase's units are known.
    pub fn set_units(&mut self, unit: &str, units: u64) {
        if let Some(c) = &mut self.cpu {
            c.unit = unit.to_string();
            c.units = units;
            // A selector that never matched a series measured nothing: unknown, not 0 per unit.
            let measured = c.series > 0 || c.cpu_s > 0.0;
            c.us_per_unit = (units > 0 && measured).then(|| c.cpu_s * 1e6 / units as f64);
        }
    }

    /// The terminal's line: `server cpu 1.2us per row (0.50 cores over 4.02s), 12 metrics
    /// kept from URL (5 scrapes, 1 failed), see report.json`.
    pub fn line(&self) -> String {
        let mut parts = Vec::new();
        if let Some(c) = &self.cpu {
            let cores = match (c.cores, self.span_s) {
                (Some(k), Some(s)) => format!("{k:.2} cores over {s:.2}s"),
                _ => "span too short for cores".to_string(),
            };
            parts.push(match c.us_per_unit {
                _ if c.series == 0 && c.cpu_s == 0.0 => {
                    format!("server cpu unknown: `{}` matched no series", c.selector)
                }
                Some(us) => format!("server cpu {us:.3}us per {} ({cores})", c.unit),
                None => format!("server cpu {:.3}s ({cores})", c.cpu_s),
            });
        }
        let failed = if self.scrapes_failed > 0 {
            format!(
                ", {} failed: {}",
                self.scrapes_failed,
                self.failures.first().map_or("", String::as_str)
            )
        } else {
            String::new()
        };
        parts.push(format!(
            "{} metrics kept from {} ({} scrapes{failed}), see report.json",
            self.series.len(),
            self.endpoint,
            self.scrapes_ok
        ));
        parts.join(", ")
    }
}

/// A phase's `server_metrics`; none for a phase that did not run.
pub fn of(phase: &super::PhaseReport) -> &[ServerMetrics] {
    match phase {
        super::PhaseReport::Ingest(r) => &r.server_metrics,
        super::PhaseReport::Queries(r) => &r.server_metrics,
        super::PhaseReport::Requests(r) => &r.server_metrics,
        super::PhaseReport::NotRun { .. } => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_cpu(series: u64, cpu_s: f64) -> ServerMetrics {
        ServerMetrics {
            endpoint: "http://127.0.0.1:9003/metrics".into(),
            every_s: 1.0,
            scrapes_ok: 5,
            scrapes_failed: 0,
            failures: vec![],
            span_s: Some(4.0),
            series: vec![],
            series_dropped: 0,
            cpu: Some(ServerCpu {
                selector: "process_cpu_seconds_total".into(),
                series,
                cpu_s,
                cores: None,
                unit: String::new(),
                units: 0,
                us_per_unit: None,
            }),
        }
    }

    /// A selector that matched no series (QuestDB's /metrics has no CPU counter) measured
    /// nothing: its CPU per row is unknown, never 0 us.
    #[test]
    fn a_cpu_selector_that_matched_nothing_is_unknown_not_zero() {
        let mut m = with_cpu(0, 0.0);
        m.set_units("row", 1_000);
        assert_eq!(m.cpu.as_ref().unwrap().us_per_unit, None);
        assert!(m.line().contains("matched no series"), "{}", m.line());
        let mut m = with_cpu(1, 0.5);
        m.set_units("row", 1_000);
        assert_eq!(m.cpu.as_ref().unwrap().us_per_unit, Some(500.0));
    }
}
