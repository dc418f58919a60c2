//! The side of every shard but 0: it connects to shard 0 (again and again while shard 0 is
//! not up yet, within the timeout), says hello, and at each barrier says it arrived and waits
//! for the release. It answers each release at once, from its reader, so that shard 0 can
//! time the round trip.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, Mutex};
use tokio::task::JoinHandle;

use super::access::Access;
use super::wire::{self, Conn, Msg, Pulse, Reader};
use super::{fmt_secs, Address, Arrival, Release};

/// Between two attempts to reach shard 0.
const RETRY: Duration = Duration::from_millis(200);

type Heard = Result<(Msg, Instant), String>;
type Writer = Arc<Mutex<wire::Writer>>;

pub(super) struct Member {
    timeout: Duration,
    writer: Writer,
    heard: mpsc::UnboundedReceiver<Heard>,
    /// The reader and the heartbeat: ended with the member.
    tasks: [JoinHandle<()>; 2],
    broken: Option<String>,
}

impl Drop for Member {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Member {
    /// Connects to shard 0 at `addr` (retrying while it is not up yet; TLS when the barrier
    /// has it), says hello with the token and waits to be welcomed.
    pub(super) async fn join(
        shard: u64,
        count: u64,
        addr: &Address,
        plan: &str,
        timeout: Duration,
        alarm: Arc<super::Alarm>,
    ) -> Result<Member, String> {
        let (Some(host), Some(to)) = (addr.host.as_deref(), addr.connect()) else {
            return Err(format!(
                "shard {shard} needs to know where shard 0 listens: --barrier HOST:PORT or {}",
                super::BARRIER_VAR
            ));
        };
        let deadline = Instant::now() + timeout;
        let conn = dial(host, &to, &addr.access, deadline, timeout).await?;
        let (lines, mut w) = wire::split(conn);
        let hello = Msg::Hello {
            shard,
            count,
            plan: plan.to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            token: addr.access.token.clone(),
        };
        wire::send(&mut w, &hello)
            .await
            .map_err(|e| format!("cannot say hello to shard 0 at {to}: {e}"))?;
        let writer = Arc::new(Mutex::new(w));
        let (tx, heard) = mpsc::unbounded_channel();
        let pulse = Pulse::of(timeout);
        let reader = tokio::spawn(read_loop(
            lines,
            writer.clone(),
            tx,
            alarm,
            pulse,
            to.clone(),
        ));
        let beat = tokio::spawn(heartbeat(writer.clone(), pulse));
        let mut m = Member {
            timeout,
            writer,
            heard,
            tasks: [reader, beat],
            broken: None,
        };
        loop {
            let heard = m.hear("the start of the run").await;
            match heard {
                Ok(Msg::Welcome { .. }) => return Ok(m),
                Ok(Msg::Alive) => continue,
                Ok(Msg::Refuse { reason }) => {
                    return Err(m.broke(format!("shard 0 at {to} refused this shard: {reason}")))
                }
                Ok(other) => {
                    return Err(m.broke(format!("shard 0 answered the hello with {other:?}")))
                }
                // A barrier under TLS answers a hello in clear with a TLS alert, or closes.
                Err(e) if addr.access.tls.is_none() && !e.starts_with("shard 0 ended") => {
                    return Err(m.broke(format!(
                        "{e} (if shard 0 serves the barrier over TLS, give this shard \
                         --barrier-tls-ca or {})",
                        super::access::TLS_CA_VAR
                    )))
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The next word from shard 0 other than a heartbeat's silence: an abort or a closed
    /// connection is an error, and so is no word at all (not even a heartbeat) for the
    /// timeout.
    async fn hear(&mut self, point: &str) -> Result<Msg, String> {
        if let Some(b) = &self.broken {
            return Err(b.clone());
        }
        // A heartbeat comes every pulse (the reader sees silence mid-phase): this is the
        // backstop for a shard 0 that still beats but never answers.
        let silence = self.timeout.max(Pulse::of(self.timeout).silence);
        match tokio::time::timeout(silence, self.heard.recv()).await {
            Ok(Some(Ok((Msg::Abort { reason }, _)))) => {
                Err(self.broke(format!("shard 0 ended the run: {reason}")))
            }
            Ok(Some(Ok((msg, _)))) => Ok(msg),
            Ok(Some(Err(e))) => Err(self.broke(format!("before `{point}`: {e}"))),
            Ok(None) => Err(self.broke(format!(
                "shard 0 closed the barrier connection before `{point}`: it died or was stopped"
            ))),
            Err(_) => Err(self.broke(format!(
                "no word from shard 0 for {} before `{point}`: it hangs, or the network between the shards failed",
                fmt_secs(silence)
            ))),
        }
    }

    fn broke(&mut self, why: String) -> String {
        self.broken = Some(why.clone());
        why
    }

    /// Barrier `seq`: says this shard arrived, waits for the release.
    pub(super) async fn pass(
        &mut self,
        seq: u64,
        point: &str,
        arrival: Arrival,
    ) -> Result<Release, String> {
        if let Some(b) = &self.broken {
            return Err(b.clone());
        }
        let here = Instant::now();
        let msg = Msg::Arrive {
            seq,
            point: point.to_string(),
            failure: arrival.failure,
            figures: arrival.figures,
        };
        let sent = {
            let mut w = self.writer.lock().await;
            wire::send(&mut *w, &msg).await
        };
        if let Err(e) = sent {
            return Err(self.broke(format!("cannot reach shard 0 at `{point}`: {e}")));
        }
        loop {
            match self.hear(point).await? {
                Msg::Alive => continue,
                Msg::Release {
                    seq: s,
                    refusals,
                    totals,
                    skew,
                } if s == seq => {
                    return Ok(Release {
                        refusals,
                        totals,
                        skew,
                        waited: here.elapsed(),
                    })
                }
                other => {
                    return Err(self.broke(format!(
                        "shard 0 answered barrier {seq} (`{point}`) with {other:?}"
                    )))
                }
            }
        }
    }

    /// This shard stops before the end: shard 0 hears why and tells the others.
    pub(super) async fn leave(&mut self, reason: &str) {
        if self.broken.is_some() {
            return;
        }
        let mut w = self.writer.lock().await;
        let _ = wire::send(
            &mut *w,
            &Msg::Leave {
                reason: reason.to_string(),
            },
        )
        .await;
        self.broken = Some(format!("left: {reason}"));
    }
}

/// A connection to shard 0 at `to`: TCP again and again until shard 0 is up or `deadline`,
/// then the TLS handshake once (a refused certificate does not get better by retrying).
async fn dial(
    host: &str,
    to: &str,
    access: &Access,
    deadline: Instant,
    timeout: Duration,
) -> Result<Conn, String> {
    let connector = super::access::connector(host, access)?;
    let wire = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let err = match connector.tcp(to, left).await {
            Ok(w) => break w,
            Err(e) => e.to_string(),
        };
        if Instant::now() + RETRY >= deadline {
            return Err(format!(
                "could not reach shard 0 at {to} within {}: {err}",
                fmt_secs(timeout)
            ));
        }
        tokio::time::sleep(RETRY).await;
    };
    if !connector.is_tls() {
        return Ok(Box::new(wire));
    }
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(RETRY * 5);
    match connector.handshake(wire, left).await {
        Ok(tls) => Ok(Box::new(tls)),
        Err(e) => Err(format!("no TLS with shard 0 at {to}: {e}")),
    }
}

/// This shard's heartbeat to shard 0, so that shard 0 sees a silent shard mid-phase.
async fn heartbeat(writer: Writer, pulse: Pulse) {
    loop {
        tokio::time::sleep(pulse.every).await;
        let mut w = writer.lock().await;
        if wire::send(&mut *w, &Msg::Alive).await.is_err() {
            return;
        }
    }
}

/// Reads shard 0's lines; a release is answered with `go` before anything else happens, so
/// the round trip shard 0 measures holds no more than the network and this read. An abort,
/// the end of the connection or silence (no line, not even a heartbeat, for the pulse's
/// silence: a partition) rings the alarm first, so a phase under way stops at once.
async fn read_loop(
    mut lines: Reader,
    writer: Writer,
    tx: mpsc::UnboundedSender<Heard>,
    alarm: Arc<super::Alarm>,
    pulse: Pulse,
    to: String,
) {
    loop {
        let Ok(next) = tokio::time::timeout(pulse.silence, lines.next()).await else {
            let why = format!(
                "shard 0 at {to} went silent (nothing from it for {}, not even a heartbeat, sent every {}): \
                 it hangs, or the network between this shard and shard 0 failed",
                fmt_secs(pulse.silence),
                fmt_secs(pulse.every)
            );
            alarm.ring(&why);
            let _ = tx.send(Err(why));
            return;
        };
        match next {
            Ok(Some((msg, at))) => {
                match &msg {
                    Msg::Release { seq, .. } => {
                        let mut w = writer.lock().await;
                        let _ = wire::send(&mut *w, &Msg::Go { seq: *seq }).await;
                    }
                    Msg::Abort { reason } => {
                        alarm.ring(&format!("shard 0 ended the run ({reason})"));
                    }
                    _ => {}
                }
                if tx.send(Ok((msg, at))).is_err() {
                    return;
                }
            }
            Ok(None) => {
                alarm.ring("shard 0 closed the barrier connection (it died or was stopped)");
                return;
            }
            Err(e) => {
                alarm.ring(&format!("the connection to shard 0 failed ({e})"));
                let _ = tx.send(Err(format!("the connection to shard 0 failed: {e}")));
                return;
            }
        }
    }
}
