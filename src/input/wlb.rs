//! `WLB1` files through `encode::bin::BinReader`: its batches already have the right layout, so
//! reading is copying rows into the caller's batch, whole ranges of them when nothing is
//! filtered, runs of kept rows when sharding.

use std::fmt::Write as _;
use std::sync::Arc;

use super::{append_rows, Input, Opts, Shard};
use crate::encode::BinReader;
use crate::gen::batch::{Batch, BatchSchema, Values};
use crate::gen::Cell;

pub(super) struct WlbSource {
    reader: BinReader<Input>,
    opts: Opts,
    schema: Arc<BatchSchema>,
    /// The file's current batch and the next row of it to look at.
    src: Batch,
    pos: usize,
    /// Rows of the file passed so far.
    rows: u64,
    /// When sharding on a dictionary column: the shard of each dictionary id.
    symbol_shards: Vec<u64>,
    /// Text of a non-text series key, reused.
    key: String,
}

impl WlbSource {
    pub(super) fn open(input: Input, opts: Opts) -> Result<WlbSource, String> {
        let reader = BinReader::open(input).map_err(|e| format!("{}: {e}", opts.name))?;
        let schema = Arc::clone(reader.schema());
        let symbol_shards = match (opts.route, schema.series_key) {
            (Some(shard), Some(k)) => schema.columns[k]
                .dictionary
                .as_ref()
                .map(|d| d.values.iter().map(|v| shard.of(v.as_bytes())).collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        Ok(WlbSource {
            reader,
            opts,
            src: Batch::new(Arc::clone(&schema)),
            schema,
            pos: 0,
            rows: 0,
            symbol_shards,
            key: String::new(),
        })
    }

    pub(super) fn schema(&self) -> Arc<BatchSchema> {
        Arc::clone(&self.schema)
    }

    pub(super) fn rows_read(&self) -> u64 {
        self.rows
    }

    pub(super) fn offset(&self) -> u64 {
        self.reader.offset()
    }

    /// Whether row `r` of the current batch, row `index` of the file, is this shard's: its
    /// series key's text as the generator renders it (`Cell::to_text`; null is empty), or
    /// without a series key its index in the file.
    fn owns(&mut self, shard: Shard, r: usize, index: u64) -> bool {
        let Some(k) = self.schema.series_key else {
            return shard.owns_row(index);
        };
        let Some(col) = self.src.columns.get(k) else {
            return shard.owns(b"");
        };
        if col.nulls.is_null(r) {
            return shard.owns(b"");
        }
        match &col.values {
            Values::Symbol(ids) => ids
                .get(r)
                .and_then(|&id| self.symbol_shards.get(id as usize))
                .map_or_else(|| shard.owns(b""), |&s| s == shard.i),
            v @ Values::Varchar { .. } => shard.owns(v.str_at(r).as_bytes()),
            Values::Long(v) => shard.owns(itoa::Buffer::new().format(v[r]).as_bytes()),
            Values::Double(v) => {
                self.key.clear();
                let _ = write!(self.key, "{}", v[r]);
                shard.owns(self.key.as_bytes())
            }
            Values::Bool(v) => shard.owns(if v[r] { b"true" } else { b"false" }),
            Values::Timestamp(v) => shard.owns(Cell::Timestamp(v[r]).to_text().as_bytes()),
        }
    }

    /// Appends rows of this shard to `batch` (cleared by the caller) up to `max_rows`.
    pub(super) fn fill(&mut self, batch: &mut Batch, max_rows: usize) -> Result<(), String> {
        while batch.rows < max_rows {
            let left = self
                .opts
                .limit
                .map_or(u64::MAX, |l| l.saturating_sub(self.rows));
            if left == 0 {
                break;
            }
            if self.pos >= self.src.rows {
                match self.reader.next_batch(&mut self.src) {
                    Ok(true) => self.pos = 0,
                    Ok(false) => break,
                    Err(e) => return Err(format!("{}: {e}", self.opts.name)),
                }
                continue;
            }
            let end = self.src.rows.min(
                self.pos
                    .saturating_add(usize::try_from(left).unwrap_or(usize::MAX)),
            );
            let start = self.pos;
            let Some(shard) = self.opts.route else {
                let take = (end - start).min(max_rows - batch.rows);
                if !self.append(start..start + take, batch)? {
                    break;
                }
                self.pos += take;
                self.rows += take as u64;
                continue;
            };
            // Runs of owned rows go in one copy each.
            let mut r = start;
            let mut run = start;
            while r < end && batch.rows + (r - run) < max_rows {
                let index = self.rows + (r - start) as u64;
                if !self.owns(shard, r, index) {
                    if run < r && !self.append(run..r, batch)? {
                        // The batch is full of text: resume at the run next time.
                        r = run;
                        break;
                    }
                    run = r + 1;
                }
                r += 1;
            }
            if run < r && !self.append(run..r, batch)? {
                r = run;
            }
            self.pos = r;
            self.rows += (r - start) as u64;
            if r == start {
                break;
            }
        }
        Ok(())
    }

    /// Appends rows of the current batch; `false` when they would overflow a text column of a
    /// batch that already has rows (they go in the next one).
    fn append(&self, rows: std::ops::Range<usize>, batch: &mut Batch) -> Result<bool, String> {
        match append_rows(&self.src, rows, batch) {
            Ok(()) => Ok(true),
            Err(_) if batch.rows > 0 => Ok(false),
            Err(e) => Err(format!("{}: {e}", self.opts.name)),
        }
    }
}
