//! `stage D [rate R [to R2] [poisson|fixed]] [workers N] [warmup W]`, a clause of a run.

use pest::iterators::Pair;

use super::{unexpected, Res, Rule, Walker};
use crate::syntax::ast::{Arrival, Stage, StageRate};

impl Walker {
    pub(super) fn stage(&self, c: Pair<'_, Rule>) -> Res<Stage> {
        let span = self.span(&c);
        let mut duration = None;
        let mut rate = None;
        let mut workers = None;
        let mut warmup = None;
        for i in c.into_inner() {
            match i.as_rule() {
                Rule::kw_stage => {}
                Rule::expr => duration = Some(self.expr(i)?),
                Rule::stage_rate => rate = Some(self.stage_rate(i)?),
                Rule::stage_workers => workers = self.last_expr(i)?,
                Rule::stage_warmup => warmup = self.last_expr(i)?,
                r => unexpected(r, "stage"),
            }
        }
        Ok(Stage {
            duration: duration.expect("grammar: a stage's duration"),
            rate,
            workers,
            warmup,
            span,
        })
    }

    fn stage_rate(&self, c: Pair<'_, Rule>) -> Res<StageRate> {
        let span = self.span(&c);
        let mut exprs = Vec::new();
        let mut arrival = None;
        for i in c.into_inner() {
            match i.as_rule() {
                Rule::kw_rate | Rule::kw_to => {}
                Rule::expr => exprs.push(self.expr(i)?),
                Rule::arrival => {
                    arrival = Some(if i.as_str() == "poisson" {
                        Arrival::Poisson
                    } else {
                        Arrival::Fixed
                    })
                }
                r => unexpected(r, "stage rate"),
            }
        }
        let mut exprs = exprs.into_iter();
        Ok(StageRate {
            from: exprs.next().expect("grammar: a stage's rate"),
            to: exprs.next(),
            arrival,
            span,
        })
    }

    /// The expression of a `KEYWORD expr` pair.
    fn last_expr(&self, c: Pair<'_, Rule>) -> Res<Option<crate::syntax::ast::Expr>> {
        let mut out = None;
        for i in c.into_inner() {
            if i.as_rule() == Rule::expr {
                out = Some(self.expr(i)?);
            }
        }
        Ok(out)
    }
}
