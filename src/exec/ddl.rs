//! SQL text for the table setup around an ingest phase: create, drop and empty a table whose
//! columns come from a `BatchSchema`, in the dialect of the target.
//!
//! Identifiers are always double-quoted (a `"` inside doubled), so a column named `time`,
//! `Host` or `a b` means exactly that column on every dialect. No indexes and no primary key:
//! the benchmark measures ingest into a plain table, and every engine would index differently.
//!
//! Dialects without SQL DDL (`victoriametrics`, `influxdb`, `ksqldb`, anything unknown) get
//! `None`: their tables appear when the first row arrives.

use crate::gen::batch::{BatchSchema, ColumnMeta, Physical};

/// The dialects that take the DDL below.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dialect {
    QuestDb,
    /// PostgreSQL, TimescaleDB (plus a hypertable) and `generic` share one type mapping.
    Postgres {
        hypertable: bool,
    },
    Sqlite,
}

fn dialect(name: &str) -> Option<Dialect> {
    match name {
        "questdb" => Some(Dialect::QuestDb),
        "postgres" | "generic" => Some(Dialect::Postgres { hypertable: false }),
        "timescaledb" => Some(Dialect::Postgres { hypertable: true }),
        "sqlite" => Some(Dialect::Sqlite),
        _ => None,
    }
}

/// Appends `name` as a double-quoted SQL identifier.
pub fn push_ident(out: &mut String, name: &str) {
    out.push('"');
    for ch in name.chars() {
        if ch == '"' {
            out.push('"');
        }
        out.push(ch);
    }
    out.push('"');
}

/// `name` as a double-quoted SQL identifier: `a"b` becomes `"a""b"`.
pub fn quote_ident(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    push_ident(&mut out, name);
    out
}

/// `s` as a single-quoted SQL string literal.
fn quote_literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The SQL type of a column. The declared type decides; a name the table below does not know
/// falls back on the column's physical kind, so every column gets a type.
fn column_type(d: Dialect, c: &ColumnMeta) -> &'static str {
    match d {
        Dialect::Postgres { .. } => match (c.ty.as_str(), c.physical) {
            ("symbol" | "varchar" | "string" | "text" | "char", _) => "text",
            ("long" | "bigint", _) => "bigint",
            ("int" | "integer", _) => "integer",
            ("short" | "byte", _) => "smallint",
            ("double", _) => "double precision",
            ("float", _) => "real",
            ("boolean" | "bool", _) => "boolean",
            ("uuid", _) => "uuid",
            (_, Physical::Timestamp) => "timestamptz",
            (_, Physical::Long) => "bigint",
            (_, Physical::Double) => "double precision",
            (_, Physical::Bool) => "boolean",
            (_, Physical::Symbol | Physical::Varchar) => "text",
        },
        Dialect::QuestDb => match (c.ty.as_str(), c.physical) {
            ("symbol", _) => "SYMBOL",
            ("string", _) => "STRING",
            ("varchar" | "text" | "char", _) => "VARCHAR",
            ("long" | "bigint", _) => "LONG",
            ("int" | "integer", _) => "INT",
            ("short", _) => "SHORT",
            ("byte", _) => "BYTE",
            ("double", _) => "DOUBLE",
            ("float", _) => "FLOAT",
            ("boolean" | "bool", _) => "BOOLEAN",
            ("uuid", _) => "UUID",
            (_, Physical::Timestamp) => "TIMESTAMP",
            (_, Physical::Long) => "LONG",
            (_, Physical::Double) => "DOUBLE",
            (_, Physical::Bool) => "BOOLEAN",
            (_, Physical::Symbol) => "SYMBOL",
            (_, Physical::Varchar) => "VARCHAR",
        },
        // SQLite's storage classes; timestamps are `sqlite_timestamp_text`, which sorts as
        // time does.
        Dialect::Sqlite => match c.physical {
            Physical::Long | Physical::Bool => "INTEGER",
            Physical::Double => "REAL",
            Physical::Symbol | Physical::Varchar | Physical::Timestamp => "TEXT",
        },
    }
}

/// `CREATE TABLE` for `schema` under the name `table`; for TimescaleDB followed by
/// `; SELECT create_hypertable(...)` when the schema has a designated timestamp, for QuestDB
/// with `timestamp(..) PARTITION BY DAY WAL`. `None` for dialects without DDL.
pub fn create_table(dialect_name: &str, table: &str, schema: &BatchSchema) -> Option<String> {
    let d = dialect(dialect_name)?;
    let mut sql = String::from("CREATE TABLE ");
    push_ident(&mut sql, table);
    sql.push_str(" (");
    for (i, c) in schema.columns.iter().enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        push_ident(&mut sql, &c.name);
        sql.push(' ');
        sql.push_str(column_type(d, c));
    }
    sql.push(')');
    let ts = schema.timestamp.and_then(|i| schema.columns.get(i));
    match (d, ts) {
        (Dialect::QuestDb, Some(ts)) => {
            sql.push_str(" timestamp(");
            push_ident(&mut sql, &ts.name);
            sql.push_str(") PARTITION BY DAY WAL");
        }
        (Dialect::Postgres { hypertable: true }, Some(ts)) => {
            // The first argument is a regclass: its text is parsed as SQL, so the quoted
            // identifier keeps the case of the name; the second is a column name taken as is.
            sql.push_str("; SELECT create_hypertable(");
            sql.push_str(&quote_literal(&quote_ident(table)));
            sql.push_str(", ");
            sql.push_str(&quote_literal(&ts.name));
            sql.push(')');
        }
        _ => {}
    }
    Some(sql)
}

/// `DROP TABLE IF EXISTS`; `None` for dialects without DDL.
pub fn drop_table(dialect_name: &str, table: &str) -> Option<String> {
    dialect(dialect_name)?;
    Some(format!("DROP TABLE IF EXISTS {}", quote_ident(table)))
}

/// Empties the table and keeps its definition: `TRUNCATE TABLE`, for SQLite `DELETE FROM`.
/// `None` for dialects without DDL.
pub fn truncate_table(dialect_name: &str, table: &str) -> Option<String> {
    Some(match dialect(dialect_name)? {
        Dialect::Sqlite => format!("DELETE FROM {}", quote_ident(table)),
        Dialect::QuestDb | Dialect::Postgres { .. } => {
            format!("TRUNCATE TABLE {}", quote_ident(table))
        }
    })
}

const NS_PER_US: i64 = 1_000;
const US_PER_DAY: i64 = 86_400_000_000;

/// Appends the UTC time `ns` (nanoseconds since the Unix epoch) as `YYYY-MM-DD HH:MM:SS.ffffff`,
/// floored to the microsecond. Always 26 bytes (an `i64` of nanoseconds spans the years 1677
/// to 2262), so comparing the texts compares the times; SQLite's date functions read the form.
pub fn sqlite_timestamp_text(ns: i64, out: &mut Vec<u8>) {
    let us = ns.div_euclid(NS_PER_US);
    let days = us.div_euclid(US_PER_DAY);
    let of_day = us.rem_euclid(US_PER_DAY);
    let (year, month, day) = crate::encode::csv::civil_from_days(days);
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
    use std::sync::Arc;

    use super::*;
    use crate::gen::batch::Dictionary;

    fn col(name: &str, role: &str, ty: &str, physical: Physical) -> ColumnMeta {
        ColumnMeta {
            name: name.to_string(),
            role: role.to_string(),
            ty: ty.to_string(),
            unit_ns: if physical == Physical::Timestamp {
                1_000
            } else {
                0
            },
            physical,
            dictionary: (physical == Physical::Symbol).then(|| Arc::new(Dictionary::default())),
        }
    }

    fn schema(with_ts: bool) -> BatchSchema {
        let mut columns = vec![
            col("host", "series", "symbol", Physical::Symbol),
            col("note", "field", "varchar", Physical::Varchar),
            col("usage", "field", "double", Physical::Double),
            col("ratio", "field", "float", Physical::Double),
            col("n", "field", "long", Physical::Long),
            col("i", "field", "int", Physical::Long),
            col("s", "field", "short", Physical::Long),
            col("b", "field", "byte", Physical::Long),
            col("ok", "field", "boolean", Physical::Bool),
            col("id", "field", "uuid", Physical::Varchar),
            col("Odd \"name\"", "field", "string", Physical::Varchar),
        ];
        if with_ts {
            columns.insert(0, col("ts", "timestamp", "timestamp", Physical::Timestamp));
        }
        BatchSchema {
            name: "cpu".into(),
            table: "cpu".into(),
            series_key: Some(usize::from(with_ts)),
            timestamp: with_ts.then_some(0),
            columns,
        }
    }

    #[test]
    fn postgres_types_and_quoting() {
        let sql = create_table("postgres", "cpu", &schema(true)).unwrap();
        assert_eq!(
            sql,
            "CREATE TABLE \"cpu\" (\"ts\" timestamptz, \"host\" text, \"note\" text, \
             \"usage\" double precision, \"ratio\" real, \"n\" bigint, \"i\" integer, \
             \"s\" smallint, \"b\" smallint, \"ok\" boolean, \"id\" uuid, \
             \"Odd \"\"name\"\"\" text)"
        );
        assert_eq!(create_table("generic", "cpu", &schema(true)), Some(sql));
    }

    #[test]
    fn timescaledb_adds_a_hypertable_only_with_a_designated_timestamp() {
        let sql = create_table("timescaledb", "My'Cpu", &schema(true)).unwrap();
        assert!(sql.starts_with("CREATE TABLE \"My'Cpu\" (\"ts\" timestamptz, "));
        assert!(
            sql.ends_with(
                "\"Odd \"\"name\"\"\" text); SELECT create_hypertable('\"My''Cpu\"', 'ts')"
            ),
            "{sql}"
        );
        let plain = create_table("timescaledb", "cpu", &schema(false)).unwrap();
        assert!(!plain.contains("create_hypertable"), "{plain}");
        assert_eq!(Some(plain), create_table("postgres", "cpu", &schema(false)));
    }

    #[test]
    fn questdb_types_and_partitioning() {
        assert_eq!(
            create_table("questdb", "cpu", &schema(true)).unwrap(),
            "CREATE TABLE \"cpu\" (\"ts\" TIMESTAMP, \"host\" SYMBOL, \"note\" VARCHAR, \
             \"usage\" DOUBLE, \"ratio\" FLOAT, \"n\" LONG, \"i\" INT, \"s\" SHORT, \"b\" BYTE, \
             \"ok\" BOOLEAN, \"id\" UUID, \"Odd \"\"name\"\"\" STRING) \
             timestamp(\"ts\") PARTITION BY DAY WAL"
        );
        assert_eq!(
            create_table("questdb", "cpu", &schema(false)).unwrap(),
            "CREATE TABLE \"cpu\" (\"host\" SYMBOL, \"note\" VARCHAR, \"usage\" DOUBLE, \
             \"ratio\" FLOAT, \"n\" LONG, \"i\" INT, \"s\" SHORT, \"b\" BYTE, \"ok\" BOOLEAN, \
             \"id\" UUID, \"Odd \"\"name\"\"\" STRING)"
        );
    }

    #[test]
    fn sqlite_storage_classes() {
        assert_eq!(
            create_table("sqlite", "cpu", &schema(true)).unwrap(),
            "CREATE TABLE \"cpu\" (\"ts\" TEXT, \"host\" TEXT, \"note\" TEXT, \"usage\" REAL, \
             \"ratio\" REAL, \"n\" INTEGER, \"i\" INTEGER, \"s\" INTEGER, \"b\" INTEGER, \
             \"ok\" INTEGER, \"id\" TEXT, \"Odd \"\"name\"\"\" TEXT)"
        );
    }

    #[test]
    fn dialects_without_ddl() {
        for d in ["victoriametrics", "influxdb", "ksqldb", "nosuch"] {
            assert_eq!(create_table(d, "cpu", &schema(true)), None, "{d}");
            assert_eq!(drop_table(d, "cpu"), None, "{d}");
            assert_eq!(truncate_table(d, "cpu"), None, "{d}");
        }
    }

    #[test]
    fn drop_and_truncate() {
        for d in ["postgres", "timescaledb", "generic", "questdb"] {
            assert_eq!(
                drop_table(d, "a\"b").as_deref(),
                Some("DROP TABLE IF EXISTS \"a\"\"b\"")
            );
            assert_eq!(
                truncate_table(d, "a\"b").as_deref(),
                Some("TRUNCATE TABLE \"a\"\"b\"")
            );
        }
        assert_eq!(
            drop_table("sqlite", "t").as_deref(),
            Some("DROP TABLE IF EXISTS \"t\"")
        );
        assert_eq!(
            truncate_table("sqlite", "t").as_deref(),
            Some("DELETE FROM \"t\"")
        );
    }

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
