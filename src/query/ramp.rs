//! The intended send times of a linear ramp of the arrival rate: from r0 to r1 over a span T,
//! so the rate at t is r0 + (r1 − r0)·t/T and the sends due by t are its integral,
//! N(t) = r0·t + (r1 − r0)·t²/(2T). Send k goes at the t where N(t) = k, solved exactly (no
//! summing of gaps, so no drift however long the ramp). After T the ramp holds r1, so the
//! times stay defined for every k (a schedule stops at its end anyway).

/// A ramp from `from` to `to` (sends per second, both positive) over `span_s` seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ramp {
    pub from: f64,
    pub to: f64,
    pub span_s: f64,
}

impl Ramp {
    /// Sends due over the whole ramp: its mean rate times its span.
    pub fn total(&self) -> f64 {
        (self.from + self.to) / 2.0 * self.span_s
    }

    /// Seconds from the ramp's start to send `k` (the first is send 0, at 0).
    pub fn offset(&self, k: u64) -> f64 {
        self.at(k as f64)
    }

    /// Seconds from the ramp's start to where `k` sends are due, for any `k` ≥ 0 (a
    /// schedule whose ramp starts part-way through a unit, as an ingest's stage after another
    /// does): the inverse of `due`.
    pub fn at(&self, k: f64) -> f64 {
        if self.from == self.to {
            // A step: no square root to round (and a span may be endless).
            return k / self.from;
        }
        let total = self.total();
        if k > total {
            return self.span_s + (k - total) / self.to;
        }
        // a·t² + b·t − k = 0 with a = (r1 − r0)/(2T), b = r0. The root written as
        // 2k / (b + √(b² + 4ak)) has no cancellation when a is tiny and is exact for a = 0;
        // b² + 4ak ≥ 0 for every k up to the total, ramping up or down.
        let a = (self.to - self.from) / (2.0 * self.span_s);
        let b = self.from;
        let disc = (b * b + 4.0 * a * k).max(0.0);
        2.0 * k / (b + disc.sqrt())
    }

    /// Sends due by `t` seconds from the ramp's start, fractional: the integral of the rate,
    /// r0·t + (r1 − r0)·t²/(2T); past the span, the end rate held.
    pub fn due(&self, t: f64) -> f64 {
        if self.from == self.to {
            return self.from * t;
        }
        if t >= self.span_s {
            return self.total() + (t - self.span_s) * self.to;
        }
        self.from * t + (self.to - self.from) * t * t / (2.0 * self.span_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count_before(r: &Ramp, t: f64) -> u64 {
        (0..).take_while(|&k| r.offset(k) < t).count() as u64
    }

    #[test]
    fn slot_times_solve_the_integral_of_the_rate() {
        let r = Ramp {
            from: 100.0,
            to: 300.0,
            span_s: 2.0,
        };
        // N(t) = 100 t + 50 t²: send 0 at 0, send 150 at 1 s (100 + 50), send 400 at 2 s.
        assert_eq!(r.offset(0), 0.0);
        assert!((r.offset(150) - 1.0).abs() < 1e-12, "{}", r.offset(150));
        assert!((r.offset(400) - 2.0).abs() < 1e-12, "{}", r.offset(400));
        // In between, every time is the root: N(offset(k)) = k.
        for k in [1u64, 7, 99, 233, 399] {
            let t = r.offset(k);
            let n = 100.0 * t + 50.0 * t * t;
            assert!((n - k as f64).abs() < 1e-9, "{k}: {n}");
        }
        // Past the ramp it holds the end rate.
        assert!((r.offset(700) - 3.0).abs() < 1e-12);
    }

    #[test]
    fn a_ramp_holds_its_mean_rate_times_its_span_up_or_down() {
        for (from, to, span_s) in [
            (200.0, 1000.0, 2.0),
            (1000.0, 200.0, 2.0),
            (1.0, 10.0, 4.0),
            (500.0, 500.0, 3.0),
        ] {
            let r = Ramp { from, to, span_s };
            let want = (from + to) / 2.0 * span_s;
            assert_eq!(count_before(&r, span_s), want as u64, "{from} to {to}");
            // The times grow, and the gaps follow the rate: shrinking up, widening down.
            let gaps: Vec<f64> = (0..20).map(|k| r.offset(k + 1) - r.offset(k)).collect();
            assert!(gaps.iter().all(|g| *g > 0.0));
            if from < to {
                assert!(gaps[19] < gaps[0]);
            } else if from > to {
                assert!(gaps[19] > gaps[0]);
            } else {
                assert!((gaps[19] - gaps[0]).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn due_is_the_inverse_of_at_on_and_past_the_ramp() {
        for r in [
            Ramp {
                from: 100.0,
                to: 300.0,
                span_s: 2.0,
            },
            Ramp {
                from: 900.0,
                to: 30.0,
                span_s: 1.5,
            },
            Ramp {
                from: 250.0,
                to: 250.0,
                span_s: f64::INFINITY,
            },
        ] {
            for k in [0.0, 0.25, 1.0, 99.5, 300.0, 399.9, 777.0] {
                let t = r.at(k);
                assert!((r.due(t) - k).abs() < 1e-9, "{r:?} {k}: {}", r.due(t));
            }
        }
        // A step's times are the plain quotient, exactly.
        let step = Ramp {
            from: 10_000.0,
            to: 10_000.0,
            span_s: f64::INFINITY,
        };
        assert_eq!(step.at(1000.0), 0.1);
        assert_eq!(step.due(0.25), 2500.0);
    }

    #[test]
    fn half_a_ramp_up_holds_a_quarter_of_its_sends_and_a_bit() {
        // N(T/2) = r0·T/2 + (r1 − r0)·T/8: from near 0 to R, a quarter of the whole.
        let r = Ramp {
            from: 1.0,
            to: 2001.0,
            span_s: 2.0,
        };
        // N(1 s) = 1 + 500: sends 0 to 500 are due before it (501 at 1 s itself, give or take
        // the last bit of the float).
        let half = count_before(&r, 1.0);
        assert!((501..=502).contains(&half), "{half}");
        assert!((r.offset(501) - 1.0).abs() < 1e-12);
    }
}
