//! Lowering: a checked workload becomes the Plan. Checking already lowered every cell with a
//! diagnostics sink (that is how it found value-dependent mistakes), so this step only assembles
//! the result; it cannot fail.

use crate::check::Checked;
use crate::plan::{Plan, WorkloadInfo, PLAN_FORMAT};

pub fn lower(checked: &Checked) -> Plan {
    let root = checked.program.root();
    let name = match &root.workload {
        Some(w) => w.name.name.clone(),
        None => std::path::Path::new(&checked.file)
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned()),
    };
    let description = checked.description.clone();
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
