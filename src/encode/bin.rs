//! The wlrun binary file (`WLB1`): a generated data set stored column-wise, so an ingest can
//! replay it without regenerating it. docs/binary-format.md has the exact layout; in short:
//!
//! - a header: magic `WLB1`, format version (u16), flags (u16, 0), the length of the schema
//!   section (u32), the schema section (names, seed, shard, columns, symbol dictionaries), and an
//!   FNV-1a 64 checksum of everything before it;
//! - column batches, each `u32 rows` (never 0), the series ids, then per column a null flag,
//!   an optional null bitmap and the values in fixed-width little-endian form;
//! - `u32 0` as the end marker, then a trailer with the total rows and batches (u64 each);
//!   nothing may follow it.
//!
//! Little-endian throughout. Every target we run on is little-endian; spelling it out keeps
//! files portable anyway and costs nothing there (the conversions compile to plain copies).
//!
//! The reader trusts nothing: every length is checked against what the file holds (it never
//! allocates ahead of the bytes it has actually read, so a corrupt length cannot make it
//! allocate gigabytes), every id and offset is range-checked, and a short file is an error
//! naming the byte offset, never a panic. The writer refuses any batch the reader would refuse,
//! before writing any of it.

//!
//! This file owns what both sides share (constants, the little-endian value codec, the batch
//! checks the writer applies before writing and the reader after reading); `writer` owns the
//! header and batch encoding, `reader` the checked decoding.

mod reader;
mod writer;

pub use self::reader::{BinError, BinErrorKind, BinReader};
pub use self::writer::BinWriter;

use crate::gen::batch::{Nulls, Physical, Values};

/// The first four bytes of every file.
pub const MAGIC: [u8; 4] = *b"WLB1";
/// The format version this code writes and the only one it reads. Any change to the layout
/// bumps it; readers refuse versions they do not know.
pub const VERSION: u16 = 1;
/// Bytes before the schema section: magic, version, flags, section length.
const PREFIX: usize = 12;
/// `series_key` / `timestamp` index meaning "none".
const NO_INDEX: u32 = u32::MAX;

fn physical_of(v: &Values) -> Physical {
    match v {
        Values::Long(_) => Physical::Long,
        Values::Double(_) => Physical::Double,
        Values::Bool(_) => Physical::Bool,
        Values::Symbol(_) => Physical::Symbol,
        Values::Varchar { .. } => Physical::Varchar,
        Values::Timestamp(_) => Physical::Timestamp,
    }
}

/// Words in the null bitmap of a batch of `rows` rows.
fn null_words(rows: usize) -> usize {
    rows.div_ceil(64)
}

/// A fixed-width value stored little-endian.
trait Le: Copy {
    const N: usize;
    fn put(self, out: &mut [u8]);
    fn get(b: &[u8]) -> Self;
}

macro_rules! le {
    ($t:ty, $n:expr) => {
        impl Le for $t {
            const N: usize = $n;
            fn put(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            fn get(b: &[u8]) -> Self {
                let mut a = [0u8; $n];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
        }
    };
}
le!(u32, 4);
le!(u64, 8);
le!(i64, 8);

impl Le for f64 {
    const N: usize = 8;
    fn put(self, out: &mut [u8]) {
        self.to_bits().put(out);
    }
    fn get(b: &[u8]) -> Self {
        f64::from_bits(u64::get(b))
    }
}

/// Appends `v` little-endian: one resize, then a loop the compiler turns into a copy.
fn put_all<T: Le>(buf: &mut Vec<u8>, v: &[T]) {
    let start = buf.len();
    buf.resize(start + v.len() * T::N, 0);
    for (c, &x) in buf[start..].chunks_exact_mut(T::N).zip(v) {
        x.put(c);
    }
}

/// Replaces `out` with the little-endian values in `b` (whose length is a multiple of `T::N`).
fn get_all<T: Le>(b: &[u8], out: &mut Vec<T>) {
    out.clear();
    out.extend(b.chunks_exact(T::N).map(T::get));
}

/// The first null bit at or beyond `rows`, if any.
fn stray_null_bit(nulls: &Nulls, rows: usize) -> Option<usize> {
    let full = rows / 64;
    for (w, &word) in nulls.words.iter().enumerate().skip(full) {
        let keep = if w == full {
            (1u64 << (rows % 64)) - 1
        } else {
            0
        };
        let stray = word & !keep;
        if stray != 0 {
            return Some(w * 64 + stray.trailing_zeros() as usize);
        }
    }
    None
}

/// The first non-null row whose symbol id is outside a dictionary of `dict` entries.
fn bad_symbol(ids: &[u32], nulls: &Nulls, dict: usize) -> Option<usize> {
    let dict = u32::try_from(dict).unwrap_or(u32::MAX);
    if !nulls.any() {
        if ids.iter().all(|&x| x < dict) {
            return None;
        }
        return ids.iter().position(|&x| x >= dict);
    }
    ids.iter()
        .enumerate()
        .position(|(i, &x)| x >= dict && !nulls.is_null(i))
}

/// Offsets start at 0, never go down, end at the byte length, and cut the UTF-8 text at
/// character boundaries. A problem comes back as the index of the bad offset (`None` when
/// the text itself is bad) and a message.
fn varchar_error(offsets: &[u32], bytes: &[u8]) -> Option<(Option<usize>, String)> {
    if offsets.first() != Some(&0) {
        return Some((Some(0), "the first offset is not 0".into()));
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            return Some((
                None,
                format!("text is not UTF-8 (byte {} of the text)", e.valid_up_to()),
            ))
        }
    };
    let mut prev = 0u32;
    for (i, &o) in offsets.iter().enumerate() {
        if o < prev {
            return Some((
                Some(i),
                format!("offset {i} is {o}, below the previous {prev}"),
            ));
        }
        if o as usize > bytes.len() {
            return Some((
                Some(i),
                format!(
                    "offset {i} ({o}) is past the end of {} bytes of text",
                    bytes.len()
                ),
            ));
        }
        if !text.is_char_boundary(o as usize) {
            return Some((
                Some(i),
                format!(
                    "offset {i} ({o}) is not a character boundary in {} bytes of text",
                    bytes.len()
                ),
            ));
        }
        prev = o;
    }
    if prev as usize != bytes.len() {
        return Some((
            Some(offsets.len() - 1),
            format!(
                "the last offset is {prev} but the text is {} bytes",
                bytes.len()
            ),
        ));
    }
    None
}

#[cfg(test)]
mod tests;
