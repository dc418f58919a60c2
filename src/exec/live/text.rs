//! The exposition text: OpenMetrics 1.0 (what Prometheus asks for first) or Prometheus text
//! 0.0.4 (what a Pushgateway takes, and a scraper that asks only for it). The two differ in a
//! counter's `# TYPE` name (OpenMetrics names the family without `_total`), `# UNIT`, and the
//! closing `# EOF`.

use std::fmt::Write as _;

use super::{Buckets, Figures, Labels, BUCKETS};

pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
pub const TEXT_004: &str = "text/plain; version=0.0.4; charset=utf-8";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    OpenMetrics,
    Text004,
}

impl Format {
    /// What an `Accept` header asks for: OpenMetrics unless it names only the older text
    /// format (as Prometheus's own negotiation lists both, OpenMetrics first).
    pub fn negotiate(accept: Option<&str>) -> Format {
        match accept {
            Some(a) if !a.contains("application/openmetrics-text") && a.contains("text/plain") => {
                Format::Text004
            }
            _ => Format::OpenMetrics,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => OPENMETRICS,
            Format::Text004 => TEXT_004,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Type {
    Counter,
    Gauge,
    Histogram,
}

/// A family: its name (without `_total` for a counter), type, unit and help, and each phase's
/// value read off its figures (`None`: the phase has no such figure).
struct Family {
    name: &'static str,
    kind: Type,
    unit: Option<&'static str>,
    help: &'static str,
    value: fn(&Figures) -> Option<Value<'_>>,
}

enum Value<'a> {
    Int(u64),
    Float(f64),
    Histogram(&'a Buckets),
}

const FAMILIES: &[Family] = &[
    Family {
        name: "wlrun_requests_ok",
        kind: Type::Counter,
        unit: None,
        help: "Queries or requests answered successfully (report.json ok).",
        value: |f| run(f).then_some(Value::Int(f.ok)),
    },
    Family {
        name: "wlrun_requests_failed",
        kind: Type::Counter,
        unit: None,
        help: "Queries or requests that failed, any class (report.json failed).",
        value: |f| run(f).then_some(Value::Int(f.failed)),
    },
    Family {
        name: "wlrun_requests_cut_off",
        kind: Type::Counter,
        unit: None,
        help: "Queries or requests sent and unanswered when the phase ended (report.json cut_off).",
        value: |f| run(f).then_some(Value::Int(f.cut_off)),
    },
    Family {
        name: "wlrun_requests_unsent",
        kind: Type::Counter,
        unit: None,
        help: "Queries or requests scheduled and never sent, counted when the run ends (report.json unsent).",
        value: |f| run(f).then_some(Value::Int(f.unsent)),
    },
    Family {
        name: "wlrun_latency_seconds",
        kind: Type::Histogram,
        unit: Some("seconds"),
        help: "Latency of successful queries or requests, from the intended send time in open loop.",
        value: |f| run(f).then_some(Value::Histogram(&f.latency)),
    },
    Family {
        name: "wlrun_service_seconds",
        kind: Type::Histogram,
        unit: Some("seconds"),
        help: "Open loop: service time of successful queries or requests, from the actual send.",
        value: |f| f.service.as_ref().map(Value::Histogram),
    },
    Family {
        name: "wlrun_send_lag_seconds",
        kind: Type::Histogram,
        unit: Some("seconds"),
        help: "Open loop: actual minus intended send time of the successful queries or requests.",
        value: |f| f.send_lag.as_ref().map(Value::Histogram),
    },
    Family {
        name: "wlrun_rows_sent",
        kind: Type::Counter,
        unit: None,
        help: "Ingest: rows written to the socket (report.json rows_sent).",
        value: |f| (!run(f)).then_some(Value::Int(f.rows_sent)),
    },
    Family {
        name: "wlrun_rows_acked",
        kind: Type::Counter,
        unit: None,
        help: "Ingest: rows the server acknowledged (report.json rows_acked), where the protocol acknowledges.",
        value: |f| f.rows_acked.map(Value::Int),
    },
    Family {
        name: "wlrun_rows_visible",
        kind: Type::Gauge,
        unit: None,
        help: "Ingest with probe visible: the highest count of the phase's rows a probe saw.",
        value: |f| f.rows_visible.map(Value::Int),
    },
    Family {
        name: "wlrun_ingest_errors",
        kind: Type::Counter,
        unit: None,
        help: "Ingest: batches whose send failed.",
        value: |f| (!run(f)).then_some(Value::Int(f.ingest_errors)),
    },
    Family {
        name: "wlrun_batch_latency_seconds",
        kind: Type::Histogram,
        unit: Some("seconds"),
        help: "Ingest: batch latency, from the send to the acknowledgement (or the write, without acknowledgements).",
        value: |f| (!run(f)).then_some(Value::Histogram(&f.latency)),
    },
    Family {
        name: "wlrun_visibility_lag_seconds",
        kind: Type::Histogram,
        unit: Some("seconds"),
        help: "Ingest with probe visible: how long after its send a batch was first seen by a probe.",
        value: |f| f.visibility_lag.as_ref().map(Value::Histogram),
    },
    Family {
        name: "wlrun_client_cpu_seconds",
        kind: Type::Gauge,
        unit: Some("seconds"),
        help: "CPU seconds of the wlrun process since the phase began; at its end the report's client_cpu_s.",
        value: |f| Some(Value::Float(f.client_cpu_s)),
    },
    Family {
        name: "wlrun_stage",
        kind: Type::Gauge,
        unit: None,
        help: "A staged phase: the stage (from 1) of the last interval closed.",
        value: |f| f.stage.map(Value::Int),
    },
    Family {
        name: "wlrun_findmax_step",
        kind: Type::Gauge,
        unit: None,
        help: "A find max rate search: the step (from 1) being measured.",
        value: |f| f.findmax_step.map(Value::Int),
    },
    Family {
        name: "wlrun_phase_finished",
        kind: Type::Gauge,
        unit: None,
        help: "1 once the phase is over and its figures are report.json's, else 0.",
        value: |f| Some(Value::Int(u64::from(f.finished))),
    },
];

/// A query or request run (answers), not an ingest (rows).
fn run(f: &Figures) -> bool {
    !f.ingest
}

/// The exposition of every phase's figures.
pub fn render(phases: &[(Labels, Figures)], format: Format) -> String {
    let om = format == Format::OpenMetrics;
    let mut out = String::new();
    for fam in FAMILIES {
        let values: Vec<(&Labels, Value)> = phases
            .iter()
            .filter_map(|(l, f)| (fam.value)(f).map(|v| (l, v)))
            .collect();
        if values.is_empty() {
            continue;
        }
        let (type_name, kind) = match fam.kind {
            Type::Counter => (
                "counter",
                fam.name.to_string() + if om { "" } else { "_total" },
            ),
            Type::Gauge => ("gauge", fam.name.to_string()),
            Type::Histogram => ("histogram", fam.name.to_string()),
        };
        let _ = writeln!(out, "# HELP {kind} {}", escape_help(fam.help, om));
        let _ = writeln!(out, "# TYPE {kind} {type_name}");
        if let (true, Some(unit)) = (om, fam.unit) {
            let _ = writeln!(out, "# UNIT {kind} {unit}");
        }
        for (labels, value) in values {
            let l = label_text(labels);
            match value {
                Value::Int(v) if fam.kind == Type::Counter => {
                    let _ = writeln!(out, "{}_total{{{l}}} {v}", fam.name);
                }
                Value::Int(v) => {
                    let _ = writeln!(out, "{}{{{l}}} {v}", fam.name);
                }
                Value::Float(v) => {
                    let _ = writeln!(out, "{}{{{l}}} {}", fam.name, float(v));
                }
                Value::Histogram(b) => {
                    let mut cumulative = 0;
                    for (i, n) in b.counts.iter().enumerate() {
                        cumulative += n;
                        let le = BUCKETS.get(i).map_or("+Inf".to_string(), |&x| float(x));
                        let _ =
                            writeln!(out, "{}_bucket{{{l},le=\"{le}\"}} {cumulative}", fam.name);
                    }
                    let _ = writeln!(out, "{}_count{{{l}}} {cumulative}", fam.name);
                    let _ = writeln!(out, "{}_sum{{{l}}} {}", fam.name, float(b.sum_s));
                }
            }
        }
    }
    if om {
        out.push_str("# EOF\n");
    }
    out
}

fn label_text(l: &Labels) -> String {
    format!(
        "cell=\"{}\",key=\"{}\",phase=\"{}\",kind=\"{}\",endpoint=\"{}\"",
        l.cell,
        escape_label(&l.key),
        escape_label(&l.phase),
        l.kind,
        escape_label(&l.endpoint)
    )
}

/// A label value as both formats quote it: backslash, double quote and line feed escaped.
pub fn escape_label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// Help text: 0.0.4 escapes backslash and line feed; OpenMetrics also the double quote.
fn escape_help(v: &str, om: bool) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '"' if om => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out
}

/// A float as both formats read it: Rust's shortest round-trip text without an exponent
/// (`0.00005`, `60`), so a bucket's `le` reads the same in every scrape.
fn float(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else if v.is_nan() {
        "NaN".into()
    } else if v > 0.0 {
        "+Inf".into()
    } else {
        "-Inf".into()
    }
}
