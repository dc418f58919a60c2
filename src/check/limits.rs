//! The absolute limits of checking, beside the parser's (nesting, operators) and the loader's
//! (file size, module instances). Checking evaluates whatever a file asks for, so each of these
//! bounds the checker's stack, memory or time, or a later step's, for any input; each ends in a
//! positioned error. docs/language.md "Limits" states them.

use super::axes::AxisDef;
use super::program::{Decl, Program};
use crate::diag::{Code, Diagnostic, Diagnostics};
use crate::span::Ident;

/// How deeply evaluation may nest, counting every expression inside another and every param
/// read while evaluating one. One legal expression (64 levels of parentheses, each with a chain
/// of 128 operators) nested 8,000 levels, more than a 2 MiB stack holds; 256 leaves room for
/// any expression a person writes. Also the deepest a value may nest (lists in lists,
/// generators built on generators), since the plan and the generator walk values recursively.
pub const MAX_DEPTH: usize = 256;

/// How many params may be evaluated one inside another (a param reading a param reading ...):
/// each costs several frames, and real workloads chain a handful.
pub const MAX_PARAM_CHAIN: usize = 100;

/// The most memory one value may take, about (its text, and the size of every item, map entry
/// and generator node it holds), wherever evaluation builds it: as much as a workload file may
/// hold, while a few params doubling a value can no longer exhaust memory.
pub const MAX_VALUE_LEN: u64 = crate::source::MAX_FILE_BYTES as u64;

/// The most series a schema may declare. The generator computes every series' values before
/// its first row (about 1.2 KB each for TSBS cpu-only), so 10^8 keeps TSBS at 10^6 or 10^7
/// hosts legal while `for n in 0..2^63` is refused before anything is allocated.
pub const MAX_SERIES: u64 = 100_000_000;

/// The most phases checking lowers: the matrix's cells times the ingest and run blocks of the
/// root file. Every phase of every cell is lowered and kept (about 3 KB for the smallest, 6 KB
/// more in the plan), so 10,000 cells of 100 phases took 2.8 GB to check; 20,000 is hours of
/// benchmarking even at one second a phase.
pub const MAX_PHASES: usize = 20_000;

/// Whether the cells times the root's phases stay within [`MAX_PHASES`]; if not, an error at
/// the matrix's widest axis (or at the first phase past the limit, without a matrix).
pub(super) fn phases_fit(
    program: &Program,
    axes: &[AxisDef],
    cells: usize,
    diags: &mut Diagnostics,
) -> bool {
    let phases: Vec<&Ident> = program
        .root()
        .decls
        .values()
        .filter_map(|d| match d {
            Decl::Ingest(i) => Some(&i.name),
            Decl::Run(r) => Some(&r.name),
            _ => None,
        })
        .collect();
    let total = cells.saturating_mul(phases.len());
    if total <= MAX_PHASES {
        return true;
    }
    let why = "every phase of every cell is lowered when checking";
    let d = match axes.iter().max_by_key(|a| a.values.len()) {
        Some(widest) if cells > 1 => {
            let mut d = Diagnostic::error(
                Code::E0404,
                widest.span,
                format!(
                    "{cells} cells x {} phases = {total} phases; at most {MAX_PHASES}",
                    phases.len()
                ),
            )
            .label(format!("{} values", widest.values.len()));
            for a in axes.iter().filter(|a| a.span != widest.span) {
                d = d.also(a.span, format!("{} values", a.values.len()));
            }
            d.also(
                phases[0].span,
                format!("the first of {} phases", phases.len()),
            )
            .note(why)
            .note("narrow the matrix, or pin axes with --param or --only")
        }
        _ => {
            let first_over = phases[MAX_PHASES / cells.max(1)];
            Diagnostic::error(
                Code::E0404,
                first_over.span,
                format!("{total} phases; at most {MAX_PHASES}"),
            )
            .label("a phase past the limit")
            .note(why)
        }
    };
    diags.push(d);
    false
}
