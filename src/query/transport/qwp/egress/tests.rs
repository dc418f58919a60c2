use proptest::prelude::*;

use super::*;
use crate::query::checksum::{canonical_decimal, ResultHasher};
use crate::query::transport::expected_checksum as expected;
use crate::qwp::testing::hex;
use crate::qwp::{
    patch_header, put_str, put_varint, types, FLAG_DELTA_SYMBOL_DICT, FLAG_GORILLA, FLAG_ZSTD,
    HEADER_LEN,
};
use crate::value::BindValue;

macro_rules! fixture {
    ($name:literal) => {
        hex(include_str!(concat!(
            "../../../../../tests/fixtures/qwp/",
            $name,
            ".hex"
        )))
    };
}

fn request(id: i64, sql: &str, binds: &[BindValue], flags: Option<u64>) -> Vec<u8> {
    let mut out = Vec::new();
    encode_query_request(&mut out, id, sql, binds, 0, flags);
    out
}

/// A decoder running request 1.
fn running() -> Decoder {
    let mut d = Decoder::new();
    d.begin_query(1, false);
    d
}

/// Rows and checksum of one frame on a decoder running request 1.
fn summed(frame: &[u8]) -> Result<(u64, u64), DecodeError> {
    let mut h = ResultHasher::new();
    match running().decode(frame, Some(&mut h))? {
        Frame::ResultBatch { rows, .. } => Ok((rows, h.finish())),
        other => panic!("not a batch: {other:?}"),
    }
}

fn malformed(r: Result<Frame<'_>, DecodeError>) -> String {
    match r {
        Err(DecodeError::Malformed(m)) => m.what,
        other => panic!("not malformed: {other:?}"),
    }
}

// ------------------------------------------------------------------------------------------------
// QUERY_REQUEST against the official client's bytes

#[test]
fn query_requests_match_the_official_clients_bytes() {
    use BindValue::*;
    assert_eq!(
        request(
            1,
            "select host, sum(u) s, count() c from qwp_probe where u > $1 order by host",
            &[Int(0)],
            Some(QUERY_FLAG_RESET_DICT),
        ),
        fixture!("real_client_query_request")
    );
    assert_eq!(
        request(
            1,
            "select x from t where a = $1 and b = $2 and c = $3 and d = $4",
            &[Int(42), Text("abc".into()), Null, Float(2.5)],
            Some(QUERY_FLAG_RESET_DICT),
        ),
        fixture!("python6_egress_client_msg0")
    );
    // `execute()`: no trailer.
    assert_eq!(
        request(1, "create table foo (x long)", &[], None),
        fixture!("python6_egress_client_msg1")
    );
    assert_eq!(
        request(1, "select x from t where a = $1", &[Int(7)], Some(1)),
        fixture!("python6_egress_client_msg3")
    );
    assert_eq!(
        request(1, "select rich", &[], Some(1)),
        fixture!("python6_egress_client_msg4")
    );
    // Flags of 0 are no flags.
    assert_eq!(
        request(1, "create table foo (x long)", &[], Some(0)),
        fixture!("python6_egress_client_msg1")
    );
}

#[test]
fn credit_and_initial_credit_follow_the_spec() {
    // §5.6: `15 | request_id i64 LE | additional_bytes varint`, no header.
    let mut out = Vec::new();
    encode_credit(&mut out, 1, 16_384);
    assert_eq!(out, hex(concat!("15", "0100000000000000", "808001")));
    out.clear();
    encode_credit(&mut out, -2, 0);
    assert_eq!(out, hex("15feffffffffffffff00"));
    out.clear();
    encode_credit(&mut out, 0x0102_0304_0506_0708, 300);
    assert_eq!(out, hex("150807060504030201ac02"));
    // §5.3: the budget is the varint after the SQL; the rest is as with 0.
    let mut with = Vec::new();
    encode_query_request(
        &mut with,
        7,
        "select 1",
        &[BindValue::Int(5)],
        65_536,
        Some(1),
    );
    let without = request(7, "select 1", &[BindValue::Int(5)], Some(1));
    let at = 1 + 8 + 1 + "select 1".len();
    assert_eq!(without[at], 0);
    assert_eq!(with[at..at + 3], [0x80, 0x80, 0x04]);
    assert_eq!(with[..at], without[..at]);
    assert_eq!(with[at + 3..], without[at + 1..]);
    // As tests/fixtures/qwp/qwp_decode.py reads it: initial_credit=65536, binds [LONG 5],
    // query_flags 1.
    assert_eq!(
        with,
        hex("1007000000000000000873656c6563742031808004010500050000000000000001")
    );
}

#[test]
fn bool_and_timestamp_binds_follow_the_spec() {
    use BindValue::*;
    let head = request(9, "q", &[], None).len() - 1; // less the bind count
    let out = request(
        9,
        "q",
        &[Bool(true), Bool(false), Timestamp(1_500), Timestamp(-1)],
        None,
    );
    let mut want = vec![4u8, 0x01, 0, 1, 0x01, 0, 0, 0x0A, 0];
    want.extend_from_slice(&1i64.to_le_bytes());
    want.extend_from_slice(&[0x0A, 0]);
    // Floored: -1 ns is in the microsecond before the epoch.
    want.extend_from_slice(&(-1i64).to_le_bytes());
    assert_eq!(&out[head..], &want[..]);
    assert_eq!(&out[..9], &[0x10, 9, 0, 0, 0, 0, 0, 0, 0]);
}

// ------------------------------------------------------------------------------------------------
// The golden server frames (expected values: what tests/fixtures/qwp/qwp_decode.py prints)

#[test]
fn server_info_frames_decode() {
    let mut d = Decoder::new();
    let f = fixture!("server_server_info");
    match d.decode(&f, None).unwrap() {
        Frame::ServerInfo(info) => {
            assert_eq!(
                (info.role, info.epoch, info.capabilities),
                (0, 1, CAP_ZONE | CAP_QUERY_FLAGS)
            );
            assert_eq!(info.cluster_id, "capture-cluster");
            assert_eq!(info.node_id, "capture-node");
            assert_eq!(info.zone_id.as_deref(), Some("zone-a"));
            assert!(info.query_flags());
            assert_eq!(info.role_name(), "STANDALONE");
        }
        other => panic!("{other:?}"),
    }
    let f = fixture!("real_server_server_info");
    match d.decode(&f, None).unwrap() {
        Frame::ServerInfo(info) => {
            assert_eq!((info.role, info.epoch, info.capabilities), (0, 0, 2));
            assert_eq!(info.cluster_id, "questdb");
            assert_eq!(info.node_id, "");
            assert_eq!(info.zone_id, None);
            assert!(info.server_wall_ns > 0);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_real_servers_result_decodes_and_hashes_as_by_hand() {
    let mut d = running();
    let mut h = ResultHasher::new();
    let f = fixture!("real_server_result_batch");
    assert_eq!(
        d.decode(&f, Some(&mut h)).unwrap(),
        Frame::ResultBatch {
            request_id: 1,
            batch_seq: 0,
            rows: 3
        }
    );
    let names: Vec<(&str, u8)> = d
        .schema()
        .iter()
        .map(|c| (c.name.as_str(), c.code))
        .collect();
    assert_eq!(
        names,
        [
            ("host", types::SYMBOL),
            ("s", types::LONG),
            ("c", types::LONG)
        ]
    );
    assert_eq!(d.dict_len(), 3);
    let want = expected(&[
        &|h| {
            h.push_text("a");
            h.push_i64(1);
            h.push_i64(1);
        },
        &|h| {
            h.push_text("b");
            h.push_i64(2);
            h.push_i64(1);
        },
        &|h| {
            h.push_text("c");
            h.push_i64(3);
            h.push_i64(1);
        },
    ]);
    assert_eq!(h.finish(), want);
    assert_eq!(
        d.decode(&fixture!("real_server_result_end"), None).unwrap(),
        Frame::ResultEnd {
            request_id: 1,
            final_seq: 0,
            total_rows: 3
        }
    );
    // The dictionary outlives the query.
    assert_eq!(d.dict_len(), 3);
}

#[test]
fn simple_frames_decode() {
    let mut d = running();
    let mut h = ResultHasher::new();
    let f = fixture!("server_result_batch_simple");
    assert_eq!(
        d.decode(&f, Some(&mut h)).unwrap(),
        Frame::ResultBatch {
            request_id: 1,
            batch_seq: 0,
            rows: 2
        }
    );
    assert_eq!(
        h.finish(),
        expected(&[&|h| h.push_i64(1), &|h| h.push_i64(2)])
    );
    assert_eq!(
        d.decode(&fixture!("server_result_end_simple"), None)
            .unwrap(),
        Frame::ResultEnd {
            request_id: 1,
            final_seq: 0,
            total_rows: 2
        }
    );
    let mut d = running();
    assert_eq!(
        d.decode(&fixture!("server_exec_done"), None).unwrap(),
        Frame::ExecDone {
            request_id: 1,
            op_type: 9,
            rows_affected: 0
        }
    );
    // Ingest replies have no header: not query frames.
    for f in [
        fixture!("server_ingress_ok_seq0"),
        fixture!("real_server_ack_seq0"),
        fixture!("real_server_ack_seq1"),
        fixture!("real_server_error_schema_mismatch"),
    ] {
        let e = malformed(Decoder::new().decode(&f, None));
        assert!(e.contains("wanted") || e.contains("magic"), "{e}");
    }
}

/// Two batches sharing a delta dictionary, nulls by bitmap, a Gorilla timestamp column.
#[test]
fn rich_batches_decode_across_the_dictionary() {
    let mut d = running();
    let mut h = ResultHasher::new();
    let b0 = fixture!("server_rich_batch0");
    let b1 = fixture!("server_rich_batch1");
    assert!(matches!(
        d.decode(&b0, Some(&mut h)),
        Ok(Frame::ResultBatch { rows: 3, .. })
    ));
    assert_eq!(d.dict_len(), 2);
    assert!(matches!(
        d.decode(&b1, Some(&mut h)),
        Ok(Frame::ResultBatch {
            batch_seq: 1,
            rows: 1,
            ..
        })
    ));
    assert_eq!(d.dict_len(), 3);
    let want = expected(&[
        &|h| {
            h.push_text("AAA");
            h.push_text("hi");
            h.push_timestamp_us(1000);
            h.push_null();
        },
        &|h| {
            h.push_null();
            h.push_text("there");
            h.push_timestamp_us(2000);
            h.push_f64(2.5);
        },
        &|h| {
            h.push_text("BBB");
            h.push_null();
            h.push_timestamp_us(3000);
            h.push_f64(3.5);
        },
        &|h| {
            h.push_text("CCC");
            h.push_text("z");
            h.push_timestamp_us(4000);
            h.push_f64(4.5);
        },
    ]);
    assert_eq!(h.finish(), want);
    assert_eq!(
        d.decode(&fixture!("server_rich_end"), None).unwrap(),
        Frame::ResultEnd {
            request_id: 1,
            final_seq: 1,
            total_rows: 4
        }
    );

    // Without checksums, the same rows are counted.
    let mut d = running();
    assert!(matches!(
        d.decode(&b0, None),
        Ok(Frame::ResultBatch { rows: 3, .. })
    ));
    assert!(matches!(
        d.decode(&b1, None),
        Ok(Frame::ResultBatch { rows: 1, .. })
    ));
}

#[test]
fn the_dictionary_lives_until_a_reset() {
    let b0 = fixture!("server_rich_batch0");
    let b1 = fixture!("server_rich_batch1");
    // Batch 1 alone: its delta starts at id 2, past an empty dictionary.
    let mut d = running();
    let e = malformed(d.decode(&b1, None));
    assert!(e.contains("batch 1 where batch 0"), "{e}");

    // The next query keeps the dictionary: its batch 0 may continue it.
    let mut d = running();
    d.decode(&b0, None).unwrap();
    d.decode(&b1, None).unwrap();
    d.begin_query(2, false);
    assert_eq!(d.dict_len(), 3);
    // A query sent with the reset flag starts over.
    d.begin_query(3, true);
    assert_eq!(d.dict_len(), 0);

    // CACHE_RESET clears it too; other mask bits are ignored.
    let mut d = running();
    d.decode(&b0, None).unwrap();
    let mut reset = vec![0u8; HEADER_LEN];
    reset.extend_from_slice(&[kind::CACHE_RESET, 0x03]);
    patch_header(&mut reset, 0, 0, 0);
    assert_eq!(
        d.decode(&reset, None).unwrap(),
        Frame::CacheReset { mask: 3 }
    );
    assert_eq!(d.dict_len(), 0);
    // Now batch 1's delta leaves a gap.
    let mut gap = b1.clone();
    gap[21] = 0; // batch_seq 1 -> 0 (so the seq check passes); the delta starts at 2
    let mut d2 = running();
    let e = malformed(d2.decode(&gap, None));
    assert!(e.contains("starts at id 2"), "{e}");
}

// ------------------------------------------------------------------------------------------------
// Hand-built batches

/// A RESULT_BATCH of request 1: `flags`, the delta dictionary (an empty one when the flag is
/// set and `dict` is None), `rows`, the schema when given, then `columns` as they are.
fn batch(
    flags: u8,
    seq: u64,
    dict: Option<(u64, &[&str])>,
    rows: u64,
    schema: Option<&[(&str, u8)]>,
    columns: &[u8],
) -> Vec<u8> {
    let mut p = vec![0u8; HEADER_LEN];
    p.push(kind::RESULT_BATCH);
    p.extend_from_slice(&1i64.to_le_bytes());
    put_varint(&mut p, seq);
    if flags & FLAG_DELTA_SYMBOL_DICT != 0 {
        let (start, entries) = dict.unwrap_or((0, &[]));
        put_varint(&mut p, start);
        put_varint(&mut p, entries.len() as u64);
        for e in entries {
            put_str(&mut p, e);
        }
    }
    p.push(0);
    put_varint(&mut p, rows);
    if let Some(s) = schema {
        put_varint(&mut p, s.len() as u64);
        for (name, code) in s {
            put_str(&mut p, name);
            p.push(*code);
        }
    }
    p.extend_from_slice(columns);
    patch_header(&mut p, 0, flags, 1);
    p
}

/// A one-column batch 0.
fn one_column(flags: u8, code: u8, rows: u64, section: &[u8]) -> Vec<u8> {
    batch(flags, 0, None, rows, Some(&[("x", code)]), section)
}

fn le_all<const N: usize, T: Copy>(vs: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    vs.iter().flat_map(|&v| f(v)).collect()
}

/// Sums of one-column results: each value pushed as the closure says.
fn column_sum(values: &[&dyn Fn(&mut ResultHasher)]) -> u64 {
    expected(values)
}

#[test]
fn every_fixed_width_type_hashes_as_docs_checksum_6_says() {
    let cases: Vec<(u8, Vec<u8>, u64, u64)> = vec![
        (
            types::BYTE,
            [0u8]
                .into_iter()
                .chain(le_all(&[-5i8, 7], i8::to_le_bytes))
                .collect(),
            2,
            column_sum(&[&|h| h.push_i64(-5), &|h| h.push_i64(7)]),
        ),
        (
            types::SHORT,
            [0u8]
                .into_iter()
                .chain(le_all(&[300i16], i16::to_le_bytes))
                .collect(),
            1,
            column_sum(&[&|h| h.push_i64(300)]),
        ),
        (
            types::INT,
            [0u8]
                .into_iter()
                .chain(le_all(&[i32::MIN, -2], i32::to_le_bytes))
                .collect(),
            2,
            column_sum(&[&|h| h.push_null(), &|h| h.push_i64(-2)]),
        ),
        (
            types::LONG,
            [0u8]
                .into_iter()
                .chain(le_all(&[i64::MIN, i64::MAX], i64::to_le_bytes))
                .collect(),
            2,
            column_sum(&[&|h| h.push_null(), &|h| h.push_i64(i64::MAX)]),
        ),
        (
            types::FLOAT,
            [0u8]
                .into_iter()
                .chain(le_all(&[f32::NAN, 1.1], f32::to_le_bytes))
                .collect(),
            2,
            column_sum(&[&|h| h.push_null(), &|h| h.push_f32(1.1)]),
        ),
        (
            types::DOUBLE,
            [0u8]
                .into_iter()
                .chain(le_all(&[f64::NAN, 0.1, f64::INFINITY], f64::to_le_bytes))
                .collect(),
            3,
            column_sum(&[&|h| h.push_null(), &|h| h.push_f64(0.1), &|h| {
                h.push_f64(f64::INFINITY)
            }]),
        ),
        (
            types::TIMESTAMP_NANOS,
            [0u8]
                .into_iter()
                .chain(le_all(&[-1i64, 1_999, i64::MIN], i64::to_le_bytes))
                .collect(),
            3,
            column_sum(&[
                &|h| h.push_timestamp_us(-1),
                &|h| h.push_timestamp_us(1),
                &|h| h.push_null(),
            ]),
        ),
        (
            types::DATE,
            [0u8]
                .into_iter()
                .chain(le_all(&[1_451_606_400_000i64], i64::to_le_bytes))
                .collect(),
            1,
            column_sum(&[&|h| h.push_timestamp_us(1_451_606_400_000_000)]),
        ),
        (
            types::CHAR,
            [0u8]
                .into_iter()
                .chain(le_all(&[u16::from(b'A'), 0, 0xD800], u16::to_le_bytes))
                .collect(),
            3,
            column_sum(&[&|h| h.push_text("A"), &|h| h.push_text(""), &|h| {
                h.push_text("\u{FFFD}")
            }]),
        ),
        (
            types::IPV4,
            [0u8]
                .into_iter()
                .chain(le_all(&[0x0102_0304u32, 0], u32::to_le_bytes))
                .collect(),
            2,
            column_sum(&[&|h| h.push_text("1.2.3.4"), &|h| h.push_null()]),
        ),
        (
            types::BOOLEAN,
            vec![0, 0b101],
            3,
            column_sum(&[&|h| h.push_bool(true), &|h| h.push_bool(false), &|h| {
                h.push_bool(true)
            }]),
        ),
    ];
    for (code, section, rows, want) in cases {
        let f = one_column(0, code, rows, &section);
        assert_eq!(summed(&f), Ok((rows, want)), "{}", types::name(code));
    }
}

#[test]
fn uuid_long256_and_geohash_hash_as_questdb_prints_them() {
    let hi = 0x550e_8400_e29b_41d4u64;
    let lo = 0xa716_4466_5544_0000u64;
    let mut uuid = vec![0u8];
    uuid.extend_from_slice(&lo.to_le_bytes());
    uuid.extend_from_slice(&hi.to_le_bytes());
    uuid.extend_from_slice(&i64::MIN.to_le_bytes());
    uuid.extend_from_slice(&i64::MIN.to_le_bytes());
    assert_eq!(
        summed(&one_column(0, types::UUID, 2, &uuid)),
        Ok((
            2,
            column_sum(&[
                &|h| h.push_text("550e8400-e29b-41d4-a716-446655440000"),
                &|h| h.push_null(),
            ])
        ))
    );

    let words = |w: [u64; 4]| le_all(&w, u64::to_le_bytes);
    let mut l256 = vec![0u8];
    l256.extend(words([1, 0, 0, 0]));
    l256.extend(words([0xabc, 1, 0, 0]));
    l256.extend(words([0, 0, 0, 0x1_0000]));
    l256.extend(words([i64::MIN as u64; 4]));
    assert_eq!(
        summed(&one_column(0, types::LONG256, 4, &l256)),
        Ok((
            4,
            column_sum(&[
                &|h| h.push_text("0x01"),
                &|h| h.push_text("0x010000000000000abc"),
                &|h| h.push_text(&format!("0x010000{}", "0".repeat(48))),
                &|h| h.push_null(),
            ])
        ))
    );

    // 10 bits: two base-32 characters; 7 bits: the bits.
    let u3: u16 = (26 << 5) | 3;
    let mut g10 = vec![0u8, 10];
    g10.extend_from_slice(&u3.to_le_bytes());
    g10.extend_from_slice(&[0xFF, 0xFF]);
    assert_eq!(
        summed(&one_column(0, types::GEOHASH, 2, &g10)),
        Ok((2, column_sum(&[&|h| h.push_text("u3"), &|h| h.push_null()])))
    );
    let g7 = vec![0u8, 7, 0b101_0011];
    assert_eq!(
        summed(&one_column(0, types::GEOHASH, 1, &g7)),
        Ok((1, column_sum(&[&|h| h.push_text("1010011")])))
    );
}

#[test]
fn decimals_hash_through_their_text() {
    let number = |t: &str| canonical_decimal(t).unwrap();
    // DECIMAL64, scale 2, with a bitmap: rows 0 and 3 NULL, the values dense.
    let mut d64 = vec![1u8, 0b1001, 2];
    d64.extend(le_all(&[1250i64, -5], i64::to_le_bytes));
    assert_eq!(
        summed(&one_column(0, types::DECIMAL64, 4, &d64)),
        Ok((
            4,
            column_sum(&[
                &|h| h.push_null(),
                &|h| h.push_number(number("12.50")),
                &|h| h.push_number(number("-0.05")),
                &|h| h.push_null(),
            ])
        ))
    );
    let mut d128 = vec![0u8, 0];
    d128.extend(le_all(
        &[123_456_789_012_345_678_901_234_567i128, -1, i128::MAX],
        i128::to_le_bytes,
    ));
    let null128: Vec<u8> = le_all(&[i64::MIN, i64::MIN], i64::to_le_bytes);
    d128.extend(&null128);
    assert_eq!(
        summed(&one_column(0, types::DECIMAL128, 4, &d128)),
        Ok((
            4,
            column_sum(&[
                &|h| h.push_number(number("123456789012345678901234567")),
                &|h| h.push_i64(-1),
                &|h| h.push_number(number(&i128::MAX.to_string())),
                &|h| h.push_null(),
            ])
        ))
    );
    // DECIMAL256, scale 3: -1 (all ones) and 10^40, and i64::MAX exactly.
    let ten40: Vec<u8> = {
        // 10^40 = 0x1d6329f1c35ca4bfabb9f5610000000000 (fits in 3 words)
        let mut v = [0u64; 4];
        let mut n = [1u64, 0, 0, 0];
        for _ in 0..40 {
            let mut carry = 0u128;
            for w in n.iter_mut() {
                let x = u128::from(*w) * 10 + carry;
                *w = x as u64;
                carry = x >> 64;
            }
        }
        v.copy_from_slice(&n);
        le_all(&v, u64::to_le_bytes)
    };
    let mut d256 = vec![0u8, 3];
    d256.extend(vec![0xFF; 32]);
    d256.extend(&ten40);
    let mut max = le_all(&[i64::MAX as u64, 0, 0, 0], u64::to_le_bytes);
    d256.append(&mut max);
    assert_eq!(
        summed(&one_column(0, types::DECIMAL256, 3, &d256)),
        Ok((
            3,
            column_sum(&[
                &|h| h.push_number(number("-0.001")),
                &|h| h.push_number(number(&format!("1{}.000", "0".repeat(37)))),
                &|h| h.push_number(number("9223372036854775.807")),
            ])
        ))
    );
    // Scales past the type's are malformed.
    let e = malformed(running().decode(&one_column(0, types::DECIMAL64, 0, &[0, 19]), None));
    assert!(e.contains("scale 19"), "{e}");
}

#[test]
fn varchar_and_symbols_with_nulls() {
    // Rows: "é", NULL, "", "xyz".
    let mut v = vec![1u8, 0b0010];
    v.extend(le_all(&[0u32, 2, 2, 5], u32::to_le_bytes));
    v.extend("éxyz".as_bytes());
    assert_eq!(
        summed(&one_column(0, types::VARCHAR, 4, &v)),
        Ok((
            4,
            column_sum(&[
                &|h| h.push_text("é"),
                &|h| h.push_null(),
                &|h| h.push_text(""),
                &|h| h.push_text("xyz"),
            ])
        ))
    );
    // An all-null column still writes its one offset.
    let all_null = [1u8, 0b11, 0, 0, 0, 0];
    assert_eq!(
        summed(&one_column(0, types::VARCHAR, 2, &all_null)),
        Ok((2, column_sum(&[&|h| h.push_null(), &|h| h.push_null()])))
    );
    // A value cut inside a character.
    let mut cut = vec![0u8];
    cut.extend(le_all(&[0u32, 1, 2], u32::to_le_bytes));
    cut.extend("é".as_bytes());
    let e = malformed(running().decode(&one_column(0, types::VARCHAR, 2, &cut), None));
    assert!(e.contains("UTF-8"), "{e}");

    // Column-local symbol dictionaries (no delta flag): ids into the column's own entries.
    let mut s = vec![1u8, 0b010, 2, 1, b'p', 2, b'q', b'q', 1, 0];
    let f = batch(
        0,
        0,
        None,
        3,
        Some(&[("s", types::SYMBOL), ("t", types::SYMBOL)]),
        &{
            s.extend_from_slice(&[0, 1, 1, b'r', 0, 0, 0]);
            s
        },
    );
    assert_eq!(
        summed(&f),
        Ok((
            3,
            column_sum(&[
                &|h| {
                    h.push_text("qq");
                    h.push_text("r");
                },
                &|h| {
                    h.push_null();
                    h.push_text("r");
                },
                &|h| {
                    h.push_text("p");
                    h.push_text("r");
                },
            ])
        ))
    );
    // An id past the dictionary.
    let f = batch(
        FLAG_DELTA_SYMBOL_DICT,
        0,
        Some((0, &["a"])),
        1,
        Some(&[("s", types::SYMBOL)]),
        &[0, 1],
    );
    let e = malformed(running().decode(&f, None));
    assert!(e.contains("symbol id 1"), "{e}");
}

// ------------------------------------------------------------------------------------------------
// Gorilla

/// The encoder side of §3.6, for the tests: LSB-first bits.
#[derive(Default)]
struct BitWriter {
    bytes: Vec<u8>,
    bits: usize,
}

impl BitWriter {
    fn bit(&mut self, b: u64) {
        if self.bits % 8 == 0 {
            self.bytes.push(0);
        }
        if b & 1 == 1 {
            *self.bytes.last_mut().unwrap() |= 1 << (self.bits % 8);
        }
        self.bits += 1;
    }

    fn value(&mut self, v: i64, n: u32) {
        for i in 0..n {
            self.bit((v as u64) >> i);
        }
    }

    fn dod(&mut self, dod: i64) {
        let (prefix, width): (&[u64], u32) = match dod {
            0 => (&[0], 0),
            -64..=63 => (&[1, 0], 7),
            -256..=255 => (&[1, 1, 0], 9),
            -2048..=2047 => (&[1, 1, 1, 0], 12),
            _ => (&[1, 1, 1, 1], 32),
        };
        for &b in prefix {
            self.bit(b);
        }
        self.value(dod, width);
    }
}

/// A Gorilla-coded column body (after the null section): encoding byte, seeds, bits.
fn gorilla(values: &[i64]) -> Vec<u8> {
    let mut out = vec![1u8];
    for v in values.iter().take(2) {
        out.extend_from_slice(&v.to_le_bytes());
    }
    if values.len() >= 3 {
        let mut w = BitWriter::default();
        let mut delta = values[1] - values[0];
        for pair in values[1..].windows(2) {
            let d = pair[1] - pair[0];
            w.dod(d - delta);
            delta = d;
        }
        out.extend(w.bytes);
    }
    out
}

fn gorilla_round_trip(code: u8, values: &[i64], nulls: &[usize]) {
    let rows = values.len() + nulls.len();
    let mut section = Vec::new();
    if nulls.is_empty() {
        section.push(0);
    } else {
        section.push(1);
        let mut bm = vec![0u8; rows.div_ceil(8)];
        for &n in nulls {
            bm[n / 8] |= 1 << (n % 8);
        }
        section.extend(bm);
    }
    section.extend(gorilla(values));
    // A trailing LONG column checks that the stream's end was found.
    let mut cols = section;
    cols.push(0);
    cols.extend(le_all(&vec![7i64; rows], i64::to_le_bytes));
    let f = batch(
        FLAG_GORILLA | FLAG_DELTA_SYMBOL_DICT,
        0,
        None,
        rows as u64,
        Some(&[("ts", code), ("k", types::LONG)]),
        &cols,
    );
    let mut want = ResultHasher::new();
    let mut next = values.iter();
    for row in 0..rows {
        want.begin_row();
        if nulls.contains(&row) {
            want.push_null();
        } else {
            let v = *next.next().unwrap();
            want.push_timestamp_us(match code {
                types::DATE => v * 1000,
                types::TIMESTAMP_NANOS => v.div_euclid(1000),
                _ => v,
            });
        }
        want.push_i64(7);
        want.end_row();
    }
    assert_eq!(
        summed(&f),
        Ok((rows as u64, want.finish())),
        "{values:?} nulls {nulls:?}"
    );
}

#[test]
fn gorilla_columns_round_trip() {
    let t0 = 1_451_606_400_000_000i64;
    // Constant steps: every delta of deltas 0.
    let steady: Vec<i64> = (0..20).map(|k| t0 + k * 1_000_000).collect();
    // Every bucket: 7, 9, 12 and 32 bits, negative ones too.
    let mut jumpy = vec![t0, t0 + 100];
    for dod in [
        5i64,
        -60,
        200,
        -250,
        2000,
        -2047,
        1_000_000,
        -70_000_000,
        0,
        63,
        -64,
    ] {
        let n = jumpy.len();
        let delta = jumpy[n - 1] - jumpy[n - 2] + dod;
        jumpy.push(jumpy[n - 1] + delta);
    }
    for code in [types::TIMESTAMP, types::TIMESTAMP_NANOS, types::DATE] {
        gorilla_round_trip(code, &steady, &[]);
        gorilla_round_trip(code, &jumpy, &[0, 5, 14]);
        // Fewer than three values: seeds only, no stream.
        gorilla_round_trip(code, &[t0], &[1]);
        gorilla_round_trip(code, &[t0, t0 + 1], &[]);
        gorilla_round_trip(code, &[], &[0, 1]);
    }
}

#[test]
fn the_real_servers_gorilla_bytes_decode() {
    // server_rich_batch0's ts column: 1000, 2000, 3000 (one 0 bit).
    let mut section = vec![0u8];
    section.extend(gorilla(&[1000, 2000, 3000]));
    assert_eq!(
        &section[..],
        &hex("0001e803000000000000d00700000000000000")[..]
    );
    // A stream that runs out.
    let mut cut = vec![0u8, 1];
    cut.extend(le_all(&[1i64, 2], i64::to_le_bytes));
    cut.push(0xFF); // 1111 then the 32 bits that are not there
    let e = malformed(running().decode(
        &batch(
            FLAG_GORILLA,
            0,
            None,
            3,
            Some(&[("ts", types::TIMESTAMP)]),
            &cut,
        ),
        None,
    ));
    assert!(e.contains("bit stream"), "{e}");
    let mut bad = vec![0u8, 2];
    bad.extend(le_all(&[1i64], i64::to_le_bytes));
    let e = malformed(running().decode(
        &batch(
            FLAG_GORILLA,
            0,
            None,
            1,
            Some(&[("ts", types::TIMESTAMP)]),
            &bad,
        ),
        None,
    ));
    assert!(e.contains("encoding 2"), "{e}");
    // Without the flag the same column is plain i64s.
    let plain = batch(
        0,
        0,
        None,
        1,
        Some(&[("ts", types::TIMESTAMP)]),
        &[0, 1, 0, 0, 0, 0, 0, 0, 0],
    );
    assert_eq!(
        summed(&plain),
        Ok((1, column_sum(&[&|h| h.push_timestamp_us(1)])))
    );
}

// ------------------------------------------------------------------------------------------------
// Protocol errors

#[test]
fn protocol_errors_are_malformed() {
    let simple = fixture!("server_result_batch_simple");
    // Another request's batch.
    let mut d = Decoder::new();
    d.begin_query(2, false);
    assert!(malformed(d.decode(&simple, None)).contains("request 1 while 2 runs"));
    // No query running.
    assert!(malformed(Decoder::new().decode(&simple, None)).contains("while none runs"));
    // zstd.
    let mut z = simple.clone();
    z[5] |= FLAG_ZSTD;
    assert!(malformed(running().decode(&z, None)).contains("zstd"));
    // Trailing bytes (the header's length says so too).
    let mut t = simple.clone();
    t.push(0);
    patch_header(&mut t, 0, 0x0C, 1);
    assert!(malformed(running().decode(&t, None)).contains("after the end"));
    // A length that disagrees with the frame.
    let mut short = simple.clone();
    short.pop();
    assert!(malformed(running().decode(&short, None)).contains("payload length"));
    // A client's message kind.
    let mut k = vec![0u8; HEADER_LEN];
    k.extend_from_slice(&[kind::QUERY_REQUEST]);
    patch_header(&mut k, 0, 0, 0);
    assert!(malformed(running().decode(&k, None)).contains("not one a server sends"));
    // Caps: rows, columns, and columns that cannot fit.
    let rows = batch(0x0C, 0, None, MAX_ROWS_PER_BATCH as u64 + 1, Some(&[]), &[]);
    assert!(malformed(running().decode(&rows, None)).contains("row count"));
    let mut cols = batch(0x0C, 0, None, 0, None, &[]);
    cols.extend_from_slice(&[0x81, 0x10]); // 2049
    patch_header(&mut cols, 0, 0x0C, 1);
    assert!(malformed(running().decode(&cols, None)).contains("column count"));
    let mut cols = batch(0x0C, 0, None, 0, None, &[]);
    cols.extend_from_slice(&[0xE8, 0x07, 0, 5]); // 1000 columns, 2 bytes
    patch_header(&mut cols, 0, 0x0C, 1);
    assert!(malformed(running().decode(&cols, None)).contains("1000 columns"));
    // Unknown type code.
    let f = batch(0x0C, 0, None, 0, Some(&[("x", 0x08)]), &[0]);
    assert!(malformed(running().decode(&f, None)).contains("0x08"));
    // RESULT_END naming batches that never came.
    let mut end = vec![0u8; HEADER_LEN];
    end.push(kind::RESULT_END);
    end.extend_from_slice(&1i64.to_le_bytes());
    end.extend_from_slice(&[3, 0]);
    patch_header(&mut end, 0, 0, 0);
    assert!(malformed(running().decode(&end, None)).contains("last batch was 3"));
}

#[test]
fn query_errors_keep_the_servers_words() {
    let mut f = vec![0u8; HEADER_LEN];
    f.push(kind::QUERY_ERROR);
    f.extend_from_slice(&1i64.to_le_bytes());
    f.push(crate::qwp::status::PARSE_ERROR);
    let msg = b"table does not exist [table=nope] \xff";
    f.extend_from_slice(&(msg.len() as u16).to_le_bytes());
    f.extend_from_slice(msg);
    patch_header(&mut f, 0, 0, 0);
    match running().decode(&f, None).unwrap() {
        Frame::QueryError {
            request_id,
            status,
            message,
        } => {
            assert_eq!((request_id, status), (1, 5));
            assert!(message.starts_with("table does not exist [table=nope]"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn columns_without_an_encoding_are_refused_after_the_batch_is_read() {
    let mut bin = vec![0u8];
    bin.extend(le_all(&[0u32, 2], u32::to_le_bytes));
    bin.extend_from_slice(&[0xDE, 0xAD]);
    let schema: &[(&str, u8)] = &[("b", types::BINARY)];
    let b0 = batch(0x0C, 0, Some((0, &["s"])), 1, Some(schema), &bin);
    let b1 = batch(0x0C, 1, Some((1, &["t"])), 1, None, &bin);
    let mut d = running();
    let mut h = ResultHasher::new();
    match d.decode(&b0, Some(&mut h)) {
        Err(DecodeError::Unhashable(why)) => {
            assert!(why.contains("`b` is BINARY"), "{why}")
        }
        other => panic!("{other:?}"),
    }
    // The state moved on: the next batch reads, and counts without a hasher.
    assert_eq!(d.dict_len(), 1);
    assert!(matches!(
        d.decode(&b1, None),
        Ok(Frame::ResultBatch { rows: 1, .. })
    ));
    assert_eq!(d.dict_len(), 2);
    // Arrays: checked, counted.
    let mut arr = vec![0u8, 2];
    arr.extend(le_all(&[1i32, 2], i32::to_le_bytes));
    arr.extend(le_all(&[1.0f64, 2.0], f64::to_le_bytes));
    let f = one_column(0, types::DOUBLE_ARRAY, 1, &arr);
    assert!(matches!(
        running().decode(&f, None),
        Ok(Frame::ResultBatch { rows: 1, .. })
    ));
    let mut huge = vec![0u8, 2];
    huge.extend(le_all(&[i32::MAX, i32::MAX], i32::to_le_bytes));
    let f = one_column(0, types::LONG_ARRAY, 1, &huge);
    assert!(malformed(running().decode(&f, None)).contains("wanted"));
}

// ------------------------------------------------------------------------------------------------
// Fuzz: nothing a server sends makes the decoder panic

fn fixtures() -> Vec<Vec<u8>> {
    vec![
        fixture!("server_server_info"),
        fixture!("real_server_server_info"),
        fixture!("server_result_batch_simple"),
        fixture!("server_result_end_simple"),
        fixture!("server_exec_done"),
        fixture!("server_rich_batch0"),
        fixture!("server_rich_batch1"),
        fixture!("server_rich_end"),
        fixture!("real_server_result_batch"),
        fixture!("real_server_result_end"),
    ]
}

/// Feeds `frames` to one decoder, with and without a hasher, as a connection would.
fn feed(frames: &[Vec<u8>]) {
    for hashing in [false, true] {
        let mut d = running();
        let mut h = ResultHasher::new();
        for f in frames {
            let _ = d.decode(f, hashing.then_some(&mut h));
        }
    }
}

/// `f` with its header's length patched to fit, so mutations reach the payload.
fn fitted(mut f: Vec<u8>) -> Vec<u8> {
    if f.len() >= HEADER_LEN {
        let (flags, tables) = (f[5], u16::from_le_bytes([f[6], f[7]]));
        patch_header(&mut f, 0, flags, tables);
    }
    f
}

#[derive(Clone, Debug)]
enum Mutation {
    Set(usize, u8),
    Insert(usize, u8),
    Remove(usize),
    Truncate(usize),
}

fn mutate(mut f: Vec<u8>, ms: &[Mutation]) -> Vec<u8> {
    for m in ms {
        let n = f.len().max(1);
        match *m {
            Mutation::Set(i, b) => {
                if let Some(x) = f.get_mut(i % n) {
                    *x = b;
                }
            }
            Mutation::Insert(i, b) => f.insert(i % (f.len() + 1), b),
            Mutation::Remove(i) => {
                if !f.is_empty() {
                    f.remove(i % n);
                }
            }
            Mutation::Truncate(i) => f.truncate(i % n),
        }
    }
    f
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        1 => any::<usize>().prop_map(Mutation::Remove),
        1 => any::<usize>().prop_map(Mutation::Truncate),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn random_bytes_never_panic(
        body in proptest::collection::vec(any::<u8>(), 0..300),
        kind in 0x10u8..0x19,
        flags in any::<u8>(),
    ) {
        feed(std::slice::from_ref(&body));
        // With a valid header and kind, so the payload's own checks are reached.
        let mut f = vec![0u8; HEADER_LEN];
        f.push(kind);
        f.extend_from_slice(&body);
        patch_header(&mut f, 0, flags, 1);
        feed(&[f]);
    }

    #[test]
    fn mutated_fixtures_never_panic(
        which in 0usize..10,
        ms in proptest::collection::vec(mutation(), 1..6),
        patch in any::<bool>(),
    ) {
        let all = fixtures();
        let mut f = mutate(all[which].clone(), &ms);
        if patch {
            f = fitted(f);
        }
        // After a good batch 0 too, so continuation batches meet a schema and a dictionary.
        feed(&[f.clone()]);
        feed(&[all[5].clone(), f]);
    }
}
