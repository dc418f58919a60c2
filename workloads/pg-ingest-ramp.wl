// How fast can PostgreSQL take TSBS cpu-only rows, and does it keep up while the rate climbs?
//
// One continuous COPY send whose row rate steps and ramps: a steady start, a linear ramp to
// `top`, then `top` held (its first 10 s a warm-up, not counted). The rows are due where the
// integral of the rate says, each of the `workers` connections taking its share, so the load
// is the same on every run. Each stage is reported on its own: rows due, sent, acknowledged,
// unsent, its own rate and batch latency; a stage that sent less than 95% of its rows due fails
// the run, naming it. `probe visible` measures how far behind the sending the visible rows are.
//
//   PGUSER=me PGPASSWORD=secret PGDATABASE=bench  wlrun workloads/pg-ingest-ramp.wl --out runs/ramp
//   wlrun workloads/pg-ingest-ramp.wl --param top=200_000/s --param hosts=4000
//
// runs/ramp/series/ then shows the steps interval by interval (its `stage` column).

import "std/tsbs/cpu-only.wl" as tsbs (hosts = hosts, end = 2016-01-03T00:00:00Z)

workload pg_ingest_ramp {
  seed 123
  description "TSBS cpu-only into PostgreSQL with COPY: a step, a ramp to the top rate, the top held"
}

param hosts   = 1000                      // 1,000 hosts x 2 days at 10 s: 17,280,000 rows
param base    = 5_000/s                   // the first step
param top     = 50_000/s                  // where the ramp ends
param workers = 4

target postgres {
  dialect postgres
  pg "postgres://${env("PGUSER", "postgres")}:${env("PGPASSWORD", "postgres")}@127.0.0.1:5432/${env("PGDATABASE", "bench")}" {
    insert copy
  }
  count rows via pg sql "SELECT count(*) FROM ${table}"
}

ingest ramp {
  into postgres via pg
  rows tsbs.cpu
  batch 5_000 rows
  workers workers
  setup recreate
  teardown drop
  verify visible within 60s
  probe visible every 500ms within 30s
  stage 30s rate base                        // 150,000 rows at the first step
  stage 60s rate base to top                 // a linear ramp: its mean times 60 s
  stage 60s rate top warmup 10s              // the top held; its first 10 s not counted
}
