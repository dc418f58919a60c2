//! A pre-pass that refuses deep nesting before the recursive-descent parser sees it, so that no
//! input can overflow the stack. Brackets, braces, parentheses and string interpolations count;
//! strings and comments are skipped the way the grammar skips them.

/// The deepest nesting a workload may use. Real files stay under 10.
pub const MAX_DEPTH: usize = 64;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Frame {
    /// An open `(`, `[`, `{` or `${`.
    Open(u8),
    Str,
}

/// Returns the byte offset of the first opening that goes past [`MAX_DEPTH`].
pub fn too_deep(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if stack.last() == Some(&Frame::Str) {
            match b {
                b'\\' => i += 1,
                b'"' => {
                    stack.pop();
                }
                b'$' if bytes.get(i + 1) == Some(&b'{') => {
                    stack.push(Frame::Open(b'{'));
                    if stack.len() > MAX_DEPTH {
                        return Some(i);
                    }
                    i += 1;
                }
                _ => {}
            }
            i += 1;
            continue;
        }
        match b {
            b'"' => {
                stack.push(Frame::Str);
                if stack.len() > MAX_DEPTH {
                    return Some(i);
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'(' | b'[' | b'{' => {
                stack.push(Frame::Open(b));
                if stack.len() > MAX_DEPTH {
                    return Some(i);
                }
            }
            b')' | b']' | b'}' => {
                // Unbalanced closers are the parser's business; only depth matters here.
                if matches!(stack.last(), Some(Frame::Open(_))) {
                    stack.pop();
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Something opened and never closed, found by the same scan: a better place for the error than
/// the end of the file, where the parser notices.
#[derive(Debug, PartialEq, Eq)]
pub enum Unclosed {
    String(usize),
    Comment(usize),
}

pub fn unclosed(text: &str) -> Option<Unclosed> {
    let bytes = text.as_bytes();
    // Open strings and interpolations, with where each string started.
    let mut stack: Vec<(Frame, usize)> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if matches!(stack.last(), Some((Frame::Str, _))) {
            match b {
                b'\\' => i += 1,
                b'"' => {
                    stack.pop();
                }
                b'$' if bytes.get(i + 1) == Some(&b'{') => {
                    stack.push((Frame::Open(b'{'), i));
                    i += 1;
                }
                _ => {}
            }
            i += 1;
            continue;
        }
        match b {
            b'"' => stack.push((Frame::Str, i)),
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let start = i;
                i += 2;
                while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                    i += 1;
                }
                if i + 1 >= bytes.len() {
                    return Some(Unclosed::Comment(start));
                }
                i += 1;
            }
            b'{' | b'(' | b'[' => stack.push((Frame::Open(b), i)),
            b'}' | b')' | b']' => {
                if matches!(stack.last(), Some((Frame::Open(_), _))) {
                    stack.pop();
                }
            }
            _ => {}
        }
        i += 1;
    }
    stack
        .iter()
        .find(|(f, _)| *f == Frame::Str)
        .map(|(_, at)| Unclosed::String(*at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unclosed_strings_and_comments() {
        assert_eq!(unclosed("param a = \"x\""), None);
        assert_eq!(
            unclosed("param a = 1\n/* never"),
            Some(Unclosed::Comment(12))
        );
        assert_eq!(
            unclosed("param a = \"abc\nparam b = 2\n"),
            Some(Unclosed::String(10))
        );
        assert_eq!(unclosed("// \"quoted in a comment\nparam a = 1"), None);
        assert_eq!(unclosed("param a = \"${ \"inner\" }\""), None);
    }

    #[test]
    fn shallow_and_deep() {
        assert_eq!(too_deep("param a = [[1], [2]]"), None);
        let deep = "[".repeat(MAX_DEPTH + 1);
        assert_eq!(too_deep(&deep), Some(MAX_DEPTH));
        let in_string = format!("param a = \"{}\"", "[".repeat(1000));
        assert_eq!(too_deep(&in_string), None);
        let in_comment = format!("// {}\nparam a = 1", "(".repeat(1000));
        assert_eq!(too_deep(&in_comment), None);
    }
}
