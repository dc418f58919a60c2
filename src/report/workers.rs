//! How a query run's work fell on its workers: the pgbench timeseries tool's "Queries per
//! worker" line. With `route by` a key chooses the worker, so a skewed key leaves some idle
//! and the run measures fewer connections than it asked for; a reader must see that.

use super::QueryReport;
use crate::plan::thousands;

/// Past this many workers the line gives the spread, not every count.
const LISTED: usize = 16;

/// `  queries per worker (route by): 1,203, 1,187, 0, 0; 2 of 4 workers sat idle ...`: with
/// `route by`, or whenever a worker of several sent nothing; empty otherwise.
pub(super) fn line(r: &QueryReport) -> String {
    let per = &r.traffic.queries_per_worker;
    let idle = per.iter().filter(|n| **n == 0).count();
    let routed = r.traffic.routed;
    if per.len() < 2 || (!routed && idle == 0) || r.ok + r.failed == 0 {
        return String::new();
    }
    let counts = if per.len() <= LISTED {
        per.iter()
            .map(|n| thousands(*n))
            .collect::<Vec<_>>()
            .join(", ")
    } else {
        let mut sorted = per.clone();
        sorted.sort_unstable();
        format!(
            "min {}, median {}, max {} over {} workers",
            thousands(sorted[0]),
            thousands(sorted[sorted.len() / 2]),
            thousands(sorted[sorted.len() - 1]),
            sorted.len()
        )
    };
    let mut out = format!(
        "  queries per worker{}: {counts}",
        if routed { " (route by)" } else { "" }
    );
    if idle > 0 {
        out += &format!(
            "; {idle} of {} workers sat idle{}",
            per.len(),
            if routed {
                ": no key was routed to them, so fewer connections were measured than asked"
            } else {
                ""
            }
        );
    }
    out + "\n"
}

#[cfg(test)]
mod tests {
    use super::super::tests::query_report;
    use super::*;

    #[test]
    fn a_routed_run_lists_its_workers_and_says_which_sat_idle() {
        let mut r = query_report();
        r.traffic.routed = true;
        r.traffic.queries_per_worker = vec![60, 35, 0, 0];
        assert_eq!(
            line(&r),
            "  queries per worker (route by): 60, 35, 0, 0; 2 of 4 workers sat idle: no key \
             was routed to them, so fewer connections were measured than asked\n"
        );
        r.traffic.queries_per_worker = vec![50, 45];
        assert_eq!(line(&r), "  queries per worker (route by): 50, 45\n");
    }

    #[test]
    fn an_even_run_says_nothing_and_an_idle_worker_is_named_without_routing() {
        let mut r = query_report();
        r.traffic.queries_per_worker = vec![48, 47];
        assert_eq!(line(&r), "");
        r.traffic.queries_per_worker = vec![95, 0];
        assert_eq!(
            line(&r),
            "  queries per worker: 95, 0; 1 of 2 workers sat idle\n"
        );
        r.traffic.routed = true;
        r.traffic.queries_per_worker = (0..40).collect();
        assert_eq!(
            line(&r),
            "  queries per worker (route by): min 0, median 20, max 39 over 40 workers; 1 of 40 \
             workers sat idle: no key was routed to them, so fewer connections were measured \
             than asked\n"
        );
    }
}
