//! The string functions that turn one string into an array, refused before they build one past
//! `MAX_ARRAY_SIZE`. Rhai checks an array's size only once the function that made it has
//! returned: `split("")` on an 8 MiB string built 8 million one-character strings (1.08 GB)
//! before the limit was looked at. These take the place of the standard package's functions
//! of the same names (an engine's own functions are found before its packages') and count the
//! pieces first, which allocates nothing.

use rhai::{Array, Dynamic, Engine, EvalAltResult, ImmutableString, Position, INT};

use super::{grouped, MAX_ARRAY_SIZE};

type Made = Result<Array, Box<EvalAltResult>>;

/// The pieces, when there are few enough of them; else an error saying how many `function`
/// would have made (the engine puts the call's position on it).
fn within(function: &str, pieces: usize, make: impl FnOnce() -> Array) -> Made {
    if pieces > MAX_ARRAY_SIZE {
        let message = format!(
            "{function}() would make {} pieces; an array holds at most {} elements",
            grouped(pieces as u64),
            grouped(MAX_ARRAY_SIZE as u64)
        );
        return Err(EvalAltResult::ErrorRuntime(message.into(), Position::NONE).into());
    }
    Ok(make())
}

/// How many pieces `split(delimiter)` makes: an empty delimiter splits around every character.
fn pieces_str(s: &str, delimiter: &str) -> usize {
    if delimiter.is_empty() {
        s.chars().count() + 2
    } else {
        s.matches(delimiter).count() + 1
    }
}

fn pieces_char(s: &str, delimiter: char) -> usize {
    s.matches(delimiter).count() + 1
}

/// At most `segments` of `pieces`; fewer than one means one, as Rhai has it.
fn at_most(pieces: usize, segments: INT) -> usize {
    pieces.min(usize::try_from(segments.max(1)).unwrap_or(usize::MAX))
}

fn strings<'a>(parts: impl Iterator<Item = &'a str>) -> Array {
    parts.map(Into::into).collect()
}

pub(super) fn register(e: &mut Engine) {
    e.register_fn("to_chars", |s: &str| -> Made {
        within("to_chars", s.chars().count(), || {
            s.chars().map(Dynamic::from).collect()
        })
    });
    e.register_fn("split", |s: ImmutableString| -> Made {
        if s.is_empty() {
            return Ok(vec![Dynamic::from(s.clone())]);
        }
        within("split", s.split_whitespace().count(), || {
            strings(s.split_whitespace())
        })
    });
    e.register_fn("split", |s: ImmutableString, d: &str| -> Made {
        if s.is_empty() {
            return Ok(vec![Dynamic::from(s.clone())]);
        }
        within("split", pieces_str(&s, d), || strings(s.split(d)))
    });
    e.register_fn("split", |s: ImmutableString, d: char| -> Made {
        if s.is_empty() {
            return Ok(vec![Dynamic::from(s.clone())]);
        }
        within("split", pieces_char(&s, d), || strings(s.split(d)))
    });
    e.register_fn("split", |s: ImmutableString, d: &str, n: INT| -> Made {
        if s.is_empty() || n <= 1 {
            return Ok(vec![Dynamic::from(s.clone())]);
        }
        let n = at_most(pieces_str(&s, d), n);
        within("split", n, || strings(s.splitn(n, d)))
    });
    e.register_fn("split", |s: ImmutableString, d: char, n: INT| -> Made {
        if s.is_empty() || n <= 1 {
            return Ok(vec![Dynamic::from(s.clone())]);
        }
        let n = at_most(pieces_char(&s, d), n);
        within("split", n, || strings(s.splitn(n, d)))
    });
    e.register_fn("split_rev", |s: ImmutableString, d: &str| -> Made {
        if s.is_empty() {
            return Ok(vec![Dynamic::from(s.clone())]);
        }
        within("split_rev", pieces_str(&s, d), || strings(s.rsplit(d)))
    });
    e.register_fn("split_rev", |s: ImmutableString, d: char| -> Made {
        if s.is_empty() {
            return Ok(vec![Dynamic::from(s.clone())]);
        }
        within("split_rev", pieces_char(&s, d), || strings(s.rsplit(d)))
    });
    e.register_fn("split_rev", |s: ImmutableString, d: &str, n: INT| -> Made {
        if s.is_empty() || n <= 1 {
            return Ok(vec![Dynamic::from(s.clone())]);
        }
        let n = at_most(pieces_str(&s, d), n);
        within("split_rev", n, || strings(s.rsplitn(n, d)))
    });
    e.register_fn("split_rev", |s: ImmutableString, d: char, n: INT| -> Made {
        if s.is_empty() || n <= 1 {
            return Ok(vec![Dynamic::from(s.clone())]);
        }
        let n = at_most(pieces_char(&s, d), n);
        within("split_rev", n, || strings(s.rsplitn(n, d)))
    });
}
