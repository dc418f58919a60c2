//! The generated data checked against the reference FACTS of the data sets it reproduces
//! (/work/shared/reference/tsbs.md §1.2–1.4 for TSBS cpu-only, the header of
//! `std/ksql/orders.wl` for ksql-datagen orders, `workloads/pgbench-timeseries.wl`), not against
//! our own snapshots.
//!
//! Every statistical bound below is evaluated on deterministic data (fixed seed), so a test
//! cannot flake; the bounds are still chosen several standard deviations wide, so that a
//! correct generator passes at any seed with overwhelming probability and a wrong distribution
//! (a missing value, a skewed pick, a wrong step size) fails.

#[path = "common/tsbs_names.rs"]
mod tsbs_names;
use tsbs_names::{GAUGES as FIELDS, TAGS};

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use wlrun::check::Options;
use wlrun::compile::{check_file, check_text, schema_plan};
use wlrun::encode::bin::{BinReader, BinWriter};
use wlrun::encode::ilp::IlpEncoder;
use wlrun::gen::batch::{Batch, BatchSchema, Values};
use wlrun::gen::Columnar;
use wlrun::plan::SchemaPlan;

const SEED: u64 = 42;
/// 2016-01-01T00:00:00Z in nanoseconds (the TSBS default `--timestamp-start`).
const START_NS: i64 = 1_451_606_400_000_000_000;
const INTERVAL_NS: i64 = 10_000_000_000;

const REGIONS: [(&str, &[&str]); 9] = [
    (
        "us-east-1",
        &["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1e"],
    ),
    ("us-west-1", &["us-west-1a", "us-west-1b"]),
    ("us-west-2", &["us-west-2a", "us-west-2b", "us-west-2c"]),
    ("eu-west-1", &["eu-west-1a", "eu-west-1b", "eu-west-1c"]),
    ("eu-central-1", &["eu-central-1a", "eu-central-1b"]),
    ("ap-southeast-1", &["ap-southeast-1a", "ap-southeast-1b"]),
    ("ap-southeast-2", &["ap-southeast-2a", "ap-southeast-2b"]),
    ("ap-northeast-1", &["ap-northeast-1a", "ap-northeast-1c"]),
    ("sa-east-1", &["sa-east-1a", "sa-east-1b", "sa-east-1c"]),
];
const OS: [&str; 3] = ["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"];
const ARCH: [&str; 2] = ["x64", "x86"];
const TEAM: [&str; 4] = ["SF", "NYC", "LON", "CHI"];
const ENVIRONMENT: [&str; 3] = ["production", "staging", "test"];

// ---------------------------------------------------------------------------------------------
// Helpers

fn plan_from_text(text: &str, schema: &str) -> SchemaPlan {
    let out = check_text("t.wl", text, &Options::default());
    let Some(checked) = out.checked else {
        panic!("check failed: {:#?}", out.diagnostics);
    };
    schema_plan(&checked, Some(schema)).unwrap()
}

/// TSBS cpu-only with `hosts` hosts from 2016-01-01T00:00:00Z to `end` (exclusive).
fn tsbs(hosts: u64, end: &str) -> SchemaPlan {
    let text = format!(
        "import \"std/tsbs/cpu-only.wl\" as tsbs (hosts = {hosts}, end = {end})\n\
         schema unused {{ rows 1 field a: long = 1 }}"
    );
    plan_from_text(&text, "tsbs.cpu")
}

fn read(path: &str) -> std::io::Result<Vec<u8>> {
    std::fs::read(path)
}

fn generator(plan: &SchemaPlan, seed: u64, shard: Option<(u64, u64)>) -> Columnar {
    Columnar::new(plan, seed, shard, &read).unwrap()
}

/// Every batch of a generator, filled `size` rows at a time.
fn batches(gen: &mut Columnar, size: usize) -> Vec<Batch> {
    let mut out = Vec::new();
    let mut b = gen.new_batch();
    while gen.fill(&mut b, size) > 0 {
        out.push(b.clone());
    }
    out
}

fn ilp(schema: Arc<BatchSchema>, batches: &[Batch]) -> Vec<u8> {
    let mut enc = IlpEncoder::new(schema).unwrap();
    let mut out = Vec::new();
    for b in batches {
        enc.encode(b, &mut out);
    }
    out
}

fn ilp_of(plan: &SchemaPlan, seed: u64, size: usize) -> Vec<u8> {
    let mut gen = generator(plan, seed, None);
    let bs = batches(&mut gen, size);
    ilp(gen.schema(), &bs)
}

fn col(schema: &BatchSchema, name: &str) -> usize {
    schema
        .columns
        .iter()
        .position(|c| c.name == name)
        .unwrap_or_else(|| panic!("no column `{name}`"))
}

fn longs(b: &Batch, c: usize) -> &[i64] {
    match &b.columns[c].values {
        Values::Long(v) | Values::Timestamp(v) => v,
        other => panic!("column {c} is not long/timestamp: {other:?}"),
    }
}

fn doubles(b: &Batch, c: usize) -> &[f64] {
    match &b.columns[c].values {
        Values::Double(v) => v,
        other => panic!("column {c} is not double: {other:?}"),
    }
}

/// One row's tags, in `TAGS` order.
fn tags_of(b: &Batch, cols: &[usize], row: usize) -> Vec<String> {
    cols.iter().map(|&c| b.text(c, row).to_string()).collect()
}

/// All rows' tags of a TSBS generation, with their series index, in generation order.
fn tsbs_tag_rows(plan: &SchemaPlan) -> Vec<(u32, Vec<String>)> {
    let mut gen = generator(plan, SEED, None);
    let schema = gen.schema();
    let cols: Vec<usize> = TAGS.iter().map(|t| col(&schema, t)).collect();
    let mut out = Vec::new();
    for b in batches(&mut gen, 4096) {
        for r in 0..b.rows {
            out.push((b.series[r], tags_of(&b, &cols, r)));
        }
    }
    out
}

/// A chi-square critical value for `df` degrees of freedom at a tail probability of about
/// 1e-6 (z = 4.75), by the Wilson–Hilferty approximation (slightly conservative for df = 1:
/// 27.5 vs the exact 23.9). A uniform generator exceeds it with probability ~1e-6.
fn chi2_limit(df: usize) -> f64 {
    let d = df as f64;
    let a = 2.0 / (9.0 * d);
    d * (1.0 - a + 4.75 * a.sqrt()).powi(3)
}

/// Chi-square statistic of `counts` against equal expected counts over `domain`; panics if a
/// value outside `domain` occurs.
fn chi2_uniform(what: &str, counts: &HashMap<String, u64>, domain: &[String]) -> f64 {
    for k in counts.keys() {
        assert!(domain.contains(k), "{what}: value {k:?} outside the domain");
    }
    let n: u64 = counts.values().sum();
    let e = n as f64 / domain.len() as f64;
    domain
        .iter()
        .map(|k| {
            let o = *counts.get(k).unwrap_or(&0) as f64;
            (o - e) * (o - e) / e
        })
        .sum()
}

fn decimal_range(n: u32) -> Vec<String> {
    (0..n).map(|i| i.to_string()).collect()
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

// ---------------------------------------------------------------------------------------------
// 1. Tag value sets, hostname, constancy per host

#[test]
fn tsbs_tags_are_drawn_from_the_tsbs_value_sets_and_fixed_per_host() {
    let hosts = 4000u32;
    // 3 epochs: 00:00:00, 00:00:10, 00:00:20.
    let rows = tsbs_tag_rows(&tsbs(u64::from(hosts), "2016-01-01T00:00:30Z"));
    assert_eq!(rows.len(), 3 * hosts as usize);
    let region_azs: HashMap<&str, &[&str]> = REGIONS.iter().copied().collect();
    let racks = decimal_range(100);
    let services = decimal_range(20);
    let mut first: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for (series, t) in &rows {
        assert_eq!(
            t[0],
            format!("host_{series}"),
            "hostname is host_<id>, no padding"
        );
        let azs = region_azs
            .get(t[1].as_str())
            .unwrap_or_else(|| panic!("region {:?} is not a TSBS region", t[1]));
        assert!(
            azs.contains(&t[2].as_str()),
            "datacenter {:?} is not an AZ of region {:?}",
            t[2],
            t[1]
        );
        assert!(racks.contains(&t[3]), "rack {:?}", t[3]);
        assert!(OS.contains(&t[4].as_str()), "os {:?}", t[4]);
        assert!(ARCH.contains(&t[5].as_str()), "arch {:?}", t[5]);
        assert!(TEAM.contains(&t[6].as_str()), "team {:?}", t[6]);
        assert!(services.contains(&t[7]), "service {:?}", t[7]);
        assert!(t[8] == "0" || t[8] == "1", "service_version {:?}", t[8]);
        assert!(
            ENVIRONMENT.contains(&t[9].as_str()),
            "service_environment {:?}",
            t[9]
        );
        match first.get(series) {
            None => {
                first.insert(*series, t.clone());
            }
            Some(f) => assert_eq!(f, t, "tags of host {series} changed between epochs"),
        }
    }
    assert_eq!(first.len(), hosts as usize);
    // Every value of the small domains occurs at 4,000 hosts (the rarest, one rack, is
    // expected 40 times: P(0) = e^-40).
    let mut seen: Vec<std::collections::HashSet<&str>> = vec![Default::default(); TAGS.len()];
    for t in first.values() {
        for (i, v) in t.iter().enumerate() {
            seen[i].insert(v);
        }
    }
    assert_eq!(seen[1].len(), 9, "regions seen");
    // 23 AZs in §1.3's list (its prose says "all 24 AZs"; the list itself has 23).
    let azs: usize = REGIONS.iter().map(|r| r.1.len()).sum();
    assert_eq!(azs, 23);
    assert_eq!(seen[2].len(), azs, "datacenters seen: {:?}", seen[2]);
    assert_eq!(seen[3].len(), 100, "racks seen");
    assert_eq!(seen[4].len(), 3, "os seen");
    assert_eq!(seen[5].len(), 2, "arch seen");
    assert_eq!(seen[6].len(), 4, "teams seen");
    assert_eq!(seen[7].len(), 20, "services seen");
    assert_eq!(seen[8].len(), 2, "service_versions seen");
    assert_eq!(seen[9].len(), 3, "service_environments seen");
}

// ---------------------------------------------------------------------------------------------
// 2. Tag frequencies

#[test]
fn tsbs_tag_frequencies_are_uniform_over_4000_hosts() {
    let hosts = 4000u64;
    let rows = tsbs_tag_rows(&tsbs(hosts, "2016-01-01T00:00:10Z"));
    assert_eq!(rows.len(), hosts as usize);
    let count = |i: usize| -> HashMap<String, u64> {
        let mut m = HashMap::new();
        for (_, t) in &rows {
            *m.entry(t[i].clone()).or_insert(0) += 1;
        }
        m
    };
    let regions: Vec<String> = REGIONS.iter().map(|r| r.0.to_string()).collect();
    let domains: [(usize, &str, Vec<String>); 8] = [
        (1, "region", regions.clone()),
        (3, "rack", decimal_range(100)),
        (4, "os", strings(&OS)),
        (5, "arch", strings(&ARCH)),
        (6, "team", strings(&TEAM)),
        (7, "service", decimal_range(20)),
        (8, "service_version", decimal_range(2)),
        (9, "service_environment", strings(&ENVIRONMENT)),
    ];
    for (i, name, domain) in &domains {
        let counts = count(*i);
        // Chi-square at p ~ 1e-6 (see `chi2_limit`): catches any skew, including on the
        // 100-valued rack where a per-bucket bound would be too loose or too tight.
        let x2 = chi2_uniform(name, &counts, domain);
        let limit = chi2_limit(domain.len() - 1);
        assert!(
            x2 < limit,
            "{name}: chi-square {x2:.1} >= {limit:.1}: {counts:?}"
        );
    }
    // Per-bucket bounds of ±25% relative on the 4 tags the brief names. The smallest
    // expectation is a region's 4000/9 = 444.4 (binomial sd 19.9), so ±25% is ±111 = 5.6 sd;
    // os (1333, sd 27.2): 12 sd; team (1000, sd 27.4): 9 sd; arch (2000, sd 31.6): 16 sd.
    for (i, name, k) in [
        (1, "region", 9.0),
        (5, "arch", 2.0),
        (6, "team", 4.0),
        (4, "os", 3.0),
    ] {
        let expected = hosts as f64 / k;
        let counts = count(i);
        assert_eq!(counts.len() as f64, k, "{name}: {counts:?}");
        for (v, &c) in &counts {
            let rel = (c as f64 - expected) / expected;
            assert!(
                rel.abs() <= 0.25,
                "{name}={v}: {c} hosts, expected {expected:.0} ± 25%"
            );
        }
    }
    // The datacenter is uniform among its region's AZs (§1.3), so not uniform over all 23:
    // per (region, AZ) the expected count is n(region) / |AZs|, at least ~111 (us-east-1's 4
    // AZs; binomial sd <= 10.5); ±40% relative is >= 4.2 sd.
    let mut per_region: HashMap<&str, HashMap<&str, u64>> = HashMap::new();
    for (_, t) in &rows {
        *per_region
            .entry(t[1].as_str())
            .or_default()
            .entry(t[2].as_str())
            .or_insert(0) += 1;
    }
    for (region, azs) in REGIONS {
        let m = &per_region[region];
        let n: u64 = m.values().sum();
        let expected = n as f64 / azs.len() as f64;
        for az in azs {
            let c = *m.get(az).unwrap_or(&0) as f64;
            assert!(
                ((c - expected) / expected).abs() <= 0.40,
                "datacenter {az}: {c} of {n} hosts in {region}, expected {expected:.0} ± 40%"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 3. Row order, time axis, row count

#[test]
fn tsbs_rows_are_epoch_major_host_minor_on_a_10s_axis() {
    let hosts = 200usize;
    // A span that is not a multiple of the interval: floor(605 s / 10 s) = 60 epochs.
    let plan = tsbs(hosts as u64, "2016-01-01T00:10:05Z");
    let mut gen = generator(&plan, SEED, None);
    let schema = gen.schema();
    let ts = col(&schema, "timestamp");
    let host = col(&schema, "hostname");
    let mut i = 0usize;
    for b in batches(&mut gen, 333) {
        let t = longs(&b, ts);
        assert_eq!(t.len(), b.rows);
        for (r, &t) in t.iter().enumerate() {
            let (e, h) = (i / hosts, i % hosts);
            assert_eq!(b.series[r] as usize, h, "row {i}: series");
            assert_eq!(b.text(host, r), format!("host_{h}"), "row {i}: hostname");
            assert_eq!(
                t,
                START_NS + e as i64 * INTERVAL_NS,
                "row {i}: timestamp of epoch {e}"
            );
            i += 1;
        }
    }
    assert_eq!(i, hosts * 60, "rows = hosts x floor(span / 10 s)");

    // The ILP line of §1.6: `cpu,<10 tags in TSBS order> <10 fields>i <unix ns>\n`.
    let text = String::from_utf8(ilp_of(&plan, SEED, 4096)).unwrap();
    let first = text.lines().next().unwrap();
    let (head, rest) = first.split_once(' ').unwrap();
    let (fields, stamp) = rest.split_once(' ').unwrap();
    let mut parts = head.split(',');
    assert_eq!(parts.next(), Some("cpu"));
    let keys: Vec<&str> = parts.map(|p| p.split_once('=').unwrap().0).collect();
    assert_eq!(keys, TAGS);
    assert!(head.starts_with("cpu,hostname=host_0,"), "{head}");
    let fkeys: Vec<&str> = fields
        .split(',')
        .map(|f| {
            let (k, v) = f.split_once('=').unwrap();
            assert!(v.ends_with('i'), "field {f} is not an ILP integer");
            k
        })
        .collect();
    assert_eq!(fkeys, FIELDS);
    assert_eq!(stamp, "1451606400000000000");
    assert_eq!(text.lines().count(), hosts * 60);
}

// ---------------------------------------------------------------------------------------------
// 4. The clamped random walks

#[test]
fn tsbs_fields_are_clamped_walks_with_unit_normal_steps() {
    let hosts = 4000usize;
    let epochs = 60usize;
    let plan = tsbs(hosts as u64, "2016-01-01T00:10:00Z");
    let mut gen = generator(&plan, SEED, None);
    let schema = gen.schema();
    let fcols: Vec<usize> = FIELDS.iter().map(|f| col(&schema, f)).collect();

    // The reference generator's first epoch: the walks' initial states.
    let reference: Vec<Vec<i64>> = wlrun::gen::rows(&plan, SEED, None)
        .unwrap()
        .take(hosts)
        .map(|row| {
            fcols
                .iter()
                .map(|&c| {
                    let v = row[c].as_f64().unwrap();
                    assert_eq!(v.fract(), 0.0);
                    v as i64
                })
                .collect()
        })
        .collect();

    let mut prev = vec![0i64; hosts * FIELDS.len()];
    let mut first_sum = 0i64;
    let mut deciles = [0u64; 10];
    let (mut steps, mut abs_sum, mut sum, mut over6, mut max_abs) = (0u64, 0i64, 0i64, 0u64, 0);
    let mut i = 0usize;
    for b in batches(&mut gen, 4096) {
        for r in 0..b.rows {
            let (e, h) = (i / hosts, i % hosts);
            assert_eq!(b.series[r] as usize, h);
            for (f, &c) in fcols.iter().enumerate() {
                let v = longs(&b, c)[r];
                assert!(
                    (0..=100).contains(&v),
                    "{} of host {h} at epoch {e}: {v}",
                    FIELDS[f]
                );
                let k = h * FIELDS.len() + f;
                if e == 0 {
                    assert_eq!(
                        v, reference[h][f],
                        "{} of host {h}: first row is not the reference initial state",
                        FIELDS[f]
                    );
                    first_sum += v;
                    deciles[(v as usize / 10).min(9)] += 1;
                } else {
                    let d = v - prev[k];
                    steps += 1;
                    sum += d;
                    abs_sum += d.abs();
                    max_abs = max_abs.max(d.abs());
                    if d.abs() > 6 {
                        over6 += 1;
                    }
                }
                prev[k] = v;
            }
            i += 1;
        }
    }
    assert_eq!(i, hosts * epochs);

    // Initial states: int64(U[0,1) x 100) over 40,000 walks. Mean 49.5, sd of the mean
    // 28.9 / sqrt(40000) = 0.14, so ±2 is 14 sd. Each decile [10j, 10j+10) expects 4,000
    // (sd 60); ±10% is 6.7 sd. (100 cannot occur initially: s0 < 100.)
    let n0 = (hosts * FIELDS.len()) as f64;
    let mean0 = first_sum as f64 / n0;
    assert!((mean0 - 50.0).abs() <= 2.0, "mean initial value {mean0:.2}");
    for (j, &c) in deciles.iter().enumerate() {
        let rel = (c as f64 - n0 / 10.0) / (n0 / 10.0);
        assert!(rel.abs() <= 0.10, "initial values in decile {j}: {c}");
    }

    // Steps: an integer difference of a walk with N(0,1) steps has E|Δ| = E|N(0,1)| = 0.798
    // (the truncation's fractional part averages out) and mean 0 (clamping biases it only
    // near the bounds). Over 2.36M steps the sd of the mean |Δ| is ~0.0004, so [0.7, 0.9] is
    // loose. |Δ| > 6 needs |N(0,1)| > 5 (p = 5.7e-7, ~1.3 expected); allow 10. |Δ| > 8 needs
    // |N| > 7 (p = 2.6e-12).
    let n = steps as f64;
    assert_eq!(steps as usize, (epochs - 1) * hosts * FIELDS.len());
    let mean_abs = abs_sum as f64 / n;
    let mean = sum as f64 / n;
    assert!((0.7..=0.9).contains(&mean_abs), "mean |Δ| {mean_abs:.4}");
    assert!(mean.abs() <= 0.05, "mean Δ {mean:.4}");
    assert!(over6 <= 10, "{over6} steps with |Δ| > 6");
    assert!(max_abs <= 8, "max |Δ| {max_abs}");
}

// ---------------------------------------------------------------------------------------------
// 5. Sharding

#[test]
fn tsbs_shards_merge_back_into_the_unsharded_ilp() {
    let plan = tsbs(200, "2016-01-01T00:10:00Z");
    let whole = ilp_of(&plan, SEED, 1000);
    let n = 3u64;
    let mut lines: Vec<(i64, u32, Vec<u8>)> = Vec::new();
    let mut owners: HashMap<u32, u64> = HashMap::new();
    for i in 0..n {
        let mut gen = generator(&plan, SEED, Some((i, n)));
        let schema = gen.schema();
        let ts = col(&schema, "timestamp");
        let mut enc = IlpEncoder::new(schema).unwrap();
        let mut rows = 0;
        for b in batches(&mut gen, 1000) {
            let mut out = Vec::new();
            assert_eq!(enc.encode(&b, &mut out), b.rows);
            let split: Vec<&[u8]> = out.split_inclusive(|&c| c == b'\n').collect();
            assert_eq!(split.len(), b.rows);
            for (r, line) in split.into_iter().enumerate() {
                let s = b.series[r];
                let owner = *owners.entry(s).or_insert(i);
                assert_eq!(owner, i, "series {s} in shards {owner} and {i}");
                lines.push((longs(&b, ts)[r], s, line.to_vec()));
            }
            rows += b.rows;
        }
        assert!(rows > 0, "shard {i} of {n} is empty");
    }
    assert_eq!(owners.len(), 200, "every host is in some shard");
    lines.sort_by_key(|l| (l.0, l.1));
    let merged: Vec<u8> = lines.into_iter().flat_map(|l| l.2).collect();
    assert_eq!(merged.len(), whole.len());
    assert!(
        merged == whole,
        "merged shards differ from the unsharded ILP"
    );
}

// ---------------------------------------------------------------------------------------------
// 6. Binary round trip

fn bin_round_trip(plan: &SchemaPlan, size: usize) {
    let mut gen = generator(plan, SEED, None);
    let schema = gen.schema();
    let bs = batches(&mut gen, size);
    assert!(!bs.is_empty());
    let direct = ilp(Arc::clone(&schema), &bs);

    let mut w = BinWriter::new(Vec::new(), &schema, SEED, None).unwrap();
    for b in &bs {
        w.write(b).unwrap();
    }
    let file = w.finish().unwrap();

    let mut r = BinReader::open(&file[..]).unwrap();
    assert_eq!(r.seed(), SEED);
    assert_eq!(r.shard(), None);
    let mut enc = IlpEncoder::new(Arc::clone(r.schema())).unwrap();
    let mut b = Batch::new(Arc::clone(r.schema()));
    let mut back = Vec::new();
    let mut rows = 0;
    while r.next_batch(&mut b).unwrap() {
        rows += b.rows;
        enc.encode(&b, &mut back);
    }
    assert_eq!(rows, bs.iter().map(|b| b.rows).sum::<usize>());
    assert_eq!(back.len(), direct.len(), "{}", plan.name);
    assert!(
        back == direct,
        "{}: ILP after the binary round trip differs",
        plan.name
    );
}

#[test]
fn binary_round_trip_gives_the_same_ilp() {
    bin_round_trip(&tsbs(200, "2016-01-01T00:10:00Z"), 777);
    // Varchar, double and int columns too.
    let orders = plan_from_text(
        "import \"std/ksql/orders.wl\" as ksql (order_count = 3000)\n\
         schema unused { rows 1 field a: long = 1 }",
        "ksql.orders",
    );
    bin_round_trip(&orders, 500);
}

// ---------------------------------------------------------------------------------------------
// 7. Determinism

#[test]
fn generation_is_deterministic_and_independent_of_batch_size() {
    let plan = tsbs(200, "2016-01-01T00:02:00Z");
    let base = ilp_of(&plan, SEED, 4096);
    assert_eq!(base.iter().filter(|&&c| c == b'\n').count(), 200 * 12);
    for size in [1, 7, 4096] {
        let a = ilp_of(&plan, SEED, size);
        let b = ilp_of(&plan, SEED, size);
        assert!(a == b, "same seed, batch size {size}: outputs differ");
        assert!(a == base, "batch size {size} changes the output");
    }
    let other = ilp_of(&plan, SEED + 1, 4096);
    assert!(other != base, "a different seed gives the same bytes");
}

// ---------------------------------------------------------------------------------------------
// 8. Zipf

#[test]
fn zipf_is_skewed_as_declared() {
    let plan = plan_from_text(
        "schema z { rows 20000 field k: long = zipf(100, 1.2) }",
        "z",
    );
    let mut gen = generator(&plan, SEED, None);
    let k = col(&gen.schema(), "k");
    let mut counts = [0u64; 100];
    let mut n = 0;
    for b in batches(&mut gen, 4096) {
        for &v in longs(&b, k) {
            assert!((0..100).contains(&v), "zipf(100) gave {v}");
            counts[v as usize] += 1;
            n += 1;
        }
    }
    assert_eq!(n, 20000);
    let max = *counts.iter().max().unwrap();
    assert_eq!(
        counts[0],
        max,
        "rank 0 is not the most frequent: {:?}",
        &counts[..10]
    );
    // P(0) = 1 / H(100, 1.2) ≈ 0.278 (5,560 draws, sd 1.3%), P(1) ≈ 0.121 (2,420, sd 2%):
    // the ratio's sd is ~2.5%, so ±15% around 2^1.2 is 6 sd.
    let ratio = counts[0] as f64 / counts[1] as f64;
    let want = 2f64.powf(1.2);
    assert!(
        (ratio / want - 1.0).abs() <= 0.15,
        "count(0)/count(1) = {ratio:.3}, expected {want:.3} ± 15%"
    );
    // Further down the law: count(k)/count(0) ≈ (k+1)^-1.2. count(9) expects ~350 (sd 5.3%);
    // ±25% is > 4 sd.
    for r in [2usize, 4, 9] {
        let got = counts[r] as f64 / counts[0] as f64;
        let want = ((r + 1) as f64).powf(-1.2);
        assert!(
            (got / want - 1.0).abs() <= 0.25,
            "count({r})/count(0) = {got:.4}, expected {want:.4} ± 25%"
        );
    }
    // Decreasing over the head, where neighbours differ by far more than the noise.
    for r in 0..4 {
        assert!(
            counts[r] > counts[r + 1],
            "count({r}) <= count({}): {:?}",
            r + 1,
            &counts[..6]
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 9. ksql orders and pgbench cpu_usage

/// `Item_[1-9][0-9]{0,2}`.
fn is_item(s: &str) -> bool {
    let Some(d) = s.strip_prefix("Item_") else {
        return false;
    };
    let b = d.as_bytes();
    (1..=3).contains(&b.len()) && (b'1'..=b'9').contains(&b[0]) && b.iter().all(u8::is_ascii_digit)
}

/// `<prefix>[1-9]{0,2}`.
fn is_place(s: &str, prefix: &str) -> bool {
    let Some(d) = s.strip_prefix(prefix) else {
        return false;
    };
    d.len() <= 2 && d.bytes().all(|c| (b'1'..=b'9').contains(&c))
}

#[test]
fn ksql_orders_match_the_datagen_domains() {
    let plan = plan_from_text(
        "import \"std/ksql/orders.wl\" as ksql (order_count = 5000)\n\
         schema unused { rows 1 field a: long = 1 }",
        "ksql.orders",
    );
    let mut gen = generator(&plan, SEED, None);
    let s = gen.schema();
    let (time, id, item, units, city, state, zip) = (
        col(&s, "ordertime"),
        col(&s, "orderid"),
        col(&s, "itemid"),
        col(&s, "orderunits"),
        col(&s, "address_city"),
        col(&s, "address_state"),
        col(&s, "address_zipcode"),
    );
    let mut next = 0i64;
    let mut empty_city = 0;
    for b in batches(&mut gen, 1024) {
        for r in 0..b.rows {
            assert_eq!(longs(&b, id)[r], next, "orderid");
            next += 1;
            let t = longs(&b, time)[r];
            assert!(
                (1_487_715_775_521..1_519_273_364_600).contains(&t),
                "ordertime {t}"
            );
            let u = doubles(&b, units)[r];
            assert!((0.1..10.0).contains(&u), "orderunits {u}");
            assert!(is_item(b.text(item, r)), "itemid {:?}", b.text(item, r));
            assert!(
                is_place(b.text(city, r), "City_"),
                "city {:?}",
                b.text(city, r)
            );
            assert!(
                is_place(b.text(state, r), "State_"),
                "state {:?}",
                b.text(state, r)
            );
            if b.text(city, r) == "City_" {
                empty_city += 1;
            }
            let z = longs(&b, zip)[r];
            assert!((10_000..99_999).contains(&z), "zipcode {z}");
        }
    }
    assert_eq!(next, 5000, "rows = order_count");
    // The regex allows an empty suffix; it should actually occur.
    assert!(empty_city > 0, "City_ with no digits never generated");
}

#[test]
fn pgbench_cpu_usage_hosts_and_usage() {
    let out = check_file(
        Path::new("workloads/pgbench-timeseries.wl"),
        &Options::default(),
    );
    let Some(checked) = out.checked else {
        panic!("check failed: {:#?}", out.diagnostics);
    };
    let plan = schema_plan(&checked, Some("cpu_usage")).unwrap();
    let mut gen = generator(&plan, SEED, None);
    let s = gen.schema();
    let (host, usage) = (col(&s, "host"), col(&s, "usage"));
    let hosts = 20;
    // The first hour: 360 epochs x 20 hosts.
    let mut b = gen.new_batch();
    assert_eq!(gen.fill(&mut b, hosts * 360), hosts * 360);
    for r in 0..b.rows {
        assert_eq!(b.text(host, r), format!("host_{:06}", r % hosts), "row {r}");
        let u = doubles(&b, usage)[r];
        assert!((0.0..=100.0).contains(&u), "usage {u} at row {r}");
    }
}

/// TSBS iot's diagnostics (reference ycsb-iot.md §1.3): fuel_state drains by U(-0.001, 0) per
/// tick and refuels to 1.0 the tick it would sit at 0; current_load starts at 0 and jumps to a
/// fresh U(0, 5000) with 5% chance per tick, else holds.
#[test]
fn iot_fuel_refuels_at_empty_and_the_load_holds_between_rare_jumps() {
    let plan = plan_from_text(
        "schema d {
           series name: symbol = format(\"truck_%d\", n) for n in 0..20
           field fuel: double = walk(1.0, uniform(-0.001, 0.0), clamp = 0..1, refill = 1.0)
           field load: double = hold(0.0, uniform(0.0, 5000.0), 5%)
           timestamp t = every 10s from 2016-01-01T00:00:00Z for 10d
         }",
        "d",
    );
    let mut g = generator(&plan, SEED, None);
    let (fuel, load) = (col(&g.schema(), "fuel"), col(&g.schema(), "load"));
    let (mut prev_fuel, mut prev_load) = (vec![f64::NAN; 20], vec![f64::NAN; 20]);
    let (mut refuels, mut jumps, mut ticks, mut k) = (0, 0, 0, 0);
    for b in batches(&mut g, 10_000) {
        for r in 0..b.rows {
            // Epoch-major, series-minor.
            let s = k % 20;
            k += 1;
            let (f, l) = (doubles(&b, fuel)[r], doubles(&b, load)[r]);
            assert!(f > 0.0 && f <= 1.0, "fuel {f} never sits at 0");
            assert!((0.0..5000.0).contains(&l), "load {l}");
            if prev_fuel[s].is_nan() {
                assert_eq!((f, l), (1.0, 0.0), "the first row carries the start");
            } else {
                ticks += 1;
                let d = f - prev_fuel[s];
                if d > 0.0 {
                    refuels += 1;
                    assert_eq!(f, 1.0, "a refuel fills the tank");
                } else {
                    assert!(d >= -0.001 - 1e-12, "one step drains at most 0.001: {d}");
                }
                jumps += u64::from(l != prev_load[s]);
            }
            prev_fuel[s] = f;
            prev_load[s] = l;
        }
    }
    // 10 days at 10 s: 86,399 ticks a truck, one tank in ~2,000 ticks.
    assert!(refuels >= 20 * 30, "{refuels} refuels");
    let share = jumps as f64 / ticks as f64;
    assert!(
        (0.048..0.052).contains(&share),
        "the load changed in {share} of the ticks"
    );
}
