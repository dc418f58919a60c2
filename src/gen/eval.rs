//! Evaluates one compiled `Node` at one (series, index), reading the row's earlier columns and
//! the series' walk state. docs/rng.md states each rule in prose; this is the same rule in code.

use super::cell::Cell;
use super::node::{Node, Op};
use super::rng::{Rng, PER_SERIES};

/// Where a node is evaluated.
pub(super) struct Ctx<'a> {
    pub seed: u64,
    pub series: u64,
    /// The row's index within its series (per-row columns), or the series index (per-series).
    pub index: u64,
    pub per_series: bool,
    /// The row so far: every column this one depends on is already filled in.
    pub row: &'a [Cell],
    /// This series' walk states, one per walk node (unused per series).
    pub walks: &'a mut [f64],
}

impl Ctx<'_> {
    /// The generator's own random sequence here: the row counter is `PER_SERIES` for a
    /// per-series draw, else the row's index within its series.
    fn rng(&self, stream: u64) -> Rng {
        let row = if self.per_series {
            PER_SERIES
        } else {
            self.index
        };
        Rng::new(self.seed, stream, self.series, row)
    }

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
                slot,
            } => Cell::Double(self.walk(start, step, *min, *max, *slot)),
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
                let by = &self.row[*column];
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
            Node::Column(i) => self.row[*i].clone(),
            Node::Arith { op, lhs, rhs } => {
                let a = self.eval(lhs);
                let b = self.eval(rhs);
                arith(*op, a, b)
            }
            Node::ToStr(of) => match self.eval(of) {
                Cell::Null => Cell::Null,
                v => Cell::Str(v.to_text()),
            },
        }
    }

    /// Row 0 of a series: `clamp(start)`, `start` drawn per series. Row i > 0:
    /// `clamp(previous + step)`, `step` drawn at row i. Non-numbers count as 0. In a per-series
    /// column a walk is just `clamp(start)`.
    fn walk(&mut self, start: &Node, step: &Node, min: f64, max: f64, slot: usize) -> f64 {
        let clamp = |v: f64| {
            if v < min {
                min
            } else if v > max {
                max
            } else {
                v
            }
        };
        if self.per_series || self.index == 0 {
            let saved = (self.per_series, self.index);
            self.per_series = true;
            self.index = self.series;
            let s = clamp(self.eval(start).as_f64().unwrap_or(0.0));
            (self.per_series, self.index) = saved;
            if !self.per_series {
                self.walks[slot] = s;
            }
            return s;
        }
        let d = self.eval(step).as_f64().unwrap_or(0.0);
        let v = clamp(self.walks[slot] + d);
        self.walks[slot] = v;
        v
    }
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
    }
}
