//! `--metrics-push`: the figures pushed to a Prometheus Pushgateway, text format 0.0.4, by
//! `PUT` (which replaces the group's metrics: a phase's families stay whole) every
//! `--metrics-push-interval` and once at the end, for runs shorter than a scrape interval
//! (Kubernetes Jobs). A failed push is a warning: the run goes on, its figures unaffected.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::text::{render, Format, TEXT_004};
use super::Live;

const TIMEOUT: Duration = Duration::from_secs(5);

/// Where a push goes: the Pushgateway's address and the group's path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// HOST:PORT.
    pub authority: String,
    /// `/metrics/job/wlrun/instance/HOST`, or the path the URL gave when it names a group.
    pub path: String,
}

impl Target {
    /// `http://HOST:PORT`, optionally with a path prefix, or a whole group's URL
    /// (`.../metrics/job/NAME/...`); the group is `job=wlrun`, `instance` this machine's
    /// host name, unless the URL names one.
    pub fn parse(url: &str, host: &str) -> Result<Target, String> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            format!("--metrics-push {url}: write http://HOST:PORT (https is not supported)")
        })?;
        let (authority, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        if authority.is_empty() {
            return Err(format!("--metrics-push {url}: no host"));
        }
        let authority = if authority.contains(':') {
            authority.to_string()
        } else {
            format!("{authority}:80")
        };
        let path = path.trim_end_matches('/');
        let path = if path.contains("/metrics/job/") {
            path.to_string()
        } else {
            format!("{path}/metrics/job/wlrun/{}", instance(host))
        };
        Ok(Target { authority, path })
    }
}

/// The `instance` grouping label in a path: as it is, or in the Pushgateway's base64url form
/// (`instance@base64/...`) when it holds anything but safe characters.
fn instance(v: &str) -> String {
    if !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
    {
        format!("instance/{v}")
    } else {
        use base64::Engine as _;
        let b = base64::engine::general_purpose::URL_SAFE.encode(v);
        format!("instance@base64/{b}")
    }
}

/// One push of every phase's figures now.
pub fn push_once(target: &Target, live: &Live) -> Result<(), String> {
    let body = crate::secrets::masked(render(&live.snapshot(), Format::Text004));
    let addr = target
        .authority
        .to_socket_addrs()
        .map_err(|e| format!("{}: {e}", target.authority))?
        .next()
        .ok_or_else(|| format!("{}: no address", target.authority))?;
    let mut conn = TcpStream::connect_timeout(&addr, TIMEOUT).map_err(|e| e.to_string())?;
    conn.set_read_timeout(Some(TIMEOUT))
        .map_err(|e| e.to_string())?;
    conn.set_write_timeout(Some(TIMEOUT))
        .map_err(|e| e.to_string())?;
    let head = format!(
        "PUT {} HTTP/1.1\r\nHost: {}\r\nContent-Type: {TEXT_004}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        target.path,
        target.authority,
        body.len()
    );
    conn.write_all(head.as_bytes())
        .and_then(|()| conn.write_all(body.as_bytes()))
        .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    let _ = conn.take(64 * 1024).read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    let status = answer.split(' ').nth(1).unwrap_or("");
    if status.starts_with('2') {
        Ok(())
    } else {
        let first = answer.lines().next().unwrap_or("no answer");
        let why = answer.split("\r\n\r\n").nth(1).unwrap_or("").trim();
        Err(format!("{first} {why}").trim().to_string())
    }
}

/// Pushes every `every` from a thread until `finish`, which pushes the final figures.
pub struct Pusher {
    target: Target,
    live: Arc<Live>,
    stopping: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Pusher {
    pub fn start(target: Target, live: Arc<Live>, every: Duration) -> Pusher {
        let stopping = Arc::new(AtomicBool::new(false));
        let thread = {
            let (target, live, stopping) = (target.clone(), live.clone(), stopping.clone());
            std::thread::Builder::new()
                .name("wlrun-push".into())
                .spawn(move || {
                    let mut next = Instant::now() + every;
                    // The failure said once until a push succeeds again, not every interval.
                    let mut failing = false;
                    while !stopping.load(Ordering::Relaxed) {
                        if Instant::now() < next {
                            std::thread::sleep(Duration::from_millis(50));
                            continue;
                        }
                        next += every;
                        match push_once(&target, &live) {
                            Ok(()) => failing = false,
                            Err(e) if !failing => {
                                failing = true;
                                sayln!("wlrun: warning: metrics push to {}: {e}", target.authority);
                            }
                            Err(_) => {}
                        }
                    }
                })
                .ok()
        };
        Pusher {
            target,
            live,
            stopping,
            thread,
        }
    }

    /// The last push, of the final figures.
    pub fn finish(mut self) {
        self.stopping.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        match push_once(&self.target, &self.live) {
            Ok(()) => {}
            Err(e) => sayln!(
                "wlrun: warning: final metrics push to {}: {e}",
                self.target.authority
            ),
        }
    }
}
