//! The one way a file a workload names is read whole: imports, hook scripts, `csv(...)` and
//! `binds from csv` files, at check time and again when the run reads them.
//!
//! `std::fs::read` trusts the file: `/dev/zero` or `/dev/urandom` grew until memory ran out, and
//! opening a FIFO waited for a writer that never came. Here the kind of file is read off the open
//! handle (a path swapped between a stat and the open cannot slip a device in), opening does not
//! wait (`O_NONBLOCK`), and at most `limit + 1` bytes are read whatever size the file claims.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Why a file was not read.
#[derive(Debug)]
pub enum ReadProblem {
    NotFound,
    Io(io::Error),
    /// A FIFO, a device, a directory or a socket: the kind, for the message.
    NotRegular(&'static str),
    /// Larger than the limit: its size when the file said it, else `None` (it grew, or is a
    /// stream whose size nobody knows).
    TooLarge {
        bytes: Option<u64>,
    },
}

impl ReadProblem {
    /// A label under the path that named the file.
    pub fn label(&self) -> &'static str {
        match self {
            ReadProblem::NotFound => "file not found",
            ReadProblem::Io(_) => "cannot be read",
            ReadProblem::NotRegular(_) => "not a regular file",
            ReadProblem::TooLarge { .. } => "file too large",
        }
    }
}

impl std::fmt::Display for ReadProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // As `std::fs::read` said it, which messages and their snapshots quote.
            ReadProblem::NotFound => write!(f, "{}", io::Error::from_raw_os_error(libc::ENOENT)),
            ReadProblem::Io(e) => write!(f, "{e}"),
            ReadProblem::NotRegular(kind) => write!(f, "it is {kind}, not a regular file"),
            ReadProblem::TooLarge { bytes: Some(b) } => {
                write!(
                    f,
                    "it is {b} bytes; the limit is {} bytes",
                    super::MAX_FILE_BYTES
                )
            }
            ReadProblem::TooLarge { bytes: None } => {
                write!(f, "it is over the limit of {} bytes", super::MAX_FILE_BYTES)
            }
        }
    }
}

impl From<ReadProblem> for io::Error {
    /// For the readers of the run side, whose callers take an `io::Error`.
    fn from(p: ReadProblem) -> io::Error {
        match p {
            ReadProblem::NotFound => io::Error::from(io::ErrorKind::NotFound),
            ReadProblem::Io(e) => e,
            other => io::Error::new(io::ErrorKind::InvalidData, other.to_string()),
        }
    }
}

/// What a caller accepts besides a regular file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Only a regular file: what a workload names.
    Regular,
    /// Anything readable, still bounded: the file on the command line, which may be a pipe
    /// (`wlrun check <(generate)`), and waiting for its writer is what the user asked for.
    Stream,
}

/// Reads `path` whole, refusing it when it is not a regular file (unless `kind` is `Stream`)
/// or holds more than `limit` bytes.
pub fn read_bounded(path: &Path, kind: Kind, limit: usize) -> Result<Vec<u8>, ReadProblem> {
    let mut options = OpenOptions::new();
    options.read(true);
    if kind == Kind::Regular {
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = match options.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(ReadProblem::NotFound),
        // A socket cannot be opened at all (ENXIO); name what it is rather than the errno.
        Err(e) => {
            return Err(match std::fs::metadata(path) {
                Ok(m) if !m.is_file() => ReadProblem::NotRegular(kind_of(&m.file_type())),
                _ => ReadProblem::Io(e),
            })
        }
    };
    let meta = file.metadata().map_err(ReadProblem::Io)?;
    if !meta.is_file() && kind == Kind::Regular {
        return Err(ReadProblem::NotRegular(kind_of(&meta.file_type())));
    }
    if meta.is_file() && meta.len() > limit as u64 {
        return Err(ReadProblem::TooLarge {
            bytes: Some(meta.len()),
        });
    }
    read_at_most(file, limit)
}

/// The first `limit + 1` bytes at most: one past the limit tells a file that grew (or a
/// `/proc` file that says it is empty) from one that fits.
fn read_at_most(file: File, limit: usize) -> Result<Vec<u8>, ReadProblem> {
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::EISDIR) => ReadProblem::NotRegular("a directory"),
            _ => ReadProblem::Io(e),
        })?;
    if bytes.len() > limit {
        return Err(ReadProblem::TooLarge { bytes: None });
    }
    Ok(bytes)
}

fn kind_of(t: &std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// A data file (`csv(...)`, `binds from csv`) as the run side reads it: `p` beside the
/// workload, else from the embedded stdlib.
pub fn read_data(dir: &Path, p: &str) -> io::Result<Vec<u8>> {
    match read_bounded(&dir.join(p), Kind::Regular, super::MAX_FILE_BYTES) {
        Ok(b) => Ok(b),
        Err(ReadProblem::NotFound) => super::stdlib_file(p)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound)),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_is_refused_and_a_stream_is_cut_at_the_limit() {
        let dev = Path::new("/dev/zero");
        assert!(matches!(
            read_bounded(dev, Kind::Regular, 16),
            Err(ReadProblem::NotRegular("a character device"))
        ));
        assert!(matches!(
            read_bounded(dev, Kind::Stream, 16),
            Err(ReadProblem::TooLarge { bytes: None })
        ));
    }

    #[test]
    fn a_regular_file_within_the_limit_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.wl");
        std::fs::write(&p, b"0123456789").unwrap();
        assert_eq!(read_bounded(&p, Kind::Regular, 10).unwrap(), b"0123456789");
        assert!(matches!(
            read_bounded(&p, Kind::Regular, 9),
            Err(ReadProblem::TooLarge { bytes: Some(10) })
        ));
        assert!(matches!(
            read_bounded(dir.path(), Kind::Regular, 9),
            Err(ReadProblem::NotRegular("a directory"))
        ));
    }
}
