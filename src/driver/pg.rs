//! PostgreSQL ingest: binary `COPY ... FROM STDIN` (the default), or `INSERT` with one array
//! per column (`insert insert` on the endpoint).
//!
//! Both carry values in PostgreSQL's binary wire format, written by one column writer
//! (`write_column`): int8/int4/int2, float8/float4, bool and timestamptz big-endian, text as
//! its UTF-8 bytes, uuid as 16 bytes. The COPY stream (`CopyEncoder`) is made by the worker's
//! producer before the send's clock starts; the INSERT arrays are built in `send`, since the
//! `Rows` encoding leaves binding to the driver.
//!
//! COPY: one `COPY "table" ("c1", ...) FROM STDIN (FORMAT binary)` per chunk, prepared once
//! per connection, the chunk's bytes in one CopyData message; the server's CommandComplete
//! acknowledges the rows. INSERT: `INSERT INTO "table" (...) SELECT * FROM unnest($1::int8[],
//! ...)`, prepared once, one array parameter per column: a single statement per chunk,
//! whatever its size (a `VALUES` list would need a parameter per value and hit the protocol's
//! 65,535-parameter limit), committed on its own.

use std::fmt::Write as _;
use std::pin::pin;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures_util::SinkExt;
use tokio_postgres::types::{IsNull, ToSql, Type};
use tokio_postgres::Statement;

use super::{Chunk, DriverConfig, Encoding, Sent};
use crate::gen::batch::{Batch, BatchSchema, ColumnBatch, Dictionary, Nulls, Physical, Values};
use crate::net::error::{DriverError, ErrorClass};
use crate::net::pg::{connect, Conn, EncodeCause};
use crate::net::sql_text::push_ident;
use crate::plan::EndpointPlan;
use crate::value::Value;

/// The encoding a `pg` endpoint's producer prepares: binary COPY unless the endpoint says
/// `insert insert`.
pub fn encoding(endpoint: &EndpointPlan) -> Encoding {
    let word = match endpoint.options.get("insert") {
        Some(Value::Symbol(w)) => Some(w.clone()),
        Some(Value::Str(t)) => t.as_lit(),
        _ => None,
    };
    if word.as_deref() == Some("insert") {
        Encoding::Rows
    } else {
        Encoding::PgCopy
    }
}

// ------------------------------------------------------------------------------------------------
// Columns in the binary format

/// The PostgreSQL type a column is sent as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wire {
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

    fn name(self) -> &'static str {
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

    fn element(self) -> Type {
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

    fn array(self) -> Type {
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
struct Field {
    name: String,
    wire: Wire,
}

/// The columns of `schema` as sent. PostgreSQL tables have at most 1,600 columns, far below
/// the binary formats' 16-bit counts; a NUL byte cannot travel in a statement's text.
fn fields(schema: &BatchSchema) -> Result<Vec<Field>, String> {
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
trait FieldSink {
    fn null(&mut self, row: usize);
    fn value(&mut self, row: usize, bytes: &[u8]);
}

/// Adds each field's size (length word plus value) to its row's total.
struct Sizes<'a> {
    lens: &'a mut [usize],
}

impl FieldSink for Sizes<'_> {
    #[inline(always)]
    fn null(&mut self, row: usize) {
        self.lens[row] += 4;
    }

    #[inline(always)]
    fn value(&mut self, row: usize, bytes: &[u8]) {
        self.lens[row] += 4 + bytes.len();
    }
}

/// Writes each field at its row's cursor in a buffer laid out by `Sizes`, and moves the
/// cursor on.
struct At<'a> {
    out: &'a mut [u8],
    cursor: &'a mut [usize],
}

impl FieldSink for At<'_> {
    #[inline(always)]
    fn null(&mut self, row: usize) {
        let p = self.cursor[row];
        self.out[p..p + 4].copy_from_slice(&(-1i32).to_be_bytes());
        self.cursor[row] = p + 4;
    }

    #[inline(always)]
    fn value(&mut self, row: usize, bytes: &[u8]) {
        let p = self.cursor[row];
        let end = p + 4 + bytes.len();
        // Lengths were checked against i32::MAX when sizing.
        self.out[p..p + 4].copy_from_slice(&(bytes.len() as i32).to_be_bytes());
        self.out[p + 4..end].copy_from_slice(bytes);
        self.cursor[row] = end;
    }
}

/// Appends the fields in row order: the elements of a binary array.
struct Append<'a> {
    out: &'a mut Vec<u8>,
}

impl FieldSink for Append<'_> {
    #[inline(always)]
    fn null(&mut self, _row: usize) {
        self.out.extend_from_slice(&(-1i32).to_be_bytes());
    }

    #[inline(always)]
    fn value(&mut self, _row: usize, bytes: &[u8]) {
        self.out
            .extend_from_slice(&(bytes.len() as i32).to_be_bytes());
        self.out.extend_from_slice(bytes);
    }
}

/// Microseconds from the Unix epoch to PostgreSQL's, 2000-01-01T00:00:00Z.
const PG_EPOCH_US: i64 = 946_684_800_000_000;

/// Writes the first `rows` values of column `col` (sent as `f`) to `sink`. `dict` is the
/// column's dictionary when it is a symbol column. Errors name the column and row: a value
/// the column's type cannot hold, a batch whose layout is not the schema's.
fn write_column<S: FieldSink>(
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
                dict.values.get(ids[r] as usize).map(String::as_bytes)
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
fn parse_uuid(s: &[u8]) -> Option<[u8; 16]> {
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

// ------------------------------------------------------------------------------------------------
// COPY

/// `PGCOPY\n\xff\r\n\0`, then the flags word (no OIDs) and the length of the header
/// extension area (none).
const COPY_HEADER: [u8; 19] = *b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";
/// The file trailer: a field count of -1.
const COPY_TRAILER: [u8; 2] = (-1i16).to_be_bytes();

/// Turns batches into PostgreSQL binary COPY streams (`COPY ... FROM STDIN (FORMAT binary)`),
/// one complete stream per batch: header, one tuple per row, trailer.
///
/// Columnar: the rows' sizes are summed column by column, then each column is written into
/// its rows' places, one loop per column kind; nothing is allocated once `out` and the
/// per-row cursors have grown to the batch size.
#[derive(Debug)]
pub struct CopyEncoder {
    schema: Arc<BatchSchema>,
    fields: Vec<Field>,
    /// Per row: its size, then where its next field goes.
    cursor: Vec<usize>,
}

impl CopyEncoder {
    pub fn new(schema: Arc<BatchSchema>) -> Result<CopyEncoder, String> {
        Ok(CopyEncoder {
            fields: fields(&schema)?,
            schema,
            cursor: Vec::new(),
        })
    }

    /// Appends a complete binary COPY stream holding every row of `batch` to `out`; returns
    /// the number of rows. On error (a value the column's type cannot hold, a batch of
    /// another layout) `out` is left as it was.
    pub fn encode(&mut self, batch: &Batch, out: &mut Vec<u8>) -> Result<usize, String> {
        let base = out.len();
        CopyEncoder::begin(out);
        match self.tuples(batch, out) {
            Ok(rows) => {
                CopyEncoder::end(out);
                Ok(rows)
            }
            Err(e) => {
                out.truncate(base);
                Err(e)
            }
        }
    }

    /// The stream's header: a stream is `begin`, any number of `tuples`, then `end`, so
    /// that one COPY can carry several generated batches.
    pub fn begin(out: &mut Vec<u8>) {
        out.extend_from_slice(&COPY_HEADER);
    }

    pub fn end(out: &mut Vec<u8>) {
        out.extend_from_slice(&COPY_TRAILER);
    }

    /// Appends one tuple per row of `batch`; returns the number of rows. On error `out` is
    /// left as it was.
    pub fn tuples(&mut self, batch: &Batch, out: &mut Vec<u8>) -> Result<usize, String> {
        check_layout(&self.schema, &self.fields, batch)?;
        let rows = batch.rows;
        let cursor = &mut self.cursor;
        cursor.clear();
        // Each tuple starts with its 16-bit field count.
        cursor.resize(rows, 2);
        for (c, f) in self.fields.iter().enumerate() {
            let dict = batch.schema.columns[c].dictionary.as_deref();
            let mut sizes = Sizes { lens: cursor };
            write_column(f, &batch.columns[c], dict, rows, &mut sizes)?;
        }
        let base = out.len();
        let mut at = base;
        for c in cursor.iter_mut() {
            let len = *c;
            *c = at;
            at += len;
        }
        out.resize(at, 0);
        let count = (self.fields.len() as i16).to_be_bytes();
        for c in cursor.iter_mut() {
            out[*c..*c + 2].copy_from_slice(&count);
            *c += 2;
        }
        for (c, f) in self.fields.iter().enumerate() {
            let dict = batch.schema.columns[c].dictionary.as_deref();
            let mut place = At {
                out: &mut out[..],
                cursor,
            };
            // The sizing pass read the same values through the same conversions.
            if let Err(e) = write_column(f, &batch.columns[c], dict, rows, &mut place) {
                out.truncate(base);
                return Err(e);
            }
        }
        Ok(rows)
    }
}

/// A batch fits the fields built from `schema` when it has the same columns, by name; the
/// values' kinds are checked as they are read.
fn check_layout(schema: &Arc<BatchSchema>, fields: &[Field], batch: &Batch) -> Result<(), String> {
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

// ------------------------------------------------------------------------------------------------
// INSERT

/// One column of a batch as a one-dimensional binary array, the value of a `$n::type[]`
/// parameter. tokio-postgres asks it for its bytes when it builds the Bind message.
#[derive(Debug)]
struct ArrayParam<'a> {
    bytes: &'a [u8],
    ty: Type,
}

impl ToSql for ArrayParam<'_> {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.extend_from_slice(self.bytes);
        Ok(IsNull::No)
    }

    /// Any type as far as the trait's static check goes: the instance knows its type, and
    /// `to_sql_checked` compares it with the statement's.
    fn accepts(_ty: &Type) -> bool {
        true
    }

    fn to_sql_checked(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        if *ty != self.ty {
            return Err(Box::new(EncodeCause(format!(
                "the INSERT statement takes {ty} where wlrun sends {}",
                self.ty
            ))));
        }
        self.to_sql(ty, out)
    }
}

/// Fills one binary array per column from a batch; the buffers are kept between batches.
struct Arrays {
    schema: Arc<BatchSchema>,
    fields: Vec<Field>,
    arrays: Vec<Vec<u8>>,
}

impl Arrays {
    fn new(schema: Arc<BatchSchema>) -> Result<Arrays, String> {
        let fields = fields(&schema)?;
        Ok(Arrays {
            arrays: vec![Vec::new(); fields.len()],
            fields,
            schema,
        })
    }

    fn fill(&mut self, batch: &Batch) -> Result<(), String> {
        check_layout(&self.schema, &self.fields, batch)?;
        let rows = batch.rows;
        let dim =
            i32::try_from(rows).map_err(|_| format!("a batch of {rows} rows is too large"))?;
        for (c, (f, out)) in self.fields.iter().zip(&mut self.arrays).enumerate() {
            let col = &batch.columns[c];
            out.clear();
            // Array header: one dimension, whether any element is NULL, the element type,
            // then the dimension's length and lower bound.
            out.extend_from_slice(&1i32.to_be_bytes());
            out.extend_from_slice(&i32::from(col.nulls.any()).to_be_bytes());
            out.extend_from_slice(&f.wire.element().oid().to_be_bytes());
            out.extend_from_slice(&dim.to_be_bytes());
            out.extend_from_slice(&1i32.to_be_bytes());
            let dict = batch.schema.columns[c].dictionary.as_deref();
            write_column(f, col, dict, rows, &mut Append { out })?;
        }
        Ok(())
    }

    fn params(&self) -> impl ExactSizeIterator<Item = ArrayParam<'_>> {
        self.arrays
            .iter()
            .zip(&self.fields)
            .map(|(a, f)| ArrayParam {
                bytes: a,
                ty: f.wire.array(),
            })
    }

    /// The bytes the parameters take in a Bind message: a format code and a length word
    /// each, plus the arrays.
    fn bind_bytes(&self) -> u64 {
        self.arrays.iter().map(|a| 2 + 4 + a.len() as u64).sum()
    }
}

// ------------------------------------------------------------------------------------------------
// The connection

/// Framing bytes of the extended-protocol messages a send writes, for `Sent::socket_bytes`.
/// tokio-postgres names prepared statements `s<n>` with a process-wide counter it does not
/// expose; the name is counted as `STATEMENT_NAME` bytes, which is exact for `s10` to `s99`
/// and off by a byte or two otherwise.
const STATEMENT_NAME: u64 = 3;
/// Bind without the parameters: type byte, length, empty portal name, the statement's name
/// and its terminator, the parameter-format count, the parameter count, one result format.
const BIND: u64 = 1 + 4 + 1 + STATEMENT_NAME + 1 + 2 + 2 + 2 + 2;
/// Execute (type, length, empty portal name, row limit) and Sync (type, length).
const EXECUTE_SYNC: u64 = (1 + 4 + 1 + 4) + (1 + 4);
/// A message's type byte and length word: what CopyData, CopyDone and Sync add.
const HEADER: u64 = 5;
/// Terminate, which closing the session writes.
const TERMINATE: u64 = 5;
/// Close of a prepared statement and its Sync, written when the statement is dropped.
const CLOSE_SYNC: u64 = (1 + 4 + 1 + STATEMENT_NAME + 1) + 5;

enum Mode {
    Copy { staging: BytesMut },
    Insert(Box<Arrays>),
}

/// One worker's PostgreSQL connection.
pub struct PgWriter {
    /// `None` once `finish` has closed it.
    conn: Option<Conn>,
    mode: Mode,
    table: String,
    /// The COPY or INSERT statement's text.
    sql: String,
    /// The prepared statement; prepared at connect, and again after a failed attempt.
    statement: Option<Statement>,
}

impl PgWriter {
    /// Connects to the endpoint and prepares the chunk statement. A statement the server
    /// refuses to prepare (a missing table) is not a connect failure: each send tries again
    /// and reports the server's error.
    pub async fn connect(cfg: &DriverConfig) -> Result<PgWriter, DriverError> {
        let endpoint = format!("{}.{}", cfg.endpoint.target, cfg.endpoint.name);
        let url = cfg
            .url
            .as_deref()
            .ok_or_else(|| DriverError::connect(&endpoint, "the endpoint has no URL"))?;
        let fields =
            fields(&cfg.schema).map_err(|e| DriverError::new(ErrorClass::Encode, e, true))?;
        let mode = match encoding(&cfg.endpoint) {
            Encoding::Rows => Mode::Insert(Box::new(
                Arrays::new(Arc::clone(&cfg.schema))
                    .map_err(|e| DriverError::new(ErrorClass::Encode, e, true))?,
            )),
            _ => Mode::Copy {
                staging: BytesMut::new(),
            },
        };
        let sql = match mode {
            Mode::Copy { .. } => copy_sql(&cfg.table, &fields),
            Mode::Insert(_) => insert_sql(&cfg.table, &fields),
        };
        let conn = connect(&cfg.endpoint, url, cfg.connect_timeout, cfg.timeout).await?;
        let mut w = PgWriter {
            conn: Some(conn),
            mode,
            table: cfg.table.clone(),
            sql,
            statement: None,
        };
        match w.prepare().await {
            Ok(_) => Ok(w),
            Err(e) if !e.fatal => Ok(w),
            Err(e) => Err(e),
        }
    }

    /// The chunk statement, prepared now if it is not yet; returns the bytes preparing wrote.
    async fn prepare(&mut self) -> Result<u64, DriverError> {
        if self.statement.is_some() {
            return Ok(0);
        }
        let conn = self.conn.as_ref().ok_or_else(finished)?;
        let sql = &self.sql;
        let table = &self.table;
        let st = conn
            .wait(
                || format!("preparing the statement for {table:?}"),
                conn.client.prepare(sql),
            )
            .await?;
        self.statement = Some(st);
        // Parse (name, query, no parameter types), Describe (statement), Sync.
        let parse = 1 + 4 + STATEMENT_NAME + 1 + sql.len() as u64 + 1 + 2;
        let describe = 1 + 4 + 1 + STATEMENT_NAME + 1;
        Ok(parse + describe + HEADER)
    }

    /// Sends one chunk and waits for the server to confirm it.
    ///
    /// A server error (a constraint, a value the column rejects) is not fatal: the session is
    /// usable for the next chunk. Except one: a COPY the server refuses before it starts
    /// reading data (a missing table or column, no permission) leaves tokio-postgres 0.7 out
    /// of step with the server (it has sent two Syncs and receives two ReadyForQuery,
    /// rust-postgres/rust-postgres#789), so the connection cannot go on and the error is
    /// fatal.
    ///
    /// `socket_bytes` counts the payload and the framing of every message the send writes
    /// (Bind, Execute, Sync; for COPY also CopyData, CopyDone and the second Sync; the
    /// Parse/Describe/Sync of a statement prepared during the send), not TCP/IP overhead.
    pub async fn send(&mut self, chunk: &Chunk) -> Result<Sent, DriverError> {
        if chunk.rows == 0 {
            return Ok(Sent {
                socket_bytes: 0,
                acked: true,
            });
        }
        let prepared = self.prepare().await?;
        let conn = self.conn.as_ref().ok_or_else(finished)?;
        let Some(statement) = &self.statement else {
            return Err(DriverError::new(
                ErrorClass::Connection,
                "no prepared statement after preparing",
                true,
            ));
        };
        let table = &self.table;
        let (stored, written) = match &mut self.mode {
            Mode::Copy { staging } => {
                // Into a buffer tokio-postgres may keep until the socket write: the bytes go
                // out after this call returns, and the staging allocation comes back once
                // they have been written and the `Bytes` dropped.
                staging.reserve(chunk.bytes.len());
                staging.extend_from_slice(&chunk.bytes);
                let data: Bytes = staging.split().freeze();
                let payload = data.len() as u64;
                let sink = conn
                    .wait(
                        || format!("starting COPY into {table:?}"),
                        conn.client.copy_in::<_, Bytes>(statement),
                    )
                    .await
                    .map_err(|mut e| {
                        if e.class == ErrorClass::Server {
                            e.fatal = true;
                            e.message.push_str(
                                " (the COPY did not start; the connection cannot be reused)",
                            );
                        }
                        e
                    })?;
                let mut sink = pin!(sink);
                conn.wait(
                    || format!("sending COPY data into {table:?}"),
                    sink.as_mut().send(data),
                )
                .await?;
                let stored = conn
                    .wait(
                        || format!("completing COPY into {table:?}"),
                        sink.as_mut().finish(),
                    )
                    .await?;
                let framing = BIND + EXECUTE_SYNC + HEADER + HEADER + HEADER;
                (stored, payload + framing)
            }
            Mode::Insert(arrays) => {
                arrays
                    .fill(&chunk.batch)
                    .map_err(|e| DriverError::new(ErrorClass::Encode, e, false))?;
                let stored = conn
                    .wait(
                        || format!("INSERT into {table:?}"),
                        conn.client.execute_raw(statement, arrays.params()),
                    )
                    .await?;
                (stored, BIND + arrays.bind_bytes() + EXECUTE_SYNC)
            }
        };
        if stored != chunk.rows {
            return Err(DriverError::new(
                ErrorClass::Server,
                format!(
                    "{}: the server stored {stored} rows of a chunk of {} into {table:?}",
                    conn.label, chunk.rows
                ),
                false,
            ));
        }
        Ok(Sent {
            socket_bytes: prepared + written,
            acked: true,
        })
    }

    /// Closes the session: the prepared statement's Close, then Terminate. Returns the bytes
    /// those wrote; 0 when already closed.
    pub async fn finish(&mut self) -> Result<u64, DriverError> {
        let Some(conn) = self.conn.take() else {
            return Ok(0);
        };
        let closed = if self.statement.take().is_some() {
            CLOSE_SYNC
        } else {
            0
        };
        conn.close().await?;
        Ok(closed + TERMINATE)
    }
}

fn finished() -> DriverError {
    DriverError::new(
        ErrorClass::Connection,
        "the PostgreSQL connection was already closed by finish",
        true,
    )
}

/// `COPY "table" ("c1", ...) FROM STDIN (FORMAT binary)`.
fn copy_sql(table: &str, fields: &[Field]) -> String {
    let mut sql = String::from("COPY ");
    push_ident(&mut sql, table);
    push_columns(&mut sql, fields);
    sql.push_str(" FROM STDIN (FORMAT binary)");
    sql
}

/// `INSERT INTO "table" ("c1", ...) SELECT * FROM unnest($1::int8[], ...)`.
fn insert_sql(table: &str, fields: &[Field]) -> String {
    let mut sql = String::from("INSERT INTO ");
    push_ident(&mut sql, table);
    push_columns(&mut sql, fields);
    sql.push_str(" SELECT * FROM unnest(");
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        let _ = write!(sql, "${}::{}[]", i + 1, f.wire.name());
    }
    sql.push(')');
    sql
}

fn push_columns(sql: &mut String, fields: &[Field]) {
    sql.push_str(" (");
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        push_ident(sql, &f.name);
    }
    sql.push(')');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::batch::{push_str, ColumnMeta};
    use crate::value::Text;

    fn col(name: &str, ty: &str, physical: Physical, dict: Option<&[&str]>) -> ColumnMeta {
        ColumnMeta {
            name: name.to_string(),
            role: if physical == Physical::Timestamp {
                "timestamp".into()
            } else {
                "field".into()
            },
            ty: ty.to_string(),
            unit_ns: if physical == Physical::Timestamp {
                1
            } else {
                0
            },
            physical,
            dictionary: dict.map(|d| {
                Arc::new(Dictionary {
                    values: d.iter().map(|s| s.to_string()).collect(),
                })
            }),
        }
    }

    fn schema(columns: Vec<ColumnMeta>) -> Arc<BatchSchema> {
        Arc::new(BatchSchema {
            name: "t".into(),
            table: "t".into(),
            series_key: None,
            timestamp: columns.iter().position(|c| c.role == "timestamp"),
            columns,
        })
    }

    /// Two rows over every wire type; row 1 is NULL in the columns marked.
    fn tiny() -> Batch {
        let s = schema(vec![
            col("ts", "timestamp", Physical::Timestamp, None),
            col("host", "symbol", Physical::Symbol, Some(&["a", "bb"])),
            col("n", "long", Physical::Long, None),
            col("i", "int", Physical::Long, None),
            col("s", "short", Physical::Long, None),
            col("d", "double", Physical::Double, None),
            col("f", "float", Physical::Double, None),
            col("ok", "boolean", Physical::Bool, None),
            col("note", "varchar", Physical::Varchar, None),
            col("id", "uuid", Physical::Varchar, None),
        ]);
        let mut b = Batch::new(s);
        b.rows = 2;
        let c = &mut b.columns;
        // 2000-01-01T00:00:01.000001999Z and one nanosecond before the Unix epoch.
        c[0].values = Values::Timestamp(vec![946_684_801_000_001_999, -1]);
        c[1].values = Values::Symbol(vec![1, 0]);
        c[2].values = Values::Long(vec![-2, 0]);
        c[2].nulls.set(1);
        c[3].values = Values::Long(vec![7, 0]);
        c[4].values = Values::Long(vec![-1, 0]);
        c[4].nulls.set(1);
        c[5].values = Values::Double(vec![1.5, 0.0]);
        c[6].values = Values::Double(vec![0.5, 0.0]);
        c[6].nulls.set(1);
        c[7].values = Values::Bool(vec![true, false]);
        push_str(&mut c[8].values, "hé");
        push_str(&mut c[8].values, "");
        c[8].nulls.set(1);
        push_str(&mut c[9].values, "A0EEBC99-9c0b-4ef8-bb6d-6bb9bd380a11");
        push_str(&mut c[9].values, "");
        c[9].nulls.set(1);
        b
    }

    fn field(out: &mut Vec<u8>, bytes: &[u8]) {
        out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
        out.extend_from_slice(bytes);
    }

    #[test]
    fn copy_stream_matches_the_format_byte_for_byte() {
        let b = tiny();
        let mut enc = CopyEncoder::new(Arc::clone(&b.schema)).unwrap();
        let mut out = b"keep".to_vec();
        assert_eq!(enc.encode(&b, &mut out), Ok(2));

        let mut want = b"keep".to_vec();
        want.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
        want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]);
        let null = (-1i32).to_be_bytes();
        // Row 0.
        want.extend_from_slice(&10i16.to_be_bytes());
        field(&mut want, &1_000_001i64.to_be_bytes());
        field(&mut want, b"bb");
        field(&mut want, &(-2i64).to_be_bytes());
        field(&mut want, &7i32.to_be_bytes());
        field(&mut want, &(-1i16).to_be_bytes());
        field(&mut want, &1.5f64.to_be_bytes());
        field(&mut want, &0.5f32.to_be_bytes());
        field(&mut want, &[1]);
        field(&mut want, "hé".as_bytes());
        field(
            &mut want,
            &[
                0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38,
                0x0a, 0x11,
            ],
        );
        // Row 1: -1 ns floors to -1 µs before 1970, which is 946,684,800,000,001 µs before
        // 2000.
        want.extend_from_slice(&10i16.to_be_bytes());
        field(&mut want, &(-946_684_800_000_001i64).to_be_bytes());
        field(&mut want, b"a");
        want.extend_from_slice(&null);
        field(&mut want, &0i32.to_be_bytes());
        want.extend_from_slice(&null);
        field(&mut want, &0f64.to_be_bytes());
        want.extend_from_slice(&null);
        field(&mut want, &[0]);
        want.extend_from_slice(&null);
        want.extend_from_slice(&null);
        want.extend_from_slice(&[0xff, 0xff]);
        assert_eq!(out, want);

        // Reused buffers give the same bytes.
        out.truncate(4);
        assert_eq!(enc.encode(&b, &mut out), Ok(2));
        assert_eq!(out, want);
    }

    #[test]
    fn an_empty_batch_is_header_and_trailer() {
        let mut b = tiny();
        b.clear();
        let mut enc = CopyEncoder::new(Arc::clone(&b.schema)).unwrap();
        let mut out = Vec::new();
        assert_eq!(enc.encode(&b, &mut out), Ok(0));
        let mut want = COPY_HEADER.to_vec();
        want.extend_from_slice(&[0xff, 0xff]);
        assert_eq!(out, want);
    }

    #[test]
    fn values_out_of_range_and_bad_uuids_are_errors_and_leave_out_alone() {
        let mut b = tiny();
        b.columns[3].values = Values::Long(vec![7, i64::from(i32::MAX) + 1]);
        let mut enc = CopyEncoder::new(Arc::clone(&b.schema)).unwrap();
        let mut out = b"x".to_vec();
        let e = enc.encode(&b, &mut out).unwrap_err();
        assert_eq!(e, "column `i` row 1: 2147483648 is out of range for int4");
        assert_eq!(out, b"x");

        let mut b = tiny();
        b.columns[4].nulls.clear();
        b.columns[4].values = Values::Long(vec![0, 40_000]);
        let e = enc.encode(&b, &mut out).unwrap_err();
        assert_eq!(e, "column `s` row 1: 40000 is out of range for int2");

        let mut b = tiny();
        b.columns[9].nulls.clear();
        let e = enc.encode(&b, &mut out).unwrap_err();
        assert_eq!(e, "column `id` row 1: \"\" is not a UUID");
        assert_eq!(out, b"x");
    }

    #[test]
    fn batches_of_another_layout_are_refused() {
        let b = tiny();
        let other = schema(vec![col("x", "long", Physical::Long, None)]);
        let mut enc = CopyEncoder::new(other).unwrap();
        let mut out = Vec::new();
        assert!(enc
            .encode(&b, &mut out)
            .unwrap_err()
            .contains("does not have the columns"));

        // Same names, but a column holds the wrong kind of values.
        let mut b = tiny();
        b.columns[2].values = Values::Double(vec![1.0, 2.0]);
        let mut enc = CopyEncoder::new(Arc::clone(&b.schema)).unwrap();
        assert_eq!(
            enc.encode(&b, &mut out).unwrap_err(),
            "column `n` is sent as int8 but the batch holds double values"
        );
        let mut b = tiny();
        b.columns[2].values = Values::Long(vec![1]);
        assert_eq!(
            enc.encode(&b, &mut out).unwrap_err(),
            "column `n` has fewer values than the batch has rows"
        );
        let mut b = tiny();
        b.columns[1].values = Values::Symbol(vec![0, 9]);
        assert_eq!(
            enc.encode(&b, &mut out).unwrap_err(),
            "column `host` row 1: no such value in the batch"
        );
    }

    #[test]
    fn uuids_in_the_forms_postgres_reads() {
        let want = [
            0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38,
            0x0a, 0x11,
        ];
        for ok in [
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
            "{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}",
        ] {
            assert_eq!(parse_uuid(ok.as_bytes()), Some(want), "{ok}");
        }
        for bad in [
            "",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1g",
            "-a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-",
            "a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0e-ebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99 9c0b 4ef8 bb6d 6bb9bd380a11",
        ] {
            assert_eq!(parse_uuid(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn arrays_hold_the_same_fields_as_the_copy_tuples() {
        let b = tiny();
        let mut a = Arrays::new(Arc::clone(&b.schema)).unwrap();
        a.fill(&b).unwrap();
        // `n`: header (1 dimension, has NULLs, int8, 2 elements, lower bound 1), then -2, NULL.
        let mut want = Vec::new();
        for w in [1i32, 1, 20, 2, 1] {
            want.extend_from_slice(&w.to_be_bytes());
        }
        field(&mut want, &(-2i64).to_be_bytes());
        want.extend_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(a.arrays[2], want);
        // `host`: no NULLs, text (25).
        let mut want = Vec::new();
        for w in [1i32, 0, 25, 2, 1] {
            want.extend_from_slice(&w.to_be_bytes());
        }
        field(&mut want, b"bb");
        field(&mut want, b"a");
        assert_eq!(a.arrays[1], want);
        let types: Vec<String> = a.params().map(|p| p.ty.to_string()).collect();
        assert_eq!(
            types,
            [
                "_timestamptz",
                "_text",
                "_int8",
                "_int4",
                "_int2",
                "_float8",
                "_float4",
                "_bool",
                "_text",
                "_uuid"
            ]
        );
    }

    #[test]
    fn statements_quote_every_identifier() {
        let f = fields(&schema(vec![
            col("ts", "timestamp", Physical::Timestamp, None),
            col("a\"b", "int", Physical::Long, None),
        ]))
        .unwrap();
        assert_eq!(
            copy_sql("My Table", &f),
            "COPY \"My Table\" (\"ts\", \"a\"\"b\") FROM STDIN (FORMAT binary)"
        );
        assert_eq!(
            insert_sql("t", &f),
            "INSERT INTO \"t\" (\"ts\", \"a\"\"b\") SELECT * FROM unnest($1::timestamptz[], $2::int4[])"
        );
    }

    #[test]
    fn encoding_follows_the_insert_option() {
        let mut ep = EndpointPlan {
            target: "db".into(),
            name: "pg".into(),
            kind: "pg".into(),
            dialect: "postgres".into(),
            url: None,
            options: Default::default(),
        };
        assert_eq!(encoding(&ep), Encoding::PgCopy);
        ep.options
            .insert("insert".into(), Value::Symbol("copy".into()));
        assert_eq!(encoding(&ep), Encoding::PgCopy);
        ep.options
            .insert("insert".into(), Value::Symbol("insert".into()));
        assert_eq!(encoding(&ep), Encoding::Rows);
        ep.options
            .insert("insert".into(), Value::Str(Text::lit("insert")));
        assert_eq!(encoding(&ep), Encoding::Rows);
    }
}
