//! `probe visible`: an ingest's visibility lag, as report.json keeps it and as its one line in
//! the terminal says it. docs/report-format.md ("Freshness") and docs/language.md ("probe
//! visible") give the definition and its resolution.

use serde::{Deserialize, Serialize};

use super::render::fmt_latency;
use super::series::AnnouncedProbe;
use super::Latency;
use crate::plan::{thousands, ProbePlan};
use crate::value::Value;

/// The probe's interval: `every` of the plan (the checker keeps it at least 1 ms).
pub fn every(plan: &ProbePlan) -> std::time::Duration {
    match plan.every {
        Value::Duration(ns) if ns > 0 => std::time::Duration::from_nanos(ns as u64),
        _ => std::time::Duration::from_millis(100),
    }
}

/// At most this many samples are kept in report.json: past it every other one is dropped and
/// `samples_stride` doubles, so a long phase keeps evenly spaced samples over its whole span.
pub const MAX_SAMPLES: usize = 2_000;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Freshness {
    /// `target.endpoint (kind)` the probe counts on, its language and query.
    pub endpoint: String,
    pub language: String,
    pub query: String,
    /// The probe's interval and how long it may go on after sending ended, seconds.
    pub every_s: f64,
    pub within_s: f64,
    /// Counts asked (each answered or failed); the baseline count before sending is not one.
    pub probes_sent: u64,
    /// Counts that failed (error, timeout, unreadable answer): no sample, never a row error.
    pub probes_failed: u64,
    /// The first failure's message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// Probes that answered 0 of the phase's rows: no lag sample (nothing is visible yet).
    pub probes_empty: u64,
    /// Probes that saw every row sent before them: the server had caught up. Such a probe
    /// samples only the batches it was the first to include, if any.
    #[serde(default)]
    pub probes_caught_up: u64,
    /// Batches whose lag came out negative (a probe sent before the batch's send began
    /// included it) and were recorded as 0.
    pub lag_clamped: u64,
    /// A search step's warm-up (`find max rate` on an ingest), seconds: probes sent in it are
    /// kept as samples, but the batches they include first are not in `lag`. 0 elsewhere.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warmup_s: f64,
    /// Probes answered during the warm-up that saw rows: their batches are not in `lag`.
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub probes_warmup: u64,
    /// One sample per batch: the send time of the first probe whose count included it minus
    /// the batch's send mark (the previous probe, which did not include it, bounds it below),
    /// after the warm-up, if any.
    pub lag: Latency,
    /// The probe's own latency: count query sent -> answered (failures included).
    pub probe_latency: Latency,
    /// What every probe must reach at the end: rows acknowledged, or sent without
    /// acknowledgements (as `verify visible`).
    pub rows_target: u64,
    /// The last count a probe answered, baseline subtracted.
    pub last_visible: Option<u64>,
    /// From the moment the last row was sent to the send time of the first probe sent after
    /// it that saw every row: the last batch's lag when every row sent must show. `None` when
    /// none did within `within_s` of the end of sending.
    pub all_visible_after_s: Option<f64>,
    /// One probe in `samples_stride` is kept (1 until `MAX_SAMPLES` is reached).
    pub samples_stride: u64,
    pub samples: Vec<FreshSample>,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn is_zero_count(n: &u64) -> bool {
    *n == 0
}

/// One answered probe.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct FreshSample {
    /// The probe's send time, seconds from the phase's start (its first send slot).
    pub t_s: f64,
    /// Rows the phase had sent by then.
    pub sent: u64,
    /// Rows the probe saw (baseline subtracted).
    pub visible: u64,
    /// Batches whose lag this answer recorded: those it was the first to include.
    #[serde(default)]
    pub batches: u64,
    /// The lag of the oldest of those batches; `None` when the probe included no new batch.
    pub lag_s: Option<f64>,
}

fn ms(us: u64) -> String {
    fmt_latency(us as f64, 0.0, 10_000.0)
}

fn secs(s: f64) -> String {
    if s < 1.0 {
        format!("{:.0}ms", s * 1e3)
    } else {
        format!("{s:.1}s")
    }
}

impl Freshness {
    /// The report of a probe of `plan` before it has probed: what it counts, how often, and how
    /// long it may go on after sending ends.
    pub fn planned(plan: &ProbePlan) -> Freshness {
        let ep = &plan.count.endpoint;
        Freshness {
            endpoint: format!("{}.{} ({})", ep.target, ep.name, ep.kind),
            language: plan.count.language.clone(),
            query: plan.count.query.clone(),
            every_s: every(plan).as_secs_f64(),
            within_s: match plan.count.within {
                Value::Duration(ns) if ns > 0 => ns as f64 / 1e9,
                _ => 60.0,
            },
            samples_stride: 1,
            ..Default::default()
        }
    }

    /// What `series/phases.jsonl` says of the probe when its phase starts: what `wlrun report`
    /// of a killed run names in the `freshness` it rebuilds.
    pub fn announced(&self) -> AnnouncedProbe {
        AnnouncedProbe {
            endpoint: self.endpoint.clone(),
            language: self.language.clone(),
            query: self.query.clone(),
            every_s: self.every_s,
            within_s: self.within_s,
        }
    }

    /// `freshness  lag p50 212ms p99 480ms max 510ms of 300 batches (1,204 probes every
    /// 100ms; resolution 100ms + probe p99 2ms); all visible 0.8s after sending ended`.
    /// `interrupted`: the phase was stopped (or killed), so probing may have ended before the
    /// rows could show.
    pub fn line(&self, interrupted: bool) -> String {
        let mut s = String::from("freshness  ");
        if self.lag.count > 0 {
            s += &format!(
                "lag p50 {} p99 {} max {} of {} batch{} ",
                ms(self.lag.p50_us),
                ms(self.lag.p99_us),
                ms(self.lag.max_us),
                thousands(self.lag.count),
                if self.lag.count == 1 { "" } else { "es" }
            );
        } else {
            s += "no lag sample ";
        }
        // A sample is late by at most the time between two probes and early by at most the
        // probe's latency: the batches' spacing is no part of it.
        s += &format!(
            "({} probes every {}; resolution {}",
            thousands(self.probes_sent),
            secs(self.every_s),
            secs(self.every_s),
        );
        // A report rebuilt from the series has no probe latency.
        if self.probe_latency.count > 0 {
            s += &format!(" + probe p99 {}", ms(self.probe_latency.p99_us));
        }
        if self.probes_failed > 0 {
            s += &format!(", {} failed", thousands(self.probes_failed));
        }
        if self.probes_empty > 0 {
            s += &format!(", {} saw no rows", thousands(self.probes_empty));
        }
        if self.probes_caught_up > 0 {
            s += &format!(", {} caught up", thousands(self.probes_caught_up));
        }
        if self.lag_clamped > 0 {
            s += &format!(", {} negative lags set to 0", thousands(self.lag_clamped));
        }
        s += "); ";
        s += &match self.all_visible_after_s {
            Some(a) => format!("all visible {} after sending ended", secs(a)),
            None if interrupted => format!(
                "stopped before all were seen visible (last count {} of {})",
                self.last_visible.map_or("-".into(), thousands),
                thousands(self.rows_target)
            ),
            None => format!(
                "not all visible within {} after sending ended ({} of {})",
                secs(self.within_s),
                self.last_visible.map_or("-".into(), thousands),
                thousands(self.rows_target)
            ),
        };
        s
    }

    /// Keeps one sample in `samples_stride`, halving the kept ones when they reach
    /// `MAX_SAMPLES`. `n` numbers the answered probes from 0.
    pub fn keep(&mut self, n: u64, sample: FreshSample) {
        if self.samples_stride == 0 {
            self.samples_stride = 1;
        }
        if n % self.samples_stride != 0 {
            return;
        }
        if self.samples.len() >= MAX_SAMPLES {
            let mut i = 0;
            self.samples.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            self.samples_stride *= 2;
            if n % self.samples_stride != 0 {
                return;
            }
        }
        self.samples.push(sample);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_stay_evenly_spaced_under_the_cap() {
        let mut f = Freshness::default();
        let total = (MAX_SAMPLES as u64) * 5 + 3;
        for n in 0..total {
            f.keep(
                n,
                FreshSample {
                    t_s: n as f64,
                    ..Default::default()
                },
            );
        }
        assert!(f.samples.len() <= MAX_SAMPLES);
        assert!(f.samples.len() >= MAX_SAMPLES / 2);
        // Halved at 2,000, 4,000 and 8,000 probes.
        assert_eq!(f.samples_stride, 8);
        for (i, s) in f.samples.iter().enumerate() {
            assert_eq!(s.t_s as u64, i as u64 * f.samples_stride);
        }
    }
}
