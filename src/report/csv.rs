//! report.csv, and `wlrun report --csv`: one row per phase, for a query run one more per
//! query type and per label, and for a staged run one more per stage, with the figures people
//! chart. Columns are only ever appended: the first 29 are those of the first wlrun versions,
//! then the query and request figures, the connections, and last the stages, the freshness
//! of a probed ingest and the `concurrent` group (docs/report-format.md, "report.csv"), so
//! that scripts reading them by position keep working.

use super::csv_columns::{columns, figure_column};
use super::findmax::FindMaxReport;
use super::{Latency, PhaseReport, Report, RunKind, RunReport, Status};

/// The server columns of a phase row: scrapes summed over the phase's endpoints, the CPU of
/// the first that names one.
fn server_columns(row: &mut Row, phase: &PhaseReport) {
    let all = super::server_metrics::of(phase);
    if all.is_empty() {
        return;
    }
    row.set(
        "metrics_scrapes_ok",
        all.iter().map(|m| m.scrapes_ok).sum::<u64>(),
    );
    row.set(
        "metrics_scrapes_failed",
        all.iter().map(|m| m.scrapes_failed).sum::<u64>(),
    );
    if let Some(c) = all.iter().find_map(|m| m.cpu.as_ref()) {
        row.set("metrics_server_cpu_s", c.cpu_s);
        row.opt("metrics_server_cores", c.cores);
        row.opt("metrics_server_cpu_us_per_unit", c.us_per_unit);
        row.set("metrics_server_cpu_unit", &c.unit);
    }
}

/// A row being filled, column by name.
struct Row(Vec<String>);

impl Row {
    fn new(cell: usize, key: &str, phase: &str, kind: &str, row: &str) -> Row {
        let mut r = Row(vec![String::new(); columns().len()]);
        r.set("cell", cell);
        r.set("key", key);
        r.set("phase", phase);
        r.set("kind", kind);
        r.set("row", row);
        r
    }

    fn set(&mut self, column: &str, value: impl ToString) {
        let i = columns()
            .iter()
            .position(|c| c == column)
            .unwrap_or_else(|| panic!("report.csv has no column `{column}`"));
        self.0[i] = value.to_string();
    }

    fn opt(&mut self, column: &str, value: Option<impl ToString>) {
        if let Some(v) = value {
            self.set(column, v);
        }
    }

    /// The `server_` columns of a phase row; empty without `observe process`.
    fn server(&mut self, s: Option<&super::server::ServerReport>) {
        let Some(s) = s else {
            return;
        };
        self.set("server_cpu_s", s.cpu_s);
        self.set("server_cpu_user_s", s.cpu_user_s);
        self.set("server_cpu_system_s", s.cpu_system_s);
        self.opt("server_cores", s.cores);
        self.opt("server_cpu_us_per_unit", s.cpu_us_per_unit);
        self.set("server_unit", &s.unit);
        self.set("server_rss_peak_bytes", s.rss_peak_bytes);
        self.opt("server_read_bytes", s.read_bytes);
        self.opt("server_write_bytes", s.write_bytes);
        self.opt("server_read_bytes_per_unit", s.read_bytes_per_unit);
        self.opt("server_write_bytes_per_unit", s.write_bytes_per_unit);
        self.set("server_threads_max", s.threads_max);
        self.set("server_processes_max", s.processes_max);
        self.set("server_span_s", s.span_s);
        let pids: Vec<String> = s.observed.iter().map(|o| o.pid.to_string()).collect();
        self.set("server_pids", pids.join(" "));
        self.opt("machine_busy_cores", s.machine_busy_cores);
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
        self.summary("connect_", Some(&c.connect));
        self.summary("first_byte_", Some(&c.first_byte));
        self.summary("handshake_", c.handshake.as_ref());
        self.set("socket_bytes_written", c.socket_bytes_written);
        self.set("socket_bytes_read", c.socket_bytes_read);
        if let Some(t) = &c.tls {
            self.set("tls_plaintext_fallbacks", t.plaintext_fallbacks);
        }
    }

    /// The result-streaming figures of a query run or type; nothing where none were measured.
    fn streaming(&mut self, s: Option<&super::streaming::StreamingReport>) {
        let Some(s) = s else {
            return;
        };
        self.summary("streaming_first_result_", Some(&s.first_result));
        self.set("streaming_streamed_queries", s.streamed_queries);
        self.set("streaming_single_piece_queries", s.single_piece_queries);
        self.set("streaming_streamed_rows", s.streamed_rows);
        self.set("streaming_streamed_bytes", s.streamed_bytes);
        self.set("streaming_streaming_s", s.streaming_s);
        self.opt("streaming_rows_per_s", s.rows_per_s);
        self.opt("streaming_bytes_per_s", s.bytes_per_s);
        self.set("streaming_egress_bytes", s.egress_bytes);
        self.set("streaming_egress_rows", s.egress_rows);
        self.opt("streaming_egress_bytes_per_row", s.egress_bytes_per_row);
    }

    /// Every figure of a latency summary under `prefix` (`LATENCIES`): its count always, the
    /// rest only when it measured something (no figure from nothing); nothing for `None`.
    fn summary(&mut self, prefix: &str, l: Option<&Latency>) {
        let Some(l) = l else {
            return;
        };
        self.set(&figure_column(prefix, "count"), l.count);
        if l.count == 0 {
            return;
        }
        let figures: [(&str, &dyn ToString); 9] = [
            ("min_us", &l.min_us),
            ("mean_us", &l.mean_us),
            ("p50_us", &l.p50_us),
            ("p90_us", &l.p90_us),
            ("p95_us", &l.p95_us),
            ("p99_us", &l.p99_us),
            ("p999_us", &l.p999_us),
            ("max_us", &l.max_us),
            ("stddev_us", &l.stddev_us),
        ];
        for (figure, value) in figures {
            self.set(&figure_column(prefix, figure), value.to_string());
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
        self.summary("lag_", Some(&f.lag));
        self.summary("probe_latency_", Some(&f.probe_latency));
        self.set("probe_every_s", f.every_s);
        self.set("probe_within_s", f.within_s);
        self.set("probes_empty", f.probes_empty);
        self.set("probes_caught_up", f.probes_caught_up);
        self.set("lag_clamped", f.lag_clamped);
        self.set("probe_warmup_s", f.warmup_s);
        self.set("probes_warmup", f.probes_warmup);
        self.set("probe_rows_target", f.rows_target);
        self.opt("probe_last_visible", f.last_visible);
        self.set("probe_samples_stride", f.samples_stride);
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
        self.opt("concurrent_started_at_offset_ms", c.started_at_offset_ms);
        self.opt("concurrent_ended_at_offset_ms", c.ended_at_offset_ms);
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

    /// Every figure of `latency` and `service`, the columns of `latency` above included.
    fn latencies(&mut self, latency: &Latency, service: Option<&Latency>) {
        self.latency(latency, service);
        self.summary("", Some(latency));
        self.summary("service_", service);
    }
}

fn status<T: std::fmt::Debug>(s: T) -> String {
    format!("{s:?}").to_lowercase()
}

pub fn csv(report: &Report) -> Result<Vec<u8>, String> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record(columns()).map_err(|e| e.to_string())?;
    for cell in &report.cells {
        for phase in &cell.phases {
            let mut rows = rows(cell.index, &cell.key, phase);
            if let Some(first) = rows.first_mut() {
                server_columns(first, phase);
            }
            for row in rows {
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
            row.set("rows_dropped", r.rows_dropped);
            row.opt("visible_baseline", r.visible_baseline);
            row.opt("commits", r.commits);
            row.summary("batch_", Some(&r.batch_latency));
            if let Some(c) = &r.calibration {
                row.opt("null_rows_per_s", c.null_rows_per_s);
                row.opt("calibration_ratio", c.ratio);
            }
            // `rate R`: the open-loop columns of query runs, counted in rows (`late` in
            // batches).
            if let Some(s) = &r.schedule {
                row.set("scheduled", s.scheduled_rows);
                row.set("cut_off", s.cut_off_rows);
                row.set("unsent", s.unsent_rows);
                row.set("achieved_rate", s.achieved_rate);
                row.set("rate_rows_per_s", s.rate_rows_per_s);
                row.set("late", s.late_batches);
                row.opt("late_share", s.late_share);
                row.summary("send_lag_", Some(&s.send_lag));
                row.summary("batch_intended_", Some(&s.batch_latency_intended));
            }
            row.connecting(r.connecting.as_ref());
            row.freshness(r.freshness.as_ref());
            row.concurrent(r.concurrent.as_ref(), r.status);
            row.findmax(r.findmax.as_ref());
            row.server(r.server.as_ref());
            if let Some(i) = &r.input {
                row.set("input", i);
            }
            if let Some(l) = &r.link {
                row.set("link_bits_per_s", l.bits_per_s);
                row.opt("link_rows_per_s", l.rows_per_s);
            }
            row.opt("fields_per_row", r.fields_per_row);
            row.opt("metrics_per_s", r.metrics_per_s);
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
                row.opt("rows_per_query", t.rows_per_query);
                row.set("sum_us", t.sum_us);
                row.latencies(&t.latency, t.service.as_ref());
                row.streaming(t.streaming.as_ref());
                parts.push(row);
            }
            for l in &r.detail.labels {
                let mut row = part(cell, key, r, "label", &l.label, (l.ok, l.failed, l.rows));
                row.opt("qps", l.qps);
                row.latencies(&l.latency, l.service.as_ref());
                parts.push(row);
            }
            let rate = ("qps", r.output.qps);
            let mut rows = run_rows((cell, key, "queries"), r, rate, r.output.rows, parts);
            rows[0].streaming(r.detail.streaming.as_ref());
            rows
        }
        PhaseReport::Requests(r) => {
            let rate = ("rps", r.output.rps);
            let mut rows = run_rows((cell, key, "requests"), r, rate, r.output.rows, Vec::new());
            let t = &r.traffic;
            rows[0].set("bytes_sent", t.bytes_sent);
            rows[0].set("bytes_received", t.bytes_received);
            rows[0].set("reconnects", t.reconnects);
            rows
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
    row.latencies(&r.latency, r.service.as_ref());
    row.set("sum_us", r.sum_us);
    row.opt("client_wait_s", r.client_wait_s);
    row.set("late", r.accounting.late);
    row.opt("late_share", r.accounting.late_share);
    row.summary("send_lag_", r.accounting.send_lag.as_ref());
    row.set("load", &r.load);
    row.concurrent(r.concurrent.as_ref(), r.status);
    row.findmax(r.findmax.as_ref());
    row.server(r.server.as_ref());
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
                not_found: 0,
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
    fn a_qwp_ingests_commits_come_after_every_earlier_column() {
        let mut r = report();
        let mut load = ingest_report(Status::Ok);
        load.commits = Some(7);
        r.cells[0]
            .phases
            .insert(0, PhaseReport::Ingest(Box::new(load)));
        let (header, rows) = table(&r);
        let at = header.iter().position(|c| c == "commits").unwrap();
        assert!(
            at > header
                .iter()
                .position(|c| c == "streaming_first_result_max_us")
                .unwrap()
                && at
                    > header
                        .iter()
                        .position(|c| c == "metrics_scrapes_failed")
                        .unwrap(),
            "{header:?}"
        );
        assert_eq!(get(&rows[0], "commits"), "7");
        let mut r = report();
        r.cells[0]
            .phases
            .insert(0, PhaseReport::Ingest(Box::new(ingest_report(Status::Ok))));
        assert_eq!(get(&table(&r).1[0], "commits"), "");
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
            for c in &header[59..77] {
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
            header[70..77],
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

    /// A report whose phases have every optional object a run can give them (connections,
    /// TLS, open-loop figures, a probe, a calibration, a group), so that every figure of
    /// report.json is there to be looked for.
    fn everything() -> Report {
        use super::super::connections::{ConnectionsReport, TlsReport};
        use super::super::{Calibration, IngestSchedule};
        let connecting = Some(ConnectionsReport {
            opened: 3,
            connect: latency(900),
            handshake: Some(latency(910)),
            first_byte: latency(920),
            socket_bytes_written: 930,
            socket_bytes_read: 931,
            tls: Some(TlsReport {
                version: "TLSv1.3".into(),
                full_handshakes: 932,
                resumed_handshakes: 933,
                plaintext_fallbacks: 934,
                ..TlsReport::default()
            }),
        });
        let group = Some(ConcurrentMember {
            group: "g".into(),
            phases: vec!["load".into()],
            until: None,
            set_end: false,
            stopped_by_group: false,
            started_at_offset_ms: Some(1.5),
            ended_at_offset_ms: Some(2500.5),
        });
        let mut load = ingest_report(Status::Ok);
        load.rows_dropped = 7;
        load.visible_baseline = Some(8);
        load.calibration = Some(Calibration {
            null_rows_per_s: Some(90_000.5),
            ratio: Some(0.05),
        });
        load.schedule = Some(IngestSchedule {
            rate_rows_per_s: 5_000.5,
            scheduled_rows: 10_020,
            cut_off_rows: 10,
            unsent_rows: 10,
            achieved_rate: 0.999,
            late_batches: 11,
            late_share: Some(0.11),
            send_lag: latency(600),
            batch_latency_intended: latency(700),
        });
        load.freshness = Some(Freshness {
            every_s: 0.05,
            within_s: 10.5,
            probes_sent: 40,
            probes_failed: 2,
            probes_empty: 3,
            probes_caught_up: 4,
            lag_clamped: 5,
            warmup_s: 1.5,
            probes_warmup: 6,
            lag: latency(300_000),
            probe_latency: latency(1_000),
            rows_target: 9_000,
            last_visible: Some(8_999),
            all_visible_after_s: Some(0.35),
            samples_stride: 2,
            ..Freshness::default()
        });
        load.connecting = connecting.clone();
        load.concurrent = group.clone();
        let mut q = query_report();
        q.client_wait_s = Some(0.125);
        q.connecting = connecting.clone();
        q.concurrent = group.clone();
        let streaming = super::super::streaming::StreamingReport {
            first_result: latency(1_100),
            streamed_queries: 1_101,
            single_piece_queries: 1_102,
            streamed_rows: 1_103,
            streamed_bytes: 1_104,
            streaming_s: 1.105,
            rows_per_s: Some(1_106.5),
            bytes_per_s: Some(1_107.5),
            egress_bytes: 1_108,
            egress_rows: 1_109,
            egress_bytes_per_row: Some(1.11),
        };
        q.detail.streaming = Some(streaming.clone());
        for t in &mut q.detail.query_types {
            t.streaming = Some(streaming.clone());
        }
        let mut hits = request_report();
        hits.service = Some(latency(70));
        hits.accounting = q.accounting.clone();
        hits.client_cpu_s = Some(1.5);
        hits.client_wait_s = Some(0.25);
        hits.output.rows = 17;
        hits.connecting = connecting;
        hits.concurrent = group;
        let mut r = report();
        r.cells = vec![CellReport {
            index: 1,
            key: "k".into(),
            phases: vec![
                PhaseReport::Ingest(Box::new(load)),
                PhaseReport::Queries(Box::new(q)),
                PhaseReport::Requests(Box::new(hits)),
            ],
        }];
        r
    }

    /// The column a figure of report.json goes to: its path joined with `_`, but for the
    /// names report.csv had before it carried every figure.
    fn column_of(path: &[&str]) -> String {
        let renamed: &[(&str, &str)] = &[
            ("connections", "workers"),
            ("rows", "result_rows"),
            ("latency.count", "latency_count"),
            ("latency.", ""),
            ("batch_latency.", "batch_"),
            ("schedule.scheduled_rows", "scheduled"),
            ("schedule.cut_off_rows", "cut_off"),
            ("schedule.unsent_rows", "unsent"),
            ("schedule.late_batches", "late"),
            ("schedule.send_lag.", "send_lag_"),
            ("schedule.batch_latency_intended.", "batch_intended_"),
            ("schedule.", ""),
            ("freshness.probe_latency.", "probe_latency_"),
            ("freshness.lag.", "lag_"),
            ("freshness.probes_", "probes_"),
            ("freshness.lag_clamped", "lag_clamped"),
            ("freshness.all_visible_after_s", "all_visible_after_s"),
            ("freshness.", "probe_"),
            ("connecting.opened", "connections"),
            ("connecting.tls.full_handshakes", "handshakes_full"),
            ("connecting.tls.resumed_handshakes", "handshakes_resumed"),
            ("connecting.tls.", "tls_"),
            ("connecting.", ""),
            ("calibration.null_rows_per_s", "null_rows_per_s"),
        ];
        let dotted = path.join(".");
        for (from, to) in renamed {
            if dotted == *from {
                return to.to_string();
            }
            if from.ends_with('.') || from.ends_with('_') {
                if let Some(rest) = dotted.strip_prefix(from) {
                    return format!("{to}{}", rest.replace('.', "_"));
                }
            }
        }
        dotted.replace('.', "_")
    }

    /// Every number under `v`, with its path; what has rows of its own (`query_types`,
    /// `labels`, `stages`, `findmax`), lists, maps keyed by what was counted (error classes,
    /// HTTP statuses, counters) and where the time series are (`series`) are left out.
    fn numbers<'a>(
        v: &'a serde_json::Value,
        path: &mut Vec<&'a str>,
        out: &mut Vec<(String, f64)>,
    ) {
        const OWN_ROWS_OR_KEYED: &[&str] = &[
            "query_types",
            "labels",
            "stages",
            "findmax",
            "errors",
            "statuses",
            "warmup_statuses",
            "counters",
            "series",
        ];
        match v {
            serde_json::Value::Number(n) => out.push((column_of(path), n.as_f64().unwrap())),
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    if path.is_empty() && OWN_ROWS_OR_KEYED.contains(&k.as_str()) {
                        continue;
                    }
                    path.push(k);
                    numbers(v, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }

    /// Every number report.json has for a phase, a query type and a label is in report.csv,
    /// in its row: a figure added to the JSON later fails here until it has its column.
    #[test]
    fn every_figure_of_a_phase_type_and_label_in_report_json_has_its_column() {
        let r = everything();
        let json = serde_json::to_value(&r).unwrap();
        let (header, rows) = table(&r);
        let mut objects = Vec::new();
        for phase in json["cells"][0]["phases"].as_array().unwrap() {
            let kind = phase["phase"].as_str().unwrap();
            objects.push((kind, "phase", String::new(), phase));
            for t in phase["query_types"].as_array().into_iter().flatten() {
                let name = t["name"].as_str().unwrap().to_string();
                objects.push((kind, "query", name, t));
            }
            for l in phase["labels"].as_array().into_iter().flatten() {
                let name = l["label"].as_str().unwrap().to_string();
                objects.push((kind, "label", name, l));
            }
        }
        let mut missing = Vec::new();
        let mut checked = 0;
        for (kind, what, name, object) in objects {
            let row = rows
                .iter()
                .find(|row| {
                    get(row, "kind") == kind
                        && get(row, "row") == what
                        && (what != "query" || get(row, "query") == name)
                        && (what != "label" || get(row, "label") == name)
                })
                .unwrap_or_else(|| panic!("no {what} row for {kind} {name}"));
            let mut figures = Vec::new();
            numbers(object, &mut Vec::new(), &mut figures);
            for (column, value) in figures {
                checked += 1;
                if !header.contains(&column) {
                    missing.push(format!("{kind} {what}: no column `{column}`"));
                    continue;
                }
                let cell = get(row, &column);
                if cell.parse::<f64>().ok() != Some(value) {
                    missing.push(format!(
                        "{kind} {what} `{column}`: {value} in JSON, `{cell}` in CSV"
                    ));
                }
            }
        }
        assert!(checked > 150, "only {checked} figures were looked for");
        assert!(missing.is_empty(), "{}", missing.join("\n"));
    }

    /// Today's columns keep their places: the header of the commit this was written from.
    #[test]
    fn the_columns_of_earlier_versions_keep_their_places() {
        let (header, _) = table(&report());
        let before: Vec<&str> = EARLIER
            .split(',')
            .chain([
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
                "concurrent_end",
                "findmax_answer_per_s",
                "findmax_outcome",
                "step",
                "step_search",
                "step_rate_per_s",
                "step_verdict",
                "step_broke",
            ])
            .collect();
        assert_eq!(before.len(), 77);
        assert_eq!(header[..77], before[..]);
    }
}
