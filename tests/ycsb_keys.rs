//! YCSB's key choosers end to end: a workload using each in a schema and in a bind checks and
//! plans (tests/golden/plan/ycsb_keys.wl, its listing a golden of tests/golden.rs), generates
//! the same bytes every time, names its keys as YCSB does, and its mistakes exit 2 with their
//! positions.

use std::process::{Command, Output};

fn wlrun(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .args(args)
        .output()
        .expect("wlrun runs")
}

fn gen() -> Vec<u8> {
    let out = wlrun(&[
        "gen",
        "tests/golden/plan/ycsb_keys.wl",
        "--schema",
        "usertable",
        "--format",
        "csv",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn generates_the_same_bytes_every_time_with_ycsb_key_names() {
    let a = gen();
    assert_eq!(a, gen());
    let text = String::from_utf8(a).unwrap();
    let mut records = csv::Reader::from_reader(text.as_bytes());
    let header = records.headers().unwrap().clone();
    let at = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = records.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 1000);
    // reference/ycsb-iot.md §2.3's hashed names of key numbers 0, 1, 2, 3 and 999.
    for (k, name) in [
        (0, "user6284781860667377211"),
        (1, "user8517097267634966620"),
        (2, "user1820151046732198393"),
        (3, "user4052466453699787802"),
        (999, "user2071219101098386137"),
    ] {
        assert_eq!(&rows[k][at("ycsb_key")], name);
    }
    assert_eq!(&rows[5][at("ordered")], "k00000005");
    for row in &rows {
        assert_eq!(row[at("field0")].len(), 100);
        let turn: i64 = row[at("turn")].parse().unwrap();
        assert!((10..20).contains(&turn));
        let zipf: i64 = row[at("zipf")].parse().unwrap();
        assert!((0..=1000).contains(&zipf));
    }
    // The scrambled zipfian's two hottest keys of 1001 are 144 and 610.
    let mut counts = std::collections::HashMap::<String, u32>::new();
    for row in &rows {
        *counts.entry(row[at("zipf")].to_string()).or_default() += 1;
    }
    let mut top: Vec<(String, u32)> = counts.into_iter().collect();
    top.sort_by_key(|(k, c)| (std::cmp::Reverse(*c), k.clone()));
    assert_eq!(top[0].0, "144", "{top:?}");
}

#[test]
fn the_workload_checks_and_plans() {
    let out = wlrun(&["check", "tests/golden/plan/ycsb_keys.wl"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = wlrun(&["plan", "tests/golden/plan/ycsb_keys.wl"]);
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(listing.contains("bind $1 = ycsb_key(latest(1000, issued(insert)))"));
}

#[test]
fn mistakes_exit_2_with_their_positions() {
    let out = wlrun(&["check", "tests/golden/errors/ycsb_choosers.wl"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("tests/golden/errors/ycsb_choosers.wl:14:19"),
        "{err}"
    );
    assert!(err.contains("`issued(...)` is only valid in a query of a query run"));
    assert!(err.contains("`other` is not a query of this run"));
}
