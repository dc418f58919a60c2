//! What ran, where: wlrun's build, the machine that ran it and the versions its servers gave,
//! so that a figure can be read with the box and the build that made it, and two reports told
//! apart by more than their figures (`wlrun compare`). `exec::environment` gathers it; this is
//! the report's data and the terminal's header line. docs/report-format.md, `environment`.

use serde::{Deserialize, Serialize};

/// report.json's `environment`. Every part wlrun could not read is absent, never a guess.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// The wlrun package's version (Cargo.toml).
    pub wlrun_version: String,
    /// `git rev-parse --short HEAD` when wlrun was built; absent from a build without git.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The operating system and its release: `Linux 6.1.0-18-amd64`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    /// Logical CPUs of the machine (not only those this process may use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// The 1-minute load average before the first phase and after the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_average_start: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_average_end: Option<f64>,
    /// Every SQL endpoint of the plan, asked once before the run.
    #[serde(default)]
    pub servers: Vec<ServerVersion>,
}

/// A server's answer to "which version are you", by the endpoint wlrun asked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerVersion {
    pub target: String,
    pub endpoint: String,
    /// Its answer as it wrote it; absent when it could not be asked or did not answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl ServerVersion {
    /// `target.endpoint`, as the rest of the report names endpoints.
    pub fn name(&self) -> String {
        format!("{}.{}", self.target, self.endpoint)
    }
}

impl Environment {
    /// `wlrun 0.1.0 (abc1234)`.
    pub fn build(&self) -> String {
        match &self.commit {
            Some(c) => format!("wlrun {} ({c})", self.wlrun_version),
            None => format!("wlrun {}", self.wlrun_version),
        }
    }

    /// The machine in one phrase: `Linux 6.1, Intel Xeon x2 cores, 23.4 GiB`.
    pub fn machine(&self) -> String {
        let cpu = match (&self.cpu_model, self.cores) {
            (Some(m), Some(n)) => Some(format!("{m} x{n} core{}", plural(n))),
            (Some(m), None) => Some(m.clone()),
            (None, Some(n)) => Some(format!("{n} core{}", plural(n))),
            (None, None) => None,
        };
        let parts: Vec<String> = [self.kernel.clone(), cpu, self.memory_bytes.map(gib)]
            .into_iter()
            .flatten()
            .collect();
        parts.join(", ")
    }

    /// The load average as known: at the start, and at the end once the run is over.
    pub fn load(&self) -> Option<String> {
        match (self.load_average_start, self.load_average_end) {
            (Some(s), Some(e)) => Some(format!("load {s:.2} at the start, {e:.2} at the end")),
            (Some(s), None) => Some(format!("load {s:.2}")),
            (None, Some(e)) => Some(format!("load {e:.2} at the end")),
            (None, None) => None,
        }
    }

    /// The terminal's header: the build, the machine and the load on one line, then a line
    /// per server asked. Ends in a newline.
    pub fn lines(&self) -> String {
        let mut first = self.build();
        if let Some(h) = &self.host {
            first += &format!(" on {h}");
        }
        let rest: Vec<String> = [Some(self.machine()).filter(|m| !m.is_empty()), self.load()]
            .into_iter()
            .flatten()
            .collect();
        if !rest.is_empty() {
            first += &format!(": {}", rest.join(", "));
        }
        let mut out = first + "\n";
        for s in &self.servers {
            out += &format!(
                "  server {}: {}\n",
                s.name(),
                s.version
                    .as_deref()
                    .unwrap_or("version unknown (not answered)")
            );
        }
        out
    }
}

/// Bytes as GiB with one decimal: `23.4 GiB`.
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> Environment {
        Environment {
            wlrun_version: "0.1.0".into(),
            commit: Some("abc1234".into()),
            host: Some("bench-1".into()),
            kernel: Some("Linux 6.1.0".into()),
            cpu_model: Some("Intel Xeon".into()),
            cores: Some(2),
            memory_bytes: Some(25_125_584_896),
            load_average_start: Some(1.2),
            load_average_end: None,
            servers: vec![
                ServerVersion {
                    target: "pg".into(),
                    endpoint: "main".into(),
                    version: Some("PostgreSQL 15.6".into()),
                },
                ServerVersion {
                    target: "qdb".into(),
                    endpoint: "http".into(),
                    version: None,
                },
            ],
        }
    }

    #[test]
    fn the_header_says_build_host_machine_load_and_servers() {
        assert_eq!(
            full().lines(),
            "wlrun 0.1.0 (abc1234) on bench-1: Linux 6.1.0, Intel Xeon x2 cores, 23.4 GiB, \
             load 1.20\n  server pg.main: PostgreSQL 15.6\n  server qdb.http: version unknown \
             (not answered)\n"
        );
        let mut ended = full();
        ended.load_average_end = Some(3.456);
        assert_eq!(
            ended.load().as_deref(),
            Some("load 1.20 at the start, 3.46 at the end")
        );
    }

    #[test]
    fn what_is_not_known_is_left_out_of_the_header() {
        let bare = Environment {
            wlrun_version: "0.1.0".into(),
            ..Environment::default()
        };
        assert_eq!(bare.lines(), "wlrun 0.1.0\n");
        let one = Environment {
            cores: Some(1),
            ..bare
        };
        assert_eq!(one.lines(), "wlrun 0.1.0: 1 core\n");
    }

    #[test]
    fn absent_parts_stay_absent_in_json_and_read_back() {
        let bare = Environment {
            wlrun_version: "0.1.0".into(),
            ..Environment::default()
        };
        let json = serde_json::to_value(&bare).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"wlrun_version": "0.1.0", "servers": []})
        );
        let back: Environment = serde_json::from_value(json).unwrap();
        assert_eq!(back, bare);
        let full = full();
        let back: Environment =
            serde_json::from_str(&serde_json::to_string(&full).unwrap()).unwrap();
        assert_eq!(back, full);
    }
}
