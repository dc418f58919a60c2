//! PostgreSQL's binary wire format for a batch's columns, shared by COPY and INSERT: the
//! wire type each column is sent as (`Wire`, `Field`), and one column writer
//! (`write_column`) that writes a column's values to a `FieldSink` (sizes, rows' places, or
//! an array), one loop per column kind.

use std::sync::Arc;

use tokio_postgres::types::Type;

use crate::gen::batch::{Batch, BatchSchema, ColumnBatch, Dictionary, Nulls, Physical, Values};

/// The PostgreSQL type a column is sent as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Wire {
    Int8,
    Int4,
    Int2,
    Float8,
    Float4,
    Bool,
    Text,
    Uuid,
    Timestamptz,
}

impl Wire {
    /// The type of a column, from its declared type and physical kind (the DDL's mapping).
    fn of(ty: &str, physical: Physical) -> Wire {
        match physical {
            Physical::Long => match ty {
                "int" | "integer" => Wire::Int4,
                "short" | "byte" => Wire::Int2,
                _ => Wire::Int8,
            },
            Physical::Double if ty == "float" => Wire::Float4,
            Physical::Double => Wire::Float8,
            Physical::Bool => Wire::Bool,
            Physical::Symbol | Physical::Varchar if ty == "uuid" => Wire::Uuid,
            Physical::Symbol | Physical::Varchar => Wire::Text,
            Physical::Timestamp => Wire::Timestamptz,
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Wire::Int8 => "int8",
            Wire::Int4 => "int4",
            Wire::Int2 => "int2",
            Wire::Float8 => "float8",
            Wire::Float4 => "float4",
            Wire::Bool => "bool",
            Wire::Text => "text",
            Wire::Uuid => "uuid",
            Wire::Timestamptz => "timestamptz",
        }
    }

    pub(super) fn element(self) -> Type {
        match self {
            Wire::Int8 => Type::INT8,
            Wire::Int4 => Type::INT4,
            Wire::Int2 => Type::INT2,
            Wire::Float8 => Type::FLOAT8,
            Wire::Float4 => Type::FLOAT4,
            Wire::Bool => Type::BOOL,
            Wire::Text => Type::TEXT,
            Wire::Uuid => Type::UUID,
            Wire::Timestamptz => Type::TIMESTAMPTZ,
        }
    }

    pub(super) fn array(self) -> Type {
        match self {
            Wire::Int8 => Type::INT8_ARRAY,
            Wire::Int4 => Type::INT4_ARRAY,
            Wire::Int2 => Type::INT2_ARRAY,
            Wire::Float8 => Type::FLOAT8_ARRAY,
            Wire::Float4 => Type::FLOAT4_ARRAY,
            Wire::Bool => Type::BOOL_ARRAY,
            Wire::Text => Type::TEXT_ARRAY,
            Wire::Uuid => Type::UUID_ARRAY,
            Wire::Timestamptz => Type::TIMESTAMPTZ_ARRAY,
        }
    }
}

#[derive(Clone, Debug)]
pub(super) struct Field {
    pub(super) name: String,
    pub(super) wire: Wire,
}

/// The columns of `schema` as sent. PostgreSQL tables have at most 1,600 columns, far below
/// the binary formats' 16-bit counts; a NUL byte cannot travel in a statement's text.
pub(super) fn fields(schema: &BatchSchema) -> Result<Vec<Field>, String> {
    if schema.columns.len() > 1600 {
        return Err(format!(
            "schema `{}` has {} columns; a PostgreSQL table has at most 1600",
            schema.name,
            schema.columns.len()
        ));
    }
    schema
        .columns
        .iter()
        .map(|c| {
            if c.name.contains('\0') {
                return Err(format!("column name {:?} contains a NUL byte", c.name));
            }
            if c.physical == Physical::Symbol && c.dictionary.is_none() {
                return Err(format!("symbol column `{}` has no dictionary", c.name));
            }
            Ok(Field {
                name: c.name.clone(),
                wire: Wire::of(&c.ty, c.physical),
            })
        })
        .collect()
}

/// Where the binary values of a column go: `write_column` calls it once per row, with the
/// value's bytes or for a NULL. Generic, so each destination gets its own loops.
pub(super) trait FieldSink {
    fn null(&mut self, row: usize);
    fn value(&mut self, row: usize, bytes: &[u8]);
}

/// Microseconds from the Unix epoch to PostgreSQL's, 2000-01-01T00:00:00Z.
const PG_EPOCH_US: i64 = 946_684_800_000_000;

/// Writes the first `rows` values of column `col` (sent as `f`) to `sink`. `dict` is the
/// column's dictionary when it is a symbol column. Errors name the column and row: a value
/// the column's type cannot hold, a batch whose layout is not the schema's.
pub(super) fn write_column<S: FieldSink>(
    f: &Field,
    col: &ColumnBatch,
    dict: Option<&Dictionary>,
    rows: usize,
    sink: &mut S,
) -> Result<(), String> {
    let nulls = (!col.nulls.words.is_empty()).then_some(&col.nulls);
    let short = || {
        format!(
            "column `{}` has fewer values than the batch has rows",
            f.name
        )
    };
    // `fixed` fails only where its conversion can: the integer narrowings.
    let never = |r: usize| format!("column `{}` row {r}: cannot encode", f.name);
    let range = |r: usize, v: i64| {
        format!(
            "column `{}` row {r}: {v} is out of range for {}",
            f.name,
            f.wire.name()
        )
    };
    match (f.wire, &col.values) {
        (Wire::Int8, Values::Long(v)) => {
            let v = v.get(..rows).ok_or_else(short)?;
            fixed(v, nulls, sink, |x| Some(x.to_be_bytes())).map_err(|r| range(r, v[r]))
        }
        (Wire::Int4, Values::Long(v)) => {
            let v = v.get(..rows).ok_or_else(short)?;
            fixed(v, nulls, sink, |x| {
                i32::try_from(x).ok().map(i32::to_be_bytes)
            })
            .map_err(|r| range(r, v[r]))
        }
        (Wire::Int2, Values::Long(v)) => {
            let v = v.get(..rows).ok_or_else(short)?;
            fixed(v, nulls, sink, |x| {
                i16::try_from(x).ok().map(i16::to_be_bytes)
            })
            .map_err(|r| range(r, v[r]))
        }
        (Wire::Float8, Values::Double(v)) => {
            let v = v.get(..rows).ok_or_else(short)?;
            fixed(v, nulls, sink, |x| Some(x.to_be_bytes())).map_err(never)
        }
        (Wire::Float4, Values::Double(v)) => {
            let v = v.get(..rows).ok_or_else(short)?;
            fixed(v, nulls, sink, |x| Some((x as f32).to_be_bytes())).map_err(never)
        }
        (Wire::Bool, Values::Bool(v)) => {
            let v = v.get(..rows).ok_or_else(short)?;
            fixed(v, nulls, sink, |x| Some([u8::from(x)])).map_err(never)
        }
        (Wire::Timestamptz, Values::Timestamp(v) | Values::Long(v)) => {
            let v = v.get(..rows).ok_or_else(short)?;
            fixed(v, nulls, sink, |ns| {
                Some((ns.div_euclid(1_000) - PG_EPOCH_US).to_be_bytes())
            })
            .map_err(never)
        }
        (Wire::Text | Wire::Uuid, Values::Symbol(ids)) => {
            let ids = ids.get(..rows).ok_or_else(short)?;
            let dict =
                dict.ok_or_else(|| format!("symbol column `{}` has no dictionary", f.name))?;
            text(f, ids.len(), nulls, sink, |r| {
                dict.values.get(ids[r] as usize).map(str::as_bytes)
            })
        }
        (Wire::Text | Wire::Uuid, Values::Varchar { offsets, bytes }) => {
            if offsets.len() <= rows {
                return Err(short());
            }
            text(f, rows, nulls, sink, |r| {
                bytes.get(offsets[r] as usize..offsets[r + 1] as usize)
            })
        }
        (_, v) => Err(format!(
            "column `{}` is sent as {} but the batch holds {} values",
            f.name,
            f.wire.name(),
            values_kind(v)
        )),
    }
}

fn values_kind(v: &Values) -> &'static str {
    match v {
        Values::Long(_) => "long",
        Values::Double(_) => "double",
        Values::Bool(_) => "boolean",
        Values::Symbol(_) => "symbol",
        Values::Varchar { .. } => "varchar",
        Values::Timestamp(_) => "timestamp",
    }
}

/// One fixed-width column; `conv` is `None` for a value the type cannot hold, whose row is
/// the error.
#[inline(always)]
fn fixed<S: FieldSink, T: Copy, const N: usize>(
    values: &[T],
    nulls: Option<&Nulls>,
    sink: &mut S,
    conv: impl Fn(T) -> Option<[u8; N]>,
) -> Result<(), usize> {
    for (r, &x) in values.iter().enumerate() {
        if nulls.is_some_and(|n| n.is_null(r)) {
            sink.null(r);
            continue;
        }
        sink.value(r, &conv(x).ok_or(r)?);
    }
    Ok(())
}

/// One text or uuid column; `get` is the row's UTF-8 text, `None` if the batch does not have
/// it (a symbol id outside the dictionary, an offset outside the bytes).
#[inline(always)]
fn text<'a, S: FieldSink>(
    f: &Field,
    rows: usize,
    nulls: Option<&Nulls>,
    sink: &mut S,
    get: impl Fn(usize) -> Option<&'a [u8]>,
) -> Result<(), String> {
    for r in 0..rows {
        if nulls.is_some_and(|n| n.is_null(r)) {
            sink.null(r);
            continue;
        }
        let s = get(r)
            .ok_or_else(|| format!("column `{}` row {r}: no such value in the batch", f.name))?;
        if f.wire == Wire::Uuid {
            let u = parse_uuid(s).ok_or_else(|| {
                format!(
                    "column `{}` row {r}: {:?} is not a UUID",
                    f.name,
                    String::from_utf8_lossy(s)
                )
            })?;
            sink.value(r, &u);
        } else {
            if s.len() > i32::MAX as usize {
                return Err(format!(
                    "column `{}` row {r}: text longer than 2 GiB",
                    f.name
                ));
            }
            sink.value(r, s);
        }
    }
    Ok(())
}

/// A UUID in the forms PostgreSQL's `uuid_in` reads: 32 hex digits, upper or lower case,
/// optionally in braces, with a hyphen allowed after any group of four digits
/// (`a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11`, `{a0eebc999c0b4ef8bb6d6bb9bd380a11}`).
pub(super) fn parse_uuid(s: &[u8]) -> Option<[u8; 16]> {
    let s = match s {
        [b'{', inner @ .., b'}'] => inner,
        _ => s,
    };
    let mut out = [0u8; 16];
    let mut digits = 0;
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        i += 1;
        if c == b'-' {
            if digits == 0 || digits % 4 != 0 || digits == 32 || s.get(i) == Some(&b'-') {
                return None;
            }
            continue;
        }
        if digits == 32 {
            return None;
        }
        let v = (c as char).to_digit(16)? as u8;
        out[digits / 2] |= if digits % 2 == 0 { v << 4 } else { v };
        digits += 1;
    }
    (digits == 32).then_some(out)
}

/// A batch fits the fields built from `schema` when it has the same columns, by name; the
/// values' kinds are checked as they are read.
pub(super) fn check_layout(
    schema: &Arc<BatchSchema>,
    fields: &[Field],
    batch: &Batch,
) -> Result<(), String> {
    let same = Arc::ptr_eq(schema, &batch.schema)
        || (batch.schema.columns.len() == fields.len()
            && batch
                .schema
                .columns
                .iter()
                .zip(fields)
                .all(|(c, f)| c.name == f.name));
    if !same || batch.columns.len() != fields.len() {
        return Err(format!(
            "a batch of `{}` does not have the columns of `{}`",
            batch.schema.name, schema.name
        ));
    }
    Ok(())
}
