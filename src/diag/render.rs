//! Rendering through codespan-reporting: `error[E0201]: ...`, then `--> file:line:col`, the
//! source line and an underline.

use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term;

use super::{Diagnostic, Severity};
use crate::source::SourceMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    Plain,
    Color,
}

fn files(map: &SourceMap) -> SimpleFiles<String, String> {
    let mut files = SimpleFiles::new();
    for (_, f) in map.files() {
        files.add(f.name.clone(), f.text.clone());
    }
    files
}

fn convert(d: &Diagnostic, map: &SourceMap) -> cs::Diagnostic<usize> {
    let sev = match d.severity {
        Severity::Error => cs::Severity::Error,
        Severity::Warning => cs::Severity::Warning,
    };
    // A file that could not be read (missing, unreadable, too large) has no line to show; an
    // empty file still gets its 1:1 position.
    let unread = matches!(d.code, super::Code::E0006 | super::Code::E0004);
    let has_text = |span: crate::span::Span| !(unread && map.get(span.file).text.is_empty());
    let mut labels = Vec::new();
    if has_text(d.primary.span) {
        labels.push(
            cs::Label::primary(d.primary.span.file.0 as usize, d.primary.span.range())
                .with_message(d.primary.message.clone()),
        );
    }
    for l in d.secondary.iter().filter(|l| has_text(l.span)) {
        labels.push(
            cs::Label::secondary(l.span.file.0 as usize, l.span.range())
                .with_message(l.message.clone()),
        );
    }
    cs::Diagnostic::new(sev)
        .with_code(d.code.as_str())
        .with_message(d.message.clone())
        .with_labels(labels)
        .with_notes(d.notes.clone())
}

fn config() -> term::Config {
    term::Config {
        chars: term::Chars::ascii(),
        ..term::Config::default()
    }
}

/// Renders one diagnostic as plain text.
pub fn render(map: &SourceMap, d: &Diagnostic) -> String {
    render_all(map, std::slice::from_ref(d), Style::Plain)
}

/// Renders a list of diagnostics followed by a count line.
pub fn render_all(map: &SourceMap, ds: &[Diagnostic], style: Style) -> String {
    let files = files(map);
    let config = config();
    let mut out = String::new();
    for d in ds {
        let cd = convert(d, map);
        let text = match style {
            Style::Plain => term::emit_into_string(&config, &files, &cd),
            Style::Color => {
                let mut buf = term::termcolor::Buffer::ansi();
                term::emit_to_write_style(&mut buf, &config, &files, &cd)
                    .map(|()| String::from_utf8_lossy(buf.as_slice()).into_owned())
            }
        };
        // A span outside its file would be our bug; show the message rather than nothing.
        out.push_str(&text.unwrap_or_else(|_| format!("error[{}]: {}\n", d.code, d.message)));
    }
    out
}
