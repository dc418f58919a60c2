//! Welch's t-test of two runs' per-interval means, with each run's sample size corrected for
//! the autocorrelation between neighbouring intervals (as latte does): a slow minute of a
//! server makes several slow intervals in a row, and counting them as independent would make
//! a test far surer than the data allow. docs/compare.md, "Method".
//!
//! The autocorrelation time is estimated with Geyer's initial positive sequence (the sum of
//! the autocorrelations, cut where a pair of them stops being positive); the t distribution
//! comes from `statrs`.

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::{Better, Samples, Test, Verdict};

/// Fewer intervals than this are not a sample to test. Three is the least a standard deviation
/// and a t-test with a degree of freedom or more can be had from: a 5-second run at the default
/// 1 s interval has four or five, and a threefold drop between two of them is plain to see;
/// the t distribution's wide tails at so few degrees of freedom keep a same-vs-same pair from
/// being flagged more often than alpha.
pub const MIN_SAMPLES: usize = 3;

/// Below this effective size a standard deviation says nothing (and Welch's degrees of freedom
/// would be under 1).
pub const MIN_EFFECTIVE: f64 = 2.0;

/// The autocorrelation time `tau` of `xs` (1 for independent samples: `n / tau` is the
/// effective sample size) and the lag-1 autocorrelation. A constant series has `tau = 1`.
pub fn autocorrelation_time(xs: &[f64]) -> (f64, f64) {
    let n = xs.len();
    if n < 3 {
        return (1.0, 0.0);
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let dev: Vec<f64> = xs.iter().map(|x| x - mean).collect();
    let c0 = dev.iter().map(|d| d * d).sum::<f64>();
    if c0 <= 0.0 || !c0.is_finite() {
        return (1.0, 0.0);
    }
    let rho = |k: usize| -> f64 {
        dev[..n - k]
            .iter()
            .zip(&dev[k..])
            .map(|(a, b)| a * b)
            .sum::<f64>()
            / c0
    };
    let lag1 = rho(1);
    // Geyer (1992): the sums of adjacent pairs of autocorrelations are positive for a
    // stationary series, so the first non-positive pair marks where noise takes over. The
    // cut at n/2 keeps the estimate to lags with enough pairs behind them.
    let mut sum = 0.0;
    let mut m = 0;
    while 2 * m + 1 < n / 2 {
        let pair = if m == 0 { 1.0 } else { rho(2 * m) } + rho(2 * m + 1);
        if pair <= 0.0 {
            break;
        }
        sum += pair;
        m += 1;
    }
    // Negative correlation would claim more information than there are samples: never.
    let tau = (2.0 * sum - 1.0).clamp(1.0, n as f64);
    (tau, lag1)
}

/// The samples' size, effective size, mean, standard deviation and lag-1 autocorrelation;
/// `None` without any.
pub fn samples(xs: &[f64]) -> Option<Samples> {
    let n = xs.len();
    if n == 0 {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let stddev = if n > 1 {
        (xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    let (tau, lag1) = autocorrelation_time(xs);
    Some(Samples {
        n,
        n_eff: n as f64 / tau,
        mean,
        stddev,
        lag1,
    })
}

/// Whether both runs have enough samples to be tested.
pub fn testable(base: &Samples, new: &Samples) -> bool {
    [base, new]
        .iter()
        .all(|s| s.n >= MIN_SAMPLES && s.n_eff >= MIN_EFFECTIVE)
}

/// Welch's t-test of `new.mean - base.mean` at `alpha` (two-sided), with the effective sample
/// sizes in the standard errors and in the Welch–Satterthwaite degrees of freedom. `None` when
/// a run has too few samples or the base mean is 0 (no relative change exists).
pub fn welch(base: &Samples, new: &Samples, alpha: f64) -> Option<Test> {
    if !testable(base, new) || base.mean == 0.0 {
        return None;
    }
    let v1 = base.stddev * base.stddev / base.n_eff;
    let v2 = new.stddev * new.stddev / new.n_eff;
    let var = v1 + v2;
    let diff = new.mean - base.mean;
    let df = if var > 0.0 {
        var * var / (v1 * v1 / (base.n_eff - 1.0) + v2 * v2 / (new.n_eff - 1.0))
    } else {
        base.n_eff + new.n_eff - 2.0
    };
    let se = var.sqrt();
    // Both runs constant (HDR percentiles are quantised, an idle interval is 0): any
    // difference is certain, none is no change.
    let (t, p, half) = if se > 0.0 {
        let dist = StudentsT::new(0.0, 1.0, df).ok()?;
        let t = diff / se;
        (
            t,
            2.0 * dist.sf(t.abs()),
            dist.inverse_cdf(1.0 - alpha / 2.0) * se,
        )
    } else if diff == 0.0 {
        (0.0, 1.0, 0.0)
    } else {
        (diff.signum() * f64::INFINITY, 0.0, 0.0)
    };
    let scale = base.mean.abs();
    Some(Test {
        df,
        t,
        p: p.clamp(0.0, 1.0),
        change: diff / scale,
        ci_low: (diff - half) / scale,
        ci_high: (diff + half) / scale,
    })
}

/// What a test says about a metric whose `better` direction is given.
pub fn verdict(test: &Test, better: Better, alpha: f64) -> Verdict {
    if test.p >= alpha {
        return Verdict::NoSignificantChange;
    }
    match (better, test.change > 0.0) {
        (Better::Higher, true) | (Better::Lower, false) => Verdict::Better,
        _ => Verdict::Worse,
    }
}

/// How much worse the point estimate is, as a fraction (negative when it is better).
pub fn worse_by(test: &Test, better: Better) -> f64 {
    worse_change(test.change, better)
}

/// How much worse a relative change `new / base - 1` is, as a fraction (negative when it is
/// better).
pub fn worse_change(change: f64, better: Better) -> f64 {
    match better {
        Better::Higher => -change,
        Better::Lower => change,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small seeded generator for the tests (SplitMix64, then Box–Muller): the tests need
    /// reproducible noise, not a dependency.
    struct Rng(u64);

    impl Rng {
        fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        fn uniform(&mut self) -> f64 {
            ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }

        fn normal(&mut self) -> f64 {
            let (u, v) = (self.uniform(), self.uniform());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        }
    }

    fn white(rng: &mut Rng, n: usize, mean: f64, sd: f64) -> Vec<f64> {
        (0..n).map(|_| mean + sd * rng.normal()).collect()
    }

    /// AR(1): x[i] = phi x[i-1] + e, scaled so the series' own standard deviation is `sd`.
    fn ar1(rng: &mut Rng, n: usize, mean: f64, sd: f64, phi: f64) -> Vec<f64> {
        let innovation = sd * (1.0 - phi * phi).sqrt();
        let mut x = sd * rng.normal();
        (0..n)
            .map(|_| {
                x = phi * x + innovation * rng.normal();
                mean + x
            })
            .collect()
    }

    fn flagged(base: &[f64], new: &[f64]) -> bool {
        let (b, n) = (samples(base).unwrap(), samples(new).unwrap());
        let t = welch(&b, &n, 0.05).unwrap();
        verdict(&t, Better::Higher, 0.05) != Verdict::NoSignificantChange
    }

    /// The same test with the autocorrelation ignored: what a plain Welch test would say.
    fn flagged_naive(base: &[f64], new: &[f64]) -> bool {
        let (mut b, mut n) = (samples(base).unwrap(), samples(new).unwrap());
        b.n_eff = b.n as f64;
        n.n_eff = n.n as f64;
        welch(&b, &n, 0.05).unwrap().p < 0.05
    }

    #[test]
    fn a_ten_percent_throughput_drop_with_low_noise_is_worse() {
        let mut rng = Rng(1);
        let base = white(&mut rng, 60, 100_000.0, 2_000.0);
        let new = white(&mut rng, 60, 90_000.0, 2_000.0);
        let (b, n) = (samples(&base).unwrap(), samples(&new).unwrap());
        let t = welch(&b, &n, 0.05).unwrap();
        assert_eq!(verdict(&t, Better::Higher, 0.05), Verdict::Worse);
        assert!((t.change + 0.10).abs() < 0.01, "{t:?}");
        assert!(t.ci_low < t.change && t.change < t.ci_high, "{t:?}");
        assert!(t.ci_high < 0.0, "{t:?}");
        assert!((worse_by(&t, Better::Higher) - 0.10).abs() < 0.01);
        // The same drop in a latency is an improvement.
        assert_eq!(verdict(&t, Better::Lower, 0.05), Verdict::Better);
    }

    #[test]
    fn pairs_from_the_same_noise_are_flagged_at_about_alpha() {
        let mut rng = Rng(7);
        let flags = (0..200)
            .filter(|_| {
                let base = white(&mut rng, 60, 1000.0, 50.0);
                let new = white(&mut rng, 60, 1000.0, 50.0);
                flagged(&base, &new)
            })
            .count();
        assert!(flags <= 16, "{flags} of 200 flagged at alpha = 5%");
    }

    /// A gate must not fail a build for nothing: pairs drawn from one distribution are flagged
    /// at most alpha of the time, at every length a run gives, from the three intervals of a
    /// short run (where the t distribution's tails, not the data, keep the test honest) to
    /// the sixty of a minute.
    #[test]
    fn same_vs_same_pairs_are_flagged_at_most_alpha_at_every_length() {
        let mut rng = Rng(29);
        for n in [3, 4, 5, 8, 20, 60] {
            let pairs = 400;
            let flags = (0..pairs)
                .filter(|_| {
                    let base = white(&mut rng, n, 500.0, 25.0);
                    let new = white(&mut rng, n, 500.0, 25.0);
                    flagged(&base, &new)
                })
                .count();
            eprintln!("{n} intervals: {flags} of {pairs} same-vs-same pairs flagged");
            assert!(
                flags * 20 <= pairs,
                "{n} intervals: {flags} of {pairs} flagged at alpha = 5%"
            );
        }
    }

    /// A 5-second run at the default 1 s interval has four or five intervals whose rate is a
    /// sample; a threefold drop between two such runs is found with three of them.
    #[test]
    fn a_threefold_drop_over_a_few_intervals_is_worse() {
        let mut rng = Rng(5);
        for n in [3, 4, 5] {
            let base = white(&mut rng, n, 480.0, 15.0);
            let new = white(&mut rng, n, 160.0, 5.0);
            let (b, s) = (samples(&base).unwrap(), samples(&new).unwrap());
            let t = welch(&b, &s, 0.05).unwrap_or_else(|| panic!("{n} intervals not tested"));
            assert_eq!(
                verdict(&t, Better::Higher, 0.05),
                Verdict::Worse,
                "{n}: {t:?}"
            );
            assert!(worse_by(&t, Better::Higher) > 0.6, "{n}: {t:?}");
        }
    }

    #[test]
    fn an_autocorrelated_series_is_not_surer_than_its_effective_size_allows() {
        let mut rng = Rng(11);
        let (mut adjusted, mut naive) = (0, 0);
        let mut n_eff = Vec::new();
        for _ in 0..200 {
            let base = ar1(&mut rng, 600, 1000.0, 50.0, 0.9);
            let new = ar1(&mut rng, 600, 1000.0, 50.0, 0.9);
            adjusted += usize::from(flagged(&base, &new));
            naive += usize::from(flagged_naive(&base, &new));
            n_eff.push(samples(&base).unwrap().n_eff);
        }
        assert!(adjusted <= 16, "{adjusted} of 200 flagged at alpha = 5%");
        // Ignoring the correlation, about half of the same-process pairs look different.
        assert!(naive >= 60, "the naive test flagged only {naive} of 200");
        // AR(1) with phi = 0.9 has tau = (1 + phi) / (1 - phi) = 19: 600 intervals are worth
        // about 32 independent ones.
        n_eff.sort_by(f64::total_cmp);
        let median = n_eff[100];
        assert!((15.0..=50.0).contains(&median), "median n_eff {median}");
    }

    #[test]
    fn independent_samples_keep_most_of_their_size_and_a_constant_series_all() {
        let mut rng = Rng(3);
        let s = samples(&white(&mut rng, 600, 10.0, 1.0)).unwrap();
        assert!(s.n_eff > 400.0 && s.n_eff <= 600.0, "{s:?}");
        assert!(s.lag1.abs() < 0.15, "{s:?}");
        let c = samples(&[5.0; 20]).unwrap();
        assert_eq!((c.n_eff, c.stddev, c.lag1), (20.0, 0.0, 0.0));
        // Alternating samples are negatively correlated: never more than n.
        let alt: Vec<f64> = (0..50).map(|i| (i % 2) as f64).collect();
        assert_eq!(samples(&alt).unwrap().n_eff, 50.0);
    }

    #[test]
    fn too_few_samples_and_constant_runs() {
        let few = samples(&[1.0, 2.0]).unwrap();
        let many = samples(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        assert!(welch(&few, &many, 0.05).is_none());
        let a = samples(&[100.0; 10]).unwrap();
        let b = samples(&[120.0; 10]).unwrap();
        let t = welch(&a, &b, 0.05).unwrap();
        assert_eq!((t.p, t.change), (0.0, 0.2));
        assert_eq!(verdict(&t, Better::Lower, 0.05), Verdict::Worse);
        let same = welch(&a, &a, 0.05).unwrap();
        assert_eq!(
            verdict(&same, Better::Lower, 0.05),
            Verdict::NoSignificantChange
        );
        let zero = samples(&[0.0; 10]).unwrap();
        assert!(welch(&zero, &b, 0.05).is_none());
    }
}
