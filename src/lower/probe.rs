//! `probe visible every I [via TARGET.ENDPOINT] [within D]`: the count is chosen (and refused,
//! E0306) exactly as `verify visible` chooses it; the interval is a duration of at least 1 ms.

use super::ingest::{lower_verify, IngestTarget};
use super::values::{duration, single};
use crate::check::{Eval, InstanceId, Scope};
use crate::diag::{Code, Diagnostic};
use crate::plan::ProbePlan;
use crate::syntax::ast;
use crate::value::Value;

/// Below this the probe would be the load: a count every few microseconds.
const MIN_EVERY_NS: i64 = 1_000_000;

/// The phase's probe, `Some(None)` without one.
pub(super) fn lower_probe(
    ev: &Eval<'_>,
    i: &ast::Ingest,
    ingest: IngestTarget<'_>,
    table: &str,
    range: Option<(i64, i64)>,
) -> Option<Option<ProbePlan>> {
    let Some(p) = single(ev, &i.probe, |p| p.span, "probe") else {
        return Some(None);
    };
    let scope = Scope::new(InstanceId::ROOT);
    let every = match duration(ev, &p.every, &scope, false) {
        Some(ns) if ns < MIN_EVERY_NS => ev.fail(
            Diagnostic::error(
                Code::E0203,
                p.every.span,
                "a probe interval must be at least 1ms",
            )
            .label(format!("this is {}", crate::value::fmt_duration(ns)))
            .note("the probe is one count query per interval: `every 100ms` is typical"),
        ),
        d => d,
    };
    let as_verify = ast::Verify {
        via: p.via.clone(),
        within: p.within.clone(),
        span: p.span,
    };
    let count = lower_verify(ev, &as_verify, "probe visible", ingest, table, range);
    Some(Some(ProbePlan {
        count: count?,
        every: Value::Duration(every?),
    }))
}
