//! InfluxDB 1.x (Debian 12's `influxdb`, 1.6) started by hand for one test: its own config
//! file, meta, data and WAL directories and loopback ports, since the package's systemd unit
//! is not usable in a test (nor, on most CI machines, at all). `influxd` not on PATH skips the
//! test, or fails it under CI=true (`servers::missing`).
#![allow(dead_code)] // each test file uses its own subset

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::servers::missing;

/// One `influxd` process; killed (and its directories removed) when dropped.
pub struct Influx {
    child: Child,
    pub http: u16,
    dir: tempfile::TempDir,
}

fn influxd() -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|d| d.join("influxd"))
        .find(|p| p.is_file())
}

/// Two distinct free loopback ports: both listeners are held until both are known.
fn two_ports() -> (u16, u16) {
    let a = TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
    let b = TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
    let ports = (
        a.local_addr().expect("bound").port(),
        b.local_addr().expect("bound").port(),
    );
    drop((a, b));
    ports
}

impl Influx {
    /// A fresh server, or `None` (after `missing`) without `influxd`.
    pub fn start() -> Option<Influx> {
        let Some(bin) = influxd() else {
            missing("InfluxDB (`influxd`; apt-get install influxdb)");
            return None;
        };
        let dir = tempfile::tempdir().expect("a temporary directory");
        // The HTTP API and the RPC service (backup and restore, 8088 by default): both would
        // otherwise take a well-known port that another server may hold.
        let (http, rpc) = two_ports();
        let d = dir.path();
        let config = format!(
            "reporting-disabled = true\n\
             bind-address = \"127.0.0.1:{rpc}\"\n\
             [meta]\n  dir = \"{meta}\"\n\
             [data]\n  dir = \"{data}\"\n  wal-dir = \"{wal}\"\n  query-log-enabled = false\n\
             [monitor]\n  store-enabled = false\n\
             [http]\n  bind-address = \"127.0.0.1:{http}\"\n  log-enabled = false\n\
             [continuous_queries]\n  enabled = false\n",
            meta = d.join("meta").display(),
            data = d.join("data").display(),
            wal = d.join("wal").display(),
        );
        let conf = d.join("influxdb.conf");
        std::fs::write(&conf, config).expect("the config file");
        let log = std::fs::File::create(d.join("influxd.log")).expect("a log file");
        let child = Command::new(bin)
            .arg("run")
            .arg("-config")
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log file"))
            .stderr(log)
            .spawn()
            .expect("influxd starts");
        let mut server = Influx { child, http, dir };
        server.wait_ready();
        Some(server)
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.http)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("influxd.log")).unwrap_or_default()
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("influxd exited ({status}):\n{}", self.log());
            }
            if self
                .request("GET", "/ping", b"")
                .is_ok_and(|(status, _)| status == 204)
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "influxd did not answer /ping within 30 s:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// One HTTP/1.0 request (the server closes after the answer): status and body.
    fn request(&self, method: &str, target: &str, body: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
        let mut s = TcpStream::connect(("127.0.0.1", self.http))?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        write!(
            s,
            "{method} {target} HTTP/1.0\r\nHost: 127.0.0.1:{}\r\nContent-Length: {}\r\n\r\n",
            self.http,
            body.len()
        )?;
        s.write_all(body)?;
        let mut answer = Vec::new();
        s.read_to_end(&mut answer)?;
        let split = answer
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or_else(|| std::io::Error::other("no end of headers"))?;
        let head = String::from_utf8_lossy(&answer[..split]).into_owned();
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("no status in {head:?}")))?;
        Ok((status, answer[split + 4..].to_vec()))
    }

    /// Runs InfluxQL against `db` (POST, so statements that change something are taken too)
    /// and returns the answer's JSON; panics on a transport error or an error in the answer.
    pub fn influxql(&self, db: &str, q: &str) -> Value {
        let target = format!("/query?db={}&q={}", encode(db), encode(q));
        let (status, body) = self
            .request("POST", &target, b"")
            .unwrap_or_else(|e| panic!("InfluxQL `{q}`: {e}"));
        let json: Value = serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("InfluxQL `{q}`: not JSON ({e}), HTTP {status}"));
        assert!(
            status == 200 && json["results"][0].get("error").is_none(),
            "InfluxQL `{q}`: HTTP {status}: {json}"
        );
        json
    }

    /// Writes line protocol into `db` (nanosecond timestamps).
    pub fn write(&self, db: &str, lines: &str) {
        let target = format!("/write?db={}", encode(db));
        let (status, body) = self
            .request("POST", &target, lines.as_bytes())
            .expect("the write is answered");
        assert_eq!(status, 204, "{}", String::from_utf8_lossy(&body));
    }

    /// The measurements of `db`, sorted as InfluxDB lists them.
    pub fn measurements(&self, db: &str) -> Vec<String> {
        let json = self.influxql(db, "SHOW MEASUREMENTS");
        json["results"][0]["series"][0]["values"]
            .as_array()
            .map(|rows| {
                rows.iter()
                    .filter_map(|r| r[0].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for Influx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Percent-encodes everything but unreserved characters, as a query parameter.
fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
