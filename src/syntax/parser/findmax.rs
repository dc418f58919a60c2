//! The walker of `find max rate from R [up to R] where CONDITION [options]`.

use pest::iterators::Pair;

use super::{unexpected, Res, Rule, Walker};
use crate::syntax::ast::{Clause, Expr, FindMax};

impl Walker {
    pub(super) fn find_max(&self, c: Pair<'_, Rule>) -> Res<Clause<FindMax>> {
        let span = self.span(&c);
        let mut exprs = Vec::new();
        let (mut up_to, mut samples, mut growth, mut resolution) = (vec![], vec![], vec![], vec![]);
        let mut confirm = vec![];
        for i in c.into_inner() {
            match i.as_rule() {
                Rule::kw_find | Rule::kw_max | Rule::kw_rate | Rule::kw_from | Rule::kw_where => {}
                Rule::expr => exprs.push(self.expr(i)?),
                Rule::findmax_cap => up_to.push(self.option_value(i)?),
                Rule::findmax_option => {
                    let o = i.into_inner().next().expect("grammar: find max option");
                    let list = match o.as_rule() {
                        Rule::findmax_cap => &mut up_to,
                        Rule::findmax_samples => &mut samples,
                        Rule::findmax_growth => &mut growth,
                        Rule::findmax_resolution => &mut resolution,
                        Rule::findmax_confirm => &mut confirm,
                        r => unexpected(r, "find max option"),
                    };
                    list.push(self.option_value(o)?);
                }
                r => unexpected(r, "find max"),
            }
        }
        let mut exprs = exprs.into_iter();
        let value = FindMax {
            from: exprs.next().expect("grammar: find max from"),
            condition: exprs.next().expect("grammar: find max condition"),
            up_to,
            samples,
            growth,
            resolution,
            confirm,
        };
        Ok(Clause { value, span })
    }

    fn option_value(&self, o: Pair<'_, Rule>) -> Res<Expr> {
        let e = o
            .into_inner()
            .find(|p| p.as_rule() == Rule::expr)
            .expect("grammar: option value");
        self.expr(e)
    }
}
