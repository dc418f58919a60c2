//! report.csv, and `wlrun report --csv`: one row per phase, for a query run one more per
//! query type and per label, and for a staged run one more per stage, with the figures people
//! chart. Columns are only ever appended: the first 29 are those of the first wlrun versions,
//! then the query and request figures, the connections, and last the stages, the freshness
//! of a probed ingest and the `concurrent` group (docs/report-format.md, "report.csv"), so
//! that scripts reading them by position keep working.

use super::findmax::FindMaxReport;
use super::{Latency, PhaseReport, Report, RunKind, RunReport, Status};

const COLUMNS: &[&str] = &[
    "cell",
    "key",
    "phase",
    "kind",
    "endpoint",
    "status",
    "workers",
    "batch_rows",
    "rows_expected",
    "rows_generated",
    "rows_sent",
    "rows_acked",
    "rows_cut_off",
    "rows_visible",
    "visible_after_s",
    "elapsed_s",
    "rows_per_s",
    "rate_counts",
    "send_rows_per_s",
    "ack_rows_per_s",
    "payload_bytes",
    "socket_bytes",
    "payload_bytes_per_row",
    "socket_bytes_per_row",
    "batch_p50_us",
    "batch_p99_us",
    "batch_max_us",
    "client_cpu_s",
    "errors",
    // What the row is: `phase`, or a query run's `query` type or `label`.
    "row",
    "query",
    "label",
    "ok",
    "failed",
    "error_rate",
    "result_rows",
    "qps",
    "rps",
    "scheduled",
    "cut_off",
    "unsent",
    "achieved_rate",
    "p50_us",
    "p90_us",
    "p99_us",
    "p999_us",
    "max_us",
    "mean_us",
    "service_p50_us",
    "service_p99_us",
    // Connection set-up (`connecting`), on phase rows.
    "connections",
    "connect_p50_us",
    "first_byte_p50_us",
    "tls",
    "tls_verification",
    "handshakes_full",
    "handshakes_resumed",
    "handshake_p50_us",
    "handshake_max_us",
    // A staged run's `stage` rows: the stage, its start and its load (`load` also on the run's
    // phase row).
    "stage",
    "stage_start_s",
    "load",
    // `probe visible` (`freshness`), on an ingest's phase row.
    "lag_p50_us",
    "lag_p99_us",
    "lag_max_us",
    "all_visible_after_s",
    "probes_sent",
    "probes_failed",
    // The `concurrent` group of a phase row, and how the phase ended in it.
    "concurrent",
    "concurrent_end",
    // `find max rate`: the answer and outcome on the phase row, and one `step` row per step.
    "findmax_answer_per_s",
    "findmax_outcome",
    "step",
    "step_search",
    "step_rate_per_s",
    "step_verdict",
    "step_broke",
];

/// A row being filled, column by name.
struct Row(Vec<String>);

impl Row {
    fn new(cell: usize, key: &str, phase: &str, kind: &str, row: &str) -> Row {
        let mut r = Row(vec![String::new(); COLUMNS.len()]);
        r.set("cell", cell);
        r.set("key", key);
        r.set("phase", phase);
        r.set("kind", kind);
        r.set("row", row);
        r
    }

    fn set(&mut self, column: &str, value: impl ToString) {
        let i = COLUMNS
            .iter()
            .position(|c| *c == column)
            .unwrap_or_else(|| panic!("report.csv has no column `{column}`"));
        self.0[i] = value.to_string();
    }

    fn opt(&mut self, column: &str, value: Option<impl ToString>) {
        if let Some(v) = value {
            self.set(column, v);
        }
    }

    /// The connection columns of a phase row; empty where nothing connected.
    fn connecting(&mut self, c: Option<&super::connections::ConnectionsReport>) {
        let Some(c) = c else {
            return;
        };
        self.set("connections", c.opened);
        self.set("connect_p50_us", c.connect.p50_us);
        self.set("first_byte_p50_us", c.first_byte.p50_us);
        if let Some(t) = &c.tls {
            self.set("tls", &t.version);
            self.set("tls_verification", &t.verification);
            self.set("handshakes_full", t.full_handshakes);
            self.set("handshakes_resumed", t.resumed_handshakes);
        }
        if let Some(h) = c.handshake.as_ref().filter(|h| h.count > 0) {
            self.set("handshake_p50_us", h.p50_us);
            self.set("handshake_max_us", h.max_us);
        }
    }

    /// The freshness columns of a probed ingest; the lag's empty when no probe saw rows.
    fn freshness(&mut self, f: Option<&super::freshness::Freshness>) {
        let Some(f) = f else {
            return;
        };
        if f.lag.count > 0 {
            self.set("lag_p50_us", f.lag.p50_us);
            self.set("lag_p99_us", f.lag.p99_us);
            self.set("lag_max_us", f.lag.max_us);
        }
        self.opt("all_visible_after_s", f.all_visible_after_s);
        self.set("probes_sent", f.probes_sent);
        self.set("probes_failed", f.probes_failed);
    }

    /// The group columns: its name, and `until` (this phase's end ends the group), `stopped`
    /// (the group's end stopped it), `interrupted` (a signal, or a killed run, stopped it
    /// first) or `own` (it ended on its own terms).
    fn concurrent(&mut self, c: Option<&super::together::ConcurrentMember>, status: Status) {
        let Some(c) = c else {
            return;
        };
        self.set("concurrent", &c.group);
        let end = if c.set_end {
            "until"
        } else if c.stopped_by_group {
            "stopped"
        } else if status == Status::Interrupted {
            "interrupted"
        } else {
            "own"
        };
        self.set("concurrent_end", end);
    }

    /// A search's answer (empty when no step met the SLA) and outcome, on its phase row.
    fn findmax(&mut self, f: Option<&FindMaxReport>) {
        let Some(f) = f else {
            return;
        };
        self.opt("findmax_answer_per_s", f.answer_per_s);
        self.set("findmax_outcome", &f.outcome);
    }

    /// The percentile columns, from `latency` (left empty when nothing was measured).
    fn latency(&mut self, latency: &Latency, service: Option<&Latency>) {
        if latency.count == 0 {
            return;
        }
        self.set("p50_us", latency.p50_us);
        self.set("p90_us", latency.p90_us);
        self.set("p99_us", latency.p99_us);
        self.set("p999_us", latency.p999_us);
        self.set("max_us", latency.max_us);
        self.set("mean_us", latency.mean_us);
        if let Some(s) = service.filter(|s| s.count > 0) {
            self.set("service_p50_us", s.p50_us);
            self.set("service_p99_us", s.p99_us);
        }
    }
}

fn status<T: std::fmt::Debug>(s: T) -> String {
    format!("{s:?}").to_lowercase()
}

pub fn csv(report: &Report) -> Result<Vec<u8>, String> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record(COLUMNS).map_err(|e| e.to_string())?;
    for cell in &report.cells {
        for phase in &cell.phases {
            for row in rows(cell.index, &cell.key, phase) {
                w.write_record(&row.0).map_err(|e| e.to_string())?;
            }
        }
    }
    w.into_inner().map_err(|e| e.to_string())
}

fn rows(cell: usize, key: &str, phase: &PhaseReport) -> Vec<Row> {
    match phase {
        PhaseReport::Ingest(r) => {
            let mut row = Row::new(cell, key, &r.name, "ingest", "phase");
            row.set("endpoint", &r.endpoint);
            row.set("status", status(r.status));
            row.set("workers", r.workers);
            row.set("batch_rows", r.batch_rows);
            row.opt("rows_expected", r.rows_expected);
            row.set("rows_generated", r.rows_generated);
            row.set("rows_sent", r.rows_sent);
            row.opt("rows_acked", r.rows_acked);
            row.set("rows_cut_off", r.rows_cut_off);
            row.opt("rows_visible", r.rows_visible);
            row.opt("visible_after_s", r.visible_after_s);
            row.set("elapsed_s", r.elapsed_s);
            row.opt("rows_per_s", r.rows_per_s);
            row.set("rate_counts", r.rate_counts.as_str());
            row.opt("send_rows_per_s", r.send_rows_per_s);
            row.opt("ack_rows_per_s", r.ack_rows_per_s);
            row.set("payload_bytes", r.payload_bytes);
            row.set("socket_bytes", r.socket_bytes);
            row.opt("payload_bytes_per_row", r.payload_bytes_per_row);
            row.opt("socket_bytes_per_row", r.socket_bytes_per_row);
            row.set("batch_p50_us", r.batch_latency.p50_us);
            row.set("batch_p99_us", r.batch_latency.p99_us);
            row.set("batch_max_us", r.batch_latency.max_us);
            row.opt("client_cpu_s", r.client_cpu_s);
            row.set("errors", r.errors.values().map(|e| e.count).sum::<u64>());
            // `rate R`: the open-loop columns of query runs, counted in rows.
            if let Some(s) = &r.schedule {
                row.set("scheduled", s.scheduled_rows);
                row.set("cut_off", s.cut_off_rows);
                row.set("unsent", s.unsent_rows);
                row.set("achieved_rate", s.achieved_rate);
            }
            row.connecting(r.connecting.as_ref());
            row.freshness(r.freshness.as_ref());
            row.concurrent(r.concurrent.as_ref(), r.status);
            row.findmax(r.findmax.as_ref());
            let mut rows = vec![row];
            rows.extend(ingest_stage_rows(cell, key, r));
            let phase = (r.name.as_str(), r.endpoint.as_str());
            rows.extend(findmax_rows(cell, key, phase, r.findmax.as_ref(), "ingest"));
            rows
        }
        PhaseReport::Queries(r) => {
            let mut parts = Vec::new();
            for t in &r.detail.query_types {
                let mut row = part(cell, key, r, "query", &t.label, (t.ok, t.failed, t.rows));
                row.set("query", &t.name);
                row.opt("qps", t.qps);
                row.latency(&t.latency, t.service.as_ref());
                parts.push(row);
            }
            for l in &r.detail.labels {
                let mut row = part(cell, key, r, "label", &l.label, (l.ok, l.failed, l.rows));
                row.opt("qps", l.qps);
                row.latency(&l.latency, l.service.as_ref());
                parts.push(row);
            }
            let rate = ("qps", r.output.qps);
            run_rows((cell, key, "queries"), r, rate, r.output.rows, parts)
        }
        PhaseReport::Requests(r) => {
            let rate = ("rps", r.output.rps);
            run_rows((cell, key, "requests"), r, rate, r.output.rows, Vec::new())
        }
        PhaseReport::NotRun { name, .. } => {
            let mut row = Row::new(cell, key, name, "", "phase");
            row.set("status", "not_run");
            vec![row]
        }
    }
}

/// A query type's or a label's row of query run `r`: `(ok, failed, result rows)`.
fn part(
    cell: usize,
    key: &str,
    r: &super::QueryReport,
    what: &str,
    label: &str,
    (ok, failed, result_rows): (u64, u64, u64),
) -> Row {
    let mut row = Row::new(cell, key, &r.name, "queries", what);
    row.set("endpoint", &r.endpoint);
    row.set("label", label);
    row.set("ok", ok);
    row.set("failed", failed);
    row.set("errors", failed);
    row.set("result_rows", result_rows);
    row
}

/// A query or request run's rows: its phase row with its success `rate` (`qps` or `rps`) and
/// `result_rows`, then `parts` (a query run's types and labels), its stages and its search's
/// steps.
fn run_rows<K: RunKind + Workers>(
    (cell, key, kind): (usize, &str, &str),
    r: &RunReport<K>,
    (column, rate): (&str, Option<f64>),
    result_rows: u64,
    parts: Vec<Row>,
) -> Vec<Row> {
    let mut row = run_row(cell, key, kind, r);
    row.connecting(r.connecting.as_ref());
    row.set("result_rows", result_rows);
    row.opt(column, rate);
    let mut rows = vec![row];
    rows.extend(parts);
    rows.extend(stage_rows(cell, key, kind, r, column));
    let phase = (r.name.as_str(), r.endpoint.as_str());
    rows.extend(findmax_rows(cell, key, phase, r.findmax.as_ref(), kind));
    rows
}

/// What a query run's row and a request run's row share.
fn run_row<K: RunKind + Workers>(cell: usize, key: &str, kind: &str, r: &RunReport<K>) -> Row {
    let mut row = Row::new(cell, key, &r.name, kind, "phase");
    row.set("endpoint", &r.endpoint);
    row.set("status", status(r.status));
    row.set("workers", r.setup.workers());
    row.set("elapsed_s", r.elapsed_s);
    row.opt("client_cpu_s", r.client_cpu_s);
    row.set("errors", r.failed);
    row.set("ok", r.ok);
    row.set("failed", r.failed);
    row.set("error_rate", r.error_rate);
    row.set("scheduled", r.accounting.scheduled);
    row.set("cut_off", r.accounting.cut_off);
    row.set("unsent", r.accounting.unsent);
    row.opt("achieved_rate", r.accounting.achieved_rate);
    row.latency(&r.latency, r.service.as_ref());
    row.set("load", &r.load);
    row.concurrent(r.concurrent.as_ref(), r.status);
    row.findmax(r.findmax.as_ref());
    row
}

/// A staged run's rows, one per stage: its measured part (after its warm-up), `elapsed_s` its
/// span, `workers` its connections; the rate of successes goes to `rate` (`qps` or `rps`).
fn stage_rows<K: RunKind>(
    cell: usize,
    key: &str,
    kind: &str,
    r: &RunReport<K>,
    rate: &str,
) -> Vec<Row> {
    r.stages
        .iter()
        .map(|s| {
            let mut row = Row::new(cell, key, &r.name, kind, "stage");
            row.set("endpoint", &r.endpoint);
            row.set("workers", s.workers);
            row.set("elapsed_s", s.span_s);
            row.set("errors", s.failed);
            row.set("ok", s.ok);
            row.set("failed", s.failed);
            row.set("error_rate", s.error_rate);
            row.opt(rate, s.ok_per_s);
            row.set("scheduled", s.accounting.scheduled);
            row.set("cut_off", s.accounting.cut_off);
            row.set("unsent", s.accounting.unsent);
            row.opt("achieved_rate", s.accounting.achieved_rate);
            row.latency(&s.latency, s.service.as_ref());
            row.set("stage", s.stage);
            row.set("stage_start_s", s.start_s);
            row.set("load", &s.load);
            row
        })
        .collect()
}

/// A staged ingest's rows, one per stage: its rows after its warm-up in the ingest columns and,
/// as a rate-controlled ingest's phase row has them, in the open-loop columns; `elapsed_s` its
/// measured span.
fn ingest_stage_rows(cell: usize, key: &str, r: &super::IngestReport) -> Vec<Row> {
    r.stages
        .iter()
        .map(|s| {
            let mut row = Row::new(cell, key, &r.name, "ingest", "stage");
            row.set("endpoint", &r.endpoint);
            row.set("workers", r.workers);
            row.set("batch_rows", r.batch_rows);
            row.set("rows_sent", s.rows.sent);
            row.opt("rows_acked", s.rows.acked);
            row.set("rows_cut_off", s.rows.cut_off);
            row.set("elapsed_s", s.span_s);
            row.opt("rows_per_s", s.rows_per_s);
            row.set("rate_counts", r.rate_counts.as_str());
            row.set("batch_p50_us", s.batch_latency.p50_us);
            row.set("batch_p99_us", s.batch_latency.p99_us);
            row.set("batch_max_us", s.batch_latency.max_us);
            row.set("errors", s.rows.failed);
            row.set("failed", s.rows.failed);
            row.set("scheduled", s.rows.scheduled);
            row.set("cut_off", s.rows.cut_off);
            row.set("unsent", s.rows.unsent);
            row.opt("achieved_rate", s.achieved_rate);
            row.set("stage", s.stage);
            row.set("stage_start_s", s.start_s);
            row.set("load", &s.load);
            row
        })
        .collect()
}

/// A `find max rate` search's rows, one per step in the order they ran (`row` = `step`): the
/// step's fixed rate, its measured span and accounting, its latency and its verdict. Its
/// success rate (`achieved_per_s`) goes where the phase row has it: `qps`, `rps`, or an
/// ingest's `rows_per_s`; an ingest's latency is its batches' and its lag is the probe's.
fn findmax_rows(
    cell: usize,
    key: &str,
    (name, endpoint): (&str, &str),
    f: Option<&FindMaxReport>,
    kind: &str,
) -> Vec<Row> {
    let Some(f) = f else {
        return Vec::new();
    };
    f.steps
        .iter()
        .map(|s| {
            let mut row = Row::new(cell, key, name, kind, "step");
            row.set("endpoint", endpoint);
            row.set("elapsed_s", s.elapsed_s);
            row.set("scheduled", s.scheduled);
            row.set("cut_off", s.cut_off);
            row.set("unsent", s.unsent);
            row.opt("achieved_rate", s.achieved);
            row.set("error_rate", s.error_rate);
            row.set("errors", s.failed);
            row.set("failed", s.failed);
            if kind == "ingest" {
                row.set("rows_acked", s.ok);
                row.set("rows_sent", s.ok + s.failed);
                row.set("rows_cut_off", s.cut_off);
                row.opt("rows_per_s", s.achieved_per_s);
                row.set("batch_p50_us", s.p50_us);
                row.set("batch_p99_us", s.p99_us);
                row.set("batch_max_us", s.max_us);
                row.opt("lag_p50_us", s.lag_p50_us);
                row.opt("lag_p99_us", s.lag_p99_us);
                row.opt("lag_max_us", s.lag_max_us);
                row.opt("all_visible_after_s", s.visible_after_s);
            } else {
                row.set("ok", s.ok);
                row.opt(
                    if kind == "queries" { "qps" } else { "rps" },
                    s.achieved_per_s,
                );
                if s.ok + s.failed > 0 {
                    row.set("p50_us", s.p50_us);
                    row.set("p90_us", s.p90_us);
                    row.set("p99_us", s.p99_us);
                    row.set("p999_us", s.p999_us);
                    row.set("max_us", s.max_us);
                }
            }
            row.set("step", s.step);
            row.set("step_search", &s.phase);
            row.set("step_rate_per_s", s.rate_per_s);
            row.set("step_verdict", &s.verdict);
            row.set("step_broke", s.broke.join("; "));
            row
        })
        .collect()
}

/// Workers of a query run, connections of a request run: the `workers` column.
trait Workers {
    fn workers(&self) -> u64;
}

impl Workers for super::QuerySetup {
    fn workers(&self) -> u64 {
        self.workers
    }
}

impl Workers for super::RequestSetup {
    fn workers(&self) -> u64 {
        self.connections
    }
}

#[cfg(test)]
mod tests {
    use super::super::freshness::Freshness;
    use super::super::stages::StageReport;
    use super::super::tests::{
        findmax_search, findmax_step, ingest_report, latency, query_report, report, request_report,
    };
    use super::super::together::ConcurrentMember;
    use super::super::{Accounting, CellReport, PhaseReport, Status};
    use super::*;

    /// The columns of the wlrun versions before stages, freshness and groups, in their places:
    /// a script reading report.csv by position keeps reading the same figures.
    const EARLIER: &str = "cell,key,phase,kind,endpoint,status,workers,batch_rows,rows_expected,\
rows_generated,rows_sent,rows_acked,rows_cut_off,rows_visible,visible_after_s,elapsed_s,\
rows_per_s,rate_counts,send_rows_per_s,ack_rows_per_s,payload_bytes,socket_bytes,\
payload_bytes_per_row,socket_bytes_per_row,batch_p50_us,batch_p99_us,batch_max_us,client_cpu_s,\
errors,row,query,label,ok,failed,error_rate,result_rows,qps,rps,scheduled,cut_off,unsent,\
achieved_rate,p50_us,p90_us,p99_us,p999_us,max_us,mean_us,service_p50_us,service_p99_us,\
connections,connect_p50_us,first_byte_p50_us,tls,tls_verification,handshakes_full,\
handshakes_resumed,handshake_p50_us,handshake_max_us";

    fn stage(n: u64, load: &str, rate: Option<f64>) -> StageReport {
        StageReport {
            stage: n,
            start_s: (n - 1) as f64 * 2.5,
            gap_before_s: 0.0,
            duration_s: 2.0,
            warmup_s: 0.0,
            span_s: 2.0,
            load: load.into(),
            rate_from: rate,
            rate_to: rate,
            workers: n,
            ok: 10 * n,
            failed: n,
            accounting: Accounting {
                scheduled: 11 * n + 1,
                unsent: 1,
                ..Accounting::default()
            },
            ok_per_s: Some(5.0 * n as f64),
            error_rate: 1.0 / 11.0,
            latency: latency(100 * n),
            service: None,
            warmup_excluded: 0,
            kept_schedule: None,
        }
    }

    /// Header and rows as maps, column name -> value.
    fn table(report: &Report) -> (Vec<String>, Vec<Vec<(String, String)>>) {
        let bytes = csv(report).unwrap();
        let mut r = ::csv::Reader::from_reader(&bytes[..]);
        let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
        let rows = r
            .records()
            .map(|rec| {
                header
                    .iter()
                    .cloned()
                    .zip(rec.unwrap().iter().map(String::from))
                    .collect()
            })
            .collect();
        (header, rows)
    }

    fn get<'a>(row: &'a [(String, String)], column: &str) -> &'a str {
        &row.iter().find(|(c, _)| c == column).unwrap().1
    }

    #[test]
    fn stages_freshness_and_groups_are_appended_after_the_columns_of_earlier_versions() {
        let mut r = report();
        let mut load = ingest_report(Status::Ok);
        load.freshness = Some(Freshness {
            probes_sent: 40,
            probes_failed: 2,
            lag: latency(300_000),
            all_visible_after_s: Some(0.35),
            ..Freshness::default()
        });
        load.concurrent = Some(ConcurrentMember {
            group: "mixed".into(),
            phases: vec!["load".into(), "q".into()],
            until: Some("load".into()),
            set_end: true,
            stopped_by_group: false,
            started_at_offset_ms: Some(0.0),
            ended_at_offset_ms: Some(2000.0),
        });
        let mut q = query_report();
        q.concurrent = load.concurrent.clone().map(|c| ConcurrentMember {
            set_end: false,
            stopped_by_group: true,
            ..c
        });
        q.stages = vec![
            stage(1, "open 5/s fixed", Some(5.0)),
            stage(2, "closed", None),
        ];
        // A third member, stopped by Ctrl-C before the group ended.
        let mut hits = request_report();
        hits.status = Status::Interrupted;
        hits.concurrent = load.concurrent.clone().map(|c| ConcurrentMember {
            set_end: false,
            ..c
        });
        r.cells.push(CellReport {
            index: 2,
            key: String::new(),
            phases: vec![
                PhaseReport::Ingest(Box::new(load)),
                PhaseReport::Queries(Box::new(q)),
                PhaseReport::Requests(Box::new(hits)),
            ],
        });
        let (header, rows) = table(&r);
        assert_eq!(header[..59].join(","), EARLIER);
        assert_eq!(
            header[59..70],
            [
                "stage",
                "stage_start_s",
                "load",
                "lag_p50_us",
                "lag_p99_us",
                "lag_max_us",
                "all_visible_after_s",
                "probes_sent",
                "probes_failed",
                "concurrent",
                "concurrent_end"
            ]
        );
        // Cell 1 is as before, but for its runs' load.
        let cell2: Vec<_> = rows.iter().filter(|r| get(r, "cell") == "2").collect();
        let load = cell2[0];
        assert_eq!(get(load, "row"), "phase");
        assert_eq!(get(load, "lag_p50_us"), "300002");
        assert_eq!(get(load, "lag_p99_us"), "300005");
        assert_eq!(get(load, "lag_max_us"), "300007");
        assert_eq!(get(load, "all_visible_after_s"), "0.35");
        assert_eq!(get(load, "probes_sent"), "40");
        assert_eq!(get(load, "probes_failed"), "2");
        assert_eq!(get(load, "concurrent"), "mixed");
        assert_eq!(get(load, "concurrent_end"), "until");
        assert_eq!(get(load, "stage"), "");
        let q = cell2[1];
        assert_eq!(
            (get(q, "row"), get(q, "concurrent_end"), get(q, "load")),
            ("phase", "stopped", "open 200/s poisson")
        );
        assert_eq!(get(q, "lag_p50_us"), "", "no probe on a run");
        // The phase row stays the whole run's; then its query types and labels; then a row per
        // stage, each with its own figures.
        let hits = cell2.last().unwrap();
        assert_eq!(get(hits, "concurrent_end"), "interrupted");
        let stages: Vec<_> = cell2.iter().filter(|r| get(r, "row") == "stage").collect();
        assert_eq!(stages.len(), 2);
        assert_eq!(get(cell2[cell2.len() - 3], "row"), "stage");
        assert_eq!(get(cell2[cell2.len() - 2], "row"), "stage");
        let (s1, s2) = (stages[0], stages[1]);
        assert_eq!(
            [
                get(s1, "stage"),
                get(s1, "stage_start_s"),
                get(s1, "load"),
                get(s1, "workers"),
                get(s1, "ok"),
                get(s1, "failed"),
                get(s1, "scheduled"),
                get(s1, "unsent"),
                get(s1, "qps"),
                get(s1, "p50_us"),
                get(s1, "elapsed_s"),
            ],
            [
                "1",
                "0",
                "open 5/s fixed",
                "1",
                "10",
                "1",
                "12",
                "1",
                "5",
                "102",
                "2"
            ]
        );
        assert_eq!(
            (get(s2, "stage"), get(s2, "stage_start_s"), get(s2, "load")),
            ("2", "2.5", "closed")
        );
        assert_eq!(get(s2, "concurrent"), "", "the group is on the phase row");
        for s in stages {
            assert_eq!(get(s, "phase"), "q");
            assert_eq!(get(s, "status"), "");
        }
    }

    #[test]
    fn a_phase_outside_any_group_and_without_a_probe_leaves_the_new_columns_empty() {
        let (header, rows) = table(&report());
        for row in &rows {
            for c in &header[59..] {
                if c != "load" {
                    assert_eq!(get(row, c), "", "{c}");
                }
            }
        }
        assert_eq!(get(&rows[0], "load"), "open 200/s poisson");
        let requests = rows.iter().find(|r| get(r, "kind") == "requests").unwrap();
        assert_eq!(get(requests, "load"), "closed");
    }

    #[test]
    fn a_staged_ingest_has_a_row_per_stage_after_its_phase_row() {
        use super::super::stages::{IngestStageReport, StageRows};
        let stage = |n: u64, sent: u64, unsent: u64| IngestStageReport {
            stage: n,
            start_s: (n - 1) as f64 * 10.0,
            duration_s: 10.0,
            warmup_s: 1.0,
            span_s: 9.0,
            load: format!("{}/s", n * 1000),
            rate_from: (n * 1000) as f64,
            rate_to: (n * 1000) as f64,
            reached: true,
            rows: StageRows {
                scheduled: sent + unsent,
                sent,
                acked: Some(sent - 10),
                failed: 10,
                dropped: 0,
                cut_off: 0,
                unsent,
            },
            warmup: StageRows::default(),
            batches: sent / 100,
            rows_per_s: Some((sent - 10) as f64 / 9.0),
            achieved_rate: Some(sent as f64 / (sent + unsent) as f64),
            kept_schedule: Some(unsent == 0),
            late_batches: 0,
            late_share: None,
            send_lag: Latency::default(),
            batch_latency: latency(2_000),
            batch_latency_intended: Latency::default(),
        };
        let mut r = report();
        let mut load = ingest_report(Status::Ok);
        load.stages = vec![stage(1, 9_000, 0), stage(2, 15_000, 3_000)];
        r.cells[0]
            .phases
            .insert(0, PhaseReport::Ingest(Box::new(load)));
        let (_, rows) = table(&r);
        assert_eq!(get(&rows[0], "row"), "phase");
        let stages: Vec<_> = rows[1..3].iter().collect();
        for (i, s) in stages.iter().enumerate() {
            assert_eq!(get(s, "kind"), "ingest");
            assert_eq!(get(s, "row"), "stage");
            assert_eq!(get(s, "stage"), (i + 1).to_string());
            assert_eq!(get(s, "elapsed_s"), "9");
            assert_eq!(get(s, "batch_p99_us"), latency(2_000).p99_us.to_string());
        }
        let s2 = stages[1];
        assert_eq!(get(s2, "rows_sent"), "15000");
        assert_eq!(get(s2, "rows_acked"), "14990");
        assert_eq!(get(s2, "scheduled"), "18000");
        assert_eq!(get(s2, "unsent"), "3000");
        assert_eq!(get(s2, "failed"), "10");
        assert_eq!(get(s2, "load"), "2000/s");
        assert_eq!(get(s2, "stage_start_s"), "10");
    }

    #[test]
    fn a_search_has_its_answer_on_the_phase_row_and_a_row_per_step() {
        let mut r = report();
        let mut q = query_report();
        q.stages.clear();
        q.findmax = Some(findmax_search(
            Some(100.0),
            "bracketed",
            vec![
                findmax_step(1, "grow", 100.0, "met"),
                findmax_step(2, "grow", 200.0, "broke"),
                findmax_step(3, "bisect", 150.0, "broke"),
            ],
        ));
        let mut load = ingest_report(Status::Failed);
        let mut s = findmax_step(1, "grow", 5_000.0, "broke");
        (s.lag_p50_us, s.lag_p99_us, s.lag_max_us) = (Some(55_000), Some(300_500), Some(400_000));
        s.visible_after_s = Some(1.25);
        load.findmax = Some(findmax_search(None, "not_met_at_from", vec![s]));
        r.cells.push(CellReport {
            index: 2,
            key: String::new(),
            phases: vec![
                PhaseReport::Ingest(Box::new(load)),
                PhaseReport::Queries(Box::new(q)),
            ],
        });
        let (header, rows) = table(&r);
        assert_eq!(
            header[70..],
            [
                "findmax_answer_per_s",
                "findmax_outcome",
                "step",
                "step_search",
                "step_rate_per_s",
                "step_verdict",
                "step_broke"
            ]
        );
        let cell2: Vec<_> = rows.iter().filter(|r| get(r, "cell") == "2").collect();
        let kinds: Vec<(&str, &str)> = cell2
            .iter()
            .map(|r| (get(r, "kind"), get(r, "row")))
            .collect();
        assert_eq!(
            kinds[..2],
            [("ingest", "phase"), ("ingest", "step")],
            "an ingest's steps follow its phase row"
        );
        assert_eq!(kinds.iter().filter(|k| k.1 == "step").count(), 4);
        assert_eq!(kinds[kinds.len() - 3..], [("queries", "step"); 3]);

        let load = cell2[0];
        assert_eq!(
            (
                get(load, "findmax_answer_per_s"),
                get(load, "findmax_outcome")
            ),
            ("", "not_met_at_from"),
            "no step met: no answer"
        );
        let s = cell2[1];
        assert_eq!(
            [
                get(s, "step"),
                get(s, "step_search"),
                get(s, "step_rate_per_s"),
                get(s, "step_verdict"),
                get(s, "step_broke"),
                get(s, "rows_sent"),
                get(s, "rows_acked"),
                get(s, "rows_per_s"),
                get(s, "batch_p99_us"),
                get(s, "lag_p99_us"),
                get(s, "all_visible_after_s"),
                get(s, "scheduled"),
                get(s, "failed"),
                get(s, "p99_us"),
            ],
            [
                "1",
                "grow",
                "5000",
                "broke",
                "p99 30ms; errors 2",
                "19999",
                "19997",
                "4999.25",
                "30000",
                "300500",
                "1.25",
                "20000",
                "2",
                "",
            ]
        );

        let q = cell2
            .iter()
            .find(|r| get(r, "kind") == "queries" && get(r, "row") == "phase")
            .unwrap();
        assert_eq!(
            (get(q, "findmax_answer_per_s"), get(q, "findmax_outcome")),
            ("100", "bracketed")
        );
        assert_eq!(get(q, "step"), "");
        let steps: Vec<_> = cell2.iter().filter(|r| get(r, "row") == "step").collect();
        let last = steps[3];
        assert_eq!(
            [
                get(last, "step"),
                get(last, "step_search"),
                get(last, "step_rate_per_s"),
                get(last, "ok"),
                get(last, "failed"),
                get(last, "cut_off"),
                get(last, "scheduled"),
                get(last, "qps"),
                get(last, "p99_us"),
                get(last, "elapsed_s"),
                get(last, "rows_sent"),
                get(last, "findmax_outcome"),
            ],
            ["3", "bisect", "150", "597", "2", "1", "600", "149.25", "30000", "4", "", ""]
        );
    }
}
