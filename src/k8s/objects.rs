//! The manifests: a ConfigMap with the files, a Secret with TLS files and environment values,
//! the headless Service for the barrier, the Indexed Job, and with a results claim the pod to
//! collect from. docs/scale-out.md says what each field is for.

use std::collections::{BTreeMap, HashSet};

use base64::Engine as _;

use super::api::*;
use super::files::{Files, DATA_LIMIT, MOUNT};
use super::names::file_key;

/// The image's user and group (the Containerfile's `wlrun`).
pub const UID: u32 = 10001;

/// Where the shards' run directories go in their pods.
pub const RESULTS: &str = "/results";

/// Linger mode's record of the run's exit status: the run is over once it exists.
pub const EXIT_FILE: &str = "/results/exit-code";

/// The port of the live metrics endpoint (`wlrun run --metrics-listen`) when `--metrics-port`
/// does not say: the OpenTelemetry Prometheus exporter's, free on a loader's pod.
pub const METRICS_PORT: u16 = 9464;

/// The shard's command without a results claim. `sh` is PID 1, so it passes SIGTERM on to
/// wlrun (which then writes its report), records the exit status, keeps the pod up for
/// `kubectl cp`, and exits with the run's status so the Job still sees a failed shard.
const LINGER_SCRIPT: &str = r#"# wlrun run "$@"; SIGTERM goes on to it (it then writes its report).
wlrun "$@" &
pid=$!
trap 'stop=1; kill -TERM "$pid" 2>/dev/null' TERM INT
while :; do
  wait "$pid"
  code=$?
  kill -0 "$pid" 2>/dev/null || break
done
echo "$code" >/results/exit-code
# Stopped (the Job deleted, the node drained): end as the run did, no waiting.
[ -z "${stop:-}" ] || exit "$code"
# The run is over (not Ready any more): /results can be copied out for WLRUN_LINGER seconds.
trap 'exit "$code"' TERM INT
sleep "$WLRUN_LINGER" &
wait "$!"
exit "$code"
"#;

/// Where the shards' directories end up.
#[derive(Debug, Clone)]
pub enum Results {
    /// In each pod (an `emptyDir`), which stays up this many seconds after its run.
    Linger(u32),
    /// On this ReadWriteMany claim, under `<name>/`.
    Claim(String),
}

/// Everything the manifests depend on besides the files.
#[derive(Debug)]
pub struct Spec {
    pub name: String,
    pub namespace: Option<String>,
    pub shards: u32,
    pub image: String,
    pub cpu: String,
    pub memory: String,
    pub cpu_limit: Option<String>,
    pub memory_limit: String,
    pub barrier_port: u16,
    /// `activeDeadlineSeconds`.
    pub deadline_s: u64,
    /// `ttlSecondsAfterFinished`.
    pub ttl_s: u32,
    pub placement: Placement,
    /// The port the pods declare and Prometheus is told to scrape.
    pub metrics_port: u16,
    /// Whether the shards are told to serve metrics there (`--metrics-port` was given).
    pub metrics_listen: bool,
    pub results: Results,
    /// The workload's files come from this claim instead of a ConfigMap.
    pub files_claim: Option<String>,
    /// `--param`, `--only` and `--seed` as given: the shards check them again.
    pub select_args: Vec<String>,
    /// Environment variables the workload reads, with the values they have here.
    pub env: Vec<(String, String)>,
    /// The barrier's shared secret, `WLRUN_BARRIER_TOKEN` in every pod.
    pub barrier_token: String,
}

/// Where the pods may run and as whom: the same for the shards and the collector.
#[derive(Debug, Default)]
pub struct Placement {
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<Toleration>,
    pub image_pull_secrets: Vec<String>,
    pub service_account: Option<String>,
}

impl Placement {
    /// A pod spec with these fields set and the rest for the caller.
    fn pod(&self, restart_policy: &'static str) -> PodSpec {
        PodSpec {
            restart_policy,
            service_account_name: self.service_account.clone(),
            // The shards never call the API: no token unless an account was chosen, for
            // whatever its operator gave it (a cloud identity, an injected sidecar).
            automount_service_account_token: self.service_account.is_none().then_some(false),
            image_pull_secrets: self
                .image_pull_secrets
                .iter()
                .map(|n| LocalObjectReference { name: n.clone() })
                .collect(),
            node_selector: self.node_selector.clone(),
            tolerations: self.tolerations.clone(),
            security_context: PodSecurity::restricted(),
            ..PodSpec::default()
        }
    }
}

impl Spec {
    fn labels(&self, component: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("app.kubernetes.io/name".into(), "wlrun".into()),
            ("app.kubernetes.io/instance".into(), self.name.clone()),
            ("app.kubernetes.io/component".into(), component.into()),
        ])
    }

    fn meta(&self, name: String, component: &str) -> Meta {
        Meta {
            name: Some(name),
            namespace: self.namespace.clone(),
            labels: self.labels(component),
            annotations: BTreeMap::new(),
        }
    }

    /// The directory the shards write under, in their pods.
    pub fn results_dir(&self) -> String {
        match &self.results {
            Results::Linger(_) => RESULTS.to_string(),
            Results::Claim(_) => format!("{RESULTS}/{}", self.name),
        }
    }
}

/// The Secret's key holding the barrier token.
const BARRIER_TOKEN_KEY: &str = "barrier-token";

/// The objects, in the order they must be created: what the pods mount before the pods.
pub fn build(spec: &Spec, files: &Files) -> Result<Vec<Object>, String> {
    let mut objects = Vec::new();
    // The barrier token's key, never a file's.
    let mut taken = HashSet::from([BARRIER_TOKEN_KEY.to_string()]);
    let mut config_items = Vec::new();
    let mut secret_items = Vec::new();
    let mut data = BTreeMap::new();
    let mut binary = BTreeMap::new();
    let mut secret = BTreeMap::new();
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    if spec.files_claim.is_none() {
        for f in &files.files {
            let key = file_key(&f.path, &mut taken);
            let item = KeyToPath {
                key: key.clone(),
                path: f.path.clone(),
                // Readable by the image's user through the pod's fsGroup, by no one else.
                mode: f.secret.then_some(0o440),
            };
            if f.secret {
                secret.insert(key, b64(&f.bytes));
                secret_items.push(item);
            } else {
                match std::str::from_utf8(&f.bytes) {
                    Ok(text) => data.insert(key, text.to_string()),
                    Err(_) => binary.insert(key, b64(&f.bytes)),
                };
                config_items.push(item);
            }
        }
        check_size(files, false)?;
        check_size(files, true)?;
    }
    let mut env = vec![
        EnvVar::value("WLRUN_SHARDS", spec.shards.to_string()),
        // Shard 0's stable host name through the headless Service (the pod's `subdomain`).
        EnvVar::value(
            "WLRUN_BARRIER",
            format!("{0}-0.{0}:{1}", spec.name, spec.barrier_port),
        ),
    ];
    if let Results::Linger(seconds) = spec.results {
        env.push(EnvVar::value("WLRUN_LINGER", seconds.to_string()));
    }
    // Shard 0 listens on every address of its pod: only a peer saying this token gets in.
    secret.insert(
        BARRIER_TOKEN_KEY.to_string(),
        b64(spec.barrier_token.as_bytes()),
    );
    env.push(EnvVar::secret(
        "WLRUN_BARRIER_TOKEN",
        &spec.name,
        BARRIER_TOKEN_KEY,
    ));
    for (name, value) in &spec.env {
        let key = file_key(&format!("env.{name}"), &mut taken);
        secret.insert(key.clone(), b64(value.as_bytes()));
        env.push(EnvVar::secret(name, &spec.name, &key));
    }

    if spec.files_claim.is_none() {
        objects.push(Object {
            api_version: "v1",
            kind: "ConfigMap",
            metadata: spec.meta(spec.name.clone(), "workload"),
            body: Body::ConfigMap(ConfigMap {
                immutable: true,
                data,
                binary_data: binary,
            }),
        });
    }
    {
        objects.push(Object {
            api_version: "v1",
            kind: "Secret",
            metadata: spec.meta(spec.name.clone(), "workload"),
            body: Body::Secret(Secret {
                immutable: true,
                kind: "Opaque",
                data: secret,
            }),
        });
    }
    objects.push(service(spec));
    let workload_volume = match &spec.files_claim {
        Some(claim) => VolumeSource::PersistentVolumeClaim(Claim {
            claim_name: claim.clone(),
            read_only: true,
        }),
        None => {
            let mut sources = vec![Projection::ConfigMap {
                config_map: Projected {
                    name: spec.name.clone(),
                    items: config_items,
                },
            }];
            if !secret_items.is_empty() {
                sources.push(Projection::Secret {
                    secret: Projected {
                        name: spec.name.clone(),
                        items: secret_items,
                    },
                });
            }
            VolumeSource::Projected { sources }
        }
    };
    objects.push(job(spec, files, env, workload_volume));
    if let Results::Claim(claim) = &spec.results {
        objects.push(collector(spec, claim));
    }
    Ok(objects)
}

/// Refuses data over the API's limit for one object, naming the largest files.
fn check_size(files: &Files, secret: bool) -> Result<(), String> {
    let mut mine: Vec<&super::files::File> =
        files.files.iter().filter(|f| f.secret == secret).collect();
    let total: u64 = mine.iter().map(|f| f.bytes.len() as u64).sum();
    if total <= DATA_LIMIT {
        return Ok(());
    }
    mine.sort_by_key(|f| std::cmp::Reverse(f.bytes.len()));
    let largest = mine
        .iter()
        .take(3)
        .map(|f| format!("`{}` ({} bytes)", f.shown, thousands(f.bytes.len() as u64)))
        .collect::<Vec<_>>()
        .join(", ");
    let (object, remedy) = if secret {
        ("Secret", "mount the TLS files from a Secret of your own")
    } else {
        (
            "ConfigMap",
            "put the workload's files on a volume and pass --files-claim CLAIM (docs/scale-out.md, \
             \"Inputs over 1 MiB\")",
        )
    };
    Err(format!(
        "the files for the {object} come to {} bytes, over the {} bytes Kubernetes allows in one \
         {object} in total; the largest: {largest}. Instead, {remedy}",
        thousands(total),
        thousands(DATA_LIMIT)
    ))
}

fn service(spec: &Spec) -> Object {
    Object {
        api_version: "v1",
        kind: "Service",
        metadata: spec.meta(spec.name.clone(), "shard"),
        body: Body::Service {
            spec: ServiceSpec {
                cluster_ip: "None",
                // Shard 0's name must resolve while its pod starts (and, lingering, is not
                // Ready): DNS publishes only ready addresses otherwise.
                publish_not_ready_addresses: true,
                selector: spec.labels("shard"),
                ports: vec![ServicePort {
                    name: "barrier",
                    protocol: "TCP",
                    port: spec.barrier_port,
                    target_port: "barrier",
                }],
            },
        },
    }
}

fn job(spec: &Spec, files: &Files, env: Vec<EnvVar>, workload: VolumeSource) -> Object {
    let out = format!("{}/shard-$(JOB_COMPLETION_INDEX)", spec.results_dir());
    let mut run = vec![
        "run".to_string(),
        files.workload.clone(),
        "--out".into(),
        out,
    ];
    run.extend(spec.select_args.iter().cloned());
    if spec.metrics_listen {
        // The linger lets a scrape after the end read the final figures (the pod may end with
        // the run).
        run.extend([
            "--metrics-listen".into(),
            format!("0.0.0.0:{}", spec.metrics_port),
            "--metrics-linger".into(),
            "30s".into(),
        ]);
    }
    // Ready: wlrun has compiled the workload and taken its run directory (`shard.json` is
    // written then, before the first barrier), and the run is not over.
    let started = format!(
        "test -e {}/shard-\"$JOB_COMPLETION_INDEX\"/shard.json",
        spec.results_dir()
    );
    let (command, ready) = match spec.results {
        Results::Linger(_) => (
            vec![
                "sh".into(),
                "-c".into(),
                LINGER_SCRIPT.into(),
                "wlrun".into(),
            ],
            format!("{started} && ! test -e {EXIT_FILE}"),
        ),
        Results::Claim(_) => (vec!["wlrun".into()], started),
    };
    let probe = Probe {
        exec: ExecAction {
            command: vec!["sh".into(), "-c".into(), ready],
        },
        period_seconds: 5,
    };
    let results_volume = match &spec.results {
        Results::Linger(_) => VolumeSource::EmptyDir {},
        Results::Claim(claim) => VolumeSource::PersistentVolumeClaim(Claim {
            claim_name: claim.clone(),
            read_only: false,
        }),
    };
    let container = Container {
        name: "shard",
        image: spec.image.clone(),
        image_pull_policy: "IfNotPresent",
        command,
        args: run,
        working_dir: Some(files.working_dir.clone()),
        env,
        ports: vec![
            ContainerPort {
                name: "barrier",
                container_port: spec.barrier_port,
                protocol: "TCP",
            },
            ContainerPort {
                name: "metrics",
                container_port: spec.metrics_port,
                protocol: "TCP",
            },
        ],
        resources: resources(spec),
        readiness_probe: Some(probe),
        // A failed shard's last lines of output become its termination message, shown by
        // `kubectl describe pod` and kept in the pod's status after its logs are gone.
        termination_message_policy: Some("FallbackToLogsOnError"),
        security_context: ContainerSecurity::restricted(),
        volume_mounts: vec![
            VolumeMount {
                name: "workload",
                mount_path: MOUNT,
                read_only: true,
            },
            VolumeMount {
                name: "results",
                mount_path: RESULTS,
                read_only: false,
            },
        ],
    };
    let selector = spec.labels("shard");
    Object {
        api_version: "batch/v1",
        kind: "Job",
        metadata: spec.meta(spec.name.clone(), "shard"),
        body: Body::Job {
            spec: JobSpec {
                completion_mode: "Indexed",
                completions: spec.shards,
                parallelism: spec.shards,
                // A failed shard fails the Job: a replacement would join a run whose barriers
                // the others have passed.
                backoff_limit: 0,
                active_deadline_seconds: spec.deadline_s,
                ttl_seconds_after_finished: spec.ttl_s,
                template: PodTemplate {
                    metadata: Meta {
                        labels: selector.clone(),
                        // Prometheus' Kubernetes pod discovery, as its example configuration
                        // and most charts relabel it.
                        annotations: BTreeMap::from([
                            ("prometheus.io/scrape".into(), "true".into()),
                            ("prometheus.io/port".into(), spec.metrics_port.to_string()),
                            ("prometheus.io/path".into(), "/metrics".into()),
                        ]),
                        ..Meta::default()
                    },
                    spec: PodSpec {
                        subdomain: Some(spec.name.clone()),
                        affinity: Some(Affinity {
                            pod_anti_affinity: PodAntiAffinity {
                                preferred: vec![WeightedTerm {
                                    weight: 100,
                                    pod_affinity_term: AffinityTerm {
                                        label_selector: LabelSelector {
                                            match_labels: selector,
                                        },
                                        topology_key: "kubernetes.io/hostname",
                                    },
                                }],
                            },
                        }),
                        containers: vec![container],
                        volumes: vec![
                            Volume {
                                name: "workload",
                                source: workload,
                            },
                            Volume {
                                name: "results",
                                source: results_volume,
                            },
                        ],
                        ..spec.placement.pod("Never")
                    },
                },
            },
        },
    }
}

/// A pod that mounts the results claim and waits, to `kubectl exec` the merge in and
/// `kubectl cp` the directories out of: a finished shard's pod can do neither.
fn collector(spec: &Spec, claim: &str) -> Object {
    Object {
        api_version: "v1",
        kind: "Pod",
        metadata: spec.meta(format!("{}-results", spec.name), "results"),
        body: Body::Pod {
            spec: PodSpec {
                containers: vec![Container {
                    name: "results",
                    image: spec.image.clone(),
                    image_pull_policy: "IfNotPresent",
                    command: vec!["sleep".into(), "infinity".into()],
                    args: Vec::new(),
                    working_dir: Some(RESULTS.into()),
                    env: Vec::new(),
                    ports: Vec::new(),
                    // `wlrun merge` runs here; it reads the shards' reports, as big as a
                    // shard's, so it may use as much memory as one.
                    resources: Resources {
                        requests: BTreeMap::from([
                            ("cpu", "100m".to_string()),
                            ("memory", "256Mi".to_string()),
                        ]),
                        limits: BTreeMap::from([("memory", spec.memory_limit.clone())]),
                    },
                    readiness_probe: None,
                    termination_message_policy: None,
                    security_context: ContainerSecurity::restricted(),
                    volume_mounts: vec![VolumeMount {
                        name: "results",
                        mount_path: RESULTS,
                        read_only: false,
                    }],
                }],
                volumes: vec![Volume {
                    name: "results",
                    source: VolumeSource::PersistentVolumeClaim(Claim {
                        claim_name: claim.to_string(),
                        read_only: false,
                    }),
                }],
                ..spec.placement.pod("Always")
            },
        },
    }
}

/// No CPU limit unless asked: one throttles the loader in bursts (CFS quota), which shows up
/// as latency that is the client's, not the server's. Memory is limited (the request by
/// default): memory cannot be throttled, only reclaimed, and a shard over its request on a
/// short node gets its neighbours evicted, or itself, mid-run.
fn resources(spec: &Spec) -> Resources {
    let mut limits = BTreeMap::from([("memory", spec.memory_limit.clone())]);
    if let Some(cpu) = &spec.cpu_limit {
        limits.insert("cpu", cpu.clone());
    }
    Resources {
        requests: BTreeMap::from([("cpu", spec.cpu.clone()), ("memory", spec.memory.clone())]),
        limits,
    }
}

impl EnvVar {
    fn value(name: &str, value: String) -> EnvVar {
        EnvVar {
            name: name.into(),
            value: Some(value),
            value_from: None,
        }
    }

    /// A variable whose value is key `key` of Secret `secret`.
    fn secret(name: &str, secret: &str, key: &str) -> EnvVar {
        EnvVar {
            name: name.into(),
            value: None,
            value_from: Some(EnvSource {
                secret_key_ref: KeyRef {
                    name: secret.into(),
                    key: key.into(),
                },
            }),
        }
    }
}

impl PodSecurity {
    fn restricted() -> PodSecurity {
        PodSecurity {
            run_as_non_root: true,
            run_as_user: UID,
            run_as_group: UID,
            fs_group: UID,
            seccomp_profile: Seccomp {
                kind: "RuntimeDefault",
            },
        }
    }
}

impl ContainerSecurity {
    fn restricted() -> ContainerSecurity {
        ContainerSecurity {
            allow_privilege_escalation: false,
            capabilities: Capabilities { drop: vec!["ALL"] },
        }
    }
}

fn thousands(n: u64) -> String {
    crate::plan::thousands(n)
}
