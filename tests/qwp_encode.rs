//! The QWP encoder checked by a decoder that is not ours: tests/fixtures/qwp/qwp_decode.py,
//! written from the protocol notes, strictly checks every message (payload length, dictionary
//! gaps, no trailing bytes) of a TSBS cpu-only stream encoded on one connection, and every value
//! it decodes must be the generator's.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use serde_json::Value as Json;
use wlrun::check::Options;
use wlrun::compile::{check_text, schema_plan};
use wlrun::encode::qwp::{Frame, QwpEncoder, QwpOptions};
use wlrun::gen::batch::{Batch, Values};
use wlrun::gen::Columnar;

#[path = "common/servers.rs"]
mod servers;

fn tsbs(hosts: u64, minutes: u64) -> wlrun::plan::SchemaPlan {
    let text = format!(
        "import \"std/tsbs/cpu-only.wl\" as tsbs (hosts = {hosts}, end = 2016-01-01T00:00:00Z + {minutes}m)\n\
         schema unused {{ rows 1 field a: long = 1 }}"
    );
    let out = check_text("t.wl", &text, &Options::default());
    let checked = out.checked.expect("the TSBS schema checks");
    schema_plan(&checked, Some("tsbs.cpu")).expect("tsbs.cpu lowers")
}

/// Decodes `messages` (one connection, in order) with qwp_decode.py and returns, per message,
/// its tables as JSON: `[{"table", "rows", "columns": [[name, type, values], ...]}]`.
fn python_decode(dir: &Path, messages: &[Vec<u8>]) -> Option<Vec<Json>> {
    let mut files = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let path = dir.join(format!("m{i:04}.hex"));
        let hex: String = m.iter().map(|b| format!("{b:02x}")).collect();
        std::fs::write(&path, hex).unwrap();
        files.push(path);
    }
    let decoder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qwp");
    // The decoder prints; this wrapper turns its printout into JSON without decoding anything
    // itself.
    let wrapper = r#"
import ast, contextlib, io, json, re, sys
sys.path.insert(0, sys.argv[1])
import qwp_decode
conn = []
out = []
for f in sys.argv[2:]:
    b = bytes.fromhex(open(f).read().strip())
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        qwp_decode.decode_ingress(b, conn)
    msg = []
    for line in buf.getvalue().splitlines():
        m = re.match(r"  table '(.*)' rows=(\d+) schema=(.*)$", line)
        if m:
            msg.append({"table": m.group(1), "rows": int(m.group(2)),
                        "schema": ast.literal_eval(m.group(3)), "columns": []})
            continue
        m = re.match(r"    (<designated ts>|\S+)\s+(\{.*\})$", line)
        if m:
            d = ast.literal_eval(m.group(2).replace("nan", "None"))
            msg[-1]["columns"].append([m.group(1), d.get("values"), d.get("null_rows")])
    out.append(msg)
print(json.dumps(out))
"#;
    let result = Command::new("python3")
        .arg("-c")
        .arg(wrapper)
        .arg(&decoder)
        .args(&files)
        .output();
    let output = match result {
        Ok(o) => o,
        Err(e) => {
            servers::missing(&format!("python3 ({e})"));
            return None;
        }
    };
    assert!(
        output.status.success(),
        "qwp_decode.py refused our messages:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: Json = serde_json::from_slice(&output.stdout).expect("the wrapper prints JSON");
    Some(json.as_array().unwrap().clone())
}

/// Every batch of the generator and the messages encoding them on one connection.
fn encode_all(
    hosts: u64,
    minutes: u64,
    batch_rows: usize,
    options: QwpOptions,
) -> (Vec<Batch>, Vec<Vec<u8>>, Vec<Frame>) {
    let plan = tsbs(hosts, minutes);
    let mut g = Columnar::new(&plan, 123, None, &|p| std::fs::read(p)).unwrap();
    let schema = g.schema();
    let mut renamed = (*schema).clone();
    renamed.table = "cpu".into();
    let mut enc = QwpEncoder::new(Arc::new(renamed), options).unwrap();
    let (mut batches, mut messages, mut all_frames) = (Vec::new(), Vec::new(), Vec::new());
    loop {
        let mut b = g.new_batch();
        if g.fill(&mut b, batch_rows) == 0 {
            break;
        }
        let (mut out, mut frames) = (Vec::new(), Vec::new());
        enc.encode(&b, &mut out, &mut frames).unwrap();
        let mut start = 0;
        for f in &frames {
            messages.push(out[start..f.end].to_vec());
            start = f.end;
        }
        all_frames.extend(frames);
        batches.push(b);
    }
    (batches, messages, all_frames)
}

/// The generator's value of `col` at `row`, as the decoder prints it.
fn expected(b: &Batch, col: usize, row: usize, designated_div: i64) -> Json {
    match &b.columns[col].values {
        Values::Long(v) => Json::from(v[row]),
        Values::Double(v) => Json::from(v[row]),
        Values::Bool(v) => Json::from(v[row]),
        Values::Symbol(_) | Values::Varchar { .. } => Json::from(b.text(col, row)),
        Values::Timestamp(v) => {
            let div = if b.schema.timestamp == Some(col) {
                designated_div
            } else {
                1000
            };
            Json::from(v[row].div_euclid(div))
        }
    }
}

fn check_against_batches(batches: &[Batch], frames: &[Frame], decoded: &[Json], div: i64) {
    assert_eq!(decoded.len(), frames.len());
    // Rows of all batches, in order, and the messages' rows in order: they must line up.
    let rows: Vec<(usize, usize)> = batches
        .iter()
        .enumerate()
        .flat_map(|(bi, b)| (0..b.rows).map(move |r| (bi, r)))
        .collect();
    let mut next = 0;
    for (k, (msg, f)) in decoded.iter().zip(frames).enumerate() {
        let tables = msg.as_array().unwrap();
        if f.rows == 0 {
            assert!(tables.is_empty(), "message {k}");
            continue;
        }
        assert_eq!(tables.len(), 1, "message {k}");
        let t = &tables[0];
        assert_eq!(t["table"], "cpu");
        assert_eq!(t["rows"].as_u64(), Some(f.rows), "message {k}");
        let schema = &batches[0].schema;
        let columns = t["columns"].as_array().unwrap();
        assert_eq!(columns.len(), schema.columns.len());
        for (ci, c) in columns.iter().enumerate() {
            let values = c[1].as_array().unwrap();
            assert!(c[2].as_array().unwrap().is_empty(), "TSBS has no nulls");
            for (i, v) in values.iter().enumerate() {
                let (bi, r) = rows[next + i];
                let want = expected(&batches[bi], ci, r, div);
                let same = match (v.as_f64(), want.as_f64()) {
                    (Some(a), Some(b)) => a == b,
                    _ => *v == want,
                };
                assert!(same, "message {k} column {} row {i}: {v} != {want}", c[0]);
            }
        }
        next += f.rows as usize;
    }
    assert_eq!(next, rows.len());
}

#[test]
fn python_decoder_reads_a_tsbs_stream_exactly() {
    let (batches, messages, frames) = encode_all(50, 30, 1000, QwpOptions::default());
    let dir = tempfile::tempdir().unwrap();
    let Some(decoded) = python_decode(dir.path(), &messages) else {
        return;
    };
    check_against_batches(&batches, &frames, &decoded, 1000);
    // Later messages carry no dictionary entries: hosts and tags were all in the first.
    let dict_entries = |m: &[u8]| {
        let mut r = wlrun::qwp::Reader::new(m);
        wlrun::qwp::read_header(&mut r).unwrap();
        r.varint().unwrap();
        r.varint().unwrap()
    };
    assert!(dict_entries(&messages[0]) > 50);
    assert!(messages[1..].iter().all(|m| dict_entries(m) == 0));
}

#[test]
fn python_decoder_reads_split_batches_and_nanosecond_timestamps() {
    // 4 KiB messages: each 1,000-row batch splits, and the 300 host names go ahead alone.
    let options = QwpOptions {
        max_message: 4 * 1024,
        designated_nanos: true,
    };
    let (batches, messages, frames) = encode_all(300, 5, 1000, options);
    assert!(frames[0].rows == 0, "a dictionary-only message first");
    assert!(messages.len() > batches.len() * 2);
    assert!(messages.iter().all(|m| m.len() <= options.max_message));
    let dir = tempfile::tempdir().unwrap();
    let Some(decoded) = python_decode(dir.path(), &messages) else {
        return;
    };
    check_against_batches(&batches, &frames, &decoded, 1);
}
