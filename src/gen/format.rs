//! `format(...)`: a printf subset, parsed once when a schema is compiled.
//!
//! A directive is `%` [flags] [width] [`.` precision] conversion, with flags `0` (pad numbers
//! with zeros after the sign) and `-` (left-justify), and conversions `d` (decimal integer),
//! `x` (lowercase hex; a negative integer prints its 64-bit two's complement, as C's
//! `%llx`), `s` (text), `f` (fixed-point, precision 6 by default) and `%` (a literal percent
//! sign, which takes no argument). As in C, a precision on `d`/`x` is a minimum digit count
//! and on `s` a maximum character count. Anything else after `%` is an error.

use super::cell::Cell;

#[derive(Clone, Debug, PartialEq)]
pub struct Format {
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq)]
enum Part {
    Lit(String),
    Conv(Spec),
}

#[derive(Clone, Debug, PartialEq)]
struct Spec {
    zero: bool,
    left: bool,
    width: usize,
    precision: Option<usize>,
    conv: Conv,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Conv {
    D,
    X,
    S,
    F,
}

impl Format {
    pub fn parse(text: &str) -> Result<Format, String> {
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                lit.push(c);
                continue;
            }
            if chars.peek() == Some(&'%') {
                chars.next();
                lit.push('%');
                continue;
            }
            let (mut zero, mut left) = (false, false);
            while let Some(&f) = chars.peek() {
                match f {
                    '0' => zero = true,
                    '-' => left = true,
                    _ => break,
                }
                chars.next();
            }
            let width = digits(&mut chars).unwrap_or(0);
            let precision = if chars.peek() == Some(&'.') {
                chars.next();
                Some(digits(&mut chars).unwrap_or(0))
            } else {
                None
            };
            let conv = match chars.next() {
                Some('d') => Conv::D,
                Some('x') => Conv::X,
                Some('s') => Conv::S,
                Some('f') => Conv::F,
                Some(other) => {
                    return Err(format!(
                        "unsupported conversion `%{other}` in {text:?} (use %d, %x, %s, %f or %%)"
                    ))
                }
                None => return Err(format!("{text:?} ends inside a `%` directive")),
            };
            if !lit.is_empty() {
                parts.push(Part::Lit(std::mem::take(&mut lit)));
            }
            parts.push(Part::Conv(Spec {
                zero: zero && !left,
                left,
                width,
                precision,
                conv,
            }));
        }
        if !lit.is_empty() {
            parts.push(Part::Lit(lit));
        }
        Ok(Format { parts })
    }

    /// How many arguments the directives take.
    pub fn arity(&self) -> usize {
        self.parts
            .iter()
            .filter(|p| matches!(p, Part::Conv(_)))
            .count()
    }

    /// Renders with `args` (exactly `arity()` of them). `%d` of a Double truncates toward zero;
    /// `%d` of text that is not an integer, and any Null, render as `%s` would (Null: empty).
    pub fn render(&self, args: &[Cell], out: &mut String) {
        let mut args = args.iter();
        for p in &self.parts {
            match p {
                Part::Lit(s) => out.push_str(s),
                Part::Conv(spec) => {
                    let arg = args.next().unwrap_or(&Cell::Null);
                    spec.render(arg, out);
                }
            }
        }
    }
}

/// C's precision on an integer: at least `p` digits, zero-filled after the sign.
fn min_digits(body: String, p: Option<usize>) -> String {
    let Some(p) = p else { return body };
    let (sign, digits) = match body.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", body.as_str()),
    };
    if digits.len() >= p {
        return body;
    }
    format!("{sign}{}{digits}", "0".repeat(p - digits.len()))
}

fn digits(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<usize> {
    let mut n: Option<usize> = None;
    while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
        chars.next();
        n = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(d as usize));
    }
    n
}

impl Spec {
    fn render(&self, arg: &Cell, out: &mut String) {
        let int = match arg {
            Cell::Long(v) | Cell::Timestamp(v) | Cell::Duration(v) => Some(*v),
            Cell::Double(v) => Some(*v as i64),
            Cell::Bool(b) => Some(i64::from(*b)),
            Cell::Null | Cell::Str(_) => None,
        };
        let (body, numeric) = match (self.conv, int) {
            (Conv::D, Some(v)) => (min_digits(v.to_string(), self.precision), true),
            (Conv::X, Some(v)) => (min_digits(format!("{v:x}"), self.precision), true),
            (Conv::F, _) => match arg.as_f64() {
                Some(v) if *arg != Cell::Null => {
                    (format!("{:.*}", self.precision.unwrap_or(6), v), true)
                }
                _ => (arg.to_text(), false),
            },
            (Conv::S, _) => {
                let t = arg.to_text();
                match self.precision {
                    Some(p) => (t.chars().take(p).collect(), false),
                    None => (t, false),
                }
            }
            (Conv::D | Conv::X, None) => (arg.to_text(), false),
        };
        let len = body.chars().count();
        if len >= self.width {
            out.push_str(&body);
        } else if self.left {
            out.push_str(&body);
            out.extend(std::iter::repeat_n(' ', self.width - len));
        } else if self.zero && numeric {
            let (sign, digits) = match body.strip_prefix('-') {
                Some(rest) => ("-", rest),
                None => ("", body.as_str()),
            };
            out.push_str(sign);
            out.extend(std::iter::repeat_n('0', self.width - len));
            out.push_str(digits);
        } else {
            out.extend(std::iter::repeat_n(' ', self.width - len));
            out.push_str(&body);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn fmt(f: &str, args: &[Cell]) -> String {
        let f = Format::parse(f).unwrap();
        assert_eq!(f.arity(), args.len());
        let mut s = String::new();
        f.render(args, &mut s);
        s
    }

    #[test]
    fn padding_and_conversions() {
        assert_eq!(fmt("host_%06d", &[Cell::Long(7)]), "host_000007");
        assert_eq!(fmt("host_%d", &[Cell::Long(1234)]), "host_1234");
        assert_eq!(fmt("%5d|", &[Cell::Long(42)]), "   42|");
        assert_eq!(fmt("%-5d|", &[Cell::Long(42)]), "42   |");
        assert_eq!(fmt("%05d", &[Cell::Long(-42)]), "-0042");
        assert_eq!(fmt("%03d", &[Cell::Long(12345)]), "12345");
        assert_eq!(fmt("%d", &[Cell::Double(-7.9)]), "-7");
        assert_eq!(fmt("%.2f", &[Cell::Double(1.23556)]), "1.24");
        assert_eq!(fmt("%8.3f", &[Cell::Long(2)]), "   2.000");
        assert_eq!(fmt("%f", &[Cell::Double(0.5)]), "0.500000");
        assert_eq!(fmt("%s-%s", &[Cell::Str("a".into()), Cell::Long(3)]), "a-3");
        assert_eq!(fmt("%4s|", &[Cell::Str("ab".into())]), "  ab|");
        assert_eq!(fmt("100%% of %d", &[Cell::Long(9)]), "100% of 9");
        assert_eq!(fmt("%d", &[Cell::Null]), "");
        assert_eq!(
            fmt("%x|%04x", &[Cell::Long(255), Cell::Long(10)]),
            "ff|000a"
        );
        assert_eq!(fmt("%x", &[Cell::Long(-1)]), "ffffffffffffffff");
        assert_eq!(
            fmt("%.3d|%.2s", &[Cell::Long(-7), Cell::Str("abc".into())]),
            "-007|ab"
        );
    }

    #[test]
    fn errors() {
        assert!(Format::parse("%y").is_err());
        assert!(Format::parse("abc %").is_err());
        assert!(Format::parse("%q").is_err());
        assert_eq!(Format::parse("a%%b").unwrap().arity(), 0);
    }
}
