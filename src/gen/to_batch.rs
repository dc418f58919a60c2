//! Reference rows (`Vec<Cell>`, as `gen::rows` yields them) into a column `Batch`: how tests,
//! and the comparisons against the columnar engine, feed encoders with reference data (strict:
//! `batch_from_rows`), and how the columnar engine's fallback path fills its batches (lenient:
//! `push_row`). Both append rows through one `append_row`; neither is a hot path.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

use super::batch::{Batch, BatchSchema, Dictionary, Physical, Texts, Values};
use super::cell::Cell;
use super::columnar::push_cell;

/// Fills `out` (cleared first; rebuilt when its schema is not `schema`) with `rows`, one cell
/// per column in column order. `series` is each row's series index, or empty for all zeros.
///
/// Cells by the column's physical kind: `Long`, `Double`, `Bool` and `Timestamp` take exactly
/// that cell; `Varchar` takes `Str`, and any other value as its `Cell::to_text` (declared types
/// such as `integer` or `date` are generated as numbers or timestamps but laid out as text);
/// `Symbol` takes a `Str` found in the column's dictionary (the first id with that text).
/// `Cell::Null` sets the row's null bit over a default value (0, `false`, empty text, id 0).
/// Any other combination, an unknown symbol text, a row of the wrong length or a `series` of
/// the wrong length is an error naming the row and column; `out` is then left empty.
pub fn batch_from_rows(
    schema: Arc<BatchSchema>,
    rows: &[Vec<Cell>],
    series: &[u32],
    out: &mut Batch,
) -> Result<(), String> {
    if Arc::ptr_eq(&out.schema, &schema) {
        out.clear();
    } else {
        *out = Batch::new(schema);
    }
    let result = fill(rows, series, out);
    if result.is_err() {
        out.clear();
    }
    result
}

fn fill(rows: &[Vec<Cell>], series: &[u32], out: &mut Batch) -> Result<(), String> {
    let schema = Arc::clone(&out.schema);
    if !series.is_empty() && series.len() != rows.len() {
        return Err(format!(
            "{} series indexes for {} rows",
            series.len(),
            rows.len()
        ));
    }
    let lookups: Vec<Option<HashMap<&str, u32>>> = schema
        .columns
        .iter()
        .map(|c| match (c.physical, &c.dictionary) {
            (Physical::Symbol, Some(d)) => {
                let mut m = HashMap::with_capacity(d.values.len());
                for (id, v) in d.values.iter().enumerate() {
                    m.entry(v).or_insert(id as u32);
                }
                Ok(Some(m))
            }
            (Physical::Symbol, None) => Err(format!(
                "column `{}` is a symbol column without a dictionary",
                c.name
            )),
            _ => Ok(None),
        })
        .collect::<Result<_, _>>()?;
    for (r, row) in rows.iter().enumerate() {
        if row.len() != schema.columns.len() {
            return Err(format!(
                "row {r} has {} cells for {} columns",
                row.len(),
                schema.columns.len()
            ));
        }
        let s = series.get(r).copied().unwrap_or(0);
        append_row(out, row, s, |c, values, cell| {
            let fits = match (&mut *values, cell) {
                (Values::Symbol(v), Cell::Str(s)) => {
                    let id = lookups[c]
                        .as_ref()
                        .and_then(|m| m.get(s.as_str()))
                        .ok_or_else(|| {
                            format!(
                                "row {r}, column `{}`: {s:?} is not in the dictionary",
                                schema.columns[c].name
                            )
                        })?;
                    v.push(*id);
                    return Ok(());
                }
                (_, Cell::Null) | (Values::Varchar { .. }, _) => true,
                (Values::Long(_), Cell::Long(_))
                | (Values::Double(_), Cell::Double(_))
                | (Values::Bool(_), Cell::Bool(_))
                | (Values::Timestamp(_), Cell::Timestamp(_)) => true,
                _ => false,
            };
            if !fits {
                return Err(format!(
                    "row {r}, column `{}`: {cell:?} in a {:?} column",
                    schema.columns[c].name, schema.columns[c].physical
                ));
            }
            // On the cells that fit, the engine's own writer is exact: the value itself, or
            // the placeholder under a null bit (0, `false`, empty text, id 0).
            push_cell(values, cell);
            Ok(())
        })?;
    }
    Ok(())
}

/// One reference row appended to a batch whose symbol columns are varchar: the columnar
/// engine's fallback path (`Columnar::fill` for schemas the fast path does not cover).
///
/// Lenient where `batch_from_rows` is strict, on purpose: the reference has already coerced
/// every cell to its column's kind, and the fallback writes cells exactly as the fast path
/// does (`push_cell`, which converts rather than fails), so generating never errors here.
pub(super) fn push_row(batch: &mut Batch, row: &[Cell]) {
    let Ok(()) = append_row::<Infallible>(batch, row, 0, |_, values, cell| {
        push_cell(values, cell);
        Ok(())
    });
}

/// Appends one row at the end of `batch`: each cell through `write` (which pushes exactly one
/// value into the column it is given), the row's null bits, its series index. The row writer of
/// both conversions, which differ only in what `write` accepts.
fn append_row<E>(
    batch: &mut Batch,
    row: &[Cell],
    series: u32,
    mut write: impl FnMut(usize, &mut Values, &Cell) -> Result<(), E>,
) -> Result<(), E> {
    let at = batch.rows;
    for (c, cell) in row.iter().enumerate() {
        let out = &mut batch.columns[c];
        write(c, &mut out.values, cell)?;
        if *cell == Cell::Null {
            out.nulls.set(at);
        }
    }
    batch.series.push(series);
    batch.rows += 1;
    Ok(())
}

/// `schema` with every `symbol`-typed text column turned into a dictionary column whose
/// dictionary is the distinct non-null texts of that column in `rows`, in order of first
/// appearance: the layout the columnar engine produces, from reference rows. Columns that are
/// already dictionary columns are kept as they are.
pub fn with_dictionaries(schema: &BatchSchema, rows: &[Vec<Cell>]) -> BatchSchema {
    let mut out = schema.clone();
    for (c, meta) in out.columns.iter_mut().enumerate() {
        if meta.ty != "symbol" || meta.physical != Physical::Varchar {
            continue;
        }
        let mut seen: HashMap<String, u32> = HashMap::new();
        let mut values = Texts::default();
        for row in rows {
            let text = match row.get(c) {
                Some(Cell::Null) | None => continue,
                Some(Cell::Str(s)) => s.clone(),
                Some(other) => other.to_text(),
            };
            if !seen.contains_key(&text) {
                seen.insert(text.clone(), values.len() as u32);
                values.push(&text);
            }
        }
        meta.physical = Physical::Symbol;
        meta.dictionary = Some(Arc::new(Dictionary { values }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::batch::ColumnMeta;

    fn meta(name: &str, ty: &str, physical: Physical) -> ColumnMeta {
        ColumnMeta {
            name: name.into(),
            role: "field".into(),
            ty: ty.into(),
            unit_ns: if ty == "timestamp" { 1 } else { 0 },
            physical,
            dictionary: None,
        }
    }

    fn schema() -> BatchSchema {
        BatchSchema {
            name: "t".into(),
            table: "t".into(),
            columns: vec![
                meta("sym", "symbol", Physical::Varchar),
                meta("n", "long", Physical::Long),
                meta("x", "double", Physical::Double),
                meta("b", "boolean", Physical::Bool),
                meta("ts", "timestamp", Physical::Timestamp),
                meta("i", "integer", Physical::Varchar),
            ],
            series_key: None,
            timestamp: Some(4),
        }
    }

    fn rows() -> Vec<Vec<Cell>> {
        vec![
            vec![
                Cell::Str("a".into()),
                Cell::Long(7),
                Cell::Double(0.5),
                Cell::Bool(true),
                Cell::Timestamp(10),
                Cell::Long(3),
            ],
            vec![
                Cell::Null,
                Cell::Null,
                Cell::Null,
                Cell::Null,
                Cell::Null,
                Cell::Null,
            ],
            vec![
                Cell::Str("b".into()),
                Cell::Long(-1),
                Cell::Double(2.0),
                Cell::Bool(false),
                Cell::Timestamp(20),
                Cell::Str("x".into()),
            ],
        ]
    }

    #[test]
    fn varchar_and_dictionary_layouts() {
        let rows = rows();
        let plain = Arc::new(schema());
        let mut b = Batch::new(Arc::clone(&plain));
        batch_from_rows(Arc::clone(&plain), &rows, &[], &mut b).unwrap();
        assert_eq!(b.rows, 3);
        assert_eq!(b.series, vec![0, 0, 0]);
        assert_eq!(b.text(0, 0), "a");
        assert_eq!(b.text(0, 2), "b");
        assert!(b.is_null(0, 1) && b.is_null(1, 1) && b.is_null(4, 1));
        assert!(!b.is_null(0, 0) && !b.is_null(1, 2));
        assert_eq!(b.columns[1].values, Values::Long(vec![7, 0, -1]));
        assert_eq!(b.columns[2].values, Values::Double(vec![0.5, 0.0, 2.0]));
        assert_eq!(b.columns[3].values, Values::Bool(vec![true, false, false]));
        assert_eq!(b.columns[4].values, Values::Timestamp(vec![10, 0, 20]));
        assert_eq!(b.text(5, 0), "3");
        assert_eq!(b.text(5, 2), "x");

        let dict = Arc::new(with_dictionaries(&plain, &rows));
        assert_eq!(dict.columns[0].physical, Physical::Symbol);
        assert_eq!(
            dict.columns[0]
                .dictionary
                .as_ref()
                .unwrap()
                .values
                .iter()
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
        // `integer` is not `symbol`: left as text.
        assert_eq!(dict.columns[5].physical, Physical::Varchar);
        batch_from_rows(Arc::clone(&dict), &rows, &[4, 5, 6], &mut b).unwrap();
        assert_eq!(b.columns[0].values, Values::Symbol(vec![0, 0, 1]));
        assert_eq!(b.text(0, 2), "b");
        assert_eq!(b.series, vec![4, 5, 6]);
        // Refilling clears: same content again, not appended.
        batch_from_rows(Arc::clone(&dict), &rows, &[4, 5, 6], &mut b).unwrap();
        assert_eq!(b.rows, 3);
        assert_eq!(b.columns[1].values.len(), 3);
    }

    #[test]
    fn errors_name_the_row_and_column() {
        let plain = Arc::new(schema());
        let dict = Arc::new(with_dictionaries(&plain, &rows()));
        let mut b = Batch::new(Arc::clone(&plain));

        let mut bad = rows();
        bad[2][0] = Cell::Str("zzz".into());
        let e = batch_from_rows(Arc::clone(&dict), &bad, &[], &mut b).unwrap_err();
        assert!(
            e.contains("row 2") && e.contains("`sym`") && e.contains("zzz"),
            "{e}"
        );
        assert_eq!(b.rows, 0);
        assert!(b.columns.iter().all(|c| c.values.is_empty()));

        let mut bad = rows();
        bad[0][1] = Cell::Double(1.0);
        let e = batch_from_rows(Arc::clone(&plain), &bad, &[], &mut b).unwrap_err();
        assert!(e.contains("row 0") && e.contains("`n`"), "{e}");

        let mut bad = rows();
        bad[1].pop();
        assert!(batch_from_rows(Arc::clone(&plain), &bad, &[], &mut b).is_err());
        assert!(batch_from_rows(Arc::clone(&plain), &rows(), &[1], &mut b).is_err());

        let mut no_dict = schema();
        no_dict.columns[0].physical = Physical::Symbol;
        let e = batch_from_rows(Arc::new(no_dict), &rows(), &[], &mut b).unwrap_err();
        assert!(e.contains("without a dictionary"), "{e}");
    }
}
