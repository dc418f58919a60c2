// One run split over shards: N `wlrun run --shard I/N` processes (on one machine, or the pods of
// a Kubernetes Indexed Job that `wlrun k8s` prints) each load and query their share, meet at
// barriers, and `wlrun merge` makes their run directories one. The recipe
// docs/cookbook/shards-and-kubernetes.md walks through.
//
//   wlrun run examples/cookbook/pg-sharded.wl --shard 0/2 --barrier 127.0.0.1:7471 --out runs/s0 &
//   wlrun run examples/cookbook/pg-sharded.wl --shard 1/2 --barrier 127.0.0.1:7471 --out runs/s1
//   wlrun merge runs/s0 runs/s1 --out runs/merged
//
// What sharding refuses (stages, find max rate, concurrent groups, probe visible; SQLite
// under `wlrun k8s`) this file does not use.

import "std/tsbs/cpu-only.wl" as tsbs (hosts = hosts, start = start, end = start + span)

workload pg_sharded {
  seed 13
  description "TSBS cpu-only into PostgreSQL, then a query run, split over shards"
}

param hosts   = 1000
param start   = 2016-01-01T00:00:00Z
param span    = 6h                 // 1,000 hosts x 6 h at 10 s: 2,160,000 rows, every shard's together
param queries = 2000               // query instances, every shard's together
// On Kubernetes 127.0.0.1 is the pod itself: `--param pg_host=...` names the server, and the
// PG* variables set where `wlrun k8s` runs go into a Secret the shards read.
param pg_host = "127.0.0.1"
param pg_url  = "postgres://${env("PGUSER", "postgres")}:${env("PGPASSWORD", "postgres")}@${pg_host}:5432/${env("PGDATABASE", "postgres")}"

target postgres {
  dialect postgres
  pg "${pg_url}" {
    insert     copy
    statements prepared
  }
  count rows via pg sql "SELECT count(*) FROM ${table}"
}

// Shard 0 alone recreates the table and counts it at the end, against every shard's rows.
ingest load {
  into postgres via pg table "cookbook_sharded"
  rows tsbs.cpu
  batch 10_000 rows
  workers 2                        // per shard: N shards open 2 N connections
  setup recreate
  teardown keep
  verify visible within 60s
}

query host_hour {
  label "max usage_user of one host in a random hour"
  sql "SELECT max(usage_user) FROM cookbook_sharded
       WHERE hostname = $1 AND timestamp >= $2 AND timestamp < $3"
  let w = window(start, start + span, 1h)
  bind $1 = format("host_%d", uniform(0, hosts))
  bind $2 = w.start
  bind $3 = w.end
  route by $1                      // a host's queries on one connection of each shard
}

run lookups {
  against postgres.pg
  queries host_hour
  workers 2                        // per shard
  count queries                    // split: shard I sends instances I, I + N, ...
  require rows(cookbook_sharded) > 0
}
