//! The summary every bench prints: the median of interleaved runs, which a noisy shared
//! machine moves less than the mean.

/// The median; the mean of the two middle values for an even count; NaN for no runs.
#[allow(dead_code)] // benches that print percentiles instead
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// `f` run `warmup` times untimed, then `iterations` times timed: the sorted times.
#[allow(dead_code)] // benches that time whole runs instead
pub fn time(warmup: usize, iterations: usize, mut f: impl FnMut()) -> Vec<std::time::Duration> {
    for _ in 0..warmup {
        f();
    }
    let mut samples: Vec<std::time::Duration> = (0..iterations)
        .map(|_| {
            let start = std::time::Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    samples.sort();
    samples
}

/// The nearest-rank percentile of sorted samples, in milliseconds.
#[allow(dead_code)] // benches that time whole runs instead
pub fn percentile_ms(sorted: &[std::time::Duration], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1].as_secs_f64() * 1000.0
}
