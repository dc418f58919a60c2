//! Around the measured part of an ingest phase: the table's setup and teardown, and the count
//! that says how many rows the server shows.
//!
//! Setup and teardown run SQL DDL on the endpoint the plan names (`IngestPhase::ddl`: the
//! ingest endpoint when it speaks SQL, else the SQL endpoint of the phase's count), or on
//! InfluxDB and VictoriaMetrics go through the store's HTTP API (`ddl::store`). A setup with
//! no way to the server is refused by the check, and again here before anything is sent, so
//! a second run never silently starts from the first run's rows.

use std::path::PathBuf;
use std::time::Duration;

use super::{ddl, resolve_url, timeouts, RunEnv};
use crate::client::metrics::{self, InfluxColumns, MetricsClient};
use crate::client::SqlClient;
use crate::gen::batch::BatchSchema;
use crate::net::error::{DriverError, ErrorClass};
use crate::net::http::{option_text, url_encode, with_query};
use crate::plan::setup::{self, Admin};
use crate::plan::store::{self, Store};
use crate::plan::table::StatementKind;
use crate::plan::{EndpointPlan, IngestPhase, Setup, Teardown, VerifyPlan};
use crate::value::Value;

/// How the rows a server shows are counted, and what it showed before the phase.
pub struct Visibility {
    pub within: Duration,
    pub baseline: u64,
    counter: Counter,
    /// Where the count connects, to connect again (a SQLite path is relative to `base_dir`).
    endpoint: EndpointPlan,
    base_dir: PathBuf,
    /// The count's connection was lost: the next count opens a new one first.
    lost: bool,
}

enum Counter {
    Sql(SqlClient, String),
    Promql {
        client: MetricsClient,
        query: String,
        at_unix_ms: i64,
        /// Samples per row: a metric store keeps one sample per field.
        fields: u64,
        flush: bool,
    },
    Influxql {
        client: MetricsClient,
        query: String,
        fields: u64,
        columns: InfluxColumns,
    },
}

impl Visibility {
    /// A probe measures when rows become visible on their own: after its baseline it no
    /// longer forces VictoriaMetrics to flush (a flush per probe would set the lag it
    /// measures).
    pub fn probing(mut self) -> Visibility {
        if let Counter::Promql { flush, .. } = &mut self.counter {
            *flush = false;
        }
        self
    }

    /// Rows the server shows now, less the baseline.
    pub async fn count(&mut self, _env: &RunEnv) -> Result<u64, DriverError> {
        self.count_now().await
    }

    /// What the server shows before the phase: a SQL count of a table that does not exist yet
    /// (a first run, with `setup shared` or `truncate`, before line protocol creates it) is
    /// 0; any other failure fails the phase.
    async fn baseline_now(&mut self) -> Result<u64, DriverError> {
        match &mut self.counter {
            Counter::Sql(c, q) => Ok(c.count_if_exists(q).await?.unwrap_or(0)),
            _ => self.count_now().await,
        }
    }

    /// `count`, for a task that does not hold the run's environment (the probe).
    ///
    /// A count whose connection was lost opens a new one on the next call: the connection
    /// sat idle while the rows went out, and a server may close it then (PostgreSQL's
    /// `idle_session_timeout`, a restart, `pg_terminate_backend`, a proxy's idle limit). Kept,
    /// it failed every later count, and the phase with "the visible rows could not be
    /// counted" though every row was there.
    pub async fn count_now(&mut self) -> Result<u64, DriverError> {
        if self.lost {
            self.reconnect().await?;
        }
        let counted = self.count_once().await;
        if let Err(e) = &counted {
            self.lost = lost_connection(e);
        }
        counted
    }

    async fn reconnect(&mut self) -> Result<(), DriverError> {
        match &mut self.counter {
            Counter::Sql(c, _) => *c = sql_client_in(&self.base_dir, &self.endpoint).await?,
            Counter::Promql { client, .. } | Counter::Influxql { client, .. } => {
                *client = metrics_client(&self.endpoint).await?
            }
        }
        self.lost = false;
        Ok(())
    }

    async fn count_once(&mut self) -> Result<u64, DriverError> {
        let raw = match &mut self.counter {
            Counter::Sql(c, q) => c.count(q).await?,
            Counter::Promql {
                client,
                query,
                at_unix_ms,
                fields,
                flush,
            } => {
                if *flush {
                    metrics::victoria_force_flush(client).await?;
                }
                metrics::promql_count(client, query, *at_unix_ms).await? / (*fields).max(1)
            }
            Counter::Influxql {
                client,
                query,
                fields,
                columns,
            } => metrics::influxql_count(client, query, *columns).await? / (*fields).max(1),
        };
        Ok(raw.saturating_sub(self.baseline))
    }
}

/// The endpoint's URL with `env(...)` filled in, and its timeout.
fn url_and_timeout(ep: &EndpointPlan) -> Result<(String, Duration), DriverError> {
    let url = match &ep.url {
        Some(u) => resolve_url(u).map_err(|e| DriverError::new(ErrorClass::Connect, e, true))?,
        None => String::new(),
    };
    Ok((url, timeouts(ep).0))
}

async fn sql_client(env: &RunEnv, ep: &EndpointPlan) -> Result<SqlClient, DriverError> {
    sql_client_in(&env.base_dir, ep).await
}

async fn sql_client_in(
    base_dir: &std::path::Path,
    ep: &EndpointPlan,
) -> Result<SqlClient, DriverError> {
    let (url, timeout) = url_and_timeout(ep)?;
    SqlClient::connect(ep, &url, base_dir, timeout).await
}

/// Whether a failed count may succeed on a new connection: its connection was lost or broken,
/// it timed out (an HTTP connection is not used after a timeout), or connecting again failed
/// (a server restarting). A refused login and an error the server answered (SQL, a status)
/// would come back the same.
pub fn lost_connection(e: &DriverError) -> bool {
    !e.refused
        && matches!(
            e.class,
            ErrorClass::Connection | ErrorClass::Timeout | ErrorClass::Connect
        )
}

async fn metrics_client(ep: &EndpointPlan) -> Result<MetricsClient, DriverError> {
    let (url, timeout) = url_and_timeout(ep)?;
    MetricsClient::connect(ep, &url, timeout).await
}

/// Sets the table up as the phase says, and prepares the count with its baseline. A setup
/// or teardown that has no way to the server fails here, before anything is sent.
pub async fn prepare(
    env: &RunEnv,
    phase: &IngestPhase,
    layout: &BatchSchema,
    end_ms: Option<i64>,
) -> Result<Option<Visibility>, DriverError> {
    match setup::admin(phase) {
        Admin::Nothing => {}
        Admin::Store(store) => {
            if matches!(phase.setup, Setup::Recreate | Setup::Truncate) {
                store_admin(phase, store, layout, false).await?;
            }
        }
        Admin::Sql { endpoint, dialect } => {
            run_setup(env, phase, layout, endpoint, dialect).await?;
        }
        Admin::Unreachable(why) => {
            let what = if matches!(phase.setup, Setup::Recreate | Setup::Truncate) {
                format!("setup {}", phase.setup)
            } else if phase.teardown == Teardown::Drop {
                "teardown drop".to_string()
            } else {
                "setup sql".to_string()
            };
            return Err(crate::net::http::config_error(
                &phase.endpoint,
                format!("`{what}` cannot run: {}", why.why(phase)),
            ));
        }
    }
    let Some(v) = &phase.verify else {
        return Ok(None);
    };
    counting(env, v, layout, end_ms).await.map(Some)
}

/// The plan's setup statements, in order, over one connection opened at the first. A
/// `TRUNCATE` of a table no run has created yet does nothing: the first rows create it (line
/// protocol), or the ingest says it is missing (SQL). A `setup sql` statement that fails is
/// named in the phase's failure, with the server's message.
async fn run_setup(
    env: &RunEnv,
    phase: &IngestPhase,
    layout: &BatchSchema,
    endpoint: &EndpointPlan,
    dialect: &str,
) -> Result<(), DriverError> {
    let mut client = None;
    for s in &phase.setup_ddl {
        let c = connected(&mut client, env, endpoint).await?;
        match s.kind {
            StatementKind::CreateFromFile => {
                let Some(made) = ddl::create_table(dialect, &phase.table, layout) else {
                    continue;
                };
                let made = made.map_err(|e| crate::net::http::config_error(&phase.endpoint, e))?;
                for sql in made {
                    c.execute(&sql).await?;
                }
            }
            StatementKind::Truncate => {
                c.execute_if_exists(&s.sql).await?;
            }
            StatementKind::Sql => c.execute(&s.sql).await.map_err(|mut e| {
                e.message = format!("`setup sql` statement `{}` failed: {}", s.sql, e.message);
                e
            })?,
            StatementKind::Drop | StatementKind::Create | StatementKind::Index => {
                c.execute(&s.sql).await?
            }
        }
    }
    Ok(())
}

/// The count `v` describes, connected, with the baseline it sees now: `verify visible`'s, and
/// `probe visible`'s over a connection of its own.
pub async fn counting(
    env: &RunEnv,
    v: &VerifyPlan,
    layout: &BatchSchema,
    end_ms: Option<i64>,
) -> Result<Visibility, DriverError> {
    let within = match v.within {
        Value::Duration(ns) if ns > 0 => Duration::from_nanos(ns as u64),
        _ => Duration::from_secs(60),
    };
    let fields = layout.columns.iter().filter(|c| c.role == "field").count() as u64;
    let counter = match v.language.as_str() {
        "sql" => Counter::Sql(sql_client(env, &v.endpoint).await?, v.query.clone()),
        "promql" => Counter::Promql {
            client: metrics_client(&v.endpoint).await?,
            query: v.query.clone(),
            // One millisecond before the end: PromQL windows are (t - d, t], the rows
            // [start, end).
            at_unix_ms: end_ms.map_or_else(now_ms, |e| e - 1),
            fields: if v.unit == "samples" { fields } else { 1 },
            flush: v.endpoint.dialect == "victoriametrics",
        },
        "influxql" => Counter::Influxql {
            client: metrics_client(&v.endpoint).await?,
            query: v.query.clone(),
            fields: if v.unit == "samples" { fields } else { 1 },
            columns: if v.unit == "samples" {
                InfluxColumns::All
            } else {
                InfluxColumns::One
            },
        },
        other => {
            return Err(DriverError::new(
                ErrorClass::Connect,
                format!("counting in `{other}` is not supported"),
                true,
            ))
        }
    };
    let mut vis = Visibility {
        within,
        baseline: 0,
        counter,
        endpoint: v.endpoint.clone(),
        base_dir: env.base_dir.clone(),
        lost: false,
    };
    vis.baseline = vis.baseline_now().await?;
    Ok(vis)
}

/// The SQL client `slot` holds, connected to `ep` on first use.
async fn connected<'c>(
    slot: &'c mut Option<SqlClient>,
    env: &RunEnv,
    ep: &EndpointPlan,
) -> Result<&'c mut SqlClient, DriverError> {
    if slot.is_none() {
        *slot = Some(sql_client(env, ep).await?);
    }
    Ok(slot.as_mut().expect("connected just above"))
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Setup (`teardown` false) or `teardown drop` on InfluxDB or VictoriaMetrics, over the
/// endpoint `store::store_endpoint` picks.
async fn store_admin(
    phase: &IngestPhase,
    store: Store,
    layout: &BatchSchema,
    teardown: bool,
) -> Result<(), DriverError> {
    let Some(ep) = store::store_endpoint(phase) else {
        // The check refuses such a phase; only a plan built by other means gets here.
        return Err(DriverError::new(
            ErrorClass::Connect,
            format!(
                "{} on `{}` needs an `http` count or an `ilp_http` ingest endpoint to reach the \
                 server's API",
                if teardown { "teardown drop" } else { "setup" },
                phase.endpoint.dialect
            ),
            true,
        ));
    };
    let mut client = metrics_client(ep).await?;
    match store {
        Store::Victoria => {
            let fields: Vec<&str> = layout
                .columns
                .iter()
                .filter(|c| c.role == "field")
                .map(|c| c.name.as_str())
                .collect();
            let selector = ddl::victoria_selector(&phase.table, &fields);
            metrics::victoria_delete_series(&mut client, &selector).await
        }
        Store::Influx => {
            let resolve = |v: &Value| match v {
                Value::Str(t) => t.resolve_env().ok(),
                _ => None,
            };
            let db = match store::influx_database(phase, resolve) {
                store::InfluxDatabase::Named(db) => db,
                _ => {
                    return Err(crate::net::http::config_error(
                        &phase.endpoint,
                        "no database: InfluxDB names it in the path, \
                         `path \"/write?db=NAME\"`",
                    ))
                }
            };
            // An `http` endpoint's path is InfluxDB's `/query` (maybe behind a prefix); the
            // line-protocol endpoint's is `/write`, on the same server as `/query`.
            let base = match option_text(ep, "path")? {
                Some(p) if ep.kind == "http" => p.split('?').next().unwrap_or("").to_string(),
                _ => "/query".to_string(),
            };
            let path = with_query(&base, &format!("db={}", url_encode(&db)));
            let statements = if teardown {
                vec![ddl::influx_drop(&phase.table)]
            } else {
                ddl::influx_setup(&db, &phase.table, phase.setup == Setup::Truncate)
            };
            for s in &statements {
                metrics::influxql_execute(&mut client, &path, s).await?;
            }
            Ok(())
        }
    }
}

/// Drops the table when the phase says so.
pub async fn teardown(
    env: &RunEnv,
    phase: &IngestPhase,
    layout: &BatchSchema,
    _vis: Option<&mut Visibility>,
) -> Result<(), DriverError> {
    if phase.teardown != Teardown::Drop {
        return Ok(());
    }
    match setup::admin(phase) {
        Admin::Store(store) => store_admin(phase, store, layout, true).await,
        Admin::Sql { endpoint, dialect } => {
            if let Some(sql) = ddl::drop_table(dialect, &phase.table) {
                sql_client(env, endpoint).await?.execute(&sql).await?;
            }
            Ok(())
        }
        // `prepare` refused it before anything was sent.
        Admin::Unreachable(_) | Admin::Nothing => Ok(()),
    }
}
