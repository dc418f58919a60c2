// Rows from a pre-generated line-protocol file into two endpoints, with a row limit.
target questdb {
  ilp_tcp  "tcp://127.0.0.1:9009" { precision ns }
  ilp_http "http://127.0.0.1:9000" { gzip true }
  http     "http://127.0.0.1:9000"
  count rows via http sql "SELECT count(*) FROM ${table}"
}

ingest replay {
  into questdb via [ilp_tcp, ilp_http] table "cpu"
  rows from file "support/cpu.ilp" limit 2
  batch 1 rows
  connections 2
  setup truncate
  teardown drop
  verify visible within 10s
}
