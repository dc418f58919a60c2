//! `cargo bench --bench qwp`: QWP ingestion, medians of interleaved runs.
//!
//! - encode: TSBS cpu-only (4,000 hosts) from column batches of 10,000 rows into QWP
//!   messages on one core, with the batches generated beforehand, so only the encoder is
//!   timed (target: 20 M rows/s; QuestDB's Go client encodes about 1.1 M rows/s per core). The
//!   same batches through the ILP encoder give the bytes-per-row ratio (the reference
//!   write-up: ~97 B/row QWP against ~347 B/row ILP) and the speed ratio;
//! - send: the same rows pre-encoded (`replay`) and sent by one worker to a WebSocket server
//!   on 127.0.0.1 (a thread of this process, so on the other core) that acknowledges every
//!   message, with `ack per_batch` (target 5 M rows/s) and `ack publish`.
//!
//! `WLRUN_BENCH_RUNS` (default 5) and `WLRUN_BENCH_MINUTES` (default 240: 5,760,000 rows) change
//! the size; `WLRUN_BENCH_ENCODE_ONLY=1` stops after the encoders (for profiling).

#[path = "common/run.rs"]
mod run;

#[path = "common/stats.rs"]
mod stats;
#[path = "common/tsbs.rs"]
mod tsbs;
use stats::median;

use std::time::Instant;

use futures_util::{SinkExt as _, StreamExt as _};
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::Message;
use wlrun::check::Options;
use wlrun::compile::{check_text, schema_plan};
use wlrun::encode::qwp::{QwpEncoder, QwpOptions};
use wlrun::encode::IlpEncoder;
use wlrun::gen::batch::Batch;
use wlrun::gen::Columnar;
use wlrun::report::PhaseReport;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn batches(minutes: usize) -> Vec<Batch> {
    let text = tsbs::cpu_4000_hosts(minutes as u64);
    let out = check_text("bench.wl", &text, &Options::default());
    let checked = out.checked.expect("checks");
    let plan = schema_plan(&checked, Some("tsbs.cpu")).expect("schema");
    let mut g = Columnar::new(&plan, checked.seed, None, &|p| std::fs::read(p)).expect("gen");
    let mut all = Vec::new();
    loop {
        let mut b = g.new_batch();
        if g.fill(&mut b, 10_000) == 0 {
            return all;
        }
        all.push(b);
    }
}

/// Rows/s and bytes/row of one pass of the QWP encoder over `batches`, on a new connection.
fn encode_qwp(batches: &[Batch], out: &mut Vec<u8>) -> (f64, f64) {
    let mut enc = QwpEncoder::new(batches[0].schema.clone(), QwpOptions::default()).unwrap();
    let mut frames = Vec::new();
    let (mut rows, mut bytes) = (0usize, 0usize);
    let started = Instant::now();
    for b in batches {
        out.clear();
        frames.clear();
        enc.encode(b, out, &mut frames).expect("encodes");
        rows += b.rows;
        bytes += out.len();
    }
    let secs = started.elapsed().as_secs_f64();
    (rows as f64 / secs, bytes as f64 / rows as f64)
}

fn encode_ilp(batches: &[Batch], out: &mut Vec<u8>) -> (f64, f64) {
    let mut enc = IlpEncoder::new(batches[0].schema.clone()).unwrap();
    let (mut rows, mut bytes) = (0usize, 0usize);
    let started = Instant::now();
    for b in batches {
        out.clear();
        enc.encode(b, out);
        rows += b.rows;
        bytes += out.len();
    }
    let secs = started.elapsed().as_secs_f64();
    (rows as f64 / secs, bytes as f64 / rows as f64)
}

/// A QWP ingest server on 127.0.0.1, on its own thread: it acknowledges every message at
/// once (cumulative OK, no table entries) and answers PINGs, decoding nothing.
fn acking_server() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let _ = tcp.set_nodelay(true);
                tokio::spawn(async move {
                    #[allow(clippy::result_large_err)] // tungstenite's callback signature
                    let answer = |_: &Request, mut resp: Response| {
                        let h = resp.headers_mut();
                        h.insert("X-QWP-Version", HeaderValue::from_static("1"));
                        h.insert("X-QWP-Max-Batch-Size", HeaderValue::from_static("2097138"));
                        Ok(resp)
                    };
                    let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(tcp, answer).await else {
                        return;
                    };
                    let mut seq: i64 = 0;
                    while let Some(Ok(m)) = ws.next().await {
                        match m {
                            Message::Binary(_) => {
                                let mut ok = vec![0u8];
                                ok.extend_from_slice(&seq.to_le_bytes());
                                ok.extend_from_slice(&[0, 0]);
                                seq += 1;
                                if ws.send(Message::Binary(ok.into())).await.is_err() {
                                    return;
                                }
                            }
                            Message::Close(_) => return,
                            _ => {}
                        }
                    }
                });
            }
        });
    });
    port
}

/// Send rate, acknowledged rows and socket bytes/row of one replayed QWP ingest.
fn send_rate(port: u16, minutes: usize, ack: &str) -> (f64, u64, f64) {
    let text = format!(
        "{}target t {{ qwp \"ws://127.0.0.1:{port}\" }}\n\
         ingest load {{ into t via qwp table \"cpu\" rows tsbs.cpu batch 10_000 rows workers 1 ack {ack} replay }}\n",
        tsbs::cpu_4000_hosts(minutes as u64)
    );
    let report = run::run_text(&text);
    match &report.cells[0].phases[0] {
        PhaseReport::Ingest(r) => {
            assert!(
                r.failures.is_empty(),
                "the bench phase failed: {:?}",
                r.failures
            );
            (
                r.send_rows_per_s
                    .expect("the bench phase runs long enough to be a rate"),
                r.rows_acked.unwrap_or(0),
                r.socket_bytes_per_row.unwrap_or(0.0),
            )
        }
        PhaseReport::NotRun { reason, .. } => panic!("not run: {reason}"),
        _ => panic!("the bench workload has only an ingest phase"),
    }
}

fn main() {
    let runs = env_usize("WLRUN_BENCH_RUNS", 5);
    // 240 minutes (5,760,000 rows): replayed at 15-18 M rows/s, 480,000 rows took under the
    // 0.1 s a rate needs (`report::MIN_RATE_SPAN_S`), and the send had no rate to report.
    let minutes = env_usize("WLRUN_BENCH_MINUTES", 240);
    let all = batches(minutes);
    let rows: usize = all.iter().map(|b| b.rows).sum();
    println!("QWP bench: TSBS cpu-only, 4,000 hosts, {rows} rows in batches of 10,000; {runs} interleaved runs, medians");

    let mut out = Vec::with_capacity(4 << 20);
    let (mut qwp, mut ilp) = (Vec::new(), Vec::new());
    let (mut qwp_bytes, mut ilp_bytes) = (0.0, 0.0);
    for _ in 0..runs {
        let (r, b) = encode_qwp(&all, &mut out);
        qwp.push(r);
        qwp_bytes = b;
        let (r, b) = encode_ilp(&all, &mut out);
        ilp.push(r);
        ilp_bytes = b;
    }
    let (q, i) = (median(qwp), median(ilp));
    println!(
        "encode  QWP {:>7.2} M rows/s  {qwp_bytes:>6.1} B/row   (target 20 M rows/s: {:.2}x; Go client ~1.1 M rows/s/core: {:.1}x)",
        q / 1e6,
        q / 20e6,
        q / 1.1e6
    );
    println!(
        "        ILP {:>7.2} M rows/s  {ilp_bytes:>6.1} B/row   (QWP/ILP: {:.2}x the speed, {:.2}x the bytes)",
        i / 1e6,
        q / i,
        qwp_bytes / ilp_bytes
    );

    if std::env::var_os("WLRUN_BENCH_ENCODE_ONLY").is_some() {
        return;
    }
    let port = acking_server();
    let (mut per_batch, mut publish) = (Vec::new(), Vec::new());
    let (mut acked, mut socket) = (0, 0.0);
    for _ in 0..runs {
        let (r, a, s) = send_rate(port, minutes, "per_batch");
        per_batch.push(r);
        (acked, socket) = (a, s);
        assert_eq!(a as usize, rows, "every row acknowledged");
        let (r, a, _) = send_rate(port, minutes, "publish");
        assert_eq!(a as usize, rows, "every row acknowledged");
        publish.push(r);
    }
    let (pb, pu) = (median(per_batch), median(publish));
    println!(
        "send    per_batch {:>6.2} M rows/s  (target 5 M rows/s: {:.2}x), {acked} rows acked, {socket:.1} B/row on the socket",
        pb / 1e6,
        pb / 5e6
    );
    println!(
        "        publish   {:>6.2} M rows/s  ({:.2}x per_batch)",
        pu / 1e6,
        pu / pb
    );
}
