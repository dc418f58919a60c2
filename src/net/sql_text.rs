//! SQL text every layer above writes the same way: identifiers quoted for PostgreSQL and
//! SQLite (drivers, table setup, query runs).

/// Appends `name` as a double-quoted SQL identifier.
pub fn push_ident(out: &mut String, name: &str) {
    out.push('"');
    for ch in name.chars() {
        if ch == '"' {
            out.push('"');
        }
        out.push(ch);
    }
    out.push('"');
}

/// `name` as a double-quoted SQL identifier: `a"b` becomes `"a""b"`.
pub fn quote_ident(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    push_ident(&mut out, name);
    out
}
