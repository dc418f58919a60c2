//! report.csv's columns in their places: the ones of the first version, then each latency
//! summary's figures, then every column added since, appended so that a reader by position
//! keeps working (src/report/csv.rs fills them).

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
    // Every other figure report.json has for a phase, a query type or a label: its numbers,
    // then the latency summaries' missing figures (`LATENCIES`).
    "sum_us",
    "rows_per_query",
    "client_wait_s",
    "late",
    "late_share",
    "bytes_sent",
    "bytes_received",
    "reconnects",
    "rows_dropped",
    "visible_baseline",
    "null_rows_per_s",
    "calibration_ratio",
    "rate_rows_per_s",
    "probe_every_s",
    "probe_within_s",
    "probes_empty",
    "probes_caught_up",
    "lag_clamped",
    "probe_warmup_s",
    "probes_warmup",
    "probe_rows_target",
    "probe_last_visible",
    "probe_samples_stride",
    "socket_bytes_written",
    "socket_bytes_read",
    "tls_plaintext_fallbacks",
    "concurrent_started_at_offset_ms",
    "concurrent_ended_at_offset_ms",
];

/// The observed server's figures (`observe process`) on a phase row: after every other
/// column, so that readers by position keep theirs.
const SERVER: &[&str] = &[
    "server_cpu_s",
    "server_cpu_user_s",
    "server_cpu_system_s",
    "server_cores",
    "server_cpu_us_per_unit",
    "server_unit",
    "server_rss_peak_bytes",
    "server_read_bytes",
    "server_write_bytes",
    "server_read_bytes_per_unit",
    "server_write_bytes_per_unit",
    "server_threads_max",
    "server_processes_max",
    "server_span_s",
    "server_pids",
    "machine_busy_cores",
];

/// Columns added after the latency summaries' figures, in the order they came: appended last
/// so that every earlier column keeps its position.
const APPENDED: &[&str] = &[
    // QWP: the commits an ingest asked for (`commit per_batch | every N rows`).
    "commits",
    // An ingest's `input` (live, replay), its link ceiling (`link_rows_per_s`, computed), and
    // its fields a row and metrics per second.
    "input",
    "link_bits_per_s",
    "link_rows_per_s",
    "fields_per_row",
    "metrics_per_s",
];

/// The latency summaries of a phase, a type or a label, by the prefix of their columns: the
/// latency itself has none (`p50_us`), and its count is `latency_count`.
const LATENCIES: &[&str] = &[
    "",
    "service_",
    "send_lag_",
    "batch_",
    "batch_intended_",
    "lag_",
    "probe_latency_",
    "connect_",
    "first_byte_",
    "handshake_",
    // Result streaming (`streaming`), on a query run's phase and type rows.
    "streaming_first_result_",
];

/// Result streaming's other figures, after every latency summary's (`StreamingReport`).
const STREAMING: &[&str] = &[
    "streaming_streamed_queries",
    "streaming_single_piece_queries",
    "streaming_streamed_rows",
    "streaming_streamed_bytes",
    "streaming_streaming_s",
    "streaming_rows_per_s",
    "streaming_bytes_per_s",
    "streaming_egress_bytes",
    "streaming_egress_rows",
    "streaming_egress_bytes_per_row",
];

/// A latency summary's figures, as report.json names them.
const FIGURES: &[&str] = &[
    "count",
    "min_us",
    "mean_us",
    "p50_us",
    "p90_us",
    "p95_us",
    "p99_us",
    "p999_us",
    "max_us",
    "stddev_us",
];

pub(super) fn figure_column(prefix: &str, figure: &str) -> String {
    match (prefix, figure) {
        ("", "count") => "latency_count".into(),
        _ => format!("{prefix}{figure}"),
    }
}

/// Every column in its place: `COLUMNS`, then each summary figure no earlier column holds.
pub(super) fn columns() -> &'static [String] {
    static ALL: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
        let mut all: Vec<String> = COLUMNS.iter().map(|c| c.to_string()).collect();
        for prefix in LATENCIES {
            for figure in FIGURES {
                let c = figure_column(prefix, figure);
                if !all.contains(&c) {
                    all.push(c);
                }
            }
        }
        all.extend(SERVER.iter().map(|c| c.to_string()));
        // `observe metrics` (`server_metrics`), appended after every earlier column so that
        // readers by position keep working: the aggregates only, on a phase row.
        all.extend(SERVER_COLUMNS.iter().map(|c| c.to_string()));
        all.extend(STREAMING.iter().map(|c| c.to_string()));
        all.extend(APPENDED.iter().map(|c| c.to_string()));
        all
    });
    &ALL
}

const SERVER_COLUMNS: &[&str] = &[
    "metrics_server_cpu_s",
    "metrics_server_cores",
    "metrics_server_cpu_us_per_unit",
    "metrics_server_cpu_unit",
    "metrics_scrapes_ok",
    "metrics_scrapes_failed",
];
