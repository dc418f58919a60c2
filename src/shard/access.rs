//! Who may join the barrier: the shared token every shard says in its hello
//! (`WLRUN_BARRIER_TOKEN`), the address shard 0 listens on (`--barrier-bind`), whether a
//! barrier reachable from other machines may run without a token (`--barrier-insecure`), and
//! TLS on the barrier's connections. docs/scale-out.md, "Securing the barrier", says it for an
//! operator.
//!
//! The token is compared as SHA-256 digests with `subtle`'s constant-time equality: neither
//! its bytes nor its length show in how long a refusal takes. It is a secret of the process
//! (`secrets::remember`), so whatever wlrun prints or writes has it masked, and its type
//! prints as `***`, so a hello shown in a message never carries it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use super::spec::{Address, Spec};

/// The shared secret, from the environment only: a flag would show in `ps` to every user.
pub const TOKEN_VAR: &str = "WLRUN_BARRIER_TOKEN";
/// The barrier's TLS files, when not given by flags.
pub const TLS_CERT_VAR: &str = "WLRUN_BARRIER_TLS_CERT";
pub const TLS_KEY_VAR: &str = "WLRUN_BARRIER_TLS_KEY";
pub const TLS_CA_VAR: &str = "WLRUN_BARRIER_TLS_CA";
/// Shorter tokens are guessable, and the masker would not know them for secrets.
pub const MIN_TOKEN_CHARS: usize = 16;

/// The token as it travels in a hello. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(crate::secrets::MASK)
    }
}

impl Token {
    fn digest(&self) -> [u8; 32] {
        let d = ring::digest::digest(&ring::digest::SHA256, self.0.as_bytes());
        let mut out = [0u8; 32];
        out.copy_from_slice(d.as_ref());
        out
    }

    /// The same token, in time that depends on neither.
    pub fn matches(&self, other: &Token) -> bool {
        self.digest().ct_eq(&other.digest()).into()
    }
}

/// The barrier's TLS files as given; read when the barrier starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// Shard 0's certificate chain and key (PEM): it serves the barrier over TLS.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// The CA the others verify shard 0's certificate with; the system's store without it.
    pub ca: Option<PathBuf>,
}

/// What a barrier asks of who joins it, and offers them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Access {
    pub token: Option<Token>,
    /// TLS on the barrier (any of the files given).
    pub tls: Option<TlsFiles>,
}

impl Access {
    /// Whether a hello's token lets it in; `Err` is the reason the peer is told (never the
    /// token itself).
    pub fn admits(&self, said: Option<&Token>) -> Result<(), &'static str> {
        match (&self.token, said) {
            (None, None) => Ok(()),
            (Some(mine), Some(theirs)) if mine.matches(theirs) => Ok(()),
            (Some(_), Some(_)) => Err("wrong barrier token: every shard needs the same WLRUN_BARRIER_TOKEN"),
            (Some(_), None) => Err("this barrier needs a token and the hello had none: set WLRUN_BARRIER_TOKEN, the same on every shard"),
            (None, Some(_)) => Err("shard 0 has no barrier token and this shard has one: set the same WLRUN_BARRIER_TOKEN on every shard, or on none"),
        }
    }
}

/// The barrier's settings as the command line and the environment give them (flags win).
#[derive(Clone, Debug, Default)]
pub struct Flags<'a> {
    pub barrier: Option<&'a str>,
    pub bind: Option<&'a str>,
    pub insecure: bool,
    pub tls_cert: Option<&'a str>,
    pub tls_key: Option<&'a str>,
    pub tls_ca: Option<&'a str>,
}

/// Where shard `spec` meets the others and who may join: `--barrier`, `--barrier-bind`, the
/// token and TLS, checked for this shard. Every mistake is a usage error naming the flag or
/// the variable; a token it reads becomes a secret of the process.
pub fn resolve(
    spec: Spec,
    flags: &Flags,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Address, String> {
    let mut address = Address::resolve(flags.barrier, &env)?;
    if let Some(bind) = flags.bind {
        address.listen = Some(
            Address::parse_listen(bind.trim(), address.port)
                .map_err(|e| format!("--barrier-bind `{bind}`: {e}"))?,
        );
    }
    if !spec.leads() && spec.count > 1 && address.host.is_none() {
        return Err(format!(
            "shard {} of {} needs to know where shard 0 listens: --barrier HOST:PORT or {}",
            spec.index,
            spec.count,
            super::BARRIER_VAR
        ));
    }
    let token = env(TOKEN_VAR).filter(|t| !t.is_empty());
    if let Some(t) = &token {
        if t.chars().count() < MIN_TOKEN_CHARS {
            return Err(format!(
                "{TOKEN_VAR} is {} characters long: a barrier token has at least {MIN_TOKEN_CHARS} characters (e.g. `openssl rand -hex 32`)",
                t.chars().count()
            ));
        }
        if t.trim().parse::<f64>().is_ok() {
            // The masker leaves numbers alone (ports, counts): a numeric token would be
            // printed wherever it appears.
            return Err(format!(
                "{TOKEN_VAR} reads as a number: use letters too (e.g. `openssl rand -hex 32`)"
            ));
        }
        crate::secrets::remember(t);
    }
    let file = |flag: Option<&str>, var: &str| {
        flag.map(str::to_string)
            .or_else(|| env(var).filter(|v| !v.trim().is_empty()))
            .map(PathBuf::from)
    };
    let files = TlsFiles {
        cert: file(flags.tls_cert, TLS_CERT_VAR),
        key: file(flags.tls_key, TLS_KEY_VAR),
        ca: file(flags.tls_ca, TLS_CA_VAR),
    };
    let tls = (files != TlsFiles::default()).then_some(files);
    if let Some(f) = &tls {
        if spec.leads() && spec.count > 1 && (f.cert.is_none() || f.key.is_none()) {
            return Err(format!(
                "shard 0 serves the barrier over TLS when any barrier TLS file is given, and needs both \
                 --barrier-tls-cert and --barrier-tls-key (or {TLS_CERT_VAR} and {TLS_KEY_VAR})"
            ));
        }
    }
    address.access = Access {
        token: token.map(Token),
        tls,
    };
    // The files are read now, so a missing or malformed one is a usage error before the run.
    if let (Some(files), true) = (&address.access.tls, spec.count > 1) {
        if spec.leads() {
            acceptor(files)?;
        } else if let Some(host) = &address.host {
            connector(host, &address.access)?;
        }
    }
    if spec.leads() && spec.count > 1 && address.access.token.is_none() && !flags.insecure {
        let listen = address.bind();
        if !is_loopback(&listen) {
            return Err(format!(
                "shard 0 would listen on {listen}, which other machines can reach, and {TOKEN_VAR} is not set: \
                 anyone who reaches it and knows the plan's hash could join, abort or stall the run. \
                 Set {TOKEN_VAR} to the same secret on every shard (at least {MIN_TOKEN_CHARS} characters), \
                 listen on a loopback address (--barrier-bind 127.0.0.1), \
                 or pass --barrier-insecure on a network you trust"
            ));
        }
    }
    Ok(address)
}

/// `127.0.0.1:7471`, `[::1]:80`, `localhost:7471`: only this machine can connect.
pub fn is_loopback(listen: &str) -> bool {
    if let Ok(a) = listen.parse::<SocketAddr>() {
        return a.ip().is_loopback();
    }
    listen
        .rsplit_once(':')
        .is_some_and(|(h, _)| h.eq_ignore_ascii_case("localhost"))
}

/// Shard 0's TLS acceptor from the certificate and key files; read now, so a missing or
/// malformed file fails the join with its name, never its content.
pub fn acceptor(files: &TlsFiles) -> Result<tokio_rustls::TlsAcceptor, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let (Some(cert), Some(key)) = (&files.cert, &files.key) else {
        return Err("the barrier's TLS needs a certificate and a key on shard 0".into());
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<_, _>>())
        .map_err(|e| {
            format!(
                "cannot read the barrier certificate `{}`: {}",
                cert.display(),
                pem_error(e)
            )
        })?;
    if chain.is_empty() {
        return Err(format!(
            "the barrier certificate `{}` holds no certificate",
            cert.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
        format!(
            "cannot read the barrier key `{}`: {}",
            key.display(),
            pem_error(e)
        )
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("barrier TLS set-up: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("the barrier certificate and key do not go together: {e}"))?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// A PEM error in words; never the file's content (a key).
fn pem_error(e: rustls::pki_types::pem::Error) -> String {
    use rustls::pki_types::pem::Error;
    match e {
        Error::Io(io) => io.to_string(),
        Error::NoItemsFound => "no PEM section".to_string(),
        other => format!("{other:?}"),
    }
}

/// How a shard other than 0 opens its connection to shard 0: the connector every protocol
/// uses, in clear or with TLS verifying shard 0's certificate (chain and name) against the CA
/// file or the system's store.
pub fn connector(host: &str, access: &Access) -> Result<crate::net::tls::Connector, String> {
    let label = format!("shard 0's barrier ({host})");
    let Some(files) = &access.tls else {
        return Ok(crate::net::tls::Connector::plain(label));
    };
    let mut opts = crate::net::tls::TlsOptions::system();
    opts.ca_file = files.ca.clone();
    crate::net::tls::Connector::secure(label, host, &opts, "a barrier in clear")
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::test_env as env;

    const LEAD: Spec = Spec { index: 0, count: 2 };
    const MEMBER: Spec = Spec { index: 1, count: 2 };
    const TOKEN: &str = "tok-0123456789abcdef";

    #[test]
    fn tokens_match_only_when_equal_and_never_print() {
        let a = Token(TOKEN.into());
        assert!(a.matches(&Token(TOKEN.into())));
        assert!(!a.matches(&Token("tok-0123456789abcdeg".into())));
        assert!(!a.matches(&Token("tok".into())));
        assert_eq!(format!("{a:?}"), "***");
        let access = Access {
            token: Some(a.clone()),
            tls: None,
        };
        assert!(access.admits(Some(&a)).is_ok());
        assert!(access.admits(None).unwrap_err().contains("needs a token"));
        assert!(access
            .admits(Some(&Token("x".repeat(20))))
            .unwrap_err()
            .contains("wrong"));
        assert!(Access::default().admits(None).is_ok());
        assert!(Access::default()
            .admits(Some(&a))
            .unwrap_err()
            .contains("has no barrier token"));
    }

    #[test]
    fn a_reachable_shard_0_needs_a_token_or_an_explicit_opt_out() {
        let flags = Flags {
            barrier: Some("wl-0.wl:7471"),
            ..Flags::default()
        };
        let e = resolve(LEAD, &flags, env(&[])).unwrap_err();
        assert!(e.contains("0.0.0.0:7471") && e.contains(TOKEN_VAR), "{e}");
        assert!(!e.contains("***"));
        // Members do not listen: nothing to refuse there.
        assert!(resolve(MEMBER, &flags, env(&[])).is_ok());
        let a = resolve(LEAD, &flags, env(&[(TOKEN_VAR, TOKEN)])).unwrap();
        assert_eq!(a.access.token, Some(Token(TOKEN.into())));
        let open = Flags {
            insecure: true,
            ..flags.clone()
        };
        assert!(resolve(LEAD, &open, env(&[])).is_ok());
        let local = Flags {
            barrier: Some("127.0.0.1:7000"),
            ..Flags::default()
        };
        assert!(resolve(LEAD, &local, env(&[])).is_ok());
        // Loopback named for the others, but every interface asked for.
        let wide = Flags {
            bind: Some("0.0.0.0"),
            ..local.clone()
        };
        let e = resolve(LEAD, &wide, env(&[])).unwrap_err();
        assert!(e.contains("0.0.0.0:7000"), "{e}");
        let narrow = Flags {
            bind: Some("127.0.0.1:9000"),
            ..flags.clone()
        };
        let a = resolve(LEAD, &narrow, env(&[])).unwrap();
        assert_eq!(a.bind(), "127.0.0.1:9000");
        assert_eq!(a.connect().as_deref(), Some("wl-0.wl:7471"));
        // Alone, nothing listens.
        assert!(resolve(Spec { index: 0, count: 1 }, &flags, env(&[])).is_ok());
    }

    #[test]
    fn bad_tokens_binds_and_tls_halves_are_usage_errors() {
        let flags = Flags {
            barrier: Some("127.0.0.1:7000"),
            ..Flags::default()
        };
        let e = resolve(LEAD, &flags, env(&[(TOKEN_VAR, "short")])).unwrap_err();
        assert!(e.contains("at least 16"), "{e}");
        assert!(!e.contains("short"), "{e}");
        let e = resolve(LEAD, &flags, env(&[(TOKEN_VAR, "12345678901234567890")])).unwrap_err();
        assert!(e.contains("reads as a number"), "{e}");
        let bad = Flags {
            bind: Some("h:0"),
            ..flags.clone()
        };
        let e = resolve(LEAD, &bad, env(&[])).unwrap_err();
        assert!(e.starts_with("--barrier-bind `h:0`"), "{e}");
        let half = Flags {
            tls_cert: Some("c.pem"),
            ..flags.clone()
        };
        let e = resolve(LEAD, &half, env(&[])).unwrap_err();
        assert!(e.contains("--barrier-tls-key"), "{e}");
        // A member needs only the CA (or the system's store), read at once.
        let e = resolve(MEMBER, &half, env(&[(TLS_CA_VAR, "no-such-ca.pem")])).unwrap_err();
        assert!(e.contains("no-such-ca.pem"), "{e}");
        assert!(is_loopback("[::1]:80") && is_loopback("localhost:1"));
        assert!(!is_loopback("0.0.0.0:1") && !is_loopback("wl-0:1"));
    }
}
