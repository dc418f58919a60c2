// TSBS iot ingestion into QuestDB: the trucks' readings and diagnostics (std/tsbs/iot.wl),
// as `tsbs_load_questdb` loads them, over QWP, ILP/TCP and ILP/HTTP. TSBS has no QuestDB iot
// query generator (the questdb/tsbs README: "Supports ingestion only"), so this file loads only;
// workloads/tsbs-iot-postgres.wl has the queries PostgreSQL can run.
//
// TSBS's QuestDB line protocol: the string tags are tags (QuestDB makes them SYMBOLs) and the
// capacities travel as fields, as here where they are double columns; a null field is omitted.
//
//   wlrun workloads/tsbs-iot-questdb.wl --only protocol=qwp --param trucks=4000
//
// The two measurements load at the same time, as TSBS's loader interleaves them, each with its
// own connections; every cell waits until `count(*)` over PostgreSQL wire sees all their rows.

import "std/tsbs/iot.wl" as iot (trucks = trucks, end = 2016-01-01T00:00:00Z + duration)

workload tsbs_iot_questdb {
  seed 123
  description "TSBS iot (readings and diagnostics) into QuestDB over QWP, ILP/TCP and ILP/HTTP"
}

param trucks   = 1000    // tsbs --scale
param duration = 1d      // how much of TSBS's day to load; `--param duration=1h` for a quick run
param workers  = 4       // connections per measurement

param qwp_url      = "ws://127.0.0.1:9000"
param ilp_tcp_url  = "tcp://127.0.0.1:9009"
param ilp_http_url = "http://127.0.0.1:9000"
param pg_url       = "postgres://admin:${env("QDB_PASSWORD", "quest")}@127.0.0.1:8812/qdb"

target questdb {
  dialect questdb
  qwp      "${qwp_url}"
  ilp_tcp  "${ilp_tcp_url}"
  ilp_http "${ilp_http_url}"
  pg       "${pg_url}"
  count rows via pg sql "SELECT count(*) FROM ${table}"
}

matrix {
  protocol in [qwp, ilp_tcp, ilp_http]
}

ingest readings {
  into questdb via protocol
  rows iot.readings
  batch 10_000 rows          // tsbs_load --batch-size default
  workers workers
  setup recreate
  teardown keep
  verify visible within 120s
}

ingest diagnostics {
  into questdb via protocol
  rows iot.diagnostics
  batch 10_000 rows
  workers workers
  setup recreate
  teardown keep
  verify visible within 120s
}

concurrent load {
  phases readings, diagnostics
}
