//! What a query run measures, per query type: latency histograms (HDR, microseconds, up to one
//! hour, 3 significant digits), counts of queries, rows and errors. Each worker keeps its own
//! and they are merged at the end, so nothing is shared on the hot path.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

use super::streaming::StreamStats;
use super::{QueryError, QueryErrorClass};

/// One hour in microseconds: the longest latency a histogram holds (longer ones saturate).
const MAX_US: u64 = 3_600_000_000;

pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, 3).expect("valid HDR bounds")
}

pub fn micros(d: Duration) -> u64 {
    (d.as_micros() as u64).clamp(1, MAX_US)
}

#[derive(Clone, Debug, Default)]
pub struct ErrorStats {
    pub count: u64,
    /// The first message of the class, with its code: what a reader needs to fix it.
    pub first: String,
}

/// The measurements of one query type (or of all of them, merged).
#[derive(Clone, Debug)]
pub struct TypeStats {
    /// From the intended send time (open loop) or the send (closed loop) to the last row.
    pub latency: Histogram<u64>,
    /// From the actual send to the last row; kept apart only in open loop.
    pub service: Histogram<u64>,
    pub sum_us: u128,
    pub ok: u64,
    pub rows: u64,
    pub errors: BTreeMap<QueryErrorClass, ErrorStats>,
    /// How the results arrived (`streaming`): time to first result, streaming rates, bytes.
    pub stream: StreamStats,
    /// Answered, and found nothing (`not found when`): neither ok nor failed.
    pub not_found: u64,
    /// Rows the answered instances' INSERT, UPDATE and DELETE statements changed, as the
    /// server counted them; `None` until one such statement was answered with a count.
    pub affected: Option<u64>,
    /// `then sql`: each statement's own latency (send to last row), in order.
    pub steps: Vec<Histogram<u64>>,
}

impl Default for TypeStats {
    fn default() -> Self {
        TypeStats {
            latency: histogram(),
            service: histogram(),
            sum_us: 0,
            ok: 0,
            rows: 0,
            errors: BTreeMap::new(),
            stream: StreamStats::default(),
            not_found: 0,
            affected: None,
            steps: Vec::new(),
        }
    }
}

impl TypeStats {
    pub fn record_ok(&mut self, latency: Duration, service: Option<Duration>, rows: u64) {
        let us = micros(latency);
        self.latency.saturating_record(us);
        self.sum_us += u128::from(us);
        if let Some(s) = service {
            self.service.saturating_record(micros(s));
        }
        self.ok += 1;
        self.rows += rows;
    }

    pub fn record_error(&mut self, e: &QueryError) {
        let entry = self.errors.entry(e.class).or_default();
        if entry.count == 0 {
            // Kept for the report: a hook's verdict or a server's words may carry a secret.
            entry.first = crate::secrets::masked(e.to_string());
        }
        entry.count += 1;
    }

    pub fn failed(&self) -> u64 {
        self.errors.values().map(|e| e.count).sum()
    }

    /// Instances answered: ok, not found or failed.
    pub fn answered(&self) -> u64 {
        self.ok + self.not_found + self.failed()
    }

    /// An answered instance whose result was judged not found.
    pub fn record_not_found(&mut self) {
        self.not_found += 1;
    }

    /// Rows an answered instance changed, when the server counted them.
    pub fn record_affected(&mut self, n: Option<u64>) {
        if let Some(n) = n {
            *self.affected.get_or_insert(0) += n;
        }
    }

    /// The latencies of one instance's statements, in order (`then sql`).
    pub fn record_steps(&mut self, steps: &[Duration]) {
        if self.steps.len() < steps.len() {
            self.steps.resize_with(steps.len(), histogram);
        }
        for (h, d) in self.steps.iter_mut().zip(steps) {
            h.saturating_record(micros(*d));
        }
    }

    pub fn merge(&mut self, other: &TypeStats) {
        // Same bounds everywhere, so adding cannot fail.
        let _ = self.latency.add(&other.latency);
        let _ = self.service.add(&other.service);
        self.sum_us += other.sum_us;
        self.ok += other.ok;
        self.rows += other.rows;
        for (class, e) in &other.errors {
            let entry = self.errors.entry(*class).or_default();
            if entry.count == 0 {
                entry.first = e.first.clone();
            }
            entry.count += e.count;
        }
        self.stream.merge(&other.stream);
        self.not_found += other.not_found;
        if let Some(n) = other.affected {
            *self.affected.get_or_insert(0) += n;
        }
        if self.steps.len() < other.steps.len() {
            self.steps.resize_with(other.steps.len(), histogram);
        }
        for (h, o) in self.steps.iter_mut().zip(&other.steps) {
            let _ = h.add(o);
        }
    }

    /// Failed queries over all queries sent, 0 when none were.
    pub fn error_rate(&self) -> f64 {
        let all = self.ok + self.failed();
        if all == 0 {
            0.0
        } else {
            self.failed() as f64 / all as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(class: QueryErrorClass, m: &str) -> QueryError {
        QueryError {
            class,
            message: m.into(),
            code: Some("42P01".into()),
            broken: false,
        }
    }

    #[test]
    fn merge_adds_counts_histograms_and_keeps_first_messages() {
        let mut a = TypeStats::default();
        a.record_ok(Duration::from_millis(2), None, 10);
        a.record_error(&err(QueryErrorClass::Sql, "first"));
        let mut b = TypeStats::default();
        b.record_ok(Duration::from_millis(4), Some(Duration::from_millis(1)), 5);
        b.record_error(&err(QueryErrorClass::Sql, "second"));
        b.record_error(&err(QueryErrorClass::Timeout, "slow"));
        a.merge(&b);
        assert_eq!((a.ok, a.rows, a.failed()), (2, 15, 3));
        assert_eq!(a.latency.len(), 2);
        assert_eq!(a.service.len(), 1);
        assert_eq!(a.sum_us, 6000);
        assert_eq!(a.errors[&QueryErrorClass::Sql].count, 2);
        assert_eq!(a.errors[&QueryErrorClass::Sql].first, "first (42P01)");
        assert!((a.error_rate() - 0.6).abs() < 1e-12);
    }

    #[test]
    fn latencies_beyond_an_hour_saturate_and_zero_counts_as_one_microsecond() {
        let mut s = TypeStats::default();
        s.record_ok(Duration::from_secs(7200), None, 0);
        s.record_ok(Duration::ZERO, None, 0);
        assert!(s.latency.max() >= MAX_US - MAX_US / 1000);
        assert_eq!(s.latency.min(), 1);
    }
}
