//! The walker of a `concurrent` block: the names of the blocks that run at the same time.

use pest::iterators::Pair;

use super::{unexpected, Rule, Walker};
use crate::span::Ident;
use crate::syntax::ast::{Clause, Concurrent};

impl Walker {
    /// `concurrent NAME { phases A, B  until A }`. Names only: what they name is checked later.
    pub(super) fn concurrent(&self, p: Pair<'_, Rule>) -> Concurrent {
        let span = self.span(&p);
        let mut c = Concurrent {
            name: Ident {
                name: String::new(),
                span,
            },
            phases: vec![],
            until: vec![],
            span,
        };
        for part in p.into_inner() {
            let cspan = self.span(&part);
            match part.as_rule() {
                Rule::kw_concurrent => {}
                Rule::ident => c.name = self.ident(part),
                Rule::phases_clause => c.phases.push(Clause {
                    value: part
                        .into_inner()
                        .filter(|x| x.as_rule() == Rule::ident)
                        .map(|x| self.ident(x))
                        .collect(),
                    span: cspan,
                }),
                Rule::until_clause => {
                    if let Some(name) = part.into_inner().find(|x| x.as_rule() == Rule::ident) {
                        c.until.push(Clause {
                            value: self.ident(name),
                            span: cspan,
                        });
                    }
                }
                r => unexpected(r, "concurrent"),
            }
        }
        c
    }
}
