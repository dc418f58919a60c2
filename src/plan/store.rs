//! Stores whose tables are managed through an HTTP API rather than SQL DDL (InfluxDB 1.x,
//! VictoriaMetrics): which one a phase lands in, and the endpoint and database its setup and
//! teardown use. Facts read off the plan, shared by the checker (which refuses a phase that
//! gives no way to its store) and the runner (which sends the API calls).

use super::{EndpointPlan, IngestPhase};
use crate::value::Value;

/// A store whose "tables" are managed through its HTTP API rather than SQL DDL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    /// InfluxDB 1.x: a measurement in a database, both managed with InfluxQL over `/query`.
    Influx,
    /// VictoriaMetrics: a table is the series `<table>_<field>` of each field, deleted with
    /// `/api/v1/admin/tsdb/delete_series`.
    Victoria,
}

/// The store whose API setup and teardown use for this phase, if any. Only line-protocol
/// ingest lands in such a store: a `null` sink has no table, and SQL endpoints take DDL.
pub fn store(phase: &IngestPhase) -> Option<Store> {
    if !matches!(phase.endpoint.kind.as_str(), "ilp_http" | "ilp_tcp") {
        return None;
    }
    match phase.endpoint.dialect.as_str() {
        "influxdb" => Some(Store::Influx),
        "victoriametrics" => Some(Store::Victoria),
        _ => None,
    }
}

/// The endpoint through which setup and teardown reach a store: the `http` endpoint of the
/// phase's count (`verify visible`'s, else `probe visible`'s) when it is on the ingest target,
/// else the ingest endpoint itself when it is `ilp_http` (InfluxDB 1.x and single-node
/// VictoriaMetrics serve their whole API on one port). `None` when the phase gives no way to
/// the API (`ilp_tcp` without an `http` count).
pub fn store_endpoint(phase: &IngestPhase) -> Option<&EndpointPlan> {
    let counted = phase
        .verify
        .iter()
        .chain(phase.probe.as_ref().map(|p| &p.count))
        .map(|v| &v.endpoint)
        .find(|e| e.kind == "http" && e.target == phase.endpoint.target);
    counted.or_else(|| (phase.endpoint.kind == "ilp_http").then_some(&phase.endpoint))
}

/// Where a phase's InfluxDB database is named, as far as can be told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InfluxDatabase {
    Named(String),
    /// A path that cannot be read yet (an `env(...)` part at check time).
    Unknown,
    /// No path names one.
    Missing,
}

/// The InfluxDB database a phase's rows go to: the `db` of the ingest endpoint's `path`
/// (`/write?db=bench`), else of the path of the endpoint `store_endpoint` picked
/// (`/query?db=bench`). `resolve` reads a path option's text, `None` when it cannot yet.
pub fn influx_database(
    phase: &IngestPhase,
    resolve: impl Fn(&Value) -> Option<String>,
) -> InfluxDatabase {
    let mut unknown = false;
    let others = store_endpoint(phase).filter(|e| !std::ptr::eq(*e, &phase.endpoint));
    for ep in std::iter::once(&phase.endpoint).chain(others) {
        let Some(path) = ep.options.get("path") else {
            continue;
        };
        match resolve(path) {
            Some(text) => {
                if let Some(db) = influx_db(&text) {
                    return InfluxDatabase::Named(db);
                }
            }
            None => unknown = true,
        }
    }
    if unknown {
        InfluxDatabase::Unknown
    } else {
        InfluxDatabase::Missing
    }
}

/// The `db` parameter of an InfluxDB 1.x path (`/write?db=bench&precision=ns`), decoded as
/// InfluxDB decodes it (percent escapes, `+` for a space); `None` without one.
pub fn influx_db(path: &str) -> Option<String> {
    let (_, query) = path.split_once('?')?;
    let value = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("db="))
        .filter(|v| !v.is_empty())?;
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{ProbePlan, VerifyPlan};

    fn ep(kind: &str) -> EndpointPlan {
        EndpointPlan {
            target: "vm".into(),
            name: kind.into(),
            kind: kind.into(),
            dialect: "victoriametrics".into(),
            url: None,
            options: Default::default(),
        }
    }

    fn phase(kind: &str) -> IngestPhase {
        IngestPhase::fixture(ep(kind))
    }

    fn count() -> VerifyPlan {
        VerifyPlan {
            endpoint: ep("http"),
            language: "promql".into(),
            unit: "samples".into(),
            query: "count(cpu_v)".into(),
            within: Value::Duration(1),
        }
    }

    #[test]
    fn a_probes_count_reaches_the_stores_api_as_verifys_does() {
        let mut p = phase("ilp_tcp");
        assert!(store_endpoint(&p).is_none());
        p.probe = Some(ProbePlan {
            count: count(),
            every: Value::Duration(1_000_000),
        });
        assert_eq!(store_endpoint(&p).map(|e| e.name.as_str()), Some("http"));
        p.probe = None;
        p.verify = Some(count());
        assert_eq!(store_endpoint(&p).map(|e| e.name.as_str()), Some("http"));
        assert_eq!(
            store_endpoint(&phase("ilp_http")).map(|e| e.name.as_str()),
            Some("ilp_http")
        );
    }

    #[test]
    fn influx_database_names_from_paths() {
        assert_eq!(influx_db("/write?db=bench").as_deref(), Some("bench"));
        assert_eq!(
            influx_db("/query?rp=x&db=my%20db+2&precision=ns").as_deref(),
            Some("my db 2")
        );
        assert_eq!(influx_db("/write?db=a%2"), Some("a%2".to_string()));
        assert_eq!(influx_db("/write"), None);
        assert_eq!(influx_db("/write?db="), None);
        assert_eq!(influx_db("/write?mydb=x"), None);
    }
}
