//! Schema-level tests of the reference generator: order, determinism, sharding and each
//! generator's rule, on schemas built by hand.

use super::*;
use crate::plan::{ColumnPlan, Gen, SchemaPlan, TimeAxis};
use crate::value::{Text, Value};
use tsbs_names::GAUGES;

pub(crate) const T0: i64 = 1_451_606_400_000_000_000; // 2016-01-01T00:00:00Z
pub(crate) const TEN_S: i64 = 10_000_000_000;

pub(crate) fn s(v: &str) -> Value {
    Value::Str(Text::lit(v))
}

pub(crate) fn col(name: &str, role: &str, ty: &str, per: &str, gen: Gen) -> ColumnPlan {
    ColumnPlan {
        name: name.into(),
        role: role.into(),
        ty: ty.into(),
        unit: (ty == "timestamp").then(|| "ns".to_string()),
        gen,
        per: per.into(),
        null_probability: 0.0,
        from: None,
    }
}

fn boxed(g: Gen) -> Box<Gen> {
    Box::new(g)
}

/// TSBS's usage walk: from a uniform start in 0..100, N(0, 1) steps clamped to 0..=100.
fn cpu_walk() -> Gen {
    walk_0_100(1.0)
}

fn std_normal() -> Gen {
    Gen::Normal {
        mean: 0.0,
        stddev: 1.0,
    }
}

fn walk_0_100(stddev: f64) -> Gen {
    Gen::Walk {
        start: boxed(Gen::Uniform {
            lo: Value::Float(0.0),
            hi: Value::Float(100.0),
        }),
        step: boxed(Gen::Normal { mean: 0.0, stddev }),
        min: 0.0,
        max: 100.0,
        decimals: None,
        refill: None,
    }
}

const REGIONS: [(&str, &[&str]); 3] = [
    (
        "us-east-1",
        &["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1e"],
    ),
    ("eu-west-1", &["eu-west-1a", "eu-west-1b", "eu-west-1c"]),
    ("ap-northeast-1", &["ap-northeast-1a", "ap-northeast-1c"]),
];

/// A TSBS cpu-only-shaped schema: `hosts` series, `epochs` timestamps 10 s apart.
pub(crate) fn tsbs(hosts: u64, epochs: u64) -> SchemaPlan {
    SchemaPlan {
        name: "cpu".into(),
        table: "cpu".into(),
        series: hosts,
        time: Some(TimeAxis {
            column: "timestamp".into(),
            start: Value::Timestamp(T0),
            step: Value::Duration(TEN_S),
            count: epochs,
        }),
        rows: hosts * epochs,
        columns: vec![
            col(
                "hostname",
                "series",
                "symbol",
                "series",
                Gen::Format {
                    format: "host_%d".into(),
                    args: vec![Gen::SeriesIndex],
                },
            ),
            col(
                "region",
                "tag",
                "symbol",
                "series",
                Gen::Pick {
                    values: REGIONS.iter().map(|(r, _)| s(r)).collect(),
                },
            ),
            col(
                "datacenter",
                "tag",
                "symbol",
                "series",
                Gen::PickBy {
                    column: "region".into(),
                    choices: REGIONS
                        .iter()
                        .map(|(r, dcs)| (r.to_string(), dcs.iter().map(|d| s(d)).collect()))
                        .collect(),
                },
            ),
            col(
                "rack",
                "tag",
                "symbol",
                "series",
                Gen::ToStr {
                    of: boxed(Gen::Uniform {
                        lo: Value::Int(0),
                        hi: Value::Int(100),
                    }),
                },
            ),
            col("usage_user", "field", "long", "row", cpu_walk()),
            col("usage_system", "field", "long", "row", cpu_walk()),
            col(
                "timestamp",
                "timestamp",
                "timestamp",
                "row",
                Gen::Const {
                    value: Value::Timestamp(T0),
                },
            ),
        ],
        disorder: None,
    }
}

/// A schema without series or time axis.
fn flat(rows: u64, columns: Vec<ColumnPlan>) -> SchemaPlan {
    SchemaPlan {
        name: "orders".into(),
        table: "orders".into(),
        series: 1,
        time: None,
        rows,
        columns,
        disorder: None,
    }
}

fn all(schema: &SchemaPlan, seed: u64) -> Vec<Vec<Cell>> {
    rows(schema, seed, None).unwrap().collect()
}

fn text(c: &Cell) -> String {
    c.to_text()
}

fn long(c: &Cell) -> i64 {
    match c {
        Cell::Long(v) => *v,
        other => panic!("expected a long, got {other:?}"),
    }
}

#[test]
fn tsbs_rows_are_epoch_major_with_axis_timestamps() {
    let got = all(&tsbs(4, 3), 7);
    assert_eq!(got.len(), 12);
    for (g, row) in got.iter().enumerate() {
        let (epoch, host) = (g / 4, g % 4);
        assert_eq!(text(&row[0]), format!("host_{host}"));
        assert_eq!(row[6], Cell::Timestamp(T0 + epoch as i64 * TEN_S));
    }
    // Tags are per series: the same for a host at every epoch.
    for g in 4..12 {
        assert_eq!(got[g][..4], got[g % 4][..4]);
    }
}

#[test]
fn tsbs_golden_values() {
    // Pinned output: a change here changes every generated data set; bump it only on purpose
    // and say so in docs/rng.md.
    let got: Vec<String> = all(&tsbs(3, 2), 42)
        .iter()
        .map(|r| r.iter().map(text).collect::<Vec<_>>().join(","))
        .collect();
    assert_eq!(
        got,
        GOLDEN.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    );
}

const GOLDEN: [&str; 6] = [
    "host_0,ap-northeast-1,ap-northeast-1c,73,26,30,2016-01-01T00:00:00Z",
    "host_1,eu-west-1,eu-west-1b,1,28,62,2016-01-01T00:00:00Z",
    "host_2,ap-northeast-1,ap-northeast-1c,22,33,95,2016-01-01T00:00:00Z",
    "host_0,ap-northeast-1,ap-northeast-1c,73,26,31,2016-01-01T00:00:10Z",
    "host_1,eu-west-1,eu-west-1b,1,27,62,2016-01-01T00:00:10Z",
    "host_2,ap-northeast-1,ap-northeast-1c,22,34,94,2016-01-01T00:00:10Z",
];

#[test]
fn same_seed_same_rows_other_seed_other_rows() {
    let schema = tsbs(5, 20);
    let a = all(&schema, 1);
    assert_eq!(a, all(&schema, 1));
    let b = all(&schema, 2);
    assert_eq!(a.len(), b.len());
    assert_ne!(a, b);
    // The series keys and timestamps do not depend on the seed, the values do.
    let differing = a.iter().zip(&b).filter(|(x, y)| x[4] != y[4]).count();
    assert!(differing > 50, "{differing}");
}

#[test]
fn adding_a_column_changes_no_other_column() {
    let schema = tsbs(4, 10);
    let mut wider = schema.clone();
    wider
        .columns
        .insert(2, col("extra", "field", "double", "row", std_normal()));
    let a = all(&schema, 9);
    let b = all(&wider, 9);
    for (x, y) in a.iter().zip(&b) {
        let mut y = y.clone();
        y.remove(2);
        assert_eq!(*x, y);
    }
}

#[test]
fn shards_partition_the_rows_in_order() {
    let schema = tsbs(10, 6);
    let whole = all(&schema, 5);
    let mut union = Vec::new();
    for i in 0..3 {
        let part: Vec<Vec<Cell>> = rows(&schema, 5, Some((i, 3))).unwrap().collect();
        // Only owned series, each routed by FNV-1a of its key.
        for r in &part {
            assert_eq!(shard_of(&text(&r[0]), 3), i);
        }
        // In row order: a subsequence of the whole.
        let positions: Vec<usize> = part
            .iter()
            .map(|r| whole.iter().position(|w| w == r).unwrap())
            .collect();
        assert!(
            positions.windows(2).all(|w| w[0] < w[1]),
            "shard {i} out of order"
        );
        union.extend(part);
    }
    let key = |r: &Vec<Cell>| format!("{r:?}");
    let mut u: Vec<String> = union.iter().map(key).collect();
    let mut w: Vec<String> = whole.iter().map(key).collect();
    u.sort();
    w.sort();
    assert_eq!(u, w);
    assert!(rows(&schema, 5, Some((3, 3))).is_err());
}

#[test]
fn shards_of_a_schema_without_series_route_by_row() {
    let schema = flat(
        300,
        vec![
            col("id", "field", "long", "row", Gen::Seq { start: 0, step: 1 }),
            col("w", "field", "double", "row", cpu_walk()),
        ],
    );
    let whole = all(&schema, 3);
    let mut union: Vec<Vec<Cell>> = Vec::new();
    for i in 0..3 {
        let part: Vec<Vec<Cell>> = rows(&schema, 3, Some((i, 3))).unwrap().collect();
        assert!(!part.is_empty());
        for r in &part {
            let id = long(&r[0]);
            assert_eq!(shard_of(&id.to_string(), 3), i);
            // The walk continues through rows the shard does not own.
            assert_eq!(*r, whole[id as usize]);
        }
        assert!(part.windows(2).all(|w| long(&w[0][0]) < long(&w[1][0])));
        union.extend(part);
    }
    union.sort_by_key(|r| long(&r[0]));
    assert_eq!(union, whole);
}

#[test]
fn walks_clamp_and_long_columns_truncate() {
    let walk = |start: f64, step: Gen, min: f64, max: f64| Gen::Walk {
        start: boxed(Gen::Const {
            value: Value::Float(start),
        }),
        step: boxed(step),
        min,
        max,
        decimals: None,
        refill: None,
    };
    let one = Gen::Const {
        value: Value::Float(1.0),
    };
    let schema = flat(
        6,
        vec![
            col(
                "up",
                "field",
                "double",
                "row",
                walk(50.5, one.clone(), 0.0, 52.0),
            ),
            col(
                "up_long",
                "field",
                "long",
                "row",
                Gen::Column { name: "up".into() },
            ),
            col(
                "down",
                "field",
                "long",
                "row",
                walk(
                    -0.5,
                    Gen::Const {
                        value: Value::Float(-1.0),
                    },
                    -2.7,
                    0.0,
                ),
            ),
        ],
    );
    let got = all(&schema, 0);
    let up: Vec<Cell> = got.iter().map(|r| r[0].clone()).collect();
    let d = Cell::Double;
    assert_eq!(
        up,
        vec![d(50.5), d(51.5), d(52.0), d(52.0), d(52.0), d(52.0)]
    );
    let up_long: Vec<i64> = got.iter().map(|r| long(&r[1])).collect();
    assert_eq!(up_long, vec![50, 51, 52, 52, 52, 52]);
    // -0.5, -1.5, -2.5, -2.7 (clamped): truncated toward zero.
    let down: Vec<i64> = got.iter().map(|r| long(&r[2])).collect();
    assert_eq!(down, vec![0, -1, -2, -2, -2, -2]);

    // The TSBS walk: integers in 0..=100, and a wide step reaches both clamps.
    let mut wild = tsbs(20, 200);
    wild.columns[5].gen = walk_0_100(30.0);
    let got = all(&wild, 1);
    let vals: Vec<i64> = got
        .iter()
        .flat_map(|r| [long(&r[4]), long(&r[5])])
        .collect();
    assert!(vals.iter().all(|v| (0..=100).contains(v)));
    assert!(vals.contains(&0) && vals.contains(&100));
    // Consecutive values of a host's usage_user move by a N(0,1) step: rarely more than 5.
    let host0: Vec<i64> = got.iter().step_by(20).map(|r| long(&r[4])).collect();
    let big = host0.windows(2).filter(|w| (w[0] - w[1]).abs() > 5).count();
    assert_eq!(big, 0, "{host0:?}");
}

#[test]
fn pick_by_picks_from_the_region_of_the_same_row() {
    let got = all(&tsbs(200, 1), 11);
    let mut regions = std::collections::BTreeSet::new();
    for r in &got {
        let region = text(&r[1]);
        let dc = text(&r[2]);
        let (_, dcs) = REGIONS.iter().find(|(name, _)| *name == region).unwrap();
        assert!(dcs.contains(&dc.as_str()), "{region} {dc}");
        regions.insert(region);
        let rack: i64 = text(&r[3]).parse().unwrap();
        assert!((0..100).contains(&rack));
    }
    assert_eq!(regions.len(), 3);
}

#[test]
fn format_pads_the_series_index() {
    let mut schema = tsbs(8, 1);
    schema.columns[0].gen = Gen::Format {
        format: "host_%06d".into(),
        args: vec![Gen::SeriesIndex],
    };
    let got = all(&schema, 0);
    assert_eq!(text(&got[7][0]), "host_000007");
    assert_eq!(text(&got[0][0]), "host_000000");
}

#[test]
fn seq_counts_rows_of_the_series() {
    let schema = flat(
        4,
        vec![col(
            "id",
            "field",
            "long",
            "row",
            Gen::Seq {
                start: 100,
                step: 5,
            },
        )],
    );
    let ids: Vec<i64> = all(&schema, 0).iter().map(|r| long(&r[0])).collect();
    assert_eq!(ids, vec![100, 105, 110, 115]);
    let mut cpu = tsbs(3, 3);
    cpu.columns.push(col(
        "n",
        "field",
        "long",
        "row",
        Gen::Seq { start: 0, step: 1 },
    ));
    cpu.columns.push(col(
        "k",
        "tag",
        "long",
        "series",
        Gen::Seq { start: 10, step: 1 },
    ));
    let got = all(&cpu, 0);
    let n: Vec<i64> = got.iter().map(|r| long(&r[7])).collect();
    assert_eq!(n, vec![0, 0, 0, 1, 1, 1, 2, 2, 2]);
    let k: Vec<i64> = got.iter().map(|r| long(&r[8])).collect();
    assert_eq!(k, vec![10, 11, 12, 10, 11, 12, 10, 11, 12]);
}

#[test]
fn patterns_in_a_column() {
    let schema = flat(
        500,
        vec![col(
            "city",
            "field",
            "varchar",
            "row",
            Gen::Pattern {
                pattern: "City_[1-9]{0,2}".into(),
            },
        )],
    );
    let mut lens = [0; 3];
    for r in all(&schema, 4) {
        let t = text(&r[0]);
        let tail = t.strip_prefix("City_").unwrap();
        assert!(tail.chars().all(|c| ('1'..='9').contains(&c)));
        lens[tail.len()] += 1;
    }
    assert!(lens.iter().all(|&n| n > 100), "{lens:?}");
}

#[test]
fn null_probability_is_respected() {
    let mut c = col("v", "field", "double", "row", std_normal());
    c.null_probability = 0.3;
    let schema = flat(20_000, vec![c]);
    let nulls = all(&schema, 8)
        .iter()
        .filter(|r| r[0] == Cell::Null)
        .count();
    assert!((5_600..6_400).contains(&nulls), "{nulls}");
    // Per-series columns are nulled per series.
    let mut cpu = tsbs(50, 4);
    cpu.columns[1].null_probability = 0.5;
    let got = all(&cpu, 2);
    for r in &got[50..] {
        let host: usize = text(&r[0])[5..].parse().unwrap();
        assert_eq!(r[1], got[host][1]);
    }
    let null_hosts = got[..50].iter().filter(|r| r[1] == Cell::Null).count();
    assert!((10..40).contains(&null_hosts), "{null_hosts}");
}

#[test]
fn other_generators() {
    let dir = std::env::temp_dir().join(format!("wlrun-gen-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv_path = dir.join("hosts.csv");
    std::fs::write(&csv_path, "hostname,n\nh0,1\nh1,2\nh2,3\n").unwrap();
    let schema = flat(
        3000,
        vec![
            col("z", "field", "long", "row", Gen::Zipf { n: 5, s: 1.1 }),
            col("u", "field", "uuid", "row", Gen::Uuid),
            col("b", "field", "boolean", "row", Gen::Chance { p: 0.25 }),
            col(
                "w",
                "field",
                "symbol",
                "row",
                Gen::Weighted {
                    values: vec![s("a"), s("b"), s("c")],
                    weights: vec![1.0, 0.0, 3.0],
                },
            ),
            col(
                "h",
                "field",
                "symbol",
                "row",
                Gen::Csv {
                    path: csv_path.to_string_lossy().into_owned(),
                    column: "hostname".into(),
                    rows: 3,
                },
            ),
            col(
                "t",
                "field",
                "timestamp",
                "row",
                Gen::Uniform {
                    lo: Value::Timestamp(T0),
                    hi: Value::Timestamp(T0 + TEN_S),
                },
            ),
            col(
                "t2",
                "field",
                "timestamp",
                "row",
                Gen::Arith {
                    op: "+".into(),
                    lhs: boxed(Gen::Column { name: "t".into() }),
                    rhs: boxed(Gen::Const {
                        value: Value::Duration(3_600_000_000_000),
                    }),
                },
            ),
            col(
                "i",
                "field",
                "long",
                "row",
                Gen::Uniform {
                    lo: Value::Int(-3),
                    hi: Value::Int(3),
                },
            ),
            col(
                "n",
                "field",
                "long",
                "row",
                Gen::Csv {
                    path: csv_path.to_string_lossy().into_owned(),
                    column: "n".into(),
                    rows: 3,
                },
            ),
        ],
    );
    let got = all(&schema, 6);
    let mut zipf = [0; 5];
    let mut trues = 0;
    let mut weighted = [0; 3];
    let mut ints = std::collections::BTreeSet::new();
    for (g, r) in got.iter().enumerate() {
        zipf[long(&r[0]) as usize] += 1;
        let u = text(&r[1]);
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4", "{u}");
        assert!("89ab".contains(&u[19..20]), "{u}");
        trues += usize::from(r[2] == Cell::Bool(true));
        weighted[(text(&r[3]).as_bytes()[0] - b'a') as usize] += 1;
        assert_eq!(text(&r[4]), format!("h{}", g % 3));
        let Cell::Timestamp(t) = r[5] else { panic!() };
        assert!((T0..T0 + TEN_S).contains(&t));
        assert_eq!(r[6], Cell::Timestamp(t + 3_600_000_000_000));
        ints.insert(long(&r[7]));
        assert_eq!(long(&r[8]), (g % 3) as i64 + 1);
    }
    assert!(zipf.windows(2).all(|w| w[0] > w[1]), "{zipf:?}");
    assert!((600..900).contains(&trues), "{trues}");
    assert_eq!(weighted[1], 0);
    assert!((600..900).contains(&weighted[0]), "{weighted:?}");
    assert_eq!(
        ints.into_iter().collect::<Vec<_>>(),
        vec![-3, -2, -1, 0, 1, 2]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn schema_errors_are_reported_before_the_first_row() {
    let bad = |columns: Vec<ColumnPlan>| rows(&flat(1, columns), 0, None).err().unwrap();
    let per_row = |name: &str, ty: &str, gen: Gen| col(name, "field", ty, "row", gen);
    let refers = |to: &str| Gen::Column { name: to.into() };
    let e = bad(vec![per_row("a", "long", refers("nope"))]);
    assert_eq!(e.column, "a");
    assert!(e.message.contains("no column `nope`"), "{e}");
    for (columns, want) in [
        (
            vec![
                per_row("a", "long", refers("b")),
                per_row("b", "long", refers("a")),
            ],
            "cycle",
        ),
        (
            vec![
                per_row("a", "long", Gen::Seq { start: 0, step: 1 }),
                col("b", "tag", "long", "series", refers("a")),
            ],
            "drawn per row",
        ),
        (
            vec![per_row(
                "a",
                "symbol",
                Gen::Csv {
                    path: "/nonexistent/params.csv".into(),
                    column: "x".into(),
                    rows: 0,
                },
            )],
            "cannot read CSV file",
        ),
        (
            vec![per_row("a", "long", Gen::Bind { index: 1 })],
            "query generator",
        ),
    ] {
        let e = bad(columns);
        assert!(e.message.contains(want), "{e}");
    }
    let e = bad(vec![per_row(
        "a",
        "symbol",
        Gen::Format {
            format: "%d-%d".into(),
            args: vec![Gen::SeriesIndex],
        },
    )]);
    assert!(e.message.contains("takes 2 arguments"), "{e}");
    assert_eq!(
        e.to_string(),
        "schema `orders`, column `a`: the format takes 2 arguments but 1 are given"
    );
}

/// The full TSBS cpu-only shape: 10 tags (hostname + 9 per-series draws) and 10 walk fields.
fn tsbs_full(hosts: u64, epochs: u64) -> SchemaPlan {
    let mut schema = tsbs(hosts, epochs);
    let time = schema.columns.pop().unwrap();
    schema.columns.truncate(4);
    let pick = |vs: &[&str]| Gen::Pick {
        values: vs.iter().map(|v| s(v)).collect(),
    };
    let num = |hi: i64| Gen::ToStr {
        of: boxed(Gen::Uniform {
            lo: Value::Int(0),
            hi: Value::Int(hi),
        }),
    };
    for (name, gen) in [
        (
            "os",
            pick(&["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"]),
        ),
        ("arch", pick(&["x64", "x86"])),
        ("team", pick(&["SF", "NYC", "LON", "CHI"])),
        ("service", num(20)),
        ("service_version", num(2)),
        (
            "service_environment",
            pick(&["production", "staging", "test"]),
        ),
    ] {
        schema
            .columns
            .push(col(name, "tag", "symbol", "series", gen));
    }
    for f in GAUGES {
        schema
            .columns
            .push(col(f, "field", "long", "row", cpu_walk()));
    }
    schema.columns.push(time);
    schema
}

/// `cargo test --release --lib gen::tests::throughput -- --ignored --nocapture`
#[test]
#[ignore = "timing; run in release by hand"]
fn throughput() {
    for (hosts, epochs) in [(100, 360), (1000, 1000)] {
        let schema = tsbs_full(hosts, epochs);
        let start = std::time::Instant::now();
        let n = rows(&schema, 1, None).unwrap().count();
        let secs = start.elapsed().as_secs_f64();
        println!(
            "{hosts} hosts x {epochs} timestamps, 21 columns: {n} rows in {secs:.3}s = {:.0} rows/s",
            n as f64 / secs
        );
        let start = std::time::Instant::now();
        let mut out = Vec::new();
        let gen = rows(&schema, 1, None).unwrap();
        crate::encode::write_csv(
            &mut out,
            &schema,
            gen,
            crate::encode::TimestampStyle::Rfc3339,
        )
        .unwrap();
        let secs = start.elapsed().as_secs_f64();
        println!(
            "  + CSV: {:.1} MB in {secs:.3}s = {:.0} rows/s",
            out.len() as f64 / 1e6,
            n as f64 / secs
        );
    }
}

#[test]
fn csv_files_are_read_through_the_callers_resolver() {
    let schema = flat(
        4,
        vec![col(
            "host",
            "field",
            "symbol",
            "row",
            Gen::Csv {
                path: "query_params.csv".into(),
                column: "hostname".into(),
                rows: 2,
            },
        )],
    );
    let read = |path: &str| -> std::io::Result<Vec<u8>> {
        assert_eq!(path, "query_params.csv");
        Ok(b"hostname,start_time\nhost_000001,2017-01-01 08:59:22\nhost_000008,x\n".to_vec())
    };
    let got: Vec<String> = rows_with(&schema, 0, None, &read)
        .unwrap()
        .map(|r| text(&r[0]))
        .collect();
    assert_eq!(
        got,
        ["host_000001", "host_000008", "host_000001", "host_000008"]
    );
}

/// YCSB's choosers in a schema: each column is `gen::ycsb`'s draw at the column's site (its
/// stream, series 0, the row), `sequential` and `latest(n, seq())` count rows, and a key
/// number names its key.
#[test]
fn ycsb_choosers_in_columns_are_their_draws_at_the_row() {
    use super::rng::Rng;
    use super::route::column_stream;
    use super::ycsb;
    let key = |g: Gen| boxed(g);
    let schema = flat(
        2000,
        vec![
            col(
                "zipf",
                "field",
                "long",
                "row",
                Gen::ScrambledZipfian {
                    lo: 0,
                    hi: 1001,
                    last: None,
                },
            ),
            col(
                "latest",
                "field",
                "long",
                "row",
                Gen::Latest {
                    records: 1000,
                    inserted: key(Gen::Seq { start: 0, step: 1 }),
                },
            ),
            col(
                "hot",
                "field",
                "long",
                "row",
                Gen::Hotspot {
                    lo: 10,
                    hi: 110,
                    hot_data: 0.2,
                    hot_ops: 0.8,
                },
            ),
            col(
                "expo",
                "field",
                "long",
                "row",
                Gen::ExponentialKey {
                    last: key(Gen::Const {
                        value: Value::Int(999),
                    }),
                    range: 857.0,
                    percentile: 95.0,
                },
            ),
            col(
                "turn",
                "field",
                "long",
                "row",
                Gen::Sequential { lo: 5, hi: 8 },
            ),
            col(
                "name",
                "field",
                "varchar",
                "row",
                Gen::YcsbKey {
                    key: key(Gen::Seq { start: 0, step: 1 }),
                    ordered: false,
                    zero_padding: 1,
                    prefix: "user".into(),
                },
            ),
            col(
                "value",
                "field",
                "varchar",
                "row",
                Gen::YcsbValue { len: 100 },
            ),
            col(
                "capped",
                "field",
                "long",
                "row",
                Gen::Zipfian {
                    lo: 0,
                    hi: 1000,
                    theta: 0.99,
                    last: Some(key(Gen::Const {
                        value: Value::Int(3),
                    })),
                },
            ),
        ],
    );
    let rows = all(&schema, 5);
    let site = |c: &str, row: u64| Rng::new(5, column_stream(&schema.name, c), 0, row);
    let scrambled = ycsb::Scrambled::new(0, 1001);
    let latest = ycsb::Latest::new(1000);
    let hot = ycsb::Hotspot::new(10, 110, 0.2, 0.8);
    let gamma = ycsb::exponential_gamma(95.0, 857.0);
    let gray = ycsb::Gray::new(0, 999, 0.99);
    for (i, row) in rows.iter().enumerate() {
        let i = i as u64;
        assert_eq!(long(&row[0]), scrambled.draw(site("zipf", i).f64()));
        let want = latest.draw(i as i64, site("latest", i).f64()).unwrap();
        assert_eq!(long(&row[1]), want);
        let mut r = site("hot", i);
        let u = r.f64();
        assert_eq!(long(&row[2]), hot.draw(u, r.next_u64() as i64));
        let mut r = site("expo", i);
        let want = std::iter::repeat_with(|| ycsb::exponential_key(999, gamma, r.f64()))
            .flatten()
            .next()
            .unwrap();
        assert_eq!(long(&row[3]), want);
        assert_eq!(long(&row[4]), 5 + (i as i64 % 3));
        let mut name = String::new();
        ycsb::key_name(i as i64, false, 1, "user", &mut name);
        assert_eq!(text(&row[5]), name);
        let mut r = site("value", i);
        let mut value = String::new();
        ycsb::random_bytes(100, || (r.next_u64() >> 32) as i32, &mut value);
        assert_eq!(text(&row[6]), value);
        let mut r = site("capped", i);
        let want = std::iter::repeat_with(|| gray.draw(r.f64()))
            .find(|&k| k <= 3)
            .unwrap();
        assert_eq!(long(&row[7]), want);
    }
    assert_eq!(text(&rows[0][5]), "user6284781860667377211");
    // The columnar engine takes the reference's path for these and gives the same values.
    let mut g = Columnar::new(&schema, 5, None, &|p| std::fs::read(p)).unwrap();
    let mut b = g.new_batch();
    let n = g.fill(&mut b, 10);
    assert_eq!(n, 10);
}

/// A query's counter (`issued`) in a schema is refused when the schema is compiled.
#[test]
fn issued_is_refused_in_a_schema() {
    let schema = flat(
        10,
        vec![col(
            "n",
            "field",
            "long",
            "row",
            Gen::Issued {
                query: "insert".into(),
                counted: 0,
            },
        )],
    );
    let err = rows(&schema, 1, None).err().expect("refused");
    assert!(
        err.message.contains("only a query's binds"),
        "{}",
        err.message
    );
}
