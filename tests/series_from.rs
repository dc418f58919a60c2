//! `series from SCHEMA`: schemas that share another schema's series agree on every series'
//! tags, row by row, with each other and with that schema (TSBS iot's readings, diagnostics and
//! tags tables); and `sample()` draws from any column whose values are known when checking.

#[path = "common/cli.rs"]
mod cli;

use std::collections::BTreeMap;

use wlrun::check::Options;
use wlrun::compile::check_text;

const TRUCKS: &str = r#"
workload iot { seed 9 }
param trucks = 50
schema tags {
  series name: symbol = format("truck_%d", n) for n in 0..trucks
  tag fleet: symbol = pick(["East", "West", "North", "South"])
  tag model: symbol = pick(["F-150", "G-2000", "H-2"])
  tag load_capacity: double = pick_by(model, {"F-150": [2000.0], "G-2000": [5000.0], "H-2": [1500.0]})
  tag device_version: symbol = pick(["v1.0", "v1.5", "v2.0", "v2.3"]) null 10%
}
schema readings {
  series from tags
  field velocity: double = uniform(0.0, 100.0)
  timestamp time = every 10s from 2016-01-01T00:00:00Z for 1min
}
schema diagnostics {
  field fuel_state: double = uniform(0.0, 1.0)
  series from tags
  timestamp time = every 10s from 2016-01-01T00:00:00Z for 1min
}
"#;

/// `wlrun gen --schema NAME --format csv`: (header, rows).
fn csv(dir: &std::path::Path, schema: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let out = cli::wlrun(dir, &["gen", "w.wl", "--schema", schema, "--format", "csv"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().split(',').map(String::from).collect();
    let rows = lines
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    (header, rows)
}

/// Each truck's tags (name -> the other tag values), checked to be the same on all its rows.
fn tags_by_truck(header: &[String], rows: &[Vec<String>]) -> BTreeMap<String, Vec<String>> {
    let tags = ["fleet", "model", "load_capacity", "device_version"];
    let at: Vec<usize> = tags
        .iter()
        .map(|t| header.iter().position(|h| h == t).unwrap())
        .collect();
    let name = header.iter().position(|h| h == "name").unwrap();
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in rows {
        let values: Vec<String> = at.iter().map(|&i| r[i].clone()).collect();
        let seen = out.entry(r[name].clone()).or_insert_with(|| values.clone());
        assert_eq!(*seen, values, "{} changes its tags between rows", r[name]);
    }
    out
}

#[test]
fn tables_that_share_a_schemas_series_agree_on_every_series_tags() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), TRUCKS).unwrap();
    let (th, tr) = csv(dir.path(), "tags");
    let (rh, rr) = csv(dir.path(), "readings");
    let (dh, dr) = csv(dir.path(), "diagnostics");
    // The taken columns come first, in the other schema's order.
    assert_eq!(rh[..5], th[..]);
    assert_eq!(dh[..5], th[..]);
    assert_eq!(rr.len(), 50 * 6);
    let tags = tags_by_truck(&th, &tr);
    assert_eq!(tags.len(), 50);
    assert_eq!(tags_by_truck(&rh, &rr), tags);
    assert_eq!(tags_by_truck(&dh, &dr), tags);
    // Not all trucks alike: the tags are drawn, per truck.
    let fleets: std::collections::BTreeSet<&String> = tags.values().map(|v| &v[0]).collect();
    assert_eq!(fleets.len(), 4, "{fleets:?}");
    assert!(
        tags.values().any(|v| v[3].is_empty()),
        "the nulls are the tag's own too"
    );
}

fn errors(text: &str) -> Vec<String> {
    check_text("w.wl", text, &Options::default())
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.message.clone())
        .collect()
}

#[test]
fn sample_draws_from_any_column_whose_values_are_known() {
    let query = |bind: &str| {
        format!(
            "{TRUCKS}
target pg {{ pg \"postgres://u@127.0.0.1:5432/iot\" }}
query q {{ sql \"SELECT * FROM readings WHERE fleet IN $1\"  bind $1 = {bind} }}
run r {{ against pg.pg  queries q  count 1 }}"
        )
    };
    assert_eq!(
        errors(&query("sample(tags.fleet, 2)")),
        Vec::<String>::new()
    );
    assert_eq!(
        errors(&query("sample(tags.load_capacity, 3)")),
        Vec::<String>::new()
    );
    let e = errors(&query("sample(tags.load_capacity, 4)"));
    assert!(e.iter().any(|m| m.contains("out of 3")), "{e:?}");
    let e = errors(&query("sample(readings.velocity, 1)"));
    assert!(
        e.iter().any(|m| m.contains("not known when checking")),
        "{e:?}"
    );
    let e = errors(&format!(
        "{TRUCKS}
schema wrong {{ series from nothing  field x: long = 1  rows 1 }}"
    ));
    assert!(e.iter().any(|m| m.contains("is not a schema")), "{e:?}");
}
