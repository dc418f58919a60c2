// How fast can QuestDB take TSBS cpu-only rows while what it shows stays fresh?
//
// QuestDB applies rows from its write-ahead log asynchronously: a row acknowledged over ILP/HTTP
// or QWP becomes visible to queries some time later, and under a heavy load that lag grows (on a
// real server 34.56 M rows became visible 24.8 s after the last was sent). This searches for the
// highest row rate whose visibility lag stays under 2 s at p99: fixed-rate steps (x2 until the
// lag breaks the bound, then bisecting to 5%), each after a 5 s warm-up, each long enough for
// 1,000 probes of `count(*)` every 100 ms, from an empty table (`setup recreate`).
//
//   wlrun workloads/questdb-fresh-max.wl --only protocol=ilp_http
//   wlrun workloads/questdb-fresh-max.wl --param 'lag=500ms' --param hosts=100000
//
// A step at rate R needs R x 105 s of rows: at the 4,000 hosts here TSBS's 10 s day holds
// 34.56 M rows, enough for steps up to 300,000 rows/s (the cap); for a faster server raise
// both, e.g. --param hosts=40000 --param max_rate=3_000_000/s. A step the rows cannot fill
// ends the search, failed, saying so.

import "std/tsbs/cpu-only.wl" as tsbs (hosts = hosts, end = 2016-01-02T00:00:00Z)

workload questdb_fresh_max {
  seed 123
  description "The highest TSBS cpu-only row rate into QuestDB whose visibility lag stays under a bound"
}

param hosts = 4000
// The SLA: the visibility lag at p99 and how long after its last row a step may take to show.
param lag = 2s
param catch_up = 10s
param max_rate = 300_000/s

param ilp_http_url = "http://127.0.0.1:9000"
param qwp_url      = "ws://127.0.0.1:9000"
param http_url     = "http://127.0.0.1:9000"

target questdb {
  dialect questdb
  ilp_http "${ilp_http_url}"
  qwp      "${qwp_url}"
  http     "${http_url}"
  count rows via http sql "SELECT count(*) FROM ${table}"
}

matrix {
  protocol in [ilp_http, qwp]
}

ingest fresh_max {
  into questdb via protocol
  rows tsbs.cpu
  batch 10_000 rows
  workers 4
  setup recreate
  probe visible every 100ms within 60s
  warmup 5s
  find max rate from 50_000/s up to max_rate where lag_p99 < lag and visible_after < catch_up and errors == 0
}
