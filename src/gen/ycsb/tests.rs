//! The choosers against a straight port of YCSB's Java generators (`site.ycsb.generator`,
//! `Utils`, `RandomByteIterator` at brianfrankcooper/YCSB d9faaac8), fed the same uniforms; and
//! the values reference/ycsb-iot.md computed.

use std::collections::HashMap;

use super::*;
use crate::gen::rng::Rng;

/// Java's `Random`/`ThreadLocalRandom` as the port sees it, fed from a `wlrun` draw sequence:
/// `nextDouble` is 53 bits (as Java's), `nextLong` a whole draw, `nextInt` its high 32 bits.
struct Java(Rng);

impl Java {
    fn new(key: u64) -> Java {
        Java(Rng::from_key(crate::gen::rng::fmix64(key)))
    }
    fn next_double(&mut self) -> f64 {
        self.0.f64()
    }
    fn next_long(&mut self) -> i64 {
        self.0.next_u64() as i64
    }
    fn next_int(&mut self) -> i32 {
        (self.0.next_u64() >> 32) as i32
    }
}

// ---- The port, written from the Java: names and order of operations as there. ----

const FNV_OFFSET_BASIS_64: i64 = 0xCBF29CE484222325_u64 as i64;
const FNV_PRIME_64: i64 = 1099511628211;

fn java_fnvhash64(mut val: i64) -> i64 {
    let mut hashval = FNV_OFFSET_BASIS_64;
    for _ in 0..8 {
        let octet = val & 0x00ff;
        val >>= 8;
        hashval ^= octet;
        hashval = hashval.wrapping_mul(FNV_PRIME_64);
    }
    hashval.wrapping_abs()
}

fn java_build_key_name(mut keynum: i64, ordered: bool, zeropadding: i32) -> String {
    if !ordered {
        keynum = java_fnvhash64(keynum);
    }
    let value = keynum.to_string();
    let fill = zeropadding - value.len() as i32;
    let mut prekey = String::from("user");
    for _ in 0..fill {
        prekey.push('0');
    }
    prekey + value.as_str()
}

fn java_pow(a: f64, b: f64) -> f64 {
    libm::pow(a, b)
}

struct ZipfianGenerator {
    items: i64,
    base: i64,
    theta: f64,
    zeta2theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    countforzeta: i64,
}

impl ZipfianGenerator {
    fn zetastatic(st: i64, n: i64, theta: f64, initialsum: f64) -> f64 {
        let mut sum = initialsum;
        let mut i = st;
        while i < n {
            sum += 1.0 / java_pow((i + 1) as f64, theta);
            i += 1;
        }
        sum
    }

    fn new(min: i64, max: i64, zipfianconstant: f64) -> ZipfianGenerator {
        let zetan = Self::zetastatic(0, max - min + 1, zipfianconstant, 0.0);
        Self::with_zetan(min, max, zipfianconstant, zetan)
    }

    /// The constructor's throw-away `nextValue()` draws from the generator's own Random, so
    /// it changes nothing here and is left out.
    fn with_zetan(min: i64, max: i64, zipfianconstant: f64, zetan: f64) -> ZipfianGenerator {
        let items = max - min + 1;
        let theta = zipfianconstant;
        let zeta2theta = Self::zetastatic(0, 2, theta, 0.0);
        let alpha = 1.0 / (1.0 - theta);
        let eta = (1.0 - java_pow(2.0 / items as f64, 1.0 - theta)) / (1.0 - zeta2theta / zetan);
        ZipfianGenerator {
            items,
            base: min,
            theta,
            zeta2theta,
            alpha,
            zetan,
            eta,
            countforzeta: items,
        }
    }

    fn next_long(&mut self, itemcount: i64, rnd: &mut Java) -> i64 {
        if itemcount != self.countforzeta && itemcount > self.countforzeta {
            self.zetan = Self::zetastatic(self.countforzeta, itemcount, self.theta, self.zetan);
            self.countforzeta = itemcount;
            self.eta = (1.0 - java_pow(2.0 / self.items as f64, 1.0 - self.theta))
                / (1.0 - self.zeta2theta / self.zetan);
        }
        let u = rnd.next_double();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + java_pow(0.5, self.theta) {
            return self.base + 1;
        }
        self.base + (itemcount as f64 * java_pow(self.eta * u - self.eta + 1.0, self.alpha)) as i64
    }

    fn next_value(&mut self, rnd: &mut Java) -> i64 {
        self.next_long(self.items, rnd)
    }
}

struct ScrambledZipfianGenerator {
    gen: ZipfianGenerator,
    min: i64,
    itemcount: i64,
}

impl ScrambledZipfianGenerator {
    const ZETAN: f64 = 26.46902820178302;
    const ITEM_COUNT: i64 = 10000000000;

    fn new(min: i64, max: i64) -> ScrambledZipfianGenerator {
        ScrambledZipfianGenerator {
            gen: ZipfianGenerator::with_zetan(0, Self::ITEM_COUNT, 0.99, Self::ZETAN),
            min,
            itemcount: max - min + 1,
        }
    }

    fn next_value(&mut self, rnd: &mut Java) -> i64 {
        let ret = self.gen.next_value(rnd);
        self.min + java_fnvhash64(ret) % self.itemcount
    }
}

/// `SkewedLatestGenerator` over a counter whose `lastValue()` the test sets.
struct SkewedLatestGenerator {
    basis_last: i64,
    zipfian: ZipfianGenerator,
}

impl SkewedLatestGenerator {
    fn new(basis_last: i64) -> SkewedLatestGenerator {
        SkewedLatestGenerator {
            basis_last,
            zipfian: ZipfianGenerator::new(0, basis_last - 1, 0.99),
        }
    }

    fn next_value(&mut self, rnd: &mut Java) -> i64 {
        let max = self.basis_last;
        max - self.zipfian.next_long(max, rnd)
    }
}

struct HotspotIntegerGenerator {
    lower_bound: i64,
    hot_interval: i64,
    cold_interval: i64,
    hot_opn_fraction: f64,
}

impl HotspotIntegerGenerator {
    fn new(
        lower_bound: i64,
        upper_bound: i64,
        hotset_fraction: f64,
        hot_opn_fraction: f64,
    ) -> Self {
        let interval = upper_bound - lower_bound + 1;
        let hot_interval = (interval as f64 * hotset_fraction) as i32 as i64;
        HotspotIntegerGenerator {
            lower_bound,
            hot_interval,
            cold_interval: interval - hot_interval,
            hot_opn_fraction,
        }
    }

    fn next_value(&mut self, rnd: &mut Java) -> i64 {
        if rnd.next_double() < self.hot_opn_fraction {
            self.lower_bound + rnd.next_long().wrapping_abs() % self.hot_interval
        } else {
            self.lower_bound
                + self.hot_interval
                + rnd.next_long().wrapping_abs() % self.cold_interval
        }
    }
}

/// `ExponentialGenerator(percentile, range)` inside `CoreWorkload.nextKeynum`'s loop.
fn java_exponential_keynum(last_value: i64, percentile: f64, range: f64, rnd: &mut Java) -> i64 {
    let gamma = -libm::log(1.0 - percentile / 100.0) / range;
    loop {
        let next_value = -libm::log(rnd.next_double()) / gamma;
        let keynum = last_value - next_value as i32 as i64;
        if keynum >= 0 {
            return keynum;
        }
    }
}

/// `new RandomByteIterator(len).toArray()`: `nextBuf` over the whole array.
fn java_random_bytes(len: usize, rnd: &mut Java) -> Vec<u8> {
    let mut buffer = vec![0u8; len];
    let mut i = 0;
    while i < len {
        let bytes = rnd.next_int();
        let base = i;
        let avail = buffer.len() - base;
        // The switch falls through from the first case that matches down to `case 1`.
        if avail >= 6 {
            buffer[base + 5] = (((bytes >> 25) & 95) + b' ' as i32) as u8;
        }
        if avail >= 5 {
            buffer[base + 4] = (((bytes >> 20) & 63) + b' ' as i32) as u8;
        }
        if avail >= 4 {
            buffer[base + 3] = (((bytes >> 15) & 31) + b' ' as i32) as u8;
        }
        if avail >= 3 {
            buffer[base + 2] = (((bytes >> 10) & 95) + b' ' as i32) as u8;
        }
        if avail >= 2 {
            buffer[base + 1] = (((bytes >> 5) & 63) + b' ' as i32) as u8;
        }
        if avail >= 1 {
            buffer[base] = ((bytes & 31) + b' ' as i32) as u8;
        }
        i += 6;
    }
    buffer
}

// ---- wlrun's choosers against the port. ----

#[test]
fn key_names_match_the_reference_vectors_and_the_port() {
    let mut s = String::new();
    for (k, want) in [
        (0, "user6284781860667377211"),
        (1, "user8517097267634966620"),
        (2, "user1820151046732198393"),
        (3, "user4052466453699787802"),
        (999, "user2071219101098386137"),
    ] {
        s.clear();
        key_name(k, false, 1, "user", &mut s);
        assert_eq!(s, want, "key {k}");
    }
    s.clear();
    key_name(5, true, 8, "user", &mut s);
    assert_eq!(s, "user00000005");
    let mut r = Java::new(1);
    for i in 0..20_000 {
        let k = match i {
            0 => i64::MIN,
            1 => i64::MAX,
            2 => -1,
            _ => r.next_long() >> (i % 64),
        };
        assert_eq!(fnvhash64(k), java_fnvhash64(k), "{k}");
        for (ordered, pad) in [(false, 1), (true, 1), (false, 25), (true, 12), (true, 0)] {
            s.clear();
            key_name(k, ordered, pad as usize, "user", &mut s);
            assert_eq!(
                s,
                java_build_key_name(k, ordered, pad),
                "{k} {ordered} {pad}"
            );
        }
    }
}

#[test]
fn zeta_and_eta_for_a_thousand_items_are_the_references() {
    let z = zeta(0, 1000, 0.99, 0.0);
    assert!((z - 7.728953217).abs() < 1e-8, "{z}");
    let g = Gray::new(0, 999, 0.99);
    assert!((g.eta - 0.0748061).abs() < 1e-7, "{}", g.eta);
    assert!((1.0 / z - 0.129).abs() < 0.001);
}

#[test]
fn gray_zipfian_agrees_with_the_port() {
    for (min, max, theta) in [
        (0, 999, 0.99),
        (1, 100, 0.99),
        (-50, 50, 0.5),
        (0, 1, 0.99),
        (7, 100_006, 0.8),
    ] {
        let mine = Gray::new(min, max, theta);
        let mut port = ZipfianGenerator::new(min, max, theta);
        let (mut a, mut b) = (Java::new(max as u64), Java::new(max as u64));
        for _ in 0..5_000 {
            let v = mine.draw(a.next_double());
            assert_eq!(v, port.next_value(&mut b), "{min}..={max} θ {theta}");
            assert!((min..=max).contains(&v));
        }
    }
}

#[test]
fn scrambled_zipfian_agrees_with_the_port() {
    for (lo, hi) in [(0, 1001), (0, 1101), (10, 20), (-5, 1_000_000), (0, 1)] {
        let mine = Scrambled::new(lo, hi);
        let mut port = ScrambledZipfianGenerator::new(lo, hi - 1);
        let (mut a, mut b) = (Java::new(hi as u64), Java::new(hi as u64));
        for _ in 0..5_000 {
            let v = mine.draw(a.next_double());
            assert_eq!(v, port.next_value(&mut b), "[{lo}, {hi})");
            assert!((lo..hi).contains(&v));
        }
    }
}

/// reference/ycsb-iot.md §2.5: the top rank takes 1/ζ ≈ 3.78 % of the draws and the second
/// ≈ 1.90 %; they land on keys 144 then 610 of 1001 items, 903 then 403 of 1101.
#[test]
fn scrambled_zipfian_hot_keys_are_the_references() {
    let inner = Gray::with_zeta(0, SCRAMBLED_ITEM_COUNT, ZIPFIAN_CONSTANT, SCRAMBLED_ZETAN);
    let mut r = Java::new(42);
    let n = 1_000_000;
    let mut ranks = [0u32; 2];
    let (a, b) = (Scrambled::new(0, 1001), Scrambled::new(0, 1101));
    let (mut ka, mut kb): (HashMap<i64, u32>, HashMap<i64, u32>) = Default::default();
    for _ in 0..n {
        let u = r.next_double();
        match inner.draw(u) {
            0 => ranks[0] += 1,
            1 => ranks[1] += 1,
            _ => {}
        }
        *ka.entry(a.draw(u)).or_default() += 1;
        *kb.entry(b.draw(u)).or_default() += 1;
    }
    let share = |c: u32| f64::from(c) / f64::from(n);
    assert!(
        (share(ranks[0]) - 0.0378).abs() < 0.0005,
        "{}",
        share(ranks[0])
    );
    assert!(
        (share(ranks[1]) - 0.0190).abs() < 0.0004,
        "{}",
        share(ranks[1])
    );
    let top = |m: &HashMap<i64, u32>| {
        let mut v: Vec<(i64, u32)> = m.iter().map(|(k, c)| (*k, *c)).collect();
        v.sort_by_key(|&(k, c)| (std::cmp::Reverse(c), k));
        [v[0].0, v[1].0]
    };
    assert_eq!(top(&ka), [144, 610]);
    assert_eq!(top(&kb), [903, 403]);
}

#[test]
fn latest_agrees_with_the_port_as_inserts_proceed() {
    for records in [3, 10, 1000] {
        let mine = Latest::new(records);
        let mut port = SkewedLatestGenerator::new(records - 1);
        let (mut a, mut b) = (Java::new(records as u64), Java::new(records as u64));
        let mut steps = Java::new(7);
        let mut inserted = 0i64;
        let mut seen = Vec::new();
        for i in 0..20_000 {
            // Inserts arrive in bursts, sometimes past a checkpoint of the ζ cache at once.
            inserted += match i % 97 {
                0 => 3_000,
                _ => (steps.next_int() & 3) as i64,
            };
            port.basis_last = records - 1 + inserted;
            let u = a.next_double();
            let v = mine.draw(inserted, u).expect("in range");
            assert_eq!(
                v,
                port.next_value(&mut b),
                "records {records} inserted {inserted}"
            );
            assert!(
                (0..=records - 1 + inserted).contains(&v),
                "{records} {inserted} {u} {v}"
            );
            seen.push((inserted, u, v));
        }
        // The same draws in another order (workers take instances as they come): the same
        // values, whichever sums the cache kept.
        let again = Latest::new(records);
        for &(inserted, u, v) in seen.iter().rev().step_by(3) {
            assert_eq!(again.draw(inserted, u), Some(v));
        }
    }
    let l = Latest::new(10);
    assert_eq!(l.draw(-1, 0.5), None);
    assert_eq!(l.draw(MAX_ZETA_ITEMS, 0.5), None);
}

/// The newest key is the most frequent one at each insert count, and the ten newest take a
/// good part of the draws (less as inserts proceed: η keeps the construction's item count).
#[test]
fn latest_concentrates_on_the_newest_keys() {
    let l = Latest::new(1000);
    let mut r = Java::new(3);
    for inserted in [0, 10, 500, 5_000] {
        let mut counts: HashMap<i64, u32> = HashMap::new();
        for _ in 0..100_000 {
            *counts
                .entry(l.draw(inserted, r.next_double()).unwrap())
                .or_default() += 1;
        }
        let newest = 999 + inserted;
        let (top, _) = counts.iter().max_by_key(|(k, c)| (**c, **k)).unwrap();
        assert_eq!(*top, newest, "inserted {inserted}");
        let recent: u32 = (newest - 9..=newest)
            .map(|k| counts.get(&k).copied().unwrap_or(0))
            .sum();
        assert!(
            recent > 15_000,
            "{recent} of the draws are the 10 newest keys"
        );
        // The newest takes 1/ζ(m) of the draws, m the newest key: ζ grows as keys are added.
        let share = f64::from(counts[&newest]) / 100_000.0;
        let want = 1.0 / zeta(0, newest, ZIPFIAN_CONSTANT, 0.0);
        assert!((share - want).abs() < 0.005, "{share} vs {want}");
    }
}

#[test]
fn hotspot_agrees_with_the_port() {
    for (lo, hi, data, ops) in [
        (0, 1000, 0.2, 0.8),
        (5, 6, 1.0, 1.0),
        (-100, 100, 0.5, 0.1),
        (0, 1_000_000, 0.01, 0.99),
    ] {
        let mine = Hotspot::new(lo, hi, data, ops);
        let mut port = HotspotIntegerGenerator::new(lo, hi - 1, data, ops);
        let (mut a, mut b) = (Java::new(hi as u64), Java::new(hi as u64));
        for _ in 0..5_000 {
            let u = a.next_double();
            let v = mine.draw(u, a.next_long());
            assert_eq!(v, port.next_value(&mut b));
            assert!((lo..hi).contains(&v));
        }
    }
}

#[test]
fn exponential_agrees_with_the_port() {
    for (last, percentile, range) in [
        (999, 95.0, 857.142857),
        (0, 95.0, 10.0),
        (1_000_000, 50.0, 1e6),
    ] {
        let gamma = exponential_gamma(percentile, range);
        let (mut a, mut b) = (Java::new(last as u64), Java::new(last as u64));
        for _ in 0..5_000 {
            let v = loop {
                if let Some(k) = exponential_key(last, gamma, a.next_double()) {
                    break k;
                }
            };
            assert_eq!(v, java_exponential_keynum(last, percentile, range, &mut b));
        }
    }
}

#[test]
fn random_bytes_agree_with_the_port() {
    for len in (0..40).chain([100, 1000]) {
        let (mut a, mut b) = (Java::new(len as u64), Java::new(len as u64));
        let mut s = String::new();
        random_bytes(len, || a.next_int(), &mut s);
        let want = java_random_bytes(len, &mut b);
        assert_eq!(s.as_bytes(), &want[..], "len {len}");
        assert!(s.bytes().all(|c| (32..=127).contains(&c)));
    }
}
