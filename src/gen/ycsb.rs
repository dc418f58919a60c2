//! YCSB's key choosers, key names and field bytes (reference/ycsb-iot.md §2.3-2.7), ported from
//! its generators so that, fed the same uniforms, they return the same numbers: Gray et al.'s
//! zipfian (`ZipfianGenerator`), the scrambled zipfian of the `zipfian` request distribution,
//! the skewed `latest`, hotspot, exponential, `fnvhash64` and `RandomByteIterator`'s bytes.
//! docs/rng.md §4.5 states each rule and which draws it takes; this file must match it.
//!
//! What a chooser draws comes from the caller's `Rng` (one draw site per value); this file
//! owns only the arithmetic, in YCSB's order of floating-point operations, with `libm`'s `pow`
//! and `log` so the bits are the same on every machine.

use std::sync::{Arc, Mutex};

use super::route::fnv1a64;
use crate::plan::Gen;

/// YCSB's zipfian constant (`ZipfianGenerator.ZIPFIAN_CONSTANT`).
pub const ZIPFIAN_CONSTANT: f64 = Gen::ZIPFIAN_CONSTANT;

/// `ScrambledZipfianGenerator.ITEM_COUNT`: its inner zipfian runs over `[0, ITEM_COUNT]`.
pub const SCRAMBLED_ITEM_COUNT: i64 = 10_000_000_000;

/// `ScrambledZipfianGenerator.ZETAN`: ζ(10^10, 0.99) as YCSB precomputed it (the inner
/// generator has 10^10 + 1 items, but YCSB passes this value).
pub const SCRAMBLED_ZETAN: f64 = 26.46902820178302;

/// The most keys a zipfian's ζ is summed over (`Gen::MAX_ZETA_ITEMS`).
pub const MAX_ZETA_ITEMS: i64 = Gen::MAX_ZETA_ITEMS;

/// How many draws a chooser takes to find a key at or below `last` (or not negative) before it
/// gives up and yields Null; YCSB would loop for ever.
pub const MAX_REDRAWS: u32 = 1 << 16;

/// YCSB's `Utils.fnvhash64`: FNV-1a 64 over the 8 little-endian bytes of `v`, then Java's
/// `Math.abs` (Long.MIN_VALUE stays negative).
pub fn fnvhash64(v: i64) -> i64 {
    (fnv1a64(&v.to_le_bytes()) as i64).wrapping_abs()
}

/// YCSB's `buildKeyName`: the key number hashed by [`fnvhash64`] unless `ordered`, in decimal,
/// after `prefix` and as many `0`s as make the number (its sign included) `zero_padding`
/// characters long.
pub fn key_name(k: i64, ordered: bool, zero_padding: usize, prefix: &str, out: &mut String) {
    let v = if ordered { k } else { fnvhash64(k) };
    let digits = v.to_string();
    out.push_str(prefix);
    for _ in digits.len()..zero_padding {
        out.push('0');
    }
    out.push_str(&digits);
}

/// `RandomByteIterator`'s bytes: `len` of them, 6 from each 32-bit draw `r` (the leading ones
/// of the last group when `len` is not a multiple of 6), byte k being `' '` plus
/// `(r >> shift) & mask` with (shift, mask) = (0, 31), (5, 63), (10, 95), (15, 31), (20, 63),
/// (25, 95), `>>` Java's arithmetic shift of an int.
pub fn random_bytes(len: usize, mut next_int: impl FnMut() -> i32, out: &mut String) {
    let mut left = len;
    while left > 0 {
        let r = next_int();
        let group = [
            r & 31,
            (r >> 5) & 63,
            (r >> 10) & 95,
            (r >> 15) & 31,
            (r >> 20) & 63,
            (r >> 25) & 95,
        ];
        for b in group.iter().take(left.min(6)) {
            // 32 + at most 95: ASCII, so the text stays valid UTF-8.
            out.push(char::from(b' ' + *b as u8));
        }
        left = left.saturating_sub(6);
    }
}

/// `ZipfianGenerator.zetastatic(st, n, theta, initialsum)`: `initial` plus `1 / (i + 1)^theta`
/// for i from `from` to `to - 1`, in increasing i.
pub fn zeta(from: i64, to: i64, theta: f64, initial: f64) -> f64 {
    let mut sum = initial;
    for i in from..to {
        sum += 1.0 / libm::pow((i + 1) as f64, theta);
    }
    sum
}

/// Gray et al.'s zipfian ("Quickly Generating Billion-Record Synthetic Databases", SIGMOD
/// 1994) as YCSB's `ZipfianGenerator` draws it with a fixed item count: `base` the most
/// popular, `base + 1` the next, ...
#[derive(Clone, Debug)]
pub struct Gray {
    base: i64,
    items: i64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    /// `1 + 0.5^theta`: below it (and above 1), `u * zetan` is the second item.
    second: f64,
}

impl Gray {
    /// Items `min..=max` with constant `theta` (0 < theta < 1), ζ summed here: O(max - min).
    pub fn new(min: i64, max: i64, theta: f64) -> Gray {
        Gray::with_zeta(min, max, theta, zeta(0, max - min + 1, theta, 0.0))
    }

    /// Items `min..=max` with a precomputed ζ, as `ScrambledZipfianGenerator` builds its own.
    pub fn with_zeta(min: i64, max: i64, theta: f64, zetan: f64) -> Gray {
        let items = max - min + 1;
        let zeta2 = zeta(0, 2, theta, 0.0);
        Gray {
            base: min,
            items,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: (1.0 - libm::pow(2.0 / items as f64, 1.0 - theta)) / (1.0 - zeta2 / zetan),
            second: 1.0 + libm::pow(0.5, theta),
        }
    }

    /// One item from one uniform `u` in [0, 1) (YCSB's `nextLong(items)`).
    pub fn draw(&self, u: f64) -> i64 {
        gray_step(
            self.base,
            self.items,
            u,
            self.zetan,
            self.eta,
            self.alpha,
            self.second,
        )
    }
}

/// Step 1-4 of `ZipfianGenerator.nextLong(itemcount)` once ζ and η are known.
fn gray_step(base: i64, items: i64, u: f64, zetan: f64, eta: f64, alpha: f64, second: f64) -> i64 {
    let uz = u * zetan;
    if uz < 1.0 {
        return base;
    }
    if uz < second {
        return base.wrapping_add(1);
    }
    base.wrapping_add((items as f64 * libm::pow(eta * u - eta + 1.0, alpha)) as i64)
}

/// YCSB's `zipfian` request distribution (`ScrambledZipfianGenerator(lo, hi - 1)`): a rank
/// from a Gray zipfian over `[0, 10^10]` with the precomputed ζ, hashed by [`fnvhash64`] onto
/// `[lo, hi)`. The inner distribution does not depend on the range, so neither do the hot
/// ranks; which keys they land on does.
#[derive(Clone, Debug)]
pub struct Scrambled {
    lo: i64,
    items: i64,
    inner: Gray,
}

impl Scrambled {
    pub fn new(lo: i64, hi: i64) -> Scrambled {
        Scrambled {
            lo,
            items: hi - lo,
            inner: Gray::with_zeta(0, SCRAMBLED_ITEM_COUNT, ZIPFIAN_CONSTANT, SCRAMBLED_ZETAN),
        }
    }

    pub fn draw(&self, u: f64) -> i64 {
        self.lo
            .wrapping_add(fnvhash64(self.inner.draw(u)) % self.items)
    }
}

/// YCSB's `latest` (`SkewedLatestGenerator` over an insert counter whose `lastValue` starts at
/// `records - 1`): with `m = records - 1 + inserted` the newest key, `m - zipfian(m)`, the
/// zipfian built for `n0 = records - 1` items. As YCSB does when the item count grows, ζ(m) is
/// the running sum extended term by term and η is recomputed with ζ(m) but the construction's
/// `n0` in its `(2 / n0)^(1 - θ)`.
#[derive(Clone, Debug)]
pub struct Latest {
    n0: i64,
    alpha: f64,
    zeta2: f64,
    /// `1 - (2 / n0)^(1 - θ)`, η's numerator.
    numerator: f64,
    second: f64,
    zetas: Arc<Zetas>,
}

impl Latest {
    /// `records >= 2`; ζ(records - 1) is summed here: O(records).
    pub fn new(records: i64) -> Latest {
        let theta = ZIPFIAN_CONSTANT;
        let n0 = records - 1;
        Latest {
            n0,
            alpha: 1.0 / (1.0 - theta),
            zeta2: zeta(0, 2, theta, 0.0),
            numerator: 1.0 - libm::pow(2.0 / n0 as f64, 1.0 - theta),
            second: 1.0 + libm::pow(0.5, theta),
            zetas: Arc::new(Zetas::new(n0, theta)),
        }
    }

    /// The key for `inserted` keys inserted after the first `records`, from one uniform `u`;
    /// `None` when `inserted` is negative or the newest key is past [`MAX_ZETA_ITEMS`].
    pub fn draw(&self, inserted: i64, u: f64) -> Option<i64> {
        let m = self.n0.checked_add(inserted)?;
        if inserted < 0 || m > MAX_ZETA_ITEMS {
            return None;
        }
        let zetan = self.zetas.at(m);
        let eta = self.numerator / (1.0 - self.zeta2 / zetan);
        Some(m - gray_step(0, m, u, zetan, eta, self.alpha, self.second))
    }
}

/// ζ(m) for item counts m from `n0` up, shared by every draw of one `latest`: the running sums
/// at every [`CHECKPOINT`]-th count reached (8 bytes per 1,024 items of growth, so at most
/// 32 MiB at [`MAX_ZETA_ITEMS`]), and the last [`CURSORS`] sums computed. A draw continues the
/// sum from the nearest known count at or below its own, so draws whose item counts grow (as
/// inserts proceed) cost O(1) terms amortised, and one that goes back costs at most 1,023.
/// Every ζ(m) is the same fold from 1 to m whichever start is used, so the bits do not depend
/// on the order draws come in.
#[derive(Debug)]
pub struct Zetas {
    n0: i64,
    theta: f64,
    known: Mutex<Known>,
}

const CHECKPOINT: i64 = 1024;
const CURSORS: usize = 8;

#[derive(Debug)]
struct Known {
    /// ζ(n0 + j * CHECKPOINT) for j = 0, 1, ...
    checkpoints: Vec<f64>,
    /// (m, ζ(m)) of recent draws, the oldest replaced first.
    cursors: [(i64, f64); CURSORS],
    next: usize,
}

impl Zetas {
    fn new(n0: i64, theta: f64) -> Zetas {
        let first = zeta(0, n0, theta, 0.0);
        Zetas {
            n0,
            theta,
            known: Mutex::new(Known {
                checkpoints: vec![first],
                cursors: [(n0, first); CURSORS],
                next: 0,
            }),
        }
    }

    /// ζ(m), m >= n0.
    fn at(&self, m: i64) -> f64 {
        let mut k = self.known.lock().unwrap_or_else(|p| p.into_inner());
        let j = ((m - self.n0) / CHECKPOINT) as usize;
        while k.checkpoints.len() <= j {
            let from = self.n0 + (k.checkpoints.len() as i64 - 1) * CHECKPOINT;
            let sum = zeta(
                from,
                from + CHECKPOINT,
                self.theta,
                k.checkpoints[k.checkpoints.len() - 1],
            );
            k.checkpoints.push(sum);
        }
        let mut start = (self.n0 + j as i64 * CHECKPOINT, k.checkpoints[j]);
        for &c in &k.cursors {
            if c.0 <= m && c.0 > start.0 {
                start = c;
            }
        }
        let sum = zeta(start.0, m, self.theta, start.1);
        let at = k.next;
        k.cursors[at] = (m, sum);
        k.next = (at + 1) % CURSORS;
        sum
    }
}

/// YCSB's `HotspotIntegerGenerator(lo, hi - 1, hot_data, hot_ops)`: the lowest
/// `hot = (int)((hi - lo) * hot_data)` keys take `hot_ops` of the draws.
#[derive(Clone, Copy, Debug)]
pub struct Hotspot {
    pub lo: i64,
    pub hot: i64,
    pub cold: i64,
    pub hot_ops: f64,
}

impl Hotspot {
    pub fn new(lo: i64, hi: i64, hot_data: f64, hot_ops: f64) -> Hotspot {
        let (hot, cold) = Gen::hotspot_sets(lo, hi, hot_data);
        Hotspot {
            lo,
            hot,
            cold,
            hot_ops,
        }
    }

    /// From a uniform `u` in [0, 1) and a 64-bit draw `l`, in that order.
    pub fn draw(&self, u: f64, l: i64) -> i64 {
        if u < self.hot_ops {
            self.lo.wrapping_add(l.wrapping_abs() % self.hot)
        } else {
            self.lo
                .wrapping_add(self.hot)
                .wrapping_add(l.wrapping_abs() % self.cold)
        }
    }
}

/// `ExponentialGenerator(percentile, range)`'s γ: `percentile` % of its draws fall below
/// `range`.
pub fn exponential_gamma(percentile: f64, range: f64) -> f64 {
    -libm::log(1.0 - percentile / 100.0) / range
}

/// One exponential key: `last - (int)(-ln(u) / gamma)`, Java's `(int)` (truncated, saturated);
/// `None` when negative (the caller draws again).
pub fn exponential_key(last: i64, gamma: f64, u: f64) -> Option<i64> {
    let x = -libm::log(u) / gamma;
    let key = last.wrapping_sub(i64::from(x as i32));
    (key >= 0).then_some(key)
}

#[cfg(test)]
mod tests;
