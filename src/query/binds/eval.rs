//! Evaluates compiled bind generators at one draw site. The schema generators draw exactly as
//! `gen::eval` does (docs/rng.md §4.1), with the same samplers, format, pattern and uuid code;
//! the query generators (`window`, `sample`, `.start`/`.end`, `$n`, lets) as docs/rng.md §8.2
//! defines them.

use std::collections::HashMap;

use super::node::{Node, SampleFrom, V};
use crate::gen::rng::{Rng, PER_SERIES};
use crate::gen::{arith, uuid_v4, Cell};

/// Where a node is evaluated: a query instance, or one series of a `sample` domain.
pub(super) struct Ctx<'a> {
    pub seed: u64,
    /// The counters of the draw sites (docs/rng.md §1.3).
    pub series: u64,
    pub row: u64,
    /// What `seq` and `csv(...)` count: the instance index, or the series index.
    pub index: u64,
    pub lets: &'a [V],
    pub binds: &'a [Option<V>],
}

impl Ctx<'_> {
    fn rng(&self, stream: u64) -> Rng {
        Rng::new(self.seed, stream, self.series, self.row)
    }

    /// A node of shape `One` as a cell (Null for anything else, which compiling rules out).
    fn cell(&self, n: &Node) -> Cell {
        match self.eval(n) {
            V::One(c) => c,
            _ => Cell::Null,
        }
    }

    pub fn eval(&self, n: &Node) -> V {
        let one = V::One;
        match n {
            Node::Const(c) => one(c.clone()),
            Node::SeriesIndex => one(Cell::Long(self.series as i64)),
            Node::Seq { start, step } => one(Cell::Long(
                start.wrapping_add(step.wrapping_mul(self.index as i64)),
            )),
            Node::UniformLong { lo, hi, stream } => {
                one(Cell::Long(self.rng(*stream).range_i64(*lo, *hi)))
            }
            Node::UniformDouble { lo, hi, stream } => {
                one(Cell::Double(self.rng(*stream).range_f64(*lo, *hi)))
            }
            Node::UniformNanos {
                lo,
                hi,
                duration,
                stream,
            } => {
                let v = self.rng(*stream).range_i64(*lo, *hi);
                one(if *duration {
                    Cell::Duration(v)
                } else {
                    Cell::Timestamp(v)
                })
            }
            Node::Normal {
                mean,
                stddev,
                stream,
            } => one(Cell::Double(mean + stddev * self.rng(*stream).std_normal())),
            Node::Pick { values, stream } => {
                let i = self.rng(*stream).below(values.len() as u64) as usize;
                one(values.get(i).cloned().unwrap_or(Cell::Null))
            }
            Node::Weighted {
                values,
                cumulative,
                stream,
            } => {
                let total = cumulative.last().copied().unwrap_or(0.0);
                let x = self.rng(*stream).f64() * total;
                let i = cumulative
                    .iter()
                    .position(|&c| x < c)
                    .unwrap_or(values.len().saturating_sub(1));
                one(values.get(i).cloned().unwrap_or(Cell::Null))
            }
            Node::Zipf { n, zipf, stream } => {
                let mut r = self.rng(*stream);
                let k = match zipf {
                    Some(z) => z.sample(&mut r) - 1,
                    None => r.below(*n),
                };
                one(Cell::Long(k as i64))
            }
            Node::Format { format, args } => {
                let args: Vec<Cell> = args.iter().map(|a| self.cell(a)).collect();
                let mut s = String::new();
                format.render(&args, &mut s);
                one(Cell::Str(s))
            }
            Node::Pattern { pattern, stream } => {
                let mut s = String::new();
                pattern.sample(&mut self.rng(*stream), &mut s);
                one(Cell::Str(s))
            }
            Node::Csv { values } => {
                let i = (self.index % values.len().max(1) as u64) as usize;
                one(values.get(i).cloned().unwrap_or(Cell::Null))
            }
            Node::Uuid { stream } => {
                let mut r = self.rng(*stream);
                one(Cell::Str(uuid_v4(r.next_u64(), r.next_u64())))
            }
            Node::Chance { p, stream } => one(Cell::Bool(self.rng(*stream).f64() < *p)),
            Node::Window {
                from,
                last,
                length,
                stream,
            } => {
                let span = last.wrapping_sub(*from) as u64;
                let drawn = from.wrapping_add(self.rng(*stream).below(span) as i64);
                let start = drawn - drawn.rem_euclid(1_000_000_000);
                V::Window {
                    start,
                    end: start.saturating_add(*length),
                }
            }
            Node::Sample { from, k, stream } => V::List(self.sample(from, *k, *stream)),
            Node::Field { of, end } => match self.eval(of) {
                V::Window { start, end: e } => one(Cell::Timestamp(if *end { e } else { start })),
                _ => one(Cell::Null),
            },
            Node::Let(slot) => self.lets.get(*slot).cloned().unwrap_or(one(Cell::Null)),
            Node::Bind(slot) => match self.binds.get(*slot) {
                Some(Some(v)) => v.clone(),
                _ => one(Cell::Null),
            },
            Node::Arith { op, lhs, rhs } => one(arith(*op, self.cell(lhs), self.cell(rhs))),
            Node::ToStr(of) => one(match self.cell(of) {
                Cell::Null => Cell::Null,
                v => Cell::Str(v.to_text()),
            }),
        }
    }

    fn sample(&self, from: &SampleFrom, k: u64, stream: u64) -> Vec<Cell> {
        let mut rng = self.rng(stream);
        match from {
            SampleFrom::List(vs) => sample_indices(&mut rng, vs.len() as u64, k)
                .into_iter()
                .map(|i| vs.get(i as usize).cloned().unwrap_or(Cell::Null))
                .collect(),
            SampleFrom::Series { value, count } => sample_indices(&mut rng, *count, k)
                .into_iter()
                .map(|s| {
                    // Series s's key exactly as ingest draws it: per series, at row PER_SERIES.
                    Ctx {
                        seed: self.seed,
                        series: s,
                        row: PER_SERIES,
                        index: s,
                        lets: &[],
                        binds: &[],
                    }
                    .cell(value)
                })
                .collect(),
        }
    }
}

/// Up to this many distinct values, the moved positions are kept in a list rather than a map.
const FEW: u64 = 32;

/// `k` distinct indices of `[0, n)` in draw order, k <= n: the first k steps of a Fisher–Yates
/// shuffle of the identity, `j = i + below(n - i)`, position j's value taken and replaced by
/// position i's. Only the positions a swap moved are stored (at most k), so memory is O(k)
/// for any n, and it takes exactly k `below` calls.
pub(super) fn sample_indices(rng: &mut Rng, n: u64, k: u64) -> Vec<u64> {
    sample_indices_with(rng, n, k, FEW)
}

fn sample_indices_with(rng: &mut Rng, n: u64, k: u64, few: u64) -> Vec<u64> {
    let k = k.min(n);
    let mut out = Vec::with_capacity(k as usize);
    let mut list: Vec<(u64, u64)> = Vec::new();
    let mut map: HashMap<u64, u64> = HashMap::new();
    let small = k <= few;
    if !small {
        map.reserve(k as usize);
    }
    let get = |list: &Vec<(u64, u64)>, map: &HashMap<u64, u64>, p: u64| {
        if small {
            list.iter().find(|(q, _)| *q == p).map_or(p, |(_, v)| *v)
        } else {
            map.get(&p).copied().unwrap_or(p)
        }
    };
    for i in 0..k {
        let j = i + rng.below(n - i);
        let at_j = get(&list, &map, j);
        out.push(at_j);
        if j != i {
            let at_i = get(&list, &map, i);
            if small {
                match list.iter_mut().find(|(q, _)| *q == j) {
                    Some(e) => e.1 = at_i,
                    None => list.push((j, at_i)),
                }
            } else {
                map.insert(j, at_i);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::Op;

    #[test]
    fn sample_indices_are_distinct_and_the_same_in_list_and_map_form() {
        for (n, k) in [(10, 10), (100_000, 1000), (5, 1), (1, 1), (40, 33)] {
            for key in 0..20u64 {
                let a = sample_indices_with(&mut Rng::from_key(key), n, k, 0);
                let b = sample_indices_with(&mut Rng::from_key(key), n, k, u64::MAX);
                assert_eq!(a, b, "n {n} k {k}");
                assert_eq!(a.len() as u64, k);
                let mut s = a.clone();
                s.sort_unstable();
                s.dedup();
                assert_eq!(s.len() as u64, k, "distinct");
                assert!(a.iter().all(|&i| i < n));
            }
        }
        // k = n is a permutation.
        let mut p = sample_indices(&mut Rng::from_key(3), 10, 10);
        p.sort_unstable();
        assert_eq!(p, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn arithmetic_for_queries() {
        use Cell::*;
        assert_eq!(
            arith(Op::Add, Str("a".into()), Str("b".into())),
            Str("ab".into())
        );
        assert_eq!(arith(Op::Sub, Timestamp(10), Duration(4)), Timestamp(6));
        assert_eq!(arith(Op::Mul, Duration(10), Double(1.5)), Duration(15));
        assert_eq!(arith(Op::Div, Duration(10), Double(0.0)), Null);
        assert_eq!(arith(Op::Rem, Long(7), Long(0)), Null);
        assert_eq!(arith(Op::Add, Long(1), Str("x".into())), Null);
    }
}
