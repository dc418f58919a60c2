use proptest::prelude::*;

use super::*;

fn one(text: &str) -> Sample {
    let e = parse(text).unwrap();
    assert_eq!(e.samples.len(), 1, "{e:?}");
    e.samples.into_iter().next().unwrap()
}

#[test]
fn a_0_0_4_counter_is_typed_under_its_own_name() {
    let e = parse(
        "# HELP http_requests_total The total number of HTTP requests.\n\
         # TYPE http_requests_total counter\n\
         http_requests_total{method=\"post\",code=\"200\"} 1027 1395066363000\n\
         http_requests_total{method=\"post\",code=\"400\"}    3 1395066363000\n",
    )
    .unwrap();
    assert!(!e.eof);
    assert_eq!(e.samples.len(), 2);
    let s = &e.samples[1];
    assert_eq!(s.name, "http_requests_total");
    assert_eq!(s.family, "http_requests_total");
    assert_eq!(s.kind, SampleKind::Counter);
    assert_eq!(s.value, 3.0);
    assert_eq!(s.timestamp, Some(1395066363000.0));
    assert_eq!(
        s.labels,
        vec![
            ("method".to_string(), "post".to_string()),
            ("code".to_string(), "400".to_string())
        ]
    );
}

#[test]
fn an_openmetrics_counter_has_total_and_created_and_ends_with_eof() {
    let e = parse(
        "# TYPE foo counter\n\
         # UNIT foo seconds\n\
         foo_total 17.0 1520879607.789 # {id=\"c\"} 1 1520879607.7\n\
         foo_created 1520430000.123\n\
         # EOF\n",
    )
    .unwrap();
    assert!(e.eof);
    let total = &e.samples[0];
    assert_eq!(
        (total.family.as_str(), total.kind),
        ("foo", SampleKind::Counter)
    );
    assert_eq!(total.timestamp, Some(1520879607.789));
    // A creation time is a level: a rate of it would be nonsense.
    assert_eq!(e.samples[1].kind, SampleKind::Gauge);
    assert_eq!(e.samples[1].family, "foo");
}

#[test]
fn histograms_and_summaries_keep_their_series() {
    let e = parse(
        "# TYPE lat histogram\n\
         lat_bucket{le=\"0.1\"} 5\n\
         lat_bucket{le=\"+Inf\"} 8\n\
         lat_sum 1.5\n\
         lat_count 8\n\
         # TYPE rpc summary\n\
         rpc{quantile=\"0.99\"} NaN\n\
         rpc_sum 2\n\
         rpc_count 3\n\
         # TYPE q gaugehistogram\n\
         q_bucket{le=\"+Inf\"} 4\n\
         q_gcount 4\n",
    )
    .unwrap();
    let kinds: Vec<(&str, &str, SampleKind)> = e
        .samples
        .iter()
        .map(|s| (s.name.as_str(), s.family.as_str(), s.kind))
        .collect();
    use SampleKind::*;
    assert_eq!(
        kinds,
        vec![
            ("lat_bucket", "lat", Counter),
            ("lat_bucket", "lat", Counter),
            ("lat_sum", "lat", Counter),
            ("lat_count", "lat", Counter),
            ("rpc", "rpc", Gauge),
            ("rpc_sum", "rpc", Counter),
            ("rpc_count", "rpc", Counter),
            ("q_bucket", "q", Gauge),
            ("q_gcount", "q", Gauge),
        ]
    );
    assert_eq!(e.samples[1].labels[0].1, "+Inf");
    assert!(e.samples[4].value.is_nan());
}

#[test]
fn label_values_unescape_and_may_hold_any_character() {
    let s = one("m{path=\"C:\\\\dir\\n\\\"x\\\"\",b=\"}#, =\",} +Inf\n");
    assert_eq!(s.labels[0].1, "C:\\dir\n\"x\"");
    assert_eq!(s.labels[1].1, "}#, =");
    assert_eq!(s.value, f64::INFINITY);
    assert_eq!(one("m -Inf").value, f64::NEG_INFINITY);
    assert_eq!(one("m{} 1.5e3").value, 1500.0);
    assert_eq!(one("m 2\r\n").value, 2.0);
    // An untyped sample is read as a level.
    assert_eq!(one("# TYPE m untyped\nm 1").kind, SampleKind::Gauge);
    assert_eq!(one("no_type_line 1").kind, SampleKind::Gauge);
}

#[test]
fn bad_lines_are_errors_naming_the_line() {
    let cases = [
        ("m{a=\"x} 1\n", 1, "not closed"),
        ("ok 1\nm{a=x} 1\n", 2, "quoted value"),
        ("m abc\n", 1, "not a number"),
        ("m\n", 1, "no value"),
        ("m inf\n", 1, "not a number"),
        ("9m 1\n", 1, "metric name"),
        ("# TYPE m\n", 1, "needs a name and a type"),
        ("# TYPE m countr\n", 1, "unknown type"),
        ("m 1\n# EOF\nm 2\n", 3, "after `# EOF`"),
        ("m{a=\"1\" b=\"2\"} 1\n", 1, "expected `,`"),
        ("m 1 2 3\n", 1, "unexpected"),
    ];
    for (text, line, what) in cases {
        let e = parse(text).unwrap_err();
        assert_eq!(e.line, line, "{text:?}: {e}");
        assert!(e.message.contains(what), "{text:?}: {e}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// A server's bytes never panic the parser, whatever they are.
    #[test]
    fn any_text_is_read_or_refused(text in "(\\PC|[\n{}\"\\\\=,# ]){0,200}") {
        let _ = parse(&text);
    }

    /// Lines that look almost right: real pieces, shuffled.
    #[test]
    fn near_misses_are_read_or_refused(parts in prop::collection::vec(
        prop::sample::select(vec![
            "# TYPE ", "# EOF", "m", "_total", "{", "}", "a=", "\"", "\\", "1", " ", "\n",
            "+Inf", "NaN", ",", "counter", "histogram", "# {x=\"y\"} 1", "é", "\t",
        ]),
        0..60,
    )) {
        let _ = parse(&parts.concat());
    }
}
