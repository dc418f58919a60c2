//! Bind values for the extended protocol: converted to the type the server inferred for each
//! parameter (`prepared`), or typed by their own kind (`unnamed`); see the module comment of
//! `pg` for the pairings.

use std::error::Error as StdError;

use bytes::{BufMut, BytesMut};
use tokio_postgres::types::{Format, IsNull, ToSql, Type};

use super::{client_error, PG_EPOCH_DAYS, PG_EPOCH_US};
use crate::query::QueryError;
use crate::value::BindValue;

const NS_PER_DAY: i64 = 86_400_000_000_000;

/// A bind value ready for the wire, in the type it is sent as.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Param {
    Null,
    Bool(bool),
    Int2(i16),
    Int4(i32),
    Int8(i64),
    Float4(f32),
    Float8(f64),
    /// timestamptz or timestamp: microseconds since 2000-01-01.
    Micros(i64),
    /// date: days since 2000-01-01.
    Days(i32),
    /// Text format: the server's input function for the parameter's type reads it.
    Text(String),
}

/// Why a value could not be encoded; never produced by `Param` itself (conversions happen
/// before), kept so that such a failure would still be a `Client` error.
#[derive(Debug)]
pub(super) struct BindError(pub(super) String);

impl std::fmt::Display for BindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl StdError for BindError {}

impl ToSql for Param {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn StdError + Sync + Send>> {
        match self {
            Param::Null => return Ok(IsNull::Yes),
            Param::Bool(b) => out.put_u8(u8::from(*b)),
            Param::Int2(v) => out.put_i16(*v),
            Param::Int4(v) => out.put_i32(*v),
            Param::Int8(v) => out.put_i64(*v),
            Param::Float4(v) => out.put_f32(*v),
            Param::Float8(v) => out.put_f64(*v),
            Param::Micros(v) => out.put_i64(*v),
            Param::Days(v) => out.put_i32(*v),
            Param::Text(s) => {
                if s.len() > i32::MAX as usize {
                    return Err(Box::new(BindError("a text bind longer than 2 GiB".into())));
                }
                out.put_slice(s.as_bytes());
            }
        }
        Ok(IsNull::No)
    }

    /// Every conversion is decided before sending (`convert`, `typed_param`).
    fn accepts(_ty: &Type) -> bool {
        true
    }

    fn encode_format(&self, _ty: &Type) -> Format {
        match self {
            Param::Text(_) => Format::Text,
            _ => Format::Binary,
        }
    }

    tokio_postgres::types::to_sql_checked!();
}

/// The kind of a bind value, for messages.
fn kind(v: &BindValue) -> String {
    match v {
        BindValue::Null => "NULL".to_string(),
        BindValue::Int(n) => format!("int {n}"),
        BindValue::Float(f) => format!("float {f}"),
        BindValue::Bool(b) => format!("bool {b}"),
        BindValue::Text(s) => {
            let short: String = s.chars().take(40).collect();
            let more = if short.len() < s.len() { "..." } else { "" };
            format!("text {short:?}{more}")
        }
        BindValue::Timestamp(ns) => format!("timestamp {}", crate::value::fmt_timestamp(*ns)),
    }
}

/// `binds` as the parameters `types` of a prepared statement.
pub(super) fn convert_params(
    binds: &[BindValue],
    types: &[Type],
) -> Result<Vec<Param>, QueryError> {
    if binds.len() != types.len() {
        return Err(client_error(format!(
            "the statement has {} parameter(s) but the query gives {} bind value(s)",
            types.len(),
            binds.len()
        )));
    }
    binds
        .iter()
        .zip(types)
        .enumerate()
        .map(|(i, (v, ty))| {
            convert(v, ty).map_err(|why| {
                client_error(format!(
                    "${}: {} does not fit the parameter's type {}{why}",
                    i + 1,
                    kind(v),
                    ty.name()
                ))
            })
        })
        .collect()
}

/// One bind as a parameter of type `ty`; `Err` holds an explanation (may be empty).
pub(super) fn convert(v: &BindValue, ty: &Type) -> Result<Param, String> {
    let range = |what: &str| format!(" (out of range for {what})");
    match v {
        BindValue::Null => Ok(Param::Null),
        BindValue::Text(s) => Ok(Param::Text(s.clone())),
        BindValue::Bool(b) if *ty == Type::BOOL => Ok(Param::Bool(*b)),
        BindValue::Int(n) => match *ty {
            Type::INT8 => Ok(Param::Int8(*n)),
            Type::INT4 => i32::try_from(*n)
                .map(Param::Int4)
                .map_err(|_| range("int4")),
            Type::INT2 => i16::try_from(*n)
                .map(Param::Int2)
                .map_err(|_| range("int2")),
            Type::FLOAT8 => {
                let f = *n as f64;
                if f as i128 == i128::from(*n) {
                    Ok(Param::Float8(f))
                } else {
                    Err(" (not exact as float8)".to_string())
                }
            }
            Type::FLOAT4 => {
                let f = *n as f32;
                if f as i128 == i128::from(*n) {
                    Ok(Param::Float4(f))
                } else {
                    Err(" (not exact as float4)".to_string())
                }
            }
            Type::NUMERIC => Ok(Param::Text(n.to_string())),
            _ => Err(String::new()),
        },
        BindValue::Float(f) => match *ty {
            Type::FLOAT8 => Ok(Param::Float8(*f)),
            Type::FLOAT4 => Ok(Param::Float4(*f as f32)),
            Type::NUMERIC => Ok(Param::Text(numeric_text(*f))),
            _ => Err(String::new()),
        },
        BindValue::Timestamp(ns) => match *ty {
            Type::TIMESTAMPTZ | Type::TIMESTAMP => Ok(Param::Micros(
                ns.div_euclid(1_000).saturating_sub(PG_EPOCH_US),
            )),
            Type::DATE => {
                if ns.rem_euclid(NS_PER_DAY) == 0 {
                    // An i64 of nanoseconds spans ~106,000 days: always an i32.
                    i32::try_from(ns.div_euclid(NS_PER_DAY) - PG_EPOCH_DAYS)
                        .map(Param::Days)
                        .map_err(|_| range("date"))
                } else {
                    Err(" (a date takes whole days only)".to_string())
                }
            }
            _ => Err(String::new()),
        },
        BindValue::Bool(_) => Err(String::new()),
    }
}

/// A float as numeric input text.
fn numeric_text(f: f64) -> String {
    if f.is_nan() {
        "NaN".to_string()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
    } else {
        let mut b = ryu::Buffer::new();
        b.format_finite(f).to_string()
    }
}

/// `unnamed` mode: a bind as a parameter whose type the bind value decides (see the module
/// documentation for why these types).
pub(super) fn typed_param(v: &BindValue) -> (Param, Type) {
    match v {
        BindValue::Null => (Param::Null, Type::UNKNOWN),
        BindValue::Int(n) => (Param::Int8(*n), Type::INT8),
        BindValue::Float(f) => (Param::Float8(*f), Type::FLOAT8),
        BindValue::Bool(b) => (Param::Bool(*b), Type::BOOL),
        BindValue::Text(s) => (Param::Text(s.clone()), Type::UNKNOWN),
        BindValue::Timestamp(ns) => (
            Param::Micros(ns.div_euclid(1_000).saturating_sub(PG_EPOCH_US)),
            Type::TIMESTAMPTZ,
        ),
    }
}
