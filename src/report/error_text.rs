//! Errors by class as the terminal prints them: the first message of each under a phase, and
//! their counts in the final table.

use crate::plan::thousands;

/// The first message of each error class: the reason a run failed, in the human output too.
pub(super) fn error_lines(
    errors: &std::collections::BTreeMap<String, super::ErrorCount>,
) -> String {
    let mut out = String::new();
    for (class, e) in errors {
        out += &format!(
            "  {class} errors: {} (first: {})\n",
            thousands(e.count),
            e.first
        );
    }
    out
}

/// `2 sql, 1 timeout`: the error classes of a run and their counts.
pub(super) fn error_classes(
    errors: &std::collections::BTreeMap<String, super::ErrorCount>,
) -> String {
    if errors.is_empty() {
        return "-".into();
    }
    errors
        .iter()
        .map(|(class, e)| format!("{} {class}", thousands(e.count)))
        .collect::<Vec<_>>()
        .join(", ")
}
