//! `http://` and `https://` URLs: taking them apart, redacting their passwords, encoding query
//! strings.

/// The URL with any password replaced by `***`, for messages: one rule for every output
/// (`secrets`).
pub use crate::secrets::redact_url;

/// An `http[s]://host[:port][/base]` URL taken apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpUrl {
    /// `https://`: the connection speaks TLS.
    pub tls: bool,
    /// The host alone (no brackets, no port): the name TLS verifies.
    pub host: String,
    /// `host` or `host:port` as written (brackets kept for IPv6), for the `Host` header.
    pub authority: String,
    /// What `TcpStream::connect` gets: `host:port`, with the port defaulted to 80 (443 for
    /// `https://`).
    pub connect_to: String,
    /// The path every request path is appended to, without a trailing slash; often empty.
    pub base_path: String,
    /// `user[:password]@` from the URL, percent-decoded.
    pub user: Option<String>,
    pub password: Option<String>,
}

impl HttpUrl {
    pub fn parse(url: &str) -> Result<HttpUrl, String> {
        let (rest, tls) = if let Some(r) = strip_prefix_ignore_case(url, "http://") {
            (r, false)
        } else if let Some(r) = strip_prefix_ignore_case(url, "https://") {
            (r, true)
        } else {
            return Err(format!(
                "`{}` is not an http:// or https:// URL",
                redact_url(url)
            ));
        };
        let (authority_full, path) = match rest.find(['/', '?', '#']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if path.contains(['?', '#']) {
            return Err(format!(
                "`{}`: the endpoint URL cannot carry a query or fragment; use the `path` option",
                redact_url(url)
            ));
        }
        let (userinfo, authority) = match authority_full.rsplit_once('@') {
            Some((u, a)) => (Some(u), a),
            None => (None, authority_full),
        };
        let (user, password) = match userinfo {
            None => (None, None),
            Some(u) => {
                let (name, pass) = match u.split_once(':') {
                    Some((n, p)) => (n, Some(p)),
                    None => (u, None),
                };
                let name = percent_decode(name)
                    .map_err(|e| format!("the user in the endpoint URL: {e}"))?;
                let pass = pass
                    .map(percent_decode)
                    .transpose()
                    .map_err(|e| format!("the password in the endpoint URL: {e}"))?;
                (Some(name), pass)
            }
        };
        let (host, port) =
            split_host_port(authority).map_err(|e| format!("`{}`: {e}", redact_url(url)))?;
        let connect_to = format!("{host}:{}", port.unwrap_or(if tls { 443 } else { 80 }));
        Ok(HttpUrl {
            tls,
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            authority: authority.to_string(),
            connect_to,
            base_path: path.trim_end_matches('/').to_string(),
            user,
            password,
        })
    }

    /// `http[s]://authority/base`, without credentials: how errors name the endpoint.
    pub fn display(&self) -> String {
        format!("{}{}{}", self.scheme(), self.authority, self.base_path)
    }

    pub fn scheme(&self) -> &'static str {
        if self.tls {
            "https://"
        } else {
            "http://"
        }
    }
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// Host (brackets kept for IPv6 literals, as `connect` wants them) and optional port.
fn split_host_port(authority: &str) -> Result<(&str, Option<u16>), String> {
    if authority.is_empty() {
        return Err("no host".to_string());
    }
    let (host, port) = if authority.starts_with('[') {
        match authority.find(']') {
            Some(end) => {
                let host = &authority[..=end];
                match &authority[end + 1..] {
                    "" => (host, None),
                    p => match p.strip_prefix(':') {
                        Some(p) => (host, Some(p)),
                        None => return Err(format!("cannot read `{authority}` as host:port")),
                    },
                }
            }
            None => return Err(format!("unclosed `[` in `{authority}`")),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() || host == "[]" {
        return Err("no host".to_string());
    }
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => Some(n),
            _ => return Err(format!("`{p}` is not a port (1-65535)")),
        },
    };
    Ok((host, port))
}

fn percent_decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad percent escape at byte {i}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "not UTF-8 once decoded".to_string())
}

/// Percent-encodes everything but RFC 3986's unreserved characters, for query values.
pub fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3 / 2);
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(char::from(b"0123456789ABCDEF"[usize::from(b >> 4)]));
            out.push(char::from(b"0123456789ABCDEF"[usize::from(b & 15)]));
        }
    }
    out
}

/// `path` followed by `params` (already encoded), joined with `?` or `&` as `path` needs.
pub fn with_query(path: &str, params: &str) -> String {
    if params.is_empty() {
        path.to_string()
    } else if path.contains('?') {
        format!("{path}&{params}")
    } else {
        format!("{path}?{params}")
    }
}
