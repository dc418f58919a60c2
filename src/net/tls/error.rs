//! A failed TLS handshake in words a user can act on: which check failed and what to change.

use std::io;

use rustls::{AlertDescription, CertificateError, InvalidMessage};

/// What the caller knows about the connection, for the advice.
pub(crate) struct Context<'a> {
    /// The name checked against the certificate.
    pub name: &'a str,
    /// Where trusted roots came from: a CA file or the system's store.
    pub trust: &'a str,
    /// The scheme a plain connection would use (`http://`, `ws://`, `sslmode=disable`).
    pub plain: &'a str,
    pub client_cert: bool,
}

/// The reason of a handshake that failed with `e`.
pub(crate) fn handshake_failure(e: &io::Error, cx: &Context<'_>) -> String {
    if let Some(tls) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        return rustls_failure(tls, cx);
    }
    match e.kind() {
        io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset => format!(
            "the server closed the connection during the TLS handshake: it may not speak TLS on \
             this port (use {} for a plain one){}",
            cx.plain,
            if cx.client_cert {
                ""
            } else {
                ", or it wants a client certificate (`tls_cert` and `tls_key`)"
            }
        ),
        _ => format!("TLS handshake failed: {e}"),
    }
}

/// Whether a failed handshake was a certificate refused, either side's: wlrun did not trust
/// the server's, or the server did not accept wlrun's (or wanted one). Another attempt with
/// the same settings is refused the same way; a closed connection or a timeout may not be.
pub(crate) fn refuses_certificate(e: &io::Error) -> bool {
    use AlertDescription as A;
    match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        Some(rustls::Error::InvalidCertificate(_)) => true,
        Some(rustls::Error::AlertReceived(alert)) => matches!(
            alert,
            A::BadCertificate
                | A::UnsupportedCertificate
                | A::CertificateRevoked
                | A::CertificateExpired
                | A::CertificateUnknown
                | A::UnknownCA
                | A::AccessDenied
                | A::CertificateRequired
        ),
        _ => false,
    }
}

/// An error read on a connection whose handshake had completed, in words when it is the
/// server refusing the client's certificate: under TLS 1.3 the client has finished its side of
/// the handshake before the server checks the certificate, so the refusal is an alert on the
/// first read, not a failed handshake. Any other error is left as it is.
pub(crate) fn after_handshake(e: io::Error) -> io::Error {
    use AlertDescription as A;
    let Some(rustls::Error::AlertReceived(alert)) =
        e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>())
    else {
        return e;
    };
    let why = match alert {
        A::CertificateRequired => format!(
            "the server refused the TLS session ({alert:?}): it requires a client certificate \
             (`tls_cert` and `tls_key`)"
        ),
        A::UnknownCA | A::BadCertificate | A::CertificateUnknown | A::CertificateExpired => {
            format!("the server refused wlrun's client certificate ({alert:?})")
        }
        _ => return e,
    };
    io::Error::new(e.kind(), CertificateRefused(why))
}

/// The server refused wlrun's certificate (or wanted one) after the handshake: the words
/// `after_handshake` put in an I/O error, kept as their own type so that a client can tell
/// this refusal from a connection that broke (`certificate_refused`).
#[derive(Debug)]
struct CertificateRefused(String);

impl std::fmt::Display for CertificateRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CertificateRefused {}

/// Whether a read failed because the server refused wlrun's certificate (`after_handshake`).
pub(crate) fn certificate_refused(e: &io::Error) -> bool {
    e.get_ref()
        .is_some_and(|i| i.downcast_ref::<CertificateRefused>().is_some())
}

fn rustls_failure(e: &rustls::Error, cx: &Context<'_>) -> String {
    use rustls::Error as E;
    match e {
        E::InvalidCertificate(c) => certificate_failure(c, cx),
        E::InvalidMessage(InvalidMessage::InvalidContentType)
        | E::InvalidMessage(InvalidMessage::UnknownProtocolVersion)
        | E::InvalidMessage(InvalidMessage::MessageTooLarge)
        | E::InvalidMessage(_)
        | E::InappropriateMessage { .. }
        | E::InappropriateHandshakeMessage { .. } => format!(
            "the server does not speak TLS here (its answer is not a TLS handshake): use {} or \
             the server's TLS port",
            cx.plain
        ),
        E::AlertReceived(alert) => alert_failure(*alert, cx),
        E::NoApplicationProtocol => {
            "the server accepts none of the offered ALPN protocols (http/1.1)".to_string()
        }
        E::PeerIncompatible(why) => {
            format!("the server and wlrun share no TLS version or cipher suite ({why:?})")
        }
        other => format!("TLS handshake failed: {other}"),
    }
}

fn certificate_failure(c: &CertificateError, cx: &Context<'_>) -> String {
    match c {
        CertificateError::UnknownIssuer => format!(
            "the server's certificate is not signed by a CA trusted here ({}): name its CA with \
             `tls_ca \"ca.pem\"`, or, for a test server only, turn verification off with \
             `tls_verify false`",
            cx.trust
        ),
        CertificateError::NotValidForName => format!(
            "the server's certificate is not valid for `{}`: connect by a name it lists, or name \
             the one to check with `tls_server_name`",
            cx.name
        ),
        CertificateError::NotValidForNameContext { presented, .. } => format!(
            "the server's certificate is not valid for `{}` (it is for {}): connect by a name it \
             lists, or name the one to check with `tls_server_name`",
            cx.name,
            if presented.is_empty() {
                "no name".to_string()
            } else {
                presented
                    .iter()
                    .map(|n| shown_name(n))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ),
        CertificateError::Expired => "the server's certificate has expired".to_string(),
        CertificateError::ExpiredContext { time, not_after } => format!(
            "the server's certificate expired {} ago (valid until {}, Unix time)",
            crate::net::fmt::fmt_duration(std::time::Duration::from_secs(
                time.as_secs().saturating_sub(not_after.as_secs())
            )),
            not_after.as_secs()
        ),
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "the server's certificate is not valid yet (check the clocks)".to_string()
        }
        CertificateError::BadSignature => {
            "the server's certificate chain has a bad signature".to_string()
        }
        CertificateError::Other(o) if o.to_string().contains("CaUsedAsEndEntity") => {
            "the server presents a CA certificate as its own (a self-signed CA): serve a server \
             certificate signed by that CA and trust the CA with `tls_ca`, or, for a test server \
             only, `tls_verify false`"
                .to_string()
        }
        CertificateError::Other(o) => format!("the server's certificate was refused: {o}"),
        other => format!("the server's certificate was refused: {other}"),
    }
}

/// A name as rustls presents it (`DnsName("db.local")`), as the certificate has it.
fn shown_name(n: &str) -> &str {
    n.strip_prefix("DnsName(\"")
        .and_then(|r| r.strip_suffix("\")"))
        .unwrap_or(n)
}

fn alert_failure(alert: AlertDescription, cx: &Context<'_>) -> String {
    use AlertDescription as A;
    match alert {
        A::CertificateRequired | A::HandshakeFailure if !cx.client_cert => format!(
            "the server refused the handshake ({alert:?}): it may want a client certificate \
             (`tls_cert` and `tls_key`)"
        ),
        A::UnknownCA | A::BadCertificate | A::CertificateUnknown | A::AccessDenied
            if cx.client_cert =>
        {
            format!("the server refused wlrun's client certificate ({alert:?})")
        }
        A::ProtocolVersion => {
            "the server and wlrun share no TLS version (rustls speaks TLS 1.2 and 1.3)".to_string()
        }
        other => format!("the server ended the TLS handshake with the alert {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::{ServerName, UnixTime};

    fn cx() -> Context<'static> {
        Context {
            name: "db.local",
            trust: "the CA file `ca.pem`",
            plain: "http://",
            client_cert: false,
        }
    }

    fn failure(e: rustls::Error) -> String {
        handshake_failure(&io::Error::new(io::ErrorKind::InvalidData, e), &cx())
    }

    #[test]
    fn certificate_failures_say_what_to_change() {
        let m = failure(rustls::Error::InvalidCertificate(
            CertificateError::UnknownIssuer,
        ));
        assert!(m.contains("not signed by a CA trusted here"), "{m}");
        assert!(m.contains("`ca.pem`") && m.contains("tls_ca"), "{m}");
        let m = failure(rustls::Error::InvalidCertificate(
            CertificateError::NotValidForNameContext {
                expected: ServerName::try_from("db.local").unwrap(),
                presented: vec!["DnsName(\"other.example\")".to_string()],
            },
        ));
        assert!(m.contains("not valid for `db.local`"), "{m}");
        assert!(
            m.contains("other.example") && m.contains("tls_server_name"),
            "{m}"
        );
        let m = failure(rustls::Error::InvalidCertificate(
            CertificateError::ExpiredContext {
                time: UnixTime::since_unix_epoch(std::time::Duration::from_secs(100_000)),
                not_after: UnixTime::since_unix_epoch(std::time::Duration::from_secs(
                    100_000 - 7200,
                )),
            },
        ));
        let ago = crate::net::fmt::fmt_duration(std::time::Duration::from_secs(7200));
        assert!(m.contains(&format!("expired {ago} ago")), "{m}");
    }

    #[test]
    fn a_server_in_clear_and_a_closed_handshake_are_told_apart() {
        let m = failure(rustls::Error::InvalidMessage(
            InvalidMessage::InvalidContentType,
        ));
        assert!(
            m.contains("does not speak TLS here") && m.contains("http://"),
            "{m}"
        );
        let eof = io::Error::new(io::ErrorKind::UnexpectedEof, "tls handshake eof");
        let m = handshake_failure(&eof, &cx());
        assert!(
            m.contains("closed the connection during the TLS handshake"),
            "{m}"
        );
        assert!(m.contains("client certificate"), "{m}");
    }

    #[test]
    fn alerts_point_at_the_client_certificate() {
        let m = failure(rustls::Error::AlertReceived(
            AlertDescription::CertificateRequired,
        ));
        assert!(m.contains("tls_cert"), "{m}");
        let with = Context {
            client_cert: true,
            ..cx()
        };
        let e = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::AlertReceived(AlertDescription::UnknownCA),
        );
        let m = handshake_failure(&e, &with);
        assert!(m.contains("refused wlrun's client certificate"), "{m}");
    }
}
