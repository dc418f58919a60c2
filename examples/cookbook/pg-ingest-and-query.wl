// Ingest and query at once, with freshness: rows go into PostgreSQL at a fixed rate while a
// query run reads the same table, and a probe measures how far behind the sending the visible
// rows are. The recipe docs/cookbook/ingest-and-query.md walks through.
//
//   PGUSER=me PGPASSWORD=secret PGDATABASE=bench  wlrun examples/cookbook/pg-ingest-and-query.wl
//   wlrun examples/cookbook/pg-ingest-and-query.wl --param rows_rate=50_000/s --param span=2m

import "std/tsbs/cpu-only.wl" as tsbs (hosts = hosts, end = 2016-01-02T00:00:00Z)

workload pg_ingest_and_query {
  seed 11
  description "TSBS cpu-only rows into PostgreSQL at a fixed rate, read at once, with freshness"
}

param hosts     = 100
param pg_url    = "postgres://${env("PGUSER", "postgres")}:${env("PGPASSWORD", "postgres")}@127.0.0.1:5432/${env("PGDATABASE", "postgres")}"
param rows_rate = 5_000/s          // rows per second, all workers together
param span      = 30s              // how long the ingest sends (and so how long the group runs)
param reads     = 50/s             // queries per second, open loop

target postgres {
  dialect postgres
  pg "${pg_url}" { insert copy }
  count rows via pg sql "SELECT count(*) FROM ${table}"
}

ingest load {
  into postgres via pg table "cookbook_fresh"
  rows tsbs.cpu
  batch 500 rows                   // small batches: the lag is measured per batch
  workers 2
  rate rows_rate
  duration span
  setup recreate
  teardown drop
  probe visible every 100ms within 10s
  verify visible within 30s
}

// The newest reading of each of a few hosts: what a dashboard asks while the data arrives.
query newest {
  label "newest reading of 3 random hosts"
  sql "SELECT hostname, max(timestamp) FROM cookbook_fresh
       WHERE hostname IN $1 GROUP BY hostname"
  bind $1 = sample(tsbs.cpu.hostname, 3)
}

run dashboard {
  against postgres.pg
  queries newest
  workers 2
  rate reads
  duration 1h                      // the group's `until` ends it with the ingest
  expect error_rate < 0.1%
}

concurrent mixed {
  phases load, dashboard
  until load
}
