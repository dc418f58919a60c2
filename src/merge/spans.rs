//! The measured time of a merged phase: the union of the shards' measured spans on the wall
//! clock, over which its rates are taken. Round by round (a run's repetitions, with warm-ups
//! between them; an ingest has one): from the earliest shard's start of the round to the
//! latest shard's end of it. The shards start together at a barrier and run at once, so this
//! is the time during which the system was under the merged load; the sum of the shards' own
//! spans would count that time once per shard.

use crate::report::series::SeriesRef;

/// A merged phase's measured time.
#[derive(Clone, Debug, PartialEq)]
pub struct Union {
    /// Seconds per round.
    pub rounds: Vec<f64>,
    /// Why the rounds are not the union on the wall clock, when they are not: a shard's report
    /// does not place its span in time (no series, a report rebuilt after a kill, an older
    /// wlrun), so each round is the longest shard's instead. A warning of the phase.
    pub approximate: Option<String>,
}

impl Union {
    pub fn total_s(&self) -> f64 {
        self.rounds.iter().sum()
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

/// The union of `parts`' measured spans, round by round. A shard that measured nothing in a
/// round (a span of zero length: no rows of its share, a failure before sending) adds nothing
/// to it.
pub fn union(parts: &[Part]) -> Union {
    let rounds = parts.iter().map(|p| p.rounds.len()).max().unwrap_or(0);
    let placed = |p: &Part| {
        p.rounds.is_empty() || p.series.is_some_and(|s| s.measured.len() == p.rounds.len())
    };
    let missing: Vec<u64> = parts
        .iter()
        .filter(|p| !placed(p))
        .map(|p| p.index)
        .collect();
    if !missing.is_empty() {
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
            approximate: Some(format!(
                "rates are over the longest shard's measured time, not the union of the \
                 shards' spans: {} left no measured span on the wall clock (a report rebuilt \
                 after a kill, or of an older wlrun)",
                super::shard_list(&missing)
            )),
        };
    }
    let rounds = (0..rounds.max(max_measured(parts)))
        .map(|k| {
            let spans = parts
                .iter()
                .filter_map(|p| p.series.and_then(|s| s.measured.get(k)))
                .filter(|m| m.to_unix_ms > m.from_unix_ms);
            let (from, to) = spans.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), m| {
                (a.min(m.from_unix_ms), b.max(m.to_unix_ms))
            });
            if to > from {
                (to - from) / 1000.0
            } else {
                0.0
            }
        })
        .collect();
    Union {
        rounds,
        approximate: None,
    }
}

fn max_measured(parts: &[Part]) -> usize {
    parts
        .iter()
        .filter_map(|p| p.series.map(|s| s.measured.len()))
        .max()
        .unwrap_or(0)
}
