//! The measured time of a merged phase: the union of the shards' measured spans on the wall
//! clock, over which its rates are taken. The shards start each phase together at a barrier and
//! run at once, so the time the servers were under the merged load runs from the earliest
//! shard's start to the latest shard's end; the sum of the shards' own spans would count that
//! time once per shard, and the longest shard's would miss the start skew and a straggler's
//! tail.
//!
//! A run with repetitions measures in rounds with warm-ups between them, which no figure
//! counts: the phase's time is the union of every shard's rounds as sets of instants (a warm-up
//! while no shard measured is in no round; a shard's warm-up while another measures is, as that
//! shard's load is), and repetition k's is from the earliest start of a k-th round to the latest
//! end of one. The two agree when the shards' rounds stay together (open loop; closed-loop
//! shards of different speeds drift apart by the next repetition).

use crate::report::series::{Measured, SeriesRef};

/// A merged phase's measured time.
#[derive(Clone, Debug, PartialEq)]
pub struct Union {
    /// Seconds per round: the k-th rounds' span.
    pub rounds: Vec<f64>,
    /// The union of every round of every shard: disjoint spans in time order.
    pub spans: Vec<Measured>,
    /// Why the figures are not the union on the wall clock, when they are not: a shard's
    /// report does not place its span in time (no series, a report rebuilt after a kill, an
    /// older wlrun), so each round is the longest shard's instead. A warning of the phase.
    pub approximate: Option<String>,
}

impl Union {
    /// The phase's measured seconds.
    pub fn total_s(&self) -> f64 {
        if self.approximate.is_some() {
            self.rounds.iter().sum()
        } else {
            self.spans.iter().map(Measured::span_s).sum()
        }
    }

    pub fn round_s(&self, k: usize) -> f64 {
        self.rounds.get(k).copied().unwrap_or(0.0)
    }
}

/// One shard's part of a phase, for its span.
pub struct Part<'a> {
    pub index: u64,
    pub series: Option<&'a SeriesRef>,
    /// The shard's own measured seconds per round (a run's `repeats[].elapsed_s`, an ingest's
    /// `elapsed_s`).
    pub rounds: Vec<f64>,
}

/// The union of `parts`' measured spans. A shard that measured nothing in a round (a span of
/// zero length: none of its share, a failure before sending) adds nothing to it.
pub fn union(parts: &[Part]) -> Union {
    let placed = |p: &Part| {
        p.rounds.is_empty() || p.series.is_some_and(|s| s.measured.len() == p.rounds.len())
    };
    let missing: Vec<u64> = parts
        .iter()
        .filter(|p| !placed(p))
        .map(|p| p.index)
        .collect();
    if !missing.is_empty() {
        let rounds = parts.iter().map(|p| p.rounds.len()).max().unwrap_or(0);
        let longest = (0..rounds)
            .map(|k| {
                parts
                    .iter()
                    .filter_map(|p| p.rounds.get(k))
                    .copied()
                    .fold(0.0, f64::max)
            })
            .collect();
        return Union {
            rounds: longest,
            spans: Vec::new(),
            approximate: Some(format!(
                "rates are over the longest shard's measured time, not the union of the \
                 shards' spans: {} left no measured span on the wall clock (a report rebuilt \
                 after a kill, or of an older wlrun)",
                super::shard_list(&missing)
            )),
        };
    }
    let measured = |p: &Part<'_>| -> Vec<Measured> {
        p.series
            .map(|s| s.measured.clone())
            .unwrap_or_default()
            .into_iter()
            .filter(|m| m.to_unix_ms > m.from_unix_ms)
            .collect()
    };
    let rounds = parts
        .iter()
        .filter_map(|p| p.series.map(|s| s.measured.len()))
        .max()
        .unwrap_or(0);
    let rounds = (0..rounds)
        .map(|k| {
            let (from, to) = parts
                .iter()
                .filter_map(|p| p.series.and_then(|s| s.measured.get(k)))
                .filter(|m| m.to_unix_ms > m.from_unix_ms)
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), m| {
                    (a.min(m.from_unix_ms), b.max(m.to_unix_ms))
                });
            if to > from {
                (to - from) / 1000.0
            } else {
                0.0
            }
        })
        .collect();
    let mut all: Vec<Measured> = parts.iter().flat_map(measured).collect();
    all.sort_by(|a, b| a.from_unix_ms.total_cmp(&b.from_unix_ms));
    let mut spans: Vec<Measured> = Vec::new();
    for m in all {
        match spans.last_mut() {
            Some(last) if m.from_unix_ms <= last.to_unix_ms => {
                last.to_unix_ms = last.to_unix_ms.max(m.to_unix_ms);
            }
            _ => spans.push(m),
        }
    }
    Union {
        rounds,
        spans,
        approximate: None,
    }
}
