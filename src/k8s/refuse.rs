//! What the plan says about running it as shards in pods, beyond what sharding itself refuses
//! (`lower::shards`): SQLite (a file no two pods share), and endpoints that name this machine,
//! which a pod cannot reach.

use crate::plan::{EndpointPlan, Phase, Plan};

/// SQLite endpoints: the database is a file in each pod (under the read-only /workload, at
/// that), so the shards would not share it and shard 0's setup and verification would see
/// its own rows only.
pub fn pod_local(plan: &Plan) -> Result<(), String> {
    let mut names: Vec<String> = Vec::new();
    for e in endpoints(plan) {
        let name = format!("{}.{}", e.target, e.name);
        if e.kind == "sqlite" && !names.contains(&name) {
            names.push(name);
        }
    }
    if names.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the endpoint {} is SQLite, a file in each pod: the shards would not share the \
         database; shard a server that all pods reach",
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// Endpoints whose URL names this machine (`localhost`, `127.x`, `[::1]`): inside a pod that
/// is the pod itself. Reported, not refused: a sidecar could be listening there.
pub fn loopback_endpoints(plan: &Plan) -> Vec<String> {
    let mut out = Vec::new();
    for e in endpoints(plan) {
        let Some(url) = e.shown_url() else {
            continue;
        };
        let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
        let authority = rest.split('/').next().unwrap_or("");
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let loopback =
            host.starts_with("localhost") || host.starts_with("127.") || host.starts_with("[::1]");
        let line = format!("{}.{} ({url})", e.target, e.name);
        if loopback && !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// Every endpoint the plan connects to: the phases', their counts' and their probes'.
fn endpoints(plan: &Plan) -> Vec<&EndpointPlan> {
    let mut out = Vec::new();
    for cell in &plan.cells {
        for phase in &cell.phases {
            match phase {
                Phase::Ingest(p) => {
                    out.push(&p.endpoint);
                    if let Some(v) = &p.verify {
                        out.push(&v.endpoint);
                    }
                    if let Some(probe) = &p.probe {
                        out.push(&probe.count.endpoint);
                    }
                }
                Phase::Queries(p) => out.push(&p.endpoint),
                Phase::Requests(p) => out.push(&p.endpoint),
            }
        }
    }
    out
}
