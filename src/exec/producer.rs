//! The producer half of an ingest worker: a thread that generates its shard of the rows and
//! encodes them for the worker's driver, ahead of the sender. Chunks travel to the sender and
//! come back empty to be refilled, so once the buffers have grown nothing is allocated.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::mpsc;

use crate::driver::pg::CopyEncoder;
use crate::driver::{Chunk, Encoding};
use crate::encode::{IlpEncoder, QwpEncoder};
use crate::gen::batch::{Batch, BatchSchema};
use crate::gen::Columnar;

/// Chunks in flight per worker: one being sent while the other is filled. A third buffer
/// measured slower (null sink: 0.76x against 0.85x of the plain generate+encode loop): the
/// producer then writes into a buffer that has left the cache.
pub const IN_FLIGHT: usize = 2;

/// Rows generated and encoded at a time into a byte chunk: a 10,000-row batch of TSBS rows
/// is ~3.5 MB of ILP, past the L2 cache, and encoding it in one piece runs at two thirds of
/// the speed of pieces this size.
const SUB_BATCH: usize = 2048;

enum Encoder {
    Ilp(Box<IlpEncoder>),
    Copy(Box<CopyEncoder>),
    /// Columnar: a whole batch is generated, then encoded column by column into one message
    /// (or more, past the message cap).
    Qwp(Box<QwpEncoder>),
    Rows,
}

impl Encoder {
    /// An encoder writing into `table`, which may differ from the schema's own (`into ...
    /// table "x"`, or a file's measurement): line protocol names the table in every line.
    fn new(encoding: Encoding, schema: Arc<BatchSchema>, table: &str) -> Result<Encoder, String> {
        let schema = if schema.table == table {
            schema
        } else {
            let mut renamed = (*schema).clone();
            renamed.table = table.to_string();
            Arc::new(renamed)
        };
        Ok(match encoding {
            Encoding::Ilp => Encoder::Ilp(Box::new(IlpEncoder::new(schema)?)),
            Encoding::PgCopy => Encoder::Copy(Box::new(CopyEncoder::new(schema)?)),
            Encoding::Qwp(options) => Encoder::Qwp(Box::new(QwpEncoder::new(schema, options)?)),
            Encoding::Rows => Encoder::Rows,
        })
    }

    fn begin(&mut self, out: &mut Vec<u8>) {
        if let Encoder::Copy(_) = self {
            CopyEncoder::begin(out);
        }
    }

    /// Appends `batch` to `out`; returns the rows the encoding carries.
    fn append(&mut self, batch: &Batch, out: &mut Vec<u8>) -> Result<u64, String> {
        Ok(match self {
            Encoder::Ilp(e) => e.encode(batch, out) as u64,
            Encoder::Copy(e) => e.tuples(batch, out)? as u64,
            Encoder::Qwp(_) | Encoder::Rows => batch.rows as u64,
        })
    }

    fn end(&mut self, out: &mut Vec<u8>) {
        if let Encoder::Copy(_) = self {
            CopyEncoder::end(out);
        }
    }
}

/// Where a worker's rows come from: the generator (its shard of the series) or a file.
pub enum RowSource {
    Generated(Box<Columnar>),
    File(Box<crate::input::FileReader>),
}

impl RowSource {
    pub fn schema(&self) -> Arc<BatchSchema> {
        match self {
            RowSource::Generated(g) => g.schema(),
            RowSource::File(f) => f.schema(),
        }
    }

    fn new_batch(&self) -> Batch {
        Batch::new(self.schema())
    }

    fn fill(&mut self, batch: &mut Batch, max_rows: usize) -> Result<usize, String> {
        match self {
            RowSource::Generated(g) => Ok(g.fill(batch, max_rows)),
            RowSource::File(f) => f.fill(batch, max_rows),
        }
    }
}

/// Fills `chunk` with up to `batch_rows` next rows; `Ok(false)` at the end of the rows, or when
/// `stop` is set between two pieces: a stop abandons the batch being made rather than
/// finishing it (100,000-row batches in 200 workers took seconds of CPU and a gigabyte after
/// a Ctrl-C). A columnar batch (QWP, `Rows`) is generated in pieces too (`fill_columnar`).
fn fill(
    generator: &mut RowSource,
    encoder: &mut Encoder,
    sub: &mut Batch,
    chunk: &mut Chunk,
    (batch_rows, stop): (usize, &AtomicBool),
) -> Result<bool, String> {
    chunk.bytes.clear();
    chunk.frames.clear();
    chunk.rows = 0;
    chunk.generated = 0;
    match encoder {
        Encoder::Rows => {
            let Some(n) = fill_columnar(generator, &mut chunk.batch, (batch_rows, stop))? else {
                return Ok(false);
            };
            chunk.rows = n as u64;
            chunk.generated = n as u64;
            return Ok(n > 0);
        }
        Encoder::Qwp(e) => {
            let Some(n) = fill_columnar(generator, &mut chunk.batch, (batch_rows, stop))? else {
                return Ok(false);
            };
            chunk.generated = n as u64;
            chunk.rows = e.encode(&chunk.batch, &mut chunk.bytes, &mut chunk.frames)?;
            return Ok(n > 0);
        }
        _ => {}
    }
    encoder.begin(&mut chunk.bytes);
    while (chunk.generated as usize) < batch_rows {
        if stop.load(Ordering::Relaxed) {
            return Ok(false);
        }
        let want = SUB_BATCH.min(batch_rows - chunk.generated as usize);
        let n = generator.fill(sub, want)?;
        if n == 0 {
            break;
        }
        chunk.generated += n as u64;
        chunk.rows += encoder.append(sub, &mut chunk.bytes)?;
    }
    encoder.end(&mut chunk.bytes);
    Ok(chunk.generated > 0)
}

/// Fills a columnar batch (QWP, `Rows`) with up to `batch_rows` rows, generated in pieces so
/// that a stop is seen between them as the line encodings see it; `None` when a stop abandoned
/// the batch, before it was encoded. Rows from a file are read whole: reading is not what holds
/// a stop up.
fn fill_columnar(
    generator: &mut RowSource,
    batch: &mut Batch,
    (batch_rows, stop): (usize, &AtomicBool),
) -> Result<Option<usize>, String> {
    let RowSource::Generated(g) = generator else {
        return generator.fill(batch, batch_rows).map(Some);
    };
    batch.clear();
    while batch.rows < batch_rows {
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let before = batch.rows;
        if g.extend(batch, (before + SUB_BATCH).min(batch_rows)) == before {
            break;
        }
    }
    Ok((!stop.load(Ordering::Relaxed)).then_some(batch.rows))
}

/// Memory a chunk holds: its bytes, or for the `Rows` encoding its batch's values.
fn chunk_bytes(chunk: &Chunk) -> u64 {
    if !chunk.bytes.is_empty() {
        return chunk.bytes.capacity() as u64;
    }
    chunk
        .batch
        .columns
        .iter()
        .map(|c| match &c.values {
            crate::gen::batch::Values::Long(v) | crate::gen::batch::Values::Timestamp(v) => {
                v.capacity() * 8
            }
            crate::gen::batch::Values::Double(v) => v.capacity() * 8,
            crate::gen::batch::Values::Bool(v) => v.capacity(),
            crate::gen::batch::Values::Symbol(v) => v.capacity() * 4,
            crate::gen::batch::Values::Varchar { offsets, bytes } => {
                offsets.capacity() * 4 + bytes.capacity()
            }
        } as u64)
        .sum()
}

/// `27.3 KiB`, `1.5 GiB`: sizes in messages, rounded.
fn human_size(bytes: u64) -> String {
    let units = [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (name, size) in units {
        if bytes >= size {
            let v = bytes as f64 / size as f64;
            return if v.fract() == 0.0 {
                format!("{v:.0} {name}")
            } else {
                format!("{v:.1} {name}")
            };
        }
    }
    format!("{bytes} B")
}

/// `replay`: generates and encodes every chunk of one worker before anything is sent.
/// `used` is the memory of every worker's chunks so far; past `budget` (or when the first
/// chunk shows that `rows_expected` would not fit) it stops with the reason.
#[allow(clippy::too_many_arguments)]
pub fn preencode(
    mut rows: RowSource,
    encoding: Encoding,
    table: &str,
    batch_rows: usize,
    budget: u64,
    used: &AtomicU64,
    rows_expected: Option<u64>,
    stop: &AtomicBool,
) -> Result<Vec<Chunk>, String> {
    let mut encoder = Encoder::new(encoding, rows.schema(), table)?;
    let mut sub = rows.new_batch();
    let mut chunks = Vec::new();
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(chunks);
        }
        let mut chunk = Chunk::new(rows.new_batch());
        if !fill(
            &mut rows,
            &mut encoder,
            &mut sub,
            &mut chunk,
            (batch_rows, stop),
        )? {
            return Ok(chunks);
        }
        chunk.bytes.shrink_to_fit();
        if !chunk.bytes.is_empty() {
            // Only the bytes are replayed: the generated values need not stay in memory.
            chunk.batch = Batch::new(chunk.batch.schema.clone());
        }
        let size = chunk_bytes(&chunk);
        let total = used.fetch_add(size, Ordering::Relaxed) + size;
        let fmt = human_size;
        if let (true, Some(expected)) = (chunks.is_empty(), rows_expected) {
            let estimate = size as f64 / chunk.generated.max(1) as f64 * expected as f64;
            if estimate > budget as f64 {
                return Err(format!(
                    "the cell's {expected} rows need about {} pre-encoded, over the replay budget of {}; raise it (`replay budget SIZE`) or load fewer rows",
                    fmt(estimate as u64),
                    fmt(budget)
                ));
            }
        }
        if total > budget {
            return Err(format!(
                "the pre-encoded batches passed the replay budget of {}; raise it (`replay budget SIZE`) or load fewer rows",
                fmt(budget)
            ));
        }
        chunks.push(chunk);
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
    mut generator: RowSource,
    encoding: Encoding,
    table: &str,
    batch_rows: usize,
    stop: Arc<AtomicBool>,
    name: String,
) -> Result<Producer, String> {
    let schema = generator.schema();
    let mut encoder = Encoder::new(encoding, schema.clone(), table)?;
    let (tx, rx) = mpsc::channel::<Produced>(IN_FLIGHT);
    let (recycle_tx, mut recycle_rx) = mpsc::channel::<Chunk>(IN_FLIGHT);
    for _ in 0..IN_FLIGHT {
        // Cannot fail: the channel has room for exactly these.
        let _ = recycle_tx.try_send(Chunk::new(generator.new_batch()));
    }
    let thread = std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            // A bug in generation or encoding must end this worker with an error in the
            // report, not with a silently closed channel.
            let report = tx.clone();
            let run = std::panic::AssertUnwindSafe(move || {
                let mut sub = generator.new_batch();
                while !stop.load(Ordering::Relaxed) {
                    let Some(mut chunk) = recycle_rx.blocking_recv() else {
                        return;
                    };
                    let produced = match fill(
                        &mut generator,
                        &mut encoder,
                        &mut sub,
                        &mut chunk,
                        (batch_rows, &stop),
                    ) {
                        Ok(false) => return,
                        Ok(true) => Produced::Chunk(chunk),
                        Err(e) => Produced::Failed(e),
                    };
                    let failed = matches!(produced, Produced::Failed(_));
                    if tx.blocking_send(produced).is_err() || failed {
                        return;
                    }
                }
            });
            if let Err(panic) = std::panic::catch_unwind(run) {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                let _ = report.blocking_send(Produced::Failed(format!(
                    "internal error while generating or encoding (a wlrun bug, please report it): {what}"
                )));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::qwp::QwpOptions;

    fn generated(rows: u64) -> RowSource {
        let text = format!("schema s {{ rows {rows}  field a: long = uniform(0, 9)  field b: double = uniform(0.0, 1.0) }}");
        let out = crate::compile::check_text("t.wl", &text, &Default::default());
        let checked = out
            .checked
            .unwrap_or_else(|| panic!("{:?}", out.diagnostics));
        let plan = crate::compile::schema_plan(&checked, Some("s")).unwrap();
        RowSource::Generated(Box::new(
            Columnar::new(&plan, 1, None, &|p| std::fs::read(p)).unwrap(),
        ))
    }

    /// A stop abandons a QWP batch before it is generated whole (100,000-row batches in 200
    /// workers kept a stopped run busy for seconds), as it does a line-protocol one.
    #[test]
    fn a_stop_abandons_a_columnar_batch_for_every_encoding() {
        for encoding in [
            Encoding::Qwp(QwpOptions::default()),
            Encoding::Ilp,
            Encoding::Rows,
        ] {
            let mut rows = generated(50_000);
            let mut encoder = Encoder::new(encoding, rows.schema(), "s").unwrap();
            let mut sub = rows.new_batch();
            let mut chunk = Chunk::new(rows.new_batch());
            let going = AtomicBool::new(false);
            assert!(fill(
                &mut rows,
                &mut encoder,
                &mut sub,
                &mut chunk,
                (20_000, &going)
            )
            .unwrap());
            assert_eq!(chunk.generated, 20_000);
            let stopped = AtomicBool::new(true);
            let more = fill(
                &mut rows,
                &mut encoder,
                &mut sub,
                &mut chunk,
                (20_000, &stopped),
            );
            assert!(!more.unwrap(), "a stopped producer hands on no batch");
            assert_eq!(chunk.generated, 0, "nothing generated after the stop");
        }
    }
}
