//! The summary every bench prints: the median of interleaved runs, which a noisy shared
//! machine moves less than the mean.

/// The median; the mean of the two middle values for an even count; NaN for no runs.
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
