//! A minimal HTTP/1.1 client for the drivers and admin clients that talk to HTTP endpoints:
//! one keep-alive connection over TCP or TLS (`https://`, through `net::tls`), one request at a
//! time, every wait bounded.
//!
//! What it guarantees, because the numbers a run reports depend on it:
//!
//! - `Response::sent_bytes` is what went onto the socket for the request: request line,
//!   headers and body (and the TLS records around them), counted below TLS as they are
//!   written (not estimated).
//! - A request that fails once any of it may have reached the server (reset, closed before
//!   the answer, timeout) is never retried, and the connection is not used again: every later
//!   request fails with the same cause. A retried POST could store its rows twice. Such a
//!   failure says whether the whole request had been written (`DriverError::written`).
//! - A connection the server closed *between* requests (it answered `Connection: close`, as
//!   VictoriaMetrics does every `-http.connTimeout` (2 minutes), or it dropped an idle
//!   connection) is reopened before the next request and counted in `reconnects()`: nothing
//!   was in flight, so nothing can be lost or doubled, and a run longer than the server's
//!   connection lifetime must not die of it.
//!
//! - `url`: `http://` and `https://` URLs taken apart, redacted, query strings encoded;
//! - `endpoint`: what an endpoint's options say (headers, Basic authentication, timeouts);
//! - `client`: the connection, its requests and the body readers;
//! - `delivery`: whether a request that failed had reached the socket whole;
//! - `text`: server text quoted in messages, and counts read from JSON answers.

mod client;
mod delivery;
mod endpoint;
mod text;
mod url;

pub use client::{BodyReader, Head, HttpClient, Response, MAX_ANSWER_BYTES};
pub(crate) use endpoint::endpoint_headers;
pub use endpoint::{config_error, connect_timeout, option_flag, option_text};
pub use text::{float_count, json_count, quote_server_text, server_message, MAX_QUOTED_CHARS};
pub use url::{redact_url, url_encode, with_query, HttpUrl};

#[cfg(test)]
mod tests;
