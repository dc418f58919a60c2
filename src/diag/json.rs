//! Diagnostics as JSON lines (`wlrun check --message-format json`), for editors and CI
//! annotations: one object per diagnostic, positions as numbers, so that no reader has to
//! parse the human rendering. docs/diagnostics.md, "Machine-readable diagnostics", lists the
//! fields; they only grow.

use serde::Serialize;

use super::{Diagnostic, Severity};
use crate::source::SourceMap;
use crate::span::Span;

#[derive(Serialize)]
struct Line<'a> {
    file: &'a str,
    line_start: usize,
    column_start: usize,
    line_end: usize,
    column_end: usize,
    severity: &'static str,
    code: &'static str,
    message: &'a str,
    /// The text under the primary span: what was expected or found there.
    label: &'a str,
    notes: &'a [String],
    /// The other places the diagnostic names (`declared here`, `the first one is here`).
    related: Vec<Related<'a>>,
}

#[derive(Serialize)]
struct Related<'a> {
    file: &'a str,
    line_start: usize,
    column_start: usize,
    line_end: usize,
    column_end: usize,
    message: &'a str,
}

/// A span's file name and its 1-based start and end, lines and columns in characters as the
/// human rendering counts them; the end is the position just past the span's last character.
fn place(map: &SourceMap, span: Span) -> (&str, (usize, usize), (usize, usize)) {
    let file = map.get(span.file);
    (
        &file.name,
        file.line_col(span.start as usize),
        file.line_col(span.end as usize),
    )
}

/// One JSON object per diagnostic, each on its own line. Unlike the human rendering, none is
/// left out past [`super::MAX_SHOWN`]: a reader filters for itself, and no line is rendered.
pub fn json_lines(map: &SourceMap, ds: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in ds {
        let (file, (line_start, column_start), (line_end, column_end)) = place(map, d.primary.span);
        let related = d
            .secondary
            .iter()
            .map(|l| {
                let (file, (line_start, column_start), (line_end, column_end)) = place(map, l.span);
                Related {
                    file,
                    line_start,
                    column_start,
                    line_end,
                    column_end,
                    message: &l.message,
                }
            })
            .collect();
        let line = Line {
            file,
            line_start,
            column_start,
            line_end,
            column_end,
            severity: match d.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            },
            code: d.code.as_str(),
            message: &d.message,
            label: &d.primary.message,
            notes: &d.notes,
            related,
        };
        out.push_str(&serde_json::to_string(&line).expect("a diagnostic serializes"));
        out.push('\n');
    }
    out
}
