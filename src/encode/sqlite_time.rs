//! Timestamps as SQLite text, the form SQLite's date functions read: what the SQLite
//! driver stores and query runs bind, so both write the same bytes.

const NS_PER_US: i64 = 1_000;
const US_PER_DAY: i64 = 86_400_000_000;

/// Appends the UTC time `ns` (nanoseconds since the Unix epoch) as `YYYY-MM-DD HH:MM:SS.ffffff`,
/// floored to the microsecond. Always 26 bytes (an `i64` of nanoseconds spans the years 1677
/// to 2262), so comparing the texts compares the times; SQLite's date functions read the form.
pub fn sqlite_timestamp_text(ns: i64, out: &mut Vec<u8>) {
    let us = ns.div_euclid(NS_PER_US);
    let days = us.div_euclid(US_PER_DAY);
    let of_day = us.rem_euclid(US_PER_DAY);
    let (year, month, day) = super::csv::civil_from_days(days);
    let secs = of_day / 1_000_000;
    let mut text = [0u8; 26];
    put_digits(&mut text[0..4], year);
    text[4] = b'-';
    put_digits(&mut text[5..7], i64::from(month));
    text[7] = b'-';
    put_digits(&mut text[8..10], i64::from(day));
    text[10] = b' ';
    put_digits(&mut text[11..13], secs / 3600);
    text[13] = b':';
    put_digits(&mut text[14..16], secs / 60 % 60);
    text[16] = b':';
    put_digits(&mut text[17..19], secs % 60);
    text[19] = b'.';
    put_digits(&mut text[20..26], of_day % 1_000_000);
    out.extend_from_slice(&text);
}

/// Fills `dst` with the low decimal digits of `v` (non-negative), zero-padded.
fn put_digits(dst: &mut [u8], mut v: i64) {
    for b in dst.iter_mut().rev() {
        *b = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts_text(ns: i64) -> String {
        let mut out = b"x".to_vec();
        sqlite_timestamp_text(ns, &mut out);
        String::from_utf8(out[1..].to_vec()).unwrap()
    }

    #[test]
    fn sqlite_timestamps_are_fixed_width_and_floored() {
        assert_eq!(ts_text(0), "1970-01-01 00:00:00.000000");
        assert_eq!(
            ts_text(1_451_606_400_000_000_999),
            "2016-01-01 00:00:00.000000"
        );
        assert_eq!(
            ts_text(1_451_606_401_234_567_890),
            "2016-01-01 00:00:01.234567"
        );
        assert_eq!(ts_text(-1), "1969-12-31 23:59:59.999999");
        assert_eq!(
            ts_text(951_782_400_000_000_000),
            "2000-02-29 00:00:00.000000"
        );
        assert_eq!(ts_text(i64::MIN), "1677-09-21 00:12:43.145224");
        assert_eq!(ts_text(i64::MAX), "2262-04-11 23:47:16.854775");
    }

    #[test]
    fn sqlite_timestamps_agree_with_the_time_crate_and_sort_as_time() {
        let format = time::macros::format_description!(
            "[year]-[month]-[day] [hour]:[minute]:[second].[subsecond digits:6]"
        );
        let mut prev: Option<String> = None;
        // Steps of a prime number of seconds plus odd nanoseconds, across leap years and
        // centuries, from before the epoch to past 2100.
        let mut ns = -2_208_988_800_000_000_000i64;
        while ns < 4_200_000_000_000_000_000 {
            let text = ts_text(ns);
            let floored = ns.div_euclid(1_000) * 1_000;
            let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(floored)).unwrap();
            assert_eq!(text, t.format(&format).unwrap(), "{ns}");
            if let Some(p) = &prev {
                assert!(p < &text, "{p} then {text}");
            }
            prev = Some(text);
            ns += 86_413 * 1_000_000_007 + 3_601_000_000_011;
        }
    }
}
