//! Data generation from a schema's generator programs (`plan::SchemaPlan`).
//!
//! This module owns the *reference* generator: row at a time, deterministic, documented in
//! docs/rng.md, and the oracle for the columnar engine. It does not own encodings (`encode`)
//! or sending rows anywhere.
//!
//! - `rng`: the counter-based RNG and its samplers (uniform, normal, zipf);
//! - `route`: FNV-1a 64, stream names and THE routing function `shard_of`;
//! - `cell`: the generated value type and column-type coercion;
//! - `format`, `pattern`: the printf subset and the small regular language;
//! - `node`: the compiled generator tree; `program`: `Gen` -> nodes (all errors found here);
//!   `eval`: one node at one row;
//! - `reference`: the rows iterator;
//! - `columnar`: the batch engine, with its compact per-series state in `per_series`.

pub mod batch;
mod cell;
pub mod columnar;
mod error;
mod eval;
mod format;
mod node;
mod pattern;
mod per_series;
mod program;
mod reference;
pub mod rng;
pub mod route;
pub mod to_batch;

pub use cell::{unit_ns, Cell, Kind};
pub use columnar::Columnar;
pub use error::GenError;
pub use program::{series_key_column, ReadFile};
pub use reference::{rows, rows_with, Rows};
pub use route::{fnv1a64, shard_of};

// For the query runner's bind programs (`query::binds`), which draw by the same rules.
pub(crate) use eval::{arith, uuid_v4};
pub(crate) use format::Format;
pub(crate) use node::Op;
pub(crate) use pattern::Pattern;
pub(crate) use program::{constant, read_csv_column};

/// TSBS cpu-only's column names for the unit tests (one copy, shared with the integration
/// tests under tests/).
#[cfg(test)]
#[path = "../../tests/common/tsbs_names.rs"]
pub(crate) mod tsbs_names;

#[cfg(test)]
mod tests;
