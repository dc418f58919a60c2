//! The text a metrics endpoint answers: Prometheus's exposition format 0.0.4 and OpenMetrics 1.0
//! text, read into samples that each know their family's type. Hand-written (docs/decisions.md,
//! "The metrics exposition parser"): the crates for it either read 0.0.4 only, pulling in a
//! date library for timestamps nobody here uses, or are LGPL. It reads bytes from any server,
//! so it never panics: a line it cannot read is an error naming the line.

use std::collections::HashMap;

/// The type a family declares in `# TYPE` (OpenMetrics' names; 0.0.4's `untyped` is `Unknown`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FamilyType {
    Counter,
    Gauge,
    Histogram,
    GaugeHistogram,
    Summary,
    Info,
    StateSet,
    Unknown,
}

/// What one sample is, for the arithmetic done on it: a counter only grows (a rate over time
/// is its meaning; a fall is a restart), anything else is a level read as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SampleKind {
    Counter,
    Gauge,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// The sample's own name (`http_requests_total`, `latency_bucket`).
    pub name: String,
    /// The family it belongs to (`http_requests`, `latency`); the name itself when no
    /// `# TYPE` line claims it.
    pub family: String,
    /// In the order written.
    pub labels: Vec<(String, String)>,
    pub value: f64,
    /// As written: milliseconds in 0.0.4, seconds in OpenMetrics; not interpreted.
    pub timestamp: Option<f64>,
    pub kind: SampleKind,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Exposition {
    pub samples: Vec<Sample>,
    /// The text ended with OpenMetrics' `# EOF`.
    pub eof: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based.
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// Reads a whole exposition. Stops at the first line it cannot read.
pub fn parse(text: &str) -> Result<Exposition, ParseError> {
    let mut types: HashMap<String, FamilyType> = HashMap::new();
    let mut out = Exposition::default();
    for (i, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let err = |message: String| ParseError {
            line: i + 1,
            message,
        };
        if out.eof {
            if line.trim().is_empty() {
                continue;
            }
            return Err(err("text after `# EOF`".into()));
        }
        let trimmed = line.trim_start_matches([' ', '\t']);
        if trimmed.is_empty() {
            continue;
        }
        if let Some(comment) = trimmed.strip_prefix('#') {
            let comment = comment.trim_start_matches([' ', '\t']);
            if comment.trim_end() == "EOF" {
                out.eof = true;
            } else if let Some(rest) = comment.strip_prefix("TYPE") {
                let mut words = rest.split_ascii_whitespace();
                let (Some(name), Some(ty)) = (words.next(), words.next()) else {
                    return Err(err("`# TYPE` needs a name and a type".into()));
                };
                if !is_metric_name(name) {
                    return Err(err(format!("`{name}` is not a metric name")));
                }
                let ty = family_type(ty).ok_or_else(|| err(format!("unknown type `{ty}`")))?;
                types.insert(name.to_string(), ty);
            }
            // HELP, UNIT and any other comment say nothing a figure needs.
            continue;
        }
        let sample = sample_line(trimmed, &types).map_err(err)?;
        out.samples.push(sample);
    }
    Ok(out)
}

fn family_type(word: &str) -> Option<FamilyType> {
    Some(match word {
        "counter" => FamilyType::Counter,
        "gauge" => FamilyType::Gauge,
        "histogram" => FamilyType::Histogram,
        "gaugehistogram" => FamilyType::GaugeHistogram,
        "summary" => FamilyType::Summary,
        "info" => FamilyType::Info,
        "stateset" => FamilyType::StateSet,
        "unknown" | "untyped" => FamilyType::Unknown,
        _ => return None,
    })
}

fn is_metric_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// The family a sample's name belongs to, and what the sample is within it. A 0.0.4 counter
/// is typed under its own name (`# TYPE x_total counter`), an OpenMetrics one under the name
/// without `_total`; `_created` is a time of creation, never a rate.
fn classify(name: &str, types: &HashMap<String, FamilyType>) -> (String, SampleKind) {
    if let Some(ty) = types.get(name) {
        let kind = match ty {
            FamilyType::Counter => SampleKind::Counter,
            // A summary's quantiles, a histogram written under its own name (not valid, but
            // read as the level it is).
            _ => SampleKind::Gauge,
        };
        return (name.to_string(), kind);
    }
    const SUFFIXES: &[&str] = &[
        "_total", "_created", "_bucket", "_count", "_sum", "_gcount", "_gsum", "_info",
    ];
    for suffix in SUFFIXES {
        let Some(family) = name.strip_suffix(suffix) else {
            continue;
        };
        let Some(ty) = types.get(family) else {
            continue;
        };
        let counter = match (ty, *suffix) {
            (_, "_created") => false,
            (FamilyType::Counter, "_total") => true,
            (FamilyType::Histogram, "_bucket" | "_count" | "_sum") => true,
            (FamilyType::Summary, "_count" | "_sum") => true,
            _ => false,
        };
        let kind = if counter {
            SampleKind::Counter
        } else {
            SampleKind::Gauge
        };
        return (family.to_string(), kind);
    }
    (name.to_string(), SampleKind::Gauge)
}

/// `name{label="value",...} value [timestamp] [# exemplar]`.
fn sample_line(line: &str, types: &HashMap<String, FamilyType>) -> Result<Sample, String> {
    let name_end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(line.len());
    let name = &line[..name_end];
    if !is_metric_name(name) {
        return Err(format!("expected a metric name at `{}`", clip(line)));
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(inner) = rest.strip_prefix('{') {
        rest = read_labels(inner, &mut labels)?;
    }
    let mut words = rest.split_ascii_whitespace();
    let value = words
        .next()
        .ok_or_else(|| format!("`{name}` has no value"))?;
    let value = number(value).ok_or_else(|| format!("`{}` is not a number", clip(value)))?;
    let timestamp = match words.next() {
        None => None,
        Some(w) if w.starts_with('#') => None,
        Some(w) => Some(number(w).ok_or_else(|| format!("`{}` is not a timestamp", clip(w)))?),
    };
    // An OpenMetrics exemplar (`# {trace_id="x"} 1`) may follow; it is not a figure here.
    if let Some(w) = words.next() {
        if !w.starts_with('#') && timestamp.is_some() {
            return Err(format!("unexpected `{}` after the sample", clip(w)));
        }
    }
    let (family, kind) = classify(name, types);
    Ok(Sample {
        name: name.to_string(),
        family,
        labels,
        value,
        timestamp,
        kind,
    })
}

/// Reads `a="x",b="y"}` (after the `{`) into `labels`; returns what follows the `}`.
fn read_labels<'a>(mut s: &'a str, labels: &mut Vec<(String, String)>) -> Result<&'a str, String> {
    loop {
        s = s.trim_start_matches([' ', '\t']);
        if let Some(after) = s.strip_prefix('}') {
            return Ok(after);
        }
        let end = s
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        let name = &s[..end];
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(format!("expected a label name at `{}`", clip(s)));
        }
        s = s[end..].trim_start_matches([' ', '\t']);
        s = s
            .strip_prefix('=')
            .ok_or_else(|| format!("expected `=` after label `{name}`"))?
            .trim_start_matches([' ', '\t']);
        s = s
            .strip_prefix('"')
            .ok_or_else(|| format!("label `{name}`: expected a quoted value"))?;
        let mut value = String::new();
        let mut chars = s.char_indices();
        let close = loop {
            match chars.next() {
                None => return Err(format!("label `{name}`: the value is not closed")),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    // 0.0.4 leaves any other escape as written.
                    Some((_, c)) => {
                        value.push('\\');
                        value.push(c);
                    }
                    None => return Err(format!("label `{name}`: the value is not closed")),
                },
                Some((_, c)) => value.push(c),
            }
        };
        labels.push((name.to_string(), value));
        s = s[close + 1..].trim_start_matches([' ', '\t']);
        if let Some(after) = s.strip_prefix(',') {
            s = after;
        } else if !s.starts_with('}') {
            return Err(format!("expected `,` or `}}` at `{}`", clip(s)));
        }
    }
}

/// Go's float syntax as the formats use it: decimals, exponents, `NaN`, `+Inf`, `-Inf`.
fn number(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        // Rust reads `inf`, `infinity` and `nan` in any case too; the formats do not write them.
        _ if s
            .bytes()
            .any(|b| b.is_ascii_alphabetic() && !matches!(b, b'e' | b'E')) =>
        {
            None
        }
        _ => s.parse().ok(),
    }
}

/// A piece of a line for a message: a server's bytes are shown, but not a megabyte of them.
fn clip(s: &str) -> String {
    const MAX: usize = 40;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests;
