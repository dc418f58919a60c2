//! `check same results across endpoints`: the results of a query run compared, instance by
//! instance (rows and checksum), with the same run over an earlier cell's endpoint.

use crate::plan::QueryPhase;
use crate::report::{CrossCheck, QueryReport, Status};

/// Whether a query's result rows may legitimately differ between servers: a LIMIT without an
/// ORDER BY keeps whichever rows come first. Such queries are flagged, not compared. (A LIMIT
/// under an ORDER BY with ties can differ too; that is not detected.)
pub fn unordered_limit(sql: &str) -> bool {
    let upper = sql.to_ascii_uppercase();
    let words: Vec<&str> = upper
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .collect();
    let limit = words.contains(&"LIMIT");
    let ordered = words.windows(2).any(|w| w == ["ORDER", "BY"]);
    limit && !ordered
}

/// Compares the results of `later` with those of `earlier` (the same run over another
/// endpoint), per query instance both measured, and records the outcome on `later`.
pub fn cross_check(earlier: &QueryReport, later: &mut QueryReport, phase: &QueryPhase) {
    let (Some(a), Some(b)) = (&earlier.detail.results, &later.detail.results) else {
        return;
    };
    let skip: Vec<usize> = phase
        .queries
        .iter()
        .enumerate()
        .filter(|(_, q)| unordered_limit(&q.sql))
        .map(|(i, _)| i)
        .collect();
    let mut check = CrossCheck {
        against: earlier.endpoint.clone(),
        compared: 0,
        mismatches: 0,
        first_mismatches: Vec::new(),
        not_compared: skip
            .iter()
            .map(|&i| phase.queries[i].name.clone())
            .collect(),
    };
    for (key, (rows_b, sum_b)) in b.iter() {
        if skip.contains(&key.0) {
            continue;
        }
        let Some((rows_a, sum_a)) = a.get(key) else {
            continue;
        };
        check.compared += 1;
        if rows_a != rows_b || sum_a != sum_b {
            check.mismatches += 1;
            if check.first_mismatches.len() < 10 {
                check.first_mismatches.push(format!(
                    "{} instance {}: {} rows, checksum {sum_a:016x} on {}; {} rows, checksum {sum_b:016x} on {}",
                    phase.queries[key.0].name, key.1, rows_a, earlier.endpoint, rows_b, later.endpoint
                ));
            }
        }
    }
    if check.mismatches > 0 {
        later.failures.push(format!(
            "results differ from {}: {} of {} query instances (first: {})",
            earlier.endpoint, check.mismatches, check.compared, check.first_mismatches[0]
        ));
        if later.status == Status::Ok {
            later.status = Status::Failed;
        }
    } else if check.compared == 0 && !b.is_empty() {
        later.warnings.push(format!(
            "no query instance was measured on both {} and {}: nothing compared",
            earlier.endpoint, later.endpoint
        ));
    }
    later.detail.cross_checks.push(check);
}
