//! Rhai hooks at run time: the sandboxed engine (also used by `check::hooks` to compile every
//! script once at check time), the `ctx` object a script sees, and the conversion of what
//! `request(ctx)` returns into an HTTP request or a SQL instance. docs/scripting.md is the
//! user's reference; this module must match it.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::{HeaderMap, Method};
use rhai::packages::{
    BasicArrayPackage, BasicBlobPackage, BasicMapPackage, BasicMathPackage, BitFieldPackage,
    CorePackage, LogicPackage, MoreStringPackage, Package,
};
use rhai::{CallFnOptions, Dynamic, Engine, EvalAltResult, FuncArgs, Position, Scope, AST};

use crate::gen::rng::{key_at, key_prefix, Rng};
use crate::gen::route::fnv1a64;
use crate::value::BindValue;
use crate::value::Value;

mod convert;
mod ctx;
mod split;
#[cfg(test)]
mod tests;

use ctx::{Ctx, RngState, Shared};

/// Operations (roughly: expressions and statements evaluated) one call may take.
pub const MAX_OPERATIONS: u64 = 1_000_000;
/// Bytes in one string.
pub const MAX_STRING_SIZE: usize = 8 << 20;
/// Elements in one array or BLOB.
pub const MAX_ARRAY_SIZE: usize = 1_000_000;
/// Entries in one map.
pub const MAX_MAP_SIZE: usize = 100_000;
/// Nested function calls.
pub const MAX_CALL_LEVELS: usize = 64;
/// Nesting of expressions at the top level and inside functions (checked when compiling).
pub const MAX_EXPR_DEPTHS: (usize, usize) = (64, 32);
/// Wall-clock time one call of `request` or `response` may take. The operations limit alone
/// does not bound time: Rhai re-measures a whole array or map after each method call on it,
/// so growing a large array costs time quadratic in its size.
pub const MAX_CALL_TIME: Duration = Duration::from_secs(1);
/// Wall-clock time one call of `init` may take.
pub const MAX_INIT_TIME: Duration = Duration::from_secs(10);
/// Native stack one call may use. Rhai evaluates recursively, and 64 call levels of nested
/// expressions can overflow a 2 MiB thread stack (tokio's default) and abort the process; a
/// call that goes deeper than this stops with an error instead.
pub const MAX_STACK: usize = 1 << 20;

/// The clock is read once every this many operations.
const CLOCK_EVERY: u64 = 64;

/// The bounds of the call running on this thread: when it must stop, and the address of the
/// stack where it started.
#[derive(Clone, Copy)]
struct Bounds {
    deadline: Instant,
    stack_base: usize,
}

thread_local! {
    static BOUNDS: Cell<Option<Bounds>> = const { Cell::new(None) };
}

/// The tokens `on_progress` stops a call with.
const OUT_OF_TIME: &str = "wlrun: out of time";
const OUT_OF_STACK: &str = "wlrun: out of stack";

/// An address in the current stack frame.
#[inline(always)]
fn stack_here() -> usize {
    let probe = 0u8;
    std::ptr::from_ref(std::hint::black_box(&probe)) as usize
}

/// The sandboxed engine: no file, network or process access (no module resolver, no `eval`),
/// and limits on operations per call, string, array and map sizes and call depth.
pub fn engine() -> rhai::Engine {
    let mut e = Engine::new_raw();
    // The standard library without the time package (`timestamp()` reads the clock, which
    // would make a request stream depend on when it runs), in one module: Rhai starts every
    // call with an empty function cache and looks each function up in one global module after
    // another, so eight packages made a `to_string` or a `+=` eight lookups on every request.
    // A later package's function wins over an earlier one's, as it did when each was
    // registered on its own.
    let mut std = rhai::Module::new();
    for package in [
        CorePackage::new().as_shared_module(),
        BitFieldPackage::new().as_shared_module(),
        LogicPackage::new().as_shared_module(),
        BasicMathPackage::new().as_shared_module(),
        BasicArrayPackage::new().as_shared_module(),
        BasicBlobPackage::new().as_shared_module(),
        BasicMapPackage::new().as_shared_module(),
        MoreStringPackage::new().as_shared_module(),
    ] {
        std.combine(rhai::Module::clone(&package));
    }
    e.register_global_module(std.into());
    e.set_module_resolver(rhai::module_resolvers::DummyModuleResolver::new());
    e.disable_symbol("eval");
    e.disable_symbol("import");
    // An undeclared variable is a compile error, so `wlrun check` finds the typo.
    e.set_strict_variables(true);
    e.set_max_operations(MAX_OPERATIONS);
    e.set_max_string_size(MAX_STRING_SIZE);
    e.set_max_array_size(MAX_ARRAY_SIZE);
    e.set_max_map_size(MAX_MAP_SIZE);
    e.set_max_call_levels(MAX_CALL_LEVELS);
    e.set_max_expr_depths(MAX_EXPR_DEPTHS.0, MAX_EXPR_DEPTHS.1);
    e.on_progress(|ops| {
        let b = BOUNDS.with(Cell::get)?;
        if b.stack_base.abs_diff(stack_here()) > MAX_STACK {
            return Some(Dynamic::from(OUT_OF_STACK));
        }
        if ops % CLOCK_EVERY == 0 && Instant::now() > b.deadline {
            return Some(Dynamic::from(OUT_OF_TIME));
        }
        None
    });
    // A script sees the secrets it sends, and may print them or what a server said back.
    e.on_print(|s| {
        sayln!("hook: {s}");
    });
    e.on_debug(
        |s, source, pos| match (source, pos.line(), pos.position()) {
            (Some(src), Some(l), Some(c)) => sayln!("hook: {src}:{l}:{c}: {s}"),
            (Some(src), ..) => sayln!("hook: {src}: {s}"),
            _ => sayln!("hook: {s}"),
        },
    );
    // `sleep` (from the core package) would stall the worker's thread.
    e.register_fn("sleep", |_: rhai::INT| -> Result<(), Box<EvalAltResult>> {
        Err("sleep() is not available in hooks".into())
    });
    e.register_fn(
        "sleep",
        |_: rhai::FLOAT| -> Result<(), Box<EvalAltResult>> {
            Err("sleep() is not available in hooks".into())
        },
    );
    split::register(&mut e);
    ctx::register(&mut e);
    e
}

/// A compiled hook script; cheap to clone, shared by the workers of a run.
#[derive(Clone)]
pub struct Script {
    engine: Arc<Engine>,
    ast: Arc<AST>,
    name: Arc<str>,
}

impl Script {
    /// Compiles `source`; `name` is how messages name the file. The error says
    /// `name:line:col: message`.
    pub fn compile(name: &str, source: &str) -> Result<Script, String> {
        let engine = engine();
        let mut ast = engine.compile(source).map_err(|e| {
            let pos = e.position();
            match (pos.line(), pos.position()) {
                (Some(l), Some(c)) => format!("{name}:{l}:{c}: {}", e.0),
                (Some(l), None) => format!("{name}:{l}: {}", e.0),
                _ => format!("{name}: {}", e.0),
            }
        })?;
        ast.set_source(name);
        Ok(Script {
            engine: Arc::new(engine),
            ast: Arc::new(ast),
            name: name.into(),
        })
    }

    /// Whether the script defines `function` (any arity).
    pub fn has(&self, function: &str) -> bool {
        self.ast.iter_functions().any(|f| f.name == function)
    }

    fn has_arity(&self, function: &str, arity: usize) -> bool {
        self.ast
            .iter_functions()
            .any(|f| f.name == function && f.params.len() == arity)
    }

    /// One worker's hook state: runs `init(ctx)` when the script defines it; its return value
    /// becomes `ctx.state` for this worker's calls.
    pub fn worker(&self, spec: WorkerSpec) -> Result<HookWorker, HookError> {
        let init_stream = fnv1a64(format!("hook:{}:init", spec.hook).as_bytes());
        let request_stream = fnv1a64(format!("hook:{}:request", spec.hook).as_bytes());
        let state = Dynamic::UNIT.into_shared();
        let state_addr = state
            .read_lock::<Dynamic>()
            .map_or(0, |s| std::ptr::from_ref::<Dynamic>(&*s) as usize);
        let shared = Arc::new(Shared {
            worker: rhai::INT::try_from(spec.worker).unwrap_or(rhai::INT::MAX),
            workers: rhai::INT::try_from(spec.workers).unwrap_or(rhai::INT::MAX),
            params: convert::params(&spec.params),
            state,
            state_addr,
            rng: Mutex::new(RngState {
                rng: Rng::new(spec.seed, init_stream, 0, spec.worker),
                zipf: None,
            }),
            counters: Mutex::new(Default::default()),
        });
        let mut w = HookWorker {
            engine: self.engine.clone(),
            ast: self.ast.clone(),
            name: self.name.clone(),
            shared,
            scope: Scope::new(),
            prefix: key_prefix(spec.seed, request_stream, 0),
            index: 0,
            offset_ns: 0,
            has_response: self.has_arity("response", 2),
            header_cache: Default::default(),
        };
        if self.has_arity("init", 1) {
            let state = w.call("init", 1, MAX_INIT_TIME, (w.ctx(),))?.flatten();
            let mut cell = w.shared.state.clone();
            let Some(mut s) = cell.write_lock::<Dynamic>() else {
                return Err(HookError {
                    message: format!("hook `{}`, init(): the worker state is locked", self.name),
                });
            };
            *s = state;
        }
        Ok(w)
    }
}

/// What a worker's `ctx` is made from.
#[derive(Clone, Debug)]
pub struct WorkerSpec {
    /// The workload seed: every RNG stream derives from it.
    pub seed: u64,
    /// The hook's name in the workload: the RNG stream is named after it.
    pub hook: String,
    pub worker: u64,
    pub workers: u64,
    /// The cell's params (`ctx.params`).
    pub params: Vec<(String, Value)>,
}

/// One worker's engine state: `ctx` and its RNG, the custom counters.
pub struct HookWorker {
    engine: Arc<Engine>,
    ast: Arc<AST>,
    name: Arc<str>,
    shared: Arc<Shared>,
    /// Reused by every call (and rewound after it), so a call creates no scope.
    scope: Scope<'static>,
    /// The key prefix of the request stream: request `i` draws from `key_at(prefix, i)`.
    prefix: u64,
    index: u64,
    offset_ns: u64,
    has_response: bool,
    header_cache: convert::HeaderCache,
}

impl HookWorker {
    /// Calls `function(ctx)` for request number `index` (0-based in the run; warm-up requests
    /// have indices of their own), intended `offset` after the start of the round.
    pub fn request(
        &mut self,
        function: &str,
        index: u64,
        offset: Duration,
    ) -> Result<Built, HookError> {
        self.begin(index, offset);
        let ret = self.call(function, 1, MAX_CALL_TIME, (self.ctx(),))?;
        convert::built(ret, &mut self.header_cache).map_err(|m| self.error(function, m))
    }

    /// Whether the script has a `response(ctx, resp)` to call.
    pub fn has_response(&self) -> bool {
        self.has_response
    }

    /// Calls `response(ctx, resp)` for the request last built.
    pub fn response(&mut self, resp: &ResponseView<'_>) -> Result<Verdict, HookError> {
        if !self.has_response {
            return Ok(Verdict::Ok);
        }
        let ret = self.call(
            "response",
            2,
            MAX_CALL_TIME,
            (self.ctx(), convert::response_map(resp)),
        )?;
        convert::verdict(ret).map_err(|m| self.error("response", m))
    }

    /// The counters `ctx.count(...)` added to, since the worker started.
    pub fn counters(&self) -> BTreeMap<String, i64> {
        self.shared
            .counters()
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect()
    }

    /// Request `index` starts: `ctx.index` and `ctx.offset` change and the RNG is re-keyed, so
    /// the draws depend on (seed, hook, index) only.
    fn begin(&mut self, index: u64, offset: Duration) {
        self.index = index;
        self.offset_ns = u64::try_from(offset.as_nanos()).unwrap_or(u64::MAX);
        self.shared.rng().rng = Rng::from_key(key_at(self.prefix, index));
    }

    fn ctx(&self) -> Ctx {
        Ctx {
            shared: self.shared.clone(),
            index: self.index,
            offset_ns: self.offset_ns,
        }
    }

    /// Calls `function` (which takes `arity` parameters) within the sandbox's bounds, `limit`
    /// its wall-clock time.
    fn call(
        &mut self,
        function: &str,
        arity: usize,
        limit: Duration,
        args: impl FuncArgs,
    ) -> Result<Dynamic, HookError> {
        /// Restores the bounds however the call ends.
        struct Restore(Option<Bounds>);
        impl Drop for Restore {
            fn drop(&mut self) {
                BOUNDS.with(|b| b.set(self.0));
            }
        }
        let bounds = Bounds {
            deadline: Instant::now() + limit,
            stack_base: stack_here(),
        };
        let _restore = Restore(BOUNDS.with(|b| b.replace(Some(bounds))));
        let options = CallFnOptions::new().eval_ast(false).rewind_scope(true);
        self.engine
            .call_fn_with_options::<Dynamic>(options, &mut self.scope, &self.ast, function, args)
            .map_err(|e| HookError {
                message: describe(&self.name, function, arity, limit, &e),
            })
    }

    fn error(&self, function: &str, message: String) -> HookError {
        HookError {
            message: format!("hook `{}`, {function}(): {message}", self.name),
        }
    }
}

/// Thousands separated by commas: 1,000,000.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The message of a script error: the file, the entry point, what went wrong (a broken limit
/// named with its value), where, and in which nested function.
fn describe(
    name: &str,
    function: &str,
    arity: usize,
    time_limit: Duration,
    err: &EvalAltResult,
) -> String {
    let mut e = err;
    let mut pos = Position::NONE;
    let mut inner: Option<&str> = None;
    loop {
        match e {
            EvalAltResult::ErrorInFunctionCall(f, _, next, p) => {
                if !p.is_none() {
                    pos = *p;
                }
                inner = Some(f.as_str());
                e = next;
            }
            EvalAltResult::ErrorInModule(_, next, p) => {
                if !p.is_none() {
                    pos = *p;
                }
                e = next;
            }
            _ => break,
        }
    }
    if !e.position().is_none() {
        pos = e.position();
    }
    let what = match e {
        EvalAltResult::ErrorTooManyOperations(..) => format!(
            "too many operations (limit {} per call)",
            grouped(MAX_OPERATIONS)
        ),
        EvalAltResult::ErrorTerminated(token, ..)
            if token.clone().into_string().is_ok_and(|t| t == OUT_OF_TIME) =>
        {
            format!(
                "the call took too long (limit {} s of wall-clock time)",
                time_limit.as_secs_f64()
            )
        }
        EvalAltResult::ErrorTerminated(token, ..)
            if token.clone().into_string().is_ok_and(|t| t == OUT_OF_STACK) =>
        {
            format!(
                "the script nests too deeply (limit {} KiB of native stack per call)",
                MAX_STACK >> 10
            )
        }
        EvalAltResult::ErrorStackOverflow(..) => {
            format!("too many nested function calls (limit {MAX_CALL_LEVELS})")
        }
        EvalAltResult::ErrorDataTooLarge(what, ..) => {
            if what.contains("string") {
                format!(
                    "a string grew too long (limit {} MiB)",
                    MAX_STRING_SIZE >> 20
                )
            } else if what.contains("array") || what.contains("BLOB") {
                format!(
                    "an array or BLOB grew too large (limit {} elements)",
                    grouped(MAX_ARRAY_SIZE as u64)
                )
            } else if what.contains("map") {
                format!(
                    "a map grew too large (limit {} entries)",
                    grouped(MAX_MAP_SIZE as u64)
                )
            } else {
                format!("{what} is over the sandbox limit")
            }
        }
        EvalAltResult::ErrorFunctionNotFound(f, ..) if inner.is_none() && f == function => {
            format!(
                "the script defines no function `{function}` with {arity} parameter{}",
                if arity == 1 { "" } else { "s" }
            )
        }
        EvalAltResult::ErrorModuleNotFound(m, ..) => {
            format!("cannot import `{m}`: hooks cannot load modules")
        }
        EvalAltResult::ErrorRuntime(v, ..) if v.is_string() => v.to_string(),
        EvalAltResult::ErrorRuntime(v, ..) => format!("the script threw {v}"),
        other => other.to_string(),
    };
    let mut out = format!("hook `{name}`, {function}(): {what}");
    if let (Some(l), Some(c)) = (pos.line(), pos.position()) {
        out.push_str(&format!(" at line {l}, col {c}"));
    } else if let Some(l) = pos.line() {
        out.push_str(&format!(" at line {l}"));
    }
    if let Some(f) = inner {
        out.push_str(&format!(" (in {f}())"));
    }
    out
}

/// What `request(ctx)` built.
#[derive(Clone, Debug)]
pub enum Built {
    Http(HttpRequest),
    Sql { sql: String, binds: Vec<BindValue> },
}

#[derive(Clone, Debug)]
pub struct HttpRequest {
    pub method: Method,
    /// Starts with `/`; appended to the endpoint URL's base path.
    pub path: String,
    /// Shared with the hook's worker, which keeps the last ones parsed.
    pub headers: Arc<HeaderMap>,
    pub body: Bytes,
}

/// What `response(ctx, resp)` sees.
pub struct ResponseView<'a> {
    /// The HTTP status; 0 for a SQL endpoint.
    pub status: u16,
    pub headers: Option<&'a HeaderMap>,
    pub body: &'a [u8],
    /// Result rows (SQL endpoints); 0 for HTTP.
    pub rows: u64,
    pub latency: Duration,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Ok,
    Error(String),
}

/// A script that failed or broke a sandbox limit: the cell fails with this message.
#[derive(Clone, Debug)]
pub struct HookError {
    pub message: String,
}

impl std::fmt::Display for HookError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}
