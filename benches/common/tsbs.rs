//! The TSBS data set the ingest benches time.

/// TSBS cpu-only at 4,000 hosts over `minutes` of 10 s epochs (24,000 rows a minute), imported
/// as `tsbs`; the benches add their targets and phases after it.
pub fn cpu_4000_hosts(minutes: u64) -> String {
    format!(
        "import \"std/tsbs/cpu-only.wl\" as tsbs (hosts = 4000, end = 2016-01-01T00:00:00Z + {minutes}m)\nworkload b {{ seed 9 }}\n"
    )
}
