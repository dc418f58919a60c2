// Every mistake of `observe process` is reported, not only the first.
target db {
  pg "postgres://wlrun@127.0.0.1:5432/wlrun"
  sqlite "bench.db" as lite
  observe process listening pgg
  observe process listening lite
  observe process pidfile 42
  observe process named ""
}
query q { sql "SELECT 1" }
run r {
  against db.pg
  queries q
  count 10
}
