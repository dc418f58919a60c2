#[path = "../../../tests/common/pg_columns.rs"]
mod pg_columns;

use super::binary::{fields, parse_uuid};
use super::copy::COPY_HEADER;
use super::*;
use crate::gen::batch::{push_str, Batch, BatchSchema, ColumnMeta, Dictionary, Physical, Values};
use crate::net::pg::test_endpoint;
use crate::value::Text;
use pg_columns::col;

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
        0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a,
        0x11,
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

/// The one naming rule of `sql_text`, as in the table's DDL: a plain lower-case name bare, any
/// other quoted.
#[test]
fn statements_write_names_as_the_table_ddl_does() {
    let f = fields(&schema(vec![
        col("ts", "timestamp", Physical::Timestamp, None),
        col("a\"b", "int", Physical::Long, None),
    ]))
    .unwrap();
    assert_eq!(
        copy_sql("My Table", &f),
        "COPY \"My Table\" (ts, \"a\"\"b\") FROM STDIN (FORMAT binary)"
    );
    assert_eq!(
        insert_sql("t", &f),
        "INSERT INTO t (ts, \"a\"\"b\") SELECT * FROM unnest($1::timestamptz[], $2::int4[])"
    );
}

#[test]
fn encoding_follows_the_insert_option() {
    let mut ep = test_endpoint(&[]);
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
