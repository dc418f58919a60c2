//! What an ingest phase sends and where each worker's sender takes it from: the rows (a
//! schema's generated rows or a file's, sharded per worker), and the chunks, from a producer
//! thread encoding ahead of the sender or, with `replay`, all encoded before the clock starts.

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use crate::driver::{Chunk, Encoding};
use crate::exec::producer::{self, Produced};
use crate::exec::RunEnv;
use crate::gen::batch::BatchSchema;
use crate::gen::Columnar;
use crate::plan::{IngestPhase, RowSource, SchemaPlan};
use crate::value::Value;

/// Where a worker's sender takes its chunks from.
pub(super) enum Feed {
    /// A producer thread generating and encoding ahead of the sender.
    Live(producer::Producer),
    /// `replay`: every chunk encoded before the clock started.
    Replay {
        chunks: std::vec::IntoIter<Chunk>,
        schema: Arc<BatchSchema>,
    },
}

impl Feed {
    pub(super) fn schema(&self) -> Arc<BatchSchema> {
        match self {
            Feed::Live(p) => p.schema.clone(),
            Feed::Replay { schema, .. } => schema.clone(),
        }
    }

    pub(super) async fn next(&mut self) -> Option<Produced> {
        match self {
            Feed::Live(p) => p.chunks.recv().await,
            Feed::Replay { chunks, .. } => chunks.next().map(Produced::Chunk),
        }
    }

    /// Hands a sent chunk back to be refilled (replayed chunks are simply dropped).
    pub(super) async fn give_back(&mut self, chunk: Chunk) {
        if let Feed::Live(p) = self {
            // Fails only once the producer has finished: chunks still queued are sent all
            // the same.
            let _ = p.recycle.send(chunk).await;
        }
    }

    /// Ends the producer: its next send or recycle wait fails, and its thread is joined.
    pub(super) async fn close(self) {
        if let Feed::Live(p) = self {
            let producer::Producer {
                chunks,
                recycle,
                thread,
                ..
            } = p;
            drop(chunks);
            drop(recycle);
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }
}

/// What an ingest phase loads: a schema's generated rows, or a file's.
pub(super) enum Rows<'p> {
    Schema(&'p SchemaPlan),
    File {
        path: PathBuf,
        schema: Arc<BatchSchema>,
        /// The reader the schema was read from, for the one worker that reads the whole
        /// file: a FIFO (generated data piped in) can be opened and read only once.
        first: Mutex<Option<crate::input::FileReader>>,
    },
}

impl<'p> Rows<'p> {
    pub(super) fn of(env: &RunEnv, phase: &'p IngestPhase) -> Result<Rows<'p>, String> {
        Ok(match &phase.source {
            RowSource::Schema(s) => Rows::Schema(s),
            RowSource::File { path, .. } => {
                let full = env.base_dir.join(path);
                let reader = crate::input::FileReader::open(&full, None, phase.rows_expected)?;
                Rows::File {
                    path: full,
                    schema: reader.schema(),
                    first: Mutex::new(Some(reader)),
                }
            }
        })
    }

    /// The column layout, for the table's DDL and the samples-per-row of a metric count.
    pub(super) fn layout(&self) -> BatchSchema {
        match self {
            Rows::Schema(s) => BatchSchema::from_plan(s),
            Rows::File { schema, .. } => (**schema).clone(),
        }
    }

    /// The end of the rows' time range (exclusive), in Unix milliseconds, when known.
    pub(super) fn end_ms(&self) -> Option<i64> {
        let Rows::Schema(s) = self else {
            return None;
        };
        let t = s.time.as_ref()?;
        let (Value::Timestamp(start), Value::Duration(step)) = (&t.start, &t.step) else {
            return None;
        };
        Some(
            start
                .saturating_add(step.saturating_mul(t.count as i64))
                .div_euclid(1_000_000),
        )
    }

    /// The rows worker `w` of `n` sends: its shard of the series (of the file's first tag).
    pub(super) fn source(
        &self,
        env: &RunEnv,
        phase: &IngestPhase,
        w: u64,
        n: u64,
    ) -> Result<producer::RowSource, String> {
        let shard = (n > 1).then_some((w, n));
        match self {
            Rows::Schema(schema) => {
                let dir = env.base_dir.clone();
                let read = move |p: &str| crate::source::read_data(&dir, p);
                // `limit N`: the first N rows in the generator's order (timestamp by
                // timestamp, series by series), which every shard cuts at the same global row.
                let limited;
                let schema = match phase.rows_expected {
                    Some(n) if n < schema.rows => {
                        limited = SchemaPlan {
                            rows: n,
                            ..(*schema).clone()
                        };
                        &limited
                    }
                    _ => *schema,
                };
                Columnar::new(schema, env.seed, shard, &read)
                    .map(|g| producer::RowSource::Generated(Box::new(g)))
                    .map_err(|e| format!("generator: {e}"))
            }
            Rows::File { path, first, .. } => {
                let first = first.lock().unwrap_or_else(|e| e.into_inner()).take();
                if let (Some(reader), None) = (first, shard) {
                    return Ok(producer::RowSource::File(Box::new(reader)));
                }
                // Each worker reads its own shard from its own open of the file, and a second
                // pass (`calibrate`) opens it again, which a stream cannot give: the open
                // would wait for a writer that is gone.
                if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
                    return Err(match shard {
                        Some(_) => format!(
                            "{} is not a regular file (a FIFO?): it can feed one worker, and \
                             this ingest has {n}",
                            path.display()
                        ),
                        None => format!(
                            "{} is not a regular file (a FIFO?): it can be read once, and \
                             this ingest reads it again",
                            path.display()
                        ),
                    });
                }
                crate::input::FileReader::open(path, shard, phase.rows_expected)
                    .map(|r| producer::RowSource::File(Box::new(r)))
            }
        }
    }
}

/// `replay`: every worker's chunks, generated and encoded in parallel (a thread per worker)
/// before anything is sent, within `budget` bytes in all.
pub(super) async fn preencode_all(
    env: &RunEnv,
    phase: &IngestPhase,
    sources: Vec<producer::RowSource>,
    encoding: Encoding,
    budget: u64,
) -> Result<Vec<Feed>, String> {
    let used = Arc::new(AtomicU64::new(0));
    let mut jobs = Vec::new();
    for rows in sources {
        let schema = rows.schema();
        let used = used.clone();
        let stop = env.stop.clone();
        let batch_rows = phase.batch_rows as usize;
        let expected = phase.rows_expected;
        let table = phase.table.clone();
        jobs.push((
            schema,
            tokio::task::spawn_blocking(move || {
                producer::preencode(
                    rows, encoding, &table, batch_rows, budget, &used, expected, &stop,
                )
            }),
        ));
    }
    let mut feeds = Vec::new();
    let mut failure = None;
    for (schema, job) in jobs {
        match job.await {
            Ok(Ok(chunks)) => feeds.push(Feed::Replay {
                chunks: chunks.into_iter(),
                schema,
            }),
            Ok(Err(e)) => failure = failure.or(Some(e)),
            Err(e) => failure = failure.or(Some(format!("an encoding thread failed: {e}"))),
        }
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(feeds),
    }
}
