//! The order of a query run: which query type each instance is, with which instance index,
//! and (open loop) when it is meant to be sent. One dispatcher walks this order, so it is the
//! same on every run with the same seed whatever the workers do.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::gen::rng::{key, Rng};
use crate::gen::route::fnv1a64;
use crate::plan::{Load, QueryPhase, Stop};
use crate::value::Value;

/// Warm-up instances take their indices from here up, so they never repeat (and so never warm
/// the caches for) a measured instance.
pub const WARMUP_BASE: u64 = 1 << 62;

fn stream(name: &str) -> u64 {
    fnv1a64(name.as_bytes())
}

/// Which query type comes next: in turn (round robin), or drawn by weight; each type counts
/// its own instances so `binds from csv` walks its file in order whatever the mix.
#[derive(Clone)]
pub struct Mix {
    seed: u64,
    stream: u64,
    /// Running sums of the weights, when the mix is weighted (shared by `Issued`'s copies).
    cumulative: Option<Arc<[f64]>>,
    base: u64,
    issued: Vec<u64>,
    /// Per type (`count N per query`) or in all (`count N`); none: until stopped.
    per_type: Option<u64>,
    total: Option<u64>,
    next: u64,
    /// `(i, n)`: a shard's part, the instances at positions i, i + n, i + 2n, ... of the
    /// order; `(0, 1)` is the whole order.
    part: (u64, u64),
}

/// A shard's part of `total` units taken as positions i, i + n, ... of 0..total.
pub fn share((i, n): (u64, u64), total: u64) -> u64 {
    total.saturating_sub(i).div_ceil(n.max(1))
}

impl Mix {
    /// The measured order of `phase`'s queries.
    pub fn measured(phase: &QueryPhase, seed: u64) -> Mix {
        let (per_type, total) = match &phase.run.stop {
            Stop::Count { count, per_query } if *per_query => (Some(*count), None),
            Stop::Count { count, .. } => (None, Some(*count)),
            Stop::Duration { .. } => (None, None),
        };
        Mix::new(phase, seed, "wlrun.query.mix", 0, per_type, total)
    }

    /// The warm-up order: `count` instances in all (none for a time-bounded warm-up).
    pub fn warmup(phase: &QueryPhase, seed: u64, count: Option<u64>) -> Mix {
        Mix::new(phase, seed, "wlrun.query.warmup", WARMUP_BASE, None, count)
    }

    fn new(
        phase: &QueryPhase,
        seed: u64,
        name: &str,
        base: u64,
        per_type: Option<u64>,
        total: Option<u64>,
    ) -> Mix {
        let weighted = phase.mix == "weighted";
        let cumulative = weighted.then(|| {
            let mut sum = 0.0;
            phase
                .queries
                .iter()
                .map(|q| {
                    sum += q.weight.max(0.0);
                    sum
                })
                .collect::<Arc<[f64]>>()
        });
        Mix {
            seed,
            stream: stream(name),
            cumulative,
            base,
            issued: vec![0; phase.queries.len()],
            per_type,
            total,
            next: 0,
            part: (0, 1),
        }
    }

    /// Only shard `part`'s instances (`None`: all): every n-th of the whole order from the
    /// i-th, so the shards' orders together are exactly the whole.
    pub fn sharded(mut self, part: Option<(u64, u64)>) -> Mix {
        self.part = part.unwrap_or((0, 1));
        self
    }

    /// The instances this order holds, when it is bounded (a shard's: its part of them).
    pub fn bound(&self) -> Option<u64> {
        let whole = match (self.per_type, self.total) {
            (Some(n), _) => Some(n * self.issued.len() as u64),
            (None, Some(n)) => Some(n),
            _ => None,
        };
        whole.map(|w| share(self.part, w))
    }

    /// The next instance: (query type, instance index), or `None` at the end. A shard walks
    /// the whole order (which type comes next depends on every instance before it) and keeps
    /// its own.
    pub fn next_instance(&mut self) -> Option<(usize, u64)> {
        let (i, n) = self.part;
        loop {
            let position = self.next;
            let instance = self.next_whole()?;
            if position % n.max(1) == i {
                return Some(instance);
            }
        }
    }

    fn next_whole(&mut self) -> Option<(usize, u64)> {
        let types = self.issued.len();
        if types == 0 || self.total.is_some_and(|t| self.next >= t) {
            return None;
        }
        let open = |i: usize, issued: &[u64]| self.per_type.is_none_or(|n| issued[i] < n);
        if !(0..types).any(|i| open(i, &self.issued)) {
            return None;
        }
        let g = self.next;
        self.next += 1;
        let q = match &self.cumulative {
            None => {
                // In turn, skipping types that have had their count.
                let mut q = (g % types as u64) as usize;
                while !open(q, &self.issued) {
                    q = (q + 1) % types;
                }
                q
            }
            Some(cum) => {
                // By weight among the types still open (all of them unless counted per type).
                let mut rng = Rng::from_key(key(self.seed, self.stream, 0, g));
                let mut sums = Vec::with_capacity(types);
                let mut sum = 0.0;
                for i in 0..types {
                    let w = cum[i] - if i == 0 { 0.0 } else { cum[i - 1] };
                    if open(i, &self.issued) {
                        sum += w;
                    }
                    sums.push(sum);
                }
                if sum <= 0.0 {
                    (0..types).find(|&i| open(i, &self.issued)).unwrap_or(0)
                } else {
                    let x = rng.f64() * sum;
                    sums.iter().position(|&c| x < c).unwrap_or(types - 1)
                }
            }
        };
        let index = self.base + self.issued[q];
        self.issued[q] += 1;
        Some((q, index))
    }
}

/// `issued(q)`: per query type, how many instances a run's order issued before a given
/// instance (docs/rng.md §4.5). In turn (round robin) that is a formula; drawn by weight, the
/// order is replayed from the nearest state kept: one every [`KEEP_EVERY`] positions of the
/// order reached (a `Mix`, about 100 + 8 x types bytes each) and the last [`CURSORS`] states
/// looked up, so lookups that come in about the order's order (as workers take instances)
/// cost O(1) steps amortised, and any other at most `KEEP_EVERY`.
pub struct Issued {
    /// Query types in the run.
    types: usize,
    measured: Option<Mutex<Replay>>,
    warmup: Option<Mutex<Replay>>,
}

/// States of the order kept every this many positions.
pub const KEEP_EVERY: u64 = 4096;
const CURSORS: usize = 8;

impl std::fmt::Debug for Issued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issued")
            .field("types", &self.types)
            .field("weighted", &self.measured.is_some())
            .finish()
    }
}

struct Replay {
    /// The order's state at positions 0, KEEP_EVERY, 2 KEEP_EVERY, ...
    kept: Vec<Mix>,
    /// States just after recently looked-up instances, the oldest replaced first.
    cursors: Vec<Mix>,
    next: usize,
}

impl Issued {
    pub fn new(phase: &QueryPhase, seed: u64) -> Issued {
        let replay = |m: Mix| {
            (phase.mix == "weighted").then(|| {
                Mutex::new(Replay {
                    kept: vec![m],
                    cursors: Vec::new(),
                    next: 0,
                })
            })
        };
        let measured = Mix::measured(phase, seed);
        Issued {
            types: phase.queries.len(),
            measured: replay(Mix {
                total: None,
                ..measured
            }),
            warmup: replay(Mix::warmup(phase, seed, None)),
        }
    }

    /// Per query type, the instances issued before instance `index` of type `own` (a warm-up
    /// instance, from `WARMUP_BASE` up, counts in the warm-up's order).
    pub fn before(&self, own: usize, index: u64) -> Vec<u64> {
        let (replay, i) = if index >= WARMUP_BASE {
            (&self.warmup, index - WARMUP_BASE)
        } else {
            (&self.measured, index)
        };
        match replay {
            // In turn: type q's instances are at q, q + T, q + 2T, ... (a count per query ends
            // every type in the same round, so none is skipped before then).
            None => (0..self.types).map(|q| i + u64::from(q < own)).collect(),
            Some(r) => {
                let mut r = r.lock().unwrap_or_else(|p| p.into_inner());
                r.find(own, index).unwrap_or_else(|| vec![0; self.types])
            }
        }
    }
}

impl Replay {
    /// Walks from the latest kept state at or before instance `index` of type `own`; `None`
    /// when the order never issues it.
    fn find(&mut self, own: usize, index: u64) -> Option<Vec<u64>> {
        let i = index.checked_sub(self.kept[0].base)?;
        let at = self.kept.partition_point(|m| m.issued[own] <= i).max(1) - 1;
        let mut s = self.kept[at].clone();
        for c in &self.cursors {
            if c.issued[own] <= i && c.next > s.next {
                s = c.clone();
            }
        }
        loop {
            if s.next % KEEP_EVERY == 0 && s.next / KEEP_EVERY == self.kept.len() as u64 {
                self.kept.push(s.clone());
            }
            let (q, idx) = s.next_whole()?;
            if q == own && idx == index {
                break;
            }
            if s.issued[own] > i {
                return None;
            }
        }
        let mut counts = s.issued.clone();
        counts[own] -= 1;
        if self.cursors.len() < CURSORS {
            self.cursors.push(s);
        } else {
            self.cursors[self.next] = s;
            self.next = (self.next + 1) % CURSORS;
        }
        Some(counts)
    }
}

/// Intended send times of an open-loop run, as offsets from the start of the measured phase:
/// every `1/R` (fixed), or with exponential gaps of mean `1/R` drawn from the seed (Poisson).
#[derive(Clone)]
pub struct Arrivals {
    seed: u64,
    stream: u64,
    rate: f64,
    poisson: bool,
    at: f64,
    n: u64,
    /// A stage's linear ramp: the times follow it instead of `rate`.
    ramp: Option<crate::query::ramp::Ramp>,
    /// `(i, n)`: a shard's arrivals, i, i + n, i + 2n, ... of the whole schedule.
    part: (u64, u64),
}

impl Arrivals {
    pub fn new(load: &Load, seed: u64) -> Option<Arrivals> {
        let Load::Open { rate, arrival } = load else {
            return None;
        };
        let rate = match rate {
            Value::Rate(r) | Value::Float(r) => *r,
            Value::Int(n) => *n as f64,
            _ => return None,
        };
        (rate > 0.0).then(|| Arrivals {
            seed,
            stream: stream("wlrun.query.arrivals"),
            rate,
            poisson: arrival == "poisson",
            at: 0.0,
            n: 0,
            ramp: None,
            part: (0, 1),
        })
    }

    /// Only shard `part`'s arrivals (`None`: all): every n-th of the whole schedule from the
    /// i-th, at the times the whole schedule has them, so the shards' schedules merged are the
    /// whole one (Poisson too: each shard draws every gap and keeps its own arrivals).
    pub fn sharded(mut self, part: Option<(u64, u64)>) -> Arrivals {
        self.part = part.unwrap_or((0, 1));
        self
    }

    /// The index in the whole schedule of this schedule's `k`-th arrival.
    pub fn whole_index(&self, k: u64) -> u64 {
        self.part.0 + self.part.1 * k
    }

    /// Fixed arrivals along a linear ramp of the rate (a stage's `rate R to R2`).
    pub fn ramp(seed: u64, ramp: crate::query::ramp::Ramp) -> Arrivals {
        Arrivals {
            seed,
            stream: stream("wlrun.query.arrivals"),
            rate: ramp.from,
            poisson: false,
            at: 0.0,
            n: 0,
            ramp: Some(ramp),
            part: (0, 1),
        }
    }

    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The next arrival's offset from the start.
    pub fn next_offset(&mut self) -> Duration {
        let (i, n) = self.part;
        loop {
            let position = self.n;
            let at = self.next_whole();
            if position % n.max(1) == i {
                return at;
            }
        }
    }

    fn next_whole(&mut self) -> Duration {
        let at = if let Some(r) = &self.ramp {
            r.offset(self.n)
        } else if self.poisson {
            let at = self.at;
            let u = Rng::from_key(key(self.seed, self.stream, 0, self.n)).open01();
            self.at += -libm::log(u) / self.rate;
            at
        } else {
            // Computed, not summed: the n-th send is at n/R however long the run.
            self.n as f64 / self.rate
        };
        self.n += 1;
        Duration::from_secs_f64(at)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::plan::{EndpointPlan, QueryPlan, RunClauses};

    /// A closed-loop query run of `SELECT 1` queries with these weights (also used by exec's
    /// unit tests).
    pub(crate) fn phase(weights: &[f64], mix: &str, stop: Stop) -> QueryPhase {
        QueryPhase {
            name: "r".into(),
            endpoint: EndpointPlan {
                target: "t".into(),
                name: "pg".into(),
                kind: "pg".into(),
                dialect: "postgres".into(),
                url: None,
                options: Default::default(),
            },
            queries: weights
                .iter()
                .enumerate()
                .map(|(i, w)| QueryPlan {
                    name: format!("q{i}"),
                    label: String::new(),
                    sql: "SELECT 1".into(),
                    placeholders: 0,
                    lets: vec![],
                    binds: vec![],
                    csv: None,
                    route: None,
                    weight: *w,
                    expects: vec![],
                    instance: Default::default(),
                    family: None,
                })
                .collect(),
            mix: mix.into(),
            run: RunClauses {
                workers: 1,
                load: Load::Closed,
                stop,
                warmup: None,
                repeat: 1,
                stop_after_errors: None,
                require: vec![],
                expects: vec![],
                stages: vec![],
                findmax: None,
                warmup_at_rate: false,
            },
            check_same_results: false,
        }
    }

    fn all(mut m: Mix) -> Vec<(usize, u64)> {
        std::iter::from_fn(|| m.next_instance())
            .take(100_000)
            .collect()
    }

    #[test]
    fn round_robin_takes_turns_and_counts_per_type() {
        let p = phase(
            &[1.0, 1.0, 1.0],
            "round_robin",
            Stop::Count {
                count: 2,
                per_query: true,
            },
        );
        let m = Mix::measured(&p, 1);
        assert_eq!(m.bound(), Some(6));
        assert_eq!(all(m), vec![(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]);
        let p = phase(
            &[1.0, 1.0],
            "round_robin",
            Stop::Count {
                count: 3,
                per_query: false,
            },
        );
        assert_eq!(all(Mix::measured(&p, 1)), vec![(0, 0), (1, 0), (0, 1)]);
    }

    #[test]
    fn weighted_mix_follows_weights_and_is_deterministic() {
        let p = phase(
            &[1.0, 4.0, 0.0],
            "weighted",
            Stop::Count {
                count: 50_000,
                per_query: false,
            },
        );
        let a = all(Mix::measured(&p, 7));
        assert_eq!(a, all(Mix::measured(&p, 7)));
        assert_ne!(a, all(Mix::measured(&p, 8)));
        let ones = a.iter().filter(|(q, _)| *q == 1).count() as f64 / a.len() as f64;
        assert!((ones - 0.8).abs() < 0.01, "{ones}");
        assert!(
            a.iter().all(|(q, _)| *q != 2),
            "a zero weight is never drawn"
        );
        // Each type numbers its own instances densely.
        let zeros: Vec<u64> = a.iter().filter(|(q, _)| *q == 0).map(|(_, i)| *i).collect();
        assert!(zeros.iter().enumerate().all(|(k, i)| *i == k as u64));
    }

    #[test]
    fn weighted_per_query_counts_end_with_every_type_full() {
        let p = phase(
            &[1.0, 9.0],
            "weighted",
            Stop::Count {
                count: 100,
                per_query: true,
            },
        );
        let a = all(Mix::measured(&p, 3));
        assert_eq!(a.len(), 200);
        assert_eq!(a.iter().filter(|(q, _)| *q == 0).count(), 100);
    }

    #[test]
    fn warmup_indices_never_meet_measured_ones() {
        let p = phase(
            &[1.0],
            "round_robin",
            Stop::Duration {
                duration: Value::Duration(1),
            },
        );
        let mut w = Mix::warmup(&p, 1, Some(3));
        assert_eq!(w.next_instance(), Some((0, WARMUP_BASE)));
        let mut m = Mix::measured(&p, 1);
        assert_eq!(m.bound(), None);
        assert_eq!(m.next_instance(), Some((0, 0)));
    }

    /// `Issued::before` is what walking the order counts, for every instance, looked up in
    /// order, backwards and at random (the replay's kept states and cursors), weighted or in
    /// turn, with a count per query or without, measured and warm-up.
    #[test]
    fn issued_counts_what_the_order_issued_before() {
        let per_query = Stop::Count {
            count: 3_000,
            per_query: true,
        };
        let total = Stop::Count {
            count: 12_000,
            per_query: false,
        };
        for (weights, mix, stop) in [
            (&[95.0, 5.0, 1.0][..], "weighted", total.clone()),
            (&[1.0, 9.0][..], "weighted", per_query.clone()),
            (&[1.0, 1.0, 1.0][..], "round_robin", per_query),
            (&[1.0, 1.0][..], "round_robin", total),
        ] {
            let p = phase(weights, mix, stop);
            let mut want = Vec::new();
            let mut counts = vec![0u64; weights.len()];
            for (q, i) in all(Mix::measured(&p, 5)) {
                want.push((q, i, counts.clone()));
                counts[q] += 1;
            }
            let issued = Issued::new(&p, 5);
            for (q, i, c) in &want {
                assert_eq!(&issued.before(*q, *i), c, "{mix} {q} {i}");
            }
            let issued = Issued::new(&p, 5);
            let mut r = Rng::from_key(9);
            for _ in 0..300 {
                let (q, i, c) = &want[r.below(want.len() as u64) as usize];
                assert_eq!(&issued.before(*q, *i), c, "{mix} at random");
            }
            for (q, i, c) in want.iter().rev().step_by(7) {
                assert_eq!(&issued.before(*q, *i), c, "{mix} backwards");
            }
            let mut w = Mix::warmup(&p, 5, Some(500));
            let mut counts = vec![0u64; weights.len()];
            while let Some((q, i)) = w.next_instance() {
                assert_eq!(issued.before(q, i), counts, "{mix} warm-up");
                counts[q] += 1;
            }
        }
    }

    #[test]
    fn arrivals_fixed_and_poisson_keep_the_rate() {
        let fixed = Load::Open {
            rate: Value::Rate(100.0),
            arrival: "fixed".into(),
        };
        let mut a = Arrivals::new(&fixed, 1).unwrap();
        assert_eq!(a.next_offset(), Duration::ZERO);
        assert_eq!(a.next_offset(), Duration::from_millis(10));
        let poisson = Load::Open {
            rate: Value::Rate(1000.0),
            arrival: "poisson".into(),
        };
        let mut p = Arrivals::new(&poisson, 1).unwrap();
        let times: Vec<Duration> = (0..20_001).map(|_| p.next_offset()).collect();
        let total = times[20_000].as_secs_f64();
        assert!((total - 20.0).abs() < 0.6, "{total}");
        let gaps: Vec<f64> = times
            .windows(2)
            .map(|w| (w[1] - w[0]).as_secs_f64())
            .collect();
        // Exponential gaps: about 36.8% are longer than the mean.
        let long = gaps.iter().filter(|&&g| g > 0.001).count() as f64 / gaps.len() as f64;
        assert!((long - (-1.0f64).exp()).abs() < 0.02, "{long}");
        assert!(Arrivals::new(&Load::Closed, 1).is_none());
    }

    /// The shards' orders and arrivals, put back together by position, are the whole's: a
    /// weighted mix counted per query, and Poisson arrivals, for 1 to 5 shards.
    #[test]
    fn shards_together_are_the_whole_order_and_schedule() {
        let stop = Stop::Count {
            count: 7,
            per_query: true,
        };
        let phase = phase(&[1.0, 3.0, 0.5], "weighted", stop);
        let whole = all(Mix::measured(&phase, 9));
        assert_eq!(whole.len(), 21);
        let load = Load::Open {
            rate: Value::Rate(1000.0),
            arrival: "poisson".into(),
        };
        let mut a = Arrivals::new(&load, 9).unwrap();
        let times: Vec<Duration> = (0..40).map(|_| a.next_offset()).collect();
        for n in 1..=5u64 {
            let mut merged = vec![None; whole.len()];
            let mut merged_times = vec![None; times.len()];
            for i in 0..n {
                let m = Mix::measured(&phase, 9).sharded(Some((i, n)));
                assert_eq!(m.bound(), Some(share((i, n), 21)));
                let mine = all(m);
                assert_eq!(mine.len() as u64, share((i, n), 21), "shard {i}/{n}");
                for (k, inst) in mine.into_iter().enumerate() {
                    merged[(i + n * k as u64) as usize] = Some(inst);
                }
                let mut a = Arrivals::new(&load, 9).unwrap().sharded(Some((i, n)));
                for k in 0..(times.len() as u64 - i).div_ceil(n) {
                    assert_eq!(a.whole_index(k), i + n * k);
                    merged_times[(i + n * k) as usize] = Some(a.next_offset());
                }
            }
            let merged: Vec<(usize, u64)> = merged.into_iter().map(Option::unwrap).collect();
            assert_eq!(merged, whole, "{n} shards");
            let merged_times: Vec<Duration> =
                merged_times.into_iter().map(Option::unwrap).collect();
            assert_eq!(merged_times, times, "{n} shards");
        }
        assert_eq!(share((2, 3), 2), 0);
        assert_eq!(share((0, 3), 0), 0);
        assert_eq!(share((1, 3), 7), 2);
    }
}
