use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use super::*;
use crate::gen::fnv1a64;
use crate::gen::rng::Rng;
use crate::gen::sample_indices;
use crate::plan::{BindPlan, CsvPlan, Gen, Phase, Plan};
use crate::value::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const T2016: i64 = 1_451_606_400_000_000_000; // 2016-01-01T00:00:00Z
const SECOND: i64 = 1_000_000_000;
const HOUR: i64 = 3600 * SECOND;

fn lowered(out: crate::compile::Outcome) -> (Plan, u64) {
    let Some(checked) = &out.checked else {
        panic!(
            "{}",
            crate::diag::render_all(&out.map, &out.diagnostics, crate::diag::Style::Plain)
        );
    };
    (crate::lower::lower(checked), checked.seed)
}

/// The queries of every query phase of the first cell, and the seed.
fn queries(plan: &Plan) -> Vec<QueryPlan> {
    plan.cells[0]
        .phases
        .iter()
        .filter_map(|p| match p {
            Phase::Queries(q) => Some(q.queries.clone()),
            _ => None,
        })
        .flatten()
        .collect()
}

fn from_text(text: &str) -> (Vec<QueryPlan>, u64) {
    let (plan, seed) = lowered(crate::compile::check_text(
        "t.wl",
        text,
        &Default::default(),
    ));
    (queries(&plan), seed)
}

fn from_file(rel: &str) -> (Vec<QueryPlan>, u64, PathBuf) {
    let path = Path::new(ROOT).join(rel);
    let (plan, seed) = lowered(crate::compile::check_file(&path, &Default::default()));
    (queries(&plan), seed, path.parent().unwrap().to_path_buf())
}

fn compile(q: &QueryPlan, seed: u64) -> BindProgram {
    BindProgram::compile(q, seed, Path::new(ROOT)).unwrap_or_else(|e| panic!("{}: {e}", q.name))
}

fn find<'a>(qs: &'a [QueryPlan], name: &str) -> &'a QueryPlan {
    qs.iter().find(|q| q.name == name).unwrap()
}

/// A workload of 10 hosts with `queries` run against SQLite.
fn workload(hosts: u64, queries: &str, names: &str) -> String {
    format!(
        r#"
workload t {{ seed 42 }}
schema cpu {{
  series hostname: symbol = format("host_%d", n) for n in 0..{hosts}
  field usage: double = uniform(0.0, 100.0)
  timestamp ts: timestamp(ns) = every 10s from 2016-01-01T00:00:00Z to 2016-01-01T01:00:00Z
}}
target local {{ sqlite "t.db" }}
{queries}
run r {{ against local.sqlite  queries {names}  count 10 }}
"#
    )
}

const MANY: &str = r#"
query many {
  sql "SELECT $1, $2, $3, $4, $5, $6, $7, $8 FROM cpu WHERE hostname IN $9"
  let w = window(2016-01-01T00:00:00Z, 2016-01-02T00:00:01Z, 1h)
  bind $1 = uniform(0, 1000000)
  bind $2 = uniform(0.0, 1.0)
  bind $3 = uniform(2016-01-01T00:00:00Z, 2016-01-02T00:00:00Z)
  bind $4 = zipf(1000, 1.1)
  bind $5 = w.start
  bind $6 = w.end
  bind $7 = seq(10, 5)
  bind $8 = $3 + 1h
  bind $9 = sample(cpu.hostname, 3)
}
"#;

fn text_of(v: &BindValue) -> String {
    match v {
        BindValue::Text(s) => s.clone(),
        other => panic!("not text: {other:?}"),
    }
}

fn ts(v: &BindValue) -> i64 {
    match v {
        BindValue::Timestamp(t) => *t,
        other => panic!("not a timestamp: {other:?}"),
    }
}

/// The host names inlined in an instance's `IN (...)` list.
fn hosts_in(sql: &str) -> Vec<String> {
    let start = sql.find("IN (").expect("an inlined list") + 4;
    let end = start + sql[start..].find(')').unwrap();
    sql[start..end]
        .split(',')
        .map(|h| h.trim_matches('\'').to_string())
        .collect()
}

#[test]
fn the_same_instance_for_the_same_seed_and_index() {
    let (qs, seed) = from_text(&workload(10, MANY, "many"));
    let a = compile(&qs[0], seed);
    let b = compile(&qs[0], seed);
    for i in [0, 5, 1 << 40] {
        assert_eq!(
            a.instance(0, i).unwrap(),
            b.instance(3, i).unwrap().with_query(0)
        );
    }
    // Another index draws again: no two of 50 instances share any random value.
    let all: Vec<Instance> = (0..50).map(|i| a.instance(0, i).unwrap()).collect();
    for k in [0, 1, 2] {
        let distinct: HashSet<String> = all.iter().map(|x| format!("{:?}", x.binds[k])).collect();
        assert!(
            distinct.len() >= 45,
            "bind {} repeats: {}",
            k + 1,
            distinct.len()
        );
    }
    // Zipf repeats its head often, but not always.
    let zipf: HashSet<String> = all.iter().map(|x| format!("{:?}", x.binds[3])).collect();
    assert!(zipf.len() > 5, "{zipf:?}");
    // Another seed too.
    let c = compile(&qs[0], seed + 1);
    assert_ne!(
        a.instance(0, 5).unwrap().binds,
        c.instance(0, 5).unwrap().binds
    );
}

impl Instance {
    fn with_query(mut self, q: usize) -> Instance {
        self.query = q;
        self
    }
}

#[test]
fn an_instance_does_not_depend_on_the_ones_before() {
    let (qs, seed) = from_text(&workload(10, MANY, "many"));
    let a = compile(&qs[0], seed);
    let mut last = None;
    for i in 0..=7 {
        last = Some(a.instance(0, i).unwrap());
    }
    let alone = compile(&qs[0], seed).instance(0, 7).unwrap();
    assert_eq!(last.unwrap(), alone);
}

#[test]
fn values_of_each_generator() {
    let (qs, seed) = from_text(&workload(10, MANY, "many"));
    let p = compile(&qs[0], seed);
    assert_eq!(p.bind_order(), [1, 2, 3, 4, 5, 6, 7, 8]);
    for i in 0..200 {
        let x = p.instance(0, i).unwrap();
        let b = &x.binds;
        assert_eq!(b.len(), 8);
        assert!(matches!(b[0], BindValue::Int(v) if (0..1_000_000).contains(&v)));
        assert!(matches!(b[1], BindValue::Float(v) if (0.0..1.0).contains(&v)));
        let t = ts(&b[2]);
        assert!((T2016..T2016 + 24 * HOUR).contains(&t));
        assert!(matches!(b[3], BindValue::Int(v) if (0..1000).contains(&v)));
        assert_eq!(
            b[6],
            BindValue::Int(10 + 5 * i as i64),
            "seq counts instances"
        );
        assert_eq!(ts(&b[7]), t + HOUR, "a bind over an earlier bind");
        assert!(x.sql.contains("WHERE hostname IN ('host_"), "{}", x.sql);
        assert!(x.route.is_none());
    }
}

#[test]
fn the_sql_of_a_tsbs_query_follows_the_documented_draws() {
    let text = r#"
import "std/tsbs/queries-postgres.wl" as tsbsq (hosts = 4000)
workload t { seed 123 }
target pg { dialect postgres  pg "postgres://u@127.0.0.1/db" }
run r { against pg.pg  queries tsbsq.*  count 10 per query }
"#;
    let (qs, seed) = from_text(text);
    let q = find(&qs, "single_groupby_1_8_1");
    let p = compile(q, seed);
    assert_eq!(p.bind_order(), [2, 3]);
    for index in [0u64, 1, 99] {
        let x = p.instance(4, index).unwrap();
        // docs/rng.md "Query binds": the hosts from stream "query:<name>.$1", the window from
        // "query:<name>.let:w", each at (seed, stream, series 0, row = index).
        let mut r = Rng::new(seed, fnv1a64(b"query:single_groupby_1_8_1.$1"), 0, index);
        let hosts: Vec<String> = sample_indices(&mut r, 4000, 8)
            .iter()
            .map(|i| format!("'host_{i}'"))
            .collect();
        let from = T2016;
        let last = T2016 + 24 * HOUR + SECOND - HOUR;
        let mut r = Rng::new(seed, fnv1a64(b"query:single_groupby_1_8_1.let:w"), 0, index);
        let drawn = from + r.below((last - from) as u64) as i64;
        let start = drawn - drawn.rem_euclid(SECOND);
        let want = q
            .sql
            .replace("$1", &format!("({})", hosts.join(",")))
            .replace("$2", "$1")
            .replace("$3", "$2");
        assert_eq!(&*x.sql, want);
        assert_eq!(
            x.binds,
            [
                BindValue::Timestamp(start),
                BindValue::Timestamp(start + HOUR)
            ]
        );
        assert_eq!((x.query, x.index), (4, index));
    }
}

#[test]
fn draws_follow_the_query_name_not_its_position() {
    let body = |name: &str| {
        format!(
            "query {name} {{ sql \"SELECT $1, $2 FROM cpu WHERE hostname IN $3\"
               bind $1 = uniform(0, 1000000)  bind $2 = uniform(0.0, 1.0)
               bind $3 = sample(cpu.hostname, 2) }}\n"
        )
    };
    let one = format!("{}{}", body("a"), body("b"));
    let two = format!("{}{}{}", body("z"), body("a"), body("b"));
    let (qs1, seed) = from_text(&workload(1000, &one, "a, b"));
    let (qs2, _) = from_text(&workload(1000, &two, "z, a, b"));
    let a1 = compile(find(&qs1, "a"), seed);
    let a2 = compile(find(&qs2, "a"), seed);
    let b1 = compile(find(&qs1, "b"), seed);
    for i in 0..20 {
        // Adding a query before `a` changes nothing of `a`'s.
        assert_eq!(a1.instance(0, i).unwrap(), a2.instance(0, i).unwrap());
        // The same generators under another name draw other values.
        let (x, y) = (a1.instance(0, i).unwrap(), b1.instance(0, i).unwrap());
        assert_ne!(x.binds[0], y.binds[0]);
        assert_ne!(x.binds[1], y.binds[1]);
    }
}

#[test]
fn the_same_query_names_in_the_postgres_and_questdb_sets_draw_the_same_values() {
    let text = |set: &str| {
        format!(
            r#"
import "std/tsbs/{set}" as tsbsq (hosts = 100)
workload t {{ seed 123 }}
target db {{ dialect postgres  pg "postgres://u@127.0.0.1/db" }}
run r {{ against db.pg  queries tsbsq.*  count 10 per query }}
"#
        )
    };
    let (pg, seed) = from_text(&text("queries-postgres.wl"));
    let (qdb, _) = from_text(&text("queries-questdb.wl"));
    assert_eq!(pg.len(), 16);
    for q in &pg {
        let other = find(&qdb, &q.name);
        let (a, b) = (compile(q, seed), compile(other, seed));
        for i in 0..5 {
            let (x, y) = (a.instance(0, i).unwrap(), b.instance(0, i).unwrap());
            assert_eq!(x.binds, y.binds, "{}", q.name);
            if x.sql.contains("IN (") {
                assert_eq!(hosts_in(&x.sql), hosts_in(&y.sql), "{}", q.name);
            }
        }
    }
}

#[test]
fn sample_draws_distinct_hosts_uniformly() {
    let q = r#"query s { sql "SELECT 1 FROM cpu WHERE hostname IN $1"  bind $1 = sample(cpu.hostname, 3) }"#;
    let (qs, seed) = from_text(&workload(10, q, "s"));
    let p = compile(&qs[0], seed);
    let n = 30_000;
    let mut any: BTreeMap<String, u32> = BTreeMap::new();
    let mut first: BTreeMap<String, u32> = BTreeMap::new();
    for i in 0..n {
        let x = p.instance(0, i).unwrap();
        assert!(x.binds.is_empty());
        let hosts = hosts_in(&x.sql);
        assert_eq!(hosts.len(), 3);
        assert_eq!(hosts.iter().collect::<HashSet<_>>().len(), 3, "{hosts:?}");
        for h in &hosts {
            let id: u64 = h.strip_prefix("host_").unwrap().parse().unwrap();
            assert!(id < 10, "{h}");
            *any.entry(h.clone()).or_default() += 1;
        }
        *first.entry(hosts[0].clone()).or_default() += 1;
    }
    assert_eq!(any.len(), 10);
    // Each host is in 3/10 of the samples, and first in 1/10 of them.
    for (h, c) in &any {
        let share = f64::from(*c) / n as f64;
        assert!((share - 0.3).abs() < 0.012, "{h}: {share}");
    }
    for (h, c) in &first {
        let share = f64::from(*c) / n as f64;
        assert!((share - 0.1).abs() < 0.008, "{h}: {share}");
    }
}

#[test]
fn sample_from_a_large_domain() {
    let q = r#"query s { sql "SELECT 1 FROM cpu WHERE hostname IN $1"  bind $1 = sample(cpu.hostname, 1000) }"#;
    let (qs, seed) = from_text(&workload(100_000, q, "s"));
    let p = compile(&qs[0], seed);
    let mut seen = HashSet::new();
    for i in 0..5 {
        let hosts = hosts_in(&p.instance(0, i).unwrap().sql);
        assert_eq!(hosts.len(), 1000);
        assert_eq!(hosts.iter().collect::<HashSet<_>>().len(), 1000);
        for h in hosts {
            let id: u64 = h.strip_prefix("host_").unwrap().parse().unwrap();
            assert!(id < 100_000);
            seen.insert(id);
        }
    }
    // Spread over the domain, not a corner of it.
    assert!(seen.iter().any(|&i| i < 10_000) && seen.iter().any(|&i| i >= 90_000));
}

#[test]
fn sampled_series_keys_are_the_generated_ones() {
    // A series key drawn at random per series: sampling every series must give exactly the
    // keys the data generator writes.
    let text = r#"
workload t { seed 9 }
schema ev {
  series id: varchar = format("%s-%d", pattern("[a-z]{6}"), n) for n in 0..20
  field v: long = uniform(0, 10)
  timestamp ts: timestamp(ns) = every 1s from 2016-01-01T00:00:00Z to 2016-01-01T00:00:02Z
}
target local { sqlite "t.db" }
query s { sql "SELECT 1 FROM ev WHERE id IN $1"  bind $1 = sample(ev.id, 20) }
run r { against local.sqlite  queries s  count 1 }
"#;
    let out = crate::compile::check_text("t.wl", text, &Default::default());
    let (plan, seed) = lowered(out);
    let schema = crate::compile::schema_plan(
        crate::compile::check_text("t.wl", text, &Default::default())
            .checked
            .as_ref()
            .unwrap(),
        Some("ev"),
    )
    .unwrap();
    let data: HashSet<String> = crate::gen::rows(&schema, seed, None)
        .unwrap()
        .map(|row| row[0].to_text())
        .collect();
    assert_eq!(data.len(), 20);
    let p = compile(&queries(&plan)[0], seed);
    let x = p.instance(0, 0).unwrap();
    let sampled: HashSet<String> = hosts_in(&x.sql).into_iter().collect();
    assert_eq!(sampled, data);
}

#[test]
fn windows_are_whole_seconds_of_the_given_length_inside_the_bounds() {
    let q = r#"query w {
      sql "SELECT 1 FROM cpu WHERE ts >= $1 AND ts < $2"
      let w = window(2016-01-01T00:00:00Z, 2016-01-02T00:00:01Z, 12h)
      bind $1 = w.start
      bind $2 = w.end
      route by w
    }"#;
    let (qs, seed) = from_text(&workload(10, q, "w"));
    let p = compile(&qs[0], seed);
    let last = T2016 + 24 * HOUR + SECOND - 12 * HOUR;
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for i in 0..5000 {
        let x = p.instance(0, i).unwrap();
        let (start, end) = (ts(&x.binds[0]), ts(&x.binds[1]));
        assert!(start >= T2016 && start < last, "{start}");
        assert_eq!(start % SECOND, 0);
        assert_eq!(end - start, 12 * HOUR);
        lo = lo.min(start);
        hi = hi.max(start);
        if i == 0 {
            let route = x.route.unwrap();
            assert!(route.contains('/') && route.ends_with('Z'), "{route}");
        }
    }
    // 43,201 possible starts, 5,000 draws: both ends are reached within a few minutes.
    assert!(lo - T2016 < 300 * SECOND, "{}", lo - T2016);
    assert!(last - hi < 300 * SECOND, "{}", last - hi);
}

fn csv_query(path: &str, columns: &[(&str, &str)]) -> QueryPlan {
    let placeholders = columns.len() as u32;
    let sql = (1..=placeholders)
        .map(|n| format!("${n}"))
        .collect::<Vec<_>>()
        .join(", ");
    QueryPlan {
        name: "c".into(),
        label: "c".into(),
        sql: format!("SELECT {sql}"),
        placeholders,
        lets: vec![],
        binds: vec![],
        csv: Some(CsvPlan {
            path: path.into(),
            columns: columns
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            rows: 2,
        }),
        route: Some(Gen::Bind { index: 1 }),
        weight: 1.0,
        expects: vec![],
        instance: Default::default(),
        family: None,
    }
}

#[test]
fn csv_binds_are_typed_and_cycle_over_rows() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("p.csv"),
        "extra,h,n,x,b,t,tz\n\
         0,host_1,42,0.5,true,2017-01-01 00:23:38,2017-01-01T00:23:38.5Z\n\
         0,\"a,b\",-1,1e3,f,2017-01-01 00:00:00.25,2017-01-01T02:00:00+02:00\n\
         0,x,,, , , \n",
    )
    .unwrap();
    let cols = [
        ("h", "text"),
        ("n", "bigint"),
        ("x", "double"),
        ("b", "boolean"),
        ("t", "timestamp"),
        ("tz", "timestamptz"),
    ];
    let p = BindProgram::compile(&csv_query("p.csv", &cols), 1, dir.path()).unwrap();
    let t = 1_483_230_218_000_000_000; // 2017-01-01T00:23:38Z
    let day = 1_483_228_800_000_000_000; // 2017-01-01T00:00:00Z
    use BindValue::*;
    let x = p.instance(0, 0).unwrap();
    assert_eq!(
        x.binds,
        [
            Text("host_1".into()),
            Int(42),
            Float(0.5),
            Bool(true),
            Timestamp(t),
            Timestamp(t + 500_000_000)
        ]
    );
    assert_eq!(x.route.as_deref(), Some("host_1"));
    let x = p.instance(0, 1).unwrap();
    assert_eq!(
        x.binds,
        [
            Text("a,b".into()),
            Int(-1),
            Float(1000.0),
            Bool(false),
            Timestamp(day + 250_000_000),
            Timestamp(day)
        ]
    );
    let x = p.instance(0, 2).unwrap();
    assert_eq!(x.binds, [Text("x".into()), Null, Null, Null, Null, Null]);
    // Row i mod 3.
    assert_eq!(
        p.instance(0, 4).unwrap().binds,
        p.instance(0, 1).unwrap().binds
    );
    assert_eq!(&*x.sql, "SELECT $1, $2, $3, $4, $5, $6");
}

/// A bind file that is not a `.csv` keeps its values to itself: the error gives the line and
/// column, not the value (`binds from csv "creds.txt"` printed a token that did not parse).
#[test]
fn csv_errors_quote_no_value_of_a_file_that_is_not_csv() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("creds.txt"), "user,n\nbob,sk_live_SECRET\n").unwrap();
    let err = BindProgram::compile(
        &csv_query("creds.txt", &[("user", "text"), ("n", "int")]),
        1,
        dir.path(),
    )
    .unwrap_err();
    assert!(err.contains("line 2") && err.contains("`n`"), "{err}");
    assert!(!err.contains("SECRET"), "{err}");
}

#[test]
fn csv_errors_name_the_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.csv"), "h,n\nhost_1,1\nhost_2,two\n").unwrap();
    let err = BindProgram::compile(
        &csv_query("bad.csv", &[("h", "text"), ("n", "int")]),
        1,
        dir.path(),
    )
    .unwrap_err();
    assert!(
        err.contains("bad.csv") && err.contains("line 3") && err.contains("`n`"),
        "{err}"
    );
    assert!(err.contains("\"two\""), "{err}");
    let err = BindProgram::compile(
        &csv_query("bad.csv", &[("h", "text"), ("x", "int")]),
        1,
        dir.path(),
    )
    .unwrap_err();
    assert!(err.contains("bad.csv") && err.contains("`x`"), "{err}");
    let err =
        BindProgram::compile(&csv_query("nope.csv", &[("h", "text")]), 1, dir.path()).unwrap_err();
    assert!(err.contains("nope.csv"), "{err}");
    std::fs::write(dir.path().join("ragged.csv"), "h,n\na,1\nb\n").unwrap();
    let err = BindProgram::compile(
        &csv_query("ragged.csv", &[("h", "text"), ("n", "int")]),
        1,
        dir.path(),
    )
    .unwrap_err();
    assert!(
        err.contains("ragged.csv") && err.contains("line: 3"),
        "{err}"
    );
    std::fs::write(dir.path().join("empty.csv"), "h,n\n").unwrap();
    let err =
        BindProgram::compile(&csv_query("empty.csv", &[("h", "text")]), 1, dir.path()).unwrap_err();
    assert!(err.contains("no rows"), "{err}");
}

fn hand(sql: &str, binds: Vec<(u32, Gen)>) -> QueryPlan {
    QueryPlan {
        name: "h".into(),
        label: "h".into(),
        sql: sql.into(),
        placeholders: binds.iter().map(|b| b.0).max().unwrap_or(0),
        lets: vec![],
        binds: binds
            .into_iter()
            .map(|(index, gen)| BindPlan { index, gen })
            .collect(),
        csv: None,
        route: None,
        weight: 1.0,
        expects: vec![],
        instance: Default::default(),
        family: None,
    }
}

fn text(s: &str) -> Value {
    Value::Str(crate::value::Text::lit(s))
}

#[test]
fn lists_use_the_dialect_and_route_joins_them() {
    let sample = |values: Vec<Value>, k| Gen::Sample {
        from: crate::plan::Domain::List { values },
        k,
    };
    let mut q = hand(
        "SELECT 1 WHERE a IN $1 AND b IN $2 AND c = $3",
        vec![
            (1, sample(vec![text("it's")], 1)),
            (2, sample(vec![Value::Timestamp(T2016 + SECOND / 2)], 1)),
            (
                3,
                Gen::Const {
                    value: Value::Duration(HOUR),
                },
            ),
        ],
    );
    q.route = Some(Gen::Bind { index: 1 });
    let p = BindProgram::compile(&q, 1, Path::new(ROOT)).unwrap();
    let x = p.instance(0, 0).unwrap();
    assert_eq!(
        &*x.sql,
        "SELECT 1 WHERE a IN ('it''s') AND b IN ('2016-01-01 00:00:00.5+00'::timestamptz) AND c = $1"
    );
    assert_eq!(x.binds, [BindValue::Int(HOUR)], "durations are nanoseconds");
    assert_eq!(x.route.as_deref(), Some("it's"));
    let p = p.with_dialect(Dialect::Sqlite);
    let x = p.instance(0, 0).unwrap();
    assert!(
        x.sql.contains("b IN ('2016-01-01 00:00:00.500000')"),
        "{}",
        x.sql
    );

    // A list route: its elements' texts joined by ','.
    let mut q = hand(
        "SELECT 1 WHERE a IN $1",
        vec![(1, sample(vec![Value::Int(1), Value::Int(2)], 2))],
    );
    q.route = Some(Gen::Bind { index: 1 });
    let p = BindProgram::compile(&q, 1, Path::new(ROOT)).unwrap();
    let x = p.instance(0, 0).unwrap();
    let route = x.route.unwrap();
    assert!(route == "1,2" || route == "2,1", "{route}");
    assert!(matches!(
        &*x.sql,
        "SELECT 1 WHERE a IN (1,2)" | "SELECT 1 WHERE a IN (2,1)"
    ));
}

#[test]
fn compile_errors_are_results() {
    // A window bound directly.
    let w = Gen::Window {
        from: Value::Timestamp(0),
        to: Value::Timestamp(10 * HOUR),
        length: Value::Duration(HOUR),
    };
    let err =
        BindProgram::compile(&hand("SELECT $1", vec![(1, w)]), 1, Path::new(ROOT)).unwrap_err();
    assert!(err.contains("window"), "{err}");
    // A placeholder without a bind.
    let mut q = hand("SELECT $1, $2", vec![(1, Gen::Uuid)]);
    q.placeholders = 2;
    let err = BindProgram::compile(&q, 1, Path::new(ROOT)).unwrap_err();
    assert!(err.contains("$2"), "{err}");
    // A bind reading a later one, and a walk.
    let err = BindProgram::compile(
        &hand(
            "SELECT $1, $2",
            vec![(1, Gen::Bind { index: 2 }), (2, Gen::Uuid)],
        ),
        1,
        Path::new(ROOT),
    )
    .unwrap_err();
    assert!(err.contains("$2"), "{err}");
    let walk = Gen::Walk {
        start: Box::new(Gen::Const {
            value: Value::Float(0.0),
        }),
        step: Box::new(Gen::Const {
            value: Value::Float(1.0),
        }),
        min: 0.0,
        max: 1.0,
        decimals: None,
        refill: None,
    };
    let err =
        BindProgram::compile(&hand("SELECT $1", vec![(1, walk)]), 1, Path::new(ROOT)).unwrap_err();
    assert!(err.contains("walk"), "{err}");
}

/// Every query of the shipped query files compiles and yields instances whose SQL has as many
/// placeholders as the instance has values.
#[test]
fn shipped_queries_compile_and_yield_instances() {
    let mut sets: Vec<(String, Vec<QueryPlan>, u64, PathBuf)> = Vec::new();
    for set in ["queries-postgres.wl", "queries-questdb.wl"] {
        let text = format!(
            r#"
import "std/tsbs/{set}" as tsbsq (hosts = 4000)
workload t {{ seed 123 }}
target db {{ dialect questdb  pg "postgres://u@127.0.0.1/db" }}
run r {{ against db.pg  queries tsbsq.*  count 10 per query }}
"#
        );
        let (qs, seed) = from_text(&text);
        sets.push((set.into(), qs, seed, PathBuf::from(ROOT)));
    }
    for file in [
        "workloads/pgbench-timeseries.wl",
        "workloads/questdb-queries.wl",
        "examples/quickstart.wl",
    ] {
        let (qs, seed, dir) = from_file(file);
        sets.push((file.into(), qs, seed, dir));
    }
    let mut total = 0;
    for (set, qs, seed, dir) in &sets {
        assert!(!qs.is_empty(), "{set}");
        for q in qs {
            let p = BindProgram::compile(q, *seed, dir)
                .unwrap_or_else(|e| panic!("{set} {}: {e}", q.name));
            for i in 0..20 {
                let x = p
                    .instance(0, i)
                    .unwrap_or_else(|e| panic!("{set} {}: {e}", q.name));
                let used: HashSet<u32> = crate::query::sql::placeholders(&x.sql)
                    .iter()
                    .map(|p| p.n)
                    .collect();
                let want: HashSet<u32> = (1..=x.binds.len() as u32).collect();
                assert_eq!(used, want, "{set} {}: {}", q.name, x.sql);
                total += 1;
            }
        }
    }
    assert!(total >= (16 + 16 + 1 + 16 + 3) * 20);
}

#[test]
fn pgbench_binds_come_from_its_csv_and_route_by_host() {
    let (qs, seed, dir) = from_file("workloads/pgbench-timeseries.wl");
    let p = compile_in(&qs[0], seed, &dir);
    let x = p.instance(0, 0).unwrap();
    // host_000000,2017-01-01 06:54:17,2017-01-01 07:54:17
    let start = 1_483_228_800_000_000_000 + (6 * 3600 + 54 * 60 + 17) * SECOND;
    assert_eq!(
        x.binds,
        [
            BindValue::Text("host_000000".into()),
            BindValue::Timestamp(start),
            BindValue::Timestamp(start + HOUR)
        ]
    );
    assert_eq!(x.route.as_deref(), Some("host_000000"));
    assert_eq!(
        text_of(&p.instance(0, 200).unwrap().binds[0]),
        "host_000000"
    );
    assert_eq!(text_of(&p.instance(0, 1).unwrap().binds[0]), "host_000002");
}

fn compile_in(q: &QueryPlan, seed: u64, dir: &Path) -> BindProgram {
    BindProgram::compile(q, seed, dir).unwrap_or_else(|e| panic!("{}: {e}", q.name))
}

/// The query phase of a workload's first cell, and the seed.
fn phase_of(text: &str) -> (crate::plan::QueryPhase, u64) {
    let (plan, seed) = lowered(crate::compile::check_text(
        "t.wl",
        text,
        &Default::default(),
    ));
    let phase = plan.cells[0]
        .phases
        .iter()
        .find_map(|p| match p {
            Phase::Queries(q) => Some(q.clone()),
            _ => None,
        })
        .expect("a query run");
    (phase, seed)
}

const YCSB_D: &str = r#"
workload d { seed 11 }
target local { sqlite "t.db" }
query read {
  sql "SELECT $1, $2, $3"
  bind $1 = latest(1000, issued(insert))
  bind $2 = issued(insert)
  bind $3 = issued(read)
}
query insert {
  sql "SELECT $1, $2"
  bind $1 = 1000 + seq()
  bind $2 = ycsb_key($1)
}
run d { against local.sqlite  queries read weight 95, insert weight 5  count 20000 }
"#;

/// `issued(q)` is what the run's order issued of `q` before the instance, so workload D's
/// reads choose among the keys inserted before them in that order, the newest most often.
#[test]
fn issued_counts_the_run_order_and_latest_reads_the_inserted_keys() {
    use crate::query::schedule::Mix;
    let (phase, seed) = phase_of(YCSB_D);
    let programs: Vec<BindProgram> = phase
        .queries
        .iter()
        .enumerate()
        .map(|(i, q)| compile(q, seed).in_run(&phase, i))
        .collect();
    let mut mix = Mix::measured(&phase, seed);
    let (mut reads, mut inserts) = (0i64, 0i64);
    let mut newest_hits = 0;
    while let Some((q, index)) = mix.next_instance() {
        let inst = programs[q].instance(q, index).unwrap();
        if q == 0 {
            let [BindValue::Int(key), BindValue::Int(ins), BindValue::Int(rd)] = inst.binds[..]
            else {
                panic!("{:?}", inst.binds);
            };
            assert_eq!((ins, rd), (inserts, reads), "read {index}");
            assert!(
                (1..=999 + inserts).contains(&key),
                "{key} after {inserts} inserts"
            );
            newest_hits += i64::from(key == 999 + inserts);
            reads += 1;
        } else {
            assert_eq!(inst.binds[0], BindValue::Int(1000 + inserts));
            inserts += 1;
        }
    }
    assert!(inserts > 800, "{inserts}");
    // The newest key takes about 1/ζ(m) of the reads: 12.9 % at 1,000 keys, less as m grows.
    let share = newest_hits as f64 / reads as f64;
    assert!((0.10..0.14).contains(&share), "{share}");
    // Without its run, a program has no order to count in: Null.
    let alone = compile(&phase.queries[0], seed).instance(0, 5).unwrap();
    assert_eq!(alone.binds[1], BindValue::Null);
}

/// Each chooser in a bind draws what `gen::ycsb` draws at the instance's site, and the same
/// values on every compile.
#[test]
fn ycsb_choosers_in_binds_are_their_draws_at_the_instance() {
    let (qs, seed, dir) = from_file("tests/golden/plan/ycsb_keys.wl");
    for q in &qs {
        let a = compile_in(q, seed, &dir);
        let b = compile_in(q, seed, &dir);
        for i in 0..300 {
            assert_eq!(a.instance(0, i).unwrap(), b.instance(0, i).unwrap());
        }
    }
    let others = compile_in(find(&qs, "others"), seed, &dir);
    let stream = |slot: &str| fnv1a64(format!("query:others.{slot}").as_bytes());
    let hot = crate::gen::ycsb::Hotspot::new(0, 1000, 0.2, 0.8);
    let gray = crate::gen::ycsb::Gray::new(1, 100, 0.99);
    for i in 0..2000u64 {
        let inst = others.instance(0, i).unwrap();
        let mut r = Rng::new(seed, stream("$1"), 0, i);
        let u = r.f64();
        let want_hot = hot.draw(u, r.next_u64() as i64);
        let want_gray = gray.draw(Rng::new(seed, stream("$3"), 0, i).f64());
        assert_eq!(
            inst.binds,
            vec![
                BindValue::Int(want_hot),
                BindValue::Int(i as i64 % 1000),
                BindValue::Int(want_gray)
            ]
        );
    }
    let insert = compile_in(find(&qs, "insert"), seed, &dir);
    let inst = insert.instance(1, 3).unwrap();
    let mut name = String::new();
    crate::gen::ycsb::key_name(1003, false, 1, "user", &mut name);
    assert_eq!(inst.binds[0], BindValue::Text(name));
    let BindValue::Text(value) = &inst.binds[1] else {
        panic!("{:?}", inst.binds[1]);
    };
    assert_eq!(value.len(), 100);
}
