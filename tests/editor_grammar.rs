//! The editor grammar (editors/vscode/syntaxes/wl.tmLanguage.json) tokenized the way VS Code
//! does it, by editors/test/scopes.js under node with npm's vscode-textmate and
//! vscode-oniguruma (scripts/test installs them in target/editor-test). Without node or the
//! packages the tests say so and pass, except under CI=true, where they fail: CI must not pass
//! by skipping.

use std::path::{Path, PathBuf};
use std::process::Command;

use wlrun::check::Options;
use wlrun::compile::check_file;
use wlrun::diag::{render_all, Style};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// The node_modules folder holding both packages, or `None` (after saying why) to skip.
fn node_modules() -> Option<PathBuf> {
    let node = Command::new("node").arg("--version").output();
    let dir = std::env::var_os("WLRUN_EDITOR_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(ROOT).join("target/editor-test/node_modules"));
    let missing = if !node.is_ok_and(|o| o.status.success()) {
        "node".to_string()
    } else if !["vscode-textmate", "vscode-oniguruma"]
        .iter()
        .all(|p| dir.join(p).join("package.json").is_file())
    {
        format!("vscode-textmate or vscode-oniguruma in {}", dir.display())
    } else {
        return Some(dir);
    };
    assert!(
        !ci(),
        "{missing} is missing, and CI=true requires it (scripts/test installs it)"
    );
    eprintln!("skipped: {missing} is missing (scripts/test installs it)");
    None
}

fn scopes(mode: &str) {
    let Some(modules) = node_modules() else {
        return;
    };
    let out = Command::new("node")
        .arg(Path::new(ROOT).join("editors/test/scopes.js"))
        .arg(&modules)
        .arg(mode)
        .output()
        .expect("node runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "scopes.js {mode}:\n{text}");
    eprint!("{text}");
}

/// No non-space token of a shipped `.wl` file (or a doc's ```wl block) is left with only the
/// scope `source.wl`, and none is `invalid.*`.
#[test]
fn every_shipped_wl_file_is_scoped() {
    scopes("corpus");
}

/// The scopes of editors/test/sample.wl, one of each construct, equal the reviewed golden
/// (INSTA_UPDATE=always writes it anew, as for the other goldens).
#[test]
fn sample_scopes_match_the_golden() {
    let update = std::env::var("INSTA_UPDATE").is_ok_and(|v| v == "always");
    scopes(if update { "update" } else { "golden" });
}

/// The golden's input is a real workload, so its scopes show the language as it is written.
#[test]
fn sample_checks_without_diagnostics() {
    let out = check_file(
        &Path::new(ROOT).join("editors/test/sample.wl"),
        &Options::default(),
    );
    assert!(
        out.checked.is_some() && out.diagnostics.is_empty(),
        "{}",
        render_all(&out.map, &out.diagnostics, Style::Plain)
    );
}

/// Every word the parser knows (each `@{ "word" ~ !ident_char }` rule of grammar/workload.pest:
/// keywords, endpoint kinds, units of `count`, HTTP methods, operators spelled as words) is a
/// word of the editor grammar too, so a new keyword is not left uncoloured. This one needs no
/// node.
#[test]
fn every_word_of_the_parser_is_in_the_editor_grammar() {
    let pest = std::fs::read_to_string(Path::new(ROOT).join("grammar/workload.pest")).unwrap();
    let json =
        std::fs::read_to_string(Path::new(ROOT).join("editors/vscode/syntaxes/wl.tmLanguage.json"))
            .unwrap();
    let mut grammar: serde_json::Value = serde_json::from_str(&json).unwrap();
    // The call rule names keywords only to say they are not calls: a word there is not coloured.
    grammar["repository"]
        .as_object_mut()
        .expect("a repository of rules")
        .remove("call")
        .expect("the call rule");
    let tm = grammar.to_string();
    let words: Vec<&str> = pest
        .lines()
        .filter(|l| l.contains("= @{") && l.trim_end().ends_with("~ !ident_char }"))
        .flat_map(|l| l.split('"').skip(1).step_by(2))
        // Words only: `/` of a rate and `%` of a percentage are a number's unit.
        .filter(|w| w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    assert!(
        words.len() > 100,
        "found only {} words in the pest grammar",
        words.len()
    );
    // A word of an alternation in the JSON: `(?:word|`, `|word|`, `|word)`, `(word)`.
    let in_tm = |w: &str| {
        tm.match_indices(w).any(|(i, _)| {
            let before = tm[..i].chars().next_back();
            let after = tm[i + w.len()..].chars().next();
            matches!(before, Some('(' | '|' | ':')) && matches!(after, Some('|' | ')'))
        })
    };
    let missing: Vec<&str> = words.into_iter().filter(|w| !in_tm(w)).collect();
    assert!(
        missing.is_empty(),
        "words of grammar/workload.pest the editor grammar does not know: {missing:?}"
    );
}
