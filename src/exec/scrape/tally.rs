//! A phase's scrapes folded as they come, in memory bounded by the series kept: per series its
//! first and last sample, a counter's increase across restarts, a gauge's extremes.

use std::collections::HashMap;

use indexmap::IndexMap;
use regex::Regex;

use crate::net::exposition::{Exposition, Sample, SampleKind};
use crate::plan::metrics::{MatchOp, MetricsPlan};
use crate::report::server_metrics::{KeptSeries, ServerCpu, ServerMetrics, MAX_KEPT};

type Key = (String, Vec<(String, String)>);

struct State {
    kind: SampleKind,
    first_t: f64,
    last_t: f64,
    last: f64,
    increase: f64,
    resets: u64,
    min: f64,
    max: f64,
}

impl State {
    fn new(kind: SampleKind, t: f64, v: f64) -> State {
        State {
            kind,
            first_t: t,
            last_t: t,
            last: v,
            increase: 0.0,
            resets: 0,
            min: v,
            max: v,
        }
    }

    /// A counter's increase since the previous sample: a fall means the server restarted and
    /// counted from 0 again, so the new value is all increase (Prometheus's `rate` does the
    /// same).
    fn add(&mut self, t: f64, v: f64) -> f64 {
        let delta = if self.kind == SampleKind::Gauge {
            0.0
        } else if v >= self.last {
            v - self.last
        } else {
            self.resets += 1;
            v
        };
        let delta = if delta.is_finite() { delta } else { 0.0 };
        self.increase += delta;
        self.last = v;
        self.last_t = t;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        delta
    }
}

struct Cpu {
    text: String,
    name: String,
    matchers: Vec<(String, MatchOp, Option<Regex>, String)>,
}

impl Cpu {
    fn matches(&self, s: &Sample) -> bool {
        (s.name == self.name || s.family == self.name)
            && self.matchers.iter().all(|(label, op, re, value)| {
                let v = s
                    .labels
                    .iter()
                    .find(|(l, _)| l == label)
                    .map_or("", |(_, v)| v.as_str());
                match (op, re) {
                    (MatchOp::Eq, _) => v == value,
                    (MatchOp::Ne, _) => v != value,
                    (MatchOp::Re, Some(re)) => re.is_match(v),
                    (MatchOp::NotRe, Some(re)) => !re.is_match(v),
                    _ => false,
                }
            })
    }
}

pub struct Tally {
    pub endpoint: String,
    every_s: f64,
    keep: Vec<Regex>,
    cpu: Option<Cpu>,
    kept: IndexMap<Key, State>,
    cpu_series: HashMap<Key, State>,
    cpu_matched: u64,
    dropped: std::collections::HashSet<Key>,
    ok: u64,
    failed: u64,
    failures: Vec<String>,
    first_ok: Option<f64>,
    last_ok: Option<f64>,
}

/// One kept counter's rate over the interval since the scrape before, for the series file.
pub struct IntervalRate<'a> {
    pub name: &'a str,
    pub labels: &'a [(String, String)],
    pub rate_per_s: f64,
}

impl Tally {
    pub fn new(plan: &MetricsPlan, endpoint: String) -> Tally {
        let anchored = |re: &str| Regex::new(&format!("^(?:{re})$")).ok();
        Tally {
            endpoint,
            every_s: plan.every_ns as f64 / 1e9,
            // The checker compiled each one: none is dropped here.
            keep: plan.keep.iter().filter_map(|k| anchored(k)).collect(),
            cpu: plan.cpu.as_ref().map(|c| Cpu {
                text: c.text.clone(),
                name: c.name.clone(),
                matchers: c
                    .matchers
                    .iter()
                    .map(|m| {
                        let re = matches!(m.op, MatchOp::Re | MatchOp::NotRe)
                            .then(|| anchored(&m.value))
                            .flatten();
                        (m.label.clone(), m.op, re, m.value.clone())
                    })
                    .collect(),
            }),
            kept: IndexMap::new(),
            cpu_series: HashMap::new(),
            cpu_matched: 0,
            dropped: Default::default(),
            ok: 0,
            failed: 0,
            failures: Vec::new(),
            first_ok: None,
            last_ok: None,
        }
    }

    pub fn failed(&mut self, why: String) {
        self.failed += 1;
        if self.failures.len() < 5 && !self.failures.contains(&why) {
            self.failures.push(why);
        }
    }

    /// Folds one good scrape taken at `t` (seconds since the phase's first); returns the kept
    /// counters' rates since the scrape before.
    pub fn scraped(&mut self, t: f64, e: &Exposition) -> Vec<IntervalRate<'_>> {
        self.ok += 1;
        self.first_ok.get_or_insert(t);
        let dt = self.last_ok.map(|l| t - l);
        self.last_ok = Some(t);
        let mut cpu_matched = 0;
        let mut deltas: Vec<(usize, f64)> = Vec::new();
        for s in &e.samples {
            if let Some(cpu) = &self.cpu {
                if cpu.matches(s) {
                    cpu_matched += 1;
                    let key = (s.name.clone(), s.labels.clone());
                    match self.cpu_series.get_mut(&key) {
                        Some(st) => {
                            st.add(t, s.value);
                        }
                        None => {
                            self.cpu_series
                                .insert(key, State::new(SampleKind::Counter, t, s.value));
                        }
                    }
                }
            }
            if !self
                .keep
                .iter()
                .any(|k| k.is_match(&s.name) || k.is_match(&s.family))
            {
                continue;
            }
            let key = (s.name.clone(), s.labels.clone());
            let room = self.kept.len() < MAX_KEPT;
            match self.kept.get_full_mut(&key) {
                Some((i, _, st)) => {
                    let d = st.add(t, s.value);
                    if st.kind == SampleKind::Counter {
                        deltas.push((i, d));
                    }
                }
                None if room => {
                    self.kept.insert(key, State::new(s.kind, t, s.value));
                }
                None => {
                    if self.dropped.len() < MAX_KEPT {
                        self.dropped.insert(key);
                    }
                }
            }
        }
        self.cpu_matched = cpu_matched;
        let Some(dt) = dt.filter(|d| *d > 0.0) else {
            return Vec::new();
        };
        deltas
            .into_iter()
            .filter_map(|(i, d)| {
                let ((name, labels), _) = self.kept.get_index(i)?;
                Some(IntervalRate {
                    name,
                    labels,
                    rate_per_s: d / dt,
                })
            })
            .collect()
    }

    pub fn finish(self) -> ServerMetrics {
        let span = match (self.first_ok, self.last_ok) {
            (Some(a), Some(b)) if self.ok >= 2 => Some(b - a),
            _ => None,
        };
        let series = self
            .kept
            .into_iter()
            .map(|((name, labels), st)| {
                let counter = st.kind == SampleKind::Counter;
                let own_span = st.last_t - st.first_t;
                KeptSeries {
                    name,
                    labels: labels.into_iter().collect(),
                    kind: st.kind,
                    increase: counter.then_some(st.increase),
                    rate_per_s: (counter && own_span > 0.0).then(|| st.increase / own_span),
                    resets: st.resets,
                    last: (!counter).then_some(st.last),
                    min: (!counter).then_some(st.min),
                    max: (!counter).then_some(st.max),
                }
            })
            .collect();
        let cpu = self.cpu.map(|c| {
            let cpu_s: f64 = self.cpu_series.values().map(|s| s.increase).sum();
            ServerCpu {
                selector: c.text,
                series: self.cpu_matched,
                cpu_s,
                // A selector that matched nothing measured nothing: no cores, not 0.
                cores: span
                    .filter(|s| *s >= 0.1 && !self.cpu_series.is_empty())
                    .map(|s| cpu_s / s),
                unit: String::new(),
                units: 0,
                us_per_unit: None,
            }
        });
        ServerMetrics {
            endpoint: self.endpoint,
            every_s: self.every_s,
            scrapes_ok: self.ok,
            scrapes_failed: self.failed,
            failures: self.failures,
            span_s: span,
            series,
            series_dropped: self.dropped.len() as u64,
            cpu,
        }
    }
}
