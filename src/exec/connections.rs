//! A phase's connector as its report's `connections`, and the warnings about how its
//! connections were secured, said once per run and endpoint.

use std::collections::HashSet;

use crate::net::tls::Connector;
use crate::report::connections::{ConnectionsReport, TlsReport};
use crate::report::{Latency, PhaseReport};

/// How the warnings of `attach` begin: `once_per_run` knows them by it.
const UNVERIFIED: &str = "TLS without verification: ";
const IN_CLEAR: &str = "connections in clear: ";

/// The phase's `connecting`, and a warning each for a server that was not authenticated and
/// for connections that went on in clear (the human output, the page and the JSON). Each
/// names the endpoint, not the phase's counts, so that `once_per_run` can keep it to the
/// first phase that met it; the counts stay in `connecting`.
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
            "{UNVERIFIED}the server's certificate was not checked ({}), so nothing says these \
             figures came from the server intended",
            c.label()
        ));
    }
    if t.plaintext_fallbacks > 0 {
        warnings.push(format!(
            "{IN_CLEAR}{} refused TLS, and `sslmode prefer` went on without it",
            c.label()
        ));
    }
}

/// Keeps each of `attach`'s warnings to the first phase of the run that gave it: a run of
/// ten phases against a local server with the default `sslmode prefer` says once that TLS
/// was not verified, not ten times. Later phases still say it in `connecting` (`verification
/// off`, `plaintext_fallbacks`) and on their TLS line. `said` is the run's memory.
pub(crate) fn once_per_run(phases: &mut [PhaseReport], said: &mut HashSet<String>) {
    for p in phases {
        let warnings = match p {
            PhaseReport::Ingest(r) => &mut r.warnings,
            PhaseReport::Queries(r) => &mut r.warnings,
            PhaseReport::Requests(r) => &mut r.warnings,
            PhaseReport::NotRun { .. } => continue,
        };
        warnings.retain(|w| {
            !(w.starts_with(UNVERIFIED) || w.starts_with(IN_CLEAR)) || said.insert(w.clone())
        });
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
