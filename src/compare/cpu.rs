//! CPU per unit of work, the client's and the observed server's, shown for both runs. Not
//! tested: a run has one whole-phase figure of each and no per-interval samples a test could
//! use, so a change is shown, never judged (a `--threshold` does not reach it).

use super::ShownValue;
use crate::report::server::ServerReport;
use crate::report::server_metrics::ServerMetrics;
use crate::report::PhaseReport;

/// One run's CPU figures of a phase, microseconds per unit.
struct PerUnit {
    unit: &'static str,
    client: Option<f64>,
    server: Option<f64>,
    /// Where the server's figure came from: /proc (`observe process`) or a metrics endpoint.
    from_metrics: bool,
}

fn per_unit(p: &PhaseReport) -> Option<PerUnit> {
    let (unit, n) = p.cpu_unit()?;
    let (cpu, server, metrics) = match p {
        PhaseReport::Ingest(r) => (r.client_cpu_s, r.server.as_ref(), &r.server_metrics),
        PhaseReport::Queries(r) => (r.client_cpu_s, r.server.as_ref(), &r.server_metrics),
        PhaseReport::Requests(r) => (r.client_cpu_s, r.server.as_ref(), &r.server_metrics),
        PhaseReport::NotRun { .. } => return None,
    };
    let client = cpu.filter(|_| n > 0).map(|c| c * 1e6 / n as f64);
    let (server, from_metrics) = server_per_unit(server, metrics);
    Some(PerUnit {
        unit,
        client,
        server,
        from_metrics,
    })
}

/// /proc's figure where the server was observed, else the first metrics endpoint's `cpu`.
fn server_per_unit(proc: Option<&ServerReport>, metrics: &[ServerMetrics]) -> (Option<f64>, bool) {
    if let Some(us) = proc.and_then(|s| s.cpu_us_per_unit) {
        return (Some(us), false);
    }
    let scraped = metrics
        .iter()
        .find_map(|m| m.cpu.as_ref().and_then(|c| c.us_per_unit));
    (scraped, scraped.is_some())
}

/// The client's and the server's CPU per unit of two runs of a phase, where either run has it.
pub(super) fn shown(base: &PhaseReport, new: &PhaseReport) -> Vec<ShownValue> {
    let (Some(b), Some(n)) = (per_unit(base), per_unit(new)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut push = |metric: &str, label: String, base: Option<f64>, new: Option<f64>| {
        if base.is_some() || new.is_some() {
            out.push(ShownValue {
                metric: metric.into(),
                label,
                base,
                new,
                per: Some(b.unit.into()),
            });
        }
    };
    push(
        "client_cpu_us_per_unit",
        format!("client cpu per {}", b.unit),
        b.client,
        n.client,
    );
    // Figures from /proc and from a metrics endpoint count different things (a process tree;
    // what the selector sums): the label says when either run's came from metrics.
    let metrics = if b.from_metrics || n.from_metrics {
        " (metrics)"
    } else {
        ""
    };
    push(
        "server_cpu_us_per_unit",
        format!("server cpu per {}{metrics}", b.unit),
        b.server,
        n.server,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::server_metrics::ServerCpu;
    use crate::report::Report;

    /// The golden compare run's ingest phase, its CPU figures set.
    fn ingest(cpu: Option<f64>, server: Option<f64>, metrics: Option<f64>) -> PhaseReport {
        let text = include_str!("../../tests/golden/compare/base/report.json");
        let report: Report = serde_json::from_str(text).unwrap();
        let mut phase = report.cells[0].phases[0].clone();
        let PhaseReport::Ingest(r) = &mut phase else {
            panic!("the golden run's first phase is its ingest");
        };
        r.rows_sent = 1_000_000;
        r.client_cpu_s = cpu;
        r.server = server.map(|us| ServerReport {
            cpu_us_per_unit: Some(us),
            unit: "row".into(),
            ..ServerReport::default()
        });
        r.server_metrics = metrics
            .map(|us| ServerMetrics {
                endpoint: "http://127.0.0.1:9100/metrics".into(),
                every_s: 1.0,
                scrapes_ok: 3,
                scrapes_failed: 0,
                failures: Vec::new(),
                span_s: Some(2.0),
                series: Vec::new(),
                series_dropped: 0,
                cpu: Some(ServerCpu {
                    selector: "process_cpu_seconds_total".into(),
                    series: 1,
                    cpu_s: us,
                    cores: Some(us / 2.0),
                    unit: "row".into(),
                    units: 1_000_000,
                    us_per_unit: Some(us),
                }),
            })
            .into_iter()
            .collect();
        phase
    }

    #[test]
    fn client_and_server_cpu_per_row_are_shown_for_both_runs() {
        let s = shown(
            &ingest(Some(2.0), Some(1.0), Some(9.0)),
            &ingest(Some(1.5), Some(0.8), None),
        );
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].metric, "client_cpu_us_per_unit");
        assert_eq!(s[0].label, "client cpu per row");
        // 2 CPU seconds over a million rows: 2 us a row.
        assert_eq!((s[0].base, s[0].new), (Some(2.0), Some(1.5)));
        assert_eq!(s[0].per.as_deref(), Some("row"));
        // /proc's figure wins over the metrics endpoint's.
        assert_eq!(s[1].label, "server cpu per row");
        assert_eq!((s[1].base, s[1].new), (Some(1.0), Some(0.8)));
    }

    #[test]
    fn the_metrics_figure_stands_in_where_process_was_not_observed() {
        let s = shown(
            &ingest(Some(2.0), None, Some(3.0)),
            &ingest(Some(2.0), Some(0.8), None),
        );
        assert_eq!(s[1].label, "server cpu per row (metrics)");
        assert_eq!((s[1].base, s[1].new), (Some(3.0), Some(0.8)));
    }

    #[test]
    fn nothing_is_shown_without_figures() {
        assert!(shown(&ingest(None, None, None), &ingest(None, None, None)).is_empty());
        let s = shown(&ingest(Some(1.0), None, None), &ingest(None, None, None));
        assert_eq!(s.len(), 1);
        assert_eq!((s[0].base, s[0].new), (Some(1.0), None));
    }
}
