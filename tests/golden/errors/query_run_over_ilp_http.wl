target questdb {
  ilp_http "http://127.0.0.1:9000"
}
query q { sql "SELECT 1" }
run r {
  against questdb.ilp_http
  queries q
  count 10
}
