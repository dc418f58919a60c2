//! The structure ARCHITECTURE.md describes, checked so it cannot rot: no import circle between
//! top-level modules, no non-test source file over 800 lines, and every `file::function` the
//! "where is" table names exists.
//!
//! The paths are read from the source text itself (comments and literals blanked, test items
//! removed), not from rustc: it is enough for `crate::` and `super::` paths, and it keeps the check
//! a plain test. `WLRUN_ARCH_DUMP=1 cargo test --test architecture -- --nocapture` prints the
//! module graph.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 800;

/// Imports allowed to close a circle: none since issue 16 broke the last one. Should one ever be
/// let in while it is moved down, an entry that no longer occurs fails the test.
const KNOWN_BACK_EDGES: &[&str] = &[];

/// Files allowed over [`MAX_LINES`]: none since issue 16 split the last one. An entry for a file
/// that is short again fails the test.
const KNOWN_LONG: &[&str] = &[];

/// One source file with its test code removed.
struct Source {
    /// Path relative to the crate root, e.g. `src/exec/mod.rs`.
    rel: String,
    /// The module path of the file, e.g. `["exec"]`.
    module: Vec<String>,
    /// Code with comments and literals blanked and test items removed; newlines kept.
    code: String,
    /// Lines of the file that are not test code.
    lines: usize,
}

/// An import of another module: where it is written and the path it names.
#[derive(Clone)]
struct Edge {
    at: String,
    path: String,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .skip(1)
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" && stem != "main" {
        parts.push(stem.to_string());
    }
    parts
}

/// Blanks comments, string and char literals with spaces, keeping newlines, so that what is left
/// is code whose braces and paths can be read by a simple scan.
fn blank(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let keep = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(keep(b[i]));
                    i += 1;
                }
            }
        } else if (c == 'r' || (c == 'b' && next == Some('r')))
            && !b
                .get(i.wrapping_sub(1))
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
            && {
                let j = if c == 'b' { i + 2 } else { i + 1 };
                let mut k = j;
                while b.get(k) == Some(&'#') {
                    k += 1;
                }
                b.get(k) == Some(&'"')
            }
        {
            let mut j = if c == 'b' { i + 2 } else { i + 1 };
            let mut hashes = 0;
            while b[j] == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            for _ in i..j {
                out.push(' ');
            }
            i = j;
            loop {
                if b[i] == '"' && (0..hashes).all(|h| b.get(i + 1 + h) == Some(&'#')) {
                    for _ in 0..=hashes {
                        out.push(' ');
                    }
                    i += 1 + hashes;
                    break;
                }
                out.push(keep(b[i]));
                i += 1;
            }
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                out.push(keep(b[i]));
                i += 1;
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A char literal ('a', '\n', '\u{1F600}') or a lifetime ('a).
            if next == Some('\\') {
                out.push(' ');
                i += 1;
                while b[i] != '\'' || b[i - 1] == '\\' && b[i - 2] != '\\' {
                    out.push(' ');
                    i += 1;
                }
                out.push(' ');
                i += 1;
            } else if b.get(i + 2) == Some(&'\'') {
                out.push_str("   ");
                i += 3;
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Index just past the item that starts at `i` (its `;` or its closing brace).
fn item_end(code: &[char], mut i: usize) -> usize {
    let mut depth = 0i32;
    while i < code.len() {
        match code[i] {
            '{' | '(' | '[' => depth += 1,
            '}' | ')' | ']' => {
                depth -= 1;
                if depth == 0 && code[i] == '}' {
                    return i + 1;
                }
            }
            ';' if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    i
}

/// Removes every item marked `#[cfg(test)]`, returning the code and the names of test modules
/// declared as `mod name;` (their files are test code too).
fn strip_tests(code: &str) -> (String, Vec<String>, usize) {
    let mut chars: Vec<char> = code.chars().collect();
    let mut test_mods = Vec::new();
    let mut removed = 0;
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '#' && starts_attr(&chars, i, "cfg(test)") {
            let start = i;
            let mut j = attr_end(&chars, i);
            // Further attributes on the same item.
            loop {
                while j < chars.len() && chars[j].is_whitespace() {
                    j += 1;
                }
                if chars.get(j) == Some(&'#') {
                    j = attr_end(&chars, j);
                } else {
                    break;
                }
            }
            let end = item_end(&chars, j);
            let item: String = chars[j..end].iter().collect();
            let words: Vec<&str> = item
                .split(|c: char| !is_ident(c))
                .filter(|w| !w.is_empty())
                .collect();
            if let Some(pos) = words.iter().position(|w| *w == "mod") {
                if item.trim_end().ends_with(';') {
                    test_mods.push(words[pos + 1].to_string());
                }
            }
            // The attribute's line to the item's last line.
            removed += 1 + chars[start..end].iter().filter(|c| **c == '\n').count();
            for c in &mut chars[start..end] {
                if *c != '\n' {
                    *c = ' ';
                }
            }
            i = end;
        } else {
            i += 1;
        }
    }
    (chars.into_iter().collect(), test_mods, removed)
}

fn starts_attr(chars: &[char], i: usize, inner: &str) -> bool {
    let rest: String = chars[i..(i + 40).min(chars.len())]
        .iter()
        .filter(|c| !c.is_whitespace())
        .collect();
    rest.starts_with(&format!("#[{inner}]"))
}

fn attr_end(chars: &[char], i: usize) -> usize {
    let mut depth = 0;
    let mut j = i + 1;
    while j < chars.len() {
        match chars[j] {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    j
}

fn sources() -> Vec<Source> {
    let root = root();
    let mut files = Vec::new();
    walk(&root.join("src"), &mut files);
    let mut raw: Vec<(String, Vec<String>, String, usize)> = Vec::new();
    let mut test_files: BTreeSet<Vec<String>> = BTreeSet::new();
    for path in &files {
        let rel = path.strip_prefix(&root).unwrap().to_path_buf();
        let module = module_of(&rel);
        let text = fs::read_to_string(path).unwrap();
        let (code, tests, removed) = strip_tests(&blank(&text));
        for t in tests {
            let mut m = module.clone();
            m.push(t);
            test_files.insert(m);
        }
        let lines = text.lines().count() - removed;
        raw.push((rel.to_string_lossy().into_owned(), module, code, lines));
    }
    raw.into_iter()
        .filter(|(rel, module, _, _)| {
            // main.rs is the binary: it reaches the library as `wlrun::`, not `crate::`.
            !rel.ends_with("main.rs")
                && !(1..=module.len()).any(|n| test_files.contains(&module[..n]))
        })
        .map(|(rel, module, code, lines)| Source {
            rel,
            module,
            code,
            lines,
        })
        .collect()
}

/// Every `crate::` and `super::` path of a file, resolved to the top-level module it reaches.
fn imports(src: &Source) -> Vec<(String, Edge)> {
    let chars: Vec<char> = src.code.chars().collect();
    let mut out = Vec::new();
    // Inline modules (`pub mod kind { ... }`) change what `super` means inside them.
    let mut stack: Vec<(String, i32)> = Vec::new();
    let mut depth = 0i32;
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\n' => line += 1,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                while stack.last().is_some_and(|(_, d)| *d > depth) {
                    stack.pop();
                }
            }
            _ => {}
        }
        let word_start = i == 0 || !is_ident(chars[i - 1]);
        if word_start && is_ident(c) {
            let mut j = i;
            while j < chars.len() && is_ident(chars[j]) {
                j += 1;
            }
            let word: String = chars[i..j].iter().collect();
            if word == "mod" {
                let mut k = j;
                while chars[k].is_whitespace() {
                    k += 1;
                }
                let s = k;
                while is_ident(chars[k]) {
                    k += 1;
                }
                let name: String = chars[s..k].iter().collect();
                while chars[k].is_whitespace() {
                    k += 1;
                }
                if chars[k] == '{' {
                    stack.push((name, depth + 1));
                }
            } else if (word == "crate" || word == "super") && chars[j..].starts_with(&[':', ':']) {
                let mut module = src.module.clone();
                module.extend(stack.iter().map(|(n, _)| n.clone()));
                let mut k = i;
                let mut segs: Vec<String> = Vec::new();
                let mut first = true;
                // Walk `super::super::x` or `crate::x`.
                loop {
                    let s = k;
                    while k < chars.len() && is_ident(chars[k]) {
                        k += 1;
                    }
                    let seg: String = chars[s..k].iter().collect();
                    if first && seg == "crate" {
                        module.clear();
                    } else if seg == "super" {
                        module.pop();
                    } else {
                        segs.push(seg);
                        break;
                    }
                    first = false;
                    if chars[k..].starts_with(&[':', ':']) {
                        k += 2;
                        while chars[k].is_whitespace() {
                            k += 1;
                        }
                    } else {
                        break;
                    }
                }
                let path: String = chars[i..k].iter().collect();
                let at = format!("{}:{line}", src.rel);
                if !module.is_empty() {
                    out.push((module[0].clone(), Edge { at, path }));
                } else if segs.first().is_some_and(|s| !s.is_empty()) {
                    out.push((segs[0].clone(), Edge { at, path }));
                } else if chars.get(k) == Some(&'{') {
                    // `crate::{a, b::c}`: each top-level name of the group.
                    let end = item_end(&chars, k);
                    let group: String = chars[k + 1..end - 1].iter().collect();
                    let mut level = 0;
                    let mut item = String::new();
                    for ch in group.chars().chain(std::iter::once(',')) {
                        match ch {
                            '{' => level += 1,
                            '}' => level -= 1,
                            ',' if level == 0 => {
                                let name: String = item
                                    .trim_start()
                                    .chars()
                                    .take_while(|c| is_ident(*c))
                                    .collect();
                                if !name.is_empty() && name != "self" {
                                    out.push((
                                        name.clone(),
                                        Edge {
                                            at: at.clone(),
                                            path: format!("{path}{{{name}..}}"),
                                        },
                                    ));
                                }
                                item.clear();
                                continue;
                            }
                            _ => {}
                        }
                        item.push(ch);
                    }
                }
                i = k.max(i + 1);
                continue;
            }
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

/// Top-level module -> (imported top-level module -> the places that import it).
fn graph(sources: &[Source]) -> BTreeMap<String, BTreeMap<String, Vec<Edge>>> {
    let tops: BTreeSet<String> = sources
        .iter()
        .filter_map(|s| s.module.first().cloned())
        .collect();
    let mut g: BTreeMap<String, BTreeMap<String, Vec<Edge>>> = BTreeMap::new();
    for src in sources {
        let Some(from) = src.module.first() else {
            continue;
        };
        g.entry(from.clone()).or_default();
        for (to, edge) in imports(src) {
            if &to != from && tops.contains(&to) {
                g.entry(from.clone())
                    .or_default()
                    .entry(to)
                    .or_default()
                    .push(edge);
            }
        }
    }
    g
}

/// Strongly connected components with more than one module (Tarjan).
fn cycles(g: &BTreeMap<String, BTreeMap<String, Vec<Edge>>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeMap<String, Vec<Edge>>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        t.index.insert(v, t.next);
        t.low.insert(v, t.next);
        t.next += 1;
        t.stack.push(v);
        t.on.insert(v);
        let g = t.g;
        for w in g.get(v).into_iter().flat_map(|m| m.keys()) {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = t.stack.pop().unwrap();
                t.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn top_level_modules_import_each_other_without_a_circle() {
    let sources = sources();
    let g = graph(&sources);
    if std::env::var_os("WLRUN_ARCH_DUMP").is_some() {
        for (from, tos) in &g {
            for (to, edges) in tos {
                println!("{from} -> {to} ({})", edges.len());
                if std::env::var_os("WLRUN_ARCH_DUMP_ALL").is_some() {
                    for e in edges {
                        println!("    {} {}", e.at, e.path);
                    }
                }
            }
        }
    }
    let mut g = g;
    let mut stale = Vec::new();
    for known in KNOWN_BACK_EDGES {
        let (from, to) = known.split_once(" -> ").unwrap();
        if g.get_mut(from).and_then(|m| m.remove(to)).is_none() {
            stale.push(*known);
        }
    }
    assert!(
        stale.is_empty(),
        "these imports are gone: take them out of KNOWN_BACK_EDGES: {stale:?}"
    );
    let found = cycles(&g);
    let mut report = String::new();
    for comp in &found {
        report.push_str(&format!("circle between {}:\n", comp.join(", ")));
        for from in comp {
            for (to, edges) in &g[from] {
                if comp.contains(to) {
                    report.push_str(&format!(
                        "  {from} -> {to}: {} {} ({} paths)\n",
                        edges[0].at,
                        edges[0].path,
                        edges.len()
                    ));
                }
            }
        }
    }
    assert!(found.is_empty(), "{report}");
}

/// The compiler's stages: source text to Plan.
const COMPILER: &[&str] = &["syntax", "check", "lower", "compile"];
/// The runtime's layers: Plan to sockets to reports. `hook` is shared: the checker compiles a
/// hook script to check it, the runtime runs it.
const RUNTIME: &[&str] = &[
    "gen", "encode", "net", "qwp", "driver", "client", "query", "input", "shard", "exec", "report",
    "compare", "merge",
];

#[test]
fn the_runtime_never_reaches_into_the_compiler_nor_the_compiler_into_the_runtime() {
    let g = graph(&sources());
    let mut wrong = Vec::new();
    for (from, tos) in &g {
        for (to, edges) in tos {
            let across = (RUNTIME.contains(&from.as_str()) && COMPILER.contains(&to.as_str()))
                || (COMPILER.contains(&from.as_str()) && RUNTIME.contains(&to.as_str()));
            if across {
                wrong.push(format!("{from} -> {to}: {} {}", edges[0].at, edges[0].path));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "the compiler and the runtime meet only in `plan` (and `run`, which drives both):\n{}",
        wrong.join("\n")
    );
    // Every top-level module is placed, so a new one is not left out of the rule unseen.
    let placed = [
        "plan", "value", "span", "source", "diag", "secrets", "sql_text", "hook", "cli", "run",
        "gen_cmd", "k8s", "init",
    ];
    let unplaced: Vec<&String> = g
        .keys()
        .filter(|m| {
            let m = m.as_str();
            !COMPILER.contains(&m) && !RUNTIME.contains(&m) && !placed.contains(&m)
        })
        .collect();
    assert!(
        unplaced.is_empty(),
        "place these modules in COMPILER, RUNTIME or the shared list: {unplaced:?}"
    );
}

#[test]
fn no_source_file_has_more_than_800_lines_of_non_test_code() {
    let sources = sources();
    let mut long: Vec<_> = sources
        .iter()
        .filter(|s| s.lines > MAX_LINES && !KNOWN_LONG.contains(&s.rel.as_str()))
        .map(|s| format!("{} ({} lines)", s.rel, s.lines))
        .collect();
    long.sort();
    assert!(
        long.is_empty(),
        "over {MAX_LINES} lines of non-test code:\n{}",
        long.join("\n")
    );
    let stale: Vec<_> = KNOWN_LONG
        .iter()
        .filter(|k| !sources.iter().any(|s| s.rel == **k && s.lines > MAX_LINES))
        .collect();
    assert!(
        stale.is_empty(),
        "these files are short now: take them out of KNOWN_LONG: {stale:?}"
    );
}

/// The "where is" table of ARCHITECTURE.md: every `src/file.rs::item` it names exists, so the map
/// cannot rot. `item` may be `Type::method`; each name must be declared in that file.
#[test]
fn the_where_is_table_of_architecture_md_names_real_places() {
    let text = fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md exists");
    let table = text
        .split("## Where is")
        .nth(1)
        .expect("ARCHITECTURE.md has a `## Where is` section");
    let mut named = 0;
    let mut missing = Vec::new();
    for cell in table.split('`').skip(1).step_by(2) {
        let Some((file, item)) = cell.split_once(".rs::") else {
            continue;
        };
        named += 1;
        let path = root().join(format!("{file}.rs"));
        let Ok(code) = fs::read_to_string(&path) else {
            missing.push(format!("{cell}: no file {file}.rs"));
            continue;
        };
        let code = blank(&code);
        for name in item.split("::") {
            let declared = [
                "fn", "struct", "enum", "trait", "const", "static", "type", "mod", "impl",
            ]
            .iter()
            .any(|kw| {
                code.match_indices(kw).any(|(at, _)| {
                    let before = code[..at].chars().next_back();
                    let rest = code[at + kw.len()..].trim_start();
                    let rest = rest.strip_prefix("<'_>").unwrap_or(rest);
                    !before.is_some_and(is_ident)
                        && code[at + kw.len()..].starts_with(char::is_whitespace)
                        && rest.starts_with(name)
                        && !rest[name.len()..].starts_with(is_ident)
                })
            });
            if !declared {
                missing.push(format!("{cell}: `{name}` is not declared in {file}.rs"));
            }
        }
    }
    assert!(
        named >= 20,
        "the table names {named} places; it should name about twenty"
    );
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names places that do not exist:\n{}",
        missing.join("\n")
    );
}
