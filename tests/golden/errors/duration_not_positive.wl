target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
query q { sql "SELECT 1" }
run r {
  against db.pg
  queries q
  duration 0s
}
