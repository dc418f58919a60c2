//! `null one of [...] P%` and `late P% by N rows`: what a schema's generator does to its rows
//! once drawn (TSBS iot's realism layer, in general terms), lowered into `plan::Disorder`.

use super::values::{positive_int, single};
use crate::check::{Eval, Scope};
use crate::diag::{Code, Diagnostic};
use crate::plan::{ColumnPlan, Disorder, Late, NullOne};
use crate::syntax::ast;
use crate::value::Value;

pub(super) fn lower_disorder(
    ev: &Eval<'_>,
    s: &ast::Schema,
    columns: &[ColumnPlan],
    scope: &Scope,
    ok: &mut bool,
) -> Option<Disorder> {
    let mut d = Disorder::default();
    for (names, n) in &s.null_one {
        let share = share(ev, n, scope, ok);
        let mut picked = Vec::new();
        for c in names {
            match columns.iter().position(|p| p.name == c.name) {
                Some(i) if columns[i].role == "timestamp" => {
                    ev.error(
                        Diagnostic::error(
                            Code::E0501,
                            c.span,
                            format!("the timestamp `{}` cannot be null", c.name),
                        )
                        .label("a row keeps its time"),
                    );
                    *ok = false;
                }
                Some(i) => picked.push(i),
                // A column whose own lowering failed has been reported already.
                None if s.columns.iter().any(|a| a.name.name == c.name) => *ok = false,
                None => {
                    ev.error(
                        Diagnostic::error(
                            Code::E0502,
                            c.span,
                            format!("no column `{}` in schema `{}`", c.name, s.name),
                        )
                        .label("not a column of this schema"),
                    );
                    *ok = false;
                }
            }
        }
        if share > 0.0 && !picked.is_empty() {
            d.null_one.push(NullOne {
                columns: picked,
                share,
            });
        }
    }
    if let Some((l, by, _)) = single(ev, &s.late, |l| l.2, "late") {
        let share = share(ev, l, scope, ok);
        match positive_int(ev, by, scope, "the median lateness in rows") {
            Some(median_rows) if share > 0.0 => d.late = Some(Late { share, median_rows }),
            Some(_) => {}
            None => *ok = false,
        }
    }
    (d != Disorder::default()).then_some(d)
}

/// A share of the rows: `10%`, or a fraction in [0, 1].
fn share(ev: &Eval<'_>, e: &ast::Expr, scope: &Scope, ok: &mut bool) -> f64 {
    match ev.eval(e, scope) {
        Some(Value::Percent(p)) if (0.0..=100.0).contains(&p) => p / 100.0,
        Some(Value::Float(f)) if (0.0..=1.0).contains(&f) => f,
        Some(Value::Percent(p)) => {
            ev.error(
                Diagnostic::error(Code::E0203, e.span, format!("a share of {p}% of the rows"))
                    .label("a share is from 0% to 100%"),
            );
            *ok = false;
            0.0
        }
        Some(other) => {
            ev.error(ev.mismatch(e.span, "a share of the rows such as `10%`", &other, scope));
            *ok = false;
            0.0
        }
        None => {
            *ok = false;
            0.0
        }
    }
}
