//! `wlrun gen`: a schema's rows to a file, with a summary (rows, bytes, bytes/row, rows/s).

use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use crate::check::{self, Checked};
use crate::cli::TimestampText;
use crate::encode::{CsvEncoder, TimestampStyle};
use crate::run::{EXIT_FAILED, EXIT_OK, EXIT_USAGE};

/// Counts bytes on their way out, for the summary.
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

/// A closed reader (`| head`) anywhere in the error's chain: the reader's choice, not a failure.
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
        if let Some(c) = err.downcast_ref::<::csv::Error>() {
            if let ::csv::ErrorKind::Io(io) = c.kind() {
                if io.kind() == std::io::ErrorKind::BrokenPipe {
                    return true;
                }
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

pub fn run(
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
    let plan = match check::schema_plan(checked, schema) {
        Ok(p) => p,
        Err(m) => return fail(m),
    };
    let dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
    let read = move |p: &str| -> std::io::Result<Vec<u8>> {
        match std::fs::read(dir.join(p)) {
            Ok(b) => Ok(b),
            Err(e) => crate::source::stdlib_file(p).map(<[u8]>::to_vec).ok_or(e),
        }
    };
    let rows = match crate::gen::rows_with(&plan, checked.seed, shard, &read) {
        Ok(r) => r,
        Err(e) => return fail(e.to_string()),
    };
    let style = match timestamps {
        TimestampText::Rfc3339 => TimestampStyle::Rfc3339,
        TimestampText::Sql => TimestampStyle::Sql,
    };
    let sink: Box<dyn Write> = match output {
        None => Box::new(std::io::stdout().lock()),
        Some(p) if p == Path::new("-") => Box::new(std::io::stdout().lock()),
        Some(p) => match std::fs::File::create(p) {
            Ok(f) => Box::new(f),
            Err(e) => {
                sayln!("wlrun gen: cannot create {}: {e}", p.display());
                return EXIT_FAILED;
            }
        },
    };
    let started = Instant::now();
    let counting = Counting {
        inner: BufWriter::with_capacity(1 << 20, sink),
        bytes: 0,
    };
    let mut enc = match CsvEncoder::new(counting, &plan.columns, style) {
        Ok(e) => e,
        Err(e) if broken_pipe(&e) => return EXIT_OK,
        Err(e) => {
            sayln!("wlrun gen: write failed: {e}");
            return EXIT_FAILED;
        }
    };
    let mut n: u64 = 0;
    for row in rows {
        if let Err(e) = enc.write_row(&row) {
            // A closed pipe (`| head`) is the reader's choice, not a failure.
            if broken_pipe(&e) {
                return EXIT_OK;
            }
            sayln!("wlrun gen: write failed after {n} rows: {e}");
            return EXIT_FAILED;
        }
        n += 1;
    }
    let mut counting = match enc.finish() {
        Ok(c) => c,
        Err(e) if broken_pipe(&e) => return EXIT_OK,
        Err(e) => {
            sayln!("wlrun gen: write failed: {e}");
            return EXIT_FAILED;
        }
    };
    match counting.flush() {
        Ok(()) => {}
        Err(e) if broken_pipe(&e) => return EXIT_OK,
        Err(e) => {
            sayln!("wlrun gen: write failed: {e}");
            return EXIT_FAILED;
        }
    }
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    sayln!(
        "wlrun gen: schema {} -> {} rows, {} bytes ({:.1} bytes/row), {:.0} rows/s",
        plan.name,
        n,
        counting.bytes,
        counting.bytes as f64 / n.max(1) as f64,
        n as f64 / secs
    );
    EXIT_OK
}
