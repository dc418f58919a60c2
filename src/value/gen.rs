//! Generator programs as plan data: what a column or a bind draws, with every parameter
//! resolved. The gen runtime compiles these into columnar loops; the listing prints them in the
//! syntax they were written in.

use std::fmt;

use serde::Serialize;

use super::Value;

/// The type a generator yields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ty {
    Long,
    Double,
    Bool,
    Str,
    Timestamp,
    Duration,
    List(Box<Ty>),
    /// A time window with `.start` and `.end`.
    Window,
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Long => f.write_str("an integer"),
            Ty::Double => f.write_str("a number"),
            Ty::Bool => f.write_str("a boolean"),
            Ty::Str => f.write_str("a string"),
            Ty::Timestamp => f.write_str("a timestamp"),
            Ty::Duration => f.write_str("a duration"),
            Ty::List(t) => write!(f, "a list of {t}"),
            Ty::Window => f.write_str("a time window"),
        }
    }
}

/// Where `sample` draws from: the values of a schema's series column (drawn by series index,
/// like TSBS's random hosts), or a literal list.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Domain {
    Series {
        schema: String,
        column: String,
        value: Box<Gen>,
        count: u64,
    },
    List {
        values: Vec<Value>,
    },
}

impl Domain {
    pub fn len(&self) -> u64 {
        match self {
            Domain::Series { count, .. } => *count,
            Domain::List { values } => values.len() as u64,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "gen", rename_all = "snake_case")]
pub enum Gen {
    Const {
        value: Value,
    },
    /// The series index `n` of a series column.
    SeriesIndex,
    /// `start + step * i`, i counting rows of the series (or of the schema without series), or
    /// query instances for a bind.
    Seq {
        start: i64,
        step: i64,
    },
    /// Uniform over `[lo, hi)`: integers, numbers or timestamps.
    Uniform {
        lo: Value,
        hi: Value,
    },
    Normal {
        mean: f64,
        stddev: f64,
    },
    /// A random walk: the first value from `start`, then `+ step` each row, clamped.
    Walk {
        start: Box<Gen>,
        step: Box<Gen>,
        min: f64,
        max: f64,
    },
    Pick {
        values: Vec<Value>,
    },
    Weighted {
        values: Vec<Value>,
        weights: Vec<f64>,
    },
    /// Picks from the list that another column's value selects (TSBS datacenter by region).
    PickBy {
        column: String,
        choices: Vec<(String, Vec<Value>)>,
    },
    /// Zipf over `[0, n)` with exponent `s`; 0 is the most frequent.
    Zipf {
        n: i64,
        s: f64,
    },
    Format {
        format: String,
        args: Vec<Gen>,
    },
    /// A string from a small regular language: literals, `[a-z]` classes, `{m,n}`, `?`.
    Pattern {
        pattern: String,
    },
    /// Values of a CSV column, in file order, cycling.
    Csv {
        path: String,
        column: String,
        rows: u64,
    },
    Uuid,
    /// `true` with probability `p`.
    Chance {
        p: f64,
    },
    /// Another column of the same row.
    Column {
        name: String,
    },
    /// A window of `length` with its start uniform in `[from, to - length]`, truncated to whole
    /// seconds (TSBS RandWindow).
    Window {
        from: Value,
        to: Value,
        length: Value,
    },
    /// `k` distinct values, without replacement, in draw order.
    Sample {
        from: Domain,
        k: u64,
    },
    /// `.start` or `.end` of a window.
    Field {
        of: Box<Gen>,
        field: String,
    },
    /// The value of another bind of the same query instance.
    Bind {
        index: u32,
    },
    /// The value of a `let` of the same query instance.
    Let {
        name: String,
    },
    Arith {
        op: String,
        lhs: Box<Gen>,
        rhs: Box<Gen>,
    },
    /// Decimal text of an integer generator.
    ToStr {
        of: Box<Gen>,
    },
}

impl Gen {
    /// The columns of the same row this generator reads, in order, with repeats.
    pub fn columns_used(&self, out: &mut Vec<String>) {
        match self {
            Gen::Column { name } => out.push(name.clone()),
            Gen::PickBy { column, .. } => out.push(column.clone()),
            Gen::Walk { start, step, .. } => {
                start.columns_used(out);
                step.columns_used(out);
            }
            Gen::Format { args, .. } => args.iter().for_each(|a| a.columns_used(out)),
            Gen::Field { of, .. } | Gen::ToStr { of } => of.columns_used(out),
            Gen::Arith { lhs, rhs, .. } => {
                lhs.columns_used(out);
                rhs.columns_used(out);
            }
            Gen::Sample {
                from: Domain::Series { value, .. },
                ..
            } => value.columns_used(out),
            _ => {}
        }
    }
}

impl fmt::Display for Gen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn list(f: &mut fmt::Formatter<'_>, vs: &[Value]) -> fmt::Result {
            f.write_str("[")?;
            for (i, v) in vs.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{v}")?;
            }
            f.write_str("]")
        }
        match self {
            Gen::Const { value } => write!(f, "{value}"),
            Gen::SeriesIndex => f.write_str("n"),
            Gen::Seq { start, step } => write!(f, "seq({start}, {step})"),
            Gen::Uniform { lo, hi } => write!(f, "uniform({lo}, {hi})"),
            Gen::Normal { mean, stddev } => write!(
                f,
                "normal({}, {})",
                super::fmt_float(*mean),
                super::fmt_float(*stddev)
            ),
            Gen::Walk {
                start,
                step,
                min,
                max,
            } => write!(
                f,
                "walk({start}, {step}, clamp = {}..{})",
                super::fmt_float(*min),
                super::fmt_float(*max)
            ),
            Gen::Pick { values } => {
                f.write_str("pick(")?;
                list(f, values)?;
                f.write_str(")")
            }
            Gen::Weighted { values, weights } => {
                f.write_str("weighted(")?;
                list(f, values)?;
                f.write_str(", [")?;
                for (i, w) in weights.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{w}")?;
                }
                f.write_str("])")
            }
            Gen::PickBy { column, choices } => {
                write!(f, "pick_by({column}, {{")?;
                for (i, (k, vs)) in choices.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k:?}: ")?;
                    list(f, vs)?;
                }
                f.write_str("})")
            }
            Gen::Zipf { n, s } => write!(f, "zipf({n}, {})", super::fmt_float(*s)),
            Gen::Format { format, args } => {
                write!(f, "format({format:?}")?;
                for a in args {
                    write!(f, ", {a}")?;
                }
                f.write_str(")")
            }
            Gen::Pattern { pattern } => write!(f, "pattern({pattern:?})"),
            Gen::Csv { path, column, rows } => write!(f, "csv({path:?}, {column:?}) [{rows} rows]"),
            Gen::Uuid => f.write_str("uuid()"),
            Gen::Chance { p } => write!(f, "chance({p})"),
            Gen::Column { name } => f.write_str(name),
            Gen::Window { from, to, length } => write!(f, "window({from}, {to}, {length})"),
            Gen::Sample { from, k } => match from {
                Domain::Series {
                    schema,
                    column,
                    count,
                    ..
                } => write!(f, "sample({schema}.{column} [{count} values], {k})"),
                Domain::List { values } => {
                    f.write_str("sample(")?;
                    list(f, values)?;
                    write!(f, ", {k})")
                }
            },
            Gen::Field { of, field } => write!(f, "{of}.{field}"),
            Gen::Bind { index } => write!(f, "${index}"),
            Gen::Let { name } => f.write_str(name),
            Gen::Arith { op, lhs, rhs } => write!(f, "({lhs} {op} {rhs})"),
            Gen::ToStr { of } => write!(f, "string({of})"),
        }
    }
}
