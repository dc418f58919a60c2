//! How big a value is, about, in memory: the bytes of its text plus the size of every value,
//! item, map entry and generator node it holds; and how deeply those nest. The checker bounds both wherever it builds a value
//! out of others, because a value doubled by a few params outgrows any memory, and every later
//! step (types, the plan, the generator) walks a value recursively. The walk stops as soon as a
//! bound is passed, so measuring costs no more than the bound.

use super::{Domain, Gen, Text, TextPart, Value};

/// Which bound a value passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Excess {
    /// More than the length allowed.
    Long,
    /// Nested deeper than allowed.
    Deep,
}

impl Value {
    /// The value's length, if it is at most `max_len` long and nests at most `max_depth` levels.
    pub fn measure(&self, max_len: u64, max_depth: usize) -> Result<u64, Excess> {
        let mut w = Walk {
            len: 0,
            max_len,
            max_depth,
        };
        w.value(self, 0)?;
        Ok(w.len)
    }
}

impl Text {
    /// Bytes of literal text and environment variable names.
    pub fn len(&self) -> u64 {
        self.parts
            .iter()
            .map(|p| match p {
                TextPart::Lit(s) => s.len() as u64,
                TextPart::Env { name, default } => {
                    (name.len() + default.as_ref().map_or(0, String::len)) as u64
                }
            })
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

const VALUE: u64 = std::mem::size_of::<Value>() as u64;
const GEN: u64 = std::mem::size_of::<Gen>() as u64;

struct Walk {
    len: u64,
    max_len: u64,
    max_depth: usize,
}

impl Walk {
    fn add(&mut self, n: u64) -> Result<(), Excess> {
        self.len = self.len.saturating_add(n);
        if self.len > self.max_len {
            return Err(Excess::Long);
        }
        Ok(())
    }

    fn enter(&self, depth: usize) -> Result<usize, Excess> {
        if depth >= self.max_depth {
            return Err(Excess::Deep);
        }
        Ok(depth + 1)
    }

    fn value(&mut self, v: &Value, depth: usize) -> Result<(), Excess> {
        self.add(VALUE)?;
        match v {
            Value::Str(t) => self.add(t.len()),
            Value::Symbol(s) => self.add(s.len() as u64),
            Value::List(items) => {
                let d = self.enter(depth)?;
                items.iter().try_for_each(|x| self.value(x, d))
            }
            Value::Map(entries) => {
                let d = self.enter(depth)?;
                entries.iter().try_for_each(|(k, x)| {
                    self.add(k.len() as u64 + 24)?;
                    self.value(x, d)
                })
            }
            Value::Gen(g) => self.gen(g, depth),
            Value::Int(_)
            | Value::Float(_)
            | Value::Bool(_)
            | Value::None
            | Value::Duration(_)
            | Value::Timestamp(_)
            | Value::Rate(_)
            | Value::Bandwidth(_)
            | Value::Size(_)
            | Value::Percent(_)
            | Value::Range(..) => Ok(()),
        }
    }

    fn values(&mut self, vs: &[Value], depth: usize) -> Result<(), Excess> {
        vs.iter().try_for_each(|x| self.value(x, depth))
    }

    fn gen(&mut self, g: &Gen, depth: usize) -> Result<(), Excess> {
        let d = self.enter(depth)?;
        self.add(GEN)?;
        match g {
            Gen::Const { value } => self.value(value, d),
            Gen::Uniform { lo, hi } => {
                self.value(lo, d)?;
                self.value(hi, d)
            }
            Gen::Walk {
                start, step: next, ..
            }
            | Gen::Hold {
                start, value: next, ..
            } => {
                self.gen(start, d)?;
                self.gen(next, d)
            }
            Gen::Pick { values } => self.values(values, d),
            Gen::Weighted { values, weights } => {
                self.add(8 * weights.len() as u64)?;
                self.values(values, d)
            }
            Gen::PickBy { column, choices } => {
                self.add(column.len() as u64)?;
                choices.iter().try_for_each(|(k, vs)| {
                    self.add(k.len() as u64 + 1)?;
                    self.values(vs, d)
                })
            }
            Gen::Format { format, args } => {
                self.add(format.len() as u64)?;
                args.iter().try_for_each(|a| self.gen(a, d))
            }
            Gen::Pattern { pattern } => self.add(pattern.len() as u64),
            Gen::Csv { path, column, .. } => self.add((path.len() + column.len()) as u64),
            Gen::Column { name } | Gen::Let { name } => self.add(name.len() as u64),
            Gen::Window { from, to, length } => {
                self.value(from, d)?;
                self.value(to, d)?;
                self.value(length, d)
            }
            Gen::Sample { from, .. } => match from {
                Domain::Series { value, .. } => self.gen(value, d),
                Domain::List { values } => self.values(values, d),
            },
            Gen::Field { of, .. } | Gen::ToStr { of } => self.gen(of, d),
            Gen::Arith { lhs, rhs, .. } => {
                self.gen(lhs, d)?;
                self.gen(rhs, d)
            }
            Gen::ScrambledZipfian { last: Some(g), .. }
            | Gen::Zipfian { last: Some(g), .. }
            | Gen::Latest { inserted: g, .. }
            | Gen::ExponentialKey { last: g, .. } => self.gen(g, d),
            Gen::YcsbKey { key, prefix, .. } => {
                self.add(prefix.len() as u64)?;
                self.gen(key, d)
            }
            Gen::Issued { query, .. } => self.add(query.len() as u64),
            Gen::SeriesIndex
            | Gen::Seq { .. }
            | Gen::Normal { .. }
            | Gen::Zipf { .. }
            | Gen::Uuid
            | Gen::Chance { .. }
            | Gen::Bind { .. }
            | Gen::ScrambledZipfian { .. }
            | Gen::Zipfian { .. }
            | Gen::Hotspot { .. }
            | Gen::Sequential { .. }
            | Gen::YcsbValue { .. } => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_items_count() {
        let v = Value::List(vec![Value::Str(Text::lit("abc")), Value::Int(1)]);
        assert_eq!(v.measure(1000, 10), Ok(3 * VALUE + 3));
        assert_eq!(v.measure(3 * VALUE + 2, 10), Err(Excess::Long));
    }

    #[test]
    fn nesting_counts_lists_and_generators() {
        let mut v = Value::Int(1);
        for _ in 0..5 {
            v = Value::List(vec![v]);
        }
        assert!(v.measure(1000, 5).is_ok());
        assert_eq!(v.measure(1000, 4), Err(Excess::Deep));
        let mut g = Gen::SeriesIndex;
        for _ in 0..5 {
            g = Gen::ToStr { of: Box::new(g) };
        }
        assert!(Value::Gen(Box::new(g.clone())).measure(1000, 6).is_ok());
        assert_eq!(Value::Gen(Box::new(g)).measure(1000, 5), Err(Excess::Deep));
    }
}
