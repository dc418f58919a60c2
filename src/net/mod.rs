//! The network layer: everything below the drivers (ingest), the admin clients (single
//! statements) and the query transports (query runs) that more than one of them needs.
//! Connections (`tls` for every TCP protocol, in clear or under TLS; `connect`, the connector
//! of an endpoint; `pg`, `sqlite`), the HTTP/1.1 clients (`http` for drivers, counts and `/exec`
//! queries; `http1`, the lean one of request runs), the shared error type and its classes
//! (`error`), and the text helpers their messages and statements use (`fmt`, `sql_text`).
//!
//! It imports only data (`plan`, `value`): nothing above it, so the layers above can all use
//! it without importing each other.

pub mod connect;
pub mod error;
pub mod exposition;
pub mod fmt;
pub mod http;
pub(crate) mod http1;
pub mod pg;
pub mod sql_text;
pub mod sqlite;
pub mod tls;
