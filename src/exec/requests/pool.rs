//! The threads a request run's connections live on, for the whole phase, and how a round is
//! handed to them and waited for.

use std::time::Instant;

use super::worker::{Feed, RoundCtl, Worker};

/// The threads that run the connections, as wrk runs them: each thread has a current-thread
/// runtime and its share of the connections, for the whole phase (a socket belongs to the
/// runtime that opened it). A multi-threaded runtime spent more CPU waking its threads for
/// each answer than on the requests themselves.
pub(super) struct Pool {
    threads: Vec<PoolThread>,
}

struct PoolThread {
    tx: std::sync::mpsc::Sender<Cmd>,
    handle: std::thread::JoinHandle<Vec<Worker>>,
}

/// One round for a thread's connections; `done` says it ended.
struct Cmd {
    feed: Feed,
    ctl: RoundCtl,
    done: tokio::sync::oneshot::Sender<()>,
}

impl Pool {
    /// One thread per core at most, and no more threads than connections.
    pub(super) fn start(workers: Vec<Worker>) -> Result<Pool, String> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let n = workers.len().clamp(1, cores);
        let mut groups: Vec<Vec<Worker>> = (0..n).map(|_| Vec::new()).collect();
        for w in workers {
            let at = w.id % n;
            groups[at].push(w);
        }
        let mut threads = Vec::with_capacity(n);
        for (i, group) in groups.into_iter().enumerate() {
            let (tx, rx) = std::sync::mpsc::channel::<Cmd>();
            let handle = std::thread::Builder::new()
                .name(format!("wlrun-req-{i}"))
                .spawn(move || serve(group, rx))
                .map_err(|e| format!("cannot start a request thread: {e}"))?;
            threads.push(PoolThread { tx, handle });
        }
        Ok(Pool { threads })
    }

    /// Runs one round on every connection: returns what it scheduled (open loop: the slots
    /// due in its span; closed loop: its count, if it has one).
    pub(super) async fn round(&self, feed: Feed, end: Option<u64>, ctl: RoundCtl) -> Option<u64> {
        let schedule = match &feed {
            Feed::Slots(s) => Some(s.clone()),
            Feed::Counter { .. } => None,
        };
        let mut dones = Vec::with_capacity(self.threads.len());
        for t in &self.threads {
            let (done, wait) = tokio::sync::oneshot::channel();
            let cmd = Cmd {
                feed: feed.clone(),
                ctl: ctl.clone(),
                done,
            };
            if t.tx.send(cmd).is_ok() {
                dones.push(wait);
            }
        }
        drop(feed);
        let group = ctl.group.clone();
        for d in dones {
            // An error means the thread is gone; its connections are lost with it.
            let _ = d.await;
        }
        // Ended by a group: what was due until its end; a count scheduled what was sent.
        let ended = group.min(Some(Instant::now())).unwrap_or_else(Instant::now);
        match schedule {
            Some(s) => s.lock().ok().map(|s| s.scheduled(ended)),
            None => end.filter(|_| !group.ended()),
        }
    }

    /// Ends the threads and gives the connections back, in order.
    pub(super) fn finish(self) -> Vec<Worker> {
        let mut all = Vec::new();
        for t in self.threads {
            drop(t.tx);
            match t.handle.join() {
                Ok(ws) => all.extend(ws),
                Err(_) => sayln!("wlrun: a request thread failed; its measurements are lost"),
            }
        }
        all.sort_by_key(|w| w.id);
        all
    }
}

/// A pool thread: runs each round it is given on its connections, until the pool ends.
fn serve(mut workers: Vec<Worker>, rx: std::sync::mpsc::Receiver<Cmd>) -> Vec<Worker> {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            sayln!("wlrun: cannot start a runtime for requests: {e}");
            return workers;
        }
    };
    while let Ok(cmd) = rx.recv() {
        workers = rt.block_on(async {
            let handles: Vec<_> = workers
                .into_iter()
                .map(|w| tokio::spawn(super::staged::round(w, cmd.feed.clone(), cmd.ctl.clone())))
                .collect();
            let mut back = Vec::with_capacity(handles.len());
            for h in handles {
                match h.await {
                    Ok(w) => back.push(w),
                    Err(e) => sayln!("wlrun: a request connection failed: {e}"),
                }
            }
            back
        });
        let _ = cmd.done.send(());
    }
    workers
}
