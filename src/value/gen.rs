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
        /// `decimals = N`: each value emitted truncated toward zero to N decimals (TSBS's
        /// precision); the walk's state keeps full precision.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decimals: Option<u32>,
        /// `refill = V`: a step that leaves the state at `min` sets it to V (TSBS's fuel).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        refill: Option<f64>,
    },
    /// `hold(start, value, change)`: the first row `start`, then each row a fresh `value` with
    /// probability `change`, else the row before's (TSBS's "lazy" value).
    Hold {
        start: Box<Gen>,
        value: Box<Gen>,
        change: f64,
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
    /// YCSB's `zipfian` request distribution over `[lo, hi)`: ScrambledZipfianGenerator(lo,
    /// hi - 1), redrawn while above `last` when given.
    ScrambledZipfian {
        lo: i64,
        hi: i64,
        last: Option<Box<Gen>>,
    },
    /// YCSB's ZipfianGenerator (Gray et al.) over `[lo, hi)`, `lo` the most popular, redrawn
    /// while above `last` when given.
    Zipfian {
        lo: i64,
        hi: i64,
        theta: f64,
        last: Option<Box<Gen>>,
    },
    /// YCSB's `latest`: skewed toward key `records - 1 + inserted`, the newest.
    Latest {
        records: i64,
        inserted: Box<Gen>,
    },
    /// YCSB's `hotspot` over `[lo, hi)`: the lowest `hot_data` of the keys take `hot_ops` of the
    /// draws.
    Hotspot {
        lo: i64,
        hi: i64,
        hot_data: f64,
        hot_ops: f64,
    },
    /// YCSB's `exponential`: `last` minus an exponential draw, `percentile` % of which fall
    /// below `range`.
    ExponentialKey {
        last: Box<Gen>,
        range: f64,
        percentile: f64,
    },
    /// `lo + i mod (hi - lo)`, i the row or the query instance.
    Sequential {
        lo: i64,
        hi: i64,
    },
    /// How many instances of the run's query `query` (at `counted` in the run's list of
    /// queries) its order issued before this one.
    Issued {
        query: String,
        counted: usize,
    },
    /// YCSB's key name of a key number.
    YcsbKey {
        key: Box<Gen>,
        ordered: bool,
        zero_padding: u32,
        prefix: String,
    },
    /// YCSB's field value: `len` bytes as RandomByteIterator makes them.
    YcsbValue {
        len: u32,
    },
}

/// What YCSB's generators can draw with: the checker reports a parameter outside these with its
/// position, and `gen` checks them again (a plan may come from elsewhere).
impl Gen {
    /// YCSB's zipfian constant (`ZipfianGenerator.ZIPFIAN_CONSTANT`), `zipfian`'s default
    /// theta.
    pub const ZIPFIAN_CONSTANT: f64 = 0.99;

    /// The most keys a zipfian's ζ is summed over: `zipfian`'s keys, `latest`'s newest key. ζ
    /// is one term (a `pow`) per key, summed when the run starts, as YCSB does.
    pub const MAX_ZETA_ITEMS: i64 = 1 << 32;

    /// The fewest records `latest` takes: below 3, the zipfian over `records - 1` keys that
    /// YCSB builds has η <= 0 and yields keys outside `[0, newest]`.
    pub const MIN_LATEST_RECORDS: i64 = 3;

    /// The widest zero padding of a key name.
    pub const MAX_ZERO_PADDING: u32 = 64;

    /// The longest `ycsb_value`, in bytes.
    pub const MAX_VALUE_LEN: u32 = 1 << 20;

    /// `hotspot`'s hot and cold set sizes over `[lo, hi)`: the hot set is Java's `(int)` of
    /// `(hi - lo) * hot_data` (truncated, saturated at i32's bounds), the cold set the rest.
    pub fn hotspot_sets(lo: i64, hi: i64, hot_data: f64) -> (i64, i64) {
        let interval = hi.wrapping_sub(lo);
        let hot = i64::from((interval as f64 * hot_data) as i32);
        (hot, interval - hot)
    }

    /// Whether a hotspot can draw: YCSB divides by the size of the set it draws from, so a set
    /// that is drawn from must not be empty.
    pub fn hotspot_fits(lo: i64, hi: i64, hot_data: f64, hot_ops: f64) -> Result<(), String> {
        if !(0.0..=1.0).contains(&hot_data) || !(0.0..=1.0).contains(&hot_ops) {
            return Err("the fractions must be in [0, 1]".into());
        }
        let (hot, cold) = Gen::hotspot_sets(lo, hi, hot_data);
        if hot_ops > 0.0 && hot < 1 {
            return Err("the hot set is empty but drawn from: raise hot_data or the range".into());
        }
        if hot_ops < 1.0 && cold < 1 {
            return Err(
                "the cold set is empty but drawn from: lower hot_data or set hot_ops = 1".into(),
            );
        }
        Ok(())
    }

    /// Calls `f` on this generator and every generator nested in it, depth first.
    pub fn visit(&self, f: &mut impl FnMut(&Gen)) {
        f(self);
        match self {
            Gen::Const {
                value: Value::Gen(g),
            }
            | Gen::Field { of: g, .. }
            | Gen::ToStr { of: g }
            | Gen::Latest { inserted: g, .. }
            | Gen::ExponentialKey { last: g, .. }
            | Gen::YcsbKey { key: g, .. }
            | Gen::ScrambledZipfian { last: Some(g), .. }
            | Gen::Zipfian { last: Some(g), .. }
            | Gen::Sample {
                from: Domain::Series { value: g, .. },
                ..
            } => g.visit(f),
            Gen::Walk {
                start, step: next, ..
            }
            | Gen::Hold {
                start, value: next, ..
            } => {
                start.visit(f);
                next.visit(f);
            }
            Gen::Arith { lhs, rhs, .. } => {
                lhs.visit(f);
                rhs.visit(f);
            }
            Gen::Format { args, .. } => args.iter().for_each(|a| a.visit(f)),
            _ => {}
        }
    }

    /// The columns of the same row this generator reads, in order, with repeats.
    pub fn columns_used(&self, out: &mut Vec<String>) {
        match self {
            Gen::Column { name } => out.push(name.clone()),
            Gen::PickBy { column, .. } => out.push(column.clone()),
            Gen::Walk {
                start, step: next, ..
            }
            | Gen::Hold {
                start, value: next, ..
            } => {
                start.columns_used(out);
                next.columns_used(out);
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
            Gen::ScrambledZipfian { last: Some(g), .. }
            | Gen::Zipfian { last: Some(g), .. }
            | Gen::Latest { inserted: g, .. }
            | Gen::ExponentialKey { last: g, .. }
            | Gen::YcsbKey { key: g, .. } => g.columns_used(out),
            _ => {}
        }
    }
}

/// Optional parameters are printed, named, when they differ from their defaults
/// (docs/language.md's table of built-in functions).
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
                decimals,
                refill,
            } => {
                write!(
                    f,
                    "walk({start}, {step}, clamp = {}..{}",
                    super::fmt_float(*min),
                    super::fmt_float(*max)
                )?;
                if let Some(d) = decimals {
                    write!(f, ", decimals = {d}")?;
                }
                if let Some(r) = refill {
                    write!(f, ", refill = {}", super::fmt_float(*r))?;
                }
                f.write_str(")")
            }
            Gen::Hold {
                start,
                value,
                change,
            } => write!(
                f,
                "hold({start}, {value}, change = {}%)",
                super::fmt_float(change * 100.0)
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
            Gen::ScrambledZipfian { lo, hi, last } => {
                write!(f, "scrambled_zipfian({lo}, {hi}")?;
                if let Some(l) = last {
                    write!(f, ", last = {l}")?;
                }
                f.write_str(")")
            }
            Gen::Zipfian {
                lo,
                hi,
                theta,
                last,
            } => {
                write!(f, "zipfian({lo}, {hi}")?;
                if *theta != Gen::ZIPFIAN_CONSTANT {
                    write!(f, ", theta = {}", super::fmt_float(*theta))?;
                }
                if let Some(l) = last {
                    write!(f, ", last = {l}")?;
                }
                f.write_str(")")
            }
            Gen::Latest { records, inserted } => write!(f, "latest({records}, {inserted})"),
            Gen::Hotspot {
                lo,
                hi,
                hot_data,
                hot_ops,
            } => {
                write!(f, "hotspot({lo}, {hi}")?;
                if *hot_data != 0.2 {
                    write!(f, ", hot_data = {}", super::fmt_float(*hot_data))?;
                }
                if *hot_ops != 0.8 {
                    write!(f, ", hot_ops = {}", super::fmt_float(*hot_ops))?;
                }
                f.write_str(")")
            }
            Gen::ExponentialKey {
                last,
                range,
                percentile,
            } => {
                write!(f, "exponential_key({last}, {}", super::fmt_float(*range))?;
                if *percentile != 95.0 {
                    write!(f, ", percentile = {}", super::fmt_float(*percentile))?;
                }
                f.write_str(")")
            }
            Gen::Sequential { lo, hi } => write!(f, "sequential({lo}, {hi})"),
            Gen::Issued { query, .. } => write!(f, "issued({query})"),
            Gen::YcsbKey {
                key,
                ordered,
                zero_padding,
                prefix,
            } => {
                write!(f, "ycsb_key({key}")?;
                if *ordered {
                    f.write_str(", ordered = true")?;
                }
                if *zero_padding != 1 {
                    write!(f, ", zero_padding = {zero_padding}")?;
                }
                if prefix != "user" {
                    write!(f, ", prefix = {prefix:?}")?;
                }
                f.write_str(")")
            }
            Gen::YcsbValue { len } => write!(f, "ycsb_value({len})"),
        }
    }
}
