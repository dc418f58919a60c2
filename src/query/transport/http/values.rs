//! A dataset row's JSON values read for the checksum by their column's reported type
//! (docs/checksum.md §3.2): serde visitors (`Row`, `Value`) that feed each value to the
//! `ResultHasher` as it is parsed, building nothing.

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::query::checksum::{canonical_decimal, parse_timestamp_us, ResultHasher};
/// How a column's JSON values are read for the checksum, by the type QuestDB reports
/// (`columns[].type`; docs/checksum.md §3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum JsonKind {
    Bool,
    /// BYTE, SHORT, INT, LONG (and the SQL names INTEGER, SMALLINT, BIGINT).
    Int,
    /// FLOAT: single precision, read as QuestDB prints it.
    Float4,
    /// DOUBLE.
    Float8,
    /// DECIMAL / NUMERIC: an integer exactly, a fraction as the nearest double.
    Decimal,
    /// TIMESTAMP: ISO text (`2016-01-01T00:00:00.000000Z`), or a number of microseconds.
    Timestamp,
    /// TIMESTAMP_NS: ISO text, or a number of nanoseconds.
    TimestampNs,
    /// DATE: ISO text, or a number of milliseconds.
    Date,
    /// SYMBOL, STRING, VARCHAR, CHAR, UUID, IPv4, LONG256, GEOHASH, ... : the text.
    Text,
}

impl JsonKind {
    pub(super) fn of(ty: &str) -> JsonKind {
        let base = ty.split('(').next().unwrap_or("").trim();
        let is = |name: &str| base.eq_ignore_ascii_case(name);
        if is("BOOLEAN") || is("BOOL") {
            JsonKind::Bool
        } else if [
            "BYTE", "SHORT", "INT", "LONG", "INTEGER", "SMALLINT", "BIGINT",
        ]
        .iter()
        .any(|n| is(n))
        {
            JsonKind::Int
        } else if is("FLOAT") || is("REAL") {
            JsonKind::Float4
        } else if is("DOUBLE") {
            JsonKind::Float8
        } else if is("DECIMAL") || is("NUMERIC") {
            JsonKind::Decimal
        } else if is("TIMESTAMP") {
            JsonKind::Timestamp
        } else if is("TIMESTAMP_NS") {
            JsonKind::TimestampNs
        } else if is("DATE") {
            JsonKind::Date
        } else {
            JsonKind::Text
        }
    }
}

pub(super) struct JsonColumn {
    pub(super) kind: JsonKind,
    /// `name (TYPE)`, for messages.
    pub(super) label: String,
}

#[derive(Deserialize)]
pub(super) struct ColumnInfo {
    #[serde(default)]
    pub(super) name: String,
    #[serde(rename = "type", default)]
    pub(super) ty: String,
}

/// One JSON value of a row, as the parser hands it over.
#[derive(Clone, Copy, Debug)]
enum Scalar<'a> {
    Null,
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(&'a str),
}

/// Feeds one JSON value of a column of `kind`; `Err` says why it cannot be read.
fn push_json(h: &mut ResultHasher, kind: JsonKind, v: Scalar<'_>) -> Result<(), String> {
    use JsonKind as K;
    let bad = || format!("cannot read {v:?} as a value of the column's type");
    match (v, kind) {
        (Scalar::Null, _) => h.push_null(),
        (Scalar::Bool(b), _) => h.push_bool(b),
        (Scalar::U64(u), _) if i64::try_from(u).is_ok() => {
            return push_json(h, kind, Scalar::I64(u as i64))
        }
        (Scalar::U64(u), K::Int | K::Decimal | K::Float8) => h.push_f64(u as f64),
        (Scalar::U64(u), K::Text) => h.push_text(itoa::Buffer::new().format(u)),
        (Scalar::I64(n), K::Int | K::Decimal) => h.push_i64(n),
        (Scalar::I64(n), K::Float8) => h.push_f64(n as f64),
        (Scalar::I64(n), K::Float4) => h.push_f32(n as f32),
        (Scalar::I64(n), K::Timestamp) => h.push_timestamp_us(n),
        (Scalar::I64(n), K::TimestampNs) => h.push_timestamp_us(n.div_euclid(1_000)),
        (Scalar::I64(n), K::Date) => h.push_timestamp_us(n.checked_mul(1_000).ok_or_else(bad)?),
        (Scalar::I64(n), K::Text) => h.push_text(itoa::Buffer::new().format(n)),
        (Scalar::F64(f), K::Int | K::Decimal | K::Float8) => h.push_f64(f),
        (Scalar::F64(f), K::Float4) => h.push_f32(f as f32),
        (Scalar::F64(f), K::Text) => h.push_text(ryu::Buffer::new().format(f)),
        (Scalar::Str(s), K::Timestamp | K::TimestampNs | K::Date) => {
            h.push_timestamp_us(parse_timestamp_us(s).ok_or_else(bad)?)
        }
        (Scalar::Str(s), K::Int | K::Decimal | K::Float8) => {
            h.push_number(canonical_decimal(s).ok_or_else(bad)?)
        }
        (Scalar::Str(s), K::Float4) => h.push_f32(s.parse().map_err(|_| bad())?),
        (Scalar::Str(s), K::Bool) => match s {
            "true" => h.push_bool(true),
            "false" => h.push_bool(false),
            _ => return Err(bad()),
        },
        (Scalar::Str(s), K::Text) => h.push_text(s),
        _ => return Err(bad()),
    }
    Ok(())
}

fn width_problem(got: Option<usize>, columns: usize) -> String {
    match got {
        Some(n) => {
            format!("a row of the dataset has {n} value(s) but the answer has {columns} column(s)")
        }
        None => "a row of the dataset is not a JSON array".to_string(),
    }
}

/// One row of the dataset: its values, hashed in column order.
pub(super) struct Row<'c, 'h, 'p> {
    pub(super) columns: &'c [JsonColumn],
    pub(super) hasher: &'h mut ResultHasher,
    pub(super) problem: &'p mut Option<String>,
}

impl<'de> DeserializeSeed<'de> for Row<'_, '_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Row<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a row (an array of values)")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.hasher.begin_row();
        let mut i = 0;
        loop {
            let Some(col) = self.columns.get(i) else {
                // More values than columns?
                if seq.next_element::<IgnoredAny>()?.is_some() {
                    let mut n = i + 1;
                    while seq.next_element::<IgnoredAny>()?.is_some() {
                        n += 1;
                    }
                    *self.problem = Some(width_problem(Some(n), self.columns.len()));
                    return Err(de::Error::custom("row width"));
                }
                break;
            };
            let pushed = seq.next_element_seed(Value {
                column: col,
                hasher: &mut *self.hasher,
                problem: &mut *self.problem,
            })?;
            if pushed.is_none() {
                *self.problem = Some(width_problem(Some(i), self.columns.len()));
                return Err(de::Error::custom("row width"));
            }
            i += 1;
        }
        self.hasher.end_row();
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        *self.problem = Some(width_problem(None, self.columns.len()));
        Err(de::Error::custom("row"))
    }
}

/// One value of a row, hashed as its column's type says.
struct Value<'c, 'h, 'p> {
    column: &'c JsonColumn,
    hasher: &'h mut ResultHasher,
    problem: &'p mut Option<String>,
}

impl Value<'_, '_, '_> {
    fn push<E: de::Error>(self, v: Scalar<'_>) -> Result<(), E> {
        push_json(self.hasher, self.column.kind, v).map_err(|why| {
            *self.problem = Some(format!("column {}: {why}", self.column.label));
            E::custom("value")
        })
    }
}

impl<'de> DeserializeSeed<'de> for Value<'_, '_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Value<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON scalar")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.push(Scalar::Null)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.push(Scalar::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.push(Scalar::I64(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.push(Scalar::U64(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.push(Scalar::F64(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.push(Scalar::Str(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        *self.problem = Some(format!(
            "column {}: a JSON array has no checksum encoding",
            self.column.label
        ));
        Err(de::Error::custom("value"))
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        *self.problem = Some(format!(
            "column {}: a JSON object has no checksum encoding",
            self.column.label
        ));
        Err(de::Error::custom("value"))
    }
}
