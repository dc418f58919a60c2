//! `series from SCHEMA`: a schema whose series are another's. It takes that schema's series key
//! and per-series columns, which keep drawing from that schema's streams (`ColumnPlan::from`),
//! so two tables of the same trucks agree on every truck's tags (TSBS iot's readings and
//! diagnostics), and the other schema can be loaded as the tags table itself.

use std::borrow::Cow;

use crate::check::{Decl, Eval, InstanceId};
use crate::diag::{Code, Diagnostic};
use crate::syntax::ast::{self, ColumnRole, Per};

/// `s` written out: its loops expanded (`repeat::expand`), then the columns `series from`
/// takes put first. `false` after a mistake (reported), with what could be written out.
pub(super) fn written_out<'s>(
    ev: &Eval<'_>,
    inst: InstanceId,
    s: &'s ast::Schema,
) -> (Cow<'s, ast::Schema>, bool) {
    written_out_at(ev, inst, s, 0)
}

/// How many schemas a `series from` may go through: a cycle stops here.
const MAX_CHAIN: u32 = 8;

fn written_out_at<'s>(
    ev: &Eval<'_>,
    inst: InstanceId,
    s: &'s ast::Schema,
    depth: u32,
) -> (Cow<'s, ast::Schema>, bool) {
    let (expanded, mut ok) = super::repeat::expand(ev, inst, s);
    let Some((path, span)) = s.series_from.first() else {
        return (expanded, ok);
    };
    for (_, extra) in s.series_from.iter().skip(1) {
        ev.error(
            Diagnostic::error(Code::E0108, *extra, "`series from` is given twice")
                .label("a schema has one series key")
                .also(*span, "the first one is here"),
        );
        ok = false;
    }
    if let Some(own) = s.columns.iter().find(|c| c.role == ColumnRole::Series) {
        ev.error(
            Diagnostic::error(
                Code::E0501,
                own.name.span,
                "a series key beside `series from`",
            )
            .label("the series are the other schema's")
            .also(*span, "taken from here"),
        );
        return (expanded, false);
    }
    let source = match ev.resolve_decl(path, inst) {
        Ok((sinst, Decl::Schema(x), used)) if used == path.len() => (sinst, x),
        _ => {
            let names: Vec<&str> = path.iter().map(|i| i.name.as_str()).collect();
            ev.error(
                Diagnostic::error(
                    Code::E0104,
                    *span,
                    format!("`{}` is not a schema", names.join(".")),
                )
                .label("`series from` names a schema with a series key"),
            );
            return (expanded, false);
        }
    };
    let (sinst, x) = source;
    if depth >= MAX_CHAIN || x.name == s.name {
        ev.error(
            Diagnostic::error(
                Code::E0501,
                *span,
                "schemas that take their series from each other",
            )
            .label("one of them must have the series key"),
        );
        return (expanded, false);
    }
    let (theirs, their_ok) = written_out_at(ev, sinst, x, depth + 1);
    let owner = theirs.name.name.clone();
    let taken: Vec<ast::Column> = theirs
        .columns
        .iter()
        .filter(|c| per_series(c))
        .map(|c| ast::Column {
            owner: Some(c.owner.clone().unwrap_or_else(|| owner.clone())),
            ..c.clone()
        })
        .collect();
    if !taken.iter().any(|c| c.role == ColumnRole::Series) {
        ev.error(
            Diagnostic::error(
                Code::E0501,
                *span,
                format!("schema `{}` has no series key", x.name),
            )
            .label("nothing to take the series from"),
        );
        ok = false;
    }
    let mut columns = taken;
    columns.extend(expanded.columns.iter().cloned());
    let written = ast::Schema {
        columns,
        ..expanded.into_owned()
    };
    (Cow::Owned(written), ok && their_ok)
}

/// The series key and the columns drawn once per series: tags unless `per row`, fields with
/// `per series`.
fn per_series(c: &ast::Column) -> bool {
    let said = c.per.first().map(|(p, _)| *p);
    match c.role {
        ColumnRole::Series => true,
        ColumnRole::Tag => said != Some(Per::Row),
        ColumnRole::Field => said == Some(Per::Series),
        ColumnRole::Timestamp => false,
    }
}
