// TSBS cpu-only ingestion into QuestDB over three protocols.
//
// Reproduces the QuestDB ingestion matrix built on the questdb/tsbs fork: the cpu-only data set
// (`tsbs_generate_data --use-case=cpu-only`, 1 day at 10 s, see std/tsbs/cpu-only.wl) loaded by
// `tsbs_load_questdb` with batches of 10,000 rows over
//   qwp       the binary columnar QuestDB Wire Protocol over WebSocket (port 9000), where a batch
//             is either only published or also waited on until the server acknowledges it;
//   ilp_tcp   InfluxDB line protocol over TCP (port 9009): no acknowledgement at all, a row
//             counts as sent once it is written to the socket;
//   ilp_http  InfluxDB line protocol over HTTP (port 9000): every request is answered.
// QuestDB applies rows from its WAL asynchronously, so every cell also waits until `count(*)`
// over PostgreSQL wire sees all the rows, and reports sent, acknowledged and visible separately.
//
// 3 protocols x 3 scales x 2 worker counts, and 2 ack policies for QWP only: 24 cells. At
// 100,000 hosts a cell is 864,000,000 rows; narrow the run with e.g.
//   wlrun workloads/questdb-ingest.wl --only protocol=qwp --param hosts=4000
//
// The same line-protocol cells run against VictoriaMetrics (`victoria-metrics
// -influxListenAddr=127.0.0.1:8089 -retentionPeriod=100y`: TSBS data is from 2016, older than
// its default retention), which stores one sample per field and is counted with PromQL:
//   wlrun workloads/questdb-ingest.wl --param db=victoria --only protocol=ilp_http \
//         --param hosts=1000 --param duration=1h

import "std/tsbs/cpu-only.wl" as tsbs (hosts = hosts, end = 2016-01-01T00:00:00Z + duration)

workload questdb_ingest {
  seed 123
  description "TSBS cpu-only (1 day, 10 s) into QuestDB over QWP, ILP/TCP and ILP/HTTP"
}

// Which target the cells load: `--param db=victoria` points them at VictoriaMetrics.
param db = questdb
// How much of TSBS's day to load; `--param duration=1h` for a quick run.
param duration = 1d

// Where QuestDB listens: `--param 'qwp_url="ws://10.0.0.2:9000"'` and the like point the cells
// at another server.
param qwp_url      = "ws://127.0.0.1:9000"
param ilp_tcp_url  = "tcp://127.0.0.1:9009"
param ilp_http_url = "http://127.0.0.1:9000"
param pg_url       = "postgres://admin:${env("QDB_PASSWORD", "quest")}@127.0.0.1:8812/qdb"
param http_url     = "http://127.0.0.1:9000"

target questdb {
  dialect questdb
  qwp      "${qwp_url}"
  ilp_tcp  "${ilp_tcp_url}"
  ilp_http "${ilp_http_url}"
  pg       "${pg_url}"
  http     "${http_url}"
  count rows via pg sql "SELECT count(*) FROM ${table}"
}

// VictoriaMetrics' HTTP port and its line-protocol TCP port (`-influxListenAddr`).
param vm_http_port = 8428
param vm_ilp_port  = 8089

target victoria {
  dialect victoriametrics
  ilp_tcp  "tcp://127.0.0.1:${vm_ilp_port}"
  ilp_http "http://127.0.0.1:${vm_http_port}"
  http     "http://127.0.0.1:${vm_http_port}" as api
  count samples via api promql "sum(count_over_time({__name__=~\"${table}_.*\"}[${end - start}]))"
}

matrix {
  protocol in [qwp, ilp_tcp, ilp_http]
  hosts    in [1000, 4000, 100000]
  workers  in [4, 16]
  // QWP only: `publish` counts a batch once it is sent and acknowledges everything at close;
  // `per_batch` waits for the server's acknowledgement of every batch. In the ILP cells the axis
  // is `none`: ILP/TCP never acknowledges, ILP/HTTP acknowledges every request.
  ack      in [publish, per_batch] when protocol == qwp
}

ingest load {
  into db via protocol table "cpu"
  rows tsbs.cpu
  batch 10_000 rows          // tsbs_load --batch-size default
  workers workers            // one connection per worker
  ack ack
  setup recreate             // every cell starts from an empty table
  teardown keep              // leave the last cell's data for workloads/questdb-queries.wl
  verify visible within 120s  // the target's count rule
}
