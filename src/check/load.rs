//! Loading: the root file, then its imports depth first. Detects import cycles and refuses
//! declarations that only make sense in the workload being run.

use std::path::{Component, Path, PathBuf};

use indexmap::IndexMap;

use super::program::{Decl, Instance, InstanceId, Module, Program};
use crate::diag::{Code, Diagnostic, Diagnostics};
use crate::source::{LoadProblem, Origin, SourceMap};
use crate::span::{FileId, Span};
use crate::syntax::{self, ast};

/// Bounds diamond-shaped import graphs, which instantiate a module once per path.
const MAX_INSTANCES: usize = 256;

pub fn load_program(
    map: &mut SourceMap,
    root: FileId,
    problem: Option<LoadProblem>,
    schema_domain: super::program::SchemaDomainFn,
    diags: &mut Diagnostics,
) -> Option<Program> {
    if let Some(p) = problem {
        diags.push(load_problem(map, root, p, None));
        return None;
    }
    let mut loader = Loader {
        program: Program {
            modules: Vec::new(),
            instances: Vec::new(),
            inputs: Default::default(),
            schema_domain,
        },
        by_file: IndexMap::new(),
        stack: Vec::new(),
        failed: false,
    };
    let module = loader.module(map, root, None, diags)?;
    loader.program.instances.push(Instance {
        module,
        parent: None,
        import: None,
        imports: IndexMap::new(),
    });
    loader.stack.push(root);
    loader.imports(map, InstanceId::ROOT, diags);
    if loader.failed {
        None
    } else {
        Some(loader.program)
    }
}

fn load_problem(map: &SourceMap, file: FileId, p: LoadProblem, at: Option<Span>) -> Diagnostic {
    let name = &map.get(file).name;
    let span = at.unwrap_or(Span::new(file, 0, 0));
    match p {
        LoadProblem::NotFound => {
            Diagnostic::error(Code::E0006, span, format!("cannot find `{name}`"))
                .label("no such file")
        }
        LoadProblem::Io(e) => {
            Diagnostic::error(Code::E0006, span, format!("cannot read `{name}`: {e}"))
        }
        LoadProblem::TooLarge { bytes } => Diagnostic::error(
            Code::E0004,
            span,
            match bytes {
                Some(b) => format!(
                    "`{name}` is {b} bytes; workload files may be at most {} bytes",
                    crate::source::MAX_FILE_BYTES
                ),
                None => format!(
                    "`{name}` holds more than {} bytes, the most a workload file may",
                    crate::source::MAX_FILE_BYTES
                ),
            },
        ),
        LoadProblem::NotRegular(kind) => Diagnostic::error(
            Code::E0006,
            span,
            format!("cannot read `{name}`: it is {kind}, not a regular file"),
        )
        .label("not a regular file"),
        LoadProblem::NotUtf8 { offset } => Diagnostic::error(
            Code::E0003,
            Span::new(file, offset, offset + 1),
            format!("`{name}` is not valid UTF-8"),
        )
        .label("invalid byte here"),
    }
}

struct Loader {
    program: Program,
    by_file: IndexMap<FileId, usize>,
    /// Files being imported, outermost first, for cycle detection.
    stack: Vec<FileId>,
    failed: bool,
}

impl Loader {
    /// `imported_at`: the import's path, for a file whose own lines cannot be shown.
    fn module(
        &mut self,
        map: &SourceMap,
        file: FileId,
        imported_at: Option<Span>,
        diags: &mut Diagnostics,
    ) -> Option<usize> {
        if let Some(&m) = self.by_file.get(&file) {
            return Some(m);
        }
        let ast = match syntax::parse(map, file) {
            Ok(ast) => ast,
            Err(d) => {
                // The error's own position is given without its line; the import is where
                // the reader can look.
                let d = match imported_at {
                    Some(at) if !map.get(file).quoted => d.also(at, "imported here"),
                    _ => d,
                };
                diags.push(d);
                self.failed = true;
                return None;
            }
        };
        let is_root = self.program.modules.is_empty();
        if is_root && ast.items.is_empty() {
            let text = &map.get(file).text;
            let at = text.len() - text.trim_start().len();
            diags.push(
                Diagnostic::error(
                    Code::E0109,
                    Span::new(file, at, at),
                    "the file declares nothing",
                )
                .label("expected a workload, param, target, schema, query, ingest or run")
                .note("a workload needs at least one declaration; see docs/language.md"),
            );
            self.failed = true;
            return None;
        }
        let mut module = Module {
            file,
            dir: map.get(file).dir().map(Path::to_path_buf),
            workload: None,
            matrix: None,
            decls: IndexMap::new(),
            concurrent: Vec::new(),
        };
        for item in ast.items {
            let decl = match item {
                ast::Item::Workload(w) => {
                    if !is_root {
                        diags.push(not_in_module(w.span, "a workload header"));
                    } else if let Some(first) = &module.workload {
                        diags.push(
                            Diagnostic::error(Code::E0108, w.span, "a second workload header")
                                .label("only one `workload` block is allowed")
                                .also(first.span, "the first one is here"),
                        );
                    } else {
                        module.workload = Some(w);
                    }
                    continue;
                }
                ast::Item::Matrix(m) => {
                    if !is_root {
                        diags.push(not_in_module(m.span, "a matrix"));
                    } else if let Some(first) = &module.matrix {
                        diags.push(
                            Diagnostic::error(Code::E0108, m.span, "a second matrix")
                                .label("put every axis in one `matrix` block")
                                .also(first.span, "the first one is here"),
                        );
                    } else {
                        module.matrix = Some(m);
                    }
                    continue;
                }
                ast::Item::Concurrent(c) => {
                    if !is_root {
                        diags.push(not_in_module(c.span, "a concurrent block"));
                    } else {
                        module.concurrent.push(c);
                    }
                    continue;
                }
                ast::Item::Import(i) => Decl::Import(i),
                ast::Item::Param(p) => Decl::Param(p),
                ast::Item::Target(t) => Decl::Target(t),
                ast::Item::Schema(s) => Decl::Schema(s),
                ast::Item::Query(q) => Decl::Query(q),
                ast::Item::Hook(h) => Decl::Hook(h),
                ast::Item::Ingest(i) => {
                    if !is_root {
                        diags.push(not_in_module(i.span, "an ingest block"));
                        continue;
                    }
                    Decl::Ingest(i)
                }
                ast::Item::Run(r) => {
                    if !is_root {
                        diags.push(not_in_module(r.span, "a run block"));
                        continue;
                    }
                    Decl::Run(r)
                }
            };
            let name = match &decl {
                Decl::Param(d) => &d.name,
                Decl::Target(d) => &d.name,
                Decl::Schema(d) => &d.name,
                Decl::Query(d) => &d.name,
                Decl::Hook(d) => &d.name,
                Decl::Ingest(d) => &d.name,
                Decl::Run(d) => &d.name,
                Decl::Import(d) => &d.alias,
            }
            .clone();
            if let Some(first) = module.decls.get(&name.name) {
                diags.push(
                    Diagnostic::error(
                        Code::E0103,
                        name.span,
                        format!("`{}` is declared twice", name.name),
                    )
                    .label(format!("a second declaration of `{}`", name.name))
                    .also(
                        first.name_span(),
                        format!("first declared here as a {}", first.kind()),
                    )
                    .note("params, targets, schemas, queries, hooks, blocks and import aliases share one namespace"),
                );
                continue;
            }
            module.decls.insert(name.name, decl);
        }
        self.program.modules.push(module);
        let id = self.program.modules.len() - 1;
        self.by_file.insert(file, id);
        Some(id)
    }

    fn imports(&mut self, map: &mut SourceMap, inst: InstanceId, diags: &mut Diagnostics) {
        let module = self.program.instances[inst.0].module;
        let file = self.program.modules[module].file;
        let imports: Vec<ast::Import> = self.program.modules[module]
            .decls
            .values()
            .filter_map(|d| match d {
                Decl::Import(i) => Some(i.clone()),
                _ => None,
            })
            .collect();
        for import in imports {
            if self.program.instances.len() >= MAX_INSTANCES {
                diags.push(
                    Diagnostic::error(
                        Code::E0102,
                        import.span,
                        format!("more than {MAX_INSTANCES} module instances"),
                    )
                    .label("the import graph is too large"),
                );
                self.failed = true;
                return;
            }
            let Some(target) = self.resolve(map, file, &import, diags) else {
                self.failed = true;
                continue;
            };
            if let Some(pos) = self.stack.iter().position(|&f| f == target) {
                let mut chain: Vec<String> = self.stack[pos..]
                    .iter()
                    .map(|f| map.get(*f).name.clone())
                    .collect();
                chain.push(map.get(target).name.clone());
                diags.push(
                    Diagnostic::error(Code::E0102, import.path.span, "import cycle")
                        .label(format!(
                            "`{}` is already being imported",
                            map.get(target).name
                        ))
                        .note(format!("the cycle: {}", chain.join(" -> "))),
                );
                self.failed = true;
                continue;
            }
            let Some(module) = self.module(map, target, Some(import.path.span), diags) else {
                continue;
            };
            let decls = &self.program.modules[module].decls;
            for arg in &import.args {
                if !matches!(decls.get(&arg.name.name), Some(Decl::Param(_))) {
                    let params: Vec<&str> = decls
                        .iter()
                        .filter(|(_, d)| matches!(d, Decl::Param(_)))
                        .map(|(k, _)| k.as_str())
                        .collect();
                    let mut d = Diagnostic::error(
                        Code::E0107,
                        arg.name.span,
                        format!(
                            "`{}` declares no param `{}`",
                            map.get(target).name,
                            arg.name
                        ),
                    )
                    .label("unknown import argument")
                    .note(if params.is_empty() {
                        "the module declares no params".to_string()
                    } else {
                        format!("its params: {}", params.join(", "))
                    });
                    if let Some(s) = crate::diag::suggest(&arg.name.name, params.iter().copied()) {
                        d = d.note(format!("did you mean `{s}`?"));
                    }
                    diags.push(d);
                }
            }
            if let Some(dup) = import
                .args
                .iter()
                .enumerate()
                .find(|(i, a)| import.args[..*i].iter().any(|b| b.name.name == a.name.name))
            {
                diags.push(
                    Diagnostic::error(
                        Code::E0107,
                        dup.1.name.span,
                        format!("`{}` is given twice", dup.1.name),
                    )
                    .label("duplicate import argument"),
                );
            }
            self.program.instances.push(Instance {
                module,
                parent: Some(inst),
                import: Some(import.clone()),
                imports: IndexMap::new(),
            });
            let child = InstanceId(self.program.instances.len() - 1);
            self.program.instances[inst.0]
                .imports
                .insert(import.alias.name.clone(), child);
            self.stack.push(target);
            self.imports(map, child, diags);
            self.stack.pop();
        }
    }

    fn resolve(
        &mut self,
        map: &mut SourceMap,
        from: FileId,
        import: &ast::Import,
        diags: &mut Diagnostics,
    ) -> Option<FileId> {
        let Some(path) = import.path.as_plain() else {
            diags.push(
                Diagnostic::error(
                    Code::E0101,
                    import.path.span,
                    "import paths cannot interpolate",
                )
                .label("write the path literally"),
            );
            return None;
        };
        let not_found = |what: String| {
            Diagnostic::error(
                Code::E0101,
                import.path.span,
                format!("cannot import `{path}`"),
            )
            .label(what)
        };
        let stdlib_rest = if let Some(rest) = path.strip_prefix("std/") {
            Some(rest.to_string())
        } else {
            match &map.get(from).origin {
                Origin::Stdlib(me) => {
                    let dir = Path::new(me).parent().unwrap_or(Path::new(""));
                    normalize(&dir.join(&path)).map(|p| p.to_string_lossy().replace('\\', "/"))
                }
                Origin::Disk(_) => None,
            }
        };
        if let Some(rest) = stdlib_rest {
            return match map.load_stdlib(&rest) {
                Some(id) => Some(id),
                None => {
                    let mut d = not_found(format!("no stdlib module `std/{rest}`"));
                    let modules = crate::source::stdlib_modules();
                    d = d.note(format!(
                        "the stdlib has: {}",
                        modules
                            .iter()
                            .map(|m| format!("std/{m}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                    diags.push(d);
                    None
                }
            };
        }
        let dir = map.get(from).dir().unwrap_or(Path::new("")).to_path_buf();
        let full = dir.join(&path);
        let origin = Origin::Disk(full.clone());
        if let Some(id) = map.find(&origin) {
            return Some(id);
        }
        let (id, problem) = map.load_import(&full);
        if let Some(p) = problem {
            let d = match p {
                LoadProblem::NotFound => not_found(format!("no file at `{}`", full.display()))
                    .note("relative imports resolve against the importing file's folder; `std/...` names the stdlib"),
                p @ LoadProblem::NotUtf8 { .. } => load_problem(map, id, p, Some(import.path.span))
                    .also(import.path.span, "imported here"),
                other => load_problem(map, id, other, Some(import.path.span)),
            };
            diags.push(d);
            return None;
        }
        Some(id)
    }
}

fn not_in_module(span: Span, what: &str) -> Diagnostic {
    Diagnostic::error(Code::E0106, span, format!("{what} in an imported module"))
        .label("only the workload being run may declare this")
        .note("modules may declare params, targets, schemas, queries and hooks")
}

/// Resolves `.` and `..` without touching the file system; `None` if it climbs above the root.
fn normalize(p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(s) => out.push(s),
            _ => return None,
        }
    }
    Some(out)
}
