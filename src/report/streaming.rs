//! Result streaming in the report (docs/report-format.md, "Result streaming"): per query type
//! and per run, how the results arrived — the time from the send to the first row or batch,
//! the rows and bytes per second after it, and the socket bytes per result row.

use serde::{Deserialize, Serialize};

use super::Latency;
use crate::query::streaming::StreamStats;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StreamingReport {
    /// The send (not the intended time) -> the first piece of the result: a DataRow (pg), a
    /// RESULT_BATCH with rows (QWP), the read that brings the dataset's first row (HTTP). One
    /// value per successful query that returned rows.
    pub first_result: Latency,
    /// Queries whose result came in two pieces or more: they make the streaming rates.
    pub streamed_queries: u64,
    /// Queries whose rows all came in the first piece: no streaming to time.
    pub single_piece_queries: u64,
    /// Rows and socket bytes that arrived after each streamed query's first piece, and the sum
    /// of their spans (first piece -> end of the result), seconds.
    pub streamed_rows: u64,
    pub streamed_bytes: u64,
    pub streaming_s: f64,
    /// `streamed_rows` and `streamed_bytes` over `streaming_s`; `None` under 1 ms of spans.
    pub rows_per_s: Option<f64>,
    pub bytes_per_s: Option<f64>,
    /// Socket bytes read from each successful query's send to the end of its result (framing,
    /// TLS records and empty results included), and those queries' rows.
    pub egress_bytes: u64,
    pub egress_rows: u64,
    /// `egress_bytes / egress_rows`; `None` without rows.
    pub egress_bytes_per_row: Option<f64>,
}

impl StreamingReport {
    /// `None` where nothing was measured (SQLite, or no successful query).
    pub fn of(s: &StreamStats) -> Option<StreamingReport> {
        if s.is_empty() {
            return None;
        }
        Some(StreamingReport {
            first_result: Latency::of(&s.first_result),
            streamed_queries: s.streamed,
            single_piece_queries: s.single_piece,
            streamed_rows: s.streamed_rows,
            streamed_bytes: s.streamed_bytes,
            streaming_s: s.span.as_secs_f64(),
            rows_per_s: s.rows_per_s(),
            bytes_per_s: s.bytes_per_s(),
            egress_bytes: s.egress_bytes,
            egress_rows: s.egress_rows,
            egress_bytes_per_row: s.egress_bytes_per_row(),
        })
    }
}

/// The terminal's table of how each query type's results arrived, under the query table (which
/// keeps its columns): empty when no type measured any.
pub(super) fn table(types: &[super::QueryTypeReport]) -> String {
    use super::render::{fmt_latency, grid};
    use crate::plan::thousands;
    let rows: Vec<Vec<String>> = types
        .iter()
        .filter_map(|t| t.streaming.as_ref().map(|s| (t, s)))
        .map(|(t, s)| {
            let first = |us: u64| {
                if s.first_result.count == 0 {
                    "-".to_string()
                } else {
                    fmt_latency(us as f64, 1000.0, 10_000.0)
                }
            };
            let per_s = |r: Option<f64>, div: f64| {
                r.map_or("-".to_string(), |r| {
                    let v = r / div;
                    if v >= 100.0 {
                        thousands(v.round() as u64)
                    } else {
                        format!("{v:.2}")
                    }
                })
            };
            vec![
                t.name.clone(),
                first(s.first_result.p50_us),
                first(s.first_result.p99_us),
                first(s.first_result.max_us),
                per_s(s.rows_per_s, 1.0),
                per_s(s.bytes_per_s, 1e6),
                s.egress_bytes_per_row
                    .map_or("-".to_string(), |b| format!("{b:.1}")),
                format!(
                    "{}/{}",
                    thousands(s.streamed_queries),
                    thousands(s.streamed_queries + s.single_piece_queries)
                ),
            ]
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let header = [
        "results",
        "first p50",
        "first p99",
        "first max",
        "stream rows/s",
        "stream MB/s",
        "B/row",
        "streamed",
    ];
    grid(&header, &rows, &[1, 2, 3, 4, 5, 6, 7])
        .lines()
        .map(|l| format!("  {l}\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::streaming::Streamed;
    use std::time::{Duration, Instant};

    /// The terminal's table shows what the stats hold: first result from the send, the rate of
    /// what came after the first piece, and bytes per row, for the types that measured any.
    #[test]
    fn the_results_table_has_a_row_per_type_that_measured_streaming() {
        let sent = Instant::now();
        let mut stats = StreamStats::default();
        stats.record(
            sent,
            1_001,
            &Streamed {
                first: Some(sent + Duration::from_millis(200)),
                first_rows: 1,
                first_bytes: 50,
                pieces: 5,
                end: Some(sent + Duration::from_millis(600)),
                bytes: Some(4_050_050),
            },
        );
        let report = StreamingReport::of(&stats).unwrap();
        assert_eq!(report.rows_per_s, Some(2_500.0));
        assert_eq!(report.bytes_per_s, Some(10_125_000.0));
        assert!((report.egress_bytes_per_row.unwrap() - 4_050_050.0 / 1_001.0).abs() < 1e-9);
        let t = |name: &str, streaming| crate::report::QueryTypeReport {
            name: name.into(),
            label: name.into(),
            ok: 1,
            failed: 0,
            rows: 1_001,
            rows_per_query: Some(1_001.0),
            qps: None,
            sum_us: 0,
            latency: Latency::default(),
            service: None,
            errors: Default::default(),
            thresholds: Vec::new(),
            streaming,
            outcomes: Default::default(),
        };
        let text = table(&[t("big", Some(report)), t("local", None)]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        let cells: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            cells,
            ["big", "200ms", "200ms", "200ms", "2,500", "10.12", "4046.0", "1/1"],
            "{text}"
        );
        assert_eq!(table(&[t("local", None)]), "");
    }
}
