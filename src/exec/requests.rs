//! A request run: wrk's model — N connections, each sending a request, reading the whole
//! answer and sending the next — measured as the query runner measures. Each request is the
//! run's fixed request or is built by a Rhai hook (`hook::HookWorker`), then judged: a status
//! outside `expect status` (2xx by default), a body failing `expect body`, or a response hook
//! saying so makes it an error, and errors are never throughput.
//!
//! Request numbering: in closed loop the connections take the next index from one counter; in
//! open loop a free connection takes the next slot of the round's computed schedule
//! (`slots::Schedule`), connects if it must, waits precisely until the slot's time
//! (`pace::Pacer`) and sends; latency counts from that time, and nothing is dropped or queued.
//! Either way a hook sees the index and an offset from the start of the round, never the wall
//! clock, so the same seed builds the same requests. Every scheduled request ends as ok,
//! failed, cut off or unsent (`account`).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::account::{Cutoff, Sends};
use super::judge::{self, failed_thresholds, Units};
use super::link::Link;
use super::pace::Pacer;
use super::progress::RunCounts;
use super::require::requirements;
use super::slots::Schedule;
use super::spans;
use super::{resolve_url, timeouts, RunEnv};
use crate::hook::{Built, HookWorker, ResponseView, Script, Verdict, WorkerSpec};
use crate::net::http::{server_message, HttpUrl};
use crate::net::http1;
use crate::plan::{BodyExpect, RequestPhase, RequestPlan, Stop, Threshold};
use crate::query::schedule::{Arrivals, WARMUP_BASE};
use crate::query::stats::TypeStats;
use crate::query::transport::{from_driver, Transport};
use crate::query::{Instance, QueryError, QueryErrorClass};
use crate::report::{RequestOutput, RequestReport, SecondReport, Status};
use crate::value::Value;
use bytes::Bytes;
use hyper::{HeaderMap, Method};
use indexmap::IndexMap;

/// What every connection of the run shares.
struct Shared {
    phase: RequestPhase,
    url: String,
    base_dir: Arc<Path>,
    /// HTTP endpoints: where requests go and the headers every request carries.
    target: Option<http1::Target>,
    source: Source,
    statuses: StatusSet,
    seed: u64,
}

enum Source {
    /// The fixed request, rendered once; `bool`: it is a HEAD.
    Fixed(Vec<u8>, bool),
    Hook {
        script: Script,
        hook: String,
        function: String,
        response: bool,
    },
}

/// `expect status`: the codes that count as success (any 2xx without one).
struct StatusSet {
    ranges: Vec<(u16, u16)>,
}

impl StatusSet {
    fn of(expects: &[Threshold]) -> StatusSet {
        let mut ranges = Vec::new();
        for t in expects.iter().filter(|t| t.metric == "status") {
            match &t.value {
                Value::List(codes) => {
                    for c in codes {
                        if let Value::Int(c) = c {
                            ranges.push((*c as u16, *c as u16 + 1));
                        }
                    }
                }
                Value::Range(lo, hi) => ranges.push((*lo as u16, *hi as u16)),
                _ => {}
            }
        }
        if ranges.is_empty() {
            ranges.push((200, 300));
        }
        StatusSet { ranges }
    }

    fn accepts(&self, code: u16) -> bool {
        self.ranges.iter().any(|&(lo, hi)| lo <= code && code < hi)
    }
}

/// Why a body fails the first `expect body` check it fails, if it does.
fn body_failure(checks: &[BodyExpect], body: &[u8]) -> Option<String> {
    for check in checks {
        let first = body.iter().find(|b| !b.is_ascii_whitespace()).copied();
        let ok = match check {
            BodyExpect::Json => serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok(),
            BodyExpect::JsonArray => {
                first == Some(b'[') && serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok()
            }
            BodyExpect::JsonObject => {
                first == Some(b'{') && serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok()
            }
            BodyExpect::Contains(text) => {
                let needle = text.as_bytes();
                body.windows(needle.len()).any(|w| w == needle)
            }
        };
        if !ok {
            return Some(format!(
                "the answer fails `expect {check}`: {}",
                server_message(body)
            ));
        }
    }
    None
}

enum Conn {
    Http(http1::Conn),
    Sql(Box<Transport>),
}

/// An answer read completely.
struct Answer {
    /// 0 for SQL endpoints.
    status: u16,
    headers: Option<HeaderMap>,
    body: Bytes,
    rows: u64,
    sent_bytes: u64,
}

/// One connection and what it measured.
struct Worker {
    id: usize,
    shared: Arc<Shared>,
    link: Link<Conn>,
    /// Idle connections the server closed, reopened (counted when a connection is let go).
    reopened: u64,
    hook: Option<HookWorker>,
    /// A hook's request, rendered: reused, so a request costs no allocation of its own.
    out: Vec<u8>,
    stats: TypeStats,
    /// (status, count): a handful of codes, so a linear scan beats a map.
    statuses: Vec<(u16, u64)>,
    /// Per second of the measured rounds: [ok, failed].
    per_second: Vec<[u64; 2]>,
    bytes_sent: u64,
    bytes_received: u64,
    measured: u64,
    pacer: Pacer,
    sends: Sends,
    /// A hook that failed or broke a sandbox limit: the cell fails with this.
    fatal: Option<String>,
}

/// Where a round's request indices come from.
#[derive(Clone)]
enum Feed {
    /// Closed loop: the next index of a shared counter, up to `end` (exclusive) if set.
    Counter {
        next: Arc<AtomicU64>,
        base: u64,
        end: Option<u64>,
    },
    /// Open loop: the next slot of the round's schedule.
    Slots(Arc<std::sync::Mutex<Schedule>>),
}

/// What bounds a round and what it records.
#[derive(Clone)]
struct RoundCtl {
    start: Instant,
    /// No request starts at or after this.
    end: Option<Instant>,
    cutoff: Cutoff,
    stop: Arc<AtomicBool>,
    /// Set by a connection whose hook failed: every connection stops.
    abort: Arc<AtomicBool>,
    record: bool,
    /// Seconds of earlier measured rounds, so that the per-second series runs on.
    second_base: u64,
    counts: Arc<RunCounts>,
    /// `stop after N errors` (or `--fail-fast`): at the N-th failed request `limited` and
    /// `abort` are set, and every connection stops sending.
    max_errors: Option<u64>,
    limited: Arc<AtomicBool>,
}

impl Worker {
    /// The connection (opened now if needed): a free function of the fields it needs, so
    /// that a caller can hold `shared` alongside it without cloning the `Arc` per request.
    async fn connection<'a>(
        link: &'a mut Link<Conn>,
        shared: &Shared,
    ) -> Result<&'a mut Conn, QueryError> {
        link.get(|| async {
            match &shared.target {
                Some(t) => http1::Conn::connect(t)
                    .await
                    .map(Conn::Http)
                    .map_err(from_driver),
                None => Transport::connect(&shared.phase.endpoint, &shared.url, &shared.base_dir)
                    .await
                    .map(|t| Conn::Sql(Box::new(t))),
            }
        })
        .await
    }

    /// Sends one request: an HTTP request is written and its answer left to `finish`; a SQL
    /// request runs to its last row here.
    async fn start(&mut self, index: u64, built: Option<Built>) -> InFlight {
        let shared = &*self.shared;
        // A hook's HTTP request is rendered before connecting: a bad one is the hook's error.
        let head = match &built {
            Some(Built::Http(r)) => {
                let Some(t) = &shared.target else {
                    return InFlight::Done(Err(wrong_shape(shared)));
                };
                if let Err(e) = t.render(&mut self.out, &r.method, &r.path, &r.headers, &r.body) {
                    return InFlight::Done(Err(QueryError {
                        class: QueryErrorClass::Client,
                        message: format!("the hook's request: {e}"),
                        code: None,
                        broken: false,
                    }));
                }
                r.method == Method::HEAD
            }
            _ => false,
        };
        let out = &self.out;
        let flight = match Self::connection(&mut self.link, shared).await {
            Err(e) => InFlight::Done(Err(e)),
            Ok(conn) => match (conn, built, &shared.target, &shared.source) {
                (Conn::Http(c), None, Some(t), Source::Fixed(bytes, is_head)) => {
                    match c.send(t, bytes).await {
                        Ok(deadline) => InFlight::Http {
                            deadline,
                            head: *is_head,
                            len: bytes.len() as u64,
                        },
                        Err(e) => InFlight::Done(Err(broken(e))),
                    }
                }
                (Conn::Http(c), Some(Built::Http(_)), Some(t), _) => match c.send(t, out).await {
                    Ok(deadline) => InFlight::Http {
                        deadline,
                        head,
                        len: out.len() as u64,
                    },
                    Err(e) => InFlight::Done(Err(broken(e))),
                },
                (Conn::Sql(t), Some(Built::Sql { sql, binds }), _, _) => {
                    let inst = Instance {
                        query: 0,
                        index,
                        sql: sql.into(),
                        binds,
                        route: None,
                    };
                    InFlight::Done(t.run(&inst).await.map(|out| Answer {
                        status: 0,
                        headers: None,
                        body: Bytes::new(),
                        rows: out.rows,
                        sent_bytes: 0,
                    }))
                }
                _ => InFlight::Done(Err(wrong_shape(shared))),
            },
        };
        self.out.clear();
        if let InFlight::Done(Err(e)) = &flight {
            self.drop_if_broken(e);
        }
        flight
    }

    /// Reads the answer of a request `start` wrote.
    async fn finish(&mut self, flight: InFlight) -> Result<Answer, QueryError> {
        let (deadline, head, len) = match flight {
            InFlight::Http {
                deadline,
                head,
                len,
            } => (deadline, head, len),
            InFlight::Done(r) => return r,
        };
        let shared = &*self.shared;
        let want_headers = matches!(shared.source, Source::Hook { response: true, .. });
        let result = match (&mut self.link.conn, &shared.target) {
            (Some(Conn::Http(c)), Some(t)) => c
                .receive(t, deadline, head, want_headers)
                .await
                .map(|a| Answer {
                    status: a.status,
                    headers: a.headers,
                    body: a.body,
                    rows: 0,
                    sent_bytes: len,
                })
                .map_err(broken),
            _ => Err(wrong_shape(shared)),
        };
        if let Err(e) = &result {
            self.drop_if_broken(e);
        }
        result
    }

    fn drop_if_broken(&mut self, e: &QueryError) {
        if e.broken {
            if let Some(Conn::Http(c)) = self.link.conn.take() {
                self.reopened += c.reopened;
            }
        }
    }

    /// The next request's index, and its intended send time in open loop; `None` ends the
    /// round.
    async fn next_index(feed: &Feed, stop: &AtomicBool) -> Option<(u64, Option<Instant>)> {
        match feed {
            Feed::Counter { next, base, end } => {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if end.is_some_and(|e| i >= e) {
                    return None;
                }
                Some((base + i, None))
            }
            Feed::Slots(schedule) => {
                let mut schedule = schedule.lock().ok()?;
                if stop.load(Ordering::Relaxed) {
                    schedule.close(Instant::now());
                    return None;
                }
                schedule.take().map(|slot| (slot.index, Some(slot.at)))
            }
        }
    }

    /// Judges an answer: the status, the body checks, then the response hook.
    fn judge_answer(
        &mut self,
        a: &Answer,
        took: Duration,
    ) -> Result<Result<(), QueryError>, String> {
        let shared = &self.shared;
        let mut verdict = Ok(());
        if shared.phase.endpoint.kind == "http" {
            if !shared.statuses.accepts(a.status) {
                verdict = Err(QueryError {
                    class: QueryErrorClass::HttpStatus,
                    message: format!("HTTP {}: {}", a.status, server_message(&a.body)),
                    code: Some(a.status.to_string()),
                    broken: false,
                });
            } else if let Some(why) = body_failure(&shared.phase.body, &a.body) {
                verdict = Err(QueryError {
                    class: QueryErrorClass::Body,
                    message: why,
                    code: None,
                    broken: false,
                });
            }
        }
        let wants_response = matches!(shared.source, Source::Hook { response: true, .. });
        if let (true, Some(hook)) = (wants_response, self.hook.as_mut()) {
            let view = ResponseView {
                status: a.status,
                headers: a.headers.as_ref(),
                body: &a.body,
                rows: a.rows,
                latency: took,
            };
            match hook.response(&view) {
                Ok(Verdict::Ok) => {}
                Ok(Verdict::Error(why)) => {
                    if verdict.is_ok() {
                        verdict = Err(QueryError {
                            class: QueryErrorClass::Hook,
                            message: why,
                            code: None,
                            broken: false,
                        });
                    }
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(verdict)
    }

    async fn round(mut self, feed: Feed, ctl: RoundCtl) -> Worker {
        // Closed loop with a hook that has no response(): the next request is built while the
        // server answers this one, as the calls' order stays request(i), request(i + 1), ...
        // (with a response hook, response(i) must come before request(i + 1)).
        let build_ahead = matches!(feed, Feed::Counter { .. })
            && matches!(
                self.shared.source,
                Source::Hook {
                    response: false,
                    ..
                }
            );
        let mut ahead: Option<(u64, Built)> = None;
        loop {
            let (index, intended, prebuilt) = match ahead.take() {
                Some((i, b)) => (i, None, Some(b)),
                None => match Self::next_index(&feed, &ctl.stop).await {
                    Some((i, at)) => (i, at, None),
                    None => break,
                },
            };
            let now = Instant::now();
            if ctl.stop.load(Ordering::Relaxed)
                || ctl.abort.load(Ordering::Relaxed)
                || ctl.end.is_some_and(|d| now >= d)
            {
                break;
            }
            let built = match (prebuilt, &self.shared.source, self.hook.as_mut()) {
                (Some(b), _, _) => Some(b),
                (None, Source::Hook { function, .. }, Some(hook)) => {
                    let offset = intended.unwrap_or(now).saturating_duration_since(ctl.start);
                    match hook.request(function, index, offset) {
                        Ok(b) => Some(b),
                        Err(e) => {
                            self.fail(e.to_string(), &ctl);
                            break;
                        }
                    }
                }
                _ => None,
            };
            // Open loop: connected before the wait (a failed connect is this request's error,
            // met in `start`), so that the request itself leaves on time.
            if let Some(at) = intended {
                if self.link.conn.is_none() {
                    let connect = Self::connection(&mut self.link, &self.shared);
                    if ctl.cutoff.bound(connect).await.is_none() {
                        break;
                    }
                }
                if !self.pacer.until(at, &ctl.stop).await {
                    break;
                }
                if ctl.end.is_some_and(|d| Instant::now() >= d) || ctl.abort.load(Ordering::Relaxed)
                {
                    break;
                }
            }
            let sent = Instant::now();
            if ctl.record {
                self.sends.start(sent, intended);
            }
            let Some(flight) = ctl.cutoff.bound(self.start(index, built)).await else {
                self.cut_off(&ctl);
                break;
            };
            let mut failed_ahead = None;
            if build_ahead && matches!(flight, InFlight::Http { .. }) {
                if let (Some((i, _)), Source::Hook { function, .. }, Some(hook)) = (
                    Self::next_index(&feed, &ctl.stop).await,
                    &self.shared.source,
                    self.hook.as_mut(),
                ) {
                    let offset = Instant::now().saturating_duration_since(ctl.start);
                    match hook.request(function, i, offset) {
                        Ok(b) => ahead = Some((i, b)),
                        Err(e) => failed_ahead = Some(e.to_string()),
                    }
                }
            }
            let Some(result) = ctl.cutoff.bound(self.finish(flight)).await else {
                self.cut_off(&ctl);
                break;
            };
            let done = Instant::now();
            let result = match result {
                Ok(answer) => {
                    if answer.status != 0 {
                        match self.statuses.iter_mut().find(|(c, _)| *c == answer.status) {
                            Some((_, n)) => *n += 1,
                            None => self.statuses.push((answer.status, 1)),
                        }
                    }
                    self.bytes_sent += answer.sent_bytes;
                    self.bytes_received += answer.body.len() as u64;
                    match self.judge_answer(&answer, done - sent) {
                        Ok(v) => v.map(|()| answer.rows),
                        Err(e) => {
                            self.fail(e, &ctl);
                            break;
                        }
                    }
                }
                Err(e) => Err(e),
            };
            if !ctl.record {
                if let Some(e) = failed_ahead {
                    self.fail(e, &ctl);
                    break;
                }
                continue;
            }
            self.measured += 1;
            let second = ctl.second_base + done.saturating_duration_since(ctl.start).as_secs();
            let second = second as usize;
            if self.per_second.len() <= second {
                self.per_second.resize(second + 1, [0, 0]);
            }
            match result {
                Ok(rows) => {
                    let from = intended.unwrap_or(sent);
                    let service = intended.map(|_| done - sent);
                    self.stats
                        .record_ok(done.saturating_duration_since(from), service, rows);
                    self.per_second[second][0] += 1;
                    ctl.counts.ok.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    self.stats.record_error(&e);
                    self.per_second[second][1] += 1;
                    let failed = ctl.counts.failed.fetch_add(1, Ordering::Relaxed) + 1;
                    if ctl.max_errors.is_some_and(|n| failed >= n) {
                        ctl.limited.store(true, Ordering::Relaxed);
                        ctl.abort.store(true, Ordering::Relaxed);
                    }
                }
            }
            if let Some(e) = failed_ahead {
                self.fail(e, &ctl);
                break;
            }
        }
        self
    }

    /// The phase ended with this request in flight: counted, and its connection (in an unknown
    /// state) is not used again.
    fn cut_off(&mut self, ctl: &RoundCtl) {
        if let Some(Conn::Http(c)) = self.link.conn.take() {
            self.reopened += c.reopened;
        }
        if ctl.record {
            self.sends.cut_off += 1;
        }
    }

    fn fail(&mut self, why: String, ctl: &RoundCtl) {
        self.fatal.get_or_insert(why);
        ctl.abort.store(true, Ordering::Relaxed);
    }
}

fn wrong_shape(shared: &Shared) -> QueryError {
    let ep = &shared.phase.endpoint;
    QueryError {
        class: QueryErrorClass::Client,
        message: if ep.kind == "http" {
            format!(
                "the hook returned #{{sql, binds}}, but endpoint {}.{} is `http`: return #{{method, path, headers, body}}",
                ep.target, ep.name
            )
        } else {
            format!(
                "endpoint {}.{} is `{}`: the hook must return #{{sql, binds}}",
                ep.target, ep.name, ep.kind
            )
        },
        code: None,
        broken: false,
    }
}

/// A request on its way.
enum InFlight {
    /// Written; its answer is due by `deadline`. `len`: the request's bytes.
    Http {
        deadline: Instant,
        head: bool,
        len: u64,
    },
    /// Answered already (SQL), or failed before it was written.
    Done(Result<Answer, QueryError>),
}

/// A failure after any of the request may have reached the server: the connection is never
/// used again.
fn broken(e: crate::net::error::DriverError) -> QueryError {
    let mut e = from_driver(e);
    e.broken = true;
    e
}

/// The threads that run the connections, as wrk runs them: each thread has a current-thread
/// runtime and its share of the connections, for the whole phase (a socket belongs to the
/// runtime that opened it). A multi-threaded runtime spent more CPU waking its threads for
/// each answer than on the requests themselves.
struct Pool {
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
    fn start(workers: Vec<Worker>) -> Result<Pool, String> {
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
    async fn round(&self, feed: Feed, end: Option<u64>, ctl: RoundCtl) -> Option<u64> {
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
        for d in dones {
            // An error means the thread is gone; its connections are lost with it.
            let _ = d.await;
        }
        match schedule {
            Some(s) => s.lock().ok().map(|s| s.scheduled(Instant::now())),
            None => end,
        }
    }

    /// Ends the threads and gives the connections back, in order.
    fn finish(self) -> Vec<Worker> {
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
                .map(|w| tokio::spawn(w.round(cmd.feed.clone(), cmd.ctl.clone())))
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

fn refused(phase: &RequestPhase, why: String) -> RequestReport {
    let mut r = RequestReport::empty(phase);
    r.status = Status::Failed;
    r.failures.push(why);
    r
}

/// Where an `http` endpoint's requests go, and the headers each carries.
fn http_target(phase: &RequestPhase, url: &str) -> Result<http1::Target, String> {
    let ep = &phase.endpoint;
    if crate::net::http::option_flag(ep, "tls").map_err(|e| e.message)? {
        return Err(format!(
            "endpoint {}.{}: `tls true` is not supported yet: wlrun speaks plain HTTP only",
            ep.target, ep.name
        ));
    }
    let parsed =
        HttpUrl::parse(url).map_err(|e| format!("endpoint {}.{}: {e}", ep.target, ep.name))?;
    let headers = crate::net::http::endpoint_headers(ep, &parsed).map_err(|e| e.message)?;
    let (timeout, connect_timeout) = timeouts(ep);
    Ok(http1::Target {
        name: format!("{}.{} ({})", ep.target, ep.name, parsed.display()),
        url: parsed,
        headers,
        connect_timeout,
        timeout,
    })
}

pub async fn run(
    env: &RunEnv,
    label: &str,
    phase: &RequestPhase,
    params: &IndexMap<String, Value>,
) -> RequestReport {
    let url = match phase.endpoint.url.as_ref().map(resolve_url) {
        Some(Ok(u)) => u,
        Some(Err(e)) => return refused(phase, e),
        None => String::new(),
    };
    let target = if phase.endpoint.kind == "http" {
        match http_target(phase, &url) {
            Ok(t) => Some(t),
            Err(e) => return refused(phase, e),
        }
    } else {
        None
    };
    let source = match (&phase.request, &target) {
        (RequestPlan::Fixed { method, path, body }, Some(t)) => {
            let Ok(m) = Method::from_bytes(method.as_bytes()) else {
                return refused(phase, format!("`{method}` is not an HTTP method"));
            };
            let mut bytes = Vec::new();
            let body = body.as_deref().unwrap_or("").as_bytes();
            if let Err(e) = t.render(&mut bytes, &m, path, &HeaderMap::new(), body) {
                return refused(phase, e);
            }
            Source::Fixed(bytes, m == Method::HEAD)
        }
        (RequestPlan::Fixed { .. }, None) => {
            return refused(phase, "a fixed request needs an `http` endpoint".into())
        }
        (
            RequestPlan::Hook {
                hook,
                function,
                response,
            },
            _,
        ) => match Script::compile(&hook.file, &hook.source) {
            Ok(script) => Source::Hook {
                script,
                hook: hook.name.clone(),
                function: function.clone(),
                response: *response,
            },
            Err(e) => return refused(phase, format!("hook `{}`: {e}", hook.name)),
        },
    };
    if let Err(e) = requirements(env, &phase.require, &phase.endpoint, &url).await {
        return refused(phase, e);
    }
    let shared = Arc::new(Shared {
        phase: phase.clone(),
        url,
        base_dir: env.base_dir.clone().into(),
        target,
        source,
        statuses: StatusSet::of(&phase.expects),
        seed: env.seed,
    });
    let n = phase.workers.max(1) as usize;
    let mut workers = Vec::with_capacity(n);
    for id in 0..n {
        let hook = match &shared.source {
            Source::Hook { script, hook, .. } => {
                let spec = WorkerSpec {
                    seed: shared.seed,
                    hook: hook.clone(),
                    worker: id as u64,
                    workers: n as u64,
                    params: params.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                };
                match script.worker(spec) {
                    Ok(h) => Some(h),
                    Err(e) => return refused(phase, e.to_string()),
                }
            }
            Source::Fixed(..) => None,
        };
        workers.push(Worker {
            id,
            shared: shared.clone(),
            link: Link::default(),
            reopened: 0,
            hook,
            out: Vec::new(),
            stats: TypeStats::default(),
            statuses: Vec::new(),
            per_second: Vec::new(),
            bytes_sent: 0,
            bytes_received: 0,
            measured: 0,
            pacer: Pacer::default(),
            sends: Sends::default(),
            fatal: None,
        });
    }

    let counts = Arc::new(RunCounts::default());
    let count = match phase.stop {
        Stop::Count { count, .. } => Some(count),
        Stop::Duration { .. } => None,
    };
    let measured_for = spans::measured(&phase.stop);
    let ticker = super::progress::start_run(
        env,
        label.to_string(),
        count.map(|c| c * phase.repeat.max(1)),
        "requests",
        counts.clone(),
    );
    let mut report = RequestReport::empty(phase);
    let pool = match Pool::start(workers) {
        Ok(p) => p,
        Err(e) => {
            ticker.finish().await;
            return refused(phase, e);
        }
    };
    let abort = Arc::new(AtomicBool::new(false));
    let max_errors = super::max_errors(env, phase.stop_after_errors);
    let limited = Arc::new(AtomicBool::new(false));
    let (warm_count, warm_time) = spans::warmup(&phase.warmup);
    let mut second_base = 0u64;
    // A measured round from `start` until `end`; a warm-up is one that records nothing.
    let measured = |start: Instant, end: Option<Instant>, second_base: u64| RoundCtl {
        start,
        end,
        cutoff: Cutoff::after(end, env.stop.clone()),
        stop: env.stop.clone(),
        abort: abort.clone(),
        record: true,
        second_base,
        counts: counts.clone(),
        max_errors,
        limited: limited.clone(),
    };
    // `None` once a round had no count to schedule by (closed loop, timed): then what was
    // scheduled is what was sent.
    let mut scheduled = Some(0u64);
    for rep in 0..phase.repeat.max(1) {
        if env.stop.load(Ordering::Relaxed) || abort.load(Ordering::Relaxed) {
            break;
        }
        if warm_count.is_some() || warm_time.is_some() {
            counts.warmup.store(true, Ordering::Relaxed);
            let start = Instant::now();
            let end = warm_time.map(|d| start + d);
            let ctl = RoundCtl {
                record: false,
                max_errors: None,
                ..measured(start, end, second_base)
            };
            // Warm-up requests have indices of their own: they never repeat measured ones.
            let feed = Feed::Counter {
                next: Arc::new(AtomicU64::new(0)),
                base: WARMUP_BASE,
                end: warm_count,
            };
            pool.round(feed, warm_count, ctl).await;
            counts.warmup.store(false, Ordering::Relaxed);
            if abort.load(Ordering::Relaxed) {
                break;
            }
        }
        let start = Instant::now();
        let schedule = Arrivals::new(&phase.load, env.seed)
            .map(|a| Schedule::new(a, start, measured_for, count));
        let end = match &schedule {
            Some(s) => s.end(),
            None => measured_for.map(|d| start + d),
        };
        let ctl = measured(start, end, second_base);
        let answered =
            |l: &RunCounts| l.ok.load(Ordering::Relaxed) + l.failed.load(Ordering::Relaxed);
        let before = answered(&counts);
        let cpu_before = super::cpu::process_cpu_seconds();
        let feed = match schedule {
            Some(s) => Feed::Slots(Arc::new(std::sync::Mutex::new(s))),
            None => Feed::Counter {
                next: Arc::new(AtomicU64::new(0)),
                base: 0,
                end: count,
            },
        };
        let round_scheduled = pool.round(feed, count, ctl).await;
        let elapsed = start.elapsed();
        let requests = answered(&counts) - before;
        judge::repeat(&mut report, rep + 1, requests, elapsed, cpu_before);
        scheduled = scheduled.zip(round_scheduled).map(|(a, b)| a + b);
        second_base += elapsed.as_secs_f64().ceil() as u64;
    }
    let workers = pool.finish();
    ticker.finish().await;
    let limited = limited.load(Ordering::Relaxed);
    judge::stopped(&mut report, limited, max_errors, Units::REQUESTS);
    finish(&mut report, phase, workers, scheduled, env);
    report
}

/// Merges the connections' measurements and judges the run.
fn finish(
    report: &mut RequestReport,
    phase: &RequestPhase,
    workers: Vec<Worker>,
    scheduled: Option<u64>,
    env: &RunEnv,
) {
    let mut all = TypeStats::default();
    let mut sends = Sends::default();
    let mut per_second: Vec<[u64; 2]> = Vec::new();
    let mut per_worker = vec![0; workers.len()];
    for w in &workers {
        all.merge(&w.stats);
        sends.merge(&w.sends);
        for (code, n) in &w.statuses {
            *report.traffic.statuses.entry(*code).or_default() += n;
        }
        if let Some(h) = &w.hook {
            for (k, v) in h.counters() {
                *report.traffic.counters.entry(k).or_default() += v;
            }
        }
        if per_second.len() < w.per_second.len() {
            per_second.resize(w.per_second.len(), [0, 0]);
        }
        for (s, c) in per_second.iter_mut().zip(&w.per_second) {
            s[0] += c[0];
            s[1] += c[1];
        }
        report.traffic.bytes_sent += w.bytes_sent;
        report.traffic.bytes_received += w.bytes_received;
        report.traffic.reconnects += w.link.connects.saturating_sub(1) + w.reopened;
        if let Some(Conn::Http(c)) = &w.link.conn {
            report.traffic.reconnects += c.reopened;
        }
        if let Some(slot) = per_worker.get_mut(w.id) {
            *slot = w.measured;
        }
        if let Some(f) = &w.fatal {
            if !report.failures.contains(f) {
                report.failures.push(f.clone());
            }
        }
    }
    report.traffic.requests_per_worker = per_worker;
    report.detail.per_second = per_second
        .iter()
        .enumerate()
        .map(|(i, c)| SecondReport {
            second: i as u64,
            ok: c[0],
            failed: c[1],
        })
        .collect();
    let rules = judge::Rules::new(&phase.expects, &phase.load, &phase.stop, Units::REQUESTS);
    let elapsed: f64 = report.repeats.iter().map(|r| r.elapsed_s).sum();
    report.elapsed_s = elapsed;
    judge::figures(
        report,
        &rules,
        &all,
        scheduled.unwrap_or(sends.sent),
        &sends,
    );
    report.output = RequestOutput {
        rps: crate::report::rate(all.ok, elapsed),
        rows: all.rows,
    };
    report.detail.thresholds = judge::thresholds(report, &rules, &all);
    let unmet = failed_thresholds(report.detail.thresholds.iter(), env);
    judge::verdict(report, &rules, &all, unmet, env);
    // A client using (nearly) every core measures itself as much as the server.
    if let (Some(cpu), Ok(cores)) = (report.client_cpu_s, std::thread::available_parallelism()) {
        let used = cpu / elapsed.max(1e-9);
        if elapsed >= crate::report::MIN_RATE_SPAN_S && used > 0.9 * cores.get() as f64 {
            report.warnings.push(format!(
                "the client used {used:.2} of {} cores: it may have set the figures, not the server",
                cores.get()
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(value: Value) -> Threshold {
        Threshold {
            metric: "status".into(),
            op: "in".into(),
            value,
        }
    }

    #[test]
    fn statuses_default_to_2xx_and_take_codes_lists_and_half_open_ranges() {
        let any2xx = StatusSet::of(&[]);
        assert!(any2xx.accepts(200) && any2xx.accepts(299));
        assert!(!any2xx.accepts(300) && !any2xx.accepts(400) && !any2xx.accepts(199));
        let one = StatusSet::of(&[status(Value::List(vec![Value::Int(200)]))]);
        assert!(one.accepts(200) && !one.accepts(201));
        let set = StatusSet::of(&[status(Value::List(vec![Value::Int(200), Value::Int(404)]))]);
        assert!(set.accepts(404) && !set.accepts(400));
        let range = StatusSet::of(&[status(Value::Range(200, 300))]);
        assert!(range.accepts(204) && !range.accepts(300));
    }

    #[test]
    fn body_checks_name_the_check_that_failed() {
        assert_eq!(body_failure(&[BodyExpect::JsonArray], b" [1, 2]\n"), None);
        let e = body_failure(&[BodyExpect::JsonArray], br#"{"a":1}"#).unwrap();
        assert!(e.contains("expect body json array"), "{e}");
        assert!(body_failure(&[BodyExpect::Json], b"[1,").is_some());
        assert_eq!(
            body_failure(&[BodyExpect::JsonObject], br#"{"a":[]}"#),
            None
        );
        assert!(body_failure(&[BodyExpect::JsonObject], b"[]").is_some());
        let c = [BodyExpect::Contains("\"row\"".into())];
        assert_eq!(body_failure(&c, br#"[{"row":1}]"#), None);
        assert!(body_failure(&c, b"[]").is_some());
    }
}
