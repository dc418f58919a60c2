//! SQL text for the table setup around an ingest phase: create, drop and empty a table whose
//! columns come from a `BatchSchema`, in the dialect of the target.
//!
//! Identifiers are always double-quoted (a `"` inside doubled), so a column named `time`,
//! `Host` or `a b` means exactly that column on every dialect. No indexes and no primary key:
//! the benchmark measures ingest into a plain table, and every engine would index differently.
//!
//! Dialects without SQL DDL (`victoriametrics`, `influxdb`, `ksqldb`, anything unknown) get
//! `None`: their tables appear when the first row arrives. Two of them can still start a
//! phase from nothing and clean up after it, through their HTTP APIs ([`store`]): InfluxDB 1.x
//! with InfluxQL statements, VictoriaMetrics by deleting the table's series.

use crate::gen::batch::{BatchSchema, ColumnMeta, Physical};
use crate::net::sql_text::{push_ident, quote_ident};

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

/// `name` as a double-quoted InfluxQL identifier. Quoting is what lets a measurement be
/// named like a keyword (`diagnostics`, `time`); InfluxQL reads `\"`, `\\` and `\n` inside.
pub fn influx_ident(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    out.push('"');
    for ch in name.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The InfluxQL statements of a setup: the database is created (a no-op when it exists) so
/// the first write finds it, then the measurement is dropped (`recreate`) or emptied
/// (`truncate`); InfluxDB 1.x accepts both for a measurement that does not exist.
pub fn influx_setup(db: &str, measurement: &str, truncate: bool) -> Vec<String> {
    vec![
        format!("CREATE DATABASE {}", influx_ident(db)),
        if truncate {
            format!("DELETE FROM {}", influx_ident(measurement))
        } else {
            format!("DROP MEASUREMENT {}", influx_ident(measurement))
        },
    ]
}

/// `teardown drop` on InfluxDB.
pub fn influx_drop(measurement: &str) -> String {
    format!("DROP MEASUREMENT {}", influx_ident(measurement))
}

/// The series selector of a table on VictoriaMetrics: exactly `<table>_<field>` for each of
/// its fields, so that `cpu` does not take the series of a measurement `cpu_x` with it. Without
/// known fields (an empty layout), every `<table>_...` series.
pub fn victoria_selector(table: &str, fields: &[&str]) -> String {
    let mut re = escape_regex(table);
    re.push('_');
    if fields.is_empty() {
        re.push_str(".+");
    } else {
        re.push('(');
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                re.push('|');
            }
            re.push_str(&escape_regex(f));
        }
        re.push(')');
    }
    let mut out = String::from("{__name__=~\"");
    // A PromQL string literal: `\` and `"` escaped.
    for ch in re.chars() {
        if matches!(ch, '\\' | '"') {
            out.push('\\');
        }
        out.push(ch);
    }
    out.push_str("\"}");
    out
}

/// `s` as a literal in a (RE2) regular expression.
fn escape_regex(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
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

    #[test]
    fn influxql_identifiers_are_quoted() {
        // `diagnostics` is an InfluxQL keyword: unquoted, `DROP MEASUREMENT diagnostics` is a
        // syntax error.
        assert_eq!(
            influx_drop("diagnostics"),
            "DROP MEASUREMENT \"diagnostics\""
        );
        assert_eq!(influx_ident("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
        assert_eq!(
            influx_setup("bench", "cpu", false),
            ["CREATE DATABASE \"bench\"", "DROP MEASUREMENT \"cpu\""]
        );
        assert_eq!(
            influx_setup("bench", "cpu", true),
            ["CREATE DATABASE \"bench\"", "DELETE FROM \"cpu\""]
        );
    }

    #[test]
    fn victoria_selectors_name_exactly_the_fields() {
        assert_eq!(
            victoria_selector("cpu", &["usage_user", "usage_system"]),
            r#"{__name__=~"cpu_(usage_user|usage_system)"}"#
        );
        assert_eq!(
            victoria_selector("a.b\"c", &["x+y"]),
            r#"{__name__=~"a\\.b\"c_(x\\+y)"}"#
        );
        assert_eq!(victoria_selector("cpu", &[]), r#"{__name__=~"cpu_.+"}"#);
    }
}
