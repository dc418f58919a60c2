//! oha run from a bench at a fixed rate, side by side with wlrun's open loop: its latency
//! percentiles with `--latency-correction` (from the intended send time, as wlrun's are) and
//! its client CPU (user + system of the shell's children, from `times`).
//!
//! oha is found on the PATH or in `target/oha/bin` (`cargo install oha --locked --root
//! target/oha`, once); without it the bench says so.

use std::path::{Path, PathBuf};

pub struct OhaMeasured {
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub requests: f64,
    /// Client CPU seconds over the run's seconds.
    pub cores: f64,
}

pub fn find_oha() -> Option<PathBuf> {
    let local = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/oha/bin/oha");
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("oha"))
        .chain([local])
        .find(|p| p.is_file())
}

/// `oha` POSTing `body` to `url` at `rate`/s for `seconds` on `connections` connections.
pub fn run_oha(
    oha: &Path,
    url: &str,
    body: &str,
    rate: u64,
    connections: u64,
    seconds: u64,
) -> OhaMeasured {
    let command = format!(
        "{} --no-tui --output-format json --latency-correction -z {seconds}s -q {rate} -c {connections} \
         -m POST -H 'Content-Type: application/vnd.ksql.v1+json' -H 'Accept: application/vnd.ksql.v1+json' \
         -d '{body}' {url}",
        oha.display()
    );
    let out = super::wrk::run_timed(&command, None);
    let (text, fail) = (&out.stdout, |what: &str| -> ! { out.fail(what) });
    let json_end = text.rfind('}').unwrap_or_else(|| fail("no JSON"));
    let json: serde_json::Value =
        serde_json::from_str(&text[..=json_end]).unwrap_or_else(|e| fail(&format!("JSON: {e}")));
    let pct = |k: &str| {
        json["latencyPercentiles"][k]
            .as_f64()
            .unwrap_or_else(|| fail(&format!("no latencyPercentiles.{k}")))
            * 1e6
    };
    let cpu =
        super::wrk::children_cpu_s(&text[json_end + 1..]).unwrap_or_else(|| fail("no `times`"));
    let total = json["summary"]["total"].as_f64().unwrap_or(seconds as f64);
    let rps = json["summary"]["requestsPerSec"].as_f64().unwrap_or(0.0);
    OhaMeasured {
        p50_us: pct("p50"),
        p99_us: pct("p99"),
        p999_us: pct("p99.9"),
        requests: rps * total,
        cores: cpu / total.max(1e-9),
    }
}
