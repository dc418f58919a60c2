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
//! - `node`: the compiled generator tree, one for schema columns and query binds alike;
//!   `compile`: `Gen` -> nodes (all errors found here); `program`: a schema's columns compiled
//!   and ordered; `eval`: one node at one draw site (a row, a query instance);
//! - `ycsb`: YCSB's key choosers, key names and field values, as YCSB's Java computes them;
//! - `reference`: the rows iterator;
//! - `columnar`: the batch engine, with its compact per-series state in `per_series`.

pub mod batch;
mod cell;
pub mod columnar;
mod compile;
mod disorder;
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
pub mod ycsb;

pub use cell::{unit_ns, Cell, Kind};
pub use columnar::Columnar;
pub use error::GenError;
pub use program::{series_key_column, ReadFile};
pub use reference::{rows, rows_with, Rows};
pub use route::{fnv1a64, shard_of};

// For the query runner's bind programs (`query::binds`): the same nodes, drawn by the same
// function, at a query instance.
pub(crate) use compile::{Compiler, Within};
#[cfg(test)]
pub(crate) use eval::sample_indices;
pub(crate) use eval::{uuid_v4, Ctx};
pub(crate) use node::{Node, Shape, V};

/// TSBS cpu-only's column names for the unit tests (one copy, shared with the integration
/// tests under tests/).
#[cfg(test)]
#[path = "../../tests/common/tsbs_names.rs"]
pub(crate) mod tsbs_names;

#[cfg(test)]
mod tests;
