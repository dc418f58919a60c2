//! Oracle servers: servers that know the truth a figure claims to measure, because the test
//! sets it (a visibility delay, a service time, a capacity, a failing share, a refusal). Every
//! figure of docs/report-format.md that claims to measure the server is checked against one of
//! these (or is listed there as derived, with its formula). A later feature adds its oracle here.
//!
//! - `fresh`: an ILP/HTTP ingest endpoint whose rows become countable a set delay after they
//!   arrive (or at a set apply rate), counted over HTTP SQL; it logs the DDL it receives and,
//!   with `start_with_tables`, knows which tables exist (QuestDB's "table does not exist").
//! - `load`: HTTP request servers of known capacity.
//! - `intake`: an ILP/HTTP ingest endpoint of known capacity in rows per second, which may
//!   die or go silent after n requests, counting what reached it.
//! - `echo`: an HTTP server answering 401 with the secrets of the request in every form a
//!   server might print them (plain, percent-encoded, base64, Basic credentials decoded).
//! - `pg_stall`: a PostgreSQL-wire proxy in front of the real server that stops passing the
//!   server's answers on after a connection's n-th COPY, counting the COPYs it passed on.
//! - `refuse`: PostgreSQL-wire servers that refuse a password or offer an untrusted
//!   certificate, counting the attempts and TLS handshakes a client made.
//! - `oversize`: a PostgreSQL-wire server that sends one message announcing a size the test
//!   chooses, counting the body bytes a client took before it closed.
//! - `pg_wire`: the pieces of PostgreSQL's wire protocol `refuse` and `oversize` share.
//! - `streaming`: a PostgreSQL-wire server and a QuestDB `/exec` server whose every result
//!   comes on a schedule the test sets (first row after D1, the rest in writes D2 apart),
//!   recording the bytes written per query.
//! - `trickle`: an ILP/TCP endpoint that reads slowly, so a client's writes wait on it, and
//!   counts the bytes it read.
//!
//! Use with `#[path = "common/oracles/mod.rs"] mod oracles;` (std threads, 127.0.0.1, port 0).

#![allow(dead_code)]

pub mod echo;
pub mod fresh;
mod http;
pub mod intake;
pub mod load;
pub mod oversize;
pub mod pg_stall;
mod pg_wire;
pub mod refuse;
pub mod streaming;
pub mod trickle;
