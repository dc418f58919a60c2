//! The generator's random numbers: a counter-based key derivation plus SplitMix64, and the
//! samplers built on it. Everything here is integer arithmetic or IEEE-754 operations that
//! Rust never fuses or widens on 64-bit targets, and the transcendental functions come from the
//! pure-Rust `libm` crate, never from the platform's C library; so a draw is the same bits on
//! every machine. docs/rng.md is the specification; this file must match it.
//!
//! This file owns *how* numbers are drawn. Which key a generator uses (stream ids, the series
//! and row counters) is decided by the evaluator in `reference.rs`.

/// 2^64 / golden ratio: SplitMix64's state increment.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// Absorbed first into every key so that seed 0 does not start from a zero state.
const KEY_INIT: u64 = 0x6A09_E667_F3BC_C909;

/// The row counter that per-series draws use, so they can never collide with a row's draws.
pub const PER_SERIES: u64 = u64::MAX;

/// SplitMix64's output function (Stafford's "Mix13"), a bijection on u64.
pub fn fmix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The key of one draw site: `fmix64` absorbs seed, stream and series in that order (the
/// prefix), then the row is the counter of a SplitMix64 sequence seeded with the prefix. Each
/// step is a bijection, so for a fixed prefix distinct rows give distinct keys.
pub fn key(seed: u64, stream: u64, series: u64, row: u64) -> u64 {
    key_at(key_prefix(seed, stream, series), row)
}

/// The key at `row` of the site whose prefix is `prefix`: SplitMix64's output number `row`
/// from the prefix. One hash per draw in loops over the rows of one series.
#[inline(always)]
pub fn key_at(prefix: u64, row: u64) -> u64 {
    fmix64(prefix.wrapping_add(row.wrapping_mul(GOLDEN)))
}

/// The draws of one generator at one (series, row). The first output is the key itself, so
/// the common one-draw case costs one hash; the n-th output (n >= 2) is `fmix64(key + (n - 1)
/// * GOLDEN)`, SplitMix64 (Steele, Lea, Flood 2014) started from the key.
#[derive(Clone, Debug)]
pub struct Rng {
    key: u64,
    drawn: u64,
}

impl Rng {
    pub fn new(seed: u64, stream: u64, series: u64, row: u64) -> Rng {
        Rng::from_key(key(seed, stream, series, row))
    }

    /// The generator at a site whose key came from `key` or `key_at`: a raw counter is not
    /// a key (the first draw *is* the key, so it must already be hashed).
    #[inline(always)]
    pub fn from_key(key: u64) -> Rng {
        Rng { key, drawn: 0 }
    }

    #[inline(always)]
    pub fn next_u64(&mut self) -> u64 {
        let out = if self.drawn == 0 {
            self.key
        } else {
            fmix64(self.key.wrapping_add(self.drawn.wrapping_mul(GOLDEN)))
        };
        self.drawn += 1;
        out
    }

    /// Uniform in [0, 1): the top 53 bits of one draw times 2^-53.
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [0, n), n > 0, without bias: Lemire's multiply-and-reject. `m = x * n` as
    /// 128 bits; the draw is rejected while `low64(m) < (2^64 - n) mod n`; the result is
    /// `high64(m)`. n = 0 yields 0 without drawing.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(n);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }

    /// Uniform integer in [lo, hi); `lo` when the range is empty.
    pub fn range_i64(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        let span = hi.wrapping_sub(lo) as u64;
        lo.wrapping_add(self.below(span) as i64)
    }

    /// `lo + (hi - lo) * f64()`.
    pub fn range_f64(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.f64()
    }

    /// Uniform in (0, 1): never 0, for logarithms.
    pub fn open01(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
    }

    /// A standard normal deviate by Marsaglia and Tsang's ziggurat with 256 layers ("The
    /// Ziggurat Method for Generating Random Variables", 2000), one draw in about 99% of
    /// calls: the low 8 bits of a draw pick the layer `i`, its top 53 bits give `u` in
    /// [-1, 1); `x = u * X[i]` is returned when `|x| < X[i+1]`. Otherwise the base layer
    /// (i = 0) samples the tail beyond R from two `open01` draws, and other layers accept `x`
    /// when `F[i+1] + (F[i] - F[i+1]) * f64() < exp(-x*x/2)`, else start again. The tables
    /// `X`, `F` are computed once with `libm` (see `ZigTables`), so they are the same bits
    /// everywhere.
    pub fn std_normal(&mut self) -> f64 {
        self.std_normal_with(zig_tables())
    }

    /// `std_normal` with the tables fetched once by the caller, for loops over many rows. The
    /// one-draw case (about 99%) is inlined; the rest is the same loop, out of line.
    #[inline(always)]
    pub fn std_normal_with(&mut self, t: &ZigTables) -> f64 {
        if self.drawn == 0 {
            self.drawn = 1;
            return std_normal_first(self.key, t);
        }
        let bits = self.next_u64();
        self.std_normal_from(t, bits)
    }

    #[inline(always)]
    fn std_normal_from(&mut self, t: &ZigTables, bits: u64) -> f64 {
        let i = (bits & 0xff) as usize;
        let u = (bits >> 11) as f64 * (2.0 / (1u64 << 53) as f64) - 1.0;
        let x = u * t.x[i];
        if x.abs() < t.x[i + 1] {
            return x;
        }
        self.std_normal_rest(t, i, u, x)
    }

    /// The ziggurat after a first draw fell outside its layer's rectangle.
    #[cold]
    #[inline(never)]
    fn std_normal_rest(&mut self, t: &ZigTables, mut i: usize, mut u: f64, mut x: f64) -> f64 {
        loop {
            if i == 0 {
                // The tail beyond R (Marsaglia 1964).
                loop {
                    let a = libm::log(self.open01()) / ZIG_R;
                    let b = libm::log(self.open01());
                    if -2.0 * b >= a * a {
                        return if u < 0.0 { a - ZIG_R } else { ZIG_R - a };
                    }
                }
            }
            if t.f[i + 1] + (t.f[i] - t.f[i + 1]) * self.f64() < libm::exp(-0.5 * x * x) {
                return x;
            }
            let bits = self.next_u64();
            i = (bits & 0xff) as usize;
            u = (bits >> 11) as f64 * (2.0 / (1u64 << 53) as f64) - 1.0;
            x = u * t.x[i];
            if x.abs() < t.x[i + 1] {
                return x;
            }
        }
    }
}

/// The rightmost layer edge and the common layer area of the 256-layer normal ziggurat.
const ZIG_R: f64 = 3.654_152_885_361_009;
const ZIG_V: f64 = 0.004_928_673_233_99;

/// Layer edges `x[0..=256]` (x[0] = V / f(R) is the base strip's virtual width, x[1] = R,
/// x[i+1] = sqrt(-2 ln(V / x[i] + f(x[i]))), x[256] = 0) and `f[i] = exp(-x[i]^2 / 2)`.
pub struct ZigTables {
    pub x: [f64; 257],
    pub f: [f64; 257],
}

pub fn zig_tables() -> &'static ZigTables {
    static TABLES: std::sync::OnceLock<ZigTables> = std::sync::OnceLock::new();
    TABLES.get_or_init(|| {
        let pdf = |x: f64| libm::exp(-0.5 * x * x);
        let mut x = [0.0; 257];
        x[0] = ZIG_V / pdf(ZIG_R);
        x[1] = ZIG_R;
        for i in 1..256 {
            let next = -2.0 * libm::log(ZIG_V / x[i] + pdf(x[i]));
            x[i + 1] = if next > 0.0 { libm::sqrt(next) } else { 0.0 };
        }
        x[256] = 0.0;
        let mut f = [0.0; 257];
        for i in 0..257 {
            f[i] = pdf(x[i]);
        }
        ZigTables { x, f }
    })
}

/// The standard normal whose first draw is `key` (`Rng::from_key(key).std_normal_with(t)`),
/// written for the hot loop: no generator state unless the first draw is rejected.
#[inline(always)]
pub fn std_normal_first(key: u64, t: &ZigTables) -> f64 {
    let i = (key & 0xff) as usize;
    let u = (key >> 11) as f64 * (2.0 / (1u64 << 53) as f64) - 1.0;
    let x = u * t.x[i];
    if x.abs() < t.x[i + 1] {
        return x;
    }
    Rng { key, drawn: 1 }.std_normal_rest(t, i, u, x)
}

/// The first-draw ziggurat for a run of sites at one row, written so the compiler can
/// vectorize it: `out[k]` is `std_normal_first(key_at(prefixes[k], row))` when that draw lands
/// inside its layer (about 99%), else NaN, which the caller resolves with `std_normal_first`.
/// `u` is built from the key's bits rather than by an integer-to-float conversion (which
/// AVX2 lacks for 64-bit lanes); the two are equal bit for bit (see the tests), because
/// every step is exact: `d = 1 + (key >> 12) * 2^-52`, `2d - 3` is a multiple of 2^-51 in
/// [-1, 1), and adding the 53rd bit times 2^-52 gives `(key >> 11) * 2^-52 - 1`.
#[multiversion::multiversion(targets("x86_64+avx2"))]
pub fn std_normal_firsts(prefixes: &[u64], row: u64, t: &ZigTables, out: &mut [f64]) {
    for (z, p) in out.iter_mut().zip(prefixes) {
        let key = key_at(*p, row);
        let i = (key & 0xff) as usize;
        let d = f64::from_bits(0x3FF0_0000_0000_0000 | (key >> 12));
        let u = (2.0 * d - 3.0) + ((key >> 11) & 1) as f64 * (1.0 / (1u64 << 52) as f64);
        let x = u * t.x[i];
        *z = if x.abs() < t.x[i + 1] { x } else { f64::NAN };
    }
}

/// The key prefix of one (stream, series): `key(seed, stream, series, row)` is
/// `key_at(prefix, row)`.
pub fn key_prefix(seed: u64, stream: u64, series: u64) -> u64 {
    series_prefix(stream_key(seed, stream), series)
}

/// The part of `key_prefix` common to every series of one stream.
#[inline]
pub fn stream_key(seed: u64, stream: u64) -> u64 {
    fmix64(fmix64(seed ^ KEY_INIT) ^ stream)
}

/// `key_prefix` from the stream's `stream_key`: one hash per (stream, series).
#[inline(always)]
pub fn series_prefix(stream_key: u64, series: u64) -> u64 {
    fmix64(stream_key ^ series)
}

/// The key prefixes of series `first, first + 1, ...`, one per slot of `out`: what a run of
/// consecutive series needs, derived when it is generated rather than stored per series.
#[multiversion::multiversion(targets("x86_64+avx2"))]
pub fn series_prefixes(stream_key: u64, first: u64, out: &mut [u64]) {
    for (k, p) in out.iter_mut().enumerate() {
        *p = fmix64(stream_key ^ first.wrapping_add(k as u64));
    }
}

/// Zipf over ranks 1..=n with exponent s > 0, by Hörmann and Derflinger's rejection-inversion
/// ("Rejection-inversion to generate variates from monotone discrete distributions", 1996), in
/// the formulation of Apache Commons RNG's `RejectionInversionZipfSampler`. Callers shift the
/// rank to 0-based. O(1) memory and expected O(1) draws for any n.
#[derive(Clone, Debug)]
pub struct Zipf {
    n: f64,
    exponent: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    s: f64,
}

impl Zipf {
    /// `n >= 1`, `exponent > 0` and finite; the caller checks.
    pub fn new(n: u64, exponent: f64) -> Zipf {
        let mut z = Zipf {
            n: n as f64,
            exponent,
            h_integral_x1: 0.0,
            h_integral_n: 0.0,
            s: 0.0,
        };
        z.h_integral_x1 = z.h_integral(1.5) - 1.0;
        z.h_integral_n = z.h_integral(z.n + 0.5);
        z.s = 2.0 - z.h_integral_inverse(z.h_integral(2.5) - z.h(2.0));
        z
    }

    /// A rank in 1..=n.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_integral_n + rng.f64() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inverse(u);
            let mut k = (x + 0.5) as i64 as f64;
            if k < 1.0 {
                k = 1.0;
            } else if k > self.n {
                k = self.n;
            }
            if k - x <= self.s || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }

    /// H(x) = ((x^(1-e)) - 1) / (1 - e), or ln(x) when e = 1.
    fn h_integral(&self, x: f64) -> f64 {
        let log_x = libm::log(x);
        helper2((1.0 - self.exponent) * log_x) * log_x
    }

    /// h(x) = x^-e.
    fn h(&self, x: f64) -> f64 {
        libm::exp(-self.exponent * libm::log(x))
    }

    fn h_integral_inverse(&self, x: f64) -> f64 {
        let mut t = x * (1.0 - self.exponent);
        if t < -1.0 {
            t = -1.0;
        }
        libm::exp(helper1(t) * x)
    }
}

/// ln(1 + x) / x, continuous at 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        libm::log1p(x) / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (e^x - 1) / x, continuous at 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        libm::expm1(x) / x
    } else {
        1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_of_first_normals_equals_one_at_a_time() {
        let t = zig_tables();
        let mut prefixes: Vec<u64> = (0..20_000u64).map(fmix64).collect();
        prefixes.extend([
            0,
            1,
            u64::MAX,
            u64::MAX - 0xfff,
            1 << 11,
            1 << 12,
            0x7ff,
            0x800,
        ]);
        for row in [0, 1, 7, 1 << 40] {
            let mut out = vec![0.0; prefixes.len()];
            std_normal_firsts(&prefixes, row, t, &mut out);
            let mut rejected = 0;
            for (p, z) in prefixes.iter().zip(&out) {
                let want = std_normal_first(key_at(*p, row), t);
                if z.is_nan() {
                    rejected += 1;
                } else {
                    assert_eq!(z.to_bits(), want.to_bits(), "prefix {p:#x} row {row}");
                }
            }
            // 256 layers reject about 1.2% of first draws.
            assert!((100..500).contains(&rejected), "{rejected} rejected");
        }
        // The bit construction of u, at the extremes of the key.
        for key in [
            0u64,
            u64::MAX,
            1 << 11,
            (1 << 11) - 1,
            1 << 63,
            0x5555_5555_5555_5555,
        ] {
            let d = f64::from_bits(0x3FF0_0000_0000_0000 | (key >> 12));
            let u = (2.0 * d - 3.0) + ((key >> 11) & 1) as f64 * (1.0 / (1u64 << 52) as f64);
            let want = (key >> 11) as f64 * (2.0 / (1u64 << 53) as f64) - 1.0;
            assert_eq!(u.to_bits(), want.to_bits(), "key {key:#x}");
        }
    }

    #[test]
    fn ziggurat_tables_close_at_zero() {
        let t = zig_tables();
        assert_eq!(t.x[1], ZIG_R);
        assert!((t.x[255] - 0.215_241_895_9).abs() < 1e-9, "{}", t.x[255]);
        assert!(t.x.windows(2).skip(1).all(|w| w[0] > w[1]));
    }

    #[test]
    fn ziggurat_normal_moments_and_tails() {
        let n = 400_000;
        let (mut sum, mut sq, mut beyond3, mut beyond1) = (0.0, 0.0, 0, 0);
        for i in 0..n {
            let x = Rng::new(9, 1, 2, i).std_normal();
            sum += x;
            sq += x * x;
            beyond3 += usize::from(x.abs() > 3.0);
            beyond1 += usize::from(x.abs() > 1.0);
        }
        let mean = sum / n as f64;
        let var = sq / n as f64 - mean * mean;
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var - 1.0).abs() < 0.01, "variance {var}");
        // P(|X| > 1) = 0.3173, P(|X| > 3) = 0.0027.
        assert!((beyond1 as f64 / n as f64 - 0.3173).abs() < 0.005);
        assert!((beyond3 as f64 / n as f64 - 0.0027).abs() < 0.0006);
    }

    #[test]
    fn key_prefix_matches_key() {
        for row in [0, 1, 99, u64::MAX] {
            assert_eq!(key_at(key_prefix(5, 6, 7), row), key(5, 6, 7, row));
        }
    }

    #[test]
    fn prefixes_of_a_run_match_key_prefix() {
        let mut out = [0u64; 5];
        series_prefixes(stream_key(5, 6), 7, &mut out);
        for (k, p) in out.iter().enumerate() {
            assert_eq!(*p, key_prefix(5, 6, 7 + k as u64));
            assert_eq!(*p, series_prefix(stream_key(5, 6), 7 + k as u64));
        }
    }

    #[test]
    fn keys_along_rows_are_splitmix_outputs() {
        // SplitMix64 seeded with 1234567: its first published output is the key of row 1.
        assert_eq!(key_at(1_234_567, 1), 6_457_827_717_110_365_317);
        assert_eq!(key_at(1_234_567, 2), 3_203_168_211_198_807_973);
    }

    #[test]
    fn splitmix_matches_the_reference_sequence() {
        // The first draw is the key; then SplitMix64 seeded with the key (state 1234567), the
        // published reference outputs.
        let mut r = Rng::from_key(1_234_567);
        assert_eq!(r.next_u64(), 1_234_567);
        assert_eq!(r.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(r.next_u64(), 3_203_168_211_198_807_973);
        assert_eq!(r.next_u64(), 9_817_491_932_198_370_423);
    }

    #[test]
    fn keys_differ_per_counter() {
        let a = key(1, 2, 3, 4);
        assert_ne!(a, key(1, 2, 3, 5));
        assert_ne!(a, key(1, 2, 4, 4));
        assert_ne!(a, key(1, 3, 3, 4));
        assert_ne!(a, key(2, 2, 3, 4));
        assert_eq!(a, key(1, 2, 3, 4));
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut r = Rng::from_key(7);
        let mut seen = [0u32; 7];
        for _ in 0..7000 {
            seen[r.below(7) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 800 && c < 1200), "{seen:?}");
        assert_eq!(r.range_i64(5, 5), 5);
        for _ in 0..100 {
            let v = r.range_i64(-3, 2);
            assert!((-3..2).contains(&v));
        }
    }

    #[test]
    fn f64_is_in_unit_interval_with_mean_half() {
        let mut r = Rng::from_key(99);
        let mut sum = 0.0;
        for _ in 0..100_000 {
            let u = r.f64();
            assert!((0.0..1.0).contains(&u));
            sum += u;
        }
        assert!((sum / 100_000.0 - 0.5).abs() < 0.01);
    }

    #[test]
    fn normal_has_mean_zero_and_unit_variance() {
        let mut r = Rng::from_key(3);
        let n = 100_000;
        let (mut s, mut s2) = (0.0, 0.0);
        for _ in 0..n {
            let z = r.std_normal();
            s += z;
            s2 += z * z;
        }
        let mean = s / f64::from(n);
        let var = s2 / f64::from(n) - mean * mean;
        assert!(mean.abs() < 0.02, "mean {mean}");
        assert!((var - 1.0).abs() < 0.03, "variance {var}");
    }

    #[test]
    fn zipf_rank_one_is_most_frequent_and_matches_the_law() {
        let z = Zipf::new(10, 1.0);
        let mut r = Rng::from_key(11);
        let mut counts = [0u32; 10];
        let n = 200_000;
        for _ in 0..n {
            let k = z.sample(&mut r);
            assert!((1..=10).contains(&k));
            counts[(k - 1) as usize] += 1;
        }
        // P(k) = (1/k) / H_10, H_10 = 2.928968...
        let h10: f64 = (1..=10).map(|k| 1.0 / f64::from(k)).sum();
        for (i, &c) in counts.iter().enumerate() {
            let p = 1.0 / (i as f64 + 1.0) / h10;
            let got = f64::from(c) / f64::from(n);
            assert!((got - p).abs() < 0.01, "rank {}: {got} vs {p}", i + 1);
        }
        assert!(counts[0] > counts[1] && counts[1] > counts[9]);
        // A non-unit exponent and a single rank.
        let z = Zipf::new(1, 2.5);
        assert_eq!(z.sample(&mut r), 1);
        let z = Zipf::new(1_000_000_000, 1.2);
        let k = z.sample(&mut r);
        assert!((1..=1_000_000_000).contains(&k));
    }
}
