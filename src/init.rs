//! `wlrun init`: a commented starter workload for a kind of target, written where the user
//! asks. The starters are the files of `templates/`, compiled into the binary so that an
//! installed wlrun needs no data files, and checked and planned by `tests/corpus.rs` like every
//! shipped `.wl` file, so a starter cannot drift from the language.

use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use crate::cli::{StarterKind, EXIT_FAILED, EXIT_OK, EXIT_USAGE};

/// One starter: its text, the file name it gets by default, and what to tell the user after
/// writing it (what it does, what it reads from the environment).
pub struct Starter {
    pub text: &'static str,
    pub file_name: &'static str,
    pub about: &'static str,
    pub environment: &'static str,
}

pub fn starter(kind: StarterKind) -> Starter {
    match kind {
        StarterKind::Postgres => Starter {
            text: include_str!("../templates/postgres.wl"),
            file_name: "postgres.wl",
            about: "a PostgreSQL starter: 216,000 rows loaded with COPY, then two queries for 5 s \
                    over 4 connections",
            environment: "PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE \
                          (default postgres:postgres@127.0.0.1:5432/postgres)",
        },
        StarterKind::Questdb => Starter {
            text: include_str!("../templates/questdb.wl"),
            file_name: "questdb.wl",
            about: "a QuestDB starter: 216,000 rows loaded over QWP, then two queries for 5 s \
                    over 4 PostgreSQL-wire connections",
            environment: "QDB_HOST (default 127.0.0.1), QDB_PASSWORD (default quest)",
        },
        StarterKind::Http => Starter {
            text: include_str!("../templates/http.wl"),
            file_name: "http.wl",
            about: "an HTTP starter: GET / for 5 s over 4 connections",
            environment: "HTTP_HOST, HTTP_PORT (default 127.0.0.1:8080)",
        },
        StarterKind::Sqlite => Starter {
            text: include_str!("../templates/sqlite.wl"),
            file_name: "sqlite.wl",
            about: "an SQLite starter, no server needed: 172,800 rows into an embedded \
                    database, then two queries for 5 s over 2 connections",
            environment: "SQLITE_DB (default bench.db in the current directory)",
        },
    }
}

/// `wlrun init --kind KIND [PATH] [--force]`: writes the starter, then says what was written
/// and the commands to run next. An existing file is kept unless `--force`: a starter written
/// over a user's workload would lose their work.
pub fn command(kind: StarterKind, path: Option<&Path>, force: bool) -> i32 {
    let starter = starter(kind);
    let path = destination(path, starter.file_name);
    match write(&path, starter.text, force) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            sayln!(
                "wlrun init: {} already exists; nothing written (--force overwrites it)",
                path.display()
            );
            return EXIT_USAGE;
        }
        Err(e) => {
            sayln!("wlrun init: cannot write {}: {e}", path.display());
            // A missing folder or a path that names a folder is the command's mistake; a full
            // disk or a refused permission is the machine's.
            return if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::IsADirectory) {
                EXIT_USAGE
            } else {
                EXIT_FAILED
            };
        }
    }
    let shown = shell_word(&path.display().to_string());
    sayln!("wlrun init: wrote {}, {}", path.display(), starter.about);
    sayln!("  it reads {}", starter.environment);
    sayln!("next:");
    sayln!("  wlrun check {shown}    check it (nothing is sent)");
    sayln!("  wlrun plan {shown}     see what it will do");
    sayln!("  wlrun {shown}          run it");
    EXIT_OK
}

/// Where the starter goes: the path given, inside it when it is a folder, or the starter's
/// own name in the current folder.
fn destination(path: Option<&Path>, file_name: &str) -> PathBuf {
    match path {
        Some(p) if p.is_dir() => p.join(file_name),
        Some(p) => p.to_path_buf(),
        None => PathBuf::from(file_name),
    }
}

fn write(path: &Path, text: &str, force: bool) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if force {
        options.create(true).truncate(true);
    } else {
        // Refused by the system if the file appears between a check and the write.
        options.create_new(true);
    }
    let mut file = options.open(path)?;
    file.write_all(text.as_bytes())
}

/// The path as a shell word, so the commands printed can be pasted as they are.
fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+,:@%".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}
