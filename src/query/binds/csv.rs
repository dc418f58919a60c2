//! `binds from csv "file" (name type, ...)`: the file's rows, read once, each declared column
//! typed. Errors name the file, and for a value that does not parse its line and column.

use crate::gen::{Cell, Kind, ReadFile};
use crate::plan::CsvPlan;

/// The typed values of the declared columns, row by row, in file order.
pub(super) fn read(plan: &CsvPlan, read_file: ReadFile<'_>) -> Result<Vec<Vec<Cell>>, String> {
    let path = &plan.path;
    // Values are quoted only from a `.csv` file: a path naming some other file (one of
    // credentials, say) must not get its contents printed (the checker's rule for headers).
    let quoted = path.ends_with(".csv");
    let bytes = read_file(path).map_err(|e| format!("cannot read CSV file {path:?}: {e}"))?;
    let mut reader = ::csv::ReaderBuilder::new()
        .trim(::csv::Trim::Headers)
        .from_reader(bytes.as_slice());
    let header = reader
        .headers()
        .map_err(|e| format!("cannot read the header of CSV file {path:?}: {e}"))?
        .clone();
    let mut columns = Vec::with_capacity(plan.columns.len());
    for (name, ty) in &plan.columns {
        let at = header.iter().position(|h| h == name).ok_or_else(|| {
            if quoted {
                format!(
                    "CSV file {path:?} has no column `{name}` (its header: {})",
                    header.iter().collect::<Vec<_>>().join(",")
                )
            } else {
                format!("CSV file {path:?} has no column `{name}`")
            }
        })?;
        let ty = Type::of(ty).ok_or_else(|| format!("unknown CSV column type `{ty}`"))?;
        columns.push((at, name.as_str(), ty));
    }
    let mut rows = Vec::new();
    let mut record = ::csv::StringRecord::new();
    loop {
        match reader.read_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(format!("CSV file {path:?}: {e}")),
        }
        let line = record.position().map_or(0, |p| p.line());
        let mut row = Vec::with_capacity(columns.len());
        for &(at, name, ty) in &columns {
            let raw = record.get(at).unwrap_or("");
            row.push(ty.parse(raw).ok_or_else(|| {
                let shown = if quoted {
                    format!("{raw:?}")
                } else {
                    "the value".to_string()
                };
                format!(
                    "CSV file {path:?}, line {line}, column `{name}`: {shown} is not {}",
                    ty.expected()
                )
            })?);
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(format!("CSV file {path:?} has no rows"));
    }
    Ok(rows)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Type {
    Text,
    Int,
    Double,
    Bool,
    Timestamp,
}

impl Type {
    /// The types `check::phases` accepts for CSV columns.
    fn of(name: &str) -> Option<Type> {
        Some(match name {
            "text" | "varchar" => Type::Text,
            "int" | "bigint" | "long" => Type::Int,
            "double" | "float8" => Type::Double,
            "bool" | "boolean" => Type::Bool,
            "timestamp" | "timestamptz" => Type::Timestamp,
            _ => return None,
        })
    }

    fn expected(self) -> &'static str {
        match self {
            Type::Text => "text",
            Type::Int => "a 64-bit integer",
            Type::Double => "a number",
            Type::Bool => "a boolean (true/false, t/f, yes/no, on/off, 1/0)",
            Type::Timestamp => "a timestamp (RFC 3339, or YYYY-MM-DD HH:MM:SS[.f] taken as UTC)",
        }
    }

    /// Text is kept as written; other types ignore surrounding spaces, and an empty field is
    /// NULL (as in PostgreSQL's CSV format).
    fn parse(self, raw: &str) -> Option<Cell> {
        if self == Type::Text {
            return Some(Cell::Str(raw.to_string()));
        }
        let s = raw.trim();
        if s.is_empty() {
            return Some(Cell::Null);
        }
        match self {
            Type::Text => None,
            Type::Int => s.parse().ok().map(Cell::Long),
            Type::Double => s.parse().ok().map(Cell::Double),
            Type::Bool => match s.to_ascii_lowercase().as_str() {
                "true" | "t" | "yes" | "y" | "on" | "1" => Some(Cell::Bool(true)),
                "false" | "f" | "no" | "n" | "off" | "0" => Some(Cell::Bool(false)),
                _ => None,
            },
            Type::Timestamp => timestamp(s).map(Cell::Timestamp),
        }
    }
}

/// RFC 3339, or `YYYY-MM-DD HH:MM:SS[.f]` as UTC (the generator's rule, `gen::Kind`), also
/// with the other separator: `YYYY-MM-DDTHH:MM:SS` without a zone, or a space before a zone.
fn timestamp(s: &str) -> Option<i64> {
    let parse = |s: &str| match Kind::of("timestamp", Some("ns")).coerce(Cell::Str(s.into())) {
        Cell::Timestamp(ns) => Some(ns),
        _ => None,
    };
    parse(s).or_else(|| {
        let sep = *s.as_bytes().get(10)?;
        let other = match sep {
            b' ' => 'T',
            b'T' | b't' => ' ',
            _ => return None,
        };
        parse(&format!("{}{other}{}", &s[..10], &s[11..]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_in_either_form() {
        let t = 1_483_230_218_000_000_000; // 2017-01-01T00:23:38Z
        assert_eq!(timestamp("2017-01-01 00:23:38"), Some(t));
        assert_eq!(timestamp("2017-01-01T00:23:38Z"), Some(t));
        assert_eq!(timestamp("2017-01-01T00:23:38"), Some(t));
        assert_eq!(timestamp("2017-01-01 00:23:38Z"), Some(t));
        assert_eq!(timestamp("2017-01-01T02:23:38+02:00"), Some(t));
        assert_eq!(timestamp("2017-01-01 00:23:38.25"), Some(t + 250_000_000));
        assert_eq!(timestamp("2017-01-01"), None);
        assert_eq!(timestamp("yesterday"), None);
        assert_eq!(timestamp("2017-01-01é00:23:38"), None);
    }

    #[test]
    fn values_by_type() {
        assert_eq!(Type::Int.parse(" 42 "), Some(Cell::Long(42)));
        assert_eq!(Type::Int.parse("4.2"), None);
        assert_eq!(Type::Int.parse(""), Some(Cell::Null));
        assert_eq!(Type::Double.parse("0.1"), Some(Cell::Double(0.1)));
        assert_eq!(Type::Bool.parse("F"), Some(Cell::Bool(false)));
        assert_eq!(Type::Bool.parse("maybe"), None);
        assert_eq!(Type::Text.parse(" a "), Some(Cell::Str(" a ".into())));
        assert_eq!(Type::Text.parse(""), Some(Cell::Str(String::new())));
    }
}
