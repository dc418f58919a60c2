//! An interval's CSV row, from the figures its workers recorded (`Acc`): the counts as they
//! are, the percentiles of its histograms (empty where it has none), and a staged run's stage.

use super::{
    Acc, BATCHES, CUT_OFF, ERRORS, FAILED, OK, PAYLOAD, PROBES, PROBES_FAILED, ROWS_ACKED,
    ROWS_SENT, SOCKET, UNSENT,
};
use crate::report::series::{quantile, IngestInterval, RunInterval};

/// The stage whose span holds `ns` (a stage runs until the next begins; before the first,
/// the first); `None` without stages.
pub(super) fn stage_at(stages: &[(u128, u64)], ns: u128) -> Option<u64> {
    let first = stages.first()?.1;
    Some(
        stages
            .iter()
            .rev()
            .find(|(at, _)| *at <= ns)
            .map_or(first, |s| s.1),
    )
}

pub(super) fn ingest_row(a: &Acc, start_ms: u64, span_ms: u64, acks: bool) -> IngestInterval {
    let mut row = IngestInterval {
        start_ms,
        span_ms,
        rows_sent: a.counts[ROWS_SENT],
        rows_acked: acks.then_some(a.counts[ROWS_ACKED]),
        payload_bytes: a.counts[PAYLOAD],
        socket_bytes: a.counts[SOCKET],
        batches: a.counts[BATCHES],
        errors: a.counts[ERRORS],
        probes: a.counts[PROBES],
        probes_failed: a.counts[PROBES_FAILED],
        visible: a.visible,
        lag_p50_us: quantile(&a.lag, 0.5),
        lag_max_us: (!a.lag.is_empty()).then(|| a.lag.max()),
        ..IngestInterval::default()
    };
    row.set_batch_latency(&a.latency);
    row
}

pub(super) fn run_row(a: &Acc, start_ms: u64, span_ms: u64, service: bool) -> RunInterval {
    let mut row = RunInterval {
        start_ms,
        span_ms,
        ok: a.counts[OK],
        failed: a.counts[FAILED],
        cut_off: a.counts[CUT_OFF],
        unsent: a.counts[UNSENT],
        ..RunInterval::default()
    };
    row.set_latency(&a.latency, service.then_some(&a.service));
    row
}
