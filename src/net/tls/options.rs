//! What an endpoint's options say about TLS: which certificates to trust, the client
//! certificate, the name to verify, and whether to verify at all. Only paths are read here;
//! the files are read when the connector is built, so no key material is ever in a plan.

use std::path::PathBuf;

use crate::net::error::{DriverError, ErrorClass};
use crate::plan::EndpointPlan;
use crate::value::Value;

/// How much of the server's certificate is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verify {
    /// The chain up to a trusted root and the host name (`verify-full`, and HTTPS's default).
    Full,
    /// The chain only, any name (PostgreSQL's `verify-ca`).
    Chain,
    /// Nothing: the connection is encrypted but the server is not authenticated (`tls_verify
    /// false`, PostgreSQL's `require` and `prefer`).
    Off,
}

impl Verify {
    /// How reports name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Verify::Full => "chain and name",
            Verify::Chain => "chain only",
            Verify::Off => "off",
        }
    }
}

/// The TLS settings of one endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsOptions {
    pub verify: Verify,
    /// PEM file with the CA certificates to trust instead of the system's store.
    pub ca_file: Option<PathBuf>,
    /// PEM files of the client's certificate chain and its private key (mutual TLS).
    pub client_cert: Option<PathBuf>,
    pub client_key: Option<PathBuf>,
    /// The name sent as SNI and checked against the certificate, instead of the URL's host.
    pub server_name: Option<String>,
    /// ALPN protocols offered, e.g. `http/1.1`.
    pub alpn: Vec<Vec<u8>>,
}

impl TlsOptions {
    /// Verify everything against the system's trust store, no client certificate.
    pub fn system() -> TlsOptions {
        TlsOptions {
            verify: Verify::Full,
            ca_file: None,
            client_cert: None,
            client_key: None,
            server_name: None,
            alpn: Vec::new(),
        }
    }

    /// The `tls_ca`, `tls_cert`, `tls_key`, `tls_server_name` and `tls_verify` options of
    /// `endpoint`, with `env(...)` parts resolved now. `verify` is what the protocol decides
    /// when `tls_verify` is not given (PostgreSQL's `sslmode`).
    pub fn of_endpoint(endpoint: &EndpointPlan, verify: Verify) -> Result<TlsOptions, DriverError> {
        let text = |name: &str| -> Result<Option<String>, DriverError> {
            match endpoint.options.get(name) {
                Some(Value::Str(t)) => t.resolve_env().map(Some).map_err(|e| {
                    DriverError::new(
                        ErrorClass::Connect,
                        format!(
                            "{}.{}: option `{name}`: {e}",
                            endpoint.target, endpoint.name
                        ),
                        true,
                    )
                }),
                _ => Ok(None),
            }
        };
        let verify = match endpoint.options.get("tls_verify") {
            Some(Value::Bool(false)) => Verify::Off,
            _ => verify,
        };
        let opts = TlsOptions {
            verify,
            ca_file: text("tls_ca")?.map(PathBuf::from),
            client_cert: text("tls_cert")?.map(PathBuf::from),
            client_key: text("tls_key")?.map(PathBuf::from),
            server_name: text("tls_server_name")?,
            alpn: Vec::new(),
        };
        if opts.client_cert.is_some() != opts.client_key.is_some() {
            return Err(DriverError::new(
                ErrorClass::Connect,
                format!(
                    "{}.{}: mutual TLS needs both `tls_cert` and `tls_key`",
                    endpoint.target, endpoint.name
                ),
                true,
            ));
        }
        Ok(opts)
    }

    pub fn with_alpn(mut self, protocol: &[u8]) -> TlsOptions {
        self.alpn = vec![protocol.to_vec()];
        self
    }
}
