// Compare two runs in CI: the same workload run on the old build and on the new one, then
// `wlrun compare` says whether a figure got worse beyond a threshold (exit 1) or could not tell
// (exit 4). The recipe docs/cookbook/compare-in-ci.md walks through. Embedded SQLite: it runs
// on any CI machine, with no server.
//
//   wlrun examples/cookbook/ci-compare.wl --out runs/base     (on the old build)
//   wlrun examples/cookbook/ci-compare.wl --out runs/new      (on the new one)
//   wlrun compare runs/base runs/new --threshold 10%

import "std/tsbs/cpu-only.wl" as tsbs (hosts = hosts, start = start, end = start + 6h)

workload ci_compare {
  seed 5
  description "TSBS cpu-only into SQLite, then a timed query run to compare between builds"
}

param hosts     = 20
param start     = 2016-01-01T00:00:00Z
param sla_p99   = 50ms             // the run fails above this, whatever compare says
param rows_rate = 10_000/s         // the ingest's rows per second: 43,200 rows in 4.3 s
param reads     = 50/s             // queries per second, both workers together
param length    = 20s              // long enough for 20 one-second intervals: compare tests those

target local {
  sqlite "ci-compare.db" { journal wal  synchronous normal }
}

ingest load {
  into local via sqlite
  rows tsbs.cpu
  batch 1_000 rows
  workers 1
  rate rows_rate             // paced, so that it spans several intervals compare can test
  setup recreate
  teardown keep
  verify visible within 10s
}

query window_max {
  label "max usage_user of 2 hosts in a random hour"
  sql "SELECT hostname, max(usage_user) FROM cpu
       WHERE hostname IN $1 AND timestamp >= $2 AND timestamp < $3
       GROUP BY hostname"
  let w = window(start, start + 6h, 1h)
  bind $1 = sample(tsbs.cpu.hostname, 2)
  bind $2 = w.start
  bind $3 = w.end
}

// A fixed rate, not "as fast as it goes": the latency of the same load is what compares, and a
// closed loop on a shared CI machine measures its neighbours as much as the build. Keep the
// rate well below what the machine answers: past it, latency is queueing, not the build.
run timed {
  against local.sqlite
  queries window_max
  workers 2
  rate reads
  duration length
  require rows(cpu) > 0
  expect p99 < sla_p99
}
