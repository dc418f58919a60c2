//! The pieces of PostgreSQL's wire protocol the pg-wire oracles share (`refuse`, `oversize`):
//! the start-up packets, the backend messages they send, and a self-signed TLS configuration.
//! Part of `oracles` (mod.rs).

#![allow(dead_code)]

use std::io::Read;
use std::sync::Arc;

/// The SSLRequest's and GSSENCRequest's codes, in place of a protocol version.
pub const SSL_REQUEST: u32 = 80877103;
pub const GSSENC_REQUEST: u32 = 80877104;
/// Protocol 3.0.
pub const PROTOCOL_3: u32 = 196608;

/// A start-up packet: its code (protocol version or request) and the rest.
pub fn read_startup(conn: &mut (impl Read + ?Sized)) -> std::io::Result<(u32, Vec<u8>)> {
    let mut head = [0u8; 8];
    conn.read_exact(&mut head)?;
    let len = u32::from_be_bytes(head[..4].try_into().unwrap()) as usize;
    let code = u32::from_be_bytes(head[4..].try_into().unwrap());
    let mut body = vec![0u8; len.saturating_sub(8)];
    conn.read_exact(&mut body)?;
    Ok((code, body))
}

/// The next frontend message after the start-up: its type and body.
pub fn read_message(conn: &mut (impl Read + ?Sized)) -> std::io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 5];
    conn.read_exact(&mut head)?;
    let len = u32::from_be_bytes(head[1..].try_into().unwrap()) as usize;
    let mut body = vec![0u8; len.saturating_sub(4)];
    conn.read_exact(&mut body)?;
    Ok((head[0], body))
}

/// A backend message: `kind`, its length (which counts itself), `body`.
pub fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![kind];
    out.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// An ErrorResponse of severity FATAL: the session ends with it.
pub fn error_response(sqlstate: &str, message_text: &str) -> Vec<u8> {
    let mut fields = Vec::new();
    for (tag, value) in [
        (b'S', "FATAL"),
        (b'V', "FATAL"),
        (b'C', sqlstate),
        (b'M', message_text),
    ] {
        fields.push(tag);
        fields.extend_from_slice(value.as_bytes());
        fields.push(0);
    }
    fields.push(0);
    message(b'E', &fields)
}

/// AuthenticationOk, the session's key, and ReadyForQuery (idle): a start-up that asks for no
/// password.
pub fn session_ready() -> Vec<u8> {
    let mut out = message(b'R', &0u32.to_be_bytes());
    out.extend(message(b'S', b"client_encoding\0UTF8\0"));
    out.extend(message(b'K', &[0, 0, 0, 7, 0, 0, 0, 42]));
    out.extend(message(b'Z', b"I"));
    out
}

/// A server configuration with a certificate made now (rcgen, for 127.0.0.1 and localhost),
/// which no trust store holds.
pub fn self_signed_tls() -> Arc<rustls::ServerConfig> {
    let key = rcgen::KeyPair::generate().expect("a key pair");
    let params =
        rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .expect("valid names");
    let cert = params.self_signed(&key).expect("a self-signed certificate");
    let der = rustls::pki_types::CertificateDer::from(cert.der().to_vec());
    let key =
        rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).expect("a PKCS#8 key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS 1.2 and 1.3")
        .with_no_client_auth()
        .with_single_cert(vec![der], key)
        .expect("a server configuration");
    Arc::new(config)
}
