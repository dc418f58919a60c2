// QuestDB's QWP write-up (the questdb/tsbs fork's QWP pull request and its blog post) as one
// file: every table of it is a set of cells here. docs/questdb-writeup.md maps each table to its
// cells and figures, and says what a run against a real QuestDB gives back.
//
//   part=ingest   TSBS cpu-only over QWP, ILP/TCP and ILP/HTTP x hosts {1,000, 4,000, 100,000,
//                 1,000,000} x input {live, replay} (x commit {per_batch, every 100,000 rows}
//                 for QWP only): rows sent, acknowledged and visible per second, commits, bytes
//                 per row on the socket, client and server CPU per row, and the rows/s the
//                 write-up's 14.7 Gbit/s link would carry at those bytes (computed);
//   part=queries  the 16 TSBS query types over PostgreSQL wire, REST and QWP, one transport a
//                 cell, with TSBS's runbook settings (1 worker, 1,000 queries per type): latency,
//                 time to the first result and the streaming rates, server CPU per query;
//   part=mixed    an ingest at a fixed rate, probed for how far behind its rows show, while
//                 lastpoint and high-cpu-all run against the same table.
//
// 36 cells (32 ingest: 16 QWP, 16 ILP; 3 query, 1 mixed). Every phase against QuestDB also
// samples the QuestDB process (the one listening on the pg port) and scrapes its /metrics. Narrow a run with `--only`, and scale it with `--param`, e.g.
//   wlrun plan workloads/questdb-writeup.wl
//   wlrun workloads/questdb-writeup.wl --only part=ingest --only protocol=qwp --param hosts=4000
//   wlrun workloads/questdb-writeup.wl --only part=queries   (after loading hosts=4000)
// The line-protocol cells also run against VictoriaMetrics (`--param db=victoria`, see
// workloads/questdb-ingest.wl for how to start it): `--only part=ingest --only protocol=ilp_http`.

import "std/tsbs/cpu-only.wl" as tsbs (hosts = hosts, end = 2016-01-01T00:00:00Z + duration)
import "std/tsbs/queries-questdb.wl" as tsbsq (hosts = query_hosts)

workload questdb_writeup {
  seed 123
  description "QuestDB's QWP write-up: ingest over QWP, ILP/TCP, ILP/HTTP live and replayed, the 16 TSBS queries over pg, http and qwp, and ingest beside queries"
}

// Which target the ingest cells load: `--param db=victoria` points them at VictoriaMetrics.
param db = questdb
// How much of TSBS's day each ingest cell generates, and at most how many of its rows it loads:
// at a million hosts a day is 8.64 billion rows, and a replayed cell holds all of its rows
// pre-encoded in memory (within `replay_budget`).
param duration      = 1d
param max_rows      = 20_000_000
param replay_budget = 8GiB
// Connections per ingest cell: the write-up's loader ran with one per core; the hand
// measurement of issue 32 with one.
param workers = 1
// The link of the write-up's split deployment.
param link = 14.7gbit
// The query and mixed cells: the scale they read (TSBS's runbook: 4,000 hosts, which an ingest
// cell loads and leaves), and the queries per type (the runbook: 1,000).
param query_hosts = 4000
param query_count = 1000
// The mixed cell: the ingest's fixed rate and how long it runs, and the probe's interval.
param mixed_rate = 100_000/s
param mixed_for  = 2min
param probe_every = 100ms

// Where QuestDB listens: `--param 'qwp_url="ws://10.0.0.2:9000"'` and the like point the cells
// at another server.
param qwp_url      = "ws://127.0.0.1:9000"
param ilp_tcp_url  = "tcp://127.0.0.1:9009"
param ilp_http_url = "http://127.0.0.1:9000"
param pg_url       = "postgres://admin:${env("QDB_PASSWORD", "quest")}@127.0.0.1:8812/qdb"
param http_url     = "http://127.0.0.1:9000"

// The QuestDB process is found by its pg port (the JVM holds 8812, 9000 and 9009 alike); its
// Prometheus endpoint needs `metrics.enabled=true` (QDB_METRICS_ENABLED=true). Neither needs to
// be there: a process not found is a warning, a failed scrape is counted, the phase goes on.
param metrics_url   = "http://127.0.0.1:9003/metrics"
param metrics_every = 1s

target questdb {
  dialect questdb
  // server.cpu_s, cpu_us_per_unit, rss_peak_bytes, read/write bytes of the QuestDB JVM.
  observe process listening pg
  // QuestDB's own counters (its docs' list; none of them is a CPU counter, so no `cpu`): its
  // commits and committed rows beside wlrun's `commits` and `rows_acked`, the WAL's written
  // and applied rows and its transaction lag, resident memory, GC time, queries served.
  observe metrics "${metrics_url}" every metrics_every
    keep "questdb_commits_total", "questdb_committed_rows_total", "questdb_rollbacks_total",
         "questdb_wal_written_rows_total", "questdb_wal_apply_written_rows_total",
         "questdb_wal_seq_txn", "questdb_wal_writer_txn", "questdb_memory_rss",
         "questdb_jvm_(major|minor)_gc_time_total",
         "questdb_pg_wire_queries_total", "questdb_json_queries_total"
  qwp      "${qwp_url}"
  ilp_tcp  "${ilp_tcp_url}"
  ilp_http "${ilp_http_url}"
  pg       "${pg_url}"
  http     "${http_url}" { path "/exec" }
  // Over REST, so that the count needs no more than the port the ingest already uses.
  count rows via http sql "SELECT count(*) FROM ${table}"
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
  part      in [ingest, queries, mixed]
  protocol  in [qwp, ilp_tcp, ilp_http] when part == ingest
  hosts     in [1000, 4000, 100000, 1000000]
  input     in [live, replay] when part == ingest
  // QWP's commit policy: TSBS's loader commits every batch; the official client defers and
  // commits far less often. `none` in every other cell, so ILP cells are not doubled.
  commit    in [per_batch, 100_000] when part == ingest and protocol == qwp
  transport in [pg, http, qwp] when part == queries
  // Queries and the mixed cell at the scale the queries read only.
  exclude part != ingest and hosts != query_hosts
}

// The write-up's ingest tables: the same rows live (generated while sending: the client's rate)
// and replayed (encoded before the clock: the server's and the wire's rate).
ingest load when part == ingest {
  into db via protocol table "cpu"
  rows tsbs.cpu limit max_rows
  batch 10_000 rows          // tsbs_load --batch-size default
  workers workers
  setup recreate             // every cell starts from an empty table
  teardown keep              // the 4,000-host cell leaves the data the query cells read
  replay when input == replay budget replay_budget
  commit commit              // QWP only: the ILP cells' plan says it does not apply
  verify visible within 300s
  link link
}

// The 16 TSBS query types, identical SQL and binds on each transport.
run tsbs_queries when part == queries {
  against questdb via transport
  queries tsbsq.*
  workers 1                  // QuestDB parallelizes each query itself
  count query_count per query
  warmup 20
  require rows(cpu) > 0      // an empty table would make every query look fast
  expect error_rate < 0.1%
}

// Ingest beside queries: rows at a fixed rate into the table the queries read, with how far
// behind the sending they show, while lastpoint and high-cpu-all run.
ingest paced when part == mixed {
  into questdb via qwp table "cpu"
  rows tsbs.cpu
  batch 1_000 rows
  rate mixed_rate
  duration mixed_for
  setup shared               // the queries read what the 4,000-host ingest cell loaded
  probe visible every probe_every
  link link
}

run reads when part == mixed {
  against questdb via pg
  queries tsbsq.lastpoint, tsbsq.high_cpu_all
  workers 2
  duration mixed_for
  expect error_rate < 0.1%
}

concurrent ingest_beside_queries {
  phases paced, reads
  until paced
}
