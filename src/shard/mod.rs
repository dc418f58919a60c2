//! Shards: one run split over several processes (a Kubernetes Indexed Job's pods, or local
//! processes), each doing a deterministic part of every phase, and the barriers that make them
//! begin and end each phase together.
//!
//! This module knows nothing of phases: it parses which shard a process is (`spec`), and it
//! passes numbered barriers over one TCP connection from each shard to shard 0 with a tiny
//! line-delimited JSON protocol (`wire`; shard 0's side in `lead`, the others' in `member`).
//! What a shard does in a phase is `exec::shards`'s business. docs/language.md, "Shards",
//! describes both for a user.

mod access;
mod door;
mod lead;
mod member;
mod spec;
mod wire;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use access::{
    resolve, Access, Flags, TlsFiles, Token, TLS_CA_VAR, TLS_CERT_VAR, TLS_KEY_VAR, TOKEN_VAR,
};
pub use spec::{
    parse_timeout, Address, Spec, BARRIER_VAR, COUNT_VAR, DEFAULT_PORT, DEFAULT_TIMEOUT, INDEX_VAR,
};
pub use wire::{Figures, Pulse, Refusal, Skew};

/// What a shard brings to a barrier.
#[derive(Clone, Debug, Default)]
pub struct Arrival {
    /// Its phase cannot start, and why: then no shard runs it.
    pub failure: Option<String>,
    /// What it sent in the phase the barrier ends.
    pub figures: Option<Figures>,
}

/// What a shard takes from a barrier.
#[derive(Clone, Debug, Default)]
pub struct Release {
    /// The shards whose phase cannot start (this one included).
    pub refusals: Vec<Refusal>,
    /// Every shard's figures summed, when every shard brought some.
    pub totals: Option<Figures>,
    /// The start skew shard 0 measured at the barrier before this one.
    pub skew: Option<Skew>,
    /// How long this shard waited at the barrier.
    pub waited: Duration,
}

/// Rings when another shard is lost while this one is in the middle of a phase (its
/// connection closed, it left, shard 0 aborted the run): the barrier's readers see it at once,
/// where the phase's end barrier would see it only when the phase ends (a 30-minute phase
/// would go on loading the server for nothing, and fail at its end). Ringing records why and
/// sets the run's stop, so the phase stops sending as on a signal and keeps what it measured;
/// the end barrier then fails naming the lost shard. Between phases it is disarmed: a barrier
/// notices a lost shard itself there.
#[derive(Default)]
pub struct Alarm {
    armed: AtomicBool,
    /// The phase under way, for the message.
    point: Mutex<String>,
    rang: Mutex<Option<String>>,
    stop: Arc<AtomicBool>,
}

impl Alarm {
    /// An alarm that sets `stop` when it rings.
    pub fn new(stop: Arc<AtomicBool>) -> Alarm {
        Alarm {
            stop,
            ..Alarm::default()
        }
    }

    /// The phase `point` is under way: a lost shard now stops it.
    pub fn arm(&self, point: &str) {
        *lock(&self.point) = point.to_string();
        self.armed.store(true, Ordering::SeqCst);
    }

    pub fn disarm(&self) {
        self.armed.store(false, Ordering::SeqCst);
    }

    /// Why it rang, once it has.
    pub fn rang(&self) -> Option<String> {
        lock(&self.rang).clone()
    }

    /// `why` (`shard 2 closed its connection`) stops the phase under way, if one is.
    fn ring(&self, why: &str) {
        if !self.armed.load(Ordering::SeqCst) {
            return;
        }
        let mut rang = lock(&self.rang);
        if rang.is_some() {
            return;
        }
        let point = lock(&self.point).clone();
        let line = format!("during `{point}`, {why}: this shard stopped the phase there");
        sayln!("wlrun: {line}");
        *rang = Some(line);
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// This process's connection to the other shards.
pub struct Barrier(Side);

enum Side {
    Lead(Box<lead::Lead>),
    Member(Box<member::Member>),
    /// A run of one shard: every barrier opens at once.
    Alone,
}

impl Barrier {
    /// Joins the run: shard 0 listens at `addr`'s port and waits for every other shard's
    /// hello; the others connect to `addr` (retrying while shard 0 is not up yet). Within
    /// `timeout`, or the error names who is missing. `plan` is the run's identity
    /// (`identity`): a shard with another is refused. `alarm` rings when a shard is lost in
    /// the middle of a phase.
    pub async fn join(
        spec: Spec,
        addr: &Address,
        plan: &str,
        timeout: Duration,
        alarm: Arc<Alarm>,
    ) -> Result<Barrier, String> {
        if spec.count == 1 {
            return Ok(Barrier(Side::Alone));
        }
        if spec.leads() {
            let lead = lead::Lead::join(spec.count, addr, plan, timeout, alarm).await?;
            return Ok(Barrier(Side::Lead(Box::new(lead))));
        }
        let m = member::Member::join(spec.index, spec.count, addr, plan, timeout, alarm).await?;
        Ok(Barrier(Side::Member(Box::new(m))))
    }

    /// Barrier number `seq` (every shard passes the same barriers in the same order),
    /// described by `point` in messages. An error means the run cannot go on: a shard is
    /// missing, died or runs something else; every later barrier fails with the same error.
    pub async fn pass(
        &mut self,
        seq: u64,
        point: &str,
        arrival: Arrival,
    ) -> Result<Release, String> {
        match &mut self.0 {
            Side::Lead(l) => l.pass(seq, point, arrival).await,
            Side::Member(m) => m.pass(seq, point, arrival).await,
            Side::Alone => Ok(Release {
                refusals: arrival
                    .failure
                    .map(|failure| Refusal { shard: 0, failure })
                    .into_iter()
                    .collect(),
                totals: arrival.figures,
                skew: None,
                waited: Duration::ZERO,
            }),
        }
    }

    /// This shard stops before the end of the run (`reason`: the signal): the others are
    /// told, and fail at their next barrier naming it.
    pub async fn leave(&mut self, reason: &str) {
        match &mut self.0 {
            Side::Lead(l) => l.leave(reason).await,
            Side::Member(m) => m.leave(reason).await,
            Side::Alone => {}
        }
    }
}

/// The identity every shard must share: a SHA-256 of the plan as JSON (every cell's resolved
/// params and phases, the seed) with the workload's path left out, since each machine may
/// keep the file elsewhere.
pub fn identity(plan_json: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, plan_json);
    let mut out = String::from("sha256:");
    for b in digest.as_ref() {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The identity of a plan: `identity` of the plan as JSON without the workload's path (each
/// machine may keep the file elsewhere). Every shard of a run shares it, and report.json
/// carries it (`plan`), so that `wlrun compare` knows whether two runs ran the same plan.
pub fn plan_identity(plan: &crate::plan::Plan) -> String {
    let mut p = plan.clone();
    p.workload.file = String::new();
    identity(&serde_json::to_vec(&p).expect("plan serializes"))
}

/// `120 s`, `1.5 s`.
fn fmt_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

/// `shard 2`, `shards 1, 3 and 4`.
fn shard_list(shards: &[u64]) -> String {
    let names: Vec<String> = shards.iter().map(u64::to_string).collect();
    match names.as_slice() {
        [] => "no shard".into(),
        [one] => format!("shard {one}"),
        [rest @ .., last] => format!("shards {} and {last}", rest.join(", ")),
    }
}

/// The environment `vars` as a lookup, for the tests of what reads variables.
#[cfg(test)]
fn test_env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |name| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    }
}

#[cfg(test)]
mod tests;
