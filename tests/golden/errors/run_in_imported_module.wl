// The module declares a run block, which only the workload being run may do.
import "support/module_with_run.wl" as lib
