//! The side of every shard but 0: it connects to shard 0 (again and again while shard 0 is
//! not up yet, within the timeout), says hello, and at each barrier says it arrived and waits
//! for the release. It answers each release at once, from its reader, so that shard 0 can
//! time the round trip.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, Mutex};
use tokio::task::JoinHandle;

use super::lead::HEARTBEAT;
use super::wire::{self, Lines, Msg};
use super::{fmt_secs, Arrival, Release};

/// Between two attempts to reach shard 0.
const RETRY: Duration = Duration::from_millis(200);

type Heard = Result<(Msg, Instant), String>;

pub(super) struct Member {
    timeout: Duration,
    writer: Arc<Mutex<OwnedWriteHalf>>,
    heard: mpsc::UnboundedReceiver<Heard>,
    reader: JoinHandle<()>,
    broken: Option<String>,
}

impl Drop for Member {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Member {
    /// Connects to shard 0 at `addr`, says hello and waits to be welcomed.
    pub(super) async fn join(
        shard: u64,
        count: u64,
        addr: &str,
        plan: &str,
        timeout: Duration,
        alarm: Arc<super::Alarm>,
    ) -> Result<Member, String> {
        let deadline = Instant::now() + timeout;
        let sock = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let err = match tokio::time::timeout(left, TcpStream::connect(addr)).await {
                Ok(Ok(s)) => break s,
                Ok(Err(e)) => e.to_string(),
                Err(_) => "no answer".to_string(),
            };
            if Instant::now() + RETRY >= deadline {
                return Err(format!(
                    "could not reach shard 0 at {addr} within {}: {err}",
                    fmt_secs(timeout)
                ));
            }
            tokio::time::sleep(RETRY).await;
        };
        let _ = sock.set_nodelay(true);
        let (r, mut w) = sock.into_split();
        let hello = Msg::Hello {
            shard,
            count,
            plan: plan.to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        };
        wire::send(&mut w, &hello)
            .await
            .map_err(|e| format!("cannot say hello to shard 0 at {addr}: {e}"))?;
        let writer = Arc::new(Mutex::new(w));
        let (tx, heard) = mpsc::unbounded_channel();
        let reader = tokio::spawn(read_loop(Lines::new(r), writer.clone(), tx, alarm));
        let mut m = Member {
            timeout,
            writer,
            heard,
            reader,
            broken: None,
        };
        loop {
            match m.hear("the start of the run").await? {
                Msg::Welcome { .. } => return Ok(m),
                Msg::Alive => continue,
                other => return Err(m.broke(format!("shard 0 answered the hello with {other:?}"))),
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
        // A heartbeat comes every second: silence for the timeout (at least a few beats)
        // means shard 0 or the way to it is gone.
        let silence = self.timeout.max(HEARTBEAT * 5);
        match tokio::time::timeout(silence, self.heard.recv()).await {
            Ok(Some(Ok((Msg::Abort { reason }, _)))) => {
                Err(self.broke(format!("shard 0 ended the run: {reason}")))
            }
            Ok(Some(Ok((msg, _)))) => Ok(msg),
            Ok(Some(Err(e))) => Err(self.broke(format!(
                "the connection to shard 0 failed before `{point}`: {e}"
            ))),
            Ok(None) => Err(self.broke(format!(
                "shard 0 closed the barrier connection before `{point}`: it died or was stopped"
            ))),
            Err(_) => Err(self.broke(format!(
                "no word from shard 0 for {} before `{point}` (it sends a heartbeat every second): it hangs, or the network between the shards failed",
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
            wire::send(&mut w, &msg).await
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
            &mut w,
            &Msg::Leave {
                reason: reason.to_string(),
            },
        )
        .await;
        self.broken = Some(format!("left: {reason}"));
    }
}

/// Reads shard 0's lines; a release is answered with `go` before anything else happens, so
/// the round trip shard 0 measures holds no more than the network and this read. An abort or
/// the end of the connection rings the alarm first, so a phase under way stops at once.
async fn read_loop(
    mut lines: Lines<tokio::net::tcp::OwnedReadHalf>,
    writer: Arc<Mutex<OwnedWriteHalf>>,
    tx: mpsc::UnboundedSender<Heard>,
    alarm: Arc<super::Alarm>,
) {
    loop {
        match lines.next().await {
            Ok(Some((msg, at))) => {
                match &msg {
                    Msg::Release { seq, .. } => {
                        let mut w = writer.lock().await;
                        let _ = wire::send(&mut w, &Msg::Go { seq: *seq }).await;
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
                let _ = tx.send(Err(e));
                return;
            }
        }
    }
}
