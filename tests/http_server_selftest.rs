//! The recording HTTP test server (tests/common/http_server.rs) checked with a plain blocking
//! client written here: keep-alive, what it records, configured answers and their changes
//! while it runs, waits and stalls, ksqlDB mode, closing without an answer, shutdown.

#[path = "common/http_server.rs"]
mod http_server;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::{json, Value as Json};

use http_server::{item_of, Behaviour, Ksql, ServerHandle, KSQL_CONTENT_TYPE, KSQL_SCHEMA};

/// One answer as read off the socket.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    chunked: bool,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn json(&self) -> Json {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.text()))
    }
}

/// A blocking HTTP/1.1 client on one connection.
struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).expect("connect to the test server");
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        Client {
            stream,
            buf: Vec::new(),
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write a request");
    }

    /// More bytes into `buf`; false at end of stream (or a reset).
    fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 8192];
        match self.stream.read(&mut chunk) {
            Ok(0) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                true
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => false,
            Err(e) => panic!("read: {e}"),
        }
    }

    fn line(&mut self) -> String {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line = String::from_utf8(self.buf[..i].to_vec()).unwrap();
                self.buf.drain(..i + 2);
                return line;
            }
            assert!(self.fill(), "the connection closed mid-answer");
        }
    }

    fn take(&mut self, n: usize) -> Vec<u8> {
        while self.buf.len() < n {
            assert!(self.fill(), "the connection closed mid-body");
        }
        self.buf.drain(..n).collect()
    }

    /// The next answer, `None` if the server closed the connection instead.
    fn answer(&mut self) -> Option<Answer> {
        self.answer_to(false)
    }

    /// The next answer; to a HEAD request (`head`) it has no body whatever its headers say.
    fn answer_to(&mut self, head: bool) -> Option<Answer> {
        if self.buf.is_empty() && !self.fill() {
            return None;
        }
        let status_line = self.line();
        let mut parts = status_line.splitn(3, ' ');
        assert_eq!(parts.next(), Some("HTTP/1.1"), "{status_line}");
        let status: u16 = parts.next().unwrap().parse().unwrap();
        let mut headers = Vec::new();
        loop {
            let line = self.line();
            if line.is_empty() {
                break;
            }
            let (k, v) = line.split_once(':').expect("a header line");
            headers.push((k.to_ascii_lowercase(), v.trim().to_string()));
        }
        let mut answer = Answer {
            status,
            headers,
            body: Vec::new(),
            chunked: false,
        };
        if head {
            return Some(answer);
        }
        if answer.header("transfer-encoding") == Some("chunked") {
            answer.chunked = true;
            loop {
                let size = usize::from_str_radix(&self.line(), 16).expect("a chunk size");
                if size == 0 {
                    assert_eq!(self.line(), "", "no trailers");
                    break;
                }
                let data = self.take(size);
                answer.body.extend_from_slice(&data);
                assert_eq!(self.take(2), b"\r\n");
            }
        } else if let Some(n) = answer.header("content-length") {
            let n: usize = n.parse().unwrap();
            answer.body = self.take(n);
        }
        Some(answer)
    }

    /// A request with a `Content-Length` body; its answer.
    fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Answer {
        let mut head = format!("{method} {path} HTTP/1.1\r\nhost: test\r\n");
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if !body.is_empty() || method == "POST" {
            head.push_str(&format!("content-length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body);
        self.send(&bytes);
        self.answer().expect("an answer")
    }

    fn get(&mut self, path: &str) -> Answer {
        self.request("GET", path, &[], b"")
    }

    /// True once the server has closed the connection (no more bytes come).
    fn closed(&mut self) -> bool {
        self.buf.is_empty() && !self.fill()
    }
}

fn ksql_body(key: i64) -> Vec<u8> {
    json!({
        "ksql": format!("SELECT * FROM ORDERS_TABLE WHERE ORDERID = {key};"),
        "streamsProperties": {},
    })
    .to_string()
    .into_bytes()
}

fn post_ksql(c: &mut Client, path: &str, body: &[u8]) -> Answer {
    c.request(
        "POST",
        path,
        &[
            ("content-type", KSQL_CONTENT_TYPE),
            ("accept", KSQL_CONTENT_TYPE),
        ],
        body,
    )
}

#[test]
fn keep_alive_requests_share_a_connection_and_are_recorded_whole() {
    let server = ServerHandle::start(Behaviour::ok());
    let mut a = Client::connect(server.addr);
    let first = a.get("/one?x=1&y=two");
    assert_eq!(first.status, 200);
    assert!(first.body.is_empty());
    assert_eq!(first.header("content-length"), Some("0"));
    assert_eq!(first.header("connection"), None);

    a.request(
        "POST",
        "/two",
        &[
            ("X-Custom-Header", "Some Value"),
            ("content-type", "application/json"),
        ],
        br#"{"a":1}"#,
    );
    // A chunked body in pieces that arrive apart, with a chunk extension and a trailer.
    a.send(
        b"PUT /three HTTP/1.1\r\nhost: test\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhel",
    );
    std::thread::sleep(Duration::from_millis(30));
    a.send(b"lo\r\n6\r\n world\r\n0\r\nx-trailer: t\r\n\r\n");
    assert_eq!(a.answer().expect("an answer").status, 200);
    assert_eq!(server.connections(), 1);
    assert_eq!(server.open_connections(), 1);

    let mut b = Client::connect(server.addr);
    b.get("/four");
    assert_eq!(server.connections(), 2);
    assert_eq!(server.count(), 4);

    let r = server.requests();
    let conns: Vec<usize> = r.iter().map(|r| r.conn).collect();
    assert_eq!(conns, [0, 0, 0, 1]);
    let seqs: Vec<usize> = r.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, [0, 1, 2, 3]);
    assert_eq!(r[0].method, "GET");
    assert_eq!(r[0].path, "/one?x=1&y=two");
    assert_eq!(r[0].path_only(), "/one");
    assert_eq!(r[0].version, "HTTP/1.1");
    assert!(r[0].body.is_empty());
    assert_eq!(r[1].method, "POST");
    assert_eq!(r[1].path, "/two");
    assert_eq!(r[1].header("x-custom-header"), Some("Some Value"));
    assert!(r[1]
        .headers
        .contains(&("x-custom-header".to_string(), "Some Value".to_string())));
    assert_eq!(r[1].body, br#"{"a":1}"#);
    assert!(!r[1].chunked);
    assert_eq!(r[2].method, "PUT");
    assert_eq!(r[2].body, b"hello world");
    assert!(r[2].chunked);
    assert!(
        r[2].at >= r[1].at + Duration::from_millis(25),
        "arrival times"
    );
    assert!(r[3].at >= r[2].at);
    assert!(r.iter().all(|r| !r.closed && r.waited.is_zero()));

    drop(a);
    drop(b);
    let started = Instant::now();
    while server.open_connections() > 0 && started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(server.open_connections(), 0);
}

#[test]
fn status_body_and_headers_are_as_configured_and_change_while_running() {
    let server = ServerHandle::start(
        Behaviour::ok()
            .with_status(201)
            .with_body("created!")
            .with_content_type("text/plain")
            .with_header("x-server", "test"),
    );
    let mut c = Client::connect(server.addr);
    let a = c.request("POST", "/write", &[], b"row");
    assert_eq!(a.status, 201);
    assert_eq!(a.text(), "created!");
    assert_eq!(a.header("content-type"), Some("text/plain"));
    assert_eq!(a.header("x-server"), Some("test"));

    // The same connection sees the new behaviour.
    server.set_behaviour(
        Behaviour::ok()
            .with_json(&json!({"error": "overloaded"}))
            .with_status(503),
    );
    let a = c.get("/write");
    assert_eq!(a.status, 503);
    assert_eq!(a.json(), json!({"error": "overloaded"}));
    assert_eq!(a.header("content-type"), Some("application/json"));
    assert_eq!(a.header("x-server"), None);

    server.update(|b| b.status = 429);
    let a = c.get("/write");
    assert_eq!(a.status, 429);
    assert_eq!(a.json(), json!({"error": "overloaded"}));
    assert_eq!(server.behaviour().status, 429);

    // HEAD gets the head only, and the connection goes on.
    c.send(b"HEAD /write HTTP/1.1\r\nhost: test\r\n\r\n");
    let a = c.answer_to(true).expect("an answer");
    assert!(a.body.is_empty());
    assert_eq!(a.status, 429);
    assert_eq!(a.header("content-length"), Some("22"));
    assert_eq!(c.get("/write").status, 429);
    assert_eq!(server.connections(), 1);
}

#[test]
fn connection_close_and_http_1_0_end_the_connection() {
    let server = ServerHandle::start(Behaviour::ok().with_body("x"));
    let mut c = Client::connect(server.addr);
    let a = c.request("GET", "/", &[("Connection", "close")], b"");
    assert_eq!(a.header("connection"), Some("close"));
    assert_eq!(a.text(), "x");
    assert!(c.closed());

    let mut c = Client::connect(server.addr);
    c.send(b"GET / HTTP/1.0\r\n\r\n");
    assert_eq!(c.answer().expect("an answer").status, 200);
    assert!(c.closed());

    let mut c = Client::connect(server.addr);
    c.send(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert_eq!(c.answer().expect("an answer").status, 200);
    assert_eq!(c.get("/").status, 200);
    assert_eq!(server.connections(), 3);
}

#[test]
fn expect_continue_gets_100_before_the_body() {
    let server = ServerHandle::start(Behaviour::ok().with_status(204));
    let mut c = Client::connect(server.addr);
    c.send(b"POST /up HTTP/1.1\r\nhost: t\r\nexpect: 100-continue\r\ncontent-length: 4\r\n\r\n");
    let cont = c.answer().expect("an interim answer");
    assert_eq!(cont.status, 100);
    c.send(b"data");
    assert_eq!(c.answer().expect("an answer").status, 204);
    assert_eq!(server.requests()[0].body, b"data");
}

#[test]
fn a_malformed_request_gets_400_and_is_not_recorded() {
    let server = ServerHandle::start(Behaviour::ok());
    let mut c = Client::connect(server.addr);
    c.send(b"GARBAGE\r\n\r\n");
    let a = c.answer().expect("an answer");
    assert_eq!(a.status, 400);
    assert!(c.closed());
    let mut c = Client::connect(server.addr);
    c.send(b"POST / HTTP/1.1\r\ncontent-length: nine\r\n\r\n");
    assert_eq!(c.answer().expect("an answer").status, 400);
    assert_eq!(server.count(), 0);
}

#[test]
fn every_nth_request_stalls_and_the_others_do_not() {
    const STALL: Duration = Duration::from_millis(300);
    let server = ServerHandle::start(Behaviour::ok().with_stall_every(4, STALL));
    let mut c = Client::connect(server.addr);
    let mut slow = Vec::new();
    for i in 1..=9 {
        let started = Instant::now();
        assert_eq!(c.get("/").status, 200);
        let took = started.elapsed();
        // An unstalled answer is much quicker than a stall, even on a busy machine.
        if took >= STALL {
            slow.push(i);
        }
    }
    assert_eq!(slow, [4, 8]);
    let waited: Vec<Duration> = server.requests().iter().map(|r| r.waited).collect();
    assert_eq!(waited[3], STALL);
    assert_eq!(waited[7], STALL);
    assert!(waited.iter().filter(|w| w.is_zero()).count() == 7);

    // The counts start again with a new behaviour; a fixed delay adds to every request.
    server.set_behaviour(
        Behaviour::ok()
            .with_delay(Duration::from_millis(60))
            .with_stall_every(2, STALL),
    );
    let started = Instant::now();
    c.get("/");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(60) && took < STALL,
        "{took:?}"
    );
    let started = Instant::now();
    c.get("/");
    assert!(started.elapsed() >= STALL + Duration::from_millis(60));
}

#[test]
fn a_stall_does_not_hold_up_other_connections() {
    let server = ServerHandle::start(Behaviour::ok().with_stall_every(1, Duration::from_secs(3)));
    let mut stalled = Client::connect(server.addr);
    stalled.send(b"GET /slow HTTP/1.1\r\nhost: t\r\n\r\n");
    assert!(server.wait_for(1, Duration::from_secs(5)));
    server.set_behaviour(Behaviour::ok());
    let started = Instant::now();
    let mut other = Client::connect(server.addr);
    assert_eq!(other.get("/fast").status, 200);
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[test]
fn ksql_query_answers_a_header_and_the_row_as_ksqldb_does() {
    let server = ServerHandle::start(Behaviour::ksql());
    let mut c = Client::connect(server.addr);
    let a = post_ksql(&mut c, "/query", &ksql_body(42));
    assert_eq!(a.status, 200, "{}", a.text());
    assert_eq!(a.header("content-type"), Some(KSQL_CONTENT_TYPE));
    assert!(a.chunked, "ksqlDB streams /query answers chunked");
    let text = a.text();
    assert!(text.starts_with("[{\"header\":"), "{text}");
    assert!(
        text.contains("}},\n{\"row\""),
        "elements separated by `,\\n`: {text}"
    );
    assert!(text.ends_with("]}}]"), "{text}");
    let v = a.json();
    let elements = v.as_array().expect("a JSON array");
    assert_eq!(elements.len(), 2, "{v}");
    let header = &elements[0]["header"];
    assert!(
        header["queryId"].as_str().is_some_and(|q| !q.is_empty()),
        "{v}"
    );
    assert_eq!(header["schema"], json!(KSQL_SCHEMA));
    assert_eq!(
        header["schema"],
        json!("`ORDERID` INTEGER KEY, `ITEMID` STRING")
    );
    assert_eq!(elements[1], json!({"row": {"columns": [42, "Item_43"]}}));
    assert_eq!(item_of(42), "Item_43");
    assert_eq!(item_of(998), "Item_999");
    assert_eq!(item_of(999), "Item_1");

    // Keys outside 0..orders have no row; lower-case keywords and no `;` are fine.
    for body in [
        ksql_body(100_000),
        ksql_body(-1),
        json!({"ksql": "select * from orders_table where orderid=7"})
            .to_string()
            .into_bytes(),
    ] {
        let a = post_ksql(&mut c, "/query", &body);
        assert_eq!(a.status, 200, "{}", a.text());
        let v = a.json();
        let n = if v.to_string().contains("\"columns\":[7,") {
            2
        } else {
            1
        };
        assert_eq!(v.as_array().unwrap().len(), n, "{v}");
    }
    assert_eq!(server.connections(), 1);

    // A smaller table, without chunking.
    server.set_behaviour(Behaviour::ksql_with(Ksql {
        orders: 10,
        chunked: false,
        ..Ksql::default()
    }));
    let a = post_ksql(&mut c, "/query", &ksql_body(9));
    assert!(!a.chunked);
    assert_eq!(a.json()[1], json!({"row": {"columns": [9, "Item_10"]}}));
    let a = post_ksql(&mut c, "/query", &ksql_body(10));
    assert_eq!(a.json().as_array().unwrap().len(), 1);
}

#[test]
fn ksql_errors_have_ksqldb_shapes() {
    let server = ServerHandle::start(Behaviour::ksql());
    let mut c = Client::connect(server.addr);

    let select = "SELECT * FROM ORDERS_TABLE WHERE ORDERID = 1;";
    let a = post_ksql(&mut c, "/ksql", &ksql_body(1));
    assert_eq!(a.status, 400);
    assert_eq!(a.header("content-type"), Some(KSQL_CONTENT_TYPE));
    let v = a.json();
    assert_eq!(v["@type"], "statement_error");
    assert_eq!(v["error_code"], 40002);
    assert!(v["message"].as_str().unwrap().starts_with(
        "The following statement types should be issued to the websocket endpoint '/query':"
    ));
    assert_eq!(v["message"], http_server::KSQL_QUERY_ENDPOINT_MESSAGE);
    assert_eq!(v["statementText"], select);
    assert_eq!(v["entities"], json!([]));

    let a = post_ksql(&mut c, "/ksql", br#"{"ksql":"LIST STREAMS;"}"#);
    assert_eq!(a.status, 200);
    assert_eq!(a.json()[0]["@type"], "currentStatus");

    let a = post_ksql(&mut c, "/query", br#"{"ksql":"  ","streamsProperties":{}}"#);
    assert_eq!(a.status, 400);
    assert_eq!(
        a.json(),
        json!({
            "@type": "generic_error",
            "error_code": 40000,
            "message": "\"ksql\" field must be populated",
        })
    );
    let a = post_ksql(&mut c, "/query", br#"{"streamsProperties":{}}"#);
    assert_eq!(a.json()["error_code"], 40000);
    let a = post_ksql(&mut c, "/query", b"not json");
    assert_eq!(
        (a.status, a.json()["error_code"].clone()),
        (400, json!(40000))
    );

    for ksql in [
        "SELEKT * FROM ORDERS_TABLE WHERE ORDERID = 1;",
        "SELECT * FROM ORDERS_TABLE WHERE ORDERID = 'x';",
        "SELECT * FROM ORDERS_TABLE WHERE ITEMID = 1;",
        "SELECT * FROM NO_SUCH_TABLE WHERE ORDERID = 1;",
    ] {
        let a = post_ksql(
            &mut c,
            "/query",
            json!({"ksql": ksql}).to_string().as_bytes(),
        );
        assert_eq!(a.status, 400, "{ksql}");
        let v = a.json();
        assert_eq!(v["@type"], "statement_error", "{ksql}");
        assert_eq!(v["error_code"], 40001, "{ksql}");
        assert_eq!(v["statementText"], ksql);
        assert!(!v["message"].as_str().unwrap().is_empty());
    }

    let a = c.get("/nowhere");
    assert_eq!(a.status, 404);
    assert_eq!(a.json()["@type"], "generic_error");
    assert_eq!(a.json()["error_code"], 40400);
    let a = c.get("/query");
    assert_eq!(a.status, 405);
    let a = c.get("/info");
    assert_eq!(a.json()["KsqlServerInfo"]["serverStatus"], "RUNNING");
    // Every error left the connection usable.
    assert_eq!(server.connections(), 1);
}

#[test]
fn ksql_mid_stream_errors_come_at_the_configured_rate() {
    let server = ServerHandle::start(Behaviour::ksql_with(Ksql {
        error_every: 3,
        ..Ksql::default()
    }));
    let mut c = Client::connect(server.addr);
    let mut failed = Vec::new();
    for i in 1..=6 {
        let a = post_ksql(&mut c, "/query", &ksql_body(i));
        assert_eq!(a.status, 200);
        let v = a.json();
        let elements = v.as_array().unwrap();
        let last = elements.last().unwrap();
        if let Some(e) = last.get("errorMessage") {
            assert_eq!(e["@type"], "generic_error");
            assert_eq!(e["error_code"], 50000);
            assert!(a.text().ends_with("}}]\n"));
            // The row came before the error.
            assert_eq!(elements[1]["row"]["columns"][0], i);
            failed.push(i);
        } else {
            assert_eq!(elements.len(), 2);
        }
    }
    assert_eq!(failed, [3, 6]);
}

#[test]
fn ksql_keys_are_parsed_from_recorded_bodies() {
    let server = ServerHandle::start(Behaviour::ksql());
    let mut a = Client::connect(server.addr);
    let mut b = Client::connect(server.addr);
    for k in [3, 1, 2] {
        post_ksql(&mut a, "/query", &ksql_body(k));
    }
    post_ksql(&mut b, "/query", &ksql_body(77));
    post_ksql(&mut a, "/query", &ksql_body(5));
    b.get("/info");
    assert_eq!(server.ksql_keys(), [3, 1, 2, 77, 5]);
    let by = server.ksql_keys_by_connection();
    assert_eq!(by.get(&0), Some(&vec![3, 1, 2, 5]));
    assert_eq!(by.get(&1), Some(&vec![77]));
    let r = server.requests();
    assert_eq!(
        r[0].ksql().as_deref(),
        Some("SELECT * FROM ORDERS_TABLE WHERE ORDERID = 3;")
    );
    assert_eq!(r[0].header("accept"), Some(KSQL_CONTENT_TYPE));
    assert_eq!(r[5].ksql_key(), None);
}

#[test]
fn close_mode_reads_the_request_and_answers_nothing() {
    let server = ServerHandle::start(Behaviour::close());
    let mut c = Client::connect(server.addr);
    c.send(b"POST /x HTTP/1.1\r\nhost: t\r\ncontent-length: 3\r\n\r\nabc");
    assert!(c.answer().is_none(), "closed without an answer");
    let r = server.requests();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].body, b"abc");
    assert!(r[0].closed);

    // Every 2nd request closes; the others are answered.
    server.set_behaviour(Behaviour::ok().with_close_every(2));
    let mut c = Client::connect(server.addr);
    assert_eq!(c.get("/").status, 200);
    c.send(b"GET / HTTP/1.1\r\nhost: t\r\n\r\n");
    assert!(c.answer().is_none());
    let mut c = Client::connect(server.addr);
    assert_eq!(c.get("/").status, 200);
    assert_eq!(server.connections(), 3);
}

#[test]
fn raw_answers_are_sent_as_given() {
    let server = ServerHandle::start(Behaviour::raw(
        "HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\ncut short",
        true,
    ));
    let mut c = Client::connect(server.addr);
    c.send(b"GET / HTTP/1.1\r\nhost: t\r\n\r\n");
    let mut all = Vec::new();
    c.stream.read_to_end(&mut all).unwrap();
    assert_eq!(
        all,
        b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\ncut short"
    );
}

#[test]
fn many_keep_alive_connections_under_load_are_all_answered_and_recorded() {
    const CONNECTIONS: usize = 16;
    const EACH: i64 = 300;
    let server = ServerHandle::start(Behaviour::ksql());
    let started = Instant::now();
    let threads: Vec<_> = (0..CONNECTIONS as i64)
        .map(|t| {
            let addr = server.addr;
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                for i in 0..EACH {
                    let key = t * EACH + i;
                    let a = post_ksql(&mut c, "/query", &ksql_body(key));
                    assert_eq!(a.status, 200);
                    assert_eq!(a.json()[1]["row"]["columns"][0], key);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a client thread");
    }
    let took = started.elapsed();
    let total = CONNECTIONS * EACH as usize;
    assert_eq!(server.count(), total);
    assert_eq!(server.connections(), CONNECTIONS);
    let by = server.ksql_keys_by_connection();
    assert_eq!(by.len(), CONNECTIONS);
    for keys in by.values() {
        // Each connection's keys arrive in the order its client sent them.
        let first = keys[0];
        assert_eq!(first % EACH, 0);
        assert_eq!(*keys, (first..first + EACH).collect::<Vec<_>>());
    }
    eprintln!("{total} requests in {took:?}");
}

#[test]
fn dropping_the_server_closes_its_connections() {
    let server = ServerHandle::start(Behaviour::ok());
    assert!(server.url().starts_with("http://127.0.0.1:"));
    assert_eq!(server.url(), format!("http://{}", server.addr));
    let mut c = Client::connect(server.addr);
    assert_eq!(c.get("/").status, 200);
    drop(server);
    assert!(c.closed());
}
