//! SQL text every layer above writes the same way: names bare or quoted by the one rule of
//! `crate::sql_text` (drivers, table setup, counts, query runs). Defined below the compiler,
//! which writes the DDL a plan shows, and re-exported here for the runtime: a column chosen
//! per query instance is written with [`push_ident`] too.

pub use crate::sql_text::{needs_quotes, push_ident, quote_ident};
