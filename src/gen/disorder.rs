//! A schema's `null one of [...]` and `late ... by ... rows` (`plan::Disorder`): the rows a
//! generator drew, some with one column nulled, some sent later than drawn. TSBS iot's realism
//! layer does both; docs/rng.md, "Disorder", is the specification.
//!
//! Every decision is a draw keyed by the row's identity (its index among the schema's rows:
//! epoch x series + series), never by its position in a worker's stream, so which rows have
//! which column null does not depend on how the series are split between workers or shards:
//! two protocols, or two worker counts, land the same table. Only the order differs, and order
//! is what `late` is about.
//!
//! A late row moves back by L rows of its stream: it leaves right after the row drawn L places
//! after it. L is drawn from an exponential distribution whose median is the clause's `by`,
//! rounded up, within 1..=10 x median. Rows wait in a staging batch until every row that
//! leaves before them has been drawn, and leave in runs copied whole.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use super::batch::{append_rows, Batch, BatchSchema};
use super::rng::{key, Rng};
use super::route::fnv1a64;
use crate::plan;

/// Rows drawn at a time into the staging batch.
const CHUNK: usize = 4096;

/// A row waiting in the staging batch. Ordered by when it leaves: its slot (its position in
/// the stream, plus its lateness for a late row), a late row after the on-time row of the same
/// slot, then by position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Waiting {
    slot: u64,
    late: bool,
    pos: u64,
    /// Its row in the staging batch.
    at: usize,
    /// The row's identity, for the null draws.
    id: u64,
}

pub(super) struct Disorder {
    seed: u64,
    /// Per `null one of`: its stream, share and columns.
    nulls: Vec<(u64, f64, Vec<usize>)>,
    /// The late share, the median lateness and the stream.
    late: Option<(f64, f64, u64)>,
    staging: Batch,
    spare: Batch,
    waiting: BinaryHeap<Reverse<Waiting>>,
    /// The position the next drawn row takes.
    next_pos: u64,
    /// The generator has no more rows.
    drawn_all: bool,
    /// Identities of the rows just drawn, filled by the generator.
    ids: Vec<u64>,
    /// Identities of the rows of the run leaving now.
    run: Vec<u64>,
}

impl Disorder {
    /// The disorder of `plan`'s rows, if it has one, for batches of `layout`.
    pub fn of(plan: &plan::SchemaPlan, seed: u64, layout: &Arc<BatchSchema>) -> Option<Box<Self>> {
        let d = plan.disorder.as_ref()?;
        Some(Box::new(Disorder::new(
            d,
            &plan.name,
            seed,
            Arc::clone(layout),
        )))
    }

    fn new(d: &plan::Disorder, schema: &str, seed: u64, layout: Arc<BatchSchema>) -> Disorder {
        let stream = |what: &str| fnv1a64(format!("{schema}#{what}").as_bytes());
        Disorder {
            seed,
            nulls: d
                .null_one
                .iter()
                .enumerate()
                .map(|(k, n)| (stream(&format!("null_one/{k}")), n.share, n.columns.clone()))
                .collect(),
            late: d
                .late
                .as_ref()
                .map(|l| (l.share, l.median_rows as f64, stream("late"))),
            staging: Batch::new(Arc::clone(&layout)),
            spare: Batch::new(layout),
            waiting: BinaryHeap::new(),
            next_pos: 0,
            drawn_all: false,
            ids: Vec::new(),
            run: Vec::new(),
        }
    }

    /// Appends the next rows, in the order they leave, to `batch` until it holds `max_rows`
    /// (or the rows end). `draw(staging, want, ids)` draws the generator's next rows into
    /// `staging` until it holds `want` rows, and their identities into `ids`.
    pub fn extend(
        &mut self,
        batch: &mut Batch,
        max_rows: usize,
        mut draw: impl FnMut(&mut Batch, usize, &mut Vec<u64>),
    ) {
        if self.late.is_none() {
            // Rows leave as drawn: straight into `batch`, no staging.
            let from = batch.rows;
            draw(batch, max_rows, &mut self.ids);
            if self.ids.is_empty() {
                self.ids
                    .extend(self.next_pos..self.next_pos + (batch.rows - from) as u64);
            }
            self.next_pos += (batch.rows - from) as u64;
            for (k, &id) in self.ids.iter().enumerate() {
                self.null_one(batch, from + k, id);
            }
            return;
        }
        loop {
            self.emit(batch, max_rows);
            if batch.rows >= max_rows || (self.drawn_all && self.waiting.is_empty()) {
                return;
            }
            if self.staging.rows >= 4 * CHUNK && self.waiting.len() <= self.staging.rows / 2 {
                self.compact();
            }
            let from = self.staging.rows;
            let mut ids = std::mem::take(&mut self.ids);
            draw(&mut self.staging, from + CHUNK, &mut ids);
            self.ids = ids;
            self.drawn(from);
        }
    }

    /// Rows `from..` of the staging batch were just drawn, with identities `self.ids` (their
    /// places in the stream when it has none); none when the generator has ended.
    fn drawn(&mut self, from: usize) {
        let n = self.staging.rows - from;
        if n == 0 {
            self.drawn_all = true;
            return;
        }
        if self.ids.is_empty() {
            self.ids.extend(self.next_pos..self.next_pos + n as u64);
        }
        for (k, &id) in self.ids.iter().enumerate() {
            let pos = self.next_pos + k as u64;
            let lateness = self.lateness(id);
            self.waiting.push(Reverse(Waiting {
                slot: pos + lateness,
                late: lateness > 0,
                pos,
                at: from + k,
                id,
            }));
        }
        self.next_pos += self.ids.len() as u64;
    }

    /// Moves the rows that may leave now into `out`, up to `max_rows` rows in it.
    fn emit(&mut self, out: &mut Batch, max_rows: usize) {
        while out.rows < max_rows {
            let Some(first) = self.ready() else { return };
            let mut end = first.at + 1;
            let first_out = out.rows;
            self.run.clear();
            self.run.push(first.id);
            while out.rows + (end - first.at) < max_rows {
                match self.ready() {
                    Some(w) if w.at == end => {
                        end += 1;
                        self.run.push(w.id);
                    }
                    Some(w) => {
                        self.waiting.push(Reverse(w));
                        break;
                    }
                    None => break,
                }
            }
            append_rows(&self.staging, first.at..end, out)
                .expect("the staging batch has the output's layout");
            for k in 0..self.run.len() {
                self.null_one(out, first_out + k, self.run[k]);
            }
        }
    }

    /// The next row to leave, if every row leaving before it has been drawn.
    fn ready(&mut self) -> Option<Waiting> {
        let Reverse(w) = *self.waiting.peek()?;
        if w.slot < self.next_pos || self.drawn_all {
            self.waiting.pop();
            Some(w)
        } else {
            None
        }
    }

    /// How many rows later row `id` leaves: 0 for most.
    fn lateness(&self, id: u64) -> u64 {
        let Some((share, median, stream)) = self.late else {
            return 0;
        };
        let mut rng = Rng::from_key(key(self.seed, stream, 0, id));
        if rng.f64() >= share {
            return 0;
        }
        // Exponential with that median: -ln(U) / ln 2 x median, U in (0, 1].
        let u = 1.0 - rng.f64();
        let x = -libm::log(u) / std::f64::consts::LN_2 * median;
        (libm::ceil(x) as u64).clamp(1, (10.0 * median) as u64)
    }

    /// Nulls one listed column of row `row` of `out` (row `id` of the schema), per clause.
    fn null_one(&self, out: &mut Batch, row: usize, id: u64) {
        for (stream, share, columns) in &self.nulls {
            let mut rng = Rng::from_key(key(self.seed, *stream, 0, id));
            if rng.f64() < *share {
                let c = columns[rng.below(columns.len() as u64) as usize];
                out.columns[c].nulls.set(row);
            }
        }
    }

    /// Copies the waiting rows to the front of a fresh staging batch, so it does not grow.
    fn compact(&mut self) {
        let mut rows: Vec<Waiting> = self.waiting.drain().map(|Reverse(w)| w).collect();
        rows.sort_by_key(|w| w.at);
        self.spare.clear();
        let mut k = 0;
        while k < rows.len() {
            let mut end = k + 1;
            while end < rows.len() && rows[end].at == rows[end - 1].at + 1 {
                end += 1;
            }
            append_rows(
                &self.staging,
                rows[k].at..rows[end - 1].at + 1,
                &mut self.spare,
            )
            .expect("the staging batch has its own layout");
            k = end;
        }
        for (k, w) in rows.iter_mut().enumerate() {
            w.at = k;
        }
        std::mem::swap(&mut self.staging, &mut self.spare);
        self.waiting = rows.into_iter().map(Reverse).collect();
    }
}

#[cfg(test)]
mod tests;
