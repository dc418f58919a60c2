target questdb {
  dialect questdb
  qwp      "ws://127.0.0.1:9000"
  ilp_tcp  "tcp://127.0.0.1:9009"
  ilp_http "http://127.0.0.1:9000" { gzip true  precision us }
  pg       "postgres://admin:quest@127.0.0.1:8812/qdb" as pg2 { timeout 10s }
  http     "http://127.0.0.1:9000" { path "/exec"  headers { "Accept": "text/csv" } }
  sqlite   ":memory:"
  null
  null as sink
  count rows via pg2 sql "SELECT count(*) FROM ${table}"
  count samples via http promql "count(cpu)"
  count rows via http influxql "SELECT count(*) FROM cpu"
}
target empty {}
