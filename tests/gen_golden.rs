//! Golden outputs of `wlrun gen` for TSBS cpu-only at 3 hosts x 4 timestamps, in every format
//! (the binary file as a hex dump). A change here changes every generated data set: review the
//! snapshot diff, and say so in docs/rng.md when values move.

use std::process::Command;

fn gen(format: &str) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .args([
            "gen",
            "tests/golden/gen/tsbs_tiny.wl",
            "--schema",
            "tsbs.cpu",
        ])
        .args(["--format", format])
        .output()
        .expect("wlrun runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(summary.contains("-> 12 rows"), "{summary}");
    out.stdout
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::new();
    for (i, chunk) in bytes.chunks(16).enumerate() {
        s.push_str(&format!("{:08x}:", i * 16));
        for b in chunk {
            s.push_str(&format!(" {b:02x}"));
        }
        s.push('\n');
    }
    s
}

#[test]
fn ilp() {
    let text = String::from_utf8(gen("ilp")).unwrap();
    assert_eq!(text.lines().count(), 12);
    insta::assert_snapshot!("tsbs_tiny.ilp", text);
}

#[test]
fn csv() {
    let text = String::from_utf8(gen("csv")).unwrap();
    assert_eq!(text.lines().count(), 13);
    insta::assert_snapshot!("tsbs_tiny.csv", text);
}

#[test]
fn bin() {
    let bytes = gen("bin");
    assert_eq!(&bytes[..4], b"WLB1");
    insta::assert_snapshot!("tsbs_tiny.bin", hex(&bytes));
}

/// The three formats carry the same values: the first host's first row in each.
#[test]
fn formats_agree() {
    let ilp = String::from_utf8(gen("ilp")).unwrap();
    let csv = String::from_utf8(gen("csv")).unwrap();
    let first_ilp = ilp.lines().next().unwrap();
    let first_csv: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    assert!(first_ilp.starts_with(&format!(
        "cpu,hostname={},region={},",
        first_csv[0], first_csv[1]
    )));
    assert!(first_ilp.contains(&format!(" usage_user={}i,", first_csv[10])));
    assert!(first_ilp.ends_with(" 1451606400000000000"));
    assert_eq!(first_csv[20], "2016-01-01T00:00:00Z");
}
