use std::io::{self, Cursor};
use std::sync::Arc;

use super::writer::header_bytes;
use super::*;
use crate::gen::batch::{push_str, Batch, BatchSchema, ColumnMeta, Dictionary};
use crate::gen::tsbs_names::{GAUGES, TAGS};

fn meta(name: &str, role: &str, ty: &str, physical: Physical, dict: &[&str]) -> ColumnMeta {
    ColumnMeta {
        name: name.into(),
        role: role.into(),
        ty: ty.into(),
        unit_ns: if physical == Physical::Timestamp {
            1_000
        } else {
            0
        },
        physical,
        dictionary: (physical == Physical::Symbol).then(|| {
            Arc::new(Dictionary {
                values: dict.iter().map(|s| s.to_string()).collect(),
            })
        }),
    }
}

fn schema(columns: Vec<ColumnMeta>) -> Arc<BatchSchema> {
    Arc::new(BatchSchema {
        name: "cpu_schema".into(),
        table: "cpu".into(),
        series_key: columns.iter().position(|c| c.role == "series"),
        timestamp: columns.iter().position(|c| c.role == "timestamp"),
        columns,
    })
}

/// One column of every physical kind, two of them symbols.
fn every_kind() -> Arc<BatchSchema> {
    schema(vec![
        meta(
            "host",
            "series",
            "symbol",
            Physical::Symbol,
            &["h0", "h1", "h2"],
        ),
        meta("region", "tag", "symbol", Physical::Symbol, &["eu", "ü-ñ"]),
        meta("n", "field", "long", Physical::Long, &[]),
        meta("x", "field", "double", Physical::Double, &[]),
        meta("ok", "field", "boolean", Physical::Bool, &[]),
        meta("msg", "field", "varchar", Physical::Varchar, &[]),
        meta("ts", "timestamp", "timestamp", Physical::Timestamp, &[]),
    ])
}

const TEXTS: [&str; 6] = ["", "plain", "héllo", "日本語", "🦀 crab", ""];

/// A batch of `rows` rows; `k` varies the values, and odd `k` adds nulls.
fn batch(s: &Arc<BatchSchema>, rows: usize, k: usize) -> Batch {
    let mut b = Batch::new(Arc::clone(s));
    for i in 0..rows {
        b.series.push((i % 3) as u32);
        for (c, col) in b.columns.iter_mut().enumerate() {
            match &mut col.values {
                Values::Symbol(v) if c == 0 => v.push((i % 3) as u32),
                Values::Symbol(v) => v.push(((i + k) % 2) as u32),
                Values::Long(v) => v.push(i as i64 * k as i64 - 7),
                Values::Double(v) => v.push(i as f64 * 0.5 - k as f64),
                Values::Bool(v) => v.push((i + k) % 3 == 0),
                v @ Values::Varchar { .. } => push_str(v, TEXTS[(i + k) % TEXTS.len()]),
                Values::Timestamp(v) => v.push(1_000_000 + (i * 1000) as i64),
            }
            if k % 2 == 1 && c > 0 && (i % 5 == 1 || i == rows - 1) {
                col.nulls.set(i);
            }
        }
    }
    b.rows = rows;
    b
}

fn write_file(s: &BatchSchema, batches: &[Batch], seed: u64, shard: Option<(u64, u64)>) -> Vec<u8> {
    let mut w = BinWriter::new(Vec::new(), s, seed, shard).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap()
}

type Read = (Arc<BatchSchema>, u64, Option<(u64, u64)>, Vec<Batch>);

fn read_file(bytes: &[u8]) -> Result<Read, BinError> {
    let mut r = BinReader::open(Cursor::new(bytes))?;
    let mut out = Vec::new();
    loop {
        let mut b = Batch::new(Arc::clone(r.schema()));
        if !r.next_batch(&mut b)? {
            break;
        }
        out.push(b);
    }
    assert_eq!(r.offset(), bytes.len() as u64);
    Ok((Arc::clone(r.schema()), r.seed(), r.shard(), out))
}

fn assert_same_schema(a: &BatchSchema, b: &BatchSchema) {
    assert_eq!((&a.name, &a.table), (&b.name, &b.table));
    assert_eq!((a.series_key, a.timestamp), (b.series_key, b.timestamp));
    assert_eq!(a.columns.len(), b.columns.len());
    for (x, y) in a.columns.iter().zip(&b.columns) {
        assert_eq!(
            (&x.name, &x.role, &x.ty, x.unit_ns, x.physical),
            (&y.name, &y.role, &y.ty, y.unit_ns, y.physical)
        );
        assert_eq!(x.dictionary, y.dictionary);
    }
}

fn assert_same_batch(a: &Batch, b: &Batch) {
    assert_eq!(a.rows, b.rows);
    assert_eq!(a.series, b.series);
    assert_eq!(a.columns, b.columns);
}

#[test]
fn round_trip_every_kind_nulls_unicode_and_batch_sizes() {
    let s = every_kind();
    let sizes = [1, 3, 64, 65, 130, 7, 128];
    let batches: Vec<Batch> = sizes
        .iter()
        .enumerate()
        .map(|(k, &n)| batch(&s, n, k))
        .collect();
    // The fixture really has what the test claims.
    assert!(batches[1].columns[2].nulls.any() && !batches[0].columns[2].nulls.any());
    assert!(batches[3].columns[5].nulls.is_null(64));
    let bytes = write_file(&s, &batches, 42, Some((2, 8)));
    let (rs, seed, shard, got) = read_file(&bytes).unwrap();
    assert_same_schema(&s, &rs);
    assert_eq!((seed, shard), (42, Some((2, 8))));
    assert_eq!(got.len(), batches.len());
    for (a, b) in batches.iter().zip(&got) {
        assert_same_batch(a, b);
    }
    // Text survives byte for byte, the empty string included.
    let texts: Vec<&str> = (0..6).map(|i| got[4].text(5, i)).collect();
    assert_eq!(texts, ["🦀 crab", "", "", "plain", "héllo", "日本語"]);
    assert_eq!(got[2].text(1, 1), "ü-ñ");
}

#[test]
fn doubles_keep_their_bits() {
    let s = schema(vec![meta("x", "field", "double", Physical::Double, &[])]);
    let xs = [
        0.0,
        -0.0,
        f64::NAN,
        f64::from_bits(0x7ff8_0000_dead_beef),
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MIN_POSITIVE / 4.0,
        f64::MAX,
        0.1,
    ];
    let mut b = Batch::new(Arc::clone(&s));
    b.columns[0].values = Values::Double(xs.to_vec());
    b.series = vec![0; xs.len()];
    b.rows = xs.len();
    let (_, _, _, got) = read_file(&write_file(&s, &[b], 0, None)).unwrap();
    let Values::Double(v) = &got[0].columns[0].values else {
        panic!("not doubles")
    };
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(v), bits(&xs));
}

#[test]
fn no_batches_and_empty_batches() {
    let s = every_kind();
    let bytes = write_file(&s, &[Batch::new(Arc::clone(&s))], 1, None);
    let (rs, seed, shard, got) = read_file(&bytes).unwrap();
    assert_same_schema(&s, &rs);
    assert_eq!((seed, shard, got.len()), (1, None, 0));
    // The empty batch wrote nothing: end marker and a zero trailer right after the header.
    assert_eq!(&bytes[bytes.len() - 20..], &[0; 20]);
}

#[test]
fn reader_reuses_or_reshapes_the_output_batch() {
    let s = every_kind();
    let bytes = write_file(&s, &[batch(&s, 10, 1), batch(&s, 3, 2)], 0, None);
    let mut r = BinReader::open(Cursor::new(&bytes[..])).unwrap();
    // A batch of some other schema is replaced by one of the file's.
    let other = schema(vec![meta("y", "field", "boolean", Physical::Bool, &[])]);
    let mut out = Batch::new(other);
    assert!(r.next_batch(&mut out).unwrap());
    assert!(Arc::ptr_eq(&out.schema, r.schema()));
    assert_same_batch(&out, &batch(&s, 10, 1));
    // The same batch is then reused: no stale rows, nulls or text from the first one.
    assert!(r.next_batch(&mut out).unwrap());
    assert_same_batch(&out, &batch(&s, 3, 2));
    assert!(!r.next_batch(&mut out).unwrap());
    assert!(!r.next_batch(&mut out).unwrap());
    assert_eq!((r.rows(), r.batches()), (13, 2));
}

/// A tiny file: 2 rows of a symbol series column, a long with a null, a varchar with an
/// empty string and a two-byte character, a timestamp.
fn tiny() -> Vec<u8> {
    let s = Arc::new(BatchSchema {
        name: "t".into(),
        table: "t".into(),
        columns: vec![
            meta("host", "series", "symbol", Physical::Symbol, &["a", "b"]),
            meta("v", "field", "long", Physical::Long, &[]),
            meta("note", "field", "varchar", Physical::Varchar, &[]),
            meta("ts", "timestamp", "timestamp", Physical::Timestamp, &[]),
        ],
        series_key: Some(0),
        timestamp: Some(3),
    });
    let mut b = Batch::new(Arc::clone(&s));
    b.series = vec![0, 1];
    b.columns[0].values = Values::Symbol(vec![0, 1]);
    b.columns[1].values = Values::Long(vec![5, 0]);
    b.columns[1].nulls.set(1);
    push_str(&mut b.columns[2].values, "");
    push_str(&mut b.columns[2].values, "é");
    b.columns[3].values = Values::Timestamp(vec![1_000, 2_000]);
    b.rows = 2;
    write_file(&s, &[b], 7, Some((1, 4)))
}

/// docs/binary-format.md shows this file; change both together, and bump `VERSION` when
/// the layout changes.
const TINY_HEX: &str = concat!(
    "574c423101000000ce00000001000000740100000074070000000000000001000000000000000400",
    "00000000000000000000030000000400000004000000686f73740600000073657269657306000000",
    "73796d626f6c00000000000000000402000000010000006101000000620100000076050000006669",
    "656c64040000006c6f6e67000000000000000001040000006e6f7465050000006669656c64070000",
    "00766172636861720000000000000000050200000074730900000074696d657374616d7009000000",
    "74696d657374616d70e80300000000000006b2f2ea4087dba3650200000000000000010000000000",
    "00000001000000010200000000000000050000000000000000000000000000000000000000000000",
    "000200000002000000c3a900e803000000000000d007000000000000000000000200000000000000",
    "0100000000000000",
);

#[test]
fn golden_tiny_file() {
    let bytes = tiny();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    if std::env::var_os("WLB_DUMP").is_some() {
        std::fs::write("/tmp/wlb_tiny.bin", &bytes).unwrap();
    }
    // 12 prefix + 206 schema section + 8 checksum, 82 batch, 4 end marker + 16 trailer.
    assert_eq!(bytes.len(), 328);
    assert_eq!(hex, TINY_HEX);
    assert_eq!(&bytes[..8], b"WLB1\x01\x00\x00\x00");
    let (s, seed, shard, got) = read_file(&bytes).unwrap();
    assert_eq!(
        (seed, shard, got.len(), got[0].rows),
        (7, Some((1, 4)), 1, 2)
    );
    assert!(got[0].is_null(1, 1) && !got[0].is_null(1, 0));
    assert_eq!((got[0].text(0, 1), got[0].text(2, 1)), ("b", "é"));
    assert_eq!(s.columns[3].unit_ns, 1_000);
}

/// Where things are in `tiny()`: the header is 226 bytes, the batch starts there.
const TINY_BATCH: usize = 226;
const TINY_HOST_IDS: usize = 239;
const TINY_V_FLAG: usize = 247;
const TINY_NOTE_OFFSET1: usize = 277;
const TINY_TRAILER: usize = 312;

fn read_err(bytes: &[u8]) -> BinError {
    match read_file(bytes) {
        Ok(_) => panic!("read a bad file without complaint"),
        Err(e) => e,
    }
}

fn patched(at: usize, new: &[u8]) -> Vec<u8> {
    let mut b = tiny();
    b[at..at + new.len()].copy_from_slice(new);
    b
}

#[test]
fn every_prefix_of_a_file_is_a_truncation_error() {
    let s = every_kind();
    for full in [
        tiny(),
        write_file(&s, &[batch(&s, 5, 1), batch(&s, 2, 0)], 3, None),
    ] {
        for len in 0..full.len() {
            let e = read_err(&full[..len]);
            assert_eq!(e.kind, BinErrorKind::Truncated, "prefix {len}: {e}");
            assert!(e.offset <= len as u64, "prefix {len}: {e}");
            assert!(e.to_string().starts_with(&format!("offset {}: ", e.offset)));
        }
    }
}

#[test]
fn truncation_messages_name_the_column_and_offset() {
    let b = tiny();
    // Cut inside the long column's values (they start at 256).
    let e = read_err(&b[..260]);
    assert_eq!(
        e.to_string(),
        "offset 256: truncated column `v` (16 bytes expected, 4 found)"
    );
    let e = read_err(&b[..TINY_BATCH]);
    assert_eq!(
        e.to_string(),
        "offset 226: truncated: the file ends after 0 batches without the end marker"
    );
    let e = read_err(&b[..100]);
    assert_eq!(
        e.to_string(),
        "offset 12: truncated header (206 bytes expected, 88 found)"
    );
}

#[test]
fn bad_magic_version_and_flags() {
    let e = read_err(b"PK\x03\x04 not ours at all, a zip file perhaps");
    assert_eq!((e.kind, e.offset), (BinErrorKind::NotBinary, 0));
    assert!(e.message.contains("not a wlrun binary file"), "{e}");
    // QuestDB's TSBS binary file is not ours either.
    assert_eq!(
        read_err(b"QWPB\x01\x01\x00\x00\x00\x00\x00\x00").kind,
        BinErrorKind::NotBinary
    );

    let e = read_err(&patched(4, &2u16.to_le_bytes()));
    assert_eq!((e.kind, e.offset), (BinErrorKind::Version, 4));
    assert!(
        e.message
            .starts_with("unsupported format version 2; this wlrun reads version 1"),
        "{e}"
    );
    let e = read_err(&patched(6, &1u16.to_le_bytes()));
    assert_eq!((e.kind, e.offset), (BinErrorKind::Version, 6));
    assert!(e.message.contains("unknown flags 0x0001"), "{e}");
}

#[test]
fn header_checksum_catches_edits() {
    // Rename the table from `t` to `u`: same length, wrong checksum.
    let e = read_err(&patched(21, b"u"));
    assert_eq!((e.kind, e.offset), (BinErrorKind::Corrupt, 218));
    assert!(e.message.starts_with("header checksum"), "{e}");
}

#[test]
fn corrupt_batches_are_errors_at_the_right_offset() {
    let e = read_err(&patched(TINY_HOST_IDS + 4, &9u32.to_le_bytes()));
    assert_eq!(
        e.to_string(),
        "offset 243: column `host`: row 1: symbol id 9 outside a dictionary of 2"
    );
    let e = read_err(&patched(TINY_V_FLAG, &[2]));
    assert_eq!(
        e.to_string(),
        "offset 247: column `v`: null flag 2 (0 or 1 expected)"
    );
    // A null bit for row 2 of a 2-row batch.
    let e = read_err(&patched(TINY_V_FLAG + 1, &[0b110]));
    assert_eq!(
        e.to_string(),
        "offset 248: column `v`: null bit 2 set in a batch of 2 rows"
    );
    // An offset in the middle of `é`.
    let e = read_err(&patched(TINY_NOTE_OFFSET1, &1u32.to_le_bytes()));
    assert_eq!((e.kind, e.offset), (BinErrorKind::Corrupt, 277));
    assert!(e.message.contains("not a character boundary"), "{e}");
    // Text that is not UTF-8.
    let e = read_err(&patched(289, &[0xff]));
    assert_eq!((e.kind, e.offset), (BinErrorKind::Corrupt, 289));
    assert!(e.message.contains("not UTF-8"), "{e}");
    // A boolean byte that is neither 0 nor 1.
    let s = schema(vec![meta("ok", "field", "boolean", Physical::Bool, &[])]);
    let mut b = Batch::new(Arc::clone(&s));
    b.columns[0].values = Values::Bool(vec![true, false, true]);
    b.series = vec![0; 3];
    b.rows = 3;
    let mut bytes = write_file(&s, &[b], 0, None);
    let at = bytes.len() - 20 - 3 + 1;
    bytes[at] = 7;
    let e = read_err(&bytes);
    assert_eq!((e.kind, e.offset), (BinErrorKind::Corrupt, at as u64));
    assert!(e.message.contains("boolean byte 7 in row 1"), "{e}");
}

#[test]
fn trailer_and_trailing_bytes_are_checked() {
    let e = read_err(&patched(TINY_TRAILER, &3u64.to_le_bytes()));
    assert_eq!((e.kind, e.offset), (BinErrorKind::Corrupt, 312));
    assert!(e.message.contains("counts 3 rows in 1 batches"), "{e}");
    let mut b = tiny();
    b.push(0);
    let e = read_err(&b);
    assert_eq!((e.kind, e.offset), (BinErrorKind::Corrupt, 328));
}

#[test]
fn huge_lengths_do_not_allocate_ahead_of_the_data() {
    // A section length of 4 GiB and a batch of 4 billion rows: both just run out of file.
    let e = read_err(&patched(8, &u32::MAX.to_le_bytes()));
    assert_eq!((e.kind, e.offset), (BinErrorKind::Truncated, 12));
    let e = read_err(&patched(TINY_BATCH, &u32::MAX.to_le_bytes()));
    assert_eq!((e.kind, e.offset), (BinErrorKind::Truncated, 230));
}

#[test]
fn any_flipped_byte_is_an_error_or_a_file_never_a_panic() {
    let s = every_kind();
    let good = write_file(&s, &[batch(&s, 70, 1), batch(&s, 4, 2)], 3, Some((0, 2)));
    let header = good.len() - {
        let mut w = BinWriter::new(Vec::new(), &s, 3, Some((0, 2))).unwrap();
        w.write(&batch(&s, 70, 1)).unwrap();
        w.write(&batch(&s, 4, 2)).unwrap();
        w.finish().unwrap().len() - header_bytes(&s, 3, Some((0, 2))).unwrap().len()
    };
    for at in 0..good.len() {
        for flip in [0x01, 0x80, 0xff] {
            let mut b = good.clone();
            b[at] ^= flip;
            let r = read_file(&b);
            // The header is checksummed and the trailer counts everything: flips there are
            // always caught. Elsewhere a flip may land in a value and read back fine.
            if at < header || at >= good.len() - 16 {
                assert!(r.is_err(), "flip {flip:#x} at {at} went unnoticed");
            }
        }
    }
}

#[test]
fn errors_are_sticky() {
    let b = tiny();
    let mut r = BinReader::open(Cursor::new(&b[..300])).unwrap();
    let mut out = Batch::new(Arc::clone(r.schema()));
    let first = r.next_batch(&mut out).unwrap_err();
    assert_eq!(r.next_batch(&mut out).unwrap_err(), first);
}

#[test]
fn writer_refuses_bad_batches_and_the_file_stays_valid() {
    let s = every_kind();
    let good = batch(&s, 4, 1);
    let mut w = BinWriter::new(Vec::new(), &s, 0, None).unwrap();
    w.write(&good).unwrap();
    let refuse = |w: &mut BinWriter<Vec<u8>>, b: &Batch, msg: &str| {
        let e = w.write(b).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains(msg), "{e} (wanted {msg})");
    };
    let mut b = good.clone();
    b.series.pop();
    refuse(&mut w, &b, "3 series ids for 4 rows");
    let mut b = good.clone();
    b.columns.pop();
    refuse(&mut w, &b, "a batch of 6 columns for a schema of 7");
    let mut b = good.clone();
    b.columns[2].values = Values::Double(vec![0.0; 4]);
    refuse(&mut w, &b, "column `n`: Double values in a Long column");
    let mut b = good.clone();
    b.columns[6].values = Values::Timestamp(vec![0; 5]);
    refuse(&mut w, &b, "column `ts`: 5 values for 4 rows");
    let mut b = good.clone();
    b.columns[3].nulls.set(4);
    refuse(
        &mut w,
        &b,
        "column `x`: null bit 4 set in a batch of 4 rows",
    );
    let mut b = good.clone();
    b.columns[1].values = Values::Symbol(vec![0, 1, 2, 0]);
    refuse(
        &mut w,
        &b,
        "column `region`: row 2: symbol id 2 outside a dictionary of 2",
    );
    let mut b = good.clone();
    for (offsets, bytes, message) in [
        (
            vec![0, 1, 1, 1, 9],
            b"abc".to_vec(),
            "column `msg`: offset 4 (9) is past the end of 3 bytes of text",
        ),
        (vec![], vec![], "column `msg`: no offsets"),
        (
            vec![0, 1, 1, 1, 2],
            b"abc".to_vec(),
            "column `msg`: the last offset is 2 but the text is 3 bytes",
        ),
        (
            vec![0, 2, 1, 1, 3],
            b"abc".to_vec(),
            "column `msg`: offset 2 is 1, below the previous 2",
        ),
        (
            vec![0, 1, 1, 1, 2],
            vec![b'a', 0xff],
            "column `msg`: text is not UTF-8 (byte 1 of the text)",
        ),
    ] {
        b.columns[5].values = Values::Varchar { offsets, bytes };
        refuse(&mut w, &b, message);
    }
    let other = every_kind(); // equal dictionaries in another Arc are fine...
    let mut b = batch(&other, 2, 0);
    w.write(&b).unwrap();
    // ...different ones are not.
    let mut cols = other.columns.clone();
    cols[0] = meta("host", "series", "symbol", Physical::Symbol, &["z"]);
    b.schema = schema(cols);
    refuse(&mut w, &b, "column `host`: the batch's dictionary differs");
    // A null symbol row may hold any id.
    let mut b = good.clone();
    b.columns[1].values = Values::Symbol(vec![0, 99, 1, 0]);
    b.columns[1].nulls = Nulls::default();
    b.columns[1].nulls.set(1);
    w.write(&b).unwrap();
    assert_eq!((w.rows(), w.batches()), (10, 3));
    let (_, _, _, got) = read_file(&w.finish().unwrap()).unwrap();
    assert_eq!(got.len(), 3);
    assert_same_batch(&got[0], &good);
    assert_same_batch(&got[2], &b);
}

#[test]
fn writer_refuses_bad_schemas() {
    let s = every_kind();
    let e = BinWriter::new(Vec::new(), &s, 0, Some((4, 4)))
        .err()
        .unwrap();
    assert!(e.to_string().contains("shard 4 of 4"), "{e}");
    let mut bad = (*s).clone();
    bad.columns[0].dictionary = None;
    let e = BinWriter::new(Vec::new(), &bad, 0, None).err().unwrap();
    assert!(e.to_string().contains("`host` has no dictionary"), "{e}");
    let mut bad = (*s).clone();
    bad.timestamp = Some(7);
    assert!(BinWriter::new(Vec::new(), &bad, 0, None).is_err());
}

/// 10 symbol columns (the series key and 9 tags), 10 longs and a timestamp: TSBS cpu-only.
fn tsbs_schema() -> Arc<BatchSchema> {
    let hosts: Vec<String> = (0..4000).map(|i| format!("host_{i}")).collect();
    let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
    let mut cols = vec![meta(
        "hostname",
        "series",
        "symbol",
        Physical::Symbol,
        &hosts,
    )];
    for t in &TAGS[1..] {
        cols.push(meta(
            t,
            "tag",
            "symbol",
            Physical::Symbol,
            &["a", "b", "c", "d"],
        ));
    }
    for f in GAUGES {
        cols.push(meta(f, "field", "long", Physical::Long, &[]));
    }
    cols.push(meta(
        "timestamp",
        "timestamp",
        "timestamp",
        Physical::Timestamp,
        &[],
    ));
    schema(cols)
}

/// `rows` rows in epoch-major, series-minor order, starting at row `first`.
fn tsbs_batch(s: &Arc<BatchSchema>, b: &mut Batch, first: u64, rows: usize) {
    b.clear();
    let mut x = first.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for r in 0..rows as u64 {
        let row = first + r;
        let host = (row % 4000) as u32;
        b.series.push(host);
        for (c, col) in b.columns.iter_mut().enumerate() {
            match &mut col.values {
                Values::Symbol(v) if c == 0 => v.push(host),
                Values::Symbol(v) => v.push((host + c as u32) % 4),
                Values::Long(v) => {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    v.push((x % 101) as i64);
                }
                Values::Timestamp(v) => {
                    v.push(1_451_606_400_000_000_000 + (row / 4000) as i64 * 10_000_000_000)
                }
                _ => {}
            }
        }
    }
    b.rows = rows;
    let _ = s;
}

#[test]
fn tsbs_shaped_rows_cost_132_bytes_each() {
    let s = tsbs_schema();
    let header = header_bytes(&s, 0, None).unwrap().len();
    let mut b = Batch::new(Arc::clone(&s));
    tsbs_batch(&s, &mut b, 0, 100);
    let bytes = write_file(&s, &[b.clone(), b], 0, None);
    // Per row: series 4 + 10 symbols x 4 + 10 longs x 8 + timestamp 8. Per batch: row count
    // 4 + 21 null flags. Per file: header, end marker 4, trailer 16.
    assert_eq!(bytes.len(), header + 2 * (4 + 21 + 100 * 132) + 20);
}

/// cargo test --release --lib encode::bin::tests::throughput -- --ignored --nocapture
#[test]
#[ignore]
fn throughput() {
    use std::time::Instant;
    const ROWS: u64 = 1_000_000;
    const BATCH: usize = 10_000;
    let s = tsbs_schema();
    let mut b = Batch::new(Arc::clone(&s));
    let batches: Vec<Batch> = (0..ROWS / BATCH as u64)
        .map(|i| {
            tsbs_batch(&s, &mut b, i * BATCH as u64, BATCH);
            b.clone()
        })
        .collect();
    // Best of 5; the output buffer is reused so that page faults on fresh memory do not
    // count as encoding time.
    let read_all = |r: &mut dyn std::io::Read| {
        let mut r = BinReader::open(r).unwrap();
        let mut out = Batch::new(Arc::clone(r.schema()));
        let mut sum = 0i64;
        while r.next_batch(&mut out).unwrap() {
            if let Values::Long(v) = &out.columns[10].values {
                sum += v[0];
            }
        }
        assert_eq!(r.rows(), ROWS);
        std::hint::black_box(sum);
    };
    let (mut best_w, mut best_r) = (f64::MAX, f64::MAX);
    let mut file = Vec::with_capacity(140 * ROWS as usize);
    for _ in 0..5 {
        file.clear();
        let t = Instant::now();
        let mut w = BinWriter::new(file, &s, 1, None).unwrap();
        for b in &batches {
            w.write(b).unwrap();
        }
        file = w.finish().unwrap();
        best_w = best_w.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        read_all(&mut Cursor::new(&file[..]));
        best_r = best_r.min(t.elapsed().as_secs_f64());
    }
    // Through a file in the page cache, 64 KiB buffers.
    let path = std::env::temp_dir().join(format!("wlb-throughput-{}.wlb", std::process::id()));
    let (mut best_fw, mut best_fr) = (f64::MAX, f64::MAX);
    for _ in 0..3 {
        let t = Instant::now();
        let f = std::fs::File::create(&path).unwrap();
        let mut w = BinWriter::new(io::BufWriter::with_capacity(1 << 16, f), &s, 1, None).unwrap();
        for b in &batches {
            w.write(b).unwrap();
        }
        w.finish().unwrap().into_inner().unwrap();
        best_fw = best_fw.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let f = std::fs::File::open(&path).unwrap();
        read_all(&mut io::BufReader::with_capacity(1 << 16, f));
        best_fr = best_fr.min(t.elapsed().as_secs_f64());
    }
    std::fs::remove_file(&path).ok();
    if let Some(p) = std::env::var_os("WLB_OUT") {
        std::fs::write(p, &file).unwrap();
    }
    let mb = file.len() as f64 / 1e6;
    println!(
        "{ROWS} rows in {} batches, {} bytes, {:.2} bytes/row",
        batches.len(),
        file.len(),
        file.len() as f64 / ROWS as f64
    );
    for (what, t) in [
        ("write, memory", best_w),
        ("read, memory", best_r),
        ("write, file (page cache)", best_fw),
        ("read, file (page cache)", best_fr),
    ] {
        println!(
            "{what:24} {:7.1} ms {:6.0} MB/s {:6.2} M rows/s",
            t * 1e3,
            mb / t,
            ROWS as f64 / t / 1e6
        );
    }
}
