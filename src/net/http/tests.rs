use super::*;

#[test]
fn parses_urls() {
    let u = HttpUrl::parse("http://127.0.0.1:9000").unwrap();
    assert_eq!(u.connect_to, "127.0.0.1:9000");
    assert_eq!(u.authority, "127.0.0.1:9000");
    assert_eq!(u.base_path, "");
    let u = HttpUrl::parse("HTTP://db.local/select/0/prometheus/").unwrap();
    assert_eq!(u.connect_to, "db.local:80");
    assert_eq!(u.base_path, "/select/0/prometheus");
    assert_eq!(u.display(), "http://db.local/select/0/prometheus");
    let u = HttpUrl::parse("http://[::1]:8428/x").unwrap();
    assert_eq!(u.connect_to, "[::1]:8428");
    let u = HttpUrl::parse("http://admin:p%40ss@127.0.0.1:9000").unwrap();
    assert_eq!(u.user.as_deref(), Some("admin"));
    assert_eq!(u.password.as_deref(), Some("p@ss"));
    assert_eq!(u.authority, "127.0.0.1:9000");
    assert_eq!(u.display(), "http://127.0.0.1:9000");
    assert!(!u.tls);
    let u = HttpUrl::parse("https://db.example.com/api").unwrap();
    assert!(u.tls);
    assert_eq!(u.connect_to, "db.example.com:443");
    assert_eq!(u.host, "db.example.com");
    assert_eq!(u.display(), "https://db.example.com/api");
    assert_eq!(HttpUrl::parse("https://[::1]:8443").unwrap().host, "::1");
}

#[test]
fn rejects_bad_urls() {
    for (url, says) in [
        ("tcp://127.0.0.1:9009", "not an http:// or https:// URL"),
        ("http://127.0.0.1:0", "not a port"),
        ("http://127.0.0.1:99999", "not a port"),
        ("http://:9000", "no host"),
        ("http://127.0.0.1:9000/write?precision=n", "`path` option"),
        ("http://[::1:9000", "unclosed"),
    ] {
        let e = HttpUrl::parse(url).unwrap_err();
        assert!(e.contains(says), "{url}: {e}");
    }
}

#[test]
fn redacts_passwords() {
    assert_eq!(redact_url("http://u:secret@h:1/p"), "http://u:***@h:1/p");
    assert_eq!(redact_url("http://u@h:1"), "http://u@h:1");
    assert_eq!(redact_url("http://h:1/a@b"), "http://h:1/a@b");
}

#[test]
fn encodes_queries() {
    assert_eq!(
        url_encode("sum(count_over_time({__name__=~\"cpu_.*\"}[1d]))"),
        "sum%28count_over_time%28%7B__name__%3D~%22cpu_.%2A%22%7D%5B1d%5D%29%29"
    );
    assert_eq!(url_encode("a b/é"), "a%20b%2F%C3%A9");
    assert_eq!(with_query("/write", "precision=ns"), "/write?precision=ns");
    assert_eq!(with_query("/query?db=x", "q=1"), "/query?db=x&q=1");
}

#[test]
fn quotes_server_messages() {
    assert_eq!(
        server_message(br#"{"code":"invalid","message":"bad line","line":3,"errorId":"x"}"#),
        "bad line (line 3)"
    );
    assert_eq!(
        server_message(br#"{"status":"error","errorType":"422","error":"parse error"}"#),
        "parse error"
    );
    assert_eq!(server_message(b"  plain text\n"), "plain text");
    let long = "\u{e9}".repeat(MAX_QUOTED_CHARS + 10);
    let q = server_message(long.as_bytes());
    assert_eq!(q.chars().count(), MAX_QUOTED_CHARS + 3);
}

#[test]
fn counts_from_json() {
    assert_eq!(json_count(&serde_json::json!(42)), Ok(42));
    assert_eq!(json_count(&serde_json::json!(42.0)), Ok(42));
    assert!(json_count(&serde_json::json!(-1))
        .unwrap_err()
        .contains("negative"));
    assert!(json_count(&serde_json::json!(1.5))
        .unwrap_err()
        .contains("whole"));
    assert!(json_count(&serde_json::Value::Null)
        .unwrap_err()
        .contains("NULL"));
    assert!(json_count(&serde_json::json!("42"))
        .unwrap_err()
        .contains("not a number"));
}
