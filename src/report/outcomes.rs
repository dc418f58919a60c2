//! What a query type's instances found and changed beyond ok and failed (`not found when`,
//! `expect affected`, `then sql`), as the report keeps it and as the terminal shows it.

use serde::{Deserialize, Serialize};

use super::render::fmt_latency;
use super::Latency;
use crate::plan::thousands;

/// What a query type's instances found and changed, beyond ok and failed.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TypeOutcomes {
    /// Answered and judged not found (`not found when`): neither ok nor failed, no latency
    /// in `latency`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_found: u64,
    /// Rows its INSERT, UPDATE and DELETE statements changed, as the server counted them, over
    /// the answered instances; absent where none was counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affected: Option<u64>,
    /// `then sql`: each statement's latency (send to last row) within the instances, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepReport>,
}

/// One statement of a query's instances (`sql`, then each `then sql`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StepReport {
    /// Its position (1 = `sql`) and verb: `1 SELECT`, `2 UPDATE`.
    pub statement: String,
    pub latency: Latency,
}

pub(super) fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn ms(us: u64) -> String {
    fmt_latency(us as f64, 0.0, 10_000.0)
}

/// Per query type that has them: its not-found count, the rows it changed, and each of its
/// statements' latency.
pub(super) fn lines(types: &[super::QueryTypeReport]) -> String {
    let mut out = String::new();
    for t in types {
        let o = &t.outcomes;
        let mut parts = Vec::new();
        if o.not_found > 0 {
            parts.push(format!("{} not found", thousands(o.not_found)));
        }
        if let Some(n) = o.affected {
            parts.push(format!("{} rows changed", thousands(n)));
        }
        for s in &o.steps {
            parts.push(format!(
                "statement {} p50 {} p99 {}",
                s.statement,
                ms(s.latency.p50_us),
                ms(s.latency.p99_us)
            ));
        }
        if !parts.is_empty() {
            out += &format!("  {}: {}\n", t.name, parts.join(", "));
        }
    }
    out
}
