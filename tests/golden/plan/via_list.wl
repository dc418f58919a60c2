// `via [a, b]` is an implicit axis named after its block: one cell per endpoint.
target questdb {
  dialect questdb
  pg   "postgres://admin:quest@127.0.0.1:8812/qdb"
  http "http://127.0.0.1:9000" { path "/exec"  timeout 5s }
  qwp  "ws://127.0.0.1:9000"
}

query lastpoint {
  label "last row per host"
  sql "SELECT * FROM cpu LATEST ON ts PARTITION BY hostname"
}

run compare {
  against questdb via [pg, http, qwp]
  queries lastpoint
  count 50
  check same results across endpoints
}
