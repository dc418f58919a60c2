target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
run r {
  against db.pg
  count 100
}
