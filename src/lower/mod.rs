//! Lowering: a checked workload becomes a Plan.
use crate::check::Checked;
use crate::plan::{Plan, WorkloadInfo, PLAN_FORMAT};

pub fn lower(checked: &Checked) -> Plan {
    Plan {
        format: PLAN_FORMAT,
        workload: WorkloadInfo {
            name: String::new(),
            file: String::new(),
            description: None,
            seed: checked.seed,
        },
        axes: Vec::new(),
        cells: checked.lowered.clone(),
    }
}
