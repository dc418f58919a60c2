//! The search itself, free of any I/O: which rate to measure next, given the verdicts so far.
//! Rates grow geometrically from `from` (×growth, never past the cap) until a step breaks the
//! SLA; then the search bisects between the last good and the first bad rate until
//! (bad − good) / good ≤ resolution. The answer is the highest rate whose step met the SLA.

/// What the search is given.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    pub from: f64,
    pub cap: Option<f64>,
    pub growth: f64,
    /// A fraction: 0.05 for 5%.
    pub resolution: f64,
    pub max_steps: u64,
}

/// Why a step was measured: to find the first bad rate, or to narrow the bracket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Grow,
    Bisect,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Grow => "grow",
            Phase::Bisect => "bisect",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Met,
    Broke,
    /// The run was stopped during the step: it says nothing of its rate.
    Interrupted,
}

impl Verdict {
    /// A step's verdict: what `broke` of its SLA, unless the run stopped during it.
    pub fn of(status: crate::report::Status, broke: &[String]) -> Verdict {
        if status == crate::report::Status::Interrupted {
            Verdict::Interrupted
        } else if broke.is_empty() {
            Verdict::Met
        } else {
            Verdict::Broke
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::Broke => "broke",
            Verdict::Interrupted => "interrupted",
        }
    }
}

/// How the search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The last good and the first bad rate are within the resolution.
    Bracketed,
    /// The cap met the SLA: the answer is the cap, the server may do more.
    Cap,
    /// The first step broke the SLA: no answer.
    NotMetAtFrom,
    /// The step bound was reached before the resolution: the answer is the best so far.
    StepBound,
    Interrupted,
    /// A step could not be measured at all (an ingest whose rows would run out in it).
    Refused,
}

impl End {
    pub fn as_str(self) -> &'static str {
        match self {
            End::Bracketed => "bracketed",
            End::Cap => "cap",
            End::NotMetAtFrom => "not_met_at_from",
            End::StepBound => "step_bound",
            End::Interrupted => "interrupted",
            End::Refused => "refused",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Search {
    p: Params,
    good: Option<f64>,
    bad: Option<f64>,
    steps: u64,
    /// The step asked for and not yet recorded.
    pending: Option<(Phase, f64)>,
    end: Option<End>,
}

impl Search {
    pub fn new(p: Params) -> Search {
        Search {
            p,
            good: None,
            bad: None,
            steps: 0,
            pending: None,
            end: None,
        }
    }

    /// The next step to measure, or `None` when the search is over (`end` says why).
    pub fn next(&mut self) -> Option<(Phase, f64)> {
        if let Some(p) = self.pending {
            return Some(p);
        }
        if self.end.is_some() {
            return None;
        }
        let step = match (self.good, self.bad) {
            (None, None) => (Phase::Grow, self.p.from),
            (None, Some(_)) => return self.finish(End::NotMetAtFrom),
            (Some(g), None) => match self.p.cap {
                Some(cap) if g >= cap => return self.finish(End::Cap),
                Some(cap) => (Phase::Grow, tidy(g * self.p.growth).min(cap)),
                None => (Phase::Grow, tidy(g * self.p.growth)),
            },
            (Some(g), Some(b)) => {
                if (b - g) / g <= self.p.resolution {
                    return self.finish(End::Bracketed);
                }
                let mid = tidy((g + b) / 2.0);
                if mid <= g || mid >= b {
                    return self.finish(End::Bracketed);
                }
                (Phase::Bisect, mid)
            }
        };
        if self.steps >= self.p.max_steps {
            return self.finish(End::StepBound);
        }
        self.steps += 1;
        self.pending = Some(step);
        Some(step)
    }

    /// The verdict of the step `next` gave.
    pub fn record(&mut self, v: Verdict) {
        let Some((_, rate)) = self.pending.take() else {
            return;
        };
        match v {
            Verdict::Met => self.good = Some(self.good.map_or(rate, |g| g.max(rate))),
            Verdict::Broke => self.bad = Some(self.bad.map_or(rate, |b| b.min(rate))),
            Verdict::Interrupted => self.end = Some(End::Interrupted),
        }
    }

    fn finish(&mut self, end: End) -> Option<(Phase, f64)> {
        self.end = Some(end);
        None
    }

    /// The answer: the highest rate whose step met the SLA (the cap, when it did).
    pub fn answer(&self) -> Option<f64> {
        self.good
    }

    /// The first rate that broke the SLA, above the answer.
    pub fn bad(&self) -> Option<f64> {
        self.bad
    }

    pub fn end(&self) -> Option<End> {
        self.end
    }

    pub fn steps(&self) -> u64 {
        self.steps
    }
}

/// A rate as a step is shown and scheduled: whole units per second from 100/s, hundredths
/// below, so that the table reads what was sent.
fn tidy(r: f64) -> f64 {
    if r >= 100.0 {
        r.round()
    } else {
        (r * 100.0).round() / 100.0
    }
}

/// Runs a search over a synchronous measure: the unit tests' way, and a reading aid.
#[cfg(test)]
pub fn run(p: Params, mut measure: impl FnMut(f64) -> Verdict) -> (Search, Vec<(Phase, f64)>) {
    let mut s = Search::new(p);
    let mut path = Vec::new();
    while let Some((phase, rate)) = s.next() {
        path.push((phase, rate));
        let v = measure(rate);
        s.record(v);
    }
    (s, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> Params {
        Params {
            from: 100.0,
            cap: None,
            growth: 2.0,
            resolution: 0.05,
            max_steps: 40,
        }
    }

    fn threshold(x: f64) -> impl FnMut(f64) -> Verdict {
        move |r| if r < x { Verdict::Met } else { Verdict::Broke }
    }

    #[test]
    fn a_threshold_is_found_within_the_resolution_below_it() {
        for x in [150.0, 999.0, 2_840.0, 12_345.0, 1e6] {
            let (s, path) = run(params(), threshold(x));
            let a = s.answer().unwrap();
            assert_eq!(s.end(), Some(End::Bracketed), "{x}");
            assert!(a < x, "{a} under {x}");
            // The bracket [a, bad] holds x and is within 5% of a.
            let b = s.bad().unwrap();
            assert!(b >= x && (b - a) / a <= 0.05, "{a} {b} {x}");
            assert!(path.iter().take_while(|p| p.0 == Phase::Grow).count() >= 1);
            assert!(path.len() as u64 == s.steps());
        }
    }

    #[test]
    fn growth_is_geometric_then_bisects() {
        let (_, path) = run(params(), threshold(1_000.0));
        let rates: Vec<f64> = path.iter().map(|p| p.1).collect();
        assert_eq!(&rates[..5], &[100.0, 200.0, 400.0, 800.0, 1_600.0]);
        assert_eq!(path[4].0, Phase::Grow);
        assert_eq!(path[5], (Phase::Bisect, 1_200.0));
        assert!(path[5..].iter().all(|p| p.0 == Phase::Bisect));
    }

    #[test]
    fn noise_never_answers_a_rate_that_broke() {
        // A server that breaks at random near its limit: the answer is a rate that met, and
        // no rate that broke is under it.
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..50 {
            let mut broke = Vec::new();
            let mut met = Vec::new();
            let (s, _) = run(params(), |r| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let noise = (seed % 1000) as f64 / 1000.0 * 400.0 - 200.0;
                if r + noise < 2_000.0 {
                    met.push(r);
                    Verdict::Met
                } else {
                    broke.push(r);
                    Verdict::Broke
                }
            });
            let a = s.answer().unwrap();
            assert!(met.contains(&a));
            assert!(met.iter().all(|&m| m <= a));
            assert!(s.bad().unwrap() > a);
            assert!((1_600.0..=2_200.0).contains(&a), "{a}");
        }
    }

    #[test]
    fn a_first_step_that_breaks_has_no_answer() {
        let (s, path) = run(params(), threshold(50.0));
        assert_eq!(s.answer(), None);
        assert_eq!(s.end(), Some(End::NotMetAtFrom));
        assert_eq!(path, vec![(Phase::Grow, 100.0)]);
    }

    #[test]
    fn the_cap_is_the_answer_when_it_meets() {
        let p = Params {
            cap: Some(1_000.0),
            ..params()
        };
        let (s, path) = run(p, threshold(1e9));
        assert_eq!(s.answer(), Some(1_000.0));
        assert_eq!(s.end(), Some(End::Cap));
        assert_eq!(path.last().unwrap().1, 1_000.0);
        assert_eq!(path.len(), 5); // 100, 200, 400, 800, 1000
    }

    #[test]
    fn a_cap_that_breaks_is_bisected_under() {
        let p = Params {
            cap: Some(1_000.0),
            ..params()
        };
        let (s, _) = run(p, threshold(900.0));
        assert_eq!(s.end(), Some(End::Bracketed));
        assert!(s.answer().unwrap() < 900.0 && s.answer().unwrap() > 850.0);
    }

    #[test]
    fn the_step_bound_ends_the_search_with_the_best_so_far() {
        let p = Params {
            max_steps: 6,
            ..params()
        };
        let (s, path) = run(p, threshold(10_000.0));
        assert_eq!(path.len(), 6);
        assert_eq!(s.end(), Some(End::StepBound));
        assert_eq!(s.answer(), Some(3_200.0));
        // An unbounded server ends at the bound too, never looping.
        let (s, path) = run(params(), threshold(f64::INFINITY));
        assert_eq!((s.end(), path.len()), (Some(End::StepBound), 40));
    }

    #[test]
    fn an_interrupted_step_ends_the_search_with_the_best_so_far() {
        let mut n = 0;
        let (s, path) = run(params(), |_| {
            n += 1;
            if n == 3 {
                Verdict::Interrupted
            } else {
                Verdict::Met
            }
        });
        assert_eq!(path.len(), 3);
        assert_eq!(s.end(), Some(End::Interrupted));
        assert_eq!(s.answer(), Some(200.0));
    }
}
