//! Command-line flags on the matrix: `--param name=value` (root params and axis pins) and
//! `--only axis=value` filters, parsed as values in a file of their own so errors point at them.

use indexmap::IndexMap;

use super::cells::CellEnv;
use super::eval::{Eval, Scope};
use super::program::{Decl, InstanceId, Program};
use super::Options;
use crate::diag::{suggest, Code, Diagnostic, Diagnostics};
use crate::source::{Origin, SourceMap};
use crate::span::Span;
use crate::syntax::{self, ast};
use crate::value::Value;

/// What the flags ask of the matrix.
pub(super) struct Flags {
    /// `--param` values for root params.
    pub overrides: IndexMap<String, ast::Expr>,
    /// `--param` values for axes: each pins its axis to one value.
    pub pins: IndexMap<String, ast::Expr>,
    /// `--only axis=value`, with the span of the axis name.
    pub only: Vec<((String, Span), String)>,
}

/// Reads `--param` and `--only`; a flag with a mistake is reported and left out.
pub(super) fn read_flags(
    map: &mut SourceMap,
    program: &Program,
    opts: &Options,
    diags: &mut Diagnostics,
) -> Flags {
    let mut overrides: IndexMap<String, ast::Expr> = IndexMap::new();
    let mut pins: IndexMap<String, ast::Expr> = IndexMap::new();
    let axis_names: Vec<String> = program
        .root()
        .matrix
        .iter()
        .flat_map(|m| m.axes.iter().map(|a| a.name.name.clone()))
        .collect();
    // Declared values evaluated without overrides, to judge each override against; what this
    // evaluation reports is left to the cells, which report it anyway.
    let declared_env = CellEnv::default();
    let declared = Eval::new(program, &declared_env);
    for (flag, raw) in opts.params.iter().map(|p| ("--param", p)) {
        let text_param = |name: &str| {
            !axis_names.iter().any(|a| a == name)
                && matches!(program.root().decls.get(name), Some(Decl::Param(p)) if declares_text(p))
        };
        let Some((name, value)) = parse_assignment(map, flag, raw, text_param, diags) else {
            continue;
        };
        let is_param = matches!(program.root().decls.get(&name.0), Some(Decl::Param(_)));
        let is_axis = axis_names.contains(&name.0);
        if !is_param && !is_axis {
            let mut candidates: Vec<&str> = axis_names.iter().map(String::as_str).collect();
            candidates.extend(
                program
                    .root()
                    .decls
                    .iter()
                    .filter(|(_, d)| matches!(d, Decl::Param(_)))
                    .map(|(k, _)| k.as_str()),
            );
            let mut d = Diagnostic::error(
                Code::E0403,
                name.1,
                format!(
                    "`{}` is not a param or matrix axis of this workload",
                    name.0
                ),
            )
            .label("unknown name");
            if let Some(s) = suggest(&name.0, candidates.iter().copied()) {
                d = d.note(format!("did you mean `{s}`?"));
            }
            diags.push(d);
            continue;
        }
        if is_axis {
            pins.insert(name.0.clone(), value.clone());
        }
        if is_param {
            if let Some(d) = override_mismatch(&declared, &name.0, raw, &value) {
                // The param keeps its declared value, so its uses do not report the flag's
                // mistake again, each at a place in the file that is not wrong.
                diags.push(d);
                continue;
            }
            overrides.insert(name.0, value);
        }
    }
    declared.diags.take();
    let mut only: Vec<((String, Span), String)> = Vec::new();
    for raw in &opts.only {
        let Some(a) = split_assignment(map, "--only", raw, diags) else {
            continue;
        };
        only.push(((a.name, a.name_span), a.value));
    }
    Flags {
        overrides,
        pins,
        only,
    }
}

/// What diagnostics call a flag's pseudo-file, as gcc calls a `-D` macro's place: the file's
/// text is the flag as written, so `--> <command line>:1:17` points into it.
const COMMAND_LINE: &str = "<command line>";

/// `name=value` split, in a pseudo-file holding the whole flag.
struct Assignment {
    name: String,
    name_span: Span,
    value: String,
    /// Where the value starts in the pseudo-file: after the `=`.
    value_at: usize,
}

/// Splits `name=value`, reporting a positioned error in a pseudo-file for the flag.
fn split_assignment(
    map: &mut SourceMap,
    flag: &str,
    raw: &str,
    diags: &mut Diagnostics,
) -> Option<Assignment> {
    let file = map.add(
        Origin::Disk(format!("{flag} {raw}").into()),
        COMMAND_LINE.to_string(),
        format!("{flag} {raw}"),
    );
    let at = flag.len() + 1;
    let Some((name, value)) = raw.split_once('=') else {
        diags.push(
            Diagnostic::error(
                Code::E0403,
                Span::new(file, at, at + raw.len()),
                format!("`{flag}` takes NAME=VALUE"),
            )
            .label("missing `=`"),
        );
        return None;
    };
    let name_t = name.trim();
    if name_t.is_empty() {
        diags.push(
            Diagnostic::error(
                Code::E0403,
                Span::new(file, at, at + 1),
                "missing name before `=`",
            )
            .label("expected NAME=VALUE"),
        );
        return None;
    }
    let lead = name.len() - name.trim_start().len();
    Some(Assignment {
        name: name_t.to_string(),
        name_span: Span::new(file, at + lead, at + lead + name_t.len()),
        value: value.trim().to_string(),
        value_at: at + name.len() + 1,
    })
}

/// An override whose kind differs from the param's declared value (`--param records=ten` for
/// `param records = 100`), reported at the flag. An integer does for a number, and words and
/// strings for each other; a declared value that needs a cell to evaluate is not judged here.
fn override_mismatch(
    declared: &Eval<'_>,
    name: &str,
    raw: &str,
    value: &ast::Expr,
) -> Option<Diagnostic> {
    let Some(Decl::Param(p)) = declared.prog.root().decls.get(name) else {
        return None;
    };
    let want = declared.param(InstanceId::ROOT, p)?;
    let got = declared.eval(value, &Scope::new(InstanceId::ROOT))?;
    let fits = match (&want, &got) {
        (Value::None | Value::Gen(_), _) => true,
        (Value::Float(_), Value::Int(_)) => true,
        (Value::Str(_) | Value::Symbol(_), Value::Str(_) | Value::Symbol(_)) => true,
        (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
    };
    if fits {
        return None;
    }
    let found = match &got {
        Value::Symbol(w) => format!("`{w}`"),
        v => v.kind().to_string(),
    };
    Some(
        Diagnostic::error(
            Code::E0403,
            value.span,
            format!("`--param {raw}`: expected {}, found {found}", want.kind()),
        )
        .label(format!("`{name}` is {}", want.kind()))
        .also(p.value.span, "declared here"),
    )
}

fn parse_assignment(
    map: &mut SourceMap,
    flag: &str,
    raw: &str,
    text_param: impl Fn(&str) -> bool,
    diags: &mut Diagnostics,
) -> Option<((String, Span), ast::Expr)> {
    let a = split_assignment(map, flag, raw, diags)?;
    let (name, span, file) = (a.name, a.name_span, a.name_span.file);
    let value_text = &map.get(file).text[a.value_at..];
    // A text param takes the value as it stands, the way a shell user writes a URL or a path.
    // A value in quotes is still a string literal (`"${host}:9000"` interpolates), and an
    // empty one still fails to parse: `--param url=$UNSET` is a mistake, not "".
    let text = value_text.trim();
    if text_param(&name) && !text.is_empty() && !text.starts_with('"') {
        let start = a.value_at + value_text.len() - value_text.trim_start().len();
        let at = Span::new(file, start, start + text.len());
        let lit = ast::StrLit {
            parts: vec![ast::StrPart::Text(text.to_string())],
            span: at,
        };
        return Some((
            (name, span),
            ast::Expr {
                kind: ast::ExprKind::Str(lit),
                span: at,
            },
        ));
    }
    match syntax::parse_value(map, file, a.value_at) {
        Ok(e) => Some(((name, span), e)),
        Err(d) => {
            diags.push(d);
            None
        }
    }
}

/// A text param is checked where it is used (a URL where an endpoint reads it), so the error
/// points at the file; when the text under the error names a param set by a flag, the flag is
/// shown too, since what was checked is the flag's value, not the file's.
pub(super) fn point_at_flags(
    map: &SourceMap,
    flags: &[(String, Span)],
    mut d: Diagnostic,
) -> Diagnostic {
    let at = d.primary.span;
    let Some(text) = map.get(at.file).text.get(at.range()) else {
        return d;
    };
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    for (name, flag) in flags.iter().filter(|(_, f)| f.file != at.file) {
        let named = text.match_indices(name.as_str()).any(|(i, _)| {
            !text[..i].ends_with(ident) && !text[i + name.len()..].starts_with(ident)
        });
        if named {
            d = d.also(*flag, format!("`{name}` is set here"));
        }
    }
    d
}

/// Whether a param's value is text, so that `--param url=http://h:1` needs no inner quotes:
/// declared `varchar` or `string`, or written as a string in the file.
fn declares_text(p: &ast::Param) -> bool {
    match p.ty.as_ref().map(|t| t.name.name.as_str()) {
        Some("varchar" | "string") => true,
        Some("symbol") | None => matches!(p.value.kind, ast::ExprKind::Str(_)),
        Some(_) => false,
    }
}
