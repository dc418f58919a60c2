// QWP's commit policy in a protocol comparison: `commit every N rows` applies to the QWP
// cells and says in the plan that it does not apply to the ILP ones; an axis gives the policy
// per cell (per_batch, a row count, or none where it is filtered out).
workload commit_demo { seed 1 }

target questdb {
  dialect questdb
  qwp     "ws://127.0.0.1:9000" { max_uncommitted_rows 2_000_000 }
  ilp_tcp "tcp://127.0.0.1:9009"
  pg      "postgres://admin:quest@127.0.0.1:8812/qdb"
}

matrix {
  commit in [per_batch, 1_500_000] when protocol == qwp
  protocol in [qwp, ilp_tcp]
}

schema readings {
  table "readings"
  series sensor: symbol = format("sensor_%d", n) for n in 0..3
  field value: double = uniform(0.0, 1.0)
  timestamp ts: timestamp(us) = every 1m from 2016-01-01T00:00:00Z for 1h
}

ingest fixed {
  into questdb via [qwp, ilp_tcp]
  rows readings
  batch 10_000 rows
  commit every 250_000 rows
}

ingest by_axis {
  into questdb via protocol
  rows readings
  batch 400_000 rows
  commit commit
}
