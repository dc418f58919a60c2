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
        let text = if f.quoted {
            f.text.clone()
        } else {
            String::new()
        };
        files.add(f.name.clone(), text);
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
    // A file whose text must not be quoted (`SourceFile::quoted`) gets its position in a note
    // instead of a label, which would print the line.
    let mut notes = Vec::new();
    let mut place = |span: crate::span::Span, message: &str, primary: bool| {
        let file = map.get(span.file);
        if !file.quoted {
            let (line, col) = file.line_col(span.start as usize);
            notes.push(format!(
                "at {}:{line}:{col}: {message} (the file is not wlrun text: its lines are not shown)",
                file.name
            ));
        } else if has_text(span) {
            let label = if primary {
                cs::Label::primary(span.file.0 as usize, span.range())
            } else {
                cs::Label::secondary(span.file.0 as usize, span.range())
            };
            labels.push(label.with_message(message.to_string()));
        }
    };
    place(d.primary.span, &d.primary.message, true);
    for l in &d.secondary {
        place(l.span, &l.message, false);
    }
    notes.extend(d.notes.iter().cloned());
    cs::Diagnostic::new(sev)
        .with_code(d.code.as_str())
        .with_message(d.message.clone())
        .with_labels(labels)
        .with_notes(notes)
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

/// The most diagnostics shown at once. Past that they bury the first ones, which are usually
/// the cause, and a generated input can make hundreds of thousands (429,497 took longer to
/// print than to find); the rest are counted.
pub const MAX_SHOWN: usize = 50;

/// Renders the first [`MAX_SHOWN`] diagnostics, then how many more there are.
pub fn render_all(map: &SourceMap, ds: &[Diagnostic], style: Style) -> String {
    let files = files(map);
    let config = config();
    let mut out = String::new();
    for d in ds.iter().take(MAX_SHOWN) {
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
    if let Some(rest) = ds.get(MAX_SHOWN..).filter(|r| !r.is_empty()) {
        let errors = rest.iter().filter(|d| d.is_error()).count();
        let count = |n: usize, what: &str| match n {
            0 => None,
            1 => Some(format!("1 more {what}")),
            n => Some(format!("{n} more {what}s")),
        };
        let parts: Vec<String> = [
            count(errors, "error"),
            count(rest.len() - errors, "warning"),
        ]
        .into_iter()
        .flatten()
        .collect();
        out.push_str(&format!("... and {}, not shown\n\n", parts.join(" and ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Code;
    use crate::source::Origin;
    use crate::span::Span;

    #[test]
    fn past_the_limit_diagnostics_are_counted_not_shown() {
        let mut map = SourceMap::new();
        let text = "x\n".repeat(MAX_SHOWN + 10);
        let file = map.add(Origin::Disk("w.wl".into()), "w.wl".into(), text);
        let at = |line: usize| Span::new(file, 2 * line, 2 * line + 1);
        let mut ds: Vec<Diagnostic> = (0..MAX_SHOWN + 7)
            .map(|i| Diagnostic::error(Code::E0104, at(i), "unknown name `x`"))
            .collect();
        ds.extend((0..3).map(|i| Diagnostic::warning(Code::W0001, at(MAX_SHOWN + 7 + i), "w")));
        let out = render_all(&map, &ds, Style::Plain);
        assert_eq!(out.matches("error[E0104]").count(), MAX_SHOWN, "{out}");
        assert!(!out.contains("warning["), "{out}");
        assert!(
            out.ends_with("... and 7 more errors and 3 more warnings, not shown\n\n"),
            "{out}"
        );
        // At the limit nothing is said.
        let out = render_all(&map, &ds[..MAX_SHOWN], Style::Plain);
        assert!(!out.contains("more"), "{out}");
    }
}
