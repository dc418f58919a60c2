//! Result checksums (docs/checksum.md §3.1): each value read by its column's type, from the
//! binary row format (`prepared`, `unnamed`) or from text (`simple`), and fed to one
//! `ResultHasher` per result as the rows stream by.

use std::error::Error as StdError;
use std::fmt::Write as _;

use tokio_postgres::types::{FromSql, Kind, Type};

use super::{client_error, PG_EPOCH_DAYS, PG_EPOCH_US};
use crate::query::checksum::{
    canonical_decimal, parse_timestamp_us, Number, ResultHasher, US_PER_DAY,
};
use crate::query::QueryError;

/// How the values of a result column are read for the checksum, by the column's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ColKind {
    Bool,
    Int2,
    Int4,
    Int8,
    /// oid: an unsigned 32-bit integer.
    Oid,
    Float4,
    Float8,
    Numeric,
    /// text, varchar, name, "char", unknown, json, xml, enums, citext: binary format = text.
    Text,
    /// char(n): text without its trailing blanks, as PostgreSQL's cast to text has it.
    Bpchar,
    /// Binary: a version byte (1), then the text.
    Jsonb,
    /// timestamp and timestamptz: microseconds since 2000-01-01 (UTC for timestamptz; a
    /// timestamp without zone is taken as UTC).
    Timestamp,
    Date,
    Uuid,
    /// Anything else: no binary reading (a `Client` error); in `simple` mode, its text.
    Other,
}

pub(super) fn col_kind(ty: &Type) -> ColKind {
    match *ty {
        Type::BOOL => ColKind::Bool,
        Type::INT2 => ColKind::Int2,
        Type::INT4 => ColKind::Int4,
        Type::INT8 => ColKind::Int8,
        Type::OID => ColKind::Oid,
        Type::FLOAT4 => ColKind::Float4,
        Type::FLOAT8 => ColKind::Float8,
        Type::NUMERIC => ColKind::Numeric,
        Type::TEXT
        | Type::VARCHAR
        | Type::NAME
        | Type::CHAR
        | Type::UNKNOWN
        | Type::JSON
        | Type::XML => ColKind::Text,
        Type::BPCHAR => ColKind::Bpchar,
        Type::JSONB => ColKind::Jsonb,
        Type::TIMESTAMP | Type::TIMESTAMPTZ => ColKind::Timestamp,
        Type::DATE => ColKind::Date,
        Type::UUID => ColKind::Uuid,
        _ => match ty.kind() {
            Kind::Enum(_) => ColKind::Text,
            Kind::Domain(base) => col_kind(base),
            _ if ty.name() == "citext" => ColKind::Text,
            _ => ColKind::Other,
        },
    }
}

/// One result's checksum as its rows are read: the column kinds (from the statement's
/// description, or the first row's columns), and a buffer for numeric text.
pub(super) struct ResultSum {
    pub(super) hasher: ResultHasher,
    kinds: Vec<ColKind>,
    /// `name (type)` of each column, for messages.
    names: Vec<String>,
    /// Reused for the text of non-whole numerics (no allocation per value).
    scratch: String,
}

impl ResultSum {
    pub(super) fn of_columns(columns: &[tokio_postgres::Column]) -> ResultSum {
        ResultSum {
            hasher: ResultHasher::new(),
            kinds: columns.iter().map(|c| col_kind(c.type_())).collect(),
            names: columns
                .iter()
                .map(|c| format!("`{}` ({})", c.name(), c.type_().name()))
                .collect(),
            scratch: String::new(),
        }
    }

    fn column_error(&self, i: usize, why: &str) -> QueryError {
        let name = self.names.get(i).map_or("?", String::as_str);
        client_error(format!("checksum: column {name}: {why}"))
    }

    /// A row in the binary format (`prepared` and `unnamed`).
    pub(super) fn binary_row(&mut self, row: &tokio_postgres::Row) -> Result<(), QueryError> {
        self.check_width(row.len())?;
        self.hasher.begin_row();
        for i in 0..self.kinds.len() {
            let raw = row
                .try_get::<_, RawValue>(i)
                .map_err(|e| self.column_error(i, &e.to_string()))?;
            if let Err(why) = push_binary(&mut self.hasher, self.kinds[i], raw.0, &mut self.scratch)
            {
                return Err(self.column_error(i, &why));
            }
        }
        self.hasher.end_row();
        Ok(())
    }

    /// A row in the text format (`simple`).
    pub(super) fn text_row(
        &mut self,
        row: &tokio_postgres::SimpleQueryRow,
    ) -> Result<(), QueryError> {
        self.check_width(row.len())?;
        self.hasher.begin_row();
        for i in 0..self.kinds.len() {
            let text = row
                .try_get(i)
                .map_err(|e| self.column_error(i, &e.to_string()))?;
            if let Err(why) = push_text_value(&mut self.hasher, self.kinds[i], text) {
                return Err(self.column_error(i, &why));
            }
        }
        self.hasher.end_row();
        Ok(())
    }

    pub(super) fn check_width(&self, n: usize) -> Result<(), QueryError> {
        if n == self.kinds.len() {
            Ok(())
        } else {
            Err(client_error(format!(
                "checksum: the rows have {n} column(s) but the statement was described with {}",
                self.kinds.len()
            )))
        }
    }
}

/// A column value as it came in a row, unread: `None` for NULL.
struct RawValue<'a>(Option<&'a [u8]>);

impl<'a> FromSql<'a> for RawValue<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(RawValue(Some(raw)))
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(RawValue(None))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

fn fixed<const N: usize>(raw: &[u8]) -> Result<[u8; N], String> {
    raw.try_into()
        .map_err(|_| format!("{} byte(s) where the type has {N}", raw.len()))
}

/// Microseconds since PostgreSQL's epoch as Unix microseconds; ±infinity stay i64::MAX/MIN.
fn unix_micros(pg: i64) -> i64 {
    match pg {
        i64::MAX | i64::MIN => pg,
        _ => pg.saturating_add(PG_EPOCH_US),
    }
}

/// Days since PostgreSQL's epoch as the Unix microseconds of their midnight; ±infinity are
/// i64::MAX/MIN, as for timestamps.
fn date_micros(pg_days: i32) -> i64 {
    match pg_days {
        i32::MAX => i64::MAX,
        i32::MIN => i64::MIN,
        d => (i64::from(d) + PG_EPOCH_DAYS) * US_PER_DAY,
    }
}

/// Feeds one value in PostgreSQL's binary format; `Err` says why it cannot be read.
pub(super) fn push_binary(
    h: &mut ResultHasher,
    kind: ColKind,
    raw: Option<&[u8]>,
    scratch: &mut String,
) -> Result<(), String> {
    let Some(raw) = raw else {
        h.push_null();
        return Ok(());
    };
    match kind {
        ColKind::Bool => h.push_bool(fixed::<1>(raw)?[0] != 0),
        ColKind::Int2 => h.push_i64(i16::from_be_bytes(fixed(raw)?).into()),
        ColKind::Int4 => h.push_i64(i32::from_be_bytes(fixed(raw)?).into()),
        ColKind::Int8 => h.push_i64(i64::from_be_bytes(fixed(raw)?)),
        ColKind::Oid => h.push_i64(u32::from_be_bytes(fixed(raw)?).into()),
        ColKind::Float4 => h.push_f32(f32::from_be_bytes(fixed(raw)?)),
        ColKind::Float8 => h.push_f64(f64::from_be_bytes(fixed(raw)?)),
        ColKind::Numeric => h.push_number(numeric_binary(raw, scratch)?),
        ColKind::Text => h.push_text_bytes(raw),
        ColKind::Bpchar => h.push_text_bytes(trim_blanks(raw)),
        ColKind::Jsonb => match raw.split_first() {
            Some((1, text)) => h.push_text_bytes(text),
            _ => return Err("a jsonb value in an unknown binary version".to_string()),
        },
        ColKind::Timestamp => h.push_timestamp_us(unix_micros(i64::from_be_bytes(fixed(raw)?))),
        ColKind::Date => h.push_timestamp_us(date_micros(i32::from_be_bytes(fixed(raw)?))),
        ColKind::Uuid => h.push_text_bytes(&uuid_text(&fixed::<16>(raw)?)),
        ColKind::Other => {
            return Err(
                "the type has no checksum encoding in binary results; cast it to text \
                        in the query (or use `statements simple`, which hashes its text)"
                    .to_string(),
            )
        }
    }
    Ok(())
}

/// Feeds one value in PostgreSQL's text format, read by its column's type.
pub(super) fn push_text_value(
    h: &mut ResultHasher,
    kind: ColKind,
    text: Option<&str>,
) -> Result<(), String> {
    let Some(t) = text else {
        h.push_null();
        return Ok(());
    };
    let bad = || format!("cannot read `{t}` as a value of its type");
    match kind {
        ColKind::Bool => match t {
            "t" | "true" => h.push_bool(true),
            "f" | "false" => h.push_bool(false),
            _ => return Err(bad()),
        },
        ColKind::Int2 | ColKind::Int4 | ColKind::Int8 | ColKind::Oid => {
            h.push_i64(t.parse().map_err(|_| bad())?)
        }
        ColKind::Float4 => h.push_f32(t.parse().map_err(|_| bad())?),
        ColKind::Float8 => h.push_f64(t.parse().map_err(|_| bad())?),
        ColKind::Numeric => h.push_number(canonical_decimal(t).ok_or_else(bad)?),
        ColKind::Bpchar => h.push_text_bytes(trim_blanks(t.as_bytes())),
        ColKind::Text | ColKind::Jsonb | ColKind::Uuid | ColKind::Other => h.push_text(t),
        ColKind::Timestamp | ColKind::Date => {
            h.push_timestamp_us(parse_timestamp_us(t).ok_or_else(bad)?)
        }
    }
    Ok(())
}

fn trim_blanks(b: &[u8]) -> &[u8] {
    let end = b.iter().rposition(|&c| c != b' ').map_or(0, |i| i + 1);
    &b[..end]
}

/// A uuid as PostgreSQL prints it: lowercase, hyphenated.
fn uuid_text(b: &[u8; 16]) -> [u8; 36] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [b'-'; 36];
    let mut o = 0;
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            o += 1;
        }
        out[o] = HEX[usize::from(byte >> 4)];
        out[o + 1] = HEX[usize::from(byte & 0xf)];
        o += 2;
    }
    out
}

/// A numeric in PostgreSQL's binary format (ndigits, weight, sign, dscale, then base-10000
/// digits, the first worth 10000^weight) in canonical form: a whole value that fits i64 is
/// that integer, exactly; any other is read as the text PostgreSQL would print for it, so
/// that it becomes the same double as in `simple` mode (`canonical_decimal`).
pub(super) fn numeric_binary(raw: &[u8], scratch: &mut String) -> Result<Number, String> {
    let malformed = || format!("a malformed numeric ({} bytes)", raw.len());
    if raw.len() < 8 {
        return Err(malformed());
    }
    let word = |i: usize| u16::from_be_bytes([raw[i], raw[i + 1]]);
    let ndigits = usize::from(word(0));
    let weight = i64::from(word(2) as i16);
    let sign = word(4);
    if raw.len() != 8 + 2 * ndigits {
        return Err(malformed());
    }
    let digit = |i: usize| -> i64 {
        if i < ndigits {
            i64::from(word(8 + 2 * i))
        } else {
            0
        }
    };
    let negative = match sign {
        0x0000 => false,
        0x4000 => true,
        0xC000 => return Ok(Number::NaN),
        0xD000 => return Ok(Number::PosInf),
        0xF000 => return Ok(Number::NegInf),
        _ => return Err(malformed()),
    };
    if (0..ndigits).any(|i| digit(i) > 9999) {
        return Err(malformed());
    }
    if ndigits == 0 {
        return Ok(Number::Int(0));
    }
    // Digit i is worth 10000^(weight - i): whole when every digit below the units is zero.
    let whole = (0..ndigits).all(|i| weight - i as i64 >= 0 || digit(i) == 0);
    if whole && weight < 5 {
        // At most 5 base-10000 digits before the point: fits i128 without overflow.
        let mut v: i128 = 0;
        for i in 0..=weight as usize {
            v = v * 10_000 + i128::from(digit(i));
        }
        if let Ok(n) = i64::try_from(if negative { -v } else { v }) {
            return Ok(Number::Int(n));
        }
    }
    scratch.clear();
    if negative {
        scratch.push('-');
    }
    if weight < 0 {
        scratch.push('0');
    } else {
        for i in 0..=weight as usize {
            if i == 0 {
                let _ = write!(scratch, "{}", digit(i));
            } else {
                let _ = write!(scratch, "{:04}", digit(i));
            }
        }
    }
    scratch.push('.');
    // The digits after the point: 10000^-1, 10000^-2, ... down to the last digit sent.
    let mut pos = -1i64;
    loop {
        let i = weight - pos;
        if i >= ndigits as i64 {
            break;
        }
        let d = if i < 0 { 0 } else { digit(i as usize) };
        let _ = write!(scratch, "{d:04}");
        pos -= 1;
    }
    if scratch.ends_with('.') {
        scratch.push('0');
    }
    canonical_decimal(scratch).ok_or_else(malformed)
}
