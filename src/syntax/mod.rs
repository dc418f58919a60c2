//! From text to AST. Parsing stops at the first error. Pest is an implementation detail of this
//! module: nothing outside it sees a `Pair` or a `Rule`.

pub mod ast;
mod depth;
mod literal;
mod parser;
mod rule_names;
pub mod sexpr;

pub use depth::MAX_DEPTH;

use crate::diag::{Code, Diagnostic};
use crate::source::SourceMap;
use crate::span::{FileId, Span};

/// The most operators one expression may chain; with [`MAX_DEPTH`] it bounds every recursion
/// over the tree, so no input can overflow the stack.
pub const MAX_EXPR_OPERATORS: usize = 128;

pub fn parse(map: &SourceMap, file: FileId) -> Result<ast::File, Diagnostic> {
    let top = top_pair(map, file, &map.get(file).text, Top::File)?;
    parser::Walker { file }.file(top)
}

/// Parses a single value, the right-hand side of `--param name=VALUE`, which starts `from`
/// bytes into its file: the file is the flag as written (`--param workers=x`), so that an error
/// quotes the whole flag and points into its value.
pub fn parse_value(map: &SourceMap, file: FileId, from: usize) -> Result<ast::Expr, Diagnostic> {
    let text = &map.get(file).text;
    // Blanked rather than cut off, so that pest's positions are the file's own.
    let blanked = " ".repeat(from) + &text[from..];
    let top = top_pair(map, file, &blanked, Top::Value)?;
    let expr = top.into_inner().next().expect("grammar: value expr");
    parser::Walker { file }.expr(expr)
}

/// What a text is parsed as: a workload file or one `--param` value.
#[derive(Clone, Copy, PartialEq)]
enum Top {
    File,
    Value,
}

/// The top rule's pair over the file's text, or the diagnostic for its first mistake. Nesting
/// is checked first, so no input can overflow the parser's stack.
fn top_pair<'t>(
    map: &SourceMap,
    file: FileId,
    text: &'t str,
    top: Top,
) -> Result<pest::iterators::Pair<'t, parser::Rule>, Diagnostic> {
    if let Some(at) = depth::too_deep(text) {
        let d = Diagnostic::error(
            Code::E0002,
            Span::new(file, at, at + 1),
            format!("nesting deeper than {MAX_DEPTH} levels"),
        );
        return Err(match top {
            Top::File => d.label("this opening goes too deep").note(
                "brackets, braces, parentheses, strings and `${...}` count; flatten the value",
            ),
            Top::Value => d,
        });
    }
    let parse = match top {
        Top::File => parser::parse_pairs,
        Top::Value => parser::parse_value_pairs,
    };
    let mut pairs = parse(text).map_err(|_| {
        if let Some(d) = unclosed(file, text).filter(|_| top == Top::File) {
            return d;
        }
        // Pest records the literal tokens it tried (`)`, `,`, ...) only with error detail on,
        // which costs time on every parse; turn it on for the failing text alone.
        pest::set_error_detail(true);
        let e = parse(text).expect_err("the same text fails again");
        syntax_error(map, file, &e)
    })?;
    Ok(pairs.next().expect("grammar: top rule"))
}

/// An unterminated string or block comment, named as such rather than by what pest expected.
fn unclosed(file: FileId, text: &str) -> Option<Diagnostic> {
    match depth::unclosed(text)? {
        depth::Unclosed::String(at) => Some(
            Diagnostic::error(
                Code::E0001,
                Span::new(file, at, at + 1),
                "unterminated string",
            )
            .label("this string is never closed")
            .note("close it with `\"`; a `\"` inside a string is written `\\\"`"),
        ),
        depth::Unclosed::Comment(at) => Some(
            Diagnostic::error(
                Code::E0001,
                Span::new(file, at, at + 2),
                "unterminated block comment",
            )
            .label("this comment is never closed")
            .note("close it with `*/`"),
        ),
    }
}

fn describe(names: &[&str]) -> String {
    match names {
        [] => String::from("something else"),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} or {}", init.join(", "), last),
    }
}

/// What the parser met at `pos`, for the message, and its length in bytes. `quoted`: whether
/// the text itself may be shown (`SourceFile::quoted`); else only what kind of thing it is.
fn found_at(text: &str, pos: usize, quoted: bool) -> (String, usize) {
    let rest = &text[pos.min(text.len())..];
    let Some(first) = rest.chars().next() else {
        return ("the end of the file".to_string(), 0);
    };
    let len = if first.is_alphanumeric() || first == '_' {
        rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len())
    } else {
        first.len_utf8()
    };
    let shown: String = rest[..len].chars().take(24).collect();
    let shown = match first {
        '\0' => "a NUL byte".to_string(),
        '\n' | '\r' => "the end of the line".to_string(),
        c if c.is_control() => format!("the control character U+{:04X}", c as u32),
        _ if !quoted => "text that is not wlrun syntax".to_string(),
        _ => format!("`{shown}`"),
    };
    (shown, len)
}

fn syntax_error(map: &SourceMap, file: FileId, e: &pest::error::Error<parser::Rule>) -> Diagnostic {
    use pest::error::{ErrorVariant, InputLocation};
    let text = &map.get(file).text;
    let pos = match e.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    };
    let mut pos = pos;
    let mut names: Vec<String> = Vec::new();
    let attempts = e.parse_attempts();
    // When pest's attempts went further than the reported position (a rule failed after a
    // prefix matched, then the file rule backed off), the further point is the mistake.
    let further = attempts.as_ref().is_some_and(|a| a.max_position > pos);
    if let Some(attempts) = &attempts {
        for t in attempts.expected_tokens() {
            // The token type is not exported; its Display is the literal text.
            let token = t.to_string();
            let punct = !token.is_empty()
                && token.chars().all(|c| "()[]{},:=\"".contains(c))
                && token != "==";
            let word = further && token.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if punct || (word && !token.is_empty()) {
                names.push(format!("`{token}`"));
            }
        }
        if further && !names.is_empty() {
            pos = attempts.max_position;
        }
    }
    let quoted = map.get(file).quoted;
    let (found, len) = found_at(text, pos, quoted);
    if let (ErrorVariant::ParsingError { positives, .. }, false) =
        (&e.variant, further && !names.is_empty())
    {
        for r in positives {
            let name = if parser::is_operator(*r) {
                "an operator".to_string()
            } else {
                rule_names::rule_name(r).to_string()
            };
            names.push(name);
        }
    }
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    let word_at = &text[pos.min(text.len())..pos.min(text.len()) + len];
    let keywords: Vec<&str> = names
        .iter()
        .filter_map(|n| n.strip_prefix('`')?.strip_suffix('`'))
        // A clause named by its shape (`workers N`) is still spelt by its first word.
        .filter_map(|n| n.split(' ').next())
        .filter(|k| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    let suggestion = if quoted
        && word_at
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        crate::diag::suggest(word_at, keywords.iter().copied())
    } else {
        None
    };
    let expected: Vec<&str> = names.iter().map(String::as_str).collect();
    let message = if expected.is_empty() {
        format!("unexpected {found}")
    } else {
        format!("expected {}, found {found}", describe(&expected))
    };
    let label = if expected.is_empty() {
        "unexpected here".to_string()
    } else {
        format!("expected {}", describe(&expected))
    };
    let d = Diagnostic::error(Code::E0001, Span::new(file, pos, pos + len), message).label(label);
    match suggestion {
        Some(s) => d.note(format!("did you mean `{s}`?")),
        None => d,
    }
}
