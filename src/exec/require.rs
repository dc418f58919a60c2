//! `require rows(T) OP N`: what a query or request run checks on its endpoint before it
//! measures anything, so that a run against an empty or wrong table refuses to start.

use super::judge::compare;
use super::{timeouts, RunEnv};
use crate::client::SqlClient;
use crate::plan::{EndpointPlan, Require};

/// Checks `require rows(T) OP N` on a connection of the phase's endpoint.
pub(super) async fn requirements(
    env: &RunEnv,
    require: &[Require],
    endpoint: &EndpointPlan,
    url: &str,
) -> Result<(), String> {
    if require.is_empty() {
        return Ok(());
    }
    let (timeout, _) = timeouts(endpoint);
    let mut client = SqlClient::connect(endpoint, url, &env.base_dir, timeout)
        .await
        .map_err(|e| format!("cannot check `require`: {}", e.message))?;
    for r in require {
        let sql = format!(
            "SELECT count(*) FROM {}",
            crate::net::sql_text::quote_ident(&r.table)
        );
        let n = client.count(&sql).await.map_err(|e| {
            format!(
                "cannot check `require rows({}) {} {}`: {}",
                r.table, r.op, r.value, e.message
            )
        })?;
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        if !compare(n as f64, &r.op, r.value as f64) {
            return Err(format!(
                "refusing to measure: require rows({}) {} {}, but the table has {n} rows",
                r.table, r.op, r.value
            ));
        }
    }
    Ok(())
}
