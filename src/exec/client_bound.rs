//! An open-loop run measures each request from its intended send time, so a client that cannot
//! keep its schedule (its own CPU, or a host busy with other work) adds its lag to every
//! latency: the figures then describe the client and its host, not the server. Three identical
//! runs at 2,000/s on a box at load 7 gave p90 52 ms, 80 ms and 1.28 ms, with a send lag p99 of
//! 157 ms against a service time p50 of 0.2 ms. The rule: when the send lag's p99 exceeds both
//! the service time's p50 (the server's typical answer, measured from the actual send) and a
//! floor (`LAG_FLOOR`: timers and wake-ups make a few hundred microseconds normal), the run
//! warns, giving the load average and the client's CPU, so that no one reads the figures as
//! the server's.
//!
//! A saturated server makes sends late too: every connection is busy, and the next request
//! waits for one. So the rule holds when the connections had room for the rate at the service
//! time p50 (`lanes / service p50` above the rate offered, with 10% to spare: then the lag is
//! the client's own), or when the client was starved: its threads waited for a CPU (run-queue
//! wait, Linux schedstat) longer than they ran, and for more than `STARVED` of the span. A
//! starved client measures its own delays into the service time too, so that its connections
//! look full.

use std::time::Duration;

use crate::report::{Accounting, Latency};

/// Below this a send lag is the timer's and the scheduler's ordinary jitter.
pub const LAG_FLOOR: Duration = Duration::from_millis(1);

/// Run-queue wait over the span (summed over the client's threads) above which, when it also
/// exceeds the CPU the client used, the client was starved: a host with a free core shows
/// well under 1%; pinned beside six busy loops, 14% (and 2% of CPU).
pub const STARVED: f64 = 0.05;

/// What the rule looks at.
#[derive(Clone, Copy, Debug)]
pub struct Signs {
    pub send_lag_p99_us: u64,
    pub service_p50_us: u64,
    /// The client's CPU over the span, in cores.
    pub client_cores: Option<f64>,
    /// Run-queue wait of the client's threads over the span, a fraction.
    pub client_waited: Option<f64>,
    /// The host's 1-minute load average, at the end, and its cores.
    pub load_average: Option<f64>,
    pub cores: usize,
    /// The cores the client may run on (its CPU affinity): fewer than `cores` when pinned.
    pub client_allowed: usize,
    /// Requests in flight at most (connections, workers), and the rate the schedule offered.
    pub lanes: u64,
    pub offered_per_s: f64,
}

impl Signs {
    /// The run's own figures; `None` in closed loop or when nothing was sent or answered.
    pub fn of(
        accounting: &Accounting,
        service: Option<&Latency>,
        lanes: u64,
        (client_cpu_s, client_wait_s, elapsed_s): (Option<f64>, Option<f64>, f64),
    ) -> Option<Signs> {
        let lag = accounting.send_lag.as_ref().filter(|l| l.count > 0)?;
        let service = service.filter(|s| s.count > 0)?;
        Some(Signs {
            send_lag_p99_us: lag.p99_us,
            service_p50_us: service.p50_us,
            client_cores: client_cpu_s
                .filter(|_| crate::report::rate(0, elapsed_s).is_some())
                .map(|c| c / elapsed_s),
            client_waited: client_wait_s
                .filter(|_| crate::report::rate(0, elapsed_s).is_some())
                .map(|w| w / elapsed_s),
            load_average: super::environment::load_average(),
            cores: super::environment::cores() as usize,
            client_allowed: std::thread::available_parallelism().map_or(0, |n| n.get()),
            lanes,
            offered_per_s: accounting.scheduled as f64 / elapsed_s.max(1e-9),
        })
    }

    /// The client, not the server, set the figures.
    pub fn client_bound(&self) -> bool {
        let room = self.lanes as f64 * 1e6 / self.service_p50_us.max(1) as f64;
        let starved = self
            .client_waited
            .is_some_and(|w| w > STARVED && w > self.client_cores.unwrap_or(0.0));
        self.send_lag_p99_us > self.service_p50_us
            && self.send_lag_p99_us > LAG_FLOOR.as_micros() as u64
            && (self.offered_per_s < 0.9 * room || starved)
    }

    /// The warning, when the rule holds.
    pub fn warning(&self) -> Option<String> {
        if !self.client_bound() {
            return None;
        }
        let ms = |us: u64| format!("{:.2}ms", us as f64 / 1e3);
        let cores = self.cores;
        // A pinned client is measured against the cores it may use, not the machine's.
        let allowed = match self.client_allowed {
            0 => cores,
            n => n.min(cores),
        };
        let cpu = self
            .client_cores
            .map_or("unknown".into(), |c| match allowed {
                n if n == cores => format!("{c:.2} of {cores} cores"),
                1 => format!("{c:.2} of the 1 core it may use"),
                n => format!("{c:.2} of the {n} cores it may use"),
            });
        let load = self
            .load_average
            .map_or("unknown".into(), |l| format!("{l:.2} on {cores} cores"));
        let waited = self.client_waited.map_or(String::new(), |w| {
            format!(
                ", its threads waiting for a CPU {:.0}% of the span",
                100.0 * w
            )
        });
        Some(format!(
            "client-bound: the client could not keep its schedule (send lag p99 {} over the \
             service time p50 {} and over {}): the client or its host set these latencies, not \
             the server (host load average {load}, client cpu {cpu}{waited})",
            ms(self.send_lag_p99_us),
            ms(self.service_p50_us),
            ms(LAG_FLOOR.as_micros() as u64),
        ))
    }
}

/// Client and server together above this share of the machine's cores: the run measured a
/// full machine, where each side's figures include waiting for the other's CPU.
pub const BOX_BUSY: f64 = 0.9;

/// The warning of a co-located run whose client and observed server, together, kept more than
/// `BOX_BUSY` of the machine's cores busy over the span.
pub fn box_bound(
    client_cores: f64,
    server_cores: f64,
    machine_busy: Option<f64>,
    cores: u64,
) -> Option<String> {
    let both = client_cores + server_cores;
    if cores == 0 || both <= BOX_BUSY * cores as f64 {
        return None;
    }
    let busy = machine_busy.map_or(String::new(), |b| {
        format!("; the machine was busy {b:.2} of {cores} cores (/proc/stat)")
    });
    Some(format!(
        "box-bound: client ({client_cores:.2} cores) and server ({server_cores:.2} cores) \
         together used {both:.2} of the machine's {cores} cores{busy}: this co-located run \
         measures the box, not the server alone"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signs(lag_us: u64, service_us: u64) -> Signs {
        Signs {
            send_lag_p99_us: lag_us,
            service_p50_us: service_us,
            client_cores: Some(0.15),
            client_waited: Some(0.01),
            load_average: Some(7.0),
            cores: 8,
            client_allowed: 8,
            lanes: 4,
            offered_per_s: 2_000.0,
        }
    }

    #[test]
    fn a_pinned_client_is_measured_against_the_cores_it_may_use() {
        // Pinned to one core of two, a client at 0.64 cores was said to use "0.64 of 2 cores".
        let mut s = signs(157_000, 200);
        s.cores = 2;
        s.client_cores = Some(0.64);
        s.client_allowed = 1;
        let w = s.warning().expect("a warning");
        assert!(
            w.contains("client cpu 0.64 of the 1 core it may use"),
            "{w}"
        );
        assert!(w.contains("on 2 cores"), "{w}");
        s.client_allowed = 2;
        let w = s.warning().expect("a warning");
        assert!(w.contains("client cpu 0.64 of 2 cores"), "{w}");
    }

    #[test]
    fn client_and_server_over_nine_tenths_of_the_cores_measure_the_box() {
        let w = box_bound(1.0, 0.9, Some(1.95), 2).expect("a warning");
        assert!(w.starts_with("box-bound:"), "{w}");
        assert!(w.contains("1.90 of the machine's 2 cores"), "{w}");
        assert!(w.contains("busy 1.95 of 2 cores"), "{w}");
        assert!(box_bound(1.0, 0.8, Some(1.9), 2).is_none());
        assert!(box_bound(4.0, 3.0, None, 8).is_none());
    }

    #[test]
    fn a_lag_over_the_service_time_and_the_floor_warns() {
        // The case that was seen: 157 ms of send lag against a server answering in 0.2 ms.
        let w = signs(157_000, 200).warning().expect("a warning");
        assert!(w.starts_with("client-bound:"), "{w}");
        assert!(w.contains("send lag p99 157.00ms"), "{w}");
        assert!(w.contains("service time p50 0.20ms"), "{w}");
        assert!(w.contains("load average 7.00 on 8 cores"), "{w}");
        assert!(w.contains("client cpu 0.15 of"), "{w}");
        assert!(signs(1_001, 1_000).client_bound());
    }

    #[test]
    fn a_lag_under_either_bound_does_not() {
        // Under the floor: ordinary timer jitter, however fast the server.
        assert!(!signs(900, 200).client_bound());
        assert!(!signs(1_000, 200).client_bound());
        // Under the service time: a slow server, whose queueing the lag only follows.
        assert!(!signs(40_000, 50_000).client_bound());
        assert!(!signs(50_000, 50_000).client_bound());
        assert_eq!(signs(40_000, 50_000).warning(), None);
    }

    #[test]
    fn a_saturated_server_is_not_the_client() {
        // 4 connections at 5 ms carry 800/s: at 2,000/s every send waits for a connection, and
        // the lag is the server's, however long.
        assert!(!signs(200_000, 5_000).client_bound());
        // At 700/s they had room (800 x 0.9 = 720): the lag is the client's.
        let s = Signs {
            offered_per_s: 700.0,
            ..signs(200_000, 5_000)
        };
        assert!(s.client_bound());
        let s = Signs {
            offered_per_s: 730.0,
            ..signs(200_000, 5_000)
        };
        assert!(!s.client_bound());
        // ... unless the client waited for a CPU: starved, it measured 24 ms of "service"
        // from a server answering in 0.2 ms, and its connections looked full.
        assert!(!signs(2_500_000, 24_000).client_bound());
        let s = Signs {
            client_waited: Some(0.14),
            client_cores: Some(0.02),
            ..signs(2_500_000, 24_000)
        };
        assert!(s.client_bound());
        assert!(s
            .warning()
            .unwrap()
            .contains("waiting for a CPU 14% of the span"));
        // Waiting less than it ran: a busy client, not a starved one.
        let s = Signs {
            client_waited: Some(0.14),
            client_cores: Some(0.5),
            ..signs(2_500_000, 24_000)
        };
        assert!(!s.client_bound());
    }

    #[test]
    fn closed_loop_and_nothing_answered_give_no_signs() {
        let mut a = Accounting::default();
        let service = Latency {
            count: 10,
            p50_us: 200,
            ..Latency::default()
        };
        a.scheduled = 1_000;
        assert!(Signs::of(&a, Some(&service), 1, (None, None, 5.0)).is_none());
        a.send_lag = Some(Latency {
            count: 10,
            p99_us: 5_000,
            ..Latency::default()
        });
        assert!(Signs::of(&a, None, 1, (None, None, 5.0)).is_none());
        assert!(Signs::of(&a, Some(&Latency::default()), 1, (None, None, 5.0)).is_none());
        let s = Signs::of(&a, Some(&service), 1, (Some(1.0), None, 5.0)).unwrap();
        assert_eq!(s.offered_per_s, 200.0);
        assert!(s.client_bound());
        assert_eq!(s.client_cores, Some(0.2));
    }
}
