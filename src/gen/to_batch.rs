//! Reference rows (`Vec<Cell>`, as `gen::rows` yields them) into a column `Batch`: how tests,
//! and the comparisons against the columnar engine, feed encoders with reference data. Simple
//! and strict rather than fast.

use std::collections::HashMap;
use std::sync::Arc;

use super::batch::{push_str, Batch, BatchSchema, Dictionary, Physical, Values};
use super::cell::Cell;

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
                    m.entry(v.as_str()).or_insert(id as u32);
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
        for (c, cell) in row.iter().enumerate() {
            let col = &mut out.columns[c];
            let mismatch = || {
                format!(
                    "row {r}, column `{}`: {cell:?} in a {:?} column",
                    schema.columns[c].name, schema.columns[c].physical
                )
            };
            if *cell == Cell::Null {
                col.nulls.set(r);
            }
            match (&mut col.values, cell) {
                (Values::Long(v), Cell::Long(x)) => v.push(*x),
                (Values::Long(v), Cell::Null) => v.push(0),
                (Values::Double(v), Cell::Double(x)) => v.push(*x),
                (Values::Double(v), Cell::Null) => v.push(0.0),
                (Values::Bool(v), Cell::Bool(x)) => v.push(*x),
                (Values::Bool(v), Cell::Null) => v.push(false),
                (Values::Timestamp(v), Cell::Timestamp(x)) => v.push(*x),
                (Values::Timestamp(v), Cell::Null) => v.push(0),
                (Values::Symbol(v), Cell::Null) => v.push(0),
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
                }
                (v @ Values::Varchar { .. }, Cell::Null) => push_str(v, ""),
                (v @ Values::Varchar { .. }, Cell::Str(s)) => push_str(v, s),
                (v @ Values::Varchar { .. }, other) => push_str(v, &other.to_text()),
                _ => return Err(mismatch()),
            }
        }
    }
    out.rows = rows.len();
    if series.is_empty() {
        out.series.resize(rows.len(), 0);
    } else {
        out.series.extend_from_slice(series);
    }
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
        let mut values = Vec::new();
        for row in rows {
            let text = match row.get(c) {
                Some(Cell::Null) | None => continue,
                Some(Cell::Str(s)) => s.clone(),
                Some(other) => other.to_text(),
            };
            if !seen.contains_key(&text) {
                seen.insert(text.clone(), values.len() as u32);
                values.push(text);
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
            dict.columns[0].dictionary.as_ref().unwrap().values,
            vec!["a".to_string(), "b".to_string()]
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
