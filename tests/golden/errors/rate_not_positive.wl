target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
query q { sql "SELECT 1" }
run r {
  against db.pg
  queries q
  count 10
  rate 0/s
}
