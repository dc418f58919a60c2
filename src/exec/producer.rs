//! The producer half of an ingest worker: a thread that generates its shard of the rows and
//! encodes them for the worker's driver, ahead of the sender. Chunks travel to the sender and
//! come back empty to be refilled, so once the buffers have grown nothing is allocated.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::mpsc;

use crate::driver::pg::CopyEncoder;
use crate::driver::{Chunk, Encoding};
use crate::encode::IlpEncoder;
use crate::gen::batch::BatchSchema;
use crate::gen::Columnar;

/// Chunks in flight per worker: one being sent, one being filled, one spare.
pub const IN_FLIGHT: usize = 3;

enum Encoder {
    Ilp(Box<IlpEncoder>),
    Copy(Box<CopyEncoder>),
    Rows,
}

impl Encoder {
    fn new(encoding: Encoding, schema: Arc<BatchSchema>) -> Result<Encoder, String> {
        Ok(match encoding {
            Encoding::Ilp => Encoder::Ilp(Box::new(IlpEncoder::new(schema)?)),
            Encoding::PgCopy => Encoder::Copy(Box::new(CopyEncoder::new(schema)?)),
            Encoding::Rows => Encoder::Rows,
        })
    }

    /// Fills `chunk.bytes` from `chunk.batch`; returns the rows the encoding carries.
    fn encode(&mut self, chunk: &mut Chunk) -> Result<u64, String> {
        chunk.bytes.clear();
        Ok(match self {
            Encoder::Ilp(e) => e.encode(&chunk.batch, &mut chunk.bytes) as u64,
            Encoder::Copy(e) => e.encode(&chunk.batch, &mut chunk.bytes)? as u64,
            Encoder::Rows => chunk.batch.rows as u64,
        })
    }
}

/// What the producer hands the sender.
pub enum Produced {
    Chunk(Chunk),
    /// Generation or encoding failed; nothing more follows.
    Failed(String),
}

pub struct Producer {
    pub chunks: mpsc::Receiver<Produced>,
    pub recycle: mpsc::Sender<Chunk>,
    pub thread: JoinHandle<()>,
    pub schema: Arc<BatchSchema>,
}

/// Starts the producer thread of one worker: `generator` yields the worker's series only.
pub fn start(
    mut generator: Columnar,
    encoding: Encoding,
    batch_rows: usize,
    stop: Arc<AtomicBool>,
    name: String,
) -> Result<Producer, String> {
    let schema = generator.schema();
    let mut encoder = Encoder::new(encoding, schema.clone())?;
    let (tx, rx) = mpsc::channel::<Produced>(IN_FLIGHT);
    let (recycle_tx, mut recycle_rx) = mpsc::channel::<Chunk>(IN_FLIGHT);
    for _ in 0..IN_FLIGHT {
        // Cannot fail: the channel has room for exactly these.
        let _ = recycle_tx.try_send(Chunk {
            rows: 0,
            bytes: Vec::new(),
            batch: generator.new_batch(),
        });
    }
    let thread = std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let Some(mut chunk) = recycle_rx.blocking_recv() else {
                    return;
                };
                if generator.fill(&mut chunk.batch, batch_rows) == 0 {
                    return;
                }
                let produced = match encoder.encode(&mut chunk) {
                    Ok(rows) => {
                        chunk.rows = rows;
                        Produced::Chunk(chunk)
                    }
                    Err(e) => Produced::Failed(e),
                };
                let failed = matches!(produced, Produced::Failed(_));
                if tx.blocking_send(produced).is_err() || failed {
                    return;
                }
            }
        })
        .map_err(|e| format!("cannot start a generator thread: {e}"))?;
    Ok(Producer {
        chunks: rx,
        recycle: recycle_tx,
        thread,
        schema,
    })
}
