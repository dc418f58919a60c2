//! One connection of a request run and its loop: take the next index (a counter, or the
//! open-loop schedule's next slot), build the request (fixed, or by the hook), wait for its
//! time, send, read the whole answer, judge it (status, body checks, response hook) and record
//! it. A failure after any of the request may have reached the server drops the connection.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::checks::body_failure;
use super::{Shared, Source};
use crate::exec::account::{Cutoff, Sends};
use crate::exec::link::Link;
use crate::exec::pace::Pacer;
use crate::exec::progress::RunCounts;
use crate::exec::slots::Schedule;
use crate::hook::{Built, HookWorker, ResponseView, Verdict};
use crate::net::http::server_message;
use crate::net::http1;
use crate::query::stats::TypeStats;
use crate::query::transport::{from_driver, Transport};
use crate::query::{Instance, QueryError, QueryErrorClass};
use bytes::Bytes;
use hyper::{HeaderMap, Method};

pub(super) enum Conn {
    Http(http1::Conn),
    Sql(Box<Transport>),
}

/// An answer read completely.
pub(super) struct Answer {
    /// 0 for SQL endpoints.
    status: u16,
    headers: Option<HeaderMap>,
    body: Bytes,
    rows: u64,
    sent_bytes: u64,
}

/// One connection and what it measured.
pub(super) struct Worker {
    pub(super) id: usize,
    pub(super) shared: Arc<Shared>,
    pub(super) link: Link<Conn>,
    /// Idle connections the server closed, reopened (counted when a connection is let go).
    pub(super) reopened: u64,
    pub(super) hook: Option<HookWorker>,
    /// A hook's or a template's request, rendered: reused, so a request costs no allocation
    /// of its own.
    pub(super) out: Vec<u8>,
    /// A template's values, path and body, reused likewise.
    pub(super) scratch: super::template::Scratch,
    pub(super) stats: TypeStats,
    /// (status, count) of the measured answers: a handful of codes, so a linear scan beats a
    /// map.
    pub(super) statuses: Vec<(u16, u64)>,
    /// The same for warm-up answers, kept apart so that `statuses` agrees with ok and failed.
    pub(super) warmup_statuses: Vec<(u16, u64)>,
    /// This connection's part of the run's time series.
    pub(super) series: crate::exec::series::Slot,
    pub(super) bytes_sent: u64,
    pub(super) bytes_received: u64,
    pub(super) measured: u64,
    pub(super) pacer: Pacer,
    pub(super) sends: Sends,
    /// A hook that failed or broke a sandbox limit: the cell fails with this.
    pub(super) fatal: Option<String>,
}

/// Where a round's request indices come from.
#[derive(Clone)]
pub(super) enum Feed {
    /// Closed loop: the next index of a shared counter, up to `end` (exclusive) if set. A
    /// shard `(i, n)` (`stride`) counts its own requests and numbers the k-th `i + n k`, as
    /// the whole run numbers it; `(0, 1)` unsharded.
    Counter {
        next: Arc<AtomicU64>,
        base: u64,
        end: Option<u64>,
        stride: (u64, u64),
    },
    /// Open loop: the next slot of the round's schedule.
    Slots(Arc<std::sync::Mutex<Schedule>>),
}

/// What bounds a round and what it records.
#[derive(Clone)]
pub(super) struct RoundCtl {
    pub(super) start: Instant,
    /// No request starts at or after this.
    pub(super) end: Option<Instant>,
    pub(super) cutoff: Cutoff,
    pub(super) stop: Arc<AtomicBool>,
    /// Set by a connection whose hook failed: every connection stops.
    pub(super) abort: Arc<AtomicBool>,
    pub(super) record: bool,
    pub(super) counts: Arc<RunCounts>,
    /// `stop after N errors` (or `--fail-fast`): at the N-th failed request `limited` and
    /// `abort` are set, and every connection stops sending.
    pub(super) max_errors: Option<u64>,
    pub(super) limited: Arc<AtomicBool>,
    /// A round measuring one stage of a staged run (`staged`).
    pub(super) stage: Option<Arc<crate::exec::stages::StageCtl>>,
    /// A group's end (`until P`): reached as the end of a timed round is.
    pub(super) group: crate::exec::end::End,
}

impl Worker {
    /// The connection (opened now if needed): a free function of the fields it needs, so
    /// that a caller can hold `shared` alongside it without cloning the `Arc` per request.
    async fn connection<'a>(
        link: &'a mut Link<Conn>,
        shared: &Shared,
    ) -> Result<&'a mut Conn, QueryError> {
        link.get(&shared.connector, || async {
            match &shared.target {
                Some(t) => http1::Conn::connect(t)
                    .await
                    .map(Conn::Http)
                    .map_err(from_driver),
                None => Transport::connect_via(
                    &shared.phase.endpoint,
                    &shared.url,
                    &shared.base_dir,
                    &shared.connector,
                )
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
            None => match (&shared.source, &shared.target) {
                (Source::Template(tpl), Some(t)) => {
                    if let Err(e) = tpl.render(t, index, &mut self.scratch, &mut self.out) {
                        return InFlight::Done(Err(QueryError {
                            class: QueryErrorClass::Client,
                            message: format!("request {index} of the template: {e}"),
                            code: None,
                            broken: false,
                        }));
                    }
                    tpl.head
                }
                _ => false,
            },
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
                (Conn::Http(c), Some(Built::Http(_)), Some(t), _)
                | (Conn::Http(c), None, Some(t), Source::Template(_)) => match c.send(t, out).await
                {
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
                        then: Vec::new(),
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
    async fn next_index(feed: &Feed, ctl: &RoundCtl) -> Option<(u64, Option<Instant>)> {
        match feed {
            Feed::Counter {
                next,
                base,
                end,
                stride: (first, step),
            } => {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if end.is_some_and(|e| k >= e) {
                    return None;
                }
                Some((base + first + step * k, None))
            }
            Feed::Slots(schedule) => {
                let mut schedule = schedule.lock().ok()?;
                if ctl.stop.load(Ordering::Relaxed) || ctl.group.ended() {
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

    pub(super) async fn round(mut self, feed: Feed, ctl: RoundCtl) -> Worker {
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
                None => match Self::next_index(&feed, &ctl).await {
                    Some((i, at)) => (i, at, None),
                    None => break,
                },
            };
            let now = Instant::now();
            if ctl.stop.load(Ordering::Relaxed)
                || ctl.abort.load(Ordering::Relaxed)
                || ctl.end.is_some_and(|d| now >= d)
                || ctl.group.past(now)
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
                if !self.pacer.until(at, &ctl.stop, &ctl.group).await {
                    break;
                }
                let now = Instant::now();
                if ctl.end.is_some_and(|d| now >= d)
                    || ctl.group.past(now)
                    || ctl.abort.load(Ordering::Relaxed)
                {
                    break;
                }
            }
            let sent = Instant::now();
            // A stage's warm-up is sent as scheduled and not counted.
            let record = ctl.record
                && ctl
                    .stage
                    .as_ref()
                    .is_none_or(|s| s.counts(intended.unwrap_or(sent)));
            if record {
                self.sends.start(sent, intended);
            }
            let Some(flight) = ctl.cutoff.bound(self.start(index, built)).await else {
                self.cut_off(record);
                break;
            };
            let mut failed_ahead = None;
            if build_ahead && matches!(flight, InFlight::Http { .. }) {
                if let (Some((i, _)), Source::Hook { function, .. }, Some(hook)) = (
                    Self::next_index(&feed, &ctl).await,
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
                self.cut_off(record);
                break;
            };
            let done = Instant::now();
            let result = match result {
                Ok(answer) => {
                    if answer.status != 0 {
                        let statuses = match record {
                            true => &mut self.statuses,
                            false => &mut self.warmup_statuses,
                        };
                        match statuses.iter_mut().find(|(c, _)| *c == answer.status) {
                            Some((_, n)) => *n += 1,
                            None => statuses.push((answer.status, 1)),
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
            // Refused (a password, a certificate): this one failure says it; asking again per
            // request would only be refused again. What is left goes unsent.
            let refused = self.link.refused();
            if !record {
                if let Some(e) = failed_ahead {
                    self.fail(e, &ctl);
                    break;
                }
                if refused {
                    break;
                }
                continue;
            }
            self.measured += 1;
            match result {
                Ok(rows) => {
                    let from = intended.unwrap_or(sent);
                    let service = intended.map(|_| done - sent);
                    let latency = done.saturating_duration_since(from);
                    self.stats.record_ok(latency, service, rows);
                    self.series.ok(done, latency, service);
                    ctl.counts.ok.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    self.stats.record_error(&e);
                    self.series.failed(done);
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
            if refused {
                break;
            }
        }
        self
    }

    /// The phase ended with this request in flight: counted, and its connection (in an unknown
    /// state) is not used again.
    fn cut_off(&mut self, record: bool) {
        self.close();
        if record {
            self.sends.cut_off += 1;
            self.series.cut_off(Instant::now(), 1);
        }
    }

    /// Lets the connection go (counting what it reopened).
    pub(super) fn close(&mut self) {
        if let Some(Conn::Http(c)) = self.link.conn.take() {
            self.reopened += c.reopened;
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
