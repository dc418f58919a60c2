//! Oracle servers: servers that know the truth a figure claims to measure, because the test
//! sets it (a visibility delay, a service time, a capacity, a failing share, a refusal). Every
//! figure of docs/report-format.md that claims to measure the server is checked against one of
//! these (or is listed there as derived, with its formula). A later feature adds its oracle here.
//!
//! - `fresh`: an ILP/HTTP ingest endpoint whose rows become countable a set delay after they
//!   arrive (or at a set apply rate), counted over HTTP SQL; it logs the DDL it receives and,
//!   with `start_with_tables`, knows which tables exist (QuestDB's "table does not exist").
//! - `load`: HTTP request servers of known capacity.
//! - `intake`: an ILP/HTTP ingest endpoint of known capacity in rows per second.
//! - `refuse`: PostgreSQL-wire servers that refuse a password or offer an untrusted
//!   certificate, counting the attempts and TLS handshakes a client made.
//! - `trickle`: an ILP/TCP endpoint that reads slowly, so a client's writes wait on it, and
//!   counts the bytes it read.
//!
//! Use with `#[path = "common/oracles/mod.rs"] mod oracles;` (std threads, 127.0.0.1, port 0).

#![allow(dead_code)]

pub mod fresh;
mod http;
pub mod intake;
pub mod load;
pub mod refuse;
pub mod trickle;
