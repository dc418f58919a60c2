//! wlrun: a workload DSL compiler and runner for database benchmarks.
//!
//! ARCHITECTURE.md at the repository root maps the stages and layers. In short:
//!
//! - compile side: [`source`] (files, the embedded stdlib) -> [`syntax`] (text -> AST; pest stays
//!   there) -> [`check`] (names, imports, the matrix's cells, hooks, the evaluator) -> [`lower`]
//!   (every cell lowered through the diagnostics sink into [`plan::Plan`]); [`compile`] runs them;
//! - run side: [`gen`] (column batches) -> [`encode`] (bytes) -> [`net`] (connections, HTTP,
//!   errors) -> [`driver`] (ingest), [`client`] (single statements), [`query`] (query runs) ->
//!   [`exec`] (cells, phases, schedules) -> [`report`]; [`shard`] (a run split over processes,
//!   and their barriers) below [`exec`]; [`merge`] (the shards' run directories put
//!   together) above [`report`];
//! - [`cli`]: the `wlrun` command line; `init` writes the starter workloads of `templates/`.
//!
//! The library API exists for the binary and the tests; it makes no stability promise.

/// Writes to standard error, ignoring failures: a closed stderr (`2>&1 | head`) must not turn
/// a result into a panic. Every line goes through the masker: a message may quote a server
/// that said a secret back (`secrets`).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($arg)*);
        let _ = std::io::stderr().write_all($crate::secrets::mask(&text).as_bytes());
    }};
}

macro_rules! sayln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($arg)*) + "\n";
        let _ = std::io::stderr().write_all($crate::secrets::mask(&text).as_bytes());
    }};
}

pub mod check;
pub mod cli;
pub mod client;
pub mod compare;
pub mod compile;
pub mod diag;
pub mod driver;
pub mod encode;
pub mod exec;
pub mod gen;
mod gen_cmd;
pub mod hook;
mod init;
pub mod input;
pub mod k8s;
pub mod lower;
pub mod merge;
pub mod net;
pub mod plan;
pub mod query;
pub mod qwp;
pub mod report;
mod run;
pub mod secrets;
pub mod shard;
pub mod source;
pub mod span;
pub mod sql_text;
pub mod syntax;
pub mod value;

pub use run::run;
