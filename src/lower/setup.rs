//! Where an ingest's table DDL runs (`IngestPhase::ddl`), and the refusal of a setup or
//! teardown that has nowhere to run. A line-protocol or QWP endpoint takes no SQL, so its
//! phase sets its table up over another endpoint of the phase; one that has none is refused
//! here rather than skipped at run time, where every run would add its rows to the last one's
//! table and count them in its baseline.

use super::ingest::IngestTarget;
use super::target as targets;
use crate::check::{Ev, Eval};
use crate::diag::{Code, Diagnostic};
use crate::plan::setup::{admin, Admin, Unreachable};
use crate::plan::{EndpointPlan, IngestPhase, ProbePlan, Setup, Teardown, VerifyPlan};
use crate::span::Span;
use crate::syntax::ast::{self, EndpointKind};

/// The endpoint that takes the phase's DDL: the ingest endpoint when it is `pg` or `sqlite`,
/// else the SQL endpoint of `verify visible`'s count, else of `probe visible`'s, else of the
/// target's first SQL count rule, else the target's first `pg` or `sqlite` endpoint. `None`
/// for a null sink, and where none of these exists.
pub(super) fn ddl_endpoint(
    ev: &Eval<'_>,
    (tinst, target, ingest_ep, ingest_plan): IngestTarget<'_>,
    verify: Option<&VerifyPlan>,
    probe: Option<&ProbePlan>,
) -> Option<EndpointPlan> {
    match ingest_ep.kind {
        EndpointKind::Null => return None,
        EndpointKind::Pg | EndpointKind::Sqlite => return Some(ingest_plan.clone()),
        _ => {}
    }
    let counted = verify
        .into_iter()
        .chain(probe.map(|p| &p.count))
        .find(|c| c.language == "sql");
    if let Some(c) = counted {
        return Some(c.endpoint.clone());
    }
    // The count rule's endpoint, as a count would use it; a rule that names no endpoint fit
    // for SQL is reported where a count uses it, not here.
    let by_rule = target
        .counts
        .iter()
        .filter(|c| c.language == ast::CountLanguage::Sql)
        .find_map(|c| {
            target
                .endpoints
                .iter()
                .find(|e| e.name() == c.endpoint.name)
        })
        .filter(|e| {
            matches!(
                e.kind,
                EndpointKind::Pg | EndpointKind::Sqlite | EndpointKind::Http | EndpointKind::Qwp
            )
        });
    let sql = by_rule.or_else(|| {
        target
            .endpoints
            .iter()
            .find(|e| matches!(e.kind, EndpointKind::Pg | EndpointKind::Sqlite))
    })?;
    targets::endpoint_plan(ev, tinst, target, sql)
}

/// Refuses a `setup recreate|truncate`, `setup sql` or `teardown drop` that has nowhere to run
/// (E0302, at the clause). Without a `setup` clause the default `recreate` becomes `shared`,
/// with a warning at `into`: the phase leaves the table as it is, and says so. Stores with
/// their own API are `targets::check_store_admin`'s. `setup`, `user` (the first `setup sql`)
/// and `teardown` are the spans of the clauses when written; `timed` tells whether the rows
/// have a time range (`setup shared` needs one when the phase counts rows).
pub(super) fn check_setup(
    ev: &Eval<'_>,
    phase: &mut IngestPhase,
    (setup, user, teardown): (Option<Span>, Option<Span>, Option<Span>),
    into: Span,
    timed: bool,
) -> Ev<()> {
    let Admin::Unreachable(why) = admin(phase) else {
        return Some(());
    };
    let counts = phase.verify.is_some() || phase.probe.is_some();
    let mut refused = false;
    if matches!(phase.setup, Setup::Recreate | Setup::Truncate) {
        let statements = match phase.setup {
            Setup::Truncate => "`TRUNCATE TABLE`",
            _ => "`DROP TABLE` and `CREATE TABLE`",
        };
        match setup {
            Some(span) => {
                let d = refusal(phase, &why, &format!("setup {}", phase.setup), span)
                    .label(format!("nothing takes {statements} here"))
                    .note(if timed || !counts {
                        "or leave the table as it is: `setup shared`"
                    } else {
                        "or create the table first and add the rows to it: that needs `setup \
                         shared`, which counts rows inside the cell's time range, and these \
                         rows have none"
                    });
                ev.error(d);
                refused = true;
            }
            None => {
                let d = Diagnostic::warning(
                    Code::W0004,
                    into,
                    format!(
                        "the default `setup recreate` cannot run here: {}",
                        short(phase, &why)
                    ),
                )
                .label("this phase leaves the table as it is: its rows add to what it holds")
                .note(ways(phase, &why))
                .note(if timed || !counts {
                    "write `setup shared` to say that the table is left as it is"
                } else {
                    "give the phase an endpoint that takes SQL to start from an empty table"
                });
                ev.error(d);
                phase.setup = Setup::Shared;
            }
        }
    }
    if !phase.setup_ddl.is_empty() {
        let d = refusal(phase, &why, "setup sql", user.unwrap_or(into))
            .label("nothing takes these statements here");
        ev.error(d);
        refused = true;
    }
    if phase.teardown == Teardown::Drop {
        let d = refusal(phase, &why, "teardown drop", teardown.unwrap_or(into))
            .label("nothing takes `DROP TABLE` here")
            .note("or keep the table: `teardown keep`");
        ev.error(d);
        refused = true;
    }
    (!refused).then_some(())
}

fn refusal(phase: &IngestPhase, why: &Unreachable, what: &str, span: Span) -> Diagnostic {
    Diagnostic::error(
        Code::E0302,
        span,
        format!("`{what}` has nowhere to run: {}", short(phase, why)),
    )
    .note(ways(phase, why))
}

/// Why, in a few words.
fn short(phase: &IngestPhase, why: &Unreachable) -> String {
    match why {
        Unreachable::NoSqlEndpoint => format!(
            "the phase has no endpoint that takes SQL (`{}.{}` is {})",
            phase.endpoint.target, phase.endpoint.name, phase.endpoint.kind
        ),
        Unreachable::NoDdl { dialect } => {
            format!("wlrun writes no table DDL for dialect `{dialect}`")
        }
    }
}

/// Where the DDL would run, and how to give it a place.
fn ways(phase: &IngestPhase, why: &Unreachable) -> String {
    match why {
        Unreachable::NoSqlEndpoint => format!(
            "the DDL runs on the ingest endpoint when it is `pg` or `sqlite`, else on the SQL \
             endpoint of the phase's count (`verify visible`, `probe visible`, the target's \
             `count rows via ENDPOINT sql \"...\"`), else on the target's first `pg` or \
             `sqlite` endpoint: add one to target `{}`",
            phase.endpoint.target
        ),
        Unreachable::NoDdl { .. } => "its tables are made outside wlrun".to_string(),
    }
}
