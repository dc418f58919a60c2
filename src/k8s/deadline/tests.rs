use super::*;

fn plan(text: &str) -> Plan {
    let out = crate::compile::check_text("t.wl", text, &Default::default());
    let Some(checked) = &out.checked else {
        panic!(
            "{}",
            crate::diag::render_all(&out.map, &out.diagnostics, crate::diag::Style::Plain)
        );
    };
    crate::lower::lower(checked)
}

/// 3 series x 20 timestamps: 60 rows into a null sink, with `clauses` in the ingest.
fn ingest(clauses: &str) -> Plan {
    plan(&format!(
        r#"
target sink {{ null }}
schema cpu {{
  series host: symbol = format("h%d", n) for n in 0..3
  field v: long = uniform(0, 100)
  timestamp ts = every 1s from 2024-01-01T00:00:00Z for 20s
}}
ingest load {{ into sink via null  rows cpu  batch 10 rows  {clauses} }}
"#
    ))
}

fn http_run(clauses: &str) -> Plan {
    plan(&format!(
        r#"
target api {{ http "http://127.0.0.1:8080" }}
run hits {{ against api.http  request GET "/"  {clauses} }}
"#
    ))
}

/// What the formula gives for one phase of `bound` seconds, lingering `linger`.
fn one_phase(bound: f64, linger: u64) -> u64 {
    STARTUP_S + PER_PHASE_S + (bound * SLACK).ceil() as u64 + linger
}

#[test]
fn a_rate_over_known_rows_bounds_an_ingest() {
    // 60 rows at 10/s: 6 s.
    assert_eq!(derive(&ingest("rate 10/s"), 0), Ok(one_phase(6.0, 0)));
    // The duration cuts a longer schedule short.
    assert_eq!(
        derive(&ingest("rate 1/s  duration 10s"), 0),
        Ok(one_phase(10.0, 0))
    );
    // Alone, the duration bounds it; the linger is added.
    assert_eq!(
        derive(&ingest("duration 30s"), 3600),
        Ok(one_phase(30.0, 3600))
    );
}

#[test]
fn an_ingest_as_fast_as_the_server_takes_it_is_unbounded_by_name() {
    let err = derive(&ingest(""), 0).unwrap_err();
    assert_eq!(err.phase, "load");
    let shown = err.to_string();
    assert!(shown.starts_with("phase `load`"), "{shown}");
    assert!(
        shown.contains("as fast as the server takes them"),
        "{shown}"
    );
}

#[test]
fn a_run_is_bounded_by_its_duration_or_its_count_at_a_rate() {
    assert_eq!(
        derive(&http_run("duration 5s  rate 100/s"), 0),
        Ok(one_phase(5.0, 0))
    );
    // 500 instances at 100/s, warm-up 2 s, twice.
    assert_eq!(
        derive(&http_run("count 500  rate 100/s  warmup 2s  repeat 2"), 0),
        Ok(one_phase(14.0, 0))
    );
    let err = derive(&http_run("count 500"), 0).unwrap_err();
    assert_eq!(err.phase, "hits");
    assert!(err.why.contains("closed loop"), "{}", err.why);
}

#[test]
fn durations_are_whole_seconds_in_go_like_units() {
    let d = |s: &str| parse_duration("--deadline", s);
    assert_eq!(d("90"), Ok(90));
    assert_eq!(d("90s"), Ok(90));
    assert_eq!(d("45m"), Ok(2700));
    assert_eq!(d("1h30m"), Ok(5400));
    assert_eq!(d("2d"), Ok(172_800));
    for bad in ["", "0", "0s", "1.5h", "h", "10 m", "5x", "-3", "367d"] {
        let err = d(bad).unwrap_err();
        assert!(err.starts_with("--deadline `"), "{bad}: {err}");
    }
}

#[test]
fn deadlines_are_shown_in_seconds_and_hours() {
    assert_eq!(shown(4500), "4500 s (1h15m)");
    assert_eq!(shown(59), "59 s (59s)");
    assert_eq!(shown(7201), "7201 s (2h1s)");
}
