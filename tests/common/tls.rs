//! TLS for the tests and benches: a test PKI made with rcgen when the test runs, and a
//! TLS-terminating front that puts any plain in-test server (HTTP, QWP ingest, QWP queries,
//! an ILP/TCP sink) behind a TLS acceptor, as a load balancer would.
//!
//! `Pki::new()` writes, as PEM files in its own temporary directory (named by the workloads'
//! `tls_ca`, `tls_cert`, `tls_key` and by nginx's `ssl_certificate`):
//!
//! - `ca.pem`: the test CA; `other-ca.pem`: an unrelated CA, to trust the wrong one;
//! - server certificates signed by the CA, each with its key: `Server::Valid` for 127.0.0.1 and
//!   localhost, `Server::WrongName` for `other.example` only, `Server::Expired` for 127.0.0.1
//!   and localhost but valid only in 2000;
//! - `client.pem`/`client.key`: a client certificate signed by the CA (mutual TLS).
//!
//! `TlsFront::start(backend, config)` accepts TLS on 127.0.0.1:0 with `config` (see
//! `Pki::server_config`), and pipes the bytes of each connection to a new TCP connection to
//! `backend`. It counts full and resumed handshakes (rustls's default server session cache
//! resumes TLS 1.3 sessions) and keeps why each failed handshake failed. It runs on its own
//! thread and runtime, like the in-test servers, and stops when dropped. `TlsFront::relay` is
//! the same relay in clear, for benches that set TLS's cost apart from the relay's.
//!
//! Tests: `#[path = "common/tls.rs"] mod tls;`; benches: `#[path = "../tests/common/tls.rs"]`.
#![allow(dead_code)] // each test file and bench uses its own subset

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rcgen::{
    date_time_ymd, BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{HandshakeKind, RootCertStore, ServerConfig};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio_rustls::TlsAcceptor;

/// The name the wrong-name certificate is for.
pub const OTHER_NAME: &str = "other.example";

/// The server certificates of the PKI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Server {
    /// For 127.0.0.1 and localhost, signed by the CA, valid now.
    Valid,
    /// For `OTHER_NAME` only.
    WrongName,
    /// For 127.0.0.1 and localhost, but expired at the end of 2000.
    Expired,
}

impl Server {
    fn file(self) -> &'static str {
        match self {
            Server::Valid => "server",
            Server::WrongName => "wrong-name",
            Server::Expired => "expired",
        }
    }
}

/// The test PKI, as files in a temporary directory removed when dropped.
pub struct Pki {
    dir: tempfile::TempDir,
    /// The client key's PEM text, to check that it never lands in a run directory.
    pub client_key_pem: String,
}

fn ca_params(name: &str) -> CertificateParams {
    let mut p = CertificateParams::new(Vec::<String>::new()).expect("no names is valid");
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, name);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    p
}

fn leaf_params(names: &[&str], usage: ExtendedKeyUsagePurpose) -> CertificateParams {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut p = CertificateParams::new(names.clone()).expect("valid names");
    p.distinguished_name
        .push(DnType::CommonName, names.first().map_or("client", |n| n));
    p.use_authority_key_identifier_extension = true;
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    p.extended_key_usages = vec![usage];
    p
}

impl Pki {
    /// Makes the CAs, the server and client certificates, and writes them.
    pub fn new() -> Pki {
        let dir = tempfile::Builder::new()
            .prefix("wlrun-pki.")
            .tempdir()
            .expect("a temporary directory for the PKI");
        // nginx's worker (nobody, when the tests run as root) reads the server files.
        set_mode(dir.path(), 0o755);
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap_or_else(|e| panic!("writing {name}: {e}"));
            set_mode(&path, 0o644);
        };

        let ca_key = KeyPair::generate().expect("a CA key");
        let params = ca_params("wlrun test CA");
        let ca_cert = params.self_signed(&ca_key).expect("the CA certificate");
        write("ca.pem", &ca_cert.pem());
        let ca = Issuer::new(params, ca_key);

        let other_key = KeyPair::generate().expect("a CA key");
        let other = ca_params("unrelated test CA")
            .self_signed(&other_key)
            .expect("the other CA certificate");
        write("other-ca.pem", &other.pem());

        let server = ExtendedKeyUsagePurpose::ServerAuth;
        for (which, params) in [
            (
                Server::Valid,
                leaf_params(&["127.0.0.1", "localhost"], server.clone()),
            ),
            (
                Server::WrongName,
                leaf_params(&[OTHER_NAME], server.clone()),
            ),
            (Server::Expired, {
                let mut p = leaf_params(&["127.0.0.1", "localhost"], server.clone());
                p.not_before = date_time_ymd(2000, 1, 1);
                p.not_after = date_time_ymd(2000, 12, 31);
                p
            }),
        ] {
            let key = KeyPair::generate().expect("a server key");
            let cert = params.signed_by(&key, &ca).expect("a server certificate");
            write(&format!("{}.pem", which.file()), &cert.pem());
            write(&format!("{}.key", which.file()), &key.serialize_pem());
        }

        let key = KeyPair::generate().expect("a client key");
        let cert = leaf_params(&["wlrun-client"], ExtendedKeyUsagePurpose::ClientAuth)
            .signed_by(&key, &ca)
            .expect("the client certificate");
        let client_key_pem = key.serialize_pem();
        write("client.pem", &cert.pem());
        write("client.key", &client_key_pem);
        Pki {
            dir,
            client_key_pem,
        }
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    pub fn other_ca(&self) -> PathBuf {
        self.dir.path().join("other-ca.pem")
    }

    pub fn client_cert(&self) -> PathBuf {
        self.dir.path().join("client.pem")
    }

    pub fn client_key(&self) -> PathBuf {
        self.dir.path().join("client.key")
    }

    pub fn server_cert(&self, which: Server) -> PathBuf {
        self.dir.path().join(format!("{}.pem", which.file()))
    }

    pub fn server_key(&self, which: Server) -> PathBuf {
        self.dir.path().join(format!("{}.key", which.file()))
    }

    /// A server configuration presenting `which`, offering ALPN http/1.1, and, with
    /// `client_auth`, requiring a client certificate signed by the CA.
    pub fn server_config(&self, which: Server, client_auth: bool) -> Arc<ServerConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("TLS 1.2 and 1.3");
        let builder = if client_auth {
            let mut roots = RootCertStore::empty();
            for c in certs(&self.ca()) {
                roots.add(c).expect("the CA is a usable root");
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .expect("a client verifier");
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        let key = PrivateKeyDer::from_pem_file(self.server_key(which)).expect("the server key");
        let mut config = builder
            .with_single_cert(certs(&self.server_cert(which)), key)
            .expect("the server certificate and key go together");
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Arc::new(config)
    }
}

fn certs(path: &Path) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_file_iter(path)
        .expect("a PEM file")
        .collect::<Result<_, _>>()
        .expect("PEM certificates")
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
}

#[derive(Default)]
struct Counts {
    full: AtomicU64,
    resumed: AtomicU64,
    failures: Mutex<Vec<String>>,
}

/// A TLS acceptor in front of a plain server, stopped when dropped.
pub struct TlsFront {
    addr: SocketAddr,
    counts: Arc<Counts>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TlsFront {
    /// Accepts TLS with `config` on a free port of 127.0.0.1 (ready when this returns) and
    /// pipes each connection to `backend`.
    pub fn start(backend: SocketAddr, config: Arc<ServerConfig>) -> TlsFront {
        Self::listen(backend, Some(TlsAcceptor::from(config)))
    }

    /// The same relay without TLS: what the front costs apart from TLS (the benches' control).
    pub fn relay(backend: SocketAddr) -> TlsFront {
        Self::listen(backend, None)
    }

    fn listen(backend: SocketAddr, acceptor: Option<TlsAcceptor>) -> TlsFront {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let addr = listener.local_addr().expect("local address");
        let counts = Arc::new(Counts::default());
        let c = counts.clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("tls-front-{}", addr.port()))
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime for the TLS front");
                runtime.block_on(async move {
                    let listener = TcpListener::from_std(listener).expect("a tokio listener");
                    tokio::select! {
                        _ = accept(listener, acceptor, backend, c) => {}
                        _ = stopped => {}
                    }
                });
            })
            .expect("a thread for the TLS front");
        TlsFront {
            addr,
            counts,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Handshakes completed without a resumed session.
    pub fn full_handshakes(&self) -> u64 {
        self.counts.full.load(Ordering::SeqCst)
    }

    /// Handshakes that resumed an earlier session.
    pub fn resumed_handshakes(&self) -> u64 {
        self.counts.resumed.load(Ordering::SeqCst)
    }

    /// Why each failed handshake failed, as rustls says it.
    pub fn failures(&self) -> Vec<String> {
        self.counts
            .failures
            .lock()
            .map(|f| f.clone())
            .unwrap_or_default()
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn accept(
    listener: TcpListener,
    acceptor: Option<TlsAcceptor>,
    backend: SocketAddr,
    counts: Arc<Counts>,
) {
    while let Ok((mut tcp, _)) = listener.accept().await {
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let counts = counts.clone();
        tokio::spawn(async move {
            let Some(acceptor) = acceptor else {
                if let Ok(mut plain) = TcpStream::connect(backend).await {
                    let _ = plain.set_nodelay(true);
                    let _ = tokio::io::copy_bidirectional_with_sizes(
                        &mut tcp,
                        &mut plain,
                        1 << 16,
                        1 << 16,
                    )
                    .await;
                }
                return;
            };
            let handshake = tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp));
            let mut tls = match handshake.await {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => return counts.failures.lock().unwrap().push(e.to_string()),
                Err(_) => return counts.failures.lock().unwrap().push("timeout".into()),
            };
            match tls.get_ref().1.handshake_kind() {
                Some(HandshakeKind::Resumed) => counts.resumed.fetch_add(1, Ordering::SeqCst),
                _ => counts.full.fetch_add(1, Ordering::SeqCst),
            };
            let Ok(mut plain) = TcpStream::connect(backend).await else {
                return;
            };
            let _ = plain.set_nodelay(true);
            // Large buffers: a TLS record carries up to 16 KiB, the bench pushes MiBs.
            let _ =
                tokio::io::copy_bidirectional_with_sizes(&mut tls, &mut plain, 1 << 16, 1 << 16)
                    .await;
        });
    }
}
