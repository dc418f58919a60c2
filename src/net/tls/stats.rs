//! What the connections of one phase to one endpoint cost: how many were opened, the time of
//! each step of opening them (TCP connect, TLS handshake, the first byte the server sent
//! after), full against resumed handshakes, and what TLS was negotiated. Recorded once per
//! connection, under a lock that nothing on the request path takes.

use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;
use rustls::HandshakeKind;

/// The accumulator, shared by a phase's connections through their `Connector`.
#[derive(Debug)]
pub(crate) struct Stats {
    acc: Mutex<Acc>,
}

#[derive(Debug)]
struct Acc {
    opened: u64,
    connect: Histogram<u64>,
    handshake: Histogram<u64>,
    first_byte: Histogram<u64>,
    full: u64,
    resumed: u64,
    plaintext: u64,
    negotiated: Option<Negotiated>,
}

/// What the first TLS connection agreed on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Negotiated {
    pub version: String,
    pub cipher: String,
    pub alpn: Option<String>,
}

/// A copy of the accumulator, for a report. Times are in microseconds.
#[derive(Clone, Debug)]
pub struct Summary {
    /// Connections whose set-up completed (TCP, and TLS where spoken).
    pub opened: u64,
    pub connect: Histogram<u64>,
    /// Empty without TLS.
    pub handshake: Histogram<u64>,
    pub first_byte: Histogram<u64>,
    pub full_handshakes: u64,
    pub resumed_handshakes: u64,
    /// PostgreSQL `prefer` connections the server made go on in clear.
    pub plaintext_fallbacks: u64,
    pub negotiated: Option<Negotiated>,
    /// Bytes that crossed the sockets of all connections, both ways (TLS records included).
    pub socket_bytes_written: u64,
    pub socket_bytes_read: u64,
}

/// Microseconds up to an hour, as every latency of a report (a histogram made with `new`
/// would clamp saturating records to its initial bound of 2).
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("static histogram bounds are valid")
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

impl Stats {
    pub(crate) fn new() -> Stats {
        Stats {
            acc: Mutex::new(Acc {
                opened: 0,
                connect: histogram(),
                handshake: histogram(),
                first_byte: histogram(),
                full: 0,
                resumed: 0,
                plaintext: 0,
                negotiated: None,
            }),
        }
    }

    fn with(&self, f: impl FnOnce(&mut Acc)) {
        if let Ok(mut a) = self.acc.lock() {
            f(&mut a);
        }
    }

    /// A TCP connection was made in `took`.
    pub(crate) fn connected(&self, took: Duration) {
        self.with(|a| {
            a.opened += 1;
            a.connect.saturating_record(micros(took));
        });
    }

    pub(crate) fn handshake(&self, took: Duration, kind: Option<HandshakeKind>, n: Negotiated) {
        self.with(|a| {
            a.handshake.saturating_record(micros(took));
            match kind {
                Some(HandshakeKind::Resumed) => a.resumed += 1,
                _ => a.full += 1,
            }
            a.negotiated.get_or_insert(n);
        });
    }

    pub(crate) fn first_byte(&self, took: Duration) {
        self.with(|a| a.first_byte.saturating_record(micros(took)));
    }

    pub(crate) fn plaintext_fallback(&self) {
        self.with(|a| a.plaintext += 1);
    }

    pub(crate) fn summary(&self) -> Summary {
        let a = self.acc.lock().unwrap_or_else(|p| p.into_inner());
        Summary {
            opened: a.opened,
            connect: a.connect.clone(),
            handshake: a.handshake.clone(),
            first_byte: a.first_byte.clone(),
            full_handshakes: a.full,
            resumed_handshakes: a.resumed,
            plaintext_fallbacks: a.plaintext,
            negotiated: a.negotiated.clone(),
            socket_bytes_written: 0,
            socket_bytes_read: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_kept_to_the_microsecond_whatever_their_size() {
        let s = Stats::new();
        s.connected(Duration::from_micros(150));
        s.connected(Duration::from_secs(3));
        s.first_byte(Duration::from_nanos(10));
        let sum = s.summary();
        assert_eq!(sum.opened, 2);
        assert_eq!(sum.connect.min(), 150);
        assert!(sum.connect.max().abs_diff(3_000_000) < 3_000_000 / 500);
        assert_eq!(sum.first_byte.max(), 1);
    }
}
