//! A bind program's compiled generators: the plan's `Gen`s with constants converted, streams
//! named (docs/rng.md §8.1), formats, patterns and CSV columns read, lets and binds resolved to
//! slots, and each node's shape (one value, a list or a window) known. Every error a bind can
//! have is found here; `eval.rs` draws.

use crate::gen::rng::Zipf;
use crate::gen::route::nested_stream;
use crate::gen::{constant, read_csv_column, Cell, Format, Op, Pattern, ReadFile};
use crate::plan::{Domain, Gen};
use crate::value::Value;

/// A value while an instance is evaluated.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum V {
    One(Cell),
    List(Vec<Cell>),
    /// Nanoseconds since the epoch, UTC.
    Window {
        start: i64,
        end: i64,
    },
}

impl V {
    /// The value as text (docs/rng.md §6); a list's elements joined by `,`, a window as
    /// `start/end` (ISO 8601's interval form).
    pub fn text(&self) -> String {
        let mut s = String::new();
        self.write_text(&mut s);
        s
    }

    /// `text`, appended to `out`; a whole number is written without a `String` of its own.
    pub fn write_text(&self, out: &mut String) {
        use std::fmt::Write;
        match self {
            V::One(Cell::Long(v)) => {
                let _ = write!(out, "{v}");
            }
            V::One(c) => out.push_str(&c.to_text()),
            V::List(cs) => {
                for (i, c) in cs.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&c.to_text());
                }
            }
            V::Window { start, end } => {
                let _ = write!(
                    out,
                    "{}/{}",
                    Cell::Timestamp(*start).to_text(),
                    Cell::Timestamp(*end).to_text()
                );
            }
        }
    }
}

/// What a node yields, known when it is compiled: lists are inlined into the SQL, and a window
/// is only readable through `.start` and `.end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shape {
    One,
    List,
    Window,
}

#[derive(Clone, Debug)]
pub(super) enum Node {
    Const(Cell),
    /// `n` of a series column's generator.
    SeriesIndex,
    Seq {
        start: i64,
        step: i64,
    },
    UniformLong {
        lo: i64,
        hi: i64,
        stream: u64,
    },
    UniformDouble {
        lo: f64,
        hi: f64,
        stream: u64,
    },
    UniformNanos {
        lo: i64,
        hi: i64,
        duration: bool,
        stream: u64,
    },
    Normal {
        mean: f64,
        stddev: f64,
        stream: u64,
    },
    Pick {
        values: Vec<Cell>,
        stream: u64,
    },
    Weighted {
        values: Vec<Cell>,
        cumulative: Vec<f64>,
        stream: u64,
    },
    Zipf {
        n: u64,
        zipf: Option<Zipf>,
        stream: u64,
    },
    Format {
        format: Format,
        args: Vec<Node>,
    },
    Pattern {
        pattern: Pattern,
        stream: u64,
    },
    Csv {
        values: Vec<Cell>,
    },
    Uuid {
        stream: u64,
    },
    Chance {
        p: f64,
        stream: u64,
    },
    /// Start uniform in `[from, last)`, `last = to - length`, floored to whole seconds.
    Window {
        from: i64,
        last: i64,
        length: i64,
        stream: u64,
    },
    Sample {
        from: SampleFrom,
        k: u64,
        stream: u64,
    },
    Field {
        of: Box<Node>,
        end: bool,
    },
    /// A let's slot.
    Let(usize),
    /// A bind's slot: `$n` is slot n - 1.
    Bind(usize),
    Arith {
        op: Op,
        lhs: Box<Node>,
        rhs: Box<Node>,
    },
    ToStr(Box<Node>),
}

#[derive(Clone, Debug)]
pub(super) enum SampleFrom {
    List(Vec<Cell>),
    /// The series column's generator, evaluated per series like ingest does.
    Series {
        value: Box<Node>,
        count: u64,
    },
}

/// Names known while a query is compiled: its lets so far and its bound placeholders.
pub(super) struct Scope<'a> {
    pub lets: &'a [(String, Shape)],
    pub binds: &'a [Option<Shape>],
}

/// Compiles the generators of one let, bind or `route by` (or of a series column, for
/// `sample`). Streams are `nested_stream(prefix, name, path)`: `"<prefix>.<name>/<k>..."`.
pub(super) struct Compiler<'a> {
    pub read_file: ReadFile<'a>,
    pub prefix: &'a str,
    pub name: &'a str,
    pub scope: Scope<'a>,
    /// Compiling a series column's generator: `n` is allowed, query generators are not.
    pub series: bool,
}

impl Compiler<'_> {
    pub fn compile(&mut self, g: &Gen) -> Result<(Node, Shape), String> {
        self.node(g, &mut Vec::new())
    }

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
            Gen::SeriesIndex if self.series => one(Node::SeriesIndex),
            Gen::SeriesIndex => Err("`n` only exists in a series column".into()),
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
            Gen::Weighted { values, weights } => {
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
                one(Node::Weighted {
                    values: constants(values)?,
                    cumulative,
                    stream,
                })
            }
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
            Gen::Walk { .. } => Err(format!(
                "`{g}` cannot be drawn here: a walk runs through rows in order, and query \
                 instances are drawn independently of each other"
            )),
            Gen::PickBy { .. } | Gen::Column { .. } => Err(format!(
                "`{g}` reads another column of a row, which a query does not have"
            )),
            _ if self.series => Err(format!("`{g}` cannot generate a series column")),
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
                            scope: Scope {
                                lets: &[],
                                binds: &[],
                            },
                            series: true,
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
                    (of, Shape::Window) => one(Node::Field {
                        of: Box::new(of),
                        end,
                    }),
                    _ => Err(format!("`{g}`: only a window has .{field}")),
                }
            }
            Gen::Let { name } => match self.scope.lets.iter().position(|(n, _)| n == name) {
                Some(slot) => Ok((Node::Let(slot), self.scope.lets[slot].1)),
                None => Err(format!(
                    "`{name}` is not a let of this query declared above"
                )),
            },
            Gen::Bind { index } => {
                let slot = (*index as usize).wrapping_sub(1);
                match self.scope.binds.get(slot) {
                    Some(Some(shape)) => Ok((Node::Bind(slot), *shape)),
                    _ => Err(format!("`${index}` is not bound before this point")),
                }
            }
        }
    }
}

fn constants(vs: &[Value]) -> Result<Vec<Cell>, String> {
    vs.iter().map(constant).collect()
}

/// `gen::program`'s rules for `uniform`: integers, numbers, or timestamps/durations in ns.
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
