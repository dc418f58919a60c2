//! Values of the language after evaluation: numbers with their units, text that may carry
//! secrets from the environment, lists, maps and generator programs. Formatting here is the one
//! place that turns a unit back into what a user writes (`10s`, `64MiB`, `5000/s`).
//!
//! Generator programs (`gen`) live here, not in `plan`, because a value can be a generator and a
//! generator holds values: the two types are one recursive family, and `plan` (which holds both)
//! sits above them and re-exports `Gen`, `Ty` and `Domain` under its own name.

use std::fmt::{self, Write};

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

mod gen;
mod size;

pub use gen::{Domain, Gen, Ty};
pub use size::Excess;

/// Text that may contain `env("NAME")` parts. Secrets are resolved when a run starts, never
/// stored in a plan and never printed: the listing shows `${env:NAME}`.
#[derive(Clone, Debug, PartialEq)]
pub struct Text {
    pub parts: Vec<TextPart>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TextPart {
    Lit(String),
    Env {
        name: String,
        default: Option<String>,
    },
}

impl Text {
    pub fn lit(s: impl Into<String>) -> Text {
        Text {
            parts: vec![TextPart::Lit(s.into())],
        }
    }

    /// The literal text, if no part comes from the environment.
    pub fn as_lit(&self) -> Option<String> {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                TextPart::Lit(s) => out.push_str(s),
                TextPart::Env { .. } => return None,
            }
        }
        Some(out)
    }

    pub fn push_lit(&mut self, s: &str) {
        if let Some(TextPart::Lit(last)) = self.parts.last_mut() {
            last.push_str(s);
        } else {
            self.parts.push(TextPart::Lit(s.to_string()));
        }
    }

    pub fn append(&mut self, other: Text) {
        for p in other.parts {
            match p {
                TextPart::Lit(s) => self.push_lit(&s),
                env => self.parts.push(env),
            }
        }
    }

    /// The text with secrets shown as `${env:NAME}`.
    pub fn redacted(&self) -> String {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                TextPart::Lit(s) => out.push_str(s),
                TextPart::Env { name, .. } => {
                    let _ = write!(out, "${{env:{name}}}");
                }
            }
        }
        out
    }

    /// Resolves environment parts from this process's environment, now (at run time); every
    /// value read from it is a secret from then on (`secrets::remember`), a default is not.
    pub fn resolve_env(&self) -> Result<String, String> {
        self.resolve(|name| {
            let value = std::env::var(name).ok();
            if let Some(v) = &value {
                crate::secrets::remember(v);
            }
            value
        })
    }

    /// Resolves environment parts now (at run time): the variable, else its default.
    pub fn resolve(&self, lookup: impl Fn(&str) -> Option<String>) -> Result<String, String> {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                TextPart::Lit(s) => out.push_str(s),
                TextPart::Env { name, default } => match lookup(name).or_else(|| default.clone()) {
                    Some(v) => out.push_str(&v),
                    None => return Err(format!("environment variable {name} is not set")),
                },
            }
        }
        Ok(out)
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.redacted())
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Bool(bool),
    None,
    Str(Text),
    /// A bare word that names no declaration: an enumerated choice such as `qwp` or `publish`.
    Symbol(String),
    /// Nanoseconds.
    Duration(i64),
    /// Nanoseconds since the epoch, UTC.
    Timestamp(i64),
    /// Per second.
    Rate(f64),
    /// Bits per second: a link's bandwidth (`14.7gbit`).
    Bandwidth(f64),
    /// Bytes.
    Size(u64),
    /// As written: `0.1%` is 0.1.
    Percent(f64),
    /// Half-open `lo..hi` over integers.
    Range(i64, i64),
    List(Vec<Value>),
    Map(Vec<(String, Value)>),
    /// A value drawn at run time: a column generator or a bind generator.
    Gen(Box<Gen>),
}

impl Value {
    /// The kind of value, as diagnostics name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Bool(_) => "a boolean",
            Value::None => "`none`",
            Value::Str(_) => "a string",
            Value::Symbol(_) => "a name",
            Value::Duration(_) => "a duration",
            Value::Timestamp(_) => "a timestamp",
            Value::Rate(_) => "a rate",
            Value::Bandwidth(_) => "a bandwidth",
            Value::Size(_) => "a size",
            Value::Percent(_) => "a percentage",
            Value::Range(..) => "a range",
            Value::List(_) => "a list",
            Value::Map(_) => "a map",
            Value::Gen(_) => "a generator",
        }
    }
}

pub fn fmt_duration(ns: i64) -> String {
    if ns == 0 {
        return "0s".to_string();
    }
    let sign = if ns < 0 { "-" } else { "" };
    let mut rest = ns.unsigned_abs();
    const UNITS: [(&str, u64); 7] = [
        ("d", 86_400_000_000_000),
        ("h", 3_600_000_000_000),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
        ("ns", 1),
    ];
    let mut out = String::from(sign);
    for (name, size) in UNITS {
        if rest >= size {
            let _ = write!(out, "{}{name}", rest / size);
            rest %= size;
        }
    }
    out
}

pub fn fmt_timestamp(ns: i64) -> String {
    match OffsetDateTime::from_unix_timestamp_nanos(i128::from(ns)) {
        Ok(t) => t.format(&Rfc3339).unwrap_or_else(|_| format!("{ns}ns")),
        Err(_) => format!("{ns}ns"),
    }
}

pub fn fmt_size(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (name, size) in UNITS {
        if bytes >= size && bytes % size == 0 {
            return format!("{}{name}", bytes / size);
        }
    }
    format!("{bytes}B")
}

pub fn fmt_float(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

pub fn fmt_rate(per_second: f64) -> String {
    let n = if per_second.fract() == 0.0 {
        format!("{}", per_second as i64)
    } else {
        format!("{per_second}")
    };
    format!("{n}/s")
}

/// Bits per second as the language writes them, with the largest decimal prefix that leaves
/// at least 1: `14.7Gbit/s`, `100Mbit/s`, `512bit/s`.
pub fn fmt_bandwidth(bits_per_s: f64) -> String {
    let (n, prefix) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(scale, _)| bits_per_s.abs() >= *scale)
        .map_or((bits_per_s, ""), |(scale, p)| (bits_per_s / scale, p));
    // Six decimals at most, so that 14.7e9 / 1e9 reads 14.7 and not 14.700000000000001.
    let text = format!("{n:.6}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{prefix}bit/s")
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => f.write_str(&fmt_float(*v)),
            Value::Bool(b) => write!(f, "{b}"),
            Value::None => f.write_str("none"),
            Value::Str(t) => write!(f, "{:?}", t.redacted()),
            Value::Symbol(s) => f.write_str(s),
            Value::Duration(ns) => f.write_str(&fmt_duration(*ns)),
            Value::Timestamp(ns) => f.write_str(&fmt_timestamp(*ns)),
            Value::Rate(r) => f.write_str(&fmt_rate(*r)),
            Value::Bandwidth(b) => f.write_str(&fmt_bandwidth(*b)),
            Value::Size(b) => f.write_str(&fmt_size(*b)),
            Value::Percent(p) => write!(f, "{p}%"),
            Value::Range(a, b) => write!(f, "{a}..{b}"),
            Value::List(items) => {
                f.write_str("[")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Value::Map(entries) => {
                f.write_str("{")?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k:?}: {v}")?;
                }
                f.write_str("}")
            }
            Value::Gen(g) => write!(f, "{g}"),
        }
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        macro_rules! tagged {
            ($tag:literal, $text:expr, $key:literal, $n:expr) => {{
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry($tag, &$text)?;
                m.serialize_entry($key, $n)?;
                m.end()
            }};
        }
        match self {
            Value::Int(v) => s.serialize_i64(*v),
            Value::Float(v) => s.serialize_f64(*v),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::None => s.serialize_none(),
            Value::Str(t) => t.serialize(s),
            Value::Symbol(w) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("symbol", w)?;
                m.end()
            }
            Value::Duration(ns) => tagged!("duration", fmt_duration(*ns), "ns", ns),
            Value::Timestamp(ns) => tagged!("timestamp", fmt_timestamp(*ns), "ns", ns),
            Value::Rate(r) => tagged!("rate", fmt_rate(*r), "per_second", r),
            Value::Bandwidth(b) => tagged!("bandwidth", fmt_bandwidth(*b), "bits_per_second", b),
            Value::Size(b) => tagged!("size", fmt_size(*b), "bytes", b),
            Value::Percent(p) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("percent", p)?;
                m.end()
            }
            Value::Range(a, b) => {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("from", a)?;
                m.serialize_entry("to", b)?;
                m.end()
            }
            Value::List(items) => items.serialize(s),
            Value::Map(entries) => {
                let mut m = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
            Value::Gen(g) => g.serialize(s),
        }
    }
}

/// One bind value, as every transport sends it.
#[derive(Clone, Debug, PartialEq)]
pub enum BindValue {
    Null,
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(String),
    /// UTC, nanoseconds since the epoch.
    Timestamp(i64),
}
