use super::checksums::{col_kind, numeric_binary, push_binary, push_text_value, ColKind};
use super::params::{convert, convert_params, Param};
use super::*;
use crate::query::checksum::{canonical_f64, Number, ResultHasher};
use crate::value::BindValue;

#[test]
fn ints_fit_integer_float_and_numeric_parameters() {
    let v = BindValue::Int(300);
    assert_eq!(convert(&v, &Type::INT8), Ok(Param::Int8(300)));
    assert_eq!(convert(&v, &Type::INT4), Ok(Param::Int4(300)));
    assert_eq!(convert(&v, &Type::INT2), Ok(Param::Int2(300)));
    assert_eq!(convert(&v, &Type::FLOAT8), Ok(Param::Float8(300.0)));
    assert_eq!(convert(&v, &Type::NUMERIC), Ok(Param::Text("300".into())));
    assert!(convert(&BindValue::Int(1 << 40), &Type::INT4)
        .unwrap_err()
        .contains("out of range"));
    assert!(convert(&BindValue::Int((1 << 53) + 1), &Type::FLOAT8).is_err());
    assert!(convert(&v, &Type::TEXT).is_err());
    assert!(convert(&v, &Type::BOOL).is_err());
}

#[test]
fn floats_bools_timestamps_and_nulls() {
    assert_eq!(
        convert(&BindValue::Float(1.5), &Type::FLOAT4),
        Ok(Param::Float4(1.5))
    );
    assert!(convert(&BindValue::Float(1.5), &Type::INT4).is_err());
    assert_eq!(
        convert(&BindValue::Float(f64::NAN), &Type::NUMERIC),
        Ok(Param::Text("NaN".into()))
    );
    assert_eq!(
        convert(&BindValue::Bool(true), &Type::BOOL),
        Ok(Param::Bool(true))
    );
    assert!(convert(&BindValue::Bool(true), &Type::INT4).is_err());
    // 2000-01-01T00:00:01Z is one second after PostgreSQL's epoch.
    let ns = 946_684_801_000_000_000;
    assert_eq!(
        convert(&BindValue::Timestamp(ns), &Type::TIMESTAMPTZ),
        Ok(Param::Micros(1_000_000))
    );
    assert!(convert(&BindValue::Timestamp(ns), &Type::DATE).is_err());
    assert_eq!(
        convert(&BindValue::Timestamp(946_771_200_000_000_000), &Type::DATE),
        Ok(Param::Days(1))
    );
    assert!(convert(&BindValue::Timestamp(ns), &Type::TEXT).is_err());
    assert_eq!(convert(&BindValue::Null, &Type::INT4), Ok(Param::Null));
    assert_eq!(
        convert(&BindValue::Text("x".into()), &Type::TIMESTAMPTZ),
        Ok(Param::Text("x".into()))
    );
}

#[test]
fn mismatches_name_the_parameter_and_both_types() {
    let e = convert_params(
        &[BindValue::Int(1), BindValue::Bool(true)],
        &[Type::INT4, Type::INT4],
    )
    .unwrap_err();
    assert_eq!(e.class, QueryErrorClass::Client);
    assert!(!e.broken);
    assert!(e.message.contains("$2"), "{}", e.message);
    assert!(e.message.contains("bool"), "{}", e.message);
    assert!(e.message.contains("int4"), "{}", e.message);
    let e = convert_params(&[BindValue::Int(1)], &[]).unwrap_err();
    assert_eq!(e.class, QueryErrorClass::Client);
}

/// A numeric in the binary format.
fn numeric(weight: i16, sign: u16, dscale: u16, digits: &[u16]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(digits.len() as u16).to_be_bytes());
    out.extend_from_slice(&weight.to_be_bytes());
    out.extend_from_slice(&sign.to_be_bytes());
    out.extend_from_slice(&dscale.to_be_bytes());
    for d in digits {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out
}

#[test]
fn binary_numerics_are_exact_integers_or_their_printed_double() {
    let mut scratch = String::new();
    let mut read = |raw: Vec<u8>| numeric_binary(&raw, &mut scratch);
    assert_eq!(read(numeric(0, 0, 0, &[])), Ok(Number::Int(0)));
    assert_eq!(read(numeric(0, 0x4000, 0, &[5])), Ok(Number::Int(-5)));
    // 5.000: whole.
    assert_eq!(read(numeric(0, 0, 3, &[5])), Ok(Number::Int(5)));
    // 45000000000000 = 45 0000 0000 0000.
    assert_eq!(
        read(numeric(3, 0, 0, &[45])),
        Ok(Number::Int(45_000_000_000_000))
    );
    // i64::MAX and MIN exactly: 922 3372 0368 5477 5807.
    assert_eq!(
        read(numeric(4, 0, 0, &[922, 3372, 368, 5477, 5807])),
        Ok(Number::Int(i64::MAX))
    );
    assert_eq!(
        read(numeric(4, 0x4000, 0, &[922, 3372, 368, 5477, 5808])),
        Ok(Number::Int(i64::MIN))
    );
    // One past i64::MAX, and 10^20: floats.
    assert_eq!(
        read(numeric(4, 0, 0, &[922, 3372, 368, 5477, 5808])),
        Ok(canonical_f64(9_223_372_036_854_775_808.0))
    );
    assert_eq!(read(numeric(5, 0, 0, &[1])), Ok(canonical_f64(1e20)));
    // 12345.678 = 1 2345 . 6780
    assert_eq!(
        read(numeric(1, 0, 3, &[1, 2345, 6780])),
        Ok(canonical_f64(12345.678))
    );
    // 0.00012340 = 0 . 0001 2340
    assert_eq!(
        read(numeric(-1, 0, 8, &[1, 2340])),
        Ok(canonical_f64(0.0001234))
    );
    // 0.00000005 = 0 . 0000 0005
    assert_eq!(read(numeric(-2, 0x4000, 8, &[5])), Ok(canonical_f64(-5e-8)));
    assert_eq!(read(numeric(0, 0xC000, 0, &[])), Ok(Number::NaN));
    assert_eq!(read(numeric(0, 0xD000, 0, &[])), Ok(Number::PosInf));
    assert_eq!(read(numeric(0, 0xF000, 0, &[])), Ok(Number::NegInf));
    assert!(read(vec![0, 1, 0, 0]).is_err());
    assert!(read(numeric(0, 0, 0, &[10_000])).is_err());
    assert!(read(numeric(0, 0x1234, 0, &[1])).is_err());
    let mut short = numeric(0, 0, 0, &[1, 2]);
    short.pop();
    assert!(read(short).is_err());
}

/// The hash of one row of one value.
fn one(push: impl FnOnce(&mut ResultHasher) -> Result<(), String>) -> Result<u64, String> {
    let mut h = ResultHasher::new();
    h.begin_row();
    push(&mut h)?;
    h.end_row();
    Ok(h.finish())
}

#[test]
fn binary_and_text_values_hash_alike() {
    let mut scratch = String::new();
    let uuid = [
        0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a,
        0x11,
    ];
    let ts = (1_451_606_400_000_000i64 - PG_EPOCH_US + 500_000).to_be_bytes();
    let cases: Vec<(ColKind, Vec<u8>, &str)> = vec![
        (ColKind::Bool, vec![1], "t"),
        (ColKind::Bool, vec![0], "f"),
        (ColKind::Int2, (-7i16).to_be_bytes().to_vec(), "-7"),
        (ColKind::Int4, 123_456i32.to_be_bytes().to_vec(), "123456"),
        (
            ColKind::Int8,
            i64::MIN.to_be_bytes().to_vec(),
            "-9223372036854775808",
        ),
        (ColKind::Oid, u32::MAX.to_be_bytes().to_vec(), "4294967295"),
        (ColKind::Float4, 1.1f32.to_be_bytes().to_vec(), "1.1"),
        // float4 printed with 6 digits (extra_float_digits = 0) is still the same value.
        (
            ColKind::Float4,
            3.300_000_2f32.to_be_bytes().to_vec(),
            "3.3",
        ),
        (
            ColKind::Float4,
            3.300_000_2f32.to_be_bytes().to_vec(),
            "3.3000002",
        ),
        (ColKind::Float8, 0.1f64.to_be_bytes().to_vec(), "0.1"),
        (
            ColKind::Float8,
            (1.0f64 / 3.0).to_be_bytes().to_vec(),
            "0.333333333333333",
        ),
        (ColKind::Float8, f64::NAN.to_be_bytes().to_vec(), "NaN"),
        (
            ColKind::Float8,
            f64::NEG_INFINITY.to_be_bytes().to_vec(),
            "-Infinity",
        ),
        (
            ColKind::Numeric,
            numeric(1, 0, 3, &[1, 2345, 6780]),
            "12345.678",
        ),
        (
            ColKind::Numeric,
            numeric(3, 0, 4, &[45]),
            "45000000000000.0000",
        ),
        (ColKind::Text, b"it's".to_vec(), "it's"),
        (ColKind::Bpchar, b"ab   ".to_vec(), "ab   "),
        (ColKind::Jsonb, b"\x01{\"a\": 1}".to_vec(), "{\"a\": 1}"),
        (ColKind::Timestamp, ts.to_vec(), "2016-01-01 01:00:00.5+01"),
        (ColKind::Date, 5_844i32.to_be_bytes().to_vec(), "2016-01-01"),
        (ColKind::Date, i32::MAX.to_be_bytes().to_vec(), "infinity"),
        (
            ColKind::Uuid,
            uuid.to_vec(),
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        ),
    ];
    for (kind, raw, text) in cases {
        let b = one(|h| push_binary(h, kind, Some(&raw), &mut scratch));
        let t = one(|h| push_text_value(h, kind, Some(text)));
        assert!(b.is_ok(), "{kind:?} {text}: {b:?}");
        assert_eq!(b, t, "{kind:?} {text}");
    }
    // The same instant, with and without zone, and a date at midnight.
    let midnight = one(|h| push_text_value(h, ColKind::Date, Some("2016-01-01")));
    let ts0 = (1_451_606_400_000_000i64 - PG_EPOCH_US).to_be_bytes();
    assert_eq!(
        one(|h| push_binary(h, ColKind::Timestamp, Some(&ts0), &mut scratch)),
        midnight
    );
    // char(n) without its blanks equals the text.
    assert_eq!(
        one(|h| push_binary(h, ColKind::Bpchar, Some(b"ab  "), &mut scratch)),
        one(|h| push_binary(h, ColKind::Text, Some(b"ab"), &mut scratch))
    );
    // NULL is NULL whatever the type.
    assert_eq!(
        one(|h| push_binary(h, ColKind::Int4, None, &mut scratch)),
        one(|h| push_text_value(h, ColKind::Other, None))
    );
    // Wrong widths and unreadable texts say so.
    assert!(
        one(|h| push_binary(h, ColKind::Int4, Some(&[0, 1]), &mut scratch))
            .unwrap_err()
            .contains("2 byte(s)")
    );
    assert!(
        one(|h| push_binary(h, ColKind::Other, Some(b"x"), &mut scratch))
            .unwrap_err()
            .contains("cast it to text")
    );
    assert!(one(|h| push_text_value(h, ColKind::Int4, Some("1.5"))).is_err());
    assert!(one(|h| push_text_value(h, ColKind::Bool, Some("yes"))).is_err());
    assert!(one(|h| push_text_value(h, ColKind::Timestamp, Some("soon"))).is_err());
    // In text, other types are their text.
    assert_eq!(
        one(|h| push_text_value(h, ColKind::Other, Some("1 day"))),
        one(|h| push_text_value(h, ColKind::Text, Some("1 day")))
    );
}

#[test]
fn column_kinds_by_type() {
    assert_eq!(col_kind(&Type::INT8), ColKind::Int8);
    assert_eq!(col_kind(&Type::TIMESTAMPTZ), ColKind::Timestamp);
    assert_eq!(col_kind(&Type::TIMESTAMP), ColKind::Timestamp);
    assert_eq!(col_kind(&Type::VARCHAR), ColKind::Text);
    assert_eq!(col_kind(&Type::BPCHAR), ColKind::Bpchar);
    assert_eq!(col_kind(&Type::INTERVAL), ColKind::Other);
    assert_eq!(col_kind(&Type::BYTEA), ColKind::Other);
    assert_eq!(col_kind(&Type::INT4_ARRAY), ColKind::Other);
}
