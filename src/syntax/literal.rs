//! Turning literal tokens into values: integers with `_`, durations, sizes, rates, percentages and
//! RFC 3339 timestamps. Each returns an error message for the diagnostic on overflow or nonsense.

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::ast::RateUnit;

fn digits(s: &str) -> String {
    s.chars().filter(|&c| c != '_').collect()
}

pub fn int(s: &str) -> Result<i64, String> {
    digits(s)
        .parse::<i64>()
        .map_err(|_| format!("integer `{s}` does not fit in 64 bits"))
}

pub fn float(s: &str) -> Result<f64, String> {
    let v = digits(s)
        .parse::<f64>()
        .map_err(|_| format!("`{s}` is not a number"))?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!("number `{s}` is too large"))
    }
}

/// Splits `12.5ms` into (`12.5`, `ms`).
fn split_number(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '_' || c == '.' || c == 'e' || c == 'E'))
        .unwrap_or(s.len());
    // An exponent sign belongs to the number: `1e-3s`.
    let end = if end < s.len() && s[..end].ends_with(['e', 'E']) && s[end..].starts_with(['+', '-'])
    {
        end + 1
            + s[end + 1..]
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(s.len() - end - 1)
    } else {
        end
    };
    s.split_at(end)
}

fn duration_unit_ns(unit: &str) -> Option<f64> {
    Some(match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        "d" => 86_400e9,
        "w" => 604_800e9,
        _ => return None,
    })
}

/// `1h30m` -> nanoseconds.
pub fn duration(s: &str) -> Result<i64, String> {
    let mut rest = s;
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let (num, tail) = split_number(rest);
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let n = float(num)?;
        let scale =
            duration_unit_ns(unit).ok_or_else(|| format!("unknown duration unit `{unit}`"))?;
        total += n * scale;
        rest = next;
    }
    if total.fract() != 0.0 {
        return Err(format!(
            "duration `{s}` is not a whole number of nanoseconds"
        ));
    }
    if total > i64::MAX as f64 {
        return Err(format!(
            "duration `{s}` is too long (at most about 292 years)"
        ));
    }
    Ok(total as i64)
}

pub fn size(s: &str) -> Result<u64, String> {
    let (num, unit) = split_number(s);
    let scale: f64 = match unit {
        "B" => 1.0,
        "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "TiB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return Err(format!("unknown size unit `{unit}`")),
    };
    let v = float(num)? * scale;
    if v.fract() != 0.0 {
        return Err(format!("size `{s}` is not a whole number of bytes"));
    }
    if v > u64::MAX as f64 {
        return Err(format!("size `{s}` is too large"));
    }
    Ok(v as u64)
}

/// `5000/s` -> events per second.
pub fn rate(s: &str) -> Result<(f64, RateUnit), String> {
    let (num, unit) = s.split_once('/').unwrap_or((s, "s"));
    let n = float(num)?;
    let (per_second, unit) = match unit {
        "s" => (n, RateUnit::Second),
        "m" | "min" => (n / 60.0, RateUnit::Minute),
        "h" => (n / 3600.0, RateUnit::Hour),
        _ => return Err(format!("unknown rate unit `/{unit}`")),
    };
    Ok((per_second, unit))
}

/// `14.7gbit`, `10Gbit/s` -> bits per second. Decimal prefixes: a 10 Gbit/s link carries
/// 10^10 bits a second.
pub fn bandwidth(s: &str) -> Result<f64, String> {
    let unit = s.trim_end_matches("/s");
    let unit = unit
        .strip_suffix("bit")
        .ok_or_else(|| format!("`{s}` is not a bandwidth"))?;
    let (num, scale) = match unit.as_bytes().last() {
        Some(b'k' | b'K') => (&unit[..unit.len() - 1], 1e3),
        Some(b'm' | b'M') => (&unit[..unit.len() - 1], 1e6),
        Some(b'g' | b'G') => (&unit[..unit.len() - 1], 1e9),
        Some(b't' | b'T') => (&unit[..unit.len() - 1], 1e12),
        _ => (unit, 1.0),
    };
    let v = float(num)? * scale;
    if !v.is_finite() {
        return Err(format!("bandwidth `{s}` is too large"));
    }
    Ok(v)
}

pub fn percent(s: &str) -> Result<f64, String> {
    float(s.trim_end_matches('%'))
}

/// RFC 3339 -> nanoseconds since the epoch, UTC.
pub fn timestamp(s: &str) -> Result<i64, String> {
    let upper = s.to_ascii_uppercase();
    let t = OffsetDateTime::parse(&upper, &Rfc3339)
        .map_err(|e| format!("`{s}` is not a valid RFC 3339 timestamp: {e}"))?;
    i64::try_from(t.unix_timestamp_nanos())
        .map_err(|_| format!("timestamp `{s}` is outside 1677..2262, the nanosecond range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration("500ms"), Ok(500_000_000));
        assert_eq!(duration("1h30m"), Ok(5_400_000_000_000));
        assert_eq!(duration("1d"), Ok(86_400_000_000_000));
        assert_eq!(duration("1.5s"), Ok(1_500_000_000));
        assert_eq!(duration("2min"), Ok(120_000_000_000));
        assert!(duration("100000000w").is_err());
    }

    #[test]
    fn sizes_rates_ints() {
        assert_eq!(size("64MiB"), Ok(64 << 20));
        assert_eq!(size("1KB"), Ok(1000));
        assert_eq!(rate("5000/s").map(|r| r.0), Ok(5000.0));
        assert_eq!(rate("60/min").map(|r| r.0), Ok(1.0));
        assert_eq!(int("100_000"), Ok(100_000));
        assert!(int("99999999999999999999").is_err());
        assert_eq!(percent("0.1%"), Ok(0.1));
    }

    #[test]
    fn timestamps() {
        assert_eq!(timestamp("1970-01-01T00:00:01Z"), Ok(1_000_000_000));
        assert_eq!(
            timestamp("2016-01-01T00:00:00Z"),
            Ok(1_451_606_400_000_000_000)
        );
        assert_eq!(timestamp("1970-01-01T01:00:00+01:00"), Ok(0));
        assert!(timestamp("2016-02-30T00:00:00Z").is_err());
    }
}
