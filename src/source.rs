//! Source files: the root workload, the files it imports, and the stdlib compiled into the
//! binary. Every file gets a `FileId`; the map is kept until the end so that diagnostics and
//! run-time errors can quote the line they point at.

use std::path::{Component, Path, PathBuf};

use include_dir::{include_dir, Dir};

use crate::span::{FileId, Span};

mod read;
pub use read::{read_bounded, read_data, Kind, ReadProblem};

/// The stdlib, so that `import "std/..."` works from any directory.
static STDLIB: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/stdlib");

/// Files larger than this are refused before parsing: no real workload comes near it, and it
/// bounds the parser's time and memory.
pub const MAX_FILE_BYTES: usize = 16 * 1024 * 1024;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Origin {
    /// A file on disk, with the path as given (relative paths stay relative for stable output).
    Disk(PathBuf),
    /// A stdlib module: the path after `std/`.
    Stdlib(String),
}

#[derive(Debug)]
pub struct SourceFile {
    pub origin: Origin,
    /// The name used in diagnostics: the path as given, or `std/...`.
    pub name: String,
    pub text: String,
    /// Whether diagnostics may quote the text. Only what is wlrun's own text is quoted: a
    /// `.wl` file, a `.rhai` hook, the stdlib, the file named on the command line. An import
    /// of `/etc/shadow` fails to parse, and its message must not print the file's first line.
    pub quoted: bool,
    line_starts: Vec<usize>,
}

impl SourceFile {
    fn new(origin: Origin, name: String, text: String) -> SourceFile {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        SourceFile {
            origin,
            name,
            text,
            quoted: true,
            line_starts,
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.line_starts.partition_point(|&s| s <= offset) - 1;
        let start = self.line_starts[line];
        let col = self
            .text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count());
        (line + 1, col + 1)
    }

    /// The directory relative imports resolve against; `None` for stdlib files.
    pub fn dir(&self) -> Option<&Path> {
        match &self.origin {
            Origin::Disk(p) => Some(p.parent().unwrap_or(Path::new(""))),
            Origin::Stdlib(_) => None,
        }
    }
}

/// Why a file could not be read as text. The file is still added to the map (lossily decoded)
/// so the error can be shown with its position.
#[derive(Debug)]
pub enum LoadProblem {
    Io(std::io::Error),
    NotUtf8 {
        offset: usize,
    },
    /// Its size, when the file said it; a stream or a file that grew has none.
    TooLarge {
        bytes: Option<u64>,
    },
    NotFound,
    /// A FIFO, a device, a directory or a socket, named.
    NotRegular(&'static str),
}

impl From<ReadProblem> for LoadProblem {
    fn from(p: ReadProblem) -> LoadProblem {
        match p {
            ReadProblem::NotFound => LoadProblem::NotFound,
            ReadProblem::Io(e) => LoadProblem::Io(e),
            ReadProblem::NotRegular(kind) => LoadProblem::NotRegular(kind),
            ReadProblem::TooLarge { bytes } => LoadProblem::TooLarge { bytes },
        }
    }
}

#[derive(Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    pub fn get(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    pub fn files(&self) -> impl Iterator<Item = (FileId, &SourceFile)> {
        self.files
            .iter()
            .enumerate()
            .map(|(i, f)| (FileId(i as u32), f))
    }

    pub fn find(&self, origin: &Origin) -> Option<FileId> {
        self.files
            .iter()
            .position(|f| &f.origin == origin)
            .map(|i| FileId(i as u32))
    }

    /// Adds text under a name; used for files from disk, the stdlib, and tests.
    pub fn add(&mut self, origin: Origin, name: String, text: String) -> FileId {
        self.files.push(SourceFile::new(origin, name, text));
        FileId(self.files.len() as u32 - 1)
    }

    /// Reads the workload file the command line names: a pipe is allowed (`wlrun check
    /// <(generate)`), the size limit holds all the same.
    pub fn load_disk(&mut self, path: &Path) -> (FileId, Option<LoadProblem>) {
        self.load(path, Kind::Stream, true)
    }

    /// Reads an imported file: only a regular file, quoted in diagnostics only when its name
    /// ends in `.wl`.
    pub fn load_import(&mut self, path: &Path) -> (FileId, Option<LoadProblem>) {
        let quoted = path.extension().is_some_and(|e| e == "wl");
        self.load(path, Kind::Regular, quoted)
    }

    fn load(&mut self, path: &Path, kind: Kind, quoted: bool) -> (FileId, Option<LoadProblem>) {
        let name = path.display().to_string();
        let origin = Origin::Disk(path.to_path_buf());
        let (id, problem) = match read_bounded(path, kind, MAX_FILE_BYTES) {
            Ok(bytes) => self.add_bytes(origin, name, bytes),
            Err(e) => (self.add(origin, name, String::new()), Some(e.into())),
        };
        self.files[id.0 as usize].quoted = quoted;
        (id, problem)
    }

    /// Adds text that diagnostics must not quote (a hook script whose name does not say it is
    /// one).
    pub fn add_unquoted(&mut self, origin: Origin, name: String, text: String) -> FileId {
        let id = self.add(origin, name, text);
        self.files[id.0 as usize].quoted = false;
        id
    }

    /// Loads `std/<rest>` from the embedded stdlib.
    pub fn load_stdlib(&mut self, rest: &str) -> Option<FileId> {
        let origin = Origin::Stdlib(rest.to_string());
        if let Some(id) = self.find(&origin) {
            return Some(id);
        }
        let file = STDLIB.get_file(rest)?;
        let text = file.contents_utf8()?.to_string();
        Some(self.add(origin, format!("std/{rest}"), text))
    }

    pub fn add_bytes(
        &mut self,
        origin: Origin,
        name: String,
        bytes: Vec<u8>,
    ) -> (FileId, Option<LoadProblem>) {
        if bytes.len() > MAX_FILE_BYTES {
            let len = bytes.len() as u64;
            return (
                self.add(origin, name, String::new()),
                Some(LoadProblem::TooLarge { bytes: Some(len) }),
            );
        }
        match String::from_utf8(bytes) {
            Ok(text) => (self.add(origin, name, text), None),
            Err(e) => {
                let offset = e.utf8_error().valid_up_to();
                let text = String::from_utf8_lossy(e.as_bytes()).into_owned();
                // Offsets past the bad byte shift in the lossy text; the bad byte itself is where
                // it was, which is all the diagnostic needs.
                (
                    self.add(origin, name, text),
                    Some(LoadProblem::NotUtf8 { offset }),
                )
            }
        }
    }

    pub fn span_text(&self, span: Span) -> &str {
        self.get(span.file)
            .text
            .get(span.range())
            .unwrap_or_default()
    }
}

/// The names of every stdlib module, for `wlrun` help and the corpus test.
pub fn stdlib_modules() -> Vec<String> {
    fn walk(dir: &Dir<'_>, out: &mut Vec<String>) {
        for f in dir.files() {
            if f.path().extension().is_some_and(|e| e == "wl") {
                out.push(f.path().display().to_string());
            }
        }
        for d in dir.dirs() {
            walk(d, out);
        }
    }
    let mut out = Vec::new();
    walk(&STDLIB, &mut out);
    out.sort();
    out
}

/// Reads a stdlib data file (CSV and the like) that a stdlib module refers to.
pub fn stdlib_file(rest: &str) -> Option<&'static [u8]> {
    STDLIB.get_file(rest).map(|f| f.contents())
}

/// `a/./b/../c` as `a/c`, without asking the file system: the layout a workload's relative
/// paths describe (`Path::join` of `..` means the same unless a symlink sits in between). A
/// `..` above the start is kept.
pub fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push(c);
                }
            }
            other => out.push(other),
        }
    }
    out
}
