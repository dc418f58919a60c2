//! The nginx starter of tests/common/nginx.rs against the real nginx: it answers, it stops,
//! and two run side by side. Without nginx this says so and passes, except under CI=true, where
//! it fails.

#[path = "common/nginx.rs"]
mod nginx;
#[path = "common/servers.rs"]
mod servers;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use nginx::Nginx;
use servers::missing;

/// One request on a fresh connection, over a raw socket so that the check does not lean on the
/// HTTP client under test: the status line and the body.
fn exchange(port: u16, method: &str, path: &str, body: &str) -> (String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("nginx accepts");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("a read timeout");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(request.as_bytes())
        .expect("the request is written");
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("nginx answers");
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no end of headers in {answer:?}"));
    let status = head.lines().next().unwrap_or_default().to_string();
    (status, body.to_string())
}

/// Whether the process exists (a zombie still does until reaped, but `Nginx`'s drop reaps).
fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn nginx_answers_stops_on_drop_and_runs_twice_side_by_side() {
    let Some(program) = nginx::program() else {
        return missing(nginx::MISSING);
    };
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| Nginx::start(&program));
        let b = s.spawn(|| Nginx::start(&program));
        (
            a.join().expect("nginx a starts"),
            b.join().expect("nginx b starts"),
        )
    });
    assert_ne!(a.port(), b.port());
    for server in [&a, &b] {
        let port = server.port();
        let logs = || server.logs();
        assert_eq!(
            exchange(port, "GET", "/query", ""),
            ("HTTP/1.1 200 OK".to_string(), "[]".to_string()),
            "GET /query on {port}:\n{}",
            logs()
        );
        // A static file would answer a POST with 405: the bench and the request runs POST.
        assert_eq!(
            exchange(port, "POST", "/query", r#"{"ksql":"SELECT 1;"}"#),
            ("HTTP/1.1 200 OK".to_string(), "[]".to_string()),
            "POST /query on {port}:\n{}",
            logs()
        );
        assert!(
            exchange(port, "GET", "/nothing-here", "")
                .0
                .starts_with("HTTP/1.1 404"),
            "an unknown path on {port}:\n{}",
            logs()
        );
        // Started as root, nginx's worker is another user: it must still read the prefix.
        server.serve("hello.txt", b"hello\n");
        assert_eq!(
            exchange(port, "GET", "/hello.txt", ""),
            ("HTTP/1.1 200 OK".to_string(), "hello\n".to_string()),
            "a served file on {port}:\n{}",
            logs()
        );
    }

    let (port, pid, prefix) = (a.port(), a.pid(), a.prefix().to_path_buf());
    drop(a);
    assert!(!alive(pid), "nginx {pid} still runs after drop");
    assert!(!prefix.exists(), "{} is left behind", prefix.display());
    // The worker goes with its master: nothing answers on the port any more. Another process
    // may take the freed port, but not within these few milliseconds on loopback.
    let deadline = Instant::now() + Duration::from_secs(5);
    while TcpStream::connect(("127.0.0.1", port)).is_ok() {
        assert!(
            Instant::now() < deadline,
            "127.0.0.1:{port} still accepts after nginx stopped"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The other one is untouched by the first one's stop.
    assert_eq!(
        exchange(b.port(), "GET", "/query", "").1,
        "[]",
        "{}",
        b.logs()
    );
}
