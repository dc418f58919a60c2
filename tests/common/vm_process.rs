//! A VictoriaMetrics process on loopback ports (found free by binding port 0) with its own data
//! directory, killed when dropped; `None`, after a note (a failure under CI=true), when it is
//! not installed. Shared by the ingest tests; tests/victoria.rs keeps its own, which logs and
//! waits for the health endpoint.

#![allow(dead_code)] // each test file uses its own subset

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::servers::missing;

pub struct Victoria {
    child: Child,
    pub http: u16,
    pub influx: u16,
    _data: tempfile::TempDir,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Victoria {
    /// `retention` as VictoriaMetrics takes it: `100y` keeps rows of 2016.
    pub fn start(retention: &str) -> Option<Victoria> {
        let data = tempfile::tempdir().unwrap();
        let (http, influx) = (free_port(), free_port());
        let child = Command::new("victoria-metrics")
            .arg(format!("-storageDataPath={}", data.path().display()))
            .arg(format!("-httpListenAddr=127.0.0.1:{http}"))
            .arg(format!("-influxListenAddr=127.0.0.1:{influx}"))
            .arg(format!("-retentionPeriod={retention}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let Ok(child) = child else {
            missing("VictoriaMetrics (victoria-metrics)");
            return None;
        };
        let vm = Victoria {
            child,
            http,
            influx,
            _data: data,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(("127.0.0.1", http)).is_ok()
                && std::net::TcpStream::connect(("127.0.0.1", influx)).is_ok()
            {
                return Some(vm);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("VictoriaMetrics did not start listening within 20 s");
    }
}

impl Drop for Victoria {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
