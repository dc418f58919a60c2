//! rustls client configurations from `TlsOptions`: the trust roots (the system's store, read
//! once per process, or a CA file), the client certificate, ALPN, and the verifier for each
//! `Verify` level. ring is the one crypto provider; session resumption uses rustls's in-memory
//! store, shared by every connection made with one configuration.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use super::options::{TlsOptions, Verify};

pub(crate) fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| Arc::new(rustls::crypto::ring::default_provider()))
        .clone()
}

/// The system's trust store (`SSL_CERT_FILE`/`SSL_CERT_DIR` or the platform's), read once.
fn system_roots() -> Result<Arc<RootCertStore>, String> {
    static ROOTS: OnceLock<Result<Arc<RootCertStore>, String>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            let mut roots = RootCertStore::empty();
            let (_, _) = roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                let why = found
                    .errors
                    .first()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default();
                return Err(format!(
                    "the system's trust store has no certificates{why} (install Debian's \
                     ca-certificates, or name a CA file with `tls_ca`)"
                ));
            }
            Ok(Arc::new(roots))
        })
        .clone()
}

/// The certificates of a PEM file, or why there are none.
fn read_certs(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let shown = path.display();
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("cannot read the {what} `{shown}`: {}", pem_error(e)))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("the {what} `{shown}` is not valid PEM: {}", pem_error(e)))?;
    if certs.is_empty() {
        return Err(format!(
            "the {what} `{shown}` holds no certificate (expected `-----BEGIN CERTIFICATE-----`)"
        ));
    }
    Ok(certs)
}

/// A PEM error in words; never the file's content.
fn pem_error(e: rustls::pki_types::pem::Error) -> String {
    use rustls::pki_types::pem::Error;
    match e {
        Error::Io(io) => io.to_string(),
        Error::NoItemsFound => "no PEM section".to_string(),
        other => format!("{other:?}"),
    }
}

fn roots(opts: &TlsOptions) -> Result<Arc<RootCertStore>, String> {
    let Some(file) = &opts.ca_file else {
        return system_roots();
    };
    let mut roots = RootCertStore::empty();
    for cert in read_certs(file, "CA file")? {
        roots.add(cert).map_err(|e| {
            format!(
                "the CA file `{}` holds a certificate rustls cannot use as a root: {e}",
                file.display()
            )
        })?;
    }
    Ok(Arc::new(roots))
}

/// The client configuration for `opts`. Files are read now, so a missing or malformed one
/// fails before anything connects.
pub(crate) fn client_config(opts: &TlsOptions) -> Result<Arc<ClientConfig>, String> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up: {e}"))?;
    let verifier: Arc<dyn ServerCertVerifier> = match opts.verify {
        Verify::Off => Arc::new(NoVerification(provider.clone())),
        level => {
            let webpki = WebPkiServerVerifier::builder_with_provider(roots(opts)?, provider)
                .build()
                .map_err(|e| format!("TLS set-up: {e}"))?;
            if level == Verify::Chain {
                Arc::new(ChainOnly(webpki))
            } else {
                webpki
            }
        }
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match (&opts.client_cert, &opts.client_key) {
        (Some(cert), Some(key)) => {
            let chain = read_certs(cert, "client certificate")?;
            let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
                format!(
                    "cannot read the client key `{}`: {}",
                    key.display(),
                    pem_error(e)
                )
            })?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("the client certificate and key do not go together: {e}"))?
        }
        _ => builder.with_no_client_auth(),
    };
    config.alpn_protocols = opts.alpn.clone();
    Ok(Arc::new(config))
}

/// `verify-ca`: the chain must lead to a trusted root, whatever name the certificate is for.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            // webpki checks the name last, so the chain was good when only the name is wrong.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// No authentication of the server: any certificate is taken. The handshake's signatures are
/// still checked, so the session is encrypted to whoever holds the certificate's key.
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
