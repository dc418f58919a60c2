//! The search itself, free of any I/O: which rate to measure next, given the verdicts so far.
//! Rates grow geometrically from `from` (×growth, never past the cap) until a step breaks the
//! SLA; then the search bisects between the last good and the first bad rate until
//! (bad − good) / good ≤ resolution. When the first step breaks, the search goes down
//! instead, halving the rate until a step meets the SLA (then bisects up from it) or the next
//! half would be under `from / DOWN_FLOOR`. Before it ends with an answer the search measures
//! that rate again (`confirm`): one step can meet the SLA by luck near a server's limit, so a
//! repeat that breaks makes the rate broken and the search goes on below it. The answer is the
//! highest confirmed rate. A step that breaks below a rate that met is recorded as
//! non-monotonic, naming both; the rates that met above it are no longer trusted.

/// What the search is given.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    pub from: f64,
    pub cap: Option<f64>,
    pub growth: f64,
    /// A fraction: 0.05 for 5%.
    pub resolution: f64,
    pub max_steps: u64,
    /// Measure the answer again before answering it.
    pub confirm: bool,
}

/// Searching down from a first step that broke stops where the next half would be under
/// `from / DOWN_FLOOR` (six halvings): a server 64 times slower than the workload's own first
/// guess is a wrong guess, not a rate worth a search.
pub const DOWN_FLOOR: f64 = 64.0;

/// Why a step was measured: to find the first bad rate, or to narrow the bracket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Grow,
    /// Halving from a first step that broke.
    Down,
    Bisect,
    /// The answer's rate measured again.
    Confirm,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Grow => "grow",
            Phase::Down => "down",
            Phase::Bisect => "bisect",
            Phase::Confirm => "confirm",
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
    /// No step met the SLA, from `from` down to its floor (`DOWN_FLOOR`): no answer.
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

/// A step that broke below a rate that had met: the search is not monotonic there.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NonMonotonic {
    pub met: f64,
    pub broke: f64,
}

#[derive(Clone, Debug)]
pub struct Search {
    p: Params,
    /// Rates that met the SLA and that no lower broken step contradicts.
    met: Vec<f64>,
    /// Every rate whose step met, contradicted or not: what a broken step is checked against.
    ever_met: Vec<f64>,
    /// The highest rate that met the SLA twice.
    confirmed: Option<f64>,
    bad: Option<f64>,
    non_monotonic: Vec<NonMonotonic>,
    steps: u64,
    /// The step asked for and not yet recorded.
    pending: Option<(Phase, f64)>,
    end: Option<End>,
}

impl Search {
    pub fn new(p: Params) -> Search {
        Search {
            p,
            met: Vec::new(),
            ever_met: Vec::new(),
            confirmed: None,
            bad: None,
            non_monotonic: Vec::new(),
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
        let step = match (self.good(), self.bad) {
            (None, None) => (Phase::Grow, self.p.from),
            (None, Some(b)) => {
                let half = tidy(b / 2.0);
                if half < self.p.from / DOWN_FLOOR || half <= 0.0 || half >= b {
                    return self.finish(End::NotMetAtFrom);
                }
                (Phase::Down, half)
            }
            (Some(g), None) => match self.p.cap {
                Some(cap) if g >= cap => return self.end_at(End::Cap, g),
                Some(cap) => (Phase::Grow, tidy(g * self.p.growth).min(cap)),
                None => (Phase::Grow, tidy(g * self.p.growth)),
            },
            (Some(g), Some(b)) => {
                if (b - g) / g <= self.p.resolution {
                    return self.end_at(End::Bracketed, g);
                }
                let mid = tidy((g + b) / 2.0);
                if mid <= g || mid >= b {
                    return self.end_at(End::Bracketed, g);
                }
                (Phase::Bisect, mid)
            }
        };
        self.ask(step)
    }

    /// Ends the search with `good` as its answer, once that rate is confirmed.
    fn end_at(&mut self, end: End, good: f64) -> Option<(Phase, f64)> {
        if !self.p.confirm || self.confirmed == Some(good) {
            return self.finish(end);
        }
        self.ask((Phase::Confirm, good))
    }

    fn ask(&mut self, step: (Phase, f64)) -> Option<(Phase, f64)> {
        if self.steps >= self.p.max_steps {
            return self.finish(End::StepBound);
        }
        self.steps += 1;
        self.pending = Some(step);
        Some(step)
    }

    /// The verdict of the step `next` gave.
    pub fn record(&mut self, v: Verdict) {
        let Some((phase, rate)) = self.pending.take() else {
            return;
        };
        match v {
            Verdict::Met if phase == Phase::Confirm => {
                self.confirmed = Some(self.confirmed.map_or(rate, |c| c.max(rate)));
            }
            Verdict::Met => {
                self.met.push(rate);
                self.ever_met.push(rate);
            }
            Verdict::Broke => {
                // A repeat that breaks makes its rate broken; a step that breaks below a rate
                // that met contradicts it.
                if let Some(&met) = self
                    .ever_met
                    .iter()
                    .filter(|&&m| m > rate)
                    .min_by(|a, b| a.total_cmp(b))
                {
                    self.non_monotonic.push(NonMonotonic { met, broke: rate });
                }
                self.met.retain(|&m| m < rate);
                if self.confirmed.is_some_and(|c| c >= rate) {
                    self.confirmed = None;
                }
                self.bad = Some(self.bad.map_or(rate, |b| b.min(rate)));
            }
            Verdict::Interrupted => self.end = Some(End::Interrupted),
        }
    }

    /// The highest rate that met the SLA and was not contradicted since.
    fn good(&self) -> Option<f64> {
        self.met.iter().copied().reduce(f64::max)
    }

    fn finish(&mut self, end: End) -> Option<(Phase, f64)> {
        self.end = Some(end);
        None
    }

    /// The answer: the highest confirmed rate (the cap, when it met twice); without
    /// confirmation (`confirm` off, or a search the step bound or an interruption cut short)
    /// the highest rate that met.
    pub fn answer(&self) -> Option<f64> {
        self.confirmed.or_else(|| self.good())
    }

    /// Whether the answer was measured twice.
    pub fn confirmed(&self) -> bool {
        self.confirmed.is_some() && self.confirmed == self.answer()
    }

    /// Steps that broke below a rate that had met, in the order they ran.
    pub fn non_monotonic(&self) -> &[NonMonotonic] {
        &self.non_monotonic
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
            confirm: true,
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
        let (last, bisect) = path[5..].split_last().unwrap();
        assert!(bisect.iter().all(|p| p.0 == Phase::Bisect));
        // The answer measured again before it is answered.
        assert_eq!(last.0, Phase::Confirm);
    }

    #[test]
    fn noise_answers_a_rate_that_met_twice_and_never_one_that_broke() {
        // A server that breaks at random near its limit: the answer met twice (its step and
        // the confirmation) and never broke.
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
            assert!(s.confirmed(), "{a}");
            assert_eq!(met.iter().filter(|&&m| m == a).count(), 2, "{a} {met:?}");
            assert!(!broke.contains(&a), "{a} {broke:?}");
            assert!(s.bad().unwrap() > a);
            assert!((1_400.0..=2_200.0).contains(&a), "{a}");
        }
    }

    #[test]
    fn a_first_step_that_breaks_searches_down() {
        // from 100 over a server that holds 50: 100 and 50 break, 25 meets, then bisection.
        let (s, path) = run(params(), threshold(50.0));
        assert_eq!(
            &path[..3],
            &[
                (Phase::Grow, 100.0),
                (Phase::Down, 50.0),
                (Phase::Down, 25.0)
            ]
        );
        let a = s.answer().unwrap();
        assert!((47.5..50.0).contains(&a), "{a} {path:?}");
        assert_eq!(s.end(), Some(End::Bracketed));
        assert_eq!(path.last().unwrap(), &(Phase::Confirm, a));
        // Down to the floor, no lower: 100 / 64 = 1.56/s is the last rate tried.
        let (s, path) = run(params(), threshold(1.0));
        assert_eq!(s.answer(), None);
        assert_eq!(s.end(), Some(End::NotMetAtFrom));
        assert_eq!(path.last().unwrap(), &(Phase::Down, 1.57));
        assert_eq!(path.len(), 7);
    }

    #[test]
    fn a_confirmation_that_breaks_sends_the_search_below_it() {
        // 1,000/s meets once by luck and breaks when repeated: it is broken, and the answer
        // is a lower rate that met twice.
        let mut seen = Vec::new();
        let (s, path) = run(params(), |r| {
            let again = seen.contains(&r);
            seen.push(r);
            if r < 900.0 || (r == 1_000.0 && !again) {
                Verdict::Met
            } else {
                Verdict::Broke
            }
        });
        let a = s.answer().unwrap();
        assert!(s.confirmed());
        assert!((855.0..900.0).contains(&a), "{a} {path:?}");
        assert!(path.contains(&(Phase::Confirm, 1_000.0)), "{path:?}");
        assert_eq!(path.last().unwrap(), &(Phase::Confirm, a));
    }

    #[test]
    fn a_step_that_breaks_below_one_that_met_is_non_monotonic() {
        // A server that holds 800/s for its first four steps and then only under 600/s: 800
        // met at step 4, its confirmation broke, and 600 broke below it.
        let mut n = 0;
        let (s, path) = run(params(), |r| {
            n += 1;
            if r <= 800.0 && n <= 4 || r < 600.0 {
                Verdict::Met
            } else {
                Verdict::Broke
            }
        });
        assert_eq!(
            s.non_monotonic(),
            &[NonMonotonic {
                met: 800.0,
                broke: 600.0
            }][..],
            "{path:?}"
        );
        let a = s.answer().unwrap();
        assert!(a < 600.0 && s.confirmed(), "{a} {path:?}");
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
        assert_eq!(path.last().unwrap(), &(Phase::Confirm, 1_000.0));
        assert_eq!(path.len(), 6); // 100, 200, 400, 800, 1000, 1000 again
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
