//! How wlrun writes a SQL name: one rule for every statement it writes, on every dialect (the
//! table DDL of `setup recreate`, the default count, COPY and INSERT, and a column chosen per
//! query instance). docs/language.md, "Names in SQL".
//!
//! A name that matches `[a-z_][a-z0-9_]*` and is not a reserved key word is written as it is;
//! any other name is double-quoted, a `"` inside doubled. Written bare, such a name means the
//! same column quoted or not on PostgreSQL, SQLite and QuestDB, so a user's own unquoted SQL
//! (`SELECT ycsb_key FROM usertable`) finds it; a name with a capital, a space or a reserved
//! word (`YCSB_KEY`, `a b`, `order`) keeps its exact spelling only quoted, and is quoted.
//!
//! It lives below both halves of the crate: the compiler writes the DDL a plan shows and the
//! default count, the runtime its statements (`net::sql_text` is the same functions).

/// Key words no dialect wlrun writes DDL for takes as a bare column or table name, sorted:
/// PostgreSQL's reserved ones (`pg_get_keywords()`, categories R and T: reserved, and reserved
/// but usable as a function or type name), and SQLite's keywords that are not fallback names
/// (`add`, `delete`, `index`, `values`, ...). A word in neither list is a name on all of them
/// (`key`, `value`, `timestamp`, `time`).
pub const RESERVED: &[&str] = &[
    "abort",
    "add",
    "all",
    "alter",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "authorization",
    "autoincrement",
    "between",
    "binary",
    "both",
    "case",
    "cast",
    "check",
    "collate",
    "collation",
    "column",
    "commit",
    "concurrently",
    "constraint",
    "create",
    "cross",
    "current_catalog",
    "current_date",
    "current_role",
    "current_schema",
    "current_time",
    "current_timestamp",
    "current_user",
    "default",
    "deferrable",
    "delete",
    "desc",
    "distinct",
    "do",
    "drop",
    "else",
    "end",
    "escape",
    "except",
    "exists",
    "false",
    "fetch",
    "filter",
    "for",
    "foreign",
    "freeze",
    "from",
    "full",
    "glob",
    "grant",
    "group",
    "having",
    "ilike",
    "in",
    "index",
    "indexed",
    "initially",
    "inner",
    "insert",
    "intersect",
    "into",
    "is",
    "isnull",
    "join",
    "lateral",
    "leading",
    "left",
    "like",
    "limit",
    "localtime",
    "localtimestamp",
    "natural",
    "not",
    "nothing",
    "notnull",
    "null",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "outer",
    "over",
    "overlaps",
    "placing",
    "primary",
    "references",
    "regexp",
    "returning",
    "right",
    "rollback",
    "select",
    "session_user",
    "set",
    "similar",
    "some",
    "symmetric",
    "table",
    "tablesample",
    "then",
    "to",
    "trailing",
    "transaction",
    "true",
    "union",
    "unique",
    "update",
    "user",
    "using",
    "values",
    "variadic",
    "verbose",
    "when",
    "where",
    "window",
    "with",
];

/// Whether `name` must be quoted to mean itself: it does not match `[a-z_][a-z0-9_]*`, or it
/// is a reserved key word ([`RESERVED`]).
pub fn needs_quotes(name: &str) -> bool {
    let mut chars = name.chars();
    let plain = matches!(chars.next(), Some('a'..='z' | '_'))
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'));
    !plain || RESERVED.binary_search(&name).is_ok()
}

/// Appends `name` as SQL writes it: bare when [`needs_quotes`] says it may be, else
/// double-quoted with a `"` inside doubled (`a"b` becomes `"a""b"`).
pub fn push_ident(out: &mut String, name: &str) {
    if !needs_quotes(name) {
        out.push_str(name);
        return;
    }
    out.push('"');
    for ch in name.chars() {
        if ch == '"' {
            out.push('"');
        }
        out.push(ch);
    }
    out.push('"');
}

/// `name` as SQL writes it ([`push_ident`]): `cpu`, `"YCSB_KEY"`, `"order"`, `"a b"`.
pub fn quote_ident(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    push_ident(&mut out, name);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserved_words_are_sorted_for_the_binary_search() {
        assert!(RESERVED.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn plain_lower_case_names_are_bare_and_every_other_one_is_quoted() {
        for bare in [
            "cpu",
            "ycsb_key",
            "_x",
            "field0",
            "usage_user",
            "timestamp",
            "key",
            "time",
        ] {
            assert_eq!(quote_ident(bare), bare);
        }
        for (name, quoted) in [
            ("YCSB_KEY", "\"YCSB_KEY\""),
            ("Host", "\"Host\""),
            ("order", "\"order\""),
            ("user", "\"user\""),
            ("values", "\"values\""),
            ("a b", "\"a b\""),
            ("0day", "\"0day\""),
            ("a\"b", "\"a\"\"b\""),
            ("é", "\"é\""),
            ("", "\"\""),
        ] {
            assert_eq!(quote_ident(name), quoted, "{name}");
        }
    }
}
