// YCSB core workloads A to F against PostgreSQL, one cell each: load usertable, then run the
// workload's operation mix (std/ycsb/core.wl says how each is YCSB's).
//
//   PGUSER=me PGPASSWORD=secret PGDATABASE=ycsb  wlrun workloads/ycsb-postgres.wl
//   wlrun workloads/ycsb-postgres.wl --only workload=a --param records=100000 --param operations=1000000
//
// YCSB's JDBC binding on PostgreSQL is the reference: one table, YCSB_KEY VARCHAR(255) PRIMARY
// KEY, prepared statements, one connection per client thread (`threads`, here `workers`).
// Each cell loads a fresh table (D and E insert into it), then runs `operations` operations.

import "std/ycsb/core.wl" as ycsb (record_count = records, operation_count = operations)

workload ycsb_postgres {
  seed 42
  description "YCSB core workloads A-F against PostgreSQL"
}

param records    = 1000     // recordcount
param operations = 1000     // operationcount
param workers    = 1        // threadcount

target postgres {
  dialect postgres
  pg "postgres://${env("PGUSER", "postgres")}:${env("PGPASSWORD", "postgres")}@127.0.0.1:5432/${env("PGDATABASE", "ycsb")}" {
    insert     insert
    statements prepared
  }
  count rows via pg sql "SELECT count(*) FROM ${table}"
}

matrix {
  workload in [a, b, c, d, e, f]
}

// The load phase: YCSB's inserts of keys 0 .. records - 1 with all ten fields.
ingest load {
  into postgres via pg
  rows ycsb.usertable
  batch 1000 rows
  workers 1
  setup recreate
  teardown keep             // the run phase reads it
  verify visible within 60s
}

run workload_a when workload == a {
  against postgres.pg
  queries ycsb.read weight 50, ycsb.update weight 50
  workers workers
  count operations
}

run workload_b when workload == b {
  against postgres.pg
  queries ycsb.read weight 95, ycsb.update weight 5
  workers workers
  count operations
}

run workload_c when workload == c {
  against postgres.pg
  queries ycsb.read
  workers workers
  count operations
}

run workload_d when workload == d {
  against postgres.pg
  queries ycsb.read_latest weight 95, ycsb.insert weight 5
  workers workers
  count operations
}

run workload_e when workload == e {
  against postgres.pg
  queries ycsb.scan weight 95, ycsb.insert weight 5
  workers workers
  count operations
}

run workload_f when workload == f {
  against postgres.pg
  queries ycsb.read weight 50, ycsb.read_modify_write weight 50
  workers workers
  count operations
}
