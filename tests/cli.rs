//! The `wlrun` binary end to end: exit codes, what goes to stdout and stderr, and the flags that
//! choose values and cells. Each test writes its workloads into a fresh temp dir and runs the
//! binary there, so paths in the output are the short relative ones.

use std::process::{Command, Output};

use serde_json::Value;

/// A workload with a param, a two-value axis and a row count that depends on the param:
/// hosts x 60 rows per cell.
const MATRIX: &str = r#"
workload cli_demo { seed 3 }
param hosts = 4
target questdb {
  qwp     "ws://127.0.0.1:9000"
  ilp_tcp "tcp://127.0.0.1:9009"
}
matrix { protocol in [qwp, ilp_tcp] }
schema s {
  series host: symbol = format("h%d", n) for n in 0..hosts
  field v: double = uniform(0.0, 1.0)
  timestamp ts = every 1m from 2016-01-01T00:00:00Z for 1h
}
ingest load { into questdb via protocol  rows s  batch 10 rows  setup shared }
"#;

/// A local port nothing listens on: bound by us, then closed. QuestDB's own 9000 and 9009 are
/// not that on the machine of a user who benchmarks QuestDB.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// MATRIX with its endpoints on closed ports, for the runs that must fail to connect; and the
/// two ports, qwp's first.
fn matrix_on_closed_ports() -> (String, u16, u16) {
    let (qwp, ilp) = (closed_port(), closed_port());
    let text = MATRIX
        .replace("127.0.0.1:9000", &format!("127.0.0.1:{qwp}"))
        .replace("127.0.0.1:9009", &format!("127.0.0.1:{ilp}"));
    (text, qwp, ilp)
}

/// Line 4 has an unknown function.
const BROKEN: &str = "target db { sqlite \"bench.db\" }\nschema s {\n  rows 10\n  field v: long = unifrom(0, 10)\n}\ningest load { into db via sqlite  rows s }\n";

const HOOK_WL: &str = r#"
target api { http "http://127.0.0.1:8080" }
hook h from "h.rhai" (init, request, response)
run r { against api.http  request h.request  count 10 }
"#;

const HOOK_RHAI: &str = "fn init(ctx) {}\nfn request(ctx) { #{ path: \"/\" } }\nfn response(ctx, resp) { #{ ok: true } }\nfn a(x) {}\nfn b(x) {}\nfn c(x) {}\n";

/// A temp dir with files, and the binary run inside it.
#[must_use]
struct Test {
    dir: tempfile::TempDir,
    args: Vec<String>,
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Test {
    fn new() -> Test {
        Test {
            dir: tempfile::tempdir().unwrap(),
            args: Vec::new(),
        }
    }

    fn file(self, name: &str, text: &str) -> Test {
        std::fs::write(self.dir.path().join(name), text).unwrap();
        self
    }

    fn args<S: AsRef<str>>(mut self, args: impl IntoIterator<Item = S>) -> Test {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_string()));
        self
    }

    fn run(&self) -> Run {
        let out: Output = Command::new(env!("CARGO_BIN_EXE_wlrun"))
            .args(&self.args)
            .current_dir(self.dir.path())
            .env_remove("RUST_BACKTRACE")
            .output()
            .unwrap();
        Run {
            code: out.status.code().expect("wlrun exited by a signal"),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
    }
}

impl Run {
    #[track_caller]
    fn code(self, want: i32) -> Run {
        assert_eq!(
            self.code, want,
            "exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout, self.stderr
        );
        self
    }

    #[track_caller]
    fn stderr_has(self, text: &str) -> Run {
        assert!(
            self.stderr.contains(text),
            "stderr lacks `{text}`:\n{}",
            self.stderr
        );
        self
    }

    #[track_caller]
    fn stdout_has(self, text: &str) -> Run {
        assert!(
            self.stdout.contains(text),
            "stdout lacks `{text}`:\n{}",
            self.stdout
        );
        self
    }

    #[track_caller]
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }

    /// No panic message and no backtrace, whatever the exit code.
    #[track_caller]
    fn no_panic(self) -> Run {
        assert!(
            !self.stderr.contains("panicked"),
            "wlrun panicked:\n{}",
            self.stderr
        );
        self
    }
}

fn plan_json(args: &[&str]) -> Value {
    let mut all = vec!["plan", "w.wl", "--json"];
    all.extend(args);
    Test::new()
        .file("w.wl", MATRIX)
        .args(all)
        .run()
        .no_panic()
        .code(0)
        .json()
}

/// Expected rows per ingest phase of each cell, in cell order.
fn rows(plan: &Value) -> Vec<u64> {
    plan["cells"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["phases"].as_array().unwrap().clone())
        .map(|p| p["rows_expected"].as_u64().expect("rows_expected"))
        .collect()
}

fn cell_keys(plan: &Value) -> Vec<String> {
    plan["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["key"].as_str().unwrap().to_string())
        .collect()
}

// ------------------------------------------------------------------------------------------------
// check

#[test]
fn check_ok_exits_0() {
    Test::new()
        .file("w.wl", MATRIX)
        .args(["check", "w.wl"])
        .run()
        .code(0)
        .stderr_has("w.wl: ok");
}

#[test]
fn check_error_exits_2_with_a_position() {
    Test::new()
        .file("bad.wl", BROKEN)
        .args(["check", "bad.wl"])
        .run()
        .no_panic()
        .code(2)
        .stderr_has("error[E0204]: unknown function `unifrom`")
        .stderr_has("bad.wl:4:19")
        .stderr_has("bad.wl: 1 error");
}

#[test]
fn check_several_files_fails_if_one_fails() {
    let run = Test::new()
        .file("good.wl", MATRIX)
        .file("bad.wl", BROKEN)
        .args(["check", "good.wl", "bad.wl"])
        .run()
        .code(2)
        .stderr_has("good.wl: ok")
        .stderr_has("bad.wl: 1 error");
    // Files are reported in the order given.
    assert!(run.stderr.find("good.wl: ok") < run.stderr.find("bad.wl:4:19"));
}

#[test]
fn check_warnings_still_exit_0() {
    let text = MATRIX.replace("param hosts = 4", "param hosts = 4\nparam unused = 1");
    Test::new()
        .file("w.wl", &text)
        .args(["check", "w.wl"])
        .run()
        .code(0)
        .stderr_has("warning[W0001]: param `unused` is never used")
        .stderr_has("w.wl: ok (1 warning)");
}

#[test]
fn missing_file_exits_2() {
    Test::new()
        .args(["check", "nope.wl"])
        .run()
        .no_panic()
        .code(2)
        .stderr_has("E0006")
        .stderr_has("nope.wl");
    Test::new()
        .args(["plan", "nope.wl"])
        .run()
        .code(2)
        .stderr_has("E0006");
}

#[test]
fn check_without_files_is_a_usage_error() {
    Test::new()
        .args(["check"])
        .run()
        .code(2)
        .stderr_has("Usage");
}

// ------------------------------------------------------------------------------------------------
// usage

#[test]
fn help_exits_0_and_shows_examples() {
    let run = Test::new()
        .args(["--help"])
        .run()
        .code(0)
        .stdout_has("Examples:");
    assert!(run.stdout.contains("wlrun check"), "{}", run.stdout);
    assert!(run.stdout.contains("Exit codes"), "{}", run.stdout);
    Test::new()
        .args(["plan", "--help"])
        .run()
        .code(0)
        .stdout_has("--param");
}

#[test]
fn no_arguments_prints_help_and_fails() {
    Test::new().run().code(2).stderr_has("Usage");
}

#[test]
fn unknown_flag_exits_2() {
    Test::new()
        .args(["--bogus"])
        .run()
        .code(2)
        .stderr_has("--bogus");
    Test::new()
        .file("w.wl", MATRIX)
        .args(["plan", "w.wl", "--bogus"])
        .run()
        .code(2)
        .stderr_has("--bogus");
}

#[test]
fn a_mistyped_subcommand_or_flag_gets_a_suggestion() {
    // Taken for `run`'s file, `chek` made `w.wl` an unexpected argument, with no suggestion.
    Test::new()
        .file("w.wl", MATRIX)
        .args(["chek", "w.wl"])
        .run()
        .no_panic()
        .code(2)
        .stderr_has("unrecognized subcommand 'chek'")
        .stderr_has("a similar subcommand exists: 'check'");
    // A file of that name is still run, as `wlrun FILE` always is.
    Test::new()
        .file("plna", MATRIX)
        .args(["plna", "--only", "protocol=nosuch"])
        .run()
        .no_panic()
        .code(2)
        .stderr_has("error[E0403]");
    for args in [
        ["check", "--parm", "hosts=1", "w.wl"],
        ["--quite", "w.wl", "", ""],
    ] {
        let args: Vec<&str> = args.into_iter().filter(|a| !a.is_empty()).collect();
        Test::new()
            .file("w.wl", MATRIX)
            .args(args)
            .run()
            .no_panic()
            .code(2)
            .stderr_has("a similar argument exists");
    }
}

#[test]
fn a_bad_param_is_shown_as_the_flag_written() {
    // The value's parse error points into the flag as written, not into a file named after it.
    Test::new()
        .file("w.wl", MATRIX)
        .args(["plan", "w.wl", "--param", "hosts=(1"])
        .run()
        .no_panic()
        .code(2)
        .stderr_has("error[E0001]")
        .stderr_has("--> <command line>:1:17\n")
        .stderr_has("1 | --param hosts=(1\n");
    // An unknown name is underlined in the flag, with the name meant.
    let run = Test::new()
        .file("w.wl", MATRIX)
        .args(["plan", "w.wl", "-p", "hots=2"])
        .run()
        .no_panic()
        .code(2)
        .stderr_has("--> <command line>:1:9\n")
        .stderr_has("1 | --param hots=2\n")
        .stderr_has("did you mean `hosts`?");
    assert!(
        run.stderr.contains("  |         ^^^^ unknown name"),
        "{}",
        run.stderr
    );
    // `--only` too.
    Test::new()
        .file("w.wl", MATRIX)
        .args(["plan", "w.wl", "--only", "protocol"])
        .run()
        .no_panic()
        .code(2)
        .stderr_has("--> <command line>:1:8\n")
        .stderr_has("1 | --only protocol\n");
}

#[test]
fn check_message_format_json_prints_one_object_per_diagnostic() {
    let two = BROKEN.replace("rows 10", "rows 10\n  field w: long = nosuch");
    let run = Test::new()
        .file("bad.wl", &two)
        .args(["check", "bad.wl", "--message-format", "json"])
        .run()
        .no_panic()
        .code(2);
    let lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(lines.len(), 2, "{}", run.stdout);
    let unknown_fn = &lines[1];
    assert_eq!(unknown_fn["file"], "bad.wl");
    assert_eq!(unknown_fn["severity"], "error");
    assert_eq!(unknown_fn["code"], "E0204");
    assert_eq!(unknown_fn["message"], "unknown function `unifrom`");
    assert_eq!(
        [
            &unknown_fn["line_start"],
            &unknown_fn["column_start"],
            &unknown_fn["line_end"],
            &unknown_fn["column_end"]
        ],
        [5, 19, 5, 26],
        "{unknown_fn}"
    );
    assert_eq!(unknown_fn["notes"][0], "did you mean `uniform`?");
    assert_eq!(lines[0]["line_start"], 4, "{}", lines[0]);
    // Nothing for a human on stdout, and the human rendering is not printed at all.
    assert!(!run.stderr.contains("error["), "{}", run.stderr);
    // A secondary place comes with its own position.
    let run = Test::new()
        .file("w.wl", MATRIX)
        .args([
            "check",
            "w.wl",
            "-p",
            "hosts=\"ten\"",
            "--message-format=json",
        ])
        .run()
        .no_panic()
        .code(2);
    let d: Value = serde_json::from_str(run.stdout.trim()).expect("one line");
    assert_eq!(d["file"], "<command line>", "{d}");
    assert_eq!(d["related"][0]["file"], "w.wl", "{d}");
    assert_eq!(d["related"][0]["line_start"], 3, "{d}");
    assert_eq!(d["related"][0]["message"], "declared here", "{d}");
}

#[test]
fn version_exits_0() {
    Test::new()
        .args(["--version"])
        .run()
        .code(0)
        .stdout_has("wlrun");
}

// ------------------------------------------------------------------------------------------------
// run

#[test]
fn run_reports_every_cell_and_fails_when_a_server_is_missing() {
    // Nothing listens on these loopback ports: both cells fail to connect, naming the
    // endpoint, and both are in the table; nothing was measured (exit 3).
    let (text, qwp, ilp) = matrix_on_closed_ports();
    let run = Test::new()
        .file("w.wl", &text)
        .args(["run", "w.wl", "--quiet"])
        .run()
        .no_panic()
        .code(3)
        .stderr_has(&format!(
            "cannot connect to questdb.ilp_tcp (tcp://127.0.0.1:{ilp})"
        ))
        .stderr_has(&format!(
            "questdb.qwp: cannot connect to ws://127.0.0.1:{qwp}/write/v4"
        ));
    assert!(run.stdout.contains("2 cells, 2 not ok"), "{}", run.stdout);
    assert!(run.stdout.contains("protocol=ilp_tcp"), "{}", run.stdout);
}

#[test]
fn bare_file_behaves_like_run() {
    let (text, _, _) = matrix_on_closed_ports();
    let t = Test::new().file("w.wl", &text);
    let run = t.args(["run", "w.wl", "--quiet", "--json"]).run();
    let t = Test::new().file("w.wl", &text);
    let bare = t.args(["w.wl", "--quiet", "--json"]).run();
    assert_eq!(bare.code, run.code);
    assert_eq!(bare.code, 3);
    let keys = |out: &str| -> Vec<String> {
        let v: Value = serde_json::from_str(out).unwrap();
        v["cells"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["key"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(keys(&bare.stdout), keys(&run.stdout));
}

/// A run that needs no server and passes: n rows into SQLite.
const QUICK: &str = "workload quick { seed 1 }\nparam n = 10\ntarget db { sqlite \"bench.db\" }\nschema s {\n  rows n\n  field v: long = uniform(0, 10)\n}\ningest load { into db via sqlite  rows s }\n";

#[test]
fn options_before_a_bare_file_work_as_after_it() {
    let rows_sent = |args: &[&str]| -> u64 {
        let run = Test::new()
            .file("q.wl", QUICK)
            .args(args)
            .run()
            .no_panic()
            .code(0);
        run.json()["cells"][0]["phases"][0]["rows_sent"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(rows_sent(&["--json", "q.wl"]), 10);
    assert_eq!(rows_sent(&["-q", "--json", "q.wl"]), 10);
    assert_eq!(rows_sent(&["--color", "never", "--json", "q.wl"]), 10);
    assert_eq!(
        rows_sent(&["--color=never", "--quiet", "--json", "q.wl"]),
        10
    );
    // An option's value is not taken for the file, whether it follows the flag or is part of
    // a cluster of short flags.
    assert_eq!(rows_sent(&["--param", "n=20", "--json", "q.wl"]), 20);
    assert_eq!(rows_sent(&["-qp", "n=30", "--json", "q.wl"]), 30);
    assert_eq!(rows_sent(&["-pn=40", "--json", "q.wl", "-q"]), 40);
    // Options before a subcommand are still the global ones only.
    Test::new()
        .file("q.wl", QUICK)
        .args(["--color", "never", "check", "q.wl"])
        .run()
        .code(0)
        .stderr_has("q.wl: ok");
    Test::new()
        .file("bad.wl", BROKEN)
        .args(["-q", "--color", "never", "bad.wl"])
        .run()
        .no_panic()
        .code(2)
        .stderr_has("bad.wl:4:19");
    // Without a file it is still a usage error.
    Test::new().args(["-q"]).run().code(2).stderr_has("Usage");
}

#[test]
fn bare_file_with_errors_reports_them() {
    Test::new()
        .file("bad.wl", BROKEN)
        .args(["bad.wl"])
        .run()
        .code(2)
        .stderr_has("bad.wl:4:19");
}

// ------------------------------------------------------------------------------------------------
// plan

#[test]
fn plan_listing_goes_to_stdout() {
    let run = Test::new()
        .file("w.wl", MATRIX)
        .args(["plan", "w.wl"])
        .run()
        .code(0);
    assert!(
        run.stdout
            .starts_with("workload cli_demo  seed 3  file w.wl\n"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("cells 2"), "{}", run.stdout);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}

#[test]
fn plan_with_errors_prints_no_plan() {
    let run = Test::new()
        .file("bad.wl", BROKEN)
        .args(["plan", "bad.wl", "--json"])
        .run()
        .code(2);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(run.stderr.contains("E0204"), "{}", run.stderr);
}

#[test]
fn plan_json_has_format_and_cells() {
    let plan = plan_json(&[]);
    assert_eq!(plan["format"], serde_json::json!(wlrun::plan::PLAN_FORMAT));
    assert_eq!(plan["workload"]["name"], "cli_demo");
    assert_eq!(plan["workload"]["seed"], 3);
    assert_eq!(cell_keys(&plan), ["protocol=qwp", "protocol=ilp_tcp"]);
    assert_eq!(rows(&plan), [240, 240]);
}

#[test]
fn param_changes_row_counts() {
    let plan = plan_json(&["--param", "hosts=10"]);
    assert_eq!(rows(&plan), [600, 600]);
    assert_eq!(plan["cells"][0]["params"]["hosts"], 10);
    // The short flag and an expression work too.
    let plan = plan_json(&["-p", "hosts=2 * 3"]);
    assert_eq!(rows(&plan), [360, 360]);
}

#[test]
fn unknown_param_exits_2_with_e0403() {
    Test::new()
        .file("w.wl", MATRIX)
        .args(["plan", "w.wl", "--param", "nosuch=1"])
        .run()
        .no_panic()
        .code(2)
        .stderr_has("error[E0403]")
        .stderr_has("nosuch");
}

#[test]
fn malformed_param_exits_2_with_e0403() {
    for bad in ["hosts", "=4"] {
        Test::new()
            .file("w.wl", MATRIX)
            .args(["plan", "w.wl", "--param", bad])
            .run()
            .no_panic()
            .code(2)
            .stderr_has("error[E0403]");
    }
    // A value that does not parse is a syntax error in the flag's own pseudo-file.
    Test::new()
        .file("w.wl", MATRIX)
        .args(["plan", "w.wl", "--param", "hosts=(1"])
        .run()
        .no_panic()
        .code(2)
        .stderr_has("error[E0001]")
        .stderr_has("--param hosts");
}

#[test]
fn param_of_the_wrong_type_is_an_error() {
    Test::new()
        .file("w.wl", MATRIX)
        .args(["plan", "w.wl", "--param", "hosts=\"ten\""])
        .run()
        .no_panic()
        .code(2)
        .stderr_has("error[");
}

/// MATRIX with its URLs in params, one written as a string and one declared `varchar`.
fn matrix_with_url_params() -> String {
    MATRIX
        .replace(
            "param hosts = 4",
            "param hosts = 4\nparam qwp_url = \"ws://127.0.0.1:9000\"\nparam ilp_url: varchar = \"tcp://127.0.0.1:9009\"",
        )
        .replace("\"ws://127.0.0.1:9000\"\n  ilp", "\"${qwp_url}\"\n  ilp")
        .replace("\"tcp://127.0.0.1:9009\"\n}", "\"${ilp_url}\"\n}")
}

fn plan_urls(args: &[&str]) -> Vec<String> {
    let mut all = vec!["plan", "w.wl", "--json"];
    all.extend(args);
    let plan = Test::new()
        .file("w.wl", &matrix_with_url_params())
        .args(all)
        .run()
        .no_panic()
        .code(0)
        .json();
    plan["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            c["phases"][0]["endpoint"]["url"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn a_text_param_takes_its_value_without_inner_quotes() {
    assert_eq!(
        plan_urls(&[]),
        ["ws://127.0.0.1:9000", "tcp://127.0.0.1:9009"]
    );
    assert_eq!(
        plan_urls(&[
            "--param",
            "qwp_url=ws://127.0.0.1:19000",
            "-p",
            "ilp_url=tcp://127.0.0.1:19009"
        ]),
        ["ws://127.0.0.1:19000", "tcp://127.0.0.1:19009"]
    );
    // Quoted, it is a string literal as before: it may interpolate.
    assert_eq!(
        plan_urls(&["--param", "qwp_url=\"ws://127.0.0.1:${hosts}000\""]),
        ["ws://127.0.0.1:4000", "tcp://127.0.0.1:9009"]
    );
    // Unquoted, it is the text as it stands: `${...}` and `\\` are not special.
    let run = Test::new()
        .file("w.wl", &matrix_with_url_params())
        .args([
            "plan",
            "w.wl",
            "--param",
            "qwp_url=ws://127.0.0.1:9000/${hosts}\\n",
        ])
        .run()
        .code(0);
    assert!(
        run.stdout.contains("ws://127.0.0.1:9000/${hosts}\\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_text_param_is_still_checked_where_it_is_used() {
    Test::new()
        .file("w.wl", &matrix_with_url_params())
        .args(["plan", "w.wl", "--param", "qwp_url=http://127.0.0.1:9000"])
        .run()
        .no_panic()
        .code(2)
        .stderr_has("error[E0303]")
        .stderr_has("w.wl:7:11")
        // What was checked is the flag's value: the error shows it.
        .stderr_has("--> <command line>:1:17")
        .stderr_has("1 | --param qwp_url=http://127.0.0.1:9000")
        .stderr_has("`qwp_url` is set here");
    // A param that is not text parses its value as before: a URL there is a syntax error at
    // the flag.
    Test::new()
        .file("w.wl", &matrix_with_url_params())
        .args(["plan", "w.wl", "--param", "hosts=http://127.0.0.1:9000"])
        .run()
        .no_panic()
        .code(2)
        .stderr_has("error[E0001]")
        .stderr_has("--> <command line>:1:19");
}

#[test]
fn a_text_param_from_the_command_line_is_what_the_run_connects_to() {
    let port = closed_port();
    Test::new()
        .file("w.wl", &matrix_with_url_params())
        .args(["--quiet", "w.wl", "--only", "protocol=qwp"])
        .args(["--param", &format!("qwp_url=ws://127.0.0.1:{port}")])
        .run()
        .no_panic()
        .code(3)
        .stderr_has(&format!(
            "questdb.qwp: cannot connect to ws://127.0.0.1:{port}/write/v4"
        ));
}

#[test]
fn only_keeps_matching_cells() {
    let plan = plan_json(&["--only", "protocol=qwp"]);
    assert_eq!(cell_keys(&plan), ["protocol=qwp"]);
    let plan = plan_json(&["--only", "protocol=ilp_tcp"]);
    assert_eq!(cell_keys(&plan), ["protocol=ilp_tcp"]);
    assert_eq!(plan["cells"][0]["phases"][0]["endpoint"]["kind"], "ilp_tcp");
}

#[test]
fn only_matching_nothing_exits_2_with_e0402() {
    // Both values exist, but the exclusion removes their only combination.
    let text = MATRIX.replace(
        "matrix { protocol in [qwp, ilp_tcp] }",
        "matrix {\n  protocol in [qwp, ilp_tcp]\n  batch in [10, 100]\n  exclude protocol == ilp_tcp and batch == 100\n}",
    )
    .replace("batch 10 rows", "batch batch rows");
    Test::new()
        .file("w.wl", &text)
        .args([
            "plan",
            "w.wl",
            "--only",
            "protocol=ilp_tcp",
            "--only",
            "batch=100",
        ])
        .run()
        .no_panic()
        .code(2)
        .stderr_has("error[E0402]");
    Test::new()
        .file("w.wl", &text)
        .args(["plan", "w.wl", "--only", "protocol=ilp_tcp"])
        .run()
        .code(0)
        .stdout_has("cells 1");
}

#[test]
fn only_unknown_value_exits_2_with_e0403() {
    Test::new()
        .file("w.wl", MATRIX)
        .args(["plan", "w.wl", "--only", "protocol=mysql"])
        .run()
        .no_panic()
        .code(2)
        .stderr_has("error[E0403]")
        .stderr_has("qwp, ilp_tcp");
}

#[test]
fn only_unknown_axis_exits_2_with_e0403() {
    Test::new()
        .file("w.wl", MATRIX)
        .args(["plan", "w.wl", "--only", "protocl=qwp"])
        .run()
        .no_panic()
        .code(2)
        .stderr_has("error[E0403]")
        .stderr_has("did you mean `protocol`?");
}

#[test]
fn seed_overrides_the_workload_seed() {
    let plan = plan_json(&["--seed", "7"]);
    assert_eq!(plan["workload"]["seed"], 7);
    Test::new()
        .file("w.wl", MATRIX)
        .args(["plan", "w.wl", "--seed", "7"])
        .run()
        .code(0)
        .stdout_has("seed 7");
    Test::new()
        .file("w.wl", MATRIX)
        .args(["plan", "w.wl", "--seed", "-1"])
        .run()
        .code(2);
}

/// The same workload gives byte-identical plans from one process to the next, hooks included
/// (the script engine lists functions in a per-process hash order; the plan must not).
#[test]
fn plan_is_identical_across_processes() {
    let t = Test::new().file("w.wl", HOOK_WL).file("h.rhai", HOOK_RHAI);
    let first = t.args(["plan", "w.wl", "--json"]);
    let runs: Vec<String> = (0..6).map(|_| first.run().code(0).stdout).collect();
    for (i, r) in runs.iter().enumerate().skip(1) {
        assert_eq!(r, &runs[0], "run {i} differs from run 0");
    }
}

/// The shipped pgbench query-window CSV is wlrun's own output, not a copy: generating it again
/// from its schema gives the same bytes.
#[test]
fn pgbench_query_params_csv_is_generated_by_wlrun() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("params.csv");
    let out = Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .args([
            "gen",
            "workloads/pgbench-timeseries.wl",
            "--schema",
            "query_params",
        ])
        .args(["--timestamps", "sql", "-o"])
        .arg(&out_path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let generated = std::fs::read_to_string(&out_path).unwrap();
    let shipped = std::fs::read_to_string("workloads/pgbench-query-params.csv").unwrap();
    assert_eq!(generated, shipped);
    assert!(shipped.starts_with("hostname,start_time,end_time\n"));
    assert_eq!(shipped.lines().count(), 201);
}

/// A CSV named in an imported module is read beside that module, at check and at run alike,
/// wherever the run is started from (the run once read it beside the root workload).
#[test]
fn a_csv_named_in_an_imported_module_is_read_beside_that_module() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(lib.join("names.csv"), "name,q\nalpha,1\nbeta,2\n").unwrap();
    std::fs::write(
        lib.join("m.wl"),
        "schema s {\n  series n: symbol = format(\"h%d\", i) for i in 0..2\n  field site: varchar = csv(\"names.csv\", \"name\")\n  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 10s\n}\nquery q { sql \"SELECT $1\" binds from csv \"names.csv\" (q long) }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("w.wl"),
        "import \"lib/m.wl\" as m\ntarget t { null }\ningest load {\n  into t via null\n  rows m.s\n}\n",
    )
    .unwrap();
    for cwd in [dir.path().to_path_buf(), std::env::temp_dir()] {
        let file = dir.path().join("w.wl");
        let out = Command::new(env!("CARGO_BIN_EXE_wlrun"))
            .args(["run", "-q", "--json"])
            .arg(&file)
            .current_dir(&cwd)
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0), "from {}: {said}", cwd.display());
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["cells"][0]["phases"][0]["rows_sent"], 20, "{said}");
    }
    // The plan names the files as the run reads them, from the root workload's folder.
    let out = Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .args(["plan", "w.wl", "--json"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(plan.contains("lib/names.csv"), "{plan}");
}
