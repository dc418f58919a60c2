// TSBS cpu-only at a tiny scale: 3 hosts x 4 timestamps, for golden outputs in every format.
import "std/tsbs/cpu-only.wl" as tsbs (hosts = 3, end = 2016-01-01T00:00:40Z)

workload tsbs_tiny { seed 123 }
