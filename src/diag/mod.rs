//! Diagnostics are data: a code, a message, a primary span and notes. Parsing produces at most
//! one; checking collects all of them and sorts them by position before they are shown.

mod code;
mod json;
mod render;
mod suggest;

pub use code::Code;
pub use json::json_lines;
pub use render::{render, render_all, Style, MAX_SHOWN};
pub use suggest::suggest;

use crate::span::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: Code,
    pub message: String,
    pub primary: Label,
    pub secondary: Vec<Label>,
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn error(code: Code, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            primary: Label {
                span,
                message: String::new(),
            },
            secondary: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub fn warning(code: Code, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, span, message)
        }
    }

    /// The text under the primary underline (what was expected, what was found).
    pub fn label(mut self, message: impl Into<String>) -> Diagnostic {
        self.primary.message = message.into();
        self
    }

    pub fn also(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.secondary.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// A growing list of diagnostics, sorted by position when taken out.
#[derive(Debug, Default)]
pub struct Diagnostics {
    list: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn push(&mut self, d: Diagnostic) {
        self.list.push(d);
    }

    pub fn extend(&mut self, ds: impl IntoIterator<Item = Diagnostic>) {
        self.list.extend(ds);
    }

    pub fn has_errors(&self) -> bool {
        self.list.iter().any(Diagnostic::is_error)
    }

    pub fn error_count(&self) -> usize {
        self.list.iter().filter(|d| d.is_error()).count()
    }

    /// Sorted by file, then position, then severity; exact duplicates (one mistake reached
    /// through two paths, e.g. the same module imported twice) are reported once.
    pub fn into_sorted(mut self) -> Vec<Diagnostic> {
        self.list.sort_by(|a, b| {
            (a.primary.span, a.severity, a.code, &a.message).cmp(&(
                b.primary.span,
                b.severity,
                b.code,
                &b.message,
            ))
        });
        self.list.dedup();
        self.list
    }
}
