target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
query q { sql "SELECT 1" }
query p { sql "SELECT 2" }
run r {
  against db.pg
  queries q weight 3, p weight "many"
  count 10
}
