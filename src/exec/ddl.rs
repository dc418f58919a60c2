//! Statements for the table setup around an ingest phase that the plan cannot hold: the
//! `CREATE TABLE` of rows from a file (its columns are known once it is read) and `teardown
//! drop`, written by `plan::table` as the plan's own DDL is.
//!
//! Dialects without SQL DDL (`victoriametrics`, `influxdb`, `ksqldb`, anything unknown) get
//! `None`: their tables appear when the first row arrives. Two of them can still start a
//! phase from nothing and clean up after it, through their HTTP APIs ([`store`]): InfluxDB 1.x
//! with InfluxQL statements, VictoriaMetrics by deleting the table's series.

use crate::gen::batch::BatchSchema;
use crate::plan::table::{self, Dialect, SqlType, TableDef};

/// The statements of `setup recreate` for rows from a file, once its columns are known:
/// `CREATE TABLE` with a type for each column from its kind (a file declares no SQL types,
/// keys or indexes). `None` for dialects without DDL.
pub fn create_table(
    dialect_name: &str,
    table: &str,
    layout: &BatchSchema,
) -> Option<Result<Vec<String>, String>> {
    let d = Dialect::of(dialect_name)?;
    let def = TableDef {
        columns: layout
            .columns
            .iter()
            .map(|c| (c.name.clone(), SqlType::of_kind(&c.ty, d)))
            .collect(),
        timestamp: layout
            .timestamp
            .and_then(|i| layout.columns.get(i))
            .map(|c| c.name.clone()),
        ..TableDef::default()
    };
    Some(table::create_table(d, table, &def))
}

/// `DROP TABLE IF EXISTS`; `None` for dialects without DDL.
pub fn drop_table(dialect_name: &str, table: &str) -> Option<String> {
    Dialect::of(dialect_name)?;
    Some(table::drop_table(table))
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
    use crate::gen::batch::{ColumnMeta, Dictionary, Physical};

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
    fn a_files_table_is_typed_by_its_columns_kinds() {
        let sql = create_table("postgres", "cpu", &schema(true))
            .unwrap()
            .unwrap();
        assert_eq!(
            sql,
            ["CREATE TABLE cpu (ts timestamptz, host text, note varchar, usage double precision, \
              ratio real, n bigint, i integer, s smallint, b smallint, ok boolean, id uuid, \
              \"Odd \"\"name\"\"\" text)"]
        );
        let q = create_table("questdb", "cpu", &schema(true))
            .unwrap()
            .unwrap();
        assert!(
            q[0].ends_with("timestamp(ts) PARTITION BY DAY WAL"),
            "{q:?}"
        );
        assert!(q[0].contains(" b BYTE, "), "{q:?}");
    }

    #[test]
    fn dialects_without_ddl() {
        for d in ["victoriametrics", "influxdb", "ksqldb", "nosuch"] {
            assert_eq!(create_table(d, "cpu", &schema(true)), None, "{d}");
            assert_eq!(drop_table(d, "cpu"), None, "{d}");
        }
        assert_eq!(
            drop_table("sqlite", "t").as_deref(),
            Some("DROP TABLE IF EXISTS t")
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
