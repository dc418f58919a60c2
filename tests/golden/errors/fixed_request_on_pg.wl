target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
run r {
  against db.pg
  request POST "/query" body "x"
  count 100
}
