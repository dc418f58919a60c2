//! The server a phase runs against, observed from /proc while the phase runs (`observe
//! process`): a thread samples each root's whole tree at an interval, and at once when the
//! phase's measured span begins and ends (`series::Recorder::measure`, `pause`, `span` poke
//! it), so that the server's figures cover the client's span, not the setup, warm-up or
//! verification around it.

mod ledger;
pub mod proc;
pub mod root;
mod series;

use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::plan::{Cell, ObservePlan};
use crate::report::server::{ObservedProcess, ServerReport};
use proc::Totals;

enum Msg {
    Begin,
    End,
    Stop,
}

/// The phase's handle on its observer, for the series recorder to mark its measured span.
#[derive(Clone)]
pub struct Marks {
    tx: Sender<Msg>,
}

impl Marks {
    pub fn begin(&self) {
        let _ = self.tx.send(Msg::Begin);
    }

    pub fn end(&self) {
        let _ = self.tx.send(Msg::End);
    }
}

pub struct Observer {
    tx: Sender<Msg>,
    thread: JoinHandle<Sampled>,
    /// Where its samples over the measured span go (`--out`).
    series: Option<std::path::PathBuf>,
}

/// One reading of every root's tree.
#[derive(Clone, Debug)]
pub struct Sample {
    pub at: Instant,
    pub user_ticks: u64,
    pub system_ticks: u64,
    pub rss_bytes: u64,
    pub io: Option<(u64, u64)>,
    pub threads: u64,
    pub processes: u64,
    /// The machine's busy and total ticks (/proc/stat).
    pub machine: Option<(u64, u64)>,
    /// This process's CPU seconds so far: the client's side of the same interval.
    pub client_cpu_s: Option<f64>,
}

struct Root {
    plan: ObservePlan,
    stat: proc::Stat,
    /// Its tree's last totals: a vanished root's CPU and IO stay counted up to then.
    last: Totals,
    ledger: ledger::Ledger,
    gone: bool,
}

struct Sampled {
    samples: Vec<Sample>,
    begin: Option<usize>,
    end: Option<usize>,
    observed: Vec<ObservedProcess>,
    notes: Vec<String>,
}

impl Observer {
    /// Observes the processes `cell` names for `target` (none: `None`), sampled every
    /// `interval`. A root that cannot be found is a note of the report, never a failure.
    pub fn start(cell: &Cell, target: &str, interval: Duration) -> Option<Observer> {
        let plans: Vec<&ObservePlan> = cell.observe.iter().filter(|o| o.target == target).collect();
        if plans.is_empty() {
            return None;
        }
        let mut roots = Vec::new();
        let mut notes = Vec::new();
        for p in plans {
            match root::find(&p.root) {
                Ok(stat) => roots.push(Root {
                    plan: p.clone(),
                    stat,
                    last: Totals::default(),
                    ledger: ledger::Ledger::default(),
                    gone: false,
                }),
                Err(e) => notes.push(format!("observe {} process {}: {e}", p.target, p.root)),
            }
        }
        let (tx, rx) = channel();
        let interval = interval.max(Duration::from_millis(10));
        let thread = std::thread::Builder::new()
            .name("wlrun-observe".into())
            .spawn(move || sample_until_stopped(roots, notes, &rx, interval))
            .ok()?;
        Some(Observer {
            tx,
            thread,
            series: None,
        })
    }

    /// Its samples over the measured span are written to `path` when it finishes.
    pub fn series_to(mut self, path: std::path::PathBuf) -> Observer {
        self.series = Some(path);
        self
    }

    pub fn marks(&self) -> Marks {
        Marks {
            tx: self.tx.clone(),
        }
    }

    /// The last sample taken and the figures over the measured span, `units` of `unit` (the
    /// client's: rows sent, queries or requests answered) dividing them.
    pub fn finish(self, unit: &str, units: u64) -> ServerReport {
        let _ = self.tx.send(Msg::Stop);
        let sampled = match self.thread.join() {
            Ok(s) => s,
            Err(_) => Sampled {
                samples: Vec::new(),
                begin: None,
                end: None,
                observed: Vec::new(),
                notes: vec!["the observer's thread failed".into()],
            },
        };
        let series = self.series;
        figures(sampled, unit, units, series.as_deref())
    }
}

fn sample_until_stopped(
    mut roots: Vec<Root>,
    mut notes: Vec<String>,
    rx: &Receiver<Msg>,
    interval: Duration,
) -> Sampled {
    let observed = roots
        .iter()
        .map(|r| ObservedProcess {
            target: r.plan.target.clone(),
            by: r.plan.root.to_string(),
            pid: r.stat.pid,
            name: r.stat.comm.clone(),
        })
        .collect();
    let page = proc::page_size();
    let mut samples = vec![sample(&mut roots, &mut notes, page)];
    let (mut begin, mut end) = (None, None);
    loop {
        let msg = rx.recv_timeout(interval);
        samples.push(sample(&mut roots, &mut notes, page));
        let last = samples.len() - 1;
        match msg {
            Ok(Msg::Begin) => {
                begin.get_or_insert(last);
            }
            Ok(Msg::End) => end = Some(last),
            Err(RecvTimeoutError::Timeout) => {}
            Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    Sampled {
        samples,
        begin,
        end,
        observed,
        notes,
    }
}

fn sample(roots: &mut [Root], notes: &mut Vec<String>, page: u64) -> Sample {
    let all = proc::all();
    let mut s = Sample {
        at: Instant::now(),
        user_ticks: 0,
        system_ticks: 0,
        rss_bytes: 0,
        io: Some((0, 0)),
        threads: 0,
        processes: 0,
        machine: proc::machine_ticks(),
        client_cpu_s: crate::exec::cpu::process_cpu_seconds(),
    };
    for r in roots.iter_mut() {
        if !r.gone {
            let alive = all
                .iter()
                .any(|x| x.pid == r.stat.pid && x.start == r.stat.start);
            if alive {
                let tree = proc::tree(&all, r.stat.pid);
                // A process that ended between the listing and this read has no counters
                // left: its IO reaches its parent's when reaped, not unknown.
                let io = |pid: u32| {
                    proc::io(pid).or_else(|| proc::stat(pid).is_none().then_some((0, 0)))
                };
                r.last = r.ledger.hold(&all, &tree, proc::totals(&tree, page, io));
                s.rss_bytes += r.last.rss_bytes;
                s.threads += r.last.threads;
                s.processes += r.last.processes;
            } else {
                r.gone = true;
                notes.push(format!(
                    "the observed process {} ({}) vanished while the phase ran: its figures \
                     end there",
                    r.stat.pid, r.stat.comm
                ));
            }
        }
        s.user_ticks += r.last.user_ticks;
        s.system_ticks += r.last.system_ticks;
        s.io = match (s.io, r.last.io) {
            (Some((a, b)), Some((c, d))) => Some((a + c, b + d)),
            _ => None,
        };
    }
    s
}

fn figures(s: Sampled, unit: &str, units: u64, out: Option<&std::path::Path>) -> ServerReport {
    let mut report = ServerReport {
        observed: s.observed,
        unit: unit.to_string(),
        machine_cores: super::environment::cores(),
        notes: s.notes,
        ..ServerReport::default()
    };
    if report.observed.is_empty() || s.samples.is_empty() {
        return report;
    }
    let last = s.samples.len() - 1;
    let b = s.begin.unwrap_or(0);
    let e = s.end.filter(|e| *e > b).unwrap_or(last);
    let window = &s.samples[b..=e];
    let tck = proc::ticks_per_second();
    if let Some(path) = out {
        if let Err(e) = series::write(path, &series::intervals(window, tck)) {
            report.notes.push(e);
        }
    }
    // Each root's level only rises (`ledger`); a root that vanished keeps its last.
    let rise = |f: &dyn Fn(&Sample) -> u64| -> u64 {
        window
            .windows(2)
            .map(|w| f(&w[1]).saturating_sub(f(&w[0])))
            .sum()
    };
    let user = rise(&|x| x.user_ticks) as f64 / tck;
    let system = rise(&|x| x.system_ticks) as f64 / tck;
    let io_known = window.iter().all(|x| x.io.is_some());
    let read = io_known.then(|| rise(&|x| x.io.map_or(0, |i| i.0)));
    let write = io_known.then(|| rise(&|x| x.io.map_or(0, |i| i.1)));
    let span_s = window[window.len() - 1]
        .at
        .duration_since(window[0].at)
        .as_secs_f64();
    let per = |v: f64| (units > 0).then(|| v / units as f64);
    report.processes_max = window.iter().map(|x| x.processes).max().unwrap_or(0);
    report.span_s = span_s;
    report.samples = window.len() as u64;
    report.cpu_user_s = user;
    report.cpu_system_s = system;
    report.cpu_s = user + system;
    report.cores = crate::report::rate(0, span_s).map(|_| report.cpu_s / span_s);
    report.cpu_us_per_unit = per(report.cpu_s * 1e6);
    report.rss_peak_bytes = window.iter().map(|x| x.rss_bytes).max().unwrap_or(0);
    report.read_bytes = read;
    report.write_bytes = write;
    report.read_bytes_per_unit = read.and_then(|r| per(r as f64));
    report.write_bytes_per_unit = write.and_then(|w| per(w as f64));
    report.threads_max = window.iter().map(|x| x.threads).max().unwrap_or(0);
    report.machine_busy_cores = match (window[0].machine, window[window.len() - 1].machine) {
        (Some((a, _)), Some((b, _))) if crate::report::rate(0, span_s).is_some() => {
            Some(b.saturating_sub(a) as f64 / tck / span_s)
        }
        _ => None,
    };
    report
}
