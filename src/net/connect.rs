//! The connector of an endpoint, from its kind, its resolved URL and its options: in clear or
//! under TLS, and with what verification. A phase makes one per endpoint and hands it to all
//! its workers (see `net::tls`).

use crate::net::error::{DriverError, ErrorClass};
use crate::net::http::{redact_url, HttpUrl};
use crate::net::tls::{Connector, TlsOptions, Verify};
use crate::plan::EndpointPlan;

/// `target.endpoint`, how messages name an endpoint.
pub fn endpoint_name(endpoint: &EndpointPlan) -> String {
    format!("{}.{}", endpoint.target, endpoint.name)
}

/// The connector for `endpoint` at `url` (resolved).
pub fn connector(endpoint: &EndpointPlan, url: &str) -> Result<Connector, DriverError> {
    match endpoint.kind.as_str() {
        "pg" => crate::net::pg::connector(endpoint, url),
        "http" | "ilp_http" => {
            let parsed = HttpUrl::parse(url).map_err(|e| {
                DriverError::new(
                    ErrorClass::Connect,
                    format!("{}: {e}", endpoint_name(endpoint)),
                    true,
                )
            })?;
            http_connector(Some(endpoint), &parsed)
        }
        "qwp" => scheme_connector(endpoint, url, "wss://", "ws://", Some(b"http/1.1")),
        "ilp_tcp" => scheme_connector(endpoint, url, "tcps://", "tcp://", None),
        _ => Ok(Connector::plain(endpoint_name(endpoint))),
    }
}

/// The connector of an HTTP endpoint (or of a bare URL, for clients made without one):
/// `https://` speaks TLS with ALPN `http/1.1`, verified against the system's store unless
/// the endpoint's options say otherwise.
pub fn http_connector(
    endpoint: Option<&EndpointPlan>,
    url: &HttpUrl,
) -> Result<Connector, DriverError> {
    let label = match endpoint {
        Some(ep) => format!("{} ({})", endpoint_name(ep), url.display()),
        None => url.display(),
    };
    if !url.tls {
        return Ok(Connector::plain(label));
    }
    let opts = match endpoint {
        Some(ep) => TlsOptions::of_endpoint(ep, Verify::Full)?,
        None => TlsOptions::system(),
    };
    Connector::secure(label, &url.host, &opts.with_alpn(b"http/1.1"), "http://")
}

/// A `scheme://[user@]host[:port][/path]` endpoint that speaks TLS under `secure`.
fn scheme_connector(
    endpoint: &EndpointPlan,
    url: &str,
    secure: &'static str,
    plain: &'static str,
    alpn: Option<&[u8]>,
) -> Result<Connector, DriverError> {
    let (rest, tls) = if let Some(r) = url.strip_prefix(secure) {
        (r, true)
    } else if let Some(r) = url.strip_prefix(plain) {
        (r, false)
    } else {
        return Err(DriverError::new(
            ErrorClass::Connect,
            format!(
                "{}: `{}` does not start with {plain} or {secure}",
                endpoint_name(endpoint),
                redact_url(url)
            ),
            true,
        ));
    };
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    let hostport = authority.rsplit('@').next().unwrap_or("");
    let scheme = if tls { secure } else { plain };
    let label = format!("{} ({scheme}{hostport})", endpoint_name(endpoint));
    if !tls {
        return Ok(Connector::plain(label));
    }
    let host = host_of(hostport);
    let mut opts = TlsOptions::of_endpoint(endpoint, Verify::Full)?;
    if let Some(p) = alpn {
        opts = opts.with_alpn(p);
    }
    Connector::secure(label, host, &opts, plain)
}

/// The host of `host[:port]`, brackets of an IPv6 literal removed.
pub fn host_of(hostport: &str) -> &str {
    if let Some(rest) = hostport.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match hostport.rsplit_once(':') {
        Some((h, _)) => h,
        None => hostport,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_lose_ports_and_brackets() {
        assert_eq!(host_of("db.local:9000"), "db.local");
        assert_eq!(host_of("db.local"), "db.local");
        assert_eq!(host_of("[::1]:9000"), "::1");
        assert_eq!(host_of("[::1]"), "::1");
    }
}
