//! `probe visible every I [via TARGET.ENDPOINT] [within D]` in an ingest block.

use pest::iterators::Pair;

use super::{unexpected, Res, Rule, Walker};
use crate::syntax::ast::Probe;

impl Walker {
    pub(super) fn probe(&self, c: Pair<'_, Rule>) -> Res<Probe> {
        let span = self.span(&c);
        let mut every = None;
        let mut via = None;
        let mut within = None;
        for i in c.into_inner() {
            match i.as_rule() {
                Rule::kw_probe | Rule::kw_visible | Rule::kw_every | Rule::kw_via => {}
                Rule::kw_within => {}
                Rule::path => via = Some(self.path(i)),
                // The grammar puts `every`'s value first and `within`'s last.
                Rule::expr if every.is_none() => every = Some(self.expr(i)?),
                Rule::expr => within = Some(self.expr(i)?),
                r => unexpected(r, "probe"),
            }
        }
        let every = every.expect("grammar: probe every");
        Ok(Probe {
            every,
            via,
            within,
            span,
        })
    }
}
