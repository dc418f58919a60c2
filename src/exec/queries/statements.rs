//! An instance's statements on one connection, and its result judged: `sql`, then each
//! `then sql` (YCSB's read-modify-write is a SELECT then an UPDATE of the same key), between
//! BEGIN and COMMIT under `transaction`; then `expect affected` (an UPDATE of a missing key is
//! an error, never throughput) and `not found when` (a read that finds nothing is counted
//! apart, neither ok nor failed).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::plan::{InstanceCheck, QueryPlan};
use crate::query::sql::{changes_rows, verb};
use crate::query::transport::Transport;
use crate::query::{Instance, Outcome, QueryError, QueryErrorClass};

/// A query type's statements and the rules its results are judged by, worked out once.
pub(super) struct Rules {
    /// Per statement (`sql`, then each `then sql`): its verb, and whether it changes rows (so
    /// that the server's count is rows changed, not rows returned).
    verbs: Vec<(String, bool)>,
    transaction: bool,
    checks: Vec<InstanceCheck>,
    not_found: Option<InstanceCheck>,
}

/// What an answered instance was.
pub(super) enum Verdict {
    Ok,
    NotFound,
    Failed(QueryError),
}

impl Rules {
    pub(super) fn of(q: &QueryPlan) -> Rules {
        let verbs = std::iter::once(&q.sql)
            .chain(&q.instance.then)
            .map(|sql| {
                let v = verb(sql);
                let changes = changes_rows(&v);
                (v, changes)
            })
            .collect();
        Rules {
            verbs,
            transaction: q.instance.transaction,
            checks: q.instance.checks.clone(),
            not_found: q.instance.not_found.clone(),
        }
    }

    /// Whether instances run more than one statement, so that each one's latency is kept.
    pub(super) fn several(&self) -> bool {
        self.verbs.len() > 1
    }

    /// Each statement as the report names it: `1 SELECT`, `2 UPDATE`.
    pub(super) fn statement_names(&self) -> Vec<String> {
        self.verbs
            .iter()
            .enumerate()
            .map(|(i, (v, _))| format!("{} {v}", i + 1))
            .collect()
    }

    /// The instance's result, judged: an `expect affected` not met fails it; otherwise a
    /// `not found when` met makes it not found.
    pub(super) fn judge(&self, out: &Outcome) -> Verdict {
        for c in &self.checks {
            match out.affected {
                Some(n) if c.holds(n) => {}
                Some(n) => {
                    return Verdict::Failed(expectation(format!(
                        "{} row{} changed where `expect {c}`",
                        n,
                        if n == 1 { "" } else { "s" }
                    )))
                }
                None => {
                    return Verdict::Failed(expectation(format!(
                        "the server did not count the rows changed, so `expect {c}` cannot hold"
                    )))
                }
            }
        }
        let found = match &self.not_found {
            Some(c) if c.metric == "rows" => !c.holds(out.rows),
            Some(c) => !out.affected.is_some_and(|n| c.holds(n)),
            None => true,
        };
        if found {
            Verdict::Ok
        } else {
            Verdict::NotFound
        }
    }
}

fn expectation(message: String) -> QueryError {
    QueryError {
        class: QueryErrorClass::Affected,
        message,
        code: None,
        broken: false,
    }
}

/// Runs `inst`'s statements in order; the outcome sums their rows, and the rows changed by
/// those that change rows. `steps` gets each statement's latency, send to last row, when there
/// are several. A failed statement ends the instance (a transaction is rolled back).
pub(super) async fn run(
    conn: &mut Transport,
    inst: &Instance,
    rules: &Rules,
    steps: &mut Vec<Duration>,
) -> Result<Outcome, QueryError> {
    steps.clear();
    if inst.then.is_empty() && !rules.transaction {
        let mut out = conn.run(inst).await?;
        if !rules.verbs.first().is_some_and(|(_, changes)| *changes) {
            out.affected = None;
        }
        return Ok(out);
    }
    if rules.transaction {
        conn.run(&bare(inst, "BEGIN")).await?;
    }
    match statements(conn, inst, rules, steps).await {
        Ok(out) if rules.transaction => {
            conn.run(&bare(inst, "COMMIT")).await?;
            Ok(out)
        }
        Ok(out) => Ok(out),
        Err(mut e) if rules.transaction => {
            // A connection left inside an aborted transaction would refuse every later query.
            if conn.run(&bare(inst, "ROLLBACK")).await.is_err() {
                e.broken = true;
            }
            Err(e)
        }
        Err(e) => Err(e),
    }
}

async fn statements(
    conn: &mut Transport,
    inst: &Instance,
    rules: &Rules,
    steps: &mut Vec<Duration>,
) -> Result<Outcome, QueryError> {
    let started = Instant::now();
    let first = conn.run(inst).await?;
    steps.push(started.elapsed());
    let mut total = Outcome {
        affected: counted(rules, 0, first.affected),
        ..first
    };
    for (i, (sql, binds)) in inst.then.iter().enumerate() {
        let step = Instance {
            query: inst.query,
            index: inst.index,
            sql: sql.clone(),
            binds: binds.clone(),
            route: None,
            then: Vec::new(),
        };
        let started = Instant::now();
        let out = conn.run(&step).await?;
        steps.push(started.elapsed());
        total.rows += out.rows;
        // Checksums are order-insensitive sums over rows: the instance's rows are one result.
        total.checksum = match (total.checksum, out.checksum) {
            (Some(a), Some(b)) => Some(a.wrapping_add(b)),
            (a, b) => a.or(b),
        };
        if let Some(n) = counted(rules, i + 1, out.affected) {
            total.affected = Some(total.affected.unwrap_or(0) + n);
        }
    }
    Ok(total)
}

/// The server's count of statement `i`, where that statement changes rows.
fn counted(rules: &Rules, i: usize, n: Option<u64>) -> Option<u64> {
    rules.verbs.get(i).filter(|(_, changes)| *changes).and(n)
}

/// A statement of the instance's connection without binds (BEGIN, COMMIT, ROLLBACK).
fn bare(inst: &Instance, sql: &'static str) -> Instance {
    Instance {
        query: inst.query,
        index: inst.index,
        sql: Arc::from(sql),
        binds: Vec::new(),
        route: None,
        then: Vec::new(),
    }
}
