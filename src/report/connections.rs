//! What opening a phase's connections cost, and how they were secured: a phase's
//! `connecting` in report.json and its `tls` line in the human output.

use serde::{Deserialize, Serialize};

use super::Latency;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ConnectionsReport {
    /// Connections whose set-up completed (TCP, and TLS where spoken), reconnects included.
    pub opened: u64,
    /// TCP connect, per connection.
    pub connect: Latency,
    /// The TLS handshake after the TCP connect; `None` in clear.
    pub handshake: Option<Latency>,
    /// The first exchange's time to first byte: from the first byte sent after the set-up (TCP,
    /// or TLS) to the first byte the server sent back: the first request's answer, the
    /// WebSocket upgrade's, PostgreSQL's authentication request.
    pub first_byte: Latency,
    /// Bytes that crossed the sockets (TLS records included), beside the protocol's own
    /// payload figures; set-up and handshakes included.
    pub socket_bytes_written: u64,
    pub socket_bytes_read: u64,
    /// `None`: in clear.
    pub tls: Option<TlsReport>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TlsReport {
    /// As the first connection negotiated: `TLSv1.3`, `TLS13_AES_256_GCM_SHA384`.
    pub version: String,
    pub cipher: String,
    pub alpn: Option<String>,
    /// `chain and name`, `chain only` or `off` (the server was not authenticated).
    pub verification: String,
    /// The name sent (SNI) and checked.
    pub server_name: String,
    /// What the chain was checked against: a CA file, the system's store, or `none`.
    pub trust: String,
    pub client_certificate: bool,
    pub full_handshakes: u64,
    /// Sessions resumed from an earlier connection's ticket (reconnects).
    pub resumed_handshakes: u64,
    /// PostgreSQL `sslmode prefer` connections the server made go on in clear.
    pub plaintext_fallbacks: u64,
}

impl ConnectionsReport {
    /// The `tls` line of a phase in the human output; empty in clear. Loud when the server
    /// was not authenticated or a connection went on in clear.
    pub fn tls_lines(&self) -> String {
        let Some(t) = &self.tls else {
            return String::new();
        };
        let mut out = String::new();
        if t.full_handshakes + t.resumed_handshakes > 0 {
            let alpn = t
                .alpn
                .as_deref()
                .map(|a| format!(", alpn {a}"))
                .unwrap_or_default();
            let verified = if t.verification == "off" {
                "NOT VERIFIED: the server was not authenticated".to_string()
            } else {
                format!("verified {} against {}", t.verification, t.trust)
            };
            let client = if t.client_certificate {
                ", client certificate sent"
            } else {
                ""
            };
            out += &format!(
                "  tls {} {}{alpn}, {verified}{client}\n",
                t.version, t.cipher
            );
            let mut parts = vec![format!(
                "{} full + {} resumed handshakes",
                t.full_handshakes, t.resumed_handshakes
            )];
            if let Some(h) = &self.handshake {
                if h.count > 0 {
                    parts.push(format!(
                        "handshake p50 {} max {}",
                        super::render::ms_text(h.p50_us),
                        super::render::ms_text(h.max_us)
                    ));
                }
            }
            if self.connect.count > 0 {
                parts.push(format!(
                    "connect p50 {}",
                    super::render::ms_text(self.connect.p50_us)
                ));
            }
            if self.first_byte.count > 0 {
                parts.push(format!(
                    "first byte p50 {}",
                    super::render::ms_text(self.first_byte.p50_us)
                ));
            }
            parts.push(format!(
                "socket {} B out, {} B in",
                crate::plan::thousands(self.socket_bytes_written),
                crate::plan::thousands(self.socket_bytes_read)
            ));
            out += &format!("  tls {}\n", parts.join(", "));
        }
        if t.plaintext_fallbacks > 0 {
            out += &format!(
                "  tls REFUSED by the server: {} connection(s) went on in clear (sslmode prefer)\n",
                t.plaintext_fallbacks
            );
        }
        out
    }
}
