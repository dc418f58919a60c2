//! QWP's commit policy (`commit per_batch | every N rows`) against the in-test QWP server
//! (tests/common/qwp_ingest_server.rs), which decodes every message, keeps its flags, commits
//! deferred rows only when a message without `FLAG_DEFER_COMMIT` comes, rolls them back when
//! the connection ends first, and answers deferred messages as QuestDB 9.4 does (an OK each)
//! or as 10.x does (no OK until the covering commit):
//!
//! - the flags of every message follow the policy (a commit at the first batch boundary at or
//!   after N rows since the last one, the end commits what is deferred), as the server saw
//!   them and as the independent Python decoder (tests/fixtures/qwp/qwp_decode.py) reads them;
//! - `rows_acked` counts the rows whose commit was acknowledged, under both server behaviours
//!   and both ack policies; `commits` is what the server saw;
//! - a connection dropped mid-deferral leaves those rows sent and not acknowledged, exit 1,
//!   the failure saying why; a stop commits what is deferred.
//!
//! Data: TSBS cpu-only at 20 hosts x 60 epochs of 10 s (1,200 rows), batches of 100 rows,
//! one worker.

#[path = "common/cli.rs"]
mod cli;
use cli::wlrun;

#[path = "common/servers.rs"]
mod servers;

#[path = "common/qwp_ingest_server.rs"]
mod qwp_ingest_server;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use qwp_ingest_server::*;
use serde_json::Value;

const ROWS: u64 = 1_200;
const BATCH: u64 = 100;
const SETTLE: Duration = Duration::from_secs(5);
const DEFER: u8 = FLAG_DELTA_SYMBOL_DICT | FLAG_DEFER_COMMIT;
const COMMIT: u8 = FLAG_DELTA_SYMBOL_DICT;

fn workload(url: &str, clauses: &str) -> String {
    format!(
        r#"workload qwp_commit {{ seed 1 }}
import "std/tsbs/cpu-only.wl" as tsbs (hosts = 20, end = 2016-01-01T00:00:00Z + 10m)
target db {{ qwp "{url}" {{ ack_timeout 5s }} }}
ingest load {{
  into db via qwp
  rows tsbs.cpu
  batch {BATCH} rows
  setup shared
  {clauses}
}}
"#
    )
}

struct Run {
    code: Option<i32>,
    report: Value,
    stderr: String,
    wl: String,
}

impl Run {
    fn p(&self) -> &Value {
        &self.report["cells"][0]["phases"][0]
    }

    fn u(&self, field: &str) -> u64 {
        self.p()[field]
            .as_u64()
            .unwrap_or_else(|| panic!("{field} is not a count: {}", self.context()))
    }

    fn context(&self) -> String {
        format!(
            "exit {:?}\n--- phase\n{:#}\n--- stderr\n{}\n--- workload\n{}",
            self.code,
            self.p(),
            self.stderr,
            self.wl
        )
    }
}

fn run(wl: String) -> Run {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.wl"), &wl).unwrap();
    let out = wlrun(dir.path(), &["run", "w.wl", "--json", "--quiet"]);
    finished(out, wl)
}

fn finished(out: std::process::Output, wl: String) -> Run {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not a JSON report ({e}):\n{}\n{stderr}\n{wl}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    Run {
        code: out.status.code(),
        report,
        stderr,
        wl,
    }
}

/// The only connection, once it has ended, with nothing malformed.
fn connection(server: &QwpServer) -> ConnStats {
    let conns = server.wait_ended(1, SETTLE);
    assert_eq!(conns.len(), 1, "{conns:#?}");
    assert!(conns[0].ended, "{conns:#?}");
    assert!(server.malformed().is_empty(), "{:#?}", server.malformed());
    conns[0].clone()
}

/// The flags the policy asks for, from the rows of each message alone: a message commits
/// when the rows since the last commit reach `every` (or always, without it), and a message
/// without rows closes the phase by committing.
fn expected_flags(rows_per_message: &[usize], every: Option<u64>) -> Vec<u8> {
    let mut since = 0u64;
    rows_per_message
        .iter()
        .map(|&rows| {
            since += rows as u64;
            let commits = match every {
                Some(n) => since >= n || rows == 0,
                None => true,
            };
            if commits {
                since = 0;
                COMMIT
            } else {
                DEFER
            }
        })
        .collect()
}

fn hold_name(hold: bool) -> &'static str {
    if hold {
        "10.x (no OK before the commit)"
    } else {
        "9.4 (an OK per message)"
    }
}

/// `commit every 500 rows`, 12 batches of 100: commits after 500 and 1,000 rows, and the
/// phase's end commits the last 200 with a message of its own. Under both server behaviours
/// and both ack policies, every row is acknowledged, and only through its commit.
#[test]
fn every_n_rows_defers_between_commits_and_the_end_commits() {
    for hold in [false, true] {
        for ack in ["publish", "per_batch"] {
            let server = QwpServer::start(
                Config::default()
                    .with_hold_deferred_acks(hold)
                    .with_keep_messages(true),
            );
            let r = run(workload(
                &server.url(),
                &format!("commit every 500 rows\n  ack {ack}"),
            ));
            let what = format!("{} with ack {ack}", hold_name(hold));
            assert_eq!(r.code, Some(0), "{what}: {}", r.context());
            let c = connection(&server);
            assert_eq!(
                c.rows_per_message,
                vec![100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 0],
                "{what}"
            );
            let d = DEFER;
            assert_eq!(
                c.flags_per_message,
                vec![d, d, d, d, COMMIT, d, d, d, d, COMMIT, d, d, COMMIT],
                "{what}"
            );
            assert_eq!(
                c.flags_per_message,
                expected_flags(&c.rows_per_message, Some(500))
            );
            assert_eq!(c.commits, 3, "{what}");
            assert_eq!(c.peak_uncommitted_rows, 400, "{what}");
            if hold {
                // Only the commits were answered: a row counted acknowledged before its commit
                // would have needed an OK of a deferred message.
                assert_eq!(c.ok_seqs(), vec![4, 9, 12], "{what}");
            } else {
                assert_eq!(c.ok_seqs(), (0..13).collect::<Vec<i64>>(), "{what}");
            }
            assert_eq!(r.u("rows_sent"), ROWS, "{what}: {}", r.context());
            assert_eq!(r.u("rows_acked"), ROWS, "{what}: {}", r.context());
            assert_eq!(r.u("commits"), c.commits as u64, "{what}: {}", r.context());
            assert_eq!(server.table("cpu").unwrap().row_count as u64, ROWS);
            python_agrees(&c);
        }
    }
}

/// Without a clause (or with `commit per_batch`), every batch commits, as TSBS's loader does.
#[test]
fn per_batch_commits_every_batch() {
    for clause in ["", "commit per_batch"] {
        let server = QwpServer::start(Config::default().with_hold_deferred_acks(true));
        let r = run(workload(&server.url(), clause));
        assert_eq!(r.code, Some(0), "{}", r.context());
        let c = connection(&server);
        assert_eq!(c.flags_per_message, vec![COMMIT; 12], "{clause:?}");
        assert_eq!(c.commits, 12);
        assert_eq!(r.u("commits"), 12, "{}", r.context());
        assert_eq!(r.u("rows_acked"), ROWS, "{}", r.context());
    }
}

/// The server drops the connection on receiving message 6: messages 0-4 committed 500 rows,
/// 5 and 6 were deferred (9.4 acknowledged 5 anyway). Only the committed rows are
/// acknowledged; the deferred ones, rolled back, count as sent and not acknowledged, and the
/// run fails saying so.
#[test]
fn a_drop_mid_deferral_leaves_the_deferred_rows_sent_not_acked() {
    for hold in [false, true] {
        let server = QwpServer::start(
            Config::default()
                .with_hold_deferred_acks(hold)
                .with_close_after(6),
        );
        // `ack per_batch` waits for the commit's OK before sending on: a drop resets the
        // connection, and OKs still unread would be lost with it.
        let r = run(workload(
            &server.url(),
            "commit every 500 rows\n  ack per_batch",
        ));
        let what = hold_name(hold);
        assert_eq!(r.code, Some(1), "{what}: {}", r.context());
        assert_eq!(r.p()["status"], "failed", "{what}: {}", r.context());
        let c = connection(&server);
        assert!(c.dropped, "{c:#?}");
        assert_eq!(c.commits, 1, "{what}");
        assert_eq!(server.table("cpu").unwrap().row_count, 500, "{what}");
        assert_eq!(r.u("rows_acked"), 500, "{what}: {}", r.context());
        // Messages 5 and 6 went out whole before the drop was seen.
        let sent = r.u("rows_sent");
        assert!(sent >= 700, "{what}: {}", r.context());
        // Every scheduled row is acknowledged, sent and not acknowledged, cut off or unsent.
        assert_eq!(r.u("rows_expected"), ROWS);
        assert!(sent + r.u("rows_cut_off") <= ROWS, "{}", r.context());
        let first = r.p()["errors"]["connection"]["first"]
            .as_str()
            .unwrap_or_else(|| panic!("{what}: {}", r.context()))
            .to_string();
        assert!(first.contains("count as sent, not acknowledged"), "{first}");
        assert!(first.contains("rolls them back"), "{first}");
        let failures = r.p()["failures"].to_string();
        assert!(failures.contains("acknowledged"), "{what}: {failures}");
    }
}

/// A stop (SIGINT) while rows are deferred: the worker's close commits them, so every row sent
/// is committed and acknowledged, the last message a commit.
#[test]
fn a_stop_commits_what_is_deferred() {
    let server = QwpServer::start(Config::default().with_hold_deferred_acks(true));
    let dir = tempfile::tempdir().unwrap();
    // 500 rows/s: 2.4 s for the 1,200 rows, a commit only after 1,000.
    let wl = workload(&server.url(), "commit every 1_000 rows\n  rate 500/s");
    std::fs::write(dir.path().join("w.wl"), &wl).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .current_dir(dir.path())
        .args(["run", "w.wl", "--json", "--quiet"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Stop once two deferred batches have arrived.
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.connections().first().is_none_or(|c| c.messages < 2) {
        assert!(Instant::now() < deadline, "no messages arrived");
        std::thread::sleep(Duration::from_millis(5));
    }
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let r = finished(child.wait_with_output().unwrap(), wl);
    assert_eq!(r.report["interrupted"], true, "{}", r.context());
    let c = connection(&server);
    assert!(
        c.rows() < ROWS as usize,
        "the stop came before the end: {c:#?}"
    );
    assert_eq!(c.flags_per_message.last(), Some(&COMMIT), "{c:#?}");
    assert!(c.flags_per_message[..c.messages - 1]
        .iter()
        .all(|&f| f == DEFER));
    assert_eq!(c.commits, 1);
    let committed = server.table("cpu").unwrap().row_count as u64;
    assert_eq!(committed, c.rows() as u64);
    assert_eq!(r.u("rows_sent"), committed, "{}", r.context());
    assert_eq!(r.u("rows_acked"), committed, "{}", r.context());
    assert_eq!(r.u("commits"), 1, "{}", r.context());
}

/// The Python decoder, written apart from both wlrun and the test server, reads the same
/// flags and rows in every message the server kept.
fn python_agrees(c: &ConnStats) {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (i, m) in c.raw.iter().enumerate() {
        let path = dir.path().join(format!("m{i:04}.hex"));
        let hex: String = m.iter().map(|b| format!("{b:02x}")).collect();
        std::fs::write(&path, hex).unwrap();
        files.push(path);
    }
    let decoder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qwp");
    // Prints, per message, the flags and rows the decoder's own printout gives.
    let wrapper = r#"
import contextlib, io, re, sys
sys.path.insert(0, sys.argv[1])
import qwp_decode
conn = []
for f in sys.argv[2:]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        qwp_decode.decode_ingress(bytes.fromhex(open(f).read().strip()), conn)
    text = buf.getvalue()
    flags = re.search(r"flags=0x([0-9a-f]{2})", text).group(1)
    rows = sum(int(n) for n in re.findall(r"  table '.*' rows=(\d+)", text))
    print(flags, rows)
"#;
    let out = match Command::new("python3")
        .arg("-c")
        .arg(wrapper)
        .arg(&decoder)
        .args(&files)
        .output()
    {
        Ok(o) => o,
        Err(e) => return servers::missing(&format!("python3 ({e})")),
    };
    assert!(
        out.status.success(),
        "qwp_decode.py refused the messages:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Vec<(u8, usize)> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (f, r) = l.split_once(' ').unwrap();
            (u8::from_str_radix(f, 16).unwrap(), r.parse().unwrap())
        })
        .collect();
    let ours: Vec<(u8, usize)> = c
        .flags_per_message
        .iter()
        .copied()
        .zip(c.rows_per_message.iter().copied())
        .collect();
    assert_eq!(seen, ours);
}
