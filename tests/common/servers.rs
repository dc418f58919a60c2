//! The real servers the integration tests use, found the same way in every test file: a test
//! whose server is missing says so and passes, except under CI=true, where it fails (CI must
//! not pass by skipping).
#![allow(dead_code)] // each test file uses its own subset

use std::time::Duration;

use tokio_postgres::NoTls;

/// The role and database scripts/test creates.
pub const DEFAULT_PG: &str = "postgres://wlrun:wlrun@127.0.0.1:5432/wlrun";

pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Skips (or, under CI, fails) a test whose server is missing.
pub fn missing(what: &str) {
    assert!(!ci(), "{what} is missing, and CI=true requires it");
    eprintln!("skipped: {what} is missing");
}

/// The PostgreSQL test server: `WLRUN_TEST_PG`, else `DEFAULT_PG`.
pub fn pg_url() -> String {
    std::env::var("WLRUN_TEST_PG").unwrap_or_else(|_| DEFAULT_PG.into())
}

/// PGUSER, PGPASSWORD and PGDATABASE of the test server, for workloads that read them (the
/// shipped ones do).
pub fn pg_env() -> Vec<(String, String)> {
    let url = pg_url();
    let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
    let (auth, place) = rest.split_once('@').unwrap_or(("", rest));
    let (user, pass) = auth.split_once(':').unwrap_or((auth, ""));
    let db = place.split_once('/').map_or("", |(_, d)| d);
    vec![
        ("PGUSER".into(), user.into()),
        ("PGPASSWORD".into(), pass.into()),
        (
            "PGDATABASE".into(),
            db.split('?').next().unwrap_or("").into(),
        ),
    ]
}

/// Whether something listens on the PostgreSQL port, for tests that run the `wlrun` binary.
pub fn pg_up() -> bool {
    let up = std::net::TcpStream::connect("127.0.0.1:5432").is_ok();
    if !up {
        missing("PostgreSQL on 127.0.0.1:5432");
    }
    up
}

/// The test server's URL once a connection succeeds, or `None` when the test should be
/// skipped.
pub async fn pg_server() -> Option<String> {
    const WAIT: Duration = Duration::from_secs(10);
    let url = pg_url();
    let problem = match tokio::time::timeout(WAIT, tokio_postgres::connect(&url, NoTls)).await {
        Ok(Ok(_)) => return Some(url),
        Ok(Err(e)) => format!(
            "{e}: {}",
            std::error::Error::source(&e).map_or_else(String::new, |s| s.to_string())
        ),
        Err(_) => format!("no answer within {WAIT:?}"),
    };
    // The URL may hold a password: name only where it came from.
    let origin = if std::env::var_os("WLRUN_TEST_PG").is_some() {
        "WLRUN_TEST_PG"
    } else {
        DEFAULT_PG
    };
    missing(&format!(
        "PostgreSQL (cannot connect to the test server, {origin}: {problem})"
    ));
    None
}
