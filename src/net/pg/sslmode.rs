//! `sslmode` as libpq users write it, from the endpoint's options or the URL's query string,
//! and the URL made fit for tokio-postgres. tokio-postgres knows only disable, prefer and
//! require, and refuses every query parameter it does not know, so the libpq parameters wlrun
//! handles itself (`sslmode`, `sslrootcert`, `sslcert`, `sslkey`) are taken out of the URL
//! before it is parsed, and tokio-postgres is told only whether to ask for TLS.
//!
//! Both `connector` (once per endpoint and phase) and `connect` (once per connection) read
//! the same `Settings`, so `net::tls` stays free of PostgreSQL's vocabulary.

use tokio_postgres::Config;

use crate::net::error::DriverError;
use crate::net::tls::{TlsOptions, Verify};
use crate::plan::EndpointPlan;
use crate::value::{Text, Value};

/// libpq's `sslmode`, less `allow` (plaintext first, TLS only if refused), which no
/// benchmark wants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

pub(crate) const MODES: &str = "disable, prefer, require, verify-ca, verify-full";

impl SslMode {
    fn parse(word: &str) -> Option<SslMode> {
        Some(match word {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// A connection in clear is a failure, not a fallback.
    pub(crate) fn requires_tls(self) -> bool {
        matches!(
            self,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull
        )
    }

    /// What is checked of the server's certificate. libpq's `prefer` and `require` encrypt
    /// without authenticating the server.
    pub(crate) fn verify(self) -> Verify {
        match self {
            SslMode::VerifyFull => Verify::Full,
            SslMode::VerifyCa => Verify::Chain,
            _ => Verify::Off,
        }
    }

    /// tokio-postgres's own mode: whether it sends the SSLRequest and whether an 'N' ends the
    /// connection. The verification is wlrun's connector's.
    pub(crate) fn tokio(self) -> tokio_postgres::config::SslMode {
        use tokio_postgres::config::SslMode as T;
        match self {
            SslMode::Disable => T::Disable,
            SslMode::Prefer => T::Prefer,
            _ => T::Require,
        }
    }
}

/// An endpoint's PostgreSQL connection settings: the mode, tokio-postgres's configuration
/// (from the URL without the libpq TLS parameters), and the TLS options with the URL's libpq
/// parameters filled in where the endpoint's options say nothing.
pub(crate) struct Settings {
    pub(crate) mode: SslMode,
    pub(crate) config: Config,
    pub(crate) tls: TlsOptions,
}

/// The TLS parameters of a URL's query string, in libpq's names.
#[derive(Debug, Default, PartialEq, Eq)]
struct UrlTls {
    sslmode: Option<String>,
    rootcert: Option<String>,
    cert: Option<String>,
    key: Option<String>,
}

/// The URL without the parameters wlrun handles, and those parameters. Parse errors name the
/// parameter, never the URL (it may hold a password).
fn strip(url: &str) -> Result<(String, UrlTls), String> {
    let mut out = UrlTls::default();
    let is_url = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let Some((base, query)) = url.split_once('?').filter(|_| is_url) else {
        return Ok((url.to_string(), out));
    };
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let key = decode(k).ok_or("a query parameter's name is not valid percent-encoding")?;
        let value = || decode(v).ok_or(format!("the URL's `{key}` is not valid percent-encoding"));
        let slot = match key.as_str() {
            "sslmode" => &mut out.sslmode,
            "sslrootcert" => &mut out.rootcert,
            "sslcert" => &mut out.cert,
            "sslkey" => &mut out.key,
            "sslpassword" => {
                return Err(
                    "the URL's `sslpassword` is not supported: give `sslkey` (or \
                            `tls_key`) an unencrypted key file"
                        .to_string(),
                )
            }
            "sslcrl" | "sslcrldir" => {
                return Err(format!(
                    "the URL's `{key}` is not supported: wlrun does not check revocation lists"
                ))
            }
            "sslcertmode"
            | "sslsni"
            | "sslcompression"
            | "ssl_min_protocol_version"
            | "ssl_max_protocol_version"
            | "gssencmode"
            | "requiressl" => {
                return Err(format!(
                    "the URL's `{key}` is not supported (wlrun takes sslmode, sslrootcert, \
                     sslcert and sslkey, or the endpoint options tls_ca, tls_cert, tls_key, \
                     tls_server_name, tls_verify)"
                ))
            }
            _ => {
                kept.push(pair);
                continue;
            }
        };
        *slot = Some(value()?);
    }
    let mut stripped = base.to_string();
    if !kept.is_empty() {
        stripped.push('?');
        stripped.push_str(&kept.join("&"));
    }
    Ok((stripped, out))
}

/// `%XX` decoding as libpq does it (`+` stays `+`); `None` for a bad escape or non-UTF-8.
fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The endpoint's `sslmode` option (a word; a string is taken too).
fn option_mode(endpoint: &EndpointPlan) -> Result<Option<String>, String> {
    match endpoint.options.get("sslmode") {
        Some(Value::Symbol(w)) => Ok(Some(w.clone())),
        Some(Value::Str(t)) => t
            .resolve_env()
            .map(Some)
            .map_err(|e| format!("option `sslmode`: {e}")),
        _ => Ok(None),
    }
}

fn mode_of(word: &str, whence: &str) -> Result<SslMode, String> {
    if word == "allow" {
        return Err(format!(
            "{whence} `sslmode allow` is not supported (it tries plaintext first): use prefer, \
             or disable"
        ));
    }
    SslMode::parse(word).ok_or_else(|| format!("{whence} sslmode `{word}` is not one of {MODES}"))
}

/// The settings of `endpoint` at `url`. Errors are messages without the URL, for
/// `DriverError::connect` with the endpoint's name.
pub(crate) fn settings(endpoint: &EndpointPlan, url: &str) -> Result<Settings, DriverError> {
    let fail =
        |why: String| DriverError::connect(&crate::net::connect::endpoint_name(endpoint), why);
    let (stripped, from_url) = strip(url).map_err(fail)?;
    let mut config: Config = stripped.parse().map_err(|e: tokio_postgres::Error| {
        // tokio-postgres's own reasons name a parameter only; other texts may quote the URL.
        let why = std::error::Error::source(&e)
            .map(|s| s.to_string())
            .filter(|s| s.starts_with("unknown option") || s.starts_with("invalid value"));
        fail(match why {
            Some(w) => format!("the URL is not a valid PostgreSQL connection string: {w}"),
            None => "the URL is not a valid PostgreSQL connection string".to_string(),
        })
    })?;
    let system_roots = from_url.rootcert.as_deref() == Some("system");
    let mode = match (option_mode(endpoint).map_err(fail)?, &from_url.sslmode) {
        (Some(w), _) => mode_of(&w, "the option").map_err(fail)?,
        (None, Some(w)) => mode_of(w, "the URL's").map_err(fail)?,
        // libpq 16: a system trust store is only worth something with the name checked.
        (None, None) if system_roots => SslMode::VerifyFull,
        // A key=value string tokio-postgres parsed itself (it knows three modes).
        (None, None) => match config.get_ssl_mode() {
            tokio_postgres::config::SslMode::Disable => SslMode::Disable,
            tokio_postgres::config::SslMode::Require => SslMode::Require,
            _ => SslMode::Prefer,
        },
    };
    if system_roots && mode != SslMode::VerifyFull && mode != SslMode::Disable {
        return Err(fail(format!(
            "`sslrootcert=system` needs `sslmode verify-full` (it is `{}`)",
            mode.as_str()
        )));
    }
    config.ssl_mode(mode.tokio());
    // The URL's libpq parameters as the options they are synonyms of; an option given on the
    // endpoint wins.
    let mut ep = endpoint.clone();
    let rootcert = from_url.rootcert.filter(|_| !system_roots);
    for (name, value) in [
        ("tls_ca", rootcert),
        ("tls_cert", from_url.cert),
        ("tls_key", from_url.key),
    ] {
        if let Some(v) = value {
            ep.options
                .entry(name.to_string())
                .or_insert(Value::Str(Text::lit(v)));
        }
    }
    let tls = TlsOptions::of_endpoint(&ep, mode.verify())?;
    Ok(Settings { mode, config, tls })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::pg::test_endpoint;

    fn word(w: &str) -> Value {
        Value::Symbol(w.into())
    }

    fn text(s: &str) -> Value {
        Value::Str(Text::lit(s))
    }

    const URL: &str = "postgres://u:secret@db.example:5433/bench";

    #[test]
    fn the_default_is_prefer_as_in_libpq() {
        let s = settings(&test_endpoint(&[]), URL).unwrap();
        assert_eq!(s.mode, SslMode::Prefer);
        assert_eq!(s.tls.verify, Verify::Off);
        assert_eq!(
            s.config.get_ssl_mode(),
            tokio_postgres::config::SslMode::Prefer
        );
    }

    #[test]
    fn each_mode_sets_the_verifier_and_tokio_postgres_mode() {
        use tokio_postgres::config::SslMode as T;
        for (w, mode, verify, tokio) in [
            ("disable", SslMode::Disable, Verify::Off, T::Disable),
            ("prefer", SslMode::Prefer, Verify::Off, T::Prefer),
            ("require", SslMode::Require, Verify::Off, T::Require),
            ("verify-ca", SslMode::VerifyCa, Verify::Chain, T::Require),
            ("verify-full", SslMode::VerifyFull, Verify::Full, T::Require),
        ] {
            let s = settings(&test_endpoint(&[("sslmode", word(w))]), URL).unwrap();
            assert_eq!(
                (s.mode, s.tls.verify, s.config.get_ssl_mode()),
                (mode, verify, tokio)
            );
            let s = settings(&test_endpoint(&[]), &format!("{URL}?sslmode={w}")).unwrap();
            assert_eq!(
                (s.mode, s.tls.verify, s.config.get_ssl_mode()),
                (mode, verify, tokio)
            );
        }
    }

    #[test]
    fn the_option_beats_the_url() {
        let ep = test_endpoint(&[
            ("sslmode", word("require")),
            ("tls_ca", text("option-ca.pem")),
        ]);
        let s = settings(
            &ep,
            &format!("{URL}?sslmode=verify-full&sslrootcert=url-ca.pem"),
        )
        .unwrap();
        assert_eq!(s.mode, SslMode::Require);
        assert_eq!(s.tls.ca_file.unwrap().to_str(), Some("option-ca.pem"));
    }

    #[test]
    fn tls_verify_false_turns_verification_off() {
        let ep = test_endpoint(&[
            ("sslmode", word("verify-full")),
            ("tls_verify", Value::Bool(false)),
        ]);
        let s = settings(&ep, URL).unwrap();
        assert_eq!(s.mode, SslMode::VerifyFull);
        assert_eq!(s.tls.verify, Verify::Off);
    }

    #[test]
    fn libpq_names_are_synonyms_and_leave_the_url() {
        let url = format!(
            "{URL}?application_name=x&sslmode=verify-ca&sslrootcert=%2Fetc%2Fca.pem\
             &sslcert=c.pem&sslkey=c.key&connect_timeout=3"
        );
        let (stripped, tls) = strip(&url).unwrap();
        assert_eq!(
            stripped,
            format!("{URL}?application_name=x&connect_timeout=3")
        );
        assert_eq!(tls.rootcert.as_deref(), Some("/etc/ca.pem"));
        let s = settings(&test_endpoint(&[]), &url).unwrap();
        assert_eq!(s.mode, SslMode::VerifyCa);
        assert_eq!(s.tls.ca_file.unwrap().to_str(), Some("/etc/ca.pem"));
        assert_eq!(s.tls.client_cert.unwrap().to_str(), Some("c.pem"));
        assert_eq!(s.tls.client_key.unwrap().to_str(), Some("c.key"));
        assert_eq!(s.config.get_application_name(), Some("x"));
        let (stripped, _) = strip(&format!("{URL}?sslmode=require")).unwrap();
        assert_eq!(stripped, URL);
    }

    #[test]
    fn sslrootcert_system_means_verify_full_with_the_system_store() {
        let s = settings(&test_endpoint(&[]), &format!("{URL}?sslrootcert=system")).unwrap();
        assert_eq!(s.mode, SslMode::VerifyFull);
        assert_eq!(s.tls.ca_file, None);
        let e = settings(
            &test_endpoint(&[]),
            &format!("{URL}?sslrootcert=system&sslmode=require"),
        )
        .err()
        .unwrap();
        assert!(e.message.contains("verify-full"), "{e}");
    }

    #[test]
    fn errors_name_the_endpoint_and_never_the_password() {
        for (opts, url, why) in [
            (vec![], format!("{URL}?sslmode=bogus"), "not one of"),
            (vec![], format!("{URL}?sslmode=allow"), "not supported"),
            (
                vec![("sslmode", word("maybe"))],
                URL.to_string(),
                "not one of",
            ),
            (vec![], format!("{URL}?sslpassword=secret2"), "sslpassword"),
            (vec![], format!("{URL}?sslcrl=x.crl"), "revocation"),
            (vec![], format!("{URL}?sslrootcert=%zz"), "percent-encoding"),
            (vec![], format!("{URL}?nosuch=1"), "unknown option `nosuch`"),
            (
                vec![],
                "postgres://u:secret@db.example:notaport/db".to_string(),
                "not a valid",
            ),
            (
                vec![("tls_cert", text("c.pem"))],
                URL.to_string(),
                "both `tls_cert` and `tls_key`",
            ),
        ] {
            let e = settings(&test_endpoint(&opts), &url).err().unwrap();
            assert!(e.message.contains("db.pg"), "{e}");
            assert!(e.message.contains(why), "{url}: {e}");
            assert!(!e.message.contains("secret"), "{e}");
        }
    }

    #[test]
    fn non_url_strings_pass_through() {
        let (s, tls) = strip("host=127.0.0.1 user=u sslmode=require").unwrap();
        assert_eq!(s, "host=127.0.0.1 user=u sslmode=require");
        assert_eq!(tls, UrlTls::default());
        let s = settings(&test_endpoint(&[]), "host=127.0.0.1 user=u sslmode=require").unwrap();
        assert_eq!(s.mode, SslMode::Require);
    }
}
