// The two run directories beside this file are `wlrun compare`'s golden inputs (tests/compare.rs):
//
//   wlrun run tests/golden/compare/compare.wl --out tests/golden/compare/base --interval 0.05 -q
//   wlrun run tests/golden/compare/compare.wl --out tests/golden/compare/new --interval 0.05 -q \
//       --param hosts=80 --only workers=2
//
// The new run loads twice the rows, so its queries are slower, and has only one of the two cells.
import "std/tsbs/cpu-only.wl" as tsbs (hosts = hosts, start = start, end = start + 1h)

workload compare_golden {
  seed 42
  description "TSBS cpu-only into embedded SQLite, then 2 queries"
}

param hosts = 40
param start = 2016-01-01T00:00:00Z

target local {
  sqlite "compare-golden.db" { journal wal  synchronous normal }
}

matrix {
  workers in [1, 2]
}

ingest load {
  into local via sqlite
  rows tsbs.cpu
  batch 1_000 rows
  workers 1
  setup recreate
  teardown keep
  verify visible within 10s
}

query busiest_hosts {
  sql "SELECT hostname, avg(usage_user) AS mean_usage_user
       FROM cpu
       GROUP BY hostname
       ORDER BY mean_usage_user DESC
       LIMIT 3"
}

query over_threshold {
  sql "SELECT count(*) FROM cpu WHERE usage_user > $1"
  bind $1 = uniform(50, 100)
}

run explore {
  against local.sqlite
  queries busiest_hosts, over_threshold
  workers workers
  count 150 per query
}
