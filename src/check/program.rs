//! The loaded program: parsed modules and their instances. A module imported twice with
//! different arguments is one module and two instances, each with its own param values.

use indexmap::IndexMap;

use crate::source::Origin;
use crate::span::FileId;
use crate::syntax::ast;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstanceId(pub usize);

impl InstanceId {
    pub const ROOT: InstanceId = InstanceId(0);
}

/// A declaration a name can refer to.
#[derive(Clone, Debug)]
pub enum Decl {
    Param(ast::Param),
    Target(ast::Target),
    Schema(ast::Schema),
    Query(ast::Query),
    Hook(ast::Hook),
    Ingest(ast::Ingest),
    Run(ast::Run),
    Import(ast::Import),
}

impl Decl {
    pub fn kind(&self) -> &'static str {
        match self {
            Decl::Param(_) => "param",
            Decl::Target(_) => "target",
            Decl::Schema(_) => "schema",
            Decl::Query(_) => "query",
            Decl::Hook(_) => "hook",
            Decl::Ingest(_) => "block (ingest)",
            Decl::Run(_) => "block (run)",
            Decl::Import(_) => "module alias",
        }
    }

    pub fn name_span(&self) -> crate::span::Span {
        match self {
            Decl::Param(d) => d.name.span,
            Decl::Target(d) => d.name.span,
            Decl::Schema(d) => d.name.span,
            Decl::Query(d) => d.name.span,
            Decl::Hook(d) => d.name.span,
            Decl::Ingest(d) => d.name.span,
            Decl::Run(d) => d.name.span,
            Decl::Import(d) => d.alias.span,
        }
    }
}

#[derive(Debug)]
pub struct Module {
    pub file: FileId,
    /// The folder relative paths (CSV, hooks) resolve against; `None` for stdlib modules.
    pub dir: Option<std::path::PathBuf>,
    pub workload: Option<ast::Workload>,
    pub matrix: Option<ast::Matrix>,
    /// Every named declaration, in file order; one namespace.
    pub decls: IndexMap<String, Decl>,
    /// `concurrent` groups, in file order (root only; their names are not in `decls`).
    pub concurrent: Vec<ast::Concurrent>,
}

#[derive(Debug)]
pub struct Instance {
    pub module: usize,
    pub parent: Option<InstanceId>,
    /// The import that made this instance (`None` for the root).
    pub import: Option<ast::Import>,
    /// Alias -> instance, for this instance's own imports.
    pub imports: IndexMap<String, InstanceId>,
}

#[derive(Debug)]
pub struct Program {
    pub modules: Vec<Module>,
    pub instances: Vec<Instance>,
    /// Files other than modules that checking read.
    pub inputs: Inputs,
    /// How `sample(schema.column)` finds its domain: by lowering the schema, which is `lower`'s
    /// work. `check` must not import `lower` (data flows check -> lower), so the compile entry
    /// hands the function in when it loads the program, and the evaluator calls it through
    /// this pointer: every evaluator of the program sees it, as when it was a direct call.
    pub schema_domain: SchemaDomainFn,
}

/// See [`Program::schema_domain`].
pub type SchemaDomainFn = for<'a> fn(
    &super::eval::Eval<'a>,
    InstanceId,
    &crate::syntax::ast::Schema,
    &crate::span::Ident,
) -> super::eval::Ev<crate::plan::Domain>;

/// The files besides modules that checking read (CSV tables, hook scripts, files to replay),
/// in the order first read: `--out` copies them so that the run's directory checks and runs as
/// the workload did. Interior mutability because they are found while evaluating, through
/// shared references to the program.
#[derive(Debug, Default)]
pub struct Inputs(std::sync::Mutex<indexmap::IndexSet<Origin>>);

impl Inputs {
    pub fn record(&self, origin: Origin) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(origin);
    }

    pub fn list(&self) -> Vec<Origin> {
        let set = self.0.lock().unwrap_or_else(|e| e.into_inner());
        set.iter().cloned().collect()
    }
}

impl Program {
    pub fn module_of(&self, i: InstanceId) -> &Module {
        &self.modules[self.instances[i.0].module]
    }

    pub fn instance(&self, i: InstanceId) -> &Instance {
        &self.instances[i.0]
    }

    pub fn root(&self) -> &Module {
        self.module_of(InstanceId::ROOT)
    }

    /// The value an import passes for a param of the imported module, if any.
    pub fn import_arg(&self, i: InstanceId, name: &str) -> Option<(&ast::Expr, InstanceId)> {
        let inst = self.instance(i);
        let import = inst.import.as_ref()?;
        let arg = import.args.iter().find(|a| a.name.name == name)?;
        Some((
            &arg.value,
            inst.parent.expect("an imported instance has a parent"),
        ))
    }
}
