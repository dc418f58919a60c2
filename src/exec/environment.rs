//! What ran, where, gathered: wlrun's build, the machine from `/proc` (read only, nothing
//! run), the load average, and every SQL endpoint's server version, asked once before the
//! run with a short timeout. Nothing here fails a run: what cannot be read or asked is absent.

use std::collections::HashSet;
use std::time::Duration;

use crate::client::http_sql::HttpSql;
use crate::client::pg::PgClient;
use crate::plan::{EndpointPlan, Phase, Plan};
use crate::report::environment::{Environment, ServerVersion};

/// How long a server has to connect and say its version, all servers at once: a server that
/// accepts and never answers delays the run by this much, and a header is not worth more (a
/// server that slow will say more in the figures). A TLS login and a query take a few round
/// trips: well under this across a continent.
const ASK_TIMEOUT: Duration = Duration::from_secs(1);

/// The environment before the run: everything but `load_average_end`. `ask` false (`wlrun run
/// --no-server-versions`) opens no connection, so a server sees only the run's own.
pub fn gather(plan: &Plan, ask: bool) -> Environment {
    let servers = if ask {
        server_versions(plan)
    } else {
        Vec::new()
    };
    let (cpu_model, cores) = match read("/proc/cpuinfo") {
        Some(text) => cpu(&text),
        None => (None, None),
    };
    let kernel = match (
        read("/proc/sys/kernel/ostype"),
        read("/proc/sys/kernel/osrelease"),
    ) {
        (Some(os), Some(release)) => Some(format!("{} {}", os.trim(), release.trim())),
        (None, Some(release)) => Some(release.trim().to_string()),
        _ => None,
    };
    Environment {
        wlrun_version: env!("CARGO_PKG_VERSION").to_string(),
        commit: option_env!("WLRUN_COMMIT").map(str::to_string),
        host: read("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty()),
        kernel,
        cpu_model,
        cores: Some(cores.unwrap_or_else(available_cores)),
        memory_bytes: read("/proc/meminfo").and_then(|t| mem_total(&t)),
        load_average_start: load_average(),
        load_average_end: None,
        servers,
    }
}

/// The machine's cores (/proc/cpuinfo's processors), not the ones this process may use
/// (`taskset`): the load average is the machine's too.
pub fn cores() -> u64 {
    read("/proc/cpuinfo")
        .and_then(|t| cpu(&t).1)
        .unwrap_or_else(available_cores)
}

fn available_cores() -> u64 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
}

/// The 1-minute load average now.
pub fn load_average() -> Option<f64> {
    read("/proc/loadavg").and_then(|t| first_load(&t))
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// The first `model name` and the number of `processor` entries of /proc/cpuinfo.
fn cpu(text: &str) -> (Option<String>, Option<u64>) {
    let mut model = None;
    let mut count = 0u64;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        match key.trim() {
            "processor" => count += 1,
            "model name" if model.is_none() => {
                // Some CPUs pad their name with runs of spaces.
                let v = value.split_whitespace().collect::<Vec<_>>().join(" ");
                model = (!v.is_empty()).then_some(v);
            }
            _ => {}
        }
    }
    (model, (count > 0).then_some(count))
}

/// /proc/meminfo's `MemTotal`, which it gives in KiB (written `kB`).
fn mem_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line["MemTotal:".len()..].split_whitespace();
    let n: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") | None => n.checked_mul(1024),
        Some(_) => None,
    }
}

/// The 1-minute figure of /proc/loadavg (`0.52 0.58 0.59 1/467 12345`).
fn first_load(text: &str) -> Option<f64> {
    text.split_whitespace()
        .next()?
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v >= 0.0)
}

/// The plan's endpoints that take SQL, each once, in the order the plan first uses them.
fn sql_endpoints(plan: &Plan) -> Vec<&EndpointPlan> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (ep, as_sql) in plan.cells.iter().flat_map(|c| &c.phases).flat_map(uses) {
        let asked = match ep.kind.as_str() {
            "pg" | "sqlite" => true,
            // `http` is QuestDB's /exec when the plan sends it SQL; a request run's `http` is
            // any HTTP server, asked only when its target says it is QuestDB.
            "http" => as_sql || ep.dialect == "questdb",
            // QWP's query client reads counts only, and the same server is asked over its
            // pg or http endpoint when the target declares one.
            _ => false,
        };
        let url = ep.url.as_ref().map(|u| u.redacted()).unwrap_or_default();
        if asked && seen.insert((ep.target.as_str(), ep.name.as_str(), url)) {
            out.push(ep);
        }
    }
    out
}

/// The endpoints a phase uses, each with whether the phase sends it SQL.
fn uses(phase: &Phase) -> Vec<(&EndpointPlan, bool)> {
    match phase {
        Phase::Ingest(p) => {
            let counts = p.verify.iter().chain(p.probe.iter().map(|p| &p.count));
            std::iter::once((&p.endpoint, false))
                .chain(counts.map(|c| (&c.endpoint, c.language == "sql")))
                .collect()
        }
        Phase::Queries(p) => vec![(&p.endpoint, true)],
        Phase::Requests(p) => vec![(&p.endpoint, false)],
    }
}

/// Every SQL endpoint's version, asked at once on a runtime of its own (the run's starts
/// after): at most `ASK_TIMEOUT` in all.
fn server_versions(plan: &Plan) -> Vec<ServerVersion> {
    let endpoints = sql_endpoints(plan);
    if endpoints.is_empty() {
        return Vec::new();
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(_) => return Vec::new(),
    };
    let asks = endpoints.iter().map(|ep| async move {
        let version = tokio::time::timeout(ASK_TIMEOUT, ask(ep))
            .await
            .ok()
            .flatten();
        ServerVersion {
            target: ep.target.clone(),
            endpoint: ep.name.clone(),
            version,
        }
    });
    runtime.block_on(futures_util::future::join_all(asks))
}

/// The server's version as it says it, or `None` for any failure.
async fn ask(ep: &EndpointPlan) -> Option<String> {
    let url = match &ep.url {
        Some(u) => super::resolve_url(u).ok()?,
        None => String::new(),
    };
    match ep.kind.as_str() {
        "pg" => {
            let mut c = PgClient::connect(ep, &url, ASK_TIMEOUT).await.ok()?;
            // QuestDB answers version() as PostgreSQL 12 would, for drivers' sake; its
            // build() says what it is.
            let version = c.text("SELECT version()").await.ok().flatten();
            let questdb = ep.dialect == "questdb"
                || version.as_deref().is_some_and(|v| v.contains("QuestDB"));
            if questdb {
                if let Some(build) = c.text("SELECT build()").await.ok().flatten() {
                    return Some(build);
                }
            }
            version
        }
        "http" => {
            let mut c = HttpSql::connect(ep, &url, ASK_TIMEOUT).await.ok()?;
            match c.text("SELECT build()").await.ok().flatten() {
                Some(build) => Some(build),
                None => c.text("SELECT version()").await.ok().flatten(),
            }
        }
        "sqlite" => crate::client::sqlite::engine_version()
            .ok()
            .map(|v| format!("SQLite {v}")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_gives_the_first_model_and_the_processors() {
        let text = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R)   \
                    CPU @ 2.20GHz\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) CPU @ \
                    2.20GHz\n";
        assert_eq!(
            cpu(text),
            (Some("Intel(R) Xeon(R) CPU @ 2.20GHz".to_string()), Some(2))
        );
        // An arm64 cpuinfo names no model.
        let arm = "processor\t: 0\nBogoMIPS\t: 48.00\nCPU part\t: 0xd0c\n\nprocessor\t: 1\n";
        assert_eq!(cpu(arm), (None, Some(2)));
        assert_eq!(cpu(""), (None, None));
    }

    #[test]
    fn meminfo_total_is_in_kib() {
        let text = "MemTotal:       24536704 kB\nMemFree:         1234567 kB\n";
        assert_eq!(mem_total(text), Some(24_536_704 * 1024));
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
        assert_eq!(mem_total("MemTotal: lots kB\n"), None);
        assert_eq!(mem_total("MemTotal: 1 MB\n"), None);
    }

    #[test]
    fn loadavg_first_figure_is_the_one_minute_load() {
        assert_eq!(first_load("0.52 0.58 0.59 1/467 12345\n"), Some(0.52));
        assert_eq!(first_load("7.10 2.00 1.00 3/900 1\n"), Some(7.1));
        assert_eq!(first_load(""), None);
        assert_eq!(first_load("nan 1 1 1/1 1"), None);
    }

    #[test]
    fn this_machine_is_read() {
        // Linux is where wlrun runs and is tested; /proc is always there.
        let e = gather(
            &Plan {
                format: 1,
                workload: crate::plan::WorkloadInfo {
                    name: "w".into(),
                    file: "w.wl".into(),
                    description: None,
                    seed: 1,
                },
                axes: Vec::new(),
                cells: Vec::new(),
            },
            true,
        );
        assert_eq!(e.wlrun_version, env!("CARGO_PKG_VERSION"));
        assert!(e.host.is_some() && e.kernel.is_some(), "{e:?}");
        assert!(e.cores.is_some_and(|n| n >= 1), "{e:?}");
        assert!(e.memory_bytes.is_some_and(|b| b > 1 << 20), "{e:?}");
        assert!(e.load_average_start.is_some(), "{e:?}");
        assert!(e.servers.is_empty());
    }
}
