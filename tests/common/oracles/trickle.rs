//! An ILP/TCP endpoint that takes bytes slowly: each connection reads `per_read` bytes, then
//! sleeps `pause`, so a client with big batches soon has its socket buffers full and every
//! write waits on the server. It counts what it read, so a test knows when the first bytes of
//! a run have arrived (a run under way) without reading the client's output.
//!
//! Plain threads, one per connection, on an ephemeral port of 127.0.0.1; dropping the handle
//! stops accepting and reading. Part of `oracles` (tests/common/oracles/mod.rs).

#![allow(dead_code)]

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

pub struct TrickleServer {
    pub addr: SocketAddr,
    bytes: Arc<AtomicU64>,
    connections: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl TrickleServer {
    pub fn start(per_read: usize, pause: Duration) -> TrickleServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let bytes = Arc::new(AtomicU64::new(0));
        let connections = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (b, c, st) = (bytes.clone(), connections.clone(), stop.clone());
        thread::spawn(move || {
            for conn in listener.incoming() {
                if st.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(mut conn) = conn else { continue };
                c.fetch_add(1, Ordering::Relaxed);
                let (b, st) = (b.clone(), st.clone());
                thread::spawn(move || {
                    let mut buf = vec![0u8; per_read];
                    while !st.load(Ordering::Relaxed) {
                        match conn.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => b.fetch_add(n as u64, Ordering::Relaxed),
                        };
                        thread::sleep(pause);
                    }
                });
            }
        });
        TrickleServer {
            addr,
            bytes,
            connections,
            stop,
        }
    }

    /// A target `sink` on this server: ILP over TCP in, nothing to count with.
    pub fn target(&self) -> String {
        format!("target sink {{ ilp_tcp \"tcp://{}\" }}\n", self.addr)
    }

    /// Bytes read so far, over every connection.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }
}

impl Drop for TrickleServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}
