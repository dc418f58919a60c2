//! `plan::Gen` -> `Node`, for every place a generator is drawn: a schema column, a query's
//! lets, binds and `route by`, and a series column drawn for `sample`. Constants are converted,
//! streams named (docs/rng.md §2, §8.1), formats and patterns parsed, CSV columns read, and
//! names resolved to slots; what only one place has (a row's columns and walks, a query's
//! lets, binds and windows) is checked against [`Within`]. Every error a generator can have is
//! found here; `eval.rs` draws.

use std::collections::HashMap;

use super::cell::Cell;
use super::format::Format;
use super::node::{Node, Op, SampleFrom, Shape};
use super::pattern::Pattern;
use super::program::ReadFile;
use super::rng::Zipf;
use super::route::nested_stream;
use super::ycsb::{self, Gray, Hotspot, Latest, Scrambled};
use crate::plan::{Domain, Gen};
use crate::value::Value;

/// Where the generator being compiled is drawn.
pub(crate) enum Within<'a> {
    /// A schema column: the schema's columns by name, and the walks numbered so far.
    Column {
        schema: &'a str,
        names: &'a HashMap<&'a str, usize>,
        walks: &'a mut usize,
    },
    /// A query's let, bind or `route by`: its lets so far and its bound placeholders.
    Query {
        lets: &'a [(String, Shape)],
        binds: &'a [Option<Shape>],
    },
    /// A series column's generator, drawn per series for `sample`: `n`, and nothing of a row
    /// or of a query.
    Series,
}

/// Compiles one generator. Streams are `nested_stream(prefix, name, path)`:
/// `"<prefix>.<name>/<k>..."`, the prefix a schema's name or `query:<Q>`.
pub(crate) struct Compiler<'a> {
    pub read_file: ReadFile<'a>,
    pub prefix: &'a str,
    pub name: &'a str,
    pub within: Within<'a>,
}

impl Compiler<'_> {
    pub fn compile(&mut self, g: &Gen) -> Result<(Node, Shape), String> {
        self.node(g, &mut Vec::new())
    }

    /// An argument at position `k`: one value (not a list, not a window).
    fn child(&mut self, g: &Gen, path: &mut Vec<usize>, k: usize) -> Result<Node, String> {
        path.push(k);
        let out = self.node(g, path);
        path.pop();
        match out? {
            (n, Shape::One) => Ok(n),
            (_, Shape::List) => Err(format!("`{g}` is a list, which cannot be used here")),
            (_, Shape::Window) => Err(format!("`{g}` is a window: use its .start or .end")),
        }
    }

    fn node(&mut self, g: &Gen, path: &mut Vec<usize>) -> Result<(Node, Shape), String> {
        let stream = nested_stream(self.prefix, self.name, path);
        let one = |n: Node| Ok((n, Shape::One));
        match g {
            Gen::Const { value } => match value {
                Value::Gen(inner) => self.node(inner, path),
                v => one(Node::Const(constant(v)?)),
            },
            Gen::SeriesIndex => match self.within {
                Within::Query { .. } => Err("`n` only exists in a series column".into()),
                _ => one(Node::SeriesIndex),
            },
            Gen::Seq { start, step } => one(Node::Seq {
                start: *start,
                step: *step,
            }),
            Gen::Uniform { lo, hi } => one(uniform(lo, hi, stream)?),
            Gen::Normal { mean, stddev } => {
                if !mean.is_finite() || !stddev.is_finite() || *stddev < 0.0 {
                    return Err(format!("{g} needs a finite mean and stddev >= 0"));
                }
                one(Node::Normal {
                    mean: *mean,
                    stddev: *stddev,
                    stream,
                })
            }
            Gen::Pick { values } => {
                if values.is_empty() {
                    return Err("pick from an empty list".into());
                }
                one(Node::Pick {
                    values: constants(values)?,
                    stream,
                })
            }
            Gen::Weighted { values, weights } => one(weighted(values, weights, stream)?),
            Gen::Zipf { n, s } => {
                if *n < 1 || !s.is_finite() || *s < 0.0 {
                    return Err(format!("zipf({n}, {s}) needs n >= 1 and a finite s >= 0"));
                }
                let n = *n as u64;
                one(Node::Zipf {
                    n,
                    zipf: (*s > 0.0).then(|| Zipf::new(n, *s)),
                    stream,
                })
            }
            Gen::Format { format, args } => {
                let format = Format::parse(format)?;
                if format.arity() != args.len() {
                    return Err(format!(
                        "the format takes {} arguments but {} are given",
                        format.arity(),
                        args.len()
                    ));
                }
                let args = args
                    .iter()
                    .enumerate()
                    .map(|(k, a)| self.child(a, path, k))
                    .collect::<Result<_, _>>()?;
                one(Node::Format { format, args })
            }
            Gen::Pattern { pattern } => one(Node::Pattern {
                pattern: Pattern::parse(pattern)?,
                stream,
            }),
            Gen::Csv {
                path: file, column, ..
            } => one(Node::Csv {
                values: read_csv_column(self.read_file, file, column)?,
            }),
            Gen::Uuid => one(Node::Uuid { stream }),
            Gen::Chance { p } => {
                if p.is_nan() {
                    return Err("chance(NaN)".into());
                }
                one(Node::Chance { p: *p, stream })
            }
            Gen::Arith { op, lhs, rhs } => {
                let op = match op.as_str() {
                    "+" => Op::Add,
                    "-" => Op::Sub,
                    "*" => Op::Mul,
                    "/" => Op::Div,
                    "%" => Op::Rem,
                    other => return Err(format!("unsupported operator `{other}`")),
                };
                one(Node::Arith {
                    op,
                    lhs: Box::new(self.child(lhs, path, 0)?),
                    rhs: Box::new(self.child(rhs, path, 1)?),
                })
            }
            Gen::ToStr { of } => one(Node::ToStr(Box::new(self.child(of, path, 0)?))),
            Gen::ScrambledZipfian { .. }
            | Gen::Zipfian { .. }
            | Gen::Latest { .. }
            | Gen::Hotspot { .. }
            | Gen::ExponentialKey { .. }
            | Gen::Sequential { .. }
            | Gen::YcsbKey { .. }
            | Gen::YcsbValue { .. } => one(self.ycsb(g, path)?),
            Gen::Issued { counted, .. } => match self.within {
                Within::Query { .. } => one(Node::Issued(*counted)),
                _ => Err(format!(
                    "`{g}` counts a query run's instances: only a query's binds can use it"
                )),
            },
            Gen::Walk { .. } | Gen::Hold { .. } | Gen::PickBy { .. } | Gen::Column { .. } => {
                self.row_gen(g, path)
            }
            Gen::Window { .. }
            | Gen::Sample { .. }
            | Gen::Field { .. }
            | Gen::Bind { .. }
            | Gen::Let { .. } => self.query_gen(g, path),
        }
    }

    /// YCSB's key choosers, key names and values (`ycsb.rs`), their parameters checked again
    /// (the checker reports them with positions; a plan built otherwise must not panic here).
    fn ycsb(&mut self, g: &Gen, path: &mut Vec<usize>) -> Result<Node, String> {
        let stream = nested_stream(self.prefix, self.name, path);
        let range = |lo: i64, hi: i64, most: i64| {
            if lo < hi && hi.checked_sub(lo).is_some_and(|n| n <= most) {
                Ok(())
            } else {
                Err(format!(
                    "{g}: the range needs lo < hi and at most {most} keys"
                ))
            }
        };
        Ok(match g {
            Gen::ScrambledZipfian { lo, hi, last } => {
                range(*lo, *hi, i64::MAX)?;
                Node::ScrambledZipfian {
                    scrambled: Scrambled::new(*lo, *hi),
                    lo: *lo,
                    last: self.opt_child(last.as_deref(), path, 2)?,
                    stream,
                }
            }
            Gen::Zipfian {
                lo,
                hi,
                theta,
                last,
            } => {
                range(*lo, *hi, Gen::MAX_ZETA_ITEMS)?;
                if !(*theta > 0.0 && *theta < 1.0) {
                    return Err(format!("{g}: theta must be in (0, 1)"));
                }
                Node::Zipfian {
                    gray: Gray::new(*lo, *hi - 1, *theta),
                    lo: *lo,
                    last: self.opt_child(last.as_deref(), path, 3)?,
                    stream,
                }
            }
            Gen::Latest { records, inserted } => {
                if !(Gen::MIN_LATEST_RECORDS..=Gen::MAX_ZETA_ITEMS).contains(records) {
                    return Err(format!(
                        "{g}: the record count must be in {}..={}",
                        Gen::MIN_LATEST_RECORDS,
                        Gen::MAX_ZETA_ITEMS
                    ));
                }
                Node::Latest {
                    latest: Latest::new(*records),
                    inserted: Box::new(self.child(inserted, path, 1)?),
                    stream,
                }
            }
            Gen::Hotspot {
                lo,
                hi,
                hot_data,
                hot_ops,
            } => {
                range(*lo, *hi, i64::MAX)?;
                if let Err(why) = Gen::hotspot_fits(*lo, *hi, *hot_data, *hot_ops) {
                    return Err(format!("{g}: {why}"));
                }
                Node::Hotspot {
                    hotspot: Hotspot::new(*lo, *hi, *hot_data, *hot_ops),
                    stream,
                }
            }
            Gen::ExponentialKey {
                last,
                range,
                percentile,
            } => {
                if !(range.is_finite() && *range > 0.0 && *percentile > 0.0 && *percentile < 100.0)
                {
                    return Err(format!(
                        "{g}: needs a range > 0 and a percentile in (0, 100)"
                    ));
                }
                Node::ExponentialKey {
                    last: Box::new(self.child(last, path, 0)?),
                    gamma: ycsb::exponential_gamma(*percentile, *range),
                    stream,
                }
            }
            Gen::Sequential { lo, hi } => {
                range(*lo, *hi, i64::MAX)?;
                Node::Sequential {
                    lo: *lo,
                    span: hi.wrapping_sub(*lo) as u64,
                }
            }
            Gen::YcsbKey {
                key,
                ordered,
                zero_padding,
                prefix,
            } => {
                if *zero_padding > Gen::MAX_ZERO_PADDING {
                    return Err(format!(
                        "{g}: zero_padding is at most {}",
                        Gen::MAX_ZERO_PADDING
                    ));
                }
                Node::YcsbKey {
                    key: Box::new(self.child(key, path, 0)?),
                    ordered: *ordered,
                    zero_padding: *zero_padding as usize,
                    prefix: prefix.clone(),
                }
            }
            Gen::YcsbValue { len } => {
                if *len > Gen::MAX_VALUE_LEN {
                    return Err(format!("{g}: at most {} bytes", Gen::MAX_VALUE_LEN));
                }
                Node::YcsbValue {
                    len: *len as usize,
                    stream,
                }
            }
            _ => unreachable!("only YCSB's generators come here"),
        })
    }

    fn opt_child(
        &mut self,
        g: Option<&Gen>,
        path: &mut Vec<usize>,
        k: usize,
    ) -> Result<Option<Box<Node>>, String> {
        g.map(|g| self.child(g, path, k).map(Box::new)).transpose()
    }

    /// The generators that read a row: another column, or the series' walk state.
    fn row_gen(&mut self, g: &Gen, path: &mut Vec<usize>) -> Result<(Node, Shape), String> {
        let stream = nested_stream(self.prefix, self.name, path);
        let (names, schema) = match &self.within {
            Within::Column { names, schema, .. } => (*names, *schema),
            _ if matches!(g, Gen::Walk { .. } | Gen::Hold { .. }) => {
                return Err(format!(
                    "`{g}` cannot be drawn here: it runs through rows in order, and query \
                     instances are drawn independently of each other"
                ))
            }
            _ => {
                return Err(format!(
                    "`{g}` reads another column of a row, which a query does not have"
                ))
            }
        };
        let column_index = |name: &str| {
            names
                .get(name)
                .copied()
                .ok_or_else(|| format!("no column `{name}` in schema `{schema}`"))
        };
        let node = match g {
            Gen::Column { name } => Node::Column(column_index(name)?),
            Gen::PickBy { column, choices } => Node::PickBy {
                column: column_index(column)?,
                choices: choices
                    .iter()
                    .map(|(k, vs)| Ok((k.clone(), constants(vs)?)))
                    .collect::<Result<_, String>>()?,
                stream,
            },
            Gen::Walk {
                start,
                step,
                min,
                max,
                decimals,
                refill,
            } => {
                if min.is_nan() || max.is_nan() || min > max {
                    return Err(format!("walk clamp {min}..{max} is empty"));
                }
                let start = Box::new(self.child(start, path, 0)?);
                let step = Box::new(self.child(step, path, 1)?);
                let Within::Column { walks, .. } = &mut self.within else {
                    unreachable!("matched above");
                };
                let slot = **walks;
                **walks += 1;
                Node::Walk {
                    start,
                    step,
                    min: *min,
                    max: *max,
                    scale: decimals.map(|d| 10f64.powi(d as i32)),
                    slot,
                    refill: *refill,
                }
            }
            Gen::Hold {
                start,
                value,
                change,
            } => {
                let start = Box::new(self.child(start, path, 0)?);
                let value = Box::new(self.child(value, path, 1)?);
                let Within::Column { walks, .. } = &mut self.within else {
                    unreachable!("matched above");
                };
                let slot = **walks;
                **walks += 1;
                Node::Hold {
                    start,
                    value,
                    change: *change,
                    stream,
                    slot,
                }
            }
            _ => unreachable!("only row generators come here"),
        };
        Ok((node, Shape::One))
    }

    /// The query generators: windows, samples, `.start`/`.end`, lets and `$n`.
    fn query_gen(&mut self, g: &Gen, path: &mut Vec<usize>) -> Result<(Node, Shape), String> {
        let stream = nested_stream(self.prefix, self.name, path);
        let (lets, binds) = match &self.within {
            Within::Query { lets, binds } => (*lets, *binds),
            Within::Column { .. } => {
                return Err(format!(
                    "`{g}` is a query generator, not allowed in a schema column"
                ))
            }
            Within::Series => return Err(format!("`{g}` cannot generate a series column")),
        };
        match g {
            Gen::Window { from, to, length } => {
                let (Value::Timestamp(from), Value::Timestamp(to), Value::Duration(length)) =
                    (from, to, length)
                else {
                    return Err(format!("{g} needs two timestamps and a duration"));
                };
                let last = to
                    .checked_sub(*length)
                    .filter(|last| *last > *from && *length > 0);
                let Some(last) = last else {
                    return Err(format!("{g}: the window does not fit between its bounds"));
                };
                Ok((
                    Node::Window {
                        from: *from,
                        last,
                        length: *length,
                        stream,
                    },
                    Shape::Window,
                ))
            }
            Gen::Sample { from, k } => {
                let from = match from {
                    Domain::List { values } => SampleFrom::List(constants(values)?),
                    Domain::Series {
                        schema,
                        column,
                        value,
                        count,
                    } => {
                        // The series column's own streams, so the values are the loaded ones.
                        let mut c = Compiler {
                            read_file: self.read_file,
                            prefix: schema,
                            name: column,
                            within: Within::Series,
                        };
                        let (value, _) = c
                            .compile(value)
                            .map_err(|e| format!("series column {schema}.{column}: {e}"))?;
                        SampleFrom::Series {
                            value: Box::new(value),
                            count: *count,
                        }
                    }
                };
                let len = match &from {
                    SampleFrom::List(vs) => vs.len() as u64,
                    SampleFrom::Series { count, .. } => *count,
                };
                if *k < 1 || *k > len {
                    return Err(format!("cannot sample {k} distinct values out of {len}"));
                }
                Ok((
                    Node::Sample {
                        from,
                        k: *k,
                        stream,
                    },
                    Shape::List,
                ))
            }
            Gen::Field { of, field } => {
                let end = match field.as_str() {
                    "start" => false,
                    "end" => true,
                    other => return Err(format!("a window has no field `{other}`")),
                };
                path.push(0);
                let of = self.node(of, path);
                path.pop();
                match of? {
                    (of, Shape::Window) => Ok((
                        Node::Field {
                            of: Box::new(of),
                            end,
                        },
                        Shape::One,
                    )),
                    _ => Err(format!("`{g}`: only a window has .{field}")),
                }
            }
            Gen::Let { name } => match lets.iter().position(|(n, _)| n == name) {
                Some(slot) => Ok((Node::Let(slot), lets[slot].1)),
                None => Err(format!(
                    "`{name}` is not a let of this query declared above"
                )),
            },
            Gen::Bind { index } => {
                let slot = (*index as usize).wrapping_sub(1);
                match binds.get(slot) {
                    Some(Some(shape)) => Ok((Node::Bind(slot), *shape)),
                    _ => Err(format!("`${index}` is not bound before this point")),
                }
            }
            _ => unreachable!("only query generators come here"),
        }
    }
}

fn weighted(values: &[Value], weights: &[f64], stream: u64) -> Result<Node, String> {
    if values.is_empty() || values.len() != weights.len() {
        return Err(format!(
            "weighted needs one weight per value ({} values, {} weights)",
            values.len(),
            weights.len()
        ));
    }
    if weights.iter().any(|w| !w.is_finite() || *w < 0.0) {
        return Err("weights must be finite and >= 0".into());
    }
    let mut total = 0.0;
    let cumulative: Vec<f64> = weights
        .iter()
        .map(|w| {
            total += w;
            total
        })
        .collect();
    if total <= 0.0 {
        return Err("the weights add up to 0".into());
    }
    Ok(Node::Weighted {
        values: constants(values)?,
        cumulative,
        stream,
    })
}

/// `uniform`: integers, numbers (either bound a float), or timestamps/durations in ns.
fn uniform(lo: &Value, hi: &Value, stream: u64) -> Result<Node, String> {
    let empty = || format!("uniform({lo}, {hi}) is empty: it needs lo < hi");
    let num = |v: &Value| match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(x) => Some(*x),
        _ => None,
    };
    Ok(match (lo, hi) {
        (Value::Int(a), Value::Int(b)) if a < b => Node::UniformLong {
            lo: *a,
            hi: *b,
            stream,
        },
        (Value::Timestamp(a), Value::Timestamp(b)) | (Value::Duration(a), Value::Duration(b))
            if a < b =>
        {
            Node::UniformNanos {
                lo: *a,
                hi: *b,
                duration: matches!(lo, Value::Duration(_)),
                stream,
            }
        }
        (Value::Int(_), Value::Int(_))
        | (Value::Timestamp(_), Value::Timestamp(_))
        | (Value::Duration(_), Value::Duration(_)) => return Err(empty()),
        _ => match (num(lo), num(hi)) {
            (Some(a), Some(b)) if a.is_finite() && b.is_finite() && a < b => Node::UniformDouble {
                lo: a,
                hi: b,
                stream,
            },
            (Some(_), Some(_)) => return Err(empty()),
            _ => {
                return Err(format!(
                    "uniform between {} and {} is not supported",
                    lo.kind(),
                    hi.kind()
                ))
            }
        },
    })
}

/// A constant as a cell. Text must be literal (no `env(...)`): data must not depend on the
/// machine it is generated on.
fn constant(v: &Value) -> Result<Cell, String> {
    Ok(match v {
        Value::Int(i) => Cell::Long(*i),
        Value::Float(x) => Cell::Double(*x),
        Value::Bool(b) => Cell::Bool(*b),
        Value::None => Cell::Null,
        Value::Str(t) => Cell::Str(
            t.as_lit()
                .ok_or("text from env(...) cannot be generated data")?,
        ),
        Value::Symbol(s) => Cell::Str(s.clone()),
        Value::Duration(ns) => Cell::Duration(*ns),
        Value::Timestamp(ns) => Cell::Timestamp(*ns),
        Value::Rate(r) => Cell::Double(*r),
        Value::Size(b) => Cell::Long(i64::try_from(*b).unwrap_or(i64::MAX)),
        Value::Percent(p) => Cell::Double(*p),
        other @ (Value::Range(..)
        | Value::List(_)
        | Value::Map(_)
        | Value::Gen(_)
        | Value::Bandwidth(_)) => {
            return Err(format!("{} cannot be a generated value here", other.kind()))
        }
    })
}

fn constants(vs: &[Value]) -> Result<Vec<Cell>, String> {
    vs.iter().map(constant).collect()
}

/// The values of one column of a CSV file with a header line, in file order, as text.
pub(crate) fn read_csv_column(
    read_file: ReadFile<'_>,
    path: &str,
    column: &str,
) -> Result<Vec<Cell>, String> {
    let bytes = read_file(path).map_err(|e| format!("cannot read CSV file {path:?}: {e}"))?;
    let mut reader = ::csv::Reader::from_reader(bytes.as_slice());
    let headers = reader
        .headers()
        .map_err(|e| format!("cannot read the header of {path:?}: {e}"))?;
    let at = headers
        .iter()
        .position(|h| h == column)
        .ok_or_else(|| format!("CSV file {path:?} has no column `{column}`"))?;
    let mut values = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| format!("in CSV file {path:?}: {e}"))?;
        values.push(Cell::Str(record.get(at).unwrap_or("").to_string()));
    }
    if values.is_empty() {
        return Err(format!("CSV file {path:?} has no rows"));
    }
    Ok(values)
}
