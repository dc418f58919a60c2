//! The plan's secrets made known before anything is sent or printed: each `env()` value its
//! endpoints and params read, and each endpoint's credentials (`secrets`). Connections read
//! the same values again later and would make them known then; doing it first also covers a
//! message that quotes one before its connection is made (the environment's server versions,
//! a URL that cannot be parsed).

use crate::plan::{EndpointPlan, Phase, Plan};
use crate::secrets;
use crate::value::Value;

/// Makes every secret of `plan` known to the masker.
pub fn remember(plan: &Plan) {
    for cell in &plan.cells {
        for v in cell.params.values() {
            read_env(v);
        }
        for phase in &cell.phases {
            match phase {
                Phase::Ingest(p) => {
                    let counted = p.verify.iter().map(|v| &v.endpoint);
                    let probed = p.probe.iter().map(|p| &p.count.endpoint);
                    for e in std::iter::once(&p.endpoint)
                        .chain(&p.ddl)
                        .chain(counted)
                        .chain(probed)
                    {
                        endpoint(e);
                    }
                }
                Phase::Queries(p) => endpoint(&p.endpoint),
                Phase::Requests(p) => endpoint(&p.endpoint),
            }
        }
    }
}

fn endpoint(e: &EndpointPlan) {
    if let Some(Ok(url)) = e.url.as_ref().map(|u| u.resolve_env()) {
        secrets::remember_url(&url);
    }
    for v in e.options.values() {
        read_env(v);
    }
    let text = |name: &str| match e.options.get(name) {
        Some(Value::Str(t)) => t.resolve_env().ok(),
        _ => None,
    };
    if let Some(user) = text("user") {
        secrets::remember_public(&user);
    }
    if let (Some(user), Some(password)) = (text("user"), text("password")) {
        secrets::remember_credentials(&user, &password);
    }
}

/// Reads every `env()` part of `v`, which makes the values read secrets.
fn read_env(v: &Value) {
    match v {
        Value::Str(t) => {
            let _ = t.resolve_env();
        }
        Value::List(items) => items.iter().for_each(read_env),
        Value::Map(entries) => entries.iter().for_each(|(_, v)| read_env(v)),
        _ => {}
    }
}
