//! `INSERT ... SELECT * FROM unnest(...)`: each column of a batch as one binary array
//! parameter, built in `send`.

use std::sync::Arc;

use bytes::BytesMut;
use tokio_postgres::types::{IsNull, ToSql, Type};

use super::binary::{check_layout, fields, write_column, Field, FieldSink};
use crate::gen::batch::{Batch, BatchSchema};
use crate::net::pg::EncodeCause;

/// One column of a batch as a one-dimensional binary array, the value of a `$n::type[]`
/// parameter. tokio-postgres asks it for its bytes when it builds the Bind message.
#[derive(Debug)]
pub(super) struct ArrayParam<'a> {
    bytes: &'a [u8],
    pub(super) ty: Type,
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
pub(super) struct Arrays {
    schema: Arc<BatchSchema>,
    fields: Vec<Field>,
    pub(super) arrays: Vec<Vec<u8>>,
}

impl Arrays {
    pub(super) fn new(schema: Arc<BatchSchema>) -> Result<Arrays, String> {
        let fields = fields(&schema)?;
        Ok(Arrays {
            arrays: vec![Vec::new(); fields.len()],
            fields,
            schema,
        })
    }

    pub(super) fn fill(&mut self, batch: &Batch) -> Result<(), String> {
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

    pub(super) fn params(&self) -> impl ExactSizeIterator<Item = ArrayParam<'_>> {
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
    pub(super) fn bind_bytes(&self) -> u64 {
        self.arrays.iter().map(|a| 2 + 4 + a.len() as u64).sum()
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
