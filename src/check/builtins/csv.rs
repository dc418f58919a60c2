//! `csv(path, column)` and the CSV header reader that query `binds from csv` shares.

use std::path::PathBuf;

use super::{gen, Args, Call};
use crate::check::eval::{Ev, Eval};
use crate::check::program::InstanceId;
use crate::diag::{Code, Diagnostic};
use crate::plan::Gen;
use crate::span::Span;
use crate::value::Value;

/// `csv(path, column)`: a column the CSV header names, of a file with rows.
pub(super) fn csv(c: &Call, a: &Args) -> Ev<Value> {
    let ev = c.ev;
    let path = c.text(a[0])?;
    let column = c.text(a[1])?;
    let pe = a[0].expect("required");
    let table = c.csv_table(&path, pe.span)?;
    if !table.header.contains(&column) {
        return ev.fail(
            Diagnostic::error(
                Code::E0602,
                a[1].expect("required").span,
                format!("`{path}` has no column `{column}`"),
            )
            .label("not in the CSV header")
            .note(table.header_note()),
        );
    }
    if table.rows == 0 {
        return ev.fail(
            Diagnostic::error(Code::E0602, pe.span, format!("`{path}` has no rows"))
                .label("empty CSV"),
        );
    }
    gen(Gen::Csv {
        path: root_relative(ev, c.scope.inst, &path),
        column,
        rows: table.rows,
    })
}

/// A CSV path as the run reads it, relative to the root workload's folder: the checker reads
/// `path` beside the module that names it, and an imported module may sit in another folder.
pub fn root_relative(ev: &Eval<'_>, inst: InstanceId, path: &str) -> String {
    let (Some(module), Some(root)) = (&ev.prog.module_of(inst).dir, &ev.prog.root().dir) else {
        return path.to_string();
    };
    let full = module.join(path);
    match full.strip_prefix(root) {
        Ok(rel) => rel.display().to_string(),
        Err(_) => full.display().to_string(),
    }
}

pub struct CsvTable {
    pub header: Vec<String>,
    pub rows: u64,
    /// Whether messages may quote the header: only a `.csv` file's (or the stdlib's). A path
    /// naming another file, `/etc/shadow` say, must not get its first line printed.
    pub quoted: bool,
}

impl CsvTable {
    /// The header for a note, or why it is not shown.
    pub fn header_note(&self) -> String {
        if self.quoted {
            format!("the header is: {}", self.header.join(","))
        } else {
            "the file is not a `.csv` file: its header is not shown".to_string()
        }
    }

    /// The header's names, when they may be quoted (for a "did you mean").
    pub fn quotable_header(&self) -> &[String] {
        if self.quoted {
            &self.header
        } else {
            &[]
        }
    }
}

/// Reads a CSV's header and counts its rows; the path is relative to the module's file.
pub fn read_csv_header(ev: &Eval<'_>, inst: InstanceId, path: &str, span: Span) -> Ev<CsvTable> {
    let module = ev.prog.module_of(inst);
    let bytes: Vec<u8> = match &module.dir {
        Some(dir) => {
            let full: PathBuf = dir.join(path);
            match crate::source::read_bounded(
                &full,
                crate::source::Kind::Regular,
                crate::source::MAX_FILE_BYTES,
            ) {
                Ok(b) => {
                    ev.prog.inputs.record(crate::source::Origin::Disk(full));
                    b
                }
                Err(crate::source::ReadProblem::NotFound) if ev.cell.csv_may_be_missing => {
                    ev.error(
                        Diagnostic::warning(
                            Code::W0004,
                            span,
                            format!("`{}` does not exist yet", full.display()),
                        )
                        .label("queries that bind from it are left out"),
                    );
                    return None;
                }
                Err(e) => {
                    let label = match e {
                        crate::source::ReadProblem::NotFound => "CSV file not found",
                        _ => e.label(),
                    };
                    return ev.fail(
                        Diagnostic::error(
                            Code::E0602,
                            span,
                            format!("cannot read `{}`: {e}", full.display()),
                        )
                        .label(label)
                        .note("CSV paths are relative to the .wl file that names them"),
                    );
                }
            }
        }
        None => match crate::source::stdlib_file(path) {
            Some(b) => {
                ev.prog
                    .inputs
                    .record(crate::source::Origin::Stdlib(path.to_string()));
                b.to_vec()
            }
            None => {
                return ev.fail(
                    Diagnostic::error(Code::E0602, span, format!("no stdlib data file `{path}`"))
                        .label("CSV file not found"),
                )
            }
        },
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let Some(header) = lines.next() else {
        return ev.fail(
            Diagnostic::error(Code::E0602, span, format!("`{path}` is empty"))
                .label("no header line"),
        );
    };
    let header: Vec<String> = header
        .split(',')
        .map(|h| h.trim().trim_matches('"').to_string())
        .collect();
    let rows = lines.count() as u64;
    let quoted = module.dir.is_none() || path.ends_with(".csv");
    Some(CsvTable {
        header,
        rows,
        quoted,
    })
}
