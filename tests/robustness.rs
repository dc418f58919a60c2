//! Hostile input: bytes that are not text, huge files, deep nesting, long operator chains and
//! unterminated constructs. Each must end in a positioned diagnostic, never a panic, a stack
//! overflow or a hang. Every case runs on a thread with a 2 MiB stack (the default for test
//! threads, stated explicitly so the tests do not depend on a larger main-thread stack); a stack
//! overflow would abort the whole test binary, which fails it just as loudly.
//!
//! A proptest then feeds arbitrary text and token soups built from the grammar to `check_text`.

use std::path::Path;
use std::process::Command;

use proptest::prelude::*;
use wlrun::check::Options;
use wlrun::compile::{check_file, check_text, Outcome};
use wlrun::diag::{render_all, Code, Diagnostic, Severity, Style};

const STACK: usize = 2 * 1024 * 1024;

/// Runs `f` on a fresh thread with a 2 MiB stack and returns its result; a panic fails the test
/// with the case's name.
fn on_small_stack<T: Send + 'static>(name: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let handle = std::thread::Builder::new()
        .name(name.to_string())
        .stack_size(STACK)
        .spawn(f)
        .unwrap();
    match handle.join() {
        Ok(v) => v,
        Err(e) => {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{name}: the checker panicked: {msg}");
        }
    }
}

/// Checks text on a small stack; returns the outcome's diagnostics and their rendering.
fn check_str(name: &'static str, text: String) -> (Vec<Diagnostic>, String) {
    on_small_stack(name, move || {
        let out = check_text(name, &text, &Options::default());
        let rendered = render_all(&out.map, &out.diagnostics, Style::Plain);
        (out.diagnostics, rendered)
    })
}

/// Checks a file holding `bytes` on a small stack.
fn check_bytes(name: &'static str, bytes: Vec<u8>) -> (Vec<Diagnostic>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    on_small_stack(name, move || {
        let out: Outcome = check_file(&path, &Options::default());
        let rendered = render_all(&out.map, &out.diagnostics, Style::Plain);
        drop(dir);
        (out.diagnostics, rendered)
    })
}

/// Exactly one error, with this code, at this 1-based line and column of the named file.
#[track_caller]
fn assert_one_error(got: &(Vec<Diagnostic>, String), code: Code, at: &str) {
    let (ds, text) = got;
    let errors: Vec<&Diagnostic> = ds.iter().filter(|d| d.is_error()).collect();
    assert_eq!(errors.len(), 1, "expected one error:\n{text}");
    assert_eq!(errors[0].code, code, "{text}");
    assert!(text.contains(&format!("error[{code}]")), "{text}");
    assert!(
        text.contains(at),
        "expected the position `{at}` in:\n{text}"
    );
}

fn wlrun(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    (
        out.status.code().expect("exit code"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

// ------------------------------------------------------------------------------------------------
// Bytes

#[test]
fn not_utf8_is_e0003_at_the_bad_byte() {
    let mut bytes = b"param a = 1\nparam b = \"caf".to_vec();
    bytes.push(0xE9);
    bytes.extend_from_slice(b"\"\n");
    let got = check_bytes("latin1.wl", bytes);
    assert_one_error(&got, Code::E0003, "latin1.wl:2:15");
    // A lone continuation byte as the very first byte.
    let got = check_bytes("first.wl", vec![0x80, b'p']);
    assert_one_error(&got, Code::E0003, "first.wl:1:1");
}

#[test]
fn empty_file_is_an_error() {
    for (name, text) in [
        ("empty.wl", ""),
        ("blank.wl", "\n\n  \t\n"),
        ("comments.wl", "// only\n/* this */\n"),
    ] {
        let (ds, text) = check_str(name, text.to_string());
        assert!(
            ds.iter().any(Diagnostic::is_error),
            "{name}: expected an error:\n{text}"
        );
        assert!(text.contains(&format!("--> {name}:")), "{name}:\n{text}");
    }
}

#[test]
fn nul_byte_is_a_syntax_error_at_the_nul() {
    let got = check_str("nul.wl", "param a = 1\nparam b = \u{0}2\n".to_string());
    assert_one_error(&got, Code::E0001, "nul.wl:2:11");
    assert!(got.1.contains("NUL"), "{}", got.1);
}

#[test]
fn control_characters_are_named() {
    let got = check_str("ctl.wl", "param a = 1\u{7}\n".to_string());
    assert_one_error(&got, Code::E0001, "ctl.wl:1:12");
    assert!(got.1.contains("U+0007"), "{}", got.1);
}

/// A file-level problem: the message names the file and its size; there is no line to show.
#[test]
fn file_over_the_limit_is_e0004() {
    let bytes = vec![b' '; wlrun::source::MAX_FILE_BYTES + 1];
    let (ds, text) = check_bytes("huge.wl", bytes);
    assert_eq!(ds.len(), 1, "{text}");
    assert_eq!(ds[0].code, Code::E0004);
    let size = (wlrun::source::MAX_FILE_BYTES + 1).to_string();
    assert!(
        text.contains("error[E0004]") && text.contains("huge.wl") && text.contains(&size),
        "{text}"
    );
}

/// Many small declarations: it finishes, every param is reported unused (W0001) with its own
/// position, and there is no error. 10 MB in an optimised build; 1 MB in a debug build, where the
/// checker is about 4x slower (10 MB takes ~40 s in debug, ~9 s in release).
#[test]
fn many_params_finish() {
    let target = if cfg!(debug_assertions) {
        1_000_000
    } else {
        10_000_000
    };
    let mut text = String::with_capacity(target + 64);
    let mut n = 0;
    while text.len() < target {
        text.push_str(&format!("param p_{n} = {n}\n"));
        n += 1;
    }
    let last_name = text.rfind("p_").unwrap() as u32;
    let (ds, rendered) = check_str("many.wl", text);
    assert!(
        ds.iter().all(|d| d.severity == Severity::Warning),
        "unexpected error"
    );
    assert_eq!(ds.len(), n, "one W0001 per param");
    assert!(ds.iter().all(|d| d.code == Code::W0001));
    assert_eq!(ds.last().unwrap().primary.span.start, last_name);
    // The first ones are printed, the rest counted.
    let shown = wlrun::diag::MAX_SHOWN;
    let last_shown = format!("many.wl:{shown}:7");
    assert!(rendered.contains(&last_shown), "no `{last_shown}`");
    let more = format!("... and {} more warnings, not shown", n - shown);
    assert!(rendered.contains(&more), "no `{more}`");
}

/// One 10 MB string literal is a single token; it parses, and only its param is unused.
#[test]
fn ten_megabyte_string_literal() {
    let text = format!("param s = \"{}\"\n", "x".repeat(10_000_000));
    let (ds, _) = check_str("string.wl", text);
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert_eq!(ds[0].code, Code::W0001);
}

#[test]
fn ten_megabytes_of_garbage() {
    // Deterministic noise from the grammar's own characters.
    let alphabet = b"abcxyz019_{}[]()\"$=+-*/.,;: \n\t%<>!#";
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let bytes: Vec<u8> = (0..10_000_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            alphabet[(state % alphabet.len() as u64) as usize]
        })
        .collect();
    let (ds, text) = check_bytes("garbage.wl", bytes);
    let errors: Vec<&Diagnostic> = ds.iter().filter(|d| d.is_error()).collect();
    assert_eq!(errors.len(), 1, "{text}");
    assert!(
        matches!(errors[0].code, Code::E0001 | Code::E0002),
        "{text}"
    );
    assert!(text.contains("garbage.wl:"), "{text}");
    // Garbage with no brackets at all reaches the parser itself.
    let flat: Vec<u8> = b"param a = 1\n"
        .iter()
        .copied()
        .chain((0..10_000_000).map(|i| b"x+*=; "[i % 6]))
        .collect();
    let got = check_bytes("flat.wl", flat);
    assert_one_error(&got, Code::E0001, "flat.wl:2:");
}

// ------------------------------------------------------------------------------------------------
// Depth and length

#[test]
fn lists_nested_10000_deep() {
    let text = format!("param a = {}1{}\n", "[".repeat(10_000), "]".repeat(10_000));
    let max = wlrun::syntax::MAX_DEPTH;
    let got = check_str("deep.wl", text);
    // The first bracket past the limit: column 11 is the first `[`.
    assert_one_error(&got, Code::E0002, &format!("deep.wl:1:{}", 11 + max));
}

#[test]
fn mixed_brackets_nested_deep() {
    let text = format!(
        "param a = f({}){}\n",
        "[{ k: (".repeat(3000),
        ")}]".repeat(3000)
    );
    let got = check_str("mixed.wl", text);
    assert_one_error(&got, Code::E0002, "mixed.wl:1:");
}

#[test]
fn ten_thousand_minus_prefixes() {
    let text = format!("param a = {}1\n", "-".repeat(10_000));
    let got = check_str("neg.wl", text);
    assert_one_error(&got, Code::E0002, "neg.wl:1:11");
    let text = format!("param a = {}true\n", "not ".repeat(10_000));
    let got = check_str("not.wl", text);
    assert_one_error(&got, Code::E0002, "not.wl:1:11");
}

#[test]
fn hundred_thousand_term_sum() {
    let text = format!("param a = {}\n", vec!["1"; 100_000].join("+"));
    let got = check_str("chain.wl", text);
    assert_one_error(&got, Code::E0002, "chain.wl:1:11");
    assert!(got.1.contains("99999 operators"), "{}", got.1);
}

#[test]
fn long_chain_inside_a_string_interpolation() {
    let text = format!("param a = \"${{{}}}\"\n", vec!["1"; 10_000].join("*"));
    let got = check_str("interp-chain.wl", text);
    assert_one_error(&got, Code::E0002, "interp-chain.wl:1:");
}

#[test]
fn deeply_nested_interpolation() {
    let text = format!(
        "param a = {}1{}\n",
        "\"${".repeat(5_000),
        "}\"".repeat(5_000)
    );
    let got = check_str("interp.wl", text);
    assert_one_error(&got, Code::E0002, "interp.wl:1:");
}

#[test]
fn unterminated_string() {
    let got = check_str(
        "string.wl",
        "param a = 1\nparam b = \"abc\nparam c = 2\n".to_string(),
    );
    let (ds, text) = &got;
    assert_eq!(ds.len(), 1, "{text}");
    assert_eq!(ds[0].code, Code::E0001);
    // Reported at the opening quote, not where the parser gives up.
    assert!(text.contains("string.wl:2:11"), "{text}");
    assert!(text.contains("unterminated string"), "{text}");
}

#[test]
fn unterminated_block_comment() {
    let got = check_str(
        "comment.wl",
        "param a = 1\n/* never closed\nparam c = 2\n".to_string(),
    );
    let (ds, text) = &got;
    assert_eq!(ds.len(), 1, "{text}");
    assert_eq!(ds[0].code, Code::E0001);
    assert!(text.contains("comment.wl:2:"), "{text}");
}

#[test]
fn unterminated_everything_at_end_of_file() {
    for text in [
        "target t {",
        "param a = [1, 2",
        "param a = {",
        "param a = f(",
        "param a = \"${",
        "param a = \"${1",
        "param a = env(",
        "query q { sql \"",
        "matrix { a in",
        "param a =",
        "param",
        "import",
        "/*",
        "param a = 1 /* x",
    ] {
        let (ds, rendered) = check_str("eof.wl", text.to_string());
        assert_eq!(ds.len(), 1, "{text:?}:\n{rendered}");
        assert!(ds[0].is_error(), "{text:?}:\n{rendered}");
        assert!(rendered.contains("eof.wl:1:"), "{text:?}:\n{rendered}");
    }
}

// ------------------------------------------------------------------------------------------------
// Through the binary

#[test]
fn binary_exits_2_on_hostile_files() {
    let dir = tempfile::tempdir().unwrap();
    // (name, bytes, code, whether the diagnostic has a line to point at)
    let files: [(&str, Vec<u8>, &str, bool); 4] = [
        ("bad-utf8.wl", vec![b'p', 0xFF, b'\n'], "E0003", true),
        ("nul.wl", b"param a = \x00\n".to_vec(), "E0001", true),
        (
            "deep.wl",
            format!("param a = {}", "(".repeat(10_000)).into_bytes(),
            "E0002",
            true,
        ),
        (
            "huge.wl",
            vec![b'\n'; wlrun::source::MAX_FILE_BYTES + 1],
            "E0004",
            false,
        ),
    ];
    for (name, bytes, code, positioned) in files {
        std::fs::write(dir.path().join(name), bytes).unwrap();
        let (status, stderr) = wlrun(dir.path(), &["check", name]);
        assert_eq!(status, 2, "{name}:\n{stderr}");
        assert!(
            stderr.contains(&format!("error[{code}]")),
            "{name}:\n{stderr}"
        );
        let at = if positioned {
            format!("--> {name}:1:")
        } else {
            format!("`{name}`")
        };
        assert!(stderr.contains(&at), "{name}: no `{at}` in\n{stderr}");
        assert!(
            stderr.contains(&format!("{name}: 1 error")),
            "{name}:\n{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{name}:\n{stderr}");
    }
}

// ------------------------------------------------------------------------------------------------
// Limits of check: chains, long values, column chains (issue 30, item 6)

/// `param p0 = 1`, `param pN = pN-1 + 1` up to `p{n-1}`, and a schema whose rows read the
/// last: checking evaluates the chain from its far end, one param inside the other.
fn param_chain(n: usize) -> String {
    let mut text = String::from("param p0 = 1\n");
    for i in 1..n {
        text.push_str(&format!("param p{i} = p{} + 1\n", i - 1));
    }
    text.push_str(&format!(
        "target db {{ null }}\nschema s {{ rows p{}  field a: long = 1 }}\ningest load {{ into db via null  rows s }}\n",
        n - 1
    ));
    text
}

/// 3,000 params, each reading the one before, overflowed the stack (SIGABRT, rc 134): the chain
/// is cut at its limit with a positioned E0209.
#[test]
fn three_thousand_chained_params_are_e0209() {
    let (ds, text) = check_str("chain.wl", param_chain(3000));
    let errors: Vec<&Diagnostic> = ds.iter().filter(|d| d.is_error()).collect();
    assert_eq!(errors.len(), 1, "{text}");
    assert_eq!(errors[0].code, Code::E0209, "{text}");
    assert!(text.contains("--> chain.wl:"), "{text}");
    assert!(text.contains("chain of more than"), "{text}");
}

/// A param chain within the limit still checks.
#[test]
fn a_param_chain_under_the_limit_checks() {
    let (ds, text) = check_str("short-chain.wl", param_chain(50));
    assert!(ds.iter().all(|d| !d.is_error()), "{text}");
}

/// One legal expression: 60 nested parentheses, each holding a chain of 120 operators. The
/// parser accepts it (each chain is its own expression), and evaluating it recursed 7,200
/// levels deep, more than a 2 MiB stack holds.
#[test]
fn an_expression_nested_through_long_chains_is_e0209() {
    let mut e = String::from("1");
    for _ in 0..60 {
        e = format!("({e}{})", "+1".repeat(120));
    }
    let text = format!("param a = {e}\ntarget db {{ null }}\nschema s {{ rows a  field x: long = 1 }}\ningest load {{ into db via null  rows s }}\n");
    let got = check_str("nested.wl", text);
    assert_one_error(&got, Code::E0209, "nested.wl:1:");
}

/// 3,000 generator params, each built on the one before and evaluated in file order: no
/// evaluation nests deeply, but the generator each one holds does, and every later step that
/// walks it (its type, the plan, the generator) recursed once per level.
#[test]
fn generators_built_on_generators_are_e0209() {
    let mut text = String::from("param g0 = uniform(0, 9)\n");
    for i in 1..3000 {
        text.push_str(&format!("param g{i} = g{} + 1\n", i - 1));
    }
    let (ds, rendered) = check_str("gens.wl", text);
    let errors: Vec<&Diagnostic> = ds.iter().filter(|d| d.is_error()).collect();
    assert_eq!(errors.len(), 1, "{rendered}");
    assert_eq!(errors[0].code, Code::E0209, "{rendered}");
    assert!(rendered.contains("--> gens.wl:"), "{rendered}");
}

/// 40 params, each doubling the one before (strings by `+`, by interpolation, and lists),
/// allocated until the process died, although no block used them: the first value over the
/// limit is a positioned E0210, and the params after it fail quietly.
#[test]
fn values_doubled_forty_times_are_e0210() {
    // (file, first value, how param i doubles param i - 1, with `P` standing for it)
    let shapes = [
        ("concat.wl", "\"xy\"", "P + P"),
        ("interp.wl", "\"xy\"", "\"${P}${P}\""),
        ("list.wl", "[1]", "[P, P]"),
    ];
    for (name, first, double) in shapes {
        let mut text = format!("param s0 = {first}\n");
        for i in 1..40 {
            let value = double.replace('P', &format!("s{}", i - 1));
            text.push_str(&format!("param s{i} = {value}\n"));
        }
        let (ds, rendered) = check_str(name, text);
        let errors: Vec<&Diagnostic> = ds.iter().filter(|d| d.is_error()).collect();
        assert_eq!(errors.len(), 1, "{name}: {rendered}");
        assert_eq!(errors[0].code, Code::E0210, "{name}: {rendered}");
        assert!(rendered.contains(&format!("--> {name}:")), "{rendered}");
    }
}

/// A chain of 3,000 columns, each reading the one before: the cycle check walked every path
/// from every column (cubic: 1,000 columns took 15 s, 2,000 over 30 s). It is linear now; the
/// timeout is a hang guard only.
#[test]
fn a_three_thousand_column_chain_checks() {
    let mut text = String::from(
        "target db { null }\nschema s {\n  rows 10\n  field c0: long = uniform(0, 9)\n",
    );
    for i in 1..3000 {
        text.push_str(&format!("  field c{i}: long = c{} + 1\n", i - 1));
    }
    text.push_str("}\ningest load { into db via null  rows s }\n");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .stack_size(STACK)
        .spawn(move || {
            let out = check_text("columns.wl", &text, &Options::default());
            let _ = tx.send(render_all(&out.map, &out.diagnostics, Style::Plain));
        })
        .unwrap();
    let rendered = rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("checking 3,000 chained columns did not end within two minutes");
    assert!(!rendered.contains("error"), "{rendered}");
}

/// A column cycle is still found, once, with its chain.
#[test]
fn a_column_cycle_is_e0208_with_its_chain() {
    let text = "target db { null }\nschema s {\n  rows 10\n  field a: long = c + 1\n  field b: long = a + 1\n  field c: long = b + 1\n  field d: long = uniform(0, 9)\n}\ningest load { into db via null  rows s }\n";
    let (ds, rendered) = check_str("cycle.wl", text.to_string());
    let errors: Vec<&Diagnostic> = ds.iter().filter(|d| d.is_error()).collect();
    assert!(!errors.is_empty(), "{rendered}");
    assert!(errors.iter().all(|d| d.code == Code::E0208), "{rendered}");
    assert!(rendered.contains("cycle.wl:4:9"), "{rendered}");
    assert!(
        rendered.contains("the chain: a -> c -> b -> a"),
        "{rendered}"
    );
}

// ------------------------------------------------------------------------------------------------
// Property tests

/// Every keyword, punctuation mark and literal shape of the grammar.
const TOKENS: &[&str] = &[
    "import",
    "as",
    "workload",
    "seed",
    "description",
    "param",
    "target",
    "dialect",
    "count",
    "via",
    "matrix",
    "in",
    "when",
    "exclude",
    "schema",
    "table",
    "rows",
    "series",
    "tag",
    "field",
    "timestamp",
    "for",
    "per",
    "row",
    "null",
    "every",
    "from",
    "to",
    "ingest",
    "into",
    "file",
    "limit",
    "batch",
    "workers",
    "connections",
    "ack",
    "setup",
    "teardown",
    "verify",
    "visible",
    "within",
    "calibrate",
    "query",
    "label",
    "sql",
    "let",
    "bind",
    "binds",
    "csv",
    "route",
    "by",
    "hook",
    "run",
    "against",
    "queries",
    "weight",
    "request",
    "duration",
    "warmup",
    "repeat",
    "rate",
    "require",
    "expect",
    "status",
    "check",
    "same",
    "results",
    "across",
    "endpoints",
    "env",
    "pg",
    "http",
    "ilp_tcp",
    "ilp_http",
    "qwp",
    "sqlite",
    "samples",
    "promql",
    "poisson",
    "fixed",
    "true",
    "false",
    "none",
    "and",
    "or",
    "not",
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    ",",
    ":",
    "=",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "..",
    "+",
    "-",
    "*",
    "/",
    "%",
    ".",
    ".*",
    "$1",
    "$2",
    "0",
    "1",
    "42",
    "1_000",
    "9223372036854775807",
    "99999999999999999999",
    "2.5",
    "1e3",
    "10s",
    "1h30m",
    "500ms",
    "64MiB",
    "5000/s",
    "0.1%",
    "2016-01-01T00:00:00Z",
    "2016-02-30T00:00:00Z",
    "\"text\"",
    "\"${x}\"",
    "\"${\"",
    "\"\\n\"",
    "\"std/tsbs/cpu-only.wl\"",
    "\"postgres://u@127.0.0.1:5432/db\"",
    "\"ws://127.0.0.1:9000\"",
    "\"tcp://h:9009\"",
    "hosts",
    "x",
    "cpu",
    "q",
    "uniform",
    "seq",
    "format",
    "window",
    "sample",
    "pick",
    "//",
    "/*",
    "*/",
    "\n",
    " ",
];

fn soup() -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(TOKENS), 0..60).prop_map(|ts| ts.join(" "))
}

/// A valid skeleton with one token replaced: close to real workloads, so checking gets past the
/// parser more often than a random soup does.
const SKELETON: &str = "param hosts = 4\ntarget t { pg \"postgres://u@127.0.0.1:5432/db\" }\nmatrix { w in [1, 2] }\nschema s { series h: symbol = format(\"h%d\", n) for n in 0..hosts  timestamp ts = every 1m from 2016-01-01T00:00:00Z for 1h }\nquery q { sql \"SELECT $1\" bind $1 = sample(s.h, 2) }\ningest i { into t via pg  rows s  workers w }\nrun r { against t.pg  queries q  count 10 }\n";

fn mutated_skeleton() -> impl Strategy<Value = String> {
    let words: Vec<&'static str> = SKELETON.split(' ').collect();
    let n = words.len();
    (0..n, proptest::sample::select(TOKENS)).prop_map(move |(i, t)| {
        let mut w = words.clone();
        w[i] = t;
        w.join(" ")
    })
}

fn never_panics(text: &str) {
    let out = check_text("prop.wl", text, &Options::default());
    // Whatever happened, the diagnostics render, in order, with positions.
    let rendered = render_all(&out.map, &out.diagnostics, Style::Plain);
    for w in out.diagnostics.windows(2) {
        assert!(
            w[0].primary.span <= w[1].primary.span,
            "unsorted:\n{rendered}"
        );
    }
    if out.diagnostics.iter().any(Diagnostic::is_error) {
        assert!(out.checked.is_none());
        assert!(rendered.contains("error["), "{rendered}");
    } else if let Some(checked) = &out.checked {
        let plan = wlrun::lower::lower(checked);
        assert!(!wlrun::plan::listing(&plan).is_empty());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        never_panics(&text);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        never_panics(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn token_soup_never_panics(text in soup()) {
        never_panics(&text);
    }

    #[test]
    fn mutated_workload_never_panics(text in mutated_skeleton()) {
        never_panics(&text);
    }
}

#[test]
fn skeleton_checks() {
    let out = check_text("skeleton.wl", SKELETON, &Options::default());
    let rendered = render_all(&out.map, &out.diagnostics, Style::Plain);
    assert!(out.checked.is_some(), "{rendered}");
}

// ------------------------------------------------------------------------------------------------
// Values that would panic at run time

/// `rate 1e-300/s` once panicked in main converting its send gap to a time span (rc 101, no
/// report), and `rate 1e-20/s` panicked a worker: a rate below the floor is a positioned E0203,
/// in `check` and in `run` (exit 2, nothing sent).
#[test]
fn a_tiny_rate_is_e0203_at_its_value() {
    for (rate, clause) in [
        (
            "1e-300/s",
            "run r { against t.sqlite  queries one  rate RATE  count 10 }",
        ),
        (
            "1e-20/s",
            "run r { against t.sqlite  queries one  rate RATE  duration 1s }",
        ),
        (
            "1e-300/s",
            "ingest i { into t via sqlite  rows s  rate RATE }",
        ),
    ] {
        let clause = clause.replace("RATE", rate);
        let text = format!(
            "workload w {{ seed 1 }}\nschema s {{\n  series host: symbol = format(\"h%d\", n) for n in 0..2\n  field v: long = uniform(0, 9)\n  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 10s\n}}\ntarget t {{ sqlite \"x.db\" }}\nquery one {{ sql \"SELECT 1\" }}\n{clause}\n"
        );
        let got = check_str("rate.wl", text.clone());
        let col = clause.find(rate).unwrap() + 1;
        assert_one_error(&got, Code::E0203, &format!("rate.wl:9:{col}"));
        assert!(got.1.contains("a rate must be at least"), "{}", got.1);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("w.wl"), &text).unwrap();
        let (code, err) = wlrun(dir.path(), &["run", "w.wl"]);
        assert_eq!(code, 2, "{rate}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

// ------------------------------------------------------------------------------------------------
// Files a workload names

/// Runs `wlrun check main.wl` in `dir` with `text` as main.wl: its exit code and stderr. A
/// check that does not end within a minute is killed and fails the test (a hang guard only:
/// an honest check of these files takes milliseconds).
fn check_in(dir: &Path, text: &str) -> (i32, String) {
    std::fs::write(dir.join("main.wl"), text).unwrap();
    let err_path = dir.join("stderr.txt");
    let mut child = Command::new(env!("CARGO_BIN_EXE_wlrun"))
        .args(["check", "main.wl", "--color", "never"])
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let guard = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > guard {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("`wlrun check` hung on:\n{text}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let err = std::fs::read_to_string(&err_path).unwrap();
    (status.code().unwrap_or(-1), err)
}

const SCHEMA_CSV: &str = "target db { sqlite \"bench.db\" }\nschema s {\n  rows 10\n  field x: varchar = csv(\"PATH\", \"hostname\")\n}\ningest load { into db via sqlite  rows s }\n";
const BINDS_CSV: &str = "target db { sqlite \"bench.db\" }\nquery q {\n  sql \"SELECT * FROM cpu WHERE hostname = $1\"\n  binds from csv \"PATH\" (hostname text)\n}\nrun r { against db.sqlite  queries q  count 10 }\n";
const HOOK: &str = "target api { http \"http://127.0.0.1:8088\" }\nhook h from \"PATH\" (request)\nrun r { against api.http  request h.request  count 10 }\n";
const IMPORT: &str = "import \"PATH\" as lib\ntarget db { sqlite \"bench.db\" }\n";

/// Each way a workload names a file, with the position of the path in main.wl.
const NAMED_FILES: &[(&str, &str, &str)] = &[
    ("import", IMPORT, "main.wl:1:8"),
    ("csv()", SCHEMA_CSV, "main.wl:4:26"),
    ("binds from csv", BINDS_CSV, "main.wl:4:18"),
    ("hook", HOOK, "main.wl:2:13"),
];

/// `/dev/zero` and `/dev/urandom` never end: read whole, they grew `check` to 4.2 GB before it
/// died. A device is refused, positioned at the path that names it, without a read.
#[test]
fn a_device_named_as_a_file_is_refused_at_its_path() {
    let dir = tempfile::tempdir().unwrap();
    for device in ["/dev/zero", "/dev/urandom"] {
        for (what, template, at) in NAMED_FILES {
            let (code, err) = check_in(dir.path(), &template.replace("PATH", device));
            assert_eq!(code, 2, "{what} {device}: {err}");
            assert!(
                err.contains(at),
                "{what} {device}: expected `{at}` in:\n{err}"
            );
            assert!(
                err.contains("a character device, not a regular file"),
                "{what} {device}: {err}"
            );
        }
    }
}

/// Opening a FIFO waits for a writer: an imported FIFO blocked `check` forever. Every named
/// FIFO is refused at once.
#[test]
fn a_fifo_named_as_a_file_is_refused_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let made = Command::new("mkfifo")
        .arg(dir.path().join("pipe"))
        .status()
        .unwrap();
    assert!(made.success());
    for (what, template, at) in NAMED_FILES {
        let (code, err) = check_in(dir.path(), &template.replace("PATH", "pipe"));
        assert_eq!(code, 2, "{what}: {err}");
        assert!(err.contains(at), "{what}: expected `{at}` in:\n{err}");
        assert!(err.contains("a FIFO, not a regular file"), "{what}: {err}");
    }
}

/// A regular file over 16 MiB is refused before it is read (the size the file states), for
/// every way of naming one; a sparse file costs no disk.
#[test]
fn a_named_file_over_the_limit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let big = std::fs::File::create(dir.path().join("big.csv")).unwrap();
    big.set_len(wlrun::source::MAX_FILE_BYTES as u64 + 1)
        .unwrap();
    let size = format!("{} bytes", wlrun::source::MAX_FILE_BYTES + 1);
    for (what, template, at) in NAMED_FILES {
        let (code, err) = check_in(dir.path(), &template.replace("PATH", "big.csv"));
        assert_eq!(code, 2, "{what}: {err}");
        assert!(err.contains(at), "{what}: expected `{at}` in:\n{err}");
        assert!(err.contains(&size), "{what}: expected `{size}` in:\n{err}");
    }
}

/// A diagnostic quotes only wlrun's own text: a file that is not `.wl` (`.rhai` for a hook,
/// `.csv` for data) keeps its lines to itself, though the position is still given.
/// `import "/etc/shadow"` printed the file's first line.
#[test]
fn a_file_that_is_not_wlrun_text_is_not_quoted() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("secret.txt"),
        "sk_live_SUPERSECRET,token=hunter2\nsecond line\n",
    )
    .unwrap();
    for (what, template, at) in [
        ("import", IMPORT, "secret.txt:1:"),
        ("csv()", SCHEMA_CSV, "main.wl:4:"),
        ("binds from csv", BINDS_CSV, "main.wl:4:"),
        ("hook", HOOK, "secret.txt:1:"),
    ] {
        let (code, err) = check_in(dir.path(), &template.replace("PATH", "secret.txt"));
        assert_eq!(code, 2, "{what}: {err}");
        assert!(err.contains(at), "{what}: expected `{at}` in:\n{err}");
        for secret in ["SUPERSECRET", "hunter2", "sk_live"] {
            assert!(!err.contains(secret), "{what}: `{secret}` printed:\n{err}");
        }
    }
}
