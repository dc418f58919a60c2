//! A batch whose send failed: what of it counts as sent. Written is sent (docs/report-format.md,
//! "Ingest phases"): a batch that went out whole is sent and not acknowledged, whatever came
//! after it (a rejection, an answer that timed out, a connection the server closed after
//! reading it); only a batch never written whole stays unsent.

use std::time::Instant;

use super::{Counters, Worker};
use crate::driver::Chunk;
use crate::net::error::DriverError;

impl Worker {
    /// Counts the batch of `chunk`, whose send began at `started` and failed with `e`; returns
    /// whether the connection takes the next batch.
    pub(super) fn failed(
        &mut self,
        live: &Counters,
        chunk: &Chunk,
        started: Instant,
        e: &DriverError,
    ) -> bool {
        self.error(live, e);
        // A fatal error that does not prove the batch written may have cut it anywhere: its
        // rows are not sent. Counting a proven one unsent once reported "0 rows sent, 1,000
        // unsent" of a batch the server had, and had even committed.
        if e.fatal && !e.written {
            return false;
        }
        // Its payload counts with it, so bytes per row stay the sent rows' own.
        let payload = chunk.bytes.len() as u64;
        self.rows_sent += chunk.rows;
        self.kept.rejected();
        self.payload_bytes += payload;
        self.socket_bytes += payload;
        live.sent(Instant::now(), chunk.rows, payload, payload);
        live.mark(started, chunk.rows);
        !e.fatal
    }
}
