//! `wlrun gen`: a schema's rows to a file, with a summary (rows, bytes, bytes/row, rows/s).

use std::io::{BufWriter, IsTerminal, Write};
use std::path::Path;
use std::time::Instant;

use crate::check::Checked;
use crate::cli::{GenFormat, TimestampText};
use crate::compile;
use indicatif::{ProgressBar, ProgressStyle};

use crate::encode::csv::CsvBatchEncoder;
use crate::encode::{BinWriter, IlpEncoder, TimestampStyle};
use crate::gen::Columnar;

/// Text encoders append a batch to a buffer; the binary writer streams to its own sink.
enum Encoder {
    Csv(CsvBatchEncoder),
    Ilp(Box<IlpEncoder>),
}

/// Counts the bytes the binary writer sends, for the summary.
struct Counting<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
use crate::cli::{EXIT_FAILED, EXIT_OK, EXIT_USAGE};

/// A closed reader (`| head`) anywhere in the error's chain.
fn broken_pipe(e: &std::io::Error) -> bool {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        return true;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = e.get_ref().map(|x| x as _);
    while let Some(err) = source {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::BrokenPipe {
                return true;
            }
        }
        source = err.source();
    }
    false
}

fn parse_shard(s: &str) -> Result<(u64, u64), String> {
    let (i, n) = s.split_once('/').ok_or("expected I/N, e.g. 0/4")?;
    let i: u64 = i
        .trim()
        .parse()
        .map_err(|_| format!("`{i}` is not a shard index"))?;
    let n: u64 = n
        .trim()
        .parse()
        .map_err(|_| format!("`{n}` is not a shard count"))?;
    if n == 0 || i >= n {
        return Err(format!("shard {i}/{n}: the index must be below the count"));
    }
    Ok((i, n))
}

#[allow(clippy::too_many_arguments)]
pub fn run(
    format: GenFormat,
    batch_rows: usize,
    checked: &Checked,
    file: &Path,
    schema: Option<&str>,
    output: Option<&Path>,
    timestamps: TimestampText,
    shard: Option<&str>,
) -> i32 {
    let fail = |m: String| {
        sayln!("wlrun gen: {m}");
        EXIT_USAGE
    };
    let shard = match shard.map(parse_shard).transpose() {
        Ok(s) => s,
        Err(m) => return fail(m),
    };
    let plan = match compile::schema_plan(checked, schema) {
        Ok(p) => p,
        Err(m) => return fail(m),
    };
    // The data set's bytes are the output; csv(...) files are read relative to the workload.
    let dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
    let read = move |p: &str| crate::source::read_data(&dir, p);
    let mut generator = match Columnar::new(&plan, checked.seed, shard, &read) {
        Ok(g) => g,
        Err(e) => return fail(e.to_string()),
    };
    let style = match timestamps {
        TimestampText::Rfc3339 => TimestampStyle::Rfc3339,
        TimestampText::Sql => TimestampStyle::Sql,
    };
    let to_stdout = output.is_none_or(|p| p == Path::new("-"));
    let sink: Box<dyn Write> = match output {
        Some(p) if !to_stdout => match std::fs::File::create(p) {
            Ok(f) => Box::new(f),
            Err(e) => {
                sayln!("wlrun gen: cannot create {}: {e}", p.display());
                return EXIT_FAILED;
            }
        },
        _ => Box::new(std::io::stdout().lock()),
    };
    let mut sink = BufWriter::with_capacity(1 << 20, sink);
    let expected = match shard {
        Some((_, n)) => plan.rows / n.max(1),
        None => plan.rows,
    };
    // A bar only where a person watches: stderr is a terminal and the data is not going there.
    let bar = if std::io::stderr().is_terminal() && !(to_stdout && std::io::stdout().is_terminal())
    {
        let bar = ProgressBar::new(expected);
        bar.set_style(
            ProgressStyle::with_template(
                "{bar:40} {human_pos}/{human_len} rows {per_sec} eta {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar
    } else {
        ProgressBar::hidden()
    };
    let started = Instant::now();
    let mut batch = generator.new_batch();
    let mut n: u64 = 0;
    let write_failed = |n: u64, e: std::io::Error| {
        // A reader that went away (`| head`) gets its own message; either way the data set is
        // incomplete, so the exit status says so.
        if broken_pipe(&e) {
            sayln!("wlrun gen: the output was closed after {n} rows; the data set is incomplete");
            return EXIT_FAILED;
        }
        sayln!("wlrun gen: write failed after {n} rows: {e}");
        EXIT_FAILED
    };
    let bytes = if let GenFormat::Bin = format {
        let counting = Counting {
            inner: sink,
            bytes: 0,
        };
        let shard_spec = shard;
        let mut w = match BinWriter::new(counting, &generator.schema(), checked.seed, shard_spec) {
            Ok(w) => w,
            Err(e) => return write_failed(0, e),
        };
        loop {
            let rows = generator.fill(&mut batch, batch_rows);
            if rows == 0 {
                break;
            }
            if let Err(e) = w.write(&batch) {
                bar.finish_and_clear();
                return write_failed(n, e);
            }
            n += rows as u64;
            bar.set_position(n);
        }
        bar.finish_and_clear();
        match w.finish().and_then(|mut c| c.flush().map(|()| c.bytes)) {
            Ok(b) => b,
            Err(e) => return write_failed(n, e),
        }
    } else {
        let mut enc = match format {
            GenFormat::Ilp => match IlpEncoder::new(generator.schema()) {
                Ok(e) => Encoder::Ilp(Box::new(e)),
                Err(m) => return fail(m),
            },
            _ => Encoder::Csv(CsvBatchEncoder::new(style)),
        };
        let mut buf: Vec<u8> = Vec::with_capacity(4 << 20);
        if let Encoder::Csv(c) = &enc {
            c.header(&generator.schema(), &mut buf);
        }
        let mut bytes: u64 = 0;
        loop {
            let rows = generator.fill(&mut batch, batch_rows);
            if rows > 0 {
                match &mut enc {
                    Encoder::Csv(c) => c.encode(&batch, &mut buf),
                    Encoder::Ilp(i) => {
                        i.encode(&batch, &mut buf);
                    }
                }
            }
            if let Err(e) = sink.write_all(&buf) {
                bar.finish_and_clear();
                return write_failed(n, e);
            }
            bytes += buf.len() as u64;
            buf.clear();
            n += rows as u64;
            bar.set_position(n);
            if rows == 0 {
                break;
            }
        }
        bar.finish_and_clear();
        if let Err(e) = sink.flush() {
            return write_failed(n, e);
        }
        if let Encoder::Ilp(i) = &enc {
            if i.dropped() > 0 {
                sayln!(
                    "wlrun gen: {} rows had no non-null field and were left out (ILP needs one)",
                    i.dropped()
                );
            }
        }
        bytes
    };
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    sayln!(
        "wlrun gen: schema {} -> {} rows, {} bytes ({:.1} bytes/row), {:.0} rows/s",
        plan.name,
        n,
        bytes,
        bytes as f64 / n.max(1) as f64,
        n as f64 / secs
    );
    EXIT_OK
}
