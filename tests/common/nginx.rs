//! A real nginx (Debian's `nginx` package) for the tests and for `cargo bench --bench requests`:
//! each `Nginx` runs its own process in the foreground, as the current user, from nginx.conf
//! beside this file, in its own temporary prefix, on a loopback port it reserves; it is stopped
//! when dropped, also on a panic.
//!
//! Static answers only (see nginx.conf): `POST`/`GET /query` answers 200 `[]` as a ksqlDB pull
//! query would, `/NAME` answers a file put there with `Nginx::serve`, anything else 404. A
//! server that accepts and never answers is a Rust `TcpListener`, not nginx.
//!
//! `Nginx::start_tls(program, cert, key)` also serves HTTPS on a second port (`https_url`),
//! with that certificate (PEM files, e.g. tests/common/tls.rs's `Pki`): the same answers, and
//! `/write` answering 204 as an ILP/HTTP server does, `/close` answering 200 and closing.
//!
//! Tests: `#[path = "common/nginx.rs"] mod nginx;` together with `common/servers.rs`, whose
//! `missing` skips, or under CI=true fails, when nginx is not installed:
//!
//! ```ignore
//! let Some(program) = nginx::program() else {
//!     return missing(nginx::MISSING);
//! };
//! let server = nginx::Nginx::start(&program);
//! let url = server.url(); // http://127.0.0.1:PORT
//! ```
//!
//! Benches: `#[path = "../tests/common/nginx.rs"] mod nginx;`.
#![allow(dead_code)] // each test file and bench uses its own subset

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CONF: &str = include_str!("nginx.conf");

/// What `missing` says when `program()` finds nothing.
pub const MISSING: &str = "nginx (no `nginx` on PATH or in /usr/sbin; apt-get install nginx)";

/// `name` on the PATH, or in the sbin directories a user's PATH often lacks (Debian installs
/// nginx as /usr/sbin/nginx).
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// The nginx binary, if installed.
pub fn program() -> Option<PathBuf> {
    find_program("nginx")
}

/// nginx running in the foreground from a generated config, stopped when dropped.
pub struct Nginx {
    child: Child,
    port: u16,
    tls_port: Option<u16>,
    // Dropped after `drop` has stopped the process, so nginx never sees its prefix vanish.
    dir: tempfile::TempDir,
}

/// The HTTPS server's certificate and key files.
struct TlsFiles<'a> {
    cert: &'a Path,
    key: &'a Path,
}

/// Why one start did not give a ready nginx.
enum Failed {
    /// Someone else bound the reserved port before nginx did: worth another port.
    PortTaken,
    Other(String),
}

impl Nginx {
    /// Starts nginx on a free loopback port and returns once it answers there. Panics, with
    /// nginx's logs, when it cannot start.
    pub fn start(program: &Path) -> Nginx {
        Self::start_with(program, None)
    }

    /// `start`, and HTTPS on a second free port with the certificate chain `cert` and its key
    /// `key` (PEM files readable by nginx's worker).
    pub fn start_tls(program: &Path, cert: &Path, key: &Path) -> Nginx {
        Self::start_with(program, Some(TlsFiles { cert, key }))
    }

    fn start_with(program: &Path, tls: Option<TlsFiles<'_>>) -> Nginx {
        let dir = tempfile::Builder::new()
            .prefix("wlrun-nginx.")
            .tempdir()
            .expect("a temporary directory for nginx");
        // Started as root, nginx's worker runs as `nobody` and must get through the prefix to
        // the files it serves; tempfile makes it 0700.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("the nginx prefix is made readable");
        std::fs::create_dir(dir.path().join("html")).expect("the nginx root is created");
        // The port is free when reserved but may be taken before nginx binds it: a few tries.
        let mut tries = 0;
        loop {
            tries += 1;
            let port = free_port();
            let tls_port = tls.as_ref().map(|_| loop {
                let p = free_port();
                if p != port {
                    break p;
                }
            });
            let https = tls.as_ref().zip(tls_port);
            match Self::try_start(program, dir.path(), port, https) {
                Ok(child) => {
                    return Nginx {
                        child,
                        port,
                        tls_port,
                        dir,
                    }
                }
                Err(Failed::PortTaken) if tries < 5 => continue,
                Err(Failed::PortTaken) => {
                    panic!("nginx found its reserved port taken {tries} times in a row")
                }
                Err(Failed::Other(why)) => panic!("{why}"),
            }
        }
    }

    fn try_start(
        program: &Path,
        prefix: &Path,
        port: u16,
        tls: Option<(&TlsFiles<'_>, u16)>,
    ) -> Result<Child, Failed> {
        let token = prefix
            .file_name()
            .expect("the temporary directory has a name")
            .to_string_lossy()
            .into_owned();
        let conf = prefix.join("nginx.conf");
        let mut text = CONF
            .replace("@PREFIX@", &prefix.display().to_string())
            .replace("@PORT@", &port.to_string())
            .replace("@TOKEN@", &token);
        match tls {
            Some((files, tls_port)) => {
                text = text
                    .replace("@TLS_PORT@", &tls_port.to_string())
                    .replace("@CERT@", &files.cert.display().to_string())
                    .replace("@KEY@", &files.key.display().to_string());
            }
            None => {
                let start = text.find("#TLS{").expect("nginx.conf has a #TLS{ line");
                let end = text.find("#}TLS").expect("nginx.conf has a #}TLS line");
                text.replace_range(start..end + "#}TLS".len(), "");
            }
        }
        std::fs::write(&conf, text).expect("the nginx config is written");
        // Fresh logs each try, so a failure shows only its own.
        let stderr = std::fs::File::create(prefix.join("stderr.log")).expect("a log file");
        std::fs::File::create(prefix.join("error.log")).expect("a log file");
        let mut child = Command::new(program)
            .arg("-p")
            .arg(prefix)
            .arg("-c")
            .arg(&conf)
            .arg("-e")
            .arg(prefix.join("error.log"))
            .args(["-g", "daemon off;"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .map_err(|e| Failed::Other(format!("cannot start {}: {e}", program.display())))?;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                let logs = logs(prefix);
                return Err(if logs.contains("Address already in use") {
                    Failed::PortTaken
                } else {
                    Failed::Other(format!("nginx exited at start ({status}):\n{logs}"))
                });
            }
            if probe(port).is_some_and(|body| body == token) {
                return Ok(child);
            }
            if Instant::now() > deadline {
                stop(&mut child);
                return Err(Failed::Other(format!(
                    "nginx does not answer on 127.0.0.1:{port} after 10 s:\n{}",
                    logs(prefix)
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT`, as a workload's `http "..."` endpoint takes it.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The HTTPS port, with `start_tls`.
    pub fn tls_port(&self) -> Option<u16> {
        self.tls_port
    }

    /// `https://127.0.0.1:TLS_PORT`, with `start_tls`.
    pub fn https_url(&self) -> String {
        let port = self.tls_port.expect("nginx was started with start_tls");
        format!("https://127.0.0.1:{port}")
    }

    /// The master's process id (its worker is a child of it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The temporary prefix: config, logs, and the served files under html/.
    pub fn prefix(&self) -> &Path {
        self.dir.path()
    }

    /// Puts a file that nginx then serves at `/NAME` (readable by its worker also when nginx
    /// was started as root).
    pub fn serve(&self, name: &str, body: &[u8]) {
        let path = self.dir.path().join("html").join(name);
        std::fs::write(&path, body).unwrap_or_else(|e| panic!("cannot write {name}: {e}"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
            .expect("the served file is made readable");
    }

    /// nginx's stderr and error log, for a failure message.
    pub fn logs(&self) -> String {
        logs(self.dir.path())
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// A loopback port that was free a moment ago (nginx cannot be told to pick one itself).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("127.0.0.1 can be bound")
        .port()
}

fn logs(prefix: &Path) -> String {
    ["stderr.log", "error.log"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(prefix.join(f)).ok())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The body of `GET /.wlrun-ready` when it answers 200.
fn probe(port: u16) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    let request = format!(
        "GET /.wlrun-ready HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    );
    s.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200 ").then(|| body.to_string())
}

fn stop(child: &mut Child) {
    // SIGTERM to the master, which stops its worker (a SIGKILL would leave it running).
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_child(child),
        rustix::process::Signal::TERM,
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}
