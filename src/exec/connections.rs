//! A phase's connector as its report's `connections`.

use crate::net::tls::Connector;
use crate::report::connections::{ConnectionsReport, TlsReport};
use crate::report::Latency;

/// The phase's `connecting`, and a warning each for a server that was not authenticated and
/// for connections that went on in clear: loud, in the human output, the page and the JSON.
pub(crate) fn attach(
    c: &Connector,
    connecting: &mut Option<ConnectionsReport>,
    warnings: &mut Vec<String>,
) {
    *connecting = report(c);
    let Some(t) = connecting.as_ref().and_then(|r| r.tls.as_ref()) else {
        return;
    };
    if t.verification == "off" && t.full_handshakes + t.resumed_handshakes > 0 {
        warnings.push(format!(
            "TLS without verification: the server's certificate was not checked ({}), so \
             nothing says these figures came from the server intended",
            c.label()
        ));
    }
    if t.plaintext_fallbacks > 0 {
        warnings.push(format!(
            "{} connection(s) to {} went on in clear: the server refused TLS (sslmode prefer)",
            t.plaintext_fallbacks,
            c.label()
        ));
    }
}

/// What the phase's connections cost; `None` when none was opened.
fn report(c: &Connector) -> Option<ConnectionsReport> {
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
