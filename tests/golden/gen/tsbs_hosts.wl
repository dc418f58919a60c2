// TSBS cpu-only at a scale given on the command line (`--param hosts=1000000`), with as many
// 10-second readings per host as `seconds` spans: the large-cardinality cases of the gen tests
// and of `cargo bench --bench gen`.
param hosts = 4000
param seconds = 30s

import "std/tsbs/cpu-only.wl" as tsbs (hosts = hosts, end = 2016-01-01T00:00:00Z + seconds)

workload tsbs_hosts { seed 123 }
