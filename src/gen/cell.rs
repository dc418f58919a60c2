//! One generated value (`Cell`) and the column types it is coerced to (`Kind`). Encoders read
//! cells; they never see a `Gen`.

use std::fmt::Write;

use time::OffsetDateTime;

/// One value of a generated row.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Null,
    Long(i64),
    Double(f64),
    Bool(bool),
    Str(String),
    /// Nanoseconds since the Unix epoch, UTC (already truncated to the column's unit).
    Timestamp(i64),
    /// Nanoseconds. Only an intermediate (timestamp arithmetic) or a column of unknown type.
    Duration(i64),
}

impl Cell {
    /// The value as text: the series key for routing, `%s`, `string(...)` and `pick_by`.
    /// Long: decimal; Double: Rust's shortest round-trip form (`1.5`, `100`, `NaN`, `inf`);
    /// Bool: `true`/`false`; Timestamp: RFC 3339 UTC with the fraction trimmed of trailing
    /// zeros (`2016-01-01T00:00:10Z`, `...:10.5Z`); Duration: decimal nanoseconds; Null: empty.
    pub fn to_text(&self) -> String {
        match self {
            Cell::Null => String::new(),
            Cell::Long(v) => v.to_string(),
            Cell::Double(v) => v.to_string(),
            Cell::Bool(b) => b.to_string(),
            Cell::Str(s) => s.clone(),
            Cell::Timestamp(ns) => rfc3339_trimmed(*ns),
            Cell::Duration(ns) => ns.to_string(),
        }
    }

    /// As a number, for arithmetic and walks: Long, Double, Bool (0/1), Timestamp and
    /// Duration (ns) and Str parsed as a number; `None` otherwise.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Cell::Long(v) => Some(*v as f64),
            Cell::Double(v) => Some(*v),
            Cell::Bool(b) => Some(f64::from(u8::from(*b))),
            Cell::Timestamp(v) | Cell::Duration(v) => Some(*v as f64),
            Cell::Str(s) => s.trim().parse().ok(),
            Cell::Null => None,
        }
    }
}

fn rfc3339_trimmed(ns: i64) -> String {
    let Ok(t) = OffsetDateTime::from_unix_timestamp_nanos(i128::from(ns)) else {
        return ns.to_string();
    };
    let mut s = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    let frac = t.nanosecond();
    if frac != 0 {
        let digits = format!("{frac:09}");
        let _ = write!(s, ".{}", digits.trim_end_matches('0'));
    }
    s.push('Z');
    s
}

/// What a column's declared type makes of a generated value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `long`, `int`, `short`, `byte`, `integer`, `bigint`.
    Long,
    /// `double`, `float`.
    Double,
    /// `boolean`, `bool`.
    Bool,
    /// `symbol`, `varchar`, `string`, `text`, `char`, `uuid`.
    Str,
    /// `timestamp`, `date`, with the unit's size in ns (`ns` 1, `us` 1000, `ms` 10^6, `s` 10^9).
    Timestamp { unit_ns: i64 },
    /// Any other type name: the generator's value is kept as it is.
    Any,
}

impl Kind {
    pub fn of(ty: &str, unit: Option<&str>) -> Kind {
        match ty {
            "long" | "int" | "short" | "byte" | "integer" | "bigint" => Kind::Long,
            "double" | "float" => Kind::Double,
            "boolean" | "bool" => Kind::Bool,
            "symbol" | "varchar" | "string" | "text" | "char" | "uuid" => Kind::Str,
            "timestamp" | "date" => Kind::Timestamp {
                unit_ns: unit_ns(unit),
            },
            _ => Kind::Any,
        }
    }

    /// Coerces a generated value to this column type. Long from Double truncates toward zero
    /// (saturating; NaN is 0), as TSBS's `int64(v)`; Str to a number parses and is Null when it
    /// does not parse; numbers to Str use `to_text`; a timestamp is truncated (floored) to the
    /// column's unit. Null stays Null.
    pub fn coerce(self, v: Cell) -> Cell {
        match self {
            Kind::Any => v,
            Kind::Long => match v {
                Cell::Long(_) | Cell::Null => v,
                Cell::Double(d) => Cell::Long(d as i64),
                Cell::Bool(b) => Cell::Long(i64::from(b)),
                Cell::Timestamp(n) | Cell::Duration(n) => Cell::Long(n),
                Cell::Str(s) => parse_long(&s),
            },
            Kind::Double => match v {
                Cell::Double(_) | Cell::Null => v,
                Cell::Str(s) => s.trim().parse().map_or(Cell::Null, Cell::Double),
                other => other.as_f64().map_or(Cell::Null, Cell::Double),
            },
            Kind::Bool => match v {
                Cell::Bool(_) | Cell::Null => v,
                Cell::Long(n) => Cell::Bool(n != 0),
                Cell::Double(d) => Cell::Bool(d != 0.0),
                Cell::Str(s) => match s.trim() {
                    "true" => Cell::Bool(true),
                    "false" => Cell::Bool(false),
                    _ => Cell::Null,
                },
                Cell::Timestamp(_) | Cell::Duration(_) => Cell::Null,
            },
            Kind::Str => match v {
                Cell::Str(_) | Cell::Null => v,
                other => Cell::Str(other.to_text()),
            },
            Kind::Timestamp { unit_ns } => match v {
                Cell::Timestamp(n) | Cell::Long(n) => Cell::Timestamp(floor_to(n, unit_ns)),
                Cell::Double(d) => Cell::Timestamp(floor_to(d as i64, unit_ns)),
                Cell::Str(s) => match parse_timestamp(&s) {
                    Some(n) => Cell::Timestamp(floor_to(n, unit_ns)),
                    None => Cell::Null,
                },
                Cell::Null | Cell::Bool(_) | Cell::Duration(_) => Cell::Null,
            },
        }
    }
}

fn parse_long(s: &str) -> Cell {
    let s = s.trim();
    if let Ok(n) = s.parse::<i64>() {
        return Cell::Long(n);
    }
    s.parse::<f64>()
        .map_or(Cell::Null, |d| Cell::Long(d as i64))
}

/// RFC 3339, or `YYYY-MM-DD HH:MM:SS[.f]` taken as UTC (the pgbench CSV style).
fn parse_timestamp(s: &str) -> Option<i64> {
    use time::format_description::well_known::Rfc3339;
    let s = s.trim();
    let t = match OffsetDateTime::parse(s, &Rfc3339) {
        Ok(t) => t,
        Err(_) => {
            let fmt = time::macros::format_description!(
                "[year]-[month]-[day] [hour]:[minute]:[second][optional [.[subsecond]]]"
            );
            time::PrimitiveDateTime::parse(s, &fmt).ok()?.assume_utc()
        }
    };
    i64::try_from(t.unix_timestamp_nanos()).ok()
}

fn floor_to(ns: i64, unit_ns: i64) -> i64 {
    if unit_ns <= 1 {
        ns
    } else {
        ns.div_euclid(unit_ns) * unit_ns
    }
}

/// The size of a timestamp unit in nanoseconds; unknown or absent units are nanoseconds.
pub fn unit_ns(unit: Option<&str>) -> i64 {
    match unit {
        Some("us") => 1_000,
        Some("ms") => 1_000_000,
        Some("s") => 1_000_000_000,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms() {
        assert_eq!(Cell::Long(-4).to_text(), "-4");
        assert_eq!(Cell::Double(100.0).to_text(), "100");
        assert_eq!(Cell::Double(0.1).to_text(), "0.1");
        assert_eq!(Cell::Bool(true).to_text(), "true");
        assert_eq!(Cell::Null.to_text(), "");
        assert_eq!(
            Cell::Timestamp(1_451_606_410_500_000_000).to_text(),
            "2016-01-01T00:00:10.5Z"
        );
        assert_eq!(
            Cell::Timestamp(1_451_606_400_000_000_000).to_text(),
            "2016-01-01T00:00:00Z"
        );
    }

    #[test]
    fn coercion_by_column_type() {
        let long = Kind::of("long", None);
        assert_eq!(long.coerce(Cell::Double(58.97)), Cell::Long(58));
        assert_eq!(long.coerce(Cell::Double(-0.5)), Cell::Long(0));
        assert_eq!(long.coerce(Cell::Double(f64::NAN)), Cell::Long(0));
        assert_eq!(long.coerce(Cell::Str("12".into())), Cell::Long(12));
        assert_eq!(long.coerce(Cell::Str("x".into())), Cell::Null);
        assert_eq!(
            Kind::of("double", None).coerce(Cell::Long(3)),
            Cell::Double(3.0)
        );
        assert_eq!(
            Kind::of("symbol", None).coerce(Cell::Long(7)),
            Cell::Str("7".into())
        );
        assert_eq!(
            Kind::of("boolean", None).coerce(Cell::Long(0)),
            Cell::Bool(false)
        );
        let ms = Kind::of("timestamp", Some("ms"));
        assert_eq!(ms, Kind::Timestamp { unit_ns: 1_000_000 });
        assert_eq!(
            ms.coerce(Cell::Timestamp(1_999_999)),
            Cell::Timestamp(1_000_000)
        );
        assert_eq!(ms.coerce(Cell::Timestamp(-1)), Cell::Timestamp(-1_000_000));
        assert_eq!(
            Kind::of("timestamp", Some("us")).coerce(Cell::Str("2017-01-01 00:23:38".into())),
            Cell::Timestamp(1_483_230_218_000_000_000)
        );
        assert_eq!(
            Kind::of("timestamp", None).coerce(Cell::Str("2017-01-01T00:23:38Z".into())),
            Cell::Timestamp(1_483_230_218_000_000_000)
        );
        assert_eq!(
            Kind::of("geohash", None).coerce(Cell::Long(1)),
            Cell::Long(1)
        );
        assert_eq!(long.coerce(Cell::Null), Cell::Null);
    }
}
