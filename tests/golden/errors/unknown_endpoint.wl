target questdb {
  pg   "postgres://admin:quest@127.0.0.1:8812/qdb"
  http "http://127.0.0.1:9000"
}
query q { sql "SELECT 1" }
run r {
  against questdb via pgwire
  queries q
  count 10
}
