use proptest::prelude::*;

use super::line::{quoted, BACKSLASH, CLASS, EQUALS};
use super::*;
use crate::encode::IlpEncoder;
use crate::input::FileReader;

fn tokens(line: &str) -> Result<Tokens, String> {
    let mut t = Tokens::default();
    let none = Hints::default();
    let at = head(line.as_bytes(), &mut t, &none)?;
    fields(line.as_bytes(), at, &mut t, &none)?;
    Ok(t)
}

fn text(line: &str, s: Span, quoted: bool) -> String {
    let mut v = Vec::new();
    unescape_into(&mut v, s.raw(line.as_bytes()), quoted);
    String::from_utf8(v).unwrap()
}

#[test]
fn escapes_in_every_position() {
    let line = r#"we\ ather\,x,lo\=c\ a=S\,F\=1\ 2\\,k\\=v f\ 1="a \"q\" \\ \n",f\,2=1i 17"#;
    let t = tokens(line).unwrap();
    assert_eq!(text(line, t.table, false), "we ather,x");
    let tags: Vec<(String, String)> = t
        .tags
        .iter()
        .map(|&(k, v, _)| (text(line, k, false), text(line, v, false)))
        .collect();
    assert_eq!(
        tags,
        [
            ("lo=c a".to_string(), "S,F=1 2\\".to_string()),
            ("k\\".to_string(), "v".to_string())
        ]
    );
    assert_eq!(text(line, t.fields[0].0, false), "f 1");
    let Val::Str(s) = t.fields[0].1 else {
        panic!("{:?}", t.fields[0].1)
    };
    // `\n` that is not a line feed keeps its backslash: only `"`, `\`, LF and CR escape.
    assert_eq!(text(line, s, true), r#"a "q" \ \n"#);
    assert_eq!(text(line, t.fields[1].0, false), "f,2");
    assert_eq!(t.fields[1].1, Val::Long(1));
    assert_eq!(t.ts, 17);
    // A backslash before an ordinary byte is itself; before a line break it escapes it.
    let line = "m,p=C:\\dir\\x,q=a\\\nb s=\"x\\\ry\" 1";
    let t = tokens(line).unwrap();
    assert_eq!(text(line, t.tags[0].1, false), "C:\\dir\\x");
    assert_eq!(text(line, t.tags[1].1, false), "a\nb");
    let Val::Str(s) = t.fields[0].1 else { panic!() };
    assert_eq!(text(line, s, true), "x\ry");
    // An escaped space does not end the measurement or a value.
    let t = tokens(r"a\ b c\ d=1i 2").unwrap();
    assert!(t.tags.is_empty());
    assert_eq!(t.fields.len(), 1);
}

#[test]
fn field_types() {
    let t = tokens(
        "m a=1i,b=-9223372036854775808i,c=1.5,d=1e3,e=-0.0,f=NaN,g=Infinity,h=-Infinity,\
         i=t,j=T,k=true,l=True,m=TRUE,n=f,o=F,p=false,q=False,r=FALSE,s=\"\",u=12t,v=7,w=-3t \
         -5",
    )
    .unwrap();
    let vals: Vec<Val> = t.fields.iter().map(|f| f.1).collect();
    assert_eq!(vals[0], Val::Long(1));
    assert_eq!(vals[1], Val::Long(i64::MIN));
    assert_eq!(vals[2], Val::Double(1.5));
    assert_eq!(vals[3], Val::Double(1000.0));
    assert!(matches!(vals[4], Val::Double(x) if x == 0.0 && x.is_sign_negative()));
    assert!(matches!(vals[5], Val::Double(x) if x.is_nan()));
    assert_eq!(vals[6], Val::Double(f64::INFINITY));
    assert_eq!(vals[7], Val::Double(f64::NEG_INFINITY));
    for v in &vals[8..13] {
        assert_eq!(*v, Val::Bool(true));
    }
    for v in &vals[13..18] {
        assert_eq!(*v, Val::Bool(false));
    }
    assert!(matches!(vals[18], Val::Str(s) if s.is_empty()));
    assert_eq!(vals[19], Val::Micros(12_000));
    assert_eq!(vals[20], Val::Double(7.0));
    assert_eq!(vals[21], Val::Micros(-3_000));
    assert_eq!(t.ts, -5);
}

#[test]
fn malformed_lines_say_what_is_wrong() {
    let cases = [
        ("cpu,host=a usage=abc 123", "`abc` is not a number"),
        ("cpu,host=a usage=1i", "no timestamp"),
        ("cpu,host=a usage=1i ", "no timestamp"),
        (
            "cpu,host=a usage=1i 12x",
            "timestamp `12x` is not an integer",
        ),
        ("cpu,host=a", "no fields"),
        ("cpu,host=a ", "no fields"),
        ("cpu,host usage=1i 1", "tag `host` has no `=value`"),
        ("cpu,host= usage=1i 1", "tag `host` has an empty value"),
        ("cpu,=a usage=1i 1", "an empty tag key"),
        (",host=a usage=1i 1", "no measurement"),
        ("cpu usage 1", "field `usage` has no `=value`"),
        ("cpu usage= 1", "field `usage` has no value"),
        ("cpu usage=\"abc 1", "no closing `\"`"),
        (
            "cpu usage=\"abc\"x 1",
            "`x` after the value of field `usage`",
        ),
        ("cpu usage=99999999999999999999i 1", "not a 64-bit integer"),
        (
            "cpu usage=1u 1",
            "unsigned integers (`1u`) are not supported",
        ),
        ("cpu usage=tru 1", "not a boolean"),
        ("cpu usage=1i, 1", "an empty field key"),
        ("cpu usage=9223372036854775807t 1", "microseconds"),
        ("cpu x=1i 99999999999999999999", "not an integer"),
    ];
    for (line, want) in cases {
        let e = tokens(line)
            .err()
            .unwrap_or_else(|| panic!("{line} parsed"));
        assert!(e.contains(want), "{line}: {e} (wanted {want})");
    }
}

#[test]
fn newline_search_and_escaped_newlines() {
    for len in 0..40 {
        let mut b = vec![b'a'; len];
        assert_eq!(find_newline(&b), None);
        for at in 0..len {
            b[at] = b'\n';
            assert_eq!(find_newline(&b), Some(at), "len {len}");
            b[at] = 0x8a; // a byte that differs from `\n` in the high bit only
        }
    }
    // Escaped line breaks stay in the record; `\\` before one does not escape it.
    let data = b"a,t=x\\\ny f=1i 1\nb f=1i 2 \\\\\nc";
    let mut input = Input::new(Box::new(&data[..]), 4);
    let r = next_record(&mut input).unwrap().unwrap();
    assert_eq!((r.len, r.consume, r.lines), (15, 16, 2));
    input.consume(r.consume);
    let r = next_record(&mut input).unwrap().unwrap();
    assert_eq!(&input.data()[..r.len], b"b f=1i 2 \\\\");
    input.consume(r.consume);
    let r = next_record(&mut input).unwrap().unwrap();
    assert_eq!((r.len, r.consume, r.lines), (1, 1, 1));
    input.consume(r.consume);
    assert!(next_record(&mut input).unwrap().is_none());
}

fn read_all(text: &[u8], buffer: usize) -> Result<(Arc<BatchSchema>, Vec<u8>), String> {
    let mut r = FileReader::with_buffer(
        "t.ilp",
        Box::new(std::io::Cursor::new(text.to_vec())),
        None,
        None,
        buffer,
    )?;
    let schema = r.schema();
    let mut enc = IlpEncoder::new(Arc::clone(&schema))?;
    let mut b = Batch::new(Arc::clone(&schema));
    let mut out = Vec::new();
    while r.fill(&mut b, 3)? > 0 {
        enc.encode(&b, &mut out);
    }
    Ok((schema, out))
}

#[test]
fn nulls_any_order_comments_and_tiny_buffers() {
    let text = "# header\r\n\
                \n\
                m,a=1,b=x\\ y s=\"q\\\"\\\\\\\nz\",l=5i,d=0.25,o=t,u=3t 100\r\n\
                m,b=2 l=6i,s=\"\" 200\n\
                \x20 # indented comment\n\
                m,a=3 d=1e300 300\n\
                m,b=4,a=5 o=F,l=-7i 400";
    let want = "m,a=1,b=x\\ y s=\"q\\\"\\\\\\\nz\",l=5i,d=0.25,o=t,u=3t 100\n\
                m,b=2 s=\"\",l=6i 200\n\
                m,a=3 d=1e300 300\n\
                m,a=5,b=4 l=-7i,o=f 400\n";
    for buffer in [16, 17, 64, 1 << 20] {
        let (schema, out) = read_all(text.as_bytes(), buffer).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), want, "buffer {buffer}");
        let cols: Vec<(&str, &str, &str)> = schema
            .columns
            .iter()
            .map(|c| (c.name.as_str(), c.role.as_str(), c.ty.as_str()))
            .collect();
        assert_eq!(
            cols,
            [
                ("a", "series", "symbol"),
                ("b", "tag", "symbol"),
                ("s", "field", "varchar"),
                ("l", "field", "long"),
                ("d", "field", "double"),
                ("o", "field", "boolean"),
                ("u", "field", "timestamp"),
                ("timestamp", "timestamp", "timestamp"),
            ]
        );
        assert_eq!((schema.series_key, schema.timestamp), (Some(0), Some(7)));
    }
}

#[test]
fn schema_violations_name_the_line() {
    let err = |text: &[u8]| read_all(text, 1 << 16).unwrap_err();
    let e = err(b"# c\nm,h=a x=1i 1\nm,h=a x=1i,y=2i 2\n");
    assert_eq!(
        e,
        "t.ilp: line 3: field `y` is not in the schema of line 2 (the first line fixes the \
         columns)"
    );
    let e = err(b"m,h=a x=1i 1\nm,h=a,g=b x=1i 2\n");
    assert!(
        e.starts_with("t.ilp: line 2: tag `g` is not in the schema"),
        "{e}"
    );
    let e = err(b"m,h=a x=1i 1\nm,h=a x=1.5 2\n");
    assert_eq!(
        e,
        "t.ilp: line 2: field `x` is a double here but an integer in line 1 (the first line \
         fixes the types)"
    );
    let contains: [(&[u8], &str); 7] = [
        (
            b"m,h=a x=1i 1\nm,x=a h=1i 2\n",
            "line 2: `x` is a tag here but a field in line 1",
        ),
        (b"m,h=a x=1i 1\nn,h=a x=1i 2\n", "line 2: measurement `n`"),
        (
            b"m,h=a x=1i 1\nm,h=a x=1i,x=2i 2\n",
            "line 2: field `x` appears twice",
        ),
        (
            b"m,h=a x=1i 1\nm,h=a,h=b x=1i 2\n",
            "line 2: tag `h` appears twice",
        ),
        (
            b"m,h=a x=1i 1\nm timestamp=1t 2\n",
            "line 2: a field named `timestamp`",
        ),
        (
            b"m,timestamp=a x=1i 1\n",
            "clashes with the designated timestamp",
        ),
        (b"m,a\\\nb=c x=1i 1\n", "has a line break"),
    ];
    for (text, want) in contains {
        let e = err(text);
        assert!(e.contains(want), "{e}");
    }
    let e = err(b"m,h=a,h=b x=1i 1\n");
    assert_eq!(e, "t.ilp: line 1: `h` appears twice");
    // Line numbers count escaped line breaks too.
    let e = err(b"m,h=a\\\nb x=1i 1\nm x=oops 2\n");
    assert!(e.starts_with("t.ilp: line 3: "), "{e}");
    let e = err(b"m x=1i 1\nm x=\xff 2\n");
    assert!(e.contains("line 2: not UTF-8"), "{e}");
    let e = err(b"# only\n\n");
    assert!(e.contains("no rows"), "{e}");
}

#[test]
fn over_long_lines_are_refused_not_buffered() {
    // A 64 KiB buffer may grow to 64 MiB for one line; a line past that is an error.
    let mut text = b"m x=\"".to_vec();
    text.resize(MAX_RECORD_BYTES + 10, b'a');
    let e = read_all(&text, 1 << 16).unwrap_err();
    assert!(e.contains("line 1: a line longer than 64 MiB"), "{e}");
}

/// The scanners' plain definitions, a byte at a time: the oracle the word-at-a-time `scan` and
/// `quoted` of line.rs are checked against (`word_scanners_agree_with_bytewise_ones`). Their
/// tail loop looks like this on purpose; calling the real scanners here would test them against
/// themselves, so this copy stays (`duplicates` pairs it with line.rs, and that is expected).
fn scan_bytewise(line: &[u8], mut i: usize, stops: u8) -> Span {
    let a = i;
    let mut esc = false;
    while let Some(&c) = line.get(i) {
        let k = CLASS[c as usize];
        if k & stops != 0 {
            break;
        }
        if k == BACKSLASH {
            esc = true;
            i += 2;
        } else {
            i += 1;
        }
    }
    Span {
        a,
        b: i.min(line.len()),
        esc,
    }
}

fn quoted_bytewise(line: &[u8], mut i: usize) -> Option<Span> {
    let a = i;
    let mut esc = false;
    loop {
        match *line.get(i)? {
            b'"' => return Some(Span { a, b: i, esc }),
            b'\\' => {
                esc = true;
                i += 2;
            }
            _ => i += 1,
        }
    }
}

fn special_bytes() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        prop_oneof![
            Just(b' '),
            Just(b','),
            Just(b'='),
            Just(b'\\'),
            Just(b'"'),
            Just(b'a'),
            Just(0x80u8 | b' '),
            any::<u8>(),
        ],
        0..40,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn word_scanners_agree_with_bytewise_ones(
        line in special_bytes(),
        other in special_bytes(),
        from in 0..45usize,
    ) {
        let from = from.min(line.len());
        for stops in [COMMA | SPACE, COMMA | SPACE | EQUALS] {
            prop_assert_eq!(scan(&line, from, stops), scan_bytewise(&line, from, stops));
        }
        prop_assert_eq!(quoted(&line, from), quoted_bytewise(&line, from));
        prop_assert_eq!(find_newline(&line), line.iter().position(|&c| c == b'\n'));
        let n = line.len().min(other.len());
        prop_assert_eq!(same(&line[..n], &other[..n]), line[..n] == other[..n]);
        prop_assert_eq!(same(&line, &other), line == other);
        prop_assert!(same(&line, &line.clone()));
    }

    #[test]
    fn arbitrary_lines_never_panic(
        lines in proptest::collection::vec(
            proptest::collection::vec(
                prop_oneof![
                    Just(b' '), Just(b','), Just(b'='), Just(b'\\'), Just(b'"'),
                    Just(b'\n'), Just(b'\r'), Just(b'#'), Just(b'i'), Just(b't'),
                    Just(b'1'), Just(b'-'), Just(b'.'), Just(b'e'), Just(b'a'),
                    any::<u8>(),
                ],
                0..40,
            ),
            0..8,
        )
    ) {
        let first = b"m,h=a x=1i,s=\"a\",d=1.5 1\n";
        let mut text = first.to_vec();
        for l in &lines {
            text.extend_from_slice(l);
            text.push(b'\n');
        }
        for buffer in [16, 1 << 12] {
            let _ = read_all(&text, buffer);
        }
        // As a first line too.
        let _ = read_all(&text[first.len()..], 64);
    }
}
