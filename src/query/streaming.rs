//! Result streaming: when a query's result began to arrive and how it flowed after that, so
//! that pg, HTTP and QWP compare on it (docs/report-format.md, "Result streaming").
//!
//! A transport notes, per query, the arrival of each *piece* of the result: a DataRow (pg),
//! a RESULT_BATCH with rows (QWP), a read of the body that carries dataset rows (HTTP), and
//! the bytes read from the socket (below TLS, framing included) at the first piece and at the
//! end. That is `Streamed`: a few timestamps and counters, no allocation per row or batch.
//! `StreamStats` sums the queries of a type:
//!
//! - time to first result: the send (the worker's, not the intended time) to the first piece;
//!   a result without rows has none;
//! - the streaming span: the first piece to the end of the result (its terminator read);
//! - streaming rows/s and bytes/s: the rows and the socket bytes that arrived after the first
//!   piece, summed over the queries whose result came in two pieces or more, over the sum of
//!   their spans. A result that came whole in its first piece adds nothing to them (it is
//!   counted in `single_piece`): there was no streaming to time;
//! - egress bytes per row: the socket bytes read from the send to the end of the result, over
//!   all successful queries whose bytes were counted, over their rows.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::stats::{histogram, micros};

/// What one query's result looked like as it arrived. `Default` is "nothing measured"
/// (SQLite, which has no socket, or a query that failed).
#[derive(Clone, Copy, Debug, Default)]
pub struct Streamed {
    /// Arrival of the first piece that carried rows; `None` for a result without rows.
    pub first: Option<Instant>,
    /// Rows that piece carried (a pg DataRow: 1; a QWP batch: its rows; an HTTP read: the
    /// dataset rows it completed or began).
    pub first_rows: u64,
    /// Socket bytes read from the send up to and including the read that carried the first
    /// piece.
    pub first_bytes: u64,
    /// Pieces with rows.
    pub pieces: u64,
    /// When the end of the result was read.
    pub end: Option<Instant>,
    /// Socket bytes read from the send to the end of the result; `None` where no socket was
    /// counted (a Unix socket, SQLite).
    pub bytes: Option<u64>,
}

impl Streamed {
    /// A fresh measure for a query about to be sent.
    pub fn start() -> Streamed {
        Streamed::default()
    }

    /// A piece of `rows` rows arrived now, with `bytes` read from the socket since the send.
    #[inline]
    pub fn piece(&mut self, rows: u64, bytes: u64) {
        if rows == 0 {
            return;
        }
        if self.first.is_none() {
            self.first = Some(Instant::now());
            self.first_rows = rows;
            self.first_bytes = bytes;
        }
        self.pieces += 1;
    }

    /// The result ended now, after `bytes` read from the socket since the send.
    #[inline]
    pub fn end(&mut self, bytes: Option<u64>) {
        self.end = Some(Instant::now());
        self.bytes = bytes;
    }
}

/// Below this, summed streaming spans give no rate: a few microseconds of decoding say
/// nothing about the flow of a result.
pub const MIN_STREAM_SPAN: Duration = Duration::from_millis(1);

/// The streaming figures of one query type (or of several, merged).
#[derive(Clone, Debug)]
pub struct StreamStats {
    /// Send -> first piece, microseconds, per query that returned rows.
    pub first_result: Histogram<u64>,
    /// Queries whose result came in two pieces or more, and their sums.
    pub streamed: u64,
    pub streamed_rows: u64,
    pub streamed_bytes: u64,
    pub span: Duration,
    /// Queries whose rows all came in the first piece.
    pub single_piece: u64,
    /// Successful queries whose socket bytes were counted, their bytes and their rows.
    pub counted: u64,
    pub egress_bytes: u64,
    pub egress_rows: u64,
}

impl Default for StreamStats {
    fn default() -> Self {
        StreamStats {
            first_result: histogram(),
            streamed: 0,
            streamed_rows: 0,
            streamed_bytes: 0,
            span: Duration::ZERO,
            single_piece: 0,
            counted: 0,
            egress_bytes: 0,
            egress_rows: 0,
        }
    }
}

impl StreamStats {
    /// One successful query of `rows` rows, sent at `sent`.
    pub fn record(&mut self, sent: Instant, rows: u64, s: &Streamed) {
        if let Some(bytes) = s.bytes {
            self.counted += 1;
            self.egress_bytes += bytes;
            self.egress_rows += rows;
        }
        let Some(first) = s.first else {
            return;
        };
        self.first_result
            .saturating_record(micros(first.saturating_duration_since(sent)));
        if s.pieces < 2 {
            self.single_piece += 1;
            return;
        }
        let end = s.end.unwrap_or(first);
        self.streamed += 1;
        self.streamed_rows += rows.saturating_sub(s.first_rows);
        if let Some(bytes) = s.bytes {
            self.streamed_bytes += bytes.saturating_sub(s.first_bytes);
        }
        self.span += end.saturating_duration_since(first);
    }

    pub fn merge(&mut self, other: &StreamStats) {
        // Same bounds everywhere, so adding cannot fail.
        let _ = self.first_result.add(&other.first_result);
        self.streamed += other.streamed;
        self.streamed_rows += other.streamed_rows;
        self.streamed_bytes += other.streamed_bytes;
        self.span += other.span;
        self.single_piece += other.single_piece;
        self.counted += other.counted;
        self.egress_bytes += other.egress_bytes;
        self.egress_rows += other.egress_rows;
    }

    /// Nothing was measured: no query had rows nor counted bytes (SQLite, failures only).
    pub fn is_empty(&self) -> bool {
        self.first_result.is_empty() && self.counted == 0
    }

    fn per_span(&self, n: u64) -> Option<f64> {
        (self.span >= MIN_STREAM_SPAN).then(|| n as f64 / self.span.as_secs_f64())
    }

    pub fn rows_per_s(&self) -> Option<f64> {
        self.per_span(self.streamed_rows)
    }

    pub fn bytes_per_s(&self) -> Option<f64> {
        self.per_span(self.streamed_bytes)
    }

    pub fn egress_bytes_per_row(&self) -> Option<f64> {
        (self.egress_rows > 0).then(|| self.egress_bytes as f64 / self.egress_rows as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(base: Instant, ms: u64) -> Option<Instant> {
        Some(base + Duration::from_millis(ms))
    }

    #[test]
    fn a_streamed_result_counts_what_came_after_its_first_piece() {
        let sent = Instant::now();
        let mut s = StreamStats::default();
        s.record(
            sent,
            100,
            &Streamed {
                first: at(sent, 5),
                first_rows: 10,
                first_bytes: 300,
                pieces: 4,
                end: at(sent, 35),
                bytes: Some(2_300),
            },
        );
        assert_eq!(s.first_result.len(), 1);
        assert!(s.first_result.max() >= 5_000 && s.first_result.min() <= 5_005);
        assert_eq!(
            (s.streamed, s.streamed_rows, s.streamed_bytes),
            (1, 90, 2_000)
        );
        assert_eq!(s.span, Duration::from_millis(30));
        assert!((s.rows_per_s().unwrap() - 3_000.0).abs() < 1e-6);
        assert!((s.bytes_per_s().unwrap() - 2_000.0 / 0.03).abs() < 1e-6);
        assert_eq!(s.egress_bytes_per_row(), Some(23.0));
    }

    #[test]
    fn a_single_piece_or_an_empty_result_gives_no_streaming_rate() {
        let sent = Instant::now();
        let mut s = StreamStats::default();
        let mut one = Streamed::start();
        one.piece(7, 120);
        one.piece(0, 130);
        one.end(Some(140));
        s.record(sent, 7, &one);
        let mut none = Streamed::start();
        none.end(Some(60));
        s.record(sent, 0, &none);
        s.record(sent, 3, &Streamed::default());
        assert_eq!(
            (s.single_piece, s.streamed, s.first_result.len()),
            (1, 0, 1)
        );
        assert_eq!((s.rows_per_s(), s.bytes_per_s()), (None, None));
        // The empty result's bytes count toward egress; the uncounted query's do not.
        assert_eq!((s.counted, s.egress_bytes, s.egress_rows), (2, 200, 7));
        let mut m = StreamStats::default();
        m.merge(&s);
        m.merge(&s);
        assert_eq!((m.single_piece, m.counted, m.first_result.len()), (2, 4, 2));
    }
}
