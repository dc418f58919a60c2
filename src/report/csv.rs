//! report.csv, and `wlrun report --csv`: one row per phase, and for a query run one more per
//! query type and per label, with the figures people chart. The first 29 columns are those of
//! earlier wlrun versions, in their order, so that scripts reading them keep working; the
//! columns after them are the query and request figures (docs/report-format.md, "report.csv").

use super::{Latency, PhaseReport, Report, RunKind, RunReport};

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
            vec![row]
        }
        PhaseReport::Queries(r) => {
            let mut row = run_row(cell, key, "queries", r);
            row.connecting(r.connecting.as_ref());
            row.set("result_rows", r.output.rows);
            row.opt("qps", r.output.qps);
            let mut rows = vec![row];
            for t in &r.detail.query_types {
                let mut row = part(cell, key, r, "query", &t.label, (t.ok, t.failed, t.rows));
                row.set("query", &t.name);
                row.opt("qps", t.qps);
                row.latency(&t.latency, t.service.as_ref());
                rows.push(row);
            }
            for l in &r.detail.labels {
                let mut row = part(cell, key, r, "label", &l.label, (l.ok, l.failed, l.rows));
                row.opt("qps", l.qps);
                row.latency(&l.latency, l.service.as_ref());
                rows.push(row);
            }
            rows
        }
        PhaseReport::Requests(r) => {
            let mut row = run_row(cell, key, "requests", r);
            row.connecting(r.connecting.as_ref());
            row.set("result_rows", r.output.rows);
            row.opt("rps", r.output.rps);
            vec![row]
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
    row
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
