//! How an ingest's table is set up and torn down: through SQL DDL on the endpoint the plan
//! names (`IngestPhase::ddl`), through a store's HTTP API (`store`), or not at all. Facts read
//! off the plan, shared by the checker (which refuses a setup that has no way to the server,
//! rather than let it be skipped) and the runner (which refuses it again, before sending, for a
//! plan built by other means).

use super::store::{self, Store};
use super::{EndpointPlan, IngestPhase, Setup, Teardown};

/// The way a phase's setup and teardown reach the server.
#[derive(Clone, Debug)]
pub enum Admin<'a> {
    /// Nothing to do: a null sink keeps no table, or `setup shared` with `teardown keep`.
    Nothing,
    /// InfluxDB or VictoriaMetrics, through the store's HTTP API.
    Store(Store),
    /// SQL DDL in `dialect` (a name `exec::ddl` takes) over `endpoint`.
    Sql {
        endpoint: &'a EndpointPlan,
        dialect: &'static str,
    },
    /// The phase asks for a setup or a teardown that cannot run.
    Unreachable(Unreachable),
}

/// Why a setup or teardown cannot run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unreachable {
    /// No endpoint of the phase takes SQL.
    NoSqlEndpoint,
    /// The endpoint that takes SQL belongs to a dialect wlrun writes no DDL for.
    NoDdl { dialect: String },
}

/// Whether the phase's setup or teardown touches the table at all: `setup shared` and `setup
/// sql` run only the `setup sql` statements they have for the cell's dialect.
pub fn acts(phase: &IngestPhase) -> bool {
    let own = matches!(phase.setup, Setup::Recreate | Setup::Truncate);
    own || phase.teardown == Teardown::Drop || !phase.setup_ddl.is_empty()
}

/// How the phase's setup and teardown reach the server.
pub fn admin(phase: &IngestPhase) -> Admin<'_> {
    if phase.endpoint.kind == "null" || !acts(phase) {
        return Admin::Nothing;
    }
    if let Some(s) = store::store(phase) {
        return Admin::Store(s);
    }
    match &phase.ddl {
        None => Admin::Unreachable(Unreachable::NoSqlEndpoint),
        Some(ep) => match ddl_dialect(ep) {
            Some(dialect) => Admin::Sql {
                endpoint: ep,
                dialect,
            },
            None => Admin::Unreachable(Unreachable::NoDdl {
                dialect: ep.dialect.clone(),
            }),
        },
    }
}

/// The dialect whose DDL an endpoint takes: SQLite is SQLite whatever the target says, and a
/// generic PostgreSQL-wire endpoint takes PostgreSQL's. `None` where wlrun writes no DDL
/// (`ksqldb`, and the stores, whose tables appear with their first row).
pub fn ddl_dialect(ep: &EndpointPlan) -> Option<&'static str> {
    if ep.kind == "sqlite" {
        return Some("sqlite");
    }
    match ep.dialect.as_str() {
        "postgres" | "generic" => Some("postgres"),
        "timescaledb" => Some("timescaledb"),
        "questdb" => Some("questdb"),
        "sqlite" => Some("sqlite"),
        _ => None,
    }
}

impl Unreachable {
    /// Why, in words, for a check's message and a run's failure.
    pub fn why(&self, phase: &IngestPhase) -> String {
        match self {
            Unreachable::NoSqlEndpoint => format!(
                "no endpoint of target `{}` that the phase uses takes SQL: the ingest endpoint \
                 `{}` is {}, and there is no `pg` or `sqlite` endpoint nor a SQL count \
                 (`verify visible`, `probe visible`, `count rows via ENDPOINT sql ...`)",
                phase.endpoint.target, phase.endpoint.name, phase.endpoint.kind
            ),
            Unreachable::NoDdl { dialect } => {
                format!("wlrun writes no table DDL for dialect `{dialect}`")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(kind: &str, dialect: &str) -> EndpointPlan {
        EndpointPlan {
            target: "t".into(),
            name: kind.into(),
            kind: kind.into(),
            dialect: dialect.into(),
            url: None,
            options: Default::default(),
        }
    }

    fn phase(kind: &str, dialect: &str, ddl: Option<EndpointPlan>) -> IngestPhase {
        IngestPhase {
            ddl,
            ..IngestPhase::fixture(ep(kind, dialect))
        }
    }

    #[test]
    fn line_protocol_sets_up_over_the_sql_endpoint_the_plan_names() {
        let http = ep("http", "questdb");
        let p = phase("ilp_http", "questdb", Some(http.clone()));
        assert!(
            matches!(admin(&p), Admin::Sql { endpoint, dialect: "questdb" } if endpoint.name == "http"),
            "{:?}",
            admin(&p)
        );
    }

    #[test]
    fn a_setup_without_a_sql_endpoint_is_unreachable_not_skipped() {
        let unreachable =
            |p: &IngestPhase| matches!(admin(p), Admin::Unreachable(Unreachable::NoSqlEndpoint));
        let mut p = phase("qwp", "questdb", None);
        assert!(unreachable(&p));
        p.setup = Setup::Truncate;
        assert!(unreachable(&p));
        p.setup = Setup::Shared;
        assert!(matches!(admin(&p), Admin::Nothing));
        p.teardown = Teardown::Drop;
        assert!(unreachable(&p));
    }

    #[test]
    fn a_dialect_without_ddl_is_unreachable() {
        let p = phase("pg", "ksqldb", Some(ep("pg", "ksqldb")));
        assert!(matches!(
            admin(&p),
            Admin::Unreachable(Unreachable::NoDdl { dialect }) if dialect == "ksqldb"
        ));
    }

    #[test]
    fn stores_and_null_sinks() {
        assert!(matches!(
            admin(&phase("ilp_tcp", "influxdb", None)),
            Admin::Store(Store::Influx)
        ));
        assert!(matches!(
            admin(&phase("null", "questdb", None)),
            Admin::Nothing
        ));
    }

    #[test]
    fn ddl_dialects() {
        assert_eq!(ddl_dialect(&ep("sqlite", "generic")), Some("sqlite"));
        assert_eq!(ddl_dialect(&ep("pg", "generic")), Some("postgres"));
        assert_eq!(ddl_dialect(&ep("pg", "timescaledb")), Some("timescaledb"));
        assert_eq!(ddl_dialect(&ep("http", "questdb")), Some("questdb"));
        for d in ["ksqldb", "influxdb", "victoriametrics"] {
            assert_eq!(ddl_dialect(&ep("http", d)), None, "{d}");
        }
    }
}
