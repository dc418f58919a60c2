// The 16 TSBS cpu-only query types against QuestDB, over three transports side by side.
//
// Reproduces the QuestDB query runs of the questdb/tsbs fork (`tsbs_generate_queries
// --use-case=cpu-only --format=questdb` + `tsbs_run_queries_questdb`) with its runbook settings:
// 1 worker (QuestDB parallelizes each query itself), 1,000 queries per type, scale 4,000,
// seed 123. Each query is sent with identical SQL and bind values over
//   pg    PostgreSQL wire (port 8812; TSBS's default `pgwire` transport),
//   http  the REST endpoint GET /exec (port 9000),
//   qwp   QuestDB Wire Protocol queries over WebSocket (port 9000),
// and the result of every query must agree across the three.
//
// Load the data first, at the same scale, with workloads/questdb-ingest.wl, e.g.
//   wlrun workloads/questdb-ingest.wl --only protocol=qwp --only ack=per_batch --only workers=16 \
//     --param hosts=4000

import "std/tsbs/queries-questdb.wl" as tsbsq (hosts = hosts)

workload questdb_queries {
  seed 123
  description "TSBS cpu-only queries (16 types) against QuestDB over PG wire, REST and QWP"
}

param hosts = 4000    // the scale the loaded data was generated with

// Where QuestDB listens: `--param 'pg_url="postgres://admin@10.0.0.2:8812/qdb"'` and the like
// point the run at another server.
param pg_url   = "postgres://admin:${env("QDB_PASSWORD", "quest")}@127.0.0.1:8812/qdb"
param http_url = "http://127.0.0.1:9000"
param qwp_url  = "ws://127.0.0.1:9000"

target questdb {
  dialect questdb
  pg   "${pg_url}"
  http "${http_url}" { path "/exec" }
  qwp  "${qwp_url}"
  count rows via pg sql "SELECT count(*) FROM ${table}"
}

run queries {
  against questdb via [pg, http, qwp]
  queries tsbsq.*
  workers 1
  count 1000 per query
  warmup 20
  require rows(cpu) > 0                    // an empty table would make every query look fast;
                                           // counted over each cell's own endpoint
  check same results across endpoints      // row count and checksum agree on pg, http and qwp
  expect error_rate < 0.1%
}
