//! `wlrun k8s`: the Kubernetes manifests that run one workload as N shards.
//!
//! wlrun supplies deterministic shards, barriers and an exact merge; Kubernetes schedules,
//! places and restarts. Each shard is a pod of an Indexed Job running `wlrun run` on the same
//! workload: Kubernetes gives it `JOB_COMPLETION_INDEX`, the manifest `WLRUN_SHARDS` and
//! `WLRUN_BARRIER` (shard 0's stable host name through a headless Service). The workload is
//! compiled here first, so a mistake is a diagnostic now and not N failed pods later, and the
//! files it read go with it into a ConfigMap (TLS files and environment values into a Secret).
//!
//! Layers: this sits beside `run` at the top, reading the compiler's output (the checked
//! program's files, the plan) and writing text; nothing below knows of it.

mod api;
mod deadline;
mod files;
mod names;
mod objects;
mod placement;
mod refuse;

use std::io::Write as _;

use crate::cli::{K8sArgs, EXIT_OK, EXIT_USAGE};
use crate::diag::{self, Style};
use crate::{compile, lower};

pub use objects::{Placement, Results, Spec};

/// Prints the manifests on standard output; messages and diagnostics go to standard error.
pub fn command(args: &K8sArgs, style: Style) -> i32 {
    match manifests(args, style) {
        Ok(yaml) => {
            let _ = std::io::stdout().write_all(yaml.as_bytes());
            EXIT_OK
        }
        Err(None) => EXIT_USAGE,
        Err(Some(why)) => {
            sayln!("wlrun k8s: {why}");
            EXIT_USAGE
        }
    }
}

/// `Err(None)`: diagnostics were printed already.
fn manifests(args: &K8sArgs, style: Style) -> Result<String, Option<String>> {
    let name = names::object_name(args.name.as_deref(), &args.file, args.shards)?;
    if let Some(ns) = &args.namespace {
        names::check_label("--namespace", ns)?;
    }
    for (flag, claim) in [
        ("--results-claim", &args.results_claim),
        ("--files-claim", &args.files_claim),
    ] {
        if let Some(c) = claim {
            names::check_label(flag, c)?;
        }
    }
    if args.image.is_empty() || args.image.contains(char::is_whitespace) {
        return Err(Some(format!(
            "--image `{}` is not an image reference",
            args.image
        )));
    }
    names::check_quantity("cpu", &args.cpu)?;
    names::check_quantity("memory", &args.memory)?;
    let memory_limit = args.memory_limit.clone().unwrap_or(args.memory.clone());
    for (flag, limit, request) in [
        ("memory-limit", Some(&memory_limit), &args.memory),
        ("cpu-limit", args.cpu_limit.as_ref(), &args.cpu),
    ] {
        let Some(limit) = limit else { continue };
        names::check_quantity(flag, limit)?;
        // The API refuses a limit under its request; said here, before anything is applied.
        if names::quantity_value(limit) < names::quantity_value(request) {
            return Err(Some(format!(
                "--{flag} {limit} is less than the request ({request}): a limit is at least \
                 what the pod requests"
            )));
        }
    }
    let metrics_port = args.metrics_port.unwrap_or(objects::METRICS_PORT);
    if metrics_port == args.barrier_port {
        return Err(Some(format!(
            "the metrics port and the barrier port are both {metrics_port}: give them different \
             ports (--metrics-port, --barrier-port)"
        )));
    }
    let deadline = args
        .deadline
        .as_deref()
        .map(|d| deadline::parse_duration("--deadline", d))
        .transpose()?;
    let placement = Placement {
        node_selector: placement::node_selector(&args.node_selector)?,
        tolerations: args
            .toleration
            .iter()
            .map(|t| placement::toleration(t))
            .collect::<Result<_, _>>()?,
        image_pull_secrets: args.image_pull_secret.clone(),
        service_account: args.service_account.clone(),
    };
    for s in &placement.image_pull_secrets {
        names::check_subdomain("--image-pull-secret", s)?;
    }
    if let Some(a) = &placement.service_account {
        names::check_subdomain("--service-account", a)?;
    }

    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    let root = files::relative_root(&args.file, &cwd);
    let opts = crate::check::Options {
        params: args.select.params.clone(),
        only: args.select.only.clone(),
        seed: args.select.seed,
        csv_may_be_missing: false,
    };
    let out = compile::check_file(&root, &opts);
    say!("{}", diag::render_all(&out.map, &out.diagnostics, style));
    let checked = out.checked.ok_or(None)?;
    // What `wlrun run --shard` would refuse, refused now with the same diagnostics.
    let refused = lower::shards::refusals(&checked);
    if !refused.is_empty() {
        say!("{}", diag::render_all(&out.map, &refused, style));
        return Err(None);
    }
    let plan = lower::lower(&checked);
    refuse::pod_local(&plan)?;
    let linger = match (&args.results_claim, args.linger) {
        (None, l) => u64::from(l),
        (Some(_), _) => 0,
    };
    let deadline_s = match (deadline, deadline::derive(&plan, linger)) {
        (Some(given), Ok(derived)) if given < derived => {
            sayln!(
                "wlrun k8s: note: --deadline is {}, less than the {} the plan allows for \
                 (docs/scale-out.md): Kubernetes may stop the shards before their run ends",
                deadline::shown(given),
                deadline::shown(derived)
            );
            given
        }
        (Some(given), _) => given,
        (None, Ok(derived)) => derived,
        (None, Err(unbounded)) => {
            return Err(Some(format!(
                "{unbounded}, so the Job's deadline cannot be derived from the plan: pass \
                 --deadline DURATION (e.g. --deadline 2h), the longest the run may take{}",
                if linger > 0 {
                    " with the linger after it"
                } else {
                    ""
                }
            )))
        }
    };
    let files = files::collect(&out.map, &checked, &plan, &root, &cwd)?;

    let mut env = Vec::new();
    for var in files::env_names(&plan) {
        match std::env::var(&var) {
            Ok(value) => env.push((var, value)),
            Err(_) => sayln!(
                "wlrun k8s: note: the workload reads ${var}, which is not set here: the pods get \
                 none (its default applies, or the run stops)"
            ),
        }
    }
    for e in refuse::loopback_endpoints(&plan) {
        sayln!(
            "wlrun k8s: note: endpoint {e} names this machine; in a pod that is the pod itself: \
             point it at the server's address (--param)"
        );
    }
    let mut select_args = Vec::new();
    for p in &args.select.params {
        select_args.extend(["--param".to_string(), p.clone()]);
    }
    for o in &args.select.only {
        select_args.extend(["--only".to_string(), o.clone()]);
    }
    if let Some(s) = args.select.seed {
        select_args.extend(["--seed".to_string(), s.to_string()]);
    }
    let barrier_token = barrier_token()?;
    let spec = Spec {
        barrier_token,
        name,
        namespace: args.namespace.clone(),
        shards: args.shards,
        image: args.image.clone(),
        cpu: args.cpu.clone(),
        memory: args.memory.clone(),
        cpu_limit: args.cpu_limit.clone(),
        memory_limit,
        barrier_port: args.barrier_port,
        deadline_s,
        ttl_s: args.ttl_after_finished,
        placement,
        metrics_port,
        // Live metrics (`--metrics-listen`) where the annotations send Prometheus.
        metrics_listen: true,
        results: match &args.results_claim {
            Some(c) => Results::Claim(c.clone()),
            None => Results::Linger(args.linger),
        },
        files_claim: args.files_claim.clone(),
        select_args,
        env,
    };
    let objects = objects::build(&spec, &files)?;
    summary(&spec, &files);
    sayln!(
        "wlrun k8s: the Job's deadline is {} ({})",
        deadline::shown(spec.deadline_s),
        if deadline.is_some() {
            "--deadline"
        } else {
            "derived from the plan: docs/scale-out.md says how"
        },
    );
    Ok(api::to_yaml(&objects))
}

/// What the manifests carry, on standard error: the YAML goes to kubectl, this to the person.
fn summary(spec: &Spec, files: &files::Files) {
    let carried: Vec<&str> = spec.env.iter().map(|(n, _)| n.as_str()).collect();
    if !carried.is_empty() {
        sayln!(
            "wlrun k8s: the Secret `{}` carries the values of {} from this environment",
            spec.name,
            carried.join(", ")
        );
    }
    match &spec.files_claim {
        Some(claim) => {
            sayln!(
                "wlrun k8s: the claim `{claim}` must hold, mounted at {}:",
                files::MOUNT
            );
            for f in &files.files {
                sayln!("  {} (from {})", f.path, f.shown);
            }
        }
        None => {
            let bytes: u64 = files.files.iter().map(|f| f.bytes.len() as u64).sum();
            sayln!(
                "wlrun k8s: {} shards of `{}`; {} file{} ({} bytes) mounted at {}",
                spec.shards,
                spec.name,
                files.files.len(),
                if files.files.len() == 1 { "" } else { "s" },
                crate::plan::thousands(bytes),
                files::MOUNT
            );
        }
    }
}

/// The barrier's shared secret: `WLRUN_BARRIER_TOKEN` as set here (the shards check it as they
/// start), or 32 random bytes in hex. Known to the masker either way: never printed.
fn barrier_token() -> Result<String, String> {
    let token = match std::env::var("WLRUN_BARRIER_TOKEN") {
        Ok(t) if !t.is_empty() => t,
        _ => {
            let mut bytes = [0u8; 32];
            ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
                .map_err(|_| "no random bytes for a barrier token from the system".to_string())?;
            bytes.iter().map(|b| format!("{b:02x}")).collect()
        }
    };
    crate::secrets::remember(&token);
    Ok(token)
}
