//! TSBS cpu-only's column names (reference/tsbs.md §1), in the data set's order, for tests
//! that check what a server received or build the TSBS shape. Use with
//! `#[path = "common/tsbs_names.rs"] mod tsbs_names;`; unit tests in src/ use the same file as
//! `crate::gen::tsbs_names`.

#![allow(dead_code)]

/// The ten tags; `hostname` is the series key.
pub const TAGS: [&str; 10] = [
    "hostname",
    "region",
    "datacenter",
    "rack",
    "os",
    "arch",
    "team",
    "service",
    "service_version",
    "service_environment",
];

/// The ten `usage_*` gauges.
pub const GAUGES: [&str; 10] = [
    "usage_user",
    "usage_system",
    "usage_idle",
    "usage_nice",
    "usage_iowait",
    "usage_irq",
    "usage_softirq",
    "usage_steal",
    "usage_guest",
    "usage_guest_nice",
];
