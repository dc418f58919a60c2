//! The table an ingest's setup creates and the statements its setup runs, in the dialect of the
//! server: column types as declared, the primary key and the indexes of the schema, and the
//! user's `setup sql` statements. The compiler renders them into the plan (what `wlrun plan`
//! shows is what runs); the runner renders a file's table here too, from the file's columns.
//! Names are written by the one rule of `crate::sql_text`.

use serde::Serialize;

use crate::sql_text::{push_ident, quote_ident};

/// The dialects wlrun writes table DDL for (the names `setup::ddl_dialect` gives).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    QuestDb,
    /// PostgreSQL and `generic`; TimescaleDB adds a hypertable.
    Postgres {
        hypertable: bool,
    },
    Sqlite,
}

impl Dialect {
    pub fn of(name: &str) -> Option<Dialect> {
        match name {
            "questdb" => Some(Dialect::QuestDb),
            "postgres" | "generic" => Some(Dialect::Postgres { hypertable: false }),
            "timescaledb" => Some(Dialect::Postgres { hypertable: true }),
            "sqlite" => Some(Dialect::Sqlite),
            _ => None,
        }
    }

    /// The server's name, for messages.
    pub fn server(self) -> &'static str {
        match self {
            Dialect::QuestDb => "QuestDB",
            Dialect::Postgres { hypertable: false } => "PostgreSQL",
            Dialect::Postgres { hypertable: true } => "TimescaleDB",
            Dialect::Sqlite => "SQLite",
        }
    }
}

/// A column's type as its schema declares it, kept apart where SQL tells types apart (the
/// generator's kind, `ColumnPlan::ty`, does not: `text`, `varchar(10)` and `char(2)` are all
/// strings to it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlType {
    Symbol,
    /// `varchar`, or `varchar(N)`: at most N characters.
    Varchar(Option<u32>),
    /// wlrun's `string`: text of any length.
    String,
    Text,
    /// `char(N)`: exactly N characters, blank-padded.
    Char(u32),
    Uuid,
    Byte,
    Smallint,
    Integer,
    Bigint,
    Double,
    Real,
    Boolean,
    /// wlrun's `timestamp(UNIT)`: an instant, which PostgreSQL calls `timestamptz`.
    Timestamp,
    Timestamptz,
}

/// The longest `varchar(N)` and `char(N)` PostgreSQL takes.
pub const MAX_LENGTH: u32 = 10_485_760;

impl SqlType {
    /// A type name of the language (after its aliases: `int`, `long`, `short`, `float`,
    /// `bool`) with its length argument, `None` for a name that is not a column type.
    pub fn declared(name: &str, length: Option<u32>) -> Option<SqlType> {
        Some(match (name, length) {
            ("varchar", n) => SqlType::Varchar(n),
            ("char", n) => SqlType::Char(n.unwrap_or(1)),
            (_, Some(_)) => return None,
            ("symbol", None) => SqlType::Symbol,
            ("string", None) => SqlType::String,
            ("text", None) => SqlType::Text,
            ("uuid", None) => SqlType::Uuid,
            ("byte", None) => SqlType::Byte,
            ("short" | "smallint", None) => SqlType::Smallint,
            ("int" | "integer", None) => SqlType::Integer,
            ("long" | "bigint", None) => SqlType::Bigint,
            ("double", None) => SqlType::Double,
            ("float" | "real", None) => SqlType::Real,
            ("boolean" | "bool", None) => SqlType::Boolean,
            ("timestamp", None) => SqlType::Timestamp,
            ("timestamptz", None) => SqlType::Timestamptz,
            _ => return None,
        })
    }

    /// The type of a column read from a file, known by its generator kind alone: a file
    /// declares no SQL types, so a `byte` takes PostgreSQL's smallest integer.
    pub fn of_kind(ty: &str, dialect: Dialect) -> SqlType {
        match ty {
            "byte" if matches!(dialect, Dialect::Postgres { .. }) => SqlType::Smallint,
            "int" | "integer" => SqlType::Integer,
            "short" | "smallint" => SqlType::Smallint,
            "long" | "bigint" => SqlType::Bigint,
            "varchar" | "char" => SqlType::Varchar(None),
            other => SqlType::declared(other, None).unwrap_or(SqlType::Text),
        }
    }

    /// The type as the dialect writes it, or why the dialect cannot take it as declared (a
    /// wider type would take it silently: that is the user's choice to write, not wlrun's).
    pub fn in_dialect(self, d: Dialect) -> Result<String, String> {
        let fixed = |s: &str| Ok(s.to_string());
        match d {
            Dialect::Postgres { .. } => match self {
                SqlType::Symbol | SqlType::String | SqlType::Text => fixed("text"),
                SqlType::Varchar(None) => fixed("varchar"),
                SqlType::Varchar(Some(n)) => Ok(format!("varchar({n})")),
                SqlType::Char(n) => Ok(format!("char({n})")),
                SqlType::Uuid => fixed("uuid"),
                SqlType::Byte => Err(format!(
                    "{} has no one-byte integer: declare `smallint`",
                    d.server()
                )),
                SqlType::Smallint => fixed("smallint"),
                SqlType::Integer => fixed("integer"),
                SqlType::Bigint => fixed("bigint"),
                SqlType::Double => fixed("double precision"),
                SqlType::Real => fixed("real"),
                SqlType::Boolean => fixed("boolean"),
                SqlType::Timestamp | SqlType::Timestamptz => fixed("timestamptz"),
            },
            Dialect::QuestDb => match self {
                SqlType::Symbol => fixed("SYMBOL"),
                SqlType::Varchar(None) | SqlType::String | SqlType::Text => fixed("VARCHAR"),
                SqlType::Varchar(Some(_)) => {
                    Err("QuestDB's VARCHAR has no length: declare `varchar`".to_string())
                }
                SqlType::Char(1) => fixed("CHAR"),
                SqlType::Char(_) => Err(
                    "QuestDB's CHAR holds one character: declare `char` or `varchar`".to_string(),
                ),
                SqlType::Uuid => fixed("UUID"),
                SqlType::Byte => fixed("BYTE"),
                SqlType::Smallint => fixed("SHORT"),
                SqlType::Integer => fixed("INT"),
                SqlType::Bigint => fixed("LONG"),
                SqlType::Double => fixed("DOUBLE"),
                SqlType::Real => fixed("FLOAT"),
                SqlType::Boolean => fixed("BOOLEAN"),
                SqlType::Timestamp | SqlType::Timestamptz => fixed("TIMESTAMP"),
            },
            // SQLite's storage classes: one integer class whatever the width, timestamps as
            // `sqlite_timestamp_text`, which sorts as time does. A length is kept in the
            // declaration (SQLite gives it TEXT affinity and does not enforce it).
            Dialect::Sqlite => match self {
                SqlType::Byte
                | SqlType::Smallint
                | SqlType::Integer
                | SqlType::Bigint
                | SqlType::Boolean => fixed("INTEGER"),
                SqlType::Double | SqlType::Real => fixed("REAL"),
                SqlType::Varchar(Some(n)) => Ok(format!("VARCHAR({n})")),
                SqlType::Char(n) => Ok(format!("CHARACTER({n})")),
                SqlType::Symbol
                | SqlType::Varchar(None)
                | SqlType::String
                | SqlType::Text
                | SqlType::Uuid
                | SqlType::Timestamp
                | SqlType::Timestamptz => fixed("TEXT"),
            },
        }
    }

    /// The most characters a value may have, for `varchar(N)` and `char(N)`.
    pub fn max_chars(self) -> Option<u32> {
        match self {
            SqlType::Varchar(n) => n,
            SqlType::Char(n) => Some(n),
            _ => None,
        }
    }
}

impl std::fmt::Display for SqlType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SqlType::Varchar(Some(n)) => write!(f, "varchar({n})"),
            SqlType::Char(n) => write!(f, "char({n})"),
            other => f.write_str(match other {
                SqlType::Symbol => "symbol",
                SqlType::Varchar(_) => "varchar",
                SqlType::String => "string",
                SqlType::Text => "text",
                SqlType::Uuid => "uuid",
                SqlType::Byte => "byte",
                SqlType::Smallint => "smallint",
                SqlType::Integer => "integer",
                SqlType::Bigint => "bigint",
                SqlType::Double => "double",
                SqlType::Real => "real",
                SqlType::Boolean => "boolean",
                SqlType::Timestamp => "timestamp",
                _ => "timestamptz",
            }),
        }
    }
}

/// A table as `setup recreate` creates it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableDef {
    pub columns: Vec<(String, SqlType)>,
    /// The designated timestamp: QuestDB partitions by it, TimescaleDB makes the hypertable
    /// on it.
    pub timestamp: Option<String>,
    pub primary_key: Vec<String>,
    pub indexes: Vec<IndexDef>,
}

/// `index [NAME] (COLUMN [asc|desc], ...)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexDef {
    /// Without one, `TABLE_COLUMN..._idx`.
    pub name: Option<String>,
    /// Each column, and whether it is in descending order.
    pub columns: Vec<(String, bool)>,
}

/// One statement of a phase's setup, in the order it runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SetupStatement {
    pub kind: StatementKind,
    /// Empty for `create_from_file`: that table's columns are known once the file is read.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub sql: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StatementKind {
    /// `setup recreate`: `DROP TABLE IF EXISTS`.
    Drop,
    /// `setup recreate`: `CREATE TABLE` with the primary key, and TimescaleDB's hypertable.
    Create,
    /// `setup recreate` of rows from a file: `CREATE TABLE` from the file's columns.
    CreateFromFile,
    /// `setup recreate`: an index of the schema.
    Index,
    /// `setup truncate`: run only when the table exists.
    Truncate,
    /// A `setup sql` statement, as written.
    Sql,
}

impl SetupStatement {
    pub fn new(kind: StatementKind, sql: String) -> SetupStatement {
        SetupStatement { kind, sql }
    }
}

/// `s` as a single-quoted SQL string literal.
fn quote_literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// `CREATE TABLE` for `def` under the name `table`, with its primary key; for TimescaleDB
/// then `SELECT create_hypertable(...)` when it has a designated timestamp, for QuestDB with
/// `timestamp(..) PARTITION BY DAY WAL`. Then one statement per index. An error says why the
/// dialect cannot take a type or key as declared (the check refuses such a schema first).
pub fn create_table(d: Dialect, table: &str, def: &TableDef) -> Result<Vec<String>, String> {
    let mut sql = String::from("CREATE TABLE ");
    push_ident(&mut sql, table);
    sql.push_str(" (");
    for (i, (name, ty)) in def.columns.iter().enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        push_ident(&mut sql, name);
        sql.push(' ');
        sql.push_str(
            &ty.in_dialect(d)
                .map_err(|e| format!("column `{name}`: {e}"))?,
        );
    }
    if !def.primary_key.is_empty() {
        if d == Dialect::QuestDb {
            return Err(no_primary_key(d));
        }
        sql.push_str(", PRIMARY KEY (");
        list(
            &mut sql,
            def.primary_key.iter().map(|c| (c.as_str(), false)),
        );
        sql.push(')');
    }
    sql.push(')');
    let mut out = Vec::new();
    match (d, &def.timestamp) {
        (Dialect::QuestDb, Some(ts)) => {
            sql.push_str(" timestamp(");
            push_ident(&mut sql, ts);
            sql.push_str(") PARTITION BY DAY WAL");
            out.push(sql);
        }
        (Dialect::Postgres { hypertable: true }, Some(ts)) => {
            out.push(sql);
            // The first argument is a regclass: its text is parsed as SQL, so the name is
            // written as the table's was; the second is a column name taken as is.
            out.push(format!(
                "SELECT create_hypertable({}, {})",
                quote_literal(&quote_ident(table)),
                quote_literal(ts)
            ));
        }
        _ => out.push(sql),
    }
    for index in &def.indexes {
        out.push(create_index(d, table, index, def)?);
    }
    Ok(out)
}

/// Why QuestDB takes no primary key.
pub fn no_primary_key(d: Dialect) -> String {
    format!(
        "{} has no primary key (its designated timestamp orders the rows; `DEDUP UPSERT KEYS` \
         is its own DDL: write it with `setup sql questdb \"...\"`)",
        d.server()
    )
}

/// What QuestDB can index, or why it cannot take `index` as declared.
pub fn questdb_index(index: &IndexDef, def: &TableDef) -> Result<(), String> {
    let what = "QuestDB indexes one symbol column per index, in no order";
    match index.columns.as_slice() {
        [(c, false)] => match def.columns.iter().find(|(n, _)| n == c) {
            Some((_, SqlType::Symbol)) | None => Ok(()),
            Some((_, ty)) => Err(format!("{what}: `{c}` is {ty}")),
        },
        [(c, true)] => Err(format!("{what}: `{c} desc` has an order")),
        _ => Err(format!("{what}: this one has {}", index.columns.len())),
    }
}

fn create_index(
    d: Dialect,
    table: &str,
    index: &IndexDef,
    def: &TableDef,
) -> Result<String, String> {
    if d == Dialect::QuestDb {
        questdb_index(index, def)?;
        let mut sql = String::from("ALTER TABLE ");
        push_ident(&mut sql, table);
        sql.push_str(" ALTER COLUMN ");
        push_ident(&mut sql, &index.columns[0].0);
        sql.push_str(" ADD INDEX");
        return Ok(sql);
    }
    let name = index
        .name
        .clone()
        .unwrap_or_else(|| index_name(table, index));
    let mut sql = String::from("CREATE INDEX ");
    push_ident(&mut sql, &name);
    sql.push_str(" ON ");
    push_ident(&mut sql, table);
    sql.push_str(" (");
    list(
        &mut sql,
        index.columns.iter().map(|(c, desc)| (c.as_str(), *desc)),
    );
    sql.push(')');
    Ok(sql)
}

/// An unnamed index's name, as PostgreSQL would make it: `TABLE_COLUMN..._idx`. SQLite needs
/// one, and the same name on every dialect is what a user's query plan shows.
pub fn index_name(table: &str, index: &IndexDef) -> String {
    let mut name = table.to_string();
    for (c, _) in &index.columns {
        name.push('_');
        name.push_str(c);
    }
    name.push_str("_idx");
    name
}

fn list<'a>(sql: &mut String, columns: impl Iterator<Item = (&'a str, bool)>) {
    for (i, (c, desc)) in columns.enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        push_ident(sql, c);
        if desc {
            sql.push_str(" DESC");
        }
    }
}

/// `DROP TABLE IF EXISTS`.
pub fn drop_table(table: &str) -> String {
    format!("DROP TABLE IF EXISTS {}", quote_ident(table))
}

/// Empties the table and keeps its definition: `TRUNCATE TABLE`, for SQLite `DELETE FROM`.
pub fn truncate_table(d: Dialect, table: &str) -> String {
    match d {
        Dialect::Sqlite => format!("DELETE FROM {}", quote_ident(table)),
        Dialect::QuestDb | Dialect::Postgres { .. } => {
            format!("TRUNCATE TABLE {}", quote_ident(table))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(with_ts: bool) -> TableDef {
        let mut columns: Vec<(String, SqlType)> = [
            ("host", SqlType::Symbol),
            ("note", SqlType::Varchar(None)),
            ("usage", SqlType::Double),
            ("ratio", SqlType::Real),
            ("n", SqlType::Bigint),
            ("i", SqlType::Integer),
            ("s", SqlType::Smallint),
            ("ok", SqlType::Boolean),
            ("id", SqlType::Uuid),
            ("Odd \"name\"", SqlType::String),
        ]
        .into_iter()
        .map(|(n, t)| (n.to_string(), t))
        .collect();
        if with_ts {
            columns.insert(0, ("ts".into(), SqlType::Timestamp));
        }
        TableDef {
            columns,
            timestamp: with_ts.then(|| "ts".to_string()),
            ..TableDef::default()
        }
    }

    const PG: Dialect = Dialect::Postgres { hypertable: false };
    const TSDB: Dialect = Dialect::Postgres { hypertable: true };

    #[test]
    fn postgres_types_and_names() {
        assert_eq!(
            create_table(PG, "cpu", &def(true)).unwrap(),
            ["CREATE TABLE cpu (ts timestamptz, host text, note varchar, usage double precision, \
              ratio real, n bigint, i integer, s smallint, ok boolean, id uuid, \
              \"Odd \"\"name\"\"\" text)"]
        );
        assert_eq!(Dialect::of("generic"), Some(PG));
    }

    #[test]
    fn a_ycsb_table_with_lengths_a_primary_key_and_indexes() {
        let mut columns = vec![("ycsb_key".to_string(), SqlType::Varchar(Some(255)))];
        columns.extend((0..2).map(|i| (format!("field{i}"), SqlType::Text)));
        columns.push(("at".into(), SqlType::Timestamptz));
        columns.push(("code".into(), SqlType::Char(2)));
        let t = TableDef {
            columns,
            timestamp: None,
            primary_key: vec!["ycsb_key".into()],
            indexes: vec![
                IndexDef {
                    name: None,
                    columns: vec![("code".into(), false), ("at".into(), true)],
                },
                IndexDef {
                    name: Some("By Field".into()),
                    columns: vec![("field0".into(), false)],
                },
            ],
        };
        assert_eq!(
            create_table(PG, "usertable", &t).unwrap(),
            [
                "CREATE TABLE usertable (ycsb_key varchar(255), field0 text, field1 text, \
                 at timestamptz, code char(2), PRIMARY KEY (ycsb_key))",
                "CREATE INDEX usertable_code_at_idx ON usertable (code, at DESC)",
                "CREATE INDEX \"By Field\" ON usertable (field0)",
            ]
        );
        assert_eq!(
            create_table(Dialect::Sqlite, "usertable", &t).unwrap()[0],
            "CREATE TABLE usertable (ycsb_key VARCHAR(255), field0 TEXT, field1 TEXT, at TEXT, \
             code CHARACTER(2), PRIMARY KEY (ycsb_key))"
        );
        let e = create_table(Dialect::QuestDb, "usertable", &t).unwrap_err();
        assert!(
            e.starts_with("column `ycsb_key`: QuestDB's VARCHAR has no length"),
            "{e}"
        );
        let keyed = TableDef {
            columns: vec![("k".into(), SqlType::Symbol)],
            primary_key: vec!["k".into()],
            ..TableDef::default()
        };
        let e = create_table(Dialect::QuestDb, "t", &keyed).unwrap_err();
        assert!(e.starts_with("QuestDB has no primary key"), "{e}");
    }

    #[test]
    fn a_type_a_dialect_cannot_take_is_refused_not_widened() {
        assert!(SqlType::Byte
            .in_dialect(PG)
            .unwrap_err()
            .contains("declare `smallint`"));
        assert_eq!(SqlType::Byte.in_dialect(Dialect::QuestDb).unwrap(), "BYTE");
        assert!(SqlType::Char(3).in_dialect(Dialect::QuestDb).is_err());
        assert_eq!(
            SqlType::Char(1).in_dialect(Dialect::QuestDb).unwrap(),
            "CHAR"
        );
        // A file declares no SQL types: its byte column takes the smallest integer there is.
        assert_eq!(SqlType::of_kind("byte", PG), SqlType::Smallint);
        assert_eq!(SqlType::of_kind("byte", Dialect::QuestDb), SqlType::Byte);
        assert_eq!(SqlType::of_kind("int", PG), SqlType::Integer);
        assert_eq!(SqlType::of_kind("mystery", PG), SqlType::Text);
    }

    #[test]
    fn declared_names_and_their_aliases() {
        for (name, len, ty) in [
            ("varchar", Some(10), SqlType::Varchar(Some(10))),
            ("varchar", None, SqlType::Varchar(None)),
            ("char", None, SqlType::Char(1)),
            ("int", None, SqlType::Integer),
            ("integer", None, SqlType::Integer),
            ("short", None, SqlType::Smallint),
            ("long", None, SqlType::Bigint),
            ("float", None, SqlType::Real),
            ("bool", None, SqlType::Boolean),
            ("timestamptz", None, SqlType::Timestamptz),
        ] {
            assert_eq!(SqlType::declared(name, len), Some(ty), "{name}");
        }
        assert_eq!(SqlType::declared("text", Some(3)), None);
        assert_eq!(SqlType::declared("blob", None), None);
        assert_eq!(SqlType::Varchar(Some(9)).to_string(), "varchar(9)");
    }

    #[test]
    fn timescaledb_adds_a_hypertable_only_with_a_designated_timestamp() {
        let sql = create_table(TSDB, "My'Cpu", &def(true)).unwrap();
        assert!(sql[0].starts_with("CREATE TABLE \"My'Cpu\" (ts timestamptz, "));
        assert_eq!(sql[1], "SELECT create_hypertable('\"My''Cpu\"', 'ts')");
        let plain = create_table(TSDB, "cpu", &def(false)).unwrap();
        assert_eq!(plain, create_table(PG, "cpu", &def(false)).unwrap());
    }

    #[test]
    fn questdb_types_partitioning_and_symbol_indexes() {
        let mut t = def(true);
        t.indexes.push(IndexDef {
            name: None,
            columns: vec![("host".into(), false)],
        });
        assert_eq!(
            create_table(Dialect::QuestDb, "cpu", &t).unwrap(),
            [
                "CREATE TABLE cpu (ts TIMESTAMP, host SYMBOL, note VARCHAR, usage DOUBLE, \
                 ratio FLOAT, n LONG, i INT, s SHORT, ok BOOLEAN, id UUID, \
                 \"Odd \"\"name\"\"\" VARCHAR) timestamp(ts) PARTITION BY DAY WAL",
                "ALTER TABLE cpu ALTER COLUMN host ADD INDEX",
            ]
        );
        for columns in [
            vec![("usage".to_string(), false)],
            vec![("host".to_string(), true)],
            vec![("host".to_string(), false), ("note".to_string(), false)],
        ] {
            let index = IndexDef {
                name: None,
                columns,
            };
            let e = questdb_index(&index, &t).unwrap_err();
            assert!(e.starts_with("QuestDB indexes one symbol column"), "{e}");
        }
    }

    #[test]
    fn sqlite_storage_classes() {
        assert_eq!(
            create_table(Dialect::Sqlite, "cpu", &def(true)).unwrap(),
            [
                "CREATE TABLE cpu (ts TEXT, host TEXT, note TEXT, usage REAL, ratio REAL, \
              n INTEGER, i INTEGER, s INTEGER, ok INTEGER, id TEXT, \"Odd \"\"name\"\"\" TEXT)"
            ]
        );
    }

    #[test]
    fn drop_and_truncate() {
        assert_eq!(drop_table("a\"b"), "DROP TABLE IF EXISTS \"a\"\"b\"");
        assert_eq!(drop_table("cpu"), "DROP TABLE IF EXISTS cpu");
        for d in [PG, TSDB, Dialect::QuestDb] {
            assert_eq!(truncate_table(d, "Cpu"), "TRUNCATE TABLE \"Cpu\"");
        }
        assert_eq!(truncate_table(Dialect::Sqlite, "t"), "DELETE FROM t");
    }
}
