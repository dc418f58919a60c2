//! Diagnostic codes. Each has a one-line summary; docs/diagnostics.md has an example and a fix
//! for every one (a test keeps the two in step).

use std::fmt;

macro_rules! codes {
    ($($name:ident => $summary:literal,)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code { $($name,)* }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$name,)*];

            pub fn summary(self) -> &'static str {
                match self { $(Code::$name => $summary,)* }
            }

            pub fn as_str(self) -> &'static str {
                match self { $(Code::$name => stringify!($name),)* }
            }
        }
    };
}

codes! {
    // Reading and parsing: the first of these stops the file.
    E0001 => "syntax error",
    E0002 => "nesting too deep",
    E0003 => "file is not UTF-8",
    E0004 => "file too large",
    E0005 => "invalid literal",
    E0006 => "file not found or unreadable",
    // Imports and names.
    E0101 => "import not found",
    E0102 => "import cycle",
    E0103 => "duplicate name",
    E0104 => "unknown name",
    E0105 => "unknown member",
    E0106 => "declaration not allowed in an imported module",
    E0107 => "unknown import argument",
    E0108 => "duplicate clause",
    E0109 => "missing clause",
    // Types and units.
    E0201 => "type mismatch",
    E0202 => "wrong unit",
    E0203 => "invalid value",
    E0204 => "unknown function",
    E0205 => "wrong arguments",
    E0206 => "unknown column type",
    E0207 => "invalid format or pattern string",
    E0208 => "cyclic definition",
    E0209 => "definition nested too deep",
    E0210 => "value too long",
    // Targets and endpoints.
    E0301 => "unknown endpoint",
    E0302 => "endpoint does not fit the operation",
    E0303 => "invalid endpoint URL",
    E0304 => "unknown endpoint option",
    E0305 => "invalid endpoint option value",
    E0306 => "no way to count rows",
    E0307 => "unknown dialect",
    // Matrix.
    E0401 => "invalid matrix axis",
    E0402 => "matrix leaves no cell",
    E0403 => "invalid --param or --only",
    E0404 => "too many phases to check",
    // Schemas.
    E0501 => "invalid schema",
    E0502 => "unknown column",
    E0503 => "table the dialect cannot create",
    // Queries and binds.
    E0601 => "bind does not match the SQL placeholders",
    E0602 => "CSV bind file problem",
    E0603 => "invalid route",
    // Runs.
    E0701 => "invalid run",
    E0702 => "invalid threshold",
    E0703 => "invalid concurrent group",
    // Hooks.
    E0801 => "hook script does not compile",
    E0802 => "hook entry point missing",
    E0803 => "hook file not found",
    // Warnings.
    W0001 => "unused param",
    W0002 => "matrix axis no block uses",
    W0003 => "unused declaration",
    W0004 => "suspicious value",
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
