//! The encoder against golden frames of the official clients (tests/fixtures/qwp): built from
//! the same rows, in the same order, the bytes must be equal.

use std::sync::Arc;

use super::*;
use crate::gen::batch::{push_str, ColumnMeta, Dictionary};
use crate::qwp::testing::fixture;

fn col(name: &str, role: &str, ty: &str, physical: Physical, dict: Option<&[&str]>) -> ColumnMeta {
    ColumnMeta {
        name: name.into(),
        role: role.into(),
        ty: ty.into(),
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

/// The series key `hostname`, a symbol column of `n` hosts `{prefix}0`, `{prefix}1`, ...
fn hostnames(prefix: &str, n: usize) -> ColumnMeta {
    let names: Vec<String> = (0..n).map(|i| format!("{prefix}{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    col(
        "hostname",
        "series",
        "symbol",
        Physical::Symbol,
        Some(&names),
    )
}

/// The designated timestamp column `timestamp` (ns).
fn designated() -> ColumnMeta {
    col(
        "timestamp",
        "timestamp",
        "timestamp",
        Physical::Timestamp,
        None,
    )
}

fn schema(table: &str, columns: Vec<ColumnMeta>) -> Arc<BatchSchema> {
    Arc::new(BatchSchema {
        name: table.into(),
        table: table.into(),
        timestamp: columns.iter().position(|c| c.role == "timestamp"),
        series_key: None,
        columns,
    })
}

/// The schema of `shared/tools/qwp/drive_python_client.py`'s `trades`, in the order the client
/// first used the columns.
fn python6_schema() -> Arc<BatchSchema> {
    schema(
        "trades",
        vec![
            col(
                "sym",
                "tag",
                "symbol",
                Physical::Symbol,
                Some(&["AAA", "BBB", "CCC"]),
            ),
            // The official client hands out ids column by column in its own column order;
            // ours takes small dictionaries first, so this one is given the larger.
            col(
                "venue",
                "tag",
                "symbol",
                Physical::Symbol,
                Some(&["X", "Y", "Z", "W"]),
            ),
            col("qty", "field", "long", Physical::Long, None),
            col("px", "field", "double", Physical::Double, None),
            col("note", "field", "varchar", Physical::Varchar, None),
            col("ok", "field", "boolean", Physical::Bool, None),
            designated(),
            col("ts2", "field", "timestamp", Physical::Timestamp, None),
        ],
    )
}

#[derive(Clone, Copy)]
struct Trade {
    sym: u32,
    venue: Option<u32>,
    qty: i64,
    px: Option<f64>,
    note: Option<&'static str>,
    ok: Option<bool>,
    ts: i64,
    ts2_ns: Option<i64>,
}

/// Appends one value to a column of the named `Values` kind (a column of another kind is left
/// alone). With a row index and an `Option`: `None` appends `placeholder` under a null bit.
macro_rules! put {
    ($col:expr, $kind:ident, $value:expr) => {
        if let Values::$kind(v) = &mut $col.values {
            v.push($value);
        }
    };
    ($col:expr, $r:expr, $kind:ident, $value:expr, $placeholder:expr) => {{
        let value = $value;
        put!($col, $kind, value.unwrap_or($placeholder));
        if value.is_none() {
            $col.nulls.set($r);
        }
    }};
}

fn trades_batch(schema: &Arc<BatchSchema>, rows: &[Trade]) -> Batch {
    let mut b = Batch::new(schema.clone());
    for (r, t) in rows.iter().enumerate() {
        let c = &mut b.columns;
        put!(c[0], Symbol, t.sym);
        put!(c[1], r, Symbol, t.venue, 0);
        put!(c[2], Long, t.qty);
        put!(c[3], r, Double, t.px, 0.0);
        push_str(&mut c[4].values, t.note.unwrap_or(""));
        if t.note.is_none() {
            c[4].nulls.set(r);
        }
        // `true` under a null: the encoder must not read what lies under a null bit.
        put!(c[5], r, Bool, t.ok, true);
        put!(c[6], Timestamp, t.ts);
        put!(c[7], r, Timestamp, t.ts2_ns, 0);
    }
    b.rows = rows.len();
    b
}

const T0: i64 = 1_700_000_000_000_000_000;

fn nanos() -> QwpOptions {
    QwpOptions {
        designated_nanos: true,
        ..QwpOptions::default()
    }
}

fn one_message(enc: &mut QwpEncoder, batch: &Batch) -> Vec<u8> {
    let (mut out, mut frames) = (Vec::new(), Vec::new());
    enc.encode(batch, &mut out, &mut frames).unwrap();
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].end, out.len());
    out
}

#[test]
fn two_flushes_match_the_python_clients_frames_byte_for_byte() {
    let schema = python6_schema();
    let mut enc = QwpEncoder::new(schema.clone(), nanos()).unwrap();
    let first = trades_batch(
        &schema,
        &[
            Trade {
                sym: 0,
                venue: Some(0),
                qty: 1,
                px: Some(1.5),
                note: Some("hi"),
                ok: Some(true),
                ts: T0,
                ts2_ns: None,
            },
            Trade {
                sym: 1,
                venue: None,
                qty: 2,
                px: None,
                note: None,
                ok: Some(false),
                ts: T0 + 1,
                ts2_ns: None,
            },
            Trade {
                sym: 0,
                venue: None,
                qty: 3,
                px: Some(3.5),
                note: None,
                ok: None,
                ts: T0 + 2,
                ts2_ns: Some(5_000),
            },
        ],
    );
    assert_eq!(
        one_message(&mut enc, &first),
        fixture("python6_ingress_frame0")
    );
    // The second message on the connection carries only the new symbol, from id 3.
    let second = trades_batch(
        &schema,
        &[Trade {
            sym: 2,
            venue: None,
            qty: 4,
            px: None,
            note: None,
            ok: None,
            ts: T0 + 3,
            ts2_ns: None,
        }],
    );
    assert_eq!(
        one_message(&mut enc, &second),
        fixture("python6_ingress_frame1")
    );
}

fn m0_batch(schema: &Arc<BatchSchema>) -> Batch {
    let mut b = Batch::new(schema.clone());
    for i in 0..10 {
        let c = &mut b.columns;
        put!(c[0], Symbol, i);
        put!(c[1], Long, i as i64);
        put!(c[2], Double, 100.0 + i as f64);
        put!(c[3], Timestamp, T0 + i as i64);
    }
    b.rows = 10;
    b
}

fn m0_schema() -> Arc<BatchSchema> {
    let syms: Vec<String> = (0..10).map(|i| format!("SYM_{i:03}")).collect();
    let syms: Vec<&str> = syms.iter().map(String::as_str).collect();
    schema(
        "trades",
        vec![
            col("sym", "tag", "symbol", Physical::Symbol, Some(&syms)),
            col("qty", "field", "long", Physical::Long, None),
            col("px", "field", "double", Physical::Double, None),
            designated(),
        ],
    )
}

#[test]
fn ten_rows_match_the_rust_and_java_golden_frame() {
    let schema = m0_schema();
    let mut enc = QwpEncoder::new(schema.clone(), nanos()).unwrap();
    let bytes = one_message(&mut enc, &m0_batch(&schema));
    assert_eq!(bytes, fixture("m0-equivalent-buffer"));
    assert_eq!(bytes, fixture("java_first_replay_hex"));
}

/// host id, region id, u, x, timestamp.
type Probe = (u32, Option<u32>, i64, Option<f64>, i64);

#[test]
fn the_real_servers_capture_is_reproduced() {
    // real_client_ingress_frame0/1: what the official client sent a QuestDB 9.4.4 server.
    let schema = schema(
        "qwp_probe",
        vec![
            col(
                "host",
                "tag",
                "symbol",
                Physical::Symbol,
                Some(&["a", "b", "c"]),
            ),
            col(
                "region",
                "tag",
                "symbol",
                Physical::Symbol,
                Some(&["eu", "us", "ap"]),
            ),
            col("u", "field", "long", Physical::Long, None),
            col("x", "field", "double", Physical::Double, None),
            designated(),
        ],
    );
    let t = 1_451_606_400_000_000_000i64;
    let rows: &[Probe] = &[
        (0, Some(0), 1, Some(1.5), t),
        (1, Some(0), 2, None, t + 10_000_000_000),
    ];
    let build = |rows: &[Probe]| {
        let mut b = Batch::new(schema.clone());
        for (r, &(h, reg, u, x, ts)) in rows.iter().enumerate() {
            let c = &mut b.columns;
            put!(c[0], Symbol, h);
            put!(c[1], r, Symbol, reg, 0);
            put!(c[2], Long, u);
            put!(c[3], r, Double, x, 0.0);
            put!(c[4], Timestamp, ts);
        }
        b.rows = rows.len();
        b
    };
    let mut enc = QwpEncoder::new(schema.clone(), nanos()).unwrap();
    assert_eq!(
        one_message(&mut enc, &build(rows)),
        fixture("real_client_ingress_frame0")
    );
    assert_eq!(
        one_message(&mut enc, &build(&[(2, None, 3, None, t + 20_000_000_000)])),
        fixture("real_client_ingress_frame1")
    );
}

#[test]
fn the_designated_timestamp_is_micros_unless_asked() {
    let schema = m0_schema();
    let mut enc = QwpEncoder::new(schema.clone(), QwpOptions::default()).unwrap();
    let bytes = one_message(&mut enc, &m0_batch(&schema));
    let golden = fixture("m0-equivalent-buffer");
    // Same length; the type code says TIMESTAMP and the values are floored to microseconds.
    assert_eq!(bytes.len(), golden.len());
    let schema_at = bytes
        .windows(2)
        .rposition(|w| w == [0x00, types::TIMESTAMP])
        .expect("a designated TIMESTAMP column");
    assert_eq!(golden[schema_at + 1], types::TIMESTAMP_NANOS);
    let last = i64::from_le_bytes(bytes[bytes.len() - 8..].try_into().unwrap());
    assert_eq!(last, (T0 + 9) / 1000);
}

/// A batch of `n` TSBS-like rows with a varchar column, for splitting.
fn wide_batch(n: usize) -> (Arc<BatchSchema>, Batch) {
    let schema = schema(
        "cpu",
        vec![
            hostnames("host_", n),
            col("usage", "field", "long", Physical::Long, None),
            col("note", "field", "varchar", Physical::Varchar, None),
            designated(),
        ],
    );
    let mut b = Batch::new(schema.clone());
    for i in 0..n {
        let c = &mut b.columns;
        put!(c[0], Symbol, i as u32);
        put!(c[1], i, Long, (i % 7 != 3).then_some(i as i64), i as i64);
        push_str(&mut c[2].values, &"x".repeat(i % 50));
        put!(c[3], Timestamp, T0 + i as i64 * 1000);
    }
    b.rows = n;
    (schema, b)
}

#[test]
fn a_batch_over_the_cap_splits_into_messages_that_commit_once() {
    let (schema, batch) = wide_batch(5000);
    let options = QwpOptions {
        max_message: 16 * 1024,
        designated_nanos: false,
    };
    let mut enc = QwpEncoder::new(schema.clone(), options).unwrap();
    let (mut out, mut frames) = (Vec::new(), Vec::new());
    assert_eq!(enc.encode(&batch, &mut out, &mut frames).unwrap(), 5000);
    assert!(frames.len() > 5, "{} messages", frames.len());
    assert_eq!(frames.iter().map(|f| f.rows).sum::<u64>(), 5000);
    let mut start = 0;
    let mut dictionary_only = 0;
    for (k, f) in frames.iter().enumerate() {
        let m = &out[start..f.end];
        assert!(m.len() <= options.max_message, "message {k}: {}", m.len());
        let h = qwp::read_header(&mut qwp::Reader::new(m)).unwrap();
        let last = k + 1 == frames.len();
        assert_eq!(h.flags & qwp::FLAG_DEFER_COMMIT != 0, !last, "message {k}");
        assert_eq!(
            h.flags & qwp::FLAG_DELTA_SYMBOL_DICT,
            qwp::FLAG_DELTA_SYMBOL_DICT
        );
        // The 5,000 host names (~49 KB) do not fit with rows: they go first, alone.
        assert_eq!(h.table_count == 0, f.rows == 0, "message {k}");
        if f.rows == 0 {
            assert_eq!(dictionary_only, k, "dictionary messages come first");
            dictionary_only += 1;
        }
        start = f.end;
    }
    assert!(dictionary_only >= 3, "{dictionary_only}");
    assert_eq!(start, out.len());
    assert_eq!(enc.symbols(), 5000);
    assert_eq!(enc.sent, enc.symbols(), "nothing left to send");
}

#[test]
fn one_row_that_cannot_fit_is_an_error_not_a_panic() {
    let (schema, mut batch) = wide_batch(3);
    if let Values::Varchar { offsets, bytes } = &mut batch.columns[2].values {
        bytes.extend(std::iter::repeat_n(b'y', 4000));
        let last = offsets.len() - 1;
        offsets[last] += 4000;
    }
    let options = QwpOptions {
        max_message: 2048,
        designated_nanos: false,
    };
    let mut enc = QwpEncoder::new(schema, options).unwrap();
    let err = enc
        .encode(&batch, &mut Vec::new(), &mut Vec::new())
        .unwrap_err();
    assert!(err.contains("does not fit"), "{err}");
}

#[test]
fn bitmaps_cover_exactly_the_messages_rows() {
    let mut nulls = Nulls::default();
    for i in [0, 5, 63, 64, 70, 129] {
        nulls.set(i);
    }
    let mut out = Vec::new();
    write_bitmap(&nulls, 60, 75, &mut out);
    // Rows 60..75: nulls at 63, 64, 70 -> bits 3, 4, 10.
    assert_eq!(out, vec![1, 0b0001_1000, 0b0000_0100]);
    assert!(any_null(&nulls, 60, 75));
    assert!(!any_null(&nulls, 71, 129));
    assert!(any_null(&nulls, 71, 130));
    assert!(!any_null(&nulls, 130, 1000));
    assert!(!any_null(&Nulls::default(), 0, 10));
}

#[test]
fn names_over_the_servers_limit_are_refused() {
    let long = "t".repeat(128);
    let s = schema(&long, vec![col("a", "field", "long", Physical::Long, None)]);
    assert!(QwpEncoder::new(s, QwpOptions::default())
        .err()
        .unwrap()
        .contains("1 to 127 bytes"));
}

#[test]
fn uuids_parse_with_or_without_hyphens() {
    assert_eq!(
        parse_uuid("0123456789abcdef0011223344556677"),
        Some(0x0123456789abcdef0011223344556677)
    );
    assert_eq!(
        parse_uuid("01234567-89ab-cdef-0011-223344556677"),
        Some(0x0123456789abcdef0011223344556677)
    );
    assert_eq!(parse_uuid("nope"), None);
}

#[test]
fn small_dictionaries_get_the_one_byte_ids() {
    let schema = schema(
        "cpu",
        vec![
            hostnames("h", 300),
            col(
                "arch",
                "tag",
                "symbol",
                Physical::Symbol,
                Some(&["x86", "x64"]),
            ),
        ],
    );
    let mut b = Batch::new(schema.clone());
    for i in 0..300u32 {
        put!(b.columns[0], Symbol, i);
        put!(b.columns[1], Symbol, i % 2);
    }
    b.rows = 300;
    let mut enc = QwpEncoder::new(schema, QwpOptions::default()).unwrap();
    let bytes = one_message(&mut enc, &b);
    // The dictionary starts with the two arch values, then the hosts.
    let mut r = qwp::Reader::new(&bytes);
    qwp::read_header(&mut r).unwrap();
    assert_eq!((r.varint(), r.varint()), (Ok(0), Ok(302)));
    assert_eq!(
        (r.str(), r.str(), r.str()),
        (Ok("x86"), Ok("x64"), Ok("h0"))
    );
    // The arch column: 300 one-byte ids at the very end of the message.
    let tail = &bytes[bytes.len() - 300..];
    assert!(tail.iter().enumerate().all(|(i, &id)| id as usize == i % 2));
}

#[test]
fn a_dictionary_that_grows_between_batches_gets_ids_for_its_new_values() {
    let first = schema(
        "t",
        vec![col("s", "tag", "symbol", Physical::Symbol, Some(&["a"]))],
    );
    let batch = |schema: &Arc<BatchSchema>, ids: &[u32]| {
        let mut b = Batch::new(schema.clone());
        if let Values::Symbol(v) = &mut b.columns[0].values {
            v.extend_from_slice(ids);
        }
        b.rows = ids.len();
        b
    };
    let mut enc = QwpEncoder::new(first.clone(), QwpOptions::default()).unwrap();
    one_message(&mut enc, &batch(&first, &[0, 0]));
    // A file reader's dictionary has grown: the batch's schema has more values.
    let grown = schema(
        "t",
        vec![col(
            "s",
            "tag",
            "symbol",
            Physical::Symbol,
            Some(&["a", "b", "c"]),
        )],
    );
    let bytes = one_message(&mut enc, &batch(&grown, &[2, 0, 1]));
    let mut r = qwp::Reader::new(&bytes);
    qwp::read_header(&mut r).unwrap();
    assert_eq!((r.varint(), r.varint()), (Ok(1), Ok(2)));
    assert_eq!((r.str(), r.str()), (Ok("c"), Ok("b")));
    // Rows: c, a, b -> connection ids 1, 0, 2.
    assert_eq!(&bytes[bytes.len() - 3..], &[1, 0, 2]);
}
