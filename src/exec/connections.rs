//! A phase's connector as its report's `connections`.

use crate::net::tls::Connector;
use crate::report::connections::{ConnectionsReport, TlsReport};
use crate::report::Latency;

/// What the phase's connections cost; `None` when none was opened.
pub(crate) fn report(c: &Connector) -> Option<ConnectionsReport> {
    let s = c.summary();
    if s.opened == 0 {
        return None;
    }
    let tls = c.setup().map(|setup| {
        let n = s.negotiated.clone().unwrap_or_default();
        TlsReport {
            version: n.version,
            cipher: n.cipher,
            alpn: n.alpn,
            verification: setup.verify.as_str().to_string(),
            server_name: setup.server_name,
            trust: setup.trust,
            client_certificate: setup.client_cert,
            full_handshakes: s.full_handshakes,
            resumed_handshakes: s.resumed_handshakes,
            plaintext_fallbacks: s.plaintext_fallbacks,
        }
    });
    Some(ConnectionsReport {
        opened: s.opened,
        connect: Latency::of(&s.connect),
        handshake: tls.as_ref().map(|_| Latency::of(&s.handshake)),
        first_byte: Latency::of(&s.first_byte),
        socket_bytes_written: s.socket_bytes_written,
        socket_bytes_read: s.socket_bytes_read,
        tls,
    })
}
