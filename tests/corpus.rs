//! Every shipped `.wl` file is a test: everything under `stdlib/`, `workloads/`, `examples/` and
//! `templates/` (the starters `wlrun init` writes) must check without errors and lower to a
//! plan, and every ```wl block in `docs/*.md` and `README.md` must check (a block fenced
//! ```wl,error must fail instead).
//!
//! Doc blocks are checked as if they were the markdown file itself, padded with blank lines so
//! a diagnostic points at the block's real line in the markdown, and resolved from the markdown
//! file's folder (so `import "std/..."` and relative paths work as they would for a reader who
//! copies the block next to the doc).

use std::path::{Path, PathBuf};

use wlrun::check::Options;
use wlrun::compile::{check_file, check_text, Outcome};
use wlrun::diag::{render_all, Style};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn rendered(out: &Outcome) -> String {
    render_all(&out.map, &out.diagnostics, Style::Plain)
}

fn errors(out: &Outcome) -> usize {
    out.diagnostics.iter().filter(|d| d.is_error()).count()
}

/// Every `.wl` file below `dir` (relative to the crate root), sorted.
fn wl_files(dir: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(Path::new(ROOT).join(dir)) else {
            return;
        };
        for e in entries {
            let path = e.unwrap().path();
            let rel = path.strip_prefix(ROOT).unwrap().to_path_buf();
            if path.is_dir() {
                walk(&rel, out);
            } else if path.extension().is_some_and(|x| x == "wl") {
                out.push(rel);
            }
        }
    }
    let mut out = Vec::new();
    walk(Path::new(dir), &mut out);
    out.sort();
    out
}

fn check_corpus(dir: &str) -> usize {
    let files = wl_files(dir);
    let mut failures = Vec::new();
    for file in &files {
        let out = check_file(file, &Options::default());
        let Some(checked) = &out.checked else {
            failures.push(format!(
                "{} does not check:\n{}",
                file.display(),
                rendered(&out)
            ));
            continue;
        };
        assert_eq!(errors(&out), 0, "{}: checked with errors", file.display());
        let plan = wlrun::lower::lower(checked);
        let listing = wlrun::plan::listing(&plan);
        if !listing.starts_with("workload ") || plan.cells.is_empty() {
            failures.push(format!("{}: unexpected plan:\n{listing}", file.display()));
        }
        if !listing.contains(&format!("file {}", file.display())) {
            failures.push(format!(
                "{}: the listing does not name its file",
                file.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    files.len()
}

#[test]
fn stdlib_checks_and_lowers() {
    assert!(check_corpus("stdlib") >= 1, "no stdlib module found");
}

#[test]
fn workloads_check_and_lower() {
    assert!(check_corpus("workloads") >= 1, "no workload found");
}

#[test]
fn examples_check_and_lower() {
    assert!(check_corpus("examples") >= 1, "no example found");
}

#[test]
fn init_templates_check_and_lower() {
    // One starter per kind `wlrun init --kind` takes.
    assert_eq!(check_corpus("templates"), 4, "not one template per kind");
}

/// The embedded stdlib is the `stdlib/` folder, and every module imports by its `std/` name.
#[test]
fn every_stdlib_module_imports_by_name() {
    let embedded = wlrun::source::stdlib_modules();
    let on_disk: Vec<String> = wl_files("stdlib")
        .iter()
        .map(|p| {
            p.strip_prefix("stdlib")
                .unwrap()
                .display()
                .to_string()
                .replace('\\', "/")
        })
        .collect();
    assert_eq!(
        embedded, on_disk,
        "the embedded stdlib differs from stdlib/"
    );
    for module in embedded {
        let text = format!("import \"std/{module}\" as m\n");
        let out = check_text("import-stdlib.wl", &text, &Options::default());
        assert_eq!(errors(&out), 0, "std/{module}:\n{}", rendered(&out));
    }
}

// ------------------------------------------------------------------------------------------------
// Doc blocks

#[derive(Debug)]
struct Block {
    /// The markdown file, relative to the crate root.
    file: PathBuf,
    /// 1-based line of the block's first line of code.
    line: usize,
    code: String,
    expect_error: bool,
}

/// The ```wl and ```wl,error blocks of one markdown text; other fenced blocks are skipped.
fn blocks(file: &Path, text: &str) -> Vec<Block> {
    enum State {
        Outside,
        Wl(Block),
        Other,
    }
    let mut out = Vec::new();
    let mut state = State::Outside;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let fence = trimmed.strip_prefix("```");
        state = match (state, fence) {
            (State::Outside, None) => State::Outside,
            (State::Outside, Some(info)) => {
                let mut words = info.split(|c: char| c == ',' || c.is_whitespace());
                if words.next() == Some("wl") {
                    State::Wl(Block {
                        file: file.to_path_buf(),
                        line: i + 2,
                        code: String::new(),
                        expect_error: words.any(|w| w == "error"),
                    })
                } else {
                    State::Other
                }
            }
            (State::Wl(block), Some(_)) => {
                out.push(block);
                State::Outside
            }
            (State::Wl(mut block), None) => {
                block.code.push_str(line);
                block.code.push('\n');
                State::Wl(block)
            }
            (State::Other, Some(_)) => State::Outside,
            (State::Other, None) => State::Other,
        };
    }
    out
}

fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![PathBuf::from("README.md")];
    if let Ok(entries) = std::fs::read_dir(Path::new(ROOT).join("docs")) {
        let mut docs: Vec<PathBuf> = entries
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .map(|p| p.strip_prefix(ROOT).unwrap().to_path_buf())
            .collect();
        docs.sort();
        files.extend(docs);
    }
    files.retain(|f| Path::new(ROOT).join(f).is_file());
    files
}

fn check_block(b: &Block) -> Outcome {
    // Blank lines up to the block keep diagnostics on the markdown's own line numbers.
    let text = format!("{}{}", "\n".repeat(b.line - 1), b.code);
    check_text(&b.file.display().to_string(), &text, &Options::default())
}

#[test]
fn doc_blocks_check() {
    let mut failures = Vec::new();
    let mut count = 0;
    for file in markdown_files() {
        let text = std::fs::read_to_string(Path::new(ROOT).join(&file)).unwrap();
        for b in blocks(&file, &text) {
            count += 1;
            let out = check_block(&b);
            let where_ = format!("{}:{}", b.file.display(), b.line);
            match (b.expect_error, errors(&out)) {
                (false, 0) => {}
                (false, _) => failures.push(format!(
                    "{where_}: the block does not check:\n{}",
                    rendered(&out)
                )),
                (true, 0) => failures.push(format!(
                    "{where_}: a ```wl,error block checks without error"
                )),
                (true, _) => {}
            }
        }
    }
    eprintln!("checked {count} doc block(s)");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn doc_block_extraction() {
    let md = "# Title\n\n```wl\nparam a = 1\n```\n\ntext\n\n```rust\nlet x = 1;\n```\n\n```wl,error\nparam = \n```\n\n```\nplain\n```\n";
    let bs = blocks(Path::new("docs/x.md"), md);
    assert_eq!(bs.len(), 2, "{bs:?}");
    assert_eq!(
        (bs[0].line, bs[0].code.as_str(), bs[0].expect_error),
        (4, "param a = 1\n", false)
    );
    assert_eq!(
        (bs[1].line, bs[1].code.as_str(), bs[1].expect_error),
        (14, "param = \n", true)
    );
    // Diagnostics point at the markdown line of the mistake.
    let out = check_block(&bs[1]);
    assert!(errors(&out) > 0);
    let text = rendered(&out);
    assert!(text.contains("docs/x.md:14:"), "{text}");
    // Blocks resolve `std/` imports.
    let ok = Block {
        file: PathBuf::from("docs/x.md"),
        line: 3,
        code: "import \"std/tsbs/cpu-only.wl\" as tsbs (hosts = 2)\n".into(),
        expect_error: false,
    };
    let out = check_block(&ok);
    assert_eq!(errors(&out), 0, "{}", rendered(&out));
}
