//! Evaluates one compiled `Node` at one draw site: a schema row (reading the row's earlier
//! columns and the series' walk state), a query instance (reading its lets, binds and windows),
//! or one series of a `sample` domain. One function draws everything these have in common; only
//! what a place alone has reads [`At`]. docs/rng.md states each rule in prose (§4 for columns,
//! §8 for binds); this is the same rule in code.

use std::collections::HashMap;

use super::cell::Cell;
use super::node::{Node, Op, SampleFrom, V};
use super::rng::{Rng, PER_SERIES};
use super::ycsb;

/// A walk's clamp and its refill.
type Bounds = (f64, f64, Option<f64>);

/// What only one kind of draw site has.
pub(crate) enum At<'a> {
    /// A schema row: the row so far (every column this one depends on is already filled in)
    /// and this series' walk states, one per walk node (none per series).
    Row {
        row: &'a [Cell],
        walks: &'a mut [f64],
    },
    /// A query instance: its lets, its binds so far, and per query of the run how many of
    /// its instances came before this one in the run's order (`issued(q)`).
    Instance {
        lets: &'a [V],
        binds: &'a [Option<V>],
        issued: &'a [u64],
    },
    /// One series of a `sample` domain, drawn as ingest draws it.
    Series,
}

/// Where a node is evaluated: the counters of its draw sites (docs/rng.md §1.3) and the place.
pub(crate) struct Ctx<'a> {
    pub seed: u64,
    pub series: u64,
    /// The row counter of the draw sites: a row's index within its series, `PER_SERIES`, or a
    /// query instance's index.
    pub row: u64,
    /// What `seq` and `csv(...)` count: the row's index, the series index, or the instance's.
    pub index: u64,
    pub at: At<'a>,
}

impl<'a> Ctx<'a> {
    /// A per-series column of series `s`, reading the series' values so far.
    pub fn per_series(seed: u64, s: u64, row: &'a [Cell]) -> Ctx<'a> {
        Ctx {
            seed,
            series: s,
            row: PER_SERIES,
            index: s,
            at: At::Row {
                row,
                walks: &mut [],
            },
        }
    }

    /// A per-row column at row `e` of series `s`.
    pub fn per_row(seed: u64, s: u64, e: u64, row: &'a [Cell], walks: &'a mut [f64]) -> Ctx<'a> {
        Ctx {
            seed,
            series: s,
            row: e,
            index: e,
            at: At::Row { row, walks },
        }
    }

    /// Query instance `index`: series 0, row `index` (docs/rng.md §8.1).
    pub fn instance(
        seed: u64,
        index: u64,
        lets: &'a [V],
        binds: &'a [Option<V>],
        issued: &'a [u64],
    ) -> Ctx<'a> {
        Ctx {
            seed,
            series: 0,
            row: index,
            index,
            at: At::Instance {
                lets,
                binds,
                issued,
            },
        }
    }
}

impl Ctx<'_> {
    /// The generator's own random sequence here.
    fn rng(&self, stream: u64) -> Rng {
        Rng::new(self.seed, stream, self.series, self.row)
    }

    /// A node's value, lists and windows included (what a let or a bind holds).
    pub fn value(&mut self, n: &Node) -> V {
        match n {
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
            Node::Let(slot) => match &self.at {
                At::Instance { lets, .. } => lets.get(*slot).cloned(),
                _ => None,
            }
            .unwrap_or(V::One(Cell::Null)),
            Node::Bind(slot) => match &self.at {
                At::Instance { binds, .. } => binds.get(*slot).cloned().flatten(),
                _ => None,
            }
            .unwrap_or(V::One(Cell::Null)),
            n => V::One(self.eval(n)),
        }
    }

    /// A node of one value as a cell (Null for a list or a window, which compiling rules out
    /// where one value is needed).
    pub fn eval(&mut self, n: &Node) -> Cell {
        match n {
            Node::Const(c) => c.clone(),
            Node::SeriesIndex => Cell::Long(self.series as i64),
            Node::Seq { start, step } => {
                Cell::Long(start.wrapping_add(step.wrapping_mul(self.index as i64)))
            }
            Node::UniformLong { lo, hi, stream } => {
                Cell::Long(self.rng(*stream).range_i64(*lo, *hi))
            }
            Node::UniformDouble { lo, hi, stream } => {
                Cell::Double(self.rng(*stream).range_f64(*lo, *hi))
            }
            Node::UniformNanos {
                lo,
                hi,
                duration,
                stream,
            } => {
                let v = self.rng(*stream).range_i64(*lo, *hi);
                if *duration {
                    Cell::Duration(v)
                } else {
                    Cell::Timestamp(v)
                }
            }
            Node::Normal {
                mean,
                stddev,
                stream,
            } => Cell::Double(mean + stddev * self.rng(*stream).std_normal()),
            Node::Walk {
                start,
                step,
                min,
                max,
                scale,
                slot,
                refill,
            } => {
                let v = self.walk(start, step, (*min, *max, *refill), *slot);
                Cell::Double(truncated(v, *scale))
            }
            Node::Hold {
                start,
                value,
                change,
                stream,
                slot,
            } => Cell::Double(self.hold(start, value, (*change, *stream), *slot)),
            Node::Pick { values, stream } => {
                let i = self.rng(*stream).below(values.len() as u64);
                values[i as usize].clone()
            }
            Node::Weighted {
                values,
                cumulative,
                stream,
            } => {
                let total = cumulative[cumulative.len() - 1];
                let x = self.rng(*stream).f64() * total;
                let i = cumulative
                    .iter()
                    .position(|&c| x < c)
                    .unwrap_or(values.len() - 1);
                values[i].clone()
            }
            Node::PickBy {
                column,
                choices,
                stream,
            } => {
                let At::Row { row, .. } = &self.at else {
                    return Cell::Null;
                };
                let by = &row[*column];
                if *by == Cell::Null {
                    return Cell::Null;
                }
                let key = by.to_text();
                match choices.iter().find(|(k, _)| *k == key) {
                    Some((_, vs)) if !vs.is_empty() => {
                        let i = self.rng(*stream).below(vs.len() as u64);
                        vs[i as usize].clone()
                    }
                    _ => Cell::Null,
                }
            }
            Node::Zipf { n, zipf, stream } => {
                let mut r = self.rng(*stream);
                let k = match zipf {
                    Some(z) => z.sample(&mut r) - 1,
                    None => r.below(*n),
                };
                Cell::Long(k as i64)
            }
            Node::Format { format, args } => {
                let args: Vec<Cell> = args.iter().map(|a| self.eval(a)).collect();
                let mut s = String::new();
                format.render(&args, &mut s);
                Cell::Str(s)
            }
            Node::Pattern { pattern, stream } => {
                let mut s = String::new();
                pattern.sample(&mut self.rng(*stream), &mut s);
                Cell::Str(s)
            }
            Node::Csv { values } => values[(self.index % values.len() as u64) as usize].clone(),
            Node::Uuid { stream } => {
                let mut r = self.rng(*stream);
                Cell::Str(uuid_v4(r.next_u64(), r.next_u64()))
            }
            Node::Chance { p, stream } => Cell::Bool(self.rng(*stream).f64() < *p),
            Node::Column(i) => match &self.at {
                At::Row { row, .. } => row[*i].clone(),
                _ => Cell::Null,
            },
            Node::Arith { op, lhs, rhs } => {
                let a = self.eval(lhs);
                let b = self.eval(rhs);
                arith(*op, a, b)
            }
            Node::ToStr(of) => match self.eval(of) {
                Cell::Null => Cell::Null,
                v => Cell::Str(v.to_text()),
            },
            Node::ScrambledZipfian {
                scrambled,
                lo,
                last,
                stream,
            } => {
                let mut r = self.rng(*stream);
                self.at_most(*lo, last.as_deref(), || scrambled.draw(r.f64()))
            }
            Node::Zipfian {
                gray,
                lo,
                last,
                stream,
            } => {
                let mut r = self.rng(*stream);
                self.at_most(*lo, last.as_deref(), || gray.draw(r.f64()))
            }
            Node::Latest {
                latest,
                inserted,
                stream,
            } => match self.eval(inserted) {
                Cell::Long(inserted) => latest
                    .draw(inserted, self.rng(*stream).f64())
                    .map_or(Cell::Null, Cell::Long),
                _ => Cell::Null,
            },
            Node::Hotspot { hotspot, stream } => {
                let mut r = self.rng(*stream);
                let u = r.f64();
                Cell::Long(hotspot.draw(u, r.next_u64() as i64))
            }
            Node::ExponentialKey {
                last,
                gamma,
                stream,
            } => match self.eval(last) {
                Cell::Long(last) if last >= 0 => {
                    let mut r = self.rng(*stream);
                    (0..ycsb::MAX_REDRAWS)
                        .find_map(|_| ycsb::exponential_key(last, *gamma, r.f64()))
                        .map_or(Cell::Null, Cell::Long)
                }
                _ => Cell::Null,
            },
            Node::Sequential { lo, span } => {
                Cell::Long(lo.wrapping_add((self.index % span) as i64))
            }
            Node::YcsbKey {
                key,
                ordered,
                zero_padding,
                prefix,
            } => match self.eval(key) {
                Cell::Long(k) => {
                    let mut s = String::with_capacity(prefix.len() + zero_padding.max(&20));
                    ycsb::key_name(k, *ordered, *zero_padding, prefix, &mut s);
                    Cell::Str(s)
                }
                _ => Cell::Null,
            },
            Node::YcsbValue { len, stream } => {
                let mut r = self.rng(*stream);
                let mut s = String::with_capacity(*len);
                // Java's nextInt is the high half of its 64-bit mix; so is this.
                ycsb::random_bytes(*len, || (r.next_u64() >> 32) as i32, &mut s);
                Cell::Str(s)
            }
            Node::Issued(q) => match &self.at {
                At::Instance { issued, .. } => {
                    issued.get(*q).map_or(Cell::Null, |&n| Cell::Long(n as i64))
                }
                _ => Cell::Null,
            },
            Node::Field { of, end } => match self.value(of) {
                V::Window { start, end: e } => Cell::Timestamp(if *end { e } else { start }),
                _ => Cell::Null,
            },
            Node::Window { .. } | Node::Sample { .. } | Node::Let(_) | Node::Bind(_) => {
                match self.value(n) {
                    V::One(c) => c,
                    _ => Cell::Null,
                }
            }
        }
    }

    /// A key from `draw`, drawn again while above `last` (YCSB's `nextKeynum`): at most
    /// `MAX_REDRAWS` draws, then Null, as when `last` is below `lo` or not an integer.
    fn at_most(&mut self, lo: i64, last: Option<&Node>, mut draw: impl FnMut() -> i64) -> Cell {
        let Some(last) = last else {
            return Cell::Long(draw());
        };
        match self.eval(last) {
            Cell::Long(last) if last >= lo => (0..ycsb::MAX_REDRAWS)
                .map(|_| draw())
                .find(|&k| k <= last)
                .map_or(Cell::Null, Cell::Long),
            _ => Cell::Null,
        }
    }

    /// Row 0 of a series: `clamp(start)`, `start` drawn per series. Row i > 0:
    /// `clamp(previous + step)`, `step` drawn at row i. Non-numbers count as 0. In a per-series
    /// column a walk is just `clamp(start)`.
    fn walk(&mut self, start: &Node, step: &Node, bounds: Bounds, slot: usize) -> f64 {
        let (min, max, refill) = bounds;
        let clamp = |v: f64| {
            if v < min {
                min
            } else if v > max {
                max
            } else {
                v
            }
        };
        let per_series = self.row == PER_SERIES;
        if per_series || self.index == 0 {
            let saved = (self.row, self.index);
            (self.row, self.index) = (PER_SERIES, self.series);
            let s = clamp(self.eval(start).as_f64().unwrap_or(0.0));
            (self.row, self.index) = saved;
            if let (false, At::Row { walks, .. }) = (per_series, &mut self.at) {
                walks[slot] = s;
            }
            return s;
        }
        let d = self.eval(step).as_f64().unwrap_or(0.0);
        let At::Row { walks, .. } = &mut self.at else {
            return clamp(d);
        };
        let mut v = clamp(walks[slot] + d);
        if v == min {
            v = refill.unwrap_or(v);
        }
        walks[slot] = v;
        v
    }

    /// `hold`: the series' state, kept or drawn anew at this row.
    fn hold(
        &mut self,
        start: &Node,
        value: &Node,
        (change, stream): (f64, u64),
        slot: usize,
    ) -> f64 {
        let per_series = self.row == PER_SERIES;
        if per_series || self.index == 0 {
            let saved = (self.row, self.index);
            (self.row, self.index) = (PER_SERIES, self.series);
            let s = self.eval(start).as_f64().unwrap_or(0.0);
            (self.row, self.index) = saved;
            if let (false, At::Row { walks, .. }) = (per_series, &mut self.at) {
                walks[slot] = s;
            }
            return s;
        }
        if self.rng(stream).f64() >= change {
            if let At::Row { walks, .. } = &self.at {
                return walks[slot];
            }
        }
        let v = self.eval(value).as_f64().unwrap_or(0.0);
        if let At::Row { walks, .. } = &mut self.at {
            walks[slot] = v;
        }
        v
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
                        at: At::Series,
                    }
                    .eval(value)
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
pub(crate) fn sample_indices(rng: &mut Rng, n: u64, k: u64) -> Vec<u64> {
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

/// RFC 4122 version 4 text from two draws: the 16 bytes are `a` then `b`, big-endian, with the
/// version nibble set to 4 and the variant bits to `10`.
pub(crate) fn uuid_v4(a: u64, b: u64) -> String {
    let a = (a & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000;
    let b = (b & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xFFFF,
        a & 0xFFFF,
        b >> 48,
        b & 0xFFFF_FFFF_FFFF
    )
}

/// `+ - * / %` on cells (docs/rng.md §4.1), for column and bind generators alike. Long with
/// Long wraps on overflow, and `/` or `%` by zero is Null; a Double on either side makes a
/// Double; text + text concatenates; timestamp ± duration is a timestamp, timestamp -
/// timestamp a duration, duration ± duration a duration, duration × or / a number a duration
/// (truncated toward zero). Null in, or any other combination, gives Null.
pub(crate) fn arith(op: Op, a: Cell, b: Cell) -> Cell {
    use Cell::{Double, Duration, Long, Str, Timestamp};
    match (op, a, b) {
        (Op::Add, Str(mut x), Str(y)) => {
            x.push_str(&y);
            Str(x)
        }
        (_, Long(x), Long(y)) => match op {
            Op::Add => Long(x.wrapping_add(y)),
            Op::Sub => Long(x.wrapping_sub(y)),
            Op::Mul => Long(x.wrapping_mul(y)),
            Op::Div if y != 0 => Long(x.wrapping_div(y)),
            Op::Rem if y != 0 => Long(x.wrapping_rem(y)),
            _ => Cell::Null,
        },
        (_, x @ (Long(_) | Double(_)), y @ (Long(_) | Double(_))) => {
            let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            Double(match op {
                Op::Add => x + y,
                Op::Sub => x - y,
                Op::Mul => x * y,
                Op::Div => x / y,
                Op::Rem => x % y,
            })
        }
        (Op::Add, Timestamp(t), Duration(d)) | (Op::Add, Duration(d), Timestamp(t)) => {
            Timestamp(t.wrapping_add(d))
        }
        (Op::Sub, Timestamp(t), Duration(d)) => Timestamp(t.wrapping_sub(d)),
        (Op::Sub, Timestamp(t), Timestamp(u)) => Duration(t.wrapping_sub(u)),
        (Op::Add, Duration(d), Duration(e)) => Duration(d.wrapping_add(e)),
        (Op::Sub, Duration(d), Duration(e)) => Duration(d.wrapping_sub(e)),
        (Op::Mul, Duration(d), Long(n)) | (Op::Mul, Long(n), Duration(d)) => {
            Duration(d.wrapping_mul(n))
        }
        (Op::Div, Duration(d), Long(n)) if n != 0 => Duration(d.wrapping_div(n)),
        (Op::Mul, Duration(d), Double(x)) | (Op::Mul, Double(x), Duration(d)) => {
            Duration((d as f64 * x) as i64)
        }
        (Op::Div, Duration(d), Double(x)) if x != 0.0 => Duration((d as f64 / x) as i64),
        _ => Cell::Null,
    }
}

/// A walk's value as emitted: truncated toward zero to its decimals (`scale` = 10^decimals),
/// as TSBS's `FP` writes `int64(v * 10^p) / 10^p`; the walk's state is not touched.
pub(super) fn truncated(v: f64, scale: Option<f64>) -> f64 {
    match scale {
        Some(s) => (v * s).trunc() / s,
        None => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_has_v4_shape() {
        let u = uuid_v4(u64::MAX, u64::MAX);
        assert_eq!(u, "ffffffff-ffff-4fff-bfff-ffffffffffff");
        let u = uuid_v4(0, 0);
        assert_eq!(u, "00000000-0000-4000-8000-000000000000");
    }

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
    fn arithmetic_rules() {
        use Cell::*;
        assert_eq!(arith(Op::Add, Long(2), Long(3)), Long(5));
        assert_eq!(arith(Op::Div, Long(7), Long(2)), Long(3));
        assert_eq!(arith(Op::Div, Long(7), Long(0)), Null);
        assert_eq!(arith(Op::Mul, Long(2), Double(1.5)), Double(3.0));
        assert_eq!(arith(Op::Add, Timestamp(10), Duration(5)), Timestamp(15));
        assert_eq!(arith(Op::Sub, Timestamp(10), Duration(5)), Timestamp(5));
        assert_eq!(arith(Op::Sub, Timestamp(10), Timestamp(4)), Duration(6));
        assert_eq!(arith(Op::Mul, Duration(10), Long(3)), Duration(30));
        assert_eq!(arith(Op::Add, Str("a".into()), Long(1)), Null);
        assert_eq!(arith(Op::Add, Null, Long(1)), Null);
        assert_eq!(
            arith(Op::Add, Str("a".into()), Str("b".into())),
            Str("ab".into())
        );
        assert_eq!(arith(Op::Mul, Duration(10), Double(1.5)), Duration(15));
        assert_eq!(arith(Op::Div, Duration(10), Double(0.0)), Null);
        assert_eq!(arith(Op::Rem, Long(7), Long(0)), Null);
    }
}
