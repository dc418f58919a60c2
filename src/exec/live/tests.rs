use super::push::Target;
use super::text::{escape_label, render, Format};
use super::*;

fn labels(kind: &'static str) -> Labels {
    Labels {
        cell: 2,
        key: "proto=\"a\\b\"\nx".into(),
        phase: "reads".into(),
        kind,
        endpoint: "db.sql (pg)".into(),
    }
}

fn micros(values: &[u64]) -> Histogram<u64> {
    let mut h = crate::report::series::interval_histogram();
    for &v in values {
        h.record(v).unwrap();
    }
    h
}

fn interval<'a>(lat: &'a Histogram<u64>, empty: &'a Histogram<u64>, ok: u64) -> Interval<'a> {
    Interval {
        ok,
        failed: 1,
        cut_off: 0,
        unsent: 0,
        rows_sent: 0,
        rows_acked: 0,
        ingest_errors: 0,
        visible: None,
        latency: lat,
        service: lat,
        send_lag: empty,
        visibility_lag: empty,
        stage: Some(2),
    }
}

#[test]
fn label_values_escape_backslash_quote_and_newline() {
    assert_eq!(escape_label("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
    let live = Live::new(Duration::from_secs(1));
    live.phase(labels("queries"), false, false, false);
    let text = render(&live.snapshot(), Format::OpenMetrics);
    assert!(text.contains(r#"key="proto=\"a\\b\"\nx""#), "{text}");
}

#[test]
fn openmetrics_names_counters_without_total_in_type_and_ends_with_eof() {
    let live = Live::new(Duration::from_secs(1));
    let p = live.phase(labels("queries"), true, false, false);
    let (lat, empty) = (micros(&[40, 90, 3_000, 70_000_000]), micros(&[]));
    p.add(&interval(&lat, &empty, 4));
    let om = render(&live.snapshot(), Format::OpenMetrics);
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert!(om.contains("# TYPE wlrun_requests_ok counter\n"), "{om}");
    assert!(om.contains("wlrun_requests_ok_total{cell=\"2\","), "{om}");
    assert!(
        om.contains("# UNIT wlrun_latency_seconds seconds\n"),
        "{om}"
    );
    assert!(om.contains("# TYPE wlrun_service_seconds histogram\n"));
    assert!(om.contains("wlrun_stage{"), "{om}");
    assert!(
        !om.contains("wlrun_rows_sent"),
        "no ingest family in a run: {om}"
    );
    let text = render(&live.snapshot(), Format::Text004);
    assert!(
        !text.contains("# EOF") && !text.contains("# UNIT"),
        "{text}"
    );
    assert!(
        text.contains("# TYPE wlrun_requests_ok_total counter\n"),
        "{text}"
    );
}

#[test]
fn histogram_buckets_are_cumulative_and_end_at_inf_with_the_count() {
    let live = Live::new(Duration::from_secs(1));
    let p = live.phase(labels("requests"), false, false, false);
    let (lat, empty) = (micros(&[40, 90, 3_000, 70_000_000]), micros(&[]));
    p.add(&interval(&lat, &empty, 4));
    let text = render(&live.snapshot(), Format::OpenMetrics);
    let buckets: Vec<(String, u64)> = text
        .lines()
        .filter(|l| l.starts_with("wlrun_latency_seconds_bucket"))
        .map(|l| {
            let le = l.split("le=\"").nth(1).unwrap().split('"').next().unwrap();
            (
                le.to_string(),
                l.rsplit(' ').next().unwrap().parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(buckets.len(), BUCKETS.len() + 1);
    assert_eq!(buckets[0], ("0.00005".into(), 1));
    assert_eq!(buckets[1], ("0.0001".into(), 2));
    assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "{buckets:?}");
    assert_eq!(buckets.last().unwrap(), &("+Inf".to_string(), 4));
    assert_eq!(buckets[BUCKETS.len() - 1].1, 3, "70 s is past 60 s");
    assert!(text.contains("wlrun_latency_seconds_count{cell=\"2\",key="));
    let count_line = text
        .lines()
        .find(|l| l.starts_with("wlrun_latency_seconds_count"))
        .unwrap();
    assert!(count_line.ends_with(" 4"), "{count_line}");
}

#[test]
fn counters_only_grow_and_the_end_sets_the_report_where_higher() {
    let live = Live::new(Duration::from_secs(1));
    let p = live.phase(labels("queries"), false, false, false);
    let (lat, empty) = (micros(&[100]), micros(&[]));
    p.add(&interval(&lat, &empty, 3));
    p.finish_with(&Final {
        ok: 5,
        client_cpu_s: Some(0.5),
        ..Final::default()
    });
    let (_, f) = &live.snapshot()[0];
    assert_eq!((f.ok, f.failed, f.finished), (5, 1, true));
    assert_eq!(f.client_cpu_s, 0.5);
    // An interval after the end (a late writer) changes nothing.
    p.add(&interval(&lat, &empty, 3));
    assert_eq!(live.snapshot()[0].1.ok, 5);
}

#[test]
fn accept_headers_choose_the_format() {
    let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    assert_eq!(Format::negotiate(Some(prometheus)), Format::OpenMetrics);
    assert_eq!(Format::negotiate(None), Format::OpenMetrics);
    assert_eq!(
        Format::negotiate(Some("text/plain;version=0.0.4")),
        Format::Text004
    );
}

#[test]
fn push_urls_name_the_group() {
    let t = Target::parse("http://gw:9091", "vm").unwrap();
    assert_eq!(t.authority, "gw:9091");
    assert_eq!(t.path, "/metrics/job/wlrun/instance/vm");
    let t = Target::parse("http://gw/", "a/b").unwrap();
    assert_eq!(t.authority, "gw:80");
    assert_eq!(t.path, "/metrics/job/wlrun/instance@base64/YS9i");
    let t = Target::parse("http://gw:9091/metrics/job/bench/run/7", "vm").unwrap();
    assert_eq!(t.path, "/metrics/job/bench/run/7");
    assert!(Target::parse("https://gw", "vm").is_err());
}

#[test]
fn durations_read_with_units() {
    assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
    assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
    assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
    assert!(parse_duration("-1s").is_err());
    assert!(parse_duration("5 parsecs").is_err());
}
