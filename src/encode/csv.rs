//! CSV: a header line of the column names, then one line per row (RFC 4180 quoting, `\n` line
//! ends). Two encoders, rows (`CsvEncoder`) and column batches (`CsvBatchEncoder`, the one
//! `wlrun gen` uses), write the same text through one `record`/`field`/`render`.
//!
//! Cells: Null is an empty field (so is an empty string); Long and Duration (ns) in decimal;
//! Double in Rust's shortest round-trip form (`0.1`, `100`), with `Infinity`, `-Infinity` and
//! `NaN` spelled as PostgreSQL reads them; Bool `true`/`false`; Timestamp in UTC, whole seconds
//! without a fraction (`2017-01-01T00:00:00Z`), otherwise with as many fraction digits as the
//! column's unit has (ms 3, us 6, ns 9): `2017-01-01T00:00:00.250Z`. `TimestampStyle::Sql`
//! writes `2017-01-01 00:00:00` (no zone, the pgbench query CSV) with the same fraction rule.

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::gen::{unit_ns, Cell};
use crate::plan::{ColumnPlan, SchemaPlan};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimestampStyle {
    /// `2017-01-01T00:00:00Z`
    #[default]
    Rfc3339,
    /// `2017-01-01 00:00:00`
    Sql,
}

/// Writes rows as CSV, one `write_row` per row; the header goes out in `new`. Fields and lines
/// as `CsvBatchEncoder` writes them (one `record` writer), plus the rule of the `csv` crate this
/// encoder was first written on: a line with no bytes at all (one empty field) is written `""`.
pub struct CsvEncoder<W: Write> {
    out: io::BufWriter<W>,
    /// Each column's timestamp unit in ns (1 when the column has none).
    units: Vec<i64>,
    style: TimestampStyle,
    fields: Vec<String>,
    line: Vec<u8>,
}

impl<W: Write> CsvEncoder<W> {
    pub fn new(out: W, columns: &[ColumnPlan], style: TimestampStyle) -> io::Result<Self> {
        let mut enc = CsvEncoder {
            out: io::BufWriter::new(out),
            units: columns.iter().map(|c| unit_ns(c.unit.as_deref())).collect(),
            style,
            fields: vec![String::new(); columns.len()],
            line: Vec::new(),
        };
        let names = columns.iter().map(|c| c.name.as_bytes());
        write_line(&mut enc.out, &mut enc.line, names)?;
        Ok(enc)
    }

    /// One row, one cell per column (as `gen::rows` yields them).
    pub fn write_row(&mut self, row: &[Cell]) -> io::Result<()> {
        if row.len() != self.fields.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a row of {} cells for {} columns",
                    row.len(),
                    self.fields.len()
                ),
            ));
        }
        for (i, cell) in row.iter().enumerate() {
            let f = &mut self.fields[i];
            f.clear();
            render(cell, self.units[i], self.style, f);
        }
        let fields = self.fields.iter().map(|f| f.as_bytes());
        write_line(&mut self.out, &mut self.line, fields)
    }

    /// Flushes and returns the writer.
    pub fn finish(self) -> io::Result<W> {
        let mut out = self.out.into_inner().map_err(|e| e.into_error())?;
        out.flush()?;
        Ok(out)
    }
}

/// One line of `CsvEncoder` (built in `line`, then written): `record`, or `""` when that has
/// no bytes, and the line end.
fn write_line<'a>(
    out: &mut impl Write,
    line: &mut Vec<u8>,
    fields: impl IntoIterator<Item = &'a [u8]>,
) -> io::Result<()> {
    line.clear();
    record(fields, line);
    if line.is_empty() {
        line.extend_from_slice(b"\"\"");
    }
    line.push(b'\n');
    out.write_all(line)
}

/// Writes `schema`'s header and `rows`; returns the number of rows written.
pub fn write_csv<W: Write>(
    out: W,
    schema: &SchemaPlan,
    rows: impl IntoIterator<Item = Vec<Cell>>,
    style: TimestampStyle,
) -> io::Result<u64> {
    let mut enc = CsvEncoder::new(out, &schema.columns, style)?;
    let mut n = 0;
    for row in rows {
        enc.write_row(&row)?;
        n += 1;
    }
    enc.finish()?;
    Ok(n)
}

fn render(cell: &Cell, unit_ns: i64, style: TimestampStyle, out: &mut String) {
    match cell {
        Cell::Null => {}
        Cell::Long(v) | Cell::Duration(v) => {
            let _ = write!(out, "{v}");
        }
        Cell::Double(v) if v.is_nan() => out.push_str("NaN"),
        Cell::Double(v) if v.is_infinite() => {
            out.push_str(if *v > 0.0 { "Infinity" } else { "-Infinity" });
        }
        Cell::Double(v) => {
            let _ = write!(out, "{v}");
        }
        Cell::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Cell::Str(s) => out.push_str(s),
        Cell::Timestamp(ns) => timestamp(*ns, unit_ns, style, out),
    }
}

/// Column batches as CSV, the same text `CsvEncoder` writes for the same rows: the header with
/// `header`, then every row of `batch` appended to `out`. Quoting follows RFC 4180 (a field
/// with a comma, a quote or a line break is quoted, quotes doubled). No allocation per row.
pub struct CsvBatchEncoder {
    style: TimestampStyle,
    scratch: String,
    /// The last timestamp written, per column, and its text: rows of one epoch share it.
    last_ts: Vec<(i64, String)>,
}

impl CsvBatchEncoder {
    pub fn new(style: TimestampStyle) -> CsvBatchEncoder {
        CsvBatchEncoder {
            style,
            scratch: String::new(),
            last_ts: Vec::new(),
        }
    }

    pub fn header(&self, schema: &crate::gen::batch::BatchSchema, out: &mut Vec<u8>) {
        record(schema.columns.iter().map(|c| c.name.as_bytes()), out);
        out.push(b'\n');
    }

    pub fn encode(&mut self, batch: &crate::gen::batch::Batch, out: &mut Vec<u8>) {
        use crate::gen::batch::Values;
        let metas = &batch.schema.columns;
        if self.last_ts.len() != metas.len() {
            self.last_ts = vec![(i64::MIN, String::new()); metas.len()];
        }
        for r in 0..batch.rows {
            for (c, col) in batch.columns.iter().enumerate() {
                if c > 0 {
                    out.push(b',');
                }
                if col.nulls.is_null(r) {
                    continue;
                }
                match &col.values {
                    Values::Long(v) => {
                        out.extend_from_slice(itoa::Buffer::new().format(v[r]).as_bytes())
                    }
                    Values::Double(v) => {
                        self.scratch.clear();
                        render(&Cell::Double(v[r]), 0, self.style, &mut self.scratch);
                        out.extend_from_slice(self.scratch.as_bytes());
                    }
                    Values::Bool(v) => out.extend_from_slice(if v[r] { b"true" } else { b"false" }),
                    Values::Timestamp(v) => {
                        let last = &mut self.last_ts[c];
                        if last.0 != v[r] || last.1.is_empty() {
                            last.1.clear();
                            timestamp(v[r], metas[c].unit_ns, self.style, &mut last.1);
                            last.0 = v[r];
                        }
                        out.extend_from_slice(last.1.as_bytes());
                    }
                    Values::Symbol(_) | Values::Varchar { .. } => {
                        field(batch.text(c, r).as_bytes(), out)
                    }
                }
            }
            out.push(b'\n');
        }
    }
}

/// `fields` as one CSV line without its line end: comma-separated, each through `field`.
fn record<'a>(fields: impl IntoIterator<Item = &'a [u8]>, out: &mut Vec<u8>) {
    for (i, text) in fields.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        field(text, out);
    }
}

/// One field, quoted (RFC 4180, quotes doubled) when it holds a comma, a quote or a line
/// break: the same bytes the `csv` crate's default writer quotes.
fn field(text: &[u8], out: &mut Vec<u8>) {
    if text
        .iter()
        .any(|&b| matches!(b, b',' | b'"' | b'\n' | b'\r'))
    {
        out.push(b'"');
        for &b in text {
            if b == b'"' {
                out.push(b'"');
            }
            out.push(b);
        }
        out.push(b'"');
    } else {
        out.extend_from_slice(text);
    }
}

/// UTC calendar time of `ns` since the epoch (Hinnant's days-to-civil), with the fraction rule
/// of the module doc.
pub fn timestamp(ns: i64, unit_ns: i64, style: TimestampStyle, out: &mut String) {
    let secs = ns.div_euclid(1_000_000_000);
    let frac = ns.rem_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let sep = match style {
        TimestampStyle::Rfc3339 => 'T',
        TimestampStyle::Sql => ' ',
    };
    let _ = write!(
        out,
        "{y:04}-{m:02}-{d:02}{sep}{:02}:{:02}:{:02}",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    );
    if frac != 0 {
        let _ = match unit_ns {
            1_000_000 => write!(out, ".{:03}", frac / 1_000_000),
            1_000 => write!(out, ".{:06}", frac / 1_000),
            _ => write!(out, ".{frac:09}"),
        };
    }
    if style == TimestampStyle::Rfc3339 {
        out.push('Z');
    }
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (Howard Hinnant's
/// `civil_from_days`, http://howardhinnant.github.io/date_algorithms.html).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::rows;
    use crate::plan::{Gen, SchemaPlan, TimeAxis};
    use crate::value::Value;

    const T2017: i64 = 1_483_228_800_000_000_000; // 2017-01-01T00:00:00Z

    fn ts(ns: i64, unit: i64, style: TimestampStyle) -> String {
        let mut s = String::new();
        timestamp(ns, unit, style, &mut s);
        s
    }

    #[test]
    fn timestamps() {
        use TimestampStyle::{Rfc3339, Sql};
        assert_eq!(ts(T2017, 1, Rfc3339), "2017-01-01T00:00:00Z");
        assert_eq!(ts(T2017, 1, Sql), "2017-01-01 00:00:00");
        assert_eq!(
            ts(T2017 + 3_723_250_000_000, 1_000_000, Rfc3339),
            "2017-01-01T01:02:03.250Z"
        );
        assert_eq!(ts(T2017 + 1_500, 1_000, Sql), "2017-01-01 00:00:00.000001");
        assert_eq!(ts(T2017 + 7, 1, Rfc3339), "2017-01-01T00:00:00.000000007Z");
        assert_eq!(ts(0, 1, Rfc3339), "1970-01-01T00:00:00Z");
        assert_eq!(ts(-1_000_000_000, 1, Rfc3339), "1969-12-31T23:59:59Z");
        // 2016 is a leap year; 2100 is not.
        assert_eq!(ts(1_456_704_000_000_000_000, 1, Sql), "2016-02-29 00:00:00");
        assert_eq!(ts(4_107_542_400_000_000_000, 1, Sql), "2100-03-01 00:00:00");
        // Agrees with the `time` crate across the whole range, in steps of ~13 days.
        let mut ns = i64::MIN / 2;
        while ns < i64::MAX / 2 {
            let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ns)).unwrap();
            let want = format!(
                "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:09}",
                t.year(),
                u8::from(t.month()),
                t.day(),
                t.hour(),
                t.minute(),
                t.second(),
                t.nanosecond()
            );
            let have = ts(ns, 1, Sql);
            assert_eq!(have, want.trim_end_matches(".000000000"));
            ns += 1_123_456_789_012_345;
        }
    }

    fn schema() -> SchemaPlan {
        let c = |name: &str, ty: &str, unit: Option<&str>, per: &str, gen: Gen| ColumnPlan {
            name: name.into(),
            role: if name == "host" { "series" } else { "field" }.into(),
            ty: ty.into(),
            unit: unit.map(str::to_string),
            gen,
            per: per.into(),
            null_probability: 0.0,
            from: None,
        };
        SchemaPlan {
            name: "cpu_usage".into(),
            table: "cpu_usage".into(),
            series: 2,
            time: Some(TimeAxis {
                column: "ts".into(),
                start: Value::Timestamp(T2017),
                step: Value::Duration(10_000_000_000),
                count: 2,
            }),
            rows: 4,
            columns: vec![
                c("ts", "timestamp", Some("us"), "row", Gen::SeriesIndex),
                c(
                    "host",
                    "symbol",
                    None,
                    "series",
                    Gen::Format {
                        format: "host_%06d".into(),
                        args: vec![Gen::SeriesIndex],
                    },
                ),
                c(
                    "usage",
                    "double",
                    None,
                    "row",
                    Gen::Arith {
                        op: "/".into(),
                        lhs: Box::new(Gen::Seq { start: 1, step: 1 }),
                        rhs: Box::new(Gen::Const {
                            value: Value::Float(4.0),
                        }),
                    },
                ),
                c(
                    "note",
                    "varchar",
                    None,
                    "row",
                    Gen::Const { value: Value::None },
                ),
            ],
            disorder: None,
        }
    }

    #[test]
    fn a_schema_as_csv() {
        let s = schema();
        let mut out = Vec::new();
        let n = write_csv(
            &mut out,
            &s,
            rows(&s, 1, None).unwrap(),
            TimestampStyle::Sql,
        )
        .unwrap();
        assert_eq!(n, 4);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "ts,host,usage,note\n\
             2017-01-01 00:00:00,host_000000,0.25,\n\
             2017-01-01 00:00:00,host_000001,0.25,\n\
             2017-01-01 00:00:10,host_000000,0.5,\n\
             2017-01-01 00:00:10,host_000001,0.5,\n"
        );
    }

    #[test]
    fn cells_and_quoting() {
        let cols: Vec<ColumnPlan> = schema().columns;
        let mut enc = CsvEncoder::new(Vec::new(), &cols, TimestampStyle::Rfc3339).unwrap();
        enc.write_row(&[
            Cell::Timestamp(T2017 + 5_000),
            Cell::Str("a,\"b\"".into()),
            Cell::Double(f64::INFINITY),
            Cell::Bool(true),
        ])
        .unwrap();
        enc.write_row(&[
            Cell::Null,
            Cell::Long(-3),
            Cell::Double(f64::NAN),
            Cell::Duration(9),
        ])
        .unwrap();
        assert!(enc.write_row(&[Cell::Null]).is_err());
        let out = String::from_utf8(enc.finish().unwrap()).unwrap();
        assert_eq!(
            out,
            "ts,host,usage,note\n\
             2017-01-01T00:00:00.000005Z,\"a,\"\"b\"\"\",Infinity,true\n\
             ,-3,NaN,9\n"
        );
    }

    /// The row encoder writes what the `csv` crate's default writer (which it was first built
    /// on) writes, for fields that need quoting and for lines of no bytes.
    #[test]
    fn lines_as_the_csv_crate_writes_them() {
        let texts = [
            "",
            "a",
            "a,b",
            "q\"q",
            "\"",
            "l\nf",
            "c\rr",
            " sp ",
            "é",
            "\"\"",
            ",",
            "12345678,",
        ];
        let column = |name: &str| ColumnPlan {
            name: name.into(),
            role: "field".into(),
            ty: "varchar".into(),
            unit: None,
            gen: Gen::SeriesIndex,
            per: "row".into(),
            null_probability: 0.0,
            from: None,
        };
        for width in 0..3 {
            let names: Vec<&str> = texts
                .iter()
                .copied()
                .cycle()
                .skip(width)
                .take(width)
                .collect();
            let cols: Vec<ColumnPlan> = names.iter().map(|n| column(n)).collect();
            let mut want = ::csv::Writer::from_writer(Vec::new());
            want.write_record(&names).unwrap();
            let mut have = CsvEncoder::new(Vec::new(), &cols, TimestampStyle::Rfc3339).unwrap();
            for i in 0..texts.len() {
                let row: Vec<&str> = (0..width).map(|k| texts[(i + k) % texts.len()]).collect();
                want.write_record(&row).unwrap();
                let cells: Vec<Cell> = row.iter().map(|t| Cell::Str(t.to_string())).collect();
                have.write_row(&cells).unwrap();
            }
            let have = String::from_utf8(have.finish().unwrap()).unwrap();
            let want = String::from_utf8(want.into_inner().unwrap()).unwrap();
            assert_eq!(have, want, "{width} columns");
        }
    }
}
