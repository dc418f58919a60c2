//! Shard 0's side of the barriers: it listens, takes every other shard's hello (refusing one
//! that runs another plan, seed, shard count or wlrun), then at each barrier waits until every
//! shard has arrived and releases them all, or fails the run naming who is missing. It times
//! each release's round trip to estimate how far apart the shards started.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::{mpsc, Mutex};
use tokio::task::JoinHandle;

use super::door::{Door, Entry};
use super::wire::{self, Figures, Msg, Pulse, Reader, Refusal, Skew};
use super::{fmt_secs, shard_list, Address, Arrival, Release};

type Writer = Arc<Mutex<wire::Writer>>;

enum Event {
    /// A new connection let in by the door, with its hello.
    Hello(Entry),
    /// A joined shard's line, and when it was read.
    Msg { shard: u64, msg: Msg, at: Instant },
    /// A joined shard's connection ended (with the read error, if one ended it).
    Closed { shard: u64, why: Option<String> },
    /// Nothing came from a joined shard for the pulse's silence, not even a heartbeat.
    Silent { shard: u64 },
}

/// How a shard that went silent is named; `when`: ` before `cell 1 q: end``, or nothing.
fn silent(shard: u64, when: &str, pulse: Pulse) -> String {
    format!(
        "shard {shard} went silent{when} (nothing from it for {}, not even a heartbeat, sent every {}): \
         it hangs, or the network between it and shard 0 failed",
        fmt_secs(pulse.silence),
        fmt_secs(pulse.every)
    )
}

/// When the last barrier released each shard, and when each said it had read the release.
struct Released {
    seq: u64,
    /// Per shard (index 0 unused): the release written, its `go` read.
    sent: Vec<Option<Instant>>,
    acks: Vec<Option<Instant>>,
    /// When shard 0 itself went on.
    own: Instant,
}

impl Released {
    /// Each shard left the barrier, as seen on shard 0's clock, at the release's write plus
    /// half the round trip to its `go`; the spread is the latest less the earliest of those
    /// and shard 0's own start, and it is wrong by at most half the longest round trip (the
    /// way out and the way back need not take as long). `None` until every `go` is in.
    fn skew(&self) -> Option<Skew> {
        let mut earliest = self.own;
        let mut latest = self.own;
        let mut longest = Duration::ZERO;
        for (sent, ack) in self.sent.iter().zip(&self.acks).skip(1) {
            let (sent, ack) = ((*sent)?, (*ack)?);
            let rtt = ack.saturating_duration_since(sent);
            let left = sent + rtt / 2;
            earliest = earliest.min(left);
            latest = latest.max(left);
            longest = longest.max(rtt);
        }
        Some(Skew {
            spread_ms: latest.duration_since(earliest).as_secs_f64() * 1000.0,
            error_ms: longest.as_secs_f64() * 500.0,
        })
    }
}

pub(super) struct Lead {
    count: u64,
    timeout: Duration,
    /// Index k: shard k's connection (index 0, shard 0 itself, is `None`).
    peers: Vec<Option<Writer>>,
    events: mpsc::UnboundedReceiver<Event>,
    last: Option<Released>,
    broken: Option<String>,
    plan: String,
    /// The listener, readers and heartbeats: ended with the lead.
    tasks: Vec<JoinHandle<()>>,
    alarm: Arc<super::Alarm>,
    pulse: Pulse,
}

impl Drop for Lead {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Lead {
    /// Listens on `addr`'s bind address and waits until the other `count - 1` shards have
    /// come through the door and said hello with the same plan, or `timeout` has passed.
    pub(super) async fn join(
        count: u64,
        addr: &Address,
        plan: &str,
        timeout: Duration,
        alarm: Arc<super::Alarm>,
    ) -> Result<Lead, String> {
        let bind = addr.bind();
        let door = Arc::new(Door::new(&addr.access)?);
        let listener = TcpListener::bind(&bind)
            .await
            .map_err(|e| format!("shard 0 cannot listen on {bind}: {e}"))?;
        let (tx, events) = mpsc::unbounded_channel();
        let (entries, mut entered) = mpsc::unbounded_channel();
        let accept = tokio::spawn(door.clone().accept_loop(listener, entries));
        let forward = {
            let tx = tx.clone();
            tokio::spawn(async move {
                while let Some(e) = entered.recv().await {
                    if tx.send(Event::Hello(e)).is_err() {
                        return;
                    }
                }
            })
        };
        let mut lead = Lead {
            count,
            timeout,
            peers: vec![None; count as usize],
            events,
            last: None,
            broken: None,
            plan: plan.to_string(),
            tasks: vec![accept, forward],
            alarm,
            pulse: Pulse::of(timeout),
        };
        let deadline = Instant::now() + timeout;
        while lead.peers.iter().skip(1).any(Option::is_none) {
            let ev = tokio::select! {
                ev = lead.events.recv() => Some(ev),
                _ = tokio::time::sleep_until(deadline.into()) => None,
            };
            let Some(ev) = ev else {
                let missing: Vec<u64> = (1..count)
                    .filter(|&k| lead.peers[k as usize].is_none())
                    .collect();
                let refused = match door.refused.load(Ordering::Relaxed) {
                    0 => String::new(),
                    1 => "; shard 0 refused 1 connection (said above, with its address)".into(),
                    n => format!(
                        "; shard 0 refused {n} connections (said above, with their addresses)"
                    ),
                };
                let why = format!(
                    "{} of {count} did not join within {} (shard 0 listens on {bind}): \
                     check that {} started and can reach shard 0, with the same token{refused}",
                    shard_list(&missing),
                    fmt_secs(timeout),
                    if missing.len() == 1 { "it" } else { "they" },
                );
                return Err(lead.fail(why).await);
            };
            match ev {
                Some(Event::Hello(Entry {
                    msg,
                    lines,
                    writer,
                    from,
                })) => {
                    if let Err(why) = lead.admit(msg, lines, writer, from, &tx).await {
                        return Err(lead.fail(why).await);
                    }
                }
                Some(Event::Closed { shard, why }) => {
                    let why = format!(
                        "shard {shard} closed its connection before the run began{}",
                        why.map(|w| format!(" ({w})")).unwrap_or_default()
                    );
                    return Err(lead.fail(why).await);
                }
                Some(Event::Silent { shard }) => {
                    let why = silent(shard, " before the run began", lead.pulse);
                    return Err(lead.fail(why).await);
                }
                Some(Event::Msg { shard, msg, .. }) => {
                    let why = match msg {
                        Msg::Leave { reason } => {
                            format!("shard {shard} left before the run began: {reason}")
                        }
                        other => format!("shard {shard} sent {other:?} before the run began"),
                    };
                    return Err(lead.fail(why).await);
                }
                None => return Err(lead.fail("the barrier's listener stopped".into()).await),
            }
        }
        lead.broadcast(&Msg::Welcome { count }).await;
        Ok(lead)
    }

    /// A new connection's hello: the shard joins, or the run fails naming it.
    async fn admit(
        &mut self,
        msg: Msg,
        lines: Reader,
        mut writer: wire::Writer,
        from: std::net::SocketAddr,
        tx: &mpsc::UnboundedSender<Event>,
    ) -> Result<(), String> {
        let Msg::Hello {
            shard,
            count,
            plan,
            version,
            ..
        } = msg
        else {
            return Err(format!("{from} spoke first without a hello: {msg:?}"));
        };
        let mine = env!("CARGO_PKG_VERSION");
        let why = if count != self.count {
            Some(format!(
                "shard {shard} (from {from}) runs with {count} shards, shard 0 with {}: every shard needs the same shard count",
                self.count
            ))
        } else if shard == 0 || shard >= self.count {
            Some(format!(
                "a process at {from} says it is shard {shard} of {count}; shard 0 is this one and the others are 1 to {}",
                self.count - 1
            ))
        } else if self.peers[shard as usize].is_some() {
            Some(format!(
                "two processes say they are shard {shard} (the second from {from}): each shard index runs once"
            ))
        } else if version != mine {
            Some(format!(
                "shard {shard} (from {from}) runs wlrun {version}, shard 0 runs {mine}: the data and request streams are only the same from the same version"
            ))
        } else if plan != self.plan {
            Some(format!(
                "shard {shard} (from {from}) runs another plan ({}) than shard 0 ({}): every shard needs the same workload, --param, --only and --seed",
                short(&plan),
                short(&self.plan)
            ))
        } else {
            None
        };
        if let Some(why) = why {
            // The refused shard hears why before the others do.
            let _ = wire::send(
                &mut writer,
                &Msg::Abort {
                    reason: why.clone(),
                },
            )
            .await;
            return Err(why);
        }
        let writer = Arc::new(Mutex::new(writer));
        self.peers[shard as usize] = Some(writer.clone());
        self.tasks.push(tokio::spawn(read_loop(
            shard,
            lines,
            tx.clone(),
            self.alarm.clone(),
            self.pulse,
        )));
        self.tasks.push(tokio::spawn(heartbeat(writer, self.pulse)));
        Ok(())
    }

    /// Barrier `seq`: waits until every shard has arrived (the first arrival starts the
    /// timeout), then releases them all.
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
        let n = self.count as usize;
        let mut arrived: Vec<Option<(Arrival, Instant)>> = (0..n).map(|_| None).collect();
        arrived[0] = Some((arrival, here));
        while arrived.iter().any(Option::is_none) {
            let first = arrived.iter().flatten().map(|a| a.1).min().unwrap_or(here);
            let deadline = first + self.timeout;
            let ev = tokio::select! {
                ev = self.events.recv() => Some(ev),
                _ = tokio::time::sleep_until(deadline.into()) => None,
            };
            let Some(ev) = ev else {
                let missing: Vec<u64> = (0..self.count)
                    .filter(|&k| arrived[k as usize].is_none())
                    .collect();
                let why = format!(
                    "{} did not reach `{point}` within {} of the first shard that did: {}",
                    shard_list(&missing),
                    fmt_secs(self.timeout),
                    if missing.len() == 1 {
                        "it is late or stuck"
                    } else {
                        "they are late or stuck"
                    }
                );
                return Err(self.fail(why).await);
            };
            match ev {
                Some(Event::Msg { shard, msg, at }) => match msg {
                    Msg::Arrive {
                        seq: s,
                        point: p,
                        failure,
                        figures,
                    } => {
                        if s != seq {
                            let why = format!(
                                "shard {shard} reached barrier {s} (`{p}`) while shard 0 is at barrier {seq} (`{point}`): the shards are not running the same sequence"
                            );
                            return Err(self.fail(why).await);
                        }
                        arrived[shard as usize] = Some((Arrival { failure, figures }, at));
                    }
                    Msg::Go { seq: s } => self.ack(shard, s, at),
                    Msg::Leave { reason } => {
                        let why = format!("shard {shard} left the run before `{point}`: {reason}");
                        return Err(self.fail(why).await);
                    }
                    other => {
                        let why = format!("shard {shard} sent {other:?} at `{point}`");
                        return Err(self.fail(why).await);
                    }
                },
                Some(Event::Closed { shard, why }) => {
                    let why = format!(
                        "shard {shard} closed its connection before `{point}`{}: it died or was killed",
                        why.map(|w| format!(" ({w})")).unwrap_or_default()
                    );
                    return Err(self.fail(why).await);
                }
                Some(Event::Silent { shard }) => {
                    let why = silent(shard, &format!(" before `{point}`"), self.pulse);
                    return Err(self.fail(why).await);
                }
                Some(Event::Hello(Entry {
                    msg, mut writer, ..
                })) => {
                    // Late, or a second process with a taken index: refused, the run goes on.
                    let who = match msg {
                        Msg::Hello { shard, .. } => format!("shard {shard}"),
                        _ => "a process".into(),
                    };
                    let reason = format!("{who} came after the run began; it cannot join midway");
                    sayln!("wlrun: shard 0: {reason}");
                    let _ = wire::send(&mut writer, &Msg::Abort { reason }).await;
                }
                None => return Err(self.fail("the barrier's listener stopped".into()).await),
            }
        }
        let skew = self.last.as_ref().and_then(Released::skew);
        let mut refusals = Vec::new();
        let mut figures = Vec::new();
        for (k, a) in arrived.iter().enumerate() {
            let (a, _) = a.as_ref().expect("every shard arrived");
            if let Some(f) = &a.failure {
                refusals.push(Refusal {
                    shard: k as u64,
                    failure: f.clone(),
                });
            }
            figures.extend(a.figures.as_ref());
        }
        let totals = (figures.len() == n).then(|| Figures::sum(figures));
        let msg = Msg::Release {
            seq,
            refusals: refusals.clone(),
            totals: totals.clone(),
            skew,
        };
        let mut sent = vec![None; n];
        for (k, peer) in self.peers.iter().enumerate() {
            if let Some(w) = peer {
                let mut w = w.lock().await;
                sent[k] = Some(Instant::now());
                // A shard that cannot be written to has gone: its reader reports it next.
                let _ = wire::send(&mut *w, &msg).await;
            }
        }
        let own = Instant::now();
        self.last = Some(Released {
            seq,
            sent,
            acks: vec![None; n],
            own,
        });
        Ok(Release {
            refusals,
            totals,
            skew,
            waited: own.duration_since(here),
        })
    }

    fn ack(&mut self, shard: u64, seq: u64, at: Instant) {
        if let Some(last) = self.last.as_mut().filter(|l| l.seq == seq) {
            if let Some(slot) = last.acks.get_mut(shard as usize) {
                slot.get_or_insert(at);
            }
        }
    }

    /// Shard 0 stops before the end (a signal): every other shard is told why.
    pub(super) async fn leave(&mut self, reason: &str) {
        if self.broken.is_none() {
            let why = format!("shard 0 stopped: {reason}");
            self.fail(why).await;
        }
    }

    /// The run cannot go on: every shard hears why, and every later barrier fails with it.
    async fn fail(&mut self, why: String) -> String {
        self.broadcast(&Msg::Abort {
            reason: why.clone(),
        })
        .await;
        self.broken = Some(why.clone());
        why
    }

    async fn broadcast(&self, msg: &Msg) {
        for w in self.peers.iter().flatten() {
            let mut w = w.lock().await;
            let _ = wire::send(&mut *w, msg).await;
        }
    }
}

/// `sha256:0123456789ab…`: enough of a digest to tell two plans apart in a message.
fn short(plan: &str) -> String {
    match plan.get(..19) {
        Some(s) if plan.len() > 19 => format!("{s}…"),
        _ => plan.to_string(),
    }
}

/// Reads a shard's lines for the barriers; a shard that leaves, whose connection ends or that
/// goes silent (a partition: no line, not even a heartbeat, for the pulse's silence) rings the
/// alarm first, so a phase under way stops at once.
async fn read_loop(
    shard: u64,
    mut lines: Reader,
    tx: mpsc::UnboundedSender<Event>,
    alarm: Arc<super::Alarm>,
    pulse: Pulse,
) {
    loop {
        let Ok(next) = tokio::time::timeout(pulse.silence, lines.next()).await else {
            alarm.ring(&silent(shard, "", pulse));
            let _ = tx.send(Event::Silent { shard });
            return;
        };
        match next {
            Ok(Some((Msg::Alive, _))) => {}
            Ok(Some((msg, at))) => {
                if let Msg::Leave { reason } = &msg {
                    alarm.ring(&format!("shard {shard} left the run ({reason})"));
                }
                if tx.send(Event::Msg { shard, msg, at }).is_err() {
                    return;
                }
            }
            Ok(None) => {
                alarm.ring(&format!(
                    "shard {shard} closed its connection (it died or was killed)"
                ));
                let _ = tx.send(Event::Closed { shard, why: None });
                return;
            }
            Err(e) => {
                alarm.ring(&format!("shard {shard}'s connection failed ({e})"));
                let _ = tx.send(Event::Closed {
                    shard,
                    why: Some(e),
                });
                return;
            }
        }
    }
}

async fn heartbeat(writer: Writer, pulse: Pulse) {
    loop {
        tokio::time::sleep(pulse.every).await;
        let mut w = writer.lock().await;
        if wire::send(&mut *w, &Msg::Alive).await.is_err() {
            return;
        }
    }
}
