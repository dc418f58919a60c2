//! Rhai hooks: each hook file is compiled once at check time, so a script error is an ordinary
//! diagnostic with file:line:col, and every named entry point must exist with the right arity.
//! The run-time API (`ctx`, the sandbox limits) comes with the hooks runner.

use std::collections::HashMap;

use rhai::{Engine, AST};

use super::program::{Decl, Module, Program};
use crate::diag::{Code, Diagnostic, Diagnostics};
use crate::source::{Origin, SourceMap};
use crate::span::{FileId, Span};
use crate::syntax::ast;

/// The entry points the runner calls, with their arity.
pub const ENTRY_POINTS: &[(&str, usize)] = &[("init", 1), ("request", 1), ("response", 2)];

/// What a compiled hook offers: its path and its functions with their arity.
#[derive(Clone, Debug, Default)]
pub struct HookInfo {
    pub path: String,
    pub functions: Vec<(String, usize)>,
    /// Where the text was read from, and the text itself (the runner compiles the same).
    pub file: String,
    pub source: std::sync::Arc<str>,
}

/// Hooks by (module index, hook name); a hook whose script fails to compile is absent.
pub type Hooks = HashMap<(usize, String), HookInfo>;

/// The run time's sandboxed engine, so a script compiles at check time exactly as it will run.
fn engine() -> rhai::Engine {
    crate::hook::engine()
}

pub fn check_hooks(map: &mut SourceMap, program: &Program, diags: &mut Diagnostics) -> Hooks {
    let mut out = Hooks::new();
    let engine = engine();
    for (mi, module) in program.modules.iter().enumerate() {
        for decl in module.decls.values() {
            let Decl::Hook(h) = decl else { continue };
            let Some(rel) = h.path.as_plain() else {
                diags.push(
                    Diagnostic::error(Code::E0803, h.path.span, "hook paths cannot interpolate")
                        .label("write the path literally"),
                );
                continue;
            };
            let Some((name, text)) = read_hook(program, module, h, &rel, diags) else {
                continue;
            };
            // A script is quoted when its name says it is one; `hook h from "/etc/shadow"`
            // must not print the file's first line in its syntax error.
            let origin = Origin::Disk(name.clone().into());
            let file = if rel.ends_with(".rhai") {
                map.add(origin, name.clone(), text.clone())
            } else {
                map.add_unquoted(origin, name.clone(), text.clone())
            };
            let Some(ast) =
                compile_hook(&engine, h, file, map.get(file).quoted, &name, &text, diags)
            else {
                continue;
            };
            // Sorted: the script's function table has no stable order, the plan must.
            let mut functions: Vec<(String, usize)> = ast
                .iter_functions()
                .map(|f| (f.name.to_string(), f.params.len()))
                .collect();
            functions.sort();
            check_entries(h, &name, &functions, diags);
            out.insert(
                (mi, h.name.name.clone()),
                HookInfo {
                    path: rel,
                    functions,
                    file: name,
                    source: text.into(),
                },
            );
        }
    }
    out
}

/// The script a hook names, from beside the module's file or from the stdlib: its name for
/// messages, and its text.
fn read_hook(
    program: &Program,
    module: &Module,
    h: &ast::Hook,
    rel: &str,
    diags: &mut Diagnostics,
) -> Option<(String, String)> {
    match &module.dir {
        Some(dir) => {
            let full = dir.join(rel);
            let read = crate::source::read_bounded(
                &full,
                crate::source::Kind::Regular,
                crate::source::MAX_FILE_BYTES,
            )
            .map_err(|p| {
                let label = match p {
                    crate::source::ReadProblem::NotFound => "hook file not found",
                    _ => p.label(),
                };
                (p.to_string(), label)
            })
            .and_then(|b| {
                String::from_utf8(b).map_err(|_| ("it is not UTF-8 text".to_string(), "not text"))
            });
            match read {
                Ok(t) => {
                    program.inputs.record(Origin::Disk(full.clone()));
                    Some((full.display().to_string(), t))
                }
                Err((e, label)) => {
                    diags.push(
                        Diagnostic::error(
                            Code::E0803,
                            h.path.span,
                            format!("cannot read hook `{}`: {e}", full.display()),
                        )
                        .label(label)
                        .note("hook paths are relative to the .wl file that names them"),
                    );
                    None
                }
            }
        }
        None => crate::source::stdlib_file(rel)
            .and_then(|b| String::from_utf8(b.to_vec()).ok())
            .map(|t| {
                program.inputs.record(Origin::Stdlib(rel.to_string()));
                (format!("std/{rel}"), t)
            })
            .or_else(|| {
                diags.push(
                    Diagnostic::error(Code::E0803, h.path.span, format!("no stdlib hook `{rel}`"))
                        .label("hook file not found"),
                );
                None
            }),
    }
}

/// The script compiled, or its first error pointed at in the script and at the hook.
fn compile_hook(
    engine: &Engine,
    h: &ast::Hook,
    file: FileId,
    quoted: bool,
    name: &str,
    text: &str,
    diags: &mut Diagnostics,
) -> Option<AST> {
    match engine.compile(text) {
        Ok(ast) => Some(ast),
        Err(e) => {
            let pos = e.1;
            let offset = match (pos.line(), pos.position()) {
                (Some(line), Some(col)) => offset_of(text, line, col),
                (Some(line), None) => offset_of(text, line, 1),
                _ => 0,
            };
            diags.push(
                Diagnostic::error(
                    Code::E0801,
                    Span::new(file, offset, (offset + 1).min(text.len().max(offset))),
                    if quoted {
                        format!("hook script `{name}` does not compile: {}", e.0)
                    } else {
                        // Rhai's message quotes the token it met.
                        format!("hook script `{name}` does not compile (not a `.rhai` file: its text is not shown)")
                    },
                )
                .label("here")
                .also(h.path.span, "the hook is declared here"),
            );
            None
        }
    }
}

/// Each entry point the hook names is defined, with the parameters the runner passes.
fn check_entries(
    h: &ast::Hook,
    name: &str,
    functions: &[(String, usize)],
    diags: &mut Diagnostics,
) {
    for entry in &h.entries {
        match functions.iter().find(|(n, _)| *n == entry.name) {
            None => diags.push(
                Diagnostic::error(
                    Code::E0802,
                    entry.span,
                    format!("`{name}` defines no function `{}`", entry.name),
                )
                .label("entry point not found in the script"),
            ),
            Some((_, arity)) => {
                if let Some((_, want)) = ENTRY_POINTS.iter().find(|(n, _)| *n == entry.name) {
                    if arity != want {
                        diags.push(
                            Diagnostic::error(
                                Code::E0802,
                                entry.span,
                                format!(
                                    "`{}` takes {arity} parameter{} in `{name}`; the runner calls it with {want}",
                                    entry.name,
                                    if *arity == 1 { "" } else { "s" }
                                ),
                            )
                            .label("wrong number of parameters")
                            .note("init(ctx), request(ctx), response(ctx, resp)"),
                        );
                    }
                }
            }
        }
    }
}

/// The byte offset of a 1-based line and character column.
fn offset_of(text: &str, line: usize, col: usize) -> usize {
    let mut offset = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            return offset
                + l.char_indices()
                    .nth(col.saturating_sub(1))
                    .map_or(l.trim_end_matches('\n').len(), |(b, _)| b);
        }
        offset += l.len();
    }
    text.len()
}
