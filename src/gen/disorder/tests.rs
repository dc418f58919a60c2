//! The disorder layer against what it promises: every row exactly once, the shares asked for,
//! the lateness's median, and choices that do not depend on how the series are split.

use std::collections::HashMap;

use crate::gen::batch::Values;
use crate::gen::Columnar;
use crate::plan::SchemaPlan;

fn plan(late: &str) -> SchemaPlan {
    let text = format!(
        r#"
workload d {{ seed 1 }}
schema s {{
  series host: symbol = format("h%d", n) for n in 0..100
  tag    dc: symbol = pick(["a", "b"])
  field  a: double = uniform(0.0, 1.0)
  field  b: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 400s
  null one of [a, b, b] 10%
  null one of [host, dc] 1%
  {late}
}}
"#
    );
    let out = crate::compile::check_text("t.wl", &text, &Default::default());
    let checked = out
        .checked
        .unwrap_or_else(|| panic!("{:?}", out.diagnostics));
    crate::compile::schema_plan(&checked, Some("s")).unwrap()
}

/// Each row as it leaves: its index among the schema's rows (epoch x 100 + series) and which
/// of host, dc, a, b are null.
fn rows(plan: &SchemaPlan, shard: Option<(u64, u64)>, batch_rows: usize) -> Vec<(u64, [bool; 4])> {
    let mut g = Columnar::new(plan, 7, shard, &|p| std::fs::read(p)).unwrap();
    let mut b = g.new_batch();
    let mut out = Vec::new();
    // A batch filled in pieces, as the producer fills one.
    loop {
        b.clear();
        while b.rows < batch_rows {
            let before = b.rows;
            if g.extend(&mut b, (before + 37).min(batch_rows)) == before {
                break;
            }
        }
        if b.rows == 0 {
            return out;
        }
        let Values::Timestamp(ts) = &b.columns[4].values else {
            panic!("the timestamp column")
        };
        for (r, t) in ts.iter().enumerate() {
            let epoch = ((t - 1_451_606_400_000_000_000) / 1_000_000_000) as u64;
            let id = epoch * 100 + u64::from(b.series[r]);
            out.push((id, [0, 1, 2, 3].map(|c| b.is_null(c, r))));
        }
    }
}

#[test]
fn every_row_leaves_once_and_the_late_share_and_median_hold() {
    let plan = plan("late 19% by 12 rows");
    let out = rows(&plan, None, 1000);
    assert_eq!(out.len(), 40_000);
    let mut ids: Vec<u64> = out.iter().map(|r| r.0).collect();
    ids.sort_unstable();
    assert!(ids.iter().enumerate().all(|(k, &id)| id == k as u64));
    // A row is late when a row drawn after it left before it; by how many such rows.
    let mut late = Vec::new();
    for (k, &(id, _)) in out.iter().enumerate() {
        // Lateness is at most 10 x the median, so 300 rows back see every row that passed.
        let passed = out[k.saturating_sub(300)..k]
            .iter()
            .filter(|r| r.0 > id)
            .count();
        if passed > 0 {
            late.push(passed);
        }
    }
    let share = late.len() as f64 / out.len() as f64;
    assert!((0.18..0.20).contains(&share), "late share {share}");
    late.sort_unstable();
    let median = late[late.len() / 2];
    assert!((10..=14).contains(&median), "median lateness {median}");
    assert!(*late.last().unwrap() <= 130, "{:?}", late.last());
}

#[test]
fn one_column_per_clause_at_the_shares_asked() {
    let out = rows(&plan(""), None, 4096);
    let n = out.len() as f64;
    let field = out.iter().filter(|r| r.1[2] || r.1[3]).count() as f64;
    let b = out.iter().filter(|r| r.1[3]).count() as f64;
    let tag = out.iter().filter(|r| r.1[0] || r.1[1]).count() as f64;
    assert!(
        !out.iter().any(|r| r.1[2] && r.1[3]),
        "two fields of one row"
    );
    assert!(!out.iter().any(|r| r.1[0] && r.1[1]), "two tags of one row");
    assert!((0.09..0.11).contains(&(field / n)), "{}", field / n);
    assert!(
        (0.6..0.73).contains(&(b / field)),
        "b listed twice: {}",
        b / field
    );
    assert!((0.006..0.014).contains(&(tag / n)), "{}", tag / n);
    // Without `late`, rows leave as drawn.
    assert!(out.windows(2).all(|w| w[0].0 < w[1].0));
}

#[test]
fn which_rows_are_null_does_not_depend_on_the_split_or_the_batches() {
    let plan = plan("late 19% by 12 rows");
    let whole: HashMap<u64, [bool; 4]> = rows(&plan, None, 1000).into_iter().collect();
    let mut split: HashMap<u64, [bool; 4]> = HashMap::new();
    for w in 0..3 {
        split.extend(rows(&plan, Some((w, 3)), 333));
    }
    assert_eq!(whole, split);
    // The same order again, in other batch sizes.
    let a: Vec<u64> = rows(&plan, None, 1000).into_iter().map(|r| r.0).collect();
    let b: Vec<u64> = rows(&plan, None, 77).into_iter().map(|r| r.0).collect();
    assert_eq!(a, b);
}
