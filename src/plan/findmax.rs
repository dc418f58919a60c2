//! `find max rate`: the search a query or request run makes instead of one measured span
//! (docs/language.md, "find max rate"). Plain data; the search is `exec::findmax`.

use serde::Serialize;

use super::Threshold;

/// The steps a search makes at most: 40 steps double a rate 40 times, far past any server,
/// and bisect a range to well under 1% in the steps left.
pub const MAX_STEPS: u64 = 40;

/// A step that sent less than this share of its scheduled units did not keep its rate.
pub const KEPT_SCHEDULE: f64 = 0.95;

/// The fewest samples a step has when the SLA names no high percentile.
pub const MIN_SAMPLES: u64 = 1_000;

/// The fewest probes an ingest's step has when its SLA names no high lag percentile.
pub const MIN_PROBES: u64 = 100;

#[derive(Clone, Debug, Serialize)]
pub struct FindMaxPlan {
    /// The first step's rate, per second.
    pub from_per_s: f64,
    /// `up to R`: no step goes above it.
    pub up_to_per_s: Option<f64>,
    /// The SLA's terms, all of which a step must meet (`and`).
    pub sla: Vec<Threshold>,
    /// The SLA as the report and the terminal show it: `p99 < 20ms and error_rate < 0.1%`.
    pub sla_text: String,
    /// The fewest measured samples of a step: a step lasts at least `samples / rate`.
    pub samples: u64,
    /// `samples N` as written, or `derived` from the SLA's highest percentile.
    pub samples_from: String,
    /// The factor between the rates of two growing steps.
    pub growth: f64,
    /// The search stops when (first bad - last good) / last good is at most this fraction.
    pub resolution: f64,
    pub max_steps: u64,
    /// An ingest's search: `samples` counts probes of `probe visible` (a step lasts at least
    /// `samples` probe intervals), and rates are rows per second.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub probes: bool,
    /// Measure the answer's rate again before answering it (`confirm false`: not). Written to
    /// plan.json only when off.
    #[serde(skip_serializing_if = "Clone::clone")]
    pub confirm: bool,
}

impl FindMaxPlan {
    /// Samples a step needs to trust the percentile `q` (0.99): ten beyond it, and at least
    /// `MIN_SAMPLES`. p99 needs 1,000, p99.9 10,000, p99.99 100,000.
    pub fn samples_for(q: f64) -> u64 {
        if q <= 0.0 || q >= 1.0 {
            return MIN_SAMPLES;
        }
        ((10.0 / (1.0 - q)).round() as u64).max(MIN_SAMPLES)
    }

    /// Probes an ingest's step needs to trust the lag's percentile `q`: ten beyond it, and at
    /// least `MIN_PROBES` (a lag's samples come one per interval, far fewer than requests).
    pub fn probes_for(q: f64) -> u64 {
        if q <= 0.0 || q >= 1.0 {
            return MIN_PROBES;
        }
        ((10.0 / (1.0 - q)).round() as u64).max(MIN_PROBES)
    }
}

impl FindMaxPlan {
    /// The search in `wlrun plan`'s listing, under the run's first line (whose load is the first
    /// step's and whose duration is each step's least).
    pub(super) fn listing(&self) -> String {
        let rate = |r: f64| crate::value::fmt_rate(r);
        format!(
            "find max rate from {}{} where {}: fixed-rate steps of at least {} {} ({}) after their warm-up, x{} until the SLA breaks, then bisect to {}% (at most {} steps)",
            rate(self.from_per_s),
            self.up_to_per_s
                .map(|c| format!(" up to {}", rate(c)))
                .unwrap_or_default(),
            self.sla_text,
            super::thousands(self.samples),
            if self.probes { "probes" } else { "samples" },
            self.samples_from,
            short(self.growth),
            short(100.0 * self.resolution),
            self.max_steps
        )
    }
}

/// A factor or a percentage as a person writes it: `2`, `1.5`, `5`, `2.5`.
pub fn short(x: f64) -> String {
    let r = (x * 1e6).round() / 1e6;
    let t = format!("{r}");
    t.strip_suffix(".0").map(str::to_string).unwrap_or(t)
}
