//! The slice of the Kubernetes API that `wlrun k8s` writes, as typed structs: serde gives the
//! YAML, field order is declaration order and maps are sorted, so the output is the same for
//! the same input (a golden test holds it). Names follow the API's JSON (camelCase); optional
//! fields are left out rather than written empty. Only what the manifests use is here.

use std::collections::BTreeMap;

use serde::Serialize;

/// A top-level object: `apiVersion`, `kind`, `metadata`, then the kind's own fields.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Object {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub metadata: Meta,
    #[serde(flatten)]
    pub body: Body,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Body {
    ConfigMap(ConfigMap),
    Secret(Secret),
    Service { spec: ServiceSpec },
    Job { spec: JobSpec },
    Pod { spec: PodSpec },
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub labels: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMap {
    /// A run's inputs must not change under it; immutable objects also spare the API server
    /// a watch.
    pub immutable: bool,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub data: BTreeMap<String, String>,
    /// Base64, for files that are not UTF-8 (a `.wlb` row file).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub binary_data: BTreeMap<String, String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Secret {
    pub immutable: bool,
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Base64 of each value.
    pub data: BTreeMap<String, String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceSpec {
    #[serde(rename = "clusterIP")]
    pub cluster_ip: &'static str,
    pub publish_not_ready_addresses: bool,
    pub selector: BTreeMap<String, String>,
    pub ports: Vec<ServicePort>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServicePort {
    pub name: &'static str,
    pub protocol: &'static str,
    pub port: u16,
    pub target_port: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobSpec {
    pub completion_mode: &'static str,
    pub completions: u32,
    pub parallelism: u32,
    pub backoff_limit: u32,
    /// Counted from the Job's start: pods still running then are stopped (SIGTERM, then the
    /// grace period) and the Job fails with `DeadlineExceeded`.
    pub active_deadline_seconds: u64,
    /// The Job and its pods are deleted this long after it finished, either way.
    pub ttl_seconds_after_finished: u32,
    pub template: PodTemplate,
}

#[derive(Debug, Serialize)]
pub struct PodTemplate {
    pub metadata: Meta,
    pub spec: PodSpec,
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subdomain: Option<String>,
    pub restart_policy: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub automount_service_account_token: Option<bool>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    pub security_context: PodSecurity,
    pub containers: Vec<Container>,
    pub volumes: Vec<Volume>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LocalObjectReference {
    pub name: String,
}

/// `key=value:Effect` (operator `Equal`) or `key:Effect` (operator `Exists`), as kubectl
/// writes a taint.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Toleration {
    pub key: String,
    pub operator: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    pub effect: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Affinity {
    pub pod_anti_affinity: PodAntiAffinity,
}

#[derive(Debug, Serialize)]
pub struct PodAntiAffinity {
    #[serde(rename = "preferredDuringSchedulingIgnoredDuringExecution")]
    pub preferred: Vec<WeightedTerm>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WeightedTerm {
    pub weight: u32,
    pub pod_affinity_term: AffinityTerm,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AffinityTerm {
    pub label_selector: LabelSelector,
    pub topology_key: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    pub match_labels: BTreeMap<String, String>,
}

/// The restricted Pod Security Standard's requirements, so that the pods are admitted in
/// namespaces that enforce it.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSecurity {
    pub run_as_non_root: bool,
    pub run_as_user: u32,
    pub run_as_group: u32,
    pub fs_group: u32,
    pub seccomp_profile: Seccomp,
}

#[derive(Debug, Default, Serialize)]
pub struct Seccomp {
    #[serde(rename = "type")]
    pub kind: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    pub name: &'static str,
    pub image: String,
    pub image_pull_policy: &'static str,
    pub command: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<ContainerPort>,
    pub resources: Resources,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readiness_probe: Option<Probe>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub termination_message_policy: Option<&'static str>,
    pub security_context: ContainerSecurity,
    pub volume_mounts: Vec<VolumeMount>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvVar {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_from: Option<EnvSource>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvSource {
    pub secret_key_ref: KeyRef,
}

#[derive(Debug, Serialize)]
pub struct KeyRef {
    pub name: String,
    pub key: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerPort {
    pub name: &'static str,
    pub container_port: u16,
    pub protocol: &'static str,
}

#[derive(Debug, Serialize)]
pub struct Resources {
    pub requests: BTreeMap<&'static str, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub limits: BTreeMap<&'static str, String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Probe {
    pub exec: ExecAction,
    pub period_seconds: u32,
}

#[derive(Debug, Serialize)]
pub struct ExecAction {
    pub command: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerSecurity {
    pub allow_privilege_escalation: bool,
    pub capabilities: Capabilities,
}

#[derive(Debug, Serialize)]
pub struct Capabilities {
    pub drop: Vec<&'static str>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeMount {
    pub name: &'static str,
    pub mount_path: &'static str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
}

#[derive(Debug, Serialize)]
pub struct Volume {
    pub name: &'static str,
    #[serde(flatten)]
    pub source: VolumeSource,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum VolumeSource {
    Projected { sources: Vec<Projection> },
    EmptyDir {},
    PersistentVolumeClaim(Claim),
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Claim {
    pub claim_name: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
}

/// One source of a projected volume. Untagged, with the kind as the field's name: an enum in
/// a list would otherwise be written with a YAML tag (`!configMap`), which Kubernetes rejects.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Projection {
    ConfigMap {
        #[serde(rename = "configMap")]
        config_map: Projected,
    },
    Secret {
        secret: Projected,
    },
}

#[derive(Debug, Serialize)]
pub struct Projected {
    pub name: String,
    pub items: Vec<KeyToPath>,
}

#[derive(Debug, Serialize)]
pub struct KeyToPath {
    pub key: String,
    pub path: String,
    /// Octal modes are written in decimal: 0o440 is 288.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
}

/// The objects as one YAML stream, `---` before each document.
pub fn to_yaml(objects: &[Object]) -> String {
    let mut out = String::new();
    for o in objects {
        out.push_str("---\n");
        out.push_str(&yaml_serde::to_string(o).expect("manifests serialize"));
    }
    out
}
