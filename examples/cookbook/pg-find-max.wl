// The highest rate of one host's latest readings PostgreSQL answers with p99 under a bound:
// the recipe docs/cookbook/find-max-rate.md walks through.
//
//   PGUSER=me PGPASSWORD=secret PGDATABASE=bench  wlrun examples/cookbook/pg-find-max.wl
//   wlrun examples/cookbook/pg-find-max.wl --param pg_url=postgres://me:secret@db:5432/bench
//
// The load fills its own table first; the search then runs fixed-rate steps from `from`,
// doubling until a step breaks the SLA, bisecting to 5%, and measuring the answer once more.

import "std/tsbs/cpu-only.wl" as tsbs (hosts = hosts, start = start, end = start + span)

workload pg_find_max {
  seed 7
  description "the highest rate of latest-reading lookups PostgreSQL answers with p99 < 20 ms"
}

param hosts   = 100
param start   = 2016-01-01T00:00:00Z
param span    = 1h                 // 100 hosts x 1 h at 10 s: 36,000 rows
param pg_url  = "postgres://${env("PGUSER", "postgres")}:${env("PGPASSWORD", "postgres")}@127.0.0.1:5432/${env("PGDATABASE", "postgres")}"
param first   = 200/s              // the first step
param cap     = 20_000/s           // no step above this: the answer "cap" means "at least this"
param sla_p99 = 20ms               // the SLA: p99 under this, and under 0.1% errors
param samples = 1000               // answers per step: fewer make a p99 a guess
param workers = 8                  // a step these cannot keep on schedule breaks the SLA: raise for more
param settle  = 1s                 // each step's warm-up, at its own rate, not measured

target postgres {
  dialect postgres
  pg "${pg_url}" {
    insert     copy
    statements prepared
  }
  count rows via pg sql "SELECT count(*) FROM ${table}"
}

ingest load {
  into postgres via pg table "cookbook_findmax"
  rows tsbs.cpu
  batch 10_000 rows
  setup recreate
  teardown keep              // the search below reads it
  verify visible within 30s
}

query latest {
  label "latest reading of one host"
  sql "SELECT timestamp, usage_user FROM cookbook_findmax
       WHERE hostname = $1 ORDER BY timestamp DESC LIMIT 1"
  bind $1 = format("host_%d", uniform(0, hosts))
}

run max_rate {
  against postgres.pg
  queries latest
  workers workers
  warmup settle
  require rows(cookbook_findmax) > 0
  find max rate from first up to cap where p99 < sla_p99 and error_rate < 0.1% samples samples
}
