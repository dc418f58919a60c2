//! Result streaming merged from a query run's shards (per run and per query type): the
//! time-to-first-result histograms add as latency ones do, the counts, bytes and summed spans
//! add, and the rates are taken again from the sums — the same quotients one process that ran
//! every shard's queries would have reported (`report::streaming::StreamingReport`).

use super::histo;
use crate::query::streaming::MIN_STREAM_SPAN;
use crate::report::streaming::StreamingReport;

/// The merged streaming of `parts` (one per shard; `None`: that shard measured none, as one
/// process adds nothing for a query that returned no rows). `Ok(None)` when no shard has any.
pub fn merge<'a>(
    parts: impl IntoIterator<Item = Option<&'a StreamingReport>>,
) -> Result<Option<StreamingReport>, String> {
    let parts: Vec<&StreamingReport> = parts.into_iter().flatten().collect();
    if parts.is_empty() {
        return Ok(None);
    }
    let sum = |f: fn(&StreamingReport) -> u64| parts.iter().map(|s| f(s)).sum::<u64>();
    let streamed_rows = sum(|s| s.streamed_rows);
    let streamed_bytes = sum(|s| s.streamed_bytes);
    let egress_bytes = sum(|s| s.egress_bytes);
    let egress_rows = sum(|s| s.egress_rows);
    // A sum of per-query spans, not a stretch of the wall clock: the shards' spans add like
    // the queries' within one shard, whatever their overlap.
    let streaming_s: f64 = parts.iter().map(|s| s.streaming_s).sum();
    let per_span =
        |n: u64| (streaming_s >= MIN_STREAM_SPAN.as_secs_f64()).then(|| n as f64 / streaming_s);
    Ok(Some(StreamingReport {
        first_result: histo::merge_all(parts.iter().map(|s| &s.first_result))
            .map_err(|e| format!("time to first result: {e}"))?,
        streamed_queries: sum(|s| s.streamed_queries),
        single_piece_queries: sum(|s| s.single_piece_queries),
        streamed_rows,
        streamed_bytes,
        streaming_s,
        rows_per_s: per_span(streamed_rows),
        bytes_per_s: per_span(streamed_bytes),
        egress_bytes,
        egress_rows,
        egress_bytes_per_row: (egress_rows > 0).then(|| egress_bytes as f64 / egress_rows as f64),
    }))
}
