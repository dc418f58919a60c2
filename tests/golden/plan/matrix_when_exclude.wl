// A matrix with a `when` filter and an exclusion: 3 protocols x 2 worker counts, the ack axis
// only for qwp, and no 4-worker ilp_tcp cell.
workload matrix_demo {
  seed 7
  description "protocols x workers, ack for qwp only"
}

param hosts = 3

target questdb {
  dialect questdb
  qwp      "ws://127.0.0.1:9000"
  ilp_tcp  "tcp://127.0.0.1:9009"
  ilp_http "http://127.0.0.1:9000"
  pg       "postgres://admin:quest@127.0.0.1:8812/qdb"
  count rows via pg sql "SELECT count(*) FROM ${table}"
}

matrix {
  protocol in [qwp, ilp_tcp, ilp_http]
  workers  in [1, 4]
  ack      in [publish, per_batch] when protocol == qwp
  exclude protocol == ilp_tcp and workers == 4
}

schema readings {
  table "readings"
  series sensor: symbol = format("sensor_%d", n) for n in 0..hosts
  field value: double = uniform(0.0, 1.0)
  timestamp ts: timestamp(us) = every 1m from 2016-01-01T00:00:00Z for 1h
}

ingest load {
  into questdb via protocol
  rows readings
  batch 100 rows
  workers workers
  ack ack
  verify visible via questdb.pg within 30s
}
