//! The column builder of the PostgreSQL driver's tests, written once for its unit tests
//! (src/driver/pg/tests.rs) and tests/pg.rs. Unit tests cannot use a test crate's helpers nor
//! an integration test `#[cfg(test)]` items, so both include this file by `#[path]`; it names
//! the batch types through the including module (`super::`), which imports them from
//! `crate::gen::batch` or `wlrun::gen::batch`.

use super::{Arc, ColumnMeta, Dictionary, Physical};

/// A column `name` of DSL type `ty`: the timestamp when `physical` is one (in nanoseconds), a
/// field otherwise, with the dictionary `dict` for a symbol column.
pub fn col(name: &str, ty: &str, physical: Physical, dict: Option<&[&str]>) -> ColumnMeta {
    ColumnMeta {
        name: name.to_string(),
        role: if physical == Physical::Timestamp {
            "timestamp".into()
        } else {
            "field".into()
        },
        ty: ty.to_string(),
        unit_ns: if physical == Physical::Timestamp {
            1
        } else {
            0
        },
        physical,
        dictionary: dict.map(|d| {
            Arc::new(Dictionary {
                values: d.iter().map(|s| s.to_string()).collect(),
            })
        }),
    }
}
