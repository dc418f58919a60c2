//! A hook's arrays are bounded while a function builds them, not only once it has returned:
//! `split("")` on an 8 MiB string built 8 million one-character strings (1.08 GB resident)
//! before Rhai looked at the array's size. The functions that cut a string into an array count
//! the pieces first; the error says how many there would have been, which only a count made
//! before building them can say.

use std::time::Duration;

use wlrun::hook::{Script, WorkerSpec};

/// The error `request()` of `src` ends with.
fn request_error(src: &str) -> String {
    let script = Script::compile("t.rhai", src).unwrap();
    let mut worker = script
        .worker(WorkerSpec {
            seed: 1,
            hook: "t".into(),
            worker: 0,
            workers: 1,
            params: Vec::new(),
        })
        .unwrap();
    match worker.request("request", 0, Duration::ZERO) {
        Err(e) => e.message,
        Ok(b) => panic!("expected an error, built {b:?}"),
    }
}

#[test]
fn cutting_a_huge_string_into_pieces_is_refused_before_the_pieces_are_made() {
    for (call, pieces) in [
        (r#"s.split("")"#, "8,000,002"),
        ("s.split('x')", "8,000,001"),
        (r#"s.split("x", 8000000)"#, "8,000,000"),
        (r#"s.split_rev("")"#, "8,000,002"),
        ("s.to_chars()", "8,000,000"),
    ] {
        let src = format!(
            r#"fn request(ctx) {{ let s = ""; s.pad(8000000, 'x'); let a = {call}; #{{ path: "/" }} }}"#
        );
        let err = request_error(&src);
        let want = format!("would make {pieces} pieces; an array holds at most 1,000,000");
        assert!(err.contains(&want), "{call}: expected `{want}` in: {err}");
        assert!(
            err.contains("request(): ") && err.contains("at line 1"),
            "{call}: {err}"
        );
    }
}

/// The counted functions cut as the standard ones did (compared with array literals),
/// constants included.
#[test]
fn cutting_an_ordinary_string_is_unchanged() {
    for (call, want) in [
        (r#""a,b,,c".split(",")"#, r#"["a", "b", "", "c"]"#),
        (r#""ab".split("")"#, r#"["", "a", "b", ""]"#),
        (r#""a,b,,c".split(",", 2)"#, r#"["a", "b,,c"]"#),
        (r#""a,b,,c".split(',', 9)"#, r#"["a", "b", "", "c"]"#),
        (r#""a,b,,c".split_rev(",")"#, r#"["c", "", "b", "a"]"#),
        (r#""a,b,,c".split_rev(',', 2)"#, r#"["c", "a,b,"]"#),
        (r#""a  b\tc".split()"#, r#"["a", "b", "c"]"#),
        (r#""".split(",")"#, r#"[""]"#),
        (r#""héj".to_chars()"#, "['h', 'é', 'j']"),
        ("{ const S = \"x y\"; S.split(\" \") }", r#"["x", "y"]"#),
    ] {
        let err = request_error(&format!(
            "fn request(ctx) {{ let a = {call}; let b = {want}; if a == b {{ throw \"same\" }} else {{ throw `${{a}} is not ${{b}}` }} }}"
        ));
        assert!(err.contains("request(): same at"), "{call}: {err}");
    }
}
