//! `observe metrics`: a Prometheus/OpenMetrics endpoint scraped during a target's phases, the
//! series it keeps, and the selector of the counter that is the server's CPU seconds. The
//! selector's syntax is read here, below both sides: the checker refuses a bad one at its
//! place, the runner matches series with it.

use serde::Serialize;

use crate::value::Text;

/// One `observe metrics` clause of a target, lowered for a cell.
#[derive(Clone, Debug, Serialize)]
pub struct MetricsPlan {
    /// The target whose phases it observes.
    pub target: String,
    /// `env()` parts by name, a password written in the file as `***`.
    #[serde(serialize_with = "shown_url")]
    pub url: Text,
    /// Between scrapes, nanoseconds; a scrape that takes longer is failed (the next one is
    /// due).
    pub every_ns: u64,
    /// Regular expressions, each matching a whole metric name (a family's or a sample's).
    pub keep: Vec<String>,
    /// The counters whose sum is the server's CPU seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<Selector>,
}

impl MetricsPlan {
    pub fn shown_url(&self) -> String {
        crate::secrets::redact_url(&self.url.redacted())
    }
}

fn shown_url<S: serde::Serializer>(url: &Text, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&crate::secrets::redact_url(&url.redacted()))
}

/// `name{label="v", label!="v", label=~"re", label!~"re"}`, PromQL's instant selector without
/// its functions: the series of one metric name whose labels match every matcher.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Selector {
    /// As written.
    pub text: String,
    pub name: String,
    #[serde(skip)]
    pub matchers: Vec<Matcher>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Matcher {
    pub label: String,
    pub op: MatchOp,
    pub value: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchOp {
    Eq,
    Ne,
    Re,
    NotRe,
}

/// Where in the selector's text a mistake is (a byte offset), and what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectorError {
    pub at: usize,
    pub message: String,
}

impl Selector {
    /// Reads a selector; values may be quoted with `"` or `'` (a `.wl` string holds the latter
    /// without escapes). Regular expressions are the caller's to compile.
    pub fn parse(text: &str) -> Result<Selector, SelectorError> {
        let err = |at: usize, message: &str| SelectorError {
            at,
            message: message.to_string(),
        };
        let b = text.as_bytes();
        let name_end = text
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(text.len());
        let name = &text[..name_end];
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(err(0, "expected a metric name"));
        }
        let mut matchers = Vec::new();
        let mut i = name_end;
        let skip = |mut i: usize| {
            while i < b.len() && b[i] == b' ' {
                i += 1;
            }
            i
        };
        if i < b.len() {
            if b[i] != b'{' {
                return Err(err(i, "expected `{` or the end"));
            }
            i += 1;
            loop {
                i = skip(i);
                if i < b.len() && b[i] == b'}' {
                    i += 1;
                    break;
                }
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                if start == i || b[start].is_ascii_digit() {
                    return Err(err(start, "expected a label name"));
                }
                let label = text[start..i].to_string();
                i = skip(i);
                let rest = &text[i..];
                let (op, len) = if rest.starts_with("!=") {
                    (MatchOp::Ne, 2)
                } else if rest.starts_with("=~") {
                    (MatchOp::Re, 2)
                } else if rest.starts_with("!~") {
                    (MatchOp::NotRe, 2)
                } else if rest.starts_with('=') {
                    (MatchOp::Eq, 1)
                } else {
                    return Err(err(i, "expected `=`, `!=`, `=~` or `!~`"));
                };
                i = skip(i + len);
                let quote = match b.get(i) {
                    Some(q @ (b'"' | b'\'')) => *q,
                    _ => return Err(err(i, "expected a quoted value")),
                };
                let open = i;
                let mut value = String::new();
                let mut chars = text[i + 1..].char_indices();
                let close = loop {
                    match chars.next() {
                        None => return Err(err(open, "the value is not closed")),
                        Some((k, c)) if c as u32 == quote as u32 => break i + 1 + k,
                        Some((_, '\\')) => match chars.next() {
                            Some((_, 'n')) => value.push('\n'),
                            Some((_, c)) => value.push(c),
                            None => return Err(err(open, "the value is not closed")),
                        },
                        Some((_, c)) => value.push(c),
                    }
                };
                matchers.push(Matcher { label, op, value });
                i = skip(close + 1);
                match b.get(i) {
                    Some(b',') => i += 1,
                    Some(b'}') => {}
                    _ => return Err(err(i, "expected `,` or `}`")),
                }
            }
            if skip(i) != b.len() {
                return Err(err(i, "unexpected text after `}`"));
            }
        }
        Ok(Selector {
            text: text.to_string(),
            name: name.to_string(),
            matchers,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_read_with_either_quote() {
        let s = Selector::parse("node_cpu_seconds_total{mode!='idle', cpu=~\"0|1\",}").unwrap();
        assert_eq!(s.name, "node_cpu_seconds_total");
        assert_eq!(
            s.matchers,
            vec![
                Matcher {
                    label: "mode".into(),
                    op: MatchOp::Ne,
                    value: "idle".into()
                },
                Matcher {
                    label: "cpu".into(),
                    op: MatchOp::Re,
                    value: "0|1".into()
                },
            ]
        );
        assert!(Selector::parse("process_cpu_seconds_total")
            .unwrap()
            .matchers
            .is_empty());
    }

    #[test]
    fn bad_selectors_say_where() {
        for (text, at) in [
            ("", 0),
            ("1abc", 0),
            ("m{", 2),
            ("m{a}", 3),
            ("m{a='x}", 4),
            ("m{a='x' b='y'}", 8),
            ("m x", 1),
            ("m{a=x}", 4),
            ("m{}x", 3),
        ] {
            let e = Selector::parse(text).unwrap_err();
            assert_eq!(e.at, at, "{text:?}: {e:?}");
        }
    }
}
