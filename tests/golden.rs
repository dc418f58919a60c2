//! Golden tests in the tera v2 style: one input file per case in `tests/golden/{parse,errors,plan}`,
//! globbed with insta, each snapshotting a readable dump (S-expression AST, plain diagnostics, plan
//! listing). Helper files that are not cases live in a `support/` folder, which the globs skip.
//!
//! Paths given to the checker are relative to the crate root (cargo runs integration tests there),
//! so the snapshots do not depend on where the repository is checked out.
//!
//! Every case runs even when an earlier one fails: problems are collected and reported together
//! after the glob, and a panic in the checker is reported as a problem of its case.
//!
//! Update snapshots with `INSTA_UPDATE=always cargo test --test golden` (or `cargo insta review`)
//! and read every changed `.snap` before committing it.

use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use wlrun::check::Options;
use wlrun::compile::{check_file, Outcome};
use wlrun::diag::{render_all, Code, Diagnostic, Severity, Style};
use wlrun::source::{Origin, SourceMap};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// `path` relative to the crate root.
fn relative(path: &Path) -> PathBuf {
    path.strip_prefix(ROOT).unwrap_or(path).to_path_buf()
}

fn settings(folder: &str) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path(format!("snapshots/{folder}"));
    s.set_prepend_module_to_snapshot(false);
    s.set_omit_expression(true);
    s
}

/// Runs `f`, turning a panic into its message.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|e| {
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic without a message".to_string())
    })
}

/// A case whose first line is `// args: --param NAME=VALUE ...` is checked with those flags, for
/// mistakes that are the command line's, not the file's.
fn check(path: &Path) -> Outcome {
    let mut opts = Options::default();
    let text = std::fs::read_to_string(path).unwrap_or_default();
    if let Some(args) = text.lines().next().and_then(|l| l.strip_prefix("// args:")) {
        let mut words = args.split_whitespace();
        while let Some(flag) = words.next() {
            let value = words.next().expect("a flag in `// args:` needs a value");
            match flag {
                "--param" => opts.params.push(value.to_string()),
                "--only" => opts.only.push(value.to_string()),
                other => panic!("`// args:` takes --param and --only, not {other}"),
            }
        }
    }
    check_file(&relative(path), &opts)
}

fn rendered(out: &Outcome) -> String {
    render_all(&out.map, &out.diagnostics, Style::Plain)
}

/// `file:line:col` of a diagnostic's primary label, as the renderer prints it.
fn position(out: &Outcome, d: &Diagnostic) -> String {
    let file = out.map.get(d.primary.span.file);
    let (line, col) = file.line_col(d.primary.span.start as usize);
    format!("{}:{line}:{col}", file.name)
}

/// The order `check` promises: by file, then position, then severity.
fn order_problems(name: &str, ds: &[Diagnostic]) -> Vec<String> {
    ds.windows(2)
        .filter(|p| (p[0].primary.span, p[0].severity) > (p[1].primary.span, p[1].severity))
        .map(|p| {
            format!(
                "{name}: {} `{}` at {:?} comes before {} `{}` at {:?}",
                p[0].code,
                p[0].message,
                p[0].primary.span,
                p[1].code,
                p[1].message,
                p[1].primary.span
            )
        })
        .collect()
}

#[track_caller]
fn assert_no_problems(what: &str, problems: &[String]) {
    assert!(
        problems.is_empty(),
        "{what}: {} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

fn cases(folder: &str) -> Vec<PathBuf> {
    let dir = Path::new(ROOT).join("tests/golden").join(folder);
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wl"))
        .collect();
    cases.sort();
    cases
}

// ------------------------------------------------------------------------------------------------
// parse: the AST as S-expressions

#[test]
fn parse() {
    let mut problems = Vec::new();
    settings("parse").bind(|| {
        insta::glob!("golden/parse/*.wl", |path| {
            let name = relative(path).display().to_string();
            let bytes = std::fs::read(path).unwrap();
            let mut map = SourceMap::new();
            let (id, problem) = map.add_bytes(Origin::Disk(relative(path)), name.clone(), bytes);
            if let Some(p) = problem {
                problems.push(format!("{name}: cannot load: {p:?}"));
                return;
            }
            let ast = match guarded(|| wlrun::syntax::parse(&map, id)) {
                Ok(Ok(ast)) => ast,
                Ok(Err(d)) => {
                    let text = wlrun::diag::render(&map, &d);
                    problems.push(format!("{name} does not parse:\n{text}"));
                    return;
                }
                Err(panic) => {
                    problems.push(format!("{name}: the parser panicked: {panic}"));
                    return;
                }
            };
            let text = wlrun::syntax::sexpr::file(&ast);
            // Only the comments-only case has no items.
            if text.trim().is_empty() != name.ends_with("comments_only.wl") {
                problems.push(format!("{name}: unexpected AST:\n{text}"));
            }
            insta::assert_snapshot!(text);
        });
    });
    assert_no_problems("parse cases", &problems);
}

/// Parsing the S-expression's own input twice gives the same tree: the walker keeps no state.
#[test]
fn parse_is_repeatable() {
    for path in cases("parse") {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut map = SourceMap::new();
        let a = map.add(Origin::Disk(path.clone()), "a.wl".into(), text.clone());
        let b = map.add(Origin::Disk(path.clone()), "b.wl".into(), text);
        let (a, b) = (wlrun::syntax::parse(&map, a), wlrun::syntax::parse(&map, b));
        let (a, b) = (a.expect("parses"), b.expect("parses"));
        assert_eq!(
            wlrun::syntax::sexpr::file(&a),
            wlrun::syntax::sexpr::file(&b)
        );
    }
}

// ------------------------------------------------------------------------------------------------
// errors: every diagnostic of `check`, rendered plain

/// Codes that cannot come from a workload file: read-time byte problems (tests/robustness.rs).
/// W0003 (unused declaration) is not emitted by the checker yet.
const NOT_FROM_A_FILE: &[&str] = &["E0003", "E0004", "W0003"];

/// What every errors case must satisfy besides its snapshot.
fn error_case_problems(name: &str, out: &Outcome) -> Vec<String> {
    let mut problems = Vec::new();
    if out.diagnostics.is_empty() {
        problems.push(format!("{name}: expected a diagnostic, got none"));
        return problems;
    }
    let has_error = out
        .diagnostics
        .iter()
        .any(|d| d.severity == Severity::Error);
    if out.checked.is_some() == has_error {
        problems.push(format!(
            "{name}: `checked` is {} with {} error(s)",
            if out.checked.is_some() {
                "present"
            } else {
                "absent"
            },
            out.diagnostics.iter().filter(|d| d.is_error()).count()
        ));
    }
    problems.extend(order_problems(name, &out.diagnostics));
    let text = rendered(out);
    for d in &out.diagnostics {
        let severity = if d.is_error() { "error" } else { "warning" };
        let header = format!("{severity}[{}]: {}", d.code, d.message);
        if !text.contains(&header) {
            problems.push(format!("{name}: `{header}` is not rendered"));
        }
        let at = format!("--> {}", position(out, d));
        if !text.contains(&at) {
            problems.push(format!("{name}: `{at}` is not rendered"));
        }
    }
    problems
}

#[test]
fn errors() {
    let mut problems = Vec::new();
    settings("errors").bind(|| {
        insta::glob!("golden/errors/*.wl", |path| {
            let name = relative(path).display().to_string();
            match guarded(|| check(path)) {
                Ok(out) => {
                    problems.extend(error_case_problems(&name, &out));
                    if !out.diagnostics.is_empty() {
                        insta::assert_snapshot!(rendered(&out));
                    }
                }
                Err(panic) => problems.push(format!("{name}: the checker panicked: {panic}")),
            }
        });
    });
    assert_no_problems("errors cases", &problems);
}

#[test]
fn errors_cover_every_code() {
    let cases = cases("errors");
    assert!(cases.len() >= 45, "only {} error cases", cases.len());
    let mut seen = BTreeSet::new();
    for path in &cases {
        if let Ok(out) = guarded(|| check(path)) {
            seen.extend(out.diagnostics.iter().map(|d| d.code.as_str()));
        }
    }
    let missing: Vec<&str> = Code::ALL
        .iter()
        .map(|c| c.as_str())
        .filter(|c| !NOT_FROM_A_FILE.contains(c) && !seen.contains(c))
        .collect();
    assert!(
        missing.is_empty(),
        "no case in tests/golden/errors produces {missing:?}; add one named after the mistake"
    );
}

/// Several mistakes in one file come out in source order, whatever order the checker found
/// them in (names and imports first, then matrix, then per-cell lowering).
#[test]
fn diagnostics_are_sorted_by_position() {
    let text = r#"
param unused = 1
target t { pg "mysql://x" { nosuch 1 } dialect nodb }
schema s { rows 0  field a: nosuch = 1  field b: long = unifrom(0, 1) }
query q { sql "SELECT $2" bind $1 = 1 }
ingest i { into t via pg  rows s  workers 0 }
run r { against t.pg  queries q  count 0  expect p98 < 1ms }
"#;
    let out = wlrun::compile::check_text("sorted.wl", text, &Options::default());
    let errors = out.diagnostics.iter().filter(|d| d.is_error()).count();
    assert!(errors >= 5, "expected several errors:\n{}", rendered(&out));
    assert_no_problems("sorted.wl", &order_problems("sorted.wl", &out.diagnostics));
    let lines: Vec<usize> = out
        .diagnostics
        .iter()
        .map(|d| {
            out.map
                .get(d.primary.span.file)
                .line_col(d.primary.span.start as usize)
                .0
        })
        .collect();
    assert!(
        lines.windows(2).all(|w| w[0] <= w[1]),
        "lines out of order: {lines:?}"
    );
    // The rendered text shows them in the same order.
    let text = rendered(&out);
    let mut last = 0;
    for d in &out.diagnostics {
        let at = format!("--> {}", position(&out, d));
        let found = text[last..].find(&at).map(|i| i + last);
        assert!(found.is_some(), "`{at}` missing or out of order in\n{text}");
        last = found.unwrap();
    }
}

// ------------------------------------------------------------------------------------------------
// plan: the listing of a checked, lowered workload

fn plan_of(path: &Path) -> Result<wlrun::plan::Plan, String> {
    let out = guarded(|| check(path)).map_err(|p| format!("the checker panicked: {p}"))?;
    let Some(checked) = &out.checked else {
        return Err(format!("does not check:\n{}", rendered(&out)));
    };
    if !out.diagnostics.is_empty() {
        return Err(format!(
            "plan cases must check without warnings:\n{}",
            rendered(&out)
        ));
    }
    Ok(wlrun::lower::lower(checked))
}

#[test]
fn plan() {
    let mut problems = Vec::new();
    settings("plan").bind(|| {
        insta::glob!("golden/plan/*.wl", |path| {
            let name = relative(path).display().to_string();
            match plan_of(path) {
                Ok(plan) => {
                    let text = wlrun::plan::listing(&plan);
                    if !text.starts_with(&format!("workload {}  seed ", plan.workload.name))
                        || !text.contains(&format!("file {name}"))
                        || !text.contains(&format!("cells {}", plan.cells.len()))
                    {
                        problems.push(format!("{name}: unexpected listing header:\n{text}"));
                    }
                    insta::assert_snapshot!(text);
                }
                Err(e) => problems.push(format!("{name}: {e}")),
            }
        });
    });
    assert_no_problems("plan cases", &problems);
}

#[test]
fn plan_json() {
    let path = Path::new(ROOT).join("tests/golden/plan/csv_bind.wl");
    let plan = plan_of(&path).unwrap();
    let value = serde_json::to_value(&plan).unwrap();
    assert_eq!(value["format"], serde_json::json!(wlrun::plan::PLAN_FORMAT));
    assert_eq!(value["cells"].as_array().map(Vec::len), Some(1));
    settings("plan").bind(|| {
        insta::assert_json_snapshot!("plan_json@csv_bind", plan);
    });
}

/// Every value a cell is expected to hold, and only those, for the matrix case.
#[test]
fn plan_matrix_cells() {
    let path = Path::new(ROOT).join("tests/golden/plan/matrix_when_exclude.wl");
    let plan = plan_of(&path).unwrap();
    let keys: Vec<&str> = plan.cells.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "protocol=qwp workers=1 ack=publish",
            "protocol=qwp workers=1 ack=per_batch",
            "protocol=qwp workers=4 ack=publish",
            "protocol=qwp workers=4 ack=per_batch",
            "protocol=ilp_tcp workers=1 ack=none",
            "protocol=ilp_http workers=1 ack=none",
            "protocol=ilp_http workers=4 ack=none",
        ]
    );
    let indexes: Vec<usize> = plan.cells.iter().map(|c| c.index).collect();
    assert_eq!(indexes, (1..=7).collect::<Vec<_>>());
}
