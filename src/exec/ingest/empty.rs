//! The report an ingest phase starts from: named after its phase, every count at zero, so a
//! phase that fails before sending still says what it was.

use std::collections::BTreeMap;

use crate::driver::Driver;
use crate::plan::IngestPhase;
use crate::report::{IngestReport, RateCounts, Status};

pub(crate) fn empty_report(phase: &IngestPhase) -> IngestReport {
    IngestReport {
        server: None,
        server_metrics: Vec::new(),
        name: phase.name.clone(),
        endpoint: format!(
            "{}.{} ({})",
            phase.endpoint.target, phase.endpoint.name, phase.endpoint.kind
        ),
        kind: phase.endpoint.kind.clone(),
        table: phase.table.clone(),
        workers: phase.workers,
        batch_rows: phase.batch_rows,
        status: Status::Ok,
        failures: Vec::new(),
        warnings: Vec::new(),
        rows_expected: phase.rows_expected,
        rows_generated: 0,
        rows_dropped: 0,
        payload_bytes: 0,
        rows_sent: 0,
        // A phase that fails before sending (setup, connect) acknowledged nothing: 0, not the
        // "no acknowledgements" of a protocol that has none.
        rows_acked: Driver::acknowledges(&phase.endpoint.kind).then_some(0),
        rows_cut_off: 0,
        rows_visible: None,
        visible_baseline: None,
        visible_after_s: None,
        socket_bytes: 0,
        payload_bytes_per_row: None,
        socket_bytes_per_row: None,
        elapsed_s: 0.0,
        rows_per_s: None,
        rate_counts: if Driver::acknowledges(&phase.endpoint.kind) {
            RateCounts::Acked
        } else {
            RateCounts::Sent
        },
        send_rows_per_s: None,
        ack_rows_per_s: None,
        batch_latency: Default::default(),
        client_cpu_s: None,
        errors: BTreeMap::new(),
        rows_per_worker: Vec::new(),
        calibration: None,
        series: None,
        connecting: None,
        schedule: None,
        concurrent: None,
        freshness: None,
        findmax: None,
        stages: Vec::new(),
        commits: (phase.endpoint.kind == "qwp").then_some(0),
        input: match (phase.replay_budget, phase.replay_when) {
            (Some(_), _) => Some("replay".into()),
            (None, Some(_)) => Some("live".into()),
            (None, None) => None,
        },
        fields_per_row: match &phase.source {
            crate::plan::RowSource::Schema(s) => {
                Some(s.columns.iter().filter(|c| c.role == "field").count() as u64)
            }
            crate::plan::RowSource::File { .. } => None,
        },
        metrics_per_s: None,
        // Completed with the bytes per row when the phase ends (`exec::ingest`).
        link: match phase.link {
            Some(crate::value::Value::Bandwidth(b)) => {
                Some(crate::report::link::LinkCeiling::of(b, None))
            }
            _ => None,
        },
    }
}
