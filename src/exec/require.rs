//! `require rows(T) OP N`: what a query or request run checks on its endpoint before it
//! measures anything, so that a run against an empty or wrong table refuses to start.

use std::collections::BTreeMap;

use super::judge::compare;
use super::{timeouts, RunEnv};
use crate::client::SqlClient;
use crate::net::error::ErrorClass;
use crate::plan::{EndpointPlan, Require};
use crate::report::outcome::CONNECT;
use crate::report::ErrorCount;

/// Why a phase's guards refused it.
pub(super) struct Unmet {
    why: String,
    /// The guards' connection could not be made: the phase could not measure, and says so
    /// as a `connect` error (`report::outcome`).
    connect: Option<String>,
}

impl From<String> for Unmet {
    fn from(why: String) -> Unmet {
        Unmet { why, connect: None }
    }
}

impl Unmet {
    /// The phase's failure line, with a connection that could not be made counted in `errors`.
    pub(super) fn failure(self, errors: &mut BTreeMap<String, ErrorCount>) -> String {
        if let Some(first) = self.connect {
            errors.insert(CONNECT.to_string(), ErrorCount { count: 1, first });
        }
        self.why
    }
}

/// Checks `require rows(T) OP N` on a connection of the phase's endpoint.
pub(super) async fn requirements(
    env: &RunEnv,
    require: &[Require],
    endpoint: &EndpointPlan,
    url: &str,
) -> Result<(), Unmet> {
    if require.is_empty() {
        return Ok(());
    }
    let (timeout, _) = timeouts(endpoint);
    let mut client = SqlClient::connect(endpoint, url, &env.base_dir, timeout)
        .await
        .map_err(|e| Unmet {
            why: format!("cannot check `require`: {}", e.message),
            connect: (e.class == ErrorClass::Connect).then(|| e.message.clone()),
        })?;
    for r in require {
        let sql = format!(
            "SELECT count(*) FROM {}",
            crate::net::sql_text::quote_ident(&r.table)
        );
        let n = client.count(&sql).await.map_err(|e| {
            Unmet::from(format!(
                "cannot check `require rows({}) {} {}`: {}",
                r.table, r.op, r.value, e.message
            ))
        })?;
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        if !compare(n as f64, &r.op, r.value as f64) {
            return Err(Unmet::from(format!(
                "refusing to measure: require rows({}) {} {}, but the table has {n} rows",
                r.table, r.op, r.value
            )));
        }
    }
    Ok(())
}
