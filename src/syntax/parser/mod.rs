//! The pest parser and one walker per rule that builds an AST node. Pest types stay in this
//! module; a catch-all arm names the rule it did not expect, so a grammar change that the walkers
//! miss fails loudly in tests instead of silently dropping input.

use pest::iterators::{Pair, Pairs};
use pest::Parser as _;
use pest_derive::Parser;

mod blocks;
mod decls;
mod expr;
mod findmax;
mod probe;
mod stages;
mod together;

use super::ast::*;
use crate::diag::{Code, Diagnostic};
use crate::span::{FileId, Ident, Span};

// pest_generator resolves the grammar path against CARGO_MANIFEST_DIR first, so the grammar can
// live in the top-level `grammar/` folder.
#[derive(Parser)]
#[grammar = "grammar/workload.pest"]
pub(crate) struct WlParser;

pub(crate) type Res<T> = Result<T, Diagnostic>;

/// The end of the last token in `text[from..to]`, skipping whitespace and comments; `from` when
/// there is none.
fn token_end(text: &str, from: usize, to: usize) -> usize {
    let text = &text[..to];
    let (mut i, mut end) = (from, from);
    while let Some(c) = text[i..].chars().next() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            i = rest.find('\n').map_or(to, |n| i + n);
        } else if let Some(body) = rest.strip_prefix("/*") {
            i = body.find("*/").map_or(to, |n| i + 2 + n + 2);
        } else {
            i += c.len_utf8();
            if !c.is_whitespace() {
                end = i;
            }
        }
    }
    end
}

pub(crate) fn parse_pairs(text: &str) -> Result<Pairs<'_, Rule>, Box<pest::error::Error<Rule>>> {
    WlParser::parse(Rule::file, text).map_err(Box::new)
}

pub(crate) fn parse_value_pairs(
    text: &str,
) -> Result<Pairs<'_, Rule>, Box<pest::error::Error<Rule>>> {
    WlParser::parse(Rule::value_only, text).map_err(Box::new)
}

pub(crate) struct Walker {
    pub file: FileId,
}

fn unexpected(rule: Rule, walker: &str) -> ! {
    unreachable!("grammar rule {rule:?} reached walker `{walker}`")
}

impl Walker {
    /// A pair's span without the whitespace and comments pest skips after its last part (a rule
    /// ending in a repetition keeps them), so a caret stops at the text it is about.
    pub(super) fn span(&self, p: &Pair<'_, Rule>) -> Span {
        let s = p.as_span();
        // Past the last innermost pair only unnamed literal tokens (`)`, `]`, `"`) and skipped
        // trivia remain, never a string's text, so `//` in a string is not taken for a comment.
        // (An outer nested pair may itself end in skipped trivia.) A pair with none inside is a
        // token, or a string's text, and exact as it is.
        let Some(tail_from) = p
            .clone()
            .into_inner()
            .flatten()
            .filter(|c| c.clone().into_inner().next().is_none())
            .map(|c| c.as_span().end())
            .max()
        else {
            return Span::new(self.file, s.start(), s.end());
        };
        Span::new(
            self.file,
            s.start(),
            token_end(s.get_input(), tail_from, s.end()),
        )
    }

    pub(super) fn ident(&self, p: Pair<'_, Rule>) -> Ident {
        debug_assert_eq!(p.as_rule(), Rule::ident);
        Ident {
            name: p.as_str().to_string(),
            span: self.span(&p),
        }
    }

    pub(super) fn invalid(&self, p: &Pair<'_, Rule>, message: String) -> Diagnostic {
        Diagnostic::error(Code::E0005, self.span(p), message).label("invalid literal")
    }

    pub fn file(&self, pair: Pair<'_, Rule>) -> Res<File> {
        let mut items = Vec::new();
        for p in pair.into_inner() {
            let item = match p.as_rule() {
                Rule::import => Item::Import(self.import(p)?),
                Rule::workload => Item::Workload(self.workload(p)?),
                Rule::param => Item::Param(self.param(p)?),
                Rule::target => Item::Target(self.target(p)?),
                Rule::matrix => Item::Matrix(self.matrix(p)?),
                Rule::schema => Item::Schema(self.schema(p)?),
                Rule::ingest => Item::Ingest(self.ingest(p)?),
                Rule::query => Item::Query(self.query(p)?),
                Rule::hook => Item::Hook(self.hook(p)?),
                Rule::run => Item::Run(self.run(p)?),
                Rule::concurrent => Item::Concurrent(self.concurrent(p)),
                Rule::EOI => continue,
                r => unexpected(r, "file"),
            };
            items.push(item);
        }
        Ok(File { items })
    }
}

fn is_operand(r: Rule) -> bool {
    !is_operator(r)
}

pub(crate) fn is_operator(r: Rule) -> bool {
    matches!(
        r,
        Rule::neg
            | Rule::not
            | Rule::or
            | Rule::and
            | Rule::eq
            | Rule::ne
            | Rule::lt
            | Rule::le
            | Rule::gt
            | Rule::ge
            | Rule::member
            | Rule::range
            | Rule::add
            | Rule::sub
            | Rule::mul
            | Rule::div
            | Rule::rem
    )
}

/// The last child of a pair: the value of a `keyword value` clause.
fn last(p: Pair<'_, Rule>) -> Pair<'_, Rule> {
    p.into_inner().last().expect("grammar: clause has a value")
}
