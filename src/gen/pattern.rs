//! `pattern(...)`: strings from a small regular language, parsed once when a schema is compiled.
//!
//! A pattern is a sequence of atoms, each optionally followed by one quantifier:
//! - atoms: a literal character, `\c` (the character `c` literally, e.g. `\[`), or a class
//!   `[...]` of single characters and ranges `a-z`, closed by the first `]` (no escapes and no
//!   negation inside; a `-` first or last is literal);
//! - `{ ? * + ( ) |` are errors as atoms (write `\{` etc.); any other character is literal;
//! - quantifiers: `{n}`, `{m,n}` (m <= n) and `?` (= `{0,1}`).
//!
//! Sampling (docs/rng.md): for each atom in order, the repeat count is uniform in `m..=n`
//! (`below(n - m + 1)`, drawn only when m < n), then each character is uniform over the class
//! (`below(class size)`, drawn only when the class has more than one character). Note that
//! lengths are uniform, unlike Generex (ksql-datagen), whose lengths are geometric-ish.

use super::rng::Rng;

#[derive(Clone, Debug, PartialEq)]
pub struct Pattern {
    atoms: Vec<Atom>,
}

#[derive(Clone, Debug, PartialEq)]
struct Atom {
    /// Inclusive character ranges; a literal is one range of one character.
    ranges: Vec<(char, char)>,
    size: u64,
    min: u64,
    max: u64,
}

/// Repeat counts above this are refused: a pattern is for keys and names, not bulk text.
const MAX_REPEAT: u64 = 1000;

impl Pattern {
    pub fn parse(text: &str) -> Result<Pattern, String> {
        let chars: Vec<char> = text.chars().collect();
        let mut atoms = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let ranges = match chars[i] {
                '[' => {
                    let (ranges, next) = class(&chars, i + 1, text)?;
                    i = next;
                    ranges
                }
                '\\' => {
                    let c = *chars
                        .get(i + 1)
                        .ok_or_else(|| format!("{text:?} ends with a lone `\\`"))?;
                    i += 2;
                    vec![(c, c)]
                }
                c @ ('{' | '?' | '*' | '+' | '(' | ')' | '|') => {
                    return Err(format!(
                        "`{c}` at position {i} of {text:?} is not supported here \
                         (write `\\{c}` for the character itself)"
                    ))
                }
                c => {
                    i += 1;
                    vec![(c, c)]
                }
            };
            let (min, max) = match chars.get(i) {
                Some('?') => {
                    i += 1;
                    (0, 1)
                }
                Some('{') => {
                    let close = chars[i..]
                        .iter()
                        .position(|&c| c == '}')
                        .ok_or_else(|| format!("unclosed `{{` in {text:?}"))?;
                    let inner: String = chars[i + 1..i + close].iter().collect();
                    i += close + 1;
                    repeat(&inner, text)?
                }
                _ => (1, 1),
            };
            let size = ranges
                .iter()
                .map(|&(a, b)| u64::from(b) - u64::from(a) + 1)
                .sum();
            atoms.push(Atom {
                ranges,
                size,
                min,
                max,
            });
        }
        Ok(Pattern { atoms })
    }

    pub fn sample(&self, rng: &mut Rng, out: &mut String) {
        for a in &self.atoms {
            let count = if a.max > a.min {
                a.min + rng.below(a.max - a.min + 1)
            } else {
                a.min
            };
            for _ in 0..count {
                let mut k = if a.size > 1 { rng.below(a.size) } else { 0 };
                for &(lo, hi) in &a.ranges {
                    let n = u64::from(hi) - u64::from(lo) + 1;
                    if k < n {
                        // Ranges never span the surrogate gap (checked in `class`).
                        out.push(char::from_u32(u32::from(lo) + k as u32).unwrap_or(lo));
                        break;
                    }
                    k -= n;
                }
            }
        }
    }
}

/// Parses a class body starting after `[`: up to the first `]`, no escapes; `a-z` is a range
/// when a character follows the `-`, otherwise `-` is literal. Returns the ranges and the index
/// after `]`.
fn class(chars: &[char], start: usize, text: &str) -> Result<(Vec<(char, char)>, usize), String> {
    let len = chars[start..]
        .iter()
        .position(|&c| c == ']')
        .ok_or_else(|| format!("unclosed `[` in {text:?}"))?;
    let body = &chars[start..start + len];
    if body.is_empty() {
        return Err(format!("empty class `[]` in {text:?}"));
    }
    let mut ranges = Vec::new();
    let mut j = 0;
    while j < body.len() {
        let (lo, hi) = if j + 2 < body.len() && body[j + 1] == '-' {
            j += 3;
            (body[j - 3], body[j - 1])
        } else {
            j += 1;
            (body[j - 1], body[j - 1])
        };
        if hi < lo {
            return Err(format!("range `{lo}-{hi}` is reversed in {text:?}"));
        }
        if (lo as u32) < 0xD800 && (hi as u32) > 0xDFFF {
            return Err(format!("range `{lo}-{hi}` is too wide in {text:?}"));
        }
        ranges.push((lo, hi));
    }
    Ok((ranges, start + len + 1))
}

fn repeat(inner: &str, text: &str) -> Result<(u64, u64), String> {
    let num = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|_| format!("bad repeat `{{{inner}}}` in {text:?}"))
    };
    let (min, max) = match inner.split_once(',') {
        Some((a, b)) => (num(a)?, num(b)?),
        None => {
            let n = num(inner)?;
            (n, n)
        }
    };
    if min > max {
        return Err(format!("repeat `{{{inner}}}` has min > max in {text:?}"));
    }
    if max > MAX_REPEAT {
        return Err(format!(
            "repeat `{{{inner}}}` exceeds {MAX_REPEAT} in {text:?}"
        ));
    }
    Ok((min, max))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::rng::key_at;

    fn samples(p: &str, n: u64) -> Vec<String> {
        let p = Pattern::parse(p).unwrap();
        (0..n)
            .map(|k| {
                let mut r = Rng::from_key(key_at(0, k));
                let mut s = String::new();
                p.sample(&mut r, &mut s);
                s
            })
            .collect()
    }

    #[test]
    fn city_lengths_and_charset() {
        let got = samples("City_[1-9]{0,2}", 3000);
        let mut by_len = [0u32; 3];
        for s in &got {
            let tail = s.strip_prefix("City_").expect(s);
            assert!(tail.len() <= 2, "{s}");
            assert!(tail.chars().all(|c| ('1'..='9').contains(&c)), "{s}");
            by_len[tail.len()] += 1;
        }
        // Uniform lengths 0, 1, 2: about 1000 each.
        assert!(by_len.iter().all(|&c| c > 850 && c < 1150), "{by_len:?}");
        let digits: std::collections::BTreeSet<char> =
            got.iter().flat_map(|s| s[5..].chars()).collect();
        assert_eq!(digits.len(), 9);
    }

    #[test]
    fn item_pattern_and_fixed_repeat() {
        for s in samples("Item_[1-9][0-9]{0,2}", 500) {
            let n: u32 = s[5..].parse().unwrap();
            assert!((1..=999).contains(&n), "{s}");
        }
        for s in samples("[a-c]{4}-x?.", 200) {
            let (head, rest) = s.split_at(4);
            assert!(head.chars().all(|c| "abc".contains(c)), "{s}");
            assert!(rest == "-." || rest == "-x.", "{s}");
        }
        for s in samples("[a-zA-Z_]{3}", 200) {
            assert!(
                s.chars().all(|c| c.is_ascii_alphabetic() || c == '_'),
                "{s}"
            );
            assert_eq!(s.len(), 3);
        }
        assert_eq!(samples("abc", 1), vec!["abc".to_string()]);
    }

    #[test]
    fn errors() {
        for bad in [
            "[a-", "a{2", "a{3,1}", "[z-a]", "a*", "(ab)", "[]", "a\\", "x{1001}", "?",
        ] {
            assert!(Pattern::parse(bad).is_err(), "{bad}");
        }
    }
}
