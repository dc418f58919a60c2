//! A query or request run merged from its shards' parts: counts, statuses, counters and bytes
//! add, every latency histogram adds (the run's, each query type's and label's), the
//! accounting adds (`scheduled = ok + failed + cut_off + unsent` holds for the sum as for each
//! part), repetitions merge by number, rates are over the union of the shards' spans and the
//! thresholds are judged again on the merged figures.

use super::thresholds::{self, Figures, Planned};
use super::{histo, spans, sum_f64, Ctx, Part};
use crate::report::{
    rate, Accounting, CrossCheck, QueryDetail, QueryOutput, QuerySetup, QueryTraffic, RepeatReport,
    RequestDetail, RequestOutput, RequestSetup, RequestTraffic, RunKind, RunReport,
    ThresholdReport,
};

/// What a kind of run merges its own way.
pub trait Merge: RunKind {
    fn setup(parts: &[&Self]) -> Self;
    fn rows(o: &Self::Output) -> u64;
    fn output(rows: u64, ok: u64, elapsed_s: f64) -> Self::Output;
    fn traffic(parts: &[&Self::Traffic]) -> Self::Traffic;
    /// The breakdowns of `parts`, with the thresholds judged again by `judge` (run-level, as
    /// planned) where the kind has more than the run's own.
    fn detail(
        parts: &[&RunReport<Self>],
        run_thresholds: Vec<ThresholdReport>,
        planned: Option<&Planned>,
        elapsed_s: f64,
    ) -> Result<Self::Detail, String>;
    /// Every threshold judged: the run's own, then its query types'.
    fn thresholds(d: &Self::Detail) -> Vec<&ThresholdReport>;
    /// The run's own thresholds.
    fn own(d: &Self::Detail) -> &[ThresholdReport];
}

pub fn merge<K: Merge>(
    ctx: &Ctx,
    parts: &[Part<RunReport<K>>],
) -> Result<(RunReport<K>, Option<super::series::Files>), String> {
    let all: Vec<&RunReport<K>> = parts.iter().map(|p| p.report).collect();
    let first = all[0];
    let union = spans::union(
        &parts
            .iter()
            .map(|p| spans::Part {
                index: p.index,
                series: p.report.series.as_ref(),
                rounds: p.report.repeats.iter().map(|r| r.elapsed_s).collect(),
            })
            .collect::<Vec<_>>(),
    );
    let elapsed_s = union.total_s();
    let sum = |f: fn(&RunReport<K>) -> u64| all.iter().map(|r| f(r)).sum::<u64>();
    let (ok, failed) = (sum(|r| r.ok), sum(|r| r.failed));
    let rows = all.iter().map(|r| K::rows(&r.output)).sum();
    let open = all.iter().any(|r| r.accounting.achieved_rate.is_some());
    let accounting = accounting(&all, ok, failed, open)?;
    let latency = histo::merge_all(all.iter().map(|r| &r.latency))?;
    let errors = super::errors(all.iter().map(|r| &r.errors));
    let mut extra = ctx.missing_lines();
    for (what, there) in [
        ("stages", all.iter().any(|r| !r.stages.is_empty())),
        ("findmax", all.iter().any(|r| r.findmax.is_some())),
        ("concurrent", all.iter().any(|r| r.concurrent.is_some())),
    ] {
        if there {
            extra.push(format!(
                "`{what}` is not merged: a sharded run refuses it, and these shards have it"
            ));
        }
    }
    let sum_us = sum(|r| r.sum_us);
    // The thresholds, judged again on the merged figures; or why they cannot be.
    let planned = if K::thresholds(&first.detail).is_empty() && ctx.plan.is_err() {
        // Nothing to judge: no plan.json is needed.
        Ok(Planned::default())
    } else {
        ctx.planned().and_then(|p| {
            thresholds::matching(&p.run, K::own(&first.detail))?;
            Ok(p)
        })
    };
    let judged = match &planned {
        Ok(p) => thresholds::judge_all(
            &p.run,
            &Figures {
                ok,
                rows,
                sum_us,
                latency: &latency,
                errors: &errors,
                elapsed_s,
            },
            Some(&accounting),
        ),
        Err(e) => Err(e.clone()),
    };
    let (run_thresholds, detail) = match judged {
        Ok(t) => {
            let d = K::detail(&all, t.clone(), planned.as_ref().ok(), elapsed_s);
            match d {
                Ok(d) => (Some(t), d),
                Err(e) => {
                    extra.push(not_judged(&e));
                    (None, K::detail(&all, unjudged(first), None, elapsed_s)?)
                }
            }
        }
        Err(e) => {
            extra.push(not_judged(&e));
            (None, K::detail(&all, unjudged(first), None, elapsed_s)?)
        }
    };
    let mut extra_warnings: Vec<String> = union.approximate.iter().cloned().collect();
    let series = ctx.series(
        parts
            .iter()
            .map(|p| (p.index, p.dir, p.report.series.as_ref())),
        (false, open),
        &union,
        &mut extra_warnings,
    );
    let judged_all: Option<Vec<&ThresholdReport>> =
        run_thresholds.as_ref().map(|_| K::thresholds(&detail));
    let said: Vec<super::verdict::Said> = parts
        .iter()
        .map(|p| super::verdict::Said {
            index: p.index,
            status: p.report.status,
            failures: &p.report.failures,
            warnings: &p.report.warnings,
        })
        .collect();
    let (failures, warnings) = super::verdict::lines(
        &said,
        judged_all.as_deref(),
        overridden(&all),
        extra,
        extra_warnings,
    );
    let status = super::verdict::status(&said, &failures);
    let report = RunReport {
        server: None,
        server_metrics: Vec::new(),
        name: first.name.clone(),
        endpoint: first.endpoint.clone(),
        kind: first.kind.clone(),
        setup: K::setup(&all.iter().map(|r| &r.setup).collect::<Vec<_>>()),
        load: first.load.clone(),
        status,
        failures,
        warnings,
        elapsed_s,
        ok,
        failed,
        error_rate: if ok + failed > 0 {
            failed as f64 / (ok + failed) as f64
        } else {
            0.0
        },
        output: K::output(rows, ok, elapsed_s),
        sum_us,
        latency,
        service: histo::merge(all.iter().map(|r| r.service.as_ref()))?,
        errors,
        traffic: K::traffic(&all.iter().map(|r| &r.traffic).collect::<Vec<_>>()),
        // Every loader's CPU: the shards run on machines of their own.
        client_cpu_s: sum_f64(all.iter().map(|r| r.client_cpu_s)),
        client_wait_s: sum_f64(all.iter().map(|r| r.client_wait_s)),
        accounting,
        repeats: repeats(&all, &union),
        detail,
        series: series.as_ref().map(|s| s.reference.clone()),
        connecting: super::connections::merge(all.iter().map(|r| r.connecting.as_ref()))?,
        stages: Vec::new(),
        concurrent: None,
        findmax: None,
    };
    Ok((report, series.map(|s| s.files)))
}

fn not_judged(why: &str) -> String {
    format!(
        "the thresholds could not be judged on the merged figures ({why}); a shard's own \
         verdict on them is not the run's"
    )
}

/// The first shard's thresholds, marked as not judged on the merged figures.
fn unjudged<K: Merge>(first: &RunReport<K>) -> Vec<ThresholdReport> {
    K::own(&first.detail)
        .iter()
        .map(|t| ThresholdReport {
            actual: "not judged on the merged figures".into(),
            ok: false,
            ..t.clone()
        })
        .collect()
}

/// `--max-error-rate` replaced the run's own `expect error_rate` on some shard: that shard
/// judged it not met but did not fail on it.
fn overridden<K: Merge>(all: &[&RunReport<K>]) -> bool {
    all.iter().any(|r| {
        K::own(&r.detail).iter().any(|t| {
            t.metric == "error_rate"
                && !t.ok
                && !r
                    .failures
                    .iter()
                    .any(|f| f.starts_with(&format!("threshold not met: {} (", t.expect)))
        })
    })
}

/// The accounting added up, and its fractions taken again from the sums.
fn accounting<K: RunKind>(
    all: &[&RunReport<K>],
    ok: u64,
    failed: u64,
    open: bool,
) -> Result<Accounting, String> {
    let sum = |f: fn(&Accounting) -> u64| all.iter().map(|r| f(&r.accounting)).sum::<u64>();
    let (scheduled, cut_off, late) = (sum(|a| a.scheduled), sum(|a| a.cut_off), sum(|a| a.late));
    let not_found = sum(|a| a.not_found);
    let sent = ok + not_found + failed + cut_off;
    Ok(Accounting {
        scheduled,
        not_found,
        cut_off,
        unsent: sum(|a| a.unsent),
        achieved_rate: open.then(|| {
            if scheduled == 0 {
                1.0
            } else {
                sent as f64 / scheduled as f64
            }
        }),
        late,
        late_share: (open && sent > 0).then(|| late as f64 / sent as f64),
        send_lag: histo::merge(all.iter().map(|r| r.accounting.send_lag.as_ref()))?,
    })
}

/// Repetition k of the merged run: every shard's k-th, over the union of their k-th spans.
fn repeats<K: RunKind>(all: &[&RunReport<K>], union: &spans::Union) -> Vec<RepeatReport> {
    let n = all.iter().map(|r| r.repeats.len()).max().unwrap_or(0);
    (0..n)
        .map(|k| {
            let queries = all
                .iter()
                .filter_map(|r| r.repeats.get(k))
                .map(|r| r.queries)
                .sum();
            let elapsed_s = union.round_s(k);
            RepeatReport {
                repeat: k as u64 + 1,
                elapsed_s,
                queries,
                qps: rate(queries, elapsed_s),
            }
        })
        .collect()
}

impl Merge for QuerySetup {
    fn setup(parts: &[&Self]) -> Self {
        QuerySetup {
            workers: parts.iter().map(|s| s.workers).sum(),
        }
    }

    fn rows(o: &QueryOutput) -> u64 {
        o.rows
    }

    fn output(rows: u64, ok: u64, elapsed_s: f64) -> QueryOutput {
        QueryOutput {
            rows,
            qps: rate(ok, elapsed_s),
        }
    }

    fn traffic(parts: &[&QueryTraffic]) -> QueryTraffic {
        QueryTraffic {
            queries_per_worker: parts
                .iter()
                .flat_map(|t| t.queries_per_worker.iter().copied())
                .collect(),
            routed: parts.iter().any(|t| t.routed),
        }
    }

    fn detail(
        parts: &[&RunReport<Self>],
        run_thresholds: Vec<ThresholdReport>,
        planned: Option<&Planned>,
        elapsed_s: f64,
    ) -> Result<QueryDetail, String> {
        let details: Vec<&QueryDetail> = parts.iter().map(|r| &r.detail).collect();
        Ok(QueryDetail {
            thresholds: run_thresholds,
            query_types: super::breakdown::query_types(&details, planned, elapsed_s)?,
            labels: super::breakdown::labels(&details, elapsed_s)?,
            cross_checks: cross_checks(&details),
            results: None,
            streaming: super::streaming::merge(details.iter().map(|d| d.streaming.as_ref()))?,
        })
    }

    fn thresholds(d: &QueryDetail) -> Vec<&ThresholdReport> {
        d.thresholds
            .iter()
            .chain(d.query_types.iter().flat_map(|t| &t.thresholds))
            .collect()
    }

    fn own(d: &QueryDetail) -> &[ThresholdReport] {
        &d.thresholds
    }
}

impl Merge for RequestSetup {
    fn setup(parts: &[&Self]) -> Self {
        RequestSetup {
            request: parts[0].request.clone(),
            connections: parts.iter().map(|s| s.connections).sum(),
        }
    }

    fn rows(o: &RequestOutput) -> u64 {
        o.rows
    }

    fn output(rows: u64, ok: u64, elapsed_s: f64) -> RequestOutput {
        RequestOutput {
            rps: rate(ok, elapsed_s),
            rows,
        }
    }

    fn traffic(parts: &[&RequestTraffic]) -> RequestTraffic {
        let mut t = RequestTraffic::default();
        for p in parts {
            for (status, n) in &p.statuses {
                *t.statuses.entry(*status).or_default() += n;
            }
            for (status, n) in &p.warmup_statuses {
                *t.warmup_statuses.entry(*status).or_default() += n;
            }
            for (name, n) in &p.counters {
                *t.counters.entry(name.clone()).or_default() += n;
            }
            t.bytes_sent += p.bytes_sent;
            t.bytes_received += p.bytes_received;
            t.reconnects += p.reconnects;
            t.requests_per_worker
                .extend(p.requests_per_worker.iter().copied());
        }
        t
    }

    fn detail(
        _: &[&RunReport<Self>],
        run_thresholds: Vec<ThresholdReport>,
        _: Option<&Planned>,
        _: f64,
    ) -> Result<RequestDetail, String> {
        Ok(RequestDetail {
            thresholds: run_thresholds,
        })
    }

    fn thresholds(d: &RequestDetail) -> Vec<&ThresholdReport> {
        d.thresholds.iter().collect()
    }

    fn own(d: &RequestDetail) -> &[ThresholdReport] {
        &d.thresholds
    }
}

/// `check same results across endpoints`: each shard compared its own instances with the
/// same shard's earlier cell, so the comparisons add up.
fn cross_checks(details: &[&QueryDetail]) -> Vec<CrossCheck> {
    let mut out: Vec<CrossCheck> = Vec::new();
    for d in details {
        for c in &d.cross_checks {
            match out.iter_mut().find(|o| o.against == c.against) {
                Some(o) => {
                    o.compared += c.compared;
                    o.mismatches += c.mismatches;
                    let room = 10usize.saturating_sub(o.first_mismatches.len());
                    o.first_mismatches
                        .extend(c.first_mismatches.iter().take(room).cloned());
                }
                None => out.push(c.clone()),
            }
        }
    }
    out
}
