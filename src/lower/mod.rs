//! Lowering: a checked workload becomes the Plan. Checking already lowered every cell with a
//! diagnostics sink (that is how it found value-dependent mistakes), so this step only assembles
//! the result; it cannot fail.

use crate::check::Checked;
use crate::plan::{Plan, WorkloadInfo, PLAN_FORMAT};

pub fn lower(checked: &Checked) -> Plan {
    let root = checked.program.root();
    let (name, description) = match &root.workload {
        Some(w) => (
            w.name.name.clone(),
            w.description.first().and_then(|d| d.as_plain()),
        ),
        None => (
            std::path::Path::new(&checked.file)
                .file_stem()
                .map_or_else(String::new, |s| s.to_string_lossy().into_owned()),
            None,
        ),
    };
    Plan {
        format: PLAN_FORMAT,
        workload: WorkloadInfo {
            name,
            file: checked.file.clone(),
            description,
            seed: checked.seed,
        },
        axes: checked.axes.clone(),
        cells: checked.lowered.clone(),
    }
}
