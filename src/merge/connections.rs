//! A merged phase's `connecting`: every shard's connections, their set-up times merged as
//! histograms, their bytes and handshakes added. What the TLS session was (version, cipher,
//! verification) is the first shard's that spoke TLS: every shard connects to the same
//! endpoint with the same settings.

use super::histo;
use crate::report::connections::{ConnectionsReport, TlsReport};

pub fn merge<'a>(
    parts: impl Iterator<Item = Option<&'a ConnectionsReport>>,
) -> Result<Option<ConnectionsReport>, String> {
    let parts: Vec<&ConnectionsReport> = parts.flatten().collect();
    if parts.is_empty() {
        return Ok(None);
    }
    let tls =
        parts
            .iter()
            .filter_map(|c| c.tls.as_ref())
            .fold(None, |acc: Option<TlsReport>, t| {
                Some(match acc {
                    None => t.clone(),
                    Some(mut a) => {
                        a.full_handshakes += t.full_handshakes;
                        a.resumed_handshakes += t.resumed_handshakes;
                        a.plaintext_fallbacks += t.plaintext_fallbacks;
                        a
                    }
                })
            });
    Ok(Some(ConnectionsReport {
        opened: parts.iter().map(|c| c.opened).sum(),
        connect: histo::merge_all(parts.iter().map(|c| &c.connect))?,
        handshake: histo::merge(parts.iter().map(|c| c.handshake.as_ref()))?,
        first_byte: histo::merge_all(parts.iter().map(|c| &c.first_byte))?,
        socket_bytes_written: parts.iter().map(|c| c.socket_bytes_written).sum(),
        socket_bytes_read: parts.iter().map(|c| c.socket_bytes_read).sum(),
        tls,
    }))
}
