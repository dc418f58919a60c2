// The 16 TSBS cpu-only query types against plain PostgreSQL, on data this file loads first.
//
// What TSBS does (`tsbs_generate_data` + `tsbs_load_timescaledb`, then `tsbs_generate_queries
// --use-case=cpu-only --format=timescaledb` + `tsbs_run_queries_timescaledb`), in one file: the
// cpu-only data for `hosts` hosts over one day at 10 s, loaded with binary COPY into a fresh
// `cpu` table, then `per_query` instances of each query type, drawn from the seed, with the
// random windows and hosts TSBS draws (see std/tsbs/queries-postgres.wl for the SQL).
//
//   PGUSER=me PGPASSWORD=secret PGDATABASE=tsbs  wlrun workloads/tsbs-postgres.wl
//   wlrun workloads/tsbs-postgres.wl --param hosts=4000 --param per_query=1000   (TSBS's scale)
//
// cpu_max_all_32_24 draws 32 distinct hosts, so `hosts` must be at least 32.

import "std/tsbs/cpu-only.wl" as tsbs (hosts = hosts, start = start, end = start + 1d)
import "std/tsbs/queries-postgres.wl" as tsbsq (hosts = hosts, start = start, end = start + 1d + 1s)

workload tsbs_postgres {
  seed 123
  description "TSBS cpu-only: load one day into PostgreSQL with COPY, then the 16 query types"
}

param hosts     = 100                     // tsbs --scale
param start     = 2016-01-01T00:00:00Z    // tsbs --timestamp-start
param per_query = 100                   // instances of each query type
param workers   = 1                       // tsbs_run_queries --workers

target postgres {
  dialect postgres
  pg "postgres://${env("PGUSER", "postgres")}:${env("PGPASSWORD", "postgres")}@127.0.0.1:5432/${env("PGDATABASE", "tsbs")}" {
    insert     copy
    statements prepared
  }
  count rows via pg sql "SELECT count(*) FROM ${table}"
}

ingest load {
  into postgres via pg
  rows tsbs.cpu
  batch 10_000 rows
  workers 1
  setup recreate
  teardown keep              // the queries below read it
  verify visible within 60s
}

run tsbs_queries {
  against postgres.pg
  queries tsbsq.*
  workers workers
  count per_query per query
  warmup 16
  require rows(cpu) > 0      // an empty table would make every query look fast
}
