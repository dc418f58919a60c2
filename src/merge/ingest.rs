//! An ingest phase merged from its shards' parts: rows, bytes and errors add, the batch
//! latency histograms add, rates are taken over the union of the shards' spans, and what only
//! shard 0 measures (the visible rows: it counts every shard's rows at the end barrier) is
//! shard 0's.

use super::{histo, spans, sum_f64, Ctx, Part, PhaseOut};
use crate::report::{rate, Calibration, IngestReport, IngestSchedule, PhaseReport, RateCounts};

pub fn merge(ctx: &Ctx, parts: &[Part<IngestReport>]) -> Result<PhaseOut, String> {
    let first = parts[0].report;
    let lead = parts.iter().find(|p| p.index == 0).map(|p| p.report);
    let all = || parts.iter().map(|p| p.report);
    let sum = |f: fn(&IngestReport) -> u64| all().map(f).sum::<u64>();
    let union = spans::union(
        &parts
            .iter()
            .map(|p| spans::Part {
                index: p.index,
                series: p.report.series.as_ref(),
                rounds: vec![p.report.elapsed_s],
            })
            .collect::<Vec<_>>(),
    );
    let elapsed_s = union.total_s();
    let rows_sent = sum(|r| r.rows_sent);
    let rows_acked = all()
        .filter_map(|r| r.rows_acked)
        .reduce(|a, b| a + b)
        .or_else(|| all().any(|r| r.rows_acked.is_some()).then_some(0));
    let payload_bytes = sum(|r| r.payload_bytes);
    let socket_bytes = sum(|r| r.socket_bytes);
    let per_row = |b: u64| (rows_sent > 0 && b > 0).then(|| b as f64 / rows_sent as f64);
    let send_rows_per_s = rate(rows_sent, elapsed_s);
    let ack_rows_per_s = rows_acked.and_then(|a| rate(a, elapsed_s));
    let mut extra_warnings: Vec<String> = union.approximate.iter().cloned().collect();
    let unmerged = [
        ("freshness", all().any(|r| r.freshness.is_some())),
        ("concurrent", all().any(|r| r.concurrent.is_some())),
        ("stages", all().any(|r| !r.stages.is_empty())),
        ("findmax", all().any(|r| r.findmax.is_some())),
    ];
    let mut extra = ctx.missing_lines();
    for (what, there) in unmerged {
        if there {
            extra.push(format!(
                "`{what}` is not merged: a sharded run refuses it, and these shards have it"
            ));
        }
    }
    let mut report = IngestReport {
        server: None,
        server_metrics: Vec::new(),
        name: first.name.clone(),
        endpoint: first.endpoint.clone(),
        kind: first.kind.clone(),
        table: first.table.clone(),
        workers: sum(|r| r.workers),
        batch_rows: first.batch_rows,
        status: first.status,
        failures: Vec::new(),
        warnings: Vec::new(),
        rows_expected: ctx.rows_expected(all().map(|r| r.rows_expected)),
        rows_generated: sum(|r| r.rows_generated),
        rows_dropped: sum(|r| r.rows_dropped),
        payload_bytes,
        rows_sent,
        rows_acked,
        rows_cut_off: sum(|r| r.rows_cut_off),
        // Shard 0 counts every shard's rows after the end barrier; the others count nothing.
        rows_visible: lead.and_then(|r| r.rows_visible),
        visible_baseline: lead.and_then(|r| r.visible_baseline),
        visible_after_s: lead.and_then(|r| r.visible_after_s),
        socket_bytes,
        payload_bytes_per_row: per_row(payload_bytes),
        socket_bytes_per_row: per_row(socket_bytes).filter(|_| payload_bytes > 0),
        elapsed_s,
        rows_per_s: match first.rate_counts {
            RateCounts::Acked => ack_rows_per_s,
            RateCounts::Sent => send_rows_per_s,
        },
        rate_counts: first.rate_counts,
        send_rows_per_s,
        ack_rows_per_s,
        batch_latency: histo::merge_all(all().map(|r| &r.batch_latency))?,
        // Every loader's CPU: the shards run on machines of their own.
        client_cpu_s: sum_f64(all().map(|r| r.client_cpu_s)),
        errors: super::errors(all().map(|r| &r.errors)),
        rows_per_worker: all().flat_map(|r| r.rows_per_worker.clone()).collect(),
        calibration: calibration(parts, send_rows_per_s),
        series: None,
        connecting: super::connections::merge(all().map(|r| r.connecting.as_ref()))?,
        schedule: schedule(parts, rows_sent)?,
        concurrent: None,
        freshness: None,
        findmax: None,
        stages: Vec::new(),
        // Each shard's connections commit on their own: the commits add up.
        commits: all().map(|r| r.commits).sum(),
        input: first.input.clone(),
        fields_per_row: first.fields_per_row,
        // Set below from the merged rate.
        metrics_per_s: None,
        // The merged bytes per row: what the shards together put on their sockets.
        link: first.link.as_ref().map(|l| {
            crate::report::link::LinkCeiling::of(
                l.bits_per_s,
                per_row(socket_bytes).filter(|_| payload_bytes > 0),
            )
        }),
    };
    let series = ctx.series(
        parts
            .iter()
            .map(|p| (p.index, p.dir, p.report.series.as_ref())),
        (true, false),
        &union,
        &mut extra_warnings,
    );
    report.series = series.as_ref().map(|s| s.reference.clone());
    report.metrics_per_s = report
        .rows_per_s
        .zip(report.fields_per_row)
        .map(|(r, f)| r * f as f64);
    let said: Vec<super::verdict::Said> = parts
        .iter()
        .map(|p| super::verdict::Said {
            index: p.index,
            status: p.report.status,
            failures: &p.report.failures,
            warnings: &p.report.warnings,
        })
        .collect();
    let (failures, warnings) = super::verdict::lines(&said, None, false, extra, extra_warnings);
    report.status = super::verdict::status(&said, &failures);
    report.failures = failures;
    report.warnings = warnings;
    Ok(PhaseOut {
        report: PhaseReport::Ingest(Box::new(report)),
        series: series.map(|s| s.files),
    })
}

/// `rate R`: each shard kept `R / N`; the merged schedule is theirs added up, its achieved
/// rate (sent + cut off) over scheduled and its late share over every batch sent (one
/// `send_lag` sample each).
fn schedule(
    parts: &[Part<IngestReport>],
    rows_sent: u64,
) -> Result<Option<IngestSchedule>, String> {
    let scheds: Vec<&IngestSchedule> = parts
        .iter()
        .filter_map(|p| p.report.schedule.as_ref())
        .collect();
    if scheds.is_empty() {
        return Ok(None);
    }
    let sum = |f: fn(&IngestSchedule) -> u64| scheds.iter().map(|s| f(s)).sum::<u64>();
    let scheduled_rows = sum(|s| s.scheduled_rows);
    let cut_off_rows = sum(|s| s.cut_off_rows);
    let late_batches = sum(|s| s.late_batches);
    let send_lag = histo::merge_all(scheds.iter().map(|s| &s.send_lag))?;
    Ok(Some(IngestSchedule {
        rate_rows_per_s: scheds.iter().map(|s| s.rate_rows_per_s).sum(),
        scheduled_rows,
        cut_off_rows,
        unsent_rows: sum(|s| s.unsent_rows),
        achieved_rate: if scheduled_rows == 0 {
            1.0
        } else {
            (rows_sent + cut_off_rows) as f64 / scheduled_rows as f64
        },
        late_batches,
        late_share: (send_lag.count > 0).then(|| late_batches as f64 / send_lag.count as f64),
        send_lag,
        batch_latency_intended: histo::merge_all(scheds.iter().map(|s| &s.batch_latency_intended))?,
    }))
}

/// `calibrate`: each shard measured its own generator's ceiling on its own machine; the
/// merged ceiling is theirs added up (they generate at once), `None` when any is unknown.
fn calibration(parts: &[Part<IngestReport>], send_rows_per_s: Option<f64>) -> Option<Calibration> {
    let cals: Vec<&Calibration> = parts
        .iter()
        .filter_map(|p| p.report.calibration.as_ref())
        .collect();
    if cals.is_empty() {
        return None;
    }
    let null_rows_per_s = if cals.len() == parts.len() {
        cals.iter().map(|c| c.null_rows_per_s).sum::<Option<f64>>()
    } else {
        None
    };
    Some(Calibration {
        null_rows_per_s,
        ratio: null_rows_per_s
            .zip(send_rows_per_s)
            .filter(|(n, _)| *n > 0.0)
            .map(|(n, s)| s / n),
    })
}
