//! A killed run's report, rebuilt from what it wrote as it went: `series/phases.jsonl` (each
//! phase as it started), every phase's per-interval counts and its interval log, and plan.json.
//! A run killed with SIGKILL (or by the OOM killer, or a lost machine) never writes
//! report.json; its intervals are on disk up to the last that closed, and this turns them into
//! the same report shape, so `wlrun report` renders it as far as they go.
//!
//! What the series do not hold stays empty: error messages, visibility counts, per-query-type
//! figures, thresholds and the verdict. Every phase is `interrupted` and says so. A phase's
//! `concurrent` group and its probe's `freshness` come back from what `phases.jsonl` says of
//! them and the probes' columns and lag histograms, without what only the phase's end knew.

use std::collections::BTreeMap;
use std::path::Path;

use super::freshness::Freshness;
use super::series::{self, Announced, Series};
use super::together::ConcurrentMember;
use super::{
    rate, Accounting, CellReport, ErrorCount, IngestReport, Latency, PhaseReport, QueryOutput,
    QueryReport, QuerySetup, RateCounts, Report, RequestOutput, RequestReport, RequestSetup,
    RunKind, RunReport, Status, REPORT_FORMAT,
};

/// Whether `dir` holds a run that started phases but never wrote report.json.
pub fn is_killed_run(dir: &Path) -> bool {
    dir.is_dir()
        && !dir.join("report.json").exists()
        && dir.join(series::DIR).join("phases.jsonl").is_file()
}

/// The report of the killed run in `dir`, and what of its files was cut short and dropped
/// (a full disk stops a write midway; a kill, in practice, does not): a reader must be told
/// that the figures are short, never shown "0 cells" as if nothing had run.
pub fn rebuild(dir: &Path) -> Result<(Report, Vec<String>), String> {
    let list = dir.join(series::DIR).join("phases.jsonl");
    let text = std::fs::read_to_string(&list)
        .map_err(|e| format!("cannot read {}: {e}", list.display()))?;
    let mut announced = Vec::new();
    let mut dropped = Vec::new();
    for (i, line) in text.lines().enumerate() {
        match serde_json::from_str::<Announced>(line) {
            Ok(a) => announced.push(a),
            Err(_) if i + 1 == text.lines().count() && !text.ends_with('\n') => {
                dropped.push(format!(
                    "{} is cut short: the phase its line {} announced is left out",
                    list.display(),
                    i + 1
                ))
            }
            Err(e) => return Err(format!("{} line {}: {e}", list.display(), i + 1)),
        }
    }
    let plan: serde_json::Value = std::fs::read(dir.join("plan.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let workload = &plan["workload"];
    let mut cells: Vec<CellReport> = Vec::new();
    let (mut first_ms, mut last_ms) = (u64::MAX, 0u64);
    for a in &announced {
        let series = series::read(dir, &a.series, a.kind == "ingest")?;
        if series::cut_short(dir, &a.series) {
            dropped.push(format!(
                "{} is cut short: its last interval is left out",
                dir.join(&a.series.counts).display()
            ));
        }
        let logged = series::read_hlog(&dir.join(&a.series.hlog)).unwrap_or_default();
        first_ms = first_ms.min(a.started_ms);
        let end = match &series {
            Series::Ingest(v) => v.last().map(|r| r.start_ms + a.series.interval_ms),
            Series::Run(v) => v.last().map(|r| r.start_ms + a.series.interval_ms),
        };
        last_ms = last_ms.max(end.unwrap_or(a.started_ms));
        let phase = phase(a, &series, &logged);
        match cells.iter_mut().find(|c| c.index == a.cell) {
            Some(c) => c.phases.push(phase),
            None => cells.push(CellReport {
                index: a.cell,
                key: a.key.clone(),
                phases: vec![phase],
            }),
        }
    }
    let started = time::OffsetDateTime::from_unix_timestamp_nanos(
        i128::from(first_ms.min(last_ms)) * 1_000_000,
    )
    .ok()
    .and_then(|t| {
        t.format(&time::format_description::well_known::Rfc3339)
            .ok()
    })
    .unwrap_or_default();
    let report = Report {
        format: REPORT_FORMAT,
        workload: workload["name"].as_str().unwrap_or_default().to_string(),
        file: workload["file"].as_str().unwrap_or_default().to_string(),
        seed: workload["seed"].as_u64().unwrap_or_default(),
        // plan.json beside it says what ran; `compare` reads it there.
        plan: None,
        started,
        elapsed_s: last_ms.saturating_sub(first_ms) as f64 / 1000.0,
        interrupted: true,
        signal: None,
        environment: None,
        cells,
        // A shard says which it was when it starts.
        shard: super::files::read_shard(dir),
        merged: None,
    };
    Ok((report, dropped))
}

fn warning(a: &Announced, intervals: usize) -> String {
    let mut unknown = "error messages, visibility, per-query figures and the verdict".to_string();
    if a.concurrent.is_some() {
        unknown += ", whether the group's end stopped the phase and when each member started";
    }
    if a.probe.is_some() {
        unknown += ", the probe's samples, its empty, caught-up and clamped probes and when \
                    all rows were visible";
    }
    format!(
        "rebuilt from {intervals} intervals of {} ms: the run was killed before it wrote \
         report.json, so {unknown} are not known",
        a.series.interval_ms
    )
}

/// The phase's `concurrent` object as far as the announcement goes: the group, its members and
/// whether this phase is its `until`; who was stopped, and when, only the group's end knew.
fn concurrent(a: &Announced) -> Option<ConcurrentMember> {
    let g = a.concurrent.as_ref()?;
    Some(ConcurrentMember {
        group: g.group.clone(),
        phases: g.phases.clone(),
        until: g.until.clone(),
        set_end: g.until.as_deref() == Some(a.phase.as_str()),
        stopped_by_group: false,
        started_at_offset_ms: None,
        ended_at_offset_ms: None,
    })
}

/// The probe's figures from its columns (probes answered and failed, the last count) and its
/// lag histograms; what only its end knew (all visible after, the samples) stays empty.
fn freshness(
    a: &Announced,
    rows: &[series::IngestInterval],
    logged: &[series::LoggedHistogram],
    rows_target: u64,
) -> Option<Freshness> {
    let p = a.probe.as_ref()?;
    let answered: u64 = rows.iter().map(|r| r.probes).sum();
    let failed: u64 = rows.iter().map(|r| r.probes_failed).sum();
    Some(Freshness {
        endpoint: p.endpoint.clone(),
        language: p.language.clone(),
        query: p.query.clone(),
        every_s: p.every_s,
        within_s: p.within_s,
        probes_sent: answered + failed,
        probes_failed: failed,
        first_error: (failed > 0).then(|| "(not kept: the run was killed)".to_string()),
        lag: series::merged(logged, series::TAG_LAG)
            .map(|h| Latency::of(&h))
            .unwrap_or_default(),
        rows_target,
        last_visible: rows.iter().rev().find_map(|r| r.visible),
        samples_stride: 1,
        ..Default::default()
    })
}

fn phase(a: &Announced, s: &Series, logged: &[series::LoggedHistogram]) -> PhaseReport {
    let merged = |tag| {
        series::merged(logged, tag)
            .map(|h| Latency::of(&h))
            .unwrap_or_default()
    };
    let endpoint = a
        .endpoint
        .split(" (")
        .next()
        .unwrap_or_default()
        .to_string();
    let kind = a
        .endpoint
        .rsplit_once(" (")
        .map(|(_, k)| k.trim_end_matches(')').to_string())
        .unwrap_or_default();
    let mut reference = a.series.clone();
    reference.intervals = s.len() as u64;
    match s {
        Series::Ingest(rows) => {
            let sum = |f: fn(&series::IngestInterval) -> u64| rows.iter().map(f).sum::<u64>();
            let elapsed_s = sum(|r| r.span_ms) as f64 / 1000.0;
            let rows_sent = sum(|r| r.rows_sent);
            let rows_acked = a.acks.then(|| sum(|r| r.rows_acked.unwrap_or(0)));
            let (payload, socket) = (sum(|r| r.payload_bytes), sum(|r| r.socket_bytes));
            let errors = sum(|r| r.errors);
            let per_row = |b: u64| (rows_sent > 0 && b > 0).then(|| b as f64 / rows_sent as f64);
            let rate_counts = if a.acks {
                RateCounts::Acked
            } else {
                RateCounts::Sent
            };
            let mut error_map = BTreeMap::new();
            if errors > 0 {
                error_map.insert(
                    "unknown".to_string(),
                    ErrorCount {
                        count: errors,
                        first: "(not kept: the run was killed)".into(),
                    },
                );
            }
            PhaseReport::Ingest(Box::new(IngestReport {
                server: None,
                server_metrics: Vec::new(),
                name: a.phase.clone(),
                endpoint: format!("{endpoint} ({kind})"),
                kind,
                table: String::new(),
                workers: a.workers,
                batch_rows: 0,
                status: Status::Interrupted,
                failures: Vec::new(),
                warnings: vec![warning(a, rows.len())],
                rows_expected: None,
                rows_generated: rows_sent,
                rows_dropped: 0,
                payload_bytes: payload,
                rows_sent,
                rows_acked,
                rows_cut_off: 0,
                rows_visible: None,
                visible_baseline: None,
                visible_after_s: None,
                socket_bytes: socket,
                payload_bytes_per_row: per_row(payload),
                socket_bytes_per_row: per_row(socket),
                elapsed_s,
                rows_per_s: rate(rows_acked.unwrap_or(rows_sent), elapsed_s),
                rate_counts,
                send_rows_per_s: rate(rows_sent, elapsed_s),
                ack_rows_per_s: rows_acked.and_then(|n| rate(n, elapsed_s)),
                batch_latency: merged(series::TAG_BATCH),
                client_cpu_s: None,
                errors: error_map,
                rows_per_worker: Vec::new(),
                calibration: None,
                series: Some(reference),
                connecting: None,
                schedule: None,
                concurrent: concurrent(a),
                freshness: freshness(a, rows, logged, rows_acked.unwrap_or(rows_sent)),
                findmax: None,
                stages: Vec::new(),
                // The series do not record commits.
                commits: None,
                // The series do not say whether the rows were replayed, nor the link.
                input: None,
                link: None,
                fields_per_row: None,
                metrics_per_s: None,
            }))
        }
        Series::Run(rows) => {
            let sum = |f: fn(&series::RunInterval) -> u64| rows.iter().map(f).sum::<u64>();
            let counts = RunCounts {
                elapsed_s: sum(|r| r.span_ms) as f64 / 1000.0,
                ok: sum(|r| r.ok),
                failed: sum(|r| r.failed),
                cut_off: sum(|r| r.cut_off),
                unsent: sum(|r| r.unsent),
                latency: merged(series::TAG_LATENCY),
                service: a.open_loop.then(|| merged(series::TAG_SERVICE)),
            };
            let load = a.load.clone().unwrap_or_default();
            if a.kind == "requests" {
                let setup = RequestSetup {
                    request: String::new(),
                    connections: a.workers,
                };
                let mut r: RequestReport = run(a, endpoint, kind, setup, load, &counts, rows.len());
                r.output = RequestOutput {
                    rps: rate(counts.ok, counts.elapsed_s),
                    rows: 0,
                };
                r.series = Some(reference);
                r.concurrent = concurrent(a);
                PhaseReport::Requests(Box::new(r))
            } else {
                let setup = QuerySetup { workers: a.workers };
                let mut r: QueryReport = run(a, endpoint, kind, setup, load, &counts, rows.len());
                r.output = QueryOutput {
                    rows: 0,
                    qps: rate(counts.ok, counts.elapsed_s),
                };
                r.series = Some(reference);
                r.concurrent = concurrent(a);
                PhaseReport::Queries(Box::new(r))
            }
        }
    }
}

/// A run's totals over its intervals.
struct RunCounts {
    elapsed_s: f64,
    ok: u64,
    failed: u64,
    cut_off: u64,
    unsent: u64,
    latency: Latency,
    service: Option<Latency>,
}

fn run<K: RunKind>(
    a: &Announced,
    endpoint: String,
    kind: String,
    setup: K,
    load: String,
    c: &RunCounts,
    intervals: usize,
) -> RunReport<K> {
    let answered = c.ok + c.failed;
    RunReport {
        server: None,
        server_metrics: Vec::new(),
        name: a.phase.clone(),
        endpoint,
        kind,
        setup,
        load,
        status: Status::Interrupted,
        failures: Vec::new(),
        warnings: vec![warning(a, intervals)],
        elapsed_s: c.elapsed_s,
        ok: c.ok,
        failed: c.failed,
        error_rate: if answered > 0 {
            c.failed as f64 / answered as f64
        } else {
            0.0
        },
        output: Default::default(),
        sum_us: 0,
        latency: c.latency.clone(),
        service: c.service.clone(),
        errors: BTreeMap::new(),
        traffic: Default::default(),
        client_cpu_s: None,
        client_wait_s: None,
        accounting: Accounting {
            not_found: 0,
            scheduled: answered + c.cut_off + c.unsent,
            cut_off: c.cut_off,
            unsent: c.unsent,
            ..Accounting::default()
        },
        repeats: Vec::new(),
        detail: Default::default(),
        series: None,
        connecting: None,
        stages: Vec::new(),
        concurrent: None,
        findmax: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::series::{AnnouncedGroup, AnnouncedProbe, IngestInterval, SeriesRef};

    fn announced(phase: &str, kind: &str, probe: bool) -> Announced {
        let (counts, hlog) = SeriesRef::paths(1, phase);
        Announced {
            cell: 1,
            key: String::new(),
            phase: phase.into(),
            kind: kind.into(),
            endpoint: "db.pg (pg)".into(),
            workers: 1,
            load: (kind != "ingest").then(|| "closed".into()),
            acks: true,
            open_loop: false,
            started_ms: 1_000,
            series: SeriesRef {
                interval_ms: 1000,
                counts,
                hlog,
                intervals: 0,
                measured: Vec::new(),
            },
            concurrent: Some(AnnouncedGroup {
                group: "mixed".into(),
                phases: vec!["load".into(), "reads".into()],
                until: Some("load".into()),
            }),
            probe: probe.then(|| AnnouncedProbe {
                endpoint: "db.pg (pg)".into(),
                language: "sql".into(),
                query: "SELECT count(*) FROM t".into(),
                every_s: 0.1,
                within_s: 60.0,
            }),
        }
    }

    /// A killed group: each member's `concurrent` object and the ingest's probe figures come
    /// back from phases.jsonl and the series.
    #[test]
    fn a_killed_groups_members_and_probe_come_back_from_the_series() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(series::DIR)).unwrap();
        let lines: Vec<String> = [
            announced("load", "ingest", true),
            announced("reads", "queries", false),
        ]
        .iter()
        .map(|a| serde_json::to_string(a).unwrap())
        .collect();
        std::fs::write(
            dir.path().join("series/phases.jsonl"),
            lines.join("\n") + "\n",
        )
        .unwrap();
        let mut w = ::csv::Writer::from_path(dir.path().join("series/1-load.csv")).unwrap();
        for (i, visible) in [(0, Some(40)), (1, Some(90)), (2, None)] {
            w.serialize(IngestInterval {
                start_ms: 1_000 * (i + 1),
                span_ms: 1000,
                rows_sent: 50,
                rows_acked: Some(50),
                probes: 10 * u64::from(visible.is_some()),
                probes_failed: 1,
                visible,
                ..IngestInterval::default()
            })
            .unwrap();
        }
        drop(w);
        std::fs::write(
            dir.path().join("series/1-reads.csv"),
            "start_ms,span_ms,ok,failed,cut_off,unsent,p50_us,p90_us,p99_us,p999_us,max_us,\
             service_p50_us,service_p99_us\n1000,1000,5,0,0,0,1,1,1,1,1,,\n",
        )
        .unwrap();
        let (r, dropped) = rebuild(dir.path()).unwrap();
        assert!(dropped.is_empty(), "{dropped:?}");
        let [PhaseReport::Ingest(load), PhaseReport::Queries(reads)] = &r.cells[0].phases[..]
        else {
            panic!("an ingest and a query run: {r:?}")
        };
        let c = load.concurrent.as_ref().unwrap();
        assert_eq!(
            (c.group.as_str(), c.set_end, c.stopped_by_group),
            ("mixed", true, false)
        );
        assert_eq!(c.phases, ["load", "reads"]);
        let c = reads.concurrent.as_ref().unwrap();
        assert!(!c.set_end && c.until.as_deref() == Some("load"));
        let f = load.freshness.as_ref().unwrap();
        assert_eq!((f.probes_sent, f.probes_failed), (23, 3));
        assert_eq!(f.last_visible, Some(90));
        assert_eq!(f.rows_target, 150);
        assert_eq!(f.every_s, 0.1);
        assert_eq!(f.all_visible_after_s, None);
        assert!(
            load.warnings[0].contains("the probe's samples"),
            "{:?}",
            load.warnings
        );
        // What the page and the table show of it: the line says the probe was stopped.
        let text = crate::report::render::cell_lines(&r.cells[0], 1);
        assert!(
            text.contains("stopped before all were seen visible (last count 90 of 150)"),
            "{text}"
        );
        assert!(
            text.contains("concurrent mixed: load, reads ran together"),
            "{text}"
        );
    }
}
