target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
query q { sql "SELECT ${env("WLRUN_GOLDEN_SQL", "1")}" }
run r {
  against db.pg
  queries q
  count 10
}
