//! FNV-1a 64: the one hash the generator uses on text. It names random streams (so adding a
//! column changes no other column's values) and it is THE routing function that assigns a
//! series to a shard or an ingest worker: `fnv1a64(series key as text) % n`. Ingest workers,
//! `wlrun gen --shard` and the fast engine must all call these functions, never re-implement
//! them.

const FNV_OFFSET: u64 = 0xCBF2_9CE4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01B3;

/// FNV-1a, 64 bits: for each byte, `h ^= byte; h *= 0x100000001b3`, from `0xcbf29ce484222325`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h = FNV_OFFSET;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// The shard (or worker) in `0..n` that owns the series whose key renders as `key`
/// (`Cell::to_text`). `n = 0` is treated as 1.
pub fn shard_of(key: &str, n: u64) -> u64 {
    fnv1a64(key.as_bytes()) % n.max(1)
}

/// The random stream of a column: `fnv1a64("<schema>.<column>")`.
pub fn column_stream(schema: &str, column: &str) -> u64 {
    fnv1a64(format!("{schema}.{column}").as_bytes())
}

/// The stream that decides a column's nulls: `fnv1a64("<schema>.<column>#null")`.
pub fn null_stream(schema: &str, column: &str) -> u64 {
    fnv1a64(format!("{schema}.{column}#null").as_bytes())
}

/// The stream of a nested generator: its path of argument positions below the column, e.g.
/// `fnv1a64("cpu.usage_user/1")` for a walk's step, `"cpu.name/0/2"` deeper down. The column's
/// own generator is the empty path, i.e. `column_stream`.
pub fn nested_stream(schema: &str, column: &str, path: &[usize]) -> u64 {
    if path.is_empty() {
        return column_stream(schema, column);
    }
    let mut text = format!("{schema}.{column}");
    for p in path {
        text.push('/');
        text.push_str(&p.to_string());
    }
    fnv1a64(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_known_vectors() {
        // From the FNV reference test suite (Fowler/Noll/Vo).
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn streams_are_named_by_text() {
        assert_eq!(column_stream("cpu", "region"), fnv1a64(b"cpu.region"));
        assert_eq!(null_stream("cpu", "region"), fnv1a64(b"cpu.region#null"));
        assert_eq!(nested_stream("cpu", "u", &[1, 0]), fnv1a64(b"cpu.u/1/0"));
        assert_eq!(nested_stream("cpu", "u", &[]), column_stream("cpu", "u"));
    }

    #[test]
    fn shard_of_is_fnv_mod_n() {
        assert_eq!(shard_of("host_0", 3), fnv1a64(b"host_0") % 3);
        assert_eq!(shard_of("x", 0), 0);
    }
}
